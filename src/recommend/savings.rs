//! What each recommendation saves: replayed where its change has a replay (`replay = "…"` in
//! `rules/ladder.toml`), else the catalog's fraction of a basis; with a range from the model's
//! uncertainty and the seeds' priors, and each rung's marginal saving on top of the ones
//! ranked above it, from one replay of them applied together.

use super::{Basis, Catalog, Recommendation};
use crate::analysis::{Analysis, ReplaySet, Replays, Transform};
use crate::detect::Finding;
use crate::model::Vendor;
use serde::Serialize;

/// Where a recommendation's `est_savings_ns` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SavingsBasis {
    /// The step model replayed with the change.
    Replay,
    /// `fraction` × the time of partition categories (no replay models the change yet).
    Categories,
    /// `fraction` × the triggering findings' time at stake (no replay models the change yet).
    Finding,
}

impl SavingsBasis {
    pub(super) fn of(b: Basis) -> SavingsBasis {
        match b {
            Basis::Categories => SavingsBasis::Categories,
            Basis::Finding => SavingsBasis::Finding,
        }
    }
}

/// How a replay's saving becomes ns of the window: its share of the replayed steps times the
/// window, without a warm-up step's saving, times the steady steps' share of the kernel time
/// where the profile is mostly warm-up.
#[derive(Clone, Copy)]
pub(super) struct Scale {
    pub window: i64,
    pub warmup_step: Option<u64>,
    pub share: f64,
}

/// A replay's saving as a share of the step, in the window's ns (so that its percentage of
/// the window is the step's share it saves); below zero where the change costs time.
pub(super) fn window_ns(set: &ReplaySet, scale: Scale) -> i64 {
    let base = set.base_ns();
    if base <= 0 {
        return 0;
    }
    let share = set.saving_ns_without(scale.warmup_step) as f64 / base as f64;
    in_window(share, scale)
}

/// The same replay's saving with the profiler's cost kept (what a profiled re-run can
/// confirm), in the window's ns; None where its profiled arm was not replayed.
pub(super) fn profiled_window_ns(set: &ReplaySet, scale: Scale) -> Option<i64> {
    set.profiled_share_without(scale.warmup_step)
        .map(|share| in_window(share, scale))
}

/// A share of the step in the window's ns, the steady steps' share of it, never past the
/// window either way.
fn in_window(share: f64, scale: Scale) -> i64 {
    let ns = (share * scale.window as f64 * scale.share).round() as i64;
    ns.clamp(-scale.window, scale.window)
}

/// What a replay says of one recommendation: its saving in the window's ns, or why none.
pub(super) enum Priced {
    Replayed {
        ns: i64,
        from_table: bool,
        /// The saving with the host slower and faster than profiled, in the window's ns.
        host_spread: Option<(i64, i64)>,
    },
    /// The change cannot apply here (capture blocked): not offered.
    Refused,
    /// No replay (or nothing it could act on): the catalog's estimate stands.
    Estimate,
}

/// Prices `t` from the replays of the run.
pub(super) fn price(t: Transform, replays: &Replays, scale: Scale) -> Priced {
    let Some(set) = replays.get(&[t]) else {
        return Priced::Estimate;
    };
    if !set.blocked.is_empty() {
        return match t {
            Transform::CudaGraphs if set.blocked.iter().any(|b| b.contains("blocks capture")) => {
                Priced::Refused
            }
            _ => Priced::Estimate,
        };
    }
    Priced::Replayed {
        ns: window_ns(set, scale),
        from_table: set.from_table,
        host_spread: set
            .host_spread_without(scale.warmup_step)
            .map(|(slower, faster)| (in_window(slower, scale), in_window(faster, scale))),
    }
}

