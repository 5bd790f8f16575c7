//! The collective kernels of a trace: each one's type (as nccl-tests names its tests), message
//! size (its own arguments, the `record_param_comms` op around its launch, or a custom
//! all-reduce's first input) and what ran beside it: what matching collectives across ranks
//! ([`crate::analysis::signals::collectives`]) reads, and a rank's partial carries.

use crate::analysis::time::links::Links;
use crate::analysis::time::steps::Steps;
use crate::classify::Bucket;
use crate::model::comms::CommArgs;
use crate::model::{ActivityKind, HostKind, NameId, Trace};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

/// A collective's type, named as nccl-tests names its tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    AllToAllv,
    Broadcast,
    Reduce,
    Gather,
    Scatter,
    Send,
    Recv,
    /// NCCL's point-to-point kernel, named by the kernel alone (send, recv, all_to_all).
    SendRecv,
    Barrier,
    /// A communication kernel whose name and arguments do not say.
    Unknown,
}

impl CollectiveKind {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }

    /// From PyTorch's `Collective name` (`allreduce`, `_allgather_base`,
    /// `reduce_scatter_tensor_coalesced`, `all_to_allv`, …).
    pub fn from_collective_name(name: &str) -> CollectiveKind {
        let mut n = name.trim().to_ascii_lowercase();
        for noise in [
            "nccl:",
            "c10d::",
            "_coalesced",
            "_into_tensor",
            "_tensor",
            "_base",
        ] {
            n = n.replace(noise, "");
        }
        let n: String = n.chars().filter(|c| *c != '_').collect();
        match n.as_str() {
            "allreduce" => CollectiveKind::AllReduce,
            "allgather" => CollectiveKind::AllGather,
            "reducescatter" => CollectiveKind::ReduceScatter,
            "alltoall" => CollectiveKind::AllToAll,
            "alltoallv" => CollectiveKind::AllToAllv,
            "broadcast" => CollectiveKind::Broadcast,
            "reduce" => CollectiveKind::Reduce,
            "gather" => CollectiveKind::Gather,
            "scatter" => CollectiveKind::Scatter,
            "send" => CollectiveKind::Send,
            "recv" => CollectiveKind::Recv,
            "barrier" => CollectiveKind::Barrier,
            _ => CollectiveKind::Unknown,
        }
    }

    /// From a kernel name (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`,
    /// `ncclKernel_Broadcast_RING_LL_Sum_int8_t`, vLLM's `cross_device_reduce_1stage`); RCCL's
    /// `ncclDevKernel_Generic` says nothing.
    pub fn from_kernel_name(name: &str) -> CollectiveKind {
        let n: String = name
            .to_ascii_lowercase()
            .chars()
            .filter(|c| *c != '_')
            .collect();
        let has = |s: &str| n.contains(s);
        if has("allreduce") || has("crossdevicereduce") {
            CollectiveKind::AllReduce
        } else if has("allgather") {
            CollectiveKind::AllGather
        } else if has("reducescatter") {
            CollectiveKind::ReduceScatter
        } else if has("alltoall") {
            CollectiveKind::AllToAll
        } else if has("broadcast") {
            CollectiveKind::Broadcast
        } else if has("sendrecv") {
            CollectiveKind::SendRecv
        } else if has("kernelreduce") || has("devkernelreduce") {
            CollectiveKind::Reduce
        } else {
            CollectiveKind::Unknown
        }
    }

    /// nccl-tests' bus bandwidth factor for a group of `n` ranks (None: no bandwidth).
    pub fn busbw_factor(self, n: u32) -> Option<f64> {
        if n < 2 {
            return None;
        }
        let n = f64::from(n);
        match self {
            CollectiveKind::AllReduce => Some(2.0 * (n - 1.0) / n),
            CollectiveKind::AllGather
            | CollectiveKind::ReduceScatter
            | CollectiveKind::AllToAll
            | CollectiveKind::AllToAllv
            | CollectiveKind::Gather
            | CollectiveKind::Scatter => Some((n - 1.0) / n),
            CollectiveKind::Broadcast
            | CollectiveKind::Reduce
            | CollectiveKind::Send
            | CollectiveKind::Recv
            | CollectiveKind::SendRecv => Some(1.0),
            CollectiveKind::Barrier | CollectiveKind::Unknown => None,
        }
    }
}

/// Bytes per element of a c10 scalar type name (`Float`, `BFloat16`, `Float8_e4m3fn`, …).
pub fn dtype_bytes(dtype: &str) -> Option<u64> {
    let d = dtype.trim().trim_start_matches("c10::");
    Some(match d {
        "Double" | "Long" | "ComplexFloat" | "UInt64" => 8,
        "Float" | "Int" | "ComplexHalf" | "UInt32" | "QInt32" => 4,
        "Half" | "BFloat16" | "Short" | "UInt16" => 2,
        "Char" | "Byte" | "Bool" | "QInt8" | "QUInt8" | "Float4_e2m1fn_x2" => 1,
        "ComplexDouble" => 16,
        _ if d.starts_with("Float8") => 1,
        _ => return None,
    })
}

