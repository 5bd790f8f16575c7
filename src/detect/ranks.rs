//! Several ranks: the straggler, the rank the others wait for.
//!
//! A collective kernel runs from the moment its rank reaches it until every rank has: the rank
//! that arrives last spends the least time in it, and every other rank's collective time grows
//! by its wait. So per step (the whole window without steps) the rank with the shortest
//! communication time is the one waited for, and `others' communication − its communication` is
//! the time the others lost (HTA and TraceLens compare ranks the same way). Durations, not
//! timestamps, are compared: ranks on different hosts have unsynchronized clocks.

use super::evidence as ev;
use super::{ms, pct, Detail, Finding, Severity};
use crate::analysis::numbers::median;
use crate::analysis::signals::collectives::Arrival;
use crate::analysis::Analysis;
use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::time::window::Load;

/// The straggler must be last in more than half of the compared steps, and the others' wait
/// must be worth reading about.
const MIN_WAIT_PCT: f64 = 2.0;
const MIN_WAIT_NS: i64 = 100_000;
/// A straggler whose own GPU work exceeds the others' median by more than this has more to do
/// (an imbalance); otherwise it reaches the collectives late for reasons on its host.
const MORE_WORK_PCT: f64 = 5.0;

/// Communication and compute time per (unit, rank).
type Loads = BTreeMap<(Option<u64>, u32), Load>;

/// Per (unit, rank), the communication and compute time: units are step numbers every rank
/// profiled, else one unit (None), each rank's whole window. Returns the loads, the units and
/// whether they are steps.
fn loads_per_unit(
    analysis: &Analysis,
    ranks: &BTreeSet<u32>,
    rank_of: &[Option<u32>],
) -> (Loads, Vec<Option<u64>>, bool) {
    let inputs_of = |r: u32| {
        analysis
            .parts
            .loads
            .iter()
            .enumerate()
            .filter(move |(i, _)| rank_of[*i] == Some(r))
            .map(|(_, l)| l)
    };
    // Steps are compared by number when every rank has them; else each rank's whole window.
    let step_sets: Vec<BTreeSet<u64>> = ranks
        .iter()
        .map(|&r| inputs_of(r).flat_map(|l| l.kept.iter().copied()).collect())
        .collect();
    let by_step = step_sets.iter().all(|s| !s.is_empty());

    let mut load: Loads = BTreeMap::new();
    for &rank in ranks {
        for l in inputs_of(rank) {
            for (&n, step) in &l.per_step {
                load.entry((by_step.then_some(n), rank))
                    .or_default()
                    .add(step);
            }
            if !by_step {
                load.entry((None, rank)).or_default().add(&l.outside);
            }
        }
    }
    let mut common = step_sets[0].clone();
    for s in &step_sets[1..] {
        common.retain(|n| s.contains(n));
    }
    // Ranks whose profiled steps do not overlap are compared over their whole windows.
    let by_step = by_step && !common.is_empty();
    if !by_step {
        for ((_, rank), l) in std::mem::take(&mut load) {
            load.entry((None, rank)).or_default().add(&l);
        }
    }
    let units: Vec<Option<u64>> = if by_step {
        common.into_iter().map(Some).collect()
    } else {
        vec![None]
    };

    (load, units, by_step)
}

/// A unit every rank communicated in: the rank that was last, and what the others lost to it.
struct Unit {
    step: Option<u64>,
    last: u32,
    wait_ns: i64,
}

fn who_was_last(units: &[Option<u64>], ranks: &BTreeSet<u32>, load: &Loads) -> Vec<Unit> {
    let mut compared = Vec::new();
    for &unit in units {
        let loads: Vec<(u32, Load)> = ranks
            .iter()
            .map(|&r| (r, load.get(&(unit, r)).copied().unwrap_or_default()))
            .collect();
        if loads.iter().any(|(_, l)| l.comm_ns <= 0) {
            continue;
        }
        let &(last, least) = loads
            .iter()
            .min_by_key(|(r, l)| (l.comm_ns, *r))
            .expect("at least two ranks");
        let wait_ns = loads
            .iter()
            .filter(|(r, _)| *r != last)
            .map(|(_, l)| l.comm_ns - least.comm_ns)
            .sum();
        compared.push(Unit {
            step: unit,
            last,
            wait_ns,
        });
    }
    compared
}

/// What the ranks' hosts and steps show: per rank, the GPU idle time its host causes, and the
/// others' median of it; each rank's median step time, and their spread.
struct HostSide {
    gaps: BTreeMap<u32, i64>,
    others_gap: f64,
    step_medians: BTreeMap<u32, f64>,
    spread_ns: i64,
}

