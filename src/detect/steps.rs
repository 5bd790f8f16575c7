//! Step-time findings: high variance (the seed's "std > 10% of mean: something is wrong") and a
//! warm-up step inside the window.

use super::{pct, round2, Finding, FindingId, Severity};
use crate::analysis::steps::{is_warmup, median};
use crate::analysis::Analysis;
use serde_json::json;

pub fn high_step_variance(a: &Analysis) -> Vec<Finding> {
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
        FindingId::HighStepVariance,
        Severity::Medium,
        format!(
            "step time varies by {:.1}% (std {:.2} ms over mean {:.2} ms): more than 10% means something changes between steps (graph breaks, recompiles, syncs, data loading)",
            stats.cv_pct,
            stats.std / 1e6,
            stats.mean / 1e6
        ),
        stake,
        json!({
            "cv_pct": stats.cv_pct,
            "mean_ns": stats.mean,
            "std_ns": stats.std,
            "slowest_steps": slowest.iter().take(3).map(|(n, d)| json!({"step": n, "dur_ns": d})).collect::<Vec<_>>(),
        }),
    )]
}

pub fn warmup_in_window(a: &Analysis) -> Vec<Finding> {
    let step_durations = &a.parts.step_durations;
    let durs: Vec<i64> = step_durations.iter().map(|s| s.1).collect();
    if !is_warmup(&durs) {
        return vec![];
    }
    let med = median(&durs[1..]);
    let extra = (durs[0] as f64 - med) as i64;
    vec![Finding::new(
        FindingId::WarmupInWindow,
        Severity::Low,
        format!(
            "step {} takes {:.1}x the median step: a warm-up inside the profiled window; it is left out of the step statistics (use --skip-warmup, or schedule(warmup=...) when profiling)",
            step_durations[0].0,
            durs[0] as f64 / med
        ),
        extra,
        json!({"step": step_durations[0].0, "dur_ns": durs[0], "median_ns": med, "ratio": round2(durs[0] as f64 / med), "extra_pct": pct(extra, a.summary.window_ns)}),
    )]
}
