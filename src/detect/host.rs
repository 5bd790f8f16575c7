//! Where the host keeps the GPU waiting: dispatch overhead, host work outside any op, and
//! synchronizations inside steps.

use super::evidence as ev;
use super::{ms, pct, round2, step_count, Detail, Finding, Severity};
use crate::analysis::time::links::{is_allocator_call, is_free_call, is_sync_call};
use crate::analysis::time::partition::{DATA_LOADING, HOST_IDLE, LAUNCH_OVERHEAD};
use crate::analysis::Context;
use crate::model::{ActivityKind, HostKind};
use std::collections::BTreeMap;

/// Launch overhead at least this share of the window (and above host idle) is launch-bound.
const LAUNCH_BOUND_PCT: f64 = 20.0;
/// Host idle at least this share of the window (and above launch overhead) is host-bound.
const HOST_BOUND_PCT: f64 = 20.0;
/// Device malloc/free calls taking at least this share of the window are allocator churn.
const ALLOCATOR_CHURN_PCT: f64 = 10.0;
/// "Small" kernels: the seed's launch-bound signature is many kernels under ~10 µs.
const SMALL_KERNEL_NS: i64 = 10_000;

pub fn launch_bound(ctx: &Context) -> Vec<Finding> {
    let launch = ctx.partition.0[LAUNCH_OVERHEAD].round() as i64;
    let idle = (ctx.partition.0[HOST_IDLE] + ctx.partition.0[DATA_LOADING]).round() as i64;
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
        severity,
        format!(
            "launch-bound: the GPU waits on kernel dispatch for {share:.1}% of the window; {:.0}% of {} kernels run under 10 µs (median {:.1} µs)",
            pct(small as i64, durs.len() as i64),
            durs.len(),
            median as f64 / 1e3
        ),
        launch,
        Detail::LaunchBound(ev::LaunchBound {
            launch_overhead_ns: launch,
            launch_overhead_pct: share,
            kernels: durs.len(),
            kernels_under_10us_pct: pct(small as i64, durs.len() as i64),
            median_kernel_ns: median,
            launches_per_step: round2(durs.len() as f64 / step_count(ctx)),
        }),
    )]
}

pub fn host_bound(ctx: &Context) -> Vec<Finding> {
    let launch = ctx.partition.0[LAUNCH_OVERHEAD].round() as i64;
    // Time blocked in syncs or compiling has its own findings (sync_stalls, compile_in_window):
    // host-bound is the host being elsewhere: loading data, or outside any profiled op.
    let loading = ctx.partition.0[DATA_LOADING].round() as i64;
    let idle = ctx.partition.host_outside().round() as i64 + loading;
    let blocked = ctx.partition.1.round() as i64;
    let share = pct(idle, ctx.window_ns());
    // The DataLoader on its own starving the GPU is host-bound even where dispatch costs more:
    // loading the next batch is on every step's path whatever the launches cost.
    let loading_bound = pct(loading, ctx.window_ns()) >= HOST_BOUND_PCT;
    if share < HOST_BOUND_PCT || (idle <= launch && !loading_bound) {
        return vec![];
    }
    let severity = if share >= 40.0 {
        Severity::High
    } else {
        Severity::Medium
    };
    let loading_pct = pct(loading, ctx.window_ns());
    let why = if loading * 2 >= idle {
        format!("the host is in the DataLoader's __next__ for {loading_pct:.1}% of the window (it loads each batch while the GPU waits)")
    } else if loading > 0 {
        format!("the host is outside any profiled op (Python work, sleeping), or in the DataLoader ({loading_pct:.1}% of the window)")
    } else {
        "the host is outside any profiled op (data loading, Python work, sleeping)".to_string()
    };
    vec![Finding::new(
        severity,
        format!("host-bound: the GPU idles for {share:.1}% of the window while {why}"),
        idle,
        Detail::HostBound(ev::HostBound {
            host_idle_ns: idle,
            host_idle_pct: share,
            data_loading_ns: loading,
            data_loading_pct: loading_pct,
            blocked_in_sync_or_compile_ns: blocked,
            gpu_busy_pct: pct(ctx.analysis.summary.gpu_busy_ns, ctx.window_ns()),
            per_step_ns: round2(idle as f64 / step_count(ctx)),
        }),
    )]
}

