//! Model-level patterns the seed's level 3 fixes: attention written by hand (matmul → softmax →
//! matmul) and projections that read the same input in separate GEMMs (Q/K/V, gate/up).

use super::evidence as ev;
use super::{round2, step_count, Detail, Finding, Severity};
use crate::analysis::time::links::is_compile_event;
use crate::analysis::time::order::sort_mostly_sorted_by_key;
use crate::analysis::Context;
use crate::classify::{Bucket, KernelTag};
use crate::model::{HostKind, NameId};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

/// How many kernels may sit between the GEMMs and the softmax of one attention chain (scaling,
/// masking, dtype casts).
const CHAIN_GAP: usize = 4;

pub fn manual_attention(ctx: &Context) -> Vec<Finding> {
    let trace = ctx.trace;
    let acts = &trace.activities;
    // Kernels per stream in launch order.
    let mut streams: BTreeMap<(u32, u32, u32), Vec<usize>> = BTreeMap::new();
    for a in (0..acts.len()).filter(|&a| ctx.in_scope[a]) {
        streams
            .entry((acts.input[a], acts.device[a], acts.stream[a]))
            .or_default()
            .push(a);
    }
    let is_softmax = |a: usize| {
        let c = ctx.classified.get(acts.name[a]);
        c.bucket == Bucket::Elementwise && c.tag == Some(KernelTag::Softmax)
    };
    let is_gemm = |a: usize| ctx.bucket_of(a) == Bucket::Gemm;
    let mut chains: Vec<(usize, usize, usize)> = Vec::new();
    let mut stake = 0i64;
    for list in streams.values_mut() {
        list.sort_by_key(|&a| (acts.ts_ns[a], a));
        // GEMM, then a softmax within CHAIN_GAP kernels, then a GEMM within CHAIN_GAP more.
        let found = crate::analysis::kernels::attention_chains(
            list.len(),
            CHAIN_GAP,
            |x| is_gemm(list[x]),
            |x| is_softmax(list[x]),
        );
        for (i, j, k) in found {
            chains.push((list[i], list[j], list[k]));
            stake += list[i..=k].iter().map(|&a| acts.dur_ns[a]).sum::<i64>();
        }
    }
    let per_step = chains.len() as f64 / step_count(ctx);
    // One chain may be a model's final softmax between two GEMMs: ask for a chain per step, twice.
    if chains.len() < 2 || per_step < 1.0 {
        return vec![];
    }
    // Softmax ops as called (aten::softmax calls aten::_softmax: count the outer one).
    let count_ops = |names: &[&str]| {
        (0..trace.host.len())
            .filter(|&h| {
                trace.host.kind[h] == HostKind::CpuOp
                    && names.contains(&trace.names.get(trace.host.name[h]))
            })
            .count()
    };
    let softmax_ops = match count_ops(&["aten::softmax", "aten::_safe_softmax"]) {
        0 => count_ops(&["aten::_softmax"]),
        n => n,
    };
    let (g1, s, g2) = chains[0];
    let name = |a: usize| trace.names.get(acts.name[a]).to_string();
    vec![Finding::new(
        Severity::High,
        format!(
            "attention computed by hand: {} matmul → softmax → matmul chains ({per_step:.1} per step); scaled_dot_product_attention (flash / aiter on AMD) runs each as one fused kernel",
            chains.len()
        ),
        stake,
        Detail::ManualAttention(ev::ManualAttention {
            chains: chains.len(),
            chains_per_step: round2(per_step),
            chain_kernel_ns: stake,
            softmax_ops,
            example_kernels: vec![name(g1), name(s), name(g2)],
        }),
    )]
}

/// GEMM ops whose input decides a projection run.
fn is_gemm_op(name: &str) -> bool {
    matches!(
        name,
        "aten::linear" | "aten::matmul" | "aten::mm" | "aten::addmm"
    )
}

