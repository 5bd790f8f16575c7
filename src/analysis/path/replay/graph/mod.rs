//! The step model a replay runs: per input, its host work as one ordered sequence of pieces
//! (what the threads did, and the gaps between), and its GPU activities with what each waited
//! for, all on the trace's clock.

use crate::analysis::context::Context;
use crate::analysis::path::model::{ActivitySlots, InputModel};
use crate::analysis::path::replay::constants::Constants;
use crate::classify::Bucket;
use crate::model::HostKind;

mod host;

use host::{count_events, pieces, split_queued};

/// A step of the input (or, without steps, its window on one device).
#[derive(Clone, Debug)]
pub(crate) struct Span {
    pub number: Option<u64>,
    /// Its window as the analysis measures it.
    pub start: i64,
    pub end: i64,
    /// Its host range (`ProfilerStep#N`).
    pub cpu_start: i64,
    pub cpu_end: i64,
    /// Whether it follows the previous span (consecutive steps; a selection may skip some).
    pub adjacent: bool,
    /// Its measured time, in ns.
    pub measured_ns: i64,
}

/// What a host piece is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum PieceKind {
    /// Inside an op or call that launches GPU work.
    Dispatch,
    /// Host work that launches nothing.
    Host,
    /// The DataLoader fetching a batch.
    Loading,
    /// A synchronize (or blocking copy): its [`Wait`] (index into [`InputGraph::waits`]).
    Sync(u32),
    /// A launch call blocked until the GPU drained its queue (the launch queue was full), or an
    /// allocator call that waited for the GPU to drain: its [`Wait`], which always awaits an
    /// activity.
    Queued(u32),
    /// Nothing profiled: Python, or (`long` false) the short gaps of dispatch.
    Gap { long: bool },
}

/// What a synchronize or a blocked launch waited for: kept beside the pieces (a few of
/// millions), so that a piece stays small.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Wait {
    /// The activity (local) it returns after; none where it waited for nothing the model holds.
    pub awaits: Option<u32>,
    /// How long after that activity's end it returns.
    pub ret: i64,
    /// The step could lose it (not a free, not inside an op whose output size is data).
    pub removable: bool,
    /// It waits for a copy to the device (an input's upload): a graph copies inputs in.
    pub upload: bool,
    /// What the call costs when it need not wait: it returns no sooner (a blocked launch's
    /// unblocked cost; 0 for a synchronize).
    pub own_ns: i64,
    /// An allocator call that waited (a [`PieceKind::Queued`] piece that is host work, not a
    /// launch).
    pub alloc: bool,
}

/// An optional local index (a span, an activity) in 4 bytes: a step model holds millions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot(u32);

impl Slot {
    pub const NONE: Slot = Slot(u32::MAX);
    /// `v` (no model has 2^32 - 1 pieces or activities: that value means none).
    pub fn of(v: Option<u32>) -> Slot {
        Slot(v.unwrap_or(u32::MAX))
    }
    pub fn get(self) -> Option<u32> {
        (self.0 != u32::MAX).then_some(self.0)
    }
    pub fn is_some(self) -> bool {
        self.0 != u32::MAX
    }
}

/// A span of host time: from its start to the next piece's (the pieces are contiguous; the
/// last ends at [`InputGraph::end`]), so a piece is 24 bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Piece {
    pub start: i64,
    pub kind: PieceKind,
    /// The span (step) it is in.
    pub span: Slot,
    /// The profiled host events (ops and runtime calls) that start inside it (low 31 bits),
    /// and whether it is inside `Optimizer.step#…` (the top bit).
    counted: u32,
}

const IN_OPTIMIZER: u32 = 1 << 31;

impl Piece {
    /// A piece of `kind` from `start`, in no span, with no events counted yet.
    pub fn new(start: i64, kind: PieceKind) -> Piece {
        Piece {
            start,
            kind,
            span: Slot::NONE,
            counted: 0,
        }
    }
    /// Profiled host events that start inside it.
    pub fn events(&self) -> u32 {
        self.counted & !IN_OPTIMIZER
    }
    pub fn count_event(&mut self) {
        if self.events() < IN_OPTIMIZER - 1 {
            self.counted += 1;
        }
    }
    /// Inside `Optimizer.step#…`.
    pub fn optimizer(&self) -> bool {
        self.counted & IN_OPTIMIZER != 0
    }
    pub fn set_optimizer(&mut self, inside: bool) {
        self.counted = self.events() | if inside { IN_OPTIMIZER } else { 0 };
    }
}