/// nccl-tests' "size" of a call: the larger of its buffers.
pub fn message_bytes(args: &CommArgs) -> Option<u64> {
    let nelems = match (args.in_nelems, args.out_nelems) {
        (Some(i), Some(o)) => i.max(o),
        (Some(n), None) | (None, Some(n)) => n,
        (None, None) => return None,
    };
    nelems.checked_mul(dtype_bytes(args.dtype.as_deref()?)?)
}

/// Each input's GPU activity other than communication in the window, as sorted disjoint
/// intervals: what a collective's wait and transfer overlap with.
pub(crate) struct Busy(HashMap<u32, Vec<(i64, i64)>>);

impl Busy {
    pub(crate) fn build(ctx: &CallSources) -> Busy {
        let acts = &ctx.trace.activities;
        let mut per: HashMap<u32, Vec<(i64, i64)>> = HashMap::default();
        for a in 0..acts.len() {
            if ctx.in_scope[a] && ctx.bucket_of(a) != Bucket::Communication {
                per.entry(acts.input[a])
                    .or_default()
                    .push((acts.ts_ns[a], acts.end_ns(a)));
            }
        }
        per.values_mut()
            .for_each(crate::analysis::numbers::merge_spans);
        Busy(per)
    }

    /// The input's other GPU work inside [s, e), clipped to it.
    pub(crate) fn within(&self, input: u32, s: i64, e: i64) -> Vec<(i64, i64)> {
        let Some(v) = self.0.get(&input) else {
            return Vec::new();
        };
        let mut k = v.partition_point(|&(_, end)| end <= s);
        let mut out = Vec::new();
        while k < v.len() && v[k].0 < e {
            out.push((v[k].0.max(s), v[k].1.min(e)));
            k += 1;
        }
        out
    }
}

/// How much of [s, e) the sorted disjoint intervals cover.
pub(crate) fn covered(busy: &[(i64, i64)], s: i64, e: i64) -> i64 {
    busy.iter()
        .map(|&(b0, b1)| (b1.min(e) - b0.max(s)).max(0))
        .sum()
}

/// A process group: its name and its ranks as written.
pub(crate) type GroupKey = (String, String);

/// One collective kernel: what matching it across ranks and splitting its time needs, and
/// nothing of the trace it came from (a rank's partial carries these).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Call {
    pub input: u32,
    /// Its index among its input's activities (orders calls that start together).
    pub order: u32,
    pub stream: u32,
    pub kind: CollectiveKind,
    pub args: Option<CommArgs>,
    pub bytes: Option<u64>,
    pub ts: i64,
    pub dur: i64,
    /// The profiled step it was launched in.
    pub step: Option<u64>,
    /// The input's other GPU work while it ran: sorted disjoint intervals inside [ts, ts + dur).
    pub busy: Vec<(i64, i64)>,
    /// A send's, a receive's or a batch of them's transfers, each with its peer: what pairs
    /// them across ranks in groups of more than two.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub p2p: Vec<P2pPart>,
}

/// One send or receive of a point-to-point call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct P2pPart {
    pub send: bool,
    /// The peer's rank in the call's process group.
    pub peer: u32,
    pub bytes: Option<u64>,
}

impl P2pPart {
    /// The part a single send or receive's arguments describe.
    fn of(args: &CommArgs) -> Option<P2pPart> {
        let send = match CollectiveKind::from_collective_name(&args.collective) {
            CollectiveKind::Send => true,
            CollectiveKind::Recv => false,
            _ => return None,
        };
        Some(P2pPart {
            send,
            peer: args.peer?,
            bytes: message_bytes(args),
        })
    }
}

impl Call {
    pub(crate) fn group_key(&self) -> GroupKey {
        match &self.args {
            Some(a) => (
                a.process_group.clone().unwrap_or_default(),
                a.process_group_ranks.clone().unwrap_or_default(),
            ),
            None => Default::default(),
        }
    }
}

