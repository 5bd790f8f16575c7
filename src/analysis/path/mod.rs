//! What bounds each step: the dependency model of a rank's step (`model`) and its critical
//! path (`walk`), each nanosecond of it labeled by its cause (FEED.md `critical_path`).
//!
//! The path is found backwards from the step's end, following at every point what the current
//! piece of work waited for last (its latest-arriving dependency): a kernel its stream
//! predecessor, its launch call or the stream it waited on; a host moment the thread's previous
//! work, or the GPU work a synchronize returned for. It covers the step without holes, so its
//! labels add up to the step's time: the idle time on it is labeled by its cause (dispatch,
//! data loading, host work, a sync) instead of by whatever the GPU was doing.

mod alloc;
mod hidden;
pub(crate) mod model;
mod queue;
pub(crate) mod replay;
mod segments;
mod walk;

use crate::analysis::numbers::pct;
use crate::analysis::time::links::Links;
use crate::analysis::time::steps::Steps;
use crate::classify::Bucket;
use crate::model::{NameId, Trace};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a piece of the critical path is (FEED.md `critical_path.labels[].label`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// A kernel, copy or fill running (split by bucket).
    GpuCompute,
    /// A collective or point-to-point transfer running.
    Communication,
    /// Waiting for another rank to arrive at a collective.
    RankWait,
    /// Waiting on a pipeline schedule's receive from the neighbouring stage.
    PipelineBubble,
    /// Dispatch: the host inside ops and runtime calls that launch GPU work, short gaps
    /// between them, and the latency from a launch call to its kernel's start.
    Launch,
    /// Host work that launches nothing (CPU ops, the allocator's calls, Python outside any
    /// profiled op).
    Host,
    /// The host fetching the next batch (the DataLoader's `__next__`).
    DataLoading,
    /// A synchronize returning, or a stream waiting on another stream.
    Sync,
}

impl Label {
    /// Every label, in the feed's order.
    pub const ALL: [Label; 8] = [
        Label::GpuCompute,
        Label::Communication,
        Label::RankWait,
        Label::PipelineBubble,
        Label::Launch,
        Label::Host,
        Label::DataLoading,
        Label::Sync,
    ];
    /// Its name in the feed: serde's.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Time on the path under one label (and bucket, for `gpu_compute`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabelNs {
    /// What the time was.
    pub label: Label,
    /// For `gpu_compute`: the bucket of the kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<Bucket>,
    /// Nanoseconds.
    pub ns: i64,
}

/// One row of `critical_path.labels[]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabelRow {
    /// What the time was.
    pub label: Label,
    /// For `gpu_compute`: the bucket of the kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<Bucket>,
    /// Nanoseconds on the path, over all analyzed steps.
    pub ns: i64,
    /// Share of the path.
    pub pct_of_path: f64,
    /// Share of the analysis window (`summary.window_ns`).
    pub pct_of_window: f64,
}

/// One step's path (`critical_path.per_step[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepPath {
    /// The rank, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The step number (absent for an input without steps: its window is one path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// The path's length: the step's time.
    pub ns: i64,
    /// Its time by label, in the feed's label order.
    pub labels: Vec<LabelNs>,
}

/// Whether a `top[]` entry is a GPU activity or host work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A kernel, copy or fill.
    Kernel,
    /// A host op, runtime call or range (or a gap between them, in parentheses).
    Op,
}

/// One row of `critical_path.top[]`: an op or kernel on the path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathItem {
    /// A kernel or host work.
    pub kind: ItemKind,
    /// Its name.
    pub name: String,
    /// What its time on the path was.
    pub label: Label,
    /// Nanoseconds on the path, over all analyzed steps.
    pub ns: i64,
    /// Share of the path.
    pub pct_of_path: f64,
}

