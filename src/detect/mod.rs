//! Detectors: each reads the analysis [`Context`] and reports findings with a severity, the time
//! at stake and the evidence (FEED.md finding ids). They never read files or print.

mod compile;
pub use compile::annotate;
mod hardware;
mod host;
mod kernels;
mod model;
mod ranks;
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

/// Every finding id this version reports, with when it fires (for `explain` and the README).
pub const DEFINITIONS: &[(&str, &str)] = &[
    ("graph_breaks", "torch.compile graph breaks per step > 0: a frame sequence inside a step (0/0 -> 1/0 -> 2/0 is two breaks), or a later frame repeating from eager code while frame 0 never runs. Evidence: regions per step, frames, ops run eagerly between regions, aten::item syncs."),
    ("compiled_loop", "(info) a compiled frame present from 0/0 runs several times per step without breaks: a function compiled once and called in a loop."),
    ("recompiles", "recompiled graphs (Torch-Compiled Region F/C with C >= 1) run inside the window."),
    ("compile_in_window", "torch.compile's own work ((dynamo_timed) ranges) ran inside the window."),
    ("cudagraphs_in_use", "(info) cudaGraphLaunch/hipGraphLaunch calls replay kernels; they count as busy."),
    ("launch_bound", "launch overhead >= 20% of the window and above host idle, and either most kernels run under 10 us or dispatch outweighs GPU busy time."),
    ("host_bound", "host idle outside any profiled event (not blocked in a sync or compiling) >= 20% of the window and above launch overhead: data loading, Python work or sleeps keep the GPU waiting."),
    ("sync_stalls", "synchronizing runtime calls (device/stream/event synchronize, blocking memcpy) inside steps (without steps: between the first and last launch), outside torch.compile's autotuning."),
    ("manual_attention", "GEMM -> softmax -> GEMM kernel chains on one stream, at least one per step: attention written by hand."),
    ("unfused_projections", "3 (Q/K/V) or 2 (gate/up, equal weight shapes) outermost GEMM ops in a row reading an input of the same shape; reported separately with evidence.kind qkv / gate_up."),
    ("fp32_gemm", ">= 1% of GEMM time in fp32 kernels without matrix/tensor cores (ffma, simt sgemm, cuBLAS sgemm, Tensile single precision)."),
    ("gemm_backend", "(info) GEMM time by library from kernel names, with a confidence."),
    ("elementwise_heavy", "elementwise kernels >= 30% of kernel time."),
    ("conv_layout_transposes", "NCHW<->NHWC layout transpose kernels run."),
    ("exposed_communication", "communication kernels run; evidence has the share overlapped with compute."),
    ("memcpy_heavy", "memcpy/memset >= 10% of kernel time or >= 5% of the window."),
    ("unclassified_time", "more than 2% of kernel time matched no classification rule."),
    ("high_step_variance", "step-time coefficient of variation above 10%."),
    ("warmup_in_window", "step 0 takes more than 1.5x the median of the other steps."),
    ("straggler_rank", "several ranks: one rank spends the least time in collectives in most steps (the others wait for it there) and the others' wait is >= 2% of the window. Evidence: the steps, the wait, each rank's communication and compute time, and whether the straggler has more GPU work or is late on its host."),
    ("inductor_fallbacks", "(info; from torch.compile logs) Inductor ran ops as ATen fallback kernels ([__perf_hints] Using FallbackKernel), with how many compiles did."),
    ("low_occupancy", "(hardware counters) kernels with >= 1% of profiled time whose VGPRs or LDS allow at most a quarter of the waves a SIMD can hold (2 of 8 on MI300), while the grid has work for more (seeds/003 occupancy formula)."),
    ("memory_bound_gemm", "(hardware counters) GEMM, attention or conv kernels whose arithmetic intensity (FLOPs per HBM byte) is below the roofline's ridge point and which reach >= 30% of the attainable performance there."),
    ("low_gemm_efficiency", "(hardware counters) GEMM, attention or conv kernels below 30% of the roofline's attainable FLOP/s at their arithmetic intensity (latency bound)."),
    ("no_matrix_cores", "(hardware counters) GEMM, attention or conv kernels with FLOPs but under 1% of them on matrix cores (MFMA)."),
];

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
    ranks::straggler_rank,
    hardware::low_occupancy,
    hardware::memory_bound_gemm,
    hardware::low_gemm_efficiency,
    hardware::no_matrix_cores,
];

/// Runs every detector; findings sorted by severity, then time at stake (descending), then id.
pub fn run_all(ctx: &Context) -> Vec<Finding> {
    use rayon::prelude::*;
    // Independent detectors run in parallel; collect keeps their order (and the sort below
    // fixes the final one), so the output does not depend on the thread count.
    let mut out: Vec<Finding> = DETECTORS.par_iter().flat_map_iter(|d| d(ctx)).collect();
    sort(&mut out);
    out
}

/// The feed's order: severity, then time at stake (descending), then id and summary.
pub fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        a.severity
            .cmp(&b.severity)
            .then(b.time_at_stake_ns.cmp(&a.time_at_stake_ns))
            .then(a.id.cmp(b.id))
            .then(a.summary.cmp(&b.summary))
    });
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
    ctx.analysis.summary.steps.max(1) as f64
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
