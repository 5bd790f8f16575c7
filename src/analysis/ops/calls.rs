//! One GEMM, composite (SDPA, convolution) or memory-bound call: its FLOPs, bytes and data type
//! from its op's recorded shapes, and the device peak it is rated against; calls stored once
//! per distinct value and keyed by (host op, execution).

use crate::analysis::ops::efficiency;
use crate::model::{NameId, OpArgs, Trace};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One GEMM or composite call: its FLOPs and data type, the peak of the device of its first
/// kernel, and its activities' spans, whose union is its time (cuDNN runs some convolutions'
/// kernels side by side on several streams: the call took their union, as TraceLens counts
/// it, not their sum).
/// Large traces hold millions of them: the optional numbers are NaN when absent.
#[derive(Clone, Copy)]
pub(crate) struct Call {
    pub(crate) op: NameId,
    pub(crate) dims: NameId,
    pub(crate) flops: f64,
    /// Bytes of operands and result (NaN: unknown).
    pub(crate) bytes: f64,
    /// The device's dense peak for the call's data type (NaN: unknown).
    pub(crate) peak_tflops: f64,
    /// The type it computes in (MFU takes the peak of the type with the most FLOPs).
    pub(crate) dtype: efficiency::Dtype,
    /// FLOPs as MFU counts them (attention: every query-key pair, causal or not).
    pub(crate) model_flops: f64,
    /// The device's HBM peak in GB/s (NaN: unknown).
    pub(crate) peak_gbps: f64,
    /// Memory-bound calls: `Input type` (a cast and a copy of one shape differ), and a Triton
    /// launcher's Inductor arguments (its file); NONE otherwise.
    pub(crate) types: NameId,
    pub(crate) inductor: NameId,
}

impl Call {
    pub(crate) fn bytes(&self) -> Option<f64> {
        (!self.bytes.is_nan()).then_some(self.bytes)
    }
    pub(crate) fn peak_tflops(&self) -> Option<f64> {
        (!self.peak_tflops.is_nan()).then_some(self.peak_tflops)
    }
}