/// The feed's `critical_path` block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CriticalPath {
    /// The path's length over all analyzed steps (and ranks).
    pub ns: i64,
    /// Its time by label (and bucket), most first.
    pub labels: Vec<LabelRow>,
    /// Each step's path.
    pub per_step: Vec<StepPath>,
    /// The ops and kernels on it, most time first (capped by `--top`).
    pub top: Vec<PathItem>,
    /// The same block for each step replayed without the profiler's own cost (one rank's
    /// steps with host events): the path of the run the user times. Its `top` lists kernels
    /// only, and its shares of the window are of its own length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_profiler: Option<Box<CriticalPath>>,
    /// In `without_profiler`: its labels with the host slower by the host's speed uncertainty
    /// (a bound that changes with it is balanced between the host and the GPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slower_host: Option<SlowerHost>,
}

/// `critical_path.without_profiler.slower_host`: the replayed path with the host slower.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowerHost {
    /// How much slower the host runs (`1 + host_speed_uncertainty`, `rules/replay.toml`).
    pub factor: f64,
    /// The path's length.
    pub ns: i64,
    /// Its time by label (and bucket), most first; `pct_of_window` is of its own length.
    pub labels: Vec<LabelRow>,
}

impl SlowerHost {
    /// The label most of the path is under, and its share.
    pub fn bound_by(&self) -> Option<(Label, f64)> {
        bound_of(&self.labels, self.ns)
    }
}

/// The label most of `labels` is under (ties: the feed's order), and its share of `ns`.
fn bound_of(labels: &[LabelRow], ns: i64) -> Option<(Label, f64)> {
    Label::ALL
        .into_iter()
        .map(|l| {
            let sum = labels
                .iter()
                .filter(|r| r.label == l)
                .map(|r| r.ns)
                .sum::<i64>();
            (l, sum)
        })
        .filter(|(_, ns)| *ns > 0)
        .max_by_key(|&(l, ns)| (ns, std::cmp::Reverse(l)))
        .map(|(l, v)| (l, pct(v, ns)))
}

impl CriticalPath {
    /// The path's time under `label` (all buckets).
    pub fn ns_of(&self, label: Label) -> i64 {
        self.labels
            .iter()
            .filter(|r| r.label == label)
            .map(|r| r.ns)
            .sum()
    }
    /// Share of the path under `label`.
    pub fn pct_of(&self, label: Label) -> f64 {
        pct(self.ns_of(label), self.ns)
    }
    /// The path that says what bounds the step: the one without the profiler's cost where
    /// there is one (a profiled host is slower than the run it stands for), else this one.
    pub fn bounding(&self) -> &CriticalPath {
        match &self.without_profiler {
            Some(p) if p.ns > 0 => p,
            _ => self,
        }
    }
    /// The label most of the path is under (ties: the feed's order), and its share.
    pub fn bound_by(&self) -> Option<(Label, f64)> {
        bound_of(&self.labels, self.ns)
    }

    /// The block from step paths (any ranks) and every item on them (uncapped), over a
    /// window of `window_ns`.
    pub(crate) fn from_parts(
        per_step: Vec<StepPath>,
        items: &[PathItem],
        window_ns: i64,
        top: usize,
    ) -> Self {
        let mut sums: BTreeMap<(Label, Option<Bucket>), i64> = BTreeMap::new();
        for s in &per_step {
            for l in &s.labels {
                let sum = sums.entry((l.label, l.bucket)).or_insert(0);
                *sum = sum.saturating_add(l.ns);
            }
        }
        let ns = per_step.iter().fold(0i64, |a, s| a.saturating_add(s.ns));
        let labels = label_rows(sums, ns, window_ns);
        let mut merged: BTreeMap<(ItemKind, &str, Label), i64> = BTreeMap::new();
        for i in items {
            let sum = merged.entry((i.kind, &i.name, i.label)).or_insert(0);
            *sum = sum.saturating_add(i.ns);
        }
        let mut top_rows: Vec<PathItem> = merged
            .into_iter()
            .map(|((kind, name, label), v)| PathItem {
                kind,
                name: name.to_string(),
                label,
                ns: v,
                pct_of_path: pct(v, ns),
            })
            .collect();
        top_rows.sort_by(|a, b| {
            b.ns.cmp(&a.ns)
                .then_with(|| (a.kind, &a.name, a.label).cmp(&(b.kind, &b.name, b.label)))
        });
        top_rows.truncate(top);
        CriticalPath {
            ns,
            labels,
            per_step,
            top: top_rows,
            without_profiler: None,
            slower_host: None,
        }
    }
}

