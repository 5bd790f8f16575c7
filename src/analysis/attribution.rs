//! Which op owns each GPU activity (FEED.md "Ops, modules, sources"): the launch call (by
//! correlation id) → the innermost cpu_op around it on the same thread → the ops enclosing that.
//! `self_ns` goes to the innermost op, `total_ns` to it and every op enclosing it.

use super::efficiency;
use super::links::Links;
use crate::classify::{Bucket, Classified, RuleSet};
use crate::model::{ActivityKind, HostKind, NameId, Trace};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The row activities without a launching op go to.
pub const NO_OP: &str = "(no op)";

/// One row of the feed's `ops`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpRow {
    pub name: String,
    pub self_ns: i64,
    pub total_ns: i64,
    pub launches: u64,
    /// The bucket holding most of the op's self time.
    pub bucket: Bucket,
    /// The op's most frequent `Input Dims` among the calls that launched GPU work.
    pub shapes: Option<String>,
    /// GEMM ops: achieved TFLOP/s (FLOPs from `Input Dims` over the GPU time of their kernels)
    /// and its share of the device's peak for the op's data type (`rules/devices.toml`).
    pub tflops: Option<f64>,
    pub pct_of_peak: Option<f64>,
    /// Achieved bandwidth: the bytes its calls move (reads and writes from `Input Dims`, see
    /// `bytes_moved`; GEMMs: operands and result) over their kernels' time, and its share of the
    /// device's HBM peak (at most 100: data in the last-level cache runs above it).
    pub gbps: Option<f64>,
    pub pct_of_hbm_peak: Option<f64>,
}

/// Per call id, the length of the union of its `[start, end)` spans (one shared list, sorted
/// in place: a vector per call costs a heap block per GEMM call, millions on big traces).
fn union_per_call(spans: &mut [(u32, i64, i64)], calls: usize) -> Vec<i64> {
    spans.sort_unstable();
    let mut out = vec![0i64; calls];
    let (mut id, mut cur) = (u32::MAX, i64::MIN);
    for &(c, s, e) in spans.iter() {
        if c != id {
            (id, cur) = (c, i64::MIN);
        }
        let s = s.max(cur);
        if e > s {
            out[c as usize] = out[c as usize].saturating_add(e - s);
            cur = e;
        }
    }
    out
}

/// `Input Dims` as written (pretty-printed over lines in some traces) → `[[8,512],[512]]`.
pub fn compact_dims(raw: &str) -> String {
    raw.chars().filter(|c| !c.is_ascii_whitespace()).collect()
}

/// cpu_ops of one thread, sorted by start, with their nesting parent.
struct Thread {
    /// Host indices of the thread's events, by start.
    ops: Vec<u32>,
    /// Per op: the index in `ops` of the op enclosing it, [`NO_PARENT`] at the top (u32
    /// columns: millions of ops in large traces).
    parent: Vec<u32>,
}

const NO_PARENT: u32 = u32::MAX;

impl Thread {
    /// The host index of op `k`.
    fn op(&self, k: usize) -> usize {
        self.ops[k] as usize
    }
    /// The op enclosing op `k`.
    fn parent(&self, k: usize) -> Option<usize> {
        match self.parent[k] {
            NO_PARENT => None,
            p => Some(p as usize),
        }
    }
}

/// Innermost op of `t` containing `time`, as an index into `t.ops`.
fn innermost(trace: &Trace, t: &Thread, time: i64) -> Option<usize> {
    let host = &trace.host;
    let k = t.ops.partition_point(|&h| host.ts_ns[h as usize] <= time);
    let mut cur = k.checked_sub(1)?;
    loop {
        let h = t.op(cur);
        if time
            < host.ts_ns[h]
                .saturating_add(host.dur_ns[h])
                .max(host.ts_ns[h] + 1)
        {
            return Some(cur);
        }
        cur = t.parent(cur)?;
    }
}

type ThreadKey = (u32, u64);

/// The threads of some host events, in key order.
#[derive(Default)]
struct Threads {
    keys: Vec<ThreadKey>,
    list: Vec<Thread>,
}

impl Threads {
    fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    fn find(&self, key: &ThreadKey) -> Option<u32> {
        self.keys.binary_search(key).ok().map(|i| i as u32)
    }
    fn get(&self, thread: u32) -> &Thread {
        &self.list[thread as usize]
    }
}

/// One op of [`Threads`]: its thread's index and its index in that thread (8 bytes per GPU
/// activity, not the 32 of a key and an index).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct OpRef {
    thread: u32,
    op: u32,
}

impl OpRef {
    const NONE: OpRef = OpRef {
        thread: u32::MAX,
        op: u32::MAX,
    };
    fn get(self) -> Option<OpRef> {
        (self != OpRef::NONE).then_some(self)
    }
}

/// Per activity: the innermost event of `threads` around its launch call, found once per
/// distinct call (one graph launch owns many activities) with the calls in a sorted column, not
/// a map (millions of launches in large traces).
fn owners(trace: &Trace, links: &Links, threads: &Threads) -> Vec<OpRef> {
    use rayon::prelude::*;
    let acts = trace.activities.len();
    let mut calls: Vec<u32> = (0..acts).filter_map(|a| links.owner_call(a)).collect();
    calls.sort_unstable();
    calls.dedup();
    let of_call: Vec<OpRef> = calls
        .par_iter()
        .map(|&call| {
            let c = call as usize;
            let key = (trace.host.input[c], trace.host.tid(c));
            threads
                .find(&key)
                .and_then(|thread| {
                    innermost(trace, threads.get(thread), trace.host.ts_ns[c]).map(|k| OpRef {
                        thread,
                        op: k as u32,
                    })
                })
                .unwrap_or(OpRef::NONE)
        })
        .collect();
    (0..acts)
        .map(|a| {
            links
                .owner_call(a)
                .and_then(|c| calls.binary_search(&c).ok())
                .map_or(OpRef::NONE, |i| of_call[i])
        })
        .collect()
}

/// The host events of one kind (that `keep` accepts) per (input, thread), nested by time.
fn threads_of(trace: &Trace, kind: HostKind, keep: impl Fn(&str) -> bool) -> Threads {
    let host = &trace.host;
    let kept = trace.names.per_name(keep);
    let kept = |h: usize| host.kind[h] == kind && kept[host.name[h].index()];
    // Counted first, so each thread's column is allocated once at its size (millions of ops).
    let mut sizes: BTreeMap<ThreadKey, usize> = BTreeMap::new();
    for h in (0..host.len()).filter(|&h| kept(h)) {
        *sizes.entry((host.input[h], host.tid(h))).or_default() += 1;
    }
    let mut threads = Threads {
        keys: sizes.keys().copied().collect(),
        list: sizes
            .values()
            .map(|&n| Thread {
                ops: Vec::with_capacity(n),
                parent: Vec::new(),
            })
            .collect(),
    };
    for h in (0..host.len()).filter(|&h| kept(h)) {
        if let Some(t) = threads.find(&(host.input[h], host.tid(h))) {
            threads.list[t as usize].ops.push(h as u32);
        }
    }
    for t in &mut threads.list {
        t.ops.sort_by_key(|&h| {
            let h = h as usize;
            (host.ts_ns[h], std::cmp::Reverse(host.dur_ns[h]), h)
        });
        let mut stack: Vec<usize> = Vec::new();
        t.parent = Vec::with_capacity(t.ops.len());
        for (k, &h) in t.ops.iter().enumerate() {
            let h = h as usize;
            while let Some(&top) = stack.last() {
                let th = t.ops[top] as usize;
                if host.ts_ns[th].saturating_add(host.dur_ns[th]) <= host.ts_ns[h] {
                    stack.pop();
                } else {
                    break;
                }
            }
            t.parent.push(stack.last().map_or(NO_PARENT, |&p| p as u32));
            stack.push(k);
        }
    }
    threads
}

