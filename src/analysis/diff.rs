//! Before → after: two runs compared per step, so runs with different step counts, formats or
//! vendors compare (an MI300X trace against an H100 trace of the same model compares buckets).
//! The findings and the ladder come in as plain [`Outcome`] data (ids and statuses), so the
//! comparison stays in the analysis layer; `report::diff` renders it.

use crate::analysis::Analysis;
use std::collections::BTreeSet;

/// One side of a comparison: its analysis and what the layers above it concluded.
pub struct Outcome<'a> {
    pub analysis: &'a Analysis,
    /// Ids of the findings that fired.
    pub finding_ids: BTreeSet<String>,
    /// The ladder: level, name, status.
    pub ladder: Vec<(u8, String, &'static str)>,
    pub next_level: Option<u8>,
    /// Kernels replayed from CUDA/HIP graphs (the `cudagraphs_in_use` evidence), 0 without.
    pub replayed_kernels: f64,
}
use super::op_match::{self, Match, Via};
use super::op_steps::OpStepTotals;
use super::partition::Category;
use super::stats::{self, mean, Judgement, Verdict};
use crate::classify::Bucket;
use serde::Serialize;
use std::collections::BTreeMap;

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
    pub base: &'static str,
    pub new: &'static str,
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
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::GpuWork => "gpu_work",
            Cause::HostTime => "host_time",
            Cause::Both => "both",
        }
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
    pub findings_resolved: Vec<String>,
    pub findings_introduced: Vec<String>,
    pub findings_remaining: Vec<String>,
    pub ladder: Vec<LadderChange>,
    pub next_level: (Option<u8>, Option<u8>),
}

fn steps_of(a: &Analysis) -> f64 {
    a.summary.step_count().max(1) as f64
}

/// Mean step time, or the window without steps.
fn step_time(a: &Analysis) -> f64 {
    match &a.summary.step_ns {
        Some(s) if a.summary.steps > 0 => s.mean,
        _ => a.summary.window_ns as f64,
    }
}

/// A change of the step or its host time must exceed this share of the base step (GPU work:
/// of the base GPU work).
pub const STEP_FLOOR_PCT: f64 = 1.0;
/// An op row's change must exceed this share of the row, and [`ROW_STEP_FLOOR_PCT`] of the step.
pub const ROW_FLOOR_PCT: f64 = 2.0;
pub const ROW_STEP_FLOOR_PCT: f64 = 0.1;

/// One side's per-step samples: the compared step numbers and, per step, its time and what it
/// is made of (per device: GPU busy, launch overhead + host idle, the other idle).
#[derive(Clone, Debug, Default)]
pub struct Samples {
    pub numbers: Vec<u64>,
    pub step: Vec<f64>,
    pub gpu: Vec<f64>,
    pub host: Vec<f64>,
    pub other: Vec<f64>,
    /// The steady iterations compared span several phases.
    pub mixed_phases: bool,
}

/// The samples of an analysis: its step rows less a warm-up step and excluded iterations. A
/// step of several ranks takes the slowest rank's time and the ranks' mean parts.
pub fn samples(a: &Analysis) -> Samples {
    let mut by: BTreeMap<u64, Vec<&super::StepRow>> = BTreeMap::new();
    for r in a.step_breakdown.iter().filter(|r| r.excluded.is_none()) {
        by.entry(r.step).or_default().push(r);
    }
    let iterations = a.summary.iterations.is_some();
    if a.warmup_in_window && !iterations {
        if let Some(&first) = by.keys().next() {
            by.remove(&first);
        }
    }
    let phases: std::collections::BTreeSet<_> = by.values().flatten().map(|r| r.phase).collect();
    let mut out = Samples {
        mixed_phases: phases.len() > 1,
        ..Default::default()
    };
    if by.is_empty() && a.summary.steps == 0 && a.summary.iterations.is_none() {
        // No steps (rocprof's outputs): the window is one sample, as the op rows have it.
        if a.summary.window_ns > 0 {
            let part = |cats: &[Category]| -> f64 {
                cats.iter().map(|&c| a.partition_ns(c)).sum::<i64>() as f64
            };
            let host = part(&[Category::LaunchOverhead, Category::HostIdle]);
            let other = part(&[Category::IdleUnattributed, Category::GraphGaps]);
            let window = a.summary.window_ns as f64;
            out.numbers.push(super::op_steps::WINDOW);
            out.step.push(window);
            out.gpu.push(window - host - other);
            out.host.push(host);
            out.other.push(other);
        }
        return out;
    }
    for (number, rows) in by {
        let dur = rows.iter().map(|r| r.dur_ns).max().unwrap_or(0) as f64;
        let (mut gpu, mut host, mut other) = (0.0, 0.0, 0.0);
        for r in &rows {
            let total: i64 = r.time_partition.iter().map(|p| p.ns).sum();
            // The partition adds up to the step times its devices: per device, it adds up to
            // the step.
            let scale = if total > 0 {
                r.dur_ns as f64 / total as f64
            } else {
                0.0
            };
            for p in &r.time_partition {
                let v = p.ns as f64 * scale;
                match p.category {
                    Category::LaunchOverhead | Category::HostIdle => host += v,
                    Category::IdleUnattributed | Category::GraphGaps => other += v,
                    _ => gpu += v,
                }
            }
        }
        let n = rows.len() as f64;
        out.numbers.push(number);
        out.step.push(dur);
        out.gpu.push(gpu / n);
        out.host.push(host / n);
        out.other.push(other / n);
    }
    out
}

