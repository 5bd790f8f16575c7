//! Regions: GPU time by what the user marked (`record_function`, NVTX and ROCTx ranges: Kineto
//! `user_annotation`) and by the phases PyTorch marks itself (forward, backward, the optimizer,
//! DDP/FSDP hooks), as a tree merged by path across steps and ranks.
//!
//! A region owns the GPU activities launched inside its host time range by any thread of its
//! process: backward kernels are launched from the autograd thread, outside the main thread's
//! `backward` range, and still belong to it. Kineto's own `gpu_user_annotation` spans count only
//! the annotating thread's launches (1 µs for a `backward` range), so they are not read.

use crate::analysis::time::links::Links;
use crate::analysis::time::names::{is_not_a_region, is_pytorch_phase, step_number};
use crate::analysis::time::partition::{
    self, DeviceActivities, HostTimeline, Partition, PartitionRow,
};
use crate::analysis::time::steps::Steps;
use crate::classify::Bucket;
use crate::model::{HostKind, NameId, Trace};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Who marked a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegionKind {
    /// A range the user wrote (`record_function`, NVTX, ROCTx).
    Annotation,
    /// A range PyTorch marks (optimizer, DDP/FSDP hooks) or one this tool derives from the ops
    /// (forward: the main thread's ops; backward: the autograd engine's).
    Phase,
}

/// GPU time of one bucket inside a region.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RegionBucket {
    pub bucket: Bucket,
    pub kernel_ns: i64,
    pub pct: f64,
}

/// One region of the tree, merged over its occurrences (every step, every rank).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RegionRow {
    pub name: String,
    /// The names from the root down to this region, joined by [`PATH_SEPARATOR`].
    pub path: String,
    pub kind: RegionKind,
    /// 0 for top-level regions.
    pub depth: u32,
    /// Occurrences merged into this row.
    pub count: u64,
    /// Host time inside the range, summed over occurrences.
    pub cpu_ns: i64,
    /// Summed durations of the GPU activities launched inside the range (any thread).
    pub gpu_ns: i64,
    /// Per occurrence, its first activity's start to its last one's end, summed.
    pub gpu_span_ns: i64,
    /// Per occurrence, what a pair of CUDA/HIP events around the range measures, summed: from
    /// the later of the range's host start and the device's last activity end before the
    /// region's first activity, to the later of its last activity's end and the range's host
    /// end. Above `gpu_span_ns` by the time the GPU sat idle for the region's host work at its
    /// start and end.
    pub gpu_elapsed_ns: i64,
    pub launches: u64,
    /// The ranks the region occurs on (empty for single-process traces without a rank).
    pub ranks: Vec<u32>,
    pub buckets: Vec<RegionBucket>,
    /// The time partition of the region's GPU spans.
    pub time_partition: Vec<PartitionRow>,
}

pub const PATH_SEPARATOR: &str = " / ";

const BACKWARD_OP: &str = "autograd::engine::evaluate_function: ";

/// One occurrence of a region on the host.
#[derive(Clone, Debug)]
struct Occurrence {
    start: i64,
    end: i64,
    /// Host thread index (`HostEvents::thread`).
    thread: u32,
    name: String,
    kind: RegionKind,
}

/// What the regions read from the analysis so far.
pub struct Inputs<'a> {
    pub trace: &'a Trace,
    pub links: &'a Links,
    pub steps: &'a Steps,
    pub activity_buckets: &'a [Bucket],
    pub in_scope: &'a [bool],
    pub devices: &'a BTreeMap<(u32, u32), DeviceActivities>,
    pub timelines: &'a [HostTimeline],
}

/// Per region path: the merged numbers, and where it sits in the tree.
#[derive(Default)]
struct Merged {
    kind: Option<RegionKind>,
    name: String,
    depth: u32,
    parent: Option<String>,
    /// Ordering among siblings: the earliest occurrence's offset from its input's first one.
    first_offset: i64,
    count: u64,
    cpu_ns: i64,
    gpu_ns: i64,
    span_ns: i64,
    elapsed_ns: i64,
    launches: u64,
    ranks: std::collections::BTreeSet<u32>,
    buckets: [i64; 7],
    partition: Partition,
}

