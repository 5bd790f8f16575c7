//! The one order of the recommendations, as [`ORDER_RULE`] states it: by ladder level, then
//! saving; a rung that saves little alone but much once rungs of higher levels are applied
//! comes right after them and names them (`after`); the rest of what saves under
//! [`NEGLIGIBLE_PCT`] of the window comes last. A follower the catalog names (`after = […]`
//! in `rules/ladder.toml`) comes after its leaders, and a rung whose worst case is a slowdown
//! never comes first while another's worst case is a gain.

use super::savings::{self, SavingsBasis, Scale};
use super::{Catalog, Recommendation};
use crate::analysis::{Replays, Transform};

/// A saving under this share of the window (%) is negligible: nothing to act on first.
pub const NEGLIGIBLE_PCT: f64 = 0.5;

/// The order rule in words, as every report heads the list with it.
pub const ORDER_RULE: &str = "by ladder level, then saving; a rung that saves only after \
     others follows them and says so; under 0.5% of the window last";

/// Whether a saving is negligible in this window.
fn negligible(ns: i64, window: i64) -> bool {
    crate::analysis::numbers::pct(ns, window) < NEGLIGIBLE_PCT
}

/// Whether `r` is a small rung of `recs`: negligible alone, neither ranked first by the
/// catalog nor the leader of a rung that is not negligible (a follower keeps its leader ahead).
fn small(r: &Recommendation, recs: &[Recommendation], catalog: &Catalog, window: i64) -> bool {
    let first = catalog.get(&r.id).is_some_and(|d| d.rank_first);
    let leads = recs.iter().any(|o| {
        !negligible(o.est_savings_ns, window)
            && catalog.get(&o.id).is_some_and(|d| d.after.contains(&r.id))
    });
    negligible(r.est_savings_ns, window) && !first && !leads
}

/// Orders `recs` by the rule and numbers them from 1.
pub(super) fn rank(
    recs: &mut Vec<Recommendation>,
    catalog: &Catalog,
    replays: &Replays,
    scale: Scale,
) {
    let first = |r: &Recommendation| catalog.get(&r.id).is_some_and(|d| d.rank_first);
    recs.sort_by(|a, b| {
        first(b)
            .cmp(&first(a))
            .then(a.level.cmp(&b.level))
            .then(b.est_savings_ns.cmp(&a.est_savings_ns))
            .then(a.id.cmp(&b.id))
    });
    let window = scale.window;
    let is_small: Vec<bool> = recs
        .iter()
        .map(|r| small(r, recs, catalog, window))
        .collect();
    let (mut small, mut order) = (Vec::new(), Vec::new());
    for (r, s) in std::mem::take(recs).into_iter().zip(is_small) {
        match s {
            true => small.push(r),
            false => order.push(r),
        }
    }
    follow_leaders(&mut order, catalog);
    let risky = |r: &Recommendation| r.est_savings_range_ns[0] < 0;
    if order.first().is_some_and(risky) && !order.first().is_some_and(first) {
        if let Some(k) = order.iter().position(|r| r.est_savings_range_ns[0] > 0) {
            let r = order.remove(k);
            order.insert(0, r);
        }
    }
    // Each small rung with a replay: right after the first rungs above which make it pay.
    let chain = chain(&order, catalog);
    let mut tail = Vec::new();
    let mut placed: Vec<(usize, Recommendation)> = Vec::new();
    for mut r in small.drain(..) {
        // Not ahead of the rungs of lower levels; one small rung per link, so that what it
        // saves there is its marginal saving.
        let floor = order.iter().rposition(|o| o.level < r.level);
        let free: Vec<usize> = (0..chain.len())
            .filter(|&k| floor.is_none_or(|f| chain[k].0 >= f))
            .filter(|&k| !placed.iter().any(|p| p.0 == chain[k].0))
            .collect();
        match savings::transform(&r, catalog)
            .filter(|_| r.savings_basis == SavingsBasis::Replay)
            .and_then(|t| pays_after(t, &chain, &free, replays, scale))
        {
            Some(k) => {
                let at = chain[k].0;
                r.after = order[..=at]
                    .iter()
                    .filter(|o| o.level > r.level)
                    .map(|o| o.id.clone())
                    .collect();
                placed.push((at, r));
            }
            None => tail.push(r),
        }
    }
    // Stable: small rungs placed at the same position keep the rule's order.
    placed.sort_by_key(|p| p.0);
    let mut placed = placed.into_iter().peekable();
    let mut out = Vec::with_capacity(order.len() + tail.len());
    for (k, r) in order.into_iter().enumerate() {
        out.push(r);
        while let Some((_, p)) = placed.next_if(|p| p.0 == k) {
            out.push(p);
        }
    }
    let mut order = out;
    order.extend(tail);
    for (k, r) in order.iter_mut().enumerate() {
        r.rank = k + 1;
    }
    *recs = order;
}

/// Moves each follower right after the last recommendation it follows.
fn follow_leaders(recs: &mut Vec<Recommendation>, catalog: &Catalog) {
    let mut i = 0;
    while i < recs.len() {
        let after = catalog
            .get(&recs[i].id)
            .map(|d| d.after.clone())
            .unwrap_or_default();
        match recs.iter().rposition(|r| after.contains(&r.id)) {
            Some(j) if j > i => {
                let r = recs.remove(i);
                recs.insert(j, r);
            }
            _ => i += 1,
        }
    }
}

/// The replayed rungs of `order`, in order: each one's position and the changes of it and
/// the ones above it.
fn chain(order: &[Recommendation], catalog: &Catalog) -> Vec<(usize, Vec<Transform>)> {
    let mut out: Vec<(usize, Vec<Transform>)> = Vec::new();
    let mut applied: Vec<Transform> = Vec::new();
    for (k, r) in order.iter().enumerate() {
        if r.savings_basis != SavingsBasis::Replay {
            continue;
        }
        if let Some(t) = savings::transform(r, catalog) {
            applied.push(t);
            out.push((k, applied.clone()));
        }
    }
    out
}

/// The first of the links `free` of `chain` after which `t` saves more than a negligible
/// share: its index.
fn pays_after(
    t: Transform,
    chain: &[(usize, Vec<Transform>)],
    free: &[usize],
    replays: &Replays,
    scale: Scale,
) -> Option<usize> {
    free.iter().copied().find(|&k| {
        let above = &chain[k].1;
        let mut with = above.clone();
        with.push(t);
        match (replays.get(above), replays.get(&with)) {
            (Some(a), Some(w)) => {
                let m = savings::window_ns(w, scale) - savings::window_ns(a, scale);
                !negligible(m, scale.window)
            }
            _ => false,
        }
    })
}

/// The sets [`rank`] looks up for the small rungs of a ranking: each link of the chain of the
/// others, alone and with each small rung's change.
pub(super) fn sets_to_place(
    recs: &[Recommendation],
    catalog: &Catalog,
    window: i64,
) -> Vec<Vec<Transform>> {
    let (small, order): (Vec<&Recommendation>, Vec<&Recommendation>) =
        recs.iter().partition(|r| small(r, recs, catalog, window));
    let order: Vec<Recommendation> = order.into_iter().cloned().collect();
    let chain = chain(&order, catalog);
    let mut out: Vec<Vec<Transform>> = chain.iter().map(|(_, s)| s.clone()).collect();
    for r in small
        .iter()
        .filter(|r| r.savings_basis == SavingsBasis::Replay)
    {
        if let Some(t) = savings::transform(r, catalog) {
            for (_, above) in &chain {
                let mut with = above.clone();
                with.push(t);
                out.push(with);
            }
        }
    }
    out
}
