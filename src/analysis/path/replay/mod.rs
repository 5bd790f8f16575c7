//! What-if replays: the step model of each rank (`graph`) run forward again (`sim`) with a
//! change applied (`transforms`), to price a recommendation by the step it would leave.
//!
//! The model is the one the critical path walks (`analysis::path`): each host thread's work in
//! order, merged into the one sequence that issues the rank's GPU work; each activity after its
//! stream predecessor, the stream it waited on and its launch; each synchronize returning when
//! the work it waited for ends. A replay moves every piece by what it waited for, with the
//! changed durations, so the saving is the step's own response to the change: GPU time cut
//! under a host-bound step saves nothing, host time cut under a GPU-bound step saves nothing.
//!
//! Savings are the identity replay's step minus the changed replay's, step by step, so the
//! model's own error on the unchanged step cancels. Every rate a transform uses comes from the
//! trace itself (the achieved rate of the same kind of kernel) or from the datasheet peaks of
//! `rules/devices.toml`; every other constant is declared in `rules/replay.toml` with its source.

mod change;
mod constants;
mod graph;
pub(crate) mod results;
mod sim;
mod trail;
mod transforms;

use crate::analysis::context::Context;
use crate::analysis::path::model::InputModel;
use sim::Keep;

pub use change::Transform;
pub use constants::{Constants, PerVendor};
pub use results::{ReplaySet, Replays, StepReplay, WhatIf, WhatIfJobStep, WhatIfStep};

/// The step models of a trace's inputs, ready to replay any set of changes; built from the
/// analysis context, it outlives it (the plan decides what to replay after the analysis).
pub struct Replayer {
    graphs: Vec<graph::InputGraph>,
    /// Per graph, its steps replayed unchanged (without the profiler's cost), as profiled and
    /// with the host slower and faster by the host's speed uncertainty.
    base: Vec<Vec<i64>>,
    base_slower: Vec<Vec<i64>>,
    base_faster: Vec<Vec<i64>>,
    /// Per graph, its steps replayed unchanged with the profiler's cost kept, where each
    /// replay also runs its changes so ([`Replayer::with_profiled_arm`]).
    base_profiled: Option<Vec<Vec<i64>>>,
    facts: transforms::Facts,
    constants: Constants,
}

impl Replayer {
    /// The models of every input with steps (or GPU work) in scope.
    pub fn new(ctx: &Context, constants: &Constants) -> Replayer {
        Replayer::from_models(ctx, Vec::new(), constants)
    }

    /// [`Replayer::new`], starting from the dependency models the critical path walked (by
    /// input; one missing is built).
    pub(crate) fn from_models(
        ctx: &Context,
        models: Vec<Option<InputModel>>,
        constants: &Constants,
    ) -> Replayer {
        let graphs = graph::build_all(ctx, models, constants);
        let facts = transforms::Facts::of(ctx, &graphs, constants);
        Replayer::with_bases(graphs, facts, constants.clone())
    }

    /// The replayer of these models, their unchanged steps replayed once at each host speed.
    fn with_bases(
        graphs: Vec<graph::InputGraph>,
        facts: transforms::Facts,
        constants: Constants,
    ) -> Replayer {
        let overhead = constants.profiler_overhead_ns.value;
        let u = constants.host_speed_uncertainty.value;
        let [base, base_slower, base_faster] = bases(&graphs, overhead, u);
        Replayer {
            graphs,
            base,
            base_slower,
            base_faster,
            base_profiled: None,
            facts,
            constants,
        }
    }

    /// Every replay also runs with the profiler's cost kept (`ReplaySet::profiled`,
    /// `WhatIfStep::profiled_*`): what a profiled re-run of the change can confirm.
    pub fn with_profiled_arm(mut self) -> Self {
        use rayon::prelude::*;
        self.base_profiled = Some(
            self.graphs
                .par_iter()
                .map(|g| sim::simulate(g, &sim::Edit::identity(g), Keep::Steps).step_ns)
                .collect(),
        );
        self
    }