/// The cpu_ops of every thread, nested, and each GPU activity's innermost launching op: built
/// once per analysis for the bucket view and the op view.
pub struct OpIndex {
    threads: Threads,
    /// Per GPU activity: its innermost launching op ([`OpRef::NONE`]: none).
    owner: Vec<OpRef>,
    /// Graph-replayed activities owned by a captured op: activity → its graph launch call.
    replay: HashMap<u32, u32>,
}

impl OpIndex {
    pub fn build(trace: &Trace, links: &Links) -> OpIndex {
        let threads = threads_of(trace, HostKind::CpuOp, |_| true);
        let owner = if threads.is_empty() {
            vec![OpRef::NONE; trace.activities.len()]
        } else {
            owners(trace, links, &threads)
        };
        let replay = links.replays();
        OpIndex {
            threads,
            owner,
            replay,
        }
    }

    /// No ops: every activity keeps its kernel-name bucket (`--no-attribution`).
    pub fn empty(trace: &Trace) -> OpIndex {
        OpIndex {
            threads: Threads::default(),
            owner: vec![OpRef::NONE; trace.activities.len()],
            replay: HashMap::default(),
        }
    }

    /// Per activity: the host index of its innermost launching op.
    pub fn owner_ops(&self) -> Vec<Option<u32>> {
        (0..self.owner.len())
            .map(|a| self.owner(a).map(|o| self.op(o) as u32))
            .collect()
    }

    /// The innermost launching op of activity `a`.
    fn owner(&self, a: usize) -> Option<OpRef> {
        self.owner[a].get()
    }

    /// The host index of an op.
    fn op(&self, o: OpRef) -> usize {
        self.threads.get(o.thread).op(o.op as usize)
    }

    /// Which execution of its op's work activity `a` is: the graph launch that replayed it,
    /// or `u32::MAX` for work launched directly (one execution per call).
    fn execution(&self, a: usize) -> u32 {
        self.replay.get(&(a as u32)).copied().unwrap_or(u32::MAX)
    }
}

/// Per activity, its bucket: the bucket of the nearest enclosing op an op rule matches
/// (`rules/ops.toml`), else its kernel name's; and whether that op view applied (the trace has
/// cpu_ops that launched GPU work). Inputs without ops (rocprof) keep kernel-name buckets.
pub fn activity_buckets(
    trace: &Trace,
    index: &OpIndex,
    rules: &RuleSet,
    classified: &Classified,
) -> (Vec<Bucket>, bool) {
    let acts = &trace.activities;
    // Copies and fills are memory whatever they are called and whichever op launched them
    // (FEED.md "memory"): a convolution's memset is not convolution work.
    let is_copy = |a: usize| matches!(acts.kind[a], ActivityKind::Memcpy | ActivityKind::Memset);
    let mut out: Vec<Bucket> = (0..acts.len())
        .map(|a| {
            if is_copy(a) {
                Bucket::Memory
            } else {
                classified.get(acts.name[a]).bucket
            }
        })
        .collect();
    if index.threads.is_empty() {
        return (out, false);
    }
    let decides = trace.names.per_name(|n| rules.ops.bucket_of(n));
    let mut applied = false;
    for (a, bucket) in out.iter_mut().enumerate() {
        let Some(o) = index.owner(a) else {
            continue;
        };
        applied = true;
        // The runtime's copy/fill kernels (`__amd_rocclr_fillBuffer`) stay memory too.
        if *bucket == Bucket::Memory {
            continue;
        }
        let t = index.threads.get(o.thread);
        let mut cur = Some(o.op as usize);
        while let Some(i) = cur {
            if let Some(b) = decides[trace.host.name[t.op(i)].index()] {
                *bucket = b;
                break;
            }
            cur = t.parent(i);
        }
    }
    (out, applied)
}