/// Where the step's change comes from: the parts the test could tell from the noise, else the
/// larger change.
fn cause_of(step: &Judgement, gpu: &Judgement, host: &Judgement) -> Option<Cause> {
    // Only parts that moved the way the step did explain it (GPU work that got faster does not
    // explain a slower step).
    let sign = (step.new_mean - step.base_mean).signum();
    let along = |j: &Judgement| ((j.new_mean - j.base_mean) * sign).max(0.0);
    let (mut dg, mut dh) = (along(gpu), along(host));
    if dg + dh == 0.0 {
        // No step change (or none explained): the larger change.
        (dg, dh) = (
            (gpu.new_mean - gpu.base_mean).abs(),
            (host.new_mean - host.base_mean).abs(),
        );
    }
    if dg + dh == 0.0 {
        return None;
    }
    let gpu_share = dg / (dg + dh);
    let moved = |j: &Judgement| j.verdict.changed() && along(j) > 0.0;
    Some(match (moved(gpu), moved(host)) {
        (true, true) if gpu_share >= 0.9 => Cause::GpuWork,
        (true, true) if gpu_share <= 0.1 => Cause::HostTime,
        (true, true) => Cause::Both,
        (true, false) => Cause::GpuWork,
        (false, true) => Cause::HostTime,
        (false, false) if gpu_share >= 0.5 => Cause::GpuWork,
        (false, false) => Cause::HostTime,
    })
}

fn component(name: &'static str, j: &Judgement) -> Component {
    let (b, n) = (j.base_mean.round() as i64, j.new_mean.round() as i64);
    Component {
        name,
        base_ns_per_step: b,
        new_ns_per_step: n,
        delta_ns_per_step: n - b,
        verdict: j.verdict,
        confidence: j.confidence,
    }
}

/// The step verdict, its cause, the components and the statistics' notes.
struct StepVerdict {
    step: Judgement,
    cause: Option<Cause>,
    components: Vec<Component>,
    statistics: Statistics,
}

fn step_verdict(b: &Samples, n: &Samples) -> StepVerdict {
    let floor = STEP_FLOOR_PCT / 100.0 * mean(&b.step);
    let step = stats::judge(&b.step, &n.step, floor);
    // GPU work drifts relative to itself (clocks), not to the host-bound step around it.
    let gpu = stats::judge(&b.gpu, &n.gpu, STEP_FLOOR_PCT / 100.0 * mean(&b.gpu));
    let host = stats::judge(&b.host, &n.host, floor);
    let other = stats::judge(&b.other, &n.other, floor);
    // Everything that is not GPU work, for the cause.
    let not_gpu =
        |s: &Samples| -> Vec<f64> { s.host.iter().zip(&s.other).map(|(h, o)| h + o).collect() };
    let idle = stats::judge(&not_gpu(b), &not_gpu(n), floor);
    let mut notes = Vec::new();
    if step.verdict == Verdict::TooFewSteps {
        notes.push(format!(
            "too few steps for a verdict: base {}, new {}; {} a side are needed",
            b.step.len(),
            n.step.len(),
            stats::MIN_STEPS
        ));
    }
    if b.mixed_phases || n.mixed_phases {
        notes.push(
            "the compared iterations span several phases (prefill and decode): pass --phase"
                .to_string(),
        );
    }
    let detectable_pct = step.test.filter(|_| mean(&b.step) > 0.0).map(|w| {
        let pct = stats::critical_t(stats::ALPHA, w.df) * w.se / w.base_mean * 100.0;
        (pct.max(STEP_FLOOR_PCT) * 100.0).round() / 100.0
    });
    StepVerdict {
        cause: cause_of(&step, &gpu, &idle),
        components: vec![
            component("gpu_work", &gpu),
            component("host_time", &host),
            component("other_idle", &other),
        ],
        statistics: Statistics {
            method: "welch_t",
            alpha: stats::ALPHA,
            min_steps: stats::MIN_STEPS,
            step_floor_pct: STEP_FLOOR_PCT,
            row_floor_pct: ROW_FLOOR_PCT,
            detectable_pct,
            notes,
        },
        step,
    }
}

