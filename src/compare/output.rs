//! What a comparison says: the [`Diff`] (FEED.md `diff`) and its parts, and the [`Outcome`]
//! of each run it reads.

use crate::analysis::Analysis;
use crate::classify::Bucket;
use crate::compare::op_match::{Match, Via};
use crate::compare::stats::Verdict;
use crate::detect::FindingId;
use crate::recommend::LadderStatus;
use serde::Serialize;
use std::collections::BTreeSet;

/// One side of a comparison: its analysis and what the layers above it concluded.
pub struct Outcome<'a> {
    /// The run's analysis.
    pub analysis: &'a Analysis,
    /// The findings that fired.
    pub finding_ids: BTreeSet<FindingId>,
    /// The ladder: level, name, status.
    pub ladder: Vec<(u8, String, LadderStatus)>,
    /// The lowest todo or partial ladder level; None when every level is done.
    pub next_level: Option<u8>,
    /// Kernels replayed from CUDA/HIP graphs (the `cudagraphs_in_use` evidence), 0 without.
    pub replayed_kernels: f64,
}

/// One quantity before and after.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Delta {
    /// What it measures: `step`, `gpu_busy`, a bucket, a partition category or `bucket/library`.
    pub name: String,
    /// The base run's value, in ns.
    pub base_ns: i64,
    /// The new run's value, in ns.
    pub new_ns: i64,
    /// New minus base, in ns.
    pub delta_ns: i64,
    /// Relative change in percent; null when the base is zero.
    pub delta_pct: Option<f64>,
}

impl Delta {
    /// From the two values in ns, rounded to whole ns; the percent keeps two decimals.
    pub fn new(name: impl Into<String>, base: f64, new: f64) -> Delta {
        let (b, n) = (base.round() as i64, new.round() as i64);
        Delta {
            name: name.into(),
            base_ns: b,
            new_ns: n,
            delta_ns: n - b,
            delta_pct: (b != 0)
                .then(|| ((n - b) as f64 * 100.0 / b as f64 * 100.0).round() / 100.0),
        }
    }
}

/// A kernel's time per step before and after.
#[derive(Clone, Debug, Serialize)]
pub struct KernelDelta {
    /// The kernel's name.
    pub name: String,
    /// Its bucket (the new run's where both ran it).
    pub bucket: Bucket,
    /// Its library as the rules name it (the new run's where both ran it).
    pub library: String,
    /// The base run's GPU time per step, in ns; 0 where it did not run.
    pub base_ns: i64,
    /// The new run's GPU time per step, in ns; 0 where it did not run.
    pub new_ns: i64,
    /// New minus base, in ns per step.
    pub delta_ns: i64,
}

/// One side of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    /// The input paths, sorted, each once.
    pub inputs: Vec<String>,
    /// The GPU vendor: `amd`, `nvidia` or `unknown`.
    pub vendor: &'static str,
    /// The GPU names in the inputs, sorted, each once.
    pub devices: Vec<String>,
    /// Steps analyzed (`ProfilerStep#N` ranges); 0 when the trace has none.
    pub steps: usize,
    /// Steps (or steady iterations) whose samples the verdicts use: the analyzed ones less a
    /// warm-up step and excluded iterations.
    pub compared_steps: usize,
    /// The first and last of them.
    pub compared_step_numbers: Option<[u64; 2]>,
    /// Op calls (and kernels without an op) per compared step: the work the host launched.
    /// Host noise leaves it alone; a code change that moves host time changes it. None without
    /// op attribution.
    pub launches_per_step: Option<f64>,
    /// The trace runs torch.compile regions (`compile.compiled`).
    pub compiled: bool,
    /// The trace replays CUDA/HIP graphs (`compile.cudagraphs`).
    pub cudagraphs: bool,
    /// Kernels replayed from CUDA/HIP graphs per step (two decimals), 0 without.
    pub graph_replayed_kernels_per_step: f64,
}

/// One ladder level's status in the base run and in the new one (FEED.md `diff.ladder[]`).
#[derive(Clone, Debug, Serialize)]
pub struct LadderChange {
    /// The level, 1 to 5.
    pub level: u8,
    /// The level's name.
    pub name: String,
    /// Its status in the base run.
    pub base: LadderStatus,
    /// `unknown` when the new run's ladder has no such level.
    #[serde(serialize_with = "status_or_unknown")]
    pub new: Option<LadderStatus>,
}

