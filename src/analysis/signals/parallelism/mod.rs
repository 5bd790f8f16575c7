//! Which parallelisms a job uses (feed `parallelism[]`), from the trace alone: what each
//! process group sends, when, and inside which ops, as well as the wrappers' names. Names alone
//! never decide (a 1-D DeviceMesh reuses `default_pg`; under torch.compile DTensor's
//! `Redistribute` disappears and FSDP2 also uses `_c10d_functional`), so each group's kind
//! comes from its calls:
//! - point-to-point sends and receives: a pipeline's activations between stages, or a ring of
//!   K/V inside attention (context parallel);
//! - all-to-all: expert parallel's dispatch and combine, or Ulysses context parallel when it
//!   runs inside attention;
//! - all-gathers with reduce-scatters: FSDP's parameter shards (gathered in the forward, their
//!   gradients reduce-scattered in the backward); reduce-scatters in the forward too are
//!   sequence parallel's activations;
//! - all-reduces: gradients in the backward alone are data parallel (DDP, or HSDP's
//!   replication when another group shards); all-reduces in the forward too are tensor
//!   parallel's activations.
//!
//! The wrappers' ops and annotations (`DistributedDataParallel.forward`, `FSDP::…`,
//! `FullyShardedDataParallel.…`, `Redistribute`, the pipelining schedules' `Forward i`, …) name
//! the implementation and back the kind up. One rank's trace gives its rows; a job's are the
//! union over its ranks ([`merge`]).

use crate::analysis::signals::collective_calls::{covered, Call, CollectiveKind};
use crate::analysis::time::links::Links;
use crate::classify::Bucket;
use crate::model::comms::CommArgs;
use crate::model::{ActivityKind, HostKind, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A kind of parallelism (feed `parallelism[].kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParallelKind {
    Ddp,
    Fsdp,
    Hsdp,
    Tensor,
    Sequence,
    Pipeline,
    Expert,
    Context,
}

impl ParallelKind {
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
    /// Data parallel in any form: each rank runs the whole model on its own batch.
    pub fn is_data_parallel(self) -> bool {
        matches!(
            self,
            ParallelKind::Ddp | ParallelKind::Fsdp | ParallelKind::Hsdp
        )
    }
}

/// One parallelism of the job on one process group (feed `parallelism[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parallelism {
    pub kind: ParallelKind,
    /// The implementation its names show (`ddp`, `fsdp1`, `fsdp2`, `dtensor`, `vllm`,
    /// `torch.pipelining`, …); null when only the traffic says.
    #[serde(rename = "impl")]
    pub implementation: Option<String>,
    /// The process group's `pg_name` (null: the calls carry none, as custom all-reduces).
    pub group: Option<String>,
    /// The group's `pg_desc` when a DeviceMesh named it (`mesh_tp`, …), else null.
    pub mesh_dim: Option<String>,
    /// Ranks in the group (the parallel degree).
    pub degree: Option<u32>,
    /// What decided it, in words.
    pub evidence: Vec<String>,
    /// Ranks whose trace shows it.
    #[serde(default)]
    pub ranks: Vec<u32>,
    /// Expert parallel: per rank, the rows its forward dispatches sent to each rank of the
    /// group and received from each (the all-to-alls' split sizes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expert_load: Vec<ExpertLoad>,
    /// Expert parallel: the most rows a rank's experts received over the mean of the ranks'
    /// (1: balanced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_imbalance: Option<f64>,
    /// DDP: gradient accumulation that all-reduces every microbatch's gradients (null when each
    /// step's backward all-reduces once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accumulation: Option<Accumulation>,
    /// Expert parallel: the local experts run as a Python loop of GEMMs (null: grouped, or not
    /// measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_loop: Option<ExpertLoop>,
}

/// Between each dispatch and its combine (and their backwards), the GEMMs of a loop over the
/// local experts (feed `parallelism[].expert_loop`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExpertLoop {
    /// Sections between a dispatch and its combine measured (forward and backward).
    pub sections: u32,
    /// GEMM kernels in a forward section (the median): three per local expert in a loop.
    pub gemms_per_section: u32,
    /// The host's time from each section's first all-to-all launch to its second, summed over
    /// sections and ranks.
    pub host_ns: i64,
    /// Of that, the loop's per-expert repetitions: all but one expert's share.
    pub avoidable_host_ns: i64,
}

/// DDP's gradients all-reduced after more than one forward of a step (feed
/// `parallelism[].accumulation`): accumulation without `no_sync()`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Accumulation {
    /// The most forwards of one step whose backward all-reduced gradients.
    pub synced_microbatches: u32,
    /// Steps with more than one.
    pub steps: u32,
    /// The all-reduces of every synced microbatch but each step's last: their kernel time, and
    /// the part no other GPU work overlapped (summed over steps and ranks).
    pub avoidable_ns: i64,
    pub avoidable_exposed_ns: i64,
}

/// One rank's forward dispatches (feed `parallelism[].expert_load[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpertLoad {
    pub rank: u32,
    /// Rows sent to each rank of the group (the dispatches' `In split size`, summed).
    pub sent_rows: Vec<u64>,
    /// Rows received from each rank (`Out split size`, summed): its experts' load.
    pub received_rows: Vec<u64>,
}

