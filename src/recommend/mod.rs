//! Recommendations: the ladder of seeds/000 applied to the findings. The catalog is data
//! (`rules/ladder.toml`); this module evaluates its triggers, estimates savings, ranks, and
//! reports the status of each ladder level.

mod because;
mod catalog;
mod ladder;
mod order;
mod priors;
mod savings;

pub use because::Fact;

pub use catalog::{Basis, Catalog, EnvCheck, LevelDef, RecDef};
pub use ladder::{LadderStatus, Verdict};
pub use order::{NEGLIGIBLE_PCT, ORDER_RULE};
pub use priors::{Prior, Priors};
pub use savings::{price_together, Price, SavingsBasis};

use crate::analysis::time::partition::Category;
use crate::analysis::{Analysis, ReplaySet, Replays, Transform};
use crate::detect::Finding;
use crate::model::compile_log::ActionKind;
use crate::model::Vendor;
use regex::Regex;
use serde::Serialize;
use std::collections::BTreeMap;

/// One action of a recommendation, as the feed carries it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ActionOut {
    /// What kind of change it is (env, code, command, config).
    pub kind: ActionKind,
    /// The exact text to apply.
    pub text: String,
}

/// A ranked recommendation (the feed's `recommendations[]`).
#[derive(Clone, Debug, Serialize)]
pub struct Recommendation {
    /// Position in the ranking, from 1.
    pub rank: usize,
    /// The catalog id (`compile.eager-modules`).
    pub id: String,
    /// The ladder level (1-5).
    pub level: u8,
    /// One-line title.
    pub title: String,
    /// Estimated time saved in the window, in ns: the step's share the replayed change saves
    /// (`savings_basis: replay`), else the catalog's estimate.
    pub est_savings_ns: i64,
    /// The same, as a percentage of the window.
    pub est_savings_pct: f64,
    /// Where `est_savings_ns` comes from.
    pub savings_basis: SavingsBasis,
    /// Its saving on top of the recommendations ranked above it, applied together.
    pub marginal_savings_ns: i64,
    /// The rungs of higher levels it is ranked after: it saves under 0.5% of the window
    /// alone and `marginal_savings_ns` once they are applied (omitted when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// `[worst, best]`: the best case is the estimate; the worst comes from the model's
    /// uncertainty and the seeds' priors (negative: it may slow the run down).
    pub est_savings_range_ns: [i64; 2],
    /// `"ab"` where the worst case is a slowdown: time it before and after.
    pub verify: Option<&'static str>,
    /// With `verify`: revert it when slower by more than this (%).
    pub revert_if_slower_pct: Option<f64>,
    /// Whether before/after pairs on this vendor validate the replay of its change.
    pub validated: bool,
    /// How sure the estimate is (0-1), from the catalog (the range says it in time).
    pub confidence: f64,
    /// `Some(2)` for levels 3-5 while level 2 is not done.
    pub blocked_by_level: Option<u8>,
    /// The ids of the findings that fired it.
    pub finding_ids: Vec<String>,
    /// What to do: the findings' own fixes first, then the catalog's for this vendor.
    pub actions: Vec<ActionOut>,
    /// What can go wrong with it on this vendor (omitted when nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
    /// What the trace shows (the triggering findings' summaries).
    pub evidence: Vec<String>,
    /// The seed text this comes from.
    pub seed: String,
}

/// One ladder level's status (the feed's `ladder[]`).
#[derive(Clone, Debug, Serialize)]
pub struct LadderRow {
    /// The level's number (1-5).
    pub level: u8,
    /// The level's name (`torch.compile`).
    pub name: String,
    /// Its status from what the trace shows.
    pub status: LadderStatus,
    /// What the trace shows, in words (the level's `says` text, filled in).
    pub evidence: String,
    /// The level's recommendations applied on top of the levels below it: those of this level
    /// and below applied together less those below it, in ns of the window (the levels add up
    /// to every recommendation applied together).
    pub est_savings_ns: i64,
}

