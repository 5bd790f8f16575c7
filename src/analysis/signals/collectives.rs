//! Collectives: per collective type × message size × process group, how many, how long, how
//! fast against the link, and, with several ranks, how much of each rank's time in them is
//! waiting for the last rank to arrive and how much is moving bytes.
//!
//! Definitions (docs/concepts/collectives.md; nccl-tests' doc/PERFORMANCE.md):
//! - `bytes` is nccl-tests' "size": the larger of the input and output buffers, `max(In msg
//!   nelems, Out msg nelems) × dtype size` — the gathered output of an all_gather, the
//!   unscattered input of a reduce_scatter, the buffer of an all_reduce or broadcast.
//! - algbw = bytes / time; busbw = algbw × factor: all_reduce 2(n−1)/n; all_gather,
//!   reduce_scatter, all_to_all, gather, scatter (n−1)/n; broadcast, reduce, send, recv 1.
//!   GB/s are decimal (10⁹ B/s), as nccl-tests and PARAM print them (TraceLens divides by 2³⁰).
//! - Several ranks: one collective's kernels are matched across ranks by process group and
//!   `Seq` where the trace has it, else by their order in the group (within each profiled step
//!   when every rank has steps). A rank's time in it splits into wait (its kernel start until
//!   the last rank's kernel start) and transfer (the rest). Bandwidth is computed over the
//!   transfer time: per collective the shortest kernel of its ranks, the last arriver's.
//! - One rank alone: the transfer time is unknown, so bandwidth is computed over the kernel
//!   time (which includes waiting): a lower bound (`bandwidth_basis` says which).
//!
//! Ranks of one host share a clock. Ranks on different hosts do not: their kernels of one
//! collective end together (a collective completes on every rank once all have arrived), so a
//! rank whose ends differ from the first rank's by more than [`CLOCK_OFFSET_NS`] in the median
//! is shifted onto its clock by that median before starts are compared.

use crate::analysis::signals::collective_calls::{covered, Call, CollectiveKind, GroupKey};
use crate::classify::devices::find_device;
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
/// Ranks whose collective ends differ from the first rank's by more than this (median) run on
/// another host's clock.
pub const CLOCK_OFFSET_NS: i64 = 1_000_000;

/// Larger groups span hosts (8 GPUs a node): the network, not the node's link, bounds them.
const GPUS_PER_NODE: u32 = 8;

/// One row of `collectives[]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CollectiveRow {
    pub collective: CollectiveKind,
    /// nccl-tests' size in bytes (null: the trace has no element count or dtype).
    pub bytes: Option<u64>,
    pub dtype: Option<String>,
    pub group_size: Option<u32>,
    /// `Process Group Name` (the group's id, `"0"` for the default group).
    pub process_group: Option<String>,
    pub process_group_desc: Option<String>,
    /// Kernels, summed over ranks.
    pub count: u64,
    /// Ranks that ran it.
    pub ranks: u32,
    /// Kernel time, summed over ranks.
    pub total_ns: i64,
    pub algbw_gbps: Option<f64>,
    pub busbw_gbps: Option<f64>,
    /// `transfer` (several ranks matched: the time after the last rank arrived) or
    /// `kernel_time` (one rank: the kernel time, waiting included: a lower bound).
    pub bandwidth_basis: String,
    pub link_peak_gbps: Option<f64>,
    pub pct_of_link_peak: Option<f64>,
    /// Of `total_ns`, waiting for the last rank and moving bytes after it arrived, summed over
    /// the matched kernels (null with one rank).
    pub wait_ns: Option<i64>,
    pub transfer_ns: Option<i64>,
    /// Collectives matched across ranks (each counted once).
    pub matched: u64,
    /// Share of `transfer_ns` during which other GPU work of the rank ran alongside (it
    /// competes for SMs and HBM: a reason for low bus bandwidth).
    pub transfer_overlap_pct: Option<f64>,
}

