//! From a classified trace to the numbers every report shows: the window, steps, the bucket
//! table and the top kernels. Plain data (`Serialize`), no formatting: reporters render it.

use crate::classify::{Bucket, Classified, RuleSet};
use crate::model::{HostKind, InputMeta, NameId, Trace, Vendor};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Options that change what is computed (not how it is shown).
#[derive(Clone, Debug)]
pub struct AnalysisOptions {
    /// How many rows `top_kernels` keeps.
    pub top: usize,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions { top: 20 }
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
    /// Sum over devices of each device's analysis window (see FEED.md "Window").
    pub window_ns: i64,
    /// Number of `ProfilerStep#N` ranges (0 when the trace has none).
    pub steps: usize,
    /// Step time statistics, warm-up step excluded; absent without steps.
    pub step_ns: Option<StepStats>,
    /// Union of GPU activity inside the window, summed over devices.
    pub gpu_busy_ns: i64,
    /// Sum of all GPU activity durations (overlaps counted in full).
    pub kernel_ns: i64,
    /// Share of `kernel_ns` that no rule matched.
    pub unclassified_pct: f64,
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

/// One step's window.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub number: u64,
    pub start_ns: i64,
    /// The CPU range's end, extended to the end of the last GPU activity launched inside it.
    pub end_ns: i64,
}

/// Everything the reports need.
#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub inputs: Vec<InputMeta>,
    pub summary: Summary,
    pub buckets: Vec<BucketRow>,
    pub top_kernels: Vec<KernelRow>,
    /// Steps of the first input that has any (for the header).
    pub step_list: Vec<Step>,
    /// Number of GPU activities and of distinct activity names.
    pub activities: u64,
    pub distinct_kernels: u64,
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
}

pub fn pct(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        0.0
    } else {
        // Rounded to 1e-4 so reports do not depend on float summation order.
        (part as f64 * 100.0 / whole as f64 * 1e4).round() / 1e4
    }
}

/// Classifies and aggregates.
pub fn analyze(trace: &Trace, rules: &RuleSet, opts: &AnalysisOptions) -> Analysis {
    let classified = rules.classify_trace(trace);
    let acts = &trace.activities;

    // Per distinct name: launches and time.
    let mut per_name: HashMap<NameId, (u64, i64)> = HashMap::new();
    let mut kernel_ns = 0i64;
    let mut unclassified_ns = 0i64;
    for i in 0..acts.len() {
        let e = per_name.entry(acts.name[i]).or_default();
        e.0 += 1;
        // Saturating: a corrupt trace with absurd durations must not overflow.
        e.1 = e.1.saturating_add(acts.dur_ns[i]);
        kernel_ns = kernel_ns.saturating_add(acts.dur_ns[i]);
    }
    let mut by_bucket: BTreeMap<Bucket, (i64, u64, u64)> =
        Bucket::ALL.iter().map(|&b| (b, (0, 0, 0))).collect();
    for (&name, &(launches, ns)) in &per_name {
        let c = classified.get(name);
        let e = by_bucket.entry(c.bucket).or_default();
        e.0 = e.0.saturating_add(ns);
        e.1 += launches;
        e.2 += 1;
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

    let mut kernels: Vec<(NameId, u64, i64)> =
        per_name.iter().map(|(&n, &(l, ns))| (n, l, ns)).collect();
    kernels.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then_with(|| trace.names.get(a.0).cmp(trace.names.get(b.0)))
    });
    let top_kernels = kernels
        .iter()
        .take(opts.top)
        .map(|&(n, launches, ns)| kernel_row(trace, rules, &classified, n, launches, ns, kernel_ns))
        .collect();

    let (window_ns, gpu_busy_ns, step_list, steps, step_ns) = windows_and_steps(trace);
    Analysis {
        inputs: trace.inputs.clone(),
        summary: Summary {
            window_ns,
            steps,
            step_ns,
            gpu_busy_ns,
            kernel_ns,
            unclassified_pct: pct(unclassified_ns, kernel_ns),
        },
        buckets,
        top_kernels,
        step_list,
        activities: acts.len() as u64,
        distinct_kernels: per_name.len() as u64,
    }
}

fn kernel_row(
    trace: &Trace,
    rules: &RuleSet,
    classified: &Classified,
    n: NameId,
    launches: u64,
    ns: i64,
    kernel_ns: i64,
) -> KernelRow {
    let c = classified.get(n);
    KernelRow {
        name: trace.names.get(n).to_string(),
        bucket: c.bucket,
        family: c.family.clone(),
        library: c.library.clone(),
        rule_id: c.rule.map(|r| rules.rules[r].def.id.clone()),
        launches,
        total_ns: ns,
        pct: pct(ns, kernel_ns),
    }
}

/// `ProfilerStep#N` → N.
fn step_number(name: &str) -> Option<u64> {
    name.strip_prefix("ProfilerStep#")?.trim().parse().ok()
}

