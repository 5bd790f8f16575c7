//! How each kind of parallelism is told from a process group's traffic (the rules of
//! [`super`]'s module docs), and the implementation its names show.

use super::{
    Evidence, ExpertLoad, Family, Group, ParallelKind, Parallelism, Traffic, ALL_TO_ALL, P2P,
};
use crate::analysis::signals::collective_calls::CollectiveKind;
use std::collections::BTreeMap;

/// The implementation the names show for a kind.
fn implementation(kind: ParallelKind, names: &BTreeMap<Family, u64>) -> Option<String> {
    let has = |f: Family| names.get(&f).copied().unwrap_or(0) > 0;
    let name = match kind {
        ParallelKind::Ddp if has(Family::Ddp) => "ddp",
        ParallelKind::Fsdp | ParallelKind::Hsdp if has(Family::Fsdp1) => "fsdp1",
        ParallelKind::Fsdp | ParallelKind::Hsdp if has(Family::Fsdp2) => "fsdp2",
        ParallelKind::Fsdp | ParallelKind::Hsdp | ParallelKind::Ddp if has(Family::DeepSpeed) => {
            "deepspeed"
        }
        ParallelKind::Tensor | ParallelKind::Sequence if has(Family::Vllm) => "vllm",
        ParallelKind::Tensor | ParallelKind::Sequence if has(Family::AsyncTp) => "async_tp",
        ParallelKind::Tensor | ParallelKind::Sequence if has(Family::Redistribute) => "dtensor",
        ParallelKind::Pipeline if has(Family::Pipelining) => "torch.pipelining",
        ParallelKind::Context if has(Family::ContextParallel) => "torch.context_parallel",
        _ if has(Family::Megatron) => "megatron",
        _ => return None,
    };
    Some(name.to_string())
}

