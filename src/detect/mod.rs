//! Detectors: each reads the analysis [`Context`] and reports findings with a severity, the time
//! at stake and the evidence (FEED.md finding ids). They never read files or print.

mod comms;
mod compile;
use compile::annotate;
mod counters;
pub(crate) mod evidence;
pub use evidence::{Detail, Evidence};
mod host;
mod kernels;
mod memory;
mod modules;
pub use modules::{from_modules, module_class};
mod ranks;
mod steps;
mod surgery;

use crate::analysis::compile::logs::Joined;
use crate::analysis::Context;
use crate::model::compile_log::CompileFixes;
pub use crate::model::compile_log::Fix;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How serious a finding is (FEED.md `findings[].severity`); most severe sorts first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Most severe: a large share of the window at stake, or a problem to fix first.
    High,
    /// A real cost of moderate size.
    Medium,
    /// A small cost, or advice worth a look.
    Low,
    /// Informational: what the trace shows, not a problem in itself.
    Info,
}

impl Severity {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

/// A finding's id (FEED.md `findings[].id`; the feed sorts ties by its name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingId {
    /// Graph breaks inside steps: code between compiled regions runs eagerly.
    GraphBreaks,
    /// (info) A compiled frame runs several times per step: compiled once, called in a loop.
    CompiledLoop,
    /// Recompiled graphs (Torch-Compiled Region F/C with C >= 1) run in the window.
    Recompiles,
    /// torch.compile's own compile work ran inside the window.
    CompileInWindow,
    /// (info) CUDA/HIP graph launches replay kernels; they count as busy.
    CudagraphsInUse,
    /// Launch overhead >= 20% of the window and above host idle: small kernels or slow dispatch.
    LaunchBound,
    /// Host idle outside profiled events >= 20% of the window: the GPU waits on the host.
    HostBound,
    /// Synchronizing runtime calls inside steps leave the GPU idle.
    SyncStalls,
    /// GEMM -> softmax -> GEMM chains, at least one per step: attention written by hand.
    ManualAttention,
    /// Q/K/V or gate/up GEMMs in a row on inputs of one shape: projections not fused.
    UnfusedProjections,
    /// >= 1% of GEMM time in fp32 kernels (off the matrix cores, or at the fp32 rate).
    Fp32Gemm,
    /// (info) GEMM time by library, read from kernel names, with a confidence.
    GemmBackend,
    /// Elementwise kernels take >= 30% of kernel time.
    ElementwiseHeavy,
    /// NCHW<->NHWC layout transpose kernels run.
    ConvLayoutTransposes,
    /// Communication kernels run; the evidence has the share overlapped with compute.
    ExposedCommunication,
    /// memcpy/memset take >= 10% of kernel time or >= 5% of the window.
    MemcpyHeavy,
    /// More than 2% of kernel time matched no classification rule.
    UnclassifiedTime,
    /// Step times vary: coefficient of variation above 10%.
    HighStepVariance,
    /// Step 0 takes more than 1.5x the median of the other steps.
    WarmupInWindow,
    /// Several ranks: one rank is late to collectives, costing >= 2% of the window.
    StragglerRank,
    /// (info, from torch.compile logs) Inductor ran ops as ATen fallback kernels.
    InductorFallbacks,
    /// (counters) Kernels whose VGPRs or LDS allow at most a quarter of a SIMD's waves.
    LowOccupancy,
    /// (counters) GEMM, attention or conv kernels below the roofline's ridge point.
    MemoryBoundGemm,
    /// (counters) GEMM, attention or conv kernels under 30% of attainable FLOP/s.
    LowGemmEfficiency,
    /// (counters) GEMM, attention or conv kernels with under 1% of FLOPs on matrix cores.
    NoMatrixCores,
    /// Device malloc/free calls inside steps take >= 10% of the window.
    AllocatorChurn,
    /// The optimizer steps each parameter with its own kernels (no multi-tensor path).
    PerParameterOptimizer,
    /// The profile cannot support advice: one long host call, or mostly warm-up.
    UnrepresentativeProfile,
    /// (low) Convolutions take >= 10% of GPU activity time: tune their library.
    ConvHeavy,
    /// Compiled code runs, but outermost nn.Modules with >= 2% of kernel time run eager.
    EagerModules,
    /// Norm and activation modules hold >= 10% of kernel time in their own kernels.
    NormActivationHeavy,
    /// Paged-attention decode kernels take >= 15% of kernel time.
    PagedAttentionHeavy,
    /// Collectives of >= 1 MB run under 50% of the link's peak (several ranks only).
    SlowCollective,
    /// A pipeline's ranks idle >= 10% of the step and another schedule replays it faster.
    PipelineBubble,
    /// A pipeline's stages are unequal and moving layers off the slowest replays it faster.
    PipelineImbalance,
    /// DDP all-reduces the gradients of every accumulation microbatch (no `no_sync()`).
    DdpAccumulationSync,
    /// Expert parallel: the local experts run as a Python loop of GEMMs, not grouped GEMMs.
    ExpertGemmLoop,
    /// A device's peak reserved memory is >= 90% of its memory (profile_memory traces).
    MemoryPressure,
    /// (low) Peak reserved memory under 50% while the GPU is busy >= 80%: raise the batch.
    MemoryHeadroom,
    /// Memory-bound op shapes move data under 40% of the HBM peak (record_shapes traces).
    LowBandwidthEfficiency,
}

