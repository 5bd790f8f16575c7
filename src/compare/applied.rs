//! The ladder driver's check after a rung (`diff --applied ID[,ID…]`): the saving the base run
//! predicted for the rungs applied, beside the saving measured between the two runs.

use crate::analysis::{Analysis, Transform};
use crate::compare::output::Applied;
use crate::compare::samples::samples;
use crate::compare::stats::{critical_t, welch, ALPHA};
use crate::recommend::{Catalog, Plan};

/// The predicted and measured savings of the recommendations `ids` applied together between
/// `base` (with its plan) and `new`.
pub fn applied(
    (base, plan): (&Analysis, &Plan),
    new: &Analysis,
    ids: &[String],
    catalog: &Catalog,
) -> Vec<Applied> {
    if ids.is_empty() {
        return Vec::new();
    }
    let window = base.summary.window_ns;
    let recs: Vec<_> = ids
        .iter()
        .filter_map(|id| plan.recommendations.iter().find(|r| &r.id == id))
        .collect();
    let recommended = recs.len() == ids.len();
    // Together: one replay of their changes where the base run has it, else the sum.
    let transforms: Vec<Transform> = ids
        .iter()
        .filter_map(|id| catalog.get(id).and_then(|d| d.replay))
        .collect();
    let together = (transforms.len() == ids.len() && ids.len() > 1)
        .then(|| base.parts.replays.get(&transforms))
        .flatten()
        .filter(|s| s.base_ns() > 0)
        .map(|s| (s.saving_ns() as f64 / s.base_ns() as f64 * window as f64).round() as i64);
    let predicted = together.unwrap_or_else(|| recs.iter().map(|r| r.est_savings_ns).sum());
    // The worst case keeps the least sure rung's share of its best case.
    let worst_share = recs
        .iter()
        .filter(|r| r.est_savings_ns > 0)
        .map(|r| r.est_savings_range_ns[0] as f64 / r.est_savings_ns as f64)
        .fold(1.0f64, f64::min);
    let best = predicted;
    let worst = (predicted as f64 * worst_share).round() as i64;
    let (sb, sn) = (samples(base).step, samples(new).step);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let base_step = mean(&sb);
    let to_ns = |drop: f64| {
        if base_step <= 0.0 {
            0
        } else {
            (drop / base_step * window as f64).round() as i64
        }
    };
    let drop = base_step - mean(&sn);
    let half = welch(&sb, &sn).map_or(0.0, |w| critical_t(ALPHA, w.df) * w.se);
    let interval = [to_ns(drop - half), to_ns(drop + half)];
    vec![Applied {
        id: ids.join("+"),
        recommended,
        predicted_ns: predicted,
        range_ns: [worst.min(best), best],
        measured_ns: to_ns(drop),
        measured_interval_ns: interval,
        within_range: interval[0] <= best && interval[1] >= worst.min(best),
        base_window_ns: window,
    }]
}
