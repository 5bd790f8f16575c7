//! The dependency model of one input (a rank): what each GPU activity and each host moment
//! waited for. Built once per input, read by the walk of every step.
//!
//! - **Stream order**: an activity waits for the one before it on its stream.
//! - **Launch**: an activity waits for its runtime call (by correlation) to start.
//! - **Cross-stream waits**: the first activity a stream runs after a `cudaStreamWaitEvent`
//!   waits for the last activity launched on the recorded stream before the matching
//!   `cudaEventRecord`. Kineto's `cuda_sync` records name the waiting stream (and, before torch
//!   2.11, the recorded one and the record call); otherwise both are inferred from the thread's
//!   launches: the recorded stream is the one the thread launched on last before the record,
//!   the waiting one the one it launches on next after the wait (torch's `wait_stream` and
//!   c10d's record → wait around collectives both issue exactly that sequence).
//! - **Host syncs**: a synchronize (device, stream, event), a blocking copy or a free returns
//!   when the GPU work before it ends; it waited for the activity that ended last among those
//!   launched before it on the streams it synchronizes (a stream sync's stream from its
//!   `cuda_sync` record, else the stream the thread launched on last; a device sync: all).
//! - **Host threads**: each thread's time is split into segments by what it was doing
//!   (dispatching, other host work, data loading, blocked in a sync); a worker thread (the
//!   autograd engine's) that sat idle was waiting for the main thread.

use crate::analysis::path::alloc::allocator_waits;
use crate::analysis::path::hidden::add_hidden_waits;
use crate::analysis::path::queue::queued_launches;
use crate::analysis::path::segments::{disjoint, paint, HostSeg};
use crate::analysis::path::Label;
use crate::analysis::time::links::{is_allocator_call, is_free_call, is_sync_call, Links};
use crate::analysis::time::names::is_data_loading;
use crate::analysis::time::order::sort_mostly_sorted_by_key;
use crate::model::{HostKind, NameId, SyncKind, Trace};
use rustc_hash::FxHashMap as HashMap;

/// What a host call that waits for the GPU is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GateKind {
    /// A synchronize, a blocking copy or a free.
    Sync,
    /// A launch call that blocked on the full launch queue (`analysis::path::queue`).
    Queue,
    /// An allocator call that waited for the GPU to drain (`analysis::path::alloc`).
    Alloc,
}

/// A host call that waits for the GPU, and the GPU work it waits for: it returns at `end`,
/// once `activity` has finished; `waited` when that was after it started (the host blocked on
/// the GPU).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GatedSync {
    pub waited: bool,
    pub start: i64,
    pub end: i64,
    pub activity: u32,
    pub name: NameId,
    /// The call's host event.
    pub host: u32,
    pub kind: GateKind,
    /// What the call costs when it need not wait (a launch's unblocked cost; 0 for a sync).
    pub own_ns: i64,
}

/// One host thread of the input.
#[derive(Default)]
pub(crate) struct ThreadModel {
    /// What it was doing, sorted and disjoint; time between segments is a gap.
    pub segs: Vec<HostSeg>,
    /// Its synchronizes and blocked launches and the GPU work each waits for, by end.
    pub gated: Vec<GatedSync>,
    /// It launched GPU work (the main thread, autograd's device threads), unlike threads
    /// that only copy or pin memory.
    pub launches: bool,
}

/// The dependency model of one input.
pub(crate) struct InputModel {
    /// Per stream, its activities (indices into the trace) by start.
    pub streams: Vec<Vec<u32>>,
    /// Per stream, its (device, stream).
    pub keys: Vec<(u32, u32)>,
    /// Per activity of the input: (its stream's index in `streams`, its position there).
    pub place: Places,
    /// Activity → the activity on another stream it waited for.
    pub waits: HashMap<u32, u32>,
    /// Activity → the work on another stream that was running when it started, late, with
    /// nothing it waited for ending just before: the GPU was busy with it (the walk's, not a
    /// wait the replays delay it by).
    pub held: HashMap<u32, u32>,
    /// Per thread (index into `trace.host.threads`) of the input.
    pub threads: HashMap<u32, ThreadModel>,
    /// The thread that runs the steps (holds `ProfilerStep#N`, else launches most).
    pub main: Option<u32>,
}