/// A matched group's samples on one side: its members' GPU ns and calls in each compared step.
fn group_series(rows: &[OpStepTotals], members: &[usize], numbers: &[u64]) -> (Vec<f64>, f64) {
    let mut calls = 0u64;
    let series = numbers
        .iter()
        .map(|n| {
            members
                .iter()
                .filter_map(|&i| rows[i].per_step.get(n))
                .map(|&(ns, c)| {
                    calls += c;
                    ns as f64
                })
                .sum()
        })
        .collect();
    let per_step = calls as f64 / numbers.len().max(1) as f64;
    (series, (per_step * 100.0).round() / 100.0)
}

/// Op calls (and kernels without an op) per compared step, or None without op rows.
fn launches_per_step(rows: &[OpStepTotals], numbers: &[u64]) -> Option<f64> {
    if rows.is_empty() || numbers.is_empty() {
        return None;
    }
    let all: Vec<usize> = (0..rows.len()).collect();
    Some(group_series(rows, &all, numbers).1)
}

/// Every matched row with its verdict, largest change first.
fn op_deltas(base: &Analysis, new: &Analysis, b: &Samples, n: &Samples) -> Vec<OpDelta> {
    let (rb, rn) = (&base.parts.op_steps, &new.parts.op_steps);
    let step_base = mean(&b.step);
    let tested: Vec<_> = op_match::match_rows(rb, rn)
        .into_iter()
        .map(|g| {
            let (sb, cb) = group_series(rb, &g.base, &b.numbers);
            let (sn, cn) = group_series(rn, &g.new, &n.numbers);
            let floor =
                (ROW_FLOOR_PCT / 100.0 * mean(&sb)).max(ROW_STEP_FLOOR_PCT / 100.0 * step_base);
            let j = stats::judge(&sb, &sn, floor);
            (g, (cb, cn), floor, j)
        })
        .collect();
    // The rows are tested together: their p-values are adjusted for it.
    let p: Vec<f64> = tested
        .iter()
        .map(|t| t.3.test.map_or(1.0, |w| w.p))
        .collect();
    let q = stats::benjamini_hochberg(&p);
    let mut out: Vec<OpDelta> = tested
        .into_iter()
        .zip(q)
        .map(|((g, (cb, cn), floor, j), q)| {
            let j = j.at_p(q, floor);
            let verdict = match g.kind {
                Match::New => Verdict::Slower,
                Match::Removed => Verdict::Faster,
                _ => j.verdict,
            };
            let bucket = {
                let mut by: BTreeMap<Bucket, i64> = BTreeMap::new();
                for &i in &g.base {
                    *by.entry(rb[i].bucket).or_default() += rb[i].ns();
                }
                for &i in &g.new {
                    *by.entry(rn[i].bucket).or_default() += rn[i].ns();
                }
                by.into_iter()
                    .max_by_key(|&(b, ns)| (ns, std::cmp::Reverse(b)))
                    .map_or(Bucket::Other, |x| x.0)
            };
            let d = Delta::new("", j.base_mean, j.new_mean);
            OpDelta {
                matched: g.kind,
                via: g.via,
                op: g.op,
                shapes: g.shapes,
                dtype: g.dtype,
                new_op: g.new_op,
                new_shapes: g.new_shapes,
                bucket,
                base_ns_per_step: d.base_ns,
                new_ns_per_step: d.new_ns,
                delta_ns_per_step: d.delta_ns,
                delta_pct: d.delta_pct,
                base_calls_per_step: cb,
                new_calls_per_step: cn,
                verdict,
                confidence: j.confidence,
            }
        })
        .filter(|d| d.base_ns_per_step != 0 || d.new_ns_per_step != 0)
        .collect();
    out.sort_by(|x, y| {
        y.delta_ns_per_step
            .abs()
            .cmp(&x.delta_ns_per_step.abs())
            .then_with(|| x.op.cmp(&y.op))
            .then_with(|| x.shapes.cmp(&y.shapes))
            .then_with(|| x.matched.cmp(&y.matched))
    });
    out
}

