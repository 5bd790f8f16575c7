//! torch.compile findings: graph breaks, deliberate compiled loops, recompiles, compile time in
//! the window, CUDA/HIP graph replay; and what torch.compile's logs add to them (the reason,
//! user-code line and fix of each break and recompile, Inductor's fallback kernels).

use super::{ms, pct, round2, step_count, Finding, FindingId, Severity};
use crate::analysis::compile::logs::Joined;
use crate::analysis::time::partition::LAUNCH_OVERHEAD;
use crate::analysis::Context;
use crate::model::compile_log::{CompileFixes, FixCause, GraphBreak, GuardKind};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub fn graph_breaks(ctx: &Context) -> Vec<Finding> {
    let gb = &ctx.analysis.compile.graph_breaks;
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
        FindingId::GraphBreaks,
        Severity::High,
        format!(
            "torch.compile graph breaks: {:.1} per step ({} compiled regions per step, frames {:?}); the code between regions runs eagerly{eager}",
            gb.per_step, ctx.analysis.compile.regions_per_step, gb.frames
        ),
        stake,
        json!({
            "per_step": gb.per_step,
            "regions_per_step": ctx.analysis.compile.regions_per_step,
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
        FindingId::CompiledLoop,
        Severity::Info,
        format!(
            "a compiled function (frame {:?}) runs {} times per step; it is compiled once and called in a loop, which is not a graph break",
            d.loop_frames, ctx.analysis.compile.regions_per_step
        ),
        0,
        json!({ "frames": d.loop_frames, "regions_per_step": ctx.analysis.compile.regions_per_step }),
    )]
}

pub fn recompiles(ctx: &Context) -> Vec<Finding> {
    let r = &ctx.analysis.compile.recompiles;
    if r.count == 0 {
        return vec![];
    }
    let severity = if r.count >= 3 {
        Severity::High
    } else {
        Severity::Medium
    };
    vec![Finding::new(
        FindingId::Recompiles,
        severity,
        format!(
            "{} recompiled graphs ran in the window ({}): shapes or guards changed between calls",
            r.count,
            r.compile_ids.join(", ")
        ),
        ctx.analysis.compile.compile_in_window_ns,
        json!({
            "count": r.count,
            "compile_ids": r.compile_ids,
            "compile_in_window_ns": ctx.analysis.compile.compile_in_window_ns,
            "hint": "run with TORCH_LOGS=\"recompiles\" for the failed guards; mark dynamic dims (torch._dynamo.mark_dynamic) or pad to fixed shapes",
        }),
    )]
}