impl FindingId {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }

    /// The id of a feed name.
    pub fn from_name(name: &str) -> Option<FindingId> {
        DEFINITIONS
            .iter()
            .map(|d| d.0)
            .find(|id| id.as_str() == name)
    }
}

impl std::fmt::Display for FindingId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding of the feed's `findings`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "FeedFinding")]
pub struct Finding {
    /// Which finding fired.
    pub id: FindingId,
    /// How serious it is.
    pub severity: Severity,
    /// One line on what the trace shows, with its numbers.
    pub summary: String,
    /// Time the problem accounts for, in ns (not a savings estimate; never negative).
    pub time_at_stake_ns: i64,
    /// The numbers behind it, by finding id (FEED.md `evidence`).
    pub evidence: Evidence,
}

/// A finding as the feed writes it, before its evidence is read by its id.
#[derive(Deserialize)]
struct FeedFinding {
    id: FindingId,
    severity: Severity,
    summary: String,
    time_at_stake_ns: i64,
    evidence: Value,
}

impl TryFrom<FeedFinding> for Finding {
    type Error = String;
    fn try_from(f: FeedFinding) -> Result<Self, String> {
        Ok(Finding {
            evidence: Evidence::from_json(f.id, f.evidence)
                .map_err(|e| format!("the evidence of finding {}: {e}", f.id))?,
            id: f.id,
            severity: f.severity,
            summary: f.summary,
            time_at_stake_ns: f.time_at_stake_ns,
        })
    }
}

impl Finding {
    /// A finding of `detail`'s id.
    pub fn new(severity: Severity, summary: String, time_at_stake_ns: i64, detail: Detail) -> Self {
        Finding {
            id: detail.id(),
            severity,
            summary,
            time_at_stake_ns: time_at_stake_ns.max(0),
            evidence: detail.into(),
        }
    }

    /// The same finding, naming `fixes` for its causes.
    pub fn with_fixes(mut self, fixes: Vec<Fix>) -> Self {
        self.evidence.fixes = Some(fixes);
        self
    }

    /// `evidence.kind`: which variant of the finding fired (`qkv`, `host`, `ops`, …).
    pub fn kind(&self) -> Option<&'static str> {
        self.evidence.detail.kind()
    }

    /// Whether `evidence[key]` is set: present, not null, false or empty.
    pub fn has_evidence(&self, key: &str) -> bool {
        self.evidence.has(key)
    }

    /// `evidence.fixes`: the fixes the logs name for this finding's causes.
    pub fn fixes(&self) -> &[Fix] {
        self.evidence.fixes.as_deref().unwrap_or_default()
    }
}

/// GEMM time by library, in percent (the `gemm_backend` finding's evidence).
pub fn gemm_libraries(findings: &[Finding]) -> Vec<(String, f64)> {
    findings
        .iter()
        .filter_map(|f| match &f.evidence.detail {
            Detail::GemmBackend(e) => Some(e),
            _ => None,
        })
        .flat_map(|e| e.libraries.iter().map(|l| (l.library.clone(), l.pct)))
        .collect()
}

/// The share (%) of GEMM time on 8-bit or narrower operands (the `gemm_backend` finding's
/// evidence; 0 without GEMMs).
pub fn low_precision_gemm_pct(findings: &[Finding]) -> f64 {
    findings
        .iter()
        .find_map(|f| match &f.evidence.detail {
            Detail::GemmBackend(e) => Some(e.low_precision_pct),
            _ => None,
        })
        .unwrap_or(0.0)
}