impl ExpertLoad {
    /// The forward's dispatches of one rank: every other uneven all-to-all, the first of
    /// each dispatch / combine pair.
    pub(super) fn of(rank: u32, uneven: &[(Vec<u64>, Vec<u64>)]) -> Option<ExpertLoad> {
        let add = |into: &mut Vec<u64>, v: &[u64]| {
            into.resize(into.len().max(v.len()), 0);
            for (a, b) in into.iter_mut().zip(v) {
                *a += b;
            }
        };
        let (mut sent, mut received) = (Vec::new(), Vec::new());
        for (to, from) in uneven.iter().step_by(2) {
            add(&mut sent, to);
            add(&mut received, from);
        }
        (!sent.is_empty()).then_some(ExpertLoad {
            rank,
            sent_rows: sent,
            received_rows: received,
        })
    }
}

/// The most rows a rank received over the mean (None without two ranks' loads).
fn imbalance(loads: &[ExpertLoad]) -> Option<f64> {
    let got: Vec<u64> = loads.iter().map(|l| l.received_rows.iter().sum()).collect();
    let mean = got.iter().sum::<u64>() as f64 / got.len().max(1) as f64;
    let most = *got.iter().max()? as f64;
    (got.len() >= 2 && mean > 0.0).then(|| (most / mean * 1000.0).round() / 1000.0)
}

/// Families of host names that say which wrapper or schedule runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Family {
    Ddp,
    Fsdp1,
    Fsdp2,
    Redistribute,
    AsyncTp,
    Pipelining,
    Vllm,
    Megatron,
    DeepSpeed,
    Attention,
    GroupedGemm,
    ContextParallel,
    /// TorchRec's sharded embeddings (their all-to-alls are not experts').
    EmbeddingSharding,
    /// Functional collectives (`_c10d_functional::…`: DTensor's, FSDP2's and compiled code's).
    Functional,
}

impl Family {
    fn of(name: &str) -> Option<Family> {
        let n = name;
        Some(
            if n == "DistributedDataParallel.forward" || n.contains("ddp.reducer") {
                Family::Ddp
            } else if n.starts_with("FullyShardedDataParallel") {
                Family::Fsdp1
            } else if n.starts_with("FSDP::") {
                Family::Fsdp2
            } else if n == "Redistribute" || n.starts_with("redistribute") {
                Family::Redistribute
            } else if n.starts_with("symm_mem::fused_") {
                Family::AsyncTp
            } else if is_schedule_action(n) {
                Family::Pipelining
            } else if n.starts_with("vllm::") && n.contains("all_reduce") {
                Family::Vllm
            } else if n.starts_with("megatron") || n.contains("megatron.core") {
                Family::Megatron
            } else if n.starts_with("DeepSpeedEngine") || n.contains("deepspeed") {
                Family::DeepSpeed
            } else if n.contains("ring_attention") || n.contains("context_parallel") {
                Family::ContextParallel
            } else if n.contains("scaled_dot_product")
                || n.contains("flash_attn")
                || n.contains("efficient_attention")
                || n.contains("cudnn_attention")
            {
                Family::Attention
            } else if n.starts_with("_c10d_functional::") {
                Family::Functional
            } else if n.contains("KJTAllToAll") || n.starts_with("torchrec") {
                Family::EmbeddingSharding
            } else if n.contains("_grouped_mm")
                || n == "aten::topk"
                || n.to_ascii_lowercase().contains("moe")
                || n.to_ascii_lowercase().contains("expert")
            {
                Family::GroupedGemm
            } else {
                return None;
            },
        )
    }
}

