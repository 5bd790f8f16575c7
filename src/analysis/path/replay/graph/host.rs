//! The step model's host side: each thread's work and the gaps between as one ordered sequence
//! of pieces, the synchronizes' and blocked launches' waits beside them, and the profiled events
//! in each piece.

use super::{Act, Piece, PieceKind, Wait};
use crate::analysis::context::Context;
use crate::analysis::path::model::{GateKind, GatedSync, InputModel};
use crate::analysis::path::replay::constants::Constants;
use crate::analysis::path::Label;
use crate::analysis::time::links::is_free_call;
use crate::analysis::time::order::{partition_point_near, sort_mostly_sorted_by_key};
use crate::model::HostKind;
use rustc_hash::FxHashMap as HashMap;
/// The host's pieces over `[start, end)`: the main thread's work, the other threads' where the
/// main thread did nothing, and gaps between; `mark` sets each piece's span and context.
pub(super) fn pieces(
    ctx: &Context,
    model: &InputModel,
    (start, end): (i64, i64),
    constants: &Constants,
    mark: &dyn Fn(&mut Piece, i64),
    waits: &mut Vec<Wait>,
) -> Vec<Piece> {
    let trace = ctx.trace;
    let threshold = ctx.opts.dispatch_threshold_ns;
    // Every thread's gated syncs by (thread, start).
    let mut gated: HashMap<(u32, i64), GatedSync> = HashMap::default();
    for (&t, tm) in &model.threads {
        for g in tm.gated.iter().filter(|g| g.kind == GateKind::Sync) {
            gated.insert((t, g.start), *g);
        }
    }
    let data_dependent = DataDependent::new(ctx, model, &constants.unremovable_sync_ops.value);
    let mut threads: Vec<u32> = model.threads.keys().copied().collect();
    threads.sort_unstable();
    // The main thread first: its segments are the base; others fill its gaps.
    threads.sort_by_key(|&t| Some(t) != model.main);
    let mut covered: Vec<(i64, i64)> = Vec::new();
    // Room for every segment (the threads' segments rarely split around the main thread's).
    let mut raw: Vec<Seg> = Vec::with_capacity(model.threads.values().map(|t| t.segs.len()).sum());
    let mut left = Vec::new();
    for t in threads {
        let mut mine = Vec::new();
        for seg in &model.threads[&t].segs {
            let (s, e) = (seg.start.max(start), seg.end.min(end));
            if e <= s {
                continue;
            }
            subtract((s, e), &covered, &mut left);
            for &(s, e) in &left {
                raw.push(Seg {
                    start: s,
                    end: e,
                    thread: t,
                    label: seg.label,
                });
                mine.push((s, e));
            }
        }
        covered.extend(mine);
        covered.sort_unstable();
    }
    drop(covered);
    // The main thread's segments, then each other thread's in order: a few runs. (Disjoint
    // and not empty, no two start together.)
    sort_mostly_sorted_by_key(&mut raw, |s| (s.start, s.end));
    // Counted first: the pieces are kept for the replays (tens of MB on a 2 GB trace).
    let mut out: Vec<Piece> = Vec::with_capacity(piece_count(&raw, (start, end)));
    let mut cur = start;
    let push = |out: &mut Vec<Piece>, mut p: Piece, end: i64| {
        mark(&mut p, end);
        out.push(p);
    };
    for seg in raw {
        let t = seg.thread;
        if seg.end <= cur {
            continue;
        }
        let s = seg.start.max(cur);
        if s > cur {
            let gap = Piece::new(
                cur,
                PieceKind::Gap {
                    long: s - cur > threshold,
                },
            );
            push(&mut out, gap, s);
        }
        let kind = match seg.label {
            Label::Launch => PieceKind::Dispatch,
            Label::DataLoading => PieceKind::Loading,
            Label::Sync => PieceKind::Sync(wait_index(
                waits,
                match gated.get(&(t, seg.start)) {
                    Some(g) if g.waited && s == seg.start => {
                        let acts = &trace.activities;
                        let done = acts.end_ns(g.activity as usize);
                        let name = trace.names.get(g.name);
                        let upload = trace
                            .names
                            .get(acts.name[g.activity as usize])
                            .contains("HtoD");
                        Wait {
                            awaits: Some(g.activity),
                            ret: (g.end - done.max(g.start)).max(0),
                            removable: !upload
                                && !is_free_call(name)
                                && !data_dependent.contains(g.host),
                            upload,
                            own_ns: 0,
                            alloc: false,
                        }
                    }
                    _ => Wait {
                        awaits: None,
                        ret: 0,
                        removable: false,
                        upload: false,
                        own_ns: 0,
                        alloc: false,
                    },
                },
            )),
            _ => PieceKind::Host,
        };
        push(&mut out, Piece::new(s, kind), seg.end);
        cur = seg.end;
    }
    if cur < end {
        let gap = Piece::new(
            cur,
            PieceKind::Gap {
                long: end - cur > threshold,
            },
        );
        push(&mut out, gap, end);
    }
    debug_assert_eq!(out.len(), out.capacity());
    out
}