/// The step after each recommendation applied in the ranked order (the feed's `plan[]`).
#[derive(Clone, Debug, Serialize)]
pub struct PlanStep {
    /// The recommendation's rank.
    pub rank: usize,
    /// Its id.
    pub id: String,
    /// The saving of it and every one ranked above it, applied together, in ns of the window.
    pub saved_ns: i64,
    /// The window left after them.
    pub window_ns: i64,
    /// The mean step left after them (the measured mean step less the same share); None
    /// without steps.
    pub step_ns: Option<i64>,
}

/// Recommendations, ladder and next level.
#[derive(Clone, Debug, Serialize, Default)]
pub struct Plan {
    /// The recommendations that fired, in rank order.
    pub recommendations: Vec<Recommendation>,
    /// Each level's status, by level.
    pub ladder: Vec<LadderRow>,
    /// The level to work on next: the level of the first ranked recommendation that saves at
    /// least 0.5% of the window where it stands (`marginal_savings_ns`); without one, the
    /// lowest level with work left (todo or partial); `None` when none.
    pub next_level: Option<u8>,
    /// The step after each recommendation applied in the ranked order.
    pub steps: Vec<PlanStep>,
}

/// A parsed `env` listing (`KEY=VALUE` lines).
pub type EnvListing = BTreeMap<String, String>;

/// Parses the output of `env` (later lines win; lines without `=` are ignored).
pub fn parse_env(text: &str) -> EnvListing {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

/// Partition time of the named categories.
fn categories_ns(a: &Analysis, cats: &[Category]) -> i64 {
    cats.iter().map(|&c| a.partition_ns(c)).sum()
}

/// Whether a recommendation's trigger holds; returns the triggering findings.
fn triggered<'a>(rec: &RecDef, a: &Analysis, findings: &'a [Finding]) -> Option<Vec<&'a Finding>> {
    let vendor = a.vendor();
    if !rec.vendors.is_empty() && !rec.vendors.contains(&vendor) {
        return None;
    }
    if !catalog::uses_parallelism(&rec.parallelism, &a.parallelism) {
        return None;
    }
    // Every action names a parallelism the job does not use: nothing to offer.
    if !rec.actions.is_empty()
        && rec
            .actions
            .iter()
            .all(|act| !catalog::uses_parallelism(&act.parallelism, &a.parallelism))
    {
        return None;
    }
    if rec.compiled.is_some_and(|c| c != a.compile.compiled) {
        return None;
    }
    if rec.cudagraphs.is_some_and(|c| c != a.compile.cudagraphs) {
        return None;
    }
    if let Some(m) = &rec.min_bucket {
        let pct = a
            .buckets
            .iter()
            .find(|b| b.bucket == m.bucket)
            .map_or(0.0, |b| b.pct);
        if pct < m.pct {
            return None;
        }
    }
    let archs: Vec<&str> = a
        .inputs
        .iter()
        .flat_map(|i| i.devices.iter().filter_map(|d| d.arch.as_deref()))
        .collect();
    if !rec.archs.is_empty()
        && archs
            .iter()
            .any(|arch| !rec.archs.iter().any(|p| arch.starts_with(p.as_str())))
    {
        return None;
    }
    if let Some(t) = &rec.max_tag_share {
        let tagged = a.tagged_ns.get(&t.tag).copied().unwrap_or(0);
        if crate::analysis::numbers::pct(tagged, a.bucket(t.bucket).kernel_ns) >= t.pct {
            return None;
        }
    }
    if let Some(max) = rec.max_low_precision_gemm_pct {
        if crate::detect::low_precision_gemm_pct(findings) >= max {
            return None;
        }
    }
    if let Some(pattern) = &rec.gemm_library {
        let re = Regex::new(pattern).ok()?;
        // The matching libraries must carry most of the GEMM time.
        let share: f64 = crate::detect::gemm_libraries(findings)
            .iter()
            .filter(|(l, _)| re.is_match(l))
            .map(|(_, p)| p)
            .sum();
        if share < 50.0 {
            return None;
        }
    }
    let hits: Vec<&Finding> = findings
        .iter()
        .filter(|f| rec.findings.contains(&f.id))
        .filter(|f| a.compile.compiled || !rec.findings_if_compiled.contains(&f.id))
        .filter(|f| {
            rec.min_stake_pct.is_none_or(|p| {
                crate::analysis::numbers::pct(f.time_at_stake_ns, a.summary.window_ns) >= p
            })
        })
        .filter(|f| {
            rec.min_workgroups.is_none_or(|min| {
                f.evidence
                    .detail
                    .max_workgroups()
                    .is_none_or(|wg| wg >= min)
            })
        })
        .filter(|f| {
            rec.finding_kind
                .as_deref()
                .is_none_or(|k| f.kind() == Some(k))
        })
        .filter(|f| {
            rec.evidence_key
                .as_deref()
                .is_none_or(|k| f.has_evidence(k))
        })
        .collect();
    (!hits.is_empty()).then_some(hits)
}