/// One input's host events and GPU activities, by index.
struct InputRows {
    host: Vec<u32>,
    activities: Vec<usize>,
}

/// The region tree, in pre-order (siblings by when they first occur, then by name).
pub fn analyze(inp: &Inputs) -> Vec<RegionRow> {
    let trace = inp.trace;
    // Counted first: one input's host rows are millions on a large trace.
    let mut counts = vec![0usize; trace.inputs.len()];
    for input in trace.host.input.iter() {
        counts[input as usize] += 1;
    }
    let mut rows: Vec<InputRows> = counts
        .iter()
        .map(|&n| InputRows {
            host: Vec::with_capacity(n),
            activities: Vec::new(),
        })
        .collect();
    for i in 0..trace.host.len() {
        rows[trace.host.input[i] as usize].host.push(i as u32);
    }
    for a in 0..trace.activities.len() {
        rows[trace.activities.input[a] as usize].activities.push(a);
    }
    let is_backward = trace.names.per_name(|n| n.starts_with(BACKWARD_OP));
    let mut merged: BTreeMap<String, Merged> = BTreeMap::new();
    for (input, rows) in rows.iter().enumerate() {
        let main = main_thread(trace, &rows.host, &is_backward);
        let occurrences = occurrences(inp, input, &rows.host, main, &is_backward);
        if occurrences.is_empty() {
            continue;
        }
        merge_input(inp, input, main, &rows.activities, occurrences, &mut merged);
    }
    tree_rows(merged)
}

/// Host time ranges of one input that count: inside a kept step's CPU range, or anywhere in an
/// input without steps.
fn in_kept_step(steps: &Steps, input: usize) -> impl Fn(i64) -> bool + '_ {
    // Steps never overlap and are sorted by start.
    let kept: Vec<(i64, i64)> = steps
        .kept(input)
        .map(|(_, s)| (s.cpu_start_ns, s.cpu_end_ns))
        .collect();
    let no_steps = steps.per_input[input].is_empty();
    move |t| {
        let k = kept.partition_point(|s| s.0 <= t);
        no_steps || (k > 0 && t < kept[k - 1].1)
    }
}

/// Names by which a user marks the whole forward or backward pass (the derived phase would
/// repeat it); `FeedForward` or `layer3.forward` do not count.
fn user_marks_phase(name: &str) -> (bool, bool) {
    let lower = name.trim().to_ascii_lowercase();
    (
        matches!(
            lower.as_str(),
            "forward" | "fwd" | "forward_pass" | "forward pass"
        ),
        matches!(
            lower.as_str(),
            "backward" | "bwd" | "backward_pass" | "backward pass"
        ),
    )
}

/// The occurrences of one input: its annotations, and forward / backward phases where the user
/// did not mark them.
fn occurrences(
    inp: &Inputs,
    input: usize,
    rows: &[u32],
    main: Option<u32>,
    is_backward: &[bool],
) -> Vec<Occurrence> {
    let trace = inp.trace;
    let host = &trace.host;
    let names = &trace.names;
    let in_step = in_kept_step(inp.steps, input);
    let mut out = Vec::new();
    let mut user_marks = (false, false); // the user marked forward, backward
    for i in rows.iter().map(|&i| i as usize) {
        if host.kind[i] != HostKind::Annotation || host.dur_ns.get(i) <= 0 {
            continue;
        }
        let name = names.get(host.name[i]);
        if is_not_a_region(name) || !in_step(host.ts_ns[i]) {
            continue;
        }
        let kind = if is_pytorch_phase(name) {
            RegionKind::Phase
        } else {
            let (f, b) = user_marks_phase(name);
            user_marks.0 |= f;
            user_marks.1 |= b;
            RegionKind::Annotation
        };
        out.push(Occurrence {
            start: host.ts_ns[i],
            end: host.ts_ns[i].saturating_add(host.dur_ns.get(i)),
            thread: host.thread[i],
            name: name.to_string(),
            kind,
        });
    }
    if let Some(main) = main {
        derive_phases(inp, input, rows, main, is_backward, &mut out, user_marks);
    }
    out
}

