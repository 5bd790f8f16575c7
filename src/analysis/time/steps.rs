//! Steps (`ProfilerStep#N` CPU ranges, extended to the GPU work launched inside them, and made
//! disjoint as torch_tb_profiler does), the analysis window, and the `--steps A..B` /
//! `--skip-warmup` / `--phase` selection (FEED.md "Window", "Steps"). Inputs without
//! `ProfilerStep#N` take their iterations from a marker ([`crate::analysis::time::iterations`]) as steps.

use crate::analysis::numbers::median;
use crate::analysis::time::iterations::{self, IterationMarker};
use crate::analysis::time::links::Links;
use crate::analysis::time::names::step_number;
use crate::analysis::time::phases::{Exclusion, Phase};
use crate::model::{HostKind, Trace};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Mean, population standard deviation and coefficient of variation of step times.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StepStats {
    /// Mean step time, in ns.
    pub mean: f64,
    /// Population standard deviation, in ns.
    pub std: f64,
    /// Coefficient of variation (std over mean), in percent.
    pub cv_pct: f64,
}

/// One step of one input.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct StepWindow {
    pub number: u64,
    /// The CPU `ProfilerStep#N` range (which launches belong to the step).
    pub cpu_start_ns: i64,
    pub cpu_end_ns: i64,
    /// The step's window: from the later of its CPU start and the previous step's end (GPU work
    /// of the previous step still running belongs to that step) ...
    pub start_ns: i64,
    /// ... to the later of its CPU end and the end of the last GPU activity launched inside it.
    pub end_ns: i64,
    /// Iterations only: the spans inside the window its stream sat queued behind work the trace
    /// does not show (see [`iterations::queued_gaps`]); not part of its time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<(i64, i64)>,
}

impl StepWindow {
    /// The step's time: its window less the queued spans.
    pub fn dur_ns(&self) -> i64 {
        self.end_ns
            .saturating_sub(self.start_ns)
            .saturating_sub(self.blocked_ns())
    }
    pub fn blocked_ns(&self) -> i64 {
        self.blocked.iter().map(|(a, b)| b - a).sum()
    }
    /// The window as the spans between its queued ones (the whole window for a step).
    pub fn pieces(&self) -> Vec<(i64, i64)> {
        let mut out = Vec::with_capacity(self.blocked.len() + 1);
        let mut at = self.start_ns;
        for &(a, b) in &self.blocked {
            if a > at {
                out.push((at, a));
            }
            at = at.max(b);
        }
        if self.end_ns > at || out.is_empty() {
            out.push((at.min(self.end_ns), self.end_ns));
        }
        out
    }
    pub fn contains_cpu(&self, t: i64) -> bool {
        t >= self.cpu_start_ns && t < self.cpu_end_ns.max(self.cpu_start_ns.saturating_add(1))
    }
}

/// `--steps A..B` (half-open, like Rust ranges), `A..=B`, `A..`, `..B` or a single `N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StepRange {
    /// Inclusive (None: from the first step).
    pub start: Option<u64>,
    /// Exclusive.
    pub end: Option<u64>,
}

impl StepRange {
    /// Whether step number `n` is in the range.
    pub fn contains(&self, n: u64) -> bool {
        self.start.is_none_or(|s| n >= s) && self.end.is_none_or(|e| n < e)
    }
}

/// As given on the command line (`2..5`, `3..`, `..4`), half-open.
impl std::fmt::Display for StepRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let part = |x: Option<u64>| x.map_or(String::new(), |n| n.to_string());
        write!(f, "{}..{}", part(self.start), part(self.end))
    }
}

impl FromStr for StepRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let num = |x: &str| {
            x.trim()
                .parse::<u64>()
                .map_err(|_| format!("'{x}' is not a step number"))
        };
        let s = s.trim();
        let range = if let Some((a, b)) = s.split_once("..=") {
            StepRange {
                start: (!a.is_empty()).then(|| num(a)).transpose()?,
                end: Some(num(b)?.checked_add(1).ok_or("step number too large")?),
            }
        } else if let Some((a, b)) = s.split_once("..") {
            StepRange {
                start: (!a.is_empty()).then(|| num(a)).transpose()?,
                end: (!b.is_empty()).then(|| num(b)).transpose()?,
            }
        } else {
            let n = num(s)?;
            StepRange {
                start: Some(n),
                end: Some(n.checked_add(1).ok_or("step number too large")?),
            }
        };
        if let (Some(a), Some(b)) = (range.start, range.end) {
            if b <= a {
                return Err(format!("empty step range '{s}'"));
            }
        }
        Ok(range)
    }
}