/// A GPU activity of the input.
#[derive(Clone, Debug)]
pub(crate) struct Act {
    /// Index into the trace's activities.
    pub id: u32,
    /// Its stream (index into the input's streams).
    pub stream: u32,
    /// The activity before it on its stream, and one on another stream it waited for (local).
    pub prev: Slot,
    pub dep: Slot,
    /// The end of work outside the model it waited for (before the window).
    pub after: i64,
    /// When its launch was issued (its own start without a launch call).
    pub issue: i64,
    /// The time from its launch to its start when nothing else held it.
    pub lat: i64,
    /// Where what it waited for on the GPU held it: the gap from that work's end to its start.
    pub gap: i64,
    pub start: i64,
    pub dur: i64,
    pub span: Slot,
    pub bucket: Bucket,
    /// Launched inside `Optimizer.step#…`.
    pub optimizer: bool,
}

/// One input's step model.
pub(crate) struct InputGraph {
    pub rank: Option<u32>,
    pub input: u32,
    pub spans: Vec<Span>,
    /// Host pieces, sorted and contiguous from `spans[0].start` to the last span's end.
    pub pieces: Vec<Piece>,
    /// Where the last piece ends.
    pub end: i64,
    /// The synchronizes' and blocked launches' waits, by [`PieceKind::Sync`] and
    /// [`PieceKind::Queued`].
    pub waits: Vec<Wait>,
    /// GPU activities by issue time.
    pub acts: Vec<Act>,
    /// Per span: its pieces and its activities (indices), so that a change walks each once.
    pub span_pieces: Members,
    pub span_acts: Members,
}

/// Each span's members (pieces or activities), in index order: a range per span where each
/// span's members are consecutive (pieces and activities are by time, and steps disjoint, so
/// they almost always are), else one list of all, cut per span.
pub(crate) enum Members {
    Ranges(Vec<(u32, u32)>),
    Lists { offsets: Vec<u32>, items: Vec<u32> },
}

impl Members {
    /// The members of `spans` spans from each element's span, by element index.
    fn of(spans: usize, owner: impl Iterator<Item = Option<u32>> + Clone) -> Members {
        let mut ranges = vec![(u32::MAX, 0u32); spans];
        let mut counts = vec![0u32; spans];
        for (i, k) in owner.clone().enumerate() {
            if let Some(k) = k {
                let r = &mut ranges[k as usize];
                r.0 = r.0.min(i as u32);
                r.1 = i as u32 + 1;
                counts[k as usize] += 1;
            }
        }
        for r in &mut ranges {
            r.0 = r.0.min(r.1);
        }
        if ranges.iter().zip(&counts).all(|(r, &n)| r.1 - r.0 == n) {
            return Members::Ranges(ranges);
        }
        let mut offsets = Vec::with_capacity(spans + 1);
        offsets.push(0u32);
        for &n in &counts {
            offsets.push(offsets[offsets.len() - 1] + n);
        }
        let mut items = vec![0u32; offsets[spans] as usize];
        let mut next = offsets[..spans].to_vec();
        for (i, k) in owner.enumerate() {
            if let Some(k) = k {
                items[next[k as usize] as usize] = i as u32;
                next[k as usize] += 1;
            }
        }
        Members::Lists { offsets, items }
    }

    /// Span `k`'s members, in index order.
    pub fn of_span(&self, k: usize) -> impl Iterator<Item = usize> + '_ {
        let (range, list) = match self {
            Members::Ranges(r) => (r[k].0..r[k].1, &[][..]),
            Members::Lists { offsets, items } => {
                (0..0, &items[offsets[k] as usize..offsets[k + 1] as usize])
            }
        };
        range.chain(list.iter().copied()).map(|i| i as usize)
    }
}

impl InputGraph {
    /// Where piece `i` ends: where the next one starts.
    pub fn piece_end(&self, i: usize) -> i64 {
        piece_end(&self.pieces, i, self.end)
    }