fn side(o: &Outcome) -> Side {
    let (a, replayed) = (o.analysis, o.replayed_kernels);
    Side {
        inputs: a
            .inputs
            .iter()
            .map(|i| i.path.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        vendor: a.vendor().as_str(),
        devices: a
            .inputs
            .iter()
            .flat_map(|i| i.devices.iter().map(|d| d.name.clone()))
            .filter(|n| !n.is_empty())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        steps: a.summary.steps,
        compared_steps: 0,
        compared_step_numbers: None,
        launches_per_step: None,
        compiled: a.compile.compiled,
        cudagraphs: a.compile.cudagraphs,
        graph_replayed_kernels_per_step: (replayed / steps_of(a) * 100.0).round() / 100.0,
    }
}

/// Per step by `bucket/library`, and the kernels that appeared, vanished and changed most.
struct KernelLists {
    libraries: Vec<Delta>,
    appeared: Vec<KernelDelta>,
    vanished: Vec<KernelDelta>,
    changed: Vec<KernelDelta>,
}

fn kernel_lists(base: &Analysis, new: &Analysis, (sb, sn): (f64, f64), top: usize) -> KernelLists {
    let per_kernel = |a: &Analysis, s: f64| -> BTreeMap<String, (f64, Bucket, String)> {
        a.top_kernels
            .iter()
            .map(|k| {
                (
                    k.name.clone(),
                    (k.total_ns as f64 / s, k.bucket, k.library.clone()),
                )
            })
            .collect()
    };
    let (kb, kn) = (per_kernel(base, sb), per_kernel(new, sn));
    let mut libs: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for (t, i) in [(&kb, 0), (&kn, 1)] {
        for (ns, bucket, lib) in t.values() {
            let e = libs
                .entry(format!("{}/{}", bucket.as_str(), lib))
                .or_default();
            if i == 0 {
                e.0 += ns;
            } else {
                e.1 += ns;
            }
        }
    }
    let mut libraries: Vec<Delta> = libs
        .into_iter()
        .map(|(k, (b, n))| Delta::new(k, b, n))
        .collect();
    libraries.sort_by(|a, b| {
        b.delta_ns
            .abs()
            .cmp(&a.delta_ns.abs())
            .then(a.name.cmp(&b.name))
    });

    let kd = |name: &str, b: Option<&(f64, Bucket, String)>, n: Option<&(f64, Bucket, String)>| {
        let (bucket, library) = n
            .or(b)
            .map(|x| (x.1, x.2.clone()))
            .unwrap_or((Bucket::Other, String::new()));
        let (bn, nn) = (
            b.map_or(0.0, |x| x.0).round() as i64,
            n.map_or(0.0, |x| x.0).round() as i64,
        );
        KernelDelta {
            name: name.to_string(),
            bucket,
            library,
            base_ns: bn,
            new_ns: nn,
            delta_ns: nn - bn,
        }
    };
    let by_size = |v: &mut Vec<KernelDelta>| {
        v.sort_by(|a, b| {
            b.delta_ns
                .abs()
                .cmp(&a.delta_ns.abs())
                .then(a.name.cmp(&b.name))
        });
        v.truncate(top);
    };
    let mut appeared: Vec<KernelDelta> = kn
        .iter()
        .filter(|(k, _)| !kb.contains_key(*k))
        .map(|(k, v)| kd(k, None, Some(v)))
        .collect();
    let mut vanished: Vec<KernelDelta> = kb
        .iter()
        .filter(|(k, _)| !kn.contains_key(*k))
        .map(|(k, v)| kd(k, Some(v), None))
        .collect();
    let mut changed: Vec<KernelDelta> = kb
        .iter()
        .filter_map(|(k, v)| kn.get(k).map(|n| kd(k, Some(v), Some(n))))
        .filter(|d| d.delta_ns != 0)
        .collect();
    by_size(&mut appeared);
    by_size(&mut vanished);
    by_size(&mut changed);
    KernelLists {
        libraries,
        appeared,
        vanished,
        changed,
    }
}

/// Compares two analyses; `top` bounds the kernel lists. The analyses should list all kernels
/// (`top_kernels` unbounded) for the kernel lists to be complete.
pub fn diff(base_run: &Outcome, new_run: &Outcome, top: usize) -> Diff {
    let (base, new) = (base_run.analysis, new_run.analysis);
    let (sb, sn) = (steps_of(base), steps_of(new));
    let buckets = Bucket::ALL
        .iter()
        .map(|&b| {
            Delta::new(
                b.as_str(),
                base.bucket(b).kernel_ns as f64 / sb,
                new.bucket(b).kernel_ns as f64 / sn,
            )
        })
        .collect();
    let time_partition = base
        .time_partition
        .iter()
        .map(|r| {
            Delta::new(
                r.category.as_str(),
                r.ns as f64 / sb,
                new.partition_ns(r.category) as f64 / sn,
            )
        })
        .collect();

    let kernels = kernel_lists(base, new, (sb, sn), top);

    let (fb, fnew) = (&base_run.finding_ids, &new_run.finding_ids);
    let ladder = base_run
        .ladder
        .iter()
        .map(|(level, name, status)| LadderChange {
            level: *level,
            name: name.clone(),
            base: status,
            new: new_run
                .ladder
                .iter()
                .find(|x| x.0 == *level)
                .map_or("unknown", |x| x.2),
        })
        .collect();
    let (b_samples, n_samples) = (samples(base), samples(new));
    let mut verdict = step_verdict(&b_samples, &n_samples);
    let window = |s: &Samples| s.numbers.first() == Some(&super::op_steps::WINDOW);
    let mut ops = if b_samples.numbers.is_empty() || n_samples.numbers.is_empty() {
        verdict
            .statistics
            .notes
            .push("a side has no compared steps: no op rows".to_string());
        Vec::new()
    } else if window(&b_samples) != window(&n_samples) {
        verdict.statistics.notes.push(
            "one side has steps and the other none (its whole window is one sample): \
             no op rows"
                .to_string(),
        );
        Vec::new()
    } else {
        op_deltas(base, new, &b_samples, &n_samples)
    };
    if base.device_count() != new.device_count() {
        verdict.statistics.notes.push(format!(
            "the runs have {} and {} devices: op rows add the devices' time, the step and its \
             parts are per device",
            base.device_count(),
            new.device_count()
        ));
    }
    let ops_total = ops.len();
    ops.truncate(top);
    let with_samples = |o: &Outcome, s: &Samples| Side {
        launches_per_step: launches_per_step(&o.analysis.parts.op_steps, &s.numbers),
        compared_steps: s.numbers.len(),
        compared_step_numbers: (!s.numbers.is_empty() && s.numbers[0] != super::op_steps::WINDOW)
            .then(|| [s.numbers[0], s.numbers[s.numbers.len() - 1]]),
        ..side(o)
    };
    // The compared steps' mean where there are some (iterations: the steady ones).
    let step_of = |a: &Analysis, s: &Samples| {
        if s.step.is_empty() {
            step_time(a)
        } else {
            mean(&s.step)
        }
    };
    Diff {
        base: with_samples(base_run, &b_samples),
        new: with_samples(new_run, &n_samples),
        verdict: verdict.step.verdict,
        confidence: verdict.step.confidence,
        cause: verdict.cause,
        statistics: verdict.statistics,
        components: verdict.components,
        ops,
        ops_total,
        step: Delta::new("step", step_of(base, &b_samples), step_of(new, &n_samples)),
        gpu_busy: Delta::new(
            "gpu_busy",
            base.summary.gpu_busy_ns as f64 / sb,
            new.summary.gpu_busy_ns as f64 / sn,
        ),
        buckets,
        time_partition,
        libraries: kernels.libraries,
        kernels_appeared: kernels.appeared,
        kernels_vanished: kernels.vanished,
        kernels_changed: kernels.changed,
        findings_resolved: fb.difference(fnew).cloned().collect(),
        findings_introduced: fnew.difference(fb).cloned().collect(),
        findings_remaining: fb.intersection(fnew).cloned().collect(),
        ladder,
        next_level: (base_run.next_level, new_run.next_level),
    }
}

/// What `--fail-on-regression` concluded: what tripped it, and what it chose not to gate on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gate {
    pub tripped: Vec<String>,
    pub notices: Vec<String>,
}