/// A pipelining schedule's action annotation: `Forward 3`, `Backward 3`, torch's runtime
/// schedules' `PP:…`, zero-bubble's `Backward input`/`Backward weight`.
pub(crate) fn is_schedule_action(name: &str) -> bool {
    if let Some(rest) = name.strip_prefix("PP:") {
        return !rest.is_empty();
    }
    let words: Vec<&str> = name.split_whitespace().collect();
    matches!(words.as_slice(), [first, .., last]
        if matches!(*first, "Forward" | "Backward" | "Backward_input" | "Backward_weight")
            && last.chars().all(|c| c.is_ascii_digit()))
}

/// Where a collective was launched: inside which families' ops, and on the autograd engine's
/// thread (the backward) or not.
#[derive(Clone, Copy, Debug, Default)]
struct Site {
    backward: bool,
    /// Launched by the schedule's thread after the step's backward ended (gradient reduction,
    /// the optimizer).
    after_backward: bool,
    inside: u32,
    /// The c10d op or `nccl:` annotation around the launch, by its type (NCCL runs sends,
    /// receives and all-to-alls all as `SendRecv` kernels).
    op_kind: Option<CollectiveKind>,
}

impl Site {
    fn has(self, f: Family) -> bool {
        self.inside & (1 << f as u32) != 0
    }
}

/// One process group's calls of one collective type.
#[derive(Clone, Debug, Default)]
pub(super) struct Traffic {
    pub(super) calls: u64,
    pub(super) backward: u64,
    pub(super) after_backward: u64,
    pub(super) inside: BTreeMap<Family, u64>,
    pub(super) bytes: BTreeMap<u64, u64>,
}

/// A process group as its calls name it.
#[derive(Clone, Debug, Default)]
pub(super) struct Group {
    pub(super) desc: Option<String>,
    pub(super) size: Option<u32>,
    pub(super) by_kind: BTreeMap<CollectiveKind, Traffic>,
    /// The forward's all-to-alls with uneven splits, in order: (rows to each rank, rows from
    /// each rank).
    pub(super) uneven: Vec<(Vec<u64>, Vec<u64>)>,
    /// Gradient all-reduces launched by the backward under DDP: per step, per DDP forward (its
    /// index on the input), their (kernel ns, exposed ns).
    pub(super) synced: BTreeMap<Option<u64>, BTreeMap<usize, (i64, i64)>>,
    /// Its all-to-alls with uneven splits (both passes), as (kernel start, kernel end, launch
    /// time on the host).
    pub(super) uneven_kernels: Vec<(i64, i64, i64)>,
    /// Between each pair of those: (GEMM kernels, any of them a grouped one, host time).
    pub(super) expert_sections: Vec<(u32, bool, i64)>,
}

impl Group {
    /// One call of `kind` launched at `site`.
    fn count(&mut self, kind: CollectiveKind, site: Site, bytes: Option<u64>) {
        let t = self.by_kind.entry(kind).or_default();
        t.calls += 1;
        t.backward += u64::from(site.backward);
        t.after_backward += u64::from(site.after_backward);
        for f in FAMILIES {
            if site.has(f) {
                *t.inside.entry(f).or_default() += 1;
            }
        }
        if let Some(b) = bytes {
            *t.bytes.entry(b).or_default() += 1;
        }
    }

