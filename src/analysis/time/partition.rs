//! The time partition (FEED.md "Time partition"): every nanosecond of a device's window goes to
//! one category. Busy time is split among the activities running at that instant (equal shares,
//! so overlaps never double count); idle time goes to `data_loading` when the host was inside
//! the DataLoader's `__next__`, else to `launch_overhead` when it was dispatching, to
//! `host_idle` when it was outside any profiled event for longer than the dispatch threshold or
//! blocked in a synchronize, a device free (it synchronizes) or compiling, and to
//! `idle_unattributed` when the input has no host events. Idle time between the activities of one CUDA/HIP graph replay is
//! `graph_gaps`: the graph is executing, the host is not in the way, and nothing ran.

use crate::analysis::time::links::{is_compile_event, is_free_call, is_sync_call};
use crate::classify::Bucket;
use crate::model::{HostKind, Trace};
use serde::{Deserialize, Serialize};

/// A category of the time partition (FEED.md names): the seven buckets' busy time, then the
/// idle time by cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// GPU busy running GEMMs.
    Gemm,
    /// GPU busy running attention kernels.
    Attention,
    /// GPU busy running convolutions.
    Conv,
    /// GPU busy running elementwise, norm and reduction kernels.
    Elementwise,
    /// GPU busy running communication kernels (NCCL/RCCL).
    Communication,
    /// GPU busy copying or setting memory.
    Memory,
    /// GPU busy running anything else.
    Other,
    /// GPU idle while the host dispatches work: inside a cpu_op or runtime call, or in a gap
    /// between host events shorter than the dispatch threshold.
    LaunchOverhead,
    /// GPU idle while the host fetches the next batch: inside the DataLoader's `__next__`
    /// (`enumerate(DataLoader)#…__next__`), whatever it runs there.
    DataLoading,
    /// GPU idle while the host is outside any profiled event for longer than the dispatch
    /// threshold (Python work, a loader the profiler does not see), or blocked in a
    /// synchronize call.
    HostIdle,
    /// GPU idle in an input without host events: the cause cannot be told.
    IdleUnattributed,
    /// GPU idle between the kernels a CUDA/HIP graph replays.
    GraphGaps,
}

