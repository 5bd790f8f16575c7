//! Pipelines measured and replayed (feed `pipeline`): per rank and step, its stages' compute
//! and the bubble around it (`pipeline.stages[]`), each stage's forward and backward chunk per
//! microbatch, and the step replayed under other schedules and with the stages rebalanced
//! ([`schedules`], [`replays`]).
//!
//! The schedules of `torch.distributed.pipelining` annotate each chunk they run: `Forward i` /
//! `Backward i` (`ScheduleGPipe`, `Schedule1F1B`), `PP:<stage><F|B|I|W><microbatch>` (the
//! runtime schedules: interleaved, zero bubble). The GPU work launched while a chunk's
//! annotation is open on the host is that chunk's (the backward runs on the autograd engine's
//! thread while the schedule's thread waits inside the annotation). A rank's step splits into
//! its compute (its chunks' GPU spans, first kernel to last, and its other kernels but
//! communication: recv kernels spinning while the previous stage computes count as bubble, not
//! as communication) and the bubble, the rest; the bubble's fill before the first compute
//! kernel is `warmup_ns`, its drain after the last `cooldown_ns`. The GPU idle inside a chunk
//! (its host launching late) is compute time here, as CUDA events around the chunk measure it,
//! and `chunk_idle_ns` says how much: another schedule does not remove it, fewer launches do.

pub(crate) mod replays;
pub(crate) mod schedules;

use crate::analysis::numbers::median;
use crate::analysis::signals::collective_calls::{Call, CollectiveKind};
use crate::analysis::time::links::Links;
use crate::analysis::time::steps::Steps;
use crate::classify::Bucket;
use crate::model::{HostKind, Trace};
use schedules::{Pass, Schedule};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One rank's step in a pipeline (feed `pipeline.stages[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageRow {
    pub rank: u32,
    /// The rank's place in the pipeline (its first stage).
    pub stage: u32,
    /// Every stage the rank holds (interleaved and V schedules hold several).
    pub stages: Vec<u32>,
    pub step: u64,
    pub step_ns: i64,
    /// Its chunks' GPU spans and its kernels other than communication, united.
    pub compute_ns: i64,
    /// Of `compute_ns`, the GPU idle inside its chunks (between a chunk's kernels).
    #[serde(default)]
    pub chunk_idle_ns: i64,
    /// `step_ns − compute_ns`.
    pub bubble_ns: i64,
    pub bubble_pct: f64,
    /// From the step's start to its first compute kernel (the fill).
    pub warmup_ns: i64,
    /// From its last compute kernel to the step's end (the drain).
    pub cooldown_ns: i64,
    /// Its sends' and receives' kernel time waiting for the peer and moving bytes (null on
    /// one rank alone: the peer's side is needed to split them).
    pub p2p_wait_ns: Option<i64>,
    pub p2p_transfer_ns: Option<i64>,
    /// Its sends' and receives' kernel time.
    pub p2p_kernel_ns: i64,
    /// Bytes it sent and received (null: the trace records no size).
    pub p2p_bytes: Option<u64>,
    /// Microbatches its forward chunks ran.
    pub microbatches: u32,
    /// Peak memory allocated in the step (traces with `[memory]` events).
    pub peak_allocated_bytes: Option<i64>,
}

/// One stage's chunk times (medians over the microbatches and steps).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkRow {
    pub stage: u32,
    pub rank: u32,
    /// GPU time from a chunk's first kernel to its last.
    pub forward_ns: i64,
    pub backward_ns: i64,
    /// Chunks measured.
    pub forwards: u32,
    pub backwards: u32,
    /// Layers the stage holds, where its forward runs one attention kernel per layer (the
    /// median count per forward chunk); null otherwise.
    pub layers: Option<u32>,
}

