//! What replays give: each set of changes replayed, per rank and step (the analysis keeps them;
//! the plan prices recommendations with them; a partial carries them to the merge).

use super::change::Transform;
use serde::{Deserialize, Serialize};

/// One step of one rank, before and after a replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepReplay {
    /// The rank (None: a trace without one).
    pub rank: Option<u32>,
    /// The step's number (None: an input without steps, replayed over its window).
    pub step: Option<u64>,
    /// The step as the identity replay runs it, in ns.
    pub base_ns: i64,
    /// The step with the change, in ns.
    pub replay_ns: i64,
}

/// A set of changes replayed together on every rank.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplaySet {
    /// The changes, in composition order.
    pub transforms: Vec<Transform>,
    /// Per rank and step.
    pub steps: Vec<StepReplay>,
    /// GPU and host time the changes rewrote (a saving never exceeds it), in ns.
    pub touched_ns: i64,
    /// A rate came from the datasheet, not from the trace (the estimate is less sure).
    pub from_table: bool,
    /// Some change could not apply (capture blocked, nothing to act on): why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<String>,
    /// The same replay (base and change) with the host slower and faster than profiled by
    /// the host's speed uncertainty (single changes only: what their range holds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slower_host: Vec<StepReplay>,
    /// See `slower_host`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faster_host: Vec<StepReplay>,
    /// The same replay with the profiler's own cost kept, base and change: what a profiled
    /// re-run can confirm (`diff --applied`, `--what-if`; empty where not asked for).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiled: Vec<StepReplay>,
    /// The time the changes rewrote in the profiled arm (its saving's cap: the host work
    /// rewritten carries the profiler's cost there).
    #[serde(default)]
    pub profiled_touched_ns: i64,
}

impl ReplaySet {
    /// The window's saving: per step number, the slowest rank before minus the slowest rank
    /// after (a fix on one rank never makes the job faster than its slowest rank), capped by
    /// the time the change touched.
    pub fn saving_ns(&self) -> i64 {
        self.saving_ns_without(None)
    }
    /// [`ReplaySet::saving_ns`] leaving one step out (a warm-up step: no change recovers it).
    pub fn saving_ns_without(&self, skip: Option<u64>) -> i64 {
        saving_of(&self.steps, skip).min(self.touched_ns)
    }
    /// The saving with the host slower and with it faster ([`ReplaySet::saving_ns_without`]
    /// of each), each as a share of its own base step; None where they were not replayed.
    pub fn host_spread_without(&self, skip: Option<u64>) -> Option<(f64, f64)> {
        if self.slower_host.is_empty() || self.faster_host.is_empty() {
            return None;
        }
        let share = |steps: &[StepReplay]| {
            let base = base_of(steps);
            match base > 0 {
                true => saving_of(steps, skip).min(self.touched_ns) as f64 / base as f64,
                false => 0.0,
            }
        };
        Some((share(&self.slower_host), share(&self.faster_host)))
    }
    /// The job's replayed window: the slowest rank's base per step, summed.
    pub fn base_ns(&self) -> i64 {
        base_of(&self.steps)
    }
    /// The saving with the profiler's cost kept, as a share of its own base step (leaving
    /// `skip` out); None where the profiled arm was not replayed.
    pub fn profiled_share_without(&self, skip: Option<u64>) -> Option<f64> {
        let base = base_of(&self.profiled);
        (!self.profiled.is_empty() && base > 0).then(|| {
            saving_of(&self.profiled, skip).min(self.profiled_touched_ns) as f64 / base as f64
        })
    }
}

/// Per step number, the slowest rank before minus the slowest rank after, summed.
fn saving_of(steps: &[StepReplay], skip: Option<u64>) -> i64 {
    use std::collections::BTreeMap;
    let mut per_step: BTreeMap<Option<u64>, (i64, i64)> = BTreeMap::new();
    for s in steps.iter().filter(|s| skip.is_none() || s.step != skip) {
        let e = per_step.entry(s.step).or_insert((0, 0));
        e.0 = e.0.max(s.base_ns);
        e.1 = e.1.max(s.replay_ns);
    }
    per_step.values().map(|(b, r)| b - r).sum()
}

