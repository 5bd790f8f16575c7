//! Collectives that move their bytes slowly: messages large enough to run at link speed whose
//! bus bandwidth over the transfer time stays far below the link, without a late rank to blame;
//! pipelines whose ranks idle in the schedule's bubble or wait on an unequal stage; DDP
//! all-reducing every accumulation microbatch's gradients; experts run as a loop of GEMMs.

use super::evidence as ev;
use super::{ms, pct, Detail, Finding, Severity};
use crate::analysis::signals::collectives::CollectiveRow;
use crate::analysis::Analysis;

/// Messages from this size (nccl-tests reach their plateau above a few MB on NVLink / xGMI;
/// below it latency, not bandwidth, bounds a collective).
const MIN_BYTES: u64 = 1_000_000;
/// Bus bandwidth under this share of the link's peak is slow (NCCL reaches about 80%).
const SLOW_PCT: f64 = 50.0;
/// "Little skew": waiting for late ranks takes at most this share of the time in it.
const MAX_WAIT_PCT: f64 = 25.0;
/// What NCCL/RCCL reach of the link's peak at best (nccl-tests issue #212: 370 of 450 GB/s).
const REACHABLE_PCT: f64 = 80.0;

fn slow(row: &CollectiveRow) -> Option<(f64, i64, i64)> {
    let (pct_peak, wait, transfer) = (row.pct_of_link_peak?, row.wait_ns?, row.transfer_ns?);
    (row.bandwidth_basis == "transfer"
        && row.bytes? >= MIN_BYTES
        && pct_peak < SLOW_PCT
        && pct(wait, wait + transfer) <= MAX_WAIT_PCT)
        .then_some((pct_peak, wait, transfer))
}

/// The slow collectives of an analysis (one trace's, or several ranks' merged).
pub fn slow_collective(analysis: &Analysis) -> Vec<Finding> {
    let rows = &analysis.collectives.rows;
    let mut out = Vec::new();
    for row in rows {
        let Some((pct_peak, wait, transfer)) = slow(row) else {
            continue;
        };
        // At the reachable rate the transfers would take pct_peak / 80 of their time; only the
        // part no other GPU work hides shortens the step.
        let saved = transfer as f64 * (1.0 - pct_peak / REACHABLE_PCT);
        let overlap = row.transfer_overlap_pct.unwrap_or(0.0);
        let stake = (saved * (1.0 - overlap / 100.0)).round() as i64;
        let mb = row.bytes.unwrap_or(0) as f64 / 1e6;
        let group = row
            .process_group_desc
            .as_deref()
            .or(row.process_group.as_deref())
            .unwrap_or("?");
        let alongside = if overlap >= 50.0 {
            format!("; other GPU work runs alongside {overlap:.0}% of its transfers and competes with it for SMs and HBM bandwidth (a high-priority communication stream or more channels let it keep pace)")
        } else {
            String::new()
        };
        out.push(Finding::new(
            if pct(stake, analysis.summary.window_ns) >= 1.0 {
                Severity::Medium
            } else {
                Severity::Low
            },
            format!(
                "{} of {mb:.1} MB on process group {group} ({} ranks) moves its bytes at {:.0} GB/s bus bandwidth, {pct_peak:.0}% of the link's {:.0} GB/s per direction, over {} of transfer in {} calls with little waiting ({:.0}% of its time){alongside}",
                row.collective.as_str(),
                row.group_size.unwrap_or(0),
                row.busbw_gbps.unwrap_or(0.0),
                row.link_peak_gbps.unwrap_or(0.0),
                ms(transfer),
                row.count,
                pct(wait, wait + transfer),
            ),
            stake,
            Detail::SlowCollective(ev::SlowCollective {
                collective: row.collective.as_str().to_string(),
                bytes: row.bytes,
                process_group: row.process_group.clone(),
                group_size: row.group_size,
                count: row.count,
                busbw_gbps: row.busbw_gbps,
                link_peak_gbps: row.link_peak_gbps,
                pct_of_link_peak: pct_peak,
                wait_ns: wait,
                transfer_ns: transfer,
                transfer_overlap_pct: row.transfer_overlap_pct,
                saved_at_reachable_ns: saved.round() as i64,
            }),
        ));
    }
    out
}

/// Ranks idling this share of the step on average make the bubble worth a finding.
const MIN_BUBBLE_PCT: f64 = 10.0;
/// A replay must save at least this share of the step.
const MIN_SAVING_PCT: f64 = 1.0;

