//! Cross-stream waits the trace does not record (inside cuDNN's multi-stream algorithms, or a
//! library's own events): an activity that started long after everything the model knows it
//! waited for (its stream predecessor, a recorded wait, its launch call) waited for the work on
//! another stream of its device that ended just before it started. Without it, a GPU-bound
//! step's path leaves the GPU at every such activity for its launch, long before.

use crate::analysis::time::links::Links;
use crate::model::Trace;
use rustc_hash::FxHashMap as HashMap;

/// Later than this after everything known, an activity waited for something else: a few
/// launch latencies (5-10 µs on H100/H200) past the latest known arrival.
pub(crate) const LATE_NS: i64 = 30_000;
/// How far before its start the work it waited for may have ended.
const REACH_NS: i64 = 100_000;

/// Adds to `waits` (activity → the one on another stream it waited for) the waits the trace
/// does not record, over one input's `streams` (activities by start) keyed by (device, stream).
/// Where no other stream's work ended just before a late activity but some was running when it
/// started (a kernel whose blocks held the SMs), `held` gets that one: the GPU was busy, and
/// the path goes on there (the replays, which would delay the activity to its end, leave it).
pub(crate) fn add_hidden_waits(
    trace: &Trace,
    links: &Links,
    (streams, keys): (&[Vec<u32>], &[(u32, u32)]),
    (waits, held): (&mut HashMap<u32, u32>, &mut HashMap<u32, u32>),
) {
    let acts = &trace.activities;
    // Per device, every activity's (end, stream index, activity), by end.
    let mut ends: HashMap<u32, Vec<(i64, u32, u32)>> = HashMap::default();
    for (s, list) in streams.iter().enumerate() {
        let device = keys[s].0;
        let v = ends.entry(device).or_default();
        v.extend(list.iter().map(|&a| (acts.end_ns(a as usize), s as u32, a)));
    }
    if ends.values().all(|v| v.len() < 2) || keys.len() < 2 {
        return;
    }
    for v in ends.values_mut() {
        v.sort_unstable();
    }
    let mut found = Vec::new();
    for (s, list) in streams.iter().enumerate() {
        let device_ends = &ends[&keys[s].0];
        for (k, &a) in list.iter().enumerate() {
            let start = acts.ts_ns[a as usize];
            let prev = k
                .checked_sub(1)
                .map_or(i64::MIN, |p| acts.end_ns(list[p] as usize));
            let waited = waits.get(&a).map_or(i64::MIN, |&w| acts.end_ns(w as usize));
            let known = prev.max(waited).max(links.launch_ts(trace, a as usize));
            if start.saturating_sub(known) <= LATE_NS {
                continue;
            }
            // The last work on another stream that ended by its start, after what it knew,
            // launched before it (a stream waits only for work already issued).
            let issued = links.launch_ts(trace, a as usize);
            let j = device_ends.partition_point(|e| e.0 <= start);
            let floor = known.max(start - REACH_NS);
            let other = device_ends[..j]
                .iter()
                .rev()
                .take_while(|e| e.0 >= floor)
                .find(|e| e.1 != s as u32 && links.launch_ts(trace, e.2 as usize) <= issued);
            if let Some(&(_, _, x)) = other {
                found.push((a, x));
            } else if let Some(x) = running_at(trace, links, (streams, keys), (s, start, issued)) {
                held.insert(a, x);
            }
        }
    }
    waits.extend(found);
}

/// The work on another stream of stream `s`'s device, launched by `issued`, that started last
/// before `start` and was still running then.
fn running_at(
    trace: &Trace,
    links: &Links,
    (streams, keys): (&[Vec<u32>], &[(u32, u32)]),
    (s, start, issued): (usize, i64, i64),
) -> Option<u32> {
    let acts = &trace.activities;
    let mut best: Option<(i64, u32)> = None;
    for (o, list) in streams.iter().enumerate() {
        if o == s || keys[o].0 != keys[s].0 {
            continue;
        }
        let k = list.partition_point(|&x| acts.ts_ns[x as usize] < start);
        let Some(&x) = k.checked_sub(1).map(|k| &list[k]) else {
            continue;
        };
        let xi = x as usize;
        let running = acts.end_ns(xi) > start && links.launch_ts(trace, xi) <= issued;
        if running && best.is_none_or(|b| acts.ts_ns[xi] > b.0) {
            best = Some((acts.ts_ns[xi], x));
        }
    }
    best.map(|b| b.1)
}
