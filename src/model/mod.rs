//! The normalized trace: one columnar table of GPU activities and one of host events, with names
//! interned once. Every reader writes into [`Trace`]; every analysis reads only from it.
//!
//! Times are integer nanoseconds (`*_ns`) on the input's own clock: readers convert once, at the
//! edge, so no analysis ever sees a microsecond float.

mod activities;
mod columns;
pub(crate) mod comms;
pub(crate) mod compile_log;
mod counters;
mod host;
pub(crate) mod inductor;
pub(crate) mod intern;
pub(crate) mod ops;
mod syncs;
pub(crate) mod units;

pub use activities::{Activity, ActivityKind, GpuActivities};
pub use columns::{
    Compact, Durations, Ids, Runs, SparseIds, MAX_ACTIVITY_NS, MAX_HOST_EVENT_NS, MAX_TS_NS,
};
pub use compile_log::{ActionKind, GuardKind, LogEvent};
pub use counters::{DeviceSpec, DispatchCounters, KernelResources, PeakSource, Pipe, PipeOps};
pub use host::{HostEvent, HostEvents, HostKind, MemoryEvents, OpArgs};
pub use intern::{Interner, NameId};
use serde::{Deserialize, Serialize};
pub use syncs::{GpuSync, GpuSyncs, SyncKind};

/// The name serde gives a unit variant of an enum (its `rename`/`rename_all` applied): the one
/// spelling of the enum's values in the feed, the reports and the rule files.
pub fn variant_name<T: Serialize>(value: &T) -> &'static str {
    serde_variant::to_variant_name(value).expect("a unit variant of a serde enum")
}

/// Input formats, named as in the feed's `inputs[].format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Format {
    /// PyTorch profiler (Kineto) trace JSON, plain or gzipped.
    #[serde(rename = "kineto")]
    Kineto,
    /// rocprof v1: `results.json`, `results.csv` or the aggregate `--stats` CSVs.
    #[serde(rename = "rocprof-v1")]
    RocprofV1,
    /// rocprofv2 (or rocprof-compute) `timestamps.csv`.
    #[serde(rename = "rocprofv2-csv")]
    RocprofV2Csv,
    /// rocprofv3 CSV output (`kernel_trace.csv`, `hip_api_trace.csv`, …), or its directory.
    #[serde(rename = "rocprofv3-csv")]
    RocprofV3Csv,
    /// rocprofv3 JSON output (`--output-format json`).
    #[serde(rename = "rocprofv3-json")]
    RocprofV3Json,
    /// rocpd SQLite database (rocprofv3's default output since ROCm 7.0).
    #[serde(rename = "rocpd")]
    Rocpd,
    /// A rocprof-compute workload directory (`sysinfo.csv`, `pmc_perf.csv`, …).
    #[serde(rename = "rocprof-compute")]
    RocprofCompute,
    /// torch.compile's `TORCH_LOGS` text log (an input with no rows).
    #[serde(rename = "torch-logs")]
    TorchLogs,
    /// torch.compile's `TORCH_TRACE` structured log (an input with no rows).
    #[serde(rename = "torch-trace")]
    TorchTrace,
}

impl Format {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

/// GPU vendor of an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Vendor {
    /// AMD (ROCm, HIP).
    Amd,
    /// NVIDIA (CUDA).
    Nvidia,
    /// The input does not say (compile logs, traces with no GPU or runtime names).
    #[default]
    Unknown,
}