/// How one rank arrives at the collectives it shares with others.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Arrival {
    pub rank: u32,
    /// Matched collectives it took part in.
    pub collectives: u64,
    /// Of those, where it started last and the first rank waited >= [`LATE_NS`] for it.
    pub times_last: u64,
    /// Summed over those, how late it started after the first rank.
    pub late_ns: i64,
    /// Its own waiting in all matched collectives.
    pub wait_ns: i64,
    /// Of that, the waiting during which no other GPU work of the rank ran: its GPU had
    /// nothing to do but wait (the time the late ranks cost it).
    pub exposed_wait_ns: i64,
    /// Summed over steps (the window without steps), its largest lateness in the step: how
    /// much later than the first rank it started the collective it was latest at. Kernels
    /// queue on the communication stream, so one late arrival delays every later collective
    /// of the step on the others by about as much; the largest lateness is what the step lost.
    pub step_late_ns: i64,
    /// Per step number (None: no steps), that largest lateness.
    #[serde(skip)]
    pub late_by_step: BTreeMap<Option<u64>, i64>,
    /// Per collective type: (matched, times last).
    #[serde(skip)]
    pub by_kind: BTreeMap<CollectiveKind, (u64, u64)>,
    /// Per process group (its name): how it arrives at that group's collectives.
    #[serde(skip)]
    pub by_group: BTreeMap<String, GroupArrival>,
}

/// How one rank arrives at one process group's collectives.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupArrival {
    /// The group's description (`mesh_tp`, `default_pg`).
    pub desc: Option<String>,
    pub collectives: u64,
    pub times_last: u64,
    pub late_ns: i64,
}

/// Arrival skews shorter than this are noise (host launch jitter), not lateness.
pub const LATE_NS: i64 = 20_000;

/// Everything the collectives view holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Collectives {
    pub rows: Vec<CollectiveRow>,
    /// Per rank (ranks matched across at least one collective only).
    pub arrivals: Vec<Arrival>,
    /// Collectives whose kernels differ across ranks in type or size (left unmatched).
    pub mismatched: u64,
    /// Ranks shifted onto the first rank's clock, with the shift (ns).
    pub clock_offsets: Vec<(u32, i64)>,
}

/// What the collectives view reads of the inputs beside their calls.
pub struct CallInputs<'a> {
    pub inputs: &'a [crate::model::InputMeta],
    /// Per input: whether it has profiled steps.
    pub has_steps: &'a [bool],
    pub devices: &'a [crate::classify::devices::DevicePeaks],
}