/// The part of the window savings may come from when the profile is unrepresentative: not the
/// one call the GPU idled in (its host idle is the wait, not the model), and only the steady
/// steps' share when the rest is warm-up or capture.
struct SteadyPart {
    /// GPU idle that belongs to the one long call.
    wait_ns: i64,
    /// The steady steps' share of the kernel time (1 when the profile is representative).
    share: f64,
    /// A warm-up step inside the window (`warmup_in_window`): its time per category, on every
    /// rank, which no action on the steady state recovers.
    warmup: BTreeMap<Category, i64>,
    /// That warm-up step's number.
    warmup_step: Option<u64>,
}

impl SteadyPart {
    fn of(a: &Analysis, findings: &[Finding]) -> SteadyPart {
        use crate::detect::evidence::{UnrepresentativeProfile, WarmupInWindow};
        use crate::detect::Detail;
        let mut part = SteadyPart {
            wait_ns: 0,
            share: 1.0,
            warmup: BTreeMap::new(),
            warmup_step: None,
        };
        let warmup_step = findings.iter().find_map(|f| match &f.evidence.detail {
            Detail::WarmupInWindow(WarmupInWindow::Step(w)) => Some(w.step),
            _ => None,
        });
        part.warmup_step = warmup_step;
        let warmup_rows: Vec<_> = a
            .step_breakdown
            .iter()
            .filter(|r| Some(r.step) == warmup_step)
            .collect();
        for row in &warmup_rows {
            for p in &row.time_partition {
                *part.warmup.entry(p.category).or_default() += p.ns;
            }
        }
        let in_warmup = |t: i64| {
            warmup_rows
                .iter()
                .any(|r| t >= r.start_ns && t < r.start_ns.saturating_add(r.dur_ns))
        };
        for f in findings {
            match &f.evidence.detail {
                // A wait inside the warm-up step leaves with the step.
                Detail::UnrepresentativeProfile(UnrepresentativeProfile::OneCall(c))
                    if !in_warmup(c.start_ns) =>
                {
                    part.wait_ns = f.time_at_stake_ns;
                }
                // The warm-up step's own time is exact; the share is for profiles without one.
                Detail::UnrepresentativeProfile(UnrepresentativeProfile::Warmup(w))
                    if part.warmup.is_empty() =>
                {
                    part.share = w.steady_pct / 100.0;
                }
                _ => {}
            }
        }
        part
    }

    /// How a replay's saving becomes ns of this window.
    fn scale(&self, window: i64) -> savings::Scale {
        savings::Scale {
            window,
            warmup_step: self.warmup_step,
            share: self.share,
        }
    }

    /// The time of `cats` that an action can recover from the steady part (the long call's
    /// wait is idle time, as launch overhead inside an op or host idle inside a sync).
    fn ceiling(&self, a: &Analysis, cats: &[Category]) -> i64 {
        let idle: i64 = cats
            .iter()
            .filter(|c| c.is_host_caused())
            .map(|&c| a.partition_ns(c))
            .sum();
        let wait = self.wait_ns.min(idle);
        let warmup: i64 = cats
            .iter()
            .map(|c| self.warmup.get(c).copied().unwrap_or(0))
            .sum();
        ((categories_ns(a, cats) - wait - warmup).max(0) as f64 * self.share).round() as i64
    }
}

