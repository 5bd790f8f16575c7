//! Findings from hardware counters (rocprof-compute workloads): occupancy limits, memory-bound
//! or inefficient GEMMs, and matrix work done without matrix cores (seeds/003).

use super::{round2, Finding, Severity};
use crate::analysis::hardware::{share_pct, total_ns, Bound, KernelCounters};
use crate::analysis::Context;
use crate::classify::Bucket;
use serde_json::{json, Value};

/// Kernels below this share of the counter passes' time are not worth a finding.
const MIN_SHARE_PCT: f64 = 1.0;

fn significant<'a>(ctx: &'a Context<'_>) -> impl Iterator<Item = &'a KernelCounters> + 'a {
    let total = total_ns(&ctx.kernel_counters);
    ctx.kernel_counters
        .iter()
        .filter(move |r| share_pct(r, total) >= MIN_SHARE_PCT)
}

fn is_matrix_work(b: Bucket) -> bool {
    matches!(b, Bucket::Gemm | Bucket::Attention | Bucket::Conv)
}

fn evidence_row(r: &KernelCounters, total: i64) -> Value {
    let o = r.occupancy.as_ref();
    json!({
        "kernel": r.name,
        "bucket": r.bucket.as_str(),
        "total_ns": r.total_ns,
        "share_pct": round2(share_pct(r, total)),
        "pipe": r.pipe,
        "tflops": r.tflops.map(round2),
        "pct_of_peak": r.pct_of_peak.map(round2),
        "hbm_pct_of_peak": r.hbm_pct_of_peak.map(round2),
        "arithmetic_intensity": r.arithmetic_intensity.map(round2),
        "roofline_pct": r.roofline_pct.map(round2),
        "bound": r.bound.map(Bound::as_str),
        "waves_per_simd": o.map(|o| round2(o.waves_per_simd)),
        "occupancy_limiter": o.map(|o| o.limiter),
        "vgprs": o.map(|o| o.vgprs),
        "vgprs_for_next_wave": o.and_then(|o| o.vgprs_for_next_wave),
        "lds_per_workgroup": r.resources.lds_per_workgroup,
    })
}

fn finding(
    ctx: &Context,
    id: &'static str,
    hits: &[&KernelCounters],
    summary: String,
    high_share: f64,
) -> Vec<Finding> {
    if hits.is_empty() {
        return Vec::new();
    }
    let rows = &ctx.kernel_counters;
    let total = total_ns(rows);
    let share: f64 = hits.iter().map(|r| share_pct(r, total)).sum();
    let severity = if share >= high_share {
        Severity::Medium
    } else {
        Severity::Low
    };
    let stake: i64 = hits.iter().map(|r| r.total_ns).sum();
    vec![Finding::new(
        id,
        severity,
        format!("{summary} ({:.1}% of profiled kernel time)", share),
        stake,
        json!({
            "kernels": hits.iter().map(|r| evidence_row(r, total)).collect::<Vec<_>>(),
            "share_pct": round2(share),
        }),
    )]
}

/// Kernels whose registers or LDS let each SIMD hold at most a quarter of its waves, where the
/// grid has the work to fill more (seeds/003: `waves_per_eu`, LDS use).
pub fn low_occupancy(ctx: &Context) -> Vec<Finding> {
    let hits: Vec<&KernelCounters> = significant(ctx)
        .filter(|r| {
            r.occupancy.as_ref().is_some_and(|o| {
                matches!(o.limiter, "vgpr" | "lds")
                    && o.waves_per_simd <= o.max_waves_per_simd as f64 / 4.0
                    && o.grid_waves_per_simd > o.waves_per_simd
            })
        })
        .collect();
    let worst = hits
        .iter()
        .filter_map(|r| r.occupancy.as_ref())
        .map(|o| o.waves_per_simd)
        .fold(f64::INFINITY, f64::min);
    finding(
        ctx,
        "low_occupancy",
        &hits,
        format!(
            "{} kernel(s) limited to {worst} waves per SIMD by VGPRs or LDS",
            hits.len()
        ),
        10.0,
    )
}

/// GEMM-like kernels whose arithmetic intensity puts them under the bandwidth roof, moving data
/// near it: tiles too small to reuse what they load.
pub fn memory_bound_gemm(ctx: &Context) -> Vec<Finding> {
    let hits: Vec<&KernelCounters> = significant(ctx)
        .filter(|r| is_matrix_work(r.bucket) && r.bound == Some(Bound::Memory))
        .collect();
    finding(
        ctx,
        "memory_bound_gemm",
        &hits,
        format!(
            "{} GEMM-like kernel(s) are memory bound: arithmetic intensity below the roofline's ridge point",
            hits.len()
        ),
        10.0,
    )
}

/// GEMM-like kernels reaching neither roof (below 30% of the attainable FLOP/s at their intensity).
pub fn low_gemm_efficiency(ctx: &Context) -> Vec<Finding> {
    let hits: Vec<&KernelCounters> = significant(ctx)
        .filter(|r| is_matrix_work(r.bucket) && r.bound == Some(Bound::Latency))
        .collect();
    finding(
        ctx,
        "low_gemm_efficiency",
        &hits,
        format!(
            "{} GEMM-like kernel(s) reach under {:.0}% of the roofline",
            hits.len(),
            crate::analysis::hardware::ROOF_NEAR_PCT
        ),
        10.0,
    )
}

/// GEMM, attention or convolution kernels whose FLOPs all run on the vector ALUs.
pub fn no_matrix_cores(ctx: &Context) -> Vec<Finding> {
    let hits: Vec<&KernelCounters> = significant(ctx)
        .filter(|r| {
            is_matrix_work(r.bucket)
                && r.tflops.is_some_and(|t| t > 0.0)
                && r.matrix_pct.is_some_and(|m| m < 1.0)
        })
        .collect();
    let mut out = finding(
        ctx,
        "no_matrix_cores",
        &hits,
        format!(
            "{} GEMM-like kernel(s) run without matrix cores (no MFMA instructions)",
            hits.len()
        ),
        5.0,
    );
    for f in &mut out {
        if f.severity == Severity::Medium {
            f.severity = Severity::High;
        }
    }
    out
}