/// The pipeline view (feed `pipeline`; null for jobs without one).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pipeline {
    /// The schedule its annotations show (null: no schedule annotations).
    pub schedule: Option<Schedule>,
    /// Ranks and stages in the pipeline, and microbatches per step.
    pub ranks: u32,
    pub stages_total: u32,
    pub microbatches: u32,
    pub stages: Vec<StageRow>,
    pub chunks: Vec<ChunkRow>,
    /// One hop between ranks: the median point-to-point transfer, waiting excluded (null on
    /// one rank alone).
    pub hop_ns: Option<i64>,
    /// The step replayed under other schedules and with the stages rebalanced.
    pub replays: Vec<replays::ScheduleReplay>,
    /// Per rank, the schedule its chunks' order shows (what the job's is decided from).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_schedules: Vec<(u32, Schedule)>,
}

/// A schedule's chunk annotation: (stage, when it names one; pass; microbatch).
pub(crate) fn chunk_of(name: &str) -> Option<(Option<u32>, Pass, u32)> {
    if let Some(rest) = name.strip_prefix("PP:") {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let stage: u32 = rest[..digits].parse().ok()?;
        let rest = &rest[digits..];
        let (pass, mb) = match rest.chars().next()? {
            'F' => (Pass::Forward, &rest[1..]),
            'B' => (Pass::Backward, &rest[1..]),
            'I' => (Pass::BackwardInput, &rest[1..]),
            'W' => (Pass::BackwardWeight, &rest[1..]),
            _ => return None,
        };
        return Some((Some(stage), pass, mb.parse().ok()?));
    }
    let (word, mb) = name.rsplit_once(' ')?;
    let pass = match word {
        "Forward" => Pass::Forward,
        "Backward" => Pass::Backward,
        "Backward_input" | "Backward input" => Pass::BackwardInput,
        "Backward_weight" | "Backward weight" => Pass::BackwardWeight,
        _ => return None,
    };
    Some((None, pass, mb.parse().ok()?))
}

/// What measuring reads of the analysis so far.
pub(crate) struct Sources<'a> {
    pub trace: &'a Trace,
    pub links: &'a Links,
    pub steps: &'a Steps,
    pub in_scope: &'a [bool],
    pub activity_buckets: &'a [Bucket],
    pub calls: &'a [Call],
    pub memory: &'a [crate::analysis::signals::memory::DeviceMemory],
}

/// One chunk as run: its stage, pass, microbatch, step and GPU span.
struct Chunk {
    stage: Option<u32>,
    pass: Pass,
    microbatch: u32,
    step: Option<u64>,
    gpu: Option<(i64, i64)>,
    /// Compute kernels launched in it, and of those attention kernels (one per layer in a
    /// transformer's forward).
    kernels: u32,
    attention: u32,
}

/// Chunks of fewer kernels are the schedule's bookkeeping (the backward's seed gradient, a
/// copy), not a stage's pass.
const MIN_CHUNK_KERNELS: u32 = 4;

/// Per (stage, rank): its forward and backward chunks' times and its forwards' attention
/// kernels.
type ChunkTimes = (Vec<i64>, Vec<i64>, Vec<i64>);

/// A schedule's chunk annotation's host span and what it names.
type ChunkSpan = (i64, i64, (Option<u32>, Pass, u32));

