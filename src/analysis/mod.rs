//! From a classified trace to what every report shows: steps and the window, the bucket table,
//! the time partition, torch.compile signals, top kernels, attribution to ops, modules and
//! source lines. [`prepare`] builds the [`Context`] the detectors read; [`Context::finish`]
//! cuts it into the [`Analysis`] (plain `Serialize` data) and the per-activity
//! [`ActivityTable`].

pub mod attribution;
pub mod bytes_moved;
pub mod candidates;
pub mod collectives;
pub mod compile;
pub mod diff;
pub mod efficiency;
pub mod hardware;
pub mod iterations;
pub mod links;
pub mod memory;
pub mod merge;
pub mod mfu;
pub mod op_match;
pub mod op_steps;
pub mod partition;
pub mod regions;
pub mod stats;
pub mod steps;
pub mod table;

use crate::classify::{Bucket, Classified, RuleSet};
use crate::model::{InputMeta, NameId, Trace, Vendor};
use compile::{CompileDetail, CompileSummary};
use links::Links;
use partition::{Category, DeviceActivities, HostTimeline, Partition, PartitionRow};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use steps::{StepRange, StepWindow, Steps};
pub use table::ActivityTable;

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
    pub phase: Option<iterations::Phase>,
    /// Keep each op and shape's GPU time per step (what `diff` compares; off otherwise, as
    /// it grows with rows × steps).
    pub op_series: bool,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            top: 20,
            steps: None,
            skip_warmup: false,
            dispatch_threshold_ns: 50_000,
            attribution: true,
            regions: true,
            iteration_marker: None,
            phase: None,
            op_series: false,
        }
    }
}

/// Mean, population standard deviation and coefficient of variation of step times.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StepStats {
    pub mean: f64,
    pub std: f64,
    pub cv_pct: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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
    pub bucket_view: String,
    /// Model FLOP utilization (FEED.md `summary.mfu_pct` and its companions).
    #[serde(flatten)]
    pub mfu: mfu::Mfu,
    /// Iterations analyzed, excluded ones included, in traces whose steps come from an
    /// iteration marker rather than `ProfilerStep#N` (then `steps` is 0); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<usize>,
    /// The marker (its numbers as `#`) and where it comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_marker: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_source: Option<iterations::MarkerSource>,
}

impl Summary {
    /// Steps analyzed, or iterations where the trace has those instead (per-step figures of
    /// serving traces are per iteration).
    pub fn step_count(&self) -> usize {
        if self.steps > 0 {
            self.steps
        } else {
            self.iterations.unwrap_or(0)
        }
    }

