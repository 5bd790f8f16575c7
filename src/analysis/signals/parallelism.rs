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

use crate::analysis::signals::collective_calls::{Call, CollectiveKind};
use crate::analysis::time::links::Links;
use crate::classify::Bucket;
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
}

/// Families of host names that say which wrapper or schedule runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Family {
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
struct Traffic {
    calls: u64,
    backward: u64,
    after_backward: u64,
    inside: BTreeMap<Family, u64>,
    bytes: BTreeMap<u64, u64>,
}

/// A process group as its calls name it.
#[derive(Clone, Debug, Default)]
struct Group {
    desc: Option<String>,
    size: Option<u32>,
    by_kind: BTreeMap<CollectiveKind, Traffic>,
}

impl Group {
    fn traffic(&self, kinds: &[CollectiveKind]) -> Traffic {
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

const P2P: [CollectiveKind; 3] = [
    CollectiveKind::Send,
    CollectiveKind::Recv,
    CollectiveKind::SendRecv,
];
const ALL_TO_ALL: [CollectiveKind; 2] = [CollectiveKind::AllToAll, CollectiveKind::AllToAllv];

/// What the recognition reads of the analysis so far.
pub(crate) struct Sources<'a> {
    pub trace: &'a Trace,
    pub links: &'a Links,
    pub in_scope: &'a [bool],
    pub activity_buckets: &'a [Bucket],
}

/// Per input: the families' host events by count, and each process group's traffic.
struct Evidence {
    names: BTreeMap<Family, u64>,
    groups: BTreeMap<Option<String>, Group>,
    world: Option<u32>,
    rank: Option<u32>,
}

/// The parallelisms each input of `src` shows (rows in kind, group order; ranks filled).
pub(crate) fn recognize(src: &Sources, calls: &[Call]) -> Vec<Parallelism> {
    let per_input = evidence(src, calls);
    let mut rows: Vec<Parallelism> = Vec::new();
    for (input, ev) in per_input.iter().enumerate() {
        // One input's rows of one kind and group are one row, their evidence joined.
        let mut own: Vec<Parallelism> = Vec::new();
        for mut row in classify(ev) {
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
            }
        }
    }
    by_key
        .into_values()
        .map(|mut r| {
            r.ranks.sort_unstable();
            r.ranks.dedup();
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
    // Per input and step (the whole input without steps): when its backward's last op ended.
    let backward_end = |input: u32, t: i64| -> Option<i64> {
        let ops = backward_ops.get(&input)?;
        let (s, e) = step_spans
            .get(&input)
            .and_then(|v| v.iter().copied().find(|&(s, e)| s <= t && t <= e))
            .unwrap_or((i64::MIN, i64::MAX));
        ops.iter()
            .filter(|&&(o, _)| s <= o && o <= e)
            .map(|&(_, end)| end)
            .max()
    };
    // The collective kernels in the order `collective_calls::calls` lists them.
    let acts = &trace.activities;
    let kernels = (0..acts.len()).filter(|&a| {
        src.in_scope[a]
            && acts.kind[a] == ActivityKind::Kernel
            && src.activity_buckets[a] == Bucket::Communication
    });
    for (a, call) in kernels.zip(calls) {
        let site = src.links.launch[a].map_or(Site::default(), |h| {
            let h = h as usize;
            let key = (host.input[h], host.thread[h]);
            let mut site = spans
                .get(&key)
                .map_or(Site::default(), |v| site_at(v, host.ts_ns[h]));
            site.backward = autograd_threads.contains(&key);
            site.after_backward = !site.backward
                && backward_end(host.input[h], host.ts_ns[h]).is_some_and(|e| host.ts_ns[h] >= e);
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
        let t = group.by_kind.entry(kind).or_default();
        t.calls += 1;
        t.backward += u64::from(site.backward);
        t.after_backward += u64::from(site.after_backward);
        for f in FAMILIES {
            if site.has(f) {
                *t.inside.entry(f).or_default() += 1;
            }
        }
        if let Some(b) = call.bytes {
            *t.bytes.entry(b).or_default() += 1;
        }
    }
    out
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

/// The implementation the names show for a kind.
fn implementation(kind: ParallelKind, names: &BTreeMap<Family, u64>) -> Option<String> {
    let has = |f: Family| names.get(&f).copied().unwrap_or(0) > 0;
    let name = match kind {
        ParallelKind::Ddp if has(Family::Ddp) => "ddp",
        ParallelKind::Fsdp | ParallelKind::Hsdp if has(Family::Fsdp1) => "fsdp1",
        ParallelKind::Fsdp | ParallelKind::Hsdp if has(Family::Fsdp2) => "fsdp2",
        ParallelKind::Fsdp | ParallelKind::Hsdp | ParallelKind::Ddp if has(Family::DeepSpeed) => {
            "deepspeed"
        }
        ParallelKind::Tensor | ParallelKind::Sequence if has(Family::Vllm) => "vllm",
        ParallelKind::Tensor | ParallelKind::Sequence if has(Family::AsyncTp) => "async_tp",
        ParallelKind::Tensor | ParallelKind::Sequence if has(Family::Redistribute) => "dtensor",
        ParallelKind::Pipeline if has(Family::Pipelining) => "torch.pipelining",
        ParallelKind::Context if has(Family::ContextParallel) => "torch.context_parallel",
        _ if has(Family::Megatron) => "megatron",
        _ => return None,
    };
    Some(name.to_string())
}

fn sizes(t: &Traffic) -> String {
    let mut by_count: Vec<(u64, u64)> = t.bytes.iter().map(|(&b, &n)| (n, b)).collect();
    by_count.sort_unstable_by(|a, b| b.cmp(a));
    if by_count.is_empty() {
        return "sizes not recorded".into();
    }
    let shown: Vec<String> = by_count
        .iter()
        .take(2)
        .map(|&(n, b)| format!("{n}× {}", size(b)))
        .collect();
    let more = if by_count.len() > 2 {
        format!(" and {} other sizes", by_count.len() - 2)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

/// Bytes in decimal units, as the collectives view prints them.
fn size(b: u64) -> String {
    match b {
        0..1_000 => format!("{b} B"),
        1_000..1_000_000 => format!("{:.1} KB", b as f64 / 1e3),
        _ => format!("{:.2} MB", b as f64 / 1e6),
    }
}

fn inside(t: &Traffic, f: Family) -> u64 {
    t.inside.get(&f).copied().unwrap_or(0)
}

/// All-reduces of gradients move at least this much in one call (smaller ones are scalars:
/// a loss, a norm, a flag).
const GRADIENT_BYTES: u64 = 64 * 1024;

/// One input's rows, as they are found.
struct Rows<'a> {
    ev: &'a Evidence,
    rows: Vec<Parallelism>,
}

impl Rows<'_> {
    fn named(&self, f: Family) -> u64 {
        self.ev.names.get(&f).copied().unwrap_or(0)
    }
    fn push(&mut self, kind: ParallelKind, group: &Option<String>, g: &Group, why: String) {
        self.rows.push(Parallelism {
            kind,
            implementation: implementation(kind, &self.ev.names),
            group: group.clone(),
            mesh_dim: g.desc.clone().filter(|d| d.starts_with("mesh_")),
            degree: g.size.or(self.ev.world),
            evidence: vec![why],
            ranks: Vec::new(),
        });
    }

    /// Sends and receives: a pipeline's, or a ring's inside attention.
    fn point_to_point(&mut self, name: &Option<String>, g: &Group) {
        let p2p = g.traffic(&P2P);
        if p2p.calls == 0 {
            return;
        }
        let in_attention = inside(&p2p, Family::Attention) + inside(&p2p, Family::ContextParallel);
        if in_attention * 2 > p2p.calls {
            let why = format!(
                "{} point-to-point transfers inside attention (a ring of K/V blocks): {}",
                p2p.calls,
                sizes(&p2p)
            );
            self.push(ParallelKind::Context, name, g, why);
        } else {
            let schedule = if inside(&p2p, Family::Pipelining) > 0 {
                " inside a pipelining schedule's actions"
            } else {
                ""
            };
            let why = format!(
                "{} point-to-point sends and receives between stage compute{schedule}: {}",
                p2p.calls,
                sizes(&p2p)
            );
            self.push(ParallelKind::Pipeline, name, g, why);
        }
    }

    /// All-to-alls: experts' dispatch and combine, or context parallel's inside attention.
    fn all_to_all(&mut self, name: &Option<String>, g: &Group) {
        let a2a = g.traffic(&ALL_TO_ALL);
        if a2a.calls == 0 {
            return;
        }
        if inside(&a2a, Family::Attention) * 2 > a2a.calls {
            let why = format!("{} all-to-alls inside attention (K/V blocks passed round the ring, or Ulysses' heads-for-sequence exchange): {}", a2a.calls, sizes(&a2a));
            self.push(ParallelKind::Context, name, g, why);
        } else if self.named(Family::EmbeddingSharding) == 0 && self.named(Family::GroupedGemm) > 0
        {
            let why = format!(
                "{} all-to-alls (token dispatch and combine): {}",
                a2a.calls,
                sizes(&a2a)
            );
            self.push(ParallelKind::Expert, name, g, why);
        }
    }

    /// All-gathers and reduce-scatters: K/V inside attention, sequence parallel's activations
    /// (reduce-scatters in the forward too), or FSDP's shards. Returns (sharded, sequence).
    fn gathers(&mut self, name: &Option<String>, g: &Group) -> (bool, bool) {
        use CollectiveKind as C;
        let fsdp_named = self.named(Family::Fsdp1) + self.named(Family::Fsdp2) > 0;
        let gathers = g.traffic(&[C::AllGather]);
        let scatters = g.traffic(&[C::ReduceScatter]);
        let forward_scatters = scatters.calls - scatters.backward;
        if gathers.calls > 0 && inside(&gathers, Family::Attention) * 2 > gathers.calls {
            let why = format!(
                "{} all-gathers inside attention (K/V gathered over the sequence): {}",
                gathers.calls,
                sizes(&gathers)
            );
            self.push(ParallelKind::Context, name, g, why);
        } else if forward_scatters > 0 && gathers.calls > 0 && !fsdp_named {
            let why = format!("{} all-gathers and {forward_scatters} reduce-scatters in the forward (activations split along the sequence)", gathers.calls);
            self.push(ParallelKind::Sequence, name, g, why);
            self.push(ParallelKind::Tensor, name, g, "sequence parallel's group: its layers' weights are split across it (the activations are gathered and reduce-scattered instead of all-reduced)".into());
            return (false, true);
        } else if scatters.calls > 0 || (gathers.calls > 0 && fsdp_named) {
            let why = format!("{} all-gathers of parameter shards ({}), {} reduce-scatters of gradients in the backward", gathers.calls, sizes(&gathers), scatters.backward);
            self.push(ParallelKind::Fsdp, name, g, why);
            return (true, false);
        }
        (false, false)
    }

    /// All-reduces: activations in the forward (tensor parallel) or gradients in and after
    /// the backward (data parallel); DTensor's own (a Partial placement made whole) belong to
    /// tensor parallelism in any phase.
    fn all_reduces(&mut self, name: &Option<String>, g: &Group, sequence_here: bool) {
        let reduces = g.traffic(&[CollectiveKind::AllReduce]);
        if reduces.calls == 0 {
            return;
        }
        let ddp_named = self.named(Family::Ddp) > 0;
        let dtensor = self.named(Family::Redistribute) > 0 && !ddp_named;
        let dtensor_reduces = if dtensor {
            inside(&reduces, Family::Functional).max(inside(&reduces, Family::Redistribute))
        } else {
            0
        };
        let gradients = (reduces.backward + reduces.after_backward).saturating_sub(dtensor_reduces);
        let forward = reduces.calls - reduces.backward - reduces.after_backward;
        let vllm = self.named(Family::Vllm) > 0;
        let largest = reduces.bytes.keys().max().copied().unwrap_or(0);
        if forward > 0 && (forward * 4 >= reduces.calls || vllm) && !(dtensor && sequence_here) {
            let why = format!("{forward} all-reduces in the forward ({} in the backward) of activation-shaped tensors: {}", reduces.backward, sizes(&reduces));
            self.push(ParallelKind::Tensor, name, g, why);
        } else if gradients > 0
            && (largest >= GRADIENT_BYTES || ddp_named)
            && !(dtensor && dtensor_reduces > 0)
        {
            let wrapper = if ddp_named {
                ""
            } else {
                " by hand (no DistributedDataParallel)"
            };
            let why = format!(
                "{gradients} all-reduces of gradients in or after the backward{wrapper}: {}",
                sizes(&reduces)
            );
            self.push(ParallelKind::Ddp, name, g, why);
        }
    }

    /// FSDP on one group and gradient all-reduces on another: HSDP.
    fn hybrid(&mut self) {
        let fsdp_groups: Vec<Option<String>> = self
            .rows
            .iter()
            .filter(|r| r.kind == ParallelKind::Fsdp)
            .map(|r| r.group.clone())
            .collect();
        let replicated = self
            .rows
            .iter()
            .any(|r| r.kind == ParallelKind::Ddp && !fsdp_groups.contains(&r.group));
        if fsdp_groups.is_empty() || !replicated || self.named(Family::Ddp) > 0 {
            return;
        }
        for r in self.rows.iter_mut() {
            if matches!(r.kind, ParallelKind::Ddp | ParallelKind::Fsdp) {
                r.evidence
                    .push("sharded on one group, replicated across another: HSDP".into());
                r.kind = ParallelKind::Hsdp;
                r.implementation = implementation(ParallelKind::Hsdp, &self.ev.names);
            }
        }
    }

    /// A wrapper without traffic in the window (one rank profiled alone, no step).
    fn wrapper(&mut self, kind: ParallelKind, f: Family, what: &str) {
        let n = self.named(f);
        if n == 0 || self.rows.iter().any(|r| r.kind == kind) {
            return;
        }
        self.rows.push(Parallelism {
            kind,
            implementation: implementation(kind, &self.ev.names),
            group: None,
            mesh_dim: None,
            degree: self.ev.world,
            evidence: vec![format!("{n} {what} ops, no traffic of it in the window")],
            ranks: Vec::new(),
        });
    }
}

/// One input's rows.
fn classify(ev: &Evidence) -> Vec<Parallelism> {
    let mut rows = Rows {
        ev,
        rows: Vec::new(),
    };
    for (name, g) in &ev.groups {
        rows.point_to_point(name, g);
        rows.all_to_all(name, g);
        let (_, sequence_here) = rows.gathers(name, g);
        rows.all_reduces(name, g, sequence_here);
    }
    rows.hybrid();
    rows.wrapper(ParallelKind::Ddp, Family::Ddp, "DistributedDataParallel");
    rows.wrapper(
        ParallelKind::Fsdp,
        Family::Fsdp1,
        "FullyShardedDataParallel",
    );
    rows.wrapper(ParallelKind::Fsdp, Family::Fsdp2, "FSDP2");
    rows.wrapper(
        ParallelKind::Pipeline,
        Family::Pipelining,
        "pipeline schedule",
    );
    rows.rows
}
