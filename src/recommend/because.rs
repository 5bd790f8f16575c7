//! A recommendation's own evidence: the facts of the analysis its advice rests on
//! (`because = [...]` in `rules/ladder.toml`), said before the triggering findings.

use crate::analysis::ops::efficiency::{is_attention_op, is_composite};
use crate::analysis::Analysis;
use crate::classify::Bucket;
use crate::detect::Finding;
use serde::Deserialize;

/// A fact a recommendation cites.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Fact {
    /// GEMMs' share of kernel time and their libraries.
    GemmShare,
    /// How close the GEMM shapes run to the device's dense peak (time-weighted), the slowest
    /// large ones named.
    GemmEfficiency,
    /// The attention kernel that runs now, its share of attention time, and the attention
    /// ops' efficiency.
    AttentionKernel,
}

impl Fact {
    /// What the fact says, for the catalog's description.
    pub fn describe(self) -> &'static str {
        match self {
            Fact::GemmShare => "the GEMM share of kernel time and its libraries",
            Fact::GemmEfficiency => {
                "the GEMM shapes' time-weighted share of the dense peak, the largest named"
            }
            Fact::AttentionKernel => {
                "the attention kernel that runs now, its share, and the attention ops' efficiency"
            }
        }
    }

    /// The fact in words, or None when the trace does not show it.
    pub fn say(self, a: &Analysis, findings: &[Finding]) -> Option<String> {
        match self {
            Fact::GemmShare => gemm_share(a, findings),
            Fact::GemmEfficiency => shapes_efficiency(a, |op| !is_composite(op), "GEMM"),
            Fact::AttentionKernel => attention_kernel(a),
        }
    }
}

fn gemm_share(a: &Analysis, findings: &[Finding]) -> Option<String> {
    let gemm = a.bucket(Bucket::Gemm);
    if gemm.kernel_ns == 0 {
        return None;
    }
    let libraries: Vec<String> = crate::detect::gemm_libraries(findings)
        .iter()
        .filter(|(_, p)| *p >= 1.0)
        .map(|(l, p)| format!("{l} {p:.0}%"))
        .collect();
    Some(format!(
        "GEMMs hold {:.1}% of kernel time{}",
        gemm.pct,
        if libraries.is_empty() {
            String::new()
        } else {
            format!(" ({})", libraries.join(", "))
        }
    ))
}

/// The time-weighted share of peak of the op shapes `keep` selects, and the three largest.
fn shapes_efficiency(a: &Analysis, keep: impl Fn(&str) -> bool, what: &str) -> Option<String> {
    let rows: Vec<_> = a
        .op_shapes
        .iter()
        .filter(|r| keep(&r.op) && r.pct_of_peak.is_some() && r.ns > 0)
        .collect();
    let ns: i64 = rows.iter().map(|r| r.ns).sum();
    if ns == 0 {
        return None;
    }
    let weighted: f64 = rows
        .iter()
        .map(|r| r.pct_of_peak.unwrap_or(0.0) * r.ns as f64)
        .sum::<f64>()
        / ns as f64;
    let largest: Vec<String> = rows
        .iter()
        .take(3)
        .map(|r| format!("{} {} {:.1}%", r.op, r.shapes, r.pct_of_peak.unwrap_or(0.0)))
        .collect();
    Some(format!(
        "{what} shapes with FLOPs from their input shapes run at {weighted:.1}% of the device's dense peak, time-weighted over {} ({:.0}% of kernel time); the largest: {}",
        crate::model::units::fmt_ns(ns),
        crate::analysis::numbers::pct(ns, a.summary.kernel_ns),
        largest.join("; ")
    ))
}

fn attention_kernel(a: &Analysis) -> Option<String> {
    let attention = a.bucket(Bucket::Attention);
    if attention.kernel_ns == 0 {
        return None;
    }
    let top = a
        .top_kernels
        .iter()
        .filter(|k| k.bucket == Bucket::Attention)
        .max_by(|x, y| x.total_ns.cmp(&y.total_ns).then(y.name.cmp(&x.name)))?;
    let name: String = top.name.chars().take(80).collect();
    let efficiency = shapes_efficiency(a, is_attention_op, "attention");
    Some(format!(
        "attention ({:.1}% of kernel time) runs mostly in {name} ({:.0}% of attention time, {} {}){}",
        attention.pct,
        crate::analysis::numbers::pct(top.total_ns, attention.kernel_ns),
        top.library,
        top.family,
        efficiency.map_or(String::new(), |e| format!("; {e}"))
    ))
}
