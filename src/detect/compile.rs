//! torch.compile findings: graph breaks, deliberate compiled loops, recompiles, compile time in
//! the window, CUDA/HIP graph replay.

use super::{ms, pct, round2, step_count, Finding, Severity};
use crate::analysis::partition::LAUNCH_OVERHEAD;
use crate::analysis::Context;
use serde_json::json;

pub fn graph_breaks(ctx: &Context) -> Vec<Finding> {
    let gb = &ctx.compile.graph_breaks;
    if !gb.detected {
        return vec![];
    }
    let d = &ctx.compile_detail;
    let items: usize = d.step_item_calls.iter().sum();
    let example: Vec<String> = d
        .step_regions
        .iter()
        .find(|s| !s.is_empty())
        .map(|s| s.iter().map(|(f, c)| format!("{f}/{c}")).collect())
        .unwrap_or_default();
    let stake = ctx.partition.0[LAUNCH_OVERHEAD].round() as i64;
    let ops: Vec<&str> = d
        .ops_between_regions
        .iter()
        .take(5)
        .map(|(n, _)| n.as_str())
        .collect();
    let eager = if ops.is_empty() {
        String::new()
    } else {
        format!("; eager ops between regions: {}", ops.join(", "))
    };
    vec![Finding::new(
        "graph_breaks",
        Severity::High,
        format!(
            "torch.compile graph breaks: {:.1} per step ({} compiled regions per step, frames {:?}); the code between regions runs eagerly{eager}",
            gb.per_step, ctx.compile.regions_per_step, gb.frames
        ),
        stake,
        json!({
            "per_step": gb.per_step,
            "regions_per_step": ctx.compile.regions_per_step,
            "frames": gb.frames,
            "signal": d.break_signal,
            "example_step_regions": example,
            "item_syncs": items,
            "ops_between_regions": d.ops_between_regions.iter().map(|(n, c)| json!({"op": n, "calls": c})).collect::<Vec<_>>(),
            "item_syncs_per_step": round2(items as f64 / step_count(ctx)),
            "hint": "run with TORCH_LOGS=\"graph_breaks\" to see each break's reason and source line",
        }),
    )]
}

pub fn compiled_loop(ctx: &Context) -> Vec<Finding> {
    let d = &ctx.compile_detail;
    if d.loop_frames.is_empty() {
        return vec![];
    }
    vec![Finding::new(
        "compiled_loop",
        Severity::Info,
        format!(
            "a compiled function (frame {:?}) runs {} times per step; it is compiled once and called in a loop, which is not a graph break",
            d.loop_frames, ctx.compile.regions_per_step
        ),
        0,
        json!({ "frames": d.loop_frames, "regions_per_step": ctx.compile.regions_per_step }),
    )]
}

pub fn recompiles(ctx: &Context) -> Vec<Finding> {
    let r = &ctx.compile.recompiles;
    if r.count == 0 {
        return vec![];
    }
    let severity = if r.count >= 3 {
        Severity::High
    } else {
        Severity::Medium
    };
    vec![Finding::new(
        "recompiles",
        severity,
        format!(
            "{} recompiled graphs ran in the window ({}): shapes or guards changed between calls",
            r.count,
            r.compile_ids.join(", ")
        ),
        ctx.compile.compile_in_window_ns,
        json!({
            "count": r.count,
            "compile_ids": r.compile_ids,
            "compile_in_window_ns": ctx.compile.compile_in_window_ns,
            "hint": "run with TORCH_LOGS=\"recompiles\" for the failed guards; mark dynamic dims (torch._dynamo.mark_dynamic) or pad to fixed shapes",
        }),
    )]
}

pub fn compile_in_window(ctx: &Context) -> Vec<Finding> {
    let ns = ctx.compile.compile_in_window_ns;
    if ns <= 0 {
        return vec![];
    }
    let share = pct(ns, ctx.window_ns);
    let severity = if share >= 10.0 {
        Severity::High
    } else {
        Severity::Medium
    };
    vec![Finding::new(
        "compile_in_window",
        severity,
        format!("torch.compile compiled for {} inside the profiled window ({share:.1}% of it): warm up before profiling", ms(ns)),
        ns,
        json!({
            "compile_ns": ns,
            "window_pct": share,
            "compile_events": ctx.compile_detail.compile_events_in_window,
        }),
    )]
}

pub fn cudagraphs_in_use(ctx: &Context) -> Vec<Finding> {
    let d = &ctx.compile_detail;
    if d.graph_launches == 0 {
        return vec![];
    }
    vec![Finding::new(
        "cudagraphs_in_use",
        Severity::Info,
        format!(
            "CUDA/HIP graphs replay {} kernels from {} graph launches ({:.1}% of GPU activity time); their kernels count as busy, launched by the graph",
            d.graph_kernels,
            d.graph_launches,
            pct(d.graph_kernel_ns, ctx.summary.kernel_ns)
        ),
        0,
        json!({
            "graph_launches": d.graph_launches,
            "replayed_kernels": d.graph_kernels,
            "replayed_kernel_ns": d.graph_kernel_ns,
            "kernels_per_launch": round2(d.graph_kernels as f64 / d.graph_launches as f64),
        }),
    )]
}