/// How far the replay of the steps with the profiler's cost kept may be from the measured
/// path's length for its path without that cost to say what bounds them: the model must
/// reproduce the step it changes. (The identity replay lands within 2% of each step the
/// replays' tests check, `replays::the_identity_replay_reproduces_every_measured_step`; a
/// host range much longer than its GPU work, as on TraceLens's serving traces, does not.)
const REPLAY_FIDELITY: f64 = 0.05;

/// The `without_profiler` block: each step's path as the replay without the profiler's cost
/// walks it (`replay::Replayer::unprofiled_paths`), its kernels named from `trace`; none
/// where the replay does not reproduce the `measured` steps.
pub(crate) fn without_profiler(
    trace: &Trace,
    steps: Vec<replay::UnprofiledStep>,
    measured: &CriticalPath,
    top: usize,
) -> Option<CriticalPath> {
    let replayed = steps
        .iter()
        .fold(0i64, |a, s| a.saturating_add(s.profiled_ns));
    let off = (replayed - measured.ns).abs() as f64;
    // Without host events there is no profiler's cost on the host to take out.
    let untimed = trace.host.is_empty();
    if untimed || steps.is_empty() || measured.ns <= 0 || off > REPLAY_FIDELITY * measured.ns as f64
    {
        return None;
    }
    let mut items: BTreeMap<(u32, Label), i64> = BTreeMap::new();
    let mut slower: BTreeMap<(Label, Option<Bucket>), i64> = BTreeMap::new();
    let factor = steps.first().map_or(1.0, |s| s.slower_factor);
    let per_step: Vec<StepPath> = steps
        .into_iter()
        .map(|s| {
            for (k, ns) in s.slower_host {
                let sum = slower.entry(k).or_insert(0);
                *sum = sum.saturating_add(ns);
            }
            for (k, ns) in s.trail.kernels {
                let sum = items.entry(k).or_insert(0);
                *sum = sum.saturating_add(ns);
            }
            StepPath {
                rank: s.rank,
                step: s.step,
                ns: s.ns,
                labels: s
                    .trail
                    .labels
                    .into_iter()
                    .filter(|&(_, ns)| ns > 0)
                    .map(|((label, bucket), ns)| LabelNs { label, bucket, ns })
                    .collect(),
            }
        })
        .collect();
    let acts = &trace.activities;
    let items: Vec<PathItem> = items
        .into_iter()
        .map(|((a, label), ns)| PathItem {
            kind: ItemKind::Kernel,
            name: trace.names.get(acts.name[a as usize]).to_string(),
            label,
            ns,
            pct_of_path: 0.0,
        })
        .collect();
    let window = per_step.iter().fold(0i64, |a, s| a.saturating_add(s.ns));
    let slower_ns = slower.values().fold(0i64, |a, &v| a.saturating_add(v));
    let mut path = CriticalPath::from_parts(per_step, &items, window, top);
    path.slower_host = (slower_ns > 0).then(|| SlowerHost {
        factor,
        ns: slower_ns,
        labels: label_rows(slower, slower_ns, slower_ns),
    });
    Some(path)
}

/// Rows of `labels[]` from time by (label, bucket) on a path of `ns`, most first.
fn label_rows(
    sums: BTreeMap<(Label, Option<Bucket>), i64>,
    ns: i64,
    window_ns: i64,
) -> Vec<LabelRow> {
    let mut labels: Vec<LabelRow> = sums
        .into_iter()
        .filter(|&(_, v)| v > 0)
        .map(|((label, bucket), v)| LabelRow {
            label,
            bucket,
            ns: v,
            pct_of_path: pct(v, ns),
            pct_of_window: pct(v, window_ns),
        })
        .collect();
    labels.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then(a.label.cmp(&b.label))
            .then(a.bucket.cmp(&b.bucket))
    });
    labels
}

