//! Before → after: two runs compared per step, so runs with different step counts, formats or
//! vendors compare (an MI300X trace against an H100 trace of the same model compares buckets).
//! The findings and the ladder come in as plain [`Outcome`] data (ids and statuses), so the
//! comparison stays in the analysis layer; `report::diff` renders it.

use crate::analysis::Analysis;
use std::collections::BTreeSet;

/// One side of a comparison: its analysis and what the layers above it concluded.
pub struct Outcome<'a> {
    pub analysis: &'a Analysis,
    /// Ids of the findings that fired.
    pub finding_ids: BTreeSet<String>,
    /// The ladder: level, name, status.
    pub ladder: Vec<(u8, String, &'static str)>,
    pub next_level: Option<u8>,
    /// Kernels replayed from CUDA/HIP graphs (the `cudagraphs_in_use` evidence), 0 without.
    pub replayed_kernels: f64,
}
use crate::classify::Bucket;
use serde::Serialize;
use std::collections::BTreeMap;

/// One quantity before and after.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Delta {
    pub name: String,
    pub base_ns: i64,
    pub new_ns: i64,
    pub delta_ns: i64,
    /// Relative change in percent; null when the base is zero.
    pub delta_pct: Option<f64>,
}

impl Delta {
    pub fn new(name: impl Into<String>, base: f64, new: f64) -> Delta {
        let (b, n) = (base.round() as i64, new.round() as i64);
        Delta {
            name: name.into(),
            base_ns: b,
            new_ns: n,
            delta_ns: n - b,
            delta_pct: (b != 0)
                .then(|| ((n - b) as f64 * 100.0 / b as f64 * 100.0).round() / 100.0),
        }
    }
}

/// A kernel's time per step before and after.
#[derive(Clone, Debug, Serialize)]
pub struct KernelDelta {
    pub name: String,
    pub bucket: Bucket,
    pub library: String,
    pub base_ns: i64,
    pub new_ns: i64,
    pub delta_ns: i64,
}

/// One side of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    pub inputs: Vec<String>,
    pub vendor: &'static str,
    pub devices: Vec<String>,
    pub steps: usize,
    pub compiled: bool,
    pub cudagraphs: bool,
    pub graph_replayed_kernels_per_step: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct LadderChange {
    pub level: u8,
    pub name: String,
    pub base: &'static str,
    pub new: &'static str,
}

/// The feed's `diff` block. Times are per step (per window when a side has no steps).
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    pub base: Side,
    pub new: Side,
    /// Mean step time (the window when there are no steps).
    pub step: Delta,
    pub gpu_busy: Delta,
    pub buckets: Vec<Delta>,
    pub time_partition: Vec<Delta>,
    /// GPU time per step by `bucket/library`.
    pub libraries: Vec<Delta>,
    pub kernels_appeared: Vec<KernelDelta>,
    pub kernels_vanished: Vec<KernelDelta>,
    pub kernels_changed: Vec<KernelDelta>,
    pub findings_resolved: Vec<String>,
    pub findings_introduced: Vec<String>,
    pub findings_remaining: Vec<String>,
    pub ladder: Vec<LadderChange>,
    pub next_level: (Option<u8>, Option<u8>),
}

fn steps_of(a: &Analysis) -> f64 {
    a.summary.step_count().max(1) as f64
}

/// Mean step time, or the window without steps.
fn step_time(a: &Analysis) -> f64 {
    match &a.summary.step_ns {
        Some(s) if a.summary.steps > 0 => s.mean,
        _ => a.summary.window_ns as f64,
    }
}