impl InputModel {
    /// Builds the model of input `input`.
    /// `queue_depth`: launches in flight at which a launch call blocks (the input's vendor's
    /// `launch_queue_depth`).
    pub fn build(trace: &Trace, links: &Links, input: u32, queue_depth: i64) -> Self {
        let (acts, host) = (&trace.activities, &trace.host);
        let mine: Vec<u32> = (0..acts.len() as u32)
            .filter(|&a| acts.input[a as usize] == input)
            .collect();
        // Streams by (device, stream), activities by start.
        let mut by_stream: std::collections::BTreeMap<(u32, u32), Vec<u32>> = Default::default();
        for &a in &mine {
            by_stream
                .entry((acts.device[a as usize], acts.stream[a as usize]))
                .or_default()
                .push(a);
        }
        let keys: Vec<(u32, u32)> = by_stream.keys().copied().collect();
        let mut streams: Vec<Vec<u32>> = by_stream.into_values().collect();
        let mut place = match (mine.first(), mine.last()) {
            (Some(&first), Some(&last)) => Places::over(first, last, (u32::MAX, u32::MAX)),
            _ => Places::default(),
        };
        for (s, list) in streams.iter_mut().enumerate() {
            list.sort_by_key(|&a| (acts.ts_ns[a as usize], a));
            for (k, &a) in list.iter().enumerate() {
                place.insert(a, (s as u32, k as u32));
            }
        }
        // Host events of the input by thread, by start (outer events first).
        let mut by_thread: HashMap<u32, Vec<u32>> = HashMap::default();
        for h in 0..host.len() {
            if host.input[h] == input && host.kind[h] != HostKind::Python {
                by_thread.entry(host.thread[h]).or_default().push(h as u32);
            }
        }
        // Outer events first where two start together, then in the table's order.
        let key = |h: u32| {
            (
                host.ts_ns[h as usize],
                std::cmp::Reverse(host.end_ns(h as usize)),
                h,
            )
        };
        for list in by_thread.values_mut() {
            sort_mostly_sorted_by_key(list, key);
        }
        // The first activity of a call (a graph launch has many): the one it waits on is found
        // by stream below.
        let launched = Launched::new(
            host.len(),
            mine.iter()
                .filter_map(|&a| links.launch[a as usize].map(|h| (h, a))),
        );
        let records: HashMap<u64, &crate::model::GpuSync> = trace
            .syncs
            .rows
            .iter()
            .filter(|s| s.input == input)
            .map(|s| (s.correlation, s))
            .collect();
        // The record calls the stream waits name (older Kineto), by correlation: one pass.
        let named: rustc_hash::FxHashSet<u64> = records
            .values()
            .map(|r| r.record_correlation)
            .filter(|&c| c != 0)
            .collect();
        let record_calls: HashMap<u64, i64> = if named.is_empty() {
            HashMap::default()
        } else {
            host.correlation
                .nonzero()
                .filter(|&(h, c)| {
                    host.input[h] == input
                        && matches!(host.kind[h], HostKind::Runtime | HostKind::Driver)
                        && named.contains(&c)
                })
                .map(|(h, c)| (c, host.ts_ns[h]))
                .collect()
        };
        let ctx = Build {
            trace,
            links,
            kinds: &trace.names.per_name(CallKind::of),
            streams: &streams,
            keys: &keys,
            place: &place,
            launched: &launched,
            records: &records,
            record_calls: &record_calls,
        };
        let mut waits = HashMap::default();
        let mut threads = HashMap::default();
        let mut ordered: Vec<(u32, Vec<u32>)> = by_thread.into_iter().collect();
        ordered.sort_unstable_by_key(|t| t.0);
        let main = main_thread(trace, &ordered, &launched);
        // The allocator's mallocs (not frees, which are syncs) of every thread.
        let mut allocs: Vec<u32> = Vec::new();
        for (thread, events) in ordered {
            ctx.waits_of(&events, &mut waits);
            threads.insert(thread, ctx.thread_model(&events));
            allocs.extend(events.iter().copied().filter(|&h| {
                matches!(host.kind[h as usize], HostKind::Runtime | HostKind::Driver)
                    && ctx.kinds[host.name[h as usize].index()] & CallKind::ALLOC != 0
            }));
        }
        let mut held = HashMap::default();
        add_hidden_waits(trace, links, (&streams, &keys), (&mut waits, &mut held));
        let is_sync =
            |name: NameId| ctx.kinds[name.index()] & (CallKind::SYNC | CallKind::FREE) != 0;
        let queued = queued_launches(trace, links, input, queue_depth, &is_sync);
        let last_before = |t: i64| {
            (0..ctx.streams.len())
                .filter_map(|st| ctx.last_launched_before(st, t))
                .max_by_key(|&a| trace.activities.end_ns(a as usize))
        };
        let alloc_waits = allocator_waits(trace, &allocs, &last_before);
        let added = !queued.is_empty() || !alloc_waits.is_empty();
        for w in alloc_waits {
            threads.entry(w.thread).or_default().gated.push(GatedSync {
                waited: true,
                start: w.start,
                end: w.end,
                activity: w.activity,
                name: w.name,
                host: w.host,
                kind: GateKind::Alloc,
                own_ns: 0,
            });
        }
        for b in queued {
            threads.entry(b.thread).or_default().gated.push(GatedSync {
                waited: true,
                start: b.start,
                end: b.end,
                activity: b.activity,
                name: b.name,
                host: b.host,
                kind: GateKind::Queue,
                own_ns: b.own_ns,
            });
        }
        if added {
            for tm in threads.values_mut() {
                tm.gated.sort_by_key(|g: &GatedSync| (g.end, g.start));
            }
        }
        InputModel {
            streams,
            keys,
            place,
            waits,
            held,
            threads,
            main,
        }
    }