/// The name of an item on the path: an event's, or one for what is no event (a gap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ItemName {
    Id(NameId),
    Fixed(&'static str),
}

type Items = HashMap<(ItemKind, ItemName, Label), i64>;

/// What the walk of one input's steps adds up: per (label, bucket) and per item, and the
/// collective kernels on the path (the merge splits their time into waiting and transfer).
#[derive(Default)]
pub(crate) struct Tally {
    pub labels: BTreeMap<(Label, Option<Bucket>), i64>,
    pub items: Items,
    /// (activity, on-path start, on-path end) of each collective kernel on the path.
    pub comms: Vec<(u32, i64, i64)>,
}

/// A collective kernel's time on one step's path: what the merge splits into `rank_wait`
/// (before the last rank arrived) and `communication` (not in the feed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathComm {
    /// The rank and step whose path it is on.
    pub rank: Option<u32>,
    pub step: Option<u64>,
    /// The kernel: its input (renumbered at merge), stream and start, as the collectives'
    /// calls know it, and its name.
    pub input: u32,
    pub stream: u32,
    pub ts: i64,
    pub name: String,
    /// Its time on the path.
    pub start: i64,
    pub end: i64,
}

impl Tally {
    fn label_rows(&self) -> Vec<LabelNs> {
        self.labels
            .iter()
            .filter(|&(_, &ns)| ns > 0)
            .map(|(&(label, bucket), &ns)| LabelNs { label, bucket, ns })
            .collect()
    }
}

/// The critical path of every kept step of every input, over a window of `window_ns`,
/// every item on it (uncapped, for merging ranks), and the dependency models walked (by input;
/// the replays' step model starts from them).
pub(crate) fn analyze(
    trace: &Trace,
    (links, steps, buckets, in_scope): (&Links, &Steps, &[Bucket], &[bool]),
    window_ns: i64,
    opts: &crate::analysis::AnalysisOptions,
) -> (
    CriticalPath,
    Vec<PathItem>,
    Vec<PathComm>,
    Vec<Option<model::InputModel>>,
) {
    let (paths, items, comms, models) = step_paths(
        trace,
        (links, steps, buckets, in_scope),
        (opts.dispatch_threshold_ns, &opts.launch_queue_depth),
    );
    let path = CriticalPath::from_parts(paths, &items, window_ns, opts.top);
    (path, items, comms, models)
}

/// The ranks' paths with each collective kernel's time split: the part before the last rank
/// arrived (`waits`: its wait by (input, stream, start), from the collectives matched across
/// ranks) is `rank_wait`, the rest stays `communication`; a pipeline schedule's sends and
/// receives (`bubbles`, by the same key) wait for the neighbouring stage's compute: that part
/// is `pipeline_bubble`. Returns the steps and the items.
pub(crate) fn split_rank_waits(
    mut per_step: Vec<StepPath>,
    mut items: Vec<PathItem>,
    comms: &[PathComm],
    waits: &HashMap<(u32, u32, i64), i64>,
    bubbles: &std::collections::HashSet<(u32, u32, i64)>,
) -> (Vec<StepPath>, Vec<PathItem>) {
    let mut by_step: BTreeMap<(Option<u32>, Option<u64>, Label), i64> = BTreeMap::new();
    let mut by_name: BTreeMap<(&str, Label), i64> = BTreeMap::new();
    for c in comms {
        let key = (c.input, c.stream, c.ts);
        let Some(&wait) = waits.get(&key) else {
            continue;
        };
        let label = if bubbles.contains(&key) {
            Label::PipelineBubble
        } else {
            Label::RankWait
        };
        let waited = (c.end.min(c.ts.saturating_add(wait)) - c.start.max(c.ts)).max(0);
        if waited > 0 {
            *by_step.entry((c.rank, c.step, label)).or_insert(0) += waited;
            *by_name.entry((&c.name, label)).or_insert(0) += waited;
        }
    }
    for s in &mut per_step {
        for label in [Label::RankWait, Label::PipelineBubble] {
            if let Some(&w) = by_step.get(&(s.rank, s.step, label)) {
                move_ns(&mut s.labels, w, label);
            }
        }
    }
    for ((name, label), w) in by_name {
        if let Some(item) = items.iter_mut().find(|i| {
            i.kind == ItemKind::Kernel && i.name == name && i.label == Label::Communication
        }) {
            let w = w.min(item.ns);
            item.ns -= w;
            items.push(PathItem {
                kind: ItemKind::Kernel,
                name: name.to_string(),
                label,
                ns: w,
                pct_of_path: 0.0,
            });
        }
    }
    items.retain(|i| i.ns > 0);
    items.sort_by(|a, b| (a.kind, &a.name, a.label).cmp(&(b.kind, &b.name, b.label)));
    (per_step, items)
}

