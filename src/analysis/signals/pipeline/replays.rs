//! The measured pipeline replayed under other schedules and with its stages rebalanced
//! (feed `pipeline.replays[]`).
//!
//! Each stage's forward and backward chunk (medians over its microbatches) and one hop between
//! ranks are the model's inputs; [`schedules`] runs them under the schedule the trace shows and
//! under each alternative. What the step holds beyond the schedule (the optimizer, host gaps)
//! is the measured step less the replay of the schedule as run, and stays. An alternative with
//! more stages per rank splits each rank's chunk time evenly over its stages; rebalanced
//! stages give every rank the mean of the ranks' compute (layers moved off the slowest until
//! equal: whole layers get within one layer of it). The zero-bubble V schedule's weight
//! gradient is taken as half the backward (a linear layer's weight and input gradients cost
//! the same FLOPs).
//!
//! Not modelled: a rank's sends and receives run in issue order on one NCCL stream in
//! `torch.distributed.pipelining`, so a receive can wait behind a send its peer has not yet
//! matched. Schedules with more stage boundaries wait more on that than the replay shows: on
//! our four-rank captures GPipe replayed as Interleaved1F1B came within 15% of the interleaved
//! capture's step but on the fast side, and the interleaved capture ran slower than GPipe
//! (the pipeline-schedule rung carries that caveat).

use super::schedules::{self, Schedule, Shape};
use super::Pipeline;
use serde::{Deserialize, Serialize};

/// Share of a backward chunk that is the weight gradient, for the zero-bubble replay.
const WEIGHT_SHARE: f64 = 0.5;
/// Ranks whose compute differs by more than this ratio (slowest over fastest) are unequal.
pub const UNEQUAL_RATIO: f64 = 1.1;

/// One replay of the step (feed `pipeline.replays[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScheduleReplay {
    pub schedule: Schedule,
    pub stages_per_rank: u32,
    pub microbatches: u32,
    /// Stages rebalanced to equal compute.
    pub rebalanced: bool,
    /// The step as replayed, and its saving on the measured step (negative: slower).
    pub step_ns: i64,
    pub saving_ns: i64,
    /// Mean over ranks of the replayed schedule's idle share.
    pub bubble_pct: f64,
    /// The one the trace runs (identity: its saving is the model's error on the step).
    pub as_run: bool,
    /// Rebalanced with whole layers: each rank's layers after the move (null: the stages'
    /// layers are unknown, compute evened out instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<Vec<u32>>,
}

/// Each rank's forward and backward totals with whole layers moved off the slowest: the
/// per-layer cost is the cheapest rank's (its time over its layers), what a rank spends
/// beyond its layers (the embedding on the first, the head and loss on the last) stays with
/// it, and layers go one at a time to the rank that would finish soonest with it. None unless
/// every stage's layers are known.
type Rebalanced = ((Vec<f64>, Vec<f64>), Vec<u32>, Vec<u32>);

/// (the totals after the move, each rank's layers after it, and before).
fn by_layers(
    p: &Pipeline,
    schedule: Schedule,
    totals: &(Vec<f64>, Vec<f64>),
) -> Option<Rebalanced> {
    let ranks = p.ranks as usize;
    let mut layers = vec![0u32; ranks];
    for s in 0..p.stages_total {
        let c = p.chunks.iter().find(|c| c.stage == s)?;
        layers[schedules::rank_of(schedule, s as usize, ranks)] += c.layers?;
    }
    let total: u32 = layers.iter().sum();
    if total < ranks as u32 || layers.contains(&0) {
        return None;
    }
    let per = |t: &[f64]| {
        t.iter()
            .zip(&layers)
            .map(|(&x, &l)| x / f64::from(l))
            .fold(f64::INFINITY, f64::min)
    };
    let (xf, xb) = (per(&totals.0), per(&totals.1));
    let extra = |t: &[f64], x: f64| -> Vec<f64> {
        t.iter()
            .zip(&layers)
            .map(|(&v, &l)| (v - f64::from(l) * x).max(0.0))
            .collect()
    };
    let (ef, eb) = (extra(&totals.0, xf), extra(&totals.1, xb));
    let cost = |r: usize, l: u32| f64::from(l) * (xf + xb) + ef[r] + eb[r];
    let mut moved = vec![1u32; ranks];
    for _ in ranks as u32..total {
        let r =
            (0..ranks).min_by(|&a, &b| cost(a, moved[a] + 1).total_cmp(&cost(b, moved[b] + 1)))?;
        moved[r] += 1;
    }
    let f = (0..ranks)
        .map(|r| f64::from(moved[r]) * xf + ef[r])
        .collect();
    let b = (0..ranks)
        .map(|r| f64::from(moved[r]) * xb + eb[r])
        .collect();
    Some(((f, b), moved, layers))
}