/// A custom all-reduce outside NCCL (vLLM's and SGLang's custom all-reduce, PyTorch's
/// symmetric-memory `multimem_all_reduce_`) carries no collective arguments; the op that
/// launched it says the buffer: its first input's elements x its dtype (`record_shapes`).
pub(crate) fn custom_all_reduce_bytes(
    ctx: &CallSources,
    a: usize,
    kind: CollectiveKind,
) -> Option<u64> {
    if kind != CollectiveKind::AllReduce {
        return None;
    }
    let h = ctx.op_of[a]? as usize;
    let host = &ctx.trace.host;
    let op = ctx.name(host.name[h]).to_ascii_lowercase();
    if !(op.contains("all_reduce") || op.contains("allreduce")) {
        return None;
    }
    let dims = crate::analysis::ops::efficiency::dims_of(ctx.name(host.input_dims(h)))?;
    let types: Vec<String> = serde_json::from_str(ctx.name(host.input_types(h))).ok()?;
    let nelems = dims
        .first()?
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(u64::try_from(d).ok()?))?;
    nelems.checked_mul(dtype_bytes(types.first()?)?)
}

/// `record_param_comms` ops with arguments per (input, thread), sorted by start: where a
/// kernel without arguments of its own finds them (traces before late 2023, RCCL kernels).
/// (start, end, interned arguments) of `record_param_comms` ops, by start.
pub(crate) type Spans = Vec<(i64, i64, NameId)>;

/// `record_param_comms` ops, and the `nccl:coalesced` annotations of point-to-point batches
/// (`batch_isend_irecv`, the pipelining schedules' sends and receives): their kernel is launched
/// inside the annotation, after the batch's `record_param_comms` ops have closed, and carries no
/// arguments of its own.
pub(crate) struct ParamComms {
    ops: HashMap<(u32, u32), Spans>,
    coalesced: HashMap<(u32, u32), Vec<(i64, i64)>>,
}

impl ParamComms {
    pub(crate) fn build(trace: &Trace) -> ParamComms {
        let host = &trace.host;
        let mut map: HashMap<(u32, u32), Spans> = HashMap::default();
        let mut coalesced: HashMap<(u32, u32), Vec<(i64, i64)>> = HashMap::default();
        let is_coalesced = trace.names.per_name(|n| n == "nccl:coalesced");
        for i in 0..host.len() {
            if host.kind[i] == HostKind::Annotation && is_coalesced[host.name[i].index()] {
                coalesced
                    .entry((host.input[i], host.thread[i]))
                    .or_default()
                    .push((host.ts_ns[i], host.end_ns(i)));
                continue;
            }
            if host.kind[i] != HostKind::CpuOp {
                continue;
            }
            let comm = host.op_args(i).comm;
            if comm != NameId::NONE {
                map.entry((host.input[i], host.thread[i]))
                    .or_default()
                    .push((
                        host.ts_ns[i],
                        host.ts_ns[i].saturating_add(host.dur_ns.get(i)),
                        comm,
                    ));
            }
        }
        for v in map.values_mut() {
            // Among ops starting together the inner (shorter) one comes last: found first.
            v.sort_unstable_by_key(|&(ts, end, id)| (ts, std::cmp::Reverse(end), id));
        }
        for v in coalesced.values_mut() {
            v.sort_unstable();
        }
        ParamComms {
            ops: map,
            coalesced,
        }
    }

    /// The arguments of the point-to-point batch whose `nccl:coalesced` annotation holds host
    /// event `h` (the kernel's launch call): its sends and receives, the `record_param_comms`
    /// ops between the previous batch's annotation and this one, as one call (their elements
    /// summed; a batch of sends alone is a send, of receives alone a recv), and its parts.
    fn coalesced_batch(&self, trace: &Trace, h: usize) -> Option<(CommArgs, Vec<P2pPart>)> {
        let host = &trace.host;
        let key = (host.input[h], host.thread[h]);
        let spans = self.coalesced.get(&key)?;
        let t = host.ts_ns[h];
        let k = spans.partition_point(|&(s, _)| s <= t).checked_sub(1)?;
        let (start, end) = spans[k];
        if t > end {
            return None;
        }
        let after = k.checked_sub(1).map_or(i64::MIN, |p| spans[p].1);
        let ops = self.ops.get(&key)?;
        let upto = ops.partition_point(|&(ts, _, _)| ts < start);
        let mut batch: Vec<CommArgs> = Vec::new();
        for &(ts, _, id) in ops[..upto].iter().rev() {
            if ts < after {
                break;
            }
            let Some(args) = CommArgs::decode(trace.names.get(id)) else {
                break;
            };
            match CollectiveKind::from_collective_name(&args.collective) {
                CollectiveKind::Send | CollectiveKind::Recv => batch.push(args),
                _ => break,
            }
        }
        let first = batch.last()?.clone();
        let same = |f: &dyn Fn(&CommArgs) -> String| batch.iter().all(|a| f(a) == f(&first));
        let sum = |f: &dyn Fn(&CommArgs) -> Option<u64>| batch.iter().map(f).sum::<Option<u64>>();
        // In issue order (the batch was gathered backwards).
        let parts = batch.iter().rev().filter_map(P2pPart::of).collect();
        let args = CommArgs {
            collective: if same(&|a| a.collective.clone()) {
                first.collective.clone()
            } else {
                "send_recv".into()
            },
            in_nelems: sum(&|a| a.in_nelems),
            out_nelems: sum(&|a| a.out_nelems),
            dtype: first
                .dtype
                .clone()
                .filter(|_| same(&|a| a.dtype.clone().unwrap_or_default())),
            // A batch's peers are its parts'.
            peer: None,
            ..first
        };
        Some((args, parts))
    }