/// The main thread: the one with the steps' ranges, else the one with the most cpu_ops among
/// those that run no autograd engine ops (the backward thread has many of its own).
fn main_thread(trace: &Trace, rows: &[u32], is_backward: &[bool]) -> Option<u32> {
    let host = &trace.host;
    let mut ops: HashMap<u32, (bool, u64)> = HashMap::default();
    for i in rows.iter().map(|&i| i as usize) {
        if host.kind[i] == HostKind::Annotation
            && step_number(trace.names.get(host.name[i])).is_some()
        {
            return Some(host.thread[i]);
        }
        if host.kind[i] == HostKind::CpuOp {
            let e = ops.entry(host.thread[i]).or_default();
            e.0 |= is_backward[host.name[i].index()];
            e.1 += 1;
        }
    }
    ops.into_iter()
        .max_by_key(|&(t, (backward, n))| (!backward, n, std::cmp::Reverse(t)))
        .map(|(t, _)| t)
}

/// Whether one of the sorted `times` lies in `[a, b]`.
fn any_in(times: &[i64], a: i64, b: i64) -> bool {
    let k = times.partition_point(|&t| t < a);
    k < times.len() && times[k] <= b
}

/// Whether `[s, e]` lies inside one of the sorted, disjoint `spans`.
fn inside_any(spans: &[(i64, i64)], s: i64, e: i64) -> bool {
    let k = spans.partition_point(|x| x.0 <= s);
    k > 0 && e <= spans[k - 1].1
}

/// The main thread's outermost cpu_ops, by start: (start, end, name).
fn main_outermost(
    host: &crate::model::HostEvents,
    rows: &[u32],
    main: u32,
) -> Vec<(i64, i64, NameId)> {
    let op = |i: u32| {
        let i = i as usize;
        let s = host.ts_ns[i];
        (s, s.saturating_add(host.dur_ns.get(i).max(0)), host.name[i])
    };
    let key = |i: u32| {
        let (s, e, n) = op(i);
        (s, std::cmp::Reverse(e), n)
    };
    let main_ops = rows
        .iter()
        .copied()
        .filter(|&i| host.kind[i as usize] == HostKind::CpuOp && host.thread[i as usize] == main);
    let outermost_of = |ops: &mut dyn Iterator<Item = u32>| {
        let mut outermost: Vec<(i64, i64, NameId)> = Vec::new();
        for op in ops.map(op) {
            match outermost.last() {
                Some(&(_, le, _)) if op.0 < le => {}
                _ => outermost.push(op),
            }
        }
        outermost
    };
    // Profilers write a thread's ops in order: read in place then (millions of them on a large
    // trace), sorted only where they are not.
    if main_ops.clone().is_sorted_by_key(key) {
        return outermost_of(&mut main_ops.clone());
    }
    let mut sorted: Vec<u32> = main_ops.collect();
    sorted.sort_unstable_by_key(|&i| key(i));
    outermost_of(&mut sorted.into_iter())
}

