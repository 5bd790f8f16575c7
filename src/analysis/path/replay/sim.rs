//! Running a step model forward: the host pieces in order, each activity when everything it
//! waited for is done, each synchronize when its work is.

use crate::analysis::path::replay::graph::{InputGraph, PieceKind};
use crate::model::Durations;

/// What a replay changes: per host piece its duration and whether a synchronize still waits;
/// per activity its duration, whether it is gone (fused into another), and whether a graph
/// replays it (no launch of its own: it follows its stream predecessor after `node_gap`).
#[derive(Clone, Debug)]
pub(crate) struct Edit {
    /// Per piece its duration, once a change rewrote any: until then each piece's measured
    /// duration less the profiler's cost per event in it (computed as read, so that a replay
    /// that changes only GPU work holds no copy of millions of pieces).
    host: Option<Durations>,
    /// The profiler's cost per event taken out of the pieces (0: as measured).
    per_event_ns: i64,
    pub waits: Vec<bool>,
    /// Per activity its duration, once a change rewrote any (until then as measured).
    dur: Option<Vec<i64>>,
    pub removed: Vec<bool>,
    pub graphed: Vec<bool>,
    pub node_gap: i64,
    /// The layout-sensitive kernels were re-rated for channels_last (once per replay).
    pub relaid: bool,
    /// The host's own work (not its waits) runs this many times as long as `host` says: the
    /// host slower (above 1) or faster than in the profiled run. Applied as the replay runs,
    /// so that a replay at another host speed needs no second copy of the edit.
    pub host_factor: f64,
}

impl Edit {
    /// No change: the step as measured.
    pub fn identity(g: &InputGraph) -> Edit {
        Edit {
            host: None,
            per_event_ns: 0,
            waits: (0..g.pieces.len())
                .map(|i| g.awaited(i).is_some())
                .collect(),
            dur: None,
            removed: vec![false; g.acts.len()],
            graphed: vec![false; g.acts.len()],
            node_gap: 0,
            relaid: false,
            host_factor: 1.0,
        }
    }
}

impl Edit {
    /// The step as it runs without the profiler: each piece of host work less the profiler's
    /// cost per event recorded inside it (never below a tenth of it: the work itself stays).
    pub fn unprofiled(g: &InputGraph, per_event_ns: i64) -> Edit {
        Edit {
            per_event_ns,
            ..Edit::identity(g)
        }
    }

    /// Piece `i`'s duration in this replay (before the host's speed).
    pub fn host(&self, g: &InputGraph, i: usize) -> i64 {
        match &self.host {
            Some(host) => host.get(i),
            None => unprofiled_ns(g, i, self.per_event_ns),
        }
    }

    /// Activity `k`'s duration in this replay.
    pub fn dur(&self, g: &InputGraph, k: usize) -> i64 {
        match &self.dur {
            Some(dur) => dur[k],
            None => g.acts[k].dur,
        }
    }

    /// Sets activity `k`'s duration (every activity's is kept from the first change on).
    pub fn set_dur(&mut self, g: &InputGraph, k: usize, ns: i64) {
        self.dur
            .get_or_insert_with(|| g.acts.iter().map(|a| a.dur).collect())[k] = ns;
    }

    /// Sets piece `i`'s duration (every piece's is kept from the first change on).
    pub fn set_host(&mut self, g: &InputGraph, i: usize, ns: i64) {
        let per_event_ns = self.per_event_ns;
        self.host
            .get_or_insert_with(|| host_durations(g, per_event_ns))
            .set(i, ns);
    }
}

/// Every piece's duration in this replay, 4 B each (a replay holds them while it runs, one
/// replay per core); the few that do not fit (host gaps of seconds) beside.
fn host_durations(g: &InputGraph, per_event_ns: i64) -> Durations {
    let mut out = Durations::default();
    out.reserve_exact(g.pieces.len());
    for i in 0..g.pieces.len() {
        out.push(unprofiled_ns(g, i, per_event_ns));
    }
    out
}

/// A piece's duration less the profiler's cost per event recorded inside it (never below a
/// tenth of it: the work itself stays); waits and gaps as measured.
fn unprofiled_ns(g: &InputGraph, i: usize, per_event_ns: i64) -> i64 {
    let (p, d) = (&g.pieces[i], g.piece_ns(i));
    let kept = matches!(
        p.kind,
        PieceKind::Dispatch | PieceKind::Host | PieceKind::Loading
    );
    if kept && p.events() > 0 && per_event_ns != 0 {
        (d - per_event_ns * p.events() as i64).max(d / 10)
    } else {
        d
    }
}