    /// The innermost `record_param_comms` around host event `h` (the kernel's launch call).
    fn around(&self, trace: &Trace, h: usize) -> Option<NameId> {
        let host = &trace.host;
        let ops = self.ops.get(&(host.input[h], host.thread[h]))?;
        let t = host.ts_ns[h];
        let k = ops.partition_point(|&(ts, _, _)| ts <= t);
        // They do not nest: the one around the launch is among the last few started.
        ops[..k]
            .iter()
            .rev()
            .take(8)
            .find(|&&(_, end, _)| end >= t)
            .map(|&(_, _, id)| id)
    }
}

/// What finding the collective calls reads of the analysis so far.
pub struct CallSources<'a> {
    pub trace: &'a Trace,
    pub links: &'a Links,
    pub steps: &'a Steps,
    /// Per activity: in the analysis.
    pub in_scope: &'a [bool],
    /// Per activity: its bucket.
    pub activity_buckets: &'a [Bucket],
    /// Per activity: the host index of its innermost launching op.
    pub op_of: &'a [Option<u32>],
}

impl CallSources<'_> {
    fn bucket_of(&self, a: usize) -> Bucket {
        self.activity_buckets[a]
    }
    fn name(&self, id: NameId) -> &str {
        self.trace.names.get(id)
    }
}

/// The collective kernels in scope, with their arguments.
pub fn calls(ctx: &CallSources) -> Vec<Call> {
    let trace = ctx.trace;
    let acts = &trace.activities;
    let kernels: Vec<usize> = (0..acts.len())
        .filter(|&a| {
            ctx.in_scope[a]
                && acts.kind[a] == ActivityKind::Kernel
                && ctx.bucket_of(a) == Bucket::Communication
        })
        .collect();
    // The host events are searched only for kernels without arguments of their own.
    let param_comms = kernels
        .iter()
        .any(|&a| acts.comm(a) == NameId::NONE)
        .then(|| ParamComms::build(trace));
    let mut decoded: HashMap<NameId, Option<CommArgs>> = HashMap::default();
    // What ran beside each call: only worth building when there are calls.
    let busy = if kernels.is_empty() {
        Busy(HashMap::default())
    } else {
        Busy::build(ctx)
    };
    // A call's position among its own input's activities: the same in a rank's trace as in
    // the job's (the kernels are visited in activity order).
    let (mut seen, mut scanned) = (vec![0u32; trace.inputs.len()], 0usize);
    let mut out = Vec::new();
    for a in kernels {
        let mut id = acts.comm(a);
        let mut batch = None;
        if let (NameId::NONE, Some(h), Some(pc)) = (id, ctx.links.launch[a], &param_comms) {
            id = pc.around(trace, h as usize).unwrap_or(NameId::NONE);
            if id == NameId::NONE {
                batch = pc.coalesced_batch(trace, h as usize);
            }
        }
        let mut p2p = Vec::new();
        let args = if id == NameId::NONE {
            batch.map(|(args, parts)| {
                p2p = parts;
                args
            })
        } else {
            decoded
                .entry(id)
                .or_insert_with(|| CommArgs::decode(trace.names.get(id)))
                .clone()
        };
        let by_name = || CollectiveKind::from_kernel_name(ctx.name(acts.name[a]));
        let kind = match args
            .as_ref()
            .map(|c| CollectiveKind::from_collective_name(&c.collective))
        {
            Some(CollectiveKind::Unknown) | None => by_name(),
            Some(k) => k,
        };
        let bytes = args
            .as_ref()
            .and_then(message_bytes)
            .or_else(|| custom_all_reduce_bytes(ctx, a, kind));
        if p2p.is_empty() {
            p2p.extend(args.as_ref().and_then(P2pPart::of));
        }
        let input = acts.input[a];
        for b in scanned..a {
            seen[acts.input[b] as usize] += 1;
        }
        scanned = a;
        let (ts, dur) = (acts.ts_ns[a], acts.dur_ns[a]);
        out.push(Call {
            input,
            order: seen[input as usize],
            stream: acts.stream[a],
            kind,
            args,
            bytes,
            ts,
            dur,
            step: ctx.steps.of_activity[a]
                .map(|k| ctx.steps.per_input[input as usize][k as usize].number),
            busy: busy.within(input, ts, ts.saturating_add(dur)),
            p2p,
        });
    }
    out
}
