//! What one analysis produces: the [`Analysis`] every report renders (plain `Serialize` data)
//! and its [`Summary`], with [`Parts`], what merging ranks needs beyond them.

use crate::analysis::compile::{CompileFacts, CompileSummary};
use crate::analysis::kernels::{BucketRow, KernelRow, KernelTotals};
use crate::analysis::ops::attribution::{OpTotals, ShapeTotals};
use crate::analysis::ops::calls::FlopTally;
use crate::analysis::ops::frames::{self, RootModule};
use crate::analysis::ops::{attribution, candidates, mfu, op_steps};
use crate::analysis::signals::collective_calls::Call;
use crate::analysis::signals::{collectives, counters, memory, parallelism};
use crate::analysis::time::partition::{Category, Partition, PartitionRow};
use crate::analysis::time::steps::StepStats;
use crate::analysis::time::window::{InputLoads, StepRow};
use crate::analysis::time::{iterations, phases, regions};
use crate::classify::{Bucket, KernelTag};
use crate::model::{InputMeta, Vendor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The feed's `summary`: the window, busy and idle time, steps, MFU and what they rest on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Sum over devices of each device's analysis window (FEED.md "Window").
    pub window_ns: i64,
    /// Number of `ProfilerStep#N` ranges analyzed (0 when the trace has none).
    pub steps: usize,
    /// Step time statistics, warm-up step excluded; null without steps.
    pub step_ns: Option<StepStats>,
    /// Union of GPU activity inside the window, summed over devices.
    pub gpu_busy_ns: i64,
    /// Sum of the analyzed GPU activity durations (overlaps counted in full).
    pub kernel_ns: i64,
    /// Share of `kernel_ns` that no rule matched.
    pub unclassified_pct: f64,
    /// How buckets were decided: `ops` (the launching op where `rules/ops.toml` says, else the
    /// kernel name) or `kernels` (names only: inputs without ops, such as rocprof's).
    pub bucket_view: String,
    /// Model FLOP utilization (FEED.md `summary.mfu_pct` and its companions).
    #[serde(flatten)]
    pub mfu: mfu::Mfu,
    /// Iterations analyzed, excluded ones included, in traces whose steps come from an
    /// iteration marker rather than `ProfilerStep#N` (then `steps` is 0); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<usize>,
    /// The marker (its numbers as `#`) and where it comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_marker: Option<String>,
    /// Iterations only: where their marker comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_source: Option<phases::MarkerSource>,
}

impl Summary {
    /// Steps analyzed, or iterations where the trace has those instead (per-step figures of
    /// serving traces are per iteration).
    pub fn step_count(&self) -> usize {
        if self.steps > 0 {
            self.steps
        } else {
            self.iterations.unwrap_or(0)
        }
    }

    /// Fills the iteration fields from the phases' totals and the marker.
    pub fn set_iterations(
        &mut self,
        phases: &[phases::PhaseTotals],
        marker: Option<&iterations::IterationMarker>,
    ) {
        let Some(m) = marker else { return };
        let numbers: std::collections::BTreeSet<u64> = phases
            .iter()
            .flat_map(|t| t.durations.keys().chain(t.excluded.keys()).copied())
            .collect();
        self.iterations = Some(numbers.len());
        self.iteration_marker = Some(m.marker.clone());
        self.iteration_source = Some(m.source);
    }
}

/// Everything the reports need.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Analysis {
    /// The inputs read (feed `inputs`).
    pub inputs: Vec<InputMeta>,
    /// The headline numbers (feed `summary`).
    pub summary: Summary,
    /// Kernel time per bucket (feed `buckets`).
    pub buckets: Vec<BucketRow>,
    /// The window's time by category, busy and idle (feed `time_partition`).
    pub time_partition: Vec<PartitionRow>,
    /// The kernels by time (feed `top_kernels`).
    pub top_kernels: Vec<KernelRow>,
    /// What the trace shows of torch.compile (feed `compile`).
    pub compile: CompileSummary,
    /// Each analyzed step or iteration (feed `step_breakdown`).
    pub step_breakdown: Vec<StepRow>,
    /// Number of analyzed GPU activities and of distinct activity names.
    pub activities: u64,
    /// Distinct activity names analyzed.
    pub distinct_kernels: u64,
    /// Whether the step durations include a warm-up step 0 (see `warmup_in_window`).
    pub warmup_in_window: bool,
    /// Whether cpu_ops carry `Input Dims` (record_shapes=True), which op-level detectors need.
    pub has_op_shapes: bool,
    /// GPU time by launching op (complete: the `self_ns` add up to `summary.kernel_ns`).
    pub ops: Vec<attribution::OpRow>,
    /// GEMM and composite ops per input shape, with their efficiency.
    pub op_shapes: Vec<attribution::ShapeRow>,
    /// Memory-bound ops per input shape, with their bandwidth.
    pub memory_shapes: Vec<attribution::MemoryShapeRow>,
    /// GPU time by `nn.Module` and by user source line (traces recorded with `with_stack`).
    pub modules: Vec<frames::FrameRow>,
    /// GPU time by user source line.
    pub sources: Vec<frames::FrameRow>,
    /// Hardware-counter metrics per kernel (rocprof-compute workloads; empty otherwise).
    pub kernel_counters: Vec<counters::KernelCounters>,
    /// Per collective type × message size × process group: time, bandwidth, wait and transfer.
    pub collectives: collectives::Collectives,
    /// The parallelisms the job uses, one per (kind, process group) (feed `parallelism[]`).
    pub parallelism: Vec<parallelism::Parallelism>,
    /// The pipeline's stages, chunks and replays (feed `pipeline`; jobs with one).
    pub pipeline: Option<crate::analysis::signals::pipeline::Pipeline>,
    /// GPU memory per device (traces with `[memory]` events).
    pub memory: Vec<memory::DeviceMemory>,
    /// The annotated ranges and PyTorch's phases as a tree (pre-order), merged by path.
    pub regions: Vec<regions::RegionRow>,
    /// Iterations by phase (traces whose steps come from an iteration marker).
    pub phases: Vec<phases::PhaseRow>,
    /// The kernels whose tuning could win back the most time (FEED.md `kernel_candidates[]`).
    pub kernel_candidates: Vec<candidates::Candidate>,
    /// What bounds each step: its critical path by label (FEED.md `critical_path`).
    pub critical_path: crate::analysis::path::CriticalPath,
    /// GPU time in scope per rule tag (what recommendations gate on; not in the feed).
    #[serde(skip)]
    pub tagged_ns: BTreeMap<crate::classify::KernelTag, i64>,
    /// Files of input directories left out because they are not traces.
    pub skipped_files: Vec<crate::model::SkippedFile>,
    /// What merging this analysis with other ranks' needs beyond the above (not in the feed).
    #[serde(skip)]
    pub parts: Parts,
}