/// The backward runs of one input: runs of autograd engine ops with no main-thread op or step
/// starting between them, each from the main thread's hand-over to its resumption.
fn backward_runs(
    inp: &Inputs,
    input: usize,
    rows: &[u32],
    is_backward: &[bool],
    outermost: &[(i64, i64, NameId)],
    out: &[Occurrence],
    main: u32,
) -> Vec<(i64, i64, u32)> {
    let host = &inp.trace.host;
    let in_step = in_kept_step(inp.steps, input);
    let mut backward_ops: Vec<(i64, i64, u32)> = rows
        .iter()
        .map(|&i| i as usize)
        .filter(|&i| host.kind[i] == HostKind::CpuOp && is_backward[host.name[i].index()])
        .filter(|&i| in_step(host.ts_ns[i]))
        .map(|i| {
            let s = host.ts_ns[i];
            (
                s,
                s.saturating_add(host.dur_ns.get(i).max(0)),
                host.thread[i],
            )
        })
        .collect();
    backward_ops.sort_unstable();
    let step_starts: Vec<i64> = inp.steps.per_input[input]
        .iter()
        .map(|s| s.cpu_start_ns)
        .collect();
    let main_starts: Vec<i64> = outermost.iter().map(|o| o.0).collect();
    // Backward runs: a main-thread op or a step starting between two engine ops splits them.
    let mut backward: Vec<(i64, i64, u32)> = Vec::new();
    for (s, e, t) in backward_ops {
        match backward.last_mut() {
            Some(run)
                if !any_in(&main_starts, run.1, s)
                    && !any_in(&step_starts, run.1.saturating_add(1), s) =>
            {
                run.1 = run.1.max(e);
            }
            _ => backward.push((s, e, t)),
        }
    }
    // Each run starts where the main thread handed over: the end of its last op before it (the
    // engine thread wakes up after; CUDA events around `loss.backward()` count that wait), or
    // that op's start when it is the gradient seed `loss.backward()` makes (`aten::ones_like`).
    let seed = inp.trace.names.lookup("aten::ones_like");
    let mut prev_end = i64::MIN;
    for run in &mut backward {
        let k = main_starts.partition_point(|&t| t < run.0);
        if k > 0 {
            let (op_start, op_end, name) = outermost[k - 1];
            let handover = if Some(name) == seed { op_start } else { op_end };
            if handover <= run.0
                && handover >= prev_end
                && !any_in(&step_starts, handover.saturating_add(1), run.0)
            {
                run.0 = handover;
            }
        }
        prev_end = run.1;
    }
    // ... and ends where the main thread resumed (its next op or range, within the step):
    // `loss.backward()` returns after the engine's last op, and events around it count the
    // wait.
    // (the ends of its ranges too: a range around `loss.backward()` closes when it returns).
    let mut resumes: Vec<i64> = out
        .iter()
        .filter(|o| o.thread == main)
        .flat_map(|o| [o.start, o.end])
        .chain(main_starts.iter().copied())
        .collect();
    resumes.sort_unstable();
    for run in &mut backward {
        let next = |times: &[i64]| times.get(times.partition_point(|&t| t < run.1)).copied();
        let step_end = inp.steps.per_input[input]
            .iter()
            .find(|s| s.cpu_start_ns <= run.0 && run.0 < s.cpu_end_ns)
            .map(|s| s.cpu_end_ns);
        if let Some(resume) = [next(&resumes), step_end].into_iter().flatten().min() {
            run.1 = run.1.max(resume);
        }
    }
    backward
}

