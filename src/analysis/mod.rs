//! From a classified trace to what every report shows: steps and the window, the bucket table,
//! the time partition, torch.compile signals, top kernels and the findings of the detectors.
//! Plain `Serialize` data; reporters render it.

pub mod attribution;
pub mod compile;
pub mod compile_log;
pub mod efficiency;
pub mod hardware;
pub mod links;
pub mod partition;
pub mod steps;

use crate::classify::{Bucket, Classified, RuleSet};
use crate::detect::{self, Finding};
use crate::model::{InputMeta, NameId, Trace, Vendor};
use compile::{CompileDetail, CompileSummary};
use links::Links;
use partition::{DeviceActivities, HostTimeline, Partition, PartitionRow};
use rustc_hash::FxHashMap as HashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use steps::{StepRange, StepWindow, Steps};

/// Options that change what is computed (not how it is shown).
#[derive(Clone, Debug)]
pub struct AnalysisOptions {
    /// How many rows `top_kernels` keeps.
    pub top: usize,
    /// Analyze only these steps (`--steps A..B`).
    pub steps: Option<StepRange>,
    /// Leave the first step out (`--skip-warmup`).
    pub skip_warmup: bool,
    /// Host gaps shorter than this between profiled host events still count as dispatching.
    pub dispatch_threshold_ns: i64,
    /// Attribute GPU time to ops, modules and source lines (op-aware buckets, efficiency).
    pub attribution: bool,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            top: 20,
            steps: None,
            skip_warmup: false,
            dispatch_threshold_ns: 50_000,
            attribution: true,
        }
    }
}

/// Mean, population standard deviation and coefficient of variation of step times.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct StepStats {
    pub mean: f64,
    pub std: f64,
    pub cv_pct: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Sum over devices of each device's analysis window (FEED.md "Window").
    pub window_ns: i64,
    /// Number of `ProfilerStep#N` ranges analyzed (0 when the trace has none).
    pub steps: usize,
    /// Step time statistics, warm-up step excluded; null without steps.
    pub step_ns: Option<StepStats>,
    /// Union of GPU activity inside the window, summed over devices.
    pub gpu_busy_ns: i64,
    /// Sum of the analyzed GPU activity durations (overlaps counted in full).
    pub kernel_ns: i64,
    /// Share of `kernel_ns` that no rule matched.
    pub unclassified_pct: f64,
    /// How buckets were decided: `ops` (the launching op where `rules/ops.toml` says, else the
    /// kernel name) or `kernels` (names only: inputs without ops, such as rocprof's).
    pub bucket_view: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct BucketRow {
    pub bucket: Bucket,
    pub kernel_ns: i64,
    pub pct: f64,
    pub launches: u64,
    pub distinct_kernels: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct KernelRow {
    pub name: String,
    pub bucket: Bucket,
    pub family: String,
    pub library: String,
    pub rule_id: Option<String>,
    pub launches: u64,
    pub total_ns: i64,
    pub pct: f64,
}

/// One analyzed step: its window and time partition (summed over the input's devices).
#[derive(Clone, Debug, Serialize)]
pub struct StepRow {
    pub rank: Option<u32>,
    pub step: u64,
    pub start_ns: i64,
    pub dur_ns: i64,
    pub gpu_busy_ns: i64,
    pub time_partition: Vec<PartitionRow>,
}

/// Everything the reports need.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub inputs: Vec<InputMeta>,
    pub summary: Summary,
    pub buckets: Vec<BucketRow>,
    pub time_partition: Vec<PartitionRow>,
    pub top_kernels: Vec<KernelRow>,
    pub compile: CompileSummary,
    pub findings: Vec<Finding>,
    pub step_breakdown: Vec<StepRow>,
    /// Number of analyzed GPU activities and of distinct activity names.
    pub activities: u64,
    pub distinct_kernels: u64,
    /// Whether the step durations include a warm-up step 0 (see `warmup_in_window`).
    pub warmup_in_window: bool,
    /// Whether cpu_ops carry `Input Dims` (record_shapes=True), which op-level detectors need.
    pub has_op_shapes: bool,
    /// Recommendations and ladder status (filled by [`crate::recommend::plan`]).
    pub plan: crate::recommend::Plan,
    /// Each rank's own view, when the inputs hold several ranks.
    pub ranks: Vec<RankView>,
    /// GPU time by launching op (complete: the `self_ns` add up to `summary.kernel_ns`).
    pub ops: Vec<attribution::OpRow>,
    /// GEMM and composite ops per input shape, with their efficiency.
    pub op_shapes: Vec<attribution::ShapeRow>,
    /// GPU time by `nn.Module` and by user source line (traces recorded with `with_stack`).
    pub modules: Vec<attribution::FrameRow>,
    pub sources: Vec<attribution::FrameRow>,
    /// Hardware-counter metrics per kernel (rocprof-compute workloads; empty otherwise).
    pub kernel_counters: Vec<hardware::KernelCounters>,
    /// Files of input directories left out because they are not traces.
    pub skipped_files: Vec<crate::model::SkippedFile>,
}