/// Ops that only reshape: they do not end a run of projections.
fn is_view_op(name: &str) -> bool {
    matches!(
        name,
        "aten::view"
            | "aten::reshape"
            | "aten::t"
            | "aten::transpose"
            | "aten::_unsafe_view"
            | "aten::expand"
            | "aten::as_strided"
            | "aten::permute"
            | "aten::unsqueeze"
            | "aten::squeeze"
            | "aten::detach"
            | "aten::alias"
            | "aten::split"
            | "aten::split_with_sizes"
            | "aten::chunk"
            | "aten::unbind"
            | "aten::narrow"
            | "aten::slice"
            | "aten::select"
    )
}

/// Activations that may sit between two projections of one input (`act(gate(x)) * up(x)`).
fn is_activation_op(name: &str) -> bool {
    matches!(
        name,
        "aten::silu"
            | "aten::silu_"
            | "aten::gelu"
            | "aten::gelu_"
            | "aten::relu"
            | "aten::relu_"
            | "aten::sigmoid"
            | "aten::tanh"
    )
}

/// The dims of each tensor of an `Input Dims` value (`[[8, 512, 1024], [1024, 1024], []]`).
fn tensor_dims(raw: &str) -> Vec<String> {
    match serde_json::from_str::<Vec<serde_json::Value>>(raw) {
        Ok(v) => v.iter().map(|d| d.to_string()).collect(),
        Err(_) => vec![raw.to_string()],
    }
}

/// Runs of projection ops (host event indices) by run length, with their (input, thread).
type RunsByLength = BTreeMap<usize, Vec<(Vec<usize>, (u32, u64))>>;

/// A run of GEMMs at one nesting level: the ops, the input shape they read (an index), and the
/// other ops since the last of them (an activation counts 1, anything else but a view 2).
type Run = (Vec<usize>, u32, usize);

/// The GPU time of the kernels a host op launched: the runtime calls of its thread inside its
/// span, and their in-scope activities.
struct LaunchedTime<'c> {
    ctx: &'c Context<'c>,
    /// (launch call, activity) pairs, by call: 8 bytes per activity (a map of vectors cost
    /// a hundred).
    launched: Vec<(u32, u32)>,
    /// Launching runtime calls per (input, thread), in time order.
    calls: BTreeMap<(u32, u64), Vec<u32>>,
}

impl<'c> LaunchedTime<'c> {
    fn new(ctx: &'c Context<'c>) -> Self {
        let host = &ctx.trace.host;
        let mut launched: Vec<(u32, u32)> = ctx
            .links
            .launch
            .iter()
            .enumerate()
            .filter_map(|(a, l)| l.map(|h| (h, a as u32)))
            .collect();
        launched.sort_unstable();
        let mut calls: BTreeMap<(u32, u64), Vec<u32>> = BTreeMap::new();
        let mut last = None;
        for &(h, _) in &launched {
            if last == Some(h) {
                continue;
            }
            last = Some(h);
            let c = h as usize;
            if matches!(host.kind[c], HostKind::Runtime | HostKind::Driver) {
                calls
                    .entry((host.input[c], host.tid(c)))
                    .or_default()
                    .push(h);
            }
        }
        for v in calls.values_mut() {
            v.sort_by_key(|&h| host.ts_ns[h as usize]);
        }
        LaunchedTime {
            ctx,
            launched,
            calls,
        }
    }

    /// The activities call `c` launched.
    fn of_call(&self, c: u32) -> impl Iterator<Item = usize> + '_ {
        let from = self.launched.partition_point(|&(h, _)| h < c);
        self.launched[from..]
            .iter()
            .take_while(move |&&(h, _)| h == c)
            .map(|&(_, a)| a as usize)
    }

    /// GPU time launched by thread `key` during host op `h`.
    fn during(&self, key: (u32, u64), h: usize) -> i64 {
        let host = &self.ctx.trace.host;
        let Some(calls) = self.calls.get(&key) else {
            return 0;
        };
        let (s, e) = (
            host.ts_ns[h],
            host.ts_ns[h].saturating_add(host.dur_ns.get(h)),
        );
        let lo = calls.partition_point(|&c| host.ts_ns[c as usize] < s);
        calls[lo..]
            .iter()
            .take_while(|&&c| host.ts_ns[c as usize] < e)
            .flat_map(|&c| self.of_call(c))
            .filter(|&a| self.ctx.in_scope[a])
            .map(|a| self.ctx.trace.activities.dur_ns[a])
            .sum()
    }
}