fn side(o: &Outcome) -> Side {
    let (a, replayed) = (o.analysis, o.replayed_kernels);
    Side {
        inputs: a
            .inputs
            .iter()
            .map(|i| i.path.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        vendor: a.vendor().as_str(),
        devices: a
            .inputs
            .iter()
            .flat_map(|i| i.devices.iter().map(|d| d.name.clone()))
            .filter(|n| !n.is_empty())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        steps: a.summary.steps,
        compiled: a.compile.compiled,
        cudagraphs: a.compile.cudagraphs,
        graph_replayed_kernels_per_step: (replayed / steps_of(a) * 100.0).round() / 100.0,
    }
}

/// Compares two analyses; `top` bounds the kernel lists. The analyses should list all kernels
/// (`top_kernels` unbounded) for the kernel lists to be complete.
pub fn diff(base_run: &Outcome, new_run: &Outcome, top: usize) -> Diff {
    let (base, new) = (base_run.analysis, new_run.analysis);
    let (sb, sn) = (steps_of(base), steps_of(new));
    let buckets = Bucket::ALL
        .iter()
        .map(|&b| {
            Delta::new(
                b.as_str(),
                base.bucket(b).kernel_ns as f64 / sb,
                new.bucket(b).kernel_ns as f64 / sn,
            )
        })
        .collect();
    let time_partition = base
        .time_partition
        .iter()
        .map(|r| {
            Delta::new(
                r.category.as_str(),
                r.ns as f64 / sb,
                new.partition_ns(r.category) as f64 / sn,
            )
        })
        .collect();

    let per_kernel = |a: &Analysis, s: f64| -> BTreeMap<String, (f64, Bucket, String)> {
        a.top_kernels
            .iter()
            .map(|k| {
                (
                    k.name.clone(),
                    (k.total_ns as f64 / s, k.bucket, k.library.clone()),
                )
            })
            .collect()
    };
    let (kb, kn) = (per_kernel(base, sb), per_kernel(new, sn));
    let mut libs: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for (t, i) in [(&kb, 0), (&kn, 1)] {
        for (ns, bucket, lib) in t.values() {
            let e = libs
                .entry(format!("{}/{}", bucket.as_str(), lib))
                .or_default();
            if i == 0 {
                e.0 += ns;
            } else {
                e.1 += ns;
            }
        }
    }
    let mut libraries: Vec<Delta> = libs
        .into_iter()
        .map(|(k, (b, n))| Delta::new(k, b, n))
        .collect();
    libraries.sort_by(|a, b| {
        b.delta_ns
            .abs()
            .cmp(&a.delta_ns.abs())
            .then(a.name.cmp(&b.name))
    });

    let kd = |name: &str, b: Option<&(f64, Bucket, String)>, n: Option<&(f64, Bucket, String)>| {
        let (bucket, library) = n
            .or(b)
            .map(|x| (x.1, x.2.clone()))
            .unwrap_or((Bucket::Other, String::new()));
        let (bn, nn) = (
            b.map_or(0.0, |x| x.0).round() as i64,
            n.map_or(0.0, |x| x.0).round() as i64,
        );
        KernelDelta {
            name: name.to_string(),
            bucket,
            library,
            base_ns: bn,
            new_ns: nn,
            delta_ns: nn - bn,
        }
    };
    let by_size = |v: &mut Vec<KernelDelta>| {
        v.sort_by(|a, b| {
            b.delta_ns
                .abs()
                .cmp(&a.delta_ns.abs())
                .then(a.name.cmp(&b.name))
        });
        v.truncate(top);
    };
    let mut appeared: Vec<KernelDelta> = kn
        .iter()
        .filter(|(k, _)| !kb.contains_key(*k))
        .map(|(k, v)| kd(k, None, Some(v)))
        .collect();
    let mut vanished: Vec<KernelDelta> = kb
        .iter()
        .filter(|(k, _)| !kn.contains_key(*k))
        .map(|(k, v)| kd(k, Some(v), None))
        .collect();
    let mut changed: Vec<KernelDelta> = kb
        .iter()
        .filter_map(|(k, v)| kn.get(k).map(|n| kd(k, Some(v), Some(n))))
        .filter(|d| d.delta_ns != 0)
        .collect();
    by_size(&mut appeared);
    by_size(&mut vanished);
    by_size(&mut changed);

    let (fb, fnew) = (&base_run.finding_ids, &new_run.finding_ids);
    let ladder = base_run
        .ladder
        .iter()
        .map(|(level, name, status)| LadderChange {
            level: *level,
            name: name.clone(),
            base: status,
            new: new_run
                .ladder
                .iter()
                .find(|x| x.0 == *level)
                .map_or("unknown", |x| x.2),
        })
        .collect();
    Diff {
        base: side(base_run),
        new: side(new_run),
        step: Delta::new("step", step_time(base), step_time(new)),
        gpu_busy: Delta::new(
            "gpu_busy",
            base.summary.gpu_busy_ns as f64 / sb,
            new.summary.gpu_busy_ns as f64 / sn,
        ),
        buckets,
        time_partition,
        libraries,
        kernels_appeared: appeared,
        kernels_vanished: vanished,
        kernels_changed: changed,
        findings_resolved: fb.difference(fnew).cloned().collect(),
        findings_introduced: fnew.difference(fb).cloned().collect(),
        findings_remaining: fb.intersection(fnew).cloned().collect(),
        ladder,
        next_level: (base_run.next_level, new_run.next_level),
    }
}

impl Diff {
    /// What grew by more than `pct` percent: the step time, or a bucket's time per step (buckets
    /// under 1% of the base step are too small to judge).
    pub fn regressions(&self, pct: f64) -> Vec<String> {
        let mut out = Vec::new();
        let grew = |d: &Delta| d.delta_pct.is_some_and(|p| p > pct);
        if grew(&self.step) {
            out.push(format!(
                "step time {:+.1}% ({} → {} ns)",
                self.step.delta_pct.unwrap_or(0.0),
                self.step.base_ns,
                self.step.new_ns
            ));
        }
        for b in &self.buckets {
            if grew(b) && b.base_ns as f64 >= 0.01 * self.step.base_ns as f64 {
                out.push(format!(
                    "{} {:+.1}% per step ({} → {} ns)",
                    b.name,
                    b.delta_pct.unwrap_or(0.0),
                    b.base_ns,
                    b.new_ns
                ));
            }
        }
        out
    }
}