/// The range, A/B verification and validation of a priced recommendation.
pub(super) fn qualify(
    r: &mut Recommendation,
    a: &Analysis,
    catalog: &Catalog,
    from_table: bool,
    host_spread: Option<(i64, i64)>,
) {
    let pri = &catalog.priors;
    let window = a.summary.window_ns;
    let best = r.est_savings_ns;
    let u = match (r.savings_basis, from_table) {
        (SavingsBasis::Replay, false) => pri.uncertainty.trace,
        (SavingsBasis::Replay, true) => pri.uncertainty.table,
        // An estimate without a model: anything from nothing to it.
        _ => 1.0,
    };
    let mut worst = (best as f64 * (1.0 - u)).round() as i64;
    // The host may run slower or faster than it did under the profiler: a GPU-side change
    // saves less on a host that binds sooner, a host-side one less on a faster host.
    // A slowdown within the revert threshold is noise by the seeds' own rule: nothing.
    if let Some((slower, faster)) = host_spread {
        let noise = (pri.revert.slower_pct / 100.0 * window as f64).round() as i64;
        let material = |ns: i64| if ns < 0 && -ns <= noise { 0 } else { ns };
        worst = worst.min(material(slower)).min(material(faster));
    }
    let vendor = a.vendor();
    let archs: Vec<&str> = a
        .inputs
        .iter()
        .flat_map(|i| i.devices.iter().filter_map(|d| d.arch.as_deref()))
        .collect();
    if let Some(p) = pri.worst(&r.id, vendor, &archs) {
        // The seeds measured the whole run: its step after the change is the step ÷ speedup.
        let prior = ((1.0 - 1.0 / p.speedup) * window as f64).round() as i64;
        worst = worst.min(prior);
        r.caveats.push(format!("prior: {}", p.source));
    }
    r.est_savings_range_ns = [worst.min(best), best];
    if worst < 0 {
        r.verify = Some("ab");
        r.revert_if_slower_pct = Some(pri.revert.slower_pct);
    }
    r.validated = r.savings_basis == SavingsBasis::Replay
        && vendor != Vendor::Unknown
        && catalog
            .get(&r.id)
            .and_then(|d| d.replay)
            .is_some_and(|t| pri.validates(vendor, t));
}

/// The saving of `recs` applied together: one replay of the changes of those priced by replay
/// (where the run has it, else the sum of their own savings), plus the others' estimates;
/// signed (a change may cost time), never past the window.
pub(super) fn together_ns(
    recs: &[&Recommendation],
    catalog: &Catalog,
    replays: &Replays,
    scale: Scale,
) -> i64 {
    let (replayed, estimated): (Vec<&&Recommendation>, Vec<&&Recommendation>) = recs
        .iter()
        .partition(|r| r.savings_basis == SavingsBasis::Replay && transform(r, catalog).is_some());
    let transforms: Vec<Transform> = replayed
        .iter()
        .filter_map(|r| transform(r, catalog))
        .collect();
    let replay_ns = match transforms.is_empty() {
        true => 0,
        false => replays
            .get(&transforms)
            .map(|set| window_ns(set, scale))
            .unwrap_or_else(|| replayed.iter().map(|r| r.est_savings_ns).sum()),
    };
    let estimate_ns: i64 = estimated.iter().map(|r| r.est_savings_ns).sum();
    (replay_ns + estimate_ns).min(scale.window)
}

/// The change a recommendation's replay applies.
pub(super) fn transform(r: &Recommendation, catalog: &Catalog) -> Option<Transform> {
    catalog.get(&r.id).and_then(|d| d.replay)
}

/// Each recommendation's marginal saving, in rank order: the ones up to it applied together
/// less the ones above it ([`together_ns`] of each), signed as the savings are.
pub(super) fn marginals(
    recs: &mut [Recommendation],
    catalog: &Catalog,
    replays: &Replays,
    scale: Scale,
) {
    let mut above = 0i64;
    for k in 0..recs.len() {
        let upto: Vec<&Recommendation> = recs[..=k].iter().collect();
        let total = together_ns(&upto, catalog, replays, scale);
        recs[k].marginal_savings_ns = total - above;
        above = total;
    }
}

/// Each level's saving on top of the levels below it: the recommendations of its level and
/// below applied together, less those below it ([`together_ns`]); so the levels add up to
/// every recommendation applied together, never past the window.
pub(super) fn level_ns(
    level: u8,
    recs: &[Recommendation],
    catalog: &Catalog,
    replays: &Replays,
    scale: Scale,
) -> i64 {
    let upto = |l: u8| -> i64 {
        let mine: Vec<&Recommendation> = recs.iter().filter(|r| r.level <= l).collect();
        together_ns(&mine, catalog, replays, scale)
    };
    upto(level) - upto(level.saturating_sub(1))
}