impl Category {
    /// Every category, in the feed's fixed order.
    pub const ALL: [Category; 12] = [
        Category::Gemm,
        Category::Attention,
        Category::Conv,
        Category::Elementwise,
        Category::Communication,
        Category::Memory,
        Category::Other,
        Category::LaunchOverhead,
        Category::DataLoading,
        Category::HostIdle,
        Category::IdleUnattributed,
        Category::GraphGaps,
    ];

    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }

    /// The category of a feed name.
    pub fn from_name(name: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The busy-time category of a bucket.
    pub fn of_bucket(b: Bucket) -> Category {
        Category::ALL[bucket_index(b)]
    }

    /// GPU idle time, whatever its cause.
    pub fn is_idle(self) -> bool {
        matches!(
            self,
            Category::LaunchOverhead
                | Category::DataLoading
                | Category::HostIdle
                | Category::IdleUnattributed
                | Category::GraphGaps
        )
    }

    /// Idle time the host causes (launch overhead, data loading, host idle).
    pub fn is_host_caused(self) -> bool {
        matches!(
            self,
            Category::LaunchOverhead | Category::DataLoading | Category::HostIdle
        )
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub const LAUNCH_OVERHEAD: usize = Category::LaunchOverhead as usize;
pub const DATA_LOADING: usize = Category::DataLoading as usize;
pub const HOST_IDLE: usize = Category::HostIdle as usize;
pub const IDLE_UNATTRIBUTED: usize = Category::IdleUnattributed as usize;
pub const GRAPH_GAPS: usize = Category::GraphGaps as usize;

/// Index of a bucket among the first seven categories.
pub fn bucket_index(b: Bucket) -> usize {
    Bucket::ALL.iter().position(|&x| x == b).unwrap_or(6)
}

/// Nanoseconds per category (fractional while accumulating shares of overlapped time), and how
/// much of `host_idle` the host spent blocked (synchronizing or compiling) rather than outside
/// any profiled event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Partition(pub [f64; 12], pub f64);

impl Partition {
    pub fn add(&mut self, other: &Partition) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
        self.1 += other.1;
    }
    /// Host idle time spent outside any profiled event (not blocked in a sync or compile).
    pub fn host_outside(&self) -> f64 {
        (self.0[HOST_IDLE] - self.1).max(0.0)
    }
    pub fn total(&self) -> f64 {
        self.0.iter().sum()
    }
    /// Idle time attributed to the host (graph gaps are not: the host is not in their way).
    pub fn idle(&self) -> f64 {
        self.0[LAUNCH_OVERHEAD]
            + self.0[DATA_LOADING]
            + self.0[HOST_IDLE]
            + self.0[IDLE_UNATTRIBUTED]
    }
    pub fn busy(&self) -> f64 {
        self.0[..7].iter().sum()
    }
    /// Integer nanoseconds that add up exactly to `total` (largest remainder rounding), so the
    /// rows of the feed sum to the window.
    pub fn rounded(&self, total: i64) -> [i64; 12] {
        let mut out = [0i64; 12];
        let mut rem: Vec<(f64, usize)> = Vec::with_capacity(12);
        for (i, &v) in self.0.iter().enumerate() {
            out[i] = v.floor() as i64;
            rem.push((v - v.floor(), i));
        }
        // Saturating: the categories come from input times, which may be absurd.
        let mut missing = total.saturating_sub(out.iter().fold(0i64, |a, &b| a.saturating_add(b)));
        rem.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        // Rounding leaves at most one nanosecond per category to hand out.
        for &(_, i) in rem
            .iter()
            .filter(|r| r.0 > 0.0)
            .take(missing.clamp(0, 12) as usize)
        {
            out[i] += 1;
            missing -= 1;
        }
        // Anything more is time nothing accounted for: say so rather than guess.
        if missing > 0 {
            out[IDLE_UNATTRIBUTED] = out[IDLE_UNATTRIBUTED].saturating_add(missing);
        }
        out
    }
}

/// One row of `time_partition`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartitionRow {
    pub category: Category,
    pub ns: i64,
    pub pct: f64,
}