/// Kernels replayed from CUDA/HIP graphs: (count, time in ns); zeros without replay (the
/// `cudagraphs_in_use` finding's evidence).
pub fn graph_replayed(findings: &[Finding]) -> (f64, i64) {
    findings
        .iter()
        .find_map(|f| match &f.evidence.detail {
            Detail::CudagraphsInUse(e) => Some((e.replayed_kernels as f64, e.replayed_kernel_ns)),
            _ => None,
        })
        .unwrap_or((0.0, 0))
}

/// Every finding id this version reports, with when it fires (for `explain` and the book's findings reference).
pub const DEFINITIONS: &[(FindingId, &str)] = &[
    (FindingId::GraphBreaks, "torch.compile graph breaks per step > 0: a frame sequence inside a step (0/0 -> 1/0 -> 2/0 is two breaks), or a later frame repeating from eager code while frame 0 never runs. Evidence: regions per step, frames, ops run eagerly between regions, aten::item syncs."),
    (FindingId::CompiledLoop, "(info) a compiled frame present from 0/0 runs several times per step without breaks: a function compiled once and called in a loop."),
    (FindingId::Recompiles, "recompiled graphs (Torch-Compiled Region F/C with C >= 1) run inside the window."),
    (FindingId::CompileInWindow, "torch.compile's own work ((dynamo_timed) ranges) ran inside the window."),
    (FindingId::CudagraphsInUse, "(info) cudaGraphLaunch/hipGraphLaunch calls replay kernels; they count as busy."),
    (FindingId::LaunchBound, "launch overhead >= 20% of the window and above host idle, and either most kernels run under 10 us or dispatch outweighs GPU busy time."),
    (FindingId::HostBound, "host idle outside any profiled event (not blocked in a sync or compiling) >= 20% of the window and above launch overhead, or the DataLoader alone >= 20% of the window: data loading, Python work or sleeps keep the GPU waiting."),
    (FindingId::SyncStalls, "synchronizing runtime calls (device/stream/event synchronize, blocking memcpy) inside steps (without steps: between the first and last launch), outside torch.compile's autotuning. Time at stake: the GPU idle each leaves from its return to the start of the first GPU activity launched after it (0 when none follows), not the host's wait inside it."),
    (FindingId::UnrepresentativeProfile, "the profile cannot support advice: the GPU idles inside one host call for >= 50% of the window (evidence.kind one_call), or the steady steps (all but a warm-up step) hold < 5% of the kernel time, the rest being warm-up or capture (evidence.kind warmup)."),
    (FindingId::AllocatorChurn, "device malloc/free calls (hipMalloc/hipFree, cudaMalloc/cudaFree) inside steps take >= 10% of the window: the caching allocator is bypassed or emptied; every free synchronizes the device."),
    (FindingId::PerParameterOptimizer, "under Optimizer.step#… ranges, at least 20 kernels per step of which under half are multi-tensor (multi_tensor_apply, fused_adam): the optimizer steps each parameter with its own kernels (foreach=False). Time at stake: the optimizer's host ranges in the steps."),
    (FindingId::ManualAttention, "GEMM -> softmax -> GEMM kernel chains on one stream, at least one per step: attention written by hand."),
    (FindingId::UnfusedProjections, "3 (Q/K/V) or 2 (gate/up, equal weight shapes) outermost GEMM ops in a row reading an input of the same shape; reported separately with evidence.kind qkv / gate_up."),
    (FindingId::Fp32Gemm, ">= 1% of GEMM time in fp32 kernels (ffma, simt sgemm, cuBLAS sgemm, Tensile single precision); evidence.kind simt (off the matrix cores) or mfma (Tensile fp32 on a matrix instruction, at the fp32 rate)."),
    (FindingId::GemmBackend, "(info) GEMM time by library from kernel names, with a confidence."),
    (FindingId::ElementwiseHeavy, "elementwise kernels >= 30% of kernel time."),
    (FindingId::ConvHeavy, "(low) convolutions take >= 10% of GPU activity time: their library's tuning (MIOpen find mode, NHWC) is worth it. Evidence: the share and the conv libraries."),
    (FindingId::EagerModules, "(with_stack traces) compiled code runs, but outermost nn.Modules run eager, each mostly (>= 90%) outside compiled regions, Inductor kernels and OptimizedModule, and holding >= 2% of kernel time (a text encoder or VAE left out of torch.compile). Evidence: each module, its eager time and share."),
    (FindingId::NormActivationHeavy, "(with_stack traces) norm (RMSNorm, LayerNorm) and activation (SiLU, GELU) modules hold >= 10% of kernel time in their own kernels (modules[].self_ns). Evidence: each module class and its share."),
    (FindingId::PagedAttentionHeavy, "paged-attention decode kernels (vLLM, SGLang, aiter pa) take >= 15% of kernel time. evidence.kind: not_fp8 (their Fp8KVCacheDataType template argument says auto: the KV cache is in the model's dtype), fp8, or unknown."),
    (FindingId::ConvLayoutTransposes, "NCHW<->NHWC layout transpose kernels run."),
    (FindingId::ExposedCommunication, "communication kernels run; evidence has the share overlapped with compute."),
    (FindingId::MemcpyHeavy, "memcpy/memset >= 10% of kernel time or >= 5% of the window."),
    (FindingId::UnclassifiedTime, "more than 2% of kernel time matched no classification rule."),
    (FindingId::HighStepVariance, "step-time coefficient of variation above 10%."),
    (FindingId::WarmupInWindow, "step 0 takes more than 1.5x the median of the other steps."),
    (FindingId::StragglerRank, "several ranks: with collectives matched across ranks (collectives[]), one rank starts last at most of the collectives someone was late at, and its latest arrival per step, summed over steps (what the steps lose: the others' collectives queue behind the late one) and times the other ranks, is >= 2% of the window; without matched collectives, one rank spends the least time in collectives in most steps and the others' wait is >= 2% of the window. Evidence: the arrivals per rank (times last, lateness, wait, exposed wait), the steps, each rank's communication and compute time, and whether the straggler has more GPU work or is late on its host."),
    (FindingId::SlowCollective, "several ranks matched: a collective type x size x process group of messages >= 1 MB whose bus bandwidth over the transfer time (after the last rank arrived) is under 50% of the device's link peak per direction (rules/devices.toml), with waiting <= 25% of its time. Time at stake: its transfer time above what 80% of the peak would take, times the share no other GPU work overlaps. Evidence: size, busbw, the peak, wait, transfer and how much other work ran alongside. One rank's trace alone never fires it (its bandwidth is a lower bound)."),
    (FindingId::PipelineBubble, "pipeline parallel jobs (pipeline.stages[]): the ranks idle >= 10% of the step on average (bubble = step - the rank's compute: its chunks' GPU spans and other kernels; recv kernels spinning count as bubble) and the best replay under another schedule (pipeline.replays[]: GPipe, 1F1B, Interleaved1F1B, ZBVZeroBubble, stages as measured) saves >= 1% of the step. Time at stake: that saving's share of the step times the window. Evidence: the schedule, each rank's compute and bubble, the best replay."),
    (FindingId::PipelineImbalance, "pipeline parallel jobs: the ranks' compute differs by more than 1.1x and the schedule replayed with layers moved off the slowest stage (whole layers where the trace shows them: one attention kernel per layer in a forward) saves >= 1% of the step. Time at stake: that saving's share of the step times the window. Evidence: each rank's compute and bubble, its layers now and after the move."),
    (FindingId::ExpertGemmLoop, "expert parallel jobs (parallelism[].expert_loop): between each dispatch all-to-all and its combine (and their backwards) the GPU runs >= 6 GEMM kernels in the forward's median section, none of them grouped (no `group`/`moe` in the name): a Python loop over the local experts, three GEMMs each. Time at stake: the host's time between the two all-to-alls' launches, all but one expert's share of it (gemms / 3 experts), summed over sections and ranks; the recommendation caps it at the step's host and launch time. Evidence: the group, the GEMMs per section, the sections' host time."),
    (FindingId::DdpAccumulationSync, "DDP jobs (parallelism[].accumulation): in a step, the backwards after two or more of DDP's forwards launch gradient all-reduces (>= 64 KiB): gradient accumulation without no_sync(), every microbatch's gradients all-reduced where the last one's would do. Time at stake: the all-reduce kernel time of every synced microbatch but each step's last that no other GPU work overlapped, summed over the ranks. Evidence: the group, the microbatches synced per step, the avoidable all-reduce time and its exposed part."),
    (FindingId::MemoryPressure, "(traces with profile_memory=True) a device's peak reserved GPU memory (the caching allocator's Total Reserved) is >= 90% of its memory (deviceProperties' totalGlobalMem, else rules/devices.toml). Evidence: each such device's peak allocated and reserved bytes and its memory."),
    (FindingId::MemoryHeadroom, "(low; traces with profile_memory=True) every device's peak reserved GPU memory is under 50% of its memory while the GPU is busy >= 80% of the window: a larger batch raises throughput. Evidence: the busy share and each device's peaks."),
    (FindingId::InductorFallbacks, "(info; from torch.compile logs) Inductor ran ops as ATen fallback kernels ([__perf_hints] Using FallbackKernel), with how many compiles did."),
    (FindingId::LowOccupancy, "(hardware counters) kernels with >= 1% of profiled time whose VGPRs or LDS allow at most a quarter of the waves a SIMD can hold (2 of 8 on MI300), while the grid has work for more (seeds/003 occupancy formula)."),
    (FindingId::MemoryBoundGemm, "(hardware counters) GEMM, attention or conv kernels whose arithmetic intensity (FLOPs per HBM byte) is below the roofline's ridge point and which reach >= 30% of the attainable performance there."),
    (FindingId::LowGemmEfficiency, "(hardware counters) GEMM, attention or conv kernels below 30% of the roofline's attainable FLOP/s at their arithmetic intensity (latency bound)."),
    (FindingId::NoMatrixCores, "(hardware counters) GEMM, attention or conv kernels with FLOPs but under 1% of them on matrix cores (MFMA)."),
    (FindingId::LowBandwidthEfficiency, "(record_shapes traces) memory-bound op shapes (memory_shapes[]: elementwise, norm, softmax, reduction, copy and cast, bytes from Input Dims x dtype; Triton kernels from Inductor's kernel_num_gb) holding >= 5% of GPU activity time that move data under 40% of the device's HBM peak and take over 1.25x what they would at 80% of it; calls that would take under 5 us at 80% are latency-bound and not judged; without such a shape, the same per op over its shapes (evidence.kind ops). Time at stake: the time above 80% of the peak. Evidence: each op, its shapes, GB/s, share of the peak and of GPU time, Inductor's kernel_file."),
];