fn host_side(analysis: &Analysis, straggler: u32) -> HostSide {
    // Step times per rank show the spread the straggler causes (they end together when synced).
    // And the GPU idle time each rank's host causes (launch overhead + host idle, FEED.md
    // partition), which points at the host when the straggler has no more GPU work.
    let mut step_ns: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
    let mut host_gaps: BTreeMap<u32, i64> = BTreeMap::new();
    for row in &analysis.step_breakdown {
        if let Some(r) = row.rank {
            step_ns.entry(r).or_default().push(row.dur_ns);
            let gap: i64 = row
                .time_partition
                .iter()
                .filter(|p| p.category.is_host_caused())
                .map(|p| p.ns)
                .sum();
            *host_gaps.entry(r).or_default() += gap;
        }
    }
    let others_gap = median(
        &host_gaps
            .iter()
            .filter(|(r, _)| **r != straggler)
            .map(|(_, g)| *g)
            .collect::<Vec<_>>(),
    );
    let step_medians: BTreeMap<u32, f64> = step_ns.iter().map(|(r, d)| (*r, median(d))).collect();
    let spread_ns = match (
        step_medians.values().copied().reduce(f64::max),
        step_medians.values().copied().reduce(f64::min),
    ) {
        (Some(hi), Some(lo)) => (hi - lo).round() as i64,
        _ => 0,
    };

    HostSide {
        gaps: host_gaps,
        others_gap,
        step_medians,
        spread_ns,
    }
}

/// The straggler of an analysis of several ranks (one trace's, or the ranks' merged).
pub fn straggler_rank(analysis: &Analysis) -> Vec<Finding> {
    let rank_of: Vec<Option<u32>> = analysis.inputs.iter().map(|i| i.rank).collect();
    let ranks: BTreeSet<u32> = rank_of.iter().flatten().copied().collect();
    // A scheduled pipeline's ranks do different work by design: its unequal stages are the
    // pipeline findings', not a straggler.
    let pipeline = analysis.pipeline.as_ref().and_then(|p| p.schedule);
    if ranks.len() < 2 || pipeline.is_some() {
        return vec![];
    }
    let (load, units, by_step) = loads_per_unit(analysis, &ranks, &rank_of);

    let compared = who_was_last(&units, &ranks, &load);
    if compared.is_empty() {
        return vec![];
    }
    let mut times_last: BTreeMap<u32, usize> = BTreeMap::new();
    for u in &compared {
        *times_last.entry(u.last).or_default() += 1;
    }
    let Some((straggler, its_units, wait_ns, skew)) =
        choose_straggler(analysis, &compared, &times_last)
    else {
        return vec![];
    };
    let arrivals = &analysis.collectives.arrivals;
    let count = its_units.len();
    if wait_ns < MIN_WAIT_NS || pct(wait_ns, analysis.summary.window_ns) < MIN_WAIT_PCT {
        return vec![];
    }

    // Totals over the compared units, per rank.
    let mut per_rank: BTreeMap<u32, Load> = BTreeMap::new();
    for u in &compared {
        for &r in &ranks {
            let l = load.get(&(u.step, r)).copied().unwrap_or_default();
            let t = per_rank.entry(r).or_default();
            t.comm_ns += l.comm_ns;
            t.compute_ns += l.compute_ns;
        }
    }
    let others = |f: fn(&Load) -> i64| -> f64 {
        let v: Vec<i64> = per_rank
            .iter()
            .filter(|(r, _)| **r != straggler)
            .map(|(_, l)| f(l))
            .collect();
        median(&v)
    };
    let Some(&mine) = per_rank.get(&straggler) else {
        return vec![];
    };
    let others_comm = others(|l| l.comm_ns);
    let others_compute = others(|l| l.compute_ns);
    let more_work_pct = if others_compute > 0.0 {
        (mine.compute_ns as f64 / others_compute - 1.0) * 100.0
    } else {
        0.0
    };
    let more_work = more_work_pct > MORE_WORK_PCT;
    let HostSide {
        gaps: host_gaps,
        others_gap,
        step_medians,
        spread_ns,
    } = host_side(analysis, straggler);

    let where_ = if by_step {
        format!("in {count} of {} steps", compared.len())
    } else {
        "over the window".to_string()
    };
    let no_compute = mine.compute_ns == 0 && others_compute <= 0.0;
    // "Late because of its host" needs the host's gaps to show it.
    let host_shows = host_gaps
        .get(&straggler)
        .is_some_and(|&g| g as f64 > others_gap);
    let cause = if no_compute {
        "the trace holds only communication kernels, so whether it has more work or a slow host is not visible".to_string()
    } else if !more_work && !host_shows {
        format!(
            "its GPU work is not larger ({} vs a median {}) and its host leaves no more GPU idle time than the others': the cause is not visible in the trace",
            ms(mine.compute_ns),
            ms(others_compute as i64)
        )
    } else if more_work {
        format!(
            "it has {more_work_pct:.0}% more GPU work than the others ({} vs a median {}): balance the work across ranks",
            ms(mine.compute_ns),
            ms(others_compute as i64)
        )
    } else {
        let gaps = match host_gaps.get(&straggler) {
            Some(&g) if g as f64 > others_gap => format!(
                "; its host leaves its GPU idle for {} (launch overhead and host idle) against a median {} on the others",
                ms(g),
                ms(others_gap as i64)
            ),
            _ => String::new(),
        };
        format!(
            "its GPU work is not larger ({} vs a median {}), so it reaches the collectives late because of its host: input pipeline, CPU or NUMA placement, launch overhead{gaps}",
            ms(mine.compute_ns),
            ms(others_compute as i64)
        )
    };
    let excess = path_excess(analysis, straggler);
    let cause = format!(
        "{cause}{}",
        excess.as_ref().map_or(String::new(), path_clause)
    );
    let severity = if pct(wait_ns, analysis.summary.window_ns) >= 10.0 {
        Severity::High
    } else {
        Severity::Medium
    };
    let headline = match &skew {
        Some(sk) => sk.summary(
            wait_ns,
            pct(wait_ns, analysis.summary.window_ns),
            (mine.comm_ns, others_comm as i64),
            &cause,
        ),
        None => format!(
            "rank {straggler} is the straggler: the other ranks wait for it at collectives {where_}. Its communication kernels take {} against a median {} on the others, who lose {} waiting ({:.1}% of the window); {cause}",
            ms(mine.comm_ns),
            ms(others_comm as i64),
            ms(wait_ns),
            pct(wait_ns, analysis.summary.window_ns),
        ),
    };
    vec![Finding::new(
        severity,
        headline,
        wait_ns,
        Detail::StragglerRank(ev::StragglerRank {
            rank: straggler,
            steps: its_units.iter().filter_map(|u| u.step).collect(),
            steps_compared: if by_step { compared.len() } else { 0 },
            wait_ns,
            basis: if skew.is_some() {
                ev::StragglerBasis::ArrivalSkew
            } else {
                ev::StragglerBasis::CommunicationTime
            },
            kind: if no_compute || !(more_work || host_shows) {
                ev::StragglerKind::Unknown
            } else if more_work {
                ev::StragglerKind::MoreGpuWork
            } else {
                ev::StragglerKind::Host
            },
            more_gpu_work_pct: (more_work_pct * 10.0).round() / 10.0,
            step_spread_ns: spread_ns,
            arrivals: arrival_rows(arrivals, analysis),
            ranks: rank_loads(&per_rank, &times_last, &step_medians, &host_gaps),
            path_excess: excess,
        }),
    )]
}

