//! Kernel candidates (FEED.md `kernel_candidates[]`): the kernels whose tuning could win back
//! the most time, for the loops that hand kernels to kernel-writing agents. Each candidate is a
//! kernel under one launching op and shape, with its achieved rate and the device's peak (TFLOP/s
//! where compute binds, GB/s where memory does), the time it would save at an achievable share
//! of the peak (`headroom_ns`), where its code is, and the commands to profile and tune it.

use crate::analysis::ops::attribution::{MemoryShapeRow, ShapeRow};
use crate::classify::devices::DevicePeaks;
use crate::model::{InputMeta, NameId, Trace, Vendor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What GEMM, attention and convolution kernels reach when tuned, of the dense peak.
pub const ACHIEVABLE_COMPUTE_PCT: f64 = 70.0;
/// What memory-bound kernels reach when tuned, of the HBM peak.
pub const ACHIEVABLE_BANDWIDTH_PCT: f64 = 80.0;
/// A call that would take less than this at the achievable bandwidth is latency-bound: launch
/// and ramp-up dominate, and fusing it away, not tuning it, is its fix.
pub const MIN_STREAM_NS: f64 = 5_000.0;
/// How many rated candidates the feed lists; kernels without a rate follow when they hold this
/// share of GPU time or more.
const TOP: usize = 20;
const UNRATED_PCT: f64 = 5.0;

/// One kernel's time under one launching op, shape and source (keyed by strings so that ranks'
/// totals add up).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CandidateTotals {
    pub kernel: String,
    /// The innermost launching op (`(no op)` without one), its raw `Input Dims` and `Input type`.
    pub op: String,
    pub dims: String,
    pub types: String,
    /// Raw `Input Strides` (GEMM ops) and `Concrete Inputs`: what TunableOp's line needs.
    #[serde(default)]
    pub strides: String,
    #[serde(default)]
    pub concrete: String,
    /// Inductor's `kernel_file`, else the user's source line (`with_stack` traces).
    pub source: Option<String>,
    pub ns: i64,
    pub launches: u64,
}

/// A launch's source: Inductor's file (it names a Triton kernel's source better than any
/// frame), else the innermost source frame.
pub(crate) fn source_of(args: &crate::model::OpArgs, frame: NameId) -> NameId {
    if args.inductor != NameId::NONE {
        args.inductor
    } else {
        frame
    }
}

/// A [`source_of`] as text: Inductor's `kernel_file`, or the frame.
pub(crate) fn source_text(trace: &Trace, source: NameId) -> Option<String> {
    if source == NameId::NONE {
        return None;
    }
    let s = trace.names.get(source);
    match crate::model::inductor::InductorArgs::decode(s) {
        Some(i) => i.file,
        None => Some(s.to_string()),
    }
}

/// Every kernel in scope by (name, launching op, its args, source), in key order.
pub fn totals(
    trace: &Trace,
    op_of: &[Option<u32>],
    sources: &[NameId],
    in_scope: &[bool],
) -> Vec<CandidateTotals> {
    let (acts, host) = (&trace.activities, &trace.host);
    type Key = (NameId, NameId, crate::model::OpArgs, NameId);
    let mut by: rustc_hash::FxHashMap<Key, (i64, u64)> = Default::default();
    for a in (0..acts.len()).filter(|&a| in_scope[a]) {
        let frame = sources.get(a).copied().unwrap_or(NameId::NONE);
        let (op, args, source) = match op_of.get(a).copied().flatten() {
            Some(h) => {
                let args = host.op_args(h as usize);
                (host.name[h as usize], args, source_of(&args, frame))
            }
            None => (NameId::NONE, crate::model::OpArgs::NONE, frame),
        };
        // A collective's per-call arguments (its sequence number) are not the kernel's shape.
        let args = crate::model::OpArgs {
            comm: NameId::NONE,
            ..args
        };
        let e = by.entry((acts.name[a], op, args, source)).or_default();
        e.0 += acts.dur_ns[a];
        e.1 += 1;
    }
    let name = |id: NameId| trace.names.get(id).to_string();
    let mut out: Vec<CandidateTotals> = by
        .into_iter()
        .map(|((kernel, op, args, source), (ns, launches))| {
            let source = source_text(trace, source);
            CandidateTotals {
                kernel: name(kernel),
                op: if op == NameId::NONE {
                    crate::analysis::ops::attribution::NO_OP.to_string()
                } else {
                    name(op)
                },
                dims: name(args.input_dims),
                types: name(args.input_types),
                strides: name(args.input_strides),
                concrete: name(args.concrete_inputs),
                source,
                ns,
                launches,
            }
        })
        .collect();
    out.sort_by(|a, b| key(a).cmp(&key(b)));
    out
}