/// Which calls are one collective on several ranks: groups of indices into `calls`, each with
/// one call per input, all of one type and size. Returns them and how many candidate groups
/// disagreed in type or size.
fn match_across_ranks(inp: &CallInputs, calls: &[Call]) -> (Vec<Vec<usize>>, u64) {
    let eligible = matchable(inp, calls);
    let mut inputs: Vec<u32> = calls
        .iter()
        .enumerate()
        .filter(|(i, _)| eligible[*i])
        .map(|(_, c)| c.input)
        .collect();
    inputs.sort_unstable();
    inputs.dedup();
    if inputs.len() < 2 {
        return (Vec::new(), 0);
    }
    // `Seq` orders a group's calls when all of them carry it; else their order, counted per
    // profiled step when every rank has steps (a rank whose window starts a collective later
    // then shifts one step's matches, not all of them).
    let by_step = inputs.iter().all(|&i| inp.has_steps[i as usize]);
    let mut seq_everywhere: HashMap<GroupKey, bool> = HashMap::default();
    for (c, _) in calls.iter().zip(&eligible).filter(|(_, e)| **e) {
        let has = c.args.as_ref().is_some_and(|a| a.seq.is_some());
        *seq_everywhere.entry(c.group_key()).or_insert(true) &= has;
    }
    let step_of = |c: &Call| c.step.filter(|_| by_step);
    let mut order: Vec<usize> = (0..calls.len()).filter(|&i| eligible[i]).collect();
    order.sort_by_key(|&i| (calls[i].input, calls[i].ts, calls[i].order));
    type Key = (GroupKey, Option<u64>, u64);
    let mut ordinal: HashMap<(u32, GroupKey, Option<u64>), u64> = HashMap::default();
    let mut instances: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
    for i in order {
        let c = &calls[i];
        let group = c.group_key();
        let key = if seq_everywhere[&group] {
            let seq = c.args.as_ref().and_then(|a| a.seq).unwrap_or(0);
            (group, None, seq)
        } else {
            let step = step_of(c);
            let n = ordinal.entry((c.input, group.clone(), step)).or_default();
            *n += 1;
            (group, step, *n)
        };
        instances.entry(key).or_default().push(i);
    }
    let mut matched = Vec::new();
    let mut mismatched = 0;
    for members in instances.into_values() {
        if members.len() < 2 {
            continue;
        }
        let first = &calls[members[0]];
        let mut ranks: Vec<u32> = members.iter().map(|&i| calls[i].input).collect();
        ranks.sort_unstable();
        ranks.dedup();
        // An all_to_allv's buffers differ per rank; the rest move the same size everywhere.
        let agree = ranks.len() == members.len()
            && members.iter().all(|&i| {
                calls[i].kind == first.kind
                    && (first.kind == CollectiveKind::AllToAllv || calls[i].bytes == first.bytes)
            });
        // A rooted collective (broadcast, reduce, gather, scatter) may end on its root before
        // the others: only the symmetric ones are held to ending together.
        let symmetric = matches!(
            first.kind,
            CollectiveKind::AllReduce
                | CollectiveKind::AllGather
                | CollectiveKind::ReduceScatter
                | CollectiveKind::AllToAll
                | CollectiveKind::AllToAllv
        );
        if agree && (!symmetric || ends_together(calls, &members)) {
            matched.push(members);
        } else {
            mismatched += 1;
        }
    }
    (matched, mismatched)
}

/// Which calls may be matched across inputs: those of inputs with a rank no other input has;
/// not point-to-point ones (a send pairs with one peer's recv, not with the group); calls
/// without arguments only where each input runs them on one stream (their process group is
/// unknown: TraceLens's "simplified mode").
fn matchable(inp: &CallInputs, calls: &[Call]) -> Vec<bool> {
    let mut ranks: BTreeMap<u32, u32> = BTreeMap::new();
    for i in inp.inputs {
        if let Some(r) = i.rank {
            *ranks.entry(r).or_default() += 1;
        }
    }
    let unique = |input: u32| {
        inp.inputs[input as usize]
            .rank
            .is_some_and(|r| ranks[&r] == 1)
    };
    let mut bare_streams: BTreeMap<u32, std::collections::BTreeSet<u32>> = BTreeMap::new();
    for c in calls.iter().filter(|c| c.args.is_none()) {
        bare_streams.entry(c.input).or_default().insert(c.stream);
    }
    let bare_ok = bare_streams.values().all(|s| s.len() <= 1);
    calls
        .iter()
        .map(|c| {
            unique(c.input)
                && !matches!(
                    c.kind,
                    CollectiveKind::Send | CollectiveKind::Recv | CollectiveKind::SendRecv
                )
                && (c.args.is_some() || bare_ok)
        })
        .collect()
}

/// One collective ends on every rank within a kernel's time of the others (the ranks of one
/// host share a clock): pairs whose ends lie further apart are different collectives, put
/// together by a rank whose trace lacks one. Only checked on inputs of one clock.
fn ends_together(calls: &[Call], members: &[usize]) -> bool {
    let end = |i: usize| calls[i].ts.saturating_add(calls[i].dur);
    let lo = members.iter().map(|&i| end(i)).min().unwrap_or(0);
    let hi = members.iter().map(|&i| end(i)).max().unwrap_or(0);
    let shortest = members.iter().map(|&i| calls[i].dur).min().unwrap_or(0);
    let spread = hi.saturating_sub(lo);
    // Farther apart than another host's clock could be: no verdict here (clock_offsets).
    spread > CLOCK_OFFSET_NS.saturating_mul(10) || spread <= (2 * shortest).max(CLOCK_OFFSET_NS)
}