/// The pipeline's evidence with `best` as the change, and its stake in the window's ns.
fn pipeline_evidence(
    analysis: &Analysis,
    best: &crate::analysis::signals::pipeline::replays::ScheduleReplay,
) -> Option<(ev::Pipeline, i64)> {
    use crate::analysis::signals::pipeline::replays::measured_step_ns;
    let p = analysis.pipeline.as_ref()?;
    let step = measured_step_ns(p)?;
    if step <= 0.0 || pct(best.saving_ns, step.round() as i64) < MIN_SAVING_PCT {
        return None;
    }
    let mut ranks: std::collections::BTreeMap<u32, ev::PipelineRank> = Default::default();
    for r in &p.stages {
        let e = ranks.entry(r.rank).or_insert_with(|| ev::PipelineRank {
            rank: r.rank,
            stages: r.stages.clone(),
            compute_ns: 0,
            bubble_ns: 0,
            bubble_pct: 0.0,
        });
        e.compute_ns += r.compute_ns;
        e.bubble_ns += r.bubble_ns;
    }
    let ranks: Vec<ev::PipelineRank> = ranks
        .into_values()
        .map(|mut r| {
            r.bubble_pct = (pct(r.bubble_ns, r.bubble_ns + r.compute_ns) * 10.0).round() / 10.0;
            r
        })
        .collect();
    let layers: Option<Vec<u32>> = ranks
        .iter()
        .map(|r| {
            r.stages
                .iter()
                .map(|s| p.chunks.iter().find(|c| c.stage == *s)?.layers)
                .sum::<Option<u32>>()
        })
        .collect();
    let stake = (best.saving_ns as f64 / step * analysis.summary.window_ns as f64).round() as i64;
    Some((
        ev::Pipeline {
            schedule: p.schedule.map(|s| s.as_str().to_string()),
            microbatches: p.microbatches,
            stages_total: p.stages_total,
            step_ns: step.round() as i64,
            ranks,
            layers,
            best: ev::PipelineChange {
                schedule: best.schedule.as_str().to_string(),
                stages_per_rank: best.stages_per_rank,
                rebalanced: best.rebalanced,
                layers: best.layers.clone(),
                step_ns: best.step_ns,
                saving_ns: best.saving_ns,
            },
        },
        stake,
    ))
}

fn severity(stake: i64, window: i64) -> Severity {
    match pct(stake, window) {
        p if p >= 10.0 => Severity::High,
        p if p >= 2.0 => Severity::Medium,
        _ => Severity::Low,
    }
}

/// A pipeline's bubble that another schedule (stages as measured) would shrink.
pub fn pipeline_bubble(analysis: &Analysis) -> Vec<Finding> {
    let Some(p) = analysis.pipeline.as_ref() else {
        return vec![];
    };
    let (bubble, total): (i64, i64) = p
        .stages
        .iter()
        .fold((0, 0), |(b, t), r| (b + r.bubble_ns, t + r.step_ns));
    if pct(bubble, total) < MIN_BUBBLE_PCT {
        return vec![];
    }
    let Some(best) = p
        .replays
        .iter()
        .filter(|r| !r.as_run && !r.rebalanced)
        .max_by_key(|r| (r.saving_ns, std::cmp::Reverse(r.schedule)))
    else {
        return vec![];
    };
    let Some((evidence, stake)) = pipeline_evidence(analysis, best) else {
        return vec![];
    };
    let now = evidence.schedule.clone().unwrap_or_else(|| "?".into());
    vec![Finding::new(
        severity(stake, analysis.summary.window_ns),
        format!(
            "the pipeline's ranks idle {:.0}% of the step on average ({now}, {} stages, {} microbatches; {}); replayed as {} with {} stage(s) a rank the step takes {} instead of {}",
            pct(bubble, total),
            p.stages_total,
            p.microbatches,
            evidence
                .ranks
                .iter()
                .map(|r| format!("rank {} {:.0}%", r.rank, r.bubble_pct))
                .collect::<Vec<_>>()
                .join(", "),
            best.schedule.as_str(),
            best.stages_per_rank,
            ms(best.step_ns),
            ms(evidence.step_ns),
        ),
        stake,
        Detail::PipelineBubble(evidence),
    )]
}