    /// Replays the changes together (in composition order) on every input.
    pub fn replay(&self, transforms: &[Transform]) -> ReplaySet {
        let mut key = transforms.to_vec();
        key.sort();
        key.dedup();
        let mut out = ReplaySet {
            transforms: key.clone(),
            ..Default::default()
        };
        for (gi, g) in self.graphs.iter().enumerate() {
            let mut edit = sim::Edit::unprofiled(g, self.constants.profiler_overhead_ns.value);
            for &t in &key {
                let applied =
                    transforms::apply(t, (g, gi), &mut edit, &self.facts, &self.constants);
                out.touched_ns = out.touched_ns.saturating_add(applied.touched_ns);
                out.from_table |= applied.from_table;
                if let Some(why) = applied.blocked {
                    if !out.blocked.contains(&why) {
                        out.blocked.push(why);
                    }
                }
            }
            let changed = sim::simulate(g, &edit, Keep::Steps);
            let mut profiled = self
                .base_profiled
                .as_ref()
                .map(|b| (&b[gi], sim::Edit::identity(g)));
            if let Some((_, e)) = &mut profiled {
                for &t in &key {
                    let applied = transforms::apply(t, (g, gi), e, &self.facts, &self.constants);
                    out.profiled_touched_ns =
                        out.profiled_touched_ns.saturating_add(applied.touched_ns);
                }
            }
            let steps = |base: &[i64], replay: &[i64]| -> Vec<StepReplay> {
                g.spans
                    .iter()
                    .enumerate()
                    .map(|(k, span)| StepReplay {
                        rank: g.rank,
                        step: span.number,
                        base_ns: base[k],
                        replay_ns: replay[k],
                    })
                    .collect()
            };
            out.steps.extend(steps(&self.base[gi], &changed.step_ns));
            if let Some((base, e)) = &profiled {
                let run = sim::simulate(g, e, Keep::Steps);
                out.profiled.extend(steps(base, &run.step_ns));
            }
            // A single change's range holds the host running slower or faster than profiled
            // (and the unchanged set's, which ranks without the change merge with).
            if key.len() <= 1 {
                let u = self.constants.host_speed_uncertainty.value;
                for (factor, base, into) in [
                    (1.0 + u, &self.base_slower[gi], &mut out.slower_host),
                    (1.0 - u, &self.base_faster[gi], &mut out.faster_host),
                ] {
                    edit.host_factor = factor;
                    into.extend(steps(base, &sim::simulate(g, &edit, Keep::Steps).step_ns));
                }
            }
        }
        out
    }

    /// The steps replayed with `transforms` together, with the replayed steps' critical paths.
    pub fn what_if(&self, transforms: &[Transform]) -> WhatIf {
        let mut key = transforms.to_vec();
        key.sort();
        key.dedup();
        let mut out = WhatIf {
            transforms: key.clone(),
            ..Default::default()
        };
        let overhead = self.constants.profiler_overhead_ns.value;
        for (gi, g) in self.graphs.iter().enumerate() {
            let base = sim::simulate(g, &sim::Edit::unprofiled(g, overhead), Keep::Steps);
            let mut edit = sim::Edit::unprofiled(g, overhead);
            for &t in &key {
                let applied =
                    transforms::apply(t, (g, gi), &mut edit, &self.facts, &self.constants);
                if let Some(why) = applied.blocked {
                    let why = format!("{}: {why}", t.as_str());
                    if !out.blocked.contains(&why) {
                        out.blocked.push(why);
                    }
                }
            }
            let changed = sim::simulate(g, &edit, Keep::Timeline);
            let paths = trail::walk(g, &edit, &changed);
            // The same with the profiler's cost kept: what a profiled re-run would show.
            let as_profiled = sim::simulate(g, &sim::Edit::identity(g), Keep::Steps);
            let mut profiled_edit = sim::Edit::identity(g);
            for &t in &key {
                transforms::apply(t, (g, gi), &mut profiled_edit, &self.facts, &self.constants);
            }
            let profiled = sim::simulate(g, &profiled_edit, Keep::Steps);
            for (k, span) in g.spans.iter().enumerate() {
                out.steps.push(WhatIfStep {
                    rank: g.rank,
                    step: span.number,
                    base_ns: base.step_ns[k],
                    replay_ns: changed.step_ns[k],
                    profiled_base_ns: as_profiled.step_ns[k],
                    profiled_replay_ns: profiled.step_ns[k],
                    labels: paths[k]
                        .labels
                        .iter()
                        .map(|(&(label, bucket), &ns)| crate::analysis::path::LabelNs {
                            label,
                            bucket,
                            ns,
                        })
                        .collect(),
                });
            }
        }
        out
    }