/// Steps per input, sorted by start, each extended to the GPU work launched inside it; and per
/// activity, the (input's) step index it was launched in.
pub struct Steps {
    pub per_input: Vec<Vec<StepWindow>>,
    /// Per activity, the index of the step (of its input) it was launched in.
    pub of_activity: Vec<Option<u32>>,
    /// Per input and step: kept by the selection (all, without one).
    pub selected: Vec<Vec<bool>>,
    /// Per input: the marker its iterations came from (None: `ProfilerStep#N` or no steps).
    pub marker: Vec<Option<IterationMarker>>,
    /// Per input and step: its phase (`step` for a `ProfilerStep#N`).
    pub phase: Vec<Vec<Phase>>,
    /// Per input and iteration: why it is not steady state, if it is not.
    pub excluded: Vec<Vec<Option<Exclusion>>>,
}

impl Steps {
    /// The steps of every input: its `ProfilerStep#N` ranges, else (or with `marker`, instead)
    /// its iterations; `dispatch_threshold_ns` tells queued time from dispatch.
    pub fn find(
        trace: &Trace,
        links: &Links,
        marker: Option<&str>,
        dispatch_threshold_ns: i64,
    ) -> Steps {
        let host = &trace.host;
        let mut per_input: Vec<Vec<StepWindow>> = vec![Vec::new(); trace.inputs.len()];
        if marker.is_none() {
            for i in 0..host.len() {
                if host.kind[i] == HostKind::Annotation {
                    if let Some(n) = step_number(trace.names.get(host.name[i])) {
                        let end = host.ts_ns[i].saturating_add(host.dur_ns.get(i));
                        per_input[host.input[i] as usize].push(StepWindow {
                            number: n,
                            cpu_start_ns: host.ts_ns[i],
                            cpu_end_ns: end,
                            start_ns: host.ts_ns[i],
                            end_ns: end,
                            blocked: Vec::new(),
                        });
                    }
                }
            }
        }
        let has_steps: Vec<bool> = per_input.iter().map(|s| !s.is_empty()).collect();
        let marked = iterations::find(trace, links, marker, &has_steps);
        let mut stated: Vec<Vec<Option<Phase>>> = vec![Vec::new(); trace.inputs.len()];
        let mut pids: Vec<Vec<u64>> = vec![Vec::new(); trace.inputs.len()];
        for (input, m) in marked.iter().enumerate() {
            let Some(m) = m else { continue };
            per_input[input] = m
                .occurrences
                .iter()
                .enumerate()
                .map(|(k, &h)| StepWindow {
                    number: k as u64,
                    cpu_start_ns: host.ts_ns[h as usize],
                    cpu_end_ns: host.end_ns(h as usize),
                    start_ns: host.ts_ns[h as usize],
                    end_ns: host.end_ns(h as usize),
                    blocked: Vec::new(),
                })
                .collect();
            stated[input] = m.stated.clone();
            pids[input] = m
                .occurrences
                .iter()
                .map(|&h| host.pid(h as usize))
                .collect();
        }
        let marker: Vec<Option<IterationMarker>> =
            marked.into_iter().map(|m| m.map(|m| m.marker)).collect();
        for s in &mut per_input {
            s.sort_by_key(|x| (x.cpu_start_ns, x.number));
        }
        let acts = &trace.activities;
        let mut of_activity = vec![None; acts.len()];
        // Activities are placed by their launch call. One whose call is missing but whose
        // correlation id is below every linked one of its input was launched before the
        // profiler's window (a schedule's warm-up steps keep their kernels, not their calls):
        // it belongs to no step, even when it runs inside one. Others without a call (GPU-only
        // traces, calls the profiler lost) are placed by their own start.
        let mut first_linked = vec![u64::MAX; trace.inputs.len()];
        for (a, l) in links.launch.iter().enumerate() {
            if l.is_some() && acts.correlation.get(a) != 0 {
                let f = &mut first_linked[acts.input[a] as usize];
                *f = (*f).min(acts.correlation.get(a));
            }
        }
        let launched_before_window = |a: usize| {
            links.launch[a].is_none()
                && acts.correlation.get(a) != 0
                && acts.correlation.get(a) < first_linked[acts.input[a] as usize]
        };
        // Per input: the first GPU start of its first step.
        let mut first_step_gpu_start: Vec<Option<i64>> = vec![None; trace.inputs.len()];
        for (a, slot) in of_activity.iter_mut().enumerate() {
            let input = acts.input[a] as usize;
            let s = &mut per_input[input];
            if s.is_empty() || launched_before_window(a) {
                continue;
            }
            let t = links.launch_ts(trace, a);
            let k = s.partition_point(|x| x.cpu_start_ns <= t);
            if k > 0 && s[k - 1].contains_cpu(t) {
                *slot = Some((k - 1) as u32);
                let end = acts.end_ns(a);
                if end > s[k - 1].end_ns {
                    s[k - 1].end_ns = end;
                }
                if k == 1 {
                    let first = &mut first_step_gpu_start[input];
                    *first = Some(first.map_or(acts.ts_ns[a], |f| f.min(acts.ts_ns[a])));
                }
            }
        }
        // The first step waits for GPU work launched before it that finishes before the step's own
        // work starts (the previous, unprofiled step's tail), as torch_tb_profiler does.
        let mut before_first: Vec<i64> = per_input
            .iter()
            .map(|s| s.first().map_or(i64::MIN, |x| x.cpu_start_ns))
            .collect();
        for a in (0..acts.len()).filter(|&a| of_activity[a].is_none()) {
            let input = acts.input[a] as usize;
            if let Some(first_gpu) = first_step_gpu_start[input] {
                let end = acts.end_ns(a);
                if end < first_gpu && end > before_first[input] {
                    before_first[input] = end;
                }
            }
        }
        // Steps never overlap: each starts where the previous one ended, if that is later than
        // its CPU start (a GPU-bound loop's GPU tail runs into the next step's CPU range).
        for (s, &first_start) in per_input.iter_mut().zip(&before_first) {
            let mut prev_end = first_start;
            for step in s.iter_mut() {
                step.start_ns = step.cpu_start_ns.max(prev_end);
                step.end_ns = step.end_ns.max(step.start_ns);
                prev_end = step.end_ns;
            }
        }
        let selected = per_input.iter().map(|s| vec![true; s.len()]).collect();
        let mut steps = Steps {
            phase: per_input
                .iter()
                .map(|s| vec![Phase::Step; s.len()])
                .collect(),
            excluded: per_input.iter().map(|s| vec![None; s.len()]).collect(),
            per_input,
            of_activity,
            selected,
            marker,
        };
        for input in 0..trace.inputs.len() {
            if steps.marker[input].is_some() {
                let marks = (stated[input].as_slice(), pids[input].as_slice());
                steps.describe_iterations(trace, links, input, marks, dispatch_threshold_ns);
            }
        }
        steps
    }