    /// Piece `i`'s measured duration.
    pub fn piece_ns(&self, i: usize) -> i64 {
        self.piece_end(i) - self.pieces[i].start
    }

    /// Piece `i`'s wait where it is a synchronize.
    pub fn sync_wait(&self, i: usize) -> Option<Wait> {
        match self.pieces[i].kind {
            PieceKind::Sync(w) => Some(self.waits[w as usize]),
            _ => None,
        }
    }

    /// The activity (local) piece `i` returns after, how long after its end, and the least it
    /// takes: a synchronize that waited for one, or a blocked launch.
    pub fn awaited(&self, i: usize) -> Option<(u32, i64, i64)> {
        match self.pieces[i].kind {
            PieceKind::Sync(w) | PieceKind::Queued(w) => {
                let w = &self.waits[w as usize];
                w.awaits.map(|a| (a, w.ret, w.own_ns))
            }
            _ => None,
        }
    }
}

/// The model of every input with steps or GPU work in scope.
pub(crate) fn build_all(
    ctx: &Context,
    mut models: Vec<Option<InputModel>>,
    constants: &Constants,
) -> Vec<InputGraph> {
    use rayon::prelude::*;
    models.resize_with(ctx.trace.inputs.len(), || None);
    models
        .into_par_iter()
        .enumerate()
        .filter_map(|(input, model)| build(ctx, input as u32, model, constants))
        .collect()
}

fn spans_of(ctx: &Context, input: usize) -> Vec<Span> {
    let steps = &ctx.steps;
    if steps.per_input[input].is_empty() {
        // No steps: the input's whole window, as one span.
        let acts = &ctx.trace.activities;
        let (mut s, mut e) = (i64::MAX, i64::MIN);
        for a in 0..acts.len() {
            if ctx.in_scope[a] && acts.input[a] as usize == input {
                s = s.min(acts.ts_ns[a]);
                e = e.max(acts.end_ns(a));
            }
        }
        if s >= e {
            return Vec::new();
        }
        return vec![Span {
            number: None,
            start: s,
            end: e,
            cpu_start: s,
            cpu_end: s,
            adjacent: false,
            measured_ns: e - s,
        }];
    }
    let mut out: Vec<Span> = Vec::new();
    for (_, w) in steps.kept(input) {
        // Consecutive steps: the next one's time runs from the previous one's end.
        let adjacent = out
            .last()
            .is_some_and(|p| p.number == Some(w.number.wrapping_sub(1)));
        out.push(Span {
            number: Some(w.number),
            start: w.start_ns,
            end: w.end_ns,
            cpu_start: w.cpu_start_ns,
            cpu_end: w.cpu_end_ns,
            adjacent,
            measured_ns: w.end_ns - w.start_ns,
        });
    }
    out
}

/// One input's graph, from its dependency model when the critical path left one.
fn build(
    ctx: &Context,
    input: u32,
    model: Option<InputModel>,
    constants: &Constants,
) -> Option<InputGraph> {
    let trace = ctx.trace;
    let spans = spans_of(ctx, input as usize);
    let (start, end) = (spans.first()?.start, spans.iter().map(|s| s.end).max()?);
    let mut model = model.unwrap_or_else(|| {
        let depth = ctx
            .opts
            .launch_queue_depth
            .of(trace.inputs[input as usize].vendor);
        InputModel::build(trace, &ctx.links, input, depth)
    });
    let optimizer = optimizer_ranges(ctx, input);
    let in_optimizer = |t: i64| {
        let k = optimizer.partition_point(|r| r.0 <= t);
        k > 0 && t < optimizer[k - 1].1
    };
    // A step's host range holds its pieces; an input without steps has one span, its window.
    let host_ranges = FirstRange::new(spans.iter().map(|s| match s.number {
        Some(_) => (s.cpu_start, s.cpu_end),
        None => (s.start, s.end),
    }));
    let span_of_host = |t: i64| host_ranges.first_holding(t);
    let mut waits: Vec<Wait> = Vec::new();
    let mark = |p: &mut Piece, end: i64| {
        p.span = Slot::of(span_of_host(p.start));
        p.set_optimizer(in_optimizer((p.start + end) / 2));
    };
    let mut pieces = pieces(ctx, &model, (start, end), constants, &mark, &mut waits);
    let mut queued = host::queued(&model);
    // The activities need the streams and waits, not the threads' segments: on a 2 GB trace
    // they are tens of MB, held beside the pieces and activities at the build's peak.
    model.threads = Default::default();
    let (acts, local) = activities(
        ctx,
        &model,
        input,
        (start, end),
        &spans,
        &in_optimizer,
        constants,
    );
    drop(model);
    // A sync or a blocked launch waits for a local activity (by trace index → local index).
    for w in &mut waits {
        w.awaits = w.awaits.and_then(|a| local.get(a));
    }
    for q in &mut queued {
        q.awaits = q.awaits.and_then(|a| local.get(a));
    }
    drop(local);
    split_queued((&mut pieces, end), (&acts, &queued), &mut waits);
    count_events(ctx, input, (&mut pieces, end));
    let span_pieces = Members::of(spans.len(), pieces.iter().map(|p| p.span.get()));
    let span_acts = Members::of(spans.len(), acts.iter().map(|a| a.span.get()));
    Some(InputGraph {
        rank: trace.inputs[input as usize].rank,
        input,
        spans,
        pieces,
        end,
        waits,
        acts,
        span_pieces,
        span_acts,
    })
}