/// Moves `w` ns of a step's `communication` to `label`, keeping the label order.
fn move_ns(labels: &mut Vec<LabelNs>, w: i64, label: Label) {
    let Some(comm) = labels.iter_mut().find(|l| l.label == Label::Communication) else {
        return;
    };
    let w = w.min(comm.ns);
    comm.ns -= w;
    labels.push(LabelNs {
        label,
        bucket: None,
        ns: w,
    });
    labels.retain(|l| l.ns > 0);
    labels.sort_by_key(|l| (l.label, l.bucket));
}

/// One input's steps' paths, the items on them, its collectives and its dependency model.
type InputPaths = (
    Vec<StepPath>,
    Items,
    Vec<PathComm>,
    Option<model::InputModel>,
);

/// Each kept step's path, per input, every item on them, and the models walked.
#[allow(clippy::type_complexity)]
fn step_paths(
    trace: &Trace,
    (links, steps, buckets, in_scope): (&Links, &Steps, &[Bucket], &[bool]),
    (dispatch_threshold_ns, queue_depth): (i64, &crate::analysis::PerVendor),
) -> (
    Vec<StepPath>,
    Vec<PathItem>,
    Vec<PathComm>,
    Vec<Option<model::InputModel>>,
) {
    use rayon::prelude::*;
    let per_input: Vec<InputPaths> = (0..trace.inputs.len())
        .into_par_iter()
        .map(|input| {
            let spans: Vec<(Option<u64>, walk::Span)> = if steps.per_input[input].is_empty() {
                windows_of(trace, in_scope, input)
                    .into_iter()
                    .map(|(device, (s, e))| {
                        let span = walk::Span {
                            start: s,
                            end: e,
                            cpu_end: s,
                            blocked: Vec::new(),
                            device: Some(device),
                        };
                        (None, span)
                    })
                    .collect()
            } else {
                steps
                    .kept(input)
                    .map(|(_, w)| {
                        (
                            Some(w.number),
                            walk::Span {
                                start: w.start_ns,
                                end: w.end_ns,
                                cpu_end: w.cpu_end_ns,
                                blocked: w.blocked.clone(),
                                device: None,
                            },
                        )
                    })
                    .collect()
            };
            // An input without GPU activity in scope has no window (a trace cut before its
            // GPU events were written): no path either.
            let acts = &trace.activities;
            let active = (0..acts.len()).any(|a| in_scope[a] && acts.input[a] as usize == input);
            if spans.is_empty() || !active {
                return (Vec::new(), Items::default(), Vec::new(), None);
            }
            let depth = queue_depth.of(trace.inputs[input].vendor);
            let model = model::InputModel::build(trace, links, input as u32, depth);
            let walker = walk::Walker {
                trace,
                links,
                model: &model,
                buckets,
                threshold: dispatch_threshold_ns,
            };
            let rank = trace.inputs[input].rank;
            let mut items = Items::default();
            let mut comms = Vec::new();
            let paths = spans
                .into_iter()
                .map(|(step, span)| {
                    let tally = walker.walk(&span);
                    for (k, v) in &tally.items {
                        let sum = items.entry(*k).or_insert(0);
                        *sum = sum.saturating_add(*v);
                    }
                    let acts = &trace.activities;
                    comms.extend(tally.comms.iter().map(|&(a, start, end)| PathComm {
                        rank,
                        step,
                        input: input as u32,
                        stream: acts.stream[a as usize],
                        ts: acts.ts_ns[a as usize],
                        name: trace.names.get(acts.name[a as usize]).to_string(),
                        start,
                        end,
                    }));
                    let labels = tally.label_rows();
                    StepPath {
                        rank,
                        step,
                        ns: labels.iter().fold(0i64, |a, l| a.saturating_add(l.ns)),
                        labels,
                    }
                })
                .collect();
            comms.sort_by_key(|c| (c.step, c.ts, c.stream, c.start));
            (paths, items, comms, Some(model))
        })
        .collect();
    let mut paths = Vec::new();
    let mut items: Vec<PathItem> = Vec::new();
    let mut comms: Vec<PathComm> = Vec::new();
    let mut models = Vec::new();
    for (p, i, c, m) in per_input {
        models.push(m);
        paths.extend(p);
        comms.extend(c);
        let mut rows: Vec<PathItem> = i
            .into_iter()
            .map(|((kind, name, label), ns)| PathItem {
                kind,
                name: match name {
                    ItemName::Id(id) => trace.names.get(id).to_string(),
                    ItemName::Fixed(s) => s.to_string(),
                },
                label,
                ns,
                pct_of_path: 0.0,
            })
            .collect();
        rows.sort_by(|a, b| (a.kind, &a.name, a.label).cmp(&(b.kind, &b.name, b.label)));
        items.extend(rows);
    }
    (paths, items, comms, models)
}