/// One rank's view (the feed's `ranks[]`).
#[derive(Clone, Debug, Serialize)]
pub struct RankView {
    pub rank: u32,
    pub summary: Summary,
    pub buckets: Vec<BucketRow>,
    pub time_partition: Vec<PartitionRow>,
    pub findings: Vec<Finding>,
}

impl Analysis {
    /// The one vendor of all inputs, or unknown when they differ or none is known.
    pub fn vendor(&self) -> Vendor {
        let mut v = self
            .inputs
            .iter()
            .map(|i| i.vendor)
            .filter(|v| *v != Vendor::Unknown);
        match v.next() {
            Some(first) if v.all(|x| x == first) => first,
            _ => Vendor::Unknown,
        }
    }
    /// (input, device) pairs with activity.
    pub fn device_count(&self) -> usize {
        self.inputs.iter().map(|i| i.devices.len()).sum()
    }
    /// A partition category's row.
    pub fn partition_ns(&self, category: &str) -> i64 {
        self.time_partition
            .iter()
            .find(|r| r.category == category)
            .map_or(0, |r| r.ns)
    }
    pub fn bucket(&self, b: Bucket) -> &BucketRow {
        self.buckets
            .iter()
            .find(|r| r.bucket == b)
            .expect("every bucket has a row")
    }
}

pub fn pct(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        0.0
    } else {
        // Rounded to 1e-4 so reports do not depend on float summation order.
        (part as f64 * 100.0 / whole as f64 * 1e4).round() / 1e4
    }
}

/// Everything detectors may read: the trace, its classification, the links between host and
/// GPU, the steps, and the aggregate numbers.
pub struct Context<'a> {
    pub trace: &'a Trace,
    pub rules: &'a RuleSet,
    pub classified: Classified,
    /// Per activity: its bucket, the launching op's where an op rule decides (`rules/ops.toml`).
    pub activity_buckets: Vec<Bucket>,
    pub links: Links,
    pub steps: Steps,
    /// Per activity: part of the analysis (all, unless steps were selected).
    pub in_scope: Vec<bool>,
    pub summary: Summary,
    pub buckets: Vec<BucketRow>,
    pub partition: Partition,
    pub window_ns: i64,
    pub compile: CompileSummary,
    pub compile_detail: CompileDetail,
    pub step_rows: Vec<StepRow>,
    /// Analyzed step durations (slowest rank per step number), in step order.
    pub step_durations: Vec<(u64, i64)>,
    pub warmup_in_window: bool,
    pub kernel_counters: Vec<hardware::KernelCounters>,
    /// GPU time by launching op, with GEMM efficiency.
    pub ops: Vec<attribution::OpRow>,
    pub opts: &'a AnalysisOptions,
}

impl Context<'_> {
    pub fn bucket_of(&self, a: usize) -> Bucket {
        self.activity_buckets[a]
    }
    pub fn name(&self, id: NameId) -> &str {
        self.trace.names.get(id)
    }
}