type Detector = fn(&Context) -> Vec<Finding>;

/// Every detector that reads the trace, in no particular order (findings are sorted
/// afterwards).
const DETECTORS: &[Detector] = &[
    compile::graph_breaks,
    compile::compiled_loop,
    compile::recompiles,
    compile::compile_in_window,
    compile::cudagraphs_in_use,
    host::launch_bound,
    host::host_bound,
    host::sync_stalls,
    host::allocator_churn,
    surgery::per_parameter_optimizer,
    host::unrepresentative_profile,
    surgery::manual_attention,
    surgery::unfused_projections,
    kernels::conv_layout_transposes,
    kernels::exposed_communication,
    memory::memory_pressure,
    memory::memory_headroom,
    counters::low_occupancy,
    counters::memory_bound_gemm,
    counters::low_gemm_efficiency,
    counters::no_matrix_cores,
];

type JobDetector = fn(&crate::analysis::Analysis) -> Vec<Finding>;

/// Detectors that read only the analysis (its kernel table, collectives, steps, modules):
/// run on one trace's, and on several ranks' merged ([`merge`]).
const JOB_DETECTORS: &[(FindingId, JobDetector)] = &[
    (FindingId::Fp32Gemm, kernels::fp32_gemm),
    (FindingId::GemmBackend, kernels::gemm_backend),
    (FindingId::ElementwiseHeavy, kernels::elementwise_heavy),
    (FindingId::ConvHeavy, kernels::conv_heavy),
    (
        FindingId::PagedAttentionHeavy,
        kernels::paged_attention_heavy,
    ),
    (FindingId::MemcpyHeavy, kernels::memcpy_heavy),
    (FindingId::UnclassifiedTime, kernels::unclassified_time),
    (FindingId::HighStepVariance, steps::high_step_variance),
    (FindingId::WarmupInWindow, steps::warmup_in_window),
    (FindingId::StragglerRank, ranks::straggler_rank),
    (FindingId::SlowCollective, comms::slow_collective),
    (FindingId::PipelineBubble, comms::pipeline_bubble),
    (FindingId::PipelineImbalance, comms::pipeline_imbalance),
    (FindingId::DdpAccumulationSync, comms::ddp_accumulation_sync),
    (FindingId::ExpertGemmLoop, comms::expert_gemm_loop),
    (
        FindingId::LowBandwidthEfficiency,
        kernels::low_bandwidth_efficiency,
    ),
];

