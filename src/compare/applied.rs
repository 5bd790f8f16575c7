//! The ladder driver's check after a rung (`diff --applied ID[,ID…]`): the saving the base run
//! predicted for the rungs applied (without the profiler's cost, as the report prices it, and
//! in profiled steps), beside the saving measured between the two profiled runs.

use crate::analysis::Analysis;
use crate::compare::output::Applied;
use crate::compare::samples::samples;
use crate::compare::stats::{critical_t, welch, ALPHA};
use crate::detect::Finding;
use crate::recommend::{price_together, Catalog, Plan};

/// The predicted and measured savings of the recommendations `ids` applied together between
/// `base` (with its findings and plan) and `new`: the prediction is the base run's price of
/// them ([`crate::recommend::price_together`], the report's), and the measured profiled change
/// is judged against its profiled part.
pub fn applied(
    (base, findings, plan): (&Analysis, &[Finding], &Plan),
    new: &Analysis,
    ids: &[String],
    catalog: &Catalog,
) -> Vec<Applied> {
    if ids.is_empty() {
        return Vec::new();
    }
    let window = base.summary.window_ns;
    let recommended = ids
        .iter()
        .all(|id| plan.recommendations.iter().any(|r| &r.id == id));
    let price = price_together(ids, base, findings, plan, catalog);
    let (sb, sn) = (samples(base).step, samples(new).step);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let base_step = mean(&sb);
    // In the predictions' ns: the step's share times the window, times the steady share.
    let to_ns = |drop: f64| {
        if base_step <= 0.0 {
            0
        } else {
            (drop / base_step * window as f64 * price.steady_share).round() as i64
        }
    };
    let drop = base_step - mean(&sn);
    let half = welch(&sb, &sn).map_or(0.0, |w| critical_t(ALPHA, w.df) * w.se);
    let interval = [to_ns(drop - half), to_ns(drop + half)];
    let measured = to_ns(drop);
    // Profiled runs measure a profiled change: judged against the profiled prediction.
    let [worst, best] = price.profiled_range_ns.unwrap_or(price.range_ns);
    vec![Applied {
        id: ids.join("+"),
        recommended,
        predicted_ns: price.ns,
        range_ns: price.range_ns,
        predicted_profiled_ns: price.profiled_ns,
        profiled_range_ns: price.profiled_range_ns,
        measured_ns: measured,
        measured_interval_ns: interval,
        within_range: (worst..=best).contains(&measured),
        interval_overlaps_range: interval[0] <= best && interval[1] >= worst,
        base_window_ns: window,
    }]
}