/// Activities that start more than 1 µs before the previous one on their (device, stream)
/// ends, per input: (count, largest overlap). A CUDA/HIP stream runs one thing at a time, so
/// these are clock skew or corruption; real traces have none or one. Only Kineto traces name
/// streams (rocprof's queues may run dispatches side by side), and graph replays are left out
/// (their branches may run in parallel on the stream that launched them).
fn stream_overlaps(trace: &Trace, links: &Links) -> BTreeMap<u32, (u64, i64)> {
    const TOLERANCE_NS: i64 = 1_000;
    let acts = &trace.activities;
    let graph_launch = trace.names.per_name(links::is_graph_launch);
    let mut streams: HashMap<(u32, u32, u32), Vec<u32>> = HashMap::default();
    for a in 0..acts.len() {
        if trace.inputs[acts.input[a] as usize].format != crate::model::Format::Kineto
            || links.launch[a].is_some_and(|h| graph_launch[trace.host.name[h as usize].index()])
        {
            continue;
        }
        streams
            .entry((acts.input[a], acts.device[a], acts.stream[a]))
            .or_default()
            .push(a as u32);
    }
    let mut out: BTreeMap<u32, (u64, i64)> = BTreeMap::new();
    for ((input, ..), mut list) in streams {
        list.sort_unstable_by_key(|&a| (acts.ts_ns[a as usize], a));
        let mut end = i64::MIN;
        for a in list.into_iter().map(|a| a as usize) {
            let overlap = end.saturating_sub(acts.ts_ns[a]);
            if overlap > TOLERANCE_NS {
                let e = out.entry(input).or_default();
                e.0 += 1;
                e.1 = e.1.max(overlap);
            }
            end = end.max(acts.ts_ns[a].saturating_add(acts.dur_ns[a]));
        }
    }
    out
}