/// An input without steps: per device, the span of its activities in scope (the window's).
fn windows_of(trace: &Trace, in_scope: &[bool], input: usize) -> BTreeMap<u32, (i64, i64)> {
    let acts = &trace.activities;
    let mut spans: BTreeMap<u32, (i64, i64)> = BTreeMap::new();
    for (a, _) in in_scope.iter().enumerate().filter(|(_, &kept)| kept) {
        if acts.input[a] as usize == input {
            let (s, e) = (acts.ts_ns[a], acts.end_ns(a));
            let span = spans.entry(acts.device[a]).or_insert((s, e));
            *span = (span.0.min(s), span.1.max(e));
        }
    }
    spans.retain(|_, (s, e)| e > s);
    spans
}

/// The cross-stream and host-sync edges of a trace's dependency model, by activity and host
/// event index: what the tests check against the peers' own test traces. Not a stable API.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct Dependencies {
    /// (activity waited for, activity that waited), one per cross-stream wait.
    pub waits: Vec<(u32, u32)>,
    /// (activity waited for, host synchronize that returned when it ended).
    pub syncs: Vec<(u32, u32)>,
    /// (activity waited for, allocator call that returned when it ended).
    pub allocs: Vec<(u32, u32)>,
}

/// The [`Dependencies`] of every input of `trace`. Not a stable API.
#[doc(hidden)]
pub fn dependencies(trace: &Trace) -> Dependencies {
    let links = Links::build(trace);
    let mut out = Dependencies::default();
    let depths = crate::analysis::AnalysisOptions::default().launch_queue_depth;
    for input in 0..trace.inputs.len() {
        let depth = depths.of(trace.inputs[input].vendor);
        let m = model::InputModel::build(trace, &links, input as u32, depth);
        out.waits
            .extend(m.waits.iter().map(|(&to, &from)| (from, to)));
        for t in m.threads.values() {
            out.syncs.extend(
                t.gated
                    .iter()
                    .filter(|g| g.kind == model::GateKind::Sync)
                    .map(|g| (g.activity, g.host)),
            );
            out.allocs.extend(
                t.gated
                    .iter()
                    .filter(|g| g.kind == model::GateKind::Alloc)
                    .map(|g| (g.activity, g.host)),
            );
        }
    }
    out.waits.sort_unstable();
    out.syncs.sort_unstable();
    out.allocs.sort_unstable();
    out
}