pub fn ops(
    trace: &Trace,
    index: &OpIndex,
    devices: &[efficiency::DevicePeaks],
    classified: &Classified,
    buckets: &[Bucket],
    in_scope: &[bool],
) -> OpTables {
    let host = &trace.host;
    let threads = &index.threads;
    let mut calls = Calls::default();
    let mut tallies = vec![FlopTally::default(); trace.inputs.len()];
    let mut missing: BTreeMap<(u32, NameId), i64> = BTreeMap::new();
    // A kernel that does GEMM, attention or convolution work by its own name (a layout copy
    // inside a convolution op is conv time, not uncounted FLOPs).
    let compute_kernel = |a: usize| {
        matches!(
            classified.get(trace.activities.name[a]).bucket,
            Bucket::Gemm | Bucket::Attention | Bucket::Conv
        )
    };
    let composite_name = trace.names.per_name(efficiency::is_composite);
    let engine_name = trace
        .names
        .per_name(|n| n.starts_with("autograd::engine::evaluate_function: "));
    let forward_only = trace.names.per_name(efficiency::is_forward_only_op);
    let memory_op = trace.names.per_name(super::bytes_moved::is_memory_op);
    // An autograd node's own op (`AddmmBackward0`): the GEMMs it calls are backward work.
    let node_name = trace
        .names
        .per_name(|n| !n.contains("::") && n.contains("Backward"));
    let mut device_peaks: HashMap<(u32, u32), Option<&efficiency::DevicePeaks>> =
        HashMap::default();
    let mut acc: BTreeMap<NameId, Acc> = BTreeMap::new();
    let mut no_op = Acc::default();
    let acts = &trace.activities;
    let (mut seen, mut chain, mut composite_chain): (
        Vec<NameId>,
        Vec<NameId>,
        Vec<(usize, usize)>,
    ) = Default::default();
    for a in (0..acts.len()).filter(|&a| in_scope[a]) {
        let dur = acts.dur_ns[a];
        let bucket = buckets[a];
        let Some(o) = index.owner(a) else {
            no_op.self_ns += dur;
            no_op.total_ns += dur;
            no_op.launches += 1;
            *no_op.by_bucket.entry(bucket).or_default() += dur;
            if compute_kernel(a) {
                *missing.entry((acts.input[a], NameId::NONE)).or_default() += dur;
            }
            continue;
        };
        let t = threads.get(o.thread);
        let k = o.op as usize;
        let h = t.op(k);
        let e = acc.entry(host.name[h]).or_default();
        e.self_ns += dur;
        e.launches += 1;
        *e.by_bucket.entry(bucket).or_default() += dur;
        if host.input_dims(h) != NameId::NONE {
            *e.shapes.entry(host.input_dims(h)).or_default() += 1;
        }
        // The peaks of the device this activity ran on (one lookup per device).
        let peaks = *device_peaks
            .entry((acts.input[a], acts.device[a]))
            .or_insert_with(|| {
                trace.inputs[acts.input[a] as usize]
                    .devices
                    .iter()
                    .find(|d| d.id == acts.device[a])
                    .and_then(|d| crate::classify::devices::peaks_of(devices, d))
            });
        let execution = index.execution(a);
        let span = (acts.ts_ns[a], acts.end_ns(a));
        let fp32_kernel =
            classified.get(acts.name[a]).tag == Some(crate::classify::KernelTag::Fp32Gemm);
        // total_ns: this op and every distinct op name enclosing it.
        // The enclosing ops, innermost first, and which of them are composite (buffers kept
        // across activities: millions of them).
        seen.clear();
        chain.clear();
        composite_chain.clear();
        let mut in_backward = false;
        let mut cur = Some(k);
        while let Some(i) = cur {
            let name = host.name[t.op(i)];
            in_backward |= engine_name[name.index()];
            if composite_name[name.index()] {
                composite_chain.push((t.op(i), chain.len()));
            }
            chain.push(name);
            if !seen.contains(&name) {
                seen.push(name);
                let e = acc.entry(name).or_default();
                e.total_ns += dur;
                *e.total_by_bucket.entry(bucket).or_default() += dur;
            }
            cur = t.parent(i);
        }
        // In backward, a call is forward work run again when a forward-only op (`addmm`,
        // `linear`, `convolution`, SDPA) holds it below the autograd node running it: backward
        // formulas call `mm`, `bmm` and the `*_backward` ops, and a hand-written backward's
        // `matmul` has no forward op around it.
        let phase = |pos: usize| {
            if !in_backward {
                return CallPhase::Forward;
            }
            let forward_op = chain[pos..]
                .iter()
                .take_while(|n| !node_name[n.index()] && !engine_name[n.index()])
                .any(|n| forward_only[n.index()]);
            if forward_op {
                CallPhase::ForwardInBackward
            } else {
                CallPhase::Backward
            }
        };
        // A composite op (SDPA, convolution) whose FLOPs its shapes give: its kernels, launched
        // by the ops inside it, are its time. Only the outermost one with a number counts, so
        // eager SDPA around its flash/efficient op is one call, not two.
        let mut in_composite = false;
        for &(outer, pos) in composite_chain.iter().rev() {
            let at = CallContext {
                phase: phase(pos),
                nested: false,
            };
            if calls.add_composite((outer, execution), at, span, || {
                composite_call(trace, outer, peaks)
            }) {
                in_composite = true;
                break;
            }
        }
        // A GEMM inside a counted composite (SDPA's math backend) keeps its own rate but is not
        // counted twice in the step's FLOPs.
        let at = CallContext {
            phase: phase(0),
            nested: in_composite,
        };
        let counted = calls.add_gemm((h, execution), at, span, || {
            gemm_call(trace, h, peaks, fp32_kernel)
        }) || in_composite;
        if fp32_kernel {
            calls
                .gemm
                .settle_fp32((h, execution), || gemm_call(trace, h, peaks, true));
        }
        if !counted && compute_kernel(a) {
            *missing.entry((acts.input[a], host.name[h])).or_default() += dur;
        }
        // Memory-bound ops' kernels (copies through the DMA engines are transfers, not HBM
        // bandwidth).
        if !counted
            && acts.kind[a] == crate::model::ActivityKind::Kernel
            && memory_op[host.name[h].index()]
        {
            calls.add_memory((h, execution), at, span, || memory_call(trace, h, peaks));
        }
    }
    let (by_shape, memory_shapes) = calls.rates(trace, &mut acc, &mut tallies);
    add_missing(trace, missing, &mut tallies);
    let (totals, shapes) = totals(trace, acc, no_op, by_shape);
    OpTables {
        ops: totals,
        shapes,
        memory_shapes: memory_totals(trace, memory_shapes),
        flops: tallies,
    }
}

/// Memory-bound calls per (op, `Input Dims`, `Input type`): calls and bandwidth.
type MemoryByShape = BTreeMap<(NameId, NameId, NameId, NameId), (u64, Bandwidth)>;

/// The memory-bound shapes keyed by strings, in key order.
fn memory_totals(trace: &Trace, by: MemoryByShape) -> Vec<MemoryShapeTotals> {
    by.into_iter()
        .map(|((op, dims, types, inductor), (calls, bandwidth))| {
            let file = crate::model::inductor::InductorArgs::decode(trace.names.get(inductor));
            MemoryShapeTotals {
                op: trace.names.get(op).to_string(),
                dims: trace.names.get(dims).to_string(),
                types: trace.names.get(types).to_string(),
                kernel_file: file.and_then(|i| i.file),
                calls,
                bandwidth,
            }
        })
        .collect()
}

/// The op and shape accumulators keyed by strings, sorted by key.
fn totals(
    trace: &Trace,
    acc: BTreeMap<NameId, Acc>,
    no_op: Acc,
    by_shape: BTreeMap<(NameId, NameId), ShapeAcc>,
) -> (Vec<OpTotals>, Vec<ShapeTotals>) {
    let mut totals: Vec<OpTotals> = acc
        .into_iter()
        .filter(|(_, a)| a.total_ns > 0 || a.launches > 0)
        .map(|(n, a)| a.totals(trace, trace.names.get(n).to_string()))
        .collect();
    if no_op.launches > 0 {
        totals.push(no_op.totals(trace, NO_OP.to_string()));
    }
    totals.sort_by(|a, b| a.name.cmp(&b.name));
    let mut shapes: Vec<ShapeTotals> = by_shape
        .into_iter()
        .map(|((op, dims), a)| ShapeTotals {
            op: trace.names.get(op).to_string(),
            dims: trace.names.get(dims).to_string(),
            calls: a.calls,
            ns: a.ns,
            flops: a.flops,
            bytes: a.bytes,
            flops_at_known_peak: a.flops_at_known_peak,
            peak_flops: a.peak_flops,
        })
        .collect();
    shapes.sort_by(|a, b| (&a.op, &a.dims).cmp(&(&b.op, &b.dims)));
    (totals, shapes)
}

/// GPU time of one op name, keyed by strings so that ranks' totals add up ([`OpTotals::add`]):
/// what an [`OpRow`] is computed from.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OpTotals {
    pub name: String,
    pub self_ns: i64,
    pub total_ns: i64,
    pub launches: u64,
    pub by_bucket: BTreeMap<Bucket, i64>,
    pub total_by_bucket: BTreeMap<Bucket, i64>,
    /// Calls per raw `Input Dims`.
    pub shapes: BTreeMap<String, u64>,
    pub flops: f64,
    pub gemm_ns: i64,
    pub flops_at_known_peak: f64,
    pub peak_flops: f64,
    /// Bytes its calls moved (memory-bound ops from their shapes, GEMMs from their operands).
    #[serde(default)]
    pub bandwidth: Bandwidth,
}

