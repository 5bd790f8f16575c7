//! Where the host keeps the GPU waiting: dispatch overhead, host work outside any op, and
//! synchronizations inside steps.

use super::{ms, pct, round2, step_count, Finding, FindingId, Severity};
use crate::analysis::links::is_sync_call;
use crate::analysis::partition::{HOST_IDLE, LAUNCH_OVERHEAD};
use crate::analysis::Context;
use crate::model::{ActivityKind, HostKind};
use serde_json::json;
use std::collections::BTreeMap;

/// Launch overhead at least this share of the window (and above host idle) is launch-bound.
const LAUNCH_BOUND_PCT: f64 = 20.0;
/// Host idle at least this share of the window (and above launch overhead) is host-bound.
const HOST_BOUND_PCT: f64 = 20.0;
/// "Small" kernels: the seed's launch-bound signature is many kernels under ~10 µs.
const SMALL_KERNEL_NS: i64 = 10_000;

pub fn launch_bound(ctx: &Context) -> Vec<Finding> {
    let launch = ctx.partition.0[LAUNCH_OVERHEAD].round() as i64;
    let idle = ctx.partition.0[HOST_IDLE].round() as i64;
    let share = pct(launch, ctx.window_ns());
    if share < LAUNCH_BOUND_PCT || launch < idle {
        return vec![];
    }
    let acts = &ctx.trace.activities;
    let mut durs: Vec<i64> = (0..acts.len())
        .filter(|&a| ctx.in_scope[a] && acts.kind[a] == ActivityKind::Kernel)
        .map(|a| acts.dur_ns[a])
        .collect();
    durs.sort_unstable();
    let small = durs.iter().filter(|&&d| d < SMALL_KERNEL_NS).count();
    let median = durs.get(durs.len() / 2).copied().unwrap_or(0);
    let small_pct = pct(small as i64, durs.len() as i64);
    // Dispatch dominates: mostly tiny kernels, or the GPU waits on dispatch longer than it works.
    if small_pct < 50.0 && launch < ctx.analysis.summary.gpu_busy_ns {
        return vec![];
    }
    let severity = if share >= 40.0 {
        Severity::High
    } else {
        Severity::Medium
    };
    vec![Finding::new(
        FindingId::LaunchBound,
        severity,
        format!(
            "launch-bound: the GPU waits on kernel dispatch for {share:.1}% of the window; {:.0}% of {} kernels run under 10 µs (median {:.1} µs)",
            pct(small as i64, durs.len() as i64),
            durs.len(),
            median as f64 / 1e3
        ),
        launch,
        json!({
            "launch_overhead_ns": launch,
            "launch_overhead_pct": share,
            "kernels": durs.len(),
            "kernels_under_10us_pct": pct(small as i64, durs.len() as i64),
            "median_kernel_ns": median,
            "launches_per_step": round2(durs.len() as f64 / step_count(ctx)),
        }),
    )]
}

pub fn host_bound(ctx: &Context) -> Vec<Finding> {
    let launch = ctx.partition.0[LAUNCH_OVERHEAD].round() as i64;
    // Time blocked in syncs or compiling has its own findings (sync_stalls, compile_in_window):
    // host-bound is the host being elsewhere.
    let idle = ctx.partition.host_outside().round() as i64;
    let blocked = ctx.partition.1.round() as i64;
    let share = pct(idle, ctx.window_ns());
    if share < HOST_BOUND_PCT || idle <= launch {
        return vec![];
    }
    let severity = if share >= 40.0 {
        Severity::High
    } else {
        Severity::Medium
    };
    vec![Finding::new(
        FindingId::HostBound,
        severity,
        format!(
            "host-bound: the GPU idles for {share:.1}% of the window while the host is outside any profiled op (data loading, Python work, sleeping)"
        ),
        idle,
        json!({
            "host_idle_ns": idle,
            "host_idle_pct": share,
            "blocked_in_sync_or_compile_ns": blocked,
            "gpu_busy_pct": pct(ctx.analysis.summary.gpu_busy_ns, ctx.window_ns()),
            "per_step_ns": round2(idle as f64 / step_count(ctx)),
        }),
    )]
}