/// A thread's segment where no thread before it in the merge order ran: 24 B, a million or
/// more on a 2 GB trace.
#[derive(Clone, Copy)]
struct Seg {
    start: i64,
    end: i64,
    thread: u32,
    label: Label,
}

/// How many pieces `pieces` makes of the sorted segments: each segment past the last one's
/// end, and a gap before each that starts later and after the last.
fn piece_count(raw: &[Seg], (start, end): (i64, i64)) -> usize {
    let (mut n, mut cur) = (0, start);
    for seg in raw {
        if seg.end <= cur {
            continue;
        }
        n += 1 + usize::from(seg.start > cur);
        cur = seg.end;
    }
    n + usize::from(cur < end)
}

/// `[s, e)` less the sorted spans of `covered` (which may overlap).
fn subtract((s, e): (i64, i64), covered: &[(i64, i64)], out: &mut Vec<(i64, i64)>) {
    out.clear();
    let mut cur = s;
    let k = covered.partition_point(|c| c.0 < s);
    // A span starting before `s` may still cover it.
    let from = k.saturating_sub(1);
    for &(a, b) in &covered[from..] {
        if a >= e {
            break;
        }
        if b <= cur {
            continue;
        }
        if a > cur {
            out.push((cur, a.min(e)));
        }
        cur = cur.max(b);
        if cur >= e {
            break;
        }
    }
    if cur < e {
        out.push((cur, e));
    }
}

/// The synchronizes inside ops whose output size is data (`nonzero` and kin): a step cannot
/// lose them (`rules/replay.toml` `unremovable_sync_ops`).
struct DataDependent {
    inside: rustc_hash::FxHashSet<u32>,
}

impl DataDependent {
    fn new(ctx: &Context, model: &InputModel, patterns: &[String]) -> DataDependent {
        let trace = ctx.trace;
        let host = &trace.host;
        let mut inside = rustc_hash::FxHashSet::default();
        for (&t, tm) in &model.threads {
            if tm.gated.is_empty() {
                continue;
            }
            // The thread's ops by start.
            let mut ops: Vec<u32> = (0..host.len() as u32)
                .filter(|&h| {
                    host.thread[h as usize] == t && host.kind[h as usize] == HostKind::CpuOp
                })
                .collect();
            sort_mostly_sorted_by_key(&mut ops, |h| (host.ts_ns[h as usize], h));
            for g in tm.gated.iter().filter(|g| g.kind == GateKind::Sync) {
                let k = ops.partition_point(|&h| host.ts_ns[h as usize] <= g.start);
                let enclosing = ops[..k].iter().rev().take(64).any(|&h| {
                    host.end_ns(h as usize) >= g.end
                        && patterns
                            .iter()
                            .any(|p| trace.names.get(host.name[h as usize]).contains(p.as_str()))
                });
                if enclosing {
                    inside.insert(g.host);
                }
            }
        }
        DataDependent { inside }
    }
    fn contains(&self, host: u32) -> bool {
        self.inside.contains(&host)
    }
}

/// `w` appended to the waits: its index.
fn wait_index(waits: &mut Vec<Wait>, w: Wait) -> u32 {
    waits.push(w);
    (waits.len() - 1) as u32
}

/// A launch call that blocked on the full launch queue, or an allocator call that waited (the
/// dependency model's waits,
/// `analysis::path::queue`): its span, the activity it returned after and its own cost.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Queued {
    pub start: i64,
    pub end: i64,
    /// The activity (a trace index, then local) whose end freed its slot.
    pub awaits: Option<u32>,
    pub own_ns: i64,
    /// An allocator call (painted host work), not a launch (dispatch).
    pub alloc: bool,
}

/// The model's blocked launches and allocator calls that waited, by end.
pub(super) fn queued(model: &InputModel) -> Vec<Queued> {
    let mut out: Vec<Queued> = model
        .threads
        .values()
        .flat_map(|tm| {
            tm.gated
                .iter()
                .filter(|g| matches!(g.kind, GateKind::Queue | GateKind::Alloc))
        })
        .map(|g| Queued {
            start: g.start,
            end: g.end,
            awaits: Some(g.activity),
            own_ns: g.own_ns,
            alloc: g.kind == GateKind::Alloc,
        })
        .collect();
    out.sort_unstable_by_key(|q| (q.end, q.start));
    out
}