/// What an op name is to [`unfused_projections`], by bit.
const GEMM: u8 = 1;
const VIEW: u8 = 2;
const COMPILE: u8 = 4;
const ACTIVATION: u8 = 8;

/// What each distinct op name is, decided once (traces have millions of ops, few names).
fn projection_kinds(trace: &crate::model::Trace) -> Vec<u8> {
    trace.names.per_name(|n| {
        [
            (is_gemm_op(n), GEMM),
            (is_view_op(n), VIEW),
            (is_compile_event(n), COMPILE),
            (is_activation_op(n), ACTIVATION),
        ]
        .iter()
        .filter(|(is, _)| *is)
        .fold(0, |acc, (_, bit)| acc | bit)
    })
}

pub fn unfused_projections(ctx: &Context) -> Vec<Finding> {
    let trace = ctx.trace;
    let host = &trace.host;
    // The cpu_ops by (input, tid), each thread's in time order (u32: millions of ops), in a
    // list of their exact count sorted in place: on a 2 GB trace a grown list and a stable
    // sort's buffer were 25 MB more at the analysis's peak. Ties keep the trace's order.
    let is_op = |h: &usize| host.kind[*h] == HostKind::CpuOp;
    let mut cpu_ops: Vec<u32> = Vec::with_capacity((0..host.len()).filter(is_op).count());
    cpu_ops.extend((0..host.len()).filter(is_op).map(|h| h as u32));
    let thread_key = |h: usize| (host.input[h], host.tid(h));
    sort_mostly_sorted_by_key(&mut cpu_ops, |h| {
        (
            thread_key(h as usize),
            host.ts_ns[h as usize],
            std::cmp::Reverse(host.dur_ns.get(h as usize)),
            h,
        )
    });
    let priced = LaunchedTime::new(ctx);

    let kinds = projection_kinds(trace);
    let kind = |h: usize| kinds[host.name[h].index()];

    // Runs of GEMM ops at one nesting level reading an input of the same shape, only views between.
    let mut runs: RunsByLength = BTreeMap::new();
    // Each GEMM's first input shape, by its `Input Dims` (parsed once per distinct text), as
    // an index into `shapes` (compared per op without a string).
    let mut first_input: HashMap<NameId, u32> = HashMap::default();
    let mut shapes: Vec<String> = Vec::new();
    for ops in cpu_ops.chunk_by(|&a, &b| thread_key(a as usize) == thread_key(b as usize)) {
        let key = thread_key(ops[0] as usize);
        // Open ops, each with whether it or an op around it is a GEMM, a view or compile work
        // (the ops inside those are their implementation or tracing, not the model), and the
        // run of GEMMs directly under it (`top`: at the top level): the GEMMs, the input shape
        // they read, and whether an activation ran since the last. Only views and one
        // activation may sit between (`silu(gate(y)) * up(y)` runs gate, silu, up); any other
        // op ends the run. A run lives in its parent's entry, so it ends with it.
        let mut stack: Vec<(usize, bool, Option<Run>)> = Vec::new();
        let mut top: Option<Run> = None;
        let flush = |run: Option<Run>, runs: &mut RunsByLength| {
            if let Some((run, _, _)) = run.filter(|r| r.0.len() >= 2) {
                runs.entry(run.len()).or_default().push((run, key));
            }
        };
        for h in ops.iter().map(|&h| h as usize) {
            let start = host.ts_ns[h];
            while let Some(&(open, _, _)) = stack.last() {
                if host.ts_ns[open].saturating_add(host.dur_ns.get(open)) > start {
                    break;
                }
                if let Some((_, _, run)) = stack.pop() {
                    flush(run, &mut runs);
                }
            }
            // Only the outermost op counts (aten::linear → aten::addmm is one projection; the
            // ops inside another op are its implementation).
            // Ops under torch.compile's own work are tracing with fake tensors, not the model.
            let nested = stack.last().is_some_and(|&(_, masked, _)| masked);
            let k = kind(h);
            if !nested {
                let slot = match stack.last_mut() {
                    Some(parent) => &mut parent.2,
                    None => &mut top,
                };
                if k & GEMM != 0 && host.input_dims(h) != NameId::NONE {
                    let shape =
                        *first_input
                            .entry(host.input_dims(h))
                            .or_insert_with_key(|&dims| {
                                let first = tensor_dims(trace.names.get(dims))
                                    .first()
                                    .cloned()
                                    .unwrap_or_default();
                                match shapes.iter().position(|s| *s == first) {
                                    Some(k) => k as u32,
                                    None => {
                                        shapes.push(first);
                                        shapes.len() as u32 - 1
                                    }
                                }
                            });
                    let entry = slot.get_or_insert_with(|| (Vec::new(), shape, 0));
                    if entry.1 != shape || entry.2 > 1 {
                        let old = std::mem::take(&mut entry.0);
                        flush(Some((old, 0, 0)), &mut runs);
                        entry.1 = shape;
                    }
                    entry.0.push(h);
                    entry.2 = 0;
                } else if k & VIEW == 0 {
                    if let Some(entry) = slot.as_mut() {
                        entry.2 += if k & ACTIVATION != 0 { 1 } else { 2 };
                        if entry.2 > 1 {
                            let old = std::mem::take(&mut entry.0);
                            flush(Some((old, 0, 0)), &mut runs);
                        }
                    }
                }
            }
            stack.push((h, nested || k & (GEMM | VIEW | COMPILE) != 0, None));
        }
        for (_, _, run) in stack.drain(..) {
            flush(run, &mut runs);
        }
        flush(top, &mut runs);
    }

    // gate/up pairs project to the same width; Q/K/V may not (grouped-query attention).
    if let Some(pairs) = runs.get_mut(&2) {
        // The weight's shape, parsed once per distinct `Input Dims`.
        let mut weight: HashMap<NameId, Option<String>> = HashMap::default();
        let mut w = |h: usize| {
            weight
                .entry(host.input_dims(h))
                .or_insert_with_key(|&dims| tensor_dims(trace.names.get(dims)).get(1).cloned())
                .clone()
        };
        pairs.retain(|(run, _)| {
            let first = w(run[0]);
            first.is_some() && first == w(run[1])
        });
    }
    let mut out = Vec::new();
    for (len, kind, label) in [
        (3usize, ev::ProjectionKind::Qkv, "Q/K/V"),
        (2usize, ev::ProjectionKind::GateUp, "gate/up"),
    ] {
        let Some(list) = runs.get(&len).filter(|l| !l.is_empty()) else {
            continue;
        };
        let stake: i64 = list
            .iter()
            .flat_map(|(run, key)| run.iter().map(move |&h| (*key, h)))
            .map(|(k, h)| priced.during(k, h))
            .sum();
        // The earliest run (the list's order is the order runs ended in).
        let (example, _) = list
            .iter()
            .min_by_key(|(run, key)| (*key, run[0]))
            .unwrap_or(&list[0]);
        let shapes: Vec<String> = example
            .iter()
            .map(|&h| {
                crate::analysis::ops::attribution::compact_dims(trace.names.get(host.input_dims(h)))
            })
            .collect();
        let per_step = list.len() as f64 / step_count(ctx);
        out.push(Finding::new(
            Severity::Medium,
            format!(
                "unfused {label} projections: {} runs of {len} GEMMs reading the same input ({per_step:.1} per step); one GEMM with concatenated weights does the work of {len}",
                list.len()
            ),
            stake,
            Detail::UnfusedProjections(ev::UnfusedProjections {
                kind,
                gemms_per_run: len,
                runs: list.len(),
                runs_per_step: round2(per_step),
                gemm_ns: stake,
                example_op: trace.names.get(host.name[example[0]]).to_string(),
                example_input_dims: shapes,
            }),
        ));
    }
    out
}