    /// A backward's gradient all-reduce launched after DDP's forward `forward`.
    fn synced_after(&mut self, call: &Call, forward: usize) {
        let exposed = call.dur - covered(&call.busy, call.ts, call.ts + call.dur);
        let e = self
            .synced
            .entry(call.step)
            .or_default()
            .entry(forward)
            .or_default();
        e.0 += call.dur;
        e.1 += exposed;
    }

    pub(super) fn traffic(&self, kinds: &[CollectiveKind]) -> Traffic {
        let mut out = Traffic::default();
        for t in kinds.iter().filter_map(|k| self.by_kind.get(k)) {
            out.calls += t.calls;
            out.backward += t.backward;
            out.after_backward += t.after_backward;
            for (f, n) in &t.inside {
                *out.inside.entry(*f).or_default() += n;
            }
            for (b, n) in &t.bytes {
                *out.bytes.entry(*b).or_default() += n;
            }
        }
        out
    }
}

pub(super) const P2P: [CollectiveKind; 3] = [
    CollectiveKind::Send,
    CollectiveKind::Recv,
    CollectiveKind::SendRecv,
];
pub(super) const ALL_TO_ALL: [CollectiveKind; 2] =
    [CollectiveKind::AllToAll, CollectiveKind::AllToAllv];

/// What the recognition reads of the analysis so far.
pub(crate) struct Sources<'a> {
    pub trace: &'a Trace,
    pub links: &'a Links,
    pub in_scope: &'a [bool],
    pub activity_buckets: &'a [Bucket],
}

/// Per input: the families' host events by count, and each process group's traffic.
pub(super) struct Evidence {
    pub(super) names: BTreeMap<Family, u64>,
    pub(super) groups: BTreeMap<Option<String>, Group>,
    pub(super) world: Option<u32>,
    pub(super) rank: Option<u32>,
}

mod kinds;

/// The parallelisms each input of `src` shows (rows in kind, group order; ranks filled).
pub(crate) fn recognize(src: &Sources, calls: &[Call]) -> Vec<Parallelism> {
    let per_input = evidence(src, calls);
    let mut rows: Vec<Parallelism> = Vec::new();
    for (input, ev) in per_input.iter().enumerate() {
        // One input's rows of one kind and group are one row, their evidence joined.
        let mut own: Vec<Parallelism> = Vec::new();
        for mut row in kinds::classify(ev) {
            row.ranks = vec![ev.rank.unwrap_or(input as u32)];
            match own
                .iter_mut()
                .find(|r| r.kind == row.kind && r.group == row.group)
            {
                Some(have) => have.evidence.extend(row.evidence),
                None => own.push(row),
            }
        }
        rows.extend(own);
    }
    merge(&[rows])
}

/// The union of ranks' rows: one row per (kind, group), its ranks joined, the largest degree,
/// the evidence of the first rank that shows it.
pub(crate) fn merge(ranks: &[Vec<Parallelism>]) -> Vec<Parallelism> {
    let mut by_key: BTreeMap<(ParallelKind, Option<String>), Parallelism> = BTreeMap::new();
    for row in ranks.iter().flatten() {
        match by_key.entry((row.kind, row.group.clone())) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(row.clone());
            }
            std::collections::btree_map::Entry::Occupied(mut o) => {
                let have = o.get_mut();
                have.ranks.extend(&row.ranks);
                have.degree = have.degree.max(row.degree);
                have.implementation = have.implementation.take().or(row.implementation.clone());
                have.mesh_dim = have.mesh_dim.take().or(row.mesh_dim.clone());
                have.expert_load.extend(row.expert_load.iter().cloned());
                have.expert_loop = match (have.expert_loop.take(), &row.expert_loop) {
                    (Some(a), Some(b)) => Some(ExpertLoop {
                        sections: a.sections + b.sections,
                        gemms_per_section: a.gemms_per_section.max(b.gemms_per_section),
                        host_ns: a.host_ns + b.host_ns,
                        avoidable_host_ns: a.avoidable_host_ns + b.avoidable_host_ns,
                    }),
                    (a, b) => a.or(b.clone()),
                };
                have.accumulation = match (have.accumulation.take(), &row.accumulation) {
                    (Some(a), Some(b)) => Some(Accumulation {
                        synced_microbatches: a.synced_microbatches.max(b.synced_microbatches),
                        steps: a.steps.max(b.steps),
                        avoidable_ns: a.avoidable_ns + b.avoidable_ns,
                        avoidable_exposed_ns: a.avoidable_exposed_ns + b.avoidable_exposed_ns,
                    }),
                    (a, b) => a.or(b.clone()),
                };
            }
        }
    }
    by_key
        .into_values()
        .map(|mut r| {
            r.ranks.sort_unstable();
            r.ranks.dedup();
            r.expert_load.sort_by_key(|l| l.rank);
            r.expert_load.dedup_by_key(|l| l.rank);
            r.expert_imbalance = imbalance(&r.expert_load);
            r
        })
        .collect()
}

