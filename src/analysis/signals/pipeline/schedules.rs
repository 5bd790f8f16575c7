//! Pipeline schedules replayed: each rank runs its stages' forward and backward chunks in the
//! order a schedule gives it, each chunk as soon as its rank is free and its input has arrived
//! (a forward needs the previous stage's forward of its microbatch, a backward the next stage's
//! backward, one hop later); the step is when the last rank finishes. The orders are those of
//! `torch.distributed.pipelining`'s `ScheduleGPipe`, `Schedule1F1B` and
//! `ScheduleInterleaved1F1B` (its `_calculate_single_rank_operations`), and the zero-bubble
//! V schedule (`ScheduleZBVZeroBubble`), whose backward splits into the input gradient (on the
//! critical path) and the weight gradient (free to fill bubbles).

use serde::{Deserialize, Serialize};

/// A schedule a pipeline runs or is replayed under (feed `pipeline.schedule`,
/// `pipeline.replays[].schedule`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Schedule {
    #[serde(rename = "gpipe")]
    GPipe,
    #[serde(rename = "1f1b")]
    OneFOneB,
    #[serde(rename = "interleaved_1f1b")]
    Interleaved1F1B,
    #[serde(rename = "zbv_zero_bubble")]
    ZbvZeroBubble,
}

impl Schedule {
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
    /// torch's class for it.
    pub fn torch_class(self) -> &'static str {
        match self {
            Schedule::GPipe => "ScheduleGPipe",
            Schedule::OneFOneB => "Schedule1F1B",
            Schedule::Interleaved1F1B => "ScheduleInterleaved1F1B",
            Schedule::ZbvZeroBubble => "ScheduleZBVZeroBubble",
        }
    }
    /// Stages per rank the schedule runs (interleaved and V schedules hold two or more).
    pub fn stages_per_rank(self, virtual_stages: usize) -> usize {
        match self {
            Schedule::GPipe | Schedule::OneFOneB => 1,
            Schedule::Interleaved1F1B => virtual_stages.max(2),
            Schedule::ZbvZeroBubble => 2,
        }
    }
}

/// What a chunk computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pass {
    Forward,
    /// The whole backward (input and weight gradients).
    Backward,
    /// The input gradient alone (zero-bubble schedules).
    BackwardInput,
    /// The weight gradient alone.
    BackwardWeight,
}

/// One chunk of a rank's order: a pass of one stage over one microbatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    pub stage: usize,
    pub microbatch: usize,
    pub pass: Pass,
}

/// The pipeline a replay runs: ranks, stages, microbatches and each stage's chunk times.
#[derive(Clone, Debug)]
pub struct Shape {
    pub ranks: usize,
    pub microbatches: usize,
    /// Per stage (in pipeline order): its forward and full backward time per microbatch (ns).
    pub forward_ns: Vec<f64>,
    pub backward_ns: Vec<f64>,
    /// Share of a backward that is the weight gradient (zero-bubble's W).
    pub weight_share: f64,
    /// One hop between stages on different ranks: a send and its receive (ns).
    pub hop_ns: f64,
}

/// Each rank's order of actions under `schedule`, for `stages` stages over `ranks` ranks
/// (`stages` a multiple of `ranks`) and `m` microbatches.
pub fn orders(schedule: Schedule, ranks: usize, stages: usize, m: usize) -> Vec<Vec<Action>> {
    let v = stages / ranks.max(1);
    (0..ranks)
        .map(|r| match schedule {
            Schedule::GPipe => {
                let f = (0..m).map(|mb| act(r, mb, Pass::Forward));
                f.chain((0..m).map(|mb| act(r, mb, Pass::Backward)))
                    .collect()
            }
            Schedule::OneFOneB => one_f_one_b(r, ranks, m),
            Schedule::Interleaved1F1B => interleaved(r, ranks, v, m),
            Schedule::ZbvZeroBubble => zbv(r, ranks, m),
        })
        .collect()
}

fn act(stage: usize, microbatch: usize, pass: Pass) -> Action {
    Action {
        stage,
        microbatch,
        pass,
    }
}

/// `Schedule1F1B`: as many forwards as stages after this one (plus itself) first, then one
/// backward, one forward, until the forwards run out, then the remaining backwards.
fn one_f_one_b(stage: usize, stages: usize, m: usize) -> Vec<Action> {
    let warmup = m.min(stages - stage);
    let mut out: Vec<Action> = (0..warmup)
        .map(|mb| act(stage, mb, Pass::Forward))
        .collect();
    let (mut f, mut b) = (warmup, 0);
    loop {
        out.push(act(stage, b, Pass::Backward));
        b += 1;
        if f == m {
            break;
        }
        out.push(act(stage, f, Pass::Forward));
        f += 1;
    }
    out.extend((b..m).map(|mb| act(stage, mb, Pass::Backward)));
    out
}

