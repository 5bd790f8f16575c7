//! Each run's per-step samples (step time and its parts, op rows per step) and the step
//! verdict: whether the step changed beyond the noise, and where the change comes from.

use crate::analysis::ops::op_steps::OpStepTotals;
use crate::analysis::time::partition::Category;
use crate::analysis::Analysis;
use crate::compare::output::{Cause, Component, Statistics};
use crate::compare::stats::{self, mean, Judgement, Verdict};
use std::collections::BTreeMap;

pub(crate) fn steps_of(a: &Analysis) -> f64 {
    a.summary.step_count().max(1) as f64
}

/// Mean step time, or the window without steps.
pub(crate) fn step_time(a: &Analysis) -> f64 {
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
/// An op row's change must also exceed this share (%) of the base step.
pub const ROW_STEP_FLOOR_PCT: f64 = 0.1;

/// One side's per-step samples: the compared step numbers and, per step, its time and what it
/// is made of (per device: GPU busy, launch overhead + host idle, the other idle).
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// The compared step numbers; `WINDOW` (`u64::MAX`) alone for an input without steps.
    pub numbers: Vec<u64>,
    /// Each step's time (the slowest rank's), in ns.
    pub step: Vec<f64>,
    /// Each step's GPU work (busy) per device, in ns.
    pub gpu: Vec<f64>,
    /// Each step's host time (launch overhead + host idle) per device, in ns.
    pub host: Vec<f64>,
    /// Each step's other idle (unattributed idle, graph gaps) per device, in ns.
    pub other: Vec<f64>,
    /// The steady iterations compared span several phases.
    pub mixed_phases: bool,
}

/// The samples of an analysis: its step rows less a warm-up step and excluded iterations. A
/// step of several ranks takes the slowest rank's time and the ranks' mean parts.
pub fn samples(a: &Analysis) -> Samples {
    let mut by: BTreeMap<u64, Vec<&crate::analysis::StepRow>> = BTreeMap::new();
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
            let host = part(&[
                Category::LaunchOverhead,
                Category::DataLoading,
                Category::HostIdle,
            ]);
            let other = part(&[Category::IdleUnattributed, Category::GraphGaps]);
            let window = a.summary.window_ns as f64;
            out.numbers.push(crate::analysis::ops::op_steps::WINDOW);
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
                    Category::LaunchOverhead | Category::DataLoading | Category::HostIdle => {
                        host += v
                    }
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
pub(crate) fn cause_of(step: &Judgement, gpu: &Judgement, host: &Judgement) -> Option<Cause> {
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

pub(crate) fn component(name: &'static str, j: &Judgement) -> Component {
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
pub(crate) struct StepVerdict {
    pub(crate) step: Judgement,
    pub(crate) cause: Option<Cause>,
    pub(crate) components: Vec<Component>,
    pub(crate) statistics: Statistics,
}

pub(crate) fn step_verdict(b: &Samples, n: &Samples) -> StepVerdict {
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
pub(crate) fn group_series(
    rows: &[OpStepTotals],
    members: &[usize],
    numbers: &[u64],
) -> (Vec<f64>, f64) {
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
pub(crate) fn launches_per_step(rows: &[OpStepTotals], numbers: &[u64]) -> Option<f64> {
    if rows.is_empty() || numbers.is_empty() {
        return None;
    }
    let all: Vec<usize> = (0..rows.len()).collect();
    Some(group_series(rows, &all, numbers).1)
}