    /// The activity before `a` on its stream.
    pub fn stream_prev(&self, a: u32) -> Option<u32> {
        let (s, k) = self.place.get(a)?;
        k.checked_sub(1)
            .map(|k| self.streams[s as usize][k as usize])
    }
}

/// Where each activity of one input sits: (stream, position), looked up for every activity
/// and call of the step model.
pub(crate) type Places = ActivitySlots<(u32, u32)>;

/// A value for each of one input's activities, in a vector over the span of their trace
/// indices (an input's activities are one run of the table, or a few): 4-8 B a slot where a
/// hash map took several times that, on millions of activities.
#[derive(Default)]
pub(crate) struct ActivitySlots<V> {
    first: u32,
    slots: Vec<V>,
    /// The value of a slot that holds none.
    empty: V,
    filled: usize,
}

impl<V: Copy + PartialEq> ActivitySlots<V> {
    /// Room for activities `first..=last` (none when `last < first`), each slot `empty`.
    pub(crate) fn over(first: u32, last: u32, empty: V) -> ActivitySlots<V> {
        let len = if first <= last {
            (last - first) as usize + 1
        } else {
            0
        };
        ActivitySlots {
            first,
            slots: vec![empty; len],
            empty,
            filled: 0,
        }
    }

    /// Sets activity `a`'s value (`a` within the range it was made over).
    pub(crate) fn insert(&mut self, a: u32, v: V) {
        let slot = &mut self.slots[(a - self.first) as usize];
        self.filled += usize::from(*slot == self.empty);
        *slot = v;
    }

    /// Activity `a`'s value, if it has one.
    pub fn get(&self, a: u32) -> Option<V> {
        let k = a.checked_sub(self.first)? as usize;
        self.slots.get(k).copied().filter(|&v| v != self.empty)
    }

    /// How many activities have a value.
    pub fn len(&self) -> usize {
        self.filled
    }
}

/// The thread holding `ProfilerStep#N`, else the one whose calls launch most.
fn main_thread(trace: &Trace, threads: &[(u32, Vec<u32>)], launched: &Launched) -> Option<u32> {
    let host = &trace.host;
    let steps = threads.iter().find(|(_, evs)| {
        evs.iter().any(|&h| {
            host.kind[h as usize] == HostKind::Annotation
                && trace
                    .names
                    .get(host.name[h as usize])
                    .starts_with("ProfilerStep#")
        })
    });
    if let Some((t, _)) = steps {
        return Some(*t);
    }
    threads
        .iter()
        .max_by_key(|(t, evs)| {
            (
                evs.iter().filter(|&&h| launched.get(h).is_some()).count(),
                std::cmp::Reverse(*t),
            )
        })
        .map(|(t, _)| *t)
}

/// What a name says of a call or range, as bits (decided once per name).
struct CallKind;