impl Edit {
    /// Piece `i`'s replayed duration: its own work scaled by the host's speed, its waits not.
    fn host_ns(&self, g: &InputGraph, i: usize) -> i64 {
        let own = matches!(
            g.pieces[i].kind,
            PieceKind::Dispatch | PieceKind::Host | PieceKind::Loading | PieceKind::Gap { .. }
        );
        if own && self.host_factor != 1.0 {
            crate::analysis::numbers::round_to_i64(self.host(g, i) as f64 * self.host_factor)
        } else {
            self.host(g, i)
        }
    }
}

/// What a replay keeps besides each span's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// The steps' times only: what pricing a change reads. A replay runs once per change
    /// and host speed, several at once: a timeline per piece would cost tens of MB each on a
    /// large trace.
    Steps,
    /// The replayed timeline too: what the walk of its critical path reads.
    Timeline,
}

/// A replay's result: each span's time, and (with [`Keep::Timeline`]) the replayed timeline
/// the walk of its critical path reads.
pub(crate) struct SimOut {
    pub step_ns: Vec<i64>,
    /// Per span: where it starts and ends in the replay, and whether the host ends it.
    pub span_at: Vec<(i64, i64, bool)>,
    /// Per activity: its replayed issue (timeline only) and end.
    pub issue: Vec<i64>,
    pub end: Vec<i64>,
    /// Per piece: its replayed start and end (timeline only).
    pub piece_start: Vec<i64>,
    pub piece_end: Vec<i64>,
}

impl SimOut {
    /// Where activity `a` ran in the replay.
    pub fn start_of(&self, g: &InputGraph, e: &Edit, a: usize) -> i64 {
        self.end[a] - if e.removed[a] { 0 } else { e.dur(g, a) }
    }
}

/// `x` of `d` scaled to `d2` (a point inside a piece whose duration changed): exact, in i128
/// only where the product leaves i64 (a 128-bit division was a tenth of a replay).
fn scale(x: i64, d2: i64, d: i64) -> i64 {
    if d <= 0 {
        return 0;
    }
    if d2 == d {
        return x;
    }
    match x.checked_mul(d2) {
        Some(product) => product / d,
        None => ((x as i128 * d2 as i128) / d as i128) as i64,
    }
}

/// The replayed start and end of the pieces a replay reads back: every piece, or only those
/// holding a span's boundary (`only`, sorted).
struct PieceTimes {
    only: Option<Vec<usize>>,
    next: usize,
    start: Vec<i64>,
    end: Vec<i64>,
}

impl PieceTimes {
    fn new(g: &InputGraph, keep: Keep) -> PieceTimes {
        let only = (keep == Keep::Steps).then(|| {
            let mut only: Vec<usize> = g
                .spans
                .iter()
                .flat_map(|s| [s.start, s.end, s.cpu_end])
                .filter_map(|t| g.pieces.partition_point(|p| p.start <= t).checked_sub(1))
                .collect();
            only.sort_unstable();
            only.dedup();
            only
        });
        let n = only.as_ref().map_or(g.pieces.len(), Vec::len);
        PieceTimes {
            only,
            next: 0,
            start: Vec::with_capacity(n),
            end: Vec::with_capacity(n),
        }
    }

    fn record(&mut self, i: usize, start: i64, end: i64) {
        if let Some(only) = &self.only {
            if only.get(self.next) != Some(&i) {
                return;
            }
            self.next += 1;
        }
        self.start.push(start);
        self.end.push(end);
    }

    /// Piece `i`'s replayed start and end (a piece recorded: every piece holding a boundary is).
    fn get(&self, i: usize) -> (i64, i64) {
        let k = match &self.only {
            None => i,
            Some(only) => only.binary_search(&i).unwrap_or(0),
        };
        (self.start[k], self.end[k])
    }
}