impl OpTotals {
    pub fn add(&mut self, o: &OpTotals) {
        self.self_ns += o.self_ns;
        self.total_ns += o.total_ns;
        self.launches += o.launches;
        for (b, ns) in &o.by_bucket {
            *self.by_bucket.entry(*b).or_default() += ns;
        }
        for (b, ns) in &o.total_by_bucket {
            *self.total_by_bucket.entry(*b).or_default() += ns;
        }
        for (d, n) in &o.shapes {
            *self.shapes.entry(d.clone()).or_default() += n;
        }
        self.flops += o.flops;
        self.gemm_ns += o.gemm_ns;
        self.flops_at_known_peak += o.flops_at_known_peak;
        self.peak_flops += o.peak_flops;
        self.bandwidth.add(&o.bandwidth);
    }
}

/// The calls of one (op, raw shapes), keyed by strings: what a [`ShapeRow`] is computed from.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ShapeTotals {
    pub op: String,
    pub dims: String,
    pub calls: u64,
    pub ns: i64,
    pub flops: f64,
    /// Bytes of operands and results (None once a call's are unknown).
    pub bytes: Option<f64>,
    pub flops_at_known_peak: f64,
    pub peak_flops: f64,
}

impl ShapeTotals {
    pub fn add(&mut self, o: &ShapeTotals) {
        self.bytes = match (self.bytes, o.bytes) {
            (Some(a), Some(b)) => Some(a + b),
            (None, b) if self.calls == 0 => b,
            (a, None) if o.calls == 0 => a,
            _ => None,
        };
        self.calls += o.calls;
        self.ns += o.ns;
        self.flops += o.flops;
        self.flops_at_known_peak += o.flops_at_known_peak;
        self.peak_flops += o.peak_flops;
    }
}

/// What the op attribution computes: per op, per GEMM/composite shape, per memory-bound
/// shape, and the FLOP tallies per input.
#[derive(Default)]
pub struct OpTables {
    pub ops: Vec<OpTotals>,
    pub shapes: Vec<ShapeTotals>,
    pub memory_shapes: Vec<MemoryShapeTotals>,
    pub flops: Vec<FlopTally>,
}

/// A memory-bound op's calls of one shape (by raw `Input Dims`), keyed by strings so that
/// ranks' totals add up: what a [`MemoryShapeRow`] is computed from.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MemoryShapeTotals {
    pub op: String,
    pub dims: String,
    /// Raw `Input type`.
    pub types: String,
    /// Inductor's `kernel_file` of a Triton kernel.
    #[serde(default)]
    pub kernel_file: Option<String>,
    pub calls: u64,
    pub bandwidth: Bandwidth,
}

impl MemoryShapeTotals {
    pub fn add(&mut self, o: &MemoryShapeTotals) {
        self.calls += o.calls;
        self.bandwidth.add(&o.bandwidth);
    }
}

/// One memory-bound op and shape (feed `memory_shapes[]`, an addition): its calls, their time,
/// the bytes each call moves, the achieved GB/s and its share of the HBM peak.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MemoryShapeRow {
    pub op: String,
    pub shapes: String,
    /// The tensor inputs' element types (`bf16`, `fp32`, …), comma-separated.
    pub dtypes: String,
    pub calls: u64,
    pub ns: i64,
    pub bytes_per_call: f64,
    pub gbps: f64,
    pub pct_of_hbm_peak: Option<f64>,
    /// The HBM peak of the devices it ran on (time-weighted).
    pub peak_gbps: Option<f64>,
    /// Inductor's source file of a Triton kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_file: Option<String>,
}

/// The feed's `memory_shapes`, most time first.
pub fn memory_shape_rows(totals: &[MemoryShapeTotals]) -> Vec<MemoryShapeRow> {
    let mut rows: Vec<MemoryShapeRow> = totals
        .iter()
        .filter(|t| t.bandwidth.ns > 0 && t.calls > 0)
        .map(|t| MemoryShapeRow {
            op: t.op.clone(),
            shapes: compact_dims(&t.dims),
            dtypes: super::bytes_moved::short_types(&t.types, &t.dims),
            calls: t.calls,
            ns: t.bandwidth.ns,
            bytes_per_call: (t.bandwidth.bytes / t.calls as f64).round(),
            gbps: t.bandwidth.gbps().unwrap_or(0.0),
            pct_of_hbm_peak: t.bandwidth.pct_of_peak(),
            peak_gbps: (t.bandwidth.peak_bytes > 0.0 && t.bandwidth.ns_at_known_peak > 0).then(
                || {
                    (t.bandwidth.peak_bytes / t.bandwidth.ns_at_known_peak as f64 * 10.0).round()
                        / 10.0
                },
            ),
            kernel_file: t.kernel_file.clone(),
        })
        .collect();
    rows.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then_with(|| a.op.cmp(&b.op))
            .then_with(|| a.shapes.cmp(&b.shapes))
            .then_with(|| a.dtypes.cmp(&b.dtypes))
    });
    rows
}

/// The feed's `ops`, largest self time first.
pub fn op_rows(totals: &[OpTotals]) -> Vec<OpRow> {
    let mut rows: Vec<OpRow> = totals.iter().map(op_row).collect();
    rows.sort_by(|a, b| {
        b.self_ns
            .cmp(&a.self_ns)
            .then(b.total_ns.cmp(&a.total_ns))
            .then(a.name.cmp(&b.name))
    });
    rows
}

/// GPU time of one op name: its own, with the ops it encloses, per bucket, its shapes and the
/// FLOPs of its GEMM or composite calls.
#[derive(Default)]
struct Acc {
    self_ns: i64,
    total_ns: i64,
    launches: u64,
    by_bucket: BTreeMap<Bucket, i64>,
    total_by_bucket: BTreeMap<Bucket, i64>,
    shapes: HashMap<NameId, u64>,
    /// GEMM efficiency: FLOPs of the calls, their GPU time, and the time weighted by the
    /// device peak (FLOP per ns at peak) for the calls whose peak is known.
    flops: f64,
    gemm_ns: i64,
    flops_at_known_peak: f64,
    peak_flops: f64,
    bw: Bandwidth,
}

/// Bytes moved by an op's calls whose bytes are known, their time, and the time weighted by
/// the HBM peak (bytes per ns at peak) for the calls whose device peak is known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bandwidth {
    pub bytes: f64,
    pub ns: i64,
    pub bytes_at_known_peak: f64,
    pub peak_bytes: f64,
    /// The time of the calls whose device peak is known.
    #[serde(default)]
    pub ns_at_known_peak: i64,
}