impl CallKind {
    /// The allocator's malloc (cudaMalloc and kin; not a free).
    const ALLOC: u8 = 1;
    /// A free (it synchronizes).
    const FREE: u8 = 2;
    /// A synchronize or a blocking copy.
    const SYNC: u8 = 4;
    /// A synchronize of the whole device (or context).
    const DEVICE_SYNC: u8 = 8;
    /// `cudaEventRecord` and kin.
    const RECORD: u8 = 16;
    /// `cudaStreamWaitEvent` and kin.
    const STREAM_WAIT: u8 = 32;
    /// The data loader's range.
    const DATA_LOADING: u8 = 64;

    fn of(name: &str) -> u8 {
        let free = is_free_call(name);
        [
            (is_allocator_call(name) && !free, Self::ALLOC),
            (free, Self::FREE),
            (is_sync_call(name), Self::SYNC),
            (
                name.contains("DeviceSynchronize") || name.contains("CtxSynchronize"),
                Self::DEVICE_SYNC,
            ),
            (name.contains("EventRecord"), Self::RECORD),
            (name.contains("StreamWaitEvent"), Self::STREAM_WAIT),
            (is_data_loading(name), Self::DATA_LOADING),
        ]
        .iter()
        .filter(|(holds, _)| *holds)
        .fold(0, |bits, (_, bit)| bits | bit)
    }
}

/// Each launching call's first activity, by host event: a bit per event says whether it
/// launched, and the activities sit in the calls' order, found by counting the bits before.
/// Read in time order, it is read in order (a hash map of a 2 GB trace's calls missed the
/// cache on every lookup).
struct Launched {
    /// Bit `h % 64` of word `h / 64`: whether call `h` launched.
    calls: Vec<u64>,
    /// How many calls launched before each word.
    before: Vec<u32>,
    /// The first activity of each call that launched, by call.
    first: Vec<u32>,
}

impl Launched {
    /// From each activity's launching call, in activity order: a call's first activity is
    /// the first of it in the list.
    fn new(events: usize, launches: impl Iterator<Item = (u32, u32)>) -> Launched {
        let mut pairs: Vec<(u32, u32)> = launches.collect();
        // By call, a call's activities in list order (stable).
        pairs.sort_by_key(|p| p.0);
        pairs.dedup_by_key(|p| p.0);
        let mut calls = vec![0u64; events.div_ceil(64)];
        for &(h, _) in &pairs {
            calls[h as usize / 64] |= 1 << (h % 64);
        }
        let mut before = Vec::with_capacity(calls.len());
        let mut n = 0u32;
        for w in &calls {
            before.push(n);
            n += w.count_ones();
        }
        Launched {
            calls,
            before,
            first: pairs.into_iter().map(|p| p.1).collect(),
        }
    }

    /// The first activity call `h` launched.
    fn get(&self, h: u32) -> Option<u32> {
        let (w, bit) = (h as usize / 64, h % 64);
        let word = *self.calls.get(w)?;
        if word & (1 << bit) == 0 {
            return None;
        }
        let below = (word & ((1u64 << bit) - 1)).count_ones();
        Some(self.first[(self.before[w] + below) as usize])
    }
}

struct Build<'a> {
    trace: &'a Trace,
    links: &'a Links,
    streams: &'a [Vec<u32>],
    keys: &'a [(u32, u32)],
    place: &'a Places,
    /// What each name says of a call ([`CallKind`] bits), by name: decided once per name.
    kinds: &'a [u8],
    launched: &'a Launched,
    records: &'a HashMap<u64, &'a crate::model::GpuSync>,
    /// Start of each `cudaEventRecord` a stream wait names, by correlation.
    record_calls: &'a HashMap<u64, i64>,
}