/// `; on its own critical path, host takes 61.86 ms where the others spend a median 1.06 ms
/// (most: …)`.
fn path_clause(x: &ev::PathExcess) -> String {
    format!(
        "; on its own critical path, {} takes {} where the others spend a median {} (most: {} {})",
        x.label,
        ms(x.ns),
        ms(x.others_ns),
        x.top,
        ms(x.top_ns)
    )
}

/// The label of `rank`'s critical path (waiting for other ranks aside) with the most time over
/// what the other ranks spend on the same (the median of their steps' partition in its
/// categories: their own paths are mostly waiting for this rank, which hides their work), and
/// the item with the most time under it: what the late rank does that the others do not.
fn path_excess(analysis: &Analysis, rank: u32) -> Option<ev::PathExcess> {
    use crate::analysis::{Category, Label};
    let mine = &analysis
        .parts
        .rank_paths
        .iter()
        .find(|(r, _)| *r == rank)?
        .1;
    let categories = |l: Label| -> &'static [Category] {
        match l {
            Label::GpuCompute => &[
                Category::Gemm,
                Category::Attention,
                Category::Conv,
                Category::Elementwise,
                Category::Memory,
                Category::Other,
            ],
            Label::Launch => &[Category::LaunchOverhead],
            Label::Host => &[Category::HostIdle],
            Label::DataLoading => &[Category::DataLoading],
            _ => &[],
        }
    };
    let others: BTreeSet<u32> = analysis
        .step_breakdown
        .iter()
        .filter_map(|s| s.rank)
        .filter(|&r| r != rank)
        .collect();
    let spent = |r: u32, l: Label| -> i64 {
        let cats = categories(l);
        analysis
            .step_breakdown
            .iter()
            .filter(|s| s.rank == Some(r))
            .flat_map(|s| &s.time_partition)
            .filter(|p| cats.contains(&p.category))
            .map(|p| p.ns)
            .sum()
    };
    let best = [
        Label::GpuCompute,
        Label::Launch,
        Label::Host,
        Label::DataLoading,
    ]
    .into_iter()
    .map(|l| {
        let theirs: Vec<i64> = others.iter().map(|&r| spent(r, l)).collect();
        (l, mine.ns_of(l), median(&theirs) as i64)
    })
    .max_by_key(|&(l, ns, others)| (ns - others, std::cmp::Reverse(l)))?;
    // Only a clear excess: a tenth of its path.
    if best.1.saturating_sub(best.2).saturating_mul(10) < mine.ns {
        return None;
    }
    let top = mine.top.iter().find(|i| i.label == best.0)?;
    Some(ev::PathExcess {
        label: best.0,
        ns: best.1,
        others_ns: best.2,
        top: top.name.clone(),
        top_ns: top.ns,
    })
}

