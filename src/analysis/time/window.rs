//! The analysis window and its partition: which activities are in scope, each device's
//! activities, the time partition of the window, of each step and of each phase, and each
//! input's GPU time per step (what the straggler is found from).

use crate::analysis::time::links::{self, Links};
use crate::analysis::time::partition::{
    self, DeviceActivities, HostTimeline, Partition, PartitionRow,
};
use crate::analysis::time::phases;
use crate::analysis::time::steps::{StepWindow, Steps};
use crate::classify::Bucket;
use crate::model::Trace;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One analyzed step: its window and time partition (summed over the input's devices).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepRow {
    /// The input's rank (None without distributed info).
    pub rank: Option<u32>,
    /// The step's `ProfilerStep#N` number (or iteration number).
    pub step: u64,
    /// Start on the trace's clock, in ns.
    pub start_ns: i64,
    /// Duration, in ns.
    pub dur_ns: i64,
    /// Union of GPU activity inside it, in ns.
    pub gpu_busy_ns: i64,
    /// Its time by category, busy and idle.
    pub time_partition: Vec<PartitionRow>,
    /// Iterations only: their phase, and the time their stream sat queued behind work the trace
    /// does not show (inside the window, not part of `dur_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<phases::Phase>,
    /// Iterations only: the time their stream sat queued behind work the trace does not show, in ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_ns: Option<i64>,
    /// Iterations only: why it is left out of its phase's steady state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<phases::Exclusion>,
}

/// Per input: the span of its kept steps (None without steps), and the host's view of it from
/// the first kept step's CPU start (a GPU-bound step's window starts after its CPU range:
/// compile and recompile events of that range are still the step's).
/// Per input, a span of time (start, end) or none.
pub(crate) type Spans = Vec<Option<(i64, i64)>>;

pub(crate) fn step_spans(trace: &Trace, steps: &Steps) -> (Spans, Spans) {
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
pub(crate) fn activities_in_scope(
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

/// The time partition of the window, of each step, and the windows the host's compile signals
/// are read in.
pub(crate) struct Partitioned {
    pub(crate) total: Partition,
    pub(crate) window_ns: i64,
    pub(crate) busy_ns: i64,
    pub(crate) host_windows: Vec<(i64, i64)>,
    pub(crate) step_rows: Vec<StepRow>,
    /// Analyzed step durations (slowest rank per step number), in step order; iterations are
    /// in `phases` instead.
    pub(crate) step_durations: Vec<(u64, i64)>,
    /// Each of those steps' GPU work (busy, the busiest rank's), in the same order.
    pub(crate) step_work: Vec<(u64, i64)>,
    pub(crate) phases: Vec<phases::PhaseTotals>,
}

/// Activities per (input, device), each graph replay's span per device (the idle time inside
/// one is `graph_gaps`), in scope only.
pub(crate) fn device_activities(
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

pub(crate) fn partition_time(
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
    let (step_rows, step_durations, step_work) = step_rows(trace, steps, devices, &step_parts);
    let phases = phase_partitions(trace, steps, devices, &step_parts);
    Partitioned {
        phases,
        total,
        window_ns,
        busy_ns: busy.round() as i64,
        host_windows,
        step_rows,
        step_durations,
        step_work,
    }
}

/// A span of an input's time without its kept iterations' queued spans.
pub(crate) fn without_blocked(
    steps: &Steps,
    input: usize,
    (w0, w1): (i64, i64),
) -> Vec<(i64, i64)> {
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
/// One number per step number, in step order.
type PerStep = Vec<(u64, i64)>;

pub(crate) fn step_rows(
    trace: &Trace,
    steps: &Steps,
    devices: &BTreeMap<(u32, u32), DeviceActivities>,
    step_parts: &[Vec<Partition>],
) -> (Vec<StepRow>, PerStep, PerStep) {
    let mut rows = Vec::new();
    let mut by_number: BTreeMap<u64, i64> = BTreeMap::new();
    let mut work: BTreeMap<u64, i64> = BTreeMap::new();
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
                let w = work.entry(s.number).or_insert(0);
                *w = (*w).max(p.busy().round() as i64);
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
    (
        rows,
        by_number.into_iter().collect(),
        work.into_iter().collect(),
    )
}

/// Per phase, its iterations' times, exclusions and time partition (buckets are added by
/// [`phase_buckets`]).
pub(crate) fn phase_partitions(
    trace: &Trace,
    steps: &Steps,
    devices: &BTreeMap<(u32, u32), DeviceActivities>,
    step_parts: &[Vec<Partition>],
) -> Vec<phases::PhaseTotals> {
    let mut by: BTreeMap<phases::Phase, phases::PhaseTotals> = BTreeMap::new();
    for input in (0..trace.inputs.len()).filter(|&i| steps.are_iterations(i)) {
        let ndev = devices
            .keys()
            .filter(|k| k.0 == input as u32)
            .count()
            .max(1) as i64;
        let mut one: BTreeMap<phases::Phase, phases::PhaseTotals> = BTreeMap::new();
        for (k, s) in steps.kept(input) {
            let phase = steps.phase[input][k];
            let t = one.entry(phase).or_insert_with(|| phases::PhaseTotals {
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
                .or_insert_with(|| phases::PhaseTotals {
                    phase,
                    ..Default::default()
                })
                .add(&t);
        }
    }
    by.into_values().collect()
}

/// Adds each phase's steady iterations' GPU time per bucket.
pub(crate) fn phase_buckets(
    trace: &Trace,
    steps: &Steps,
    activity_buckets: &[Bucket],
    in_scope: &[bool],
    phases: &mut [phases::PhaseTotals],
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

/// Per input, its GPU time per step number (communication and the rest): what the straggler
/// is found from.
pub(crate) fn step_loads(
    trace: &Trace,
    steps: &Steps,
    activity_buckets: &[Bucket],
    in_scope: &[bool],
) -> Vec<InputLoads> {
    let mut out: Vec<InputLoads> = (0..trace.inputs.len())
        .map(|i| InputLoads {
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

/// GPU time of one rank (or input) in one step: communication and the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Load {
    pub comm_ns: i64,
    pub compute_ns: i64,
}

impl Load {
    pub fn add(&mut self, o: &Load) {
        self.comm_ns += o.comm_ns;
        self.compute_ns += o.compute_ns;
    }
}

/// One input's GPU time per profiled step, what the straggler is found from.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct InputLoads {
    /// Its kept step numbers.
    pub kept: BTreeSet<u64>,
    /// Activities in scope launched in a step, by step number.
    pub per_step: BTreeMap<u64, Load>,
    /// Activities in scope launched in no step.
    pub outside: Load,
}
