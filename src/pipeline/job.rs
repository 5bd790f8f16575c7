//! What the inputs must be to be analyzed: one job's ranks, some GPU activity, a step selection
//! that keeps a step. Checked before (and, for the selection, after) the analysis, so a CI gate
//! never passes on a report of nothing or of two runs blended into one.

use crate::error::RunError;
use crate::model::Trace;
use crate::pipeline::partial::run_difference;

/// How far apart two ranks of one job may have recorded, at least: ranks on one host share its
/// clock, and hosts' clocks agree within milliseconds under NTP; a host whose clock is seconds
/// off is found and undone by the collectives (`analysis::signals::collectives`, tested with a
/// rank 5 s ahead). Two jobs run one after another are a process start, NCCL's setup, a model
/// build and a warm-up apart (35 s between two of our 2-GPU captures).
const SAME_JOB_GAP_NS: i64 = 10_000_000_000;

/// Refuses ranks that cannot be one job: two inputs holding the same rank, a rank outside the
/// world size, `distributedInfo` that differs (backend, world size, NCCL version, the default
/// process group), or ranks recorded apart in time (their spans more than the longer span and
/// [`SAME_JOB_GAP_NS`] apart). Inputs without a rank are not compared.
pub(crate) fn check_one_job(trace: &Trace) -> Result<(), RunError> {
    let ranked: Vec<usize> = (0..trace.inputs.len())
        .filter(|&i| trace.inputs[i].rank.is_some())
        .collect();
    if ranked.len() < 2 {
        return Ok(());
    }
    let spans = spans(trace);
    // Wall-clock spans where every rank says where its timestamps start, else the raw ones.
    let wall = ranked
        .iter()
        .all(|&i| trace.inputs[i].base_time_ns.is_some());
    let span = |i: usize| {
        let off = if wall {
            trace.inputs[i].base_time_ns.unwrap_or(0)
        } else {
            0
        };
        spans[i].map(|(s, e)| (s.saturating_add(off), e.saturating_add(off)))
    };
    let meta = |i: usize| &trace.inputs[i];
    let refuse = |a: usize, b: usize, why: String| RunError::MixedJob {
        first: meta(a).path.clone(),
        other: meta(b).path.clone(),
        why,
    };
    let first = ranked[0];
    for (k, &i) in ranked.iter().enumerate() {
        let rank = meta(i).rank.expect("ranked");
        if let Some(&j) = ranked[..k].iter().find(|&&j| meta(j).rank == Some(rank)) {
            return Err(refuse(j, i, format!("both hold rank {rank}")));
        }
        if let Some(n) = meta(i).distributed.as_ref().and_then(|d| d.world_size) {
            if rank >= n {
                return Err(refuse(
                    first,
                    i,
                    format!("rank {rank} is outside its world_size {n}"),
                ));
            }
        }
        if i == first {
            continue;
        }
        if let Some(field) = run_difference(
            meta(first).distributed.as_ref(),
            meta(i).distributed.as_ref(),
        ) {
            return Err(refuse(
                first,
                i,
                format!("their distributedInfo {field} differs"),
            ));
        }
        if let (Some((s0, e0)), Some((s1, e1))) = (span(first), span(i)) {
            let gap = (s1 - e0).max(s0 - e1);
            let longer = (e0 - s0).max(e1 - s1);
            if gap > longer.max(SAME_JOB_GAP_NS) {
                return Err(refuse(
                    first,
                    i,
                    format!(
                        "they were recorded {} apart (ranks of one job record at the same time)",
                        crate::model::units::fmt_ns(gap)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Each input's first and last timestamp (GPU activities and host events), if it has any.
fn spans(trace: &Trace) -> Vec<Option<(i64, i64)>> {
    let mut out: Vec<Option<(i64, i64)>> = vec![None; trace.inputs.len()];
    let mut widen = |input: u32, s: i64, e: i64| {
        let slot = &mut out[input as usize];
        *slot = Some(slot.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
    };
    let acts = &trace.activities;
    for a in 0..acts.len() {
        widen(acts.input[a], acts.ts_ns[a], acts.end_ns(a));
    }
    let host = &trace.host;
    for h in 0..host.len() {
        widen(host.input[h], host.ts_ns[h], host.end_ns(h));
    }
    out
}

/// Whether the inputs recorded any GPU activity (a kernel, a copy or a fill) or hardware
/// counters (a rocprof-compute workload).
pub(crate) fn has_gpu_work(trace: &Trace) -> bool {
    !trace.activities.is_empty() || !trace.counters.is_empty()
}

/// The error for inputs without GPU activity: their paths, and what their readers warned of
/// (a cut before the first kernel).
pub(crate) fn nothing_to_analyze(trace: &Trace) -> RunError {
    let paths: Vec<&str> = trace.inputs.iter().map(|i| i.path.as_str()).collect();
    RunError::NoGpuWork {
        paths: paths.join(", "),
        warnings: trace
            .inputs
            .iter()
            .flat_map(|i| i.warnings.iter().map(move |w| format!("{}: {w}", i.path)))
            .collect(),
    }
}

/// The step numbers an input set has, for a message: `steps 1..=2`, `steps 3, 7`, `no steps`.
pub(crate) fn describe_steps(numbers: &[u64], iterations: bool) -> String {
    let what = if iterations { "iterations" } else { "steps" };
    match numbers {
        [] => format!("the inputs have no {what}"),
        [n] => format!("the inputs have {} {n} only", &what[..what.len() - 1]),
        _ if numbers.windows(2).all(|w| w[1] == w[0] + 1) => format!(
            "the inputs have {what} {}..={}",
            numbers[0],
            numbers[numbers.len() - 1]
        ),
        _ => {
            let listed: Vec<String> = numbers.iter().take(12).map(u64::to_string).collect();
            let more = if numbers.len() > 12 { ", …" } else { "" };
            format!("the inputs have {what} {}{more}", listed.join(", "))
        }
    }
}