fn sizes(t: &Traffic) -> String {
    let mut by_count: Vec<(u64, u64)> = t.bytes.iter().map(|(&b, &n)| (n, b)).collect();
    by_count.sort_unstable_by(|a, b| b.cmp(a));
    if by_count.is_empty() {
        return "sizes not recorded".into();
    }
    let shown: Vec<String> = by_count
        .iter()
        .take(2)
        .map(|&(n, b)| format!("{n}× {}", size(b)))
        .collect();
    let more = if by_count.len() > 2 {
        format!(" and {} other sizes", by_count.len() - 2)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

/// Bytes in decimal units, as the collectives view prints them.
fn size(b: u64) -> String {
    match b {
        0..1_000 => format!("{b} B"),
        1_000..1_000_000 => format!("{:.1} KB", b as f64 / 1e3),
        _ => format!("{:.2} MB", b as f64 / 1e6),
    }
}

fn inside(t: &Traffic, f: Family) -> u64 {
    t.inside.get(&f).copied().unwrap_or(0)
}

/// All-reduces of gradients move at least this much in one call (smaller ones are scalars:
/// a loss, a norm, a flag).
pub(super) const GRADIENT_BYTES: u64 = 64 * 1024;

/// One input's rows, as they are found.
struct Rows<'a> {
    ev: &'a Evidence,
    rows: Vec<Parallelism>,
}

impl Rows<'_> {
    fn named(&self, f: Family) -> u64 {
        self.ev.names.get(&f).copied().unwrap_or(0)
    }
    fn push(&mut self, kind: ParallelKind, group: &Option<String>, g: &Group, why: String) {
        self.rows.push(Parallelism {
            kind,
            implementation: implementation(kind, &self.ev.names),
            group: group.clone(),
            mesh_dim: g.desc.clone().filter(|d| d.starts_with("mesh_")),
            degree: g.size.or(self.ev.world),
            evidence: vec![why],
            ranks: Vec::new(),
            expert_load: Vec::new(),
            expert_imbalance: None,
            accumulation: (kind == ParallelKind::Ddp)
                .then(|| accumulation(g))
                .flatten(),
            expert_loop: (kind == ParallelKind::Expert)
                .then(|| expert_loop(g))
                .flatten(),
        });
    }

    /// Sends and receives: a pipeline's, or a ring's inside attention.
    fn point_to_point(&mut self, name: &Option<String>, g: &Group) {
        let p2p = g.traffic(&P2P);
        if p2p.calls == 0 {
            return;
        }
        let in_attention = inside(&p2p, Family::Attention) + inside(&p2p, Family::ContextParallel);
        if in_attention * 2 > p2p.calls {
            let why = format!(
                "{} point-to-point transfers inside attention (a ring of K/V blocks): {}",
                p2p.calls,
                sizes(&p2p)
            );
            self.push(ParallelKind::Context, name, g, why);
        } else {
            let schedule = if inside(&p2p, Family::Pipelining) > 0 {
                " inside a pipelining schedule's actions"
            } else {
                ""
            };
            let why = format!(
                "{} point-to-point sends and receives between stage compute{schedule}: {}",
                p2p.calls,
                sizes(&p2p)
            );
            self.push(ParallelKind::Pipeline, name, g, why);
        }
    }

    /// All-to-alls: experts' dispatch and combine, or context parallel's inside attention.
    fn all_to_all(&mut self, name: &Option<String>, g: &Group) {
        let a2a = g.traffic(&ALL_TO_ALL);
        if a2a.calls == 0 {
            return;
        }
        if inside(&a2a, Family::Attention) * 2 > a2a.calls {
            let why = format!("{} all-to-alls inside attention (K/V blocks passed round the ring, or Ulysses' heads-for-sequence exchange): {}", a2a.calls, sizes(&a2a));
            self.push(ParallelKind::Context, name, g, why);
        } else if self.named(Family::EmbeddingSharding) == 0 && self.named(Family::GroupedGemm) > 0
        {
            let rank = self.ev.rank.unwrap_or(0);
            let load = ExpertLoad::of(rank, &g.uneven);
            let rows = load.as_ref().map_or(String::new(), |l| {
                format!(
                    "; rank {rank}'s forward dispatches sent {:?} rows to the ranks and received {:?}",
                    l.sent_rows, l.received_rows
                )
            });
            let why = format!(
                "{} all-to-alls (token dispatch and combine): {}{rows}",
                a2a.calls,
                sizes(&a2a)
            );
            self.push(ParallelKind::Expert, name, g, why);
            if let (Some(l), Some(row)) = (load, self.rows.last_mut()) {
                row.expert_load.push(l);
            }
        }
    }

    /// All-gathers and reduce-scatters: K/V inside attention, sequence parallel's activations
    /// (reduce-scatters in the forward too), or FSDP's shards. Returns (sharded, sequence).
    fn gathers(&mut self, name: &Option<String>, g: &Group) -> (bool, bool) {
        use CollectiveKind as C;
        let gathers = g.traffic(&[C::AllGather]);
        let scatters = g.traffic(&[C::ReduceScatter]);
        // Decided per group: in a 2-D job FSDP's names are the job's, not every group's.
        let fsdp_gathers = inside(&gathers, Family::Fsdp1) + inside(&gathers, Family::Fsdp2) > 0;
        let forward_scatters = scatters.calls - scatters.backward - scatters.after_backward;
        if gathers.calls > 0 && inside(&gathers, Family::Attention) * 2 > gathers.calls {
            let why = format!(
                "{} all-gathers inside attention (K/V gathered over the sequence): {}",
                gathers.calls,
                sizes(&gathers)
            );
            self.push(ParallelKind::Context, name, g, why);
        } else if forward_scatters > 0 && gathers.calls > 0 {
            let why = format!("{} all-gathers and {forward_scatters} reduce-scatters in the forward (activations split along the sequence)", gathers.calls);
            self.push(ParallelKind::Sequence, name, g, why);
            self.push(ParallelKind::Tensor, name, g, "sequence parallel's group: its layers' weights are split across it (the activations are gathered and reduce-scattered instead of all-reduced)".into());
            return (false, true);
        } else if scatters.calls > 0 || (gathers.calls > 0 && fsdp_gathers) {
            let why = format!("{} all-gathers of parameter shards ({}), {} reduce-scatters of gradients in the backward", gathers.calls, sizes(&gathers), scatters.backward);
            self.push(ParallelKind::Fsdp, name, g, why);
            return (true, false);
        }
        (false, false)
    }

    /// All-reduces: activations in the forward (tensor parallel) or gradients in and after
    /// the backward (data parallel); DTensor's own (a Partial placement made whole) belong to
    /// tensor parallelism in any phase.
    fn all_reduces(&mut self, name: &Option<String>, g: &Group, sequence_here: bool) {
        let reduces = g.traffic(&[CollectiveKind::AllReduce]);
        if reduces.calls == 0 {
            return;
        }
        let ddp_named = self.named(Family::Ddp) > 0;
        let dtensor = self.named(Family::Redistribute) > 0 && !ddp_named;
        let dtensor_reduces = if dtensor {
            inside(&reduces, Family::Functional).max(inside(&reduces, Family::Redistribute))
        } else {
            0
        };
        let gradients = (reduces.backward + reduces.after_backward).saturating_sub(dtensor_reduces);
        let forward = reduces.calls - reduces.backward - reduces.after_backward;
        let vllm = self.named(Family::Vllm) > 0;
        let largest = reduces.bytes.keys().max().copied().unwrap_or(0);
        if forward > 0 && (forward * 4 >= reduces.calls || vllm) && !(dtensor && sequence_here) {
            let why = format!("{forward} all-reduces in the forward ({} in the backward) of activation-shaped tensors: {}", reduces.backward, sizes(&reduces));
            self.push(ParallelKind::Tensor, name, g, why);
        } else if gradients > 0
            && (largest >= GRADIENT_BYTES || ddp_named)
            && !(dtensor && dtensor_reduces > 0)
        {
            let wrapper = if ddp_named {
                ""
            } else {
                " by hand (no DistributedDataParallel)"
            };
            let why = format!(
                "{gradients} all-reduces of gradients in or after the backward{wrapper}: {}",
                sizes(&reduces)
            );
            self.push(ParallelKind::Ddp, name, g, why);
        }
    }

    /// FSDP on one group and gradient all-reduces on another: HSDP.
    fn hybrid(&mut self) {
        let fsdp_groups: Vec<Option<String>> = self
            .rows
            .iter()
            .filter(|r| r.kind == ParallelKind::Fsdp)
            .map(|r| r.group.clone())
            .collect();
        let replicated = self
            .rows
            .iter()
            .any(|r| r.kind == ParallelKind::Ddp && !fsdp_groups.contains(&r.group));
        if fsdp_groups.is_empty() || !replicated || self.named(Family::Ddp) > 0 {
            return;
        }
        for r in self.rows.iter_mut() {
            if matches!(r.kind, ParallelKind::Ddp | ParallelKind::Fsdp) {
                r.evidence
                    .push("sharded on one group, replicated across another: HSDP".into());
                r.kind = ParallelKind::Hsdp;
                r.implementation = implementation(ParallelKind::Hsdp, &self.ev.names);
            }
        }
    }

    /// A wrapper without traffic in the window (one rank profiled alone, no step).
    fn wrapper(&mut self, kind: ParallelKind, f: Family, what: &str) {
        let n = self.named(f);
        // HSDP is FSDP too.
        let shown = |r: &Parallelism| {
            r.kind == kind || kind == ParallelKind::Fsdp && r.kind == ParallelKind::Hsdp
        };
        if n == 0 || self.rows.iter().any(shown) {
            return;
        }
        self.rows.push(Parallelism {
            kind,
            implementation: implementation(kind, &self.ev.names),
            group: None,
            mesh_dim: None,
            degree: self.ev.world,
            evidence: vec![format!("{n} {what} ops, no traffic of it in the window")],
            ranks: Vec::new(),
            expert_load: Vec::new(),
            expert_imbalance: None,
            accumulation: None,
            expert_loop: None,
        });
    }
}

