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
/// the window is the step's share it saves).
pub(super) fn window_ns(set: &ReplaySet, scale: Scale) -> i64 {
    let base = set.base_ns();
    if base <= 0 {
        return 0;
    }
    let share = set.saving_ns_without(scale.warmup_step) as f64 / base as f64;
    (share * scale.window as f64 * scale.share).round() as i64
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
    let in_window = |share: f64| (share * scale.window as f64 * scale.share).round() as i64;
    Priced::Replayed {
        ns: window_ns(set, scale).max(0).min(scale.window),
        from_table: set.from_table,
        host_spread: set
            .host_spread_without(scale.warmup_step)
            .map(|(slower, faster)| (in_window(slower), in_window(faster))),
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

/// Each recommendation's marginal saving, in rank order: replayed on top of the replayed ones
/// above it where that replay exists, else its own estimate; never past what is left of the
/// window.
pub(super) fn marginals(
    recs: &mut [Recommendation],
    catalog: &Catalog,
    replays: &Replays,
    scale: Scale,
) {
    let window = scale.window;
    let mut applied: Vec<Transform> = Vec::new();
    let mut applied_ns = 0i64;
    let mut left = window;
    for r in recs.iter_mut() {
        let t = catalog.get(&r.id).and_then(|d| d.replay);
        let chained = match (r.savings_basis, t) {
            (SavingsBasis::Replay, Some(t)) => {
                let mut with = applied.clone();
                with.push(t);
                replays.get(&with).map(|set| (t, window_ns(set, scale)))
            }
            _ => None,
        };
        let m = match chained {
            Some((t, total)) => {
                let m = total - applied_ns;
                applied.push(t);
                applied_ns = total;
                m
            }
            None => r.est_savings_ns,
        };
        let m = m.min(left);
        left -= m.max(0);
        r.marginal_savings_ns = m;
    }
}

/// Each level's saving: its replayed recommendations replayed together, plus the others'
/// marginal savings; never past the window.
pub(super) fn level_ns(
    level: u8,
    recs: &[Recommendation],
    catalog: &Catalog,
    replays: &Replays,
    scale: Scale,
) -> i64 {
    let window = scale.window;
    let mine: Vec<&Recommendation> = recs.iter().filter(|r| r.level == level).collect();
    let transforms: Vec<Transform> = mine
        .iter()
        .filter(|r| r.savings_basis == SavingsBasis::Replay)
        .filter_map(|r| catalog.get(&r.id).and_then(|d| d.replay))
        .collect();
    let replayed = match transforms.is_empty() {
        true => 0,
        false => match replays.get(&transforms) {
            Some(set) => window_ns(set, scale).max(0),
            None => mine
                .iter()
                .filter(|r| r.savings_basis == SavingsBasis::Replay)
                .map(|r| r.marginal_savings_ns.max(0))
                .sum(),
        },
    };
    let others: i64 = mine
        .iter()
        .filter(|r| r.savings_basis != SavingsBasis::Replay)
        .map(|r| r.marginal_savings_ns.max(0))
        .sum();
    (replayed + others).min(window)
}

/// Whether any recommendation with a replay could fire on these findings (the step model is
/// built only then).
pub fn wants_replays(findings: &[Finding], catalog: &Catalog) -> bool {
    catalog
        .recommendations
        .iter()
        .filter(|r| r.replay.is_some())
        .any(|r| findings.iter().any(|f| r.findings.contains(&f.id)))
}

/// The replays a plan of this analysis needs: nothing changed, each firing recommendation's
/// change alone, the changes of the ranking's first k together for every k, and each level's
/// together. `replay` runs one set on the run's step models.
pub fn replays(
    a: &Analysis,
    findings: &[Finding],
    catalog: &Catalog,
    replay: &(dyn Fn(&[Transform]) -> ReplaySet + Sync),
) -> Replays {
    use rayon::prelude::*;
    let mut out = Replays::default();
    // The sets not replayed yet, each once, replayed in parallel.
    let add_all = |out: &mut Replays, sets: Vec<Vec<Transform>>| {
        let mut todo: Vec<Vec<Transform>> = Vec::new();
        for mut set in sets {
            set.sort();
            set.dedup();
            if out.get(&set).is_none() && !todo.contains(&set) {
                todo.push(set);
            }
        }
        out.sets
            .extend(todo.par_iter().map(|s| replay(s)).collect::<Vec<_>>());
    };
    let mut singles: Vec<Vec<Transform>> = vec![Vec::new()];
    for rec in &catalog.recommendations {
        if let Some(t) = rec.replay {
            if super::triggered(rec, a, findings).is_some() {
                singles.push(vec![t]);
            }
        }
    }
    add_all(&mut out, singles);
    // The ranking the singles give, then the sets it needs.
    let plan = super::plan_with(a, findings, catalog, None, &out);
    let ranked: Vec<(u8, Transform)> = plan
        .recommendations
        .iter()
        .filter(|r| r.savings_basis == SavingsBasis::Replay)
        .filter_map(|r| {
            catalog
                .get(&r.id)
                .and_then(|d| d.replay)
                .map(|t| (r.level, t))
        })
        .collect();
    let mut sets: Vec<Vec<Transform>> = (2..=ranked.len())
        .map(|k| ranked[..k].iter().map(|x| x.1).collect())
        .collect();
    let mut levels: Vec<u8> = ranked.iter().map(|x| x.0).collect();
    levels.dedup();
    for level in levels {
        sets.push(
            ranked
                .iter()
                .filter(|x| x.0 == level)
                .map(|x| x.1)
                .collect(),
        );
    }
    add_all(&mut out, sets);
    out.sets.sort_by(|x, y| x.transforms.cmp(&y.transforms));
    out
}
