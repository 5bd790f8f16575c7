//! MoE routing: how many rows a router sent to its experts, so the rows a grouped GEMM pads
//! each expert's group with (alignment: torchtitan pads to 16 for bf16, more for FP8) count as
//! executed work but not as the model's. torch.profiler records a grouped GEMM's `offs` (the
//! groups' ends) as a shape, not values, so the padding is not in its record: the router's
//! `aten::topk` over its [tokens, experts] scores, with its k, gives the routed rows, and the
//! first grouped GEMM after it on the same thread the padded ones. Under expert parallelism the
//! rows a rank's experts run are those its dispatch all-to-all received (`Out split size`).
//! Backward's grouped GEMMs (another thread) share forward's padded row count, and so its
//! routed rows.

use crate::analysis::ops::shapes::{concrete_of, dims_of};
use crate::model::Trace;
use rustc_hash::FxHashMap as HashMap;

/// The most padding rows one group may add (the largest alignment in use, 128 for MX block
/// scaling): more than that per expert is not alignment.
const MAX_PAD_PER_GROUP: i64 = 128;

/// Routed rows by (input, padded rows of a grouped GEMM).
#[derive(Default)]
pub(crate) struct RoutedRows(HashMap<(u32, i64), i64>);

/// What a host op tells about routing.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Router,
    GroupedGemm,
    /// A collective's arguments (`record_param_comms`): an all-to-all dispatching rows to the
    /// ranks' experts.
    Collective,
    /// An all-to-all op around its arguments: rows leave for other ranks, the router's count
    /// no longer holds.
    AllToAll,
    Other,
}

fn role(name: &str) -> Role {
    match name {
        "aten::topk" => Role::Router,
        "aten::_grouped_mm" | "aten::_scaled_grouped_mm" => Role::GroupedGemm,
        "record_param_comms" => Role::Collective,
        n if n.starts_with("c10d") && (n.contains("all_to_all") || n.contains("alltoall")) => {
            Role::AllToAll
        }
        _ => Role::Other,
    }
}

