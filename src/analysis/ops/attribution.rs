//! Which op owns each GPU activity (FEED.md "Ops, modules, sources"): the launch call (by
//! correlation id) → the innermost cpu_op around it on the same thread → the ops enclosing that.
//! `self_ns` goes to the innermost op, `total_ns` to it and every op enclosing it.

use crate::analysis::ops::calls::{
    union_per_call, Bandwidth, Call, CallContext, CallMap, CallMemo, CallPhase, CallRecord,
    FlopTally, OpNames,
};
use crate::analysis::ops::efficiency;
use crate::analysis::ops::op_index::OpIndex;
use crate::classify::{Bucket, Classified};
use crate::model::{NameId, Trace};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The row activities without a launching op go to.
pub const NO_OP: &str = "(no op)";

/// One row of the feed's `ops`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpRow {
    /// The op's name (`aten::mm`, or [`NO_OP`]).
    pub name: String,
    /// GPU time of the kernels it launched itself (not through an inner op), in ns.
    pub self_ns: i64,
    /// GPU time of every kernel launched inside it, inner ops included, in ns.
    pub total_ns: i64,
    /// Kernel launches it made itself.
    pub launches: u64,
    /// The bucket holding most of the op's self time.
    pub bucket: Bucket,
    /// The op's most frequent `Input Dims` among the calls that launched GPU work.
    pub shapes: Option<String>,
    /// GEMM ops: achieved TFLOP/s (FLOPs from `Input Dims` over the GPU time of their kernels)
    /// and its share of the device's peak for the op's data type (`rules/devices.toml`).
    pub tflops: Option<f64>,
    /// `tflops` as a share of the device's dense peak, in percent.
    pub pct_of_peak: Option<f64>,
    /// Achieved bandwidth: the bytes its calls move (reads and writes from `Input Dims`, see
    /// `bytes_moved`; GEMMs: operands and result) over their kernels' time, and its share of the
    /// device's HBM peak (at most 100: data in the last-level cache runs above it).
    pub gbps: Option<f64>,
    /// `gbps` as a share of the device's HBM peak, in percent.
    pub pct_of_hbm_peak: Option<f64>,
}

/// `Input Dims` as written (pretty-printed over lines in some traces) → `[[8,512],[512]]`.
pub fn compact_dims(raw: &str) -> String {
    raw.chars().filter(|c| !c.is_ascii_whitespace()).collect()
}

pub fn ops(
    trace: &Trace,
    index: &OpIndex,
    devices: &[efficiency::DevicePeaks],
    classified: &Classified,
    buckets: &[Bucket],
    in_scope: &[bool],
    flex_density: Option<f64>,
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
    let OpNames {
        composite: composite_name,
        engine: engine_name,
        forward_only,
        memory: memory_op,
        node: node_name,
    } = OpNames::of(trace);
    let mut device_peaks: HashMap<(u32, u32), Option<&efficiency::DevicePeaks>> =
        HashMap::default();
    let mut acc: BTreeMap<NameId, Acc> = BTreeMap::new();
    let mut no_op = Acc::default();
    let acts = &trace.activities;
    let mut memo = CallMemo::default();
    let iterations = super::attention_flops::IterationMarkers::of(trace);
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
            let iteration = iterations.around(trace, outer);
            if calls.add_composite((outer, execution), at, span, || {
                memo.composite(trace, outer, peaks, flex_density, iteration)
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
            memo.gemm(trace, h, peaks, fp32_kernel)
        }) || in_composite;
        if fp32_kernel {
            calls
                .gemm
                .settle_fp32((h, execution), || memo.gemm(trace, h, peaks, true));
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
            calls.add_memory((h, execution), at, span, || memo.memory(trace, h, peaks));
        }
    }
    let routed = super::routing::RoutedRows::find(trace);
    let (by_shape, memory_shapes) =
        calls.rates(trace, &mut acc, &mut tallies, flex_density, &routed);
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
    /// The op's name.
    pub op: String,
    /// Its `Input Dims`, compacted.
    pub shapes: String,
    /// The tensor inputs' element types (`bf16`, `fp32`, …), comma-separated.
    pub dtypes: String,
    /// Calls at this shape that launched GPU work.
    pub calls: u64,
    /// Their kernels' time, in ns.
    pub ns: i64,
    /// Bytes one call reads and writes.
    pub bytes_per_call: f64,
    /// Achieved bandwidth, in GB/s.
    pub gbps: f64,
    /// `gbps` as a share of the device's HBM peak, in percent.
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
            dtypes: crate::analysis::ops::bytes_moved::short_types(&t.types, &t.dims),
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

impl Acc {
    fn add_bytes(&mut self, c: &Call, ns: i64) {
        self.bw.add_call(c, ns);
    }
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
        flex_density: Option<f64>,
        routed: &super::routing::RoutedRows,
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
        for (c, ns, rec) in memory {
            let input = trace.host.input[rec.key.0 as usize] as usize;
            tallies[input].add_bytes(c.bytes(), ns);
            acc.entry(c.op).or_default().add_bytes(&c, ns);
            let m = memory_shapes
                .entry((c.op, c.dims, c.types, c.inductor))
                .or_default();
            m.0 += 1;
            m.1.add_call(&c, ns);
        }
        // Per (input, op, shapes) of GEMM calls: time, FLOPs and FLOPs at peak, for the best
        // rate the input's GEMMs reached.
        let mut gemm_rates: BTreeMap<(u32, NameId, NameId), (i64, f64, f64)> = BTreeMap::new();
        let gemms = self.gemm.into_sorted().map(|c| (c, true));
        let composites = self.composite.into_sorted().map(|c| (c, false));
        for ((c, ns, rec), is_gemm) in gemms.chain(composites).map(|(c, g)| (timed(c), g)) {
            let input = trace.host.input[rec.key.0 as usize];
            let op_name = trace.names.get(c.op);
            if !is_gemm && efficiency::is_attention_op(op_name) {
                let dims = trace.names.get(c.dims);
                tallies[input as usize].add_attention(op_name, dims, c.dtype, ns, rec.at.nested);
            }
            if is_gemm && !rec.at.nested {
                if let Some(p) = c.peak_tflops() {
                    let r = gemm_rates.entry((input, c.op, c.dims)).or_default();
                    r.0 += ns;
                    r.1 += c.flops;
                    r.2 += ns as f64 * p * 1e3;
                }
            }
            // The step's FLOPs count every call its shapes describe, however fast it looked.
            if !rec.at.nested && c.model_flops.is_finite() {
                let t = &mut tallies[input as usize];
                t.add_bytes(c.bytes(), ns);
                if flex_density.is_none() && efficiency::flex_attention_factor(op_name).is_some() {
                    t.dense_flex_flops += c.model_flops;
                }
                t.executed += c.model_flops;
                if is_gemm && !routed.is_empty() {
                    let dims = trace.names.get(c.dims);
                    t.padding += c.model_flops * routed.padding_share(input, op_name, dims);
                }
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
        super::calls::best_gemm_rates(gemm_rates, tallies);
        (by_shape, memory_shapes)
    }
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