/// The pipeline of each input whose trace shows a schedule's chunks or point-to-point calls
/// of a pipeline (`pipeline_ranks`: the inputs the parallelism view names), as one view.
pub(crate) fn measure(src: &Sources, pipeline_inputs: &[u32]) -> Option<Pipeline> {
    if pipeline_inputs.is_empty() {
        return None;
    }
    let mut out = Pipeline::default();
    let mut chunk_times: BTreeMap<(u32, u32), ChunkTimes> = BTreeMap::new();
    for &input in pipeline_inputs {
        let rank = src.trace.inputs[input as usize].rank.unwrap_or(input);
        let chunks = chunks(src, input);
        let position = place(src, input, rank);
        let mut stages: Vec<u32> = chunks.iter().filter_map(|c| c.stage).collect();
        stages.sort_unstable();
        stages.dedup();
        if stages.is_empty() {
            stages.push(position);
        }
        // A zero-bubble schedule's backward is its input and weight gradients together.
        let mut backward: BTreeMap<(u32, Option<u64>, u32), i64> = BTreeMap::new();
        for c in &chunks {
            let stage = c.stage.unwrap_or(position);
            let Some((s, e)) = c.gpu else { continue };
            let t = chunk_times.entry((stage, rank)).or_default();
            match c.pass {
                Pass::Forward => {
                    t.0.push(e - s);
                    t.2.push(i64::from(c.attention));
                }
                _ => *backward.entry((stage, c.step, c.microbatch)).or_default() += e - s,
            }
        }
        for ((stage, _, _), ns) in backward {
            chunk_times.entry((stage, rank)).or_default().1.push(ns);
        }
        if let Some(s) = recognize(&chunks, stages.len()) {
            out.rank_schedules.push((rank, s));
        }
        out.stages
            .extend(step_rows(src, input, rank, &stages, &chunks));
    }
    out.chunks = chunk_times
        .into_iter()
        .map(|((stage, rank), (f, b, attention))| ChunkRow {
            stage,
            rank,
            forward_ns: median(&f).round() as i64,
            backward_ns: median(&b).round() as i64,
            forwards: f.len() as u32,
            backwards: b.len() as u32,
            layers: Some(median(&attention).round() as u32).filter(|&n| n > 0),
        })
        .collect();
    out.finish_shape();
    Some(out)
}

impl Pipeline {
    /// Ranks, stages, microbatches and the schedule from the rows and orders gathered.
    pub(crate) fn finish_shape(&mut self) {
        self.stages.sort_by_key(|r| (r.step, r.stage, r.rank));
        self.chunks.sort_by_key(|c| (c.stage, c.rank));
        self.rank_schedules.sort_unstable();
        // Ranks of one place (a stage replicated by data or tensor parallelism) count once:
        // the pipeline's degree is its number of places.
        let places: std::collections::BTreeSet<u32> = self.stages.iter().map(|r| r.stage).collect();
        self.ranks = places.len() as u32;
        self.stages_total = self
            .stages
            .iter()
            .flat_map(|r| r.stages.iter().copied())
            .max()
            .map_or(0, |s| s + 1)
            .max(self.ranks);
        self.microbatches = self
            .stages
            .iter()
            .map(|r| r.microbatches)
            .max()
            .unwrap_or(0);
        // The ranks agree on a schedule; where one rank's order cannot tell GPipe from 1F1B
        // (one microbatch), the others' decide.
        let mut seen: Vec<Schedule> = self.rank_schedules.iter().map(|&(_, s)| s).collect();
        seen.sort_unstable();
        seen.dedup();
        let p = self.ranks;
        let v_shaped = self.stages.iter().all(|r| {
            r.stages.len() == 2 && r.stages[0] < p && r.stages[1] == 2 * p - 1 - r.stages[0]
        });
        // Weight gradients apart in a loop placement (ScheduleInterleavedZeroBubble) are no V:
        // no replay models that order.
        seen.retain(|&s| s != Schedule::ZbvZeroBubble || v_shaped);
        self.schedule = match seen.as_slice() {
            [] => None,
            [one] => Some(*one),
            many => many.iter().copied().find(|&s| s != Schedule::GPipe),
        };
    }
}