/// The slowest rank's base per step, summed.
fn base_of(steps: &[StepReplay]) -> i64 {
    use std::collections::BTreeMap;
    let mut per_step: BTreeMap<Option<u64>, i64> = BTreeMap::new();
    for s in steps {
        let e = per_step.entry(s.step).or_insert(0);
        *e = (*e).max(s.base_ns);
    }
    per_step.values().sum()
}

/// Every replay made of a run (the feed carries their results on the recommendations).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Replays {
    /// Each set replayed, by its transforms.
    pub sets: Vec<ReplaySet>,
}

impl Replays {
    /// The set of exactly these transforms (in any order).
    pub fn get(&self, transforms: &[Transform]) -> Option<&ReplaySet> {
        let mut key = transforms.to_vec();
        key.sort();
        key.dedup();
        self.sets.iter().find(|s| s.transforms == key)
    }
    /// The ranks' replays as one job's: sets of the same transforms joined, a rank without a
    /// set counted as unchanged (its base) there.
    pub fn merge(ranks: &[&Replays]) -> Replays {
        let mut keys: Vec<Vec<Transform>> = ranks
            .iter()
            .flat_map(|r| r.sets.iter().map(|s| s.transforms.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        let sets = keys
            .into_iter()
            .map(|key| {
                let mut out = ReplaySet {
                    transforms: key.clone(),
                    ..Default::default()
                };
                // Each rank's host-speed replays, or its identity steps where unchanged.
                let mut spread = true;
                for r in ranks {
                    match r.get(&key) {
                        Some(s) => {
                            spread &= !s.slower_host.is_empty();
                            out.slower_host.extend(s.slower_host.iter().cloned());
                            out.faster_host.extend(s.faster_host.iter().cloned());
                            out.profiled.extend(s.profiled.iter().cloned());
                            out.profiled_touched_ns = out
                                .profiled_touched_ns
                                .saturating_add(s.profiled_touched_ns);
                            out.steps.extend(s.steps.iter().cloned());
                            out.touched_ns = out.touched_ns.saturating_add(s.touched_ns);
                            out.from_table |= s.from_table;
                            for b in &s.blocked {
                                if !out.blocked.contains(b) {
                                    out.blocked.push(b.clone());
                                }
                            }
                        }
                        // Unchanged there: its steps as the identity replay runs them.
                        None => out.steps.extend(
                            r.get(&[])
                                .map(|s| s.steps.clone())
                                .unwrap_or_default()
                                .into_iter()
                                .map(|s| StepReplay {
                                    replay_ns: s.base_ns,
                                    ..s
                                }),
                        ),
                    }
                }
                // A rank without the change: its unchanged steps at the same host speed.
                let unchanged = |pick: fn(&ReplaySet) -> &Vec<StepReplay>| -> Vec<StepReplay> {
                    ranks
                        .iter()
                        .filter(|r| r.get(&key).is_none())
                        .flat_map(|r| r.get(&[]).map(|s| pick(s).clone()).unwrap_or_default())
                        .map(|s| StepReplay {
                            replay_ns: s.base_ns,
                            ..s
                        })
                        .collect()
                };
                let missing = ranks.iter().any(|r| {
                    r.get(&key).is_none() && r.get(&[]).is_none_or(|s| s.slower_host.is_empty())
                });
                if spread && !missing && !out.slower_host.is_empty() {
                    out.slower_host.extend(unchanged(|s| &s.slower_host));
                    out.faster_host.extend(unchanged(|s| &s.faster_host));
                } else {
                    out.slower_host.clear();
                    out.faster_host.clear();
                }
                // The profiled arm likewise, where every rank has one.
                let profiled = ranks.iter().all(|r| {
                    r.get(&key)
                        .or_else(|| r.get(&[]))
                        .is_some_and(|s| !s.profiled.is_empty())
                });
                if profiled {
                    out.profiled.extend(unchanged(|s| &s.profiled));
                } else {
                    out.profiled.clear();
                }
                out
            })
            .collect();
        Replays { sets }
    }
}

/// One step of one rank as a what-if replays it: its time before and after, and where the
/// replayed step's critical path goes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhatIfStep {
    /// The rank (None: a trace without one).
    pub rank: Option<u32>,
    /// The step's number (None: an input without steps).
    pub step: Option<u64>,
    /// The step replayed unchanged (without the profiler's own cost), in ns.
    pub base_ns: i64,
    /// The step replayed with the changes, in ns.
    pub replay_ns: i64,
    /// The step replayed unchanged with the profiler's own cost kept, in ns.
    #[serde(default)]
    pub profiled_base_ns: i64,
    /// The step replayed with the changes and the profiler's own cost kept, in ns: what a
    /// profiled re-run can confirm.
    #[serde(default)]
    pub profiled_replay_ns: i64,
    /// The replayed step's critical path by label (`critical_path.labels[]`'s labels).
    pub labels: Vec<crate::analysis::path::LabelNs>,
}

/// `--what-if`: the step replayed with some recommendations' changes together.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WhatIf {
    /// The recommendations asked for.
    pub recommendations: Vec<String>,
    /// Their changes, in composition order.
    pub transforms: Vec<Transform>,
    /// Per rank and step.
    pub steps: Vec<WhatIfStep>,
    /// Changes that could not apply, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<String>,
    /// Several ranks: per step, the job's step (its slowest rank's) before and after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job: Vec<WhatIfJobStep>,
    /// What the report gives these recommendations applied together, in ns of the window
    /// (`recommend::price_together`; the warm-up step out, the steady steps' share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saving_ns: Option<i64>,
    /// The same saving in profiled steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiled_saving_ns: Option<i64>,
}