/// The recommendations detectors name for their fixes (`evidence.fixes[].for`): the catalog
/// refuses to load without each of them.
pub const RECOMMENDATIONS_NAMED: &[&str] = &[GEMM_SHAPES, EAGER_MODULES, TRITON_FUSIONS];
const GEMM_SHAPES: &str = "tuning.gemm-shapes";
const EAGER_MODULES: &str = "compile.eager-modules";
const TRITON_FUSIONS: &str = "tuning.triton-fusions";

/// What torch.compile's logs of the run say, and the fixes of the causes they name: a pass
/// given them adds the causes to its findings (`annotate`).
pub type CompileLogs<'a> = (&'a Joined<'a>, &'a CompileFixes);

/// One detection pass over one trace or rank, on its complete analysis: every detector once
/// (those that read events on the [`Context`], then the job-level ones and the module findings
/// on its analysis), the causes the compile logs name added, sorted once (FEED.md order). A
/// job of several ranks runs this once per rank, and [`merge`] once for the job.
pub fn detect(ctx: &Context, logs: Option<CompileLogs>) -> Vec<Finding> {
    use rayon::prelude::*;
    // Independent detectors run in parallel; collect keeps their order (and the sort below
    // fixes the final one), so the output does not depend on the thread count.
    let mut out: Vec<Finding> = DETECTORS.par_iter().flat_map_iter(|d| d(ctx)).collect();
    out.extend(job_findings(&ctx.analysis));
    finish(out, logs)
}

