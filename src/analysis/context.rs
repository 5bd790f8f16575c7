//! The analysis of one trace in two stages: [`prepare`] classifies it and computes every
//! aggregate into the [`Context`] the detectors read; [`Context::finish`] cuts that into the
//! [`Analysis`] and the per-activity [`ActivityTable`].

use crate::analysis::compile::{self, CompileDetail, CompileSummary};
use crate::analysis::kernels::kernel_tables;
use crate::analysis::numbers::pct;
use crate::analysis::ops::{attribution, candidates, frames, mfu, op_index, op_steps};
use crate::analysis::output::{Analysis, Parts, Summary};
use crate::analysis::signals::{
    collective_calls, collectives, counters, memory, parallelism, pipeline,
};
use crate::analysis::table::ActivityTable;
use crate::analysis::time::links::{self, Links};
use crate::analysis::time::partition::{self, HostTimeline, Partition};
use crate::analysis::time::phases;
use crate::analysis::time::regions;
use crate::analysis::time::steps::{self, StepRange, Steps};
use crate::analysis::time::window::{
    activities_in_scope, device_activities, partition_time, phase_buckets, step_loads, step_spans,
};
use crate::classify::{Bucket, Classified, RuleSet};
use crate::model::{InputMeta, NameId, Trace};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

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
    /// Build the region tree (the per-rank views leave it out: the feed shows the job's).
    pub regions: bool,
    /// Take iterations from this annotation (or Python function) instead of `ProfilerStep#N`
    /// (`--iteration-marker`).
    pub iteration_marker: Option<String>,
    /// Analyze only iterations of this phase (`--phase`).
    pub phase: Option<phases::Phase>,
    /// Keep each op and shape's GPU time per step (what `diff` compares; off otherwise, as
    /// it grows with rows × steps).
    pub op_series: bool,
    /// Replay the step with these changes together (`--what-if`), with its critical path.
    pub what_if: Vec<crate::analysis::Transform>,
    /// Replays also run with the profiler's own cost kept: the step as a profile shows it (a
    /// `diff` of two profiles judges the measured change against it).
    pub replay_profiled: bool,
    /// The share of query-key blocks flex attention's block masks keep (`--flex-density`):
    /// not in the trace, so flex attention counts dense (an upper bound) without it.
    pub flex_density: Option<f64>,
    /// Launches in flight at which a launch call blocks on the full launch queue, per vendor
    /// (`rules/replay.toml` `launch_queue_depth`, from the catalog a run loads).
    pub launch_queue_depth: crate::analysis::PerVendor,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            top: 20,
            steps: None,
            skip_warmup: false,
            dispatch_threshold_ns: 50_000,
            attribution: true,
            what_if: Vec::new(),
            replay_profiled: false,
            regions: true,
            iteration_marker: None,
            phase: None,
            op_series: false,
            flex_density: None,
            launch_queue_depth: crate::analysis::ReplayConstants::builtin()
                .launch_queue_depth
                .value,
        }
    }
}

/// Everything detectors may read: the trace, its classification, the links between host and
/// GPU, the steps, the per-activity decisions, and the aggregate numbers so far.
pub struct Context<'a> {
    /// The trace being analyzed.
    pub trace: &'a Trace,
    /// The classification rules it is analyzed with.
    pub rules: &'a RuleSet,
    /// The analysis options.
    pub opts: &'a AnalysisOptions,
    /// Each distinct activity name's class (bucket, family, library).
    pub classified: Classified,
    /// Per activity: its bucket, the launching op's where an op rule decides (`rules/ops.toml`).
    pub activity_buckets: Vec<Bucket>,
    /// Host ↔ GPU links: each activity's launching runtime call and op.
    pub links: Links,
    /// The steps (or iterations) found, per input.
    pub steps: Steps,
    /// Per activity: part of the analysis (all, unless steps were selected).
    pub in_scope: Vec<bool>,
    /// The window's time partition, and the host time blocked in syncs or compiling.
    pub partition: Partition,
    /// What the trace shows of torch.compile beyond the summary (regions, breaks, graphs).
    pub compile_detail: CompileDetail,
    /// Analyzed step durations (slowest rank per step number), in step order.
    pub step_durations: Vec<(u64, i64)>,
    /// Per activity: the host index of its innermost launching op.
    pub op_of: Vec<Option<u32>>,
    /// Per activity: its innermost `nn.Module` frame and user source line (`NameId::NONE`
    /// without one; empty without frames or attribution).
    pub module_of: Vec<NameId>,
    /// Per activity: its innermost user source line (`NameId::NONE` without one).
    pub source_of: Vec<NameId>,
    /// The aggregate numbers, complete: modules, sources, kernel candidates and the eager
    /// modules included.
    pub analysis: Analysis,
    /// How long its stages took.
    pub stages: Stages,
    /// The dependency models the critical path walked, by input: the replays' step model
    /// starts from them rather than building them again.
    pub(crate) path_models: Vec<Option<crate::analysis::path::model::InputModel>>,
}

