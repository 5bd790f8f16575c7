//! Each change as an edit of the step model: what it removes, fuses, re-rates or unblocks.
//! First-order models: rates from the trace (the achieved time of the same kind of kernel) or
//! the datasheet (`rules/devices.toml`); other constants from `rules/replay.toml`.

use crate::analysis::context::Context;
use crate::analysis::path::replay::change::Transform;
use crate::analysis::path::replay::constants::Constants;
use crate::analysis::path::replay::graph::{InputGraph, PieceKind};
use crate::analysis::path::replay::sim::Edit;
use crate::classify::{Bucket, KernelTag};
use crate::model::Vendor;

/// What the trace tells the transforms beyond the model: per graph, each activity's tag, the
/// device's peaks and vendor, the typical dispatch and the shortest kernel.
pub(crate) struct Facts {
    pub per_graph: Vec<GraphFacts>,
}

pub(crate) struct GraphFacts {
    pub tags: Vec<Option<KernelTag>>,
    pub fp32_conv: Vec<bool>,
    pub multi_tensor: Vec<bool>,
    /// (fp32, tf32) dense peaks of the device, TFLOP/s.
    pub peaks: Option<(f64, f64)>,
    pub vendor: Vendor,
    /// The median host time of an op that launches.
    pub dispatch_ns: i64,
    /// The time of the shortest elementwise kernels (their fixed cost).
    pub floor_ns: i64,
}

impl Facts {
    pub fn of(ctx: &Context, graphs: &[InputGraph], constants: &Constants) -> Facts {
        let conv = regex::Regex::new(&constants.fp32_conv_kernels.value).ok();
        let trace = ctx.trace;
        let per_graph = graphs
            .iter()
            .map(|g| {
                let name = |a: &crate::analysis::path::replay::graph::Act| {
                    trace.names.get(trace.activities.name[a.id as usize])
                };
                let meta = &trace.inputs[g.input as usize];
                let peaks = meta.devices.first().and_then(|d| {
                    let p = crate::classify::devices::peaks_of(&ctx.rules.devices, d)?;
                    Some((p.fp32?, p.tf32?))
                });
                let mut dispatch: Vec<i64> = g
                    .pieces
                    .iter()
                    .filter(|p| p.kind == PieceKind::Dispatch)
                    .map(|p| p.end - p.start)
                    .collect();
                dispatch.sort_unstable();
                let mut elementwise: Vec<i64> = g
                    .acts
                    .iter()
                    .filter(|a| a.bucket == Bucket::Elementwise)
                    .map(|a| a.dur)
                    .collect();
                elementwise.sort_unstable();
                GraphFacts {
                    tags: g
                        .acts
                        .iter()
                        .map(|a| ctx.classified.get(trace.activities.name[a.id as usize]).tag)
                        .collect(),
                    fp32_conv: g
                        .acts
                        .iter()
                        .map(|a| {
                            a.bucket == Bucket::Conv
                                && conv.as_ref().is_some_and(|re| re.is_match(name(a)))
                        })
                        .collect(),
                    multi_tensor: g
                        .acts
                        .iter()
                        .map(|a| {
                            let n = name(a);
                            n.contains("multi_tensor_apply") || n.contains("fused_adam")
                        })
                        .collect(),
                    peaks,
                    vendor: meta.vendor,
                    dispatch_ns: dispatch.get(dispatch.len() / 2).copied().unwrap_or(0),
                    // The 5th percentile: the kernels whose time is all fixed cost.
                    floor_ns: elementwise
                        .get(elementwise.len() / 20)
                        .copied()
                        .unwrap_or(0),
                }
            })
            .collect();
        Facts { per_graph }
    }
}

/// What applying a change did.
#[derive(Default)]
pub(crate) struct Applied {
    pub touched_ns: i64,
    pub from_table: bool,
    pub blocked: Option<String>,
}

impl Applied {
    fn blocked(why: &str) -> Applied {
        Applied {
            blocked: Some(why.to_string()),
            ..Default::default()
        }
    }
}