    /// Fills the iteration fields from the phases' totals and the marker.
    pub fn set_iterations(
        &mut self,
        phases: &[iterations::PhaseTotals],
        marker: Option<&iterations::IterationMarker>,
    ) {
        let Some(m) = marker else { return };
        let numbers: std::collections::BTreeSet<u64> = phases
            .iter()
            .flat_map(|t| t.durations.keys().chain(t.excluded.keys()).copied())
            .collect();
        self.iterations = Some(numbers.len());
        self.iteration_marker = Some(m.marker.clone());
        self.iteration_source = Some(m.source);
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BucketRow {
    pub bucket: Bucket,
    pub kernel_ns: i64,
    pub pct: f64,
    pub launches: u64,
    pub distinct_kernels: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
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
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepRow {
    pub rank: Option<u32>,
    pub step: u64,
    pub start_ns: i64,
    pub dur_ns: i64,
    pub gpu_busy_ns: i64,
    pub time_partition: Vec<PartitionRow>,
    /// Iterations only: their phase, and the time their stream sat queued behind work the trace
    /// does not show (inside the window, not part of `dur_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<iterations::Phase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_ns: Option<i64>,
    /// Iterations only: why it is left out of its phase's steady state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<iterations::Exclusion>,
}

/// Everything the reports need.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Analysis {
    pub inputs: Vec<InputMeta>,
    pub summary: Summary,
    pub buckets: Vec<BucketRow>,
    pub time_partition: Vec<PartitionRow>,
    pub top_kernels: Vec<KernelRow>,
    pub compile: CompileSummary,
    pub step_breakdown: Vec<StepRow>,
    /// Number of analyzed GPU activities and of distinct activity names.
    pub activities: u64,
    pub distinct_kernels: u64,
    /// Whether the step durations include a warm-up step 0 (see `warmup_in_window`).
    pub warmup_in_window: bool,
    /// Whether cpu_ops carry `Input Dims` (record_shapes=True), which op-level detectors need.
    pub has_op_shapes: bool,
    /// GPU time by launching op (complete: the `self_ns` add up to `summary.kernel_ns`).
    pub ops: Vec<attribution::OpRow>,
    /// GEMM and composite ops per input shape, with their efficiency.
    pub op_shapes: Vec<attribution::ShapeRow>,
    /// Memory-bound ops per input shape, with their bandwidth.
    pub memory_shapes: Vec<attribution::MemoryShapeRow>,
    /// GPU time by `nn.Module` and by user source line (traces recorded with `with_stack`).
    pub modules: Vec<attribution::FrameRow>,
    pub sources: Vec<attribution::FrameRow>,
    /// Hardware-counter metrics per kernel (rocprof-compute workloads; empty otherwise).
    pub kernel_counters: Vec<hardware::KernelCounters>,
    /// Per collective type × message size × process group: time, bandwidth, wait and transfer.
    pub collectives: collectives::Collectives,
    /// GPU memory per device (traces with `[memory]` events).
    pub memory: Vec<memory::DeviceMemory>,
    /// The annotated ranges and PyTorch's phases as a tree (pre-order), merged by path.
    pub regions: Vec<regions::RegionRow>,
    /// Iterations by phase (traces whose steps come from an iteration marker).
    pub phases: Vec<iterations::PhaseRow>,
    /// The kernels whose tuning could win back the most time (FEED.md `kernel_candidates[]`).
    pub kernel_candidates: Vec<candidates::Candidate>,
    /// GPU time in scope per rule tag (what recommendations gate on; not in the feed).
    #[serde(skip)]
    pub tagged_ns: BTreeMap<crate::classify::KernelTag, i64>,
    /// Files of input directories left out because they are not traces.
    pub skipped_files: Vec<crate::model::SkippedFile>,
    /// What merging this analysis with other ranks' needs beyond the above (not in the feed).
    #[serde(skip)]
    pub parts: merge::Parts,
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
    pub fn partition_ns(&self, category: Category) -> i64 {
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
/// GPU, the steps, the per-activity decisions, and the aggregate numbers so far.
pub struct Context<'a> {
    pub trace: &'a Trace,
    pub rules: &'a RuleSet,
    pub opts: &'a AnalysisOptions,
    pub classified: Classified,
    /// Per activity: its bucket, the launching op's where an op rule decides (`rules/ops.toml`).
    pub activity_buckets: Vec<Bucket>,
    pub links: Links,
    pub steps: Steps,
    /// Per activity: part of the analysis (all, unless steps were selected).
    pub in_scope: Vec<bool>,
    pub partition: Partition,
    pub compile_detail: CompileDetail,
    /// Analyzed step durations (slowest rank per step number), in step order.
    pub step_durations: Vec<(u64, i64)>,
    /// Per activity: the host index of its innermost launching op.
    pub op_of: Vec<Option<u32>>,
    /// The aggregate numbers (modules and sources are added by [`Context::finish`]).
    pub analysis: Analysis,
}

impl Context<'_> {
    /// The sum over devices of each device's analysis window.
    pub fn window_ns(&self) -> i64 {
        self.analysis.summary.window_ns
    }
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

/// Per input: the span of its kept steps (None without steps), and the host's view of it from
/// the first kept step's CPU start (a GPU-bound step's window starts after its CPU range:
/// compile and recompile events of that range are still the step's).
/// Per input, a span of time (start, end) or none.
type Spans = Vec<Option<(i64, i64)>>;

fn step_spans(trace: &Trace, steps: &Steps) -> (Spans, Spans) {
    let step_span: Spans = (0..trace.inputs.len())
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
    let host_span = (0..trace.inputs.len())
        .map(|i| {
            let first = steps.kept(i).map(|(_, s)| s.cpu_start_ns).min()?;
            Some((first, step_span[i]?.1))
        })
        .collect();
    (step_span, host_span)
}

/// With a selection: the activities launched in kept steps, and those launched in no step
/// (before the profiler's window) that run inside the kept steps' window, so a selection that
/// keeps every step gives the same time partition as none.
fn activities_in_scope(
    trace: &Trace,
    steps: &Steps,
    selecting: bool,
    step_span: &[Option<(i64, i64)>],
) -> Vec<bool> {
    let acts = &trace.activities;
    (0..acts.len())
        .map(|a| {
            let input = acts.input[a] as usize;
            !selecting
                || match steps.of_activity[a] {
                    Some(s) => steps.selected[input][s as usize],
                    None => step_span[input]
                        .is_some_and(|(w0, w1)| acts.ts_ns[a] < w1 && acts.end_ns(a) > w0),
                }
        })
        .collect()
}

/// The bucket table, the top kernels and the counts over the activities in scope.
pub(crate) struct KernelTables {
    buckets: Vec<BucketRow>,
    top_kernels: Vec<KernelRow>,
    kernel_ns: i64,
    unclassified_ns: i64,
    activities: u64,
    distinct_kernels: u64,
    /// Every (bucket, name) row, most time first.
    kernels: Vec<merge::KernelTotals>,
}

fn kernel_tables(
    trace: &Trace,
    rules: &RuleSet,
    classified: &Classified,
    activity_buckets: &[Bucket],
    in_scope: &[bool],
    top: usize,
) -> KernelTables {
    let acts = &trace.activities;
    // Per (name, bucket): launches and time (the op that launched a kernel can put one name in
    // several buckets).
    let mut per_name_bucket: BTreeMap<(Bucket, NameId), (u64, i64)> = BTreeMap::new();
    let mut kernel_ns = 0i64;
    for a in (0..acts.len()).filter(|&a| in_scope[a]) {
        let e = per_name_bucket
            .entry((activity_buckets[a], acts.name[a]))
            .or_default();
        // Saturating: a corrupt trace with absurd durations must not overflow.
        e.0 += 1;
        e.1 = e.1.saturating_add(acts.dur_ns[a]);
        kernel_ns = kernel_ns.saturating_add(acts.dur_ns[a]);
    }
    // One row per (name, bucket): the op that launched a kernel can put one name in two
    // buckets, and the rows of a bucket then add up to its `buckets` row.
    let rows: Vec<merge::KernelTotals> = per_name_bucket
        .iter()
        .map(|(&(bucket, n), &(launches, ns))| {
            let c = classified.get(n);
            merge::KernelTotals {
                bucket,
                name: trace.names.get(n).to_string(),
                class_bucket: c.bucket,
                tag: c.tag,
                family: c.family.clone(),
                library: c.library.clone(),
                rule_id: c.rule.map(|r| rules.rules[r].def.id.clone()),
                launches,
                ns,
            }
        })
        .collect();
    tables_from_rows(rows, kernel_ns, top)
}

/// The bucket table, the top kernels and the counts from every (bucket, name) row of one trace
/// or of several ranks (summed by [`merge`]); `kernel_ns` is their total.
fn tables_from_rows(
    mut kernels: Vec<merge::KernelTotals>,
    kernel_ns: i64,
    top: usize,
) -> KernelTables {
    let mut by_bucket: BTreeMap<Bucket, (i64, u64, u64)> =
        Bucket::ALL.iter().map(|&b| (b, (0, 0, 0))).collect();
    let mut names: std::collections::BTreeSet<&str> = Default::default();
    let mut unclassified_ns = 0i64;
    for k in &kernels {
        let e = by_bucket.entry(k.bucket).or_default();
        e.0 = e.0.saturating_add(k.ns);
        e.1 += k.launches;
        e.2 += 1;
        names.insert(&k.name);
        if k.unclassified() {
            unclassified_ns = unclassified_ns.saturating_add(k.ns);
        }
    }
    let distinct_kernels = names.len() as u64;
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
    let activities = kernels.iter().map(|k| k.launches).sum();
    kernels.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.bucket.as_str().cmp(b.bucket.as_str()))
    });
    let top_kernels = kernels
        .iter()
        .take(top)
        .map(|k| KernelRow {
            name: k.name.clone(),
            bucket: k.bucket,
            family: k.family.clone(),
            library: k.library.clone(),
            rule_id: k.rule_id.clone(),
            launches: k.launches,
            total_ns: k.ns,
            pct: pct(k.ns, kernel_ns),
        })
        .collect();
    KernelTables {
        buckets,
        top_kernels,
        kernel_ns,
        unclassified_ns,
        activities,
        distinct_kernels,
        kernels,
    }
}