/// One input's rows.
pub(super) fn classify(ev: &Evidence) -> Vec<Parallelism> {
    let mut rows = Rows {
        ev,
        rows: Vec::new(),
    };
    for (name, g) in &ev.groups {
        rows.point_to_point(name, g);
        rows.all_to_all(name, g);
        let (_, sequence_here) = rows.gathers(name, g);
        rows.all_reduces(name, g, sequence_here);
    }
    rows.hybrid();
    rows.wrapper(ParallelKind::Ddp, Family::Ddp, "DistributedDataParallel");
    rows.wrapper(
        ParallelKind::Fsdp,
        Family::Fsdp1,
        "FullyShardedDataParallel",
    );
    rows.wrapper(ParallelKind::Fsdp, Family::Fsdp2, "FSDP2");
    rows.wrapper(
        ParallelKind::Pipeline,
        Family::Pipelining,
        "pipeline schedule",
    );
    rows.rows
}

/// DDP's backward all-reduces after more than one forward of a step: every microbatch's but
/// the last could skip them (`no_sync()`).
fn accumulation(g: &Group) -> Option<super::Accumulation> {
    let mut out = super::Accumulation::default();
    for per_forward in g.synced.values().filter(|f| f.len() >= 2) {
        out.steps += 1;
        out.synced_microbatches = out.synced_microbatches.max(per_forward.len() as u32);
        // All but the step's last forward's.
        for &(ns, exposed) in per_forward.values().rev().skip(1) {
            out.avoidable_ns += ns;
            out.avoidable_exposed_ns += exposed;
        }
    }
    (out.steps > 0).then_some(out)
}

/// A loop over the local experts: at least this many GEMMs between a dispatch and its
/// combine (three per expert: gate, up, down; a grouped implementation runs three in all).
const LOOP_GEMMS: u32 = 6;