impl Bandwidth {
    pub fn add(&mut self, o: &Bandwidth) {
        self.bytes += o.bytes;
        self.ns += o.ns;
        self.bytes_at_known_peak += o.bytes_at_known_peak;
        self.peak_bytes += o.peak_bytes;
        self.ns_at_known_peak += o.ns_at_known_peak;
    }
    /// Achieved GB/s (bytes per ns), 0.1 GB/s precision.
    pub fn gbps(&self) -> Option<f64> {
        (self.ns > 0 && self.bytes > 0.0)
            .then(|| (self.bytes / self.ns as f64 * 10.0).round() / 10.0)
    }
    /// Share of the HBM peak, at most 100 (cache-resident data runs above it), 0.01 precision.
    pub fn pct_of_peak(&self) -> Option<f64> {
        (self.peak_bytes > 0.0).then(|| {
            ((self.bytes_at_known_peak * 100.0 / self.peak_bytes).min(100.0) * 100.0).round()
                / 100.0
        })
    }
}

impl Acc {
    fn add_bytes(&mut self, c: &Call, ns: i64) {
        self.bw.add_call(c, ns);
    }
}

impl Bandwidth {
    /// Adds one call's bytes (when known) and time.
    fn add_call(&mut self, c: &Call, ns: i64) {
        let Some(bytes) = c.bytes() else { return };
        self.bytes += bytes;
        self.ns += ns;
        if !c.peak_gbps.is_nan() {
            self.bytes_at_known_peak += bytes;
            // GB/s = bytes per ns.
            self.peak_bytes += ns as f64 * c.peak_gbps;
            self.ns_at_known_peak += ns;
        }
    }
}

/// One GEMM or composite call: its FLOPs and data type, the peak of the device of its first
/// kernel, and its activities' spans, whose union is its time (cuDNN runs some convolutions'
/// kernels side by side on several streams: the call took their union, as TraceLens counts
/// it, not their sum).
/// Large traces hold millions of them: the optional numbers are NaN when absent.
#[derive(Clone, Copy)]
struct Call {
    op: NameId,
    dims: NameId,
    flops: f64,
    /// Bytes of operands and result (NaN: unknown).
    bytes: f64,
    /// The device's dense peak for the call's data type (NaN: unknown).
    peak_tflops: f64,
    /// The type it computes in (MFU takes the peak of the type with the most FLOPs).
    dtype: efficiency::Dtype,
    /// FLOPs as MFU counts them (attention: every query-key pair, causal or not).
    model_flops: f64,
    /// The device's HBM peak in GB/s (NaN: unknown).
    peak_gbps: f64,
    /// Memory-bound calls: `Input type` (a cast and a copy of one shape differ), and a Triton
    /// launcher's Inductor arguments (its file); NONE otherwise.
    types: NameId,
    inductor: NameId,
}

impl Call {
    fn bytes(&self) -> Option<f64> {
        (!self.bytes.is_nan()).then_some(self.bytes)
    }
    fn peak_tflops(&self) -> Option<f64> {
        (!self.peak_tflops.is_nan()).then_some(self.peak_tflops)
    }
}

/// A GEMM call of host op `h`, when its shapes and data type give its FLOPs.
fn gemm_call(
    trace: &Trace,
    h: usize,
    peaks: Option<&efficiency::DevicePeaks>,
    fp32_kernel: bool,
) -> Option<Call> {
    let host = &trace.host;
    let dims = host.input_dims(h);
    let name = trace.names.get(host.name[h]);
    // Inductor's Triton template (a GEMM it generated): its own FLOP and byte counts, when the
    // run asked for them (`TORCHINDUCTOR_BENCHMARK_KERNEL=1`).
    let template = name
        .starts_with("triton_tem_")
        .then(|| {
            crate::model::inductor::InductorArgs::decode(trace.names.get(host.op_args(h).inductor))
        })
        .flatten()
        .filter(|i| i.flop.is_some_and(|f| f > 0.0));
    let flops = match &template {
        Some(t) => t.flop?,
        None => (dims != NameId::NONE)
            .then(|| efficiency::gemm_flops(name, trace.names.get(dims)))
            .flatten()?,
    };
    let dtype = efficiency::compute_dtype(
        efficiency::dtype_of(trace.names.get(host.input_types(h)))?,
        peaks,
        fp32_kernel,
    );
    let bytes = match &template {
        Some(t) => t.bytes(),
        None => efficiency::gemm_bytes(name, trace.names.get(dims), dtype),
    };
    Some(Call {
        op: host.name[h],
        dims,
        flops,
        bytes: bytes.unwrap_or(f64::NAN),
        peak_tflops: peaks.and_then(|p| p.peak_tflops(dtype)).unwrap_or(f64::NAN),
        dtype,
        model_flops: flops,
        peak_gbps: hbm_gbps(peaks),
        types: NameId::NONE,
        inductor: NameId::NONE,
    })
}

/// A device's HBM peak in GB/s, NaN when unknown.
fn hbm_gbps(peaks: Option<&efficiency::DevicePeaks>) -> f64 {
    peaks.and_then(|p| p.hbm_gbps).unwrap_or(f64::NAN)
}

/// A memory-bound call of host op `h` whose bytes its shapes give
/// ([`super::bytes_moved::op_bytes`]); no FLOPs.
fn memory_call(trace: &Trace, h: usize, peaks: Option<&efficiency::DevicePeaks>) -> Option<Call> {
    let host = &trace.host;
    let args = host.op_args(h);
    let name = trace.names.get(host.name[h]);
    // A Triton kernel's launcher: Inductor's own count when the run asked for it.
    let inductor = crate::model::inductor::InductorArgs::decode(trace.names.get(args.inductor));
    let bytes = match inductor.and_then(|i| i.bytes()) {
        Some(b) => b,
        None => super::bytes_moved::op_bytes(
            name,
            trace.names.get(args.input_dims),
            trace.names.get(args.input_types),
            trace.names.get(args.concrete_inputs),
        )?,
    };
    Some(Call {
        op: host.name[h],
        dims: args.input_dims,
        flops: 0.0,
        bytes,
        peak_tflops: f64::NAN,
        dtype: efficiency::Dtype::Fp32,
        model_flops: 0.0,
        peak_gbps: hbm_gbps(peaks),
        types: args.input_types,
        inductor: args.inductor,
    })
}

/// A composite call (SDPA, convolution) of host op `outer`, when its shapes give its FLOPs.
fn composite_call(
    trace: &Trace,
    outer: usize,
    peaks: Option<&efficiency::DevicePeaks>,
) -> Option<Call> {
    let host = &trace.host;
    let name = host.name[outer];
    let dims = host.input_dims(outer);
    let flops = (dims != NameId::NONE)
        .then(|| {
            efficiency::composite_flops(
                trace.names.get(name),
                trace.names.get(dims),
                trace.names.get(host.concrete_inputs(outer)),
            )
        })
        .flatten()?;
    let dtype = efficiency::compute_dtype(
        efficiency::dtype_of(trace.names.get(host.input_types(outer)))?,
        peaks,
        false,
    );
    Some(Call {
        op: name,
        dims,
        flops,
        bytes: f64::NAN,
        peak_tflops: peaks.and_then(|p| p.peak_tflops(dtype)).unwrap_or(f64::NAN),
        dtype,
        model_flops: efficiency::attention_model_flops(
            trace.names.get(name),
            trace.names.get(dims),
        )
        .unwrap_or(flops),
        peak_gbps: hbm_gbps(peaks),
        types: NameId::NONE,
        inductor: NameId::NONE,
    })
}