/// Forward and backward phases derived from the ops, where the user did not mark them:
/// backward, each run of `autograd::engine::evaluate_function` ops (on the autograd thread) with
/// no main-thread op starting between them, from where the main thread handed over (the end of
/// its last op before the run: the `loss.backward()` call); forward, the run of the main
/// thread's outermost ops that a backward follows (outside the optimizer's ranges), or in an
/// inference trace with steps, each step's run.
fn derive_phases(
    inp: &Inputs,
    input: usize,
    rows: &[u32],
    main: u32,
    is_backward: &[bool],
    out: &mut Vec<Occurrence>,
    (user_forward, user_backward): (bool, bool),
) {
    let trace = inp.trace;
    let host = &trace.host;
    let in_step = in_kept_step(inp.steps, input);
    let outermost = main_outermost(host, rows, main);
    let step_starts: Vec<i64> = inp.steps.per_input[input]
        .iter()
        .map(|s| s.cpu_start_ns)
        .collect();
    let backward = backward_runs(inp, input, rows, is_backward, &outermost, out, main);
    if !user_backward {
        out.extend(backward.iter().map(|&(start, end, thread)| Occurrence {
            start,
            end,
            thread,
            name: "backward".into(),
            kind: RegionKind::Phase,
        }));
    }
    if user_forward || (step_starts.is_empty() && backward.is_empty()) {
        return;
    }
    // Forward runs: outermost main-thread ops outside backward runs and optimizer phases, cut
    // where a step, a backward run or an optimizer phase starts.
    let mut optimizer: Vec<(i64, i64)> = out
        .iter()
        .filter(|o| o.name.starts_with("Optimizer.") || o.name.starts_with("enumerate(DataLoader)"))
        .map(|o| (o.start, o.end))
        .collect();
    optimizer.sort_unstable();
    let optimizer = crate::analysis::time::partition::merge(optimizer, 0);
    let backward_spans: Vec<(i64, i64)> = backward.iter().map(|b| (b.0, b.1)).collect();
    let mut cuts: Vec<i64> = step_starts.clone();
    cuts.extend(backward.iter().map(|b| b.0));
    cuts.extend(optimizer.iter().map(|o| o.0));
    cuts.sort_unstable();
    let mut forward: Vec<(i64, i64)> = Vec::new();
    for (s, e, _) in outermost {
        if !in_step(s) || inside_any(&optimizer, s, e) || inside_any(&backward_spans, s, e) {
            continue;
        }
        match forward.last_mut() {
            // A cut at or after the run's end and at or before this op starts it anew.
            Some(run) if !any_in(&cuts, run.1, s) => run.1 = run.1.max(e),
            _ => forward.push((s, e)),
        }
    }
    // In training, forward is the run a backward follows (in the same step; optimizer ranges
    // such as a `zero_grad` after the loss may sit between), the longest if several do; ops
    // between the optimizer and the next step's forward, such as logging, are not forward.
    if !backward.is_empty() {
        let backward_starts: Vec<i64> = backward.iter().map(|b| b.0).collect();
        let mut longest: BTreeMap<usize, usize> = BTreeMap::new();
        for (f, &(start, end)) in forward.iter().enumerate() {
            let k = backward_starts.partition_point(|&t| t < end);
            if k == backward_starts.len()
                || any_in(&step_starts, end.saturating_add(1), backward_starts[k])
            {
                continue;
            }
            let best = longest.entry(k).or_insert(f);
            if end - start > forward[*best].1 - forward[*best].0 {
                *best = f;
            }
        }
        let keep: std::collections::BTreeSet<usize> = longest.into_values().collect();
        let mut index = 0;
        forward.retain(|_| {
            index += 1;
            keep.contains(&(index - 1))
        });
    }
    // A run takes in the main-thread ranges it cuts through at either end (DDP's
    // `DistributedDataParallel.forward` starts before the first op and ends before the loss),
    // so they nest inside it; not those reaching past the next cut (a range around forward and
    // backward together) or its other end.
    for run in &mut forward {
        let (s, e) = *run;
        let next_cut = cuts
            .get(cuts.partition_point(|&t| t < e))
            .copied()
            .unwrap_or(i64::MAX);
        for o in out.iter().filter(|o| o.thread == main) {
            if o.start < s && s < o.end && o.end <= e {
                run.0 = run.0.min(o.start);
            }
            if s <= o.start && o.start < e && e < o.end && o.end <= next_cut {
                run.1 = run.1.max(o.end);
            }
        }
    }
    out.extend(forward.into_iter().map(|(start, end)| Occurrence {
        start,
        end,
        thread: main,
        name: "forward".into(),
        kind: RegionKind::Phase,
    }));
}

