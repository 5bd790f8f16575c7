//! The walk: a step's critical path, backwards from its end along each moment's
//! latest-arriving dependency (see the module docs of `analysis::path`).

use crate::analysis::path::hidden::LATE_NS;
use crate::analysis::path::model::{GateKind, InputModel, ThreadModel};
use crate::analysis::path::{ItemKind, ItemName, Label, Tally};
use crate::analysis::time::links::Links;
use crate::classify::Bucket;
use crate::model::{NameId, Trace};

/// The time a step's path covers.
pub(crate) struct Span {
    pub start: i64,
    pub end: i64,
    /// Where the step's host range ends (the main thread goes on to the next step there).
    pub cpu_end: i64,
    /// Spans inside it that are not its time (iterations queued behind unseen work).
    pub blocked: Vec<(i64, i64)>,
    /// The device whose work ends it (an input without steps: one path per device, over its
    /// own window); None: any.
    pub device: Option<u32>,
}

pub(crate) struct Walker<'a> {
    pub trace: &'a Trace,
    pub links: &'a Links,
    pub model: &'a InputModel,
    pub buckets: &'a [Bucket],
    /// Host gaps shorter than this are dispatch (as in the time partition).
    pub threshold: i64,
}

/// Where the walk stands: on a GPU activity (up to time `t`) or on a host thread at `t`.
#[derive(Clone, Copy, Debug)]
enum At {
    Gpu(u32, i64),
    Host(u32, i64),
}

/// Names of the pieces that are no event.
const BETWEEN_KERNELS: &str = "(between kernels)";
const BETWEEN_OPS: &str = "(between ops)";
const OUTSIDE_OPS: &str = "(outside profiled ops)";
const STREAM_WAIT: &str = "(stream wait)";

struct Acc<'s> {
    tally: Tally,
    span: &'s Span,
}

const GAP_NAMES: [&str; 4] = [BETWEEN_KERNELS, BETWEEN_OPS, OUTSIDE_OPS, STREAM_WAIT];

impl Acc<'_> {
    /// Adds `[s, e)` (clipped to the step, less its blocked spans) under a label and an item.
    fn add(
        &mut self,
        s: i64,
        e: i64,
        label: Label,
        bucket: Option<Bucket>,
        item: (ItemKind, ItemName),
    ) {
        let (s, e) = (s.max(self.span.start), e.min(self.span.end));
        if e <= s {
            return;
        }

        let blocked: i64 = self
            .span
            .blocked
            .iter()
            .map(|&(a, b)| (b.min(e) - a.max(s)).max(0))
            .sum();
        let ns = e - s - blocked;
        if ns <= 0 {
            return;
        }
        let sum = self.tally.labels.entry((label, bucket)).or_insert(0);
        *sum = sum.saturating_add(ns);
        let sum = self.tally.items.entry((item.0, item.1, label)).or_insert(0);
        *sum = sum.saturating_add(ns);
    }
    fn gap(&mut self, s: i64, e: i64, label: Label, which: usize) {
        self.add(
            s,
            e,
            label,
            None,
            (ItemKind::Op, ItemName::Fixed(GAP_NAMES[which])),
        );
    }
}