/// The findings of a job's whole analysis: [`JOB_DETECTORS`] and the module findings.
fn job_findings(a: &crate::analysis::Analysis) -> Vec<Finding> {
    let mut out: Vec<Finding> = JOB_DETECTORS.iter().flat_map(|(_, d)| d(a)).collect();
    out.extend(from_modules(a));
    out
}

/// The end of a pass: the compile logs' causes added, then the one sort.
fn finish(mut findings: Vec<Finding>, logs: Option<CompileLogs>) -> Vec<Finding> {
    if let Some((joined, fixes)) = logs {
        annotate(&mut findings, joined, fixes);
    }
    sort(&mut findings);
    findings
}

/// The feed's order: severity, then time at stake (descending), then id and summary.
fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        a.severity
            .cmp(&b.severity)
            .then(b.time_at_stake_ns.cmp(&a.time_at_stake_ns))
            .then(a.id.as_str().cmp(b.id.as_str()))
            .then(a.summary.cmp(&b.summary))
    });
}

/// Percent of `whole`, for summaries.
fn pct(part: i64, whole: i64) -> f64 {
    crate::analysis::numbers::pct(part, whole)
}

/// `1234567` ns → "1.23 ms" for summaries.
fn ms(ns: i64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

/// Number of analyzed steps or iterations (at least 1, the whole trace counting as one step
/// without any).
fn step_count(ctx: &Context) -> f64 {
    ctx.analysis.summary.step_count().max(1) as f64
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The module findings ([`from_modules`]) read the analysis too.
const MODULE_FINDINGS: &[FindingId] = &[FindingId::EagerModules, FindingId::NormActivationHeavy];

/// The job's findings from its ranks' (in merge order) and its merged analysis: each rank's
/// finding of an id (the k-th of that id, where one rank has several) joins the same finding of
/// the other ranks. The rank with the most time at stake is shown (its summary and evidence);
/// the severity is the most severe, the time at stake the sum, and `evidence.ranks` lists each
/// rank's time at stake. The findings of `JOB_DETECTORS` and the module findings are found on
/// the merged analysis instead.
pub fn merge(
    ranks: &[(Option<u32>, &[Finding])],
    job: &crate::analysis::Analysis,
    logs: Option<CompileLogs>,
) -> Vec<Finding> {
    use std::collections::BTreeMap;
    // Per (id, k-th of that id on its rank): the rank and its finding.
    type Members<'a> = Vec<(Option<u32>, &'a Finding)>;
    let mut groups: BTreeMap<(&str, usize), Members> = BTreeMap::new();
    for (rank, findings) in ranks {
        let mut nth: BTreeMap<&str, usize> = BTreeMap::new();
        let of_job = |id: FindingId| {
            MODULE_FINDINGS.contains(&id) || JOB_DETECTORS.iter().any(|(j, _)| *j == id)
        };
        for f in findings.iter().filter(|f| !of_job(f.id)) {
            let k = nth.entry(f.id.as_str()).or_default();
            groups
                .entry((f.id.as_str(), *k))
                .or_default()
                .push((*rank, f));
            *k += 1;
        }
    }
    let label = |r: Option<u32>| r.map_or_else(|| "(none)".to_string(), |r| r.to_string());
    // Inputs without a rank (torch.compile logs beside the ranks) are no rank of the job.
    let job_ranks = ranks.iter().filter(|r| r.0.is_some()).count();
    let mut out: Vec<Finding> = groups
        .into_values()
        .map(|members| {
            let &(shown_rank, shown) = members
                .iter()
                .max_by(|a, b| {
                    a.1.time_at_stake_ns
                        .cmp(&b.1.time_at_stake_ns)
                        .then(b.0.cmp(&a.0))
                })
                .expect("a group has a member");
            let summed: i64 = members.iter().map(|m| m.1.time_at_stake_ns).sum();
            // Exposed communication is at most the transfer on the job's critical path: the
            // rest of it is waiting for late ranks (the straggler finding's).
            let transfer = (shown.id == FindingId::ExposedCommunication
                && !job.parts.rank_paths.is_empty())
            .then(|| job.critical_path.ns_of(crate::analysis::Label::Communication));
            let total = transfer.map_or(summed, |t| summed.min(t));
            let mut evidence = shown.evidence.clone();
            evidence.ranks = Some((
                shown_rank,
                members
                    .iter()
                    .map(|(r, f)| evidence::RankStake {
                        rank: *r,
                        time_at_stake_ns: f.time_at_stake_ns,
                    })
                    .collect(),
            ));
            let on: Vec<Option<u32>> = members.iter().map(|m| m.0).collect();
            let stake = if total > 0 {
                format!(
                    "; {} at stake over {}{}",
                    ms(total),
                    if on.len() > 1 { "them" } else { "it" },
                    if total < summed {
                        " (the communication on the job's critical path; the rest waits for other ranks or is off it)"
                    } else {
                        ""
                    }
                )
            } else {
                String::new()
            };
            let whom = if on.len() == job_ranks && on.iter().all(Option::is_some) {
                format!("on all {job_ranks} ranks, rank {} shown", label(shown_rank))
            } else if on.len() == 1 {
                format!("on rank {} only, of {job_ranks}", label(shown_rank))
            } else {
                format!(
                    "on {} of {job_ranks} ranks ({}), rank {} shown",
                    on.len(),
                    rank_list(&on),
                    label(shown_rank)
                )
            };
            Finding {
                id: shown.id,
                severity: members
                    .iter()
                    .map(|m| m.1.severity)
                    .min()
                    .unwrap_or(shown.severity),
                summary: format!("{} [{whom}{stake}]", shown.summary),
                time_at_stake_ns: total,
                evidence,
            }
        })
        .collect();
    out.extend(job_findings(job));
    finish(out, logs)
}

/// Ranks as runs: `0-3, 5, 7-9` (inputs without a rank last, as `none`).
fn rank_list(ranks: &[Option<u32>]) -> String {
    let mut ids: Vec<u32> = ranks.iter().flatten().copied().collect();
    ids.sort_unstable();
    ids.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < ids.len() {
        let mut j = k;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if j > k {
            format!("{}-{}", ids[k], ids[j])
        } else {
            ids[k].to_string()
        });
        k = j + 1;
    }
    if ranks.iter().any(Option::is_none) {
        parts.push("none".into());
    }
    parts.join(", ")
}

#[cfg(test)]
mod merge_tests {
    #[test]
    fn rank_lists_are_runs() {
        let r = |v: &[u32]| super::rank_list(&v.iter().map(|&x| Some(x)).collect::<Vec<_>>());
        assert_eq!(r(&[0, 1, 2, 3, 5, 7, 8, 9]), "0-3, 5, 7-9");
        assert_eq!(r(&[4]), "4");
        assert_eq!(super::rank_list(&[Some(1), None]), "1, none");
    }
}