pub fn rows(p: &Partition, window_ns: i64) -> Vec<PartitionRow> {
    let ns = p.rounded(window_ns);
    Category::ALL
        .into_iter()
        .zip(ns)
        .map(|(category, ns)| PartitionRow {
            category,
            ns,
            pct: crate::analysis::numbers::pct(ns, window_ns),
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HostState {
    Dispatch,
    Blocked,
    Loading,
}

/// What one input's host was doing over time: dispatching (inside cpu_ops and runtime calls, or
/// in gaps shorter than the threshold between them), blocked (synchronizing, compiling) or
/// loading data (inside the DataLoader's `__next__`).
pub struct HostTimeline {
    segments: Vec<(i64, i64, HostState)>,
    has_host: bool,
}

/// The union of spans, sorted; spans less than `bridge_ns` apart join (0: only touching or
/// overlapping ones).
/// In place: the spans can be millions (every outermost host call), so no second copy.
pub fn merge(mut v: Vec<(i64, i64)>, bridge_ns: i64) -> Vec<(i64, i64)> {
    super::order::sort_mostly_sorted_by_key(&mut v, |x| x);
    let mut kept = 0;
    for r in 0..v.len() {
        let (s, e) = v[r];
        if kept > 0 && s <= v[kept - 1].1.saturating_add(bridge_ns) {
            v[kept - 1].1 = v[kept - 1].1.max(e);
        } else {
            v[kept] = (s, e);
            kept += 1;
        }
    }
    v.truncate(kept);
    v.shrink_to_fit();
    v
}

impl HostTimeline {
    /// Builds the timeline of every input at once (one pass over the host events).
    pub fn build_all(trace: &Trace, dispatch_threshold_ns: i64) -> Vec<HostTimeline> {
        let n = trace.inputs.len();
        let mut dispatch: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
        let mut blocked: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
        let mut loading: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
        let host = &trace.host;
        let loads = trace
            .names
            .per_name(crate::analysis::time::names::is_data_loading);
        // Decided once per distinct name: millions of events, few names.
        let blocks = trace
            .names
            .per_name(|n| is_sync_call(n) || is_free_call(n) || is_compile_event(n));
        // Per thread: its input and the last interval kept of each kind. A call inside it (an op's
        // runtime calls, nested ops) adds nothing to the union: left out, which keeps these
        // lists to the outermost calls instead of every host event.
        let mut last: Vec<(u32, [(i64, i64); 2])> =
            vec![(u32::MAX, [(0, -1); 2]); host.threads.len()];
        for i in 0..host.len() {
            // Dispatch is "inside a cpu_op or runtime call" (FEED.md): ranges and Python frames are not.
            if matches!(host.kind[i], HostKind::Annotation | HostKind::Python) {
                if host.kind[i] == HostKind::Annotation && loads[host.name[i].index()] {
                    loading[host.input[i] as usize].push((
                        host.ts_ns[i],
                        host.ts_ns[i].saturating_add(host.dur_ns.get(i)),
                    ));
                }
                continue;
            }
            let iv = (
                host.ts_ns[i],
                host.ts_ns[i].saturating_add(host.dur_ns.get(i)),
            );
            let input = host.input[i];
            let kind = usize::from(blocks[host.name[i].index()]);
            let thread = &mut last[host.thread[i] as usize];
            if thread.0 == input && iv.0 >= thread.1[kind].0 && iv.1 <= thread.1[kind].1 {
                continue;
            }
            if thread.0 != input {
                *thread = (input, [(0, -1); 2]);
            }
            thread.1[kind] = iv;
            if kind == 1 {
                blocked[input as usize].push(iv);
            } else {
                dispatch[input as usize].push(iv);
            }
        }
        use rayon::prelude::*;
        dispatch
            .into_par_iter()
            .zip(blocked)
            .zip(loading)
            .map(|((d, b), l)| {
                let has_host = !d.is_empty() || !b.is_empty() || !l.is_empty();
                HostTimeline {
                    segments: combine(&merge(d, dispatch_threshold_ns), &merge(b, 0), &merge(l, 0)),
                    has_host,
                }
            })
            .collect()
    }

    /// Adds the idle span `[s, e)` to `out` by what the host was doing.
    fn classify_idle(&self, s: i64, e: i64, out: &mut Partition) {
        if !self.has_host {
            out.0[IDLE_UNATTRIBUTED] += (e - s) as f64;
            return;
        }
        let (mut dispatch, mut blocked, mut loading) = (0i64, 0i64, 0i64);
        let mut k = self.segments.partition_point(|seg| seg.1 <= s);
        while k < self.segments.len() && self.segments[k].0 < e {
            let (a, b, state) = self.segments[k];
            let overlap = b.min(e) - a.max(s);
            if overlap > 0 {
                match state {
                    HostState::Dispatch => dispatch += overlap,
                    HostState::Blocked => blocked += overlap,
                    HostState::Loading => loading += overlap,
                }
            }
            k += 1;
        }
        out.0[LAUNCH_OVERHEAD] += dispatch as f64;
        out.0[DATA_LOADING] += loading as f64;
        out.0[HOST_IDLE] += (e - s - dispatch - loading) as f64;
        out.1 += blocked as f64;
    }
}

/// Non-overlapping segments, loading overriding blocked overriding dispatch.
fn combine(
    dispatch: &[(i64, i64)],
    blocked: &[(i64, i64)],
    loading: &[(i64, i64)],
) -> Vec<(i64, i64, HostState)> {
    let mut points: Vec<i64> = dispatch
        .iter()
        .chain(blocked)
        .chain(loading)
        .flat_map(|&(s, e)| [s, e])
        .collect();
    points.sort_unstable();
    points.dedup();
    let (mut i, mut j, mut k) = (0, 0, 0);
    let mut out: Vec<(i64, i64, HostState)> = Vec::new();
    for w in points.windows(2) {
        let (s, e) = (w[0], w[1]);
        while i < dispatch.len() && dispatch[i].1 <= s {
            i += 1;
        }
        while j < blocked.len() && blocked[j].1 <= s {
            j += 1;
        }
        while k < loading.len() && loading[k].1 <= s {
            k += 1;
        }
        let in_blocked = j < blocked.len() && blocked[j].0 <= s;
        let in_dispatch = i < dispatch.len() && dispatch[i].0 <= s;
        let state = if k < loading.len() && loading[k].0 <= s {
            HostState::Loading
        } else if in_blocked {
            HostState::Blocked
        } else if in_dispatch {
            HostState::Dispatch
        } else {
            continue;
        };
        match out.last_mut() {
            Some(last) if last.1 == s && last.2 == state => last.1 = e,
            _ => out.push((s, e, state)),
        }
    }
    out
}

/// The activities of one (input, device), sorted by start, and the spans of its graph replays.
#[derive(Default)]
pub struct DeviceActivities {
    pub ts: Vec<i64>,
    pub end: Vec<i64>,
    pub bucket: Vec<u8>,
    pub max_dur: i64,
    /// Each CUDA/HIP graph replay's span on this device, first activity's start to last one's
    /// end; merged and sorted by [`DeviceActivities::sort`].
    graph_spans: Vec<(i64, i64)>,
}

impl DeviceActivities {
    pub fn push(&mut self, ts: i64, end: i64, bucket: usize) {
        self.ts.push(ts);
        self.end.push(end);
        self.bucket.push(bucket as u8);
        self.max_dur = self.max_dur.max(end - ts);
    }
    /// Records one graph replay's span: idle time inside it is `graph_gaps`.
    pub fn push_graph_span(&mut self, start: i64, end: i64) {
        if end > start {
            self.graph_spans.push((start, end));
        }
    }

    /// Adds the idle span `[s, e)`: inside a graph replay to `graph_gaps`, the rest by what the
    /// host was doing.
    fn add_idle(&self, s: i64, e: i64, host: &HostTimeline, out: &mut Partition) {
        let mut cur = s;
        let mut k = self.graph_spans.partition_point(|g| g.1 <= s);
        while k < self.graph_spans.len() && self.graph_spans[k].0 < e {
            let (gs, ge) = (self.graph_spans[k].0.max(cur), self.graph_spans[k].1.min(e));
            if gs > cur {
                host.classify_idle(cur, gs, out);
            }
            if ge > gs {
                out.0[GRAPH_GAPS] += (ge - gs) as f64;
                cur = ge;
            }
            k += 1;
        }
        if e > cur {
            host.classify_idle(cur, e, out);
        }
    }

    /// Sorts by start (stable, so equal starts keep file order).
    pub fn sort(&mut self) {
        self.graph_spans = merge(std::mem::take(&mut self.graph_spans), 0);
        let mut idx: Vec<usize> = (0..self.ts.len()).collect();
        idx.sort_by_key(|&i| (self.ts[i], self.end[i]));
        self.ts = idx.iter().map(|&i| self.ts[i]).collect();
        self.end = idx.iter().map(|&i| self.end[i]).collect();
        self.bucket = idx.iter().map(|&i| self.bucket[i]).collect();
    }
    pub fn first_start(&self) -> Option<i64> {
        self.ts.first().copied()
    }
    pub fn last_end(&self) -> Option<i64> {
        self.end.iter().copied().max()
    }

    /// Partition of `[a, b)`.
    pub fn partition(&self, a: i64, b: i64, host: &HostTimeline) -> Partition {
        let mut out = Partition::default();
        if b <= a {
            return out;
        }
        let lo = self
            .ts
            .partition_point(|&t| t < a.saturating_sub(self.max_dur));
        let hi = self.ts.partition_point(|&t| t < b);
        let mut events: Vec<(i64, i8, u8)> = Vec::new();
        for k in lo..hi {
            let (s, e) = (self.ts[k].max(a), self.end[k].min(b));
            if e > s {
                events.push((s, 1, self.bucket[k]));
                events.push((e, -1, self.bucket[k]));
            }
        }
        events.sort_unstable();
        let mut counts = [0i64; 7];
        let mut total = 0i64;
        let mut cur = a;
        let mut k = 0;
        while k < events.len() {
            let t = events[k].0;
            if t > cur {
                let len = (t - cur) as f64;
                if total > 0 {
                    for (bucket, &c) in counts.iter().enumerate() {
                        if c > 0 {
                            out.0[bucket] += len * c as f64 / total as f64;
                        }
                    }
                } else {
                    self.add_idle(cur, t, host, &mut out);
                }
                cur = t;
            }
            while k < events.len() && events[k].0 == t {
                let (_, d, bucket) = events[k];
                counts[bucket as usize] += i64::from(d);
                total += i64::from(d);
                k += 1;
            }
        }
        if b > cur {
            self.add_idle(cur, b, host, &mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeline(dispatch: Vec<(i64, i64)>, blocked: Vec<(i64, i64)>, bridge: i64) -> HostTimeline {
        HostTimeline {
            segments: combine(&merge(dispatch, bridge), &merge(blocked, 0), &[]),
            has_host: true,
        }
    }

    #[test]
    fn overlapping_activities_split_time_equally() {
        let mut d = DeviceActivities::default();
        d.push(0, 100, 0); // gemm 0..100
        d.push(50, 150, 3); // elementwise 50..150
        d.sort();
        let p = d.partition(0, 200, &timeline(vec![(150, 180)], vec![], 0));
        assert_eq!(p.0[0], 75.0);
        assert_eq!(p.0[3], 75.0);
        assert_eq!(p.0[LAUNCH_OVERHEAD], 30.0);
        assert_eq!(p.0[HOST_IDLE], 20.0);
        assert_eq!(p.total(), 200.0);
    }

    #[test]
    fn short_host_gaps_count_as_dispatch_and_syncs_as_idle() {
        let mut d = DeviceActivities::default();
        d.push(1000, 1100, 0);
        d.sort();
        // Host busy 0..100 and 130..300 (30 ns gap < 50 bridges), blocked in a sync 200..260.
        let t = timeline(vec![(0, 100), (130, 300)], vec![(200, 260)], 50);
        let p = d.partition(0, 1100, &t);
        assert_eq!(p.0[LAUNCH_OVERHEAD], 240.0); // 0..200 and 260..300
        assert_eq!(p.0[HOST_IDLE], 760.0); // 200..260 blocked, 300..1000 outside
        assert_eq!((p.1, p.host_outside()), (60.0, 700.0));
        assert_eq!(p.0[0], 100.0);
        let none = HostTimeline {
            segments: vec![],
            has_host: false,
        };
        assert_eq!(d.partition(0, 1100, &none).0[IDLE_UNATTRIBUTED], 1000.0);
    }

    #[test]
    fn idle_inside_a_graph_replay_is_a_graph_gap() {
        let mut d = DeviceActivities::default();
        // One replay: kernels 100..200 and 300..400 (a 100 ns gap inside it), then idle.
        d.push(100, 200, 0);
        d.push(300, 400, 0);
        d.push_graph_span(100, 400);
        d.sort();
        let p = d.partition(0, 600, &timeline(vec![(0, 600)], vec![], 0));
        assert_eq!(p.0[0], 200.0);
        assert_eq!(p.0[GRAPH_GAPS], 100.0);
        // Outside the replay the host was dispatching.
        assert_eq!(p.0[LAUNCH_OVERHEAD], 300.0);
        assert_eq!(p.total(), 600.0);
        // A window that cuts the replay keeps only its part of the gap.
        assert_eq!(
            d.partition(250, 600, &timeline(vec![], vec![], 0)).0[GRAPH_GAPS],
            50.0
        );
    }

    #[test]
    fn rounding_is_cheap_even_when_nothing_was_accounted() {
        assert_eq!(
            Partition::default().rounded(5_000_000_000)[IDLE_UNATTRIBUTED],
            5_000_000_000
        );
    }

    #[test]
    fn rounding_keeps_the_total() {
        let p = Partition(
            [
                33.4, 33.3, 33.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            ],
            0.0,
        );
        assert_eq!(p.rounded(100).iter().sum::<i64>(), 100);
    }
}