/// Whether an action or caveat meant for `only` (None: every vendor) applies to the trace's
/// vendor (an unknown vendor gets them all).
fn fits_vendor(only: Option<Vendor>, vendor: Vendor) -> bool {
    only.is_none_or(|v| vendor == Vendor::Unknown || v == vendor)
}

/// Evaluates the catalog against an analysis (its replays priced where it has them).
pub fn plan(
    a: &Analysis,
    findings: &[Finding],
    catalog: &Catalog,
    env: Option<&EnvListing>,
) -> Plan {
    plan_with(a, findings, catalog, env, &a.parts.replays)
}

/// [`plan`] with these replays.
fn plan_with(
    a: &Analysis,
    findings: &[Finding],
    catalog: &Catalog,
    env: Option<&EnvListing>,
    replays: &crate::analysis::Replays,
) -> Plan {
    let vendor = a.vendor();
    let window = a.summary.window_ns;
    let steady = SteadyPart::of(a, findings);
    let scale = steady.scale(window);
    let mut recs: Vec<Recommendation> = Vec::new();
    for rec in &catalog.recommendations {
        let Some(hits) = triggered(rec, a, findings) else {
            continue;
        };
        let ceiling = steady.ceiling(a, &rec.acts_on);
        let basis = match rec.basis {
            Basis::Finding => hits.iter().map(|f| f.time_at_stake_ns).max().unwrap_or(0),
            Basis::Categories => ceiling,
        };
        let mut est = ((basis as f64 * rec.fraction).round() as i64).clamp(0, ceiling.max(0));
        let mut savings_basis = savings::SavingsBasis::of(rec.basis);
        let mut from_table = false;
        let mut host_spread = None;
        if let Some(t) = rec.replay {
            match savings::price(t, replays, scale) {
                savings::Priced::Replayed {
                    ns,
                    from_table: table,
                    host_spread: spread,
                } => {
                    est = ns;
                    savings_basis = savings::SavingsBasis::Replay;
                    from_table = table;
                    host_spread = spread;
                }
                savings::Priced::Refused => continue,
                savings::Priced::Estimate => {}
            }
        }
        let mut finding_ids: Vec<String> = hits.iter().map(|f| f.id.to_string()).collect();
        finding_ids.dedup();
        // Fixes the findings name for their own causes (from torch.compile's logs) come first.
        let mut actions: Vec<ActionOut> = Vec::new();
        for f in &hits {
            for fix in f.fixes() {
                // A fix meant for one recommendation goes to that one only.
                if fix.only_for.as_ref().is_some_and(|id| *id != rec.id) {
                    continue;
                }
                if !actions.iter().any(|a| a.text == fix.text) {
                    actions.push(ActionOut {
                        kind: fix.kind,
                        text: fix.text.clone(),
                    });
                }
            }
        }
        let generic: Vec<ActionOut> = rec
            .actions
            .iter()
            .filter(|act| fits_vendor(act.vendor, vendor))
            .filter(|act| catalog::uses_parallelism(&act.parallelism, &a.parallelism))
            .map(|act| ActionOut {
                kind: act.kind,
                text: match (act.vendor, vendor) {
                    (Some(v), Vendor::Unknown) => {
                        format!("{}: {}", v.as_str().to_uppercase(), act.text)
                    }
                    _ => act.text.clone(),
                },
            })
            .collect();
        // A generic action the specific ones already say (same code before the comment) goes.
        let code = |t: &str| t.split('#').next().unwrap_or(t).trim().to_string();
        let specific: Vec<String> = actions.iter().map(|a| code(&a.text)).collect();
        actions.extend(
            generic
                .into_iter()
                .filter(|g| !specific.contains(&code(&g.text))),
        );
        // Nothing left to do for this job (its vendor's and parallelism's actions: none).
        if actions.is_empty() && !rec.actions.is_empty() {
            continue;
        }
        let mut out = Recommendation {
            rank: 0,
            id: rec.id.clone(),
            level: rec.level,
            title: rec.title.clone(),
            est_savings_ns: est,
            est_savings_pct: crate::analysis::numbers::pct(est, window),
            savings_basis,
            marginal_savings_ns: 0,
            after: Vec::new(),
            est_savings_range_ns: [0, est],
            verify: None,
            revert_if_slower_pct: None,
            validated: false,
            confidence: rec.confidence,
            blocked_by_level: None,
            finding_ids,
            actions,
            // Its own facts first, then what the triggering findings say.
            evidence: rec
                .because
                .iter()
                .filter_map(|fact| fact.say(a, findings))
                .chain(hits.iter().map(|f| f.summary.clone()))
                .collect(),
            seed: rec.seed.clone(),
            caveats: rec
                .caveats
                .iter()
                .filter(|c| fits_vendor(c.vendor, vendor))
                .map(|c| c.text.clone())
                .collect(),
        };
        savings::qualify(&mut out, a, catalog, from_table, host_spread);
        recs.push(out);
    }

    let ladder = ladder::status(a, findings, catalog, &recs, env);
    let l2_unmet = ladder.iter().any(|l| l.level == 2 && l.status.is_open());
    for r in &mut recs {
        if l2_unmet && r.level >= 3 {
            r.blocked_by_level = Some(2);
        }
    }
    order::rank(&mut recs, catalog, replays, scale);
    savings::marginals(&mut recs, catalog, replays, scale);
    let mut ladder = ladder;
    for row in &mut ladder {
        row.est_savings_ns = savings::level_ns(row.level, &recs, catalog, replays, scale);
    }
    // The level the ranked list starts at: its first rung that saves something where it
    // stands; without one, the lowest level with work left.
    let next_level = recs
        .iter()
        .find(|r| crate::analysis::numbers::pct(r.marginal_savings_ns, window) >= NEGLIGIBLE_PCT)
        .map(|r| r.level)
        .or_else(|| {
            ladder
                .iter()
                .filter(|l| l.status.is_open())
                .map(|l| l.level)
                .min()
        });
    let steps = plan_steps(&recs, a);
    Plan {
        recommendations: recs,
        ladder,
        next_level,
        steps,
    }
}