impl LadderChange {
    /// The new run's status by name (`unknown` without the level).
    pub fn new_name(&self) -> &'static str {
        name_or_unknown(self.new)
    }
    /// The level's status did not change.
    pub fn unchanged(&self) -> bool {
        self.new == Some(self.base)
    }
}

fn name_or_unknown(s: Option<LadderStatus>) -> &'static str {
    s.map_or("unknown", LadderStatus::as_str)
}

fn status_or_unknown<S: serde::Serializer>(
    s: &Option<LadderStatus>,
    out: S,
) -> Result<S::Ok, S::Error> {
    out.serialize_str(name_or_unknown(*s))
}

/// Where a step-time change comes from (FEED.md `diff.cause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// GPU work changed (the ops' kernels), host time did not.
    GpuWork,
    /// Host time changed (launch overhead, host idle) on unchanged GPU work.
    HostTime,
    /// Both changed, neither holding over 90% of the change.
    Both,
}

impl Cause {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

/// How the verdicts were reached (docs/guide/comparing-runs.md).
#[derive(Clone, Debug, Serialize)]
pub struct Statistics {
    /// The test: `welch_t` (Welch's t-test, two-sided).
    pub method: &'static str,
    /// The significance level: a change is called when its p is below it.
    pub alpha: f64,
    /// Compared steps a side needs for a verdict; fewer give `too_few_steps`.
    pub min_steps: usize,
    /// A step or host-time change must exceed this share of the base step (a GPU-work change,
    /// of the base GPU work)...
    pub step_floor_pct: f64,
    /// ...and an op row's this share of the row (and 0.1% of the step) to be called.
    pub row_floor_pct: f64,
    /// The smallest step change this pair of runs could have called (two-sided, at `alpha`).
    pub detectable_pct: Option<f64>,
    /// What limits the verdicts (too few steps, mixed phases).
    pub notes: Vec<String>,
}

/// A part of the step (GPU work, host time, other idle) before and after, with its verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Component {
    /// `gpu_work`, `host_time` or `other_idle`.
    pub name: &'static str,
    /// The base run's mean per compared step, in ns (per device).
    pub base_ns_per_step: i64,
    /// The new run's mean per compared step, in ns (per device).
    pub new_ns_per_step: i64,
    /// New minus base, in ns per step.
    pub delta_ns_per_step: i64,
    /// Whether the change is beyond the noise and the floor.
    pub verdict: Verdict,
    /// 1 − p of Welch's t-test (three decimals); null with too few steps.
    pub confidence: Option<f64>,
}

/// One op (and shape) row matched across the runs (FEED.md `diff.ops[]`).
#[derive(Clone, Debug, Serialize)]
pub struct OpDelta {
    /// How the two sides were matched (`match` in the feed).
    #[serde(rename = "match")]
    pub matched: Match,
    /// Within `op_shape`: exact, by GEMM signature, or by Inductor's kernel name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// The base's op, shapes and element types (the new side's for `new`); the module, source
    /// or bucket name of a fallback group.
    pub op: String,
    /// The input dims; null in traces without shapes and in fallback groups.
    pub shapes: Option<String>,
    /// The inputs' element types (`bf16`; `fp32,bf16` for a cast); null without.
    pub dtype: Option<String>,
    /// The new side's op and shapes where they differ (signature and Inductor matches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_op: Option<String>,
    /// The new side's input dims where they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_shapes: Option<String>,
    /// The bucket holding most of the row's GPU time, over both runs.
    pub bucket: Bucket,
    /// The base run's GPU time per compared step, summed over devices, in ns.
    pub base_ns_per_step: i64,
    /// The new run's GPU time per compared step, summed over devices, in ns.
    pub new_ns_per_step: i64,
    /// New minus base, in ns per step.
    pub delta_ns_per_step: i64,
    /// Relative change in percent; null when the base is zero.
    pub delta_pct: Option<f64>,
    /// Op calls per step: more calls or slower calls.
    pub base_calls_per_step: f64,
    /// The new run's op calls per step.
    pub new_calls_per_step: f64,
    /// `slower` for a `new` row, `faster` for a `removed` one; else the test's.
    pub verdict: Verdict,
    /// 1 − the row's p adjusted over all rows (Benjamini–Hochberg); null with too few steps.
    pub confidence: Option<f64>,
}