impl Vendor {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

/// The architecture of an AMD Instinct GPU by its marketing name.
pub fn arch_of_amd_name(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_uppercase();
    if n.contains("MI35") {
        Some("gfx950")
    } else if n.contains("MI30") || n.contains("MI325") {
        Some("gfx942")
    } else if n.contains("MI250") || n.contains("MI210") {
        Some("gfx90a")
    } else if n.contains("MI100") {
        Some("gfx908")
    } else {
        None
    }
}

/// A GPU the input describes or uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// Its number within the input: the `device` of its activities.
    pub id: u32,
    /// Marketing name from the trace's device properties (empty when the trace has none).
    pub name: String,
    /// The architecture: `gfx942` (MI300), `gfx950` (MI350), `gfx90a` (MI200), `sm_90` (H100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// Compute units (AMD) or streaming multiprocessors (NVIDIA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_units: Option<u32>,
    /// Its memory in bytes (`totalGlobalMem` of the trace's device properties).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

impl Device {
    /// A device known by its name; a name that is an architecture (`gfx942`, as rocprof's agents
    /// name them) is its arch too.
    pub fn named(id: u32, name: String) -> Device {
        let arch = if name.starts_with("gfx") {
            Some(name.split(':').next().unwrap_or(&name).to_string())
        } else {
            arch_of_amd_name(&name).map(str::to_string)
        };
        Device {
            id,
            name,
            arch,
            compute_units: None,
            memory_bytes: None,
        }
    }

    /// How reports name it: its marketing name, or its architecture and size where the name
    /// says nothing (empty, or older ROCm's generic "AMD Radeon Graphics").
    pub fn label(&self) -> String {
        let generic = self.name.is_empty() || self.name == "AMD Radeon Graphics";
        match (&self.arch, generic) {
            (Some(arch), true) => match self.compute_units {
                Some(cu) => format!("{arch}, {cu} CUs"),
                None => arch.clone(),
            },
            _ => self.name.clone(),
        }
    }
}

/// One input: a file, or one rank of a file that holds several ranks.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InputMeta {
    /// The file it was read from, as given.
    pub path: String,
    /// The file's format.
    pub format: Format,
    /// The GPU vendor its events come from.
    pub vendor: Vendor,
    /// Devices with GPU activity in this input (ascending id).
    pub devices: Vec<Device>,
    /// The distributed rank it holds, when known (`distributedInfo`, `args.rank`, file name).
    pub rank: Option<u32>,
    /// Whether the file was cut mid-write: only what was written is analyzed.
    pub truncated: bool,
    /// What the reader tolerated in it (skipped rows, a cut), as also shown on stderr.
    pub warnings: Vec<String>,
    /// The GPU's shape and peaks, where the input describes them (rocprof-compute `sysinfo.csv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<DeviceSpec>,
    /// Wall-clock time (ns since the Unix epoch) of timestamp 0, when the input says
    /// (Kineto `baseTimeNanoseconds`): places the trace on the clock of torch.compile's logs.
    #[serde(skip)]
    pub base_time_ns: Option<i64>,
    /// The job the rank belongs to, where the input says (Kineto `distributedInfo`): what its
    /// ranks share, which tells one run's ranks from another's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed: Option<Distributed>,
}

/// What a rank's trace says of its job (Kineto `distributedInfo`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Distributed {
    /// The process group backend (`nccl`, `gloo`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// Number of ranks in the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_size: Option<u32>,
    /// Number of process groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_groups: Option<u32>,
    /// The NCCL/RCCL version the job ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_version: Option<String>,
    /// The default process group's `pg_config` entry (`pg_name` "0"), which every rank of a job
    /// writes alike (a rank's other groups are the ones it belongs to, which differ by rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_group: Option<ProcessGroup>,
}

/// One entry of Kineto's `distributedInfo.pg_config`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProcessGroup {
    /// `pg_name` ("0" for the default group).
    pub name: String,
    /// `pg_desc`, the group's description (`default_pg`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
    /// `backend_config` (`cuda:nccl`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_config: Option<String>,
    /// Number of ranks in the group (`pg_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// Its ranks as written (`[0, 1, 2, 3]`; long lists may be cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<String>,
}

/// A file of an input directory that no reader recognized (a config, a note), left out.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SkippedFile {
    /// The file, as found in the directory.
    pub path: String,
    /// Why it was left out (the reader's error).
    pub reason: String,
}