type KeyRef<'a> = (
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    Option<&'a str>,
);

fn key(c: &CandidateTotals) -> KeyRef<'_> {
    (
        &c.kernel,
        &c.op,
        &c.dims,
        &c.types,
        &c.strides,
        &c.concrete,
        c.source.as_deref(),
    )
}

/// Several ranks' totals as one list (added by key, in key order).
pub fn merge(ranks: &[&[CandidateTotals]]) -> Vec<CandidateTotals> {
    let mut by: BTreeMap<KeyRef, CandidateTotals> = BTreeMap::new();
    for totals in ranks {
        for c in *totals {
            let e = by.entry(key(c)).or_insert_with(|| CandidateTotals {
                ns: 0,
                launches: 0,
                ..c.clone()
            });
            e.ns = e.ns.saturating_add(c.ns);
            e.launches += c.launches;
        }
    }
    by.into_values().collect()
}

/// The rate a candidate is judged in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Compute-bound: judged in TFLOP/s against the dense peak.
    Tflops,
    /// Memory-bound: judged in GB/s against the HBM peak.
    Gbps,
}

/// What a candidate's command does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandKind {
    /// Profile the kernel to see what bounds it.
    Profile,
    /// Tune it (TunableOp, a tuner's record of its shape).
    Tune,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    pub kind: CommandKind,
    pub text: String,
}

/// One row of `kernel_candidates[]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Candidate {
    /// 1-based position in the list (not an MPI rank).
    pub rank: u32,
    pub name: String,
    pub op: String,
    pub shapes: Option<String>,
    pub dtype: Option<String>,
    pub source: Option<String>,
    pub total_ns: i64,
    pub launches: u64,
    pub achieved: Option<f64>,
    pub peak: Option<f64>,
    pub unit: Option<Unit>,
    /// Time saved at the achievable share of the peak (70% of the dense peak, 80% of HBM).
    pub headroom_ns: Option<i64>,
    pub commands: Vec<Command>,
    /// Why it has no rate or headroom (an addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_rate_reason: Option<String>,
    /// TunableOp's untuned-file line for its GEMM (an addition; see [`tunableop_line`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tunableop: Option<String>,
}

/// The rate of an (op, shapes) group: achieved, peak and unit, and its time per call at the
/// achievable share (for the latency test).
struct Rate {
    achieved: f64,
    peak: f64,
    unit: Unit,
    /// Per call at the achievable rate, when known (memory-bound groups).
    achievable_call_ns: Option<f64>,
}

/// The rate of a GEMM/composite shape: in the unit of the roof it is closer to (decode GEMMs
/// are bandwidth-bound).
fn compute_rate(row: &ShapeRow, hbm_gbps: Option<f64>) -> Option<Rate> {
    let pct = row.pct_of_peak.filter(|p| *p > 0.0)?;
    let peak_tflops = row.tflops * 100.0 / pct;
    let by_compute = Rate {
        achieved: row.tflops,
        peak: (peak_tflops * 10.0).round() / 10.0,
        unit: Unit::Tflops,
        achievable_call_ns: None,
    };
    match (row.gbps, hbm_gbps) {
        (Some(g), Some(hbm)) if g / hbm > pct / 100.0 => Some(Rate {
            achieved: g,
            peak: hbm,
            unit: Unit::Gbps,
            achievable_call_ns: None,
        }),
        _ => Some(by_compute),
    }
}

fn memory_rate(row: &MemoryShapeRow) -> Option<Rate> {
    let peak = row.peak_gbps?;
    Some(Rate {
        achieved: row.gbps,
        peak,
        unit: Unit::Gbps,
        achievable_call_ns: Some(row.bytes_per_call / (peak * ACHIEVABLE_BANDWIDTH_PCT / 100.0)),
    })
}

