//! Findings from hardware counters (rocprof-compute workloads): occupancy limits, memory-bound
//! or inefficient GEMMs, and matrix work done without matrix cores (seeds/003).

use super::evidence as ev;
use super::{pct, round2, Detail, Finding, Fix, Severity};
use crate::analysis::ops::attribution::{compact_dims, OpRow};
use crate::analysis::ops::efficiency::{dtype_of, find_device, gemm_mkn, Dtype, Mkn};
use crate::analysis::signals::counters::{share_pct, total_ns, Bound, KernelCounters};
use crate::analysis::Context;
use crate::classify::Bucket;
use crate::model::compile_log::ActionKind;

/// Kernels below this share of the counter passes' time are not worth a finding.
const MIN_SHARE_PCT: f64 = 1.0;

fn significant<'a>(ctx: &'a Context<'_>) -> impl Iterator<Item = &'a KernelCounters> + 'a {
    let total = total_ns(&ctx.analysis.kernel_counters);
    ctx.analysis
        .kernel_counters
        .iter()
        .filter(move |r| share_pct(r, total) >= MIN_SHARE_PCT)
}

fn is_matrix_work(b: Bucket) -> bool {
    matches!(b, Bucket::Gemm | Bucket::Attention | Bucket::Conv)
}

fn evidence_row(r: &KernelCounters, total: i64) -> ev::CounterKernel {
    let o = r.occupancy.as_ref();
    ev::CounterKernel {
        kernel: r.name.clone(),
        bucket: r.bucket,
        total_ns: r.total_ns,
        share_pct: round2(share_pct(r, total)),
        pipe: r.pipe.clone(),
        tflops: r.tflops.map(round2),
        pct_of_peak: r.pct_of_peak.map(round2),
        hbm_pct_of_peak: r.hbm_pct_of_peak.map(round2),
        arithmetic_intensity: r.arithmetic_intensity.map(round2),
        roofline_pct: r.roofline_pct.map(round2),
        bound: r.bound,
        waves_per_simd: o.map(|o| round2(o.waves_per_simd)),
        occupancy_limiter: o.map(|o| o.limiter.clone()),
        vgprs: o.map(|o| o.vgprs),
        vgprs_for_next_wave: o.and_then(|o| o.vgprs_for_next_wave),
        lds_per_workgroup: r.resources.lds_per_workgroup,
    }
}

fn finding(
    ctx: &Context,
    detail: fn(ev::CounterKernels) -> Detail,
    hits: &[&KernelCounters],
    summary: String,
    high_share: f64,
) -> Vec<Finding> {
    if hits.is_empty() {
        return Vec::new();
    }
    let rows = &ctx.analysis.kernel_counters;
    let total = total_ns(rows);
    let share: f64 = hits.iter().map(|r| share_pct(r, total)).sum();
    let severity = if share >= high_share {
        Severity::Medium
    } else {
        Severity::Low
    };
    let stake: i64 = hits.iter().map(|r| r.total_ns).sum();
    vec![Finding::new(
        severity,
        format!("{summary} ({:.1}% of profiled kernel time)", share),
        stake,
        detail(ev::CounterKernels {
            kernels: hits.iter().map(|r| evidence_row(r, total)).collect(),
            share_pct: round2(share),
            // The largest grid among them, in workgroups (tile advice needs enough of them).
            max_workgroups: hits
                .iter()
                .filter_map(|r| {
                    r.resources
                        .grid_size
                        .checked_div(u64::from(r.resources.workgroup_size))
                })
                .max(),
        }),
    )]
}