/// Nests one input's occurrences (a region's parent is the innermost one containing it on its
/// own thread or on the main thread, which waits while the autograd thread runs) and adds each
/// occurrence's numbers to the row of its path.
fn merge_input(
    inp: &Inputs,
    input: usize,
    main: Option<u32>,
    activities: &[usize],
    mut occ: Vec<Occurrence>,
    merged: &mut BTreeMap<String, Merged>,
) {
    let trace = inp.trace;
    let acts = &trace.activities;
    let rank = trace.inputs[input].rank;
    // Phases first among equal spans, so a derived phase holds the annotation that matches it.
    occ.sort_by(|a, b| {
        (a.start, std::cmp::Reverse(a.end), b.kind, &a.name).cmp(&(
            b.start,
            std::cmp::Reverse(b.end),
            a.kind,
            &b.name,
        ))
    });
    // The input's launches in scope, by launch time.
    let mut launches: Vec<(i64, u32)> = activities
        .iter()
        .copied()
        .filter(|&a| inp.in_scope[a])
        .filter_map(|a| Some((trace.host.ts_ns[inp.links.launch[a]? as usize], a as u32)))
        .collect();
    launches.sort_unstable();
    // Per device, the ends of all its activities (in scope or not: the previous step's tail
    // keeps the GPU busy), sorted.
    let mut ends: HashMap<u32, Vec<i64>> = HashMap::default();
    for &a in activities {
        ends.entry(acts.device[a]).or_default().push(acts.end_ns(a));
    }
    for e in ends.values_mut() {
        e.sort_unstable();
    }
    let gpu = Launched {
        launches: &launches,
        ends: &ends,
    };
    let base = occ.first().map_or(0, |o| o.start);
    let mut paths: Vec<String> = Vec::with_capacity(occ.len());
    let mut depths: Vec<u32> = Vec::with_capacity(occ.len());
    let mut stack: Vec<usize> = Vec::new();
    for (k, o) in occ.iter().enumerate() {
        while stack.last().is_some_and(|&p| occ[p].end <= o.start) {
            stack.pop();
        }
        let parent = stack.iter().rev().copied().find(|&p| {
            let q = &occ[p];
            q.start <= o.start && o.end <= q.end && (q.thread == o.thread || Some(q.thread) == main)
        });
        let (path, depth) = match parent {
            Some(p) => (
                format!("{}{PATH_SEPARATOR}{}", paths[p], o.name),
                depths[p] + 1,
            ),
            None => (o.name.clone(), 0),
        };
        let m = merged.entry(path.clone()).or_insert_with(|| Merged {
            first_offset: i64::MAX,
            ..Default::default()
        });
        m.kind = Some(m.kind.map_or(o.kind, |k| k.min(o.kind)));
        m.name.clone_from(&o.name);
        m.depth = depth;
        m.parent = parent.map(|p| paths[p].clone());
        m.first_offset = m.first_offset.min(o.start - base);
        m.count += 1;
        m.cpu_ns = m.cpu_ns.saturating_add(o.end - o.start);
        m.ranks.extend(rank);
        add_gpu(inp, input, &gpu, o, m);
        paths.push(path);
        depths.push(depth);
        stack.push(k);
    }
}

/// One input's launches in scope by launch time, and per device the sorted ends of all its
/// activities.
struct Launched<'a> {
    launches: &'a [(i64, u32)],
    ends: &'a HashMap<u32, Vec<i64>>,
}

impl Launched<'_> {
    /// The last time before `first` that the device finished something (`None`: never).
    fn last_end_before(&self, device: u32, first: i64) -> Option<i64> {
        let e = self.ends.get(&device)?;
        let k = e.partition_point(|&t| t <= first);
        (k > 0).then(|| e[k - 1])
    }
}

/// Adds the GPU work launched inside one occurrence: durations, per bucket, its span on each
/// device and that span's time partition.
fn add_gpu(inp: &Inputs, input: usize, gpu: &Launched, o: &Occurrence, m: &mut Merged) {
    let acts = &inp.trace.activities;
    let launches = gpu.launches;
    // Half-open: a launch at the instant one range ends and the next begins is the next's.
    let lo = launches.partition_point(|l| l.0 < o.start);
    let hi = launches.partition_point(|l| l.0 < o.end);
    let mut spans: BTreeMap<u32, (i64, i64)> = BTreeMap::new();
    for &(_, a) in &launches[lo..hi] {
        let a = a as usize;
        m.gpu_ns = m.gpu_ns.saturating_add(acts.dur_ns[a]);
        m.launches += 1;
        m.buckets[partition::bucket_index(inp.activity_buckets[a])] += acts.dur_ns[a];
        let span = spans
            .entry(acts.device[a])
            .or_insert((acts.ts_ns[a], acts.end_ns(a)));
        *span = (span.0.min(acts.ts_ns[a]), span.1.max(acts.end_ns(a)));
    }
    // Events around the range start timing when the host reaches it or the GPU finishes the
    // work before it, whichever is later: the GPU's idle time between that and the first
    // activity is the region's (its host work held the first launch back).
    if let Some((&device, &(first, end))) = spans.iter().min_by_key(|(d, s)| (s.0, **d)) {
        let free = gpu.last_end_before(device, first).unwrap_or(i64::MIN);
        let start = o.start.max(free).min(first);
        // The closing event fires when the host reaches it or the GPU is done, the later.
        m.elapsed_ns = m.elapsed_ns.saturating_add(end.max(o.end) - start);
    }
    for (device, (s, e)) in spans {
        m.span_ns = m.span_ns.saturating_add(e - s);
        if let Some(dev) = inp.devices.get(&(input as u32, device)) {
            m.partition.add(&dev.partition(s, e, &inp.timelines[input]));
        }
    }
}