impl Walker<'_> {
    /// The critical path of one step, by label and item.
    pub fn walk(&self, span: &Span) -> Tally {
        let mut acc = Acc {
            tally: Tally::default(),
            span,
        };
        let mut at = self.first(span);
        if let Some(At::Gpu(a, t)) = at {
            acc.gap(
                self.trace.activities.end_ns(a as usize),
                t,
                Label::Launch,
                0,
            );
        }
        // Every move goes back in time or down a stream: a bound on moves guards bad input.
        let mut moves = 4 * (self.model.place.len() + self.trace.host.len()) + 64;
        while let Some(next) = at {
            moves -= 1;
            if moves == 0 {
                break;
            }
            at = match next {
                At::Gpu(a, t) => self.gpu(a, t, &mut acc),
                At::Host(thread, t) => self.host(thread, t, &mut acc),
            };
        }
        acc.tally
    }

    /// Where the step ends: the activity that finished last, or the main thread.
    fn first(&self, span: &Span) -> Option<At> {
        let acts = &self.trace.activities;
        let mut best: Option<(i64, u32)> = None;
        for (list, key) in self.model.streams.iter().zip(&self.model.keys) {
            if span.device.is_some_and(|d| d != key.0) {
                continue;
            }
            let k = list.partition_point(|&a| acts.ts_ns[a as usize] < span.end);
            // A few back: an earlier activity may end later than the last to start.
            for &a in list[k.saturating_sub(4)..k].iter().rev() {
                let e = acts.end_ns(a as usize);
                if e <= span.end && e > span.start && best.is_none_or(|b| e > b.0) {
                    best = Some((e, a));
                }
            }
        }
        match (best, self.model.main) {
            (Some((e, _)), Some(main)) if e < span.cpu_end => Some(At::Host(main, span.end)),
            (Some((_, a)), _) => Some(At::Gpu(a, span.end)),
            (None, main) => main.map(|m| At::Host(m, span.end)),
        }
    }

    /// On activity `a` up to `t`: its own time, then what it waited for.
    fn gpu(&self, a: u32, t: i64, acc: &mut Acc) -> Option<At> {
        let acts = &self.trace.activities;
        let ai = a as usize;
        // Never forward in time: an activity reached before its start (skewed clocks) starts
        // where the walk is.
        let (s, e) = (acts.ts_ns[ai].min(t), acts.end_ns(ai).min(t));
        let bucket = self.buckets[ai];
        let label = if bucket == Bucket::Communication {
            (Label::Communication, None)
        } else {
            (Label::GpuCompute, Some(bucket))
        };
        acc.add(
            s,
            e,
            label.0,
            label.1,
            (ItemKind::Kernel, ItemName::Id(acts.name[ai])),
        );
        if label.0 == Label::Communication && e > s.max(acc.span.start) {
            let on_path = (s.max(acc.span.start), e.min(acc.span.end));
            acc.tally.comms.push((a, on_path.0, on_path.1));
        }
        if s <= acc.span.start {
            return None;
        }
        // The latest-arriving dependency: stream order first among ties, then a wait, then
        // the launch.
        let mut best: Option<(i64, u8, At)> = None;
        let mut consider = |arrival: i64, rank: u8, to: At| {
            let arrival = arrival.min(s);
            if best.is_none_or(|b| (arrival, rank) > (b.0, b.1)) {
                best = Some((arrival, rank, to));
            }
        };
        if let Some(p) = self.model.stream_prev(a) {
            consider(
                acts.end_ns(p as usize),
                2,
                At::Gpu(p, acts.end_ns(p as usize).min(s)),
            );
        }
        if let Some(&w) = self.model.waits.get(&a) {
            consider(
                acts.end_ns(w as usize),
                1,
                At::Gpu(w, acts.end_ns(w as usize).min(s)),
            );
        }
        // Held back by another stream's kernel running when it started: the GPU's own time.
        if let Some(&x) = self.model.held.get(&a) {
            consider(s, 3, At::Gpu(x, s));
        }
        if let Some(h) = self.links.launch[ai] {
            // A launch stamped after its kernel started is clock skew: the walk never goes
            // forward in time.
            let ts = self.trace.host.ts_ns[h as usize].min(s);
            consider(ts, 0, At::Host(self.trace.host.thread[h as usize], ts));
        }
        let Some((arrival, rank, to)) = best else {
            acc.gap(acc.span.start, s, Label::Launch, 0);
            return None;
        };
        match rank {
            // The GPU between two kernels of a stream: its own time where the launch was in
            // before the predecessor ended (the queue held it) and the next one followed
            // shortly, dispatch where the launch came later.
            2 if self.launched_by(a, arrival) && s - arrival <= LATE_NS => {
                acc.add(
                    arrival,
                    s,
                    label.0,
                    label.1,
                    (ItemKind::Op, ItemName::Fixed(BETWEEN_KERNELS)),
                );
            }
            2 => acc.gap(arrival, s, Label::Launch, 0),
            1 => acc.gap(arrival, s, Label::Sync, 3),
            // Held by a kernel still running: no gap.
            3 => {}
            _ => {
                let h = self.links.launch[ai]
                    .map_or(NameId::NONE, |h| self.trace.host.name[h as usize]);
                acc.add(
                    arrival,
                    s,
                    Label::Launch,
                    None,
                    (ItemKind::Op, ItemName::Id(h)),
                );
            }
        }
        (arrival > acc.span.start).then_some(to)
    }

    /// The other thread that launches GPU work whose last work in `(from, to]` ended last,
    /// and that end.
    fn launching_in(&self, thread: u32, (from, to): (i64, i64)) -> Option<(u32, i64)> {
        let mut best: Option<(u32, i64)> = None;
        for (&t, tm) in &self.model.threads {
            if t == thread || !tm.launches {
                continue;
            }
            let k = tm.segs.partition_point(|s| s.end <= to);
            let Some(seg) = k.checked_sub(1).map(|k| &tm.segs[k]) else {
                continue;
            };
            if seg.end > from
                && best.is_none_or(|(bt, be)| {
                    (seg.end, std::cmp::Reverse(t)) > (be, std::cmp::Reverse(bt))
                })
            {
                best = Some((t, seg.end));
            }
        }
        best
    }

    /// Whether activity `a`'s launch call had returned by `t` (none: launched long before).
    fn launched_by(&self, a: u32, t: i64) -> bool {
        self.links.launch[a as usize].is_none_or(|h| self.trace.host.end_ns(h as usize) <= t)
    }

    /// On host thread `thread` at `t`: back through what it did, to the synchronize that
    /// waited for the GPU (then onto that GPU work), or, for a worker thread, to where it sat
    /// idle waiting for the main thread.
    fn host(&self, thread: u32, t: i64, acc: &mut Acc) -> Option<At> {
        let Some(tm) = self.model.threads.get(&thread) else {
            acc.gap(acc.span.start, t, Label::Host, 2);
            return None;
        };
        let worker = self.model.main.is_some_and(|m| m != thread);
        let gated = latest_gated(tm, t).filter(|g| g.end > acc.span.start);
        let floor = gated.map_or(acc.span.start, |g| g.end).max(acc.span.start);
        let segs = &tm.segs;
        let mut c = t;
        let mut i = segs.partition_point(|s| s.start < c);
        loop {
            // The gap before `c`, back to the previous segment's end.
            let prev_end = if i > 0 {
                segs[i - 1].end.min(c)
            } else {
                i64::MIN
            };
            if prev_end < c {
                let long = c.saturating_sub(prev_end) > self.threshold;
                if worker && long {
                    // The worker waited for work: the main thread was on the path.
                    return Some(At::Host(self.model.main.unwrap_or(thread), c));
                }
                if long && !worker {
                    // The main thread waited (in `backward()`) while another thread launched
                    // the work: the path is on that thread until its last work in the gap.
                    if let Some((other, end)) = self.launching_in(thread, (prev_end.max(floor), c))
                    {
                        acc.gap(end, c, Label::Launch, 1);
                        return Some(At::Host(other, end));
                    }
                }
                let from = prev_end.max(floor);
                if long {
                    acc.gap(from, c, Label::Host, 2);
                } else {
                    acc.gap(from, c, Label::Launch, 1);
                }
                c = from;
            }
            if c <= floor || i == 0 {
                break;
            }
            let seg = segs[i - 1];
            let from = seg.start.max(floor);
            acc.add(
                from,
                c,
                seg.label,
                None,
                (ItemKind::Op, ItemName::Id(seg.name)),
            );
            c = from;
            i -= 1;
            if c <= floor {
                break;
            }
        }
        let g = gated?;
        if c > g.end {
            return None;
        }
        let acts = &self.trace.activities;
        let done = acts.end_ns(g.activity as usize).min(g.end);
        // A blocked launch returning is dispatch; a synchronize (or an allocator call that
        // drained the GPU) returning is a sync.
        let label = match g.kind {
            GateKind::Sync | GateKind::Alloc => Label::Sync,
            GateKind::Queue => Label::Launch,
        };
        acc.add(
            done,
            g.end,
            label,
            None,
            (ItemKind::Op, ItemName::Id(g.name)),
        );
        (done > acc.span.start).then_some(At::Gpu(g.activity, done))
    }
}

/// The thread's last call that waited for the GPU (a synchronize, a blocked launch) and
/// returned by `t`.
fn latest_gated(tm: &ThreadModel, t: i64) -> Option<crate::analysis::path::model::GatedSync> {
    let k = tm.gated.partition_point(|g| g.end <= t);
    tm.gated[..k].iter().rev().find(|g| g.waited).copied()
}
