//! torch.compile findings: graph breaks, deliberate compiled loops, recompiles, compile time in
//! the window, CUDA/HIP graph replay; and what torch.compile's logs add to them (the reason,
//! user-code line and fix of each break and recompile, Inductor's fallback kernels).

use super::evidence::{self as ev, BreakSeen, CompileLog, RecompileSeen};
use super::{ms, pct, round2, step_count, Detail, Finding, FindingId, Fix, Severity};
use crate::analysis::compile::logs::Joined;
use crate::analysis::time::partition::LAUNCH_OVERHEAD;
use crate::analysis::Context;
use crate::model::compile_log::{CompileFixes, FixCause, GraphBreak, GuardKind};
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
        Severity::High,
        format!(
            "torch.compile graph breaks: {:.1} per step ({} compiled regions per step, frames {:?}); the code between regions runs eagerly{eager}",
            gb.per_step, ctx.analysis.compile.regions_per_step, gb.frames
        ),
        stake,
        Detail::GraphBreaks(ev::GraphBreaks::Trace(ev::GraphBreaksSeen {
            per_step: gb.per_step,
            regions_per_step: ctx.analysis.compile.regions_per_step,
            frames: gb.frames.clone(),
            signal: d.break_signal.map(str::to_string),
            example_step_regions: example,
            item_syncs: items,
            ops_between_regions: d
                .ops_between_regions
                .iter()
                .map(|(op, calls)| ev::OpCalls {
                    op: op.clone(),
                    calls: *calls,
                })
                .collect(),
            item_syncs_per_step: round2(items as f64 / step_count(ctx)),
            hint: "run with TORCH_LOGS=\"graph_breaks\" to see each break's reason and source line".into(),
        })),
    )]
}

pub fn compiled_loop(ctx: &Context) -> Vec<Finding> {
    let d = &ctx.compile_detail;
    if d.loop_frames.is_empty() {
        return vec![];
    }
    vec![Finding::new(
        Severity::Info,
        format!(
            "a compiled function (frame {:?}) runs {} times per step; it is compiled once and called in a loop, which is not a graph break",
            d.loop_frames, ctx.analysis.compile.regions_per_step
        ),
        0,
        Detail::CompiledLoop(ev::CompiledLoop {
            frames: d.loop_frames.clone(),
            regions_per_step: ctx.analysis.compile.regions_per_step,
        }),
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
        severity,
        format!(
            "{} recompiled graphs ran in the window ({}): shapes or guards changed between calls",
            r.count,
            r.compile_ids.join(", ")
        ),
        ctx.analysis.compile.compile_in_window_ns,
        Detail::Recompiles(ev::Recompiles::Trace(ev::RecompilesSeen {
            count: r.count,
            compile_ids: r.compile_ids.clone(),
            compile_in_window_ns: ctx.analysis.compile.compile_in_window_ns,
            hint: "run with TORCH_LOGS=\"recompiles\" for the failed guards; mark dynamic dims (torch._dynamo.mark_dynamic) or pad to fixed shapes".into(),
        })),
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
        severity,
        format!("torch.compile compiled for {} inside the profiled window ({share:.1}% of it): warm up before profiling", ms(ns)),
        ns,
        Detail::CompileInWindow(ev::CompileInWindow {
            compile_ns: ns,
            window_pct: share,
            compile_events: ctx.compile_detail.compile_events_in_window,
        }),
    )]
}

pub fn cudagraphs_in_use(ctx: &Context) -> Vec<Finding> {
    let d = &ctx.compile_detail;
    if d.graph_launches == 0 {
        return vec![];
    }
    vec![Finding::new(
        Severity::Info,
        format!(
            "CUDA/HIP graphs replay {} kernels from {} graph launches ({:.1}% of GPU activity time); their kernels count as busy, launched by the graph",
            d.graph_kernels,
            d.graph_launches,
            pct(d.graph_kernel_ns, ctx.analysis.summary.kernel_ns)
        ),
        0,
        Detail::CudagraphsInUse(ev::CudagraphsInUse {
            graph_launches: d.graph_launches,
            replayed_kernels: d.graph_kernels,
            replayed_kernel_ns: d.graph_kernel_ns,
            kernels_per_launch: round2(d.graph_kernels as f64 / d.graph_launches as f64),
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
fn break_fixes(b: &GraphBreak, fixes: &CompileFixes) -> Vec<Fix> {
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
fn guard_fixes(g: &GuardKind, sizes: &[String], fixes: &CompileFixes) -> Vec<Fix> {
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
        let mut fixes: Vec<Fix> = Vec::new();
        for f in distinct.iter().flat_map(|(b, _)| break_fixes(b, advice)) {
            if !fixes.contains(&f) {
                fixes.push(f);
            }
        }
        let log = CompileLog {
            breaks: Some(
                distinct
                    .iter()
                    .map(|(b, n)| BreakSeen {
                        graph_break: (*b).clone(),
                        count: *n,
                    })
                    .collect(),
            ),
            ..log_of(joined)
        };
        upsert(findings, FindingId::GraphBreaks, text, log, fixes, || {
            Finding::new(
                Severity::High,
                String::new(),
                0,
                Detail::GraphBreaks(ev::GraphBreaks::Log(ev::FromLogOnly {})),
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
        let fixes: Vec<Fix> = ranked
            .iter()
            .flat_map(|(_, (k, vals, _))| guard_fixes(k, vals, advice))
            .collect();
        let log = CompileLog {
            recompiles: Some(
                joined
                    .recompiles
                    .iter()
                    .map(|(r, c)| RecompileSeen {
                        recompile: (*c).clone(),
                        compile_id: r.compile_id.map(|id| id.to_string()),
                        line: r.line,
                    })
                    .collect(),
            ),
            compile_time_s: (joined.compile_s > 0.0)
                .then(|| (joined.compile_s * 1000.0).round() / 1000.0),
            ..log_of(joined)
        };
        let count = joined.recompiles.len();
        upsert(findings, FindingId::Recompiles, text, log, fixes, || {
            Finding::new(
                Severity::Medium,
                format!("{count} recompilations in the log"),
                0,
                Detail::Recompiles(ev::Recompiles::Log(ev::RecompileCount { count })),
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
    let mut finding = Finding::new(
        Severity::Info,
        format!(
            "Inductor runs {} as ATen fallback kernels (no generated code, no fusion across them): {}",
            if ops.len() == 1 { "one op" } else { "these ops" },
            ops.iter().map(|(op, n)| format!("{op} ({n} compiles)")).collect::<Vec<_>>().join(", ")
        ),
        0,
        Detail::InductorFallbacks(ev::InductorFallbacks {
            ops: ops
                .iter()
                .map(|(op, n)| ev::OpCompiles {
                    op: op.to_string(),
                    compiles: *n,
                })
                .collect(),
        }),
    );
    finding.evidence.log = Some(log_of(joined));
    findings.push(finding);
}

/// The logs' paths and how their records were matched to the trace.
fn log_of(joined: &Joined<'_>) -> CompileLog {
    CompileLog {
        paths: joined.log_paths.clone(),
        matched_by: joined.matched_by.clone(),
        breaks: None,
        recompiles: None,
        compile_time_s: None,
    }
}

/// Adds the log's words to a finding (made by `new` when the trace did not show it).
fn upsert(
    findings: &mut Vec<Finding>,
    id: FindingId,
    text: String,
    log: CompileLog,
    fixes: Vec<Fix>,
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
    f.evidence.log = Some(log);
    f.evidence.fixes = Some(fixes);
}