/// A host span the recognition looks for around launches: a family's op or annotation, or
/// a c10d op / `nccl:` annotation (by its collective type).
#[derive(Clone, Copy)]
enum Mark {
    Family(Family),
    Comm(CollectiveKind),
}

/// A mark's host span: (start, end, the mark).
type MarkSpan = (i64, i64, Mark);

/// Per input: its steps by start (the whole input as one step without steps), each with when
/// its backward's last op ended.
fn backward_ends(
    backward_ops: &BTreeMap<u32, Vec<(i64, i64)>>,
    step_spans: &BTreeMap<u32, Vec<(i64, i64)>>,
) -> BTreeMap<u32, Vec<(i64, i64, Option<i64>)>> {
    let mut last_ends = BTreeMap::new();
    for (&input, ops) in backward_ops {
        let mut steps: Vec<(i64, i64, Option<i64>)> = match step_spans.get(&input) {
            Some(v) => v.iter().map(|&(s, e)| (s, e, None)).collect(),
            None => vec![(i64::MIN, i64::MAX, None)],
        };
        steps.sort_unstable();
        for &(o, end) in ops {
            let k = steps.partition_point(|&(s, _, _)| s <= o);
            if let Some(step) = k.checked_sub(1).map(|k| &mut steps[k]) {
                if o <= step.1 {
                    step.2 = Some(step.2.map_or(end, |x: i64| x.max(end)));
                }
            }
        }
        last_ends.insert(input, steps);
    }
    last_ends
}

