//! Launch calls that blocked on a full launch queue: one of the step model's waits.
//!
//! The driver holds a bounded number of launches a stream has not finished (the queue's depth,
//! `rules/replay.toml` `launch_queue_depth`; a stream's, as cuDNN's multi-stream grouped
//! convolutions show: 2,000 in flight over five streams, no call blocked). When the host runs that far ahead, a launch call
//! does not return until the GPU finishes work and frees a slot: its time is the GPU's, not the
//! host's. A call is taken as blocked when
//! - at least half the depth of launches was in flight when it started (launches with many
//!   arguments fill the queue sooner: HTA's sample traces saturate at 900-1022 on NVIDIA),
//! - it took longer than the same call takes when the queue is far from full (its unblocked
//!   cost: the median of that call's durations with less than a quarter of the depth in flight,
//!   else its 25th percentile), by more than half that cost and 2 µs, and
//! - some of its stream's GPU work ended while it was blocked: it waited for the one that
//!   ended last before it returned.

use crate::analysis::time::links::Links;
use crate::model::{HostKind, NameId, Trace};
use rustc_hash::FxHashMap as HashMap;

/// A launch call that blocked on the full launch queue: it returned at `end`, after
/// `activity` (the work that freed its slot) ended.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Blocked {
    pub thread: u32,
    pub start: i64,
    pub end: i64,
    pub activity: u32,
    pub name: NameId,
    /// The call's host event.
    pub host: u32,
    /// What the call costs when the queue is far from full.
    pub own_ns: i64,
}

/// The blocked launch calls of one input.
pub(crate) fn queued_launches(
    trace: &Trace,
    links: &Links,
    input: u32,
    depth: i64,
    is_sync: &dyn Fn(NameId) -> bool,
) -> Vec<Blocked> {
    let (acts, host) = (&trace.activities, &trace.host);
    // Each launch call of the input: (call, stream, the end of the last work it launched).
    let mut calls: Vec<(u32, (u32, u32), i64)> = (0..acts.len())
        .filter(|&a| acts.input[a] == input)
        .filter_map(|a| {
            let stream = (acts.device[a], acts.stream[a]);
            Some((links.launch[a]?, stream, acts.end_ns(a)))
        })
        .filter(|&(h, _, _)| {
            let h = h as usize;
            host.input[h] == input
                && matches!(host.kind[h], HostKind::Runtime | HostKind::Driver)
                && !is_sync(host.name[h])
        })
        .collect();
    if calls.len() < depth as usize / 2 {
        // Fewer launches than could ever fill half the queue.
        return Vec::new();
    }
    calls.sort_unstable_by_key(|c| (c.0, c.1, std::cmp::Reverse(c.2)));
    // A graph launch (one call, many activities) is one entry: its last work frees it.
    calls.dedup_by_key(|c| (c.0, c.1));
    let mut streams: Vec<(u32, u32)> = calls.iter().map(|c| c.1).collect();
    streams.sort_unstable();
    streams.dedup();
    let mut out = Vec::new();
    for stream in streams {
        let mine: Vec<(u32, i64)> = calls
            .iter()
            .filter(|c| c.1 == stream)
            .map(|c| (c.0, c.2))
            .collect();
        if mine.len() >= depth as usize / 2 {
            out.extend(on_stream(trace, input, stream, &mine, depth));
        }
    }
    out
}

/// The blocked calls among one stream's launch calls (`calls`: call, end of its work).
fn on_stream(
    trace: &Trace,
    input: u32,
    (device, stream): (u32, u32),
    calls: &[(u32, i64)],
    depth: i64,
) -> Vec<Blocked> {
    let (acts, host) = (&trace.activities, &trace.host);
    let mut starts: Vec<i64> = calls.iter().map(|&(h, _)| host.ts_ns[h as usize]).collect();
    let mut ends: Vec<i64> = calls.iter().map(|&(_, e)| e).collect();
    starts.sort_unstable();
    ends.sort_unstable();
    // Launches issued before `t` whose work had not finished by then.
    let in_flight = |t: i64| {
        let issued = starts.partition_point(|&s| s < t) as i64;
        let done = ends.partition_point(|&e| e <= t) as i64;
        issued - done
    };
    let flight: Vec<i64> = calls
        .iter()
        .map(|&(h, _)| in_flight(host.ts_ns[h as usize]))
        .collect();
    let unblocked = unblocked_costs(trace, calls, &flight, depth);
    // Every activity of the stream by end: what a blocked call returned after.
    let mut done: Vec<(i64, u32)> = (0..acts.len())
        .filter(|&a| acts.input[a] == input && acts.device[a] == device && acts.stream[a] == stream)
        .map(|a| (acts.end_ns(a), a as u32))
        .collect();
    done.sort_unstable();
    let mut out = Vec::new();
    for (k, &(h, _)) in calls.iter().enumerate() {
        let hi = h as usize;
        let (s, e) = (host.ts_ns[hi], host.end_ns(hi));
        let Some(&own) = unblocked.get(&host.name[hi]) else {
            continue;
        };
        if 2 * flight[k] < depth || e - s <= own + (own / 2).max(2_000) {
            continue;
        }
        let j = done.partition_point(|d| d.0 <= e);
        let Some(&(end, a)) = j.checked_sub(1).map(|j| &done[j]) else {
            continue;
        };
        if end <= s {
            continue;
        }
        out.push(Blocked {
            thread: host.thread[hi],
            start: s,
            end: e,
            activity: a,
            name: host.name[hi],
            host: h,
            own_ns: own,
        });
    }
    out
}

/// Each launch call name's cost when the queue is far from full: the median of its durations
/// with under a quarter of the depth in flight, else (the queue never emptied) its 25th
/// percentile.
fn unblocked_costs(
    trace: &Trace,
    calls: &[(u32, i64)],
    flight: &[i64],
    depth: i64,
) -> HashMap<NameId, i64> {
    let host = &trace.host;
    let mut free: HashMap<NameId, Vec<i64>> = HashMap::default();
    let mut all: HashMap<NameId, Vec<i64>> = HashMap::default();
    for (k, &(h, _)) in calls.iter().enumerate() {
        let (name, dur) = (host.name[h as usize], host.dur_ns.get(h as usize));
        all.entry(name).or_default().push(dur);
        if 4 * flight[k] < depth {
            free.entry(name).or_default().push(dur);
        }
    }
    all.into_iter()
        .map(|(name, mut durs)| {
            let (mut v, at) = match free.remove(&name) {
                Some(v) => (v, 2),
                None => (std::mem::take(&mut durs), 4),
            };
            v.sort_unstable();
            (name, v[v.len() / at])
        })
        .collect()
}