/// One step of the job as a what-if replays it: per step number, the slowest rank's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhatIfJobStep {
    /// The step's number (None: inputs without steps).
    pub step: Option<u64>,
    /// The slowest rank's step replayed unchanged, without the profiler's cost, in ns.
    pub base_ns: i64,
    /// The slowest rank's step replayed with the changes, in ns.
    pub replay_ns: i64,
    /// The same two with the profiler's cost kept.
    pub profiled_base_ns: i64,
    /// See `profiled_base_ns`.
    pub profiled_replay_ns: i64,
}

impl WhatIf {
    /// Per step number, the slowest rank's step before and after (each on its own).
    fn job_steps(steps: &[WhatIfStep]) -> Vec<WhatIfJobStep> {
        let mut per: std::collections::BTreeMap<Option<u64>, WhatIfJobStep> = Default::default();
        for s in steps {
            let e = per.entry(s.step).or_insert(WhatIfJobStep {
                step: s.step,
                base_ns: 0,
                replay_ns: 0,
                profiled_base_ns: 0,
                profiled_replay_ns: 0,
            });
            e.base_ns = e.base_ns.max(s.base_ns);
            e.replay_ns = e.replay_ns.max(s.replay_ns);
            e.profiled_base_ns = e.profiled_base_ns.max(s.profiled_base_ns);
            e.profiled_replay_ns = e.profiled_replay_ns.max(s.profiled_replay_ns);
        }
        per.into_values().collect()
    }

    /// The ranks' what-ifs as the job's: their steps together.
    pub fn merge<'a>(ranks: impl Iterator<Item = &'a WhatIf>) -> Option<WhatIf> {
        let mut out: Option<WhatIf> = None;
        for w in ranks {
            match &mut out {
                None => out = Some(w.clone()),
                Some(o) => {
                    o.steps.extend(w.steps.iter().cloned());
                    for b in &w.blocked {
                        if !o.blocked.contains(b) {
                            o.blocked.push(b.clone());
                        }
                    }
                }
            }
        }
        if let Some(o) = &mut out {
            let ranks: std::collections::BTreeSet<Option<u32>> =
                o.steps.iter().map(|s| s.rank).collect();
            o.job = match ranks.len() > 1 {
                true => WhatIf::job_steps(&o.steps),
                false => Vec::new(),
            };
        }
        out
    }
}