/// Applies one change to the edit of graph `g`.
pub(crate) fn apply(
    t: Transform,
    (g, gi): (&InputGraph, usize),
    e: &mut Edit,
    facts: &Facts,
    c: &Constants,
) -> Applied {
    let f = &facts.per_graph[gi];
    match t {
        Transform::LoaderWorkers => loader_workers(g, e, c.loader_workers.value.max(1)),
        Transform::RemoveSyncs => remove_syncs(g, e),
        Transform::Tf32 => tf32(g, e, f),
        Transform::ChannelsLast => remove_tagged(g, e, f, KernelTag::LayoutTranspose),
        Transform::Sdpa => sdpa(g, e, f),
        Transform::FusedOptimizer => fused_optimizer(g, e, f, c),
        Transform::Compile => compile(g, e, f, c),
        Transform::CudaGraphs => cuda_graphs(g, e, f, c),
    }
}

/// Scales the host pieces `which` of span `k` to total `new` (never up).
fn scale_pieces(e: &mut Edit, which: &[usize], new: i64) -> i64 {
    let old: i64 = which.iter().map(|&i| e.host[i]).sum();
    if old <= 0 || new >= old {
        return 0;
    }
    let mut left = new;
    for (n, &i) in which.iter().enumerate() {
        let v = if n + 1 == which.len() {
            left
        } else {
            ((e.host[i] as i128 * new as i128) / old as i128) as i64
        };
        left -= v;
        e.host[i] = v;
    }
    old - new
}

/// The DataLoader's work in worker processes: per step, what the main thread still waits for
/// is what the workers cannot hide behind the rest of the step, max(0, load ÷ workers − rest).
fn loader_workers(g: &InputGraph, e: &mut Edit, workers: u32) -> Applied {
    let mut out = Applied::default();
    for (k, span) in g.spans.iter().enumerate() {
        let mine: Vec<usize> = g.span_pieces[k]
            .iter()
            .map(|&i| i as usize)
            .filter(|&i| g.pieces[i].kind == PieceKind::Loading)
            .collect();
        let load: i64 = mine.iter().map(|&i| e.host[i]).sum();
        if load == 0 {
            continue;
        }
        let rest = (span.measured_ns - load).max(0);
        let left = (load / workers as i64 - rest).max(0);
        scale_pieces(e, &mine, left);
        out.touched_ns += load;
    }
    if out.touched_ns == 0 {
        return Applied::blocked("no DataLoader work in the steps");
    }
    out
}

/// Synchronizes the step can lose no longer wait, and take no time.
fn remove_syncs(g: &InputGraph, e: &mut Edit) -> Applied {
    let mut out = Applied::default();
    for (i, p) in g.pieces.iter().enumerate() {
        if let PieceKind::Sync {
            awaits: Some(_),
            removable: true,
            ..
        } = p.kind
        {
            if e.waits[i] && p.span.is_some() {
                out.touched_ns += p.end - p.start;
                e.waits[i] = false;
                e.host[i] = 0;
            }
        }
    }
    if out.touched_ns == 0 {
        return Applied::blocked("no synchronize the step can lose");
    }
    out
}

/// fp32 GEMMs and convolutions without TF32 at the TF32 peak's rate (their share of the
/// fp32 peak kept): the datasheet's ratio.
fn tf32(g: &InputGraph, e: &mut Edit, f: &GraphFacts) -> Applied {
    if f.vendor == Vendor::Amd {
        return Applied::blocked("no TF32 on AMD's fp32 path here");
    }
    let Some((fp32, tf32)) = f.peaks.filter(|p| p.0 > 0.0 && p.1 > p.0) else {
        return Applied::blocked("the device's fp32 and TF32 peaks are not in devices.toml");
    };
    let mut out = Applied {
        from_table: true,
        ..Default::default()
    };
    for (k, a) in g.acts.iter().enumerate() {
        let fp32_gemm = a.bucket == Bucket::Gemm && f.tags[k] == Some(KernelTag::Fp32Gemm);
        if (fp32_gemm || f.fp32_conv[k]) && !e.removed[k] {
            let new = (e.dur[k] as f64 * fp32 / tf32).round() as i64;
            out.touched_ns += e.dur[k];
            e.dur[k] = new.min(e.dur[k]);
        }
    }
    if out.touched_ns == 0 {
        return Applied::blocked("no fp32 GEMM or convolution without TF32");
    }
    out
}

/// Kernels with `tag` gone.
fn remove_tagged(g: &InputGraph, e: &mut Edit, f: &GraphFacts, tag: KernelTag) -> Applied {
    let mut out = Applied::default();
    for k in 0..g.acts.len() {
        if f.tags[k] == Some(tag) && !e.removed[k] {
            out.touched_ns += e.dur[k];
            e.removed[k] = true;
        }
    }
    if out.touched_ns == 0 {
        return Applied::blocked("nothing to remove");
    }
    out
}