    /// Each step's critical path as it runs without the profiler's cost: the unchanged
    /// replay's, walked as `what_if` walks a changed one. Per input: its rank, and per step
    /// its number, its replayed time with the profiler's cost kept (the model against the
    /// measured step) and taken out, and the latter's trail. None where the profiler's cost is
    /// zero (`rules/replay.toml` set so): the measured path is then the one.
    pub(crate) fn unprofiled_paths(&self) -> Option<Vec<UnprofiledStep>> {
        let overhead = self.constants.profiler_overhead_ns.value;
        if overhead <= 0 {
            return None;
        }
        let slower = 1.0 + self.constants.host_speed_uncertainty.value;
        let mut out = Vec::new();
        for g in &self.graphs {
            let identity = sim::simulate(g, &sim::Edit::identity(g), Keep::Steps);
            let mut edit = sim::Edit::unprofiled(g, overhead);
            let run = sim::simulate(g, &edit, Keep::Timeline);
            let trails = trail::walk(g, &edit, &run);
            // The same with the host slower by its speed's uncertainty: a step whose bound
            // changes with it is balanced between the host and the GPU.
            edit.host_factor = slower;
            let slow = sim::simulate(g, &edit, Keep::Timeline);
            let slow_trails = trail::walk(g, &edit, &slow);
            let steps = g.spans.iter().zip(trails).zip(run.step_ns).zip(slow_trails);
            for ((((span, trail), ns), slow), profiled_ns) in steps.zip(identity.step_ns) {
                out.push(UnprofiledStep {
                    rank: g.rank,
                    step: span.number,
                    profiled_ns,
                    ns,
                    trail,
                    slower_host: slow.labels,
                    slower_factor: slower,
                });
            }
        }
        Some(out)
    }

    /// Each step as measured, as the identity replay runs it, and as the replay without the
    /// profiler's cost runs it: (measured, identity, unprofiled) per input and step.
    #[doc(hidden)]
    pub fn fidelity(&self) -> Vec<(i64, i64, i64)> {
        let mut out = Vec::new();
        for g in &self.graphs {
            let base = sim::simulate(g, &sim::Edit::identity(g), Keep::Steps);
            let clean = sim::simulate(
                g,
                &sim::Edit::unprofiled(g, self.constants.profiler_overhead_ns.value),
                Keep::Steps,
            );
            for (k, span) in g.spans.iter().enumerate() {
                out.push((span.measured_ns, base.step_ns[k], clean.step_ns[k]));
            }
        }
        out
    }

    /// The same with another profiler cost per event (for fitting it on the first pairs).
    #[doc(hidden)]
    pub fn with_overhead(self, per_event_ns: i64) -> Self {
        let mut constants = self.constants;
        constants.profiler_overhead_ns.value = per_event_ns;
        Replayer::with_bases(self.graphs, self.facts, constants)
    }
}

/// One step replayed unchanged without the profiler's cost, and its critical path.
pub(crate) struct UnprofiledStep {
    pub rank: Option<u32>,
    pub step: Option<u64>,
    /// The step replayed with the profiler's cost kept: the model's own error against the
    /// measured step.
    pub profiled_ns: i64,
    pub ns: i64,
    pub trail: trail::Trail,
    /// The path's labels with the host slower by `slower_factor`.
    pub slower_host: trail::Labels,
    pub slower_factor: f64,
}

/// Each graph's steps replayed unchanged without the profiler's cost: as profiled, with the
/// host slower, and with it faster by `u`.
fn bases(graphs: &[graph::InputGraph], overhead: i64, u: f64) -> [Vec<Vec<i64>>; 3] {
    use rayon::prelude::*;
    // Every (speed, input) replay at once: one input's three are most of a trace's.
    let factors = [1.0, 1.0 + u, 1.0 - u];
    let runs: Vec<Vec<i64>> = (0..factors.len() * graphs.len())
        .into_par_iter()
        .map(|k| {
            let g = &graphs[k % graphs.len()];
            let mut e = sim::Edit::unprofiled(g, overhead);
            e.host_factor = factors[k / graphs.len()];
            sim::simulate(g, &e, Keep::Steps).step_ns
        })
        .collect();
    let mut runs = runs.into_iter();
    factors.map(|_| runs.by_ref().take(graphs.len()).collect())
}