/// The normalized trace every analysis reads.
#[derive(Default, Debug, Clone)]
pub struct Trace {
    /// Every name (kernels, ops, their recorded inputs), each stored once.
    pub names: Interner,
    /// The GPU activities of all inputs.
    pub activities: GpuActivities,
    /// The host events of all inputs.
    pub host: HostEvents,
    /// One entry per file and rank; every row's `input` indexes it.
    pub inputs: Vec<InputMeta>,
    /// Hardware counters of profiled dispatches (rocprof-compute); empty for timeline traces.
    pub counters: Vec<DispatchCounters>,
    /// The allocator's state over time (Kineto with `profile_memory=True`; empty otherwise).
    pub memory: MemoryEvents,
    /// Kineto's `cuda_sync` records (stream waits, host synchronizes; empty without them).
    pub syncs: GpuSyncs,
    /// Files of input directories that are not traces, left out of `inputs`.
    pub skipped: Vec<SkippedFile>,
}

impl Trace {
    /// Appends another trace's inputs after this one's, re-interning its names: reading files
    /// separately and appending them in order gives the same trace as reading them in sequence.
    pub fn append(&mut self, other: Trace) {
        if self.inputs.is_empty() && self.names.len() <= 1 && self.skipped.is_empty() {
            *self = other;
            return;
        }
        self.skipped.extend(other.skipped);
        let names = other.names.renamed_into(&mut self.names);
        let name = |id: NameId| names[id.index()];
        let offset = self.inputs.len() as u32;
        self.inputs.extend(other.inputs);
        self.activities
            .extend_from(other.activities, name, |i| i + offset);
        self.host.extend_from(other.host, name, |i| i + offset);
        self.memory.extend_from(other.memory, |i| i + offset);
        self.syncs.extend_from(other.syncs, |i| i + offset);
        for c in other.counters {
            self.counters.push(DispatchCounters {
                input: c.input + offset,
                name: name(c.name),
                ..c
            });
        }
    }

    /// The rows of some inputs only, renumbered from 0 in the order given (names are shared).
    pub fn subset(&self, inputs: &[u32]) -> Trace {
        let map = |i: u32| inputs.iter().position(|&x| x == i).map(|p| p as u32);
        let mut out = Trace {
            names: self.names.clone(),
            inputs: inputs
                .iter()
                .map(|&i| self.inputs[i as usize].clone())
                .collect(),
            ..Default::default()
        };
        // The rows of the inputs kept, by their runs in the `input` column: a rank's subset
        // reads its own rows only (each of a job's ranks read every row before: quadratic).
        let kept = |runs: &columns::Runs| -> Vec<(std::ops::Range<usize>, u32)> {
            runs.ranges()
                .filter_map(|(rows, v)| Some((rows, map(v)?)))
                .collect()
        };
        for (rows, input) in kept(&self.activities.input) {
            for k in rows {
                let mut r = self.activities.row(k);
                r.input = input;
                out.activities.push(r);
            }
        }
        for (rows, input) in kept(&self.host.input) {
            for k in rows {
                let mut r = self.host.row(k);
                r.input = input;
                out.host.push(r);
            }
        }
        for s in &self.syncs.rows {
            if let Some(input) = map(s.input) {
                out.syncs.push(GpuSync { input, ..*s });
            }
        }
        for c in &self.counters {
            if let Some(input) = map(c.input) {
                out.counters.push(DispatchCounters { input, ..c.clone() });
            }
        }
        let m = &self.memory;
        for k in 0..m.len() {
            if let Some(input) = map(m.input[k]) {
                out.memory.push(
                    input,
                    m.device[k],
                    m.ts_ns[k],
                    m.allocated[k],
                    m.reserved[k],
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_names_are_serdes() {
        assert_eq!(Format::RocprofCompute.as_str(), "rocprof-compute");
        assert_eq!(Vendor::Nvidia.as_str(), "nvidia");
        for v in [Vendor::Amd, Vendor::Nvidia, Vendor::Unknown] {
            let json = serde_json::to_value(v).unwrap();
            assert_eq!(json.as_str(), Some(v.as_str()));
            assert_eq!(serde_json::from_value::<Vendor>(json).unwrap(), v);
        }
    }
}