/// The step after each recommendation applied in the ranked order: the window less the
/// marginal savings down to it, and the mean step less the same share.
fn plan_steps(recs: &[Recommendation], a: &Analysis) -> Vec<PlanStep> {
    let window = a.summary.window_ns;
    let step = a.summary.step_ns.as_ref().map(|s| s.mean);
    let mut saved = 0i64;
    recs.iter()
        .map(|r| {
            saved += r.marginal_savings_ns;
            let left = window - saved;
            PlanStep {
                rank: r.rank,
                id: r.id.clone(),
                saved_ns: saved,
                window_ns: left,
                step_ns: step
                    .filter(|_| window > 0)
                    .map(|s| (s * left as f64 / window as f64).round() as i64),
            }
        })
        .collect()
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
            if triggered(rec, a, findings).is_some() {
                singles.push(vec![t]);
            }
        }
    }
    add_all(&mut out, singles);
    // The ranking the singles give; the sets that place its small rungs (those that pay only
    // after others); then the final ranking's chain and each level with those below it.
    let window = a.summary.window_ns;
    let plan = plan_with(a, findings, catalog, None, &out);
    add_all(
        &mut out,
        order::sets_to_place(&plan.recommendations, catalog, window),
    );
    let plan = plan_with(a, findings, catalog, None, &out);
    let ranked: Vec<(u8, Transform)> = plan
        .recommendations
        .iter()
        .filter(|r| r.savings_basis == SavingsBasis::Replay)
        .filter_map(|r| savings::transform(r, catalog).map(|t| (r.level, t)))
        .collect();
    let mut sets: Vec<Vec<Transform>> = (2..=ranked.len())
        .map(|k| ranked[..k].iter().map(|x| x.1).collect())
        .collect();
    let mut levels: Vec<u8> = ranked.iter().map(|x| x.0).collect();
    levels.sort();
    levels.dedup();
    for level in levels {
        sets.push(
            ranked
                .iter()
                .filter(|x| x.0 <= level)
                .map(|x| x.1)
                .collect(),
        );
    }
    add_all(&mut out, sets);
    out.sets.sort_by(|x, y| x.transforms.cmp(&y.transforms));
    out
}