/// Each rank's communication and compute, how often it was last, its median step and the GPU
/// idle its host leaves.
fn rank_loads(
    per_rank: &BTreeMap<u32, Load>,
    times_last: &BTreeMap<u32, usize>,
    step_medians: &BTreeMap<u32, f64>,
    host_gaps: &BTreeMap<u32, i64>,
) -> Vec<ev::RankLoad> {
    per_rank
        .iter()
        .map(|(r, l)| ev::RankLoad {
            rank: *r,
            communication_ns: l.comm_ns,
            compute_ns: l.compute_ns,
            times_last: times_last.get(r).copied().unwrap_or(0),
            step_median_ns: step_medians.get(r).map(|m| m.round() as i64),
            host_gap_ns: host_gaps.get(r).copied(),
        })
        .collect()
}

/// The straggler, the units it was last in, the time the others lose to it, and its arrivals
/// when the collectives match across ranks: those show who arrives late directly; the
/// comparison of communication time per unit stands in where they cannot be matched.
fn choose_straggler<'u>(
    analysis: &Analysis,
    compared: &'u [Unit],
    times_last: &BTreeMap<u32, usize>,
) -> Option<(u32, Vec<&'u Unit>, i64, Option<SkewStraggler>)> {
    let arrivals = &analysis.collectives.arrivals;
    if !arrivals.is_empty() {
        let s = skew_straggler(arrivals, analysis)?;
        let units = compared.iter().filter(|u| u.last == s.rank).collect();
        // Every other rank loses the late arrival (the window sums the ranks' windows).
        let others = arrivals.len().saturating_sub(1).max(1) as i64;
        return Some((s.rank, units, s.step_late_ns * others, Some(s)));
    }
    let (&straggler, &count) = times_last
        .iter()
        .max_by_key(|(r, n)| (**n, std::cmp::Reverse(**r)))?;
    if count * 2 <= compared.len() {
        return None;
    }
    let units: Vec<&Unit> = compared.iter().filter(|u| u.last == straggler).collect();
    let wait = units.iter().map(|u| u.wait_ns).sum();
    Some((straggler, units, wait, None))
}

/// The straggler by arrival skew: the rank that starts last at most of the collectives where
/// someone was late, with what it costs.
struct SkewStraggler {
    rank: u32,
    times_last: u64,
    collectives: u64,
    late_ns: i64,
    step_late_ns: i64,
    median_step_late_ns: i64,
    steps: usize,
    /// ", 30 of 30 all_reduces" for its most frequent collective type.
    by_kind_text: String,
}

impl SkewStraggler {
    /// The finding's summary: `comm` is (its communication time, the others' median).
    fn summary(&self, wait_ns: i64, wait_pct: f64, comm: (i64, i64), cause: &str) -> String {
        format!(
            "rank {} is the straggler: it starts last at {} of the {} collectives it shares with the other ranks ({:.0}%{}), on average {} after the first rank. Its latest arrival of each step is {} late (median over {} steps): the step loses that much, the others' collectives queuing behind the late one ({} lost over all steps and the other ranks, {wait_pct:.1}% of the window); its communication kernels take {} against a median {} on the others; {cause}",
            self.rank,
            self.times_last,
            self.collectives,
            self.times_last as f64 * 100.0 / self.collectives.max(1) as f64,
            self.by_kind_text,
            ms(self.late_ns / self.times_last.max(1) as i64),
            ms(self.median_step_late_ns),
            self.steps,
            ms(wait_ns),
            ms(comm.0),
            ms(comm.1),
        )
    }
}

