//! Detectors: each reads the analysis [`Context`] and reports findings with a severity, the time
//! at stake and the evidence (FEED.md finding ids). They never read files or print.

mod compile;
mod host;
mod kernels;
mod model;
mod steps;

use crate::analysis::Context;
use serde::Serialize;
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    High,
    Medium,
    Low,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
            Severity::Info => "info",
        }
    }
}

/// One finding of the feed's `findings`.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub id: &'static str,
    pub severity: Severity,
    pub summary: String,
    pub time_at_stake_ns: i64,
    pub evidence: Value,
}

impl Finding {
    pub fn new(
        id: &'static str,
        severity: Severity,
        summary: String,
        time_at_stake_ns: i64,
        evidence: Value,
    ) -> Self {
        Finding {
            id,
            severity,
            summary,
            time_at_stake_ns: time_at_stake_ns.max(0),
            evidence,
        }
    }
}

type Detector = fn(&Context) -> Vec<Finding>;

/// Every detector, in no particular order (findings are sorted afterwards).
const DETECTORS: &[Detector] = &[
    compile::graph_breaks,
    compile::compiled_loop,
    compile::recompiles,
    compile::compile_in_window,
    compile::cudagraphs_in_use,
    host::launch_bound,
    host::host_bound,
    host::sync_stalls,
    model::manual_attention,
    model::unfused_projections,
    kernels::fp32_gemm,
    kernels::gemm_backend,
    kernels::elementwise_heavy,
    kernels::conv_layout_transposes,
    kernels::exposed_communication,
    kernels::memcpy_heavy,
    kernels::unclassified_time,
    steps::high_step_variance,
    steps::warmup_in_window,
];

/// Runs every detector; findings sorted by severity, then time at stake (descending), then id.
pub fn run_all(ctx: &Context) -> Vec<Finding> {
    let mut out: Vec<Finding> = DETECTORS.iter().flat_map(|d| d(ctx)).collect();
    out.sort_by(|a, b| {
        a.severity
            .cmp(&b.severity)
            .then(b.time_at_stake_ns.cmp(&a.time_at_stake_ns))
            .then(a.id.cmp(b.id))
            .then(a.summary.cmp(&b.summary))
    });
    out
}

/// Percent of `whole`, for summaries.
fn pct(part: i64, whole: i64) -> f64 {
    crate::analysis::pct(part, whole)
}

/// `1234567` ns → "1.23 ms" for summaries.
fn ms(ns: i64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

/// Number of analyzed steps (at least 1, the whole trace counting as one step without any).
fn step_count(ctx: &Context) -> f64 {
    ctx.summary.steps.max(1) as f64
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