/// The job's pipeline from its ranks' views: their rows joined, each rank's sends' and
/// receives' kernel time split into waiting for the peer and moving bytes (`waits`: each
/// matched call's wait by (input, stream, start), inputs numbered as in `calls`), one hop the
/// median transfer, and the replays.
pub(crate) fn merge<'a>(
    ranks: impl Iterator<Item = &'a Pipeline>,
    calls: &[Call],
    rank_of: impl Fn(u32) -> u32,
    waits: &rustc_hash::FxHashMap<(u32, u32, i64), i64>,
) -> Option<Pipeline> {
    let mut out = Pipeline::default();
    let mut any = false;
    for p in ranks {
        any = true;
        out.stages.extend(p.stages.iter().cloned());
        out.chunks.extend(p.chunks.iter().cloned());
        out.rank_schedules.extend(p.rank_schedules.iter().copied());
    }
    if !any {
        return None;
    }
    let mut split: BTreeMap<(u32, u64), (i64, i64)> = BTreeMap::new();
    let mut transfers = Vec::new();
    for c in calls.iter().filter(|c| is_p2p(c.kind)) {
        let (Some(&wait), Some(step)) = (waits.get(&(c.input, c.stream, c.ts)), c.step) else {
            continue;
        };
        let wait = wait.clamp(0, c.dur);
        let e = split.entry((rank_of(c.input), step)).or_default();
        e.0 += wait;
        e.1 += c.dur - wait;
        transfers.push(c.dur - wait);
    }
    for r in &mut out.stages {
        if let Some(&(w, t)) = split.get(&(r.rank, r.step)) {
            r.p2p_wait_ns = Some(w);
            r.p2p_transfer_ns = Some(t);
        }
    }
    out.hop_ns = (!transfers.is_empty()).then(|| median(&transfers).round() as i64);
    out.finish_shape();
    out.replays = replays::replays(&out);
    Some(out)
}

/// The schedule one rank's chunks show: weight gradients apart are zero bubble; several stages
/// a rank are interleaved; every forward of a step before its first backward is GPipe; else
/// 1F1B.
fn recognize(chunks: &[Chunk], stages_held: usize) -> Option<Schedule> {
    if chunks.is_empty() || !chunks.iter().any(|c| c.pass != Pass::Forward) {
        return None;
    }
    if chunks.iter().any(|c| c.pass == Pass::BackwardWeight) {
        return Some(Schedule::ZbvZeroBubble);
    }
    if stages_held > 1 {
        return Some(Schedule::Interleaved1F1B);
    }
    let mut backward_seen: BTreeMap<Option<u64>, bool> = BTreeMap::new();
    let gpipe = chunks.iter().all(|c| {
        let seen = backward_seen.entry(c.step).or_default();
        match c.pass {
            // Microbatch 0's forward starts a round (an iteration of a trace without steps).
            Pass::Forward if c.microbatch == 0 => {
                *seen = false;
                true
            }
            Pass::Forward => !*seen,
            _ => {
                *seen = true;
                true
            }
        }
    });
    Some(if gpipe {
        Schedule::GPipe
    } else {
        Schedule::OneFOneB
    })
}

/// The rank's place in the pipeline: its index in the ranks of its point-to-point group.
fn place(src: &Sources, input: u32, rank: u32) -> u32 {
    src.calls
        .iter()
        .filter(|c| c.input == input && is_p2p(c.kind))
        .find_map(|c| {
            let ranks = c.args.as_ref()?.process_group_ranks.as_deref()?;
            let list: Vec<u32> = ranks
                .trim_matches(|ch| ch == '[' || ch == ']')
                .split(',')
                .filter_map(|r| r.trim().parse().ok())
                .collect();
            list.iter().position(|&r| r == rank).map(|p| p as u32)
        })
        .unwrap_or(rank)
}

pub(crate) fn is_p2p(kind: CollectiveKind) -> bool {
    matches!(
        kind,
        CollectiveKind::Send | CollectiveKind::Recv | CollectiveKind::SendRecv
    )
}