/// The time partition of the window, of each step, and the windows the host's compile signals
/// are read in.
struct Partitioned {
    total: Partition,
    window_ns: i64,
    busy_ns: i64,
    host_windows: Vec<(i64, i64)>,
    step_rows: Vec<StepRow>,
    /// Analyzed step durations (slowest rank per step number), in step order; iterations are
    /// in `phases` instead.
    step_durations: Vec<(u64, i64)>,
    phases: Vec<iterations::PhaseTotals>,
}

/// Activities per (input, device), each graph replay's span per device (the idle time inside
/// one is `graph_gaps`), in scope only.
fn device_activities(
    trace: &Trace,
    links: &Links,
    activity_buckets: &[Bucket],
    in_scope: &[bool],
) -> BTreeMap<(u32, u32), DeviceActivities> {
    let acts = &trace.activities;
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
    for dev in devices.values_mut() {
        dev.sort();
    }
    devices
}

fn partition_time(
    trace: &Trace,
    steps: &Steps,
    devices: &BTreeMap<(u32, u32), DeviceActivities>,
    timelines: &[HostTimeline],
    step_span: &[Option<(i64, i64)>],
    host_span: &[Option<(i64, i64)>],
) -> Partitioned {
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
    for (&(input, _device), dev) in devices {
        let (w0, w1) = match step_span[input as usize] {
            Some(span) => span,
            None => (dev.first_start().unwrap_or(0), dev.last_end().unwrap_or(0)),
        };
        let iw = &mut host_windows[input as usize];
        *iw = (iw.0.min(w0), iw.1.max(w1));
        let host = &timelines[input as usize];
        // Iterations' queued spans are not the input's time (none for ProfilerStep steps).
        for (a, b) in without_blocked(steps, input as usize, (w0, w1)) {
            let p = dev.partition(a, b, host);
            window_ns = window_ns.saturating_add(b.saturating_sub(a).max(0));
            busy += p.busy();
            total.add(&p);
        }
        for (k, s) in steps.kept(input as usize) {
            for (a, b) in s.pieces() {
                step_parts[input as usize][k].add(&dev.partition(a, b, host));
            }
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
                for (a, b) in s.pieces() {
                    step_parts[input][k].add(&empty.partition(a, b, &timelines[input]));
                }
            }
        }
    }
    let (step_rows, step_durations) = step_rows(trace, steps, devices, &step_parts);
    let phases = phase_partitions(trace, steps, devices, &step_parts);
    Partitioned {
        phases,
        total,
        window_ns,
        busy_ns: busy.round() as i64,
        host_windows,
        step_rows,
        step_durations,
    }
}