impl RoutedRows {
    /// Pairs each router (`aten::topk` of k over E experts) with the next grouped GEMM of E
    /// groups on its thread whose rows exceed the routed ones by alignment padding at most.
    pub(crate) fn find(trace: &Trace) -> Self {
        let host = &trace.host;
        let roles = trace.names.per_name(role);
        let role_of = |h: usize| roles.get(host.name[h].index()).copied();
        let mut ops: Vec<usize> = (0..host.len())
            .filter(|&h| role_of(h).is_some_and(|r| r != Role::Other))
            .collect();
        if !ops.iter().any(|&h| role_of(h) == Some(Role::GroupedGemm)) {
            return Self::default();
        }
        ops.sort_by_key(|&h| (host.input[h], host.thread[h], host.ts_ns[h]));
        let mut found: HashMap<(u32, i64), i64> = HashMap::default();
        // The open router or dispatch on the current (input, thread): (routed rows, experts
        // when a router's).
        let mut open: Option<((u32, u32), i64, Option<i64>)> = None;
        for h in ops {
            let at = (host.input[h], host.thread[h]);
            if open.is_some_and(|(o, ..)| o != at) {
                open = None;
            }
            match role_of(h) {
                Some(Role::Router) => {
                    open = router(trace, h).map(|(routed, experts)| (at, routed, Some(experts)));
                }
                Some(Role::AllToAll) => open = None,
                Some(Role::Collective) => match dispatch(trace, h) {
                    Some(Dispatch::Rows(received)) => open = Some((at, received, None)),
                    Some(Dispatch::Other) => open = None,
                    None => {}
                },
                Some(Role::GroupedGemm) => {
                    let Some((_, routed, experts)) = open else {
                        continue;
                    };
                    let Some((rows, groups)) = forward_rows(trace, h) else {
                        continue;
                    };
                    open = None;
                    let padding = rows - routed;
                    let same_groups = experts.is_none_or(|e| e == groups);
                    if same_groups && (0..=groups * MAX_PAD_PER_GROUP).contains(&padding) {
                        // Two routers with one padded count but different routed rows: no
                        // answer for that count.
                        let e = found.entry((at.0, rows)).or_insert(routed);
                        if *e != routed {
                            *e = rows;
                        }
                    }
                }
                _ => {}
            }
        }
        Self(found)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The share of a grouped GEMM call's FLOPs that padding rows did: its padded dimension is
    /// the rows of `[M, K] x [G, K, N]` (forward, and backward's input gradient) or the
    /// contracted M of `[P, M] x [M, Q]` (the weight gradient). 0 for other calls.
    pub(crate) fn padding_share(&self, input: u32, op: &str, input_dims: &str) -> f64 {
        if self.0.is_empty() || role(op) != Role::GroupedGemm {
            return 0.0;
        }
        let Some(dims) = dims_of(input_dims) else {
            return 0.0;
        };
        let rows = match (dims.first(), dims.get(1)) {
            (Some(a), Some(b)) if a.len() == 2 && b.len() == 3 => a[0],
            (Some(a), Some(b)) if a.len() == 2 && b.len() == 2 => a[1],
            _ => return 0.0,
        };
        match self.0.get(&(input, rows)) {
            Some(&routed) if rows > 0 => 1.0 - routed as f64 / rows as f64,
            _ => 0.0,
        }
    }
}

/// A router's routed rows (tokens x k) and experts, from `aten::topk`'s `[tokens, experts]`
/// input and its k (a top-k over a vocabulary is not one: no grouped GEMM has that many groups).
fn router(trace: &Trace, h: usize) -> Option<(i64, i64)> {
    let dims = dims_of(trace.names.get(trace.host.input_dims(h)))?;
    let scores = dims.first()?;
    let k: i64 = concrete_of(trace.names.get(trace.host.concrete_inputs(h)))
        .get(1)?
        .trim()
        .parse()
        .ok()?;
    match scores.as_slice() {
        &[tokens, experts] if k > 0 && k < experts => Some((tokens * k, experts)),
        _ => None,
    }
}

/// What an all-to-all did to the routed rows.
enum Dispatch {
    /// Rows `[R, hidden]` exchanged: the rows this rank received (its `Out split size`
    /// summed; R with even splits).
    Rows(i64),
    /// Another all-to-all (the experts' counts): the open count no longer holds.
    Other,
}

/// A `record_param_comms` of an all-to-all: what it moved; None for other collectives.
fn dispatch(trace: &Trace, h: usize) -> Option<Dispatch> {
    let args = trace.host.op_args(h);
    let comm = crate::model::comms::CommArgs::decode(trace.names.get(args.comm))?;
    if !comm.collective.starts_with("all_to_all") && !comm.collective.starts_with("alltoall") {
        return None;
    }
    let dims = dims_of(trace.names.get(args.input_dims)).unwrap_or_default();
    let Some(&[rows, _]) = dims.first().map(Vec::as_slice) else {
        return Some(Dispatch::Other);
    };
    let received = match crate::model::comms::CommArgs::splits(comm.out_splits.as_deref()) {
        Some(splits) => splits.iter().sum::<u64>() as i64,
        None if comm.out_splits.is_none() => rows,
        None => return Some(Dispatch::Other),
    };
    Some(Dispatch::Rows(received))
}

/// A forward grouped GEMM's rows and groups: `[M, K] x [G, K, N]` with `offs` of G ends.
fn forward_rows(trace: &Trace, h: usize) -> Option<(i64, i64)> {
    let dims = dims_of(trace.names.get(trace.host.input_dims(h)))?;
    match (dims.first()?.as_slice(), dims.get(1)?.as_slice()) {
        (&[rows, _], &[groups, _, _]) => Some((rows, groups)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_grouped_gemms_of_a_known_row_count_have_padding() {
        let mut routed = RoutedRows::default();
        routed.0.insert((0, 16432), 16384);
        let share = 1.0 - 16384.0 / 16432.0;
        let op = "aten::_grouped_mm";
        // Forward / input gradient (rows), weight gradient (contracted rows).
        let fwd = routed.padding_share(0, op, "[[16432,1024],[8,1024,2816],[8],[],[]]");
        let wgrad = routed.padding_share(0, op, "[[2816,16432],[16432,1024],[8],[],[]]");
        assert!((fwd - share).abs() < 1e-12 && (wgrad - share).abs() < 1e-12);
        // Another input, another row count, another op: none.
        assert_eq!(
            routed.padding_share(1, op, "[[16432,1024],[8,1024,2816],[8]]"),
            0.0
        );
        assert_eq!(
            routed.padding_share(0, op, "[[16384,1024],[8,1024,2816],[8]]"),
            0.0
        );
        assert_eq!(
            routed.padding_share(0, "aten::mm", "[[16432,1024],[1024,2816]]"),
            0.0
        );
    }
}
