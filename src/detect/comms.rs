//! Collectives that move their bytes slowly: messages large enough to run at link speed whose
//! bus bandwidth over the transfer time stays far below the link, without a late rank to blame.

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