/// Where host calls count as stalls, per input: the kept steps' CPU ranges (without steps, the
/// first to the last GPU launch; a sync after the last launch only waits for the end), minus
/// torch.compile's ranges (autotuning synchronizes on purpose: compile time, not a stall).
pub(super) struct StallWindows {
    ranges: Vec<Vec<(i64, i64)>>,
    compiling: Vec<Vec<(i64, i64)>>,
}

impl StallWindows {
    pub(super) fn new(ctx: &Context) -> Self {
        let trace = ctx.trace;
        let host = &trace.host;
        let acts = &trace.activities;
        // Each input's launch span, in one pass (the inputs without steps use it).
        let mut spans = vec![(i64::MAX, i64::MIN); trace.inputs.len()];
        for a in 0..acts.len() {
            let t = ctx.links.launch_ts(trace, a);
            let s = &mut spans[acts.input[a] as usize];
            *s = (s.0.min(t), s.1.max(t));
        }
        let mut ranges: Vec<Vec<(i64, i64)>> = vec![Vec::new(); trace.inputs.len()];
        for (input, r) in ranges.iter_mut().enumerate() {
            if ctx.steps.per_input[input].is_empty() {
                let span = spans[input];
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
        let mut compiling: Vec<Vec<(i64, i64)>> = vec![Vec::new(); trace.inputs.len()];
        for i in 0..host.len() {
            if crate::analysis::time::links::is_compile_event(trace.names.get(host.name[i])) {
                compiling[host.input[i] as usize].push((
                    host.ts_ns[i],
                    host.ts_ns[i].saturating_add(host.dur_ns.get(i)),
                ));
            }
        }
        StallWindows { ranges, compiling }
    }
    pub(super) fn inside(&self, input: u32, t: i64) -> bool {
        self.ranges[input as usize]
            .iter()
            .any(|&(a, b)| t >= a && t < b)
            && !self.compiling[input as usize]
                .iter()
                .any(|&(a, b)| t >= a && t < b)
    }
    fn is_empty(&self) -> bool {
        self.ranges.iter().all(Vec::is_empty)
    }
    /// Whether `[s, e)` overlaps torch.compile's own work.
    fn overlaps_compile(&self, input: u32, s: i64, e: i64) -> bool {
        self.compiling[input as usize]
            .iter()
            .any(|&(a, b)| a < e && s < b)
    }
    /// Inside the steps (or the launch span), compile ranges included.
    fn in_range(&self, input: u32, t: i64) -> bool {
        self.ranges[input as usize]
            .iter()
            .any(|&(a, b)| t >= a && t < b)
    }
}

/// The GPU idle a blocking call leaves behind: from its return to the start of the first GPU
/// activity launched after it (0 when none follows), less the time other work ran meanwhile
/// and the time the host spent loading the next batch (the GPU would idle then without the
/// sync too: that idle is data loading's). The host's wait inside the call is not the cost:
/// the GPU was busy with what it waited for.
struct IdleAfter {
    /// Per input: (launch time, start) of each activity, by launch time, with the earliest
    /// start of every later launch.
    launches: Vec<Vec<(i64, i64)>>,
    /// Per input: the union of GPU activity, sorted.
    busy: Vec<Busy>,
    /// Per input: the DataLoader's `__next__` spans, merged.
    loading: Vec<Vec<(i64, i64)>>,
}

impl IdleAfter {
    fn new(ctx: &Context) -> Self {
        let trace = ctx.trace;
        let acts = &trace.activities;
        let n = trace.inputs.len();
        let mut launches: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
        let mut spans: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
        for a in 0..acts.len() {
            let input = acts.input[a] as usize;
            spans[input].push((acts.ts_ns[a], acts.end_ns(a)));
            if ctx.links.launch[a].is_some() {
                launches[input].push((ctx.links.launch_ts(trace, a), acts.ts_ns[a]));
            }
        }
        // An iteration's queued time is the stream waiting on work the trace does not show,
        // not idle a sync left behind: count it as busy here.
        for (input, steps) in ctx.steps.per_input.iter().enumerate() {
            spans[input].extend(steps.iter().flat_map(|s| s.blocked.iter().copied()));
        }
        for l in &mut launches {
            l.sort_unstable();
            // Suffix minimum of the starts: the first to start among the launches from here on.
            let mut earliest = i64::MAX;
            for e in l.iter_mut().rev() {
                earliest = earliest.min(e.1);
                e.1 = earliest;
            }
        }
        let busy = spans.into_iter().map(Busy::of).collect();
        let host = &trace.host;
        let loads = trace
            .names
            .per_name(crate::analysis::time::names::is_data_loading);
        let mut loading: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
        for h in 0..host.len() {
            if host.kind[h] == HostKind::Annotation && loads[host.name[h].index()] {
                loading[host.input[h] as usize].push((host.ts_ns[h], host.end_ns(h)));
            }
        }
        let loading = loading
            .into_iter()
            .map(|l| crate::analysis::time::partition::merge(l, 0))
            .collect();
        IdleAfter {
            launches,
            busy,
            loading,
        }
    }

    fn of(&self, input: u32, returned: i64) -> i64 {
        let (launches, busy) = (&self.launches[input as usize], &self.busy[input as usize]);
        let k = launches.partition_point(|l| l.0 < returned);
        let Some(&(_, next)) = launches.get(k) else {
            return 0;
        };
        if next <= returned {
            return 0;
        }
        let loads = &self.loading[input as usize];
        let first = loads.partition_point(|l| l.1 <= returned);
        let loading: i64 = loads[first..]
            .iter()
            .take_while(|l| l.0 < next)
            .map(|l| busy.idle_within(l.0.max(returned), l.1.min(next)))
            .sum();
        busy.idle_within(returned, next) - loading
    }
}

/// The GPU's busy time as a sorted union of spans with running totals: the idle time of any
/// range in O(log n), however many spans it covers (a step-long op covers thousands).
#[derive(Default)]
struct Busy {
    spans: Vec<(i64, i64)>,
    /// Busy time of `spans[..k]`.
    before: Vec<i64>,
}

impl Busy {
    fn of(spans: Vec<(i64, i64)>) -> Busy {
        let spans = crate::analysis::time::partition::merge(spans, 0);
        let mut before = Vec::with_capacity(spans.len() + 1);
        let mut sum = 0i64;
        before.push(0);
        for &(s, e) in &spans {
            sum += e - s;
            before.push(sum);
        }
        Busy { spans, before }
    }

    /// Busy time before `t`.
    fn until(&self, t: i64) -> i64 {
        // Spans starting before t; the last of them may end after it.
        let k = self.spans.partition_point(|b| b.0 < t);
        if k == 0 {
            return 0;
        }
        let (s, e) = self.spans[k - 1];
        self.before[k - 1] + (e.min(t) - s)
    }

    /// Time in `[from, to)` that no span covers.
    fn idle_within(&self, from: i64, to: i64) -> i64 {
        if to <= from {
            return 0;
        }
        (to - from - (self.until(to) - self.until(from))).max(0)
    }
}

pub fn sync_stalls(ctx: &Context) -> Vec<Finding> {
    let trace = ctx.trace;
    let host = &trace.host;
    let acts = &trace.activities;
    let windows = StallWindows::new(ctx);
    let inside = |input: u32, t: i64| windows.inside(input, t);
    let idle_after = IdleAfter::new(ctx);
    let mut by_api: BTreeMap<&str, (u64, i64)> = BTreeMap::new();
    let (mut blocked_ns, mut idle_ns) = (0i64, 0i64);
    for i in 0..host.len() {
        if !matches!(host.kind[i], HostKind::Runtime | HostKind::Driver) {
            continue;
        }
        let name = trace.names.get(host.name[i]);
        if is_sync_call(name) && inside(host.input[i], host.ts_ns[i]) {
            let e = by_api.entry(name).or_default();
            e.0 += 1;
            e.1 += host.dur_ns.get(i);
            blocked_ns += host.dur_ns.get(i);
            idle_ns += idle_after.of(
                host.input[i],
                host.ts_ns[i].saturating_add(host.dur_ns.get(i)),
            );
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
    if calls == 0 || windows.is_empty() {
        return vec![];
    }
    let items: usize = ctx.compile_detail.step_item_calls.iter().sum();
    let per_step = calls as f64 / step_count(ctx);
    let share = pct(idle_ns, ctx.window_ns());
    let severity = if share >= 10.0 {
        Severity::High
    } else if per_step >= 1.0 || share >= 2.0 {
        Severity::Medium
    } else {
        Severity::Low
    };
    vec![Finding::new(
        severity,
        format!(
            "{calls} host synchronizations inside steps ({per_step:.1} per step): each drains the GPU queue, which then idles {} ({share:.1}% of the window) until the next launch reaches it; the host waited {} inside them while the GPU finished its work",
            ms(idle_ns),
            ms(blocked_ns)
        ),
        idle_ns,
        Detail::SyncStalls(ev::SyncStalls {
            calls,
            per_step: round2(per_step),
            blocked_ns,
            idle_after_ns: idle_ns,
            by_api: api_rows(&by_api),
            device_to_host_copies: d2h,
            item_calls: items,
            hint: "remove .item()/.cpu()/print of GPU tensors and explicit synchronize() from the step; keep values on the GPU".into(),
        }),
    )]
}

/// Device memory allocated and freed inside the steps: every free synchronizes the device, and
/// PyTorch's caching allocator exists to avoid both. Many of them mean it is bypassed or emptied
/// (`torch.cuda.empty_cache()` in the loop, allocator settings).
pub fn allocator_churn(ctx: &Context) -> Vec<Finding> {
    let trace = ctx.trace;
    let host = &trace.host;
    let windows = StallWindows::new(ctx);
    let mut by_api: BTreeMap<&str, (u64, i64)> = BTreeMap::new();
    for i in 0..host.len() {
        if !matches!(host.kind[i], HostKind::Runtime | HostKind::Driver) {
            continue;
        }
        let name = trace.names.get(host.name[i]);
        if is_allocator_call(name) && windows.inside(host.input[i], host.ts_ns[i]) {
            let e = by_api.entry(name).or_default();
            e.0 += 1;
            e.1 += host.dur_ns.get(i);
        }
    }
    let calls: u64 = by_api.values().map(|v| v.0).sum();
    let ns = by_api
        .values()
        .map(|v| v.1)
        .sum::<i64>()
        .min(ctx.window_ns());
    let share = pct(ns, ctx.window_ns());
    if calls == 0 || share < ALLOCATOR_CHURN_PCT {
        return vec![];
    }
    let frees: u64 = by_api
        .iter()
        .filter(|(k, _)| is_free_call(k))
        .map(|(_, v)| v.0)
        .sum();
    let severity = if share >= 30.0 {
        Severity::High
    } else {
        Severity::Medium
    };
    vec![Finding::new(
        severity,
        format!(
            "allocator churn: {calls} device malloc/free calls inside steps ({:.1} per step) take {} ({share:.1}% of the window); {frees} frees each synchronize the device",
            calls as f64 / step_count(ctx),
            ms(ns)
        ),
        ns,
        Detail::AllocatorChurn(ev::AllocatorChurn {
            calls,
            frees,
            ns,
            pct: share,
            by_api: api_rows(&by_api),
        }),
    )]
}

/// One call inside which the GPU idles this share of the window makes the profile a picture of
/// that wait, not of the model.
const ONE_CALL_IDLE_PCT: f64 = 50.0;
/// Steady steps holding under this share of the kernel time: the profile is warm-up or capture.
const STEADY_KERNEL_PCT: f64 = 5.0;

/// A profile that cannot support advice: the GPU idles inside one host call for most of the
/// window, or the steady steps hold almost none of the kernel time (the rest is warm-up or
/// graph capture). Reprofiling comes before any other action.
pub fn unrepresentative_profile(ctx: &Context) -> Vec<Finding> {
    let trace = ctx.trace;
    let (host, acts) = (&trace.host, &trace.activities);
    let window = ctx.window_ns();
    if window <= 0 {
        return vec![];
    }
    let windows = StallWindows::new(ctx);
    let mut spans: Vec<Vec<(i64, i64)>> = vec![Vec::new(); trace.inputs.len()];
    for a in 0..acts.len() {
        spans[acts.input[a] as usize].push((acts.ts_ns[a], acts.end_ns(a)));
    }
    let busy: Vec<Busy> = spans.into_iter().map(Busy::of).collect();
    // The host call inside which the GPU idles longest (torch.compile's own work is
    // `compile_in_window`'s: a call that compiles is not a wait).
    let mut worst: Option<(usize, i64)> = None;
    // A call's idle time is at most its duration: only calls at least as long as the threshold
    // can reach it.
    let shortest = (window as f64 * ONE_CALL_IDLE_PCT / 100.0).ceil() as i64;
    for i in 0..host.len() {
        if host.dur_ns.get(i) < shortest {
            continue;
        }
        let (s, e) = (
            host.ts_ns[i],
            host.ts_ns[i].saturating_add(host.dur_ns.get(i)),
        );
        if !matches!(
            host.kind[i],
            HostKind::Runtime | HostKind::Driver | HostKind::CpuOp
        ) || !windows.in_range(host.input[i], s)
            || windows.overlaps_compile(host.input[i], s, e)
        {
            continue;
        }
        let idle = busy[host.input[i] as usize].idle_within(s, e);
        if worst.is_none_or(|w| idle > w.1) {
            worst = Some((i, idle));
        }
    }
    if let Some((i, idle)) = worst.filter(|w| pct(w.1, window) >= ONE_CALL_IDLE_PCT) {
        let share = pct(idle, window);
        return vec![Finding::new(
            Severity::High,
            format!(
                "the profile is one wait: the GPU idles {} ({share:.1}% of the window) inside one call, {}; reprofile the steady state before acting on anything else",
                ms(idle),
                trace.names.get(host.name[i])
            ),
            idle,
            Detail::UnrepresentativeProfile(ev::UnrepresentativeProfile::OneCall(
                ev::OneCallWait {
                    kind: ev::ProfileKind::OneCall,
                    call: trace.names.get(host.name[i]).to_string(),
                    idle_ns: idle,
                    idle_pct: share,
                    start_ns: host.ts_ns[i],
                },
            )),
        )];
    }
    steady_share(ctx).map_or_else(Vec::new, |(steady, total)| {
        let share = pct(steady, total);
        if share >= STEADY_KERNEL_PCT {
            return vec![];
        }
        vec![Finding::new(
            Severity::High,
            format!(
                "the profile is warm-up or capture: the steady steps hold {share:.1}% of the kernel time ({} of {}); reprofile the steady state before acting on anything else",
                ms(steady),
                ms(total)
            ),
            total - steady,
            Detail::UnrepresentativeProfile(ev::UnrepresentativeProfile::Warmup(ev::WarmupShare {
                kind: ev::ProfileKind::Warmup,
                steady_kernel_ns: steady,
                kernel_ns: total,
                steady_pct: share,
            })),
        )]
    })
}

/// Kernel time launched in the steady steps (every kept step but a warm-up one) and in all;
/// None without at least two steps.
fn steady_share(ctx: &Context) -> Option<(i64, i64)> {
    if ctx.analysis.summary.steps < 2 {
        return None;
    }
    let acts = &ctx.trace.activities;
    let warmup: Vec<Option<u32>> = (0..ctx.trace.inputs.len())
        .map(|i| {
            ctx.analysis
                .warmup_in_window
                .then(|| ctx.steps.kept(i).next().map(|(k, _)| k as u32))
                .flatten()
        })
        .collect();
    let (mut steady, mut total) = (0i64, 0i64);
    for a in (0..acts.len()).filter(|&a| ctx.in_scope[a]) {
        total += acts.dur_ns[a];
        if let Some(s) = ctx.steps.of_activity[a] {
            if warmup[acts.input[a] as usize] != Some(s) {
                steady += acts.dur_ns[a];
            }
        }
    }
    (total > 0).then_some((steady, total))
}

/// Calls and time per runtime API, as the evidence lists them.
fn api_rows(by_api: &BTreeMap<&str, (u64, i64)>) -> Vec<ev::ApiCalls> {
    by_api
        .iter()
        .map(|(api, (calls, ns))| ev::ApiCalls {
            api: api.to_string(),
            calls: *calls,
            ns: *ns,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Busy;

    #[test]
    fn idle_time_of_a_range_from_running_totals() {
        let busy = Busy::of(vec![(10, 20), (15, 30), (40, 50), (60, 61)]);
        assert_eq!(busy.spans, vec![(10, 30), (40, 50), (60, 61)]);
        // Brute force over every range of a small grid.
        for from in 0..70 {
            for to in from..70 {
                let covered = (from..to)
                    .filter(|&t| busy.spans.iter().any(|&(s, e)| t >= s && t < e))
                    .count() as i64;
                assert_eq!(
                    busy.idle_within(from, to),
                    to - from - covered,
                    "{from}..{to}"
                );
            }
        }
        assert_eq!(busy.idle_within(5, 5), 0);
        assert_eq!(Busy::of(vec![]).idle_within(0, 9), 9);
    }
}
