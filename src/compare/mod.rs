//! Before → after: two runs compared per step, so runs with different step counts, formats or
//! vendors compare (an MI300X trace against an H100 trace of the same model compares buckets).
//! The findings and the ladder come in as plain [`Outcome`] data (ids and statuses);
//! [`crate::pipeline::diff`] runs both sides and calls [`diff`], and `report::diff` renders it.
//! Ops are matched across the runs by `op_match`; `stats` says whether a change is noise.
mod applied;
pub(crate) mod op_match;
mod output;
mod samples;
pub(crate) mod stats;

use crate::analysis::Analysis;
use crate::classify::Bucket;
use crate::compare::op_match::Match;
use crate::compare::stats::{mean, Verdict};
use crate::detect::FindingId;
pub use applied::applied;
pub use output::*;
use samples::{group_series, launches_per_step, step_time, step_verdict, steps_of};
pub use samples::{samples, Samples, ROW_FLOOR_PCT, ROW_STEP_FLOOR_PCT, STEP_FLOOR_PCT};
use std::collections::BTreeMap;

/// Every matched row with its verdict, largest change first.
fn op_deltas(base: &Analysis, new: &Analysis, b: &Samples, n: &Samples) -> Vec<OpDelta> {
    let (rb, rn) = (&base.parts.op_steps, &new.parts.op_steps);
    let step_base = mean(&b.step);
    let tested: Vec<_> = op_match::match_rows(rb, rn)
        .into_iter()
        .map(|g| {
            let (sb, cb) = group_series(rb, &g.base, &b.numbers);
            let (sn, cn) = group_series(rn, &g.new, &n.numbers);
            let floor =
                (ROW_FLOOR_PCT / 100.0 * mean(&sb)).max(ROW_STEP_FLOOR_PCT / 100.0 * step_base);
            let j = stats::judge(&sb, &sn, floor);
            (g, (cb, cn), floor, j)
        })
        .collect();
    // The rows are tested together: their p-values are adjusted for it.
    let p: Vec<f64> = tested
        .iter()
        .map(|t| t.3.test.map_or(1.0, |w| w.p))
        .collect();
    let q = stats::benjamini_hochberg(&p);
    let mut out: Vec<OpDelta> = tested
        .into_iter()
        .zip(q)
        .map(|((g, (cb, cn), floor, j), q)| {
            let j = j.at_p(q, floor);
            let verdict = match g.kind {
                Match::New => Verdict::Slower,
                Match::Removed => Verdict::Faster,
                _ => j.verdict,
            };
            let bucket = {
                let mut by: BTreeMap<Bucket, i64> = BTreeMap::new();
                for &i in &g.base {
                    *by.entry(rb[i].bucket).or_default() += rb[i].ns();
                }
                for &i in &g.new {
                    *by.entry(rn[i].bucket).or_default() += rn[i].ns();
                }
                by.into_iter()
                    .max_by_key(|&(b, ns)| (ns, std::cmp::Reverse(b)))
                    .map_or(Bucket::Other, |x| x.0)
            };
            let d = Delta::new("", j.base_mean, j.new_mean);
            OpDelta {
                matched: g.kind,
                via: g.via,
                op: g.op,
                shapes: g.shapes,
                dtype: g.dtype,
                new_op: g.new_op,
                new_shapes: g.new_shapes,
                bucket,
                base_ns_per_step: d.base_ns,
                new_ns_per_step: d.new_ns,
                delta_ns_per_step: d.delta_ns,
                delta_pct: d.delta_pct,
                base_calls_per_step: cb,
                new_calls_per_step: cn,
                verdict,
                confidence: j.confidence,
            }
        })
        .filter(|d| d.base_ns_per_step != 0 || d.new_ns_per_step != 0)
        .collect();
    out.sort_by(|x, y| {
        y.delta_ns_per_step
            .abs()
            .cmp(&x.delta_ns_per_step.abs())
            .then_with(|| x.op.cmp(&y.op))
            .then_with(|| x.shapes.cmp(&y.shapes))
            .then_with(|| x.matched.cmp(&y.matched))
    });
    out
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
        compared_steps: 0,
        compared_step_numbers: None,
        launches_per_step: None,
        compiled: a.compile.compiled,
        cudagraphs: a.compile.cudagraphs,
        graph_replayed_kernels_per_step: (replayed / steps_of(a) * 100.0).round() / 100.0,
    }
}

/// Per step by `bucket/library`, and the kernels that appeared, vanished and changed most.
struct KernelLists {
    libraries: Vec<Delta>,
    appeared: Vec<KernelDelta>,
    vanished: Vec<KernelDelta>,
    changed: Vec<KernelDelta>,
}