/// Each rank's arrivals at the matched collectives, for the evidence.
fn arrival_rows(arrivals: &[Arrival], analysis: &Analysis) -> Vec<ev::RankArrivals> {
    arrivals
        .iter()
        .map(|a| ev::RankArrivals {
            by_group: group_rows(a, analysis),
            rank: a.rank,
            collectives: a.collectives,
            times_last: a.times_last,
            late_ns: a.late_ns,
            step_late_ns: a.step_late_ns,
            wait_ns: a.wait_ns,
            exposed_wait_ns: a.exposed_wait_ns,
            by_collective: a
                .by_kind
                .iter()
                .map(|(k, (n, last))| ev::CollectiveArrivals {
                    collective: k.as_str().to_string(),
                    collectives: *n,
                    times_last: *last,
                })
                .collect(),
        })
        .collect()
}

/// Per process group, how the rank arrives at its collectives, with the parallelism the group
/// carries: most often last first.
fn group_rows(a: &Arrival, analysis: &Analysis) -> Vec<ev::GroupArrivals> {
    let mut rows: Vec<ev::GroupArrivals> = a
        .by_group
        .iter()
        .map(|(group, g)| ev::GroupArrivals {
            group: group.clone(),
            desc: g.desc.clone(),
            kinds: analysis
                .parallelism
                .iter()
                .filter(|p| p.group.as_deref() == Some(group.as_str()))
                .map(|p| p.kind.as_str().to_string())
                .collect(),
            collectives: g.collectives,
            times_last: g.times_last,
            late_ns: g.late_ns,
        })
        .collect();
    rows.sort_by_key(|g| (std::cmp::Reverse(g.times_last), g.group.clone()));
    rows
}

/// ", last at 24 of 24 in mesh_tp (tensor) and 20 of 20 in mesh_dp (fsdp)": the groups a
/// straggler is late in, where the job has more than one.
fn groups_text(groups: &[ev::GroupArrivals]) -> String {
    if groups.len() < 2 {
        return String::new();
    }
    let parts: Vec<String> = groups
        .iter()
        .filter(|g| g.times_last > 0)
        .take(3)
        .map(|g| {
            let kinds = if g.kinds.is_empty() {
                String::new()
            } else {
                format!(" ({})", g.kinds.join(", "))
            };
            format!(
                "{} of {} in {}{kinds}",
                g.times_last,
                g.collectives,
                g.desc.as_deref().unwrap_or(&g.group)
            )
        })
        .collect();
    match parts.len() {
        0 => String::new(),
        1 => format!(", last at {}", parts[0]),
        _ => format!(
            ", last at {} and {}",
            parts[..parts.len() - 1].join(", "),
            parts[parts.len() - 1]
        ),
    }
}

fn skew_straggler(arrivals: &[Arrival], analysis: &Analysis) -> Option<SkewStraggler> {
    let late_total: u64 = arrivals.iter().map(|a| a.times_last).sum();
    let majority = |a: &&Arrival| a.times_last * 2 > late_total && a.step_late_ns > 0;
    // The rank the step lost most to; on a mesh of several groups the others' lateness
    // cascades (a rank that waited for the straggler in one group arrives late in the next),
    // so, where that rank is not last at most collectives, the one that is.
    let a = arrivals
        .iter()
        .max_by_key(|a| (a.step_late_ns, a.times_last, std::cmp::Reverse(a.rank)))
        .filter(majority)
        .or_else(|| {
            arrivals
                .iter()
                .max_by_key(|a| (a.times_last, a.step_late_ns, std::cmp::Reverse(a.rank)))
                .filter(majority)
        })?;
    let per_step: Vec<i64> = a.late_by_step.values().copied().collect();
    let by_kind_text = a
        .by_kind
        .iter()
        .max_by_key(|(k, (n, _))| (*n, std::cmp::Reverse(**k)))
        .filter(|_| a.by_kind.len() > 1 || a.by_kind.keys().next().is_some())
        .map(|(k, (n, last))| format!("; {last} of {n} {}s", k.as_str()))
        .unwrap_or_default()
        + &groups_text(&group_rows(a, analysis));
    Some(SkewStraggler {
        rank: a.rank,
        times_last: a.times_last,
        collectives: a.collectives,
        late_ns: a.late_ns,
        step_late_ns: a.step_late_ns,
        median_step_late_ns: median(&per_step).round() as i64,
        steps: per_step.len(),
        by_kind_text,
    })
}
