//! The replayed step's critical path: the walk of `analysis::path` over a replay's timeline,
//! backwards from each step's end along what each moment waited for last, labeled the same way.

use crate::analysis::path::hidden::LATE_NS;
use crate::analysis::path::replay::graph::{InputGraph, PieceKind};
use crate::analysis::path::replay::sim::{Edit, SimOut};
use crate::analysis::path::Label;
use crate::classify::Bucket;
use std::collections::BTreeMap;

/// Time on a replayed step's path, by label (and bucket, for GPU work).
pub(crate) type Labels = BTreeMap<(Label, Option<Bucket>), i64>;

/// A replayed step's path: its time by label, and each GPU activity's own time on it (by
/// index into the trace's activities, with its label).
#[derive(Default)]
pub(crate) struct Trail {
    pub labels: Labels,
    pub kernels: BTreeMap<(u32, Label), i64>,
}

enum At {
    Gpu(usize, i64),
    Host(i64),
}

/// Each span's path through the replay.
pub(crate) fn walk(g: &InputGraph, e: &Edit, out: &SimOut) -> Vec<Trail> {
    (0..g.spans.len())
        .map(|k| walk_span(g, e, out, k))
        .collect()
}

fn add(l: &mut Labels, (s, t): (i64, i64), label: Label, bucket: Option<Bucket>, floor: i64) {
    let ns = t - s.max(floor);
    if ns > 0 {
        *l.entry((label, bucket)).or_insert(0) += ns;
    }
}

fn walk_span(g: &InputGraph, e: &Edit, out: &SimOut, k: usize) -> Trail {
    let (s_k, e_k, by_host) = out.span_at[k];
    let mut trail = Trail::default();
    let last = g.span_acts.of_span(k).max_by_key(|&a| (out.end[a], a));
    let mut at = match last {
        Some(a) if !by_host => At::Gpu(a, e_k),
        _ => At::Host(e_k),
    };
    // Every move goes back in time: a bound on moves guards against a cycle.
    let mut moves = 2 * (g.acts.len() + g.pieces.len()) + 16;
    while moves > 0 {
        moves -= 1;
        at = match at {
            At::Gpu(a, t) => {
                let Some(next) = gpu(g, e, out, (a, t), s_k, &mut trail) else {
                    break;
                };
                next
            }
            At::Host(t) => {
                let Some(next) = host(g, e, out, t, s_k, &mut trail.labels) else {
                    break;
                };
                next
            }
        };
    }
    trail
}

/// On activity `a` up to `t`: its own time, then what held it last.
fn gpu(
    g: &InputGraph,
    e: &Edit,
    out: &SimOut,
    (a, t): (usize, i64),
    floor: i64,
    trail: &mut Trail,
) -> Option<At> {
    let act = &g.acts[a];
    let start = out.start_of(g, e, a).min(t);
    let label = match act.bucket {
        Bucket::Communication => (Label::Communication, None),
        b => (Label::GpuCompute, Some(b)),
    };
    let own = out.end[a].min(t) - start.max(floor);
    if own > 0 {
        *trail.kernels.entry((act.id, label.0)).or_insert(0) += own;
    }
    let l = &mut trail.labels;
    add(l, (start, out.end[a].min(t)), label.0, label.1, floor);
    if start <= floor {
        return None;
    }
    let done = |x: Option<u32>| x.map(|x| (x as usize, out.end[x as usize]));
    // The latest-arriving of: the stream predecessor, the waited stream, the launch.
    let mut best: Option<(i64, At, Label)> = None;
    let mut consider = |arrival: i64, to: At, label: Label| {
        if best.as_ref().is_none_or(|b| arrival > b.0) {
            best = Some((arrival, to, label));
        }
    };
    if let Some((p, end)) = done(act.prev.get()) {
        // The GPU between two kernels of a stream: its own time where the launch was in before
        // the predecessor ended, dispatch where it came later (as the measured path has it).
        let queued =
            e.removed[a] || (out.issue[a].saturating_add(act.lat) <= end && start - end <= LATE_NS);
        let label = if queued { label.0 } else { Label::Launch };
        consider(end.min(start), At::Gpu(p, end.min(start)), label);
    }
    if let Some((d, end)) = done(act.dep.get()) {
        consider(end.min(start), At::Gpu(d, end.min(start)), Label::Sync);
    }
    if !e.removed[a] {
        let issued = out.issue[a].min(start);
        consider(issued, At::Host(issued), Label::Launch);
    }
    let (arrival, to, gap) = best?;
    let bucket = if gap == Label::GpuCompute {
        label.1
    } else {
        None
    };
    add(l, (arrival, start), gap, bucket, floor);
    (arrival > floor).then_some(to)
}

/// On the host at `t`: back through the pieces, to a synchronize that waited for the GPU (then
/// onto that work).
fn host(g: &InputGraph, e: &Edit, out: &SimOut, t: i64, floor: i64, l: &mut Labels) -> Option<At> {
    let mut i = out.piece_start.partition_point(|&s| s < t);
    let mut t = t;
    while i > 0 {
        i -= 1;
        let (s, end) = (out.piece_start[i], out.piece_end[i].min(t));
        let p = &g.pieces[i];
        let waited = g
            .awaited(i)
            .filter(|_| e.waits[i])
            .map(|(a, _, _)| a as usize);
        if let Some(a) = waited {
            let done = out.end[a];
            if done > s && done < end {
                // A blocked launch returning is dispatch; a synchronize (or an allocator call
                // that waited) returning is a sync.
                let label = match p.kind {
                    PieceKind::Queued(w) if !g.waits[w as usize].alloc => Label::Launch,
                    _ => Label::Sync,
                };
                add(l, (done, end), label, None, floor);
                return (done > floor).then_some(At::Gpu(a, done));
            }
        }
        let label = match p.kind {
            PieceKind::Dispatch | PieceKind::Gap { long: false } => Label::Launch,
            PieceKind::Loading => Label::DataLoading,
            PieceKind::Sync(_) => Label::Sync,
            PieceKind::Queued(w) if g.waits[w as usize].alloc => Label::Host,
            PieceKind::Queued(_) => Label::Launch,
            PieceKind::Host | PieceKind::Gap { long: true } => Label::Host,
        };
        add(l, (s, end), label, None, floor);
        t = s;
        if t <= floor {
            return None;
        }
    }
    // Before the first piece: time the host model does not cover.
    add(l, (floor, t), Label::Host, None, floor);
    None
}