fn kernel_lists(base: &Analysis, new: &Analysis, (sb, sn): (f64, f64), top: usize) -> KernelLists {
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
    KernelLists {
        libraries,
        appeared,
        vanished,
        changed,
    }
}

/// Finding ids in the order of their names (the feed's).
fn by_name<'a>(ids: impl Iterator<Item = &'a FindingId>) -> Vec<FindingId> {
    let mut v: Vec<FindingId> = ids.copied().collect();
    v.sort_by_key(|id| id.as_str());
    v
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

    let kernels = kernel_lists(base, new, (sb, sn), top);

    let (fb, fnew) = (&base_run.finding_ids, &new_run.finding_ids);
    let ladder = base_run
        .ladder
        .iter()
        .map(|(level, name, status)| LadderChange {
            level: *level,
            name: name.clone(),
            base: *status,
            new: new_run.ladder.iter().find(|x| x.0 == *level).map(|x| x.2),
        })
        .collect();
    let (b_samples, n_samples) = (samples(base), samples(new));
    let mut verdict = step_verdict(&b_samples, &n_samples);
    let window = |s: &Samples| s.numbers.first() == Some(&crate::analysis::ops::op_steps::WINDOW);
    let mut ops = if b_samples.numbers.is_empty() || n_samples.numbers.is_empty() {
        verdict
            .statistics
            .notes
            .push("a side has no compared steps: no op rows".to_string());
        Vec::new()
    } else if window(&b_samples) != window(&n_samples) {
        verdict.statistics.notes.push(
            "one side has steps and the other none (its whole window is one sample): \
             no op rows"
                .to_string(),
        );
        Vec::new()
    } else {
        op_deltas(base, new, &b_samples, &n_samples)
    };
    if base.device_count() != new.device_count() {
        verdict.statistics.notes.push(format!(
            "the runs have {} and {} devices: op rows add the devices' time, the step and its \
             parts are per device",
            base.device_count(),
            new.device_count()
        ));
    }
    let ops_total = ops.len();
    ops.truncate(top);
    let with_samples = |o: &Outcome, s: &Samples| Side {
        launches_per_step: launches_per_step(&o.analysis.parts.op_steps, &s.numbers),
        compared_steps: s.numbers.len(),
        compared_step_numbers: (!s.numbers.is_empty()
            && s.numbers[0] != crate::analysis::ops::op_steps::WINDOW)
            .then(|| [s.numbers[0], s.numbers[s.numbers.len() - 1]]),
        ..side(o)
    };
    // The compared steps' mean where there are some (iterations: the steady ones).
    let step_of = |a: &Analysis, s: &Samples| {
        if s.step.is_empty() {
            step_time(a)
        } else {
            mean(&s.step)
        }
    };
    Diff {
        applied: Vec::new(),
        base: with_samples(base_run, &b_samples),
        new: with_samples(new_run, &n_samples),
        verdict: overall_verdict(verdict.step.verdict, &verdict.components),
        step_verdict: verdict.step.verdict,
        confidence: verdict.step.confidence,
        cause: verdict.cause,
        statistics: verdict.statistics,
        components: verdict.components,
        ops,
        ops_total,
        step: Delta::new("step", step_of(base, &b_samples), step_of(new, &n_samples)),
        gpu_busy: Delta::new(
            "gpu_busy",
            base.summary.gpu_busy_ns as f64 / sb,
            new.summary.gpu_busy_ns as f64 / sn,
        ),
        buckets,
        time_partition,
        libraries: kernels.libraries,
        kernels_appeared: kernels.appeared,
        kernels_vanished: kernels.vanished,
        kernels_changed: kernels.changed,
        findings_resolved: by_name(fb.difference(fnew)),
        findings_introduced: by_name(fnew.difference(fb)),
        findings_remaining: by_name(fb.intersection(fnew)),
        ladder,
        next_level: (base_run.next_level, new_run.next_level),
    }
}

/// The run's verdict from the step's and its GPU work's: `mixed` where the step moved against its
/// GPU work beyond the noise (faster while the GPU work got slower, or slower while it got
/// faster). The profiled step then moved with its host time, and a step the GPU bounds without
/// the profiler moves with its GPU work: the user's step may have gone either way. (Host time,
/// which holds the GPU's idle time, moves against GPU work whenever the GPU alone speeds up, so
/// that alone is no disagreement.)
fn overall_verdict(step: Verdict, components: &[output::Component]) -> Verdict {
    let gpu = components
        .iter()
        .find(|c| c.name == "gpu_work")
        .map(|c| c.verdict);
    match (step, gpu) {
        (Verdict::Faster, Some(Verdict::Slower)) | (Verdict::Slower, Some(Verdict::Faster)) => {
            Verdict::Mixed
        }
        _ => step,
    }
}