/// Which of a list of half-open ranges first holds a time: a binary search where the ranges
/// are disjoint (steps are), a walk in list order where they overlap.
struct FirstRange {
    /// `(start, end, index in the list)`, non-empty ranges by start.
    sorted: Vec<(i64, i64, u32)>,
    disjoint: bool,
}

impl FirstRange {
    fn new(ranges: impl Iterator<Item = (i64, i64)>) -> FirstRange {
        let mut sorted: Vec<(i64, i64, u32)> = ranges
            .enumerate()
            .filter(|(_, (s, e))| s < e)
            .map(|(k, (s, e))| (s, e, k as u32))
            .collect();
        sorted.sort_unstable();
        let disjoint = sorted.windows(2).all(|w| w[0].1 <= w[1].0);
        FirstRange { sorted, disjoint }
    }

    fn first_holding(&self, t: i64) -> Option<u32> {
        if self.disjoint {
            let k = self.sorted.partition_point(|r| r.0 <= t);
            return k
                .checked_sub(1)
                .map(|k| self.sorted[k])
                .filter(|r| t < r.1)
                .map(|r| r.2);
        }
        self.sorted
            .iter()
            .filter(|r| r.0 <= t && t < r.1)
            .map(|r| r.2)
            .min()
    }
}

/// The input's `Optimizer.step#…` ranges, sorted.
fn optimizer_ranges(ctx: &Context, input: u32) -> Vec<(i64, i64)> {
    let host = &ctx.trace.host;
    let mut out: Vec<(i64, i64)> = (0..host.len())
        .filter(|&h| {
            host.input[h] == input
                && host.kind[h] == HostKind::Annotation
                && ctx
                    .trace
                    .names
                    .get(host.name[h])
                    .starts_with("Optimizer.step#")
        })
        .map(|h| (host.ts_ns[h], host.end_ns(h)))
        .collect();
    out.sort_unstable();
    out
}