pub fn sync_stalls(ctx: &Context) -> Vec<Finding> {
    let trace = ctx.trace;
    let host = &trace.host;
    // Host ranges that count: the kept steps; without steps, from the first GPU launch to the
    // last one (a sync after the last launch only waits for the end: no stall).
    let acts = &trace.activities;
    let mut ranges: Vec<Vec<(i64, i64)>> = vec![Vec::new(); trace.inputs.len()];
    for (input, r) in ranges.iter_mut().enumerate() {
        if ctx.steps.per_input[input].is_empty() {
            let span = (0..acts.len())
                .filter(|&a| acts.input[a] as usize == input)
                .fold((i64::MAX, i64::MIN), |s, a| {
                    let t = ctx.links.launch_ts(trace, a);
                    (s.0.min(t), s.1.max(t))
                });
            if span.0 < span.1 {
                r.push(span);
            }
        } else {
            r.extend(
                ctx.steps
                    .kept(input)
                    .map(|(_, s)| (s.cpu_start_ns, s.cpu_end_ns)),
            );
        }
    }
    // Compile ranges: autotuning synchronizes on purpose; that is compile time, not a stall.
    let mut compiling: Vec<Vec<(i64, i64)>> = vec![Vec::new(); trace.inputs.len()];
    for i in 0..host.len() {
        if crate::analysis::links::is_compile_event(trace.names.get(host.name[i])) {
            compiling[host.input[i] as usize]
                .push((host.ts_ns[i], host.ts_ns[i].saturating_add(host.dur_ns[i])));
        }
    }
    let inside = |input: u32, t: i64| {
        ranges[input as usize].iter().any(|&(a, b)| t >= a && t < b)
            && !compiling[input as usize]
                .iter()
                .any(|&(a, b)| t >= a && t < b)
    };
    let mut by_api: BTreeMap<&str, (u64, i64)> = BTreeMap::new();
    let mut blocked_ns = 0i64;
    for i in 0..host.len() {
        if !matches!(host.kind[i], HostKind::Runtime | HostKind::Driver) {
            continue;
        }
        let name = trace.names.get(host.name[i]);
        if is_sync_call(name) && inside(host.input[i], host.ts_ns[i]) {
            let e = by_api.entry(name).or_default();
            e.0 += 1;
            e.1 += host.dur_ns[i];
            blocked_ns += host.dur_ns[i];
        }
    }
    // Device-to-host copies launched inside steps: the host waits for them (`.item()`, `.cpu()`).
    let mut d2h = 0u64;
    for a in 0..acts.len() {
        if acts.kind[a] == ActivityKind::Memcpy
            && ctx.in_scope[a]
            && trace.names.get(acts.name[a]).contains("DtoH")
            && inside(acts.input[a], ctx.links.launch_ts(trace, a))
        {
            d2h += 1;
        }
    }
    let calls: u64 = by_api.values().map(|v| v.0).sum();
    if calls == 0 || ranges.iter().all(Vec::is_empty) {
        return vec![];
    }
    let items: usize = ctx.compile_detail.step_item_calls.iter().sum();
    let per_step = calls as f64 / step_count(ctx);
    let share = pct(blocked_ns, ctx.window_ns());
    let severity = if share >= 10.0 {
        Severity::High
    } else if per_step >= 1.0 || share >= 2.0 {
        Severity::Medium
    } else {
        Severity::Low
    };
    vec![Finding::new(
        FindingId::SyncStalls,
        severity,
        format!(
            "{calls} host synchronizations inside steps ({per_step:.1} per step, {} blocked, {share:.1}% of the window): each drains the GPU queue",
            ms(blocked_ns)
        ),
        blocked_ns,
        json!({
            "calls": calls,
            "per_step": round2(per_step),
            "blocked_ns": blocked_ns,
            "by_api": by_api.iter().map(|(k, v)| json!({"api": k, "calls": v.0, "ns": v.1})).collect::<Vec<_>>(),
            "device_to_host_copies": d2h,
            "item_calls": items,
            "hint": "remove .item()/.cpu()/print of GPU tensors and explicit synchronize() from the step; keep values on the GPU",
        }),
    )]
}