/// The input's schedule chunks in host order, each with the GPU span of the compute kernels
/// launched while it was open.
fn chunks(src: &Sources, input: u32) -> Vec<Chunk> {
    let trace = src.trace;
    let host = &trace.host;
    let parsed = trace.names.per_name(chunk_of);
    let mut spans: Vec<ChunkSpan> = (0..host.len())
        .filter(|&h| {
            host.input[h] == input && matches!(host.kind[h], HostKind::Annotation | HostKind::CpuOp)
        })
        .filter_map(|h| Some((host.ts_ns[h], host.end_ns(h), parsed[host.name[h].index()]?)))
        .collect();
    spans.sort_by_key(|s| (s.0, s.1));
    // The input's compute kernels by launch time.
    let acts = &trace.activities;
    let mut kernels: Vec<(i64, usize)> = (0..acts.len())
        .filter(|&a| {
            acts.input[a] == input
                && src.in_scope[a]
                && src.activity_buckets[a] != Bucket::Communication
        })
        .filter_map(|a| Some((host.ts_ns[src.links.launch[a]? as usize], a)))
        .collect();
    kernels.sort_unstable();
    let (autograd, optimizer) = threads_and_optimizer(trace, input);
    // The optimizer's spans, merged and sorted: a launch inside one is no chunk's.
    let mut merged = optimizer;
    crate::analysis::numbers::merge_spans(&mut merged);
    kernels.retain(|&(t, _)| {
        let k = merged.partition_point(|&(s, _)| s <= t);
        k == 0 || merged[k - 1].1 < t
    });
    if spans.is_empty() {
        return inferred_chunks(src, input, &kernels, &autograd);
    }
    // What a schedule computes between two chunks' annotations (GPipe's loss after each
    // forward) is the earlier chunk's.
    let ends: Vec<i64> = (0..spans.len())
        .map(|i| {
            spans
                .get(i + 1)
                .map_or(spans[i].1, |next| next.0.max(spans[i].1))
        })
        .collect();
    spans
        .into_iter()
        .zip(ends)
        .map(|((s, _, (stage, pass, microbatch)), e)| {
            let from = kernels.partition_point(|&(t, _)| t < s);
            let to = kernels.partition_point(|&(t, _)| t < e);
            let step_of = |a: usize| src.steps.of_activity[a];
            let first_step = kernels[from..to].first().map(|&(_, a)| step_of(a));
            let launched: Vec<(i64, usize)> = kernels[from..to]
                .iter()
                .copied()
                .filter(|&(_, a)| Some(step_of(a)) == first_step)
                .collect();
            let gpu = launched
                .iter()
                .fold(None, |acc: Option<(i64, i64)>, &(_, a)| {
                    let (ks, ke) = (acts.ts_ns[a], acts.end_ns(a));
                    Some(acc.map_or((ks, ke), |(s0, e0)| (s0.min(ks), e0.max(ke))))
                });
            let step = launched.first().and_then(|&(_, a)| {
                src.steps.of_activity[a]
                    .map(|k| src.steps.per_input[input as usize][k as usize].number)
            });
            Chunk {
                stage,
                pass,
                microbatch,
                step,
                gpu,
                kernels: launched.len() as u32,
                attention: launched
                    .iter()
                    .filter(|&&(_, a)| src.activity_buckets[a] == Bucket::Attention)
                    .count() as u32,
            }
        })
        .collect()
}

/// The input's threads that run the autograd engine, and the spans of its optimizer's steps.
fn threads_and_optimizer(
    trace: &Trace,
    input: u32,
) -> (std::collections::BTreeSet<u32>, Vec<(i64, i64)>) {
    let host = &trace.host;
    let engine = trace
        .names
        .per_name(|n| n.starts_with("autograd::engine::evaluate_function"));
    let optimizer = trace
        .names
        .per_name(|n| n.starts_with("Optimizer.") || n.starts_with("Optimizer#"));
    let mut autograd: std::collections::BTreeSet<u32> = Default::default();
    let mut excluded: Vec<(i64, i64)> = Vec::new();
    for h in (0..host.len()).filter(|&h| host.input[h] == input) {
        let id = host.name[h].index();
        if engine[id] {
            autograd.insert(host.thread[h]);
        } else if optimizer[id] {
            excluded.push((host.ts_ns[h], host.end_ns(h)));
        }
    }
    (autograd, excluded)
}