/// The pipeline's changes as replay sets of the job (what the ladder's `replay =
/// "pipeline_rebalance"` / `"pipeline_schedule"` price with): each rank's steps before, and
/// less the best replay's saving after; rebalancing under the schedule as run, the best other
/// schedule on the stages as measured, and both (the best rebalanced replay). Sets that save
/// nothing are left out.
pub(crate) fn sets(p: &Pipeline) -> Vec<crate::analysis::ReplaySet> {
    use crate::analysis::{ReplaySet, StepReplay, Transform};
    let best = |keep: &dyn Fn(&ScheduleReplay) -> bool| {
        p.replays
            .iter()
            .filter(|r| !r.as_run && keep(r))
            .map(|r| r.saving_ns)
            .max()
            .filter(|&s| s > 0)
    };
    let choices: [(Vec<Transform>, Option<i64>); 3] = [
        (
            vec![Transform::PipelineRebalance],
            best(&|r| r.rebalanced && Some(r.schedule) == p.schedule),
        ),
        (vec![Transform::PipelineSchedule], best(&|r| !r.rebalanced)),
        (
            vec![Transform::PipelineRebalance, Transform::PipelineSchedule],
            best(&|r| r.rebalanced),
        ),
    ];
    let touched: i64 = p.stages.iter().map(|r| r.step_ns).sum();
    choices
        .into_iter()
        .filter_map(|(transforms, saving)| {
            let saving = saving?;
            let steps: Vec<StepReplay> = p
                .stages
                .iter()
                .map(|r| StepReplay {
                    rank: Some(r.rank),
                    step: Some(r.step),
                    base_ns: r.step_ns,
                    replay_ns: (r.step_ns - saving).max(0),
                })
                .collect();
            Some(ReplaySet {
                transforms,
                steps: steps.clone(),
                touched_ns: touched,
                // Measured stages: the profiled steps themselves.
                profiled: steps.clone(),
                profiled_touched_ns: touched,
                ..Default::default()
            })
        })
        .collect()
}

/// The measured step: per step number the slowest rank's, averaged over steps.
pub(crate) fn measured_step_ns(p: &Pipeline) -> Option<f64> {
    let mut per: std::collections::BTreeMap<u64, i64> = Default::default();
    for r in &p.stages {
        let e = per.entry(r.step).or_default();
        *e = (*e).max(r.step_ns);
    }
    (!per.is_empty()).then(|| per.values().sum::<i64>() as f64 / per.len() as f64)
}

/// Per rank: its stages' forward and backward chunk times summed; None unless every stage
/// of the pipeline has both.
fn rank_totals(p: &Pipeline, schedule: Schedule) -> Option<(Vec<f64>, Vec<f64>)> {
    let ranks = p.ranks as usize;
    let (mut f, mut b) = (vec![0.0; ranks], vec![0.0; ranks]);
    for s in 0..p.stages_total {
        let c = p.chunks.iter().find(|c| c.stage == s)?;
        if c.forwards == 0 || c.backwards == 0 {
            return None;
        }
        let r = schedules::rank_of(schedule, s as usize, ranks);
        f[r] += c.forward_ns as f64;
        b[r] += c.backward_ns as f64;
    }
    Some((f, b))
}

/// The shape of `schedule` with `v` stages a rank, each rank's totals split evenly over them.
fn shape_of(p: &Pipeline, schedule: Schedule, v: usize, totals: &(Vec<f64>, Vec<f64>)) -> Shape {
    let ranks = p.ranks as usize;
    let stages = ranks * v;
    let per = |t: &[f64]| {
        (0..stages)
            .map(|s| t[schedules::rank_of(schedule, s, ranks)] / v as f64)
            .collect()
    };
    Shape {
        ranks,
        microbatches: p.microbatches as usize,
        forward_ns: per(&totals.0),
        backward_ns: per(&totals.1),
        weight_share: WEIGHT_SHARE,
        hop_ns: p.hop_ns.unwrap_or(0) as f64,
    }
}