pub fn compile_in_window(ctx: &Context) -> Vec<Finding> {
    let ns = ctx.analysis.compile.compile_in_window_ns;
    if ns <= 0 {
        return vec![];
    }
    let share = pct(ns, ctx.window_ns());
    let severity = if share >= 10.0 {
        Severity::High
    } else {
        Severity::Medium
    };
    vec![Finding::new(
        FindingId::CompileInWindow,
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
        FindingId::CudagraphsInUse,
        Severity::Info,
        format!(
            "CUDA/HIP graphs replay {} kernels from {} graph launches ({:.1}% of GPU activity time); their kernels count as busy, launched by the graph",
            d.graph_kernels,
            d.graph_launches,
            pct(d.graph_kernel_ns, ctx.analysis.summary.kernel_ns)
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

/// An action that fixes a cause, as the recommendations print it.
fn at(b: &GraphBreak) -> String {
    match &b.location {
        Some(l) => match &l.source {
            Some(src) => format!("{l} `{src}`"),
            None => l.to_string(),
        },
        None => "an unknown line".into(),
    }
}

/// The fixes for one break (seed 000's advice for each kind of break).
fn break_fixes(b: &GraphBreak, fixes: &CompileFixes) -> Vec<Value> {
    let r = b.reason.to_lowercase();
    let at = at(b);
    let cause = if r.contains("item()") || b.gb_id.as_deref() == Some("gb0124") {
        FixCause::ItemInGraph
    } else if r.contains("print") || r.contains("builtin") || r.contains("call_function") {
        FixCause::UnsupportedCall
    } else if r.contains("backward") {
        FixCause::Backward
    } else if let Some(h) = &b.hint {
        return fixes.of(FixCause::Hint, &[("hint", h), ("at", &at)]);
    } else {
        return Vec::new();
    };
    fixes.of(cause, &[("at", &at)])
}

/// The fixes for one failed guard.
fn guard_fixes(g: &GuardKind, sizes: &[String], fixes: &CompileFixes) -> Vec<Value> {
    match g {
        GuardKind::SizeMismatch { tensor, dim, .. } => fixes.of(
            FixCause::SizeMismatch,
            &[
                ("tensor", tensor),
                ("dim", &dim.to_string()),
                ("sizes", &sizes.join(", ")),
            ],
        ),
        GuardKind::TensorMismatch { tensor, what } => fixes.of(
            FixCause::TensorMismatch,
            &[("tensor", tensor), ("what", what)],
        ),
        GuardKind::ValueSpecialized { name, .. } => {
            fixes.of(FixCause::ValueSpecialized, &[("name", name)])
        }
        GuardKind::ObjectIdentity { name } => fixes.of(FixCause::ObjectIdentity, &[("name", name)]),
        GuardKind::Length { name } => fixes.of(FixCause::Length, &[("name", name)]),
        GuardKind::GlobalState => fixes.of(FixCause::GlobalState, &[]),
        GuardKind::Other => Vec::new(),
    }
}

fn break_json(b: &GraphBreak, count: usize) -> Value {
    let mut v = serde_json::to_value(b).unwrap_or(Value::Null);
    v["count"] = json!(count);
    v
}

/// One recompile cause: the guard, the values seen, how many recompiles it caused.
type Cause = (GuardKind, Vec<String>, usize);

/// Adds what the logs say to the graph-break and recompile findings (creating them from the
/// log when the trace alone did not show them).
pub fn annotate(findings: &mut Vec<Finding>, joined: &Joined<'_>, advice: &CompileFixes) {
    fallbacks(findings, joined);
    // Distinct breaks, most frequent first (a break is logged again on every recompile).
    let mut distinct: Vec<(&GraphBreak, usize)> = Vec::new();
    for (_, b) in &joined.breaks {
        match distinct.iter_mut().find(|(d, _)| *d == *b) {
            Some(e) => e.1 += 1,
            None => distinct.push((b, 1)),
        }
    }
    distinct.sort_by_key(|d| std::cmp::Reverse(d.1));
    if !distinct.is_empty() {
        let root = distinct[0].0;
        let mut text = format!(
            "the log names the root break: {}{} at {}",
            root.reason,
            root.gb_id
                .as_ref()
                .map(|g| format!(" ({g})"))
                .unwrap_or_default(),
            at(root)
        );
        if let Some(c) = &root.consequence {
            text.push_str(&format!(
                "; \"{}\"{} follows from it and goes away with it",
                c.reason,
                c.gb_id
                    .as_ref()
                    .map(|g| format!(" ({g})"))
                    .unwrap_or_default()
            ));
        }
        if distinct.len() > 1 {
            text.push_str(&format!(" ({} distinct breaks in all)", distinct.len()));
        }
        let mut fixes: Vec<Value> = Vec::new();
        for f in distinct.iter().flat_map(|(b, _)| break_fixes(b, advice)) {
            if !fixes.contains(&f) {
                fixes.push(f);
            }
        }
        let log = json!({
            "paths": joined.log_paths,
            "matched_by": joined.matched_by,
            "breaks": distinct.iter().map(|(b, n)| break_json(b, *n)).collect::<Vec<_>>(),
        });
        upsert(findings, FindingId::GraphBreaks, text, log, fixes, || {
            Finding::new(
                FindingId::GraphBreaks,
                Severity::High,
                String::new(),
                0,
                json!({}),
            )
        });
    }
    if !joined.recompiles.is_empty() {
        // Per guard kind and tensor/dim: how often, and the values seen.
        let mut causes: BTreeMap<String, Cause> = BTreeMap::new();
        for (_, c) in &joined.recompiles {
            // The first failed guard is the one against the latest compile: the cause.
            if let Some(g) = c.guards.first() {
                let key = match &g.kind {
                    GuardKind::SizeMismatch { tensor, dim, .. } => {
                        format!("size of {tensor} at dim {dim}")
                    }
                    GuardKind::TensorMismatch { tensor, what } => format!("{what} of {tensor}"),
                    GuardKind::ValueSpecialized { name, .. } => format!("value of {name}"),
                    GuardKind::ObjectIdentity { name } => format!("identity of {name}"),
                    GuardKind::Length { name } => format!("length of {name}"),
                    GuardKind::GlobalState => "global state".into(),
                    GuardKind::Other => g.text.clone(),
                };
                let e = causes.entry(key).or_insert((g.kind.clone(), Vec::new(), 0));
                e.2 += 1;
                if let GuardKind::SizeMismatch {
                    expected, actual, ..
                } = &g.kind
                {
                    for v in [expected, actual] {
                        if !e.1.contains(v) {
                            e.1.push(v.clone());
                        }
                    }
                }
            }
        }
        let mut ranked: Vec<(&String, &Cause)> = causes.iter().collect();
        ranked.sort_by(|a, b| b.1 .2.cmp(&a.1 .2).then(a.0.cmp(b.0)));
        let text = format!(
            "the log gives the failed guards: {}",
            ranked
                .iter()
                .map(|(k, (_, vals, n))| {
                    if vals.is_empty() {
                        format!("{k} ({n}x)")
                    } else {
                        format!("{k} ({n}x: {})", vals.join(" → "))
                    }
                })
                .collect::<Vec<_>>()
                .join("; ")
        );
        let fixes: Vec<Value> = ranked
            .iter()
            .flat_map(|(_, (k, vals, _))| guard_fixes(k, vals, advice))
            .collect();
        let log = json!({
            "paths": joined.log_paths,
            "matched_by": joined.matched_by,
            "recompiles": joined.recompiles.iter().map(|(r, c)| {
                let mut v = serde_json::to_value(c).unwrap_or(Value::Null);
                v["compile_id"] = json!(r.compile_id.map(|id| id.to_string()));
                v["line"] = json!(r.line);
                v
            }).collect::<Vec<_>>(),
        });
        let mut log = log;
        if joined.compile_s > 0.0 {
            log["compile_time_s"] = json!((joined.compile_s * 1000.0).round() / 1000.0);
        }
        let count = joined.recompiles.len();
        upsert(findings, FindingId::Recompiles, text, log, fixes, || {
            Finding::new(
                FindingId::Recompiles,
                Severity::Medium,
                format!("{count} recompilations in the log"),
                0,
                json!({"count": count}),
            )
        });
    }
}

/// Inductor's fallback kernels (ATen ops it could not generate code for), as an info finding.
fn fallbacks(findings: &mut Vec<Finding>, joined: &Joined<'_>) {
    let mut ops: BTreeMap<&str, usize> = BTreeMap::new();
    for h in joined.hints.iter().flat_map(|h| h.lines()) {
        if let Some(op) = h.trim().strip_prefix("Using FallbackKernel: ") {
            *ops.entry(op.trim()).or_default() += 1;
        }
    }
    if ops.is_empty() {
        return;
    }
    findings.push(Finding::new(
        FindingId::InductorFallbacks,
        Severity::Info,
        format!(
            "Inductor runs {} as ATen fallback kernels (no generated code, no fusion across them): {}",
            if ops.len() == 1 { "one op" } else { "these ops" },
            ops.iter().map(|(op, n)| format!("{op} ({n} compiles)")).collect::<Vec<_>>().join(", ")
        ),
        0,
        json!({
            "ops": ops.iter().map(|(op, n)| json!({"op": op, "compiles": n})).collect::<Vec<_>>(),
            "log": {"paths": joined.log_paths, "matched_by": joined.matched_by},
        }),
    ));
}

/// Adds the log's words to a finding (made by `new` when the trace did not show it).
fn upsert(
    findings: &mut Vec<Finding>,
    id: FindingId,
    text: String,
    log: Value,
    fixes: Vec<Value>,
    new: impl FnOnce() -> Finding,
) {
    let f = match findings.iter_mut().position(|f| f.id == id) {
        Some(i) => &mut findings[i],
        None => {
            findings.push(new());
            findings.last_mut().expect("pushed")
        }
    };
    f.summary = if f.summary.is_empty() {
        text[..1].to_uppercase() + &text[1..]
    } else {
        format!("{}; {text}", f.summary)
    };
    f.evidence["log"] = log;
    f.evidence["fixes"] = Value::Array(fixes);
}