/// The feed's `diff` block. Times are per step (per window when a side has no steps).
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    /// The base run: its inputs, devices and the steps compared.
    pub base: Side,
    /// The new run: its inputs, devices and the steps compared.
    pub new: Side,
    /// The run's verdict: the step time's ([`Diff::step_verdict`]), or `mixed` where GPU work
    /// and host time moved in opposite directions (or the step got faster while its GPU work
    /// got slower); its confidence (1 − p of Welch's t-test) and cause.
    pub verdict: Verdict,
    /// The step time's own verdict (Welch's t-test over the compared steps).
    pub step_verdict: Verdict,
    /// 1 − p of the step's Welch test (three decimals); null with too few steps.
    pub confidence: Option<f64>,
    /// What the step change comes from; null when nothing moved.
    pub cause: Option<Cause>,
    /// The test, its floors, and what limits the verdicts.
    pub statistics: Statistics,
    /// GPU work, host time and other idle per step.
    pub components: Vec<Component>,
    /// Op rows, largest change first (`--top` of them; `ops_total` in all).
    pub ops: Vec<OpDelta>,
    /// Op rows matched in all, before `--top` kept the largest.
    pub ops_total: usize,
    /// Mean step time (the window when there are no steps).
    pub step: Delta,
    /// GPU busy time (the union of GPU activity) per step, summed over devices.
    pub gpu_busy: Delta,
    /// Kernel time per step of each bucket, every bucket listed.
    pub buckets: Vec<Delta>,
    /// The time partition per step, by category in the base's order.
    pub time_partition: Vec<Delta>,
    /// GPU time per step by `bucket/library`.
    pub libraries: Vec<Delta>,
    /// Kernels only the new run ran, largest first (`top` of them).
    pub kernels_appeared: Vec<KernelDelta>,
    /// Kernels only the base run ran, largest first (`top` of them).
    pub kernels_vanished: Vec<KernelDelta>,
    /// Kernels both runs ran whose time changed, largest change first (`top` of them).
    pub kernels_changed: Vec<KernelDelta>,
    /// By id name.
    pub findings_resolved: Vec<FindingId>,
    /// Findings that fire in the new run only.
    pub findings_introduced: Vec<FindingId>,
    /// Findings that fire in both runs.
    pub findings_remaining: Vec<FindingId>,
    /// Each of the base run's ladder levels, before and after.
    pub ladder: Vec<LadderChange>,
    /// Each run's next ladder level (base, new): its lowest todo or partial one.
    pub next_level: (Option<u8>, Option<u8>),
    /// `--applied`: the saving the base run predicted for the rungs applied, beside the one
    /// measured (empty without it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub applied: Vec<Applied>,
}

/// One row of `diff.applied[]`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Applied {
    /// The recommendation ids applied together (`compile.enable+graphs.capture`).
    pub id: String,
    /// Whether the base run recommended them all.
    pub recommended: bool,
    /// The saving the base run predicted for them together without the profiler's cost (what
    /// the user gets; the report's figure), in ns of its window.
    pub predicted_ns: i64,
    /// Its `[worst, best]`.
    pub range_ns: [i64; 2],
    /// The same prediction in profiled steps (what the measured profiled change is judged
    /// against); None where it has no replay with the profiler's cost kept.
    pub predicted_profiled_ns: Option<i64>,
    /// Its `[worst, best]`.
    pub profiled_range_ns: Option<[i64; 2]>,
    /// The saving measured: the mean step's drop, as a share of the base step, in ns of the
    /// base window (times the steady steps' share where the predictions take it).
    pub measured_ns: i64,
    /// The measured saving's 95% interval (Welch's, over the compared steps), in the same ns.
    pub measured_interval_ns: [i64; 2],
    /// Whether the measured saving lies inside the profiled predicted range (the un-profiled
    /// one where there is no profiled prediction).
    pub within_range: bool,
    /// Whether the measured interval meets that range (weaker than `within_range`).
    pub interval_overlaps_range: bool,
    /// The base run's window, the ns above are of (their percentages are of it).
    pub base_window_ns: i64,
}