impl Context<'_> {
    /// The sum over devices of each device's analysis window.
    pub fn window_ns(&self) -> i64 {
        self.analysis.summary.window_ns
    }
    /// The bucket activity `a` counts in.
    pub fn bucket_of(&self, a: usize) -> Bucket {
        self.activity_buckets[a]
    }
    /// The string of an interned name.
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

/// GPU time in scope per rule tag.
fn tagged_ns(
    trace: &Trace,
    classified: &Classified,
    in_scope: &[bool],
) -> BTreeMap<crate::classify::KernelTag, i64> {
    let acts = &trace.activities;
    let mut out = BTreeMap::new();
    for a in (0..acts.len()).filter(|&a| in_scope[a]) {
        if let Some(tag) = classified.get(acts.name[a]).tag {
            *out.entry(tag).or_insert(0) += acts.dur_ns[a];
        }
    }
    out
}

/// The inputs, with what the analysis found wrong in them added to their warnings.
fn inputs_with_warnings(
    trace: &Trace,
    overlaps: &BTreeMap<u32, (u64, i64)>,
    unfinished: &[(usize, Vec<u64>)],
    (steps, marker): (&Steps, Option<&str>),
) -> Vec<InputMeta> {
    let mut inputs = trace.inputs.clone();
    if let Some(m) = marker {
        for (input, meta) in inputs.iter_mut().enumerate() {
            if !steps.are_iterations(input) {
                meta.warnings.push(format!(
                    "--iteration-marker {m:?} matches no annotation or Python frame: no steps or iterations"
                ));
            }
        }
    }
    for (input, (count, worst)) in overlaps {
        inputs[*input as usize].warnings.push(format!(
            "{count} GPU activities start before the previous one on their stream ends (by up to {}): clock skew or a corrupt trace; busy time counts their union",
            crate::model::units::fmt_ns(*worst)
        ));
    }
    for (input, numbers) in unfinished {
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
    inputs
}

/// torch.compile's summary, with the share of GPU time in Inductor's kernels.
fn compile_summary(
    facts: &compile::CompileFacts,
    tagged_ns: &BTreeMap<crate::classify::KernelTag, i64>,
    kernel_ns: i64,
) -> (CompileSummary, CompileDetail) {
    let (mut compile, detail) = compile::summarize(facts);
    let inductor = tagged_ns.get(&crate::classify::KernelTag::Inductor);
    compile.inductor_kernel_pct = pct(inductor.copied().unwrap_or(0), kernel_ns);
    (compile, detail)
}

/// Independent indexes over the host events, built side by side: the ops, the steps (or
/// iterations), the host timelines.
fn host_indexes(
    trace: &Trace,
    links: &Links,
    opts: &AnalysisOptions,
) -> (op_index::OpIndex, (Steps, Vec<HostTimeline>)) {
    rayon::join(
        || {
            if opts.attribution {
                op_index::OpIndex::build(trace, links)
            } else {
                op_index::OpIndex::empty(trace)
            }
        },
        || {
            rayon::join(
                || {
                    let marker = opts.iteration_marker.as_deref();
                    Steps::find(trace, links, marker, opts.dispatch_threshold_ns)
                },
                || HostTimeline::build_all(trace, opts.dispatch_threshold_ns),
            )
        },
    )
}

/// Three passes over the host events that read what is built before them and not each other,
/// side by side: the regions, torch.compile's facts, the ops' attribution.
fn host_passes(
    inp: &regions::Inputs,
    host_windows: &[(i64, i64)],
    op_index: &op_index::OpIndex,
    (rules, classified, opts): (&RuleSet, &Classified, &AnalysisOptions),
) -> (
    Option<Vec<regions::RegionRow>>,
    compile::CompileFacts,
    attribution::OpTables,
) {
    let (regions, (facts, ops)) = rayon::join(
        || opts.regions.then(|| regions::analyze(inp)),
        || {
            rayon::join(
                || compile::facts(inp.trace, inp.links, inp.steps, host_windows),
                || {
                    if !opts.attribution {
                        return Default::default();
                    }
                    attribution::ops(
                        inp.trace,
                        op_index,
                        &rules.devices,
                        classified,
                        inp.activity_buckets,
                        inp.in_scope,
                        opts.flex_density,
                    )
                },
            )
        },
    );
    (regions, facts, ops)
}

/// How long each stage of an analysis took, in order (wall time; for `--timings`, never in a
/// report): what a run's time is spent on, and what waits for what on many cores.
#[derive(Clone, Debug, Default)]
pub struct Stages {
    /// Each stage's name and time, in the order they first ran.
    pub list: Vec<(&'static str, std::time::Duration)>,
    last: Option<std::time::Instant>,
}

impl Stages {
    /// A clock whose first stage starts now.
    pub fn start() -> Stages {
        Stages {
            list: Vec::new(),
            last: Some(std::time::Instant::now()),
        }
    }

    /// Ends stage `name` now: the time since the previous stage ended (or the clock started).
    pub fn lap(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.add(name, now - self.last.unwrap_or(now));
        self.last = Some(now);
    }

    /// Adds `d` to stage `name` (a new stage goes last).
    pub fn add(&mut self, name: &'static str, d: std::time::Duration) {
        match self.list.iter_mut().find(|s| s.0 == name) {
            Some(s) => s.1 += d,
            None => self.list.push((name, d)),
        }
    }

    /// Adds every stage of `other` (several ranks' analyses: their sum).
    pub fn add_all(&mut self, other: &Stages) {
        for &(name, d) in &other.list {
            self.add(name, d);
        }
    }
}

/// Classifies the trace and computes every aggregate: the [`Context`] the detectors read, from
/// which [`Context::finish`] cuts the [`Analysis`] and the [`ActivityTable`].
pub fn prepare<'a>(trace: &'a Trace, rules: &'a RuleSet, opts: &'a AnalysisOptions) -> Context<'a> {
    let mut clock = Stages::start();
    let classified = rules.classify_trace(trace);
    let links = Links::build(trace);
    clock.lap("classify+links");
    let (op_index, (mut steps, timelines)) = host_indexes(trace, &links, opts);
    clock.lap("ops+steps+timelines");
    let (activity_buckets, op_view) =
        op_index::activity_buckets(trace, &op_index, rules, &classified);
    let mut selecting = steps.select(opts.steps, opts.skip_warmup, opts.phase);
    // A cut trace's last steps lack their GPU work: leave them out, and say so.
    let unfinished = steps.drop_unfinished(trace, &links);
    let overlaps = stream_overlaps(trace, &links);
    selecting |= !unfinished.is_empty();
    let (step_span, host_span) = step_spans(trace, &steps);
    let in_scope = activities_in_scope(trace, &steps, selecting, &step_span);
    clock.lap("buckets+scope");
    let tables = kernel_tables(
        trace,
        rules,
        &classified,
        &activity_buckets,
        &in_scope,
        opts.top,
    );
    let devices = device_activities(trace, &links, &activity_buckets, &in_scope);
    let mut parts = partition_time(trace, &steps, &devices, &timelines, &step_span, &host_span);
    phase_buckets(
        trace,
        &steps,
        &activity_buckets,
        &in_scope,
        &mut parts.phases,
    );
    clock.lap("kernels+partition");
    let region_inputs = regions::Inputs {
        trace,
        links: &links,
        steps: &steps,
        activity_buckets: &activity_buckets,
        in_scope: &in_scope,
        devices: &devices,
        timelines: &timelines,
    };
    let (regions, compile_facts, op_tables) = host_passes(
        &region_inputs,
        &parts.host_windows,
        &op_index,
        (rules, &classified, opts),
    );
    clock.lap("regions+compile+attribution");
    drop(devices);
    let durations: Vec<i64> = parts.step_durations.iter().map(|d| d.1).collect();
    let work: Vec<i64> = parts.step_work.iter().map(|d| d.1).collect();
    let (step_ns, warmup_in_window) =
        steps::step_stats(&durations, Some(&work)).map_or((None, false), |(s, w)| (Some(s), w));
    let tagged_ns = tagged_ns(trace, &classified, &in_scope);
    let (compile, compile_detail) = compile_summary(&compile_facts, &tagged_ns, tables.kernel_ns);
    let mut summary = Summary {
        window_ns: parts.window_ns,
        steps: durations.len(),
        step_ns,
        gpu_busy_ns: parts.busy_ns,
        kernel_ns: tables.kernel_ns,
        unclassified_pct: pct(tables.unclassified_ns, tables.kernel_ns),
        bucket_view: if op_view { "ops" } else { "kernels" }.to_string(),
        ..Default::default()
    };
    let marker = steps.marker.iter().flatten().next().cloned();
    summary.set_iterations(&parts.phases, marker.as_ref());
    let op_of = op_index.owner_ops();
    drop(op_index);
    let steps_per_input: Vec<usize> = (0..trace.inputs.len())
        .map(|i| steps.kept(i).count())
        .collect();
    summary.mfu = mfu::mfu_of(
        &trace.inputs,
        &rules.devices,
        (&op_tables.flops, &steps_per_input),
        (summary.step_ns.as_ref().map(|s| s.mean), summary.window_ns),
        &tables.buckets,
        &parts.phases,
    );
    let analysis = Analysis {
        inputs: inputs_with_warnings(
            trace,
            &overlaps,
            &unfinished,
            (&steps, opts.iteration_marker.as_deref()),
        ),
        time_partition: partition::rows(&parts.total, parts.window_ns),
        summary,
        buckets: tables.buckets,
        top_kernels: tables.top_kernels,
        compile,
        step_breakdown: parts.step_rows,
        activities: tables.activities,
        distinct_kernels: tables.distinct_kernels,
        warmup_in_window,
        has_op_shapes: trace.host.has_input_dims(),
        ops: attribution::op_rows(&op_tables.ops),
        op_shapes: attribution::shape_rows(&op_tables.shapes),
        memory_shapes: attribution::memory_shape_rows(&op_tables.memory_shapes),
        modules: Vec::new(),
        sources: Vec::new(),
        kernel_counters: Vec::new(),
        memory: memory::analyze(trace, &steps, &rules.devices),
        regions: regions.unwrap_or_default(),
        phases: phases::phase_rows(&parts.phases),
        tagged_ns: tagged_ns.clone(),
        skipped_files: trace.skipped.clone(),
        parts: Parts {
            kernels: tables.kernels,
            partition: parts.total,
            step_durations: parts.step_durations.clone(),
            step_work: parts.step_work.clone(),
            step_numbers: steps.numbers(),
            steps_per_input,
            compile: compile_facts,
            ops: op_tables.ops,
            shapes: op_tables.shapes,
            memory_shapes: op_tables.memory_shapes,
            flops: op_tables.flops,
            tagged_ns,
            phases: parts.phases,
            iteration_marker: marker,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut ctx = Context {
        trace,
        rules,
        opts,
        classified,
        activity_buckets,
        links,
        steps,
        in_scope,
        partition: parts.total,
        compile_detail,
        step_durations: parts.step_durations,
        op_of,
        module_of: Vec::new(),
        source_of: Vec::new(),
        analysis,
        stages: Stages::default(),
        path_models: Vec::new(),
    };
    complete(&mut ctx, &mut clock);
    ctx.stages = clock;
    ctx
}

/// The passes that read the context itself, each timed on `clock`: the collectives and
/// counters, the critical path, the frames and kernel candidates.
fn complete(ctx: &mut Context, clock: &mut Stages) {
    clock.lap("summary");
    add_collectives_and_counters(ctx);
    clock.lap("collectives");
    add_critical_path(ctx);
    clock.lap("critical path");
    ctx.add_frames_and_candidates();
    clock.lap("frames+candidates");
}

/// What bounds each step: the critical path, and every item on it for merging ranks. (Not run
/// beside the ops' attribution: the two at once peaked 45 MB higher on a 2 GB trace.)
fn add_critical_path(ctx: &mut Context) {
    let inputs = (
        &ctx.links,
        &ctx.steps,
        &ctx.activity_buckets[..],
        &ctx.in_scope[..],
    );
    let window_ns = ctx.analysis.summary.window_ns;
    let (path, items, comms, models) =
        crate::analysis::path::analyze(ctx.trace, inputs, window_ns, ctx.opts);
    ctx.path_models = models;
    ctx.analysis.critical_path = path;
    ctx.analysis.parts.path_items = items;
    ctx.analysis.parts.path_comms = comms;
}

/// The collectives and hardware-counter views, and what merging ranks needs of the context
/// beyond the analysis.
fn add_collectives_and_counters(ctx: &mut Context) {
    let counters = counters::counter_sums(ctx.trace, &ctx.classified);
    ctx.analysis.kernel_counters = counters::kernel_counters(&counters, &ctx.trace.inputs);
    ctx.analysis.parts.counters = counters;
    let calls = collective_calls::calls(&collective_calls::CallSources {
        trace: ctx.trace,
        links: &ctx.links,
        steps: &ctx.steps,
        in_scope: &ctx.in_scope,
        activity_buckets: &ctx.activity_buckets,
        op_of: &ctx.op_of,
    });
    let has_steps: Vec<bool> = ctx.steps.per_input.iter().map(|s| !s.is_empty()).collect();
    ctx.analysis.collectives = collectives::analyze(
        &calls,
        &collectives::CallInputs {
            inputs: &ctx.trace.inputs,
            has_steps: &has_steps,
            devices: &ctx.rules.devices,
        },
    );
    ctx.analysis.parallelism = parallelism::recognize(
        &parallelism::Sources {
            trace: ctx.trace,
            links: &ctx.links,
            in_scope: &ctx.in_scope,
            activity_buckets: &ctx.activity_buckets,
        },
        &calls,
    );
    let inputs = &ctx.trace.inputs;
    let pipeline_inputs: Vec<u32> = (0..inputs.len() as u32)
        .filter(|&i| {
            let rank = inputs[i as usize].rank.unwrap_or(i);
            ctx.analysis
                .parallelism
                .iter()
                .any(|r| r.kind == parallelism::ParallelKind::Pipeline && r.ranks.contains(&rank))
        })
        .collect();
    ctx.analysis.pipeline = pipeline::measure(
        &pipeline::Sources {
            trace: ctx.trace,
            links: &ctx.links,
            steps: &ctx.steps,
            in_scope: &ctx.in_scope,
            activity_buckets: &ctx.activity_buckets,
            calls: &calls,
            memory: &ctx.analysis.memory,
        },
        &pipeline_inputs,
    );
    let parts = &mut ctx.analysis.parts;
    parts.calls = calls;
    parts.has_steps = has_steps;
    parts.loads = step_loads(ctx.trace, &ctx.steps, &ctx.activity_buckets, &ctx.in_scope);
    parts.memory_inputs = ctx.analysis.memory.iter().map(|m| m.input).collect();
}

impl Context<'_> {
    /// The frame views (modules and sources: they read only the trace and the links), and what
    /// reads them or the op rows: the eager modules, the kernel candidates, each op's time per
    /// step. After it the analysis is complete.
    fn add_frames_and_candidates(&mut self) {
        let (modules, sources) = if self.opts.attribution {
            rayon::join(
                || {
                    let compiled =
                        compile::compiled_activities(self.trace, &self.links, &self.classified);
                    frames::frames(self.trace, &self.links, &self.in_scope, true, &compiled)
                },
                || frames::frames(self.trace, &self.links, &self.in_scope, false, &[]),
            )
        } else {
            Default::default()
        };
        let analysis = &mut self.analysis;
        let compiled = analysis.compile.compiled || analysis.compile.inductor_kernel_pct > 0.0;
        analysis.compile.eager_modules =
            compile::eager_modules(&modules.roots, analysis.summary.kernel_ns, compiled);
        analysis.parts.roots = modules.roots;
        if self.opts.attribution {
            let totals = candidates::totals(
                self.trace,
                &self.op_of,
                &sources.of_activity,
                &self.in_scope,
            );
            // Different host args can spell one key (two launcher ops of one Triton file).
            let totals = candidates::merge(&[&totals]);
            let rows = candidates::rows(&totals, &analysis.rating(), &self.rules.devices);
            analysis.kernel_candidates = rows;
            analysis.parts.candidates = totals;
            if self.opts.op_series {
                analysis.parts.op_steps = op_steps::totals(
                    self.trace,
                    &self.steps,
                    &op_steps::Annotations {
                        op_of: &self.op_of,
                        modules: &modules.of_activity,
                        sources: &sources.of_activity,
                        buckets: &self.activity_buckets,
                        in_scope: &self.in_scope,
                    },
                );
            }
        }
        analysis.modules = modules.rows;
        analysis.sources = sources.rows;
        self.module_of = modules.of_activity;
        self.source_of = sources.of_activity;
    }

    /// The analysis and the annotated activity table; what only the detectors needed is dropped.
    pub fn finish(self) -> (Analysis, ActivityTable) {
        let analysis = self.analysis;
        let table = ActivityTable {
            bucket: self.activity_buckets,
            classified: self.classified,
            rule_ids: self.rules.rules.iter().map(|r| r.def.id.clone()).collect(),
            step: self.steps.of_activity,
            step_numbers: self
                .steps
                .per_input
                .iter()
                .map(|s| s.iter().map(|w| w.number).collect())
                .collect(),
            op: self.op_of,
            module: self.module_of,
            source: self.source_of,
            in_window: self.in_scope,
        };
        (analysis, table)
    }
}