/// `ScheduleInterleaved1F1B` for rank `r` of `p` holding `v` stages (`r`, `r + p`, …):
/// microbatches go round in groups of `p`, each group through one local stage after the
/// other; a warm-up of forwards, then one forward and one backward, then the backwards.
fn interleaved(r: usize, p: usize, v: usize, m: usize) -> Vec<Action> {
    // torch's microbatches_per_round: m over its number of rounds, max(1, m / p).
    let round = (m / (m / p.max(1)).max(1)).max(1);
    let warmup = ((v - 1) * round + 2 * (p - 1 - r)).min(m * v);
    let total = m * v;
    let fwd_stage = |k: usize| ((k / round) % v) * p + r;
    let bwd_stage = |k: usize| (v - 1 - ((k - warmup) / round) % v) * p + r;
    let mut next_f = vec![0usize; v * p];
    let mut next_b = vec![0usize; v * p];
    let mut out = Vec::with_capacity(2 * total);
    let take = |stage: usize, pass: Pass, next: &mut Vec<usize>| {
        let mb = next[stage];
        next[stage] += 1;
        act(stage, mb, pass)
    };
    for k in 0..total + warmup {
        if k < total {
            out.push(take(fwd_stage(k), Pass::Forward, &mut next_f));
        }
        if k >= warmup {
            out.push(take(bwd_stage(k), Pass::Backward, &mut next_b));
        }
    }
    out
}

/// `ScheduleZBVZeroBubble` for rank `r` of `p`: stages `r` and `2p - 1 - r` (a V); forwards of
/// the first chunk warm up, then each forward of the second chunk is followed by its input
/// and weight gradients, the steady state alternates both chunks, and the cool-down runs the
/// input gradients first and the weight gradients last. As torch, the order is built for at
/// least `2p - 1` microbatches and the ones beyond `m` dropped.
fn zbv(r: usize, p: usize, m: usize) -> Vec<Action> {
    let mut out = zbv_padded(r, p, m.max(2 * p - 1));
    out.retain(|a| a.microbatch < m);
    out
}

fn zbv_padded(r: usize, p: usize, m: usize) -> Vec<Action> {
    let (c0, c1) = (r, 2 * p - 1 - r);
    let mut out = Vec::new();
    let (mut f0, mut f1, mut b0, mut b1) = (0, 0, 0, 0);
    let push = |out: &mut Vec<Action>, stage: usize, mb: usize, pass: Pass| {
        out.push(act(stage, mb, pass));
    };
    for _ in 0..(2 * (p - r) - 1) {
        push(&mut out, c0, f0, Pass::Forward);
        f0 += 1;
    }
    for _ in 0..r {
        push(&mut out, c1, f1, Pass::Forward);
        f1 += 1;
        push(&mut out, c0, f0, Pass::Forward);
        f0 += 1;
    }
    for _ in 0..(p - r) {
        push(&mut out, c1, f1, Pass::Forward);
        f1 += 1;
        push(&mut out, c1, b1, Pass::BackwardInput);
        push(&mut out, c1, b1, Pass::BackwardWeight);
        b1 += 1;
    }
    while f1 < f0 || f0 < m {
        if f0 < m {
            push(&mut out, c0, f0, Pass::Forward);
            f0 += 1;
        }
        push(&mut out, c0, b0, Pass::BackwardInput);
        push(&mut out, c0, b0, Pass::BackwardWeight);
        b0 += 1;
        push(&mut out, c1, f1, Pass::Forward);
        f1 += 1;
        push(&mut out, c1, b1, Pass::BackwardInput);
        push(&mut out, c1, b1, Pass::BackwardWeight);
        b1 += 1;
    }
    let (mut w0, mut w1) = (b0, b1);
    for _ in 0..r {
        push(&mut out, c0, b0, Pass::BackwardInput);
        b0 += 1;
        push(&mut out, c1, b1, Pass::BackwardInput);
        b1 += 1;
    }
    for _ in 0..(p - r) {
        push(&mut out, c0, b0, Pass::BackwardInput);
        b0 += 1;
        push(&mut out, c0, w0, Pass::BackwardWeight);
        w0 += 1;
    }
    while w1 < b1 {
        push(&mut out, c1, w1, Pass::BackwardWeight);
        w1 += 1;
    }
    while w0 < b0 {
        push(&mut out, c0, w0, Pass::BackwardWeight);
        w0 += 1;
    }
    out
}