/// The blocked launches (`queued`, by end, activities local) split out of the host pieces: the
/// part of each call in the piece where it returned becomes a [`PieceKind::Queued`] piece that
/// waits for the activity that freed its slot. A call that began in an earlier piece (another
/// thread's work painted over its start) keeps that part as it was.
pub(super) fn split_queued(
    (pieces, pieces_end): (&mut Vec<Piece>, i64),
    (acts, queued): (&[Act], &[Queued]),
    waits: &mut Vec<Wait>,
) {
    if queued.is_empty() {
        return;
    }
    // The pieces a split piece becomes, by piece: few, so the millions of others move in
    // place rather than into a second copy of the list.
    let mut splits: Vec<(usize, Vec<Piece>)> = Vec::new();
    let mut b = 0;
    for (i, &p) in pieces.iter().enumerate() {
        let p_end = super::piece_end(pieces, i, pieces_end);
        let mut cur = p.start;
        let mut parts = Vec::new();
        // The calls that return inside this piece.
        while b < queued.len() && queued[b].end <= p_end {
            let q = queued[b];
            b += 1;
            let s = q.start.max(cur);
            let splittable = match p.kind {
                PieceKind::Dispatch | PieceKind::Gap { long: false } => true,
                PieceKind::Host => q.alloc,
                _ => false,
            };
            let Some(a) = q
                .awaits
                .filter(|_| splittable && s < q.end && q.end > p.start)
            else {
                continue;
            };
            if s > cur {
                parts.push(Piece { start: cur, ..p });
            }
            let done = super::act_end(acts, a);
            let wait = Wait {
                awaits: Some(a),
                ret: (q.end - done.max(s)).max(0),
                removable: false,
                upload: false,
                own_ns: q.own_ns.min(q.end - s),
                alloc: q.alloc,
            };
            parts.push(Piece {
                start: s,
                kind: PieceKind::Queued(wait_index(waits, wait)),
                ..p
            });
            cur = q.end;
        }
        if parts.is_empty() {
            continue;
        }
        if cur < p_end {
            parts.push(Piece { start: cur, ..p });
        }
        splits.push((i, parts));
    }
    expand_in_place(pieces, splits);
}

/// Each piece `i` of `splits` (by index) replaced by its parts, the others moved back in place.
fn expand_in_place(pieces: &mut Vec<Piece>, splits: Vec<(usize, Vec<Piece>)>) {
    let Some((_, filler)) = splits.first() else {
        return;
    };
    let filler = filler[0];
    let extra: usize = splits.iter().map(|(_, parts)| parts.len() - 1).sum();
    let mut read = pieces.len();
    pieces.reserve_exact(extra);
    pieces.resize(read + extra, filler);
    let mut write = pieces.len();
    for (i, parts) in splits.into_iter().rev() {
        let after = read - (i + 1);
        pieces.copy_within(i + 1..read, write - after);
        write -= after;
        for part in parts.into_iter().rev() {
            write -= 1;
            pieces[write] = part;
        }
        read = i;
    }
    debug_assert_eq!(read, write);
}

/// How many profiled host events (ops, runtime and driver calls) start inside each piece: the
/// profiler's own cost grows with them. The pieces are sorted and contiguous: each event falls
/// in at most one, found by binary search (no list of millions of starts to sort).
pub(super) fn count_events(ctx: &Context, input: u32, (pieces, end): (&mut [Piece], i64)) {
    let host = &ctx.trace.host;
    // Host events come mostly in time order (per thread): each search starts where the last
    // ended, not over all the pieces (a binary search over them cost ~60 ns an event).
    let mut after = 0;
    for h in 0..host.len() {
        if host.input[h] != input
            || !matches!(
                host.kind[h],
                HostKind::CpuOp | HostKind::Runtime | HostKind::Driver
            )
        {
            continue;
        }
        let t = host.ts_ns[h];
        after = partition_point_near(pieces, after, |p| p.start <= t);
        let Some(k) = after.checked_sub(1) else {
            continue;
        };
        let p_end = super::piece_end(pieces, k, end);
        let p = &mut pieces[k];
        if t < p_end && !matches!(p.kind, PieceKind::Gap { .. }) {
            p.count_event();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{expand_in_place, Piece, PieceKind};

    /// Splitting pieces in place gives what building a new list would.
    #[test]
    fn pieces_expand_in_place_as_into_a_new_list() {
        let piece = |start: i64| Piece::new(start, PieceKind::Host);
        let cases: [&[usize]; 5] = [&[], &[0], &[4], &[1, 2], &[0, 2, 4]];
        for split in cases {
            let mut pieces: Vec<Piece> = (0..5).map(|k| piece(10 * k)).collect();
            let splits: Vec<(usize, Vec<Piece>)> = split
                .iter()
                .map(|&i| (i, (0..3).map(|k| piece(10 * i as i64 + k + 100)).collect()))
                .collect();
            let mut expected = Vec::new();
            for (i, &p) in pieces.iter().enumerate() {
                match splits.iter().find(|(k, _)| *k == i) {
                    Some((_, parts)) => expected.extend(parts.iter().map(|p| p.start)),
                    None => expected.push(p.start),
                }
            }
            expand_in_place(&mut pieces, splits);
            let got: Vec<i64> = pieces.iter().map(|p| p.start).collect();
            assert_eq!(got, expected, "{split:?}");
        }
    }
}
