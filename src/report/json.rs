//! The JSON feed (`--json`), the contract in FEED.md. Field names are an API: add, never rename.

use crate::analysis::compile::CompileSummary;
use crate::analysis::ops::attribution::OpRow;
use crate::analysis::ops::frames::FrameRow;
use crate::analysis::time::partition::PartitionRow;
use crate::analysis::{BucketRow, KernelRow, StepRow, Summary};
use crate::detect::Finding;
use crate::model::InputMeta;
use crate::pipeline::{RankView, Run};
use crate::recommend::{LadderRow, Recommendation};
use serde::Serialize;

/// The feed's `schema_version`.
pub const SCHEMA_VERSION: u32 = 4;

#[derive(Serialize)]
struct Tool {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct Feed<'a> {
    schema_version: u32,
    tool: Tool,
    inputs: &'a [InputMeta],
    summary: &'a Summary,
    buckets: &'a [BucketRow],
    time_partition: &'a [PartitionRow],
    top_kernels: &'a [KernelRow],
    /// What bounds each step: its critical path by label (schema 2).
    critical_path: &'a crate::analysis::CriticalPath,
    compile: &'a CompileSummary,
    findings: &'a [Finding],
    recommendations: &'a [Recommendation],
    ladder: &'a [LadderRow],
    next_level: Option<u8>,
    /// The step after each recommendation applied in the ranked order (schema 4).
    plan: &'a [crate::recommend::PlanStep],
    ranks: &'a [RankView],
    ops: &'a [OpRow],
    op_shapes: &'a [crate::analysis::ops::attribution::ShapeRow],
    /// Memory-bound ops per shape with their bandwidth (an addition; traces with shapes).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    memory_shapes: &'a [crate::analysis::ops::attribution::MemoryShapeRow],
    modules: &'a [FrameRow],
    sources: &'a [FrameRow],
    /// Per analyzed step: its window and partition (an addition to FEED.md's fields).
    step_breakdown: &'a [StepRow],
    /// Hardware-counter metrics per kernel (rocprof-compute workloads; an addition to FEED.md).
    kernel_counters: &'a [crate::analysis::signals::counters::KernelCounters],
    /// Files of input directories left out because no reader recognized them (an addition).
    skipped_files: &'a [crate::model::SkippedFile],
    /// Per collective type × message size × process group (FEED.md `collectives[]`).
    collectives: &'a [crate::analysis::signals::collectives::CollectiveRow],
    /// Per rank, how it arrives at the collectives matched across ranks (an addition).
    collective_arrivals: &'a [crate::analysis::signals::collectives::Arrival],
    /// The parallelisms the job uses, one per kind and process group (schema 3 addition).
    parallelism: &'a [crate::analysis::signals::parallelism::Parallelism],
    /// The pipeline's stages, chunks and replays (schema 3 addition; null without one).
    pipeline: Option<&'a crate::analysis::signals::pipeline::Pipeline>,
    /// GPU memory per device (FEED.md `memory`).
    memory: &'a [crate::analysis::signals::memory::DeviceMemory],
    /// Annotated ranges and PyTorch's phases, a tree in pre-order (FEED.md `regions[]`).
    regions: &'a [crate::analysis::time::regions::RegionRow],
    /// Iterations by phase (FEED.md `phases[]`; traces without `ProfilerStep#N`).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    phases: &'a [crate::analysis::time::phases::PhaseRow],
    /// The kernels whose tuning could win back the most time (FEED.md `kernel_candidates[]`).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    kernel_candidates: &'a [crate::analysis::ops::candidates::Candidate],
    /// `--what-if`: the step replayed with the changes asked for (schema 3; only when asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    what_if: Option<&'a crate::analysis::WhatIf>,
}

/// Renders the feed, pretty-printed, newline-terminated.
pub fn render(run: &Run) -> Vec<u8> {
    let a = &run.analysis;
    let feed = Feed {
        schema_version: SCHEMA_VERSION,
        tool: Tool {
            name: "rocprof-classify",
            version: env!("CARGO_PKG_VERSION"),
        },
        inputs: &a.inputs,
        summary: &a.summary,
        buckets: &a.buckets,
        time_partition: &a.time_partition,
        top_kernels: &a.top_kernels,
        critical_path: &a.critical_path,
        compile: &a.compile,
        findings: &run.findings,
        recommendations: &run.plan.recommendations,
        ladder: &run.plan.ladder,
        next_level: run.plan.next_level,
        plan: &run.plan.steps,
        ranks: &run.ranks,
        ops: &a.ops,
        op_shapes: &a.op_shapes,
        memory_shapes: &a.memory_shapes,
        modules: &a.modules,
        sources: &a.sources,
        step_breakdown: &a.step_breakdown,
        kernel_counters: &a.kernel_counters,
        skipped_files: &a.skipped_files,
        collectives: &a.collectives.rows,
        collective_arrivals: &a.collectives.arrivals,
        parallelism: &a.parallelism,
        pipeline: a.pipeline.as_ref(),
        memory: &a.memory,
        regions: &a.regions,
        phases: &a.phases,
        kernel_candidates: &a.kernel_candidates,
        what_if: a.parts.what_if.as_ref(),
    };
    let mut out =
        serde_json::to_vec_pretty(&feed).expect("the feed is plain data and always serializes");
    out.push(b'\n');
    out
}

/// The feed's JSON Schema (draft 2020-12), also printed by `rocprof-classify schema`.
pub const FEED_SCHEMA: &str = include_str!("feed.schema.json");