/// What a replay gives: the step's span and each rank's compute and idle time in it.
#[derive(Clone, Debug, PartialEq)]
pub struct Replayed {
    pub span_ns: f64,
    /// Per rank: compute time, and idle time inside the span.
    pub busy_ns: Vec<f64>,
    pub idle_ns: Vec<f64>,
}

/// The rank that holds stage `s` of a pipeline over `ranks` ranks: round the ranks in a loop,
/// or down and back up for the V schedule.
pub fn rank_of(schedule: Schedule, s: usize, ranks: usize) -> usize {
    match schedule {
        Schedule::ZbvZeroBubble if s >= ranks => (2 * ranks - 1).saturating_sub(s),
        _ => s % ranks.max(1),
    }
}

/// `shape` replayed under `schedule` (its stages: `shape.forward_ns.len()`).
pub fn replay_schedule(shape: &Shape, schedule: Schedule) -> Option<Replayed> {
    let o = orders(
        schedule,
        shape.ranks,
        shape.forward_ns.len(),
        shape.microbatches,
    );
    replay_with(shape, &o, |s| rank_of(schedule, s, shape.ranks))
}

/// Runs each rank's `orders` over `shape`, stage `s` on rank `s % ranks`.
#[cfg(test)]
pub fn replay(shape: &Shape, orders: &[Vec<Action>]) -> Option<Replayed> {
    replay_with(shape, orders, |s| s % shape.ranks.max(1))
}

