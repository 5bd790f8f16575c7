//! Each change as an edit of the step model: what it removes, fuses, re-rates or unblocks.
//! First-order models: rates from the trace (the achieved time of the same kind of kernel) or
//! the datasheet (`rules/devices.toml`); other constants from `rules/replay.toml`.

use crate::analysis::context::Context;
use crate::analysis::path::replay::change::Transform;
use crate::analysis::path::replay::constants::Constants;
use crate::analysis::path::replay::graph::{InputGraph, PieceKind, Wait};
use crate::analysis::path::replay::sim::Edit;
use crate::classify::{Bucket, KernelTag};
use crate::model::{NameId, Vendor};
use rustc_hash::FxHashMap as HashMap;

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
    /// Per activity: its time once the model runs channels_last: for batch norms, poolings and
    /// depthwise convolutions running NCHW kernels, the bytes its op moves at the HBM rate this
    /// trace's memory-bound kernels reach; for convolutions running an NCHW kernel (cuDNN's
    /// `…nchw…` engines), its time plus the transposes of its input and output at that rate.
    /// Only the activities that have one, by local index (few of hundreds of thousands).
    pub relayout_ns: Vec<(u32, i64)>,
    /// That rate came from the datasheet: the trace has no memory-bound kernel to measure.
    pub hbm_from_table: bool,
    /// The step trains (an optimizer step runs in it): compiled, AOTAutograd wraps both passes.
    pub training: bool,
    /// Per activity: a copy from pageable host memory to the device, and its bytes where its
    /// op's shapes say (pinned memory moves them at the host link's rate, without the host
    /// waiting for them). Only such copies, by local index.
    pub pageable_upload: Vec<(u32, f64)>,
}