/// The chunks of a schedule that annotates none (torch's `Schedule1F1B`, pipelines by hand):
/// the compute kernels in launch order, cut wherever a communication kernel is launched or the
/// launching thread changes between the schedule's (forwards) and the autograd engine's
/// (backwards); the k-th forward (backward) of a step is microbatch k's. The optimizer's
/// kernels are no chunk's.
fn inferred_chunks(
    src: &Sources,
    input: u32,
    kernels: &[(i64, usize)],
    autograd: &std::collections::BTreeSet<u32>,
) -> Vec<Chunk> {
    let trace = src.trace;
    let host = &trace.host;
    let acts = &trace.activities;
    // The schedule's sends and receives cut chunks (a layer's tensor-parallel all-reduce or
    // FSDP's prefetch does not).
    let p2p_kernel = |a: usize| {
        let args = crate::model::comms::CommArgs::decode(trace.names.get(acts.comm(a)));
        let kind = args
            .map(|c| CollectiveKind::from_collective_name(&c.collective))
            .filter(|k| *k != CollectiveKind::Unknown)
            .unwrap_or_else(|| CollectiveKind::from_kernel_name(trace.names.get(acts.name[a])));
        is_p2p(kind)
    };
    let mut cuts: Vec<i64> = (0..acts.len())
        .filter(|&a| {
            acts.input[a] == input
                && src.in_scope[a]
                && src.activity_buckets[a] == Bucket::Communication
                && p2p_kernel(a)
        })
        .filter_map(|a| Some(host.ts_ns[src.links.launch[a]? as usize]))
        .collect();
    cuts.sort_unstable();
    let mut out: Vec<Chunk> = Vec::new();
    let mut last: Option<(i64, Pass, Option<u64>)> = None;
    for &(t, a) in kernels {
        let Some(h) = src.links.launch[a] else {
            continue;
        };
        let pass = if autograd.contains(&host.thread[h as usize]) {
            Pass::Backward
        } else {
            Pass::Forward
        };
        let step = src.steps.of_activity[a]
            .map(|k| src.steps.per_input[input as usize][k as usize].number);
        let cut = last.is_none_or(|(prev, p, st)| {
            p != pass || st != step || {
                let k = cuts.partition_point(|&c| c <= prev);
                cuts.get(k).is_some_and(|&c| c < t)
            }
        });
        let span = (acts.ts_ns[a], acts.end_ns(a));
        if cut {
            out.push(Chunk {
                stage: None,
                pass,
                microbatch: 0,
                step,
                gpu: Some(span),
                kernels: 0,
                attention: 0,
            });
        }
        if let Some(c) = out.last_mut() {
            c.gpu = c.gpu.map(|(s, e)| (s.min(span.0), e.max(span.1)));
            c.kernels += 1;
            c.attention += u32::from(src.activity_buckets[a] == Bucket::Attention);
        }
        last = Some((t, pass, step));
    }
    out.retain(|c| c.kernels >= MIN_CHUNK_KERNELS);
    // After a step's last backward the schedule scales the gradients: no microbatch's forward.
    let last_backward: BTreeMap<Option<u64>, usize> = out
        .iter()
        .enumerate()
        .filter(|(_, c)| c.pass != Pass::Forward)
        .map(|(i, c)| (c.step, i))
        .collect();
    let mut k = 0;
    out.retain(|c| {
        k += 1;
        c.pass != Pass::Forward || last_backward.get(&c.step).is_none_or(|&last| k - 1 < last)
    });
    let mut counts: BTreeMap<(Option<u64>, Pass), u32> = BTreeMap::new();
    for c in &mut out {
        let n = counts.entry((c.step, c.pass)).or_default();
        c.microbatch = *n;
        *n += 1;
    }
    out
}