impl Diff {
    /// `--fail-on-regression PCT`: trips when the step verdict is `slower` by more than `pct`
    /// percent, unless the change is host noise ([`Diff::host_noise`]: the same code in two
    /// processes), which is reported, not gated (`gate_host_time` gates it too). With too few steps for a verdict it falls
    /// back to [`Diff::regressions`] and says so.
    pub fn gate(&self, pct: f64, gate_host_time: bool) -> Gate {
        let mut g = Gate::default();
        let step_pct = self.step.delta_pct.unwrap_or(0.0);
        let largest_slower = self
            .ops
            .iter()
            .find(|o| o.verdict == Verdict::Slower && o.delta_ns_per_step > 0)
            .map(|o| {
                format!(
                    "; largest slower op: {}{} {:+} ns per step",
                    o.op,
                    o.shapes
                        .as_deref()
                        .map_or(String::new(), |s| format!(" {s}")),
                    o.delta_ns_per_step
                )
            })
            .unwrap_or_default();
        match self.verdict {
            Verdict::TooFewSteps => {
                g.notices.push(format!(
                    "too few steps for a verdict (base {}, new {}; {} a side are needed): \
                     gating on the bare percentage",
                    self.base.compared_steps,
                    self.new.compared_steps,
                    stats::MIN_STEPS
                ));
                g.tripped = self.regressions(pct);
            }
            Verdict::Slower if step_pct > pct => {
                let cause = self.cause.unwrap_or(Cause::GpuWork);
                let what = format!(
                    "step time {step_pct:+.1}% ({} → {} ns), slower at confidence {:.3}, from {}",
                    self.step.base_ns,
                    self.step.new_ns,
                    self.confidence.unwrap_or(0.0),
                    cause.as_str()
                );
                if cause == Cause::HostTime && self.host_noise() && !gate_host_time {
                    g.notices.push(format!(
                        "not gated: {what}: host time (launch overhead, host idle) with the same \
                         launches per step and unchanged GPU work is host noise, not a \
                         regression of the code (--gate-host-time gates it)"
                    ));
                } else {
                    g.tripped.push(format!("{what}{largest_slower}"));
                }
            }
            _ => {
                if let Some(gpu) = self.components.iter().find(|c| {
                    c.name == "gpu_work"
                        && c.verdict == Verdict::Slower
                        && c.delta_ns_per_step as f64 > pct / 100.0 * self.step.base_ns as f64
                }) {
                    g.notices.push(format!(
                        "not gated: GPU work is slower by {} ns per step (more than {pct}% of \
                         the step), but the step is {} in its host noise{largest_slower}",
                        gpu.delta_ns_per_step,
                        self.verdict.as_str()
                    ));
                }
            }
        }
        g
    }