/// Classifies, aggregates and runs the detectors.
pub fn analyze(trace: &Trace, rules: &RuleSet, opts: &AnalysisOptions) -> Analysis {
    let classified = rules.classify_trace(trace);
    let links = Links::build(trace);
    // Independent indexes over the host events, built side by side.
    let (op_index, (steps, timelines)) = rayon::join(
        || {
            if opts.attribution {
                attribution::OpIndex::build(trace, &links)
            } else {
                attribution::OpIndex::empty(trace)
            }
        },
        || {
            rayon::join(
                || Steps::find(trace, &links),
                || HostTimeline::build_all(trace, opts.dispatch_threshold_ns),
            )
        },
    );
    let mut steps = steps;
    let (activity_buckets, op_view) =
        attribution::activity_buckets(trace, &op_index, rules, &classified);
    let mut selecting = steps.select(opts.steps, opts.skip_warmup);
    // A cut trace's last steps lack their GPU work: leave them out, and say so.
    let unfinished = steps.drop_unfinished(trace, &links);
    let overlaps = stream_overlaps(trace, &links);
    selecting |= !unfinished.is_empty();
    let acts = &trace.activities;
    // Per input: the window spanned by its kept steps, or None without steps; and the host's
    // view of it, from the first kept step's CPU start (a GPU-bound step's window starts after
    // its CPU range: compile and recompile events of that range are still the step's).
    let step_span: Vec<Option<(i64, i64)>> = (0..trace.inputs.len())
        .map(|i| {
            let kept: Vec<&StepWindow> = steps.kept(i).map(|(_, s)| s).collect();
            (!kept.is_empty()).then(|| {
                (
                    kept.iter().map(|s| s.start_ns).min().unwrap_or(0),
                    kept.iter().map(|s| s.end_ns).max().unwrap_or(0),
                )
            })
        })
        .collect();
    let host_span: Vec<Option<(i64, i64)>> = (0..trace.inputs.len())
        .map(|i| {
            let first = steps.kept(i).map(|(_, s)| s.cpu_start_ns).min()?;
            Some((first, step_span[i]?.1))
        })
        .collect();
    // With a selection: the activities launched in kept steps, and those launched in no step
    // (before the profiler's window) that run inside the kept steps' window, so a selection
    // that keeps every step gives the same time partition as none.
    let in_scope: Vec<bool> = (0..acts.len())
        .map(|a| {
            let input = acts.input[a] as usize;
            !selecting
                || match steps.of_activity[a] {
                    Some(s) => steps.selected[input][s as usize],
                    None => step_span[input]
                        .is_some_and(|(w0, w1)| acts.ts_ns[a] < w1 && acts.end_ns(a) > w0),
                }
        })
        .collect();

    // Per distinct name: launches and time; per (name, bucket) the same, since the op that
    // launched a kernel can put one name in several buckets.
    let mut per_name: HashMap<NameId, (u64, i64)> = HashMap::default();
    let mut per_name_bucket: BTreeMap<(Bucket, NameId), (u64, i64)> = BTreeMap::new();
    let mut kernel_ns = 0i64;
    let mut unclassified_ns = 0i64;
    for a in (0..acts.len()).filter(|&a| in_scope[a]) {
        let e = per_name.entry(acts.name[a]).or_default();
        // Saturating: a corrupt trace with absurd durations must not overflow.
        e.0 += 1;
        e.1 = e.1.saturating_add(acts.dur_ns[a]);
        let e = per_name_bucket
            .entry((activity_buckets[a], acts.name[a]))
            .or_default();
        e.0 += 1;
        e.1 = e.1.saturating_add(acts.dur_ns[a]);
        kernel_ns = kernel_ns.saturating_add(acts.dur_ns[a]);
    }
    let mut by_bucket: BTreeMap<Bucket, (i64, u64, u64)> =
        Bucket::ALL.iter().map(|&b| (b, (0, 0, 0))).collect();
    for (&(bucket, _), &(launches, ns)) in &per_name_bucket {
        let e = by_bucket.entry(bucket).or_default();
        e.0 = e.0.saturating_add(ns);
        e.1 += launches;
        e.2 += 1;
    }
    for (&name, &(_, ns)) in &per_name {
        if classified.is_unclassified(name) {
            unclassified_ns = unclassified_ns.saturating_add(ns);
        }
    }
    let mut buckets: Vec<BucketRow> = by_bucket
        .into_iter()
        .map(|(bucket, (ns, launches, distinct))| BucketRow {
            bucket,
            kernel_ns: ns,
            pct: pct(ns, kernel_ns),
            launches,
            distinct_kernels: distinct,
        })
        .collect();
    buckets.sort_by(|a, b| {
        b.kernel_ns
            .cmp(&a.kernel_ns)
            .then(a.bucket.as_str().cmp(b.bucket.as_str()))
    });

    // One row per (name, bucket): the op that launched a kernel can put one name in two
    // buckets, and the rows of a bucket then add up to its `buckets` row.
    let mut kernels: Vec<(Bucket, NameId, u64, i64)> = per_name_bucket
        .iter()
        .map(|(&(b, n), &(l, ns))| (b, n, l, ns))
        .collect();
    kernels.sort_by(|a, b| {
        b.3.cmp(&a.3)
            .then_with(|| trace.names.get(a.1).cmp(trace.names.get(b.1)))
            .then_with(|| a.0.as_str().cmp(b.0.as_str()))
    });
    let top_kernels = kernels
        .iter()
        .take(opts.top)
        .map(|&(bucket, n, launches, ns)| {
            let c = classified.get(n);
            KernelRow {
                name: trace.names.get(n).to_string(),
                bucket,
                family: c.family.clone(),
                library: c.library.clone(),
                rule_id: c.rule.map(|r| rules.rules[r].def.id.clone()),
                launches,
                total_ns: ns,
                pct: pct(ns, kernel_ns),
            }
        })
        .collect();

    // Activities per (input, device), the window of each, and the partition; each graph
    // replay's span per device, so the idle time inside it is `graph_gaps`.
    let graph_launch = trace.names.per_name(links::is_graph_launch);
    let mut devices: BTreeMap<(u32, u32), DeviceActivities> = BTreeMap::new();
    let mut replays: BTreeMap<(u32, u32, u32), (i64, i64)> = BTreeMap::new();
    for a in (0..acts.len()).filter(|&a| in_scope[a]) {
        let bucket = partition::bucket_index(activity_buckets[a]);
        let (ts, end) = (acts.ts_ns[a], acts.end_ns(a));
        devices
            .entry((acts.input[a], acts.device[a]))
            .or_default()
            .push(ts, end, bucket);
        if let Some(h) =
            links.launch[a].filter(|&h| graph_launch[trace.host.name[h as usize].index()])
        {
            let span = replays
                .entry((acts.input[a], acts.device[a], h))
                .or_insert((ts, end));
            *span = (span.0.min(ts), span.1.max(end));
        }
    }
    for ((input, device, _), (start, end)) in replays {
        if let Some(dev) = devices.get_mut(&(input, device)) {
            dev.push_graph_span(start, end);
        }
    }
    let mut total = Partition::default();
    let mut window_ns = 0i64;
    let mut busy = 0.0f64;
    let mut host_windows: Vec<(i64, i64)> = host_span
        .iter()
        .map(|s| s.unwrap_or((i64::MAX, i64::MIN)))
        .collect();
    let mut step_parts: Vec<Vec<Partition>> = steps
        .per_input
        .iter()
        .map(|s| vec![Partition::default(); s.len()])
        .collect();
    for (&(input, _device), dev) in devices.iter_mut() {
        dev.sort();
        let (w0, w1) = match step_span[input as usize] {
            Some(span) => span,
            None => (dev.first_start().unwrap_or(0), dev.last_end().unwrap_or(0)),
        };
        let iw = &mut host_windows[input as usize];
        *iw = (iw.0.min(w0), iw.1.max(w1));
        let host = &timelines[input as usize];
        let p = dev.partition(w0, w1, host);
        window_ns = window_ns.saturating_add(w1.saturating_sub(w0).max(0));
        busy += p.busy();
        total.add(&p);
        for (k, s) in steps.kept(input as usize) {
            step_parts[input as usize][k].add(&dev.partition(s.start_ns, s.end_ns, host));
        }
    }
    for w in &mut host_windows {
        if w.0 > w.1 {
            *w = (0, 0);
        }
    }
    // Steps of an input with no GPU activity in scope are all idle: still say why.
    let inputs_with_devices: std::collections::BTreeSet<u32> =
        devices.keys().map(|k| k.0).collect();
    for input in 0..trace.inputs.len() {
        if !inputs_with_devices.contains(&(input as u32)) {
            let empty = DeviceActivities::default();
            for (k, s) in steps.kept(input) {
                step_parts[input][k].add(&empty.partition(s.start_ns, s.end_ns, &timelines[input]));
            }
        }
    }

    let mut step_rows = Vec::new();
    let mut by_number: BTreeMap<u64, i64> = BTreeMap::new();
    for (input, meta) in trace.inputs.iter().enumerate() {
        for (k, s) in steps.kept(input) {
            let p = &step_parts[input][k];
            let e = by_number.entry(s.number).or_insert(0);
            *e = (*e).max(s.dur_ns());
            // Partition of the step summed over the input's devices.
            let ndev = devices
                .keys()
                .filter(|k| k.0 == input as u32)
                .count()
                .max(1) as i64;
            step_rows.push(StepRow {
                rank: meta.rank,
                step: s.number,
                start_ns: s.start_ns,
                dur_ns: s.dur_ns(),
                gpu_busy_ns: p.busy().round() as i64,
                time_partition: partition::rows(p, s.dur_ns().saturating_mul(ndev)),
            });
        }
    }
    let step_durations: Vec<(u64, i64)> = by_number.into_iter().collect();
    let durations: Vec<i64> = step_durations.iter().map(|d| d.1).collect();
    let (step_ns, warmup_in_window) = match steps::step_stats(&durations) {
        Some((s, w)) => (Some(s), w),
        None => (None, false),
    };

    let (compile, compile_detail) = compile::analyze(trace, &links, &steps, &host_windows);
    let summary = Summary {
        window_ns,
        steps: durations.len(),
        step_ns,
        gpu_busy_ns: busy.round() as i64,
        kernel_ns,
        unclassified_pct: pct(unclassified_ns, kernel_ns),
        bucket_view: if op_view { "ops" } else { "kernels" },
    };
    let kernel_counters = hardware::kernel_counters(trace, &classified);
    let (ops, op_shapes) = if opts.attribution {
        attribution::ops(
            trace,
            &op_index,
            &rules.devices,
            &classified,
            &activity_buckets,
            &in_scope,
        )
    } else {
        Default::default()
    };
    drop(op_index);
    let ctx = Context {
        trace,
        rules,
        classified,
        activity_buckets,
        links,
        steps,
        in_scope,
        summary,
        buckets,
        partition: total,
        window_ns,
        compile,
        compile_detail,
        step_rows,
        step_durations,
        warmup_in_window,
        kernel_counters,
        ops,
        opts,
    };
    // The detectors (which read the op view) and the frame views run side by side.
    let (findings, (modules, sources)) = rayon::join(
        || detect::run_all(&ctx),
        || {
            if !opts.attribution {
                return Default::default();
            }
            rayon::join(
                || attribution::frames(trace, &ctx.links, &ctx.in_scope, true),
                || attribution::frames(trace, &ctx.links, &ctx.in_scope, false),
            )
        },
    );
    let mut inputs = trace.inputs.clone();
    for (input, (count, worst)) in &overlaps {
        inputs[*input as usize].warnings.push(format!(
            "{count} GPU activities start before the previous one on their stream ends (by up to {}): clock skew or a corrupt trace; busy time counts their union",
            crate::model::units::fmt_ns(*worst)
        ));
    }
    for (input, numbers) in &unfinished {
        inputs[*input].warnings.push(format!(
            "left out {} step(s) the cut left unfinished (#{}{}): their kernels are missing",
            numbers.len(),
            numbers[0],
            if numbers.len() > 1 {
                format!("..#{}", numbers[numbers.len() - 1])
            } else {
                String::new()
            }
        ));
    }
    Analysis {
        inputs,
        time_partition: partition::rows(&ctx.partition, ctx.window_ns),
        summary: ctx.summary,
        buckets: ctx.buckets,
        top_kernels,
        compile: ctx.compile,
        findings,
        step_breakdown: ctx.step_rows,
        activities: per_name.values().map(|v| v.0).sum(),
        distinct_kernels: per_name.len() as u64,
        warmup_in_window: ctx.warmup_in_window,
        has_op_shapes: trace.host.input_dims.iter().any(|&d| d != NameId::NONE),
        plan: Default::default(),
        ranks: Vec::new(),
        ops: ctx.ops,
        op_shapes,
        modules,
        sources,
        kernel_counters: ctx.kernel_counters,
        skipped_files: trace.skipped.clone(),
    }
}

/// [`analyze`], plus each rank's own view when the inputs hold more than one rank.
pub fn analyze_with_ranks(trace: &Trace, rules: &RuleSet, opts: &AnalysisOptions) -> Analysis {
    use rayon::prelude::*;
    let mut ranks: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (i, input) in trace.inputs.iter().enumerate() {
        if let Some(r) = input.rank {
            ranks.entry(r).or_default().push(i as u32);
        }
    }
    if ranks.len() <= 1 {
        return analyze(trace, rules, opts);
    }
    // The aggregate and each rank's view are independent: compute them in parallel (collect
    // keeps rank order, so the output does not depend on the thread count).
    let (mut all, views) = rayon::join(
        || analyze(trace, rules, opts),
        || {
            ranks
                .into_par_iter()
                .map(|(rank, inputs)| {
                    let a = analyze(&trace.subset(&inputs), rules, opts);
                    RankView {
                        rank,
                        summary: a.summary,
                        buckets: a.buckets,
                        time_partition: a.time_partition,
                        findings: a.findings,
                    }
                })
                .collect::<Vec<RankView>>()
        },
    );
    all.ranks = views;
    all
}