/// What a set of recommendations applied together saves, the one price every output gives
/// them (the report, `--what-if`, `diff --applied`, Python).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Price {
    /// The saving without the profiler's cost, in ns of the window: what the user gets (a
    /// single recommendation's is its `est_savings_ns`).
    pub ns: i64,
    /// Its `[worst, best]`.
    pub range_ns: [i64; 2],
    /// The saving in profiled steps, in the same ns: what a profiled re-run can confirm; None
    /// where the replays did not run with the profiler's cost kept.
    pub profiled_ns: Option<i64>,
    /// Its `[worst, best]`.
    pub profiled_range_ns: Option<[i64; 2]>,
    /// The steady steps' share of the kernel time the savings are scaled by (1 where the
    /// profile is representative): a measured change in the same ns takes it too.
    pub steady_share: f64,
}

/// The price of the recommendations `ids` applied together on the run `a` (with its findings
/// and plan): one recommendation's own saving and range; several, the replay of their changes
/// together plus the estimates of those without one (as the plan adds them up), their worst case the
/// least sure one's share of its best. An id the plan does not hold counts by its replay.
pub fn price_together(
    ids: &[String],
    a: &Analysis,
    findings: &[Finding],
    plan: &super::Plan,
    catalog: &Catalog,
) -> Price {
    let scale = super::SteadyPart::of(a, findings).scale(a.summary.window_ns);
    let replays = &a.parts.replays;
    let recs: Vec<&Recommendation> = ids
        .iter()
        .filter_map(|id| plan.recommendations.iter().find(|r| &r.id == id))
        .collect();
    // Ids not recommended: their changes, as a replay prices them.
    let unlisted: Vec<Transform> = ids
        .iter()
        .filter(|id| !recs.iter().any(|r| &&r.id == id))
        .filter_map(|id| catalog.get(id).and_then(|d| d.replay))
        .collect();
    let replayed = |r: &&&Recommendation| {
        r.savings_basis == SavingsBasis::Replay && transform(r, catalog).is_some()
    };
    let transforms: Vec<Transform> = recs
        .iter()
        .filter(replayed)
        .filter_map(|r| transform(r, catalog))
        .chain(unlisted)
        .collect();
    let estimates: i64 = recs
        .iter()
        .filter(|r| !replayed(r))
        .map(|r| r.est_savings_ns)
        .sum();
    let set = (!transforms.is_empty())
        .then(|| replays.get(&transforms))
        .flatten();
    let window = scale.window;
    let (ns, profiled_ns) = match (&recs[..], set) {
        // One recommendation: its own saving, as the report prints it.
        ([r], _) if ids.len() == 1 => (
            r.est_savings_ns,
            match replayed(&r) {
                true => set.and_then(|s| profiled_window_ns(s, scale)),
                false => Some(r.est_savings_ns),
            },
        ),
        (_, Some(set)) => (
            (window_ns(set, scale) + estimates).min(window),
            profiled_window_ns(set, scale).map(|p| (p + estimates).min(window)),
        ),
        // No replay of them together: the sum of their own savings.
        _ if transforms.is_empty() => (estimates.min(window), Some(estimates.min(window))),
        _ => {
            let sum = recs
                .iter()
                .map(|r| r.est_savings_ns)
                .sum::<i64>()
                .min(window);
            (sum, None)
        }
    };
    let range = |best: i64| -> [i64; 2] {
        if let ([r], 1) = (&recs[..], ids.len()) {
            if best == r.est_savings_ns {
                return r.est_savings_range_ns;
            }
        }
        // The worst case keeps the least sure rung's share of its best case.
        let share = recs
            .iter()
            .filter(|r| r.est_savings_ns > 0)
            .map(|r| r.est_savings_range_ns[0] as f64 / r.est_savings_ns as f64)
            .fold(1.0f64, f64::min);
        let worst = (best as f64 * share).round() as i64;
        [worst.min(best), best]
    };
    Price {
        ns,
        range_ns: range(ns),
        profiled_ns,
        profiled_range_ns: profiled_ns.map(range),
        steady_share: scale.share,
    }
}
