//! Step-time findings: high variance (the seed's "std > 10% of mean: something is wrong") and a
//! warm-up step inside the window.

use super::evidence as ev;
use super::{pct, round2, Detail, Finding, Severity};
use crate::analysis::numbers::median;
use crate::analysis::time::phases::Phase;
use crate::analysis::time::steps::step_stats;
use crate::analysis::Analysis;

pub fn high_step_variance(a: &Analysis) -> Vec<Finding> {
    if !a.phases.is_empty() {
        return iteration_variance(a);
    }
    let step_durations = &a.parts.step_durations;
    let Some(stats) = &a.summary.step_ns else {
        return vec![];
    };
    if stats.cv_pct <= 10.0 || step_durations.len() < 2 {
        return vec![];
    }
    let steps: &[(u64, i64)] = if a.warmup_in_window {
        &step_durations[1..]
    } else {
        step_durations
    };
    let durs: Vec<i64> = steps.iter().map(|s| s.1).collect();
    let med = median(&durs);
    let stake: i64 = durs.iter().map(|&d| (d as f64 - med).max(0.0) as i64).sum();
    let mut slowest: Vec<&(u64, i64)> = steps.iter().collect();
    slowest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    vec![Finding::new(
        Severity::Medium,
        format!(
            "step time varies by {:.1}% (std {:.2} ms over mean {:.2} ms): more than 10% means something changes between steps (graph breaks, recompiles, syncs, data loading)",
            stats.cv_pct,
            stats.std / 1e6,
            stats.mean / 1e6
        ),
        stake,
        Detail::HighStepVariance(ev::HighStepVariance::Steps(ev::StepVariance {
            cv_pct: stats.cv_pct,
            mean_ns: stats.mean,
            std_ns: stats.std,
            slowest_steps: slowest
                .iter()
                .take(3)
                .map(|(step, dur_ns)| ev::StepTime {
                    step: *step,
                    dur_ns: *dur_ns,
                })
                .collect(),
        })),
    )]
}

pub fn warmup_in_window(a: &Analysis) -> Vec<Finding> {
    if !a.phases.is_empty() {
        return iterations_left_out(a);
    }
    let step_durations = &a.parts.step_durations;
    let durs: Vec<i64> = step_durations.iter().map(|s| s.1).collect();
    if !a.warmup_in_window || durs.len() < 2 {
        return vec![];
    }
    let med = median(&durs[1..]);
    let extra = (durs[0] as f64 - med) as i64;
    vec![Finding::new(
        Severity::Low,
        format!(
            "step {} takes {:.1}x the median step: a warm-up inside the profiled window; it is left out of the step statistics (use --skip-warmup, or schedule(warmup=...) when profiling)",
            step_durations[0].0,
            durs[0] as f64 / med
        ),
        extra,
        Detail::WarmupInWindow(ev::WarmupInWindow::Step(ev::WarmupStep {
            step: step_durations[0].0,
            dur_ns: durs[0],
            median_ns: med,
            ratio: round2(durs[0] as f64 / med),
            extra_pct: pct(extra, a.summary.window_ns),
        })),
    )]
}

/// Steady iterations' times per phase (rank-merged: the slowest rank's).
fn steady_iterations(a: &Analysis, phase: Phase) -> Vec<(u64, i64)> {
    a.parts
        .phases
        .iter()
        .filter(|t| t.phase == phase)
        .flat_map(|t| {
            t.durations
                .iter()
                .filter(|(n, _)| !t.excluded.contains_key(n))
                .map(|(&n, &d)| (n, d))
        })
        .collect()
}

/// Iterations: the variance of decode and unknown-phase iterations, which should repeat
/// (prefill and mixed iterations vary with their prompts by design).
fn iteration_variance(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for phase in [Phase::Decode, Phase::Step] {
        let its = steady_iterations(a, phase);
        if its.len() < 3 {
            continue;
        }
        let durs: Vec<i64> = its.iter().map(|s| s.1).collect();
        let Some((stats, _)) = step_stats(&durs, None) else {
            continue;
        };
        // step_stats would drop a leading warm-up; these are steady already: recompute plainly.
        let n = durs.len() as f64;
        let mean = durs.iter().map(|&d| d as f64).sum::<f64>() / n;
        let std = (durs.iter().map(|&d| (d as f64 - mean).powi(2)).sum::<f64>() / n).sqrt();
        let cv = if mean > 0.0 {
            std / mean * 100.0
        } else {
            stats.cv_pct
        };
        if cv <= 10.0 {
            continue;
        }
        let med = median(&durs);
        let stake: i64 = durs.iter().map(|&d| (d as f64 - med).max(0.0) as i64).sum();
        let mut slowest = its.clone();
        slowest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out.push(Finding::new(
            Severity::Medium,
            format!(
                "{phase} iteration time varies by {cv:.1}% (std {:.2} ms over mean {:.2} ms, {} steady iterations; slowest #{} at {:.2} ms): iterations of one phase should repeat, so something changes between them (new shapes each step that the library re-plans, allocator growth, host work, syncs)",
                std / 1e6,
                mean / 1e6,
                durs.len(),
                slowest[0].0,
                slowest[0].1 as f64 / 1e6
            ),
            stake,
            Detail::HighStepVariance(ev::HighStepVariance::Phase(ev::PhaseVariance {
                phase,
                cv_pct: round2(cv),
                mean_ns: mean.round(),
                std_ns: std.round(),
                iterations: durs.len(),
                slowest_iterations: slowest
                    .iter()
                    .take(3)
                    .map(|(iteration, dur_ns)| ev::IterationTime {
                        iteration: *iteration,
                        dur_ns: *dur_ns,
                    })
                    .collect(),
            })),
        ));
    }
    out
}

/// Iterations: the ones left out of their phase's steady state (graph capture, compile,
/// warm-up), named.
fn iterations_left_out(a: &Analysis) -> Vec<Finding> {
    let mut listed = Vec::new();
    let mut extra = 0i64;
    for row in &a.phases {
        let med = if row.iterations > 0 { row.p50_ns } else { 0 };
        for e in &row.excluded {
            extra += (e.dur_ns - med).max(0);
            listed.push((row.phase, e, med));
        }
    }
    if listed.is_empty() {
        return vec![];
    }
    listed.sort_by_key(|(_, e, _)| e.iteration);
    let names: Vec<String> = listed
        .iter()
        .take(6)
        .map(|(phase, e, med)| {
            let ratio = if *med > 0 {
                format!(", {:.1}x the {phase} median", e.dur_ns as f64 / *med as f64)
            } else {
                String::new()
            };
            format!(
                "#{} {} ({phase}, {:.2} ms{ratio})",
                e.iteration,
                e.reason.as_str(),
                e.dur_ns as f64 / 1e6
            )
        })
        .collect();
    vec![Finding::new(
        Severity::Low,
        format!(
            "{} iteration(s) are not steady state: {}{}; they are left out of the phase statistics (use --skip-warmup to leave them out of everything)",
            listed.len(),
            names.join(", "),
            if listed.len() > 6 { ", …" } else { "" }
        ),
        extra,
        Detail::WarmupInWindow(ev::WarmupInWindow::Iterations(ev::WarmupIterations {
            kind: ev::WarmupKind::Iteration,
            iterations: listed
                .iter()
                .map(|(phase, e, med)| ev::LeftOut {
                    iteration: e.iteration,
                    phase: *phase,
                    reason: e.reason,
                    dur_ns: e.dur_ns,
                    phase_median_ns: *med,
                })
                .collect(),
            extra_pct: pct(extra, a.summary.window_ns),
        })),
    )]
}
