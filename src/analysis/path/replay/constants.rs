//! The replays' constants (`rules/replay.toml`), each with its source.

use crate::model::Vendor;
use serde::Deserialize;

/// A constant of the models, with where its value comes from.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// Where it comes from (a measurement named by its trace, a datasheet, a library's code).
    pub source: String,
}

/// A value per vendor.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerVendor {
    /// On AMD GPUs.
    pub amd: i64,
    /// On NVIDIA GPUs.
    pub nvidia: i64,
}

impl PerVendor {
    pub(crate) fn of(&self, vendor: Vendor) -> i64 {
        match vendor {
            Vendor::Amd => self.amd,
            _ => self.nvidia,
        }
    }
}

/// The constants the replays use (`rules/replay.toml`), each with its source.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constants {
    /// The file's format version.
    pub schema: u32,
    /// The profiler's own host time per recorded event (op or runtime call).
    pub profiler_overhead_ns: Sourced<i64>,
    /// How far the host's speed in the run timed without the profiler may be from the
    /// profiled run's (a share: 0.2 is 20% either way); the range of a saving holds both.
    pub host_speed_uncertainty: Sourced<f64>,
    /// Launch-to-start latency where the trace shows no activity its launch held.
    pub launch_latency_ns: Sourced<i64>,
    /// Launches in flight (issued, not finished) at which a launch call blocks until the GPU
    /// frees a slot, per vendor.
    pub launch_queue_depth: Sourced<PerVendor>,
    /// Host time per kernel of a compiled region (Inductor's wrapper calling its launcher, or
    /// an extern kernel's op).
    pub compile_wrapper_ns: Sourced<i64>,
    /// Host time of one call of a compiled training pass (AOTAutograd's runtime around the
    /// compiled forward, and around the compiled backward), besides its kernels'.
    pub compile_training_call_ns: Sourced<i64>,
    /// The gap between two kernels of a graph replay, per vendor.
    pub graph_node_gap_ns: Sourced<PerVendor>,
    /// Host time of one graph launch, per vendor.
    pub graph_launch_ns: Sourced<PerVendor>,
    /// The host link's rate for copies from pinned memory, GB/s, per vendor.
    pub pinned_copy_gbps: Sourced<PerVendor>,
    /// The DataLoader workers the host-pipeline rung prescribes.
    pub loader_workers: Sourced<u32>,
    /// Launches of a fused optimizer step (per parameter group and dtype).
    pub fused_optimizer_launches: Sourced<u32>,
    /// Ops whose output size is data: the synchronize inside them stays.
    pub unremovable_sync_ops: Sourced<Vec<String>>,
    /// Convolution kernels that compute in fp32 without TF32 (a regex).
    pub fp32_conv_kernels: Sourced<String>,
}

impl Constants {
    /// The built-in constants (`rules/replay.toml`).
    pub fn builtin() -> Constants {
        toml::from_str(include_str!("../../../../rules/replay.toml"))
            .expect("rules/replay.toml parses (a test checks it)")
    }
}