/// What `--fail-on-regression` concluded: what tripped it, and what it chose not to gate on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gate {
    /// Why the gate trips, one line each; any makes `diff` exit 1.
    pub tripped: Vec<String>,
    /// What it reports but does not gate on (host noise, too few steps), one line each.
    pub notices: Vec<String>,
}

impl Diff {
    /// `--fail-on-regression PCT`: trips when the step verdict is `slower` by more than `pct`
    /// percent, unless the change is host noise ([`Diff::host_noise`]: the same code in two
    /// processes), which is reported, not gated (`gate_host_time` gates it too). With too few steps for a verdict it falls
    /// back to [`Diff::regressions`] and says so.
    pub fn gate(&self, pct: f64, gate_host_time: bool) -> Gate {
        let mut g = Gate::default();
        let step_pct = self.step.delta_pct.unwrap_or(0.0);
        let largest_slower = self
            .ops
            .iter()
            .find(|o| o.verdict == Verdict::Slower && o.delta_ns_per_step > 0)
            .map(|o| {
                format!(
                    "; largest slower op: {}{} {:+} ns per step",
                    o.op,
                    o.shapes
                        .as_deref()
                        .map_or(String::new(), |s| format!(" {s}")),
                    o.delta_ns_per_step
                )
            })
            .unwrap_or_default();
        // GPU work slower by more than `pct` of the step: the code's own regression, whatever
        // the host's time did (a host that got faster hides it in a profiled step).
        let gpu_slower = self.components.iter().find(|c| {
            c.name == "gpu_work"
                && c.verdict == Verdict::Slower
                && c.delta_ns_per_step as f64 > pct / 100.0 * self.step.base_ns as f64
        });
        match self.step_verdict {
            Verdict::TooFewSteps => {
                g.notices.push(format!(
                    "too few steps for a verdict (base {}, new {}; {} a side are needed): \
                     gating on the bare percentage",
                    self.base.compared_steps,
                    self.new.compared_steps,
                    stats::MIN_STEPS
                ));
                g.tripped = self.regressions(pct);
            }
            Verdict::Slower if step_pct > pct => {
                let cause = self.cause.unwrap_or(Cause::GpuWork);
                let what = format!(
                    "step time {step_pct:+.1}% ({} → {} ns), slower at confidence {:.3}, from {}",
                    self.step.base_ns,
                    self.step.new_ns,
                    self.confidence.unwrap_or(0.0),
                    cause.as_str()
                );
                if cause == Cause::HostTime && self.host_noise() && !gate_host_time {
                    g.notices.push(format!(
                        "not gated: {what}: host time (launch overhead, host idle) with the same \
                         launches per step and unchanged GPU work is host noise, not a \
                         regression of the code (--gate-host-time gates it)"
                    ));
                } else {
                    g.tripped.push(format!("{what}{largest_slower}"));
                }
            }
            _ => {
                if let Some(gpu) = gpu_slower {
                    g.tripped.push(format!(
                        "GPU work {:+} ns per step ({:+.1}% of the step, {} → {} ns), slower at \
                         confidence {:.3}, while the step is {} ({step_pct:+.1}%){largest_slower}",
                        gpu.delta_ns_per_step,
                        gpu.delta_ns_per_step as f64 / self.step.base_ns.max(1) as f64 * 100.0,
                        gpu.base_ns_per_step,
                        gpu.new_ns_per_step,
                        gpu.confidence.unwrap_or(0.0),
                        self.step_verdict.as_str().replace('_', " ")
                    ));
                }
            }
        }
        g
    }

    /// A slower step that host noise explains: the host time (launch overhead, host idle)
    /// grew, while the GPU work did not and both runs launched the same work per step.
    pub fn host_noise(&self) -> bool {
        let verdict = |name: &str| {
            self.components
                .iter()
                .find(|c| c.name == name)
                .map(|c| c.verdict)
        };
        self.same_launches()
            && verdict("host_time") == Some(Verdict::Slower)
            && verdict("gpu_work") != Some(Verdict::Slower)
    }

    /// Both runs launched the same work per step (op calls within 1%); unknown without op
    /// rows, which counts as not the same.
    pub fn same_launches(&self) -> bool {
        match (self.base.launches_per_step, self.new.launches_per_step) {
            (Some(b), Some(n)) if b > 0.0 => (n - b).abs() <= 0.01 * b,
            _ => false,
        }
    }

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