/// Runs each rank's `orders` over `shape`, stage `s` on rank `rank_of(s)`; None when the orders
/// deadlock or name a stage the shape lacks.
pub fn replay_with(
    shape: &Shape,
    orders: &[Vec<Action>],
    rank_of: impl Fn(usize) -> usize,
) -> Option<Replayed> {
    let stages = shape.forward_ns.len();
    let m = shape.microbatches;
    if stages == 0 || orders.len() != shape.ranks || shape.backward_ns.len() != stages {
        return None;
    }
    let idx = |s: usize, mb: usize| s * m + mb;
    let mut f_done = vec![f64::NAN; stages * m];
    let mut b_done = vec![f64::NAN; stages * m];
    let mut free = vec![0.0f64; shape.ranks];
    let mut busy = vec![0.0f64; shape.ranks];
    let mut next = vec![0usize; shape.ranks];
    let total: usize = orders.iter().map(Vec::len).sum();
    let mut done = 0;
    while done < total {
        let mut progressed = false;
        for r in 0..shape.ranks {
            while let Some(a) = orders[r].get(next[r]).copied() {
                if a.stage >= stages || a.microbatch >= m || rank_of(a.stage) != r {
                    return None;
                }
                let hop = |from: usize| {
                    if rank_of(from) == r {
                        0.0
                    } else {
                        shape.hop_ns
                    }
                };
                let ready = match a.pass {
                    Pass::Forward if a.stage == 0 => Some(0.0),
                    Pass::Forward => {
                        let t = f_done[idx(a.stage - 1, a.microbatch)];
                        (!t.is_nan()).then(|| t + hop(a.stage - 1))
                    }
                    Pass::Backward | Pass::BackwardInput => {
                        let own = f_done[idx(a.stage, a.microbatch)];
                        let next_stage = if a.stage + 1 == stages {
                            Some(own)
                        } else {
                            let t = b_done[idx(a.stage + 1, a.microbatch)];
                            (!t.is_nan()).then(|| t + hop(a.stage + 1))
                        };
                        next_stage.filter(|_| !own.is_nan()).map(|t| t.max(own))
                    }
                    Pass::BackwardWeight => {
                        let t = b_done[idx(a.stage, a.microbatch)];
                        (!t.is_nan()).then_some(t)
                    }
                };
                let Some(ready) = ready else { break };
                let w = shape.weight_share.clamp(0.0, 1.0);
                let dur = match a.pass {
                    Pass::Forward => shape.forward_ns[a.stage],
                    Pass::Backward => shape.backward_ns[a.stage],
                    Pass::BackwardInput => shape.backward_ns[a.stage] * (1.0 - w),
                    Pass::BackwardWeight => shape.backward_ns[a.stage] * w,
                };
                let end = free[r].max(ready) + dur;
                free[r] = end;
                busy[r] += dur;
                match a.pass {
                    Pass::Forward => f_done[idx(a.stage, a.microbatch)] = end,
                    Pass::Backward | Pass::BackwardInput => {
                        b_done[idx(a.stage, a.microbatch)] = end
                    }
                    Pass::BackwardWeight => {}
                }
                next[r] += 1;
                done += 1;
                progressed = true;
            }
        }
        if !progressed {
            return None;
        }
    }
    let span = free.iter().copied().fold(0.0, f64::max);
    Some(Replayed {
        span_ns: span,
        idle_ns: busy.iter().map(|b| span - b).collect(),
        busy_ns: busy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn equal(ranks: usize, stages: usize, m: usize, f: f64, b: f64) -> Shape {
        Shape {
            ranks,
            microbatches: m,
            forward_ns: vec![f; stages],
            backward_ns: vec![b; stages],
            weight_share: 0.5,
            hop_ns: 0.0,
        }
    }

    #[test]
    fn gpipe_and_1f1b_idle_the_textbook_bubble_on_equal_stages() {
        // (p - 1) / (m + p - 1) of the step, for p = 4 stages and m = 8 microbatches.
        for schedule in [Schedule::GPipe, Schedule::OneFOneB] {
            let shape = equal(4, 4, 8, 1.0, 2.0);
            let r = replay(&shape, &orders(schedule, 4, 4, 8)).unwrap();
            assert!((r.span_ns - 11.0 * 3.0).abs() < 1e-9, "{schedule:?} {r:?}");
            let bubble = r.idle_ns[0] / r.span_ns;
            assert!((bubble - 3.0 / 11.0).abs() < 1e-9);
        }
    }

    #[test]
    fn interleaving_divides_the_bubble_by_the_stages_per_rank() {
        // Two stages per rank, each half the work: the fill and drain shrink by half.
        let gpipe = replay(&equal(2, 2, 8, 2.0, 4.0), &orders(Schedule::GPipe, 2, 2, 8)).unwrap();
        let inter = replay(
            &equal(2, 4, 8, 1.0, 2.0),
            &orders(Schedule::Interleaved1F1B, 2, 4, 8),
        )
        .unwrap();
        assert!((gpipe.span_ns - 54.0).abs() < 1e-9, "{gpipe:?}");
        assert!(inter.span_ns < gpipe.span_ns, "{inter:?}");
        let bubble = inter.idle_ns[0] / inter.span_ns;
        assert!((bubble - 1.0 / 17.0).abs() < 0.02, "{bubble}");
    }

    #[test]
    fn every_order_runs_each_chunk_once_and_never_deadlocks() {
        for (schedule, ranks, stages) in [
            (Schedule::GPipe, 3, 3),
            (Schedule::OneFOneB, 4, 4),
            (Schedule::Interleaved1F1B, 2, 4),
            (Schedule::Interleaved1F1B, 4, 8),
            (Schedule::ZbvZeroBubble, 2, 4),
            (Schedule::ZbvZeroBubble, 4, 8),
        ] {
            for m in [1, 2, 4, 6, 8, 12] {
                let o = orders(schedule, ranks, stages, m);
                let chunks: usize = o.iter().map(Vec::len).sum();
                let per = if schedule == Schedule::ZbvZeroBubble {
                    3
                } else {
                    2
                };
                assert_eq!(chunks, per * stages * m, "{schedule:?} {ranks} {m}");
                let shape = equal(ranks, stages, m, 1.0, 2.0);
                let ok = replay_schedule(&shape, schedule).is_some();
                assert!(ok, "{schedule:?} {ranks} ranks {m} microbatches deadlocked");
            }
        }
    }

    #[test]
    fn the_v_schedule_fills_the_drain_with_weight_gradients() {
        let shape = equal(2, 4, 8, 1.0, 2.0);
        let zb = replay_schedule(&shape, Schedule::ZbvZeroBubble).unwrap();
        let inter = replay_schedule(&shape, Schedule::Interleaved1F1B).unwrap();
        assert!(zb.span_ns <= inter.span_ns + 1e-9, "{zb:?} vs {inter:?}");
    }

    #[test]
    fn a_slow_stage_sets_the_pace() {
        // Stage 1 three times as slow: every rank waits on it, whatever the schedule.
        let mut shape = equal(2, 2, 8, 1.0, 2.0);
        shape.forward_ns[1] = 3.0;
        shape.backward_ns[1] = 6.0;
        let r = replay(&shape, &orders(Schedule::OneFOneB, 2, 2, 8)).unwrap();
        assert!(r.span_ns >= 8.0 * 9.0, "{r:?}");
        assert!(r.idle_ns[0] > r.idle_ns[1] * 3.0);
    }
}