/// The input's activities issued in `[start, end)`, by issue time, with what each waited for.
fn activities(
    ctx: &Context,
    model: &InputModel,
    input: u32,
    (start, end): (i64, i64),
    spans: &[Span],
    in_optimizer: &dyn Fn(i64) -> bool,
    constants: &Constants,
) -> (Vec<Act>, LocalIndex) {
    let trace = ctx.trace;
    let acts = &trace.activities;
    // Counted first, so that the list (24 B an activity) is allocated once, at its size.
    let issued = |a: usize| {
        let (issue, s) = (ctx.links.launch_ts(trace, a), acts.ts_ns[a]);
        ((issue >= start || s >= start) && issue < end).then_some((issue, s, a as u32))
    };
    let mine = || (0..acts.len()).filter(|&a| ctx.in_scope[a] && acts.input[a] == input);
    let mut ids: Vec<(i64, i64, u32)> = Vec::with_capacity(mine().filter_map(issued).count());
    ids.extend(mine().filter_map(issued));
    ids.sort_unstable();
    let local = local_index(ids.iter().map(|&(_, _, a)| a));
    // The step it was launched in: the last whose start is before its launch.
    let span_of = |issue: i64| -> Option<u32> {
        if spans.len() == 1 && spans[0].number.is_none() {
            return Some(0);
        }
        let k = spans.partition_point(|s| s.cpu_start.min(s.start) <= issue);
        // Lazily: `then_some` would compute `k - 1` before the test (k = 0: an overflow).
        (k > 0 && issue < spans[k - 1].end.max(spans[k - 1].cpu_end)).then(|| (k - 1) as u32)
    };
    let mut out: Vec<Act> = ids
        .iter()
        .map(|&(issue, s, a)| {
            let mut act = Act {
                id: a,
                stream: model.place.get(a).map_or(0, |p| p.0),
                prev: Slot::NONE,
                dep: Slot::NONE,
                after: i64::MIN,
                issue,
                lat: 0,
                gap: 0,
                start: s,
                dur: acts.dur_ns[a as usize],
                span: Slot::of(span_of(issue)),
                bucket: ctx.activity_buckets[a as usize],
                optimizer: in_optimizer(issue),
            };
            let mut hold = |other: u32, slot: &mut Option<u32>| match local.get(other) {
                Some(l) => *slot = Some(l),
                None => act.after = act.after.max(acts.end_ns(other as usize)),
            };
            let mut prev = None;
            if let Some(p) = model.stream_prev(a) {
                hold(p, &mut prev);
            }
            let mut dep = None;
            if let Some(&w) = model.waits.get(&a) {
                hold(w, &mut dep);
            }
            act.prev = Slot::of(prev);
            act.dep = Slot::of(dep);
            act
        })
        .collect();
    drop(ids);
    // Launch latency: exact where the launch came last (it held the activity), else the
    // input's typical one; where GPU work held it, the gap after that work.
    let end_of = |out: &[Act], l: Option<u32>| l.map_or(i64::MIN, |l| act_end(out, l));
    // Launch latencies are under 100 µs: 4 B each.
    let mut held: Vec<u32> = Vec::new();
    for a in &out {
        let other = end_of(&out, a.prev.get())
            .max(end_of(&out, a.dep.get()))
            .max(a.after);
        if a.issue >= other && a.start >= a.issue && a.start - a.issue < 100_000 {
            held.push((a.start - a.issue) as u32);
        }
    }
    let typical = if held.is_empty() {
        constants.launch_latency_ns.value
    } else {
        held.sort_unstable();
        held[held.len() / 2] as i64
    };
    drop(held);
    // An activity that started long after everything the model knows it waited for waited for
    // something else: the work on another stream that ended just before it started (a wait
    // the trace does not record, as inside cuDNN's multi-stream algorithms).
    const SLACK_NS: i64 = 20_000;
    let ends = ends_by_time(&out);
    for i in 0..out.len() {
        let a = &out[i];
        let other = end_of(&out, a.prev.get())
            .max(end_of(&out, a.dep.get()))
            .max(a.after);
        let late = if a.issue >= other {
            a.start - a.issue > 2 * typical + SLACK_NS
        } else {
            a.start - other > SLACK_NS
        };
        if !late {
            continue;
        }
        let k = ends.partition_point(|&e| act_end(&out, e) <= a.start);
        // Within a few launch latencies of its start, and after its launch; launched before
        // it (a stream waits only for work already issued: one issued later runs after it in
        // the replay, which would read its measured end).
        let reach = a.start - (4 * typical).max(SLACK_NS) * 5;
        let found = ends[..k]
            .iter()
            .rev()
            .take_while(|&&e| act_end(&out, e) >= reach.max(a.issue))
            .find(|&&e| out[e as usize].stream != a.stream && out[e as usize].issue <= a.issue)
            .copied();
        if let Some(x) = found {
            out[i].dep = Slot::of(Some(x));
        }
    }
    for i in 0..out.len() {
        let a = &out[i];
        let other = end_of(&out, a.prev.get())
            .max(end_of(&out, a.dep.get()))
            .max(a.after);
        let seen = (a.start - a.issue).max(0);
        let (lat, gap) = if a.issue >= other || other == i64::MIN {
            (seen, 0)
        } else {
            (seen.min(typical), (a.start - other).max(0))
        };
        out[i].lat = lat;
        out[i].gap = gap;
    }
    (out, local)
}

