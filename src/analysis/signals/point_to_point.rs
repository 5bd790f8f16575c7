//! Sends and receives paired across ranks (the wait before the peer arrived, the transfer
//! after): what pipelines' hops and waits, and the critical path's `pipeline_bubble`, rest on.

use super::collective_calls::{Call, CollectiveKind, GroupKey};
use crate::model::comms::CommArgs;
use std::collections::BTreeMap;

/// Sends and receives paired across ranks: NCCL matches the k-th send from one rank to another
/// with the k-th receive there from it, so each (group, from, to, size) channel pairs in order.
/// A call names its peer as a rank of its group (`Dst Rank` / `Src Rank`), which the group's
/// ranks map to the global rank (`ranks`: each input's); a batch (`batch_isend_irecv`) sits in
/// each of its parts' channels. Traces without peers pair within groups of two ranks, where the
/// peer is the other.
pub(crate) fn pairs(calls: &[Call], ranks: &[Option<u32>]) -> Vec<Vec<usize>> {
    let (mut out, placed) = peer_pairs(calls, ranks);
    out.extend(two_rank_pairs(calls, &placed));
    out
}

/// The global rank of group rank `local` in a group whose ranks are written `ranks` (`[0, 2]`);
/// the default group's ranks are the global ones.
fn global_rank(args: &CommArgs, local: u32) -> Option<u32> {
    match CommArgs::splits(args.process_group_ranks.as_deref()) {
        Some(list) => list
            .get(local as usize)
            .and_then(|&g| u32::try_from(g).ok()),
        None => (args.process_group.as_deref() == Some("0")).then_some(local),
    }
}

/// The pairs, and which calls sit in a channel.
fn peer_pairs(calls: &[Call], ranks: &[Option<u32>]) -> (Vec<Vec<usize>>, Vec<bool>) {
    // (group, from, to, bytes) -> the calls sending on it, and those receiving on it.
    type Channel = (GroupKey, u32, u32, Option<u64>);
    let mut sends: BTreeMap<Channel, Vec<usize>> = BTreeMap::new();
    let mut recvs: BTreeMap<Channel, Vec<usize>> = BTreeMap::new();
    let mut placed = vec![false; calls.len()];
    for (i, c) in calls.iter().enumerate() {
        let (Some(args), Some(&Some(me))) = (&c.args, ranks.get(c.input as usize)) else {
            continue;
        };
        for part in &c.p2p {
            let Some(peer) = global_rank(args, part.peer) else {
                continue;
            };
            let (from, to, side) = if part.send {
                (me, peer, &mut sends)
            } else {
                (peer, me, &mut recvs)
            };
            placed[i] = true;
            let list = side
                .entry((c.group_key(), from, to, part.bytes))
                .or_default();
            // A batch with two parts on one channel is one call there.
            if list.last() != Some(&i) {
                list.push(i);
            }
        }
    }
    let mut out = Vec::new();
    for (channel, mut sent) in sends {
        let Some(mut got) = recvs.remove(&channel) else {
            continue;
        };
        sent.sort_by_key(|&i| (calls[i].ts, i));
        got.sort_by_key(|&i| (calls[i].ts, i));
        out.extend(sent.into_iter().zip(got).map(|(s, r)| vec![s, r]));
    }
    (out, placed)
}

/// Calls without peers, paired within groups of two ranks: the k-th send of a size from one
/// rank with the k-th recv of that size on the other.
fn two_rank_pairs(calls: &[Call], placed: &[bool]) -> Vec<Vec<usize>> {
    type Key = (GroupKey, u32, Option<u64>);
    let mut sends: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
    let mut recvs: BTreeMap<Key, Vec<usize>> = BTreeMap::new();
    let mut members: BTreeMap<GroupKey, std::collections::BTreeSet<u32>> = BTreeMap::new();
    for (i, c) in calls.iter().enumerate() {
        let Some(args) = &c.args else { continue };
        if args.group_size != Some(2) || placed[i] {
            continue;
        }
        let key = (c.group_key(), c.input, c.bytes);
        match c.kind {
            CollectiveKind::Send => sends.entry(key).or_default().push(i),
            CollectiveKind::Recv => recvs.entry(key).or_default().push(i),
            _ => continue,
        }
        members.entry(c.group_key()).or_default().insert(c.input);
    }
    let mut out = Vec::new();
    for ((group, from, bytes), mut sent) in sends {
        let Some(to) = members
            .get(&group)
            .filter(|m| m.len() == 2)
            .and_then(|m| m.iter().copied().find(|&i| i != from))
        else {
            continue;
        };
        let Some(mut got) = recvs.get(&(group, to, bytes)).cloned() else {
            continue;
        };
        sent.sort_by_key(|&i| (calls[i].ts, i));
        got.sort_by_key(|&i| (calls[i].ts, i));
        out.extend(sent.into_iter().zip(got).map(|(s, r)| vec![s, r]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::signals::collective_calls::P2pPart;

    /// A point-to-point call of input `input` in a group of global ranks `[1, 3]`, starting at
    /// `ts`, with its parts (send?, peer as a group rank).
    fn p2p(input: u32, ts: i64, parts: &[(bool, u32)]) -> Call {
        let bytes = Some(1024);
        Call {
            input,
            order: 0,
            stream: 7,
            kind: CollectiveKind::SendRecv,
            args: Some(CommArgs {
                collective: "send_recv".into(),
                process_group: Some("9".into()),
                process_group_ranks: Some("[1, 3]".into()),
                group_size: Some(2),
                ..Default::default()
            }),
            bytes,
            ts,
            dur: 100,
            step: None,
            busy: Vec::new(),
            p2p: parts
                .iter()
                .map(|&(send, peer)| P2pPart { send, peer, bytes })
                .collect(),
        }
    }

    #[test]
    fn sends_pair_with_receives_by_peer_through_the_group_s_ranks() {
        // Inputs 0 and 1 hold global ranks 1 and 3, group ranks 0 and 1 of the group [1, 3].
        let ranks = [Some(1), Some(3)];
        let calls = vec![
            // Rank 1 sends twice to group rank 1 (global 3); a batch also receives from it.
            p2p(0, 0, &[(true, 1)]),
            p2p(0, 1_000, &[(true, 1), (false, 1)]),
            // Rank 3 receives twice from group rank 0 (global 1), then sends back.
            p2p(1, 500, &[(false, 0)]),
            p2p(1, 800, &[(false, 0)]),
            p2p(1, 900, &[(true, 0)]),
        ];
        let mut pairs = pairs(&calls, &ranks);
        pairs.sort();
        // The k-th send on a channel with the k-th receive there; the batch sits in both of
        // its channels.
        assert_eq!(pairs, vec![vec![0, 2], vec![1, 3], vec![4, 1]]);
        // Without the group's ranks the peers cannot be placed outside the default group.
        let mut bare = calls.clone();
        for c in &mut bare {
            c.args.as_mut().unwrap().process_group_ranks = None;
        }
        assert_eq!(global_rank(bare[0].args.as_ref().unwrap(), 1), None);
        assert_eq!(global_rank(calls[0].args.as_ref().unwrap(), 1), Some(3));
    }
}