/// The time the kernel would save at the achievable share of the peak.
fn headroom(ns: i64, rate: &Rate) -> i64 {
    let achievable = match rate.unit {
        Unit::Tflops => ACHIEVABLE_COMPUTE_PCT,
        Unit::Gbps => ACHIEVABLE_BANDWIDTH_PCT,
    } / 100.0
        * rate.peak;
    if achievable <= 0.0 {
        return 0;
    }
    (ns as f64 * (1.0 - rate.achieved / achievable))
        .max(0.0)
        .round() as i64
}

/// What rating the kernel candidates reads of the analysis (one trace's or the merged job's).
pub struct Rating<'a> {
    pub inputs: &'a [InputMeta],
    pub op_shapes: &'a [ShapeRow],
    pub memory_shapes: &'a [MemoryShapeRow],
    pub vendor: Vendor,
    /// Compiled code ran (torch.compile, or Inductor's kernels).
    pub compiled: bool,
    /// The GPU time in scope (`summary.kernel_ns`).
    pub kernel_ns: i64,
}

/// The first HBM peak of the inputs' devices.
fn hbm_of(a: &Rating, devices: &[DevicePeaks]) -> Option<f64> {
    a.inputs
        .iter()
        .flat_map(|i| &i.devices)
        .find_map(|d| crate::classify::devices::peaks_of(devices, d)?.hbm_gbps)
}

/// The feed's rows: the rated kernels with the most headroom (ties: most time, then name),
/// then the kernels without a rate that hold >= 5% of GPU time, each with why.
pub fn rows(totals: &[CandidateTotals], a: &Rating, devices: &[DevicePeaks]) -> Vec<Candidate> {
    let compact = crate::analysis::ops::attribution::compact_dims;
    let hbm = hbm_of(a, devices);
    let shapes: BTreeMap<(&str, String), &ShapeRow> = a
        .op_shapes
        .iter()
        .map(|r| ((r.op.as_str(), r.shapes.clone()), r))
        .collect();
    let memory: BTreeMap<(&str, String, &str), &MemoryShapeRow> = a
        .memory_shapes
        .iter()
        .map(|r| ((r.op.as_str(), r.shapes.clone(), r.dtypes.as_str()), r))
        .collect();
    let (vendor, compiled) = (a.vendor, a.compiled);
    let mut rated: Vec<(Candidate, i64)> = Vec::new();
    let mut unrated: Vec<Candidate> = Vec::new();
    for c in totals.iter().filter(|c| c.ns > 0) {
        let dims = compact(&c.dims);
        let dtypes = crate::analysis::ops::bytes_moved::short_types(&c.types, &c.dims);
        let memory_row = memory.get(&(c.op.as_str(), dims.clone(), dtypes.as_str()));
        let rate = match shapes.get(&(c.op.as_str(), dims.clone())) {
            Some(r) => compute_rate(r, hbm),
            None => memory_row.and_then(|r| memory_rate(r)),
        };
        let mut cand = Candidate {
            rank: 0,
            name: c.kernel.clone(),
            op: c.op.clone(),
            shapes: (!dims.is_empty()).then(|| dims.clone()),
            dtype: (!dtypes.is_empty()).then(|| dtypes.clone()),
            source: c.source.clone(),
            total_ns: c.ns,
            launches: c.launches,
            achieved: None,
            peak: None,
            unit: None,
            headroom_ns: None,
            commands: Vec::new(),
            no_rate_reason: None,
            tunableop: tunableop_line(&c.op, &c.dims, &c.strides, &c.types, &c.concrete),
        };
        match rate {
            Some(r) if r.achievable_call_ns.is_some_and(|t| t < MIN_STREAM_NS) => {
                cand.achieved = Some(r.achieved);
                cand.peak = Some(r.peak);
                cand.unit = Some(r.unit);
                cand.no_rate_reason = Some(format!(
                    "latency-bound: {:.0} KB per call would take under {:.0} µs at {ACHIEVABLE_BANDWIDTH_PCT:.0}% of the HBM peak; fuse it away (torch.compile) rather than tune it",
                    memory_row.map_or(0.0, |m| m.bytes_per_call / 1e3),
                    MIN_STREAM_NS / 1e3
                ));
                unrated.push(cand);
            }
            Some(r) => {
                let h = headroom(c.ns, &r);
                cand.achieved = Some(r.achieved);
                cand.peak = Some(r.peak);
                cand.unit = Some(r.unit);
                cand.headroom_ns = Some(h);
                rated.push((cand, h));
            }
            None => {
                cand.no_rate_reason = Some(no_rate_reason(c, &dims));
                unrated.push(cand);
            }
        }
    }
    rated.retain(|(_, h)| *h > 0);
    rated.sort_by(|(x, hx), (y, hy)| {
        hy.cmp(hx)
            .then(y.total_ns.cmp(&x.total_ns))
            .then(x.name.cmp(&y.name))
            .then(x.op.cmp(&y.op))
            .then(x.shapes.cmp(&y.shapes))
    });
    let total = a.kernel_ns;
    unrated.retain(|c| crate::analysis::numbers::pct(c.total_ns, total) >= UNRATED_PCT);
    unrated.sort_by(|x, y| {
        y.total_ns
            .cmp(&x.total_ns)
            .then(x.name.cmp(&y.name))
            .then(x.op.cmp(&y.op))
    });
    let mut out: Vec<Candidate> = rated
        .into_iter()
        .take(TOP)
        .map(|(c, _)| c)
        .chain(unrated.into_iter().take(5))
        .collect();
    for (i, c) in out.iter_mut().enumerate() {
        c.rank = i as u32 + 1;
        c.commands = commands(c, vendor, compiled);
    }
    out
}