    /// An input's iterations: the queued spans of each window, its phase and exclusion.
    fn describe_iterations(
        &mut self,
        trace: &Trace,
        links: &Links,
        input: usize,
        (stated, pids): (&[Option<Phase>], &[u64]),
        threshold_ns: i64,
    ) {
        let acts = &trace.activities;
        let mut own: Vec<(i64, i64, i64)> = (0..acts.len())
            .filter(|&a| acts.input[a] as usize == input)
            .map(|a| {
                // Launched when its launch call returned: a slow call (a module's first load)
                // is the host's time, not a queue.
                let launched =
                    links.launch[a].map_or(acts.ts_ns[a], |h| trace.host.end_ns(h as usize));
                (acts.ts_ns[a], acts.end_ns(a), launched)
            })
            .collect();
        own.sort_unstable();
        let gaps = iterations::queued_gaps(&own, threshold_ns);
        let windows = &mut self.per_input[input];
        for w in windows.iter_mut() {
            let lo = gaps.partition_point(|g| g.1 <= w.start_ns);
            w.blocked = gaps[lo..]
                .iter()
                .take_while(|g| g.0 < w.end_ns)
                .map(|&(a, b)| (a.max(w.start_ns), b.min(w.end_ns)))
                .filter(|(a, b)| b > a)
                .collect();
        }
        // Windows keep the markers' order (both by CPU start).
        let ranges: Vec<(i64, i64, u64)> = windows
            .iter()
            .zip(pids)
            .map(|(w, &pid)| (w.cpu_start_ns, w.cpu_end_ns, pid))
            .collect();
        let phase = iterations::phases(trace, input, &ranges, stated);
        let mut excluded = iterations::host_exclusions(trace, input, &ranges);
        let durations: Vec<i64> = windows.iter().map(StepWindow::dur_ns).collect();
        iterations::mark_warmup(&phase, &durations, &mut excluded);
        self.phase[input] = phase;
        self.excluded[input] = excluded;
    }