/// Kernels whose registers or LDS let each SIMD hold at most a quarter of its waves, where the
/// grid has the work to fill more (seeds/003: `waves_per_eu`, LDS use).
pub fn low_occupancy(ctx: &Context) -> Vec<Finding> {
    let hits: Vec<&KernelCounters> = significant(ctx)
        .filter(|r| {
            r.occupancy.as_ref().is_some_and(|o| {
                matches!(o.limiter.as_str(), "vgpr" | "lds")
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
        Detail::LowOccupancy,
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
        Detail::MemoryBoundGemm,
        &hits,
        format!(
            "{} GEMM-like kernel(s) are memory bound: arithmetic intensity below the roofline's ridge point",
            hits.len()
        ),
        10.0,
    )
}

/// GEMM-like kernels reaching neither roof (below 30% of the attainable FLOP/s at their
/// intensity); without counters, GEMM ops under 30% of the device's peak (FLOPs from shapes).
pub fn low_gemm_efficiency(ctx: &Context) -> Vec<Finding> {
    if ctx.analysis.kernel_counters.is_empty() {
        return slow_gemm_ops(ctx);
    }
    let hits: Vec<&KernelCounters> = significant(ctx)
        .filter(|r| is_matrix_work(r.bucket) && r.bound == Some(Bound::Latency))
        .collect();
    finding(
        ctx,
        |kernels| Detail::LowGemmEfficiency(ev::LowGemmEfficiency::Kernels(kernels)),
        &hits,
        format!(
            "{} GEMM-like kernel(s) reach under {:.0}% of the roofline",
            hits.len(),
            crate::analysis::signals::counters::ROOF_NEAR_PCT
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
        Detail::NoMatrixCores,
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

/// Below this share of the device's dense peak a GEMM op is worth tuning.
const SLOW_GEMM_PCT: f64 = 30.0;

/// What one call at an op's most frequent shapes says beyond its dims: its data type and the
/// leading strides (elements) of its two matrix operands, when the trace recorded them.
#[derive(Clone, Copy, Default)]
struct CallFacts {
    dtype: Option<Dtype>,
    leading: Option<(i64, i64)>,
}

/// The leading strides of a GEMM call's two matrix operands from its `Input Strides`: the
/// larger of each operand's last two strides (rows for row-major, columns for a transpose).
fn leading_strides(op: &str, strides: &str) -> Option<(i64, i64)> {
    let s: Vec<Vec<i64>> = serde_json::from_str(strides).ok()?;
    let (a, b) = match op {
        "aten::addmm" | "aten::baddbmm" | "aten::_addmm_activation" => (s.get(1)?, s.get(2)?),
        _ => (s.first()?, s.get(1)?),
    };
    let ld = |v: &Vec<i64>| (v.len() >= 2).then(|| v[v.len() - 1].max(v[v.len() - 2]));
    Some((ld(a)?, ld(b)?))
}

/// Operands whose rows start a multiple of `hot` bytes apart, said as reasons: from
/// `Input Strides` when the trace has them, else estimated from K (the leading dimension of
/// both operands of a contiguous TN GEMM, seeds/003's case).
fn hotspot_rows(facts: CallFacts, k: i64, hot: i64) -> Vec<String> {
    let Some(elem) = facts.dtype.map(Dtype::bytes) else {
        return Vec::new();
    };
    if hot <= 0 {
        return Vec::new();
    }
    match facts.leading {
        Some((a, b)) => [("A", a), ("B", b)]
            .into_iter()
            .filter(|&(_, ld)| ld > 1 && ld.saturating_mul(elem) % hot == 0)
            .map(|(which, ld)| {
                format!(
                    "{which}'s rows are {} bytes apart (leading stride {ld}), a multiple of {hot} bytes: they hotspot one memory channel on this GPU (seeds/003); pad the leading dimension (to {} for instance)",
                    ld.saturating_mul(elem),
                    ld.saturating_add(128)
                )
            })
            .collect(),
        None if k.saturating_mul(elem) % hot == 0 => vec![format!(
            "K = {k}: rows of {} bytes, a multiple of {hot} bytes, hotspot one memory channel on this GPU (seeds/003; estimated from the shape, the trace has no Input Strides); pad the leading dimension to K + 128",
            k.saturating_mul(elem)
        )],
        None => Vec::new(),
    }
}

/// Why a GEMM shape runs far from peak. `hotspot`: the device's stride hotspot in bytes, on
/// devices that have one (MI300: 512, seeds/003).
fn shape_reasons(op: &str, shapes: &str, facts: CallFacts, hotspot: Option<i64>) -> Vec<String> {
    let dtype = facts.dtype;
    let Some((batch, m, k, n)) = gemm_mkn(op, shapes) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let tiles = batch
        .saturating_mul(m.saturating_add(127) / 128)
        .saturating_mul(n.saturating_add(127) / 128);
    if tiles < 256 {
        out.push(format!(
            "{tiles} output tiles of 128x128 (M = {m}, N = {n}{}): too few to keep every compute unit busy; batch the calls, or tune smaller tiles for this shape",
            if batch > 1 { format!(", batch {batch}") } else { String::new() }
        ));
    }
    if m < 128 {
        out.push(format!(
            "M = {m} rows: most of each output tile is empty; batch more rows per call"
        ));
    }
    for (what, v) in [("K", k), ("N", n)] {
        if v % 64 != 0 {
            out.push(format!(
                "{what} = {v} is not a multiple of 64: the last tiles run partly empty; pad it"
            ));
        }
    }
    if let Some(hot) = hotspot {
        out.extend(hotspot_rows(facts, k, hot));
    }
    if matches!(dtype, Some(Dtype::Fp32 | Dtype::Tf32)) {
        out.push(
            "fp32 operands: bf16 or fp16 doubles the matrix peak and halves the bytes (torch.autocast(dtype=torch.bfloat16), or model.to(torch.bfloat16) where accuracy allows)"
                .to_string(),
        );
    }
    out
}

/// The stride hotspot of the first device of the trace that has one (`devices.toml`).
fn device_hotspot(ctx: &Context) -> Option<i64> {
    ctx.trace
        .inputs
        .iter()
        .flat_map(|i| &i.devices)
        .find_map(|d| find_device(&ctx.rules.devices, &d.name)?.stride_hotspot_bytes)
        .filter(|&hot| hot > 0)
}

/// The facts of a call at an op's most frequent shapes (`Input type`, `Input Strides`).
fn call_facts(ctx: &Context, op: &OpRow) -> CallFacts {
    let (names, host) = (&ctx.trace.names, &ctx.trace.host);
    let Some(shapes) = op.shapes.as_deref() else {
        return CallFacts::default();
    };
    // Compare interned ids, not strings: the scan runs over every host event.
    let Some(name) = names.lookup(&op.name) else {
        return CallFacts::default();
    };
    let Some(call) = (0..host.len())
        .find(|&h| host.name[h] == name && compact_dims(names.get(host.input_dims(h))) == shapes)
    else {
        return CallFacts::default();
    };
    CallFacts {
        dtype: dtype_of(names.get(host.input_types(call))),
        leading: leading_strides(&op.name, names.get(host.input_strides(call))),
    }
}

/// The largest grid (in workgroups) among the in-window kernels the `ops` launch (matched by
/// name and shapes); None when the trace gives no grids.
fn op_workgroups(ctx: &Context, ops: &[&OpRow]) -> Option<u32> {
    let (names, host, acts) = (&ctx.trace.names, &ctx.trace.host, &ctx.trace.activities);
    let wanted: Vec<(crate::model::NameId, Option<&str>)> = ops
        .iter()
        .filter_map(|o| Some((names.lookup(&o.name)?, o.shapes.as_deref())))
        .collect();
    let mut shapes_of: std::collections::HashMap<crate::model::NameId, String> =
        std::collections::HashMap::new();
    (0..acts.len())
        .filter(|&a| ctx.in_scope[a] && acts.workgroups[a] > 0)
        .filter(|&a| {
            let Some(op) = ctx.op_of[a] else {
                return false;
            };
            let op = op as usize;
            wanted.iter().any(|&(name, shapes)| {
                host.name[op] == name
                    && shapes.is_none_or(|s| {
                        let dims = host.input_dims(op);
                        shapes_of
                            .entry(dims)
                            .or_insert_with(|| compact_dims(names.get(dims)))
                            .as_str()
                            == s
                    })
            })
        })
        .map(|a| acts.workgroups[a])
        .max()
}

/// GEMM ops (FLOPs from `Input Dims`, time from their kernels) under 30% of the device peak
/// that hold at least 5% of the GPU time.
fn slow_gemm_ops(ctx: &Context) -> Vec<Finding> {
    let total = ctx.analysis.summary.kernel_ns;
    let slow: Vec<&OpRow> = ctx
        .analysis
        .ops
        .iter()
        // GEMM ops only: attention and convolution rates are in the op view, but the shape
        // reasons and the GEMM tuning this finding leads to do not apply to them.
        .filter(|o| {
            !crate::analysis::ops::efficiency::is_composite(&o.name)
                && o.pct_of_peak.is_some_and(|p| p < SLOW_GEMM_PCT)
                && pct(o.self_ns, total) >= 5.0
        })
        .collect();
    if slow.is_empty() {
        return Vec::new();
    }
    let share: f64 = slow.iter().map(|o| pct(o.self_ns, total)).sum();
    // The time above what the op would take at 30% of peak.
    let stake: i64 = slow
        .iter()
        .map(|o| {
            let p = o.pct_of_peak.unwrap_or(SLOW_GEMM_PCT);
            (o.self_ns as f64 * (1.0 - p / SLOW_GEMM_PCT)).round() as i64
        })
        .sum();
    let hot = device_hotspot(ctx);
    let rows: Vec<(&OpRow, CallFacts, Option<Mkn>)> = slow
        .iter()
        .map(|o| {
            let mkn = o.shapes.as_deref().and_then(|s| gemm_mkn(&o.name, s));
            (*o, call_facts(ctx, o), mkn)
        })
        .collect();
    let hits_hotspot = |facts: CallFacts, mkn: Option<Mkn>| {
        let (hot, (_, _, k, _)) = (hot?, mkn?);
        (!hotspot_rows(facts, k, hot).is_empty()).then_some(hot)
    };
    // The shapes to tune, as tuners take them: M, N, K and the data type.
    let shapes: Vec<String> = rows
        .iter()
        .filter_map(|(o, facts, mkn)| {
            let (batch, m, k, n) = (*mkn)?;
            Some(format!(
                "M={m} N={n} K={k}{}{} ({}, {:.1}% of peak)",
                if batch > 1 {
                    format!(" batch={batch}")
                } else {
                    String::new()
                },
                facts
                    .dtype
                    .map_or(String::new(), |d| format!(" {}", d.as_str())),
                o.name,
                o.pct_of_peak.unwrap_or(0.0)
            ))
        })
        .collect();
    let mut fixes = Vec::new();
    if !shapes.is_empty() {
        fixes.push(Fix {
            kind: ActionKind::Env,
            only_for: Some(super::GEMM_SHAPES.to_string()),
            text: format!(
                "PYTORCH_TUNABLEOP_ENABLED=1 PYTORCH_TUNABLEOP_TUNING=1 PYTORCH_TUNABLEOP_FILENAME=tunableop.csv python3 your_script.py   # tunes each GEMM shape on first sight, these among them: {}; then run with PYTORCH_TUNABLEOP_TUNING=0",
                shapes.join("; ")
            ),
        });
        if ctx
            .trace
            .inputs
            .iter()
            .any(|i| i.vendor == crate::model::Vendor::Amd)
        {
            fixes.push(Fix {
                kind: ActionKind::Command,
                only_for: Some(super::GEMM_SHAPES.to_string()),
                text: format!(
                    "AITER_TUNE_GEMM=1 python3 your_script.py   # records the untuned shapes ({}); tune them with aiter's GemmTuner and add the CSV to AITER_CONFIG_GEMM_BF16",
                    shapes.join("; ")
                ),
            });
        }
    }
    let worst = slow[0];
    let max_workgroups = op_workgroups(ctx, &slow);
    vec![Finding::new(
        if share >= 20.0 { Severity::Medium } else { Severity::Low },
        format!(
            "{} GEMM op(s) run under {SLOW_GEMM_PCT:.0}% of the device's dense peak ({:.1}% of GPU time); {} {} reaches {:.1}% ({:.1} TFLOP/s)",
            slow.len(),
            share,
            worst.name,
            worst.shapes.as_deref().unwrap_or(""),
            worst.pct_of_peak.unwrap_or(0.0),
            worst.tflops.unwrap_or(0.0)
        ),
        stake,
        Detail::LowGemmEfficiency(ev::LowGemmEfficiency::Ops(ev::SlowGemmOps {
            kind: ev::GemmOpsKind::Ops,
            ops: rows
                .iter()
                .map(|(o, facts, _)| ev::SlowGemmOp {
                    op: o.name.clone(),
                    shapes: o.shapes.clone(),
                    dtype: facts.dtype.map(|d| d.as_str().to_string()),
                    self_ns: o.self_ns,
                    tflops: o.tflops,
                    pct_of_peak: o.pct_of_peak,
                    why: o
                        .shapes
                        .as_deref()
                        .map(|s| shape_reasons(&o.name, s, *facts, hot))
                        .unwrap_or_default(),
                })
                .collect(),
            // The largest grid their kernels launch, in workgroups (null when the trace has no
            // grids): tile advice needs enough of them to fill the device (seeds/003).
            max_workgroups,
            // Set when a shape's rows hit the device's stride hotspot (arch.gemm-stride-padding).
            stride_hotspot_bytes: rows
                .iter()
                .find_map(|(_, facts, mkn)| hits_hotspot(*facts, *mkn)),
        })),
    )
    .with_fixes(fixes)]
}