/// The activities' local indices by end (then index): 4 B each, their ends read from `acts`.
fn ends_by_time(acts: &[Act]) -> Vec<u32> {
    let mut ends: Vec<u32> = (0..acts.len() as u32).collect();
    ends.sort_unstable_by_key(|&k| (act_end(acts, k), k));
    ends
}

/// Where piece `i` of `pieces` ends: where the next one starts (the pieces are contiguous),
/// the last at `end`.
fn piece_end(pieces: &[Piece], i: usize, end: i64) -> i64 {
    pieces.get(i + 1).map_or(end, |next| next.start)
}

/// Where activity `k` (local) ends as measured.
fn act_end(acts: &[Act], k: u32) -> i64 {
    let a = &acts[k as usize];
    a.start + a.dur
}

/// Each activity's local index, by its trace index.
type LocalIndex = ActivitySlots<u32>;

/// The index of `ids` (trace indices, in local order).
fn local_index(ids: impl Iterator<Item = u32> + Clone) -> LocalIndex {
    let first = ids.clone().min().unwrap_or(0);
    let last = ids.clone().max().unwrap_or(0);
    let mut index = LocalIndex::over(first, last, u32::MAX);
    for (i, a) in ids.enumerate() {
        index.insert(a, i as u32);
    }
    index
}

#[cfg(test)]
mod tests {
    use super::{FirstRange, Piece};

    /// A step model holds a piece per host segment and gap: millions on a large trace.
    #[test]
    fn a_piece_stays_small() {
        assert!(std::mem::size_of::<Piece>() <= 24);
        assert!(std::mem::size_of::<super::Act>() <= 72);
    }

    /// The optimizer flag and the event count share a word without disturbing each other.
    #[test]
    fn a_piece_counts_events_beside_its_optimizer_flag() {
        let mut p = Piece::new(0, super::PieceKind::Dispatch);
        assert!(!p.optimizer() && p.events() == 0 && !p.span.is_some());
        p.count_event();
        p.set_optimizer(true);
        p.count_event();
        assert!(p.optimizer());
        assert_eq!(p.events(), 2);
        p.set_optimizer(false);
        assert!(!p.optimizer());
        assert_eq!(p.events(), 2);
    }

    /// Each span's members are the elements that name it, in index order, whether they are
    /// kept as ranges or as lists.
    #[test]
    fn members_are_the_elements_of_each_span_in_order() {
        let owners: [&[Option<u32>]; 4] = [
            &[Some(0), Some(0), None, Some(1), Some(1), None],
            &[Some(1), Some(0), Some(1), None, Some(0)],
            &[None, None],
            &[],
        ];
        for owner in owners {
            let spans = 2;
            let members = super::Members::of(spans, owner.iter().copied());
            for k in 0..spans {
                let expected: Vec<usize> = (0..owner.len())
                    .filter(|&i| owner[i] == Some(k as u32))
                    .collect();
                let got: Vec<usize> = members.of_span(k).collect();
                assert_eq!(got, expected, "{owner:?} span {k}");
            }
        }
        let contiguous = [Some(0), Some(1), Some(1)];
        assert!(matches!(
            super::Members::of(2, contiguous.iter().copied()),
            super::Members::Ranges(_)
        ));
    }

    /// The index answers as a walk of the list in order does, disjoint or not.
    #[test]
    fn first_range_is_the_first_in_list_order() {
        let walk = |ranges: &[(i64, i64)], t: i64| {
            ranges
                .iter()
                .position(|&(s, e)| t >= s && t < e)
                .map(|k| k as u32)
        };
        let lists: [&[(i64, i64)]; 4] = [
            &[(10, 20), (30, 40), (20, 30)],
            &[(10, 20), (15, 25), (0, 50)],
            &[(5, 5), (0, 10), (10, 10)],
            &[],
        ];
        for ranges in lists {
            let index = FirstRange::new(ranges.iter().copied());
            for t in -1..55 {
                assert_eq!(index.first_holding(t), walk(ranges, t), "{ranges:?} at {t}");
            }
        }
    }
}
