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
    pub analysis: &'a Analysis,
    /// The findings that fired.
    pub finding_ids: BTreeSet<FindingId>,
    /// The ladder: level, name, status.
    pub ladder: Vec<(u8, String, LadderStatus)>,
    pub next_level: Option<u8>,
    /// Kernels replayed from CUDA/HIP graphs (the `cudagraphs_in_use` evidence), 0 without.
    pub replayed_kernels: f64,
}

/// One quantity before and after.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Delta {
    pub name: String,
    pub base_ns: i64,
    pub new_ns: i64,
    pub delta_ns: i64,
    /// Relative change in percent; null when the base is zero.
    pub delta_pct: Option<f64>,
}

impl Delta {
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
    pub name: String,
    pub bucket: Bucket,
    pub library: String,
    pub base_ns: i64,
    pub new_ns: i64,
    pub delta_ns: i64,
}

/// One side of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    pub inputs: Vec<String>,
    pub vendor: &'static str,
    pub devices: Vec<String>,
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
    pub compiled: bool,
    pub cudagraphs: bool,
    pub graph_replayed_kernels_per_step: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct LadderChange {
    pub level: u8,
    pub name: String,
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
    Both,
}

impl Cause {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

/// How the verdicts were reached (README "Comparing runs").
#[derive(Clone, Debug, Serialize)]
pub struct Statistics {
    pub method: &'static str,
    pub alpha: f64,
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
    pub name: &'static str,
    pub base_ns_per_step: i64,
    pub new_ns_per_step: i64,
    pub delta_ns_per_step: i64,
    pub verdict: Verdict,
    pub confidence: Option<f64>,
}

/// One op (and shape) row matched across the runs (FEED.md `diff.ops[]`).
#[derive(Clone, Debug, Serialize)]
pub struct OpDelta {
    #[serde(rename = "match")]
    pub matched: Match,
    /// Within `op_shape`: exact, by GEMM signature, or by Inductor's kernel name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
    /// The base's op, shapes and element types (the new side's for `new`); the module, source
    /// or bucket name of a fallback group.
    pub op: String,
    pub shapes: Option<String>,
    pub dtype: Option<String>,
    /// The new side's op and shapes where they differ (signature and Inductor matches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_op: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_shapes: Option<String>,
    pub bucket: Bucket,
    pub base_ns_per_step: i64,
    pub new_ns_per_step: i64,
    pub delta_ns_per_step: i64,
    pub delta_pct: Option<f64>,
    /// Op calls per step: more calls or slower calls.
    pub base_calls_per_step: f64,
    pub new_calls_per_step: f64,
    pub verdict: Verdict,
    pub confidence: Option<f64>,
}

/// The feed's `diff` block. Times are per step (per window when a side has no steps).
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    pub base: Side,
    pub new: Side,
    /// The step time's verdict, its confidence (1 − p of Welch's t-test) and cause.
    pub verdict: Verdict,
    pub confidence: Option<f64>,
    pub cause: Option<Cause>,
    pub statistics: Statistics,
    /// GPU work, host time and other idle per step.
    pub components: Vec<Component>,
    /// Op rows, largest change first (`--top` of them; `ops_total` in all).
    pub ops: Vec<OpDelta>,
    pub ops_total: usize,
    /// Mean step time (the window when there are no steps).
    pub step: Delta,
    pub gpu_busy: Delta,
    pub buckets: Vec<Delta>,
    pub time_partition: Vec<Delta>,
    /// GPU time per step by `bucket/library`.
    pub libraries: Vec<Delta>,
    pub kernels_appeared: Vec<KernelDelta>,
    pub kernels_vanished: Vec<KernelDelta>,
    pub kernels_changed: Vec<KernelDelta>,
    /// By id name.
    pub findings_resolved: Vec<FindingId>,
    pub findings_introduced: Vec<FindingId>,
    pub findings_remaining: Vec<FindingId>,
    pub ladder: Vec<LadderChange>,
    pub next_level: (Option<u8>, Option<u8>),
}
