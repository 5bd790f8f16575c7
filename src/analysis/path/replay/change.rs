//! The changes a replay can apply (`replay = "…"` in `rules/ladder.toml`).

use serde::{Deserialize, Serialize};

/// A change a replay applies (`replay = "…"` in `rules/ladder.toml`), in the order changes
/// compose when several apply together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transform {
    /// The DataLoader's work moved to worker processes (`num_workers`).
    LoaderWorkers,
    /// Host synchronizes taken out of the step (`.item()`, `.cpu()`, `synchronize()`).
    RemoveSyncs,
    /// fp32 GEMMs and convolutions without TF32 moved to the matrix cores' TF32 rate.
    Tf32,
    /// NCHW↔NHWC layout transposes around convolutions gone (`channels_last`).
    ChannelsLast,
    /// Hand-written attention (GEMM → softmax → GEMM) as one fused kernel (SDPA).
    Sdpa,
    /// Per-parameter optimizer kernels as a few multi-tensor ones (`fused=True`).
    FusedOptimizer,
    /// torch.compile: eager elementwise chains fused, their dispatch one wrapper call each.
    Compile,
    /// CUDA/HIP graphs: the step's launches replayed from a graph.
    CudaGraphs,
    /// A pipeline's layers moved off its slowest stage: the pipeline's own replay
    /// (`pipeline.replays[]`) prices it, not the step model.
    PipelineRebalance,
    /// A pipeline run under its best other schedule (the pipeline's replay too).
    PipelineSchedule,
}

impl Transform {
    /// Every transform, in composition order.
    pub const ALL: [Transform; 8] = [
        Transform::LoaderWorkers,
        Transform::RemoveSyncs,
        Transform::Tf32,
        Transform::ChannelsLast,
        Transform::Sdpa,
        Transform::FusedOptimizer,
        Transform::Compile,
        Transform::CudaGraphs,
    ];
    /// Its name in `rules/ladder.toml` and the feed: serde's.
    pub fn as_str(self) -> &'static str {
        match self {
            Transform::LoaderWorkers => "loader_workers",
            Transform::RemoveSyncs => "remove_syncs",
            Transform::Tf32 => "tf32",
            Transform::ChannelsLast => "channels_last",
            Transform::Sdpa => "sdpa",
            Transform::FusedOptimizer => "fused_optimizer",
            Transform::Compile => "compile",
            Transform::CudaGraphs => "cuda_graphs",
            Transform::PipelineRebalance => "pipeline_rebalance",
            Transform::PipelineSchedule => "pipeline_schedule",
        }
    }
}