/// The input's kept steps as stage rows.
fn step_rows(
    src: &Sources,
    input: u32,
    rank: u32,
    stages: &[u32],
    chunks: &[Chunk],
) -> Vec<StageRow> {
    let acts = &src.trace.activities;
    let mut compute: BTreeMap<u64, Vec<(i64, i64)>> = BTreeMap::new();
    for a in 0..acts.len() {
        if acts.input[a] != input
            || !src.in_scope[a]
            || src.activity_buckets[a] == Bucket::Communication
        {
            continue;
        }
        let Some(k) = src.steps.of_activity[a] else {
            continue;
        };
        let step = src.steps.per_input[input as usize][k as usize].number;
        compute
            .entry(step)
            .or_default()
            .push((acts.ts_ns[a], acts.end_ns(a)));
    }
    let mut p2p_by_step: BTreeMap<u64, Vec<&Call>> = BTreeMap::new();
    for c in src
        .calls
        .iter()
        .filter(|c| c.input == input && is_p2p(c.kind))
    {
        if let Some(step) = c.step {
            p2p_by_step.entry(step).or_default().push(c);
        }
    }
    let peaks: BTreeMap<u64, i64> = src
        .memory
        .iter()
        .filter(|m| m.input == input)
        .flat_map(|m| m.per_step.iter().map(|s| (s.step, s.peak_allocated_bytes)))
        .collect();
    src.steps
        .kept(input as usize)
        .map(|(_, w)| {
            let mut spans = compute.remove(&w.number).unwrap_or_default();
            let kernels_ns = union_ns(&mut spans);
            spans.extend(
                chunks
                    .iter()
                    .filter(|c| c.step == Some(w.number))
                    .filter_map(|c| c.gpu),
            );
            let busy = union_ns(&mut spans);
            let first = spans.iter().map(|s| s.0).min().unwrap_or(w.end_ns);
            let last = spans.iter().map(|s| s.1).max().unwrap_or(w.start_ns);
            let p2p: &[&Call] = p2p_by_step.get(&w.number).map_or(&[], Vec::as_slice);
            let bytes = p2p.iter().map(|c| c.bytes).sum::<Option<u64>>();
            let step_ns = w.dur_ns();
            let bubble = (step_ns - busy).max(0);
            StageRow {
                rank,
                stage: stages[0],
                stages: stages.to_vec(),
                step: w.number,
                step_ns,
                compute_ns: busy,
                chunk_idle_ns: busy - kernels_ns,
                bubble_ns: bubble,
                bubble_pct: crate::analysis::numbers::pct(bubble, step_ns),
                warmup_ns: (first - w.start_ns).clamp(0, step_ns),
                cooldown_ns: (w.end_ns - last).clamp(0, step_ns),
                p2p_wait_ns: None,
                p2p_transfer_ns: None,
                p2p_kernel_ns: p2p.iter().map(|c| c.dur).sum(),
                p2p_bytes: bytes.filter(|_| !p2p.is_empty()),
                microbatches: chunks
                    .iter()
                    .filter(|c| c.step == Some(w.number) && c.pass == Pass::Forward)
                    .map(|c| c.microbatch)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len() as u32,
                peak_allocated_bytes: peaks.get(&w.number).copied(),
            }
        })
        .collect()
}

/// The time the spans cover (sorted in place).
fn union_ns(spans: &mut [(i64, i64)]) -> i64 {
    spans.sort_unstable();
    let (mut total, mut end) = (0i64, i64::MIN);
    for &(s, e) in spans.iter() {
        if e <= end {
            continue;
        }
        total += e - s.max(end);
        end = e;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_annotations_of_every_schedule_parse() {
        assert_eq!(chunk_of("Forward 3"), Some((None, Pass::Forward, 3)));
        assert_eq!(chunk_of("Backward 12"), Some((None, Pass::Backward, 12)));
        assert_eq!(chunk_of("PP:2B7"), Some((Some(2), Pass::Backward, 7)));
        assert_eq!(chunk_of("PP:13F0"), Some((Some(13), Pass::Forward, 0)));
        assert_eq!(chunk_of("PP:1W4"), Some((Some(1), Pass::BackwardWeight, 4)));
        assert_eq!(chunk_of("PP:0RECV_B3"), None);
        assert_eq!(chunk_of("PP:0UNSHARD"), None);
        assert_eq!(chunk_of("Forward pass"), None);
        assert_eq!(chunk_of("aten::mm"), None);
    }

    #[test]
    fn the_union_counts_overlaps_once() {
        let mut spans = vec![(5, 10), (0, 4), (3, 6), (20, 25), (21, 22)];
        assert_eq!(union_ns(&mut spans), 10 + 5);
    }
}