/// The GEMM and composite calls, by (host op, execution): a captured call runs once per graph
/// replay, each time its FLOPs; and every call's activity spans, by call id.
#[derive(Default)]
struct Calls {
    gemm: CallMap,
    composite: CallMap,
    /// Memory-bound ops' calls (elementwise, norms, reductions, copies): bytes, no FLOPs.
    memory: CallMap,
    spans: Vec<(u32, i64, i64)>,
    next_id: u32,
}

/// GEMM/attention/conv kernel time without a FLOP count, by (input, launching op; `NONE`: no
/// op), into each input's tally.
fn add_missing(trace: &Trace, missing: BTreeMap<(u32, NameId), i64>, tallies: &mut [FlopTally]) {
    for ((input, name), ns) in missing {
        let name = if name == NameId::NONE {
            NO_OP
        } else {
            trace.names.get(name)
        };
        *tallies[input as usize]
            .missing_ns
            .entry(name.to_string())
            .or_default() += ns;
    }
}

/// What makes a call the same as forward's: (input, op, shapes).
type Signature = (u32, NameId, NameId);

/// Calls by (host op, execution), in a vector with a hash index, each 16 bytes: what a call is
/// apart from its time (op, shapes, FLOPs, bytes, peak) is stored once per distinct value (a
/// model runs the same shapes every step). Millions of GEMM calls in large traces; read back in
/// key order.
#[derive(Default)]
struct CallMap {
    slot: HashMap<(u32, u32), u32>,
    calls: Vec<CallRecord>,
    kinds: Vec<Call>,
    kind_ids: HashMap<[u64; 10], u32>,
}

#[derive(Clone, Copy)]
struct CallRecord {
    key: (u32, u32),
    /// Index into `kinds`; [`CallRecord::NO_FLOPS`] for an op without a count.
    kind: u32,
    /// Index into the spans' union, set when the call's first span is added.
    id: u32,
    /// Where and in what the call ran.
    at: CallContext,
}

/// Where a call ran: its phase, and whether a counted composite call holds it.
#[derive(Clone, Copy, Debug)]
struct CallContext {
    phase: CallPhase,
    nested: bool,
}

/// Where a GEMM or composite call ran, for telling recomputed forward work apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallPhase {
    Forward,
    Backward,
    /// Under a forward-only op inside backward (`aten::addmm`, `aten::linear`, SDPA,
    /// `aten::convolution`): recomputation when forward ran the same op on the same shapes.
    ForwardInBackward,
}

impl CallRecord {
    const NO_FLOPS: u32 = u32::MAX;
}

/// The index of `c` among the distinct calls, added when new.
fn intern(kinds: &mut Vec<Call>, kind_ids: &mut HashMap<[u64; 10], u32>, c: Call) -> u32 {
    let bits = [
        u64::from(c.op.0),
        u64::from(c.dims.0),
        c.flops.to_bits(),
        c.bytes.to_bits(),
        c.peak_tflops.to_bits(),
        c.dtype as u64,
        c.model_flops.to_bits(),
        c.peak_gbps.to_bits(),
        u64::from(c.types.0),
        u64::from(c.inductor.0),
    ];
    *kind_ids.entry(bits).or_insert_with(|| {
        kinds.push(c);
        kinds.len() as u32 - 1
    })
}

impl CallMap {
    fn entry(
        &mut self,
        key: (usize, u32),
        at: CallContext,
        make: impl FnOnce() -> Option<Call>,
    ) -> &mut CallRecord {
        let key = (key.0 as u32, key.1);
        let (calls, kinds, kind_ids) = (&mut self.calls, &mut self.kinds, &mut self.kind_ids);
        let i = *self.slot.entry(key).or_insert_with(|| {
            let kind = make().map_or(CallRecord::NO_FLOPS, |c| intern(kinds, kind_ids, c));
            calls.push(CallRecord {
                key,
                kind,
                id: u32::MAX,
                at,
            });
            calls.len() as u32 - 1
        });
        &mut self.calls[i as usize]
    }
    /// A call first seen through a kernel that said nothing of its precision (cuBLAS's split-K
    /// memset before an fp32 GEMM) was taken as TF32; a later SIMT fp32 kernel of the same call
    /// makes it fp32 (`make` builds it so).
    fn settle_fp32(&mut self, key: (usize, u32), make: impl FnOnce() -> Option<Call>) {
        let Some(&i) = self.slot.get(&(key.0 as u32, key.1)) else {
            return;
        };
        let kind = self.calls[i as usize].kind;
        if kind == CallRecord::NO_FLOPS
            || self.kinds[kind as usize].dtype != efficiency::Dtype::Tf32
        {
            return;
        }
        if let Some(c) = make() {
            self.calls[i as usize].kind = intern(&mut self.kinds, &mut self.kind_ids, c);
        }
    }
    /// The calls with a count and their ids, in key order (the sums over them are in floating
    /// point: a fixed order keeps them the same bytes).
    fn into_sorted(self) -> impl Iterator<Item = (Call, u32, CallRecord)> {
        drop(self.slot);
        let mut calls = self.calls;
        calls.sort_unstable_by_key(|c| c.key);
        let kinds = self.kinds;
        calls
            .into_iter()
            .filter(|c| c.kind != CallRecord::NO_FLOPS)
            .map(move |c| (kinds[c.kind as usize], c.id, c))
    }
}

impl Calls {
    /// Adds an activity's span to its GEMM call (made by `make` when first seen); false when
    /// that op has no FLOPs.
    fn add_gemm(
        &mut self,
        key: (usize, u32),
        at: CallContext,
        span: (i64, i64),
        make: impl FnOnce() -> Option<Call>,
    ) -> bool {
        let call = self.gemm.entry(key, at, make);
        Self::push(call, &mut self.next_id, &mut self.spans, span)
    }
    /// Adds a kernel's span to its memory-bound op's call; false when the op moves no known
    /// bytes.
    fn add_memory(
        &mut self,
        key: (usize, u32),
        at: CallContext,
        span: (i64, i64),
        make: impl FnOnce() -> Option<Call>,
    ) -> bool {
        let call = self.memory.entry(key, at, make);
        Self::push(call, &mut self.next_id, &mut self.spans, span)
    }
    /// Adds an activity's span to a composite call; false when that op has no FLOPs.
    fn add_composite(
        &mut self,
        key: (usize, u32),
        at: CallContext,
        span: (i64, i64),
        make: impl FnOnce() -> Option<Call>,
    ) -> bool {
        let call = self.composite.entry(key, at, make);
        Self::push(call, &mut self.next_id, &mut self.spans, span)
    }
    fn push(
        call: &mut CallRecord,
        next_id: &mut u32,
        spans: &mut Vec<(u32, i64, i64)>,
        span: (i64, i64),
    ) -> bool {
        if call.kind == CallRecord::NO_FLOPS {
            return false;
        }
        if call.id == u32::MAX {
            call.id = *next_id;
            *next_id += 1;
        }
        spans.push((call.id, span.0, span.1));
        true
    }