/// Why a kernel has no rate.
fn no_rate_reason(c: &CandidateTotals, dims: &str) -> String {
    if crate::analysis::ops::bytes_moved::is_inductor_memory_kernel(&c.op) {
        "Inductor's Triton kernel without its byte count: compile with TORCHINDUCTOR_BENCHMARK_KERNEL=1 and the trace carries kernel_num_gb".to_string()
    } else if c.op.starts_with("triton_tem_") {
        "Inductor's template kernel (a GEMM) without its FLOP count: compile with TORCHINDUCTOR_BENCHMARK_KERNEL=1 and the trace carries kernel_flop".to_string()
    } else if c.op == crate::analysis::ops::attribution::NO_OP {
        "no launching op: its FLOPs and bytes are unknown".to_string()
    } else if dims.is_empty() {
        "its op has no Input Dims: profile with record_shapes=True".to_string()
    } else {
        format!("no FLOP or byte model for {}", c.op)
    }
}

/// TunableOp's untuned-file line of a GEMM call (`PYTORCH_TUNABLEOP_RECORD_UNTUNED=1` writes
/// the same), from the op's `Input Dims`, `Input Strides`, `Input type` and `Concrete Inputs`:
/// `GemmTunableOp_BFloat16_NN,nn_<m>_<n>_<k>_ld_<lda>_<ldb>_<ldc>`. BLAS is column-major, so
/// PyTorch's C\[M,N\] = A\[M,K\]·B\[K,N\] is Cᵀ = Bᵀ·Aᵀ there: m = N, n = M, its first operand is B
/// and its second A. An operand is `n` when row-major (its ld is its row stride) and `t` when
/// column-major (its ld is its column stride); ldc = N. `addmm` with a 1-D bias and
/// alpha = beta = 1 takes cuBLASLt's bias epilogue (`GemmAndBiasTunableOp`); `bmm` adds the
/// batch (`GemmStridedBatchedTunableOp`, `…_B_<batch>_ld_…`). Checked against the lines PyTorch
/// 2.11 recorded (`fixtures/kineto/h200/tunableop`). None for other ops, layouts or types.
pub fn tunableop_line(
    op: &str,
    dims: &str,
    strides: &str,
    types: &str,
    concrete: &str,
) -> Option<String> {
    let dims = crate::analysis::ops::efficiency::dims_of(dims)?;
    let strides = crate::analysis::ops::efficiency::dims_of(strides)?;
    let types: Vec<String> = serde_json::from_str(types).ok()?;
    let concrete: Vec<String> = serde_json::from_str(concrete).unwrap_or_default();
    // (name, index of A, index of B, batched)
    let (name, ia, ib, batched) = match op {
        "aten::mm" => ("GemmTunableOp", 0, 1, false),
        "aten::bmm" => ("GemmStridedBatchedTunableOp", 0, 1, true),
        "aten::addmm" => {
            let one = |i: usize| concrete.get(i).is_some_and(|c| c.trim() == "1");
            if dims.first()?.len() != 1 || !one(3) || !one(4) {
                return None;
            }
            ("GemmAndBiasTunableOp", 1, 2, false)
        }
        _ => return None,
    };
    let dtype = match types.get(ia)?.as_str() {
        "c10::BFloat16" => "BFloat16",
        "c10::Half" => "Half",
        "float" => "float",
        _ => return None,
    };
    let rank = if batched { 3 } else { 2 };
    let (a, b) = (dims.get(ia)?, dims.get(ib)?);
    let (sa, sb) = (strides.get(ia)?, strides.get(ib)?);
    if a.len() != rank || b.len() != rank || sa.len() != rank || sb.len() != rank {
        return None;
    }
    let (m, k, n) = (a[rank - 2], a[rank - 1], b[rank - 1]);
    if b[rank - 2] != k || (batched && a[0] != b[0]) {
        return None;
    }
    // An operand's letter and leading dimension, from its last two strides.
    let layout = |s: &[i64]| -> Option<(char, i64)> {
        let (row, col) = (s[rank - 2], s[rank - 1]);
        if col == 1 {
            Some(('n', row))
        } else if row == 1 {
            Some(('t', col))
        } else {
            None
        }
    };
    let ((ta, lda), (tb, ldb)) = (layout(sb)?, layout(sa)?);
    let letters = format!("{ta}{tb}");
    let batch = if batched {
        format!("_B_{}", a[0])
    } else {
        String::new()
    };
    Some(format!(
        "{name}_{dtype}_{},{letters}_{n}_{m}_{k}{batch}_ld_{lda}_{ldb}_{n}",
        letters.to_uppercase()
    ))
}