/// The merged rows in pre-order: each region, then its children, siblings by first occurrence.
fn tree_rows(merged: BTreeMap<String, Merged>) -> Vec<RegionRow> {
    let mut children: BTreeMap<Option<String>, Vec<(i64, String)>> = BTreeMap::new();
    for (path, m) in &merged {
        children
            .entry(m.parent.clone())
            .or_default()
            .push((m.first_offset, path.clone()));
    }
    for list in children.values_mut() {
        list.sort();
    }
    let mut out = Vec::with_capacity(merged.len());
    let mut todo: Vec<String> = children
        .get(&None)
        .map(|l| l.iter().rev().map(|c| c.1.clone()).collect())
        .unwrap_or_default();
    while let Some(path) = todo.pop() {
        if let Some(list) = children.get(&Some(path.clone())) {
            todo.extend(list.iter().rev().map(|c| c.1.clone()));
        }
        let m = &merged[&path];
        let bucket_total: i64 = m.buckets.iter().sum();
        let mut buckets: Vec<RegionBucket> = Bucket::ALL
            .iter()
            .map(|&b| RegionBucket {
                bucket: b,
                kernel_ns: m.buckets[partition::bucket_index(b)],
                pct: crate::analysis::numbers::pct(
                    m.buckets[partition::bucket_index(b)],
                    bucket_total,
                ),
            })
            .filter(|r| r.kernel_ns > 0)
            .collect();
        buckets.sort_by(|a, b| {
            b.kernel_ns
                .cmp(&a.kernel_ns)
                .then(a.bucket.as_str().cmp(b.bucket.as_str()))
        });
        out.push(RegionRow {
            name: m.name.clone(),
            path,
            kind: m.kind.unwrap_or(RegionKind::Annotation),
            depth: m.depth,
            count: m.count,
            cpu_ns: m.cpu_ns,
            gpu_ns: m.gpu_ns,
            gpu_span_ns: m.span_ns,
            gpu_elapsed_ns: m.elapsed_ns,
            launches: m.launches,
            ranks: m.ranks.iter().copied().collect(),
            buckets,
            time_partition: partition::rows(&m.partition, m.span_ns),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorch_phases_and_non_regions() {
        assert!(is_pytorch_phase("Optimizer.step#AdamW.step"));
        assert!(is_pytorch_phase(
            "FSDP::post_backward_reduce (transformer.h.5)"
        ));
        assert!(is_pytorch_phase("DistributedDataParallel.forward"));
        assert!(!is_pytorch_phase("forward"));
        assert!(is_not_a_region("ProfilerStep#3"));
        assert!(is_not_a_region("nccl:all_reduce"));
        assert!(!is_not_a_region("layer_0"));
    }

    #[test]
    fn a_user_marks_a_phase_by_its_whole_name() {
        assert_eq!(user_marks_phase("forward"), (true, false));
        assert_eq!(user_marks_phase(" Backward "), (false, true));
        assert_eq!(user_marks_phase("bwd"), (false, true));
        assert_eq!(user_marks_phase("FeedForward"), (false, false));
        assert_eq!(user_marks_phase("layer3.forward"), (false, false));
        assert_eq!(
            user_marks_phase("[Strategy]DDPStrategy.backward"),
            (false, false)
        );
    }

    #[test]
    fn sorted_lookups_are_inclusive_where_they_say() {
        let times = [10, 20, 30];
        assert!(any_in(&times, 20, 20));
        assert!(any_in(&times, 11, 25));
        assert!(!any_in(&times, 21, 29));
        assert!(!any_in(&times, 31, i64::MAX));
        let spans = [(0, 10), (20, 30)];
        assert!(inside_any(&spans, 20, 30));
        assert!(inside_any(&spans, 2, 3));
        assert!(!inside_any(&spans, 5, 25));
        assert!(!inside_any(&spans, 12, 15));
    }
}