/// Each stream's activities in stream order (local indices).
fn stream_lists(g: &InputGraph) -> Vec<Vec<usize>> {
    let mut lists: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (k, a) in g.acts.iter().enumerate() {
        lists.entry(a.stream).or_default().push(k);
    }
    let mut out: Vec<Vec<usize>> = lists.into_values().collect();
    for l in &mut out {
        l.sort_by_key(|&k| (g.acts[k].start, k));
    }
    out
}

/// Hand-written attention as one fused kernel: each GEMM → softmax → GEMM chain (as
/// `manual_attention` finds it) takes its two GEMMs' time, the rate the trace's GEMMs reach on
/// the same FLOPs; the masks, scales, casts and the softmax between them go.
fn sdpa(g: &InputGraph, e: &mut Edit, f: &GraphFacts) -> Applied {
    const CHAIN_GAP: usize = 8;
    let mut out = Applied::default();
    let is_gemm = |k: usize| g.acts[k].bucket == Bucket::Gemm;
    let is_softmax = |k: usize| f.tags[k] == Some(KernelTag::Softmax);
    for list in stream_lists(g) {
        let chains = crate::analysis::kernels::attention_chains(
            list.len(),
            CHAIN_GAP,
            |x| is_gemm(list[x]),
            |x| is_softmax(list[x]),
        );
        for (i, _, k) in chains {
            let chain = &list[i..=k];
            let gemms = e.dur[list[i]] + e.dur[list[k]];
            out.touched_ns += chain.iter().map(|&x| e.dur[x]).sum::<i64>();
            for &x in chain {
                e.removed[x] = true;
            }
            e.removed[list[i]] = false;
            e.dur[list[i]] = gemms;
        }
    }
    if out.touched_ns == 0 {
        return Applied::blocked("no GEMM → softmax → GEMM chain");
    }
    out
}

/// Per-parameter optimizer kernels as a few multi-tensor launches: each kernel's time beyond
/// the fixed cost of the shortest kernels stays (the same bytes move), the fixed costs but
/// `fused_optimizer_launches` go; the optimizer's dispatch becomes that many launches.
fn fused_optimizer(g: &InputGraph, e: &mut Edit, f: &GraphFacts, c: &Constants) -> Applied {
    let opt: Vec<usize> = (0..g.acts.len()).filter(|&k| g.acts[k].optimizer).collect();
    if opt.is_empty() {
        return Applied::blocked("no optimizer step (Optimizer.step#…) in the trace");
    }
    let multi = opt.iter().filter(|&&k| f.multi_tensor[k]).count();
    if multi * 2 >= opt.len() {
        return Applied::blocked("the optimizer already runs multi-tensor kernels");
    }
    let launches = c.fused_optimizer_launches.value.max(1) as i64;
    let mut out = Applied::default();
    for (k, _) in g.spans.iter().enumerate() {
        let mine: Vec<usize> = g.span_acts[k]
            .iter()
            .map(|&x| x as usize)
            .filter(|&x| g.acts[x].optimizer && !e.removed[x])
            .collect();
        let Some(&first) = mine.first() else { continue };
        let old: i64 = mine.iter().map(|&x| e.dur[x]).sum();
        let work: i64 = mine.iter().map(|&x| (e.dur[x] - f.floor_ns).max(0)).sum();
        let new = (work + f.floor_ns * launches).min(old);
        for &x in &mine {
            e.removed[x] = true;
        }
        e.removed[first] = false;
        e.dur[first] = new;
        let host = span_dispatch(g, k, true);
        let host_old: i64 = host.iter().map(|&i| e.host[i]).sum();
        scale_pieces(e, &host, f.dispatch_ns * launches);
        out.touched_ns += old + host_old;
    }
    out
}

/// Host time a compiled or captured region no longer spends: dispatching ops, ops that launch
/// nothing, and the short gaps between them.
fn is_dispatch(kind: PieceKind) -> bool {
    matches!(
        kind,
        PieceKind::Dispatch | PieceKind::Host | PieceKind::Gap { long: false }
    )
}

/// The dispatch pieces of span `k` inside the optimizer step (`optimizer`) or outside it.
fn span_dispatch(g: &InputGraph, k: usize, optimizer: bool) -> Vec<usize> {
    g.span_pieces[k]
        .iter()
        .map(|&i| i as usize)
        .filter(|&i| g.pieces[i].optimizer == optimizer && is_dispatch(g.pieces[i].kind))
        .collect()
}