fn evidence(src: &Sources, calls: &[Call]) -> Vec<Evidence> {
    let trace = src.trace;
    let host = &trace.host;
    let mark: Vec<Option<Mark>> = trace.names.per_name(|n| {
        Family::of(n).map(Mark::Family).or_else(|| {
            (n.starts_with("c10d::") || n.starts_with("nccl:"))
                .then(|| CollectiveKind::from_collective_name(n.split(' ').next().unwrap_or(n)))
                .filter(|k| *k != CollectiveKind::Unknown)
                .map(Mark::Comm)
        })
    });
    let mut out: Vec<Evidence> = trace
        .inputs
        .iter()
        .map(|m| Evidence {
            names: BTreeMap::new(),
            groups: BTreeMap::new(),
            world: m.distributed.as_ref().and_then(|d| d.world_size),
            rank: m.rank,
        })
        .collect();
    // The marks per (input, thread), by start; and the threads that run the autograd engine
    // (the backward's launches).
    let mut spans: BTreeMap<(u32, u32), Vec<MarkSpan>> = BTreeMap::new();
    let mut autograd_threads: std::collections::BTreeSet<(u32, u32)> = Default::default();
    let engine = trace
        .names
        .per_name(|n| n.starts_with("autograd::engine::evaluate_function"));
    let step_marker = trace.names.per_name(|n| n.starts_with("ProfilerStep#"));
    let ddp_forward = trace
        .names
        .per_name(|n| n == "DistributedDataParallel.forward");
    // Per input: DDP's forwards (start, end), merged where they nest (two threads record one).
    let mut forwards: BTreeMap<u32, Vec<(i64, i64)>> = BTreeMap::new();
    // Per input: its steps' host spans, and the backward's ops (start, end).
    let mut step_spans: BTreeMap<u32, Vec<(i64, i64)>> = BTreeMap::new();
    let mut backward_ops: BTreeMap<u32, Vec<(i64, i64)>> = BTreeMap::new();
    for h in 0..host.len() {
        if !matches!(host.kind[h], HostKind::CpuOp | HostKind::Annotation) {
            continue;
        }
        let id = host.name[h].index();
        let key = (host.input[h], host.thread[h]);
        if engine[id] {
            autograd_threads.insert(key);
            backward_ops
                .entry(host.input[h])
                .or_default()
                .push((host.ts_ns[h], host.end_ns(h)));
        }
        if ddp_forward[id] {
            forwards
                .entry(host.input[h])
                .or_default()
                .push((host.ts_ns[h], host.end_ns(h)));
        }
        if step_marker[id] {
            step_spans
                .entry(host.input[h])
                .or_default()
                .push((host.ts_ns[h], host.end_ns(h)));
        }
        if let Some(m) = mark[id] {
            if let Mark::Family(f) = m {
                *out[host.input[h] as usize].names.entry(f).or_default() += 1;
            }
            spans
                .entry(key)
                .or_default()
                .push((host.ts_ns[h], host.end_ns(h), m));
        }
    }
    for v in spans.values_mut() {
        v.sort_by_key(|&(s, e, _)| (s, std::cmp::Reverse(e)));
    }
    forwards
        .values_mut()
        .for_each(crate::analysis::numbers::merge_spans);
    let last_ends = backward_ends(&backward_ops, &step_spans);
    let backward_end = |input: u32, t: i64| -> Option<i64> {
        let steps = last_ends.get(&input)?;
        let k = steps.partition_point(|&(s, _, _)| s <= t).checked_sub(1)?;
        let (_, e, last) = steps[k];
        if t <= e {
            last
        } else {
            None
        }
    };
    // The collective kernels in the order `collective_calls::calls` lists them.
    let acts = &trace.activities;
    let kernels = (0..acts.len()).filter(|&a| {
        src.in_scope[a]
            && acts.kind[a] == ActivityKind::Kernel
            && src.activity_buckets[a] == Bucket::Communication
    });
    for (a, call) in kernels.zip(calls) {
        // Which of its input's DDP forwards a backward's launch follows.
        let mut after_forward = None;
        let site = src.links.launch[a].map_or(Site::default(), |h| {
            let h = h as usize;
            let key = (host.input[h], host.thread[h]);
            let mut site = spans
                .get(&key)
                .map_or(Site::default(), |v| site_at(v, host.ts_ns[h]));
            site.backward = autograd_threads.contains(&key);
            site.after_backward = !site.backward
                && backward_end(host.input[h], host.ts_ns[h]).is_some_and(|e| host.ts_ns[h] >= e);
            after_forward = forwards.get(&host.input[h]).and_then(|f| {
                f.partition_point(|&(s, _)| s <= host.ts_ns[h])
                    .checked_sub(1)
            });
            site
        });
        let kind = match call.kind {
            CollectiveKind::SendRecv | CollectiveKind::Unknown => site.op_kind.unwrap_or(call.kind),
            k => k,
        };
        let args = call.args.as_ref();
        let ev = &mut out[call.input as usize];
        let group = ev
            .groups
            .entry(args.and_then(|c| c.process_group.clone()))
            .or_default();
        if let Some(c) = args {
            group.desc = group.desc.take().or(c.process_group_desc.clone());
            group.size = group.size.or(c.group_size.filter(|&n| n > 1));
        }
        group.count(kind, site, call.bytes);
        let gradients = call.bytes.is_some_and(|b| b >= kinds::GRADIENT_BYTES);
        if let (true, CollectiveKind::AllReduce, true, Some(f)) =
            (site.backward, kind, gradients, after_forward)
        {
            group.synced_after(call, f);
        }
        let splits = args.and_then(|c| {
            Some((
                CommArgs::splits(c.in_splits.as_deref())?,
                CommArgs::splits(c.out_splits.as_deref())?,
            ))
        });
        if let (Some(_), Some(h)) = (splits.as_ref(), src.links.launch[a]) {
            group
                .uneven_kernels
                .push((call.ts, call.ts + call.dur, host.ts_ns[h as usize]));
        }
        if let (Some(s), false, false) = (splits, site.backward, site.after_backward) {
            group.uneven.push(s);
        }
    }
    expert_sections(src, &mut out);
    out
}

