//! The evidence of several ranks' findings (stragglers, collectives) and of GPU memory.

use serde::{Deserialize, Serialize};

use super::Shape;
// ---- ranks and collectives ----

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StragglerBasis {
    ArrivalSkew,
    CommunicationTime,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StragglerKind {
    /// The trace does not show why.
    Unknown,
    MoreGpuWork,
    Host,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StragglerRank {
    pub rank: u32,
    pub steps: Vec<u64>,
    pub steps_compared: usize,
    pub wait_ns: i64,
    pub basis: StragglerBasis,
    pub kind: StragglerKind,
    pub more_gpu_work_pct: f64,
    pub step_spread_ns: i64,
    pub arrivals: Vec<RankArrivals>,
    pub ranks: Vec<RankLoad>,
    /// What its own critical path spends more on than the other ranks' (the late rank's own
    /// cause), where the paths show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_excess: Option<PathExcess>,
}
kinded!(StragglerRank: StragglerKind);

/// The label of a rank's critical path that exceeds the other ranks' median the most.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathExcess {
    pub label: crate::analysis::Label,
    /// Its time on the rank's path, and the median over the other ranks of their steps' time
    /// in its partition categories (their paths are mostly waiting for this rank).
    pub ns: i64,
    pub others_ns: i64,
    /// The op or kernel with the most time under that label on its path.
    pub top: String,
    pub top_ns: i64,
}

/// How late one rank arrives at the collectives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankArrivals {
    pub rank: u32,
    pub collectives: u64,
    pub times_last: u64,
    pub late_ns: i64,
    pub step_late_ns: i64,
    pub wait_ns: i64,
    pub exposed_wait_ns: i64,
    pub by_collective: Vec<CollectiveArrivals>,
    /// Per process group, most often last first (the group's name, description and the
    /// parallelism it carries).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_group: Vec<GroupArrivals>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupArrivals {
    pub group: String,
    pub desc: Option<String>,
    /// The parallelism kinds the job's `parallelism[]` gives the group.
    pub kinds: Vec<String>,
    pub collectives: u64,
    pub times_last: u64,
    pub late_ns: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectiveArrivals {
    pub collective: String,
    pub collectives: u64,
    pub times_last: u64,
}

/// One rank's communication and compute.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankLoad {
    pub rank: u32,
    pub communication_ns: i64,
    pub compute_ns: i64,
    pub times_last: usize,
    pub step_median_ns: Option<i64>,
    pub host_gap_ns: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowCollective {
    pub collective: String,
    pub bytes: Option<u64>,
    pub process_group: Option<String>,
    pub group_size: Option<u32>,
    pub count: u64,
    pub busbw_gbps: Option<f64>,
    pub link_peak_gbps: Option<f64>,
    pub pct_of_link_peak: f64,
    pub wait_ns: i64,
    pub transfer_ns: i64,
    pub transfer_overlap_pct: Option<f64>,
    pub saved_at_reachable_ns: i64,
}
impl Shape for SlowCollective {}

/// One rank of a pipeline, as a pipeline finding shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PipelineRank {
    pub rank: u32,
    pub stages: Vec<u32>,
    /// Its compute and bubble, summed over the steps.
    pub compute_ns: i64,
    pub bubble_ns: i64,
    pub bubble_pct: f64,
}

/// A replay a pipeline finding rests on (`pipeline.replays[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PipelineChange {
    pub schedule: String,
    pub stages_per_rank: u32,
    pub rebalanced: bool,
    /// Each rank's layers after the move (rebalancing with whole layers).
    pub layers: Option<Vec<u32>>,
    /// Per step, replayed and saved.
    pub step_ns: i64,
    pub saving_ns: i64,
}

/// The evidence of the pipeline findings: the schedule as run, each rank's bubble, and the
/// replay that saves the most.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pipeline {
    pub schedule: Option<String>,
    pub microbatches: u32,
    pub stages_total: u32,
    /// The measured step (the slowest rank's, mean over steps).
    pub step_ns: i64,
    pub ranks: Vec<PipelineRank>,
    /// Each rank's layers now, where the trace shows them.
    pub layers: Option<Vec<u32>>,
    pub best: PipelineChange,
}
impl Shape for Pipeline {}

/// DDP's gradient all-reduces after every accumulation microbatch (`parallelism[].accumulation`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DdpAccumulation {
    pub group: Option<String>,
    pub ranks: Vec<u32>,
    pub synced_microbatches: u32,
    pub steps: u32,
    pub avoidable_ns: i64,
    pub avoidable_exposed_ns: i64,
}
impl Shape for DdpAccumulation {}

/// A loop over the local experts (`parallelism[].expert_loop`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpertLoop {
    pub group: Option<String>,
    pub ranks: Vec<u32>,
    pub sections: u32,
    pub gemms_per_section: u32,
    pub host_ns: i64,
    pub avoidable_host_ns: i64,
}
impl Shape for ExpertLoop {}

// ---- memory ----

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryPressure {
    pub devices: Vec<DeviceMemoryRow>,
}
impl Shape for MemoryPressure {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryHeadroom {
    pub gpu_busy_pct: f64,
    pub devices: Vec<DeviceMemoryRow>,
}
impl Shape for MemoryHeadroom {}

/// One device's memory peaks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceMemoryRow {
    pub rank: Option<u32>,
    pub device: u32,
    pub peak_allocated_bytes: i64,
    pub peak_reserved_bytes: i64,
    pub device_bytes: Option<u64>,
    pub peak_reserved_pct: Option<f64>,
}