/// A span of an input's time without its kept iterations' queued spans.
fn without_blocked(steps: &Steps, input: usize, (w0, w1): (i64, i64)) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut at = w0;
    for (_, s) in steps.kept(input) {
        for &(a, b) in &s.blocked {
            if a > at {
                out.push((at, a.min(w1)));
            }
            at = at.max(b);
        }
    }
    if w1 > at || out.is_empty() {
        out.push((at.min(w1), w1));
    }
    out
}

/// One row per kept step (its partition summed over the input's devices), and the step
/// durations (slowest rank per step number).
fn step_rows(
    trace: &Trace,
    steps: &Steps,
    devices: &BTreeMap<(u32, u32), DeviceActivities>,
    step_parts: &[Vec<Partition>],
) -> (Vec<StepRow>, Vec<(u64, i64)>) {
    let mut rows = Vec::new();
    let mut by_number: BTreeMap<u64, i64> = BTreeMap::new();
    for (input, meta) in trace.inputs.iter().enumerate() {
        let ndev = devices
            .keys()
            .filter(|k| k.0 == input as u32)
            .count()
            .max(1) as i64;
        for (k, s) in steps.kept(input) {
            let p = &step_parts[input][k];
            if !steps.are_iterations(input) {
                let e = by_number.entry(s.number).or_insert(0);
                *e = (*e).max(s.dur_ns());
            }
            rows.push(StepRow {
                rank: meta.rank,
                step: s.number,
                start_ns: s.start_ns,
                dur_ns: s.dur_ns(),
                gpu_busy_ns: p.busy().round() as i64,
                time_partition: partition::rows(p, s.dur_ns().saturating_mul(ndev)),
                phase: steps.are_iterations(input).then(|| steps.phase[input][k]),
                blocked_ns: steps.are_iterations(input).then(|| s.blocked_ns()),
                excluded: steps.excluded[input][k],
            });
        }
    }
    (rows, by_number.into_iter().collect())
}