impl Facts {
    pub fn of(ctx: &Context, graphs: &[InputGraph], constants: &Constants) -> Facts {
        let conv = regex::Regex::new(&constants.fp32_conv_kernels.value).ok();
        let trace = ctx.trace;
        let per_graph = graphs
            .iter()
            .map(|g| {
                let meta = &trace.inputs[g.input as usize];
                let peaks = meta.devices.first().and_then(|d| {
                    let p = crate::classify::devices::peaks_of(&ctx.rules.devices, d)?;
                    Some((p.fp32?, p.tf32?))
                });
                let mut dispatch: Vec<i64> = (0..g.pieces.len())
                    .filter(|&i| g.pieces[i].kind == PieceKind::Dispatch)
                    .map(|i| g.piece_ns(i))
                    .collect();
                dispatch.sort_unstable();
                let mut elementwise: Vec<i64> = g
                    .acts
                    .iter()
                    .filter(|a| a.bucket == Bucket::Elementwise)
                    .map(|a| a.dur)
                    .collect();
                elementwise.sort_unstable();
                let (relayout_ns, hbm_from_table) = relayout_times(ctx, g, meta);
                // What the kernel's name says, once per name: a pageable upload, an fp32
                // convolution, the optimizer's multi-tensor kernels.
                let mut said: HashMap<NameId, [bool; 3]> = HashMap::default();
                let says = |a: &crate::analysis::path::replay::graph::Act| {
                    let kernel = trace.activities.name[a.id as usize];
                    *said.entry(kernel).or_insert_with(|| {
                        let n = trace.names.get(kernel);
                        [
                            n.contains("HtoD") && n.contains("Pageable"),
                            conv.as_ref().is_some_and(|re| re.is_match(n)),
                            n.contains("multi_tensor_apply") || n.contains("fused_adam"),
                        ]
                    })
                };
                let flags: Vec<[bool; 3]> = g.acts.iter().map(says).collect();
                let pageable_upload = g
                    .acts
                    .iter()
                    .enumerate()
                    .filter_map(|(k, a)| {
                        let bytes = flags[k][0].then(|| upload_bytes(ctx, a)).flatten()?;
                        Some((k as u32, bytes))
                    })
                    .collect();
                GraphFacts {
                    pageable_upload,
                    relayout_ns,
                    hbm_from_table,
                    training: g.acts.iter().any(|a| a.optimizer)
                        || g.pieces.iter().any(|p| p.optimizer()),
                    tags: g
                        .acts
                        .iter()
                        .map(|a| ctx.classified.get(trace.activities.name[a.id as usize]).tag)
                        .collect(),
                    fp32_conv: g
                        .acts
                        .iter()
                        .zip(&flags)
                        .map(|(a, f)| a.bucket == Bucket::Conv && f[1])
                        .collect(),
                    multi_tensor: flags.iter().map(|f| f[2]).collect(),
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

/// The bytes a host-to-device copy moves: its op's source tensor (`copy_`'s second input,
/// else the first), None where the shapes do not say.
fn upload_bytes(ctx: &Context, a: &crate::analysis::path::replay::graph::Act) -> Option<f64> {
    let h = ctx.op_of.get(a.id as usize).copied().flatten()? as usize;
    let host = &ctx.trace.host;
    let names = &ctx.trace.names;
    let dims = crate::analysis::ops::efficiency::dims_of(names.get(host.input_dims(h)))?;
    let types: Vec<String> =
        serde_json::from_str(names.get(host.input_types(h))).unwrap_or_default();
    let i = usize::from(names.get(host.name[h]).ends_with("copy_"));
    let d = dims.get(i).filter(|d| !d.is_empty())?;
    let s = crate::analysis::ops::bytes_moved::elem_bytes(types.get(i)?)?;
    Some(d.iter().map(|&x| x.max(0) as f64).product::<f64>() * f64::from(s))
}

/// Per activity of `g`, its time in a streaming layout (see [`GraphFacts::relayout_ns`]), and
/// whether the HBM rate came from the datasheet.
fn relayout_times(
    ctx: &Context,
    g: &InputGraph,
    meta: &crate::model::InputMeta,
) -> (Vec<(u32, i64)>, bool) {
    use crate::analysis::ops::bytes_moved::{activation_bytes, layout_op_bytes, op_bytes};
    let trace = ctx.trace;
    let host = &trace.host;
    let op = |a: &crate::analysis::path::replay::graph::Act| {
        ctx.op_of
            .get(a.id as usize)
            .copied()
            .flatten()
            .map(|h| h as usize)
    };
    // The rate: the median of what memory-bound kernels of 10 µs or more reach. Their ops'
    // bytes parsed once per op name and shapes (a step repeats them).
    let mut parsed: HashMap<[NameId; 4], Option<f64>> = HashMap::default();
    let mut rates: Vec<f64> = g
        .acts
        .iter()
        .filter(|a| a.bucket == Bucket::Elementwise && a.dur >= 10_000)
        .filter_map(|a| {
            let h = op(a)?;
            let texts = [
                host.name[h],
                host.input_dims(h),
                host.input_types(h),
                host.concrete_inputs(h),
            ];
            let bytes = (*parsed.entry(texts).or_insert_with(|| {
                let [name, dims, types, concrete] = texts.map(|t| trace.names.get(t));
                op_bytes(name, dims, types, concrete)
            }))?;
            Some(bytes / a.dur as f64)
        })
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect();
    rates.sort_by(f64::total_cmp);
    let peak = meta
        .devices
        .first()
        .and_then(|d| crate::classify::devices::peaks_of(&ctx.rules.devices, d))
        .and_then(|p| p.hbm_gbps)
        .filter(|p| p.is_finite() && *p > 0.0);
    let (rate, from_table) = match (rates.get(rates.len() / 2).copied(), peak) {
        (Some(r), Some(p)) => (r.min(p), false),
        (Some(r), None) => (r, false),
        (None, Some(p)) => (p, true),
        (None, None) => return (Vec::new(), false),
    };
    // Per launching op: its NCHW kernels' time, and the bound its bytes give.
    let mut per_op: std::collections::HashMap<usize, (i64, f64)> = Default::default();
    let mut op_at: Vec<Option<usize>> = vec![None; g.acts.len()];
    let mut extra: Vec<i64> = vec![0; g.acts.len()];
    // What a kernel's name says, once per name (a step runs the same kernels many times):
    // whether it streams channels_last, is depthwise, takes NCHW.
    let mut layouts: HashMap<NameId, [bool; 3]> = HashMap::default();
    for (k, a) in g.acts.iter().enumerate() {
        if !matches!(a.bucket, Bucket::Conv | Bucket::Elementwise) {
            continue;
        }
        let kernel = trace.activities.name[a.id as usize];
        let [streaming, depthwise, nchw] = *layouts.entry(kernel).or_insert_with(|| {
            let lower = trace.names.get(kernel).to_ascii_lowercase();
            [
                lower.contains("nhwc") || lower.contains("channels_last"),
                lower.contains("depthwise"),
                lower.contains("nchw"),
            ]
        });
        let inductor = ctx.classified.get(kernel).tag == Some(KernelTag::Inductor);
        if streaming || inductor {
            continue;
        }
        let Some(h) = op(a) else { continue };
        let name = trace.names.get(host.name[h]);
        if name.contains("convolution") && !depthwise {
            // A kernel that only takes NCHW (cuDNN's `…nchw…` engines) runs between two
            // transposes in a channels_last model: its input's and its output's, each read
            // and written once (the channels_last arms of the pairs show them).
            let x = activation_bytes(
                trace.names.get(host.input_dims(h)),
                trace.names.get(host.input_types(h)),
            );
            if let (true, Some(x)) = (nchw, x) {
                extra[k] = (4.0 * x / rate).round() as i64;
            }
            continue;
        }
        let Some(bytes) = layout_op_bytes(
            name,
            trace.names.get(host.input_dims(h)),
            trace.names.get(host.input_types(h)),
        ) else {
            continue;
        };
        let e = per_op.entry(h).or_insert((0, bytes / rate));
        e.0 += a.dur;
        op_at[k] = Some(h);
    }
    let out = g
        .acts
        .iter()
        .enumerate()
        .filter_map(|(k, a)| {
            if extra[k] > 0 {
                return Some((k as u32, a.dur.saturating_add(extra[k])));
            }
            let (sum, bound) = per_op[&op_at[k]?];
            let share = (bound / sum.max(1) as f64).min(1.0);
            Some((k as u32, (a.dur as f64 * share).round() as i64))
        })
        .collect();
    (out, from_table)
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
        Transform::LoaderWorkers => loader_workers(g, e, f, c),
        Transform::RemoveSyncs => remove_syncs(g, e),
        Transform::Tf32 => tf32(g, e, f),
        Transform::ChannelsLast => channels_last(g, e, f),
        Transform::Sdpa => sdpa(g, e, f),
        Transform::FusedOptimizer => fused_optimizer(g, e, f, c),
        Transform::Compile => compile(g, e, f, c),
        Transform::CudaGraphs => cuda_graphs(g, e, f, c),
        // The ranks' schedule, not one rank's step: the pipeline's replays price them.
        Transform::PipelineRebalance | Transform::PipelineSchedule => {
            Applied::blocked("a pipeline change: replayed across the ranks (pipeline.replays[])")
        }
    }
}

/// Scales the host pieces `which` of span `k` to total `new` (never up).
fn scale_pieces(g: &InputGraph, e: &mut Edit, which: &[usize], new: i64) -> i64 {
    let old: i64 = which.iter().map(|&i| e.host(g, i)).sum();
    if old <= 0 || new >= old {
        return 0;
    }
    let mut left = new;
    for (n, &i) in which.iter().enumerate() {
        let v = if n + 1 == which.len() {
            left
        } else {
            ((e.host(g, i) as i128 * new as i128) / old as i128) as i64
        };
        left -= v;
        e.set_host(g, i, v);
    }
    old - new
}

/// The DataLoader's work in worker processes: per step, what the main thread still waits for
/// is what the workers cannot hide behind the rest of the step, max(0, load ÷ workers − rest).
/// The rung pins the batches (`pin_memory=True`, `non_blocking=True`): copies from pageable
/// memory move at the host link's rate and the host no longer waits for them.
fn loader_workers(g: &InputGraph, e: &mut Edit, f: &GraphFacts, c: &Constants) -> Applied {
    let workers = c.loader_workers.value.max(1);
    let mut out = Applied::default();
    let link = c.pinned_copy_gbps.value.of(f.vendor) as f64;
    let mut pinned = vec![false; g.acts.len()];
    for &(k, b) in &f.pageable_upload {
        let k = k as usize;
        let t = (b / link).round() as i64;
        if t < e.dur(g, k) && g.acts[k].span.is_some() {
            out.touched_ns += e.dur(g, k) - t;
            e.set_dur(g, k, t);
            pinned[k] = true;
        }
    }
    // The host no longer waits for the copies it pinned.
    for (i, p) in g.pieces.iter().enumerate() {
        if let Some(Wait {
            upload: true,
            awaits: Some(a),
            ..
        }) = g.sync_wait(i)
        {
            if pinned[a as usize] && e.waits[i] && p.span.is_some() {
                out.touched_ns += e.host(g, i);
                e.waits[i] = false;
                e.set_host(g, i, e.host(g, i).min(f.dispatch_ns));
            }
        }
    }
    out.from_table |= pinned.contains(&true);
    for (k, span) in g.spans.iter().enumerate() {
        let mine: Vec<usize> = g
            .span_pieces
            .of_span(k)
            .filter(|&i| g.pieces[i].kind == PieceKind::Loading)
            .collect();
        let load: i64 = mine.iter().map(|&i| e.host(g, i)).sum();
        if load == 0 {
            continue;
        }
        let rest = (span.measured_ns - load).max(0);
        let left = (load / workers as i64 - rest).max(0);
        scale_pieces(g, e, &mine, left);
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
        if let Some(Wait {
            awaits: Some(_),
            removable: true,
            ..
        }) = g.sync_wait(i)
        {
            if e.waits[i] && p.span.is_some() {
                out.touched_ns += g.piece_ns(i);
                e.waits[i] = false;
                e.set_host(g, i, 0);
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
            let new = (e.dur(g, k) as f64 * fp32 / tf32).round() as i64;
            out.touched_ns += e.dur(g, k);
            e.set_dur(g, k, new.min(e.dur(g, k)));
        }
    }
    if out.touched_ns == 0 {
        return Applied::blocked("no fp32 GEMM or convolution without TF32");
    }
    out
}

/// channels_last: the layout transposes go, and the batch norms, poolings and depthwise
/// convolutions that ran NCHW kernels stream memory (their bytes at the trace's HBM rate).
fn channels_last(g: &InputGraph, e: &mut Edit, f: &GraphFacts) -> Applied {
    let mut out = remove_tagged(g, e, f, KernelTag::LayoutTranspose);
    let relaid = relayout(g, e, f);
    if relaid > 0 {
        out.blocked = None;
        out.touched_ns += relaid;
        out.from_table |= f.hbm_from_table;
    }
    out
}

/// Re-rates the layout-sensitive kernels at their streaming time (and NCHW-only convolutions
/// with their transposes); the time it touched.
fn relayout(g: &InputGraph, e: &mut Edit, f: &GraphFacts) -> i64 {
    // channels_last and compile both relayout: once.
    if e.relaid {
        return 0;
    }
    e.relaid = true;
    let mut touched = 0;
    for &(k, t) in &f.relayout_ns {
        let (k, a) = (k as usize, &g.acts[k as usize]);
        if e.removed[k] || t == a.dur {
            continue;
        }
        if t > a.dur {
            // The transposes around an NCHW convolution, unless another change already runs
            // it as another kernel (TF32's run NHWC).
            if e.dur(g, k) == a.dur {
                touched += t;
                e.set_dur(g, k, t);
            }
        } else {
            // Streaming: the same share of whatever time it has now.
            touched += e.dur(g, k);
            e.set_dur(
                g,
                k,
                ((e.dur(g, k) as i128 * t as i128) / a.dur.max(1) as i128) as i64,
            );
        }
    }
    touched
}

/// Kernels with `tag` gone.
fn remove_tagged(g: &InputGraph, e: &mut Edit, f: &GraphFacts, tag: KernelTag) -> Applied {
    let mut out = Applied::default();
    for k in 0..g.acts.len() {
        if f.tags[k] == Some(tag) && !e.removed[k] {
            out.touched_ns += e.dur(g, k);
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
            let gemms = e.dur(g, list[i]) + e.dur(g, list[k]);
            out.touched_ns += chain.iter().map(|&x| e.dur(g, x)).sum::<i64>();
            for &x in chain {
                e.removed[x] = true;
            }
            e.removed[list[i]] = false;
            e.set_dur(g, list[i], gemms);
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
        let mine: Vec<usize> = g
            .span_acts
            .of_span(k)
            .filter(|&x| g.acts[x].optimizer && !e.removed[x])
            .collect();
        let Some(&first) = mine.first() else { continue };
        let old: i64 = mine.iter().map(|&x| e.dur(g, x)).sum();
        let work: i64 = mine
            .iter()
            .map(|&x| (e.dur(g, x) - f.floor_ns).max(0))
            .sum();
        let new = (work + f.floor_ns * launches).min(old);
        for &x in &mine {
            e.removed[x] = true;
        }
        e.removed[first] = false;
        e.set_dur(g, first, new);
        let host = span_dispatch(g, k, true);
        let host_old: i64 = host.iter().map(|&i| e.host(g, i)).sum();
        scale_pieces(g, e, &host, f.dispatch_ns * launches);
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
    g.span_pieces
        .of_span(k)
        .filter(|&i| g.pieces[i].optimizer() == optimizer && is_dispatch(g.pieces[i].kind))
        .collect()
}

/// torch.compile (mode default) of the model (not the optimizer): each chain of eager
/// elementwise kernels back to back on a stream becomes one kernel, which moves about what its
/// largest member moves, in that member's time; GEMM, convolution and attention kernels stay.
/// The host dispatches one wrapper call per remaining kernel instead of each op (a training
/// step's per kernel cost holds AOTAutograd's runtime around both passes); layout-sensitive
/// kernels are re-rated as channels_last re-rates them (Inductor's layout optimization).
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
                    .max_by_key(|&&x| (e.dur(g, x), x))
                    .unwrap_or(&chain[0]);
                for &x in &chain {
                    if x != keep {
                        out.touched_ns += e.dur(g, x);
                        e.removed[x] = true;
                    }
                }
                out.touched_ns += e.dur(g, keep);
            }
            i = j;
        }
    }
    for (k, _) in g.spans.iter().enumerate() {
        let host = span_dispatch(g, k, false);
        let kernels = g
            .span_acts
            .of_span(k)
            .filter(|&x| !g.acts[x].optimizer && !e.removed[x])
            .count() as i64;
        // A training step enters its compiled forward and backward once each.
        let calls = match f.training {
            true => 2 * c.compile_training_call_ns.value,
            false => 0,
        };
        out.touched_ns += scale_pieces(g, e, &host, kernels * c.compile_wrapper_ns.value + calls);
    }
    // Inductor's layout optimization runs convolution models channels_last, and it generates
    // batch norms as its own streaming kernels.
    let relaid = relayout(g, e, f);
    if relaid > 0 {
        out.touched_ns += relaid;
        out.from_table |= f.hbm_from_table;
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
        if let Some(Wait {
            removable, upload, ..
        }) = g.sync_wait(i)
        {
            let Some(k) = p.span.get() else { continue };
            if !e.waits[i] || p.optimizer() || upload {
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
        out.touched_ns += scale_pieces(g, e, &host, launch * segments[k]);
    }
    // No launch of its own waits for the launch queue any more.
    for (i, p) in g.pieces.iter().enumerate() {
        if matches!(p.kind, PieceKind::Queued(_)) && p.span.is_some() && !p.optimizer() {
            out.touched_ns += e.host(g, i);
            e.waits[i] = false;
            e.set_host(g, i, 0);
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