/// Per input, the shift onto the first matched input's clock (0 on a shared clock).
fn clock_offsets(calls: &[Call], matched: &[Vec<usize>]) -> HashMap<u32, i64> {
    // Median end difference per pair of inputs that share collectives (each against the
    // collective's lowest input), then offsets spread from the lowest input along those pairs:
    // a rank that shares no group with the first one still gets its shift through another.
    let mut diffs: BTreeMap<(u32, u32), Vec<i64>> = BTreeMap::new();
    for members in matched {
        let Some(&r) = members.iter().min_by_key(|&&i| calls[i].input) else {
            continue;
        };
        let end_ref = calls[r].ts.saturating_add(calls[r].dur);
        for &i in members {
            if calls[i].input != calls[r].input {
                diffs
                    .entry((calls[r].input, calls[i].input))
                    .or_default()
                    .push(
                        calls[i]
                            .ts
                            .saturating_add(calls[i].dur)
                            .saturating_sub(end_ref),
                    );
            }
        }
    }
    let mut edges: BTreeMap<u32, Vec<(u32, i64)>> = BTreeMap::new();
    for ((a, b), d) in &diffs {
        let m = crate::analysis::numbers::median(d).round() as i64;
        edges.entry(*a).or_default().push((*b, m));
        edges.entry(*b).or_default().push((*a, -m));
    }
    let mut shift: BTreeMap<u32, i64> = BTreeMap::new();
    for &root in edges.keys() {
        if shift.contains_key(&root) {
            continue;
        }
        shift.insert(root, 0);
        let mut queue = std::collections::VecDeque::from([root]);
        while let Some(a) = queue.pop_front() {
            for &(b, m) in &edges[&a] {
                if !shift.contains_key(&b) {
                    shift.insert(b, shift[&a].saturating_add(m));
                    queue.push_back(b);
                }
            }
        }
    }
    shift
        .into_iter()
        .filter(|(_, m)| m.abs() > CLOCK_OFFSET_NS)
        .collect()
}

/// What one matched collective says: per call, (wait, transfer); the collective's transfer
/// time (its shortest kernel), and who arrived last how late.
struct Instance {
    per_call: Vec<(usize, i64, i64)>,
    transfer_ns: i64,
    last: Option<(u32, i64)>,
}

fn split(calls: &[Call], members: &[usize], offsets: &HashMap<u32, i64>) -> Instance {
    let start = |i: usize| {
        calls[i]
            .ts
            .saturating_sub(offsets.get(&calls[i].input).copied().unwrap_or(0))
    };
    let last_start = members.iter().map(|&i| start(i)).max().unwrap_or(0);
    let first_start = members.iter().map(|&i| start(i)).min().unwrap_or(0);
    let per_call: Vec<(usize, i64, i64)> = members
        .iter()
        .map(|&i| {
            let wait = last_start.saturating_sub(start(i)).clamp(0, calls[i].dur);
            (i, wait, calls[i].dur - wait)
        })
        .collect();
    // Its transfer time is the shortest kernel of its ranks: the last arriver's, which waits
    // for nobody (TraceLens's comm_latency; durations need no common clock). A rank done
    // before the last one started (a broadcast's root, a send) is not counted.
    let transfer_ns = per_call
        .iter()
        .filter(|p| p.2 > 0)
        .map(|p| calls[p.0].dur)
        .min()
        .unwrap_or(0);
    let skew = last_start.saturating_sub(first_start);
    let last = (skew >= LATE_NS)
        .then(|| {
            members
                .iter()
                .max_by_key(|&&i| (start(i), calls[i].input))
                .map(|&i| (calls[i].input, skew))
        })
        .flatten();
    Instance {
        per_call,
        transfer_ns,
        last,
    }
}

type RowKey = (CollectiveKind, Option<u64>, Option<u32>, Option<String>);