/// Per phase, its iterations' times, exclusions and time partition (buckets are added by
/// [`phase_buckets`]).
fn phase_partitions(
    trace: &Trace,
    steps: &Steps,
    devices: &BTreeMap<(u32, u32), DeviceActivities>,
    step_parts: &[Vec<Partition>],
) -> Vec<iterations::PhaseTotals> {
    let mut by: BTreeMap<iterations::Phase, iterations::PhaseTotals> = BTreeMap::new();
    for input in (0..trace.inputs.len()).filter(|&i| steps.are_iterations(i)) {
        let ndev = devices
            .keys()
            .filter(|k| k.0 == input as u32)
            .count()
            .max(1) as i64;
        let mut one: BTreeMap<iterations::Phase, iterations::PhaseTotals> = BTreeMap::new();
        for (k, s) in steps.kept(input) {
            let phase = steps.phase[input][k];
            let t = one.entry(phase).or_insert_with(|| iterations::PhaseTotals {
                phase,
                ..Default::default()
            });
            t.durations.insert(s.number, s.dur_ns());
            match steps.excluded[input][k] {
                Some(why) => {
                    t.excluded.insert(s.number, (why, s.dur_ns()));
                }
                None => {
                    t.partition.add(&step_parts[input][k]);
                    t.window_ns = t.window_ns.saturating_add(s.dur_ns().saturating_mul(ndev));
                }
            }
        }
        for (phase, t) in one {
            by.entry(phase)
                .or_insert_with(|| iterations::PhaseTotals {
                    phase,
                    ..Default::default()
                })
                .add(&t);
        }
    }
    by.into_values().collect()
}

/// Adds each phase's steady iterations' GPU time per bucket.
fn phase_buckets(
    trace: &Trace,
    steps: &Steps,
    activity_buckets: &[Bucket],
    in_scope: &[bool],
    phases: &mut [iterations::PhaseTotals],
) {
    if phases.is_empty() {
        return;
    }
    let acts = &trace.activities;
    for a in (0..acts.len()).filter(|&a| in_scope[a]) {
        let input = acts.input[a] as usize;
        let Some(k) = steps.of_activity[a] else {
            continue;
        };
        let k = k as usize;
        if !steps.are_iterations(input) || steps.excluded[input][k].is_some() {
            continue;
        }
        let phase = steps.phase[input][k];
        if let Some(t) = phases.iter_mut().find(|t| t.phase == phase) {
            let b = partition::bucket_index(activity_buckets[a]);
            t.bucket_ns[b] = t.bucket_ns[b].saturating_add(acts.dur_ns[a]);
            t.launches[b] += 1;
            let name = trace.names.get(acts.name[a]);
            if !t.kernels[b].contains(name) {
                t.kernels[b].insert(name.to_string());
            }
        }
    }
}

/// MFU from the inputs' FLOP tallies and kept steps per input, the summary's step time and
/// window, and the compute buckets' time (one trace's, or several ranks' merged).
pub(crate) fn mfu_of(
    inputs: &[InputMeta],
    devices: &[crate::classify::devices::DevicePeaks],
    (flops, steps_per_input): (&[attribution::FlopTally], &[usize]),
    summary: &Summary,
    buckets: &[BucketRow],
) -> mfu::Mfu {
    mfu::compute(
        inputs,
        devices,
        flops,
        &mfu::Timing {
            steps_per_input: steps_per_input.to_vec(),
            step_ns: summary.step_ns.as_ref().map(|s| s.mean),
            window_ns: summary.window_ns,
            devices: inputs.iter().map(|i| i.devices.len()).sum(),
            compute_ns: buckets
                .iter()
                .filter(|b| matches!(b.bucket, Bucket::Gemm | Bucket::Attention | Bucket::Conv))
                .map(|b| b.kernel_ns)
                .sum(),
        },
    )
}