    /// The (input, op, shapes) of the calls forward ran: a forward op inside backward with one
    /// of them is recomputation.
    fn forward_signatures(&self, trace: &Trace) -> rustc_hash::FxHashSet<Signature> {
        let mut out = rustc_hash::FxHashSet::default();
        for map in [&self.gemm, &self.composite] {
            for c in map.calls.iter() {
                if c.at.phase == CallPhase::Forward && c.kind != CallRecord::NO_FLOPS {
                    let k = &map.kinds[c.kind as usize];
                    out.insert((trace.host.input[c.key.0 as usize], k.op, k.dims));
                }
            }
        }
        out
    }

    /// Each call timed (the union of its spans), its FLOPs added to its op's row and to its
    /// input's tally (recomputation apart); the calls summed per (op, shapes).
    fn rates(
        mut self,
        trace: &Trace,
        acc: &mut BTreeMap<NameId, Acc>,
        tallies: &mut [FlopTally],
    ) -> (BTreeMap<(NameId, NameId), ShapeAcc>, MemoryByShape) {
        let mut by_shape: BTreeMap<(NameId, NameId), ShapeAcc> = BTreeMap::new();
        let mut memory_shapes = MemoryByShape::new();
        let forward = self.forward_signatures(trace);
        // A call faster than the device's peak (or with no finite count) has shapes that do not
        // describe its kernels: it gets no rate rather than an impossible one.
        let plausible = |(c, ns, _): &(Call, i64, CallRecord)| {
            c.flops.is_finite()
                && c.peak_tflops()
                    .is_none_or(|p| c.flops <= *ns as f64 * p * 1e3)
        };
        let busy = union_per_call(&mut self.spans, self.next_id as usize);
        drop(self.spans);
        let timed = |(c, id, rec): (Call, u32, CallRecord)| {
            let ns = busy.get(id as usize).copied().unwrap_or(0);
            (c, ns, rec)
        };
        // Memory-bound calls: their bytes over their time, whatever the rate (an op whose data
        // sits in the last-level cache runs above the HBM peak, and says so).
        let memory: Vec<(Call, i64, CallRecord)> = std::mem::take(&mut self.memory)
            .into_sorted()
            .map(timed)
            .collect();
        for (c, ns, _) in memory {
            acc.entry(c.op).or_default().add_bytes(&c, ns);
            let m = memory_shapes
                .entry((c.op, c.dims, c.types, c.inductor))
                .or_default();
            m.0 += 1;
            m.1.add_call(&c, ns);
        }
        for (c, ns, rec) in self
            .gemm
            .into_sorted()
            .chain(self.composite.into_sorted())
            .map(timed)
        {
            // The step's FLOPs count every call its shapes describe, however fast it looked.
            if !rec.at.nested && c.model_flops.is_finite() {
                let input = trace.host.input[rec.key.0 as usize];
                let t = &mut tallies[input as usize];
                t.executed += c.model_flops;
                *t.by_dtype.entry(c.dtype).or_default() += c.model_flops;
                if rec.at.phase == CallPhase::ForwardInBackward
                    && forward.contains(&(input, c.op, c.dims))
                {
                    t.recomputed += c.model_flops;
                    t.recomputed_calls += 1;
                }
            }
            if !plausible(&(c, ns, rec)) {
                continue;
            }
            let sh = by_shape.entry((c.op, c.dims)).or_default();
            sh.calls += 1;
            sh.ns += ns;
            sh.flops += c.flops;
            sh.bytes = match (sh.bytes, c.bytes()) {
                (Some(a), Some(b)) => Some(a + b),
                (None, b) if sh.calls == 1 => b,
                _ => None,
            };
            if let Some(p) = c.peak_tflops() {
                sh.flops_at_known_peak += c.flops;
                sh.peak_flops += ns as f64 * p * 1e3;
            }
            let e = acc.entry(c.op).or_default();
            e.add_bytes(&c, ns);
            e.flops += c.flops;
            e.gemm_ns += ns;
            if let Some(p) = c.peak_tflops() {
                e.flops_at_known_peak += c.flops;
                // TFLOP/s = 1e3 FLOP per ns.
                e.peak_flops += ns as f64 * p * 1e3;
            }
        }
        (by_shape, memory_shapes)
    }
}

/// The FLOPs of one input's GEMM, attention and convolution calls in scope (forward and
/// backward, as FlopCounterMode counts them: attention's causal mask halves nothing), MFU's
/// numerator.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FlopTally {
    /// Every counted call: what the hardware executed.
    pub executed: f64,
    /// Forward calls run again inside backward (activation checkpointing).
    pub recomputed: f64,
    pub recomputed_calls: u64,
    /// FLOPs per compute type (the type with the most picks the peak).
    pub by_dtype: BTreeMap<efficiency::Dtype, f64>,
    /// GEMM, attention and convolution GPU time whose op gave no FLOPs (no recorded shapes, an
    /// op the counter does not know, a Triton template), by the launching op's name.
    pub missing_ns: BTreeMap<String, i64>,
}

/// The calls of one (op, shapes).
#[derive(Default)]
struct ShapeAcc {
    calls: u64,
    ns: i64,
    flops: f64,
    bytes: Option<f64>,
    flops_at_known_peak: f64,
    peak_flops: f64,
}

impl Acc {
    fn totals(self, trace: &Trace, name: String) -> OpTotals {
        OpTotals {
            name,
            self_ns: self.self_ns,
            total_ns: self.total_ns,
            launches: self.launches,
            by_bucket: self.by_bucket,
            total_by_bucket: self.total_by_bucket,
            shapes: self
                .shapes
                .into_iter()
                .map(|(d, n)| (trace.names.get(d).to_string(), n))
                .collect(),
            flops: self.flops,
            gemm_ns: self.gemm_ns,
            flops_at_known_peak: self.flops_at_known_peak,
            peak_flops: self.peak_flops,
            bandwidth: self.bw,
        }
    }
}

fn op_row(a: &OpTotals) -> OpRow {
    OpRow {
        name: a.name.clone(),
        self_ns: a.self_ns,
        total_ns: a.total_ns,
        launches: a.launches,
        // The bucket of most of its own time, or of its nested ops' time when it has none.
        bucket: (if a.self_ns > 0 {
            &a.by_bucket
        } else {
            &a.total_by_bucket
        })
        .iter()
        .max_by(|x, y| x.1.cmp(y.1).then(y.0.cmp(x.0)))
        .map_or(Bucket::Other, |(b, _)| *b),
        shapes: a
            .shapes
            .iter()
            .max_by(|x, y| x.1.cmp(y.1).then(y.0.cmp(x.0)))
            .map(|(s, _)| compact_dims(s)),
        tflops: (a.gemm_ns > 0 && a.flops > 0.0)
            .then(|| (a.flops / a.gemm_ns as f64 / 1e3 * 1e3).round() / 1e3),
        pct_of_peak: (a.peak_flops > 0.0)
            .then(|| (a.flops_at_known_peak * 100.0 / a.peak_flops * 100.0).round() / 100.0),
        gbps: a.bandwidth.gbps(),
        pct_of_hbm_peak: a.bandwidth.pct_of_peak(),
    }
}