/// The replays of a job's pipeline: the schedule as run (with the stages as measured, its
/// stages' own chunk times), each other schedule, and each rebalanced when the ranks' compute
/// is unequal; empty without a recognized schedule or with a stage unmeasured.
pub(crate) fn replays(p: &Pipeline) -> Vec<ScheduleReplay> {
    let (Some(current), Some(measured)) = (p.schedule, measured_step_ns(p)) else {
        return Vec::new();
    };
    let ranks = p.ranks as usize;
    let m = p.microbatches as usize;
    if ranks < 2 || m == 0 || p.stages_total as usize % ranks != 0 {
        return Vec::new();
    }
    let v_now = p.stages_total as usize / ranks;
    // The schedule as run, on each stage's own chunk times.
    let Some(own) = own_shape(p) else {
        return Vec::new();
    };
    let Some(as_run) = schedules::replay_schedule(&own, current) else {
        return Vec::new();
    };
    let rest = measured - as_run.span_ns;
    let Some(totals) = rank_totals(p, current) else {
        return Vec::new();
    };
    let slowest = totals
        .0
        .iter()
        .zip(&totals.1)
        .map(|(f, b)| f + b)
        .fold(0.0, f64::max);
    let fastest = totals
        .0
        .iter()
        .zip(&totals.1)
        .map(|(f, b)| f + b)
        .fold(f64::INFINITY, f64::min);
    let unequal = fastest > 0.0 && slowest / fastest > UNEQUAL_RATIO;
    let mean = |t: &[f64]| vec![t.iter().sum::<f64>() / t.len() as f64; t.len()];
    let (balanced, moved, unequal) = match by_layers(p, current, &totals) {
        // Whole layers: a move only where one helps.
        Some((t, l, now)) => {
            let moves = l != now;
            (t, Some(l), moves)
        }
        None => ((mean(&totals.0), mean(&totals.1)), None, unequal),
    };
    let mut out = vec![row(current, v_now, m, false, &as_run, measured, rest, true)];
    for schedule in [
        Schedule::GPipe,
        Schedule::OneFOneB,
        Schedule::Interleaved1F1B,
        Schedule::ZbvZeroBubble,
    ] {
        let v = schedule.stages_per_rank(v_now);
        for rebalanced in [false, true] {
            if rebalanced && !unequal || !rebalanced && schedule == current {
                continue;
            }
            let t = if rebalanced { &balanced } else { &totals };
            if let Some(r) = schedules::replay_schedule(&shape_of(p, schedule, v, t), schedule) {
                let mut replay = row(schedule, v, m, rebalanced, &r, measured, rest, false);
                if rebalanced {
                    replay.layers = moved.clone();
                }
                out.push(replay);
            }
        }
    }
    out
}

/// The pipeline as run: each stage's own medians, in stage order.
fn own_shape(p: &Pipeline) -> Option<Shape> {
    let mut forward = Vec::new();
    let mut backward = Vec::new();
    for s in 0..p.stages_total {
        let c = p.chunks.iter().find(|c| c.stage == s)?;
        forward.push(c.forward_ns as f64);
        backward.push(c.backward_ns as f64);
    }
    Some(Shape {
        ranks: p.ranks as usize,
        microbatches: p.microbatches as usize,
        forward_ns: forward,
        backward_ns: backward,
        weight_share: WEIGHT_SHARE,
        hop_ns: p.hop_ns.unwrap_or(0) as f64,
    })
}

#[allow(clippy::too_many_arguments)]
fn row(
    schedule: Schedule,
    v: usize,
    m: usize,
    rebalanced: bool,
    r: &schedules::Replayed,
    measured: f64,
    rest: f64,
    as_run: bool,
) -> ScheduleReplay {
    let step = (rest + r.span_ns).max(0.0);
    let idle: f64 = r.idle_ns.iter().sum::<f64>() / r.idle_ns.len().max(1) as f64;
    ScheduleReplay {
        schedule,
        stages_per_rank: v as u32,
        microbatches: m as u32,
        rebalanced,
        step_ns: step.round() as i64,
        saving_ns: (measured - step).round() as i64,
        bubble_pct: if r.span_ns > 0.0 {
            (idle / r.span_ns * 1000.0).round() / 10.0
        } else {
            0.0
        },
        as_run,
        layers: None,
    }
}