/// Between each pair of a group's uneven all-to-alls on an input (a dispatch and its combine,
/// or the combine's backward and the dispatch's), the GEMM kernels that ran on the GPU, whether
/// one is a grouped GEMM (its name says `group` or `moe`), and the host's time between the two
/// launches.
fn expert_sections(src: &Sources, out: &mut [Evidence]) {
    if out
        .iter()
        .all(|e| e.groups.values().all(|g| g.uneven_kernels.len() < 2))
    {
        return;
    }
    let acts = &src.trace.activities;
    // Per input: its GEMM kernels (start, grouped?) by start.
    let mut gemms: BTreeMap<u32, Vec<(i64, bool)>> = BTreeMap::new();
    let grouped = src.trace.names.per_name(|n| {
        let n = n.to_ascii_lowercase();
        n.contains("group") || n.contains("moe")
    });
    for a in 0..acts.len() {
        if src.in_scope[a]
            && acts.kind[a] == ActivityKind::Kernel
            && src.activity_buckets[a] == Bucket::Gemm
        {
            gemms
                .entry(acts.input[a])
                .or_default()
                .push((acts.ts_ns[a], grouped[acts.name[a].index()]));
        }
    }
    for v in gemms.values_mut() {
        v.sort_unstable();
    }
    for (input, ev) in out.iter_mut().enumerate() {
        let mine = gemms.get(&(input as u32)).map_or(&[][..], Vec::as_slice);
        for g in ev.groups.values_mut() {
            g.uneven_kernels.sort_unstable();
            g.expert_sections = g
                .uneven_kernels
                .chunks_exact(2)
                .map(|pair| {
                    let (from, to) = (pair[0].1, pair[1].0);
                    let lo = mine.partition_point(|&(t, _)| t < from);
                    let hi = mine.partition_point(|&(t, _)| t < to);
                    let inside = &mine[lo..hi.max(lo)];
                    (
                        inside.len() as u32,
                        inside.iter().any(|&(_, grouped)| grouped),
                        (pair[1].2 - pair[0].2).max(0),
                    )
                })
                .collect();
        }
    }
}

const FAMILIES: [Family; 14] = [
    Family::Ddp,
    Family::Fsdp1,
    Family::Fsdp2,
    Family::Redistribute,
    Family::AsyncTp,
    Family::Pipelining,
    Family::Vllm,
    Family::Megatron,
    Family::DeepSpeed,
    Family::Attention,
    Family::GroupedGemm,
    Family::ContextParallel,
    Family::EmbeddingSharding,
    Family::Functional,
];

/// What the spans (sorted by start) that contain time `t` say: their families as a bit set,
/// and the innermost communication op's type.
fn site_at(spans: &[MarkSpan], t: i64) -> Site {
    let k = spans.partition_point(|&(s, _, _)| s <= t);
    let mut site = Site::default();
    // Spans nest: the ones around `t` are among those started before it; a few hundred back
    // reach every enclosing one in practice (a step's annotations, its module's ops).
    for &(_, _, m) in spans[..k]
        .iter()
        .rev()
        .take(512)
        .filter(|&&(_, e, _)| e >= t)
    {
        match m {
            Mark::Family(f) => site.inside |= 1 << f as u32,
            Mark::Comm(kind) => {
                site.op_kind.get_or_insert(kind);
            }
        }
    }
    site
}