impl Analysis {
    /// The one vendor of all inputs, or unknown when they differ or none is known.
    pub fn vendor(&self) -> Vendor {
        let mut v = self
            .inputs
            .iter()
            .map(|i| i.vendor)
            .filter(|v| *v != Vendor::Unknown);
        match v.next() {
            Some(first) if v.all(|x| x == first) => first,
            _ => Vendor::Unknown,
        }
    }
    /// (input, device) pairs with activity.
    pub fn device_count(&self) -> usize {
        self.inputs.iter().map(|i| i.devices.len()).sum()
    }
    /// A partition category's row.
    pub fn partition_ns(&self, category: Category) -> i64 {
        self.time_partition
            .iter()
            .find(|r| r.category == category)
            .map_or(0, |r| r.ns)
    }
    /// What rating the kernel candidates reads of it.
    pub fn rating(&self) -> candidates::Rating<'_> {
        candidates::Rating {
            inputs: &self.inputs,
            op_shapes: &self.op_shapes,
            memory_shapes: &self.memory_shapes,
            vendor: self.vendor(),
            compiled: self.compile.compiled || self.compile.inductor_kernel_pct > 0.0,
            kernel_ns: self.summary.kernel_ns,
        }
    }
    /// The row of bucket `b`.
    pub fn bucket(&self, b: Bucket) -> &BucketRow {
        self.buckets
            .iter()
            .find(|r| r.bucket == b)
            .expect("every bucket has a row")
    }
}

/// What merging ranks needs of an analysis beyond its feed blocks (not in the feed).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Parts {
    /// Every (bucket, kernel name) in scope, most time first.
    pub kernels: Vec<KernelTotals>,
    /// Hardware counters per kernel name (rocprof-compute workloads).
    pub counters: Vec<counters::CounterSums>,
    /// The time partition before rounding, summed over devices.
    pub partition: Partition,
    /// Analyzed step durations (slowest input per step number).
    pub step_durations: Vec<(u64, i64)>,
    /// Those steps' GPU work (busy; the busiest input per step number), in the same order.
    #[serde(default)]
    pub step_work: Vec<(u64, i64)>,
    /// Every step number the inputs have, before `--steps`, `--skip-warmup` or `--phase`
    /// selected (iterations: their indices), ascending.
    #[serde(default)]
    pub step_numbers: Vec<u64>,
    /// Kept steps per input.
    pub steps_per_input: Vec<usize>,
    pub compile: CompileFacts,
    /// Outermost modules (eager vs compiled time).
    pub roots: Vec<RootModule>,
    pub ops: Vec<OpTotals>,
    pub shapes: Vec<ShapeTotals>,
    pub memory_shapes: Vec<attribution::MemoryShapeTotals>,
    /// Per input.
    pub flops: Vec<FlopTally>,
    /// Collective kernels in scope, and per input whether it has steps.
    pub calls: Vec<Call>,
    pub has_steps: Vec<bool>,
    /// Per input.
    pub loads: Vec<InputLoads>,
    /// Per `memory` row, its input.
    pub memory_inputs: Vec<u32>,
    /// GPU time per rule tag (the analysis' `tagged_ns`).
    pub tagged_ns: BTreeMap<KernelTag, i64>,
    /// Iterations by phase, and the marker they came from (traces without `ProfilerStep#N`).
    pub phases: Vec<phases::PhaseTotals>,
    pub iteration_marker: Option<iterations::IterationMarker>,
    /// Every kernel by launching op, shape and source (kernel candidates).
    pub candidates: Vec<candidates::CandidateTotals>,
    /// GPU time per step by op and shape (with `AnalysisOptions::op_series`: `diff`).
    #[serde(default)]
    pub op_steps: Vec<op_steps::OpStepTotals>,
    /// Every op and kernel on the critical path with its time (`critical_path.top` uncapped).
    pub path_items: Vec<crate::analysis::path::PathItem>,
    /// The collective kernels on the critical path (the merge splits out `rank_wait`).
    pub path_comms: Vec<crate::analysis::path::PathComm>,
    /// After a merge: each rank's critical path, its collectives' waits split out.
    #[serde(skip)]
    pub rank_paths: Vec<(u32, crate::analysis::path::CriticalPath)>,
    /// What-if replays of the step model the plan prices recommendations with.
    #[serde(default)]
    pub replays: crate::analysis::path::replay::results::Replays,
    /// `--what-if`: the step replayed with the changes asked for.
    #[serde(default)]
    pub what_if: Option<crate::analysis::path::replay::results::WhatIf>,
}