/// Optimizer kernels per step at or above which a per-parameter optimizer is worth fusing.
const PER_PARAMETER_MIN_KERNELS: f64 = 20.0;

/// An optimizer stepping each parameter with its own kernels (`foreach=False`, or optimizers
/// without a multi-tensor path): under `Optimizer.step#…`, most kernels are not multi-tensor
/// (`multi_tensor_apply`, `fused_adam`) and there are many of them per step. Its time at stake:
/// the optimizer's host ranges in the steps.
pub fn per_parameter_optimizer(ctx: &Context) -> Vec<Finding> {
    let trace = ctx.trace;
    let (host, acts) = (&trace.host, &trace.activities);
    // Optimizer ranges per input, by start.
    let mut ranges: BTreeMap<u32, Vec<(i64, i64, NameId)>> = BTreeMap::new();
    for h in 0..host.len() {
        if host.kind[h] == HostKind::Annotation
            && trace.names.get(host.name[h]).starts_with("Optimizer.step#")
        {
            ranges.entry(host.input[h]).or_default().push((
                host.ts_ns[h],
                host.end_ns(h),
                host.name[h],
            ));
        }
    }
    if ranges.is_empty() {
        return vec![];
    }
    for r in ranges.values_mut() {
        r.sort_unstable();
    }
    let inside = |input: u32, t: i64| -> Option<NameId> {
        let r = ranges.get(&input)?;
        let k = r.partition_point(|x| x.0 <= t);
        (k > 0 && t < r[k - 1].1).then(|| r[k - 1].2)
    };
    let (mut kernels, mut multi, mut kernel_ns) = (0u64, 0u64, 0i64);
    let mut names: BTreeMap<NameId, u64> = BTreeMap::new();
    for a in (0..acts.len()).filter(|&a| ctx.in_scope[a]) {
        let t = ctx.links.launch_ts(trace, a);
        let Some(opt) = inside(acts.input[a], t) else {
            continue;
        };
        *names.entry(opt).or_default() += 1;
        kernels += 1;
        kernel_ns += acts.dur_ns[a];
        let n = trace.names.get(acts.name[a]);
        if n.contains("multi_tensor_apply") || n.contains("fused_adam") || n.contains("_fused_") {
            multi += 1;
        }
    }
    let steps = step_count(ctx);
    let per_step = kernels as f64 / steps;
    if kernels == 0 || multi * 2 >= kernels || per_step < PER_PARAMETER_MIN_KERNELS {
        return vec![];
    }
    // The optimizer's host time inside the analyzed steps.
    let windows = super::host::StallWindows::new(ctx);
    let host_ns: i64 = ranges
        .iter()
        .flat_map(|(&input, r)| r.iter().map(move |x| (input, x)))
        .filter(|(input, x)| windows.inside(*input, x.0))
        .map(|(_, x)| x.1 - x.0)
        .sum::<i64>()
        .min(ctx.window_ns());
    let optimizer = names
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(id, _)| {
            trace
                .names
                .get(*id)
                .trim_start_matches("Optimizer.step#")
                .to_string()
        })
        .unwrap_or_default();
    let pct = crate::analysis::numbers::pct(host_ns, ctx.window_ns());
    vec![Finding::new(
        if pct >= 10.0 {
            Severity::High
        } else {
            Severity::Medium
        },
        format!(
            "{optimizer} steps each parameter with its own kernels: {per_step:.0} kernels per step under Optimizer.step ({:.0}% multi-tensor), {} of host time ({pct:.1}% of the window)",
            100.0 * multi as f64 / kernels as f64,
            super::ms(host_ns)
        ),
        host_ns,
        Detail::PerParameterOptimizer(ev::PerParameterOptimizer {
            optimizer,
            kernels_per_step: round2(per_step),
            multi_tensor_pct: round2(100.0 * multi as f64 / kernels as f64),
            kernel_ns,
            host_ns,
            pct: round2(pct),
        }),
    )]
}