/// Per input, its GPU time per step number (communication and the rest): what the straggler
/// is found from.
fn step_loads(
    trace: &Trace,
    steps: &Steps,
    activity_buckets: &[Bucket],
    in_scope: &[bool],
) -> Vec<merge::InputLoads> {
    let mut out: Vec<merge::InputLoads> = (0..trace.inputs.len())
        .map(|i| merge::InputLoads {
            kept: steps.kept(i).map(|(_, s)| s.number).collect(),
            ..Default::default()
        })
        .collect();
    let acts = &trace.activities;
    for a in (0..acts.len()).filter(|&a| in_scope[a]) {
        let input = acts.input[a] as usize;
        let l = match steps.of_activity[a] {
            Some(k) => {
                let n = steps.per_input[input][k as usize].number;
                out[input].per_step.entry(n).or_default()
            }
            None => &mut out[input].outside,
        };
        match activity_buckets[a] {
            Bucket::Communication => l.comm_ns += acts.dur_ns[a],
            _ => l.compute_ns += acts.dur_ns[a],
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
) -> (attribution::OpIndex, (Steps, Vec<HostTimeline>)) {
    rayon::join(
        || {
            if opts.attribution {
                attribution::OpIndex::build(trace, links)
            } else {
                attribution::OpIndex::empty(trace)
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

/// Classifies the trace and computes every aggregate: the [`Context`] the detectors read, from
/// which [`Context::finish`] cuts the [`Analysis`] and the [`ActivityTable`].
pub fn prepare<'a>(trace: &'a Trace, rules: &'a RuleSet, opts: &'a AnalysisOptions) -> Context<'a> {
    let classified = rules.classify_trace(trace);
    let links = Links::build(trace);
    let (op_index, (mut steps, timelines)) = host_indexes(trace, &links, opts);
    let (activity_buckets, op_view) =
        attribution::activity_buckets(trace, &op_index, rules, &classified);
    let mut selecting = steps.select(opts.steps, opts.skip_warmup, opts.phase);
    // A cut trace's last steps lack their GPU work: leave them out, and say so.
    let unfinished = steps.drop_unfinished(trace, &links);
    let overlaps = stream_overlaps(trace, &links);
    selecting |= !unfinished.is_empty();
    let (step_span, host_span) = step_spans(trace, &steps);
    let in_scope = activities_in_scope(trace, &steps, selecting, &step_span);
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
    let regions = if opts.regions {
        regions::analyze(&regions::Inputs {
            trace,
            links: &links,
            steps: &steps,
            activity_buckets: &activity_buckets,
            in_scope: &in_scope,
            devices: &devices,
            timelines: &timelines,
        })
    } else {
        Vec::new()
    };
    drop(devices);
    let durations: Vec<i64> = parts.step_durations.iter().map(|d| d.1).collect();
    let (step_ns, warmup_in_window) = match steps::step_stats(&durations) {
        Some((s, w)) => (Some(s), w),
        None => (None, false),
    };
    let compile_facts = compile::facts(trace, &links, &steps, &parts.host_windows);
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
    let op_tables = if opts.attribution {
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
    let op_of = op_index.owner_ops();
    drop(op_index);
    let steps_per_input: Vec<usize> = (0..trace.inputs.len())
        .map(|i| steps.kept(i).count())
        .collect();
    summary.mfu = mfu_of(
        &trace.inputs,
        &rules.devices,
        (&op_tables.flops, &steps_per_input),
        &summary,
        &tables.buckets,
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
        collectives: collectives::Collectives::default(),
        memory: memory::analyze(trace, &steps, &rules.devices),
        regions,
        phases: iterations::phase_rows(&parts.phases),
        kernel_candidates: Vec::new(),
        tagged_ns: tagged_ns.clone(),
        skipped_files: trace.skipped.clone(),
        parts: merge::Parts {
            kernels: tables.kernels,
            partition: parts.total,
            step_durations: parts.step_durations.clone(),
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
        analysis,
    };
    add_collectives_and_counters(&mut ctx);
    ctx
}

/// The collectives and hardware-counter views, and what merging ranks needs of the context
/// beyond the analysis.
fn add_collectives_and_counters(ctx: &mut Context) {
    let counters = hardware::counter_sums(ctx.trace, &ctx.classified);
    ctx.analysis.kernel_counters = hardware::kernel_counters(&counters, &ctx.trace.inputs);
    ctx.analysis.parts.counters = counters;
    let calls = collectives::calls(ctx);
    let has_steps: Vec<bool> = ctx.steps.per_input.iter().map(|s| !s.is_empty()).collect();
    ctx.analysis.collectives = collectives::analyze(
        &calls,
        &collectives::CallInputs {
            inputs: &ctx.trace.inputs,
            has_steps: &has_steps,
            devices: &ctx.rules.devices,
        },
    );
    let parts = &mut ctx.analysis.parts;
    parts.calls = calls;
    parts.has_steps = has_steps;
    parts.loads = step_loads(ctx.trace, &ctx.steps, &ctx.activity_buckets, &ctx.in_scope);
    parts.memory_inputs = ctx.analysis.memory.iter().map(|m| m.input).collect();
}

/// GPU time by `nn.Module` and by user source line, and each activity's innermost of both
/// (traces recorded with `with_stack`; empty otherwise).
#[derive(Default)]
pub struct Frames {
    pub modules: attribution::Frames,
    pub sources: attribution::Frames,
}

impl<'a> Context<'a> {
    /// The frame views (they read only the trace and the links: computed beside the detectors).
    pub fn frames(&self) -> Frames {
        if !self.opts.attribution {
            return Frames::default();
        }
        let (modules, sources) = rayon::join(
            || {
                let compiled =
                    compile::compiled_activities(self.trace, &self.links, &self.classified);
                attribution::frames(self.trace, &self.links, &self.in_scope, true, &compiled)
            },
            || attribution::frames(self.trace, &self.links, &self.in_scope, false, &[]),
        );
        Frames { modules, sources }
    }

    /// The analysis and the annotated activity table; what only the detectors needed is dropped.
    pub fn finish(self, frames: Frames) -> (Analysis, ActivityTable) {
        let mut analysis = self.analysis;
        let compiled = analysis.compile.compiled || analysis.compile.inductor_kernel_pct > 0.0;
        analysis.compile.eager_modules =
            compile::eager_modules(&frames.modules.roots, analysis.summary.kernel_ns, compiled);
        analysis.parts.roots = frames.modules.roots;
        if self.opts.attribution {
            let totals = candidates::totals(
                self.trace,
                &self.op_of,
                &frames.sources.of_activity,
                &self.in_scope,
            );
            // Different host args can spell one key (two launcher ops of one Triton file).
            let totals = candidates::merge(&[&totals]);
            analysis.kernel_candidates = candidates::rows(&totals, &analysis, &self.rules.devices);
            analysis.parts.candidates = totals;
            if self.opts.op_series {
                analysis.parts.op_steps = op_steps::totals(
                    self.trace,
                    &self.steps,
                    &op_steps::Annotations {
                        op_of: &self.op_of,
                        modules: &frames.modules.of_activity,
                        sources: &frames.sources.of_activity,
                        buckets: &self.activity_buckets,
                        in_scope: &self.in_scope,
                    },
                );
            }
        }
        analysis.modules = frames.modules.rows;
        analysis.sources = frames.sources.rows;
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
            module: frames.modules.of_activity,
            source: frames.sources.of_activity,
            in_window: self.in_scope,
        };
        (analysis, table)
    }
}

/// Classifies and aggregates, without the detectors: the numbers alone.
pub fn analyze(trace: &Trace, rules: &RuleSet, opts: &AnalysisOptions) -> Analysis {
    let ctx = prepare(trace, rules, opts);
    let frames = ctx.frames();
    ctx.finish(frames).0
}