/// The experts as a Python loop: the forward sections' median GEMM count reaches
/// [`LOOP_GEMMS`] and none is a grouped GEMM. Its per-expert repetitions (all but one of the
/// `gemms / 3` experts' share of the sections' host time) are what one grouped GEMM per
/// projection leaves out.
fn expert_loop(g: &Group) -> Option<super::ExpertLoop> {
    let sections = &g.expert_sections;
    if sections.is_empty() || sections.iter().any(|s| s.1) {
        return None;
    }
    // The forward's sections come first (the backward's run after them); take the first half.
    let forward = &sections[..sections.len().div_ceil(2)];
    let mut counts: Vec<u32> = forward.iter().map(|s| s.0).collect();
    counts.sort_unstable();
    let median = counts[counts.len() / 2];
    if median < LOOP_GEMMS {
        return None;
    }
    let host: i64 = sections.iter().map(|s| s.2).sum();
    let experts = f64::from(median / 3).max(1.0);
    Some(super::ExpertLoop {
        sections: sections.len() as u32,
        gemms_per_section: median,
        host_ns: host,
        avoidable_host_ns: (host as f64 * (1.0 - 1.0 / experts)).round() as i64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `calls` of `kind` on a group, `backward` of them in the backward, `inside` a family.
    fn traffic(calls: u64, backward: u64, inside: &[(Family, u64)], bytes: u64) -> Traffic {
        Traffic {
            calls,
            backward,
            after_backward: 0,
            inside: inside.iter().copied().collect(),
            bytes: [(bytes, calls)].into_iter().collect(),
        }
    }

    fn group(desc: &str, by_kind: Vec<(CollectiveKind, Traffic)>) -> Group {
        Group {
            desc: Some(desc.into()),
            size: Some(2),
            by_kind: by_kind.into_iter().collect(),
            ..Default::default()
        }
    }

    fn kinds_of(ev: &Evidence) -> Vec<(ParallelKind, Option<String>)> {
        let mut out: Vec<_> = classify(ev)
            .into_iter()
            .map(|r| (r.kind, r.mesh_dim))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn a_2d_mesh_tells_fsdp_from_sequence_parallel_per_group() {
        use CollectiveKind as C;
        // FSDP2 on mesh_dp (its gathers inside FSDP::all_gather), TP with sequence parallel on
        // mesh_tp (activations gathered and reduce-scattered in the forward).
        let ev = Evidence {
            names: [(Family::Fsdp2, 40), (Family::Redistribute, 20)]
                .into_iter()
                .collect(),
            groups: [
                (
                    Some("1".to_string()),
                    group(
                        "mesh_dp",
                        vec![
                            (
                                C::AllGather,
                                traffic(10, 4, &[(Family::Fsdp2, 10)], 50_000_000),
                            ),
                            (C::ReduceScatter, traffic(5, 5, &[], 50_000_000)),
                        ],
                    ),
                ),
                (
                    Some("2".to_string()),
                    group(
                        "mesh_tp",
                        vec![
                            (
                                C::AllGather,
                                traffic(8, 4, &[(Family::Redistribute, 8)], 2_000_000),
                            ),
                            (C::ReduceScatter, traffic(8, 4, &[], 2_000_000)),
                        ],
                    ),
                ),
            ]
            .into_iter()
            .collect(),
            world: Some(4),
            rank: Some(0),
        };
        assert_eq!(
            kinds_of(&ev),
            vec![
                (ParallelKind::Fsdp, Some("mesh_dp".into())),
                (ParallelKind::Tensor, Some("mesh_tp".into())),
                (ParallelKind::Sequence, Some("mesh_tp".into())),
            ]
        );
    }

    #[test]
    fn sharding_on_one_group_and_gradient_all_reduces_on_another_are_hsdp() {
        use CollectiveKind as C;
        let ev = Evidence {
            names: [(Family::Fsdp2, 40)].into_iter().collect(),
            groups: [
                (
                    Some("1".to_string()),
                    group(
                        "mesh_dp_shard",
                        vec![
                            (
                                C::AllGather,
                                traffic(10, 4, &[(Family::Fsdp2, 10)], 50_000_000),
                            ),
                            (C::ReduceScatter, traffic(5, 5, &[], 50_000_000)),
                        ],
                    ),
                ),
                (
                    Some("2".to_string()),
                    group(
                        "mesh_dp_replicate",
                        vec![(C::AllReduce, traffic(5, 5, &[], 25_000_000))],
                    ),
                ),
            ]
            .into_iter()
            .collect(),
            world: Some(4),
            rank: Some(0),
        };
        assert_eq!(
            kinds_of(&ev),
            vec![
                (ParallelKind::Hsdp, Some("mesh_dp_replicate".into())),
                (ParallelKind::Hsdp, Some("mesh_dp_shard".into())),
            ]
        );
        assert!(classify(&ev)
            .iter()
            .all(|r| r.implementation.as_deref() == Some("fsdp2")));
    }
}