    /// A slower step that host noise explains: the host time (launch overhead, host idle)
    /// grew, while the GPU work did not and both runs launched the same work per step.
    pub fn host_noise(&self) -> bool {
        let verdict = |name: &str| {
            self.components
                .iter()
                .find(|c| c.name == name)
                .map(|c| c.verdict)
        };
        self.same_launches()
            && verdict("host_time") == Some(Verdict::Slower)
            && verdict("gpu_work") != Some(Verdict::Slower)
    }

    /// Both runs launched the same work per step (op calls within 1%); unknown without op
    /// rows, which counts as not the same.
    pub fn same_launches(&self) -> bool {
        match (self.base.launches_per_step, self.new.launches_per_step) {
            (Some(b), Some(n)) if b > 0.0 => (n - b).abs() <= 0.01 * b,
            _ => false,
        }
    }

    /// What grew by more than `pct` percent: the step time, or a bucket's time per step (buckets
    /// under 1% of the base step are too small to judge).
    pub fn regressions(&self, pct: f64) -> Vec<String> {
        let mut out = Vec::new();
        let grew = |d: &Delta| d.delta_pct.is_some_and(|p| p > pct);
        if grew(&self.step) {
            out.push(format!(
                "step time {:+.1}% ({} → {} ns)",
                self.step.delta_pct.unwrap_or(0.0),
                self.step.base_ns,
                self.step.new_ns
            ));
        }
        for b in &self.buckets {
            if grew(b) && b.base_ns as f64 >= 0.01 * self.step.base_ns as f64 {
                out.push(format!(
                    "{} {:+.1}% per step ({} → {} ns)",
                    b.name,
                    b.delta_pct.unwrap_or(0.0),
                    b.base_ns,
                    b.new_ns
                ));
            }
        }
        out
    }
}