/// A GEMM call of host op `h`, when its shapes and data type give its FLOPs.
pub(crate) fn gemm_call(
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
        None => {
            (dims != NameId::NONE)
                .then(|| efficiency::gemm_flops(name, trace.names.get(dims)))
                .flatten()?
                * efficiency::packed_k_factor(trace.names.get(host.input_types(h)))
        }
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
pub(crate) fn hbm_gbps(peaks: Option<&efficiency::DevicePeaks>) -> f64 {
    peaks.and_then(|p| p.hbm_gbps).unwrap_or(f64::NAN)
}

/// A memory-bound call of host op `h` whose bytes its shapes give
/// ([`crate::analysis::ops::bytes_moved::op_bytes`]); no FLOPs.
pub(crate) fn memory_call(
    trace: &Trace,
    h: usize,
    peaks: Option<&efficiency::DevicePeaks>,
) -> Option<Call> {
    let host = &trace.host;
    let args = host.op_args(h);
    let name = trace.names.get(host.name[h]);
    // A Triton kernel's launcher: Inductor's own count when the run asked for it.
    let inductor = crate::model::inductor::InductorArgs::decode(trace.names.get(args.inductor));
    let bytes = match inductor.and_then(|i| i.bytes()) {
        Some(b) => b,
        None => crate::analysis::ops::bytes_moved::op_bytes(
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

/// A composite call (SDPA, convolution) of host op `outer`, when its shapes give its FLOPs; a
/// serving engine's attention op needs its iteration's marker too (`iteration`, else none).
pub(crate) fn composite_call(
    trace: &Trace,
    outer: usize,
    peaks: Option<&efficiency::DevicePeaks>,
    flex_density: Option<f64>,
    iteration: NameId,
) -> Option<Call> {
    let host = &trace.host;
    let name = trace.names.get(host.name[outer]);
    let dims = trace.names.get(host.input_dims(outer));
    if efficiency::is_iteration_attention(name) {
        // vLLM's: the token sums its iteration's marker states.
        let tokens = efficiency::IterationTokens::parse(trace.names.get(iteration))?;
        let (flops, model_flops) =
            efficiency::iteration_attention_flops(&efficiency::dims_of(dims)?, &tokens)?;
        return composite(trace, outer, peaks, flops, model_flops);
    }
    // Flex attention computes only the blocks its mask keeps: the user's density, else dense.
    let density = match efficiency::flex_attention_factor(name) {
        Some(_) => flex_density.unwrap_or(1.0),
        None => 1.0,
    };
    let flops = density
        * (!dims.is_empty())
            .then(|| {
                efficiency::composite_flops(
                    name,
                    dims,
                    trace.names.get(host.concrete_inputs(outer)),
                )
            })
            .flatten()?;
    let model_flops = efficiency::attention_model_flops(name, dims).map_or(flops, |f| f * density);
    composite(trace, outer, peaks, flops, model_flops)
}

/// A composite call of host op `h` with these FLOPs, in the type of its first typed input.
fn composite(
    trace: &Trace,
    h: usize,
    peaks: Option<&efficiency::DevicePeaks>,
    flops: f64,
    model_flops: f64,
) -> Option<Call> {
    let host = &trace.host;
    let dtype = efficiency::compute_dtype(
        efficiency::dtype_of(trace.names.get(host.input_types(h)))?,
        peaks,
        false,
    );
    Some(Call {
        op: host.name[h],
        dims: host.input_dims(h),
        flops,
        bytes: f64::NAN,
        peak_tflops: peaks.and_then(|p| p.peak_tflops(dtype)).unwrap_or(f64::NAN),
        dtype,
        model_flops,
        peak_gbps: hbm_gbps(peaks),
        types: NameId::NONE,
        inductor: NameId::NONE,
    })
}

/// What each op name is, by name id (traces have millions of ops and few names).
pub(crate) struct OpNames {
    /// SDPA, convolution: composite ops whose shapes give their FLOPs.
    pub(crate) composite: Vec<bool>,
    /// `autograd::engine::evaluate_function: …`: backward runs under it.
    pub(crate) engine: Vec<bool>,
    pub(crate) forward_only: Vec<bool>,
    pub(crate) memory: Vec<bool>,
    /// An autograd node's own op (`AddmmBackward0`): the GEMMs it calls are backward work.
    pub(crate) node: Vec<bool>,
}

impl OpNames {
    pub(crate) fn of(trace: &Trace) -> OpNames {
        let names = &trace.names;
        OpNames {
            composite: names.per_name(efficiency::is_composite),
            engine: names.per_name(|n| n.starts_with("autograd::engine::evaluate_function: ")),
            forward_only: names.per_name(efficiency::is_forward_only_op),
            memory: names.per_name(crate::analysis::ops::bytes_moved::is_memory_op),
            node: names.per_name(|n| !n.contains("::") && n.contains("Backward")),
        }
    }
}

/// Which reading of a host op made a call.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CallOf {
    Gemm {
        fp32: bool,
    },
    Memory,
    /// A composite call, and its iteration's marker where its FLOPs read one.
    Composite {
        iteration: NameId,
    },
}

/// What a call is (FLOPs, bytes, type, peak) follows from its op's name, its recorded
/// arguments and the device's peaks alone: each distinct set is read once (a model runs the
/// same shapes every step, and reading the shapes' text per call was most of this pass).
#[derive(Default)]
pub(crate) struct CallMemo(HashMap<(CallOf, NameId, OpArgs, usize), Option<Call>>);

impl CallMemo {
    pub(crate) fn gemm(
        &mut self,
        trace: &Trace,
        h: usize,
        peaks: Option<&efficiency::DevicePeaks>,
        fp32: bool,
    ) -> Option<Call> {
        self.get(trace, (CallOf::Gemm { fp32 }, h), peaks, || {
            gemm_call(trace, h, peaks, fp32)
        })
    }

    pub(crate) fn memory(
        &mut self,
        trace: &Trace,
        h: usize,
        peaks: Option<&efficiency::DevicePeaks>,
    ) -> Option<Call> {
        self.get(trace, (CallOf::Memory, h), peaks, || {
            memory_call(trace, h, peaks)
        })
    }

    pub(crate) fn composite(
        &mut self,
        trace: &Trace,
        h: usize,
        peaks: Option<&efficiency::DevicePeaks>,
        flex_density: Option<f64>,
        iteration: NameId,
    ) -> Option<Call> {
        self.get(trace, (CallOf::Composite { iteration }, h), peaks, || {
            composite_call(trace, h, peaks, flex_density, iteration)
        })
    }

    fn get(
        &mut self,
        trace: &Trace,
        (of, h): (CallOf, usize),
        peaks: Option<&efficiency::DevicePeaks>,
        make: impl FnOnce() -> Option<Call>,
    ) -> Option<Call> {
        // The peaks are one of the rule set's entries: its address names it.
        let device = peaks.map_or(0, |p| std::ptr::from_ref(p) as usize);
        let key = (of, trace.host.name[h], trace.host.op_args(h), device);
        *self.0.entry(key).or_insert_with(make)
    }
}

/// Calls by (host op, execution), in a vector with a hash index, each 16 bytes: what a call is
/// apart from its time (op, shapes, FLOPs, bytes, peak) is stored once per distinct value (a
/// model runs the same shapes every step). Millions of GEMM calls in large traces; read back in
/// key order.
#[derive(Default)]
pub(crate) struct CallMap {
    pub(crate) slot: HashMap<(u32, u32), u32>,
    pub(crate) calls: Vec<CallRecord>,
    pub(crate) kinds: Vec<Call>,
    pub(crate) kind_ids: HashMap<[u64; 10], u32>,
}

#[derive(Clone, Copy)]
pub(crate) struct CallRecord {
    pub(crate) key: (u32, u32),
    /// Index into `kinds`; [`CallRecord::NO_FLOPS`] for an op without a count.
    pub(crate) kind: u32,
    /// Index into the spans' union, set when the call's first span is added.
    pub(crate) id: u32,
    /// Where and in what the call ran.
    pub(crate) at: CallContext,
}

/// Where a call ran: its phase, and whether a counted composite call holds it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallContext {
    pub(crate) phase: CallPhase,
    pub(crate) nested: bool,
}

/// Where a GEMM or composite call ran, for telling recomputed forward work apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CallPhase {
    Forward,
    Backward,
    /// Under a forward-only op inside backward (`aten::addmm`, `aten::linear`, SDPA,
    /// `aten::convolution`): recomputation when forward ran the same op on the same shapes.
    ForwardInBackward,
}

impl CallRecord {
    pub(crate) const NO_FLOPS: u32 = u32::MAX;
}

/// The index of `c` among the distinct calls, added when new.
pub(crate) fn intern(
    kinds: &mut Vec<Call>,
    kind_ids: &mut HashMap<[u64; 10], u32>,
    c: Call,
) -> u32 {
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
    pub(crate) fn entry(
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
    pub(crate) fn settle_fp32(&mut self, key: (usize, u32), make: impl FnOnce() -> Option<Call>) {
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
    pub(crate) fn into_sorted(self) -> impl Iterator<Item = (Call, u32, CallRecord)> {
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

/// Per call id, the length of the union of its `[start, end)` spans (one shared list, sorted
/// in place: a vector per call costs a heap block per GEMM call, millions on big traces).
pub(crate) fn union_per_call(spans: &mut [(u32, i64, i64)], calls: usize) -> Vec<i64> {
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
    /// Grouped GEMMs' alignment padding (rows that hold no routed token): executed work, not
    /// the model's.
    #[serde(default)]
    pub padding: f64,
    /// FLOPs per compute type (the type with the most picks the peak).
    pub by_dtype: BTreeMap<efficiency::Dtype, f64>,
    /// FLOPs of flex attention counted dense, its block mask's density not given: the step's
    /// FLOPs, and MFU, are then an upper bound.
    #[serde(default)]
    pub dense_flex_flops: f64,
    /// Bytes the counted calls (GEMM, attention, memory-bound ops) moved, where known: HBM
    /// traffic at least once per operand, for the bandwidth utilization of decode.
    #[serde(default)]
    pub bytes: f64,
    /// The GPU time of the calls whose bytes are known (how much of the step they describe).
    #[serde(default)]
    pub bytes_ns: i64,
    /// The best rate a GEMM shape holding at least 1% of the GEMM time reached, as a fraction
    /// of its device's dense peak for its type: what the step's FLOPs could run at.
    #[serde(default)]
    pub best_gemm_fraction: Option<f64>,
    /// Attention calls whose query is one token a sequence (decode) against a longer key, and
    /// all attention calls with shapes.
    #[serde(default)]
    pub decode_attention_calls: u64,
    #[serde(default)]
    pub attention_calls: u64,
    /// GEMM, attention and convolution GPU time whose op gave no FLOPs (no recorded shapes, an
    /// op the counter does not know, a Triton template), by the launching op's name.
    pub missing_ns: BTreeMap<String, i64>,
}

impl FlopTally {
    /// A call's bytes, when known, and its time.
    pub(crate) fn add_bytes(&mut self, bytes: Option<f64>, ns: i64) {
        if let Some(b) = bytes {
            self.bytes += b;
            self.bytes_ns += ns;
        }
    }

    /// An attention call: whether it decodes, and its bytes for the step's HBM traffic only
    /// (attention rows keep their FLOP roof); a call nested in a counted one adds no bytes.
    pub(crate) fn add_attention(
        &mut self,
        op: &str,
        dims: &str,
        dtype: efficiency::Dtype,
        ns: i64,
        nested: bool,
    ) {
        if !nested {
            self.add_bytes(efficiency::attention_bytes(op, dims, dtype), ns);
        }
        self.attention_calls += 1;
        if efficiency::attention_is_decode(op, dims) {
            self.decode_attention_calls += 1;
        }
    }
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

impl Bandwidth {
    /// Adds one call's bytes (when known) and time.
    pub(crate) fn add_call(&mut self, c: &Call, ns: i64) {
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

/// Each input's best GEMM rate as a fraction of peak, among the (op, shapes) holding at least
/// 1% of its GEMM time (a tiny shape's rate says little), into its tally.
pub(crate) fn best_gemm_rates(
    rates: BTreeMap<(u32, NameId, NameId), (i64, f64, f64)>,
    tallies: &mut [FlopTally],
) {
    let mut total: BTreeMap<u32, i64> = BTreeMap::new();
    for (&(input, ..), r) in &rates {
        *total.entry(input).or_default() += r.0;
    }
    for ((input, ..), (ns, flops, at_peak)) in rates {
        if ns * 100 < total[&input] || at_peak <= 0.0 {
            continue;
        }
        let fraction = (flops / at_peak).min(1.0);
        let best = &mut tallies[input as usize].best_gemm_fraction;
        if best.is_none_or(|b| fraction > b) {
            *best = Some(fraction);
        }
    }
}