/// Runs the model with `e` applied, keeping what `keep` says.
pub(crate) fn simulate(g: &InputGraph, e: &Edit, keep: Keep) -> SimOut {
    let n = g.acts.len();
    let mut end = vec![i64::MIN; n];
    let first = g.pieces.first().map_or(0, |p| p.start);
    let mut h = first;
    let mut times = PieceTimes::new(g, keep);
    let mut issued = match keep {
        Keep::Timeline => vec![i64::MIN; n],
        Keep::Steps => Vec::new(),
    };
    let mut note_issue = |j: usize, issue: i64| {
        if let Some(x) = issued.get_mut(j) {
            *x = issue;
        }
    };
    let mut j = 0;
    for (i, p) in g.pieces.iter().enumerate() {
        let s0 = h;
        let p_end = g.piece_end(i);
        let (d, d2) = (p_end - p.start, e.host_ns(g, i));
        while j < n && g.acts[j].issue < p_end {
            let issue = if g.acts[j].issue < p.start {
                g.acts[j].issue.min(s0)
            } else {
                s0 + scale(g.acts[j].issue - p.start, d2, d)
            };
            note_issue(j, issue);
            run(g, e, &mut end, j, issue);
            j += 1;
        }
        h = match g.awaited(i) {
            // It returns once the work it waited for is done, and no sooner than its own cost.
            Some((a, ret, own)) if e.waits[i] => (s0.max(done(g, &end, a)) + ret).max(s0 + own),
            _ => s0 + d2,
        };
        times.record(i, s0, h);
    }
    let last_end = if g.pieces.is_empty() { first } else { g.end };
    while j < n {
        let issue = h + (g.acts[j].issue - last_end).max(0);
        note_issue(j, issue);
        run(g, e, &mut end, j, issue);
        j += 1;
    }
    // Each span's end: its host range's end or its last activity's, whichever is later.
    let warp = |t: i64| -> i64 {
        let k = g.pieces.partition_point(|p| p.start <= t);
        if k == 0 {
            return t;
        }
        let (p_start, p_end) = (g.pieces[k - 1].start, g.piece_end(k - 1));
        let (s, e) = times.get(k - 1);
        if t >= p_end {
            return e + (t - p_end);
        }
        s + scale(t - p_start, e - s, p_end - p_start)
    };
    let mut last = vec![i64::MIN; g.spans.len()];
    for (k, a) in g.acts.iter().enumerate() {
        if let Some(s) = a.span.get() {
            let x = &mut last[s as usize];
            *x = (*x).max(end[k]);
        }
    }
    let mut step_ns = Vec::with_capacity(g.spans.len());
    let mut span_at = Vec::with_capacity(g.spans.len());
    let mut prev_end = i64::MIN;
    for (k, span) in g.spans.iter().enumerate() {
        let host_end = if span.number.is_some() {
            warp(span.cpu_end)
        } else {
            i64::MIN
        };
        let mut e_k = host_end.max(last[k]);
        if e_k == i64::MIN {
            e_k = warp(span.end);
        }
        let s_k = if span.adjacent && prev_end != i64::MIN {
            prev_end
        } else {
            warp(span.start)
        };
        let e_k = e_k.max(s_k);
        step_ns.push(e_k - s_k);
        span_at.push((s_k, e_k, host_end >= last[k]));
        prev_end = e_k;
    }
    let keep_timeline = keep == Keep::Timeline;
    SimOut {
        step_ns,
        span_at,
        issue: issued,
        // Pricing reads the steps only: the activities' ends go with the replay.
        end: if keep_timeline { end } else { Vec::new() },
        piece_start: if keep_timeline {
            times.start
        } else {
            Vec::new()
        },
        piece_end: if keep_timeline { times.end } else { Vec::new() },
    }
}

/// The simulated end of activity `a`, or its measured end before it runs.
fn done(g: &InputGraph, end: &[i64], a: u32) -> i64 {
    match end[a as usize] {
        i64::MIN => g.acts[a as usize].start + g.acts[a as usize].dur,
        e => e,
    }
}

/// Runs activity `j`, issued at `issue`.
fn run(g: &InputGraph, e: &Edit, end: &mut [i64], j: usize, issue: i64) {
    let a = &g.acts[j];
    let prev = a.prev.get().map_or(i64::MIN, |p| done(g, end, p));
    let dep = a.dep.get().map_or(i64::MIN, |d| done(g, end, d));
    let held = prev.max(dep).max(a.after);
    let start = if held == i64::MIN {
        issue + if e.graphed[j] { 0 } else { a.lat }
    } else if e.removed[j] {
        held
    } else if e.graphed[j] {
        let after_prev = if prev == i64::MIN {
            prev
        } else {
            prev + e.node_gap
        };
        after_prev.max(dep).max(a.after).max(issue)
    } else {
        (held + a.gap).max(issue + a.lat)
    };
    end[j] = start + if e.removed[j] { 0 } else { e.dur(g, j) };
}

#[cfg(test)]
mod tests {
    use super::scale;

    /// The short ways (an unchanged piece, a product that fits i64) give the 128-bit result.
    #[test]
    fn scaling_is_exact_either_way() {
        let wide = |x: i64, d2: i64, d: i64| ((x as i128 * d2 as i128) / d as i128) as i64;
        let big = i64::MAX / 3;
        for (x, d2, d) in [
            (0, 5, 7),
            (3, 5, 7),
            (-3, 5, 7),
            (6, 7, 7),
            (1_000_000_007, 2_000_000_011, 3_000_000_019),
            (big, 5, 7),
            (big, big, big - 1),
            (-big, big, 3),
        ] {
            assert_eq!(scale(x, d2, d), wide(x, d2, d), "{x} {d2} {d}");
        }
        assert_eq!(scale(5, 3, 0), 0);
    }
}
