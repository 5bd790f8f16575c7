//! Steps (`ProfilerStep#N` CPU ranges, extended to the GPU work launched inside them, and made
//! disjoint as torch_tb_profiler does), the analysis window, and the `--steps A..B` /
//! `--skip-warmup` selection (FEED.md "Window", "Steps").

use super::links::Links;
use crate::model::{HostKind, Trace};
use serde::Serialize;
use std::str::FromStr;

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
}

impl StepWindow {
    pub fn dur_ns(&self) -> i64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
    pub fn contains_cpu(&self, t: i64) -> bool {
        t >= self.cpu_start_ns && t < self.cpu_end_ns.max(self.cpu_start_ns.saturating_add(1))
    }
}

/// `--steps A..B` (half-open, like Rust ranges), `A..=B`, `A..`, `..B` or a single `N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StepRange {
    pub start: Option<u64>,
    /// Exclusive.
    pub end: Option<u64>,
}

impl StepRange {
    pub fn contains(&self, n: u64) -> bool {
        self.start.is_none_or(|s| n >= s) && self.end.is_none_or(|e| n < e)
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

/// `ProfilerStep#N` → N.
pub fn step_number(name: &str) -> Option<u64> {
    name.strip_prefix("ProfilerStep#")?.trim().parse().ok()
}

/// Steps per input, sorted by start, each extended to the GPU work launched inside it; and per
/// activity, the (input's) step index it was launched in.
pub struct Steps {
    pub per_input: Vec<Vec<StepWindow>>,
    /// Per activity, the index of the step (of its input) it was launched in.
    pub of_activity: Vec<Option<u32>>,
    /// Per input and step: kept by the selection (all, without one).
    pub selected: Vec<Vec<bool>>,
}

impl Steps {
    pub fn find(trace: &Trace, links: &Links) -> Steps {
        let host = &trace.host;
        let mut per_input: Vec<Vec<StepWindow>> = vec![Vec::new(); trace.inputs.len()];
        for i in 0..host.len() {
            if host.kind[i] == HostKind::Annotation {
                if let Some(n) = step_number(trace.names.get(host.name[i])) {
                    let end = host.ts_ns[i].saturating_add(host.dur_ns[i]);
                    per_input[host.input[i] as usize].push(StepWindow {
                        number: n,
                        cpu_start_ns: host.ts_ns[i],
                        cpu_end_ns: end,
                        start_ns: host.ts_ns[i],
                        end_ns: end,
                    });
                }
            }
        }
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
        Steps {
            per_input,
            of_activity,
            selected,
        }
    }

    /// Marks the steps `--steps` / `--skip-warmup` keep. Returns whether a selection was asked
    /// for (then only activities launched in kept steps are analyzed).
    pub fn select(&mut self, range: Option<StepRange>, skip_warmup: bool) -> bool {
        self.selected = self
            .per_input
            .iter()
            .map(|steps| {
                let first = steps.first().map(|s| s.number);
                steps
                    .iter()
                    .map(|s| {
                        range.is_none_or(|r| r.contains(s.number))
                            && !(skip_warmup && Some(s.number) == first)
                    })
                    .collect()
            })
            .collect();
        range.is_some() || skip_warmup
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
                    || host.correlation.get(h) == 0
                    || !matches!(host.kind[h], HostKind::Runtime | HostKind::Driver)
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

/// Step statistics without warm-up: step 0 is dropped when it is more than 1.5× the median of
/// the others. Returns the stats and whether the first step was such a warm-up.
pub fn step_stats(durations: &[i64]) -> Option<(super::StepStats, bool)> {
    if durations.is_empty() {
        return None;
    }
    let mut d = durations.to_vec();
    let warmup = is_warmup(durations);
    if warmup {
        d.remove(0);
    }
    let n = d.len() as f64;
    let mean = d.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = d.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    let std = var.sqrt();
    let round = |x: f64| (x * 1e3).round() / 1e3;
    Some((
        super::StepStats {
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

/// The median of a slice (0 for an empty one).
pub fn median(values: &[i64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    if v.len() % 2 == 1 {
        v[v.len() / 2] as f64
    } else {
        (v[v.len() / 2 - 1] as f64 + v[v.len() / 2] as f64) / 2.0
    }
}

/// Step 0 is a warm-up when it is more than 1.5× the median of the others.
pub fn is_warmup(durations: &[i64]) -> bool {
    durations.len() >= 2 && durations[0] as f64 > 1.5 * median(&durations[1..])
}

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
        let (s, w) = step_stats(&[500, 100, 100, 100]).unwrap();
        assert!(w);
        assert_eq!((s.mean, s.std), (100.0, 0.0));
        let (s, w) = step_stats(&[140, 100, 100, 100]).unwrap();
        assert!(!w);
        assert_eq!(s.mean, 110.0);
        assert!(s.cv_pct > 15.0 && s.cv_pct < 16.0, "{s:?}");
        assert!(step_stats(&[]).is_none());
    }

    #[test]
    fn step_numbers_parse() {
        assert_eq!(step_number("ProfilerStep#12"), Some(12));
        assert_eq!(step_number("ProfilerStep"), None);
    }
}
