//! What an iteration is and what a phase's iterations add up to: the [`Phase`] an iteration
//! does, where iterations came from ([`MarkerSource`]), why one is left out ([`Exclusion`]),
//! and the per-phase totals and feed rows (FEED.md `phases[]`), one input's or the ranks'
//! merged.

use crate::analysis::time::partition::Partition;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

/// What an iteration does (FEED.md `phases[].phase`): `step` when its phase is unknown.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Prompt processing: the whole prompt through the model.
    Prefill,
    /// Token generation: one token per sequence per iteration.
    Decode,
    /// Prefill and decode batched in one iteration.
    Mixed,
    /// A training or inference step that is none of the above.
    #[default]
    Step,
}

impl Phase {
    /// Every phase, in feed order.
    pub const ALL: [Phase; 4] = [Phase::Prefill, Phase::Decode, Phase::Mixed, Phase::Step];
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

impl FromStr for Phase {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Phase::ALL
            .into_iter()
            .find(|p| p.as_str() == s.trim())
            .ok_or_else(|| format!("'{s}' is not a phase (prefill, decode, mixed or step)"))
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an input's iterations came from (`summary.iteration_source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MarkerSource {
    /// vLLM's (and SGLang's) `execute_<tokens>_context_<n>(…)_generation_<n>(…)`.
    Vllm,
    /// vLLM's own `execute_context_<n>(…)_generation_<n>(…)`.
    VllmNative,
    /// SGLang's `step[DECODE bs=…]`, `step[EXTEND …]`, `step[MIXED …]`.
    Sglang,
    /// A user annotation that repeats and covers most GPU work.
    Annotation,
    /// A serving engine's Python frame (`execute_model`, `run_batch`; traces with `with_stack`).
    Python,
    /// `--iteration-marker NAME`.
    Flag,
}

impl MarkerSource {
    /// How the reports say where the marker comes from.
    pub fn describe(self) -> &'static str {
        match self {
            MarkerSource::Vllm => "vLLM's iteration marker",
            MarkerSource::VllmNative => "vLLM's native iteration marker",
            MarkerSource::Sglang => "SGLang's step marker",
            MarkerSource::Annotation => "a repeating annotation covering most GPU work",
            MarkerSource::Python => "a serving engine's Python frame",
            MarkerSource::Flag => "--iteration-marker",
        }
    }
}

/// Why an iteration is left out of its phase's steady state (`phases[].excluded[].reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exclusion {
    /// It captures a CUDA/HIP graph (`*StreamBeginCapture`, `*GraphInstantiate` inside it).
    Capture,
    /// It compiles (torch.compile's `(dynamo_timed)` events inside it).
    Compile,
    /// It leads its phase and takes more than twice the phase's median.
    Warmup,
}

impl Exclusion {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

/// What one phase's iterations add up to: one input's, or the ranks' merged.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PhaseTotals {
    pub phase: Phase,
    /// Time per iteration index (merged: the slowest rank's, as steps are).
    pub durations: BTreeMap<u64, i64>,
    /// The iterations left out of the steady state, with their time.
    pub excluded: BTreeMap<u64, (Exclusion, i64)>,
    /// The steady iterations' GPU time, launches and distinct kernel names per bucket
    /// (`Bucket::ALL` order).
    pub bucket_ns: [i64; 7],
    pub launches: [u64; 7],
    pub kernels: [BTreeSet<String>; 7],
    /// The steady iterations' time partition (summed over devices), and its whole: their time
    /// times the input's devices.
    pub partition: Partition,
    pub window_ns: i64,
}