/// The feed's `op_shapes`, most time first.
pub fn shape_rows(totals: &[ShapeTotals]) -> Vec<ShapeRow> {
    let mut shapes: Vec<ShapeRow> = totals
        .iter()
        .filter(|a| a.ns > 0)
        .map(|a| ShapeRow {
            op: a.op.clone(),
            shapes: compact_dims(&a.dims),
            calls: a.calls,
            ns: a.ns,
            tflops: (a.flops / a.ns as f64 / 1e3 * 1e3).round() / 1e3,
            pct_of_peak: (a.peak_flops > 0.0)
                .then(|| (a.flops_at_known_peak * 100.0 / a.peak_flops * 100.0).round() / 100.0),
            // Bytes per ns = GB/s.
            gbps: a.bytes.map(|b| (b / a.ns as f64 * 10.0).round() / 10.0),
        })
        .collect();
    shapes.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then(a.op.cmp(&b.op))
            .then(a.shapes.cmp(&b.shapes))
    });
    shapes
}

/// One GEMM or composite op at one shape (the feed's `op_shapes`): its calls, the time of their
/// kernels, achieved TFLOP/s, share of peak and the GB/s of the operands and result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShapeRow {
    pub op: String,
    pub shapes: String,
    pub calls: u64,
    pub ns: i64,
    pub tflops: f64,
    pub pct_of_peak: Option<f64>,
    pub gbps: Option<f64>,
}

/// One row of the feed's `modules` or `sources`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FrameRow {
    /// `nn.Module: Name_0` for modules; `file.py(line): function` for sources (as `location`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    pub self_ns: i64,
    pub total_ns: i64,
}

/// A Python frame of the model's own code: a source file, not PyTorch's internals or a builtin.
pub fn is_user_frame(name: &str) -> bool {
    name.contains(".py(")
        && !name.starts_with("torch/")
        && !name.contains("/torch/")
        && !name.starts_with("<")
        && !name.starts_with("threading.py")
        && !name.starts_with("runpy.py")
        && !name.starts_with("multiprocessing/")
        && !name.starts_with("contextlib.py")
}

/// The frame rows, and each activity's innermost frame (`NameId::NONE` without one; empty when
/// the trace has no frames of the kind).
#[derive(Debug, Default)]
pub struct Frames {
    pub rows: Vec<FrameRow>,
    pub of_activity: Vec<NameId>,
    /// Modules only: the outermost modules (each activity's root), their GPU time and how much
    /// of it compiled code ran, largest first.
    pub roots: Vec<RootModule>,
}

/// An outermost `nn.Module` (a model, a text encoder, a VAE decoder) and the GPU time under it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RootModule {
    pub name: String,
    pub kernel_ns: i64,
    /// Of it, launched by compiled code (a compiled region, Inductor's kernels, or an
    /// `OptimizedModule` on the module stack).
    pub compiled_ns: i64,
}

/// GPU time by the Python frames (`with_stack=True`) around each launch: `nn.Module` frames for
/// `modules`, user source lines for `sources`. Empty when the trace has no such frames.
/// `compiled` (per activity, modules only) splits the root modules' time.
pub fn frames(
    trace: &Trace,
    links: &Links,
    in_scope: &[bool],
    modules: bool,
    compiled: &[bool],
) -> Frames {
    let keep = |n: &str| {
        if modules {
            n.starts_with("nn.Module: ")
        } else {
            is_user_frame(n)
        }
    };
    let threads = threads_of(trace, HostKind::Python, keep);
    if threads.is_empty() {
        return Frames::default();
    }
    let host = &trace.host;
    let mut acc: BTreeMap<NameId, (i64, i64)> = BTreeMap::new();
    let mut none = 0i64;
    let acts = &trace.activities;
    let owners = owners(trace, links, &threads);
    let mut of_activity = vec![NameId::NONE; acts.len()];
    let wrapper = trace
        .names
        .per_name(|n| n.starts_with("nn.Module: OptimizedModule"));
    let mut roots: BTreeMap<NameId, (i64, i64)> = BTreeMap::new();
    for a in 0..acts.len() {
        let owner = owners[a].get();
        if let Some(o) = owner {
            of_activity[a] = host.name[threads.get(o.thread).op(o.op as usize)];
        }
        if !in_scope[a] {
            continue;
        }
        let dur = acts.dur_ns[a];
        let Some(o) = owner else {
            none += dur;
            continue;
        };
        let t = threads.get(o.thread);
        let k = o.op as usize;
        acc.entry(host.name[t.op(k)]).or_default().0 += dur;
        let mut seen: Vec<NameId> = Vec::new();
        let mut cur = Some(k);
        let mut root = host.name[t.op(k)];
        let mut under_wrapper = false;
        while let Some(i) = cur {
            let name = host.name[t.op(i)];
            if !seen.contains(&name) {
                seen.push(name);
                acc.entry(name).or_default().1 += dur;
            }
            root = name;
            under_wrapper |= wrapper[name.index()];
            cur = t.parent(i);
        }
        if modules {
            let r = roots.entry(root).or_default();
            r.0 += dur;
            if under_wrapper || compiled.get(a).copied().unwrap_or(false) {
                r.1 += dur;
            }
        }
    }
    let make = |label: String, self_ns: i64, total_ns: i64| {
        if modules {
            FrameRow {
                name: Some(label),
                location: None,
                self_ns,
                total_ns,
            }
        } else {
            FrameRow {
                name: None,
                location: Some(label),
                self_ns,
                total_ns,
            }
        }
    };
    let mut rows: Vec<FrameRow> = acc
        .iter()
        .map(|(n, &(s, t))| make(trace.names.get(*n).to_string(), s, t))
        .collect();
    if none > 0 {
        rows.push(make(
            if modules {
                "(no module)"
            } else {
                "(no source)"
            }
            .to_string(),
            none,
            none,
        ));
    }
    let key = |r: &FrameRow| r.name.clone().or(r.location.clone()).unwrap_or_default();
    rows.sort_by(|a, b| {
        b.self_ns
            .cmp(&a.self_ns)
            .then(b.total_ns.cmp(&a.total_ns))
            .then(key(a).cmp(&key(b)))
    });
    let mut roots: Vec<RootModule> = roots
        .into_iter()
        .map(|(n, (kernel_ns, compiled_ns))| RootModule {
            name: trace.names.get(n).to_string(),
            kernel_ns,
            compiled_ns,
        })
        .collect();
    roots.sort_by(|a, b| b.kernel_ns.cmp(&a.kernel_ns).then(a.name.cmp(&b.name)));
    Frames {
        rows,
        of_activity,
        roots,
    }
}