#[derive(Default)]
struct RowSum {
    dtype: Option<String>,
    desc: Option<String>,
    count: u64,
    inputs: Vec<u32>,
    total_ns: i64,
    wait_ns: i64,
    transfer_ns: i64,
    overlapped_ns: i64,
    matched: u64,
    /// Bytes and transfer time of the matched collectives.
    matched_bytes: f64,
    matched_ns: i64,
    /// Bytes and kernel time of every call.
    kernel_bytes: f64,
    kernel_ns: i64,
    first_input: u32,
}

fn row_key(c: &Call) -> RowKey {
    let a = c.args.as_ref();
    (
        c.kind,
        c.bytes,
        a.and_then(|a| a.group_size),
        a.and_then(|a| a.process_group.clone()),
    )
}

/// The GPU-to-GPU link peak (GB/s per direction) of an input's first device the table knows,
/// for a group of `n`: on a mesh (AMD's xGMI, one link per peer) a GPU reaches the others over
/// `n - 1` links; through NVSwitch every GPU has all its links whatever the group.
fn link_peak(inp: &CallInputs, input: u32, n: Option<u32>) -> Option<f64> {
    let d = inp.inputs[input as usize]
        .devices
        .iter()
        .find_map(|d| find_device(inp.devices, &d.name).filter(|p| p.link_gbps.is_some()))?;
    let all = d.link_gbps.filter(|p| *p > 0.0)?;
    Some(match (d.link_per_peer_gbps, n) {
        (Some(per_peer), Some(n)) if n >= 2 => all.min(per_peer * f64::from(n - 1)),
        _ => all,
    })
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The collectives view of the calls of a trace's analyzed window, or of several ranks' calls
/// (their inputs numbered as in `inp`).
/// Each matched call's wait for the last rank, by (input, stream, start): what the critical
/// path splits into `rank_wait`. Point-to-point calls count too: a recv waits for its send (and
/// a send for its recv), paired by their peers ([`super::point_to_point`]).
pub(crate) fn waits(calls: &[Call], inp: &CallInputs) -> HashMap<(u32, u32, i64), i64> {
    let (mut matched, _) = match_across_ranks(inp, calls);
    let offsets = clock_offsets(calls, &matched);
    let ranks: Vec<Option<u32>> = inp.inputs.iter().map(|i| i.rank).collect();
    matched.extend(super::point_to_point::pairs(calls, &ranks));
    let mut out: HashMap<(u32, u32, i64), i64> = HashMap::default();
    for members in &matched {
        for (i, wait, _) in split(calls, members, &offsets).per_call {
            let c = &calls[i];
            // A batch of sends and receives with several peers waits for the last of them.
            let w = out.entry((c.input, c.stream, c.ts)).or_insert(wait);
            *w = (*w).max(wait);
        }
    }
    out
}

pub fn analyze(calls: &[Call], inp: &CallInputs) -> Collectives {
    if calls.is_empty() {
        return Collectives::default();
    }
    let rank_of = |input: u32| inp.inputs[input as usize].rank.unwrap_or(input);
    let (matched, mismatched) = match_across_ranks(inp, calls);
    let offsets = clock_offsets(calls, &matched);

    let mut split_of: Vec<Option<(i64, i64)>> = vec![None; calls.len()];
    let mut overlapped: Vec<i64> = vec![0; calls.len()];
    let mut sums: BTreeMap<RowKey, RowSum> = BTreeMap::new();
    let mut arrivals: BTreeMap<u32, Arrival> = BTreeMap::new();
    for members in &matched {
        let inst = split(calls, members, &offsets);
        let first = &calls[members[0]];
        let row = sums.entry(row_key(first)).or_default();
        row.matched += 1;
        row.matched_bytes += first.bytes.unwrap_or(0) as f64;
        row.matched_ns += inst.transfer_ns;
        for &(i, wait, transfer) in &inst.per_call {
            let c = &calls[i];
            split_of[i] = Some((wait, transfer));
            overlapped[i] = covered(&c.busy, c.ts + wait, c.ts + c.dur);
            let exposed = wait - covered(&c.busy, c.ts, c.ts + wait);
            let rank = rank_of(c.input);
            let arr = arrivals.entry(rank).or_insert_with(|| Arrival {
                rank,
                ..Default::default()
            });
            arr.collectives += 1;
            arr.wait_ns += wait;
            arr.exposed_wait_ns += exposed;
            let is_last = inst.last.is_some_and(|(input, _)| input == c.input);
            let args = first.args.as_ref();
            let g = arr
                .by_group
                .entry(
                    args.and_then(|a| a.process_group.clone())
                        .unwrap_or_default(),
                )
                .or_default();
            g.desc = args.and_then(|a| a.process_group_desc.clone());
            g.collectives += 1;
            if is_last {
                g.times_last += 1;
                g.late_ns += inst.last.map_or(0, |l| l.1);
            }
            let k = arr.by_kind.entry(first.kind).or_default();
            k.0 += 1;
            if is_last {
                k.1 += 1;
                arr.times_last += 1;
                let skew = inst.last.map_or(0, |l| l.1);
                arr.late_ns += skew;
                let worst = arr.late_by_step.entry(c.step).or_default();
                *worst = (*worst).max(skew);
            }
        }
    }
    for arr in arrivals.values_mut() {
        arr.step_late_ns = arr.late_by_step.values().sum();
    }
    for (i, c) in calls.iter().enumerate() {
        let row = sums.entry(row_key(c)).or_default();
        if row.count == 0 {
            row.first_input = c.input;
            row.dtype = c.args.as_ref().and_then(|a| a.dtype.clone());
            row.desc = c.args.as_ref().and_then(|a| a.process_group_desc.clone());
        }
        row.count += 1;
        row.inputs.push(c.input);
        row.total_ns += c.dur;
        row.kernel_ns += c.dur;
        row.kernel_bytes += c.bytes.unwrap_or(0) as f64;
        if let Some((wait, transfer)) = split_of[i] {
            row.wait_ns += wait;
            row.transfer_ns += transfer;
            row.overlapped_ns += overlapped[i];
        }
    }

    let several = !matched.is_empty();
    let mut rows: Vec<CollectiveRow> = sums
        .into_iter()
        .map(|((kind, bytes, group_size, process_group), mut s)| {
            s.inputs.sort_unstable();
            s.inputs.dedup();
            let (basis, bw_bytes, bw_ns) = if s.matched > 0 {
                ("transfer", s.matched_bytes, s.matched_ns)
            } else {
                ("kernel_time", s.kernel_bytes, s.kernel_ns)
            };
            // Bytes per ns are GB/s.
            let algbw = (bytes.is_some() && bw_ns > 0).then(|| bw_bytes / bw_ns as f64);
            let busbw = algbw
                .zip(group_size.and_then(|n| kind.busbw_factor(n)))
                .map(|(a, f)| a * f);
            let spans_hosts = group_size.is_some_and(|n| n > GPUS_PER_NODE);
            let peak = link_peak(inp, s.first_input, group_size).filter(|_| !spans_hosts);
            CollectiveRow {
                collective: kind,
                bytes,
                dtype: s.dtype,
                group_size,
                process_group,
                process_group_desc: s.desc,
                count: s.count,
                ranks: s.inputs.len() as u32,
                total_ns: s.total_ns,
                algbw_gbps: algbw.map(round2),
                busbw_gbps: busbw.map(round2),
                bandwidth_basis: basis.to_string(),
                link_peak_gbps: peak,
                pct_of_link_peak: busbw.zip(peak).map(|(b, p)| round2(b * 100.0 / p)),
                wait_ns: (s.matched > 0).then_some(s.wait_ns),
                transfer_ns: (s.matched > 0).then_some(s.transfer_ns),
                matched: s.matched,
                transfer_overlap_pct: (s.matched > 0 && s.transfer_ns > 0)
                    .then(|| crate::analysis::numbers::pct(s.overlapped_ns, s.transfer_ns)),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then(a.collective.cmp(&b.collective))
            .then(a.bytes.cmp(&b.bytes))
            .then(a.process_group.cmp(&b.process_group))
    });
    let mut clock: Vec<(u32, i64)> = offsets.into_iter().map(|(i, o)| (rank_of(i), o)).collect();
    clock.sort_unstable();
    Collectives {
        rows,
        arrivals: if several {
            arrivals.into_values().collect()
        } else {
            Vec::new()
        },
        mismatched,
        clock_offsets: clock,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::signals::collective_calls::message_bytes;
    use crate::model::comms::CommArgs;

    #[test]
    fn pytorch_collective_names_map_to_nccl_tests_types() {
        for (name, kind) in [
            ("allreduce", CollectiveKind::AllReduce),
            ("allreduce_coalesced", CollectiveKind::AllReduce),
            ("_allgather_base", CollectiveKind::AllGather),
            ("all_gather", CollectiveKind::AllGather),
            ("allgather_into_tensor_coalesced", CollectiveKind::AllGather),
            ("_reduce_scatter_base", CollectiveKind::ReduceScatter),
            (
                "reduce_scatter_tensor_coalesced",
                CollectiveKind::ReduceScatter,
            ),
            ("all_to_all", CollectiveKind::AllToAll),
            ("all_to_allv", CollectiveKind::AllToAllv),
            ("broadcast", CollectiveKind::Broadcast),
            ("reduce", CollectiveKind::Reduce),
            ("send", CollectiveKind::Send),
            ("recv", CollectiveKind::Recv),
            ("barrier", CollectiveKind::Barrier),
            ("something_else", CollectiveKind::Unknown),
        ] {
            assert_eq!(CollectiveKind::from_collective_name(name), kind, "{name}");
        }
        for (name, kind) in [
            (
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                CollectiveKind::AllReduce,
            ),
            (
                "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
                CollectiveKind::Broadcast,
            ),
            (
                "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                CollectiveKind::AllGather,
            ),
            (
                "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                CollectiveKind::ReduceScatter,
            ),
            (
                "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
                CollectiveKind::SendRecv,
            ),
            (
                "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(...)",
                CollectiveKind::AllReduce,
            ),
            (
                "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
                CollectiveKind::Unknown,
            ),
        ] {
            assert_eq!(CollectiveKind::from_kernel_name(name), kind, "{name}");
        }
    }

    #[test]
    fn bus_bandwidth_factors_are_nccl_tests() {
        let f = |k: CollectiveKind, n| k.busbw_factor(n).unwrap();
        assert_eq!(f(CollectiveKind::AllReduce, 2), 1.0);
        assert_eq!(f(CollectiveKind::AllReduce, 8), 1.75);
        assert_eq!(f(CollectiveKind::AllGather, 8), 0.875);
        assert_eq!(f(CollectiveKind::ReduceScatter, 4), 0.75);
        assert_eq!(f(CollectiveKind::AllToAll, 2), 0.5);
        assert_eq!(f(CollectiveKind::Broadcast, 8), 1.0);
        assert_eq!(f(CollectiveKind::Reduce, 8), 1.0);
        assert_eq!(CollectiveKind::AllReduce.busbw_factor(1), None);
        assert_eq!(CollectiveKind::Barrier.busbw_factor(8), None);
    }

    #[test]
    fn message_size_is_the_larger_buffer() {
        let args = |coll: &str, i, o, dt: &str| CommArgs {
            collective: coll.into(),
            in_nelems: Some(i),
            out_nelems: Some(o),
            dtype: Some(dt.into()),
            ..Default::default()
        };
        // all_gather: the gathered output; reduce_scatter: the unscattered input.
        assert_eq!(
            message_bytes(&args("_allgather_base", 100, 800, "BFloat16")),
            Some(1600)
        );
        assert_eq!(
            message_bytes(&args("_reduce_scatter_base", 800, 100, "Float")),
            Some(3200)
        );
        assert_eq!(
            message_bytes(&args("allreduce", 10, 10, "Float8_e4m3fn")),
            Some(10)
        );
        assert_eq!(message_bytes(&args("allreduce", 10, 10, "Mystery")), None);
    }
}