/// A pipeline whose unequal stages set its pace: layers moved off the slowest replay faster.
pub fn pipeline_imbalance(analysis: &Analysis) -> Vec<Finding> {
    let Some(p) = analysis.pipeline.as_ref() else {
        return vec![];
    };
    let Some(best) = p
        .replays
        .iter()
        .filter(|r| r.rebalanced && Some(r.schedule) == p.schedule)
        .max_by_key(|r| r.saving_ns)
    else {
        return vec![];
    };
    let Some((evidence, stake)) = pipeline_evidence(analysis, best) else {
        return vec![];
    };
    let slowest = evidence.ranks.iter().max_by_key(|r| r.compute_ns);
    let fastest = evidence.ranks.iter().min_by_key(|r| r.compute_ns);
    let (Some(slow), Some(fast)) = (slowest, fastest) else {
        return vec![];
    };
    let moved = match (&evidence.layers, &best.layers) {
        (Some(now), Some(after)) => format!(
            "; its layers per rank {now:?} moved to {after:?} (what the stage beyond its layers runs, the embedding or the head and loss, stays)"
        ),
        _ => "; compute evened out across the stages".to_string(),
    };
    vec![Finding::new(
        severity(stake, analysis.summary.window_ns),
        format!(
            "the pipeline's stages are unequal: rank {} computes {} to rank {}'s {} and the others wait on it{moved}; replayed so, the step takes {} instead of {}",
            slow.rank,
            ms(slow.compute_ns),
            fast.rank,
            ms(fast.compute_ns),
            ms(best.step_ns),
            ms(evidence.step_ns),
        ),
        stake,
        Detail::PipelineImbalance(evidence),
    )]
}

/// DDP all-reducing the gradients after every accumulation microbatch: all but each step's
/// last could run under `no_sync()`.
pub fn ddp_accumulation_sync(analysis: &Analysis) -> Vec<Finding> {
    use crate::analysis::signals::parallelism::ParallelKind;
    analysis
        .parallelism
        .iter()
        .filter(|p| p.kind == ParallelKind::Ddp)
        .filter_map(|p| {
            let a = p.accumulation.as_ref()?;
            let stake = a.avoidable_exposed_ns;
            (stake > 0).then(|| {
                Finding::new(
                    severity(stake, analysis.summary.window_ns),
                    format!(
                        "DDP all-reduces the gradients after each of {} accumulation microbatches per step ({} step(s), ranks {:?}): all but the last could skip it under no_sync(); those all-reduces take {} of kernel time, {} of it with nothing else on the GPU ({:.1}% of the window)",
                        a.synced_microbatches,
                        a.steps,
                        p.ranks,
                        ms(a.avoidable_ns),
                        ms(stake),
                        pct(stake, analysis.summary.window_ns),
                    ),
                    stake,
                    Detail::DdpAccumulationSync(ev::DdpAccumulation {
                        group: p.group.clone(),
                        ranks: p.ranks.clone(),
                        synced_microbatches: a.synced_microbatches,
                        steps: a.steps,
                        avoidable_ns: a.avoidable_ns,
                        avoidable_exposed_ns: stake,
                    }),
                )
            })
        })
        .collect()
}

/// The local experts run as a Python loop of GEMMs between the all-to-alls: one grouped GEMM
/// per projection runs their work once.
pub fn expert_gemm_loop(analysis: &Analysis) -> Vec<Finding> {
    use crate::analysis::signals::parallelism::ParallelKind;
    analysis
        .parallelism
        .iter()
        .filter(|p| p.kind == ParallelKind::Expert)
        .filter_map(|p| {
            let l = p.expert_loop.as_ref()?;
            let stake = l.avoidable_host_ns;
            (stake > 0).then(|| {
                Finding::new(
                    severity(stake, analysis.summary.window_ns),
                    format!(
                        "the experts run as a Python loop: {} GEMM kernels between each dispatch and its combine (about {} local experts, three GEMMs each), none grouped; the host spends {} between the all-to-alls' launches over {} sections (ranks {:?}), {} of it repeating the loop for all but one expert ({:.1}% of the window)",
                        l.gemms_per_section,
                        l.gemms_per_section / 3,
                        ms(l.host_ns),
                        l.sections,
                        p.ranks,
                        ms(stake),
                        pct(stake, analysis.summary.window_ns),
                    ),
                    stake,
                    Detail::ExpertGemmLoop(ev::ExpertLoop {
                        group: p.group.clone(),
                        ranks: p.ranks.clone(),
                        sections: l.sections,
                        gemms_per_section: l.gemms_per_section,
                        host_ns: l.host_ns,
                        avoidable_host_ns: stake,
                    }),
                )
            })
        })
        .collect()
}