impl PhaseTotals {
    /// Adds another rank's totals of the same phase.
    pub fn add(&mut self, other: &PhaseTotals) {
        for (&n, &d) in &other.durations {
            let e = self.durations.entry(n).or_insert(0);
            *e = (*e).max(d);
        }
        for (&n, &(why, d)) in &other.excluded {
            let e = self.excluded.entry(n).or_insert((why, 0));
            *e = (e.0.min(why), e.1.max(d));
        }
        for b in 0..7 {
            self.bucket_ns[b] = self.bucket_ns[b].saturating_add(other.bucket_ns[b]);
            self.launches[b] += other.launches[b];
            self.kernels[b].extend(other.kernels[b].iter().cloned());
        }
        self.partition.add(&other.partition);
        self.window_ns = self.window_ns.saturating_add(other.window_ns);
    }

    /// The steady iterations' times (an iteration some rank left out is left out).
    fn steady(&self) -> Vec<i64> {
        self.durations
            .iter()
            .filter(|(n, _)| !self.excluded.contains_key(n))
            .map(|(_, &d)| d)
            .collect()
    }
}

/// Several ranks' phase totals as one list (by phase).
pub fn merge_phases<'a>(ranks: impl Iterator<Item = &'a [PhaseTotals]>) -> Vec<PhaseTotals> {
    let mut by: BTreeMap<Phase, PhaseTotals> = BTreeMap::new();
    for totals in ranks {
        for t in totals {
            by.entry(t.phase)
                .or_insert_with(|| PhaseTotals {
                    phase: t.phase,
                    ..Default::default()
                })
                .add(t);
        }
    }
    by.into_values().collect()
}

/// An iteration left out of its phase's steady state (`phases[].excluded[]`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ExcludedIteration {
    pub iteration: u64,
    pub reason: Exclusion,
    pub dur_ns: i64,
}

/// One phase of a trace's iterations (FEED.md `phases[]`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PhaseRow {
    pub phase: Phase,
    /// Steady iterations (the excluded ones are listed apart).
    pub iterations: usize,
    pub mean_ns: i64,
    pub p50_ns: i64,
    pub p90_ns: i64,
    pub buckets: Vec<crate::analysis::kernels::BucketRow>,
    pub time_partition: Vec<crate::analysis::time::partition::PartitionRow>,
    pub excluded: Vec<ExcludedIteration>,
}

/// Nearest-rank percentile of sorted values.
pub(crate) fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The feed's rows, one per phase that has iterations.
pub fn phase_rows(totals: &[PhaseTotals]) -> Vec<PhaseRow> {
    totals
        .iter()
        .filter(|t| !t.durations.is_empty() || !t.excluded.is_empty())
        .map(|t| {
            let mut d = t.steady();
            d.sort_unstable();
            let mean = if d.is_empty() {
                0
            } else {
                (d.iter().map(|&x| x as f64).sum::<f64>() / d.len() as f64).round() as i64
            };
            let kernel_ns: i64 = t.bucket_ns.iter().sum();
            let mut buckets: Vec<crate::analysis::kernels::BucketRow> =
                crate::classify::Bucket::ALL
                    .iter()
                    .enumerate()
                    .map(|(b, &bucket)| crate::analysis::kernels::BucketRow {
                        bucket,
                        kernel_ns: t.bucket_ns[b],
                        pct: crate::analysis::numbers::pct(t.bucket_ns[b], kernel_ns),
                        launches: t.launches[b],
                        distinct_kernels: t.kernels[b].len() as u64,
                    })
                    .collect();
            buckets.sort_by(|a, b| {
                b.kernel_ns
                    .cmp(&a.kernel_ns)
                    .then(a.bucket.as_str().cmp(b.bucket.as_str()))
            });
            PhaseRow {
                phase: t.phase,
                iterations: d.len(),
                mean_ns: mean,
                p50_ns: percentile(&d, 50.0),
                p90_ns: percentile(&d, 90.0),
                buckets,
                time_partition: crate::analysis::time::partition::rows(&t.partition, t.window_ns),
                excluded: t
                    .excluded
                    .iter()
                    .map(|(&iteration, &(reason, dur_ns))| ExcludedIteration {
                        iteration,
                        reason,
                        dur_ns,
                    })
                    .collect(),
            }
        })
        .collect()
}