    /// Every step number (or iteration index) of every input, before any selection, ascending.
    pub fn numbers(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.per_input.iter().flatten().map(|s| s.number).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Whether an input's steps are iterations found from a marker.
    pub fn are_iterations(&self, input: usize) -> bool {
        self.marker.get(input).is_some_and(Option::is_some)
    }

    /// Marks the steps `--steps` / `--skip-warmup` / `--phase` keep. Returns whether a selection
    /// was asked for (then only activities launched in kept steps are analyzed). On iterations,
    /// `--skip-warmup` leaves out every iteration that is not steady state.
    pub fn select(
        &mut self,
        range: Option<StepRange>,
        skip_warmup: bool,
        phase: Option<Phase>,
    ) -> bool {
        self.selected = self
            .per_input
            .iter()
            .enumerate()
            .map(|(input, steps)| {
                let first = steps.first().map(|s| s.number);
                let iterations = self.are_iterations(input);
                steps
                    .iter()
                    .enumerate()
                    .map(|(k, s)| {
                        let warmup = if iterations {
                            self.excluded[input][k].is_some()
                        } else {
                            Some(s.number) == first
                        };
                        range.is_none_or(|r| r.contains(s.number))
                            && !(skip_warmup && warmup)
                            && phase.is_none_or(|p| self.phase[input][k] == p)
                    })
                    .collect()
            })
            .collect();
        range.is_some() || skip_warmup || phase.is_some()
    }

    /// In a truncated input, leaves out the steps the cut left unfinished, from the first one to
    /// the last: a step with a kernel launch whose kernel is missing (files that write the GPU
    /// records after the host's), or whose CPU range ends after the last event the file kept
    /// (files in time order). Returns the step numbers left out, per input.
    pub fn drop_unfinished(&mut self, trace: &Trace, links: &Links) -> Vec<(usize, Vec<u64>)> {
        let host = &trace.host;
        let mut launched = vec![false; host.len()];
        for h in links.launch.iter().flatten() {
            launched[*h as usize] = true;
        }
        let is_launch = trace.names.per_name(|n| n.contains("Launch"));
        let mut out = Vec::new();
        for (input, meta) in trace.inputs.iter().enumerate() {
            if !meta.truncated || self.per_input[input].is_empty() {
                continue;
            }
            let steps = &self.per_input[input];
            let mut first_unfinished: Option<usize> = None;
            for h in 0..host.len() {
                if host.input[h] as usize != input
                    || launched[h]
                    || !matches!(host.kind[h], HostKind::Runtime | HostKind::Driver)
                    || host.correlation.get(h) == 0
                    || !is_launch[host.name[h].index()]
                {
                    continue;
                }
                let t = host.ts_ns[h];
                let k = steps.partition_point(|s| s.cpu_start_ns <= t);
                if k > 0 && steps[k - 1].contains_cpu(t) {
                    first_unfinished = Some(first_unfinished.map_or(k - 1, |f| f.min(k - 1)));
                }
            }
            // Traces written in time order lose a step's tail, launches and kernels alike: a
            // step whose CPU range ends after the last event the file kept is unfinished.
            let last_seen = (0..host.len())
                .filter(|&h| host.input[h] as usize == input)
                .map(|h| host.ts_ns[h])
                .chain(
                    (0..trace.activities.len())
                        .filter(|&a| trace.activities.input[a] as usize == input)
                        .map(|a| trace.activities.ts_ns[a]),
                )
                .max()
                .unwrap_or(i64::MAX);
            if let Some(k) = steps.iter().position(|s| s.cpu_end_ns > last_seen) {
                first_unfinished = Some(first_unfinished.map_or(k, |f| f.min(k)));
            }
            if let Some(f) = first_unfinished {
                let mut numbers = Vec::new();
                for (step, kept) in steps[f..].iter().zip(&mut self.selected[input][f..]) {
                    if *kept {
                        *kept = false;
                        numbers.push(step.number);
                    }
                }
                if !numbers.is_empty() {
                    out.push((input, numbers));
                }
            }
        }
        out
    }

    /// The kept steps of one input.
    pub fn kept(&self, input: usize) -> impl Iterator<Item = (usize, &StepWindow)> {
        self.per_input[input]
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.selected[input][*i])
    }
}

