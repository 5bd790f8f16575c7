//! What a collective moves, as the profiler records it: PyTorch's `record_param_comms` cpu_op
//! carries it (`Collective name`, `In msg nelems`, …), and Kineto copies it onto the NCCL/RCCL
//! kernel that op launched (since late 2023). Older traces spell the element counts
//! `In msg size` / `Out msg size`, lack `Group size` or the process group; the newest add `Seq`.
//!
//! Stored interned, one string per distinct collective call (fields joined by tabs): a model
//! issues the same few collectives every step, and the tables' appends, subsets and renames of
//! names carry it with no bookkeeping of their own.

use serde::{Deserialize, Serialize};

/// A collective call's arguments; `None` where the trace does not say.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CommArgs {
    /// `Collective name` as PyTorch writes it: `allreduce`, `_allgather_base`, `all_to_allv`, …
    pub collective: String,
    pub in_nelems: Option<u64>,
    pub out_nelems: Option<u64>,
    /// c10 scalar type name: `Float`, `BFloat16`, `Float8_e4m3fn`, …
    pub dtype: Option<String>,
    pub group_size: Option<u32>,
    /// `Process Group Name`: the group's id, the same on every rank (`"0"`: the default group).
    pub process_group: Option<String>,
    /// `Process Group Description` (`default_pg`, or the name a user gave `new_group`).
    pub process_group_desc: Option<String>,
    /// `Process Group Ranks` as written: `[0, 1, 2, 3]` (long lists end in `...`).
    pub process_group_ranks: Option<String>,
    /// `Seq`: the call's sequence number in its process group (Kineto from 2026).
    pub seq: Option<u64>,
    /// `In split size` / `Out split size` of an all-to-all with uneven splits, as written
    /// (`[774, 3322]`: rows to / from each rank of the group; PyTorch cuts lists at 30 entries
    /// with `...`); `[]` or absent for even splits.
    #[serde(default)]
    pub in_splits: Option<String>,
    #[serde(default)]
    pub out_splits: Option<String>,
    /// A send's `Dst Rank` or a receive's `Src Rank`: the peer's rank in the process group
    /// (`Process Group Ranks` maps it to the global rank).
    #[serde(default)]
    pub peer: Option<u32>,
}

const FIELDS: usize = 12;

impl CommArgs {
    /// The split sizes as numbers (None: even splits, or a list PyTorch cut short).
    pub fn splits(text: Option<&str>) -> Option<Vec<u64>> {
        let t = text?.trim();
        let inner = t.strip_prefix('[')?.strip_suffix(']')?;
        if inner.trim().is_empty() || inner.contains("...") {
            return None;
        }
        inner.split(',').map(|v| v.trim().parse().ok()).collect()
    }

    /// The interned form: fields joined by tabs, absent ones empty.
    pub fn encode(&self) -> String {
        let num = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let text = |v: &Option<String>| v.as_deref().unwrap_or("").replace('\t', " ");
        [
            self.collective.replace('\t', " "),
            num(self.in_nelems),
            num(self.out_nelems),
            text(&self.dtype),
            num(self.group_size.map(u64::from)),
            text(&self.process_group),
            text(&self.process_group_desc),
            text(&self.process_group_ranks),
            num(self.seq),
            text(&self.in_splits),
            text(&self.out_splits),
            num(self.peer.map(u64::from)),
        ]
        .join("\t")
    }

    /// The inverse of [`CommArgs::encode`]; `None` for any other string.
    pub fn decode(s: &str) -> Option<CommArgs> {
        let f: Vec<&str> = s.split('\t').collect();
        if f.len() != FIELDS || f[0].is_empty() {
            return None;
        }
        let num = |v: &str| v.parse::<u64>().ok();
        let text = |v: &str| (!v.is_empty()).then(|| v.to_string());
        Some(CommArgs {
            collective: f[0].to_string(),
            in_nelems: num(f[1]),
            out_nelems: num(f[2]),
            dtype: text(f[3]),
            group_size: num(f[4]).and_then(|v| u32::try_from(v).ok()),
            process_group: text(f[5]),
            process_group_desc: text(f[6]),
            process_group_ranks: text(f[7]),
            seq: num(f[8]),
            in_splits: text(f[9]),
            out_splits: text(f[10]),
            peer: num(f[11]).and_then(|v| u32::try_from(v).ok()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::CommArgs;

    #[test]
    fn encoding_round_trips_with_and_without_fields() {
        let full = CommArgs {
            collective: "_allgather_base".into(),
            in_nelems: Some(1024),
            out_nelems: Some(2048),
            dtype: Some("BFloat16".into()),
            group_size: Some(2),
            process_group: Some("0".into()),
            process_group_desc: Some("default\tpg".into()),
            process_group_ranks: Some("[0, 1]".into()),
            seq: Some(7),
            in_splits: Some("[3, 1]".into()),
            out_splits: None,
            peer: Some(3),
        };
        let back = CommArgs::decode(&full.encode()).unwrap();
        assert_eq!(back.process_group_desc.as_deref(), Some("default pg"));
        assert_eq!(back.in_nelems, Some(1024));
        assert_eq!(back.seq, Some(7));
        assert_eq!(back.peer, Some(3));
        let bare = CommArgs {
            collective: "allreduce".into(),
            ..Default::default()
        };
        assert_eq!(CommArgs::decode(&bare.encode()), Some(bare));
        assert_eq!(CommArgs::decode("aten::mm"), None);
        assert_eq!(CommArgs::decode(""), None);
    }
}