/// torch.compile (mode default) of the model (not the optimizer): each chain of eager
/// elementwise kernels back to back on a stream becomes one kernel, which moves about what its
/// largest member moves, in that member's time; GEMM, convolution and attention kernels stay.
/// The host dispatches one wrapper call per remaining kernel instead of each op.
fn compile(g: &InputGraph, e: &mut Edit, f: &GraphFacts, c: &Constants) -> Applied {
    let mut out = Applied::default();
    let fusible = |k: usize| {
        let a = &g.acts[k];
        a.bucket == Bucket::Elementwise
            && !a.optimizer
            && f.tags[k] != Some(KernelTag::Inductor)
            && a.span.is_some()
    };
    for list in stream_lists(g) {
        let mut i = 0;
        while i < list.len() {
            if !fusible(list[i]) || e.removed[list[i]] {
                i += 1;
                continue;
            }
            let mut j = i + 1;
            while j < list.len() && fusible(list[j]) && g.acts[list[j]].span == g.acts[list[i]].span
            {
                j += 1;
            }
            let chain: Vec<usize> = list[i..j]
                .iter()
                .copied()
                .filter(|&x| !e.removed[x])
                .collect();
            if chain.len() >= 2 {
                let keep = *chain
                    .iter()
                    .max_by_key(|&&x| (e.dur[x], x))
                    .unwrap_or(&chain[0]);
                for &x in &chain {
                    if x != keep {
                        out.touched_ns += e.dur[x];
                        e.removed[x] = true;
                    }
                }
                out.touched_ns += e.dur[keep];
            }
            i = j;
        }
    }
    for (k, _) in g.spans.iter().enumerate() {
        let host = span_dispatch(g, k, false);
        let kernels = g.span_acts[k]
            .iter()
            .filter(|&&x| !g.acts[x as usize].optimizer && !e.removed[x as usize])
            .count() as i64;
        out.touched_ns += scale_pieces(e, &host, kernels * c.compile_wrapper_ns.value);
    }
    if out.touched_ns == 0 {
        return Applied::blocked("no eager elementwise chain or dispatch to compile");
    }
    out
}

/// CUDA/HIP graphs over the model's work: its dispatch gone but one graph launch per captured
/// segment, each kernel after its stream predecessor and the graph's per-node gap. A
/// synchronize that waits inside the step stays: on NVIDIA torch.compile's reduce-overhead
/// splits its graphs there (cudagraph trees record one graph per segment between graph
/// breaks), so each such sync costs one more launch; where capture is manual (AMD, seeds/002)
/// it blocks capture, as an op whose output size is data does everywhere.
fn cuda_graphs(g: &InputGraph, e: &mut Edit, f: &GraphFacts, c: &Constants) -> Applied {
    let splits = f.vendor != Vendor::Amd;
    let mut segments = vec![1i64; g.spans.len()];
    for (i, p) in g.pieces.iter().enumerate() {
        if let PieceKind::Sync {
            removable, upload, ..
        } = p.kind
        {
            let Some(k) = p.span else { continue };
            if !e.waits[i] || p.optimizer || upload {
                continue;
            }
            if !removable {
                return Applied::blocked("a data-dependent shape inside the step blocks capture");
            }
            if !splits {
                return Applied::blocked("a host synchronize inside the step blocks capture");
            }
            segments[k as usize] += 1;
        }
    }
    let mut out = Applied::default();
    let launch = c.graph_launch_ns.value.of(f.vendor);
    for (k, _) in g.spans.iter().enumerate() {
        let host = span_dispatch(g, k, false);
        out.touched_ns += scale_pieces(e, &host, launch * segments[k]);
    }
    // No launch of its own waits for the launch queue any more.
    for (i, p) in g.pieces.iter().enumerate() {
        if matches!(p.kind, PieceKind::Queued { .. }) && p.span.is_some() && !p.optimizer {
            out.touched_ns += e.host[i];
            e.waits[i] = false;
            e.host[i] = 0;
        }
    }
    for (x, a) in g.acts.iter().enumerate() {
        if a.span.is_some() && !a.optimizer {
            e.graphed[x] = true;
        }
    }
    e.node_gap = c.graph_node_gap_ns.value.of(f.vendor);
    if out.touched_ns == 0 {
        return Applied::blocked("no dispatch to replay from a graph");
    }
    out
}