/// Windows per (input, device), the steps of each input, and step statistics.
#[allow(clippy::type_complexity)]
fn windows_and_steps(trace: &Trace) -> (i64, i64, Vec<Step>, usize, Option<StepStats>) {
    let acts = &trace.activities;
    let host = &trace.host;
    let n_inputs = trace.inputs.len();

    // Steps per input, sorted by start.
    let mut steps: Vec<Vec<Step>> = vec![Vec::new(); n_inputs];
    for i in 0..host.len() {
        if host.kind[i] == HostKind::Annotation {
            if let Some(n) = step_number(trace.names.get(host.name[i])) {
                steps[host.input[i] as usize].push(Step {
                    number: n,
                    start_ns: host.ts_ns[i],
                    end_ns: host.ts_ns[i].saturating_add(host.dur_ns[i]),
                });
            }
        }
    }
    for s in &mut steps {
        s.sort_by_key(|x| (x.start_ns, x.number));
    }

    // Launch time of each correlated activity: the runtime/driver call with its correlation id.
    let mut launch_ts: HashMap<(u32, u64), i64> = HashMap::new();
    if steps.iter().any(|s| !s.is_empty()) {
        for i in 0..host.len() {
            if matches!(host.kind[i], HostKind::Runtime | HostKind::Driver)
                && host.correlation[i] != 0
            {
                launch_ts
                    .entry((host.input[i], host.correlation[i]))
                    .or_insert(host.ts_ns[i]);
            }
        }
        // Extend each step to the end of the GPU work launched inside it.
        for a in 0..acts.len() {
            let input = acts.input[a];
            let s = &mut steps[input as usize];
            if s.is_empty() {
                continue;
            }
            let t = launch_ts
                .get(&(input, acts.correlation[a]))
                .copied()
                .unwrap_or(acts.ts_ns[a]);
            let k = s.partition_point(|x| x.start_ns <= t);
            if k > 0 && t < s[k - 1].end_ns.max(s[k - 1].start_ns.saturating_add(1)) {
                let end = acts.end_ns(a);
                if end > s[k - 1].end_ns {
                    s[k - 1].end_ns = end;
                }
            }
        }
    }

    // Activity intervals per (input, device).
    let mut per_device: BTreeMap<(u32, u32), Vec<(i64, i64)>> = BTreeMap::new();
    for a in 0..acts.len() {
        per_device
            .entry((acts.input[a], acts.device[a]))
            .or_default()
            .push((acts.ts_ns[a], acts.end_ns(a)));
    }
    let mut window_ns = 0i64;
    let mut busy_ns = 0i64;
    for ((input, _device), mut iv) in per_device {
        let s = &steps[input as usize];
        let (w0, w1) = if s.is_empty() {
            (
                iv.iter().map(|x| x.0).min().unwrap_or(0),
                iv.iter().map(|x| x.1).max().unwrap_or(0),
            )
        } else {
            (
                s.iter().map(|x| x.start_ns).min().unwrap_or(0),
                s.iter().map(|x| x.end_ns).max().unwrap_or(0),
            )
        };
        window_ns = window_ns.saturating_add(w1.saturating_sub(w0).max(0));
        iv.sort_unstable();
        let (mut cur_s, mut cur_e) = (i64::MIN, i64::MIN);
        for (s0, e0) in iv {
            let (s0, e0) = (s0.max(w0), e0.min(w1));
            if e0 <= s0 {
                continue;
            }
            if s0 > cur_e {
                if cur_e > cur_s {
                    busy_ns = busy_ns.saturating_add(cur_e.saturating_sub(cur_s));
                }
                cur_s = s0;
                cur_e = e0;
            } else {
                cur_e = cur_e.max(e0);
            }
        }
        if cur_e > cur_s {
            busy_ns = busy_ns.saturating_add(cur_e.saturating_sub(cur_s));
        }
    }

    // Step time per step number: the slowest rank's.
    let mut by_number: BTreeMap<u64, i64> = BTreeMap::new();
    for s in steps.iter().flatten() {
        let d = s.end_ns.saturating_sub(s.start_ns);
        let e = by_number.entry(s.number).or_insert(d);
        *e = (*e).max(d);
    }
    let durations: Vec<i64> = by_number.values().copied().collect();
    let stats = step_stats(&durations);
    let first = steps
        .iter()
        .find(|s| !s.is_empty())
        .cloned()
        .unwrap_or_default();
    (window_ns, busy_ns, first, durations.len(), stats)
}

/// Step statistics without warm-up: step 0 is dropped when it is more than 1.5× the median of
/// the others.
pub fn step_stats(durations: &[i64]) -> Option<StepStats> {
    if durations.is_empty() {
        return None;
    }
    let mut d = durations.to_vec();
    if d.len() >= 2 {
        let mut rest = d[1..].to_vec();
        rest.sort_unstable();
        let median = if rest.len() % 2 == 1 {
            rest[rest.len() / 2] as f64
        } else {
            (rest[rest.len() / 2 - 1] + rest[rest.len() / 2]) as f64 / 2.0
        };
        if d[0] as f64 > 1.5 * median {
            d.remove(0);
        }
    }
    let n = d.len() as f64;
    let mean = d.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = d.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    let std = var.sqrt();
    let round = |x: f64| (x * 1e3).round() / 1e3;
    Some(StepStats {
        mean: round(mean),
        std: round(std),
        cv_pct: if mean > 0.0 {
            round(std / mean * 100.0)
        } else {
            0.0
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_step_is_excluded_from_stats() {
        let s = step_stats(&[500, 100, 100, 100]).unwrap();
        assert_eq!(s.mean, 100.0);
        assert_eq!(s.std, 0.0);
        let s = step_stats(&[140, 100, 100, 100]).unwrap();
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