/// Step statistics without warm-up (see [`is_warmup`]; `work`: each step's GPU work, where
/// known). Returns the stats and whether the first step was such a warm-up.
pub fn step_stats(durations: &[i64], work: Option<&[i64]>) -> Option<(StepStats, bool)> {
    if durations.is_empty() {
        return None;
    }
    let mut d = durations.to_vec();
    let warmup = is_warmup(durations, work);
    if warmup {
        d.remove(0);
    }
    let n = d.len() as f64;
    let mean = d.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = d.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    let std = var.sqrt();
    let round = |x: f64| (x * 1e3).round() / 1e3;
    Some((
        StepStats {
            mean: round(mean),
            std: round(std),
            cv_pct: if mean > 0.0 {
                round(std / mean * 100.0)
            } else {
                0.0
            },
        },
        warmup,
    ))
}

/// Step 0 is a warm-up when it is more than 1.5× the median of the others, unless it is the only
/// step with the work: where each step's GPU work is known (`work`, in the order of
/// `durations`) and the others' median is under [`WARMUP_WORK_SHARE`] of step 0's, the others
/// are a tail the profiler closed (a `ProfilerStep` with no kernels), not the steady state.
pub fn is_warmup(durations: &[i64], work: Option<&[i64]>) -> bool {
    if durations.len() < 2 || durations[0] as f64 <= 1.5 * median(&durations[1..]) {
        return false;
    }
    match work.filter(|w| w.len() == durations.len()) {
        Some(w) if w[0] > 0 => median(&w[1..]) >= WARMUP_WORK_SHARE * w[0] as f64,
        _ => true,
    }
}

/// The share of step 0's GPU work the other steps' median must reach for step 0 to be a
/// warm-up: a warm-up runs the same kernels as the steps after it (more where cuDNN or Triton
/// autotune), so steps after it with almost none hold no steady state to compare with.
pub const WARMUP_WORK_SHARE: f64 = 0.02;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_ranges_parse() {
        assert_eq!(
            "2..5".parse::<StepRange>(),
            Ok(StepRange {
                start: Some(2),
                end: Some(5)
            })
        );
        assert_eq!(
            "2..=5".parse::<StepRange>(),
            Ok(StepRange {
                start: Some(2),
                end: Some(6)
            })
        );
        assert_eq!(
            "3..".parse::<StepRange>(),
            Ok(StepRange {
                start: Some(3),
                end: None
            })
        );
        assert_eq!(
            "..3".parse::<StepRange>(),
            Ok(StepRange {
                start: None,
                end: Some(3)
            })
        );
        assert_eq!(
            "4".parse::<StepRange>(),
            Ok(StepRange {
                start: Some(4),
                end: Some(5)
            })
        );
        assert!("5..2".parse::<StepRange>().is_err());
        assert!("a..b".parse::<StepRange>().is_err());
        let r: StepRange = "1..3".parse().unwrap();
        assert!(!r.contains(0) && r.contains(1) && r.contains(2) && !r.contains(3));
    }

    #[test]
    fn warmup_step_is_excluded_from_stats() {
        let (s, w) = step_stats(&[500, 100, 100, 100], None).unwrap();
        assert!(w);
        assert_eq!((s.mean, s.std), (100.0, 0.0));
        let (s, w) = step_stats(&[140, 100, 100, 100], None).unwrap();
        assert!(!w);
        assert_eq!(s.mean, 110.0);
        assert!(s.cv_pct > 15.0 && s.cv_pct < 16.0, "{s:?}");
        assert!(step_stats(&[], None).is_none());
        // The only step with GPU work is never the warm-up; one whose followers work is.
        assert!(!is_warmup(&[9_288, 49], Some(&[149, 0])));
        assert!(is_warmup(&[9_288, 49, 50], Some(&[149, 20, 21])));
        assert!(is_warmup(&[9_288, 49], None));
    }
}