/// The kernel's base name (no return type, namespace, template or argument list), regex-escaped:
/// what the profilers' name filters match in every spelling of it.
fn name_prefix(name: &str) -> String {
    let n = name.replace("(anonymous namespace)::", "");
    let n = n.strip_prefix("void ").unwrap_or(&n);
    let cut = n.find(['(', '<']).unwrap_or(n.len());
    let qualified = n[..cut].trim();
    let base = qualified.rsplit("::").next().unwrap_or(qualified);
    regex::escape(&base.chars().take(80).collect::<String>())
}

/// Commands to profile the kernel alone and to tune it.
fn commands(c: &Candidate, vendor: Vendor, compiled: bool) -> Vec<Command> {
    let prefix = name_prefix(&c.name);
    let rank = c.rank;
    let profile = |text: String| Command {
        kind: CommandKind::Profile,
        text,
    };
    let tune = |text: String| Command {
        kind: CommandKind::Tune,
        text,
    };
    let mut out = Vec::new();
    let (amd, nvidia) = match vendor {
        Vendor::Amd => (true, false),
        Vendor::Nvidia => (false, true),
        _ => (true, true),
    };
    if amd {
        out.push(profile(format!(
            "rocprofv3 --kernel-trace --stats --kernel-include-regex '{prefix}' -- python3 your_script.py"
        )));
        out.push(profile(format!(
            "rocprof-compute profile -n cand{rank} -k '{prefix}' -- python3 your_script.py"
        )));
    }
    if nvidia {
        out.push(profile(format!(
            "ncu --kernel-name regex:'{prefix}' --launch-count 5 --set full -o cand{rank} python3 your_script.py"
        )));
    }
    let shapes = c.shapes.as_deref().unwrap_or("");
    if crate::analysis::ops::efficiency::is_gemm_op(&c.op) {
        let what = match crate::analysis::ops::efficiency::gemm_mkn(&c.op, shapes) {
            Some((1, m, k, n)) => format!("M={m} N={n} K={k}"),
            Some((b, m, k, n)) => format!("batch={b} M={m} N={n} K={k}"),
            None => shapes.to_string(),
        };
        out.push(tune(format!(
            "PYTORCH_TUNABLEOP_ENABLED=1 PYTORCH_TUNABLEOP_TUNING=1 PYTORCH_TUNABLEOP_FILENAME=tunableop.csv python3 your_script.py   # tunes {} {what} {}; then run with PYTORCH_TUNABLEOP_TUNING=0",
            c.op,
            c.dtype.as_deref().unwrap_or("")
        )));
        if let Some(line) = &c.tunableop {
            out.push(tune(format!(
                "echo '{line}' > untuned.csv && PYTORCH_TUNABLEOP_ENABLED=1 python3 -c \"import torch; torch.cuda.tunable.tune_gemm_in_file('untuned.csv')\"   # tunes this GEMM alone, offline, into the TunableOp results file"
            )));
        }
        if amd {
            out.push(tune(format!(
                "AITER_TUNE_GEMM=1 python3 your_script.py   # records {what} for aiter's GEMM tuner; point AITER_CONFIG_GEMM_BF16 at the tuned CSV"
            )));
        }
    } else if c.op.starts_with("triton_tem_") {
        out.push(tune(format!(
            "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM=1 TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1 python3 your_script.py   # re-tunes the template {}{}",
            c.op,
            c.source
                .as_deref()
                .map_or(String::new(), |f| format!(" ({f})"))
        )));
    } else if crate::analysis::ops::bytes_moved::is_inductor_memory_kernel(&c.op) {
        out.push(tune(format!(
            "TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1 TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE=1 python3 your_script.py   # re-tunes {}{}",
            c.op,
            c.source
                .as_deref()
                .map_or(String::new(), |f| format!(" ({f})"))
        )));
    } else if crate::analysis::ops::bytes_moved::is_memory_op(&c.op) && !compiled {
        out.push(tune(format!(
            "model = torch.compile(model)   # fuses {} with its neighbours into Triton kernels",
            c.op
        )));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_is_the_time_above_the_achievable_rate() {
        // 1 ms at 300 TFLOP/s of a 1000 peak: at 700 it would take 3/7 ms.
        let r = Rate {
            achieved: 300.0,
            peak: 1000.0,
            unit: Unit::Tflops,
            achievable_call_ns: None,
        };
        assert_eq!(headroom(1_000_000, &r), 571_429);
        // 1 ms at 535 GB/s of 3350: at 80% (2680) it would take 0.1996 ms.
        let r = Rate {
            achieved: 535.0,
            peak: 3350.0,
            unit: Unit::Gbps,
            achievable_call_ns: None,
        };
        assert_eq!(headroom(1_000_000, &r), 800_373);
        // Already above the achievable share: nothing to win.
        let r = Rate {
            achieved: 3000.0,
            peak: 3350.0,
            unit: Unit::Gbps,
            achievable_call_ns: None,
        };
        assert_eq!(headroom(1_000_000, &r), 0);
    }

    #[test]
    fn name_prefixes_filter_kernels() {
        assert_eq!(
            name_prefix("void at::native::vectorized_elementwise_kernel<8, at::native::X>(int)"),
            "vectorized_elementwise_kernel"
        );
        assert_eq!(
            name_prefix("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int)"),
            "vectorized_layer_norm_kernel"
        );
        assert_eq!(
            name_prefix("void (anonymous namespace)::softmax_warp_forward<c10::BFloat16>(int)"),
            "softmax_warp_forward"
        );
        assert_eq!(
            name_prefix("triton_poi_fused_mul_silu_1"),
            "triton_poi_fused_mul_silu_1"
        );
        assert_eq!(
            name_prefix("Cijk_Alik_Bljk_BBS_BH_MT128x128x64(args)"),
            "Cijk_Alik_Bljk_BBS_BH_MT128x128x64"
        );
    }

    #[test]
    fn decode_gemms_are_judged_on_bandwidth() {
        // M = 32 rows against a [2880, 201088] weight: 2.2% of the compute peak, 60% of HBM.
        let row = ShapeRow {
            op: "aten::mm".into(),
            shapes: "[[32,2880],[2880,201088]]".into(),
            calls: 1,
            ns: 1,
            tflops: 29.0,
            pct_of_peak: Some(2.2),
            gbps: Some(3200.0),
        };
        let r = compute_rate(&row, Some(5300.0)).unwrap();
        assert_eq!(r.unit, Unit::Gbps);
        assert_eq!(r.peak, 5300.0);
        // A square GEMM near the compute roof stays in TFLOP/s.
        let row = ShapeRow {
            tflops: 600.0,
            pct_of_peak: Some(60.0),
            gbps: Some(900.0),
            ..row
        };
        let r = compute_rate(&row, Some(3350.0)).unwrap();
        assert_eq!((r.unit, r.peak), (Unit::Tflops, 1000.0));
    }
}