impl Build<'_> {
    /// When activity `a` was launched (its own start without a launch call).
    fn launch_ts(&self, a: u32) -> i64 {
        self.links.launch_ts(self.trace, a as usize)
    }

    /// The last activity of stream `s` launched before `t`.
    fn last_launched_before(&self, s: usize, t: i64) -> Option<u32> {
        let list = &self.streams[s];
        let k = list.partition_point(|&a| self.launch_ts(a) < t);
        k.checked_sub(1).map(|k| list[k])
    }

    fn stream_of(&self, a: u32) -> usize {
        self.place.get(a).expect("an activity of the input").0 as usize
    }

    fn stream_index(&self, device: u32, stream: u32) -> Option<usize> {
        self.keys.binary_search(&(device, stream)).ok()
    }

    /// Cross-stream waits issued by one thread's calls (`events` by start).
    fn waits_of(&self, events: &[u32], waits: &mut HashMap<u32, u32>) {
        let host = &self.trace.host;
        let is_call = |h: usize| matches!(host.kind[h], HostKind::Runtime | HostKind::Driver);
        // The streams the thread launched on, most recent last, each once.
        let mut recent: Vec<usize> = Vec::new();
        // The last record: its call's start and `recent` then.
        let mut record: Option<(i64, Vec<usize>)> = None;
        // Waits whose waiting stream is the next launch's: (waiting stream if known, the
        // candidates for the recorded stream, the record's time).
        let mut pending: Vec<(Option<usize>, Vec<usize>, i64)> = Vec::new();
        for &h in events {
            let h = h as usize;
            if !is_call(h) {
                continue;
            }
            if let Some(a) = self.launched.get(h as u32) {
                let s = self.stream_of(a);
                // A wait applies to the next launch on its stream (any, where it is unknown).
                pending.retain(|(waiting, candidates, at)| {
                    if waiting.is_some_and(|w| w != s) {
                        return true;
                    }
                    // The recorded stream: the last one launched on before the record other
                    // than the one that waits (waiting on oneself is no wait).
                    if let Some(&on) = candidates.iter().rev().find(|&&c| c != s) {
                        self.add_wait(s, on, *at, a, waits);
                    }
                    false
                });
                recent.retain(|&x| x != s);
                recent.push(s);
                continue;
            }
            let kind = self.kinds[host.name[h].index()];
            if kind & CallKind::RECORD != 0 {
                record = Some((host.ts_ns[h], recent.clone()));
            } else if kind & CallKind::STREAM_WAIT != 0 {
                let sync = self.records.get(&host.correlation.get(h));
                let device = sync.map_or(0, |s| s.device);
                let at = match sync.map(|s| s.record_correlation) {
                    Some(c) if c != 0 => self.call_ts(c).unwrap_or(host.ts_ns[h]),
                    _ => record.as_ref().map_or(host.ts_ns[h], |r| r.0),
                };
                let candidates = match sync.and_then(|s| s.wait_on_stream) {
                    Some(w) => self.stream_index(device, w).into_iter().collect(),
                    None => record.as_ref().map(|r| r.1.clone()).unwrap_or_default(),
                };
                let waiting = sync.and_then(|s| self.stream_index(s.device, s.stream));
                pending.push((waiting, candidates, at));
            }
        }
    }

    /// The start of the record call with correlation `c`.
    fn call_ts(&self, c: u64) -> Option<i64> {
        self.record_calls.get(&c).copied()
    }

    /// Activity `a` (on stream `waiting`) waits for the last activity launched on stream `on`
    /// before `at`.
    fn add_wait(&self, waiting: usize, on: usize, at: i64, a: u32, waits: &mut HashMap<u32, u32>) {
        if on == waiting {
            return;
        }
        let Some(dep) = self.last_launched_before(on, at) else {
            return;
        };
        let acts = &self.trace.activities;
        let end = |x: u32| acts.end_ns(x as usize);
        // Work that ended after the waiter started was not waited for: a wrong inference.
        if end(dep) > acts.ts_ns[a as usize].saturating_add(1_000) {
            return;
        }
        let e = waits.entry(a).or_insert(dep);
        if end(dep) > end(*e) {
            *e = dep;
        }
    }

    /// The segments of one thread and its synchronizes that waited for the GPU.
    fn thread_model(&self, events: &[u32]) -> ThreadModel {
        let host = &self.trace.host;
        let mut ops: Vec<HostSeg> = Vec::new();
        let mut syncs: Vec<HostSeg> = Vec::new();
        let mut allocs: Vec<HostSeg> = Vec::new();
        let mut loading: Vec<HostSeg> = Vec::new();
        let mut gated = Vec::new();
        let mut last_stream: Option<usize> = None;
        // Outermost op or call: its index in `ops`, and its end.
        let mut outer: Option<(usize, i64)> = None;
        let mut launches_any = false;
        for &h in events {
            let h = h as usize;
            let (s, e) = (host.ts_ns[h], host.end_ns(h));
            let kind = self.kinds[host.name[h].index()];
            let seg = |label| HostSeg {
                start: s,
                end: e,
                label,
                name: host.name[h],
            };
            match host.kind[h] {
                HostKind::Annotation => {
                    if kind & CallKind::DATA_LOADING != 0 {
                        loading.push(seg(Label::DataLoading));
                    }
                    continue;
                }
                HostKind::Python => continue,
                HostKind::Runtime | HostKind::Driver | HostKind::CpuOp => {}
            }
            let call = host.kind[h] != HostKind::CpuOp;
            let launched = self.launched.get(h as u32);
            let launches = call && launched.is_some();
            launches_any |= launches;
            match outer {
                Some((k, end)) if s < end => {
                    if launches {
                        ops[k].label = Label::Launch;
                    }
                }
                _ => {
                    // A call is dispatch; the allocator's (cudaMalloc and kin) is painted host
                    // work below: it launches nothing and takes as long as the driver does.
                    let label = if call { Label::Launch } else { Label::Host };
                    ops.push(seg(label));
                    outer = Some((ops.len() - 1, e));
                }
            }
            if call && kind & CallKind::ALLOC != 0 {
                allocs.push(seg(Label::Host));
            }
            if call && kind & (CallKind::SYNC | CallKind::FREE) != 0 {
                syncs.push(seg(Label::Sync));
                if let Some(g) = self.gate(h, last_stream) {
                    gated.push(g);
                }
            }
            if let Some(a) = launched {
                last_stream = Some(self.stream_of(a));
            }
        }
        // The allocator inside an op that launches is host work too, not dispatch.
        let mut segs = paint(ops, &disjoint(allocs));
        segs = paint(segs, &disjoint(syncs));
        segs = paint(segs, &disjoint(loading));
        gated.sort_by_key(|g: &GatedSync| (g.end, g.start));
        ThreadModel {
            segs,
            gated,
            launches: launches_any,
        }
    }

    /// The activity synchronize `h` waited for, if it waited at all: the one that ended last
    /// among those launched before it on the streams it synchronizes.
    fn gate(&self, h: usize, last_stream: Option<usize>) -> Option<GatedSync> {
        let host = &self.trace.host;
        let acts = &self.trace.activities;
        let (s, e) = (host.ts_ns[h], host.end_ns(h));
        let record = self.records.get(&host.correlation.get(h));
        let streams: Vec<usize> = match record.map(|r| r.kind) {
            Some(SyncKind::ContextSync) => (0..self.streams.len()).collect(),
            Some(SyncKind::StreamSync) => record
                .and_then(|r| self.stream_index(r.device, r.stream))
                .into_iter()
                .collect(),
            Some(SyncKind::EventSync) => match record.and_then(|r| r.wait_on_stream) {
                Some(w) => self
                    .stream_index(record.map_or(0, |r| r.device), w)
                    .into_iter()
                    .collect(),
                None => last_stream.into_iter().collect(),
            },
            _ => {
                if self.kinds[host.name[h].index()] & (CallKind::DEVICE_SYNC | CallKind::FREE) != 0
                {
                    (0..self.streams.len()).collect()
                } else {
                    last_stream.into_iter().collect()
                }
            }
        };
        // A blocking copy waits for its own copy (launched by it, so after `s`).
        let own = self.launched.get(h as u32);
        let mut best: Option<u32> = own;
        for st in streams {
            if let Some(a) = self.last_launched_before(st, s) {
                if best.is_none_or(|b| acts.end_ns(a as usize) > acts.end_ns(b as usize)) {
                    best = Some(a);
                }
            }
        }
        let a = best?;
        let end = acts.end_ns(a as usize);
        // Work that ends after the call returned was not waited for (clock skew aside).
        (end <= e.saturating_add(1_000)).then_some(GatedSync {
            waited: end > s,
            start: s,
            end: e,
            activity: a,
            name: host.name[h],
            host: h as u32,
            kind: GateKind::Sync,
            own_ns: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Launched;

    /// A call's first activity in list order, found for calls in any word of the bits; calls
    /// that launched nothing, or past the events, have none.
    #[test]
    fn launched_finds_each_calls_first_activity() {
        let launches = [
            (5, 10),
            (200, 11),
            (5, 12),
            (63, 13),
            (64, 14),
            (0, 15),
            (200, 9),
        ];
        let launched = Launched::new(300, launches.into_iter());
        let want = |h: u32| launches.iter().find(|l| l.0 == h).map(|l| l.1);
        for h in 0..400 {
            assert_eq!(launched.get(h), want(h), "{h}");
        }
        assert_eq!(Launched::new(0, std::iter::empty()).get(0), None);
    }
}
