//! The evidence of what the GPU runs: kernels, model surgery, counters and GEMM efficiency.

use super::NamedTime;
use crate::analysis::signals::counters::Bound;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use super::Shape;
// ---- kernels ----

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fp32GemmKind {
    /// Off the matrix cores.
    Simt,
    /// Tensile fp32 on a matrix instruction, at the fp32 rate.
    Mfma,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fp32Gemm {
    pub kind: Fp32GemmKind,
    pub fp32_gemm_ns: i64,
    pub mfma_ns: i64,
    pub gemm_pct: f64,
    pub kernels: Vec<NamedTime>,
}
kinded!(Fp32Gemm: Fp32GemmKind);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GemmBackend {
    pub libraries: Vec<LibraryTime>,
    pub confidence: f64,
    /// The share (%) of GEMM time on 8-bit or narrower operands.
    pub low_precision_pct: f64,
    pub note: String,
}
impl Shape for GemmBackend {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LibraryTime {
    pub library: String,
    pub ns: i64,
    pub pct: f64,
    pub launches: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElementwiseHeavy {
    pub elementwise_ns: i64,
    pub pct: f64,
    pub compiled: bool,
    pub families: Vec<NamedTime>,
}
impl Shape for ElementwiseHeavy {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConvHeavy {
    pub conv_ns: i64,
    pub pct: f64,
    pub libraries: Vec<NamedTime>,
}
impl Shape for ConvHeavy {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConvLayoutTransposes {
    pub transpose_ns: i64,
    pub pct: f64,
    pub kernels: Vec<NamedTime>,
}
impl Shape for ConvLayoutTransposes {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExposedCommunication {
    pub communication_ns: i64,
    pub overlapped_ns: i64,
    pub overlap_pct: f64,
    pub exposed_ns: i64,
    pub window_pct: f64,
}
impl Shape for ExposedCommunication {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemcpyHeavy {
    pub memory_ns: i64,
    pub pct: f64,
    pub window_pct: f64,
    pub by_kind: Vec<NamedTime>,
}
impl Shape for MemcpyHeavy {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnclassifiedTime {
    pub unclassified_ns: i64,
    pub pct: f64,
    pub kernels: Vec<NamedTime>,
}
impl Shape for UnclassifiedTime {}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvCacheKind {
    /// The kernels' Fp8KVCacheDataType says auto: the cache is in the model's dtype.
    NotFp8,
    Fp8,
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PagedAttentionHeavy {
    pub kind: KvCacheKind,
    pub pct: f64,
    pub kv_cache_dtypes: BTreeSet<String>,
    pub kernels: Vec<NamedTime>,
}
kinded!(PagedAttentionHeavy: KvCacheKind);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BandwidthKind {
    /// Per op shape.
    Shapes,
    /// Per op over its shapes (no one shape was slow enough).
    Ops,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LowBandwidthEfficiency {
    pub kind: BandwidthKind,
    pub compiled: bool,
    pub ops: Vec<SlowMemoryOp>,
    pub threshold_pct: f64,
    pub achievable_pct: f64,
}
kinded!(LowBandwidthEfficiency: BandwidthKind);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowMemoryOp {
    pub op: String,
    pub shapes: Option<String>,
    pub ns: i64,
    pub pct_of_gpu: f64,
    pub gbps: f64,
    pub pct_of_hbm_peak: f64,
    /// Inductor's generated kernel file.
    pub kernel_file: Option<String>,
}

// ---- model surgery ----

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManualAttention {
    pub chains: usize,
    pub chains_per_step: f64,
    pub chain_kernel_ns: i64,
    pub softmax_ops: usize,
    /// The first chain's kernels: matmul, softmax, matmul.
    pub example_kernels: Vec<String>,
}
impl Shape for ManualAttention {}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProjectionKind {
    Qkv,
    GateUp,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnfusedProjections {
    pub kind: ProjectionKind,
    pub gemms_per_run: usize,
    pub runs: usize,
    pub runs_per_step: f64,
    pub gemm_ns: i64,
    pub example_op: String,
    pub example_input_dims: Vec<String>,
}
kinded!(UnfusedProjections: ProjectionKind);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EagerModules {
    pub modules: Vec<EagerModule>,
    pub pct: f64,
}
impl Shape for EagerModules {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EagerModule {
    pub module: String,
    pub name: String,
    pub kernel_ns: i64,
    pub pct: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleRole {
    Norm,
    Activation,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NormActivationHeavy {
    pub pct: f64,
    pub compiled: bool,
    pub modules: Vec<NormModule>,
}
impl Shape for NormActivationHeavy {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NormModule {
    pub module: String,
    pub role: ModuleRole,
    pub kernel_ns: i64,
    pub pct: f64,
}

// ---- hardware counters and GEMM efficiency ----

/// Kernels the counters single out (`low_occupancy`, `memory_bound_gemm`, `no_matrix_cores`,
/// and `low_gemm_efficiency` with counters).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterKernels {
    pub kernels: Vec<CounterKernel>,
    pub share_pct: f64,
    /// The largest grid among them, in workgroups.
    pub max_workgroups: Option<u64>,
}
impl Shape for CounterKernels {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterKernel {
    pub kernel: String,
    pub bucket: crate::classify::Bucket,
    pub total_ns: i64,
    pub share_pct: f64,
    pub pipe: Option<String>,
    pub tflops: Option<f64>,
    pub pct_of_peak: Option<f64>,
    pub hbm_pct_of_peak: Option<f64>,
    pub arithmetic_intensity: Option<f64>,
    pub roofline_pct: Option<f64>,
    pub bound: Option<Bound>,
    pub waves_per_simd: Option<f64>,
    pub occupancy_limiter: Option<String>,
    pub vgprs: Option<u32>,
    pub vgprs_for_next_wave: Option<u32>,
    pub lds_per_workgroup: u32,
}

/// `low_gemm_efficiency`: from the counters' kernels, or from the ops' shapes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LowGemmEfficiency {
    Kernels(CounterKernels),
    Ops(SlowGemmOps),
}
shapes!(LowGemmEfficiency { Kernels(CounterKernels), Ops(SlowGemmOps) });

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GemmOpsKind {
    Ops,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowGemmOps {
    pub kind: GemmOpsKind,
    pub ops: Vec<SlowGemmOp>,
    /// The largest grid their kernels launch, in workgroups (null without grids).
    pub max_workgroups: Option<u32>,
    /// Set when a shape's rows hit the device's stride hotspot.
    pub stride_hotspot_bytes: Option<i64>,
}
kinded!(SlowGemmOps: GemmOpsKind);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowGemmOp {
    pub op: String,
    pub shapes: Option<String>,
    pub dtype: Option<String>,
    pub self_ns: i64,
    pub tflops: Option<f64>,
    pub pct_of_peak: Option<f64>,
    /// What in its shapes keeps it slow.
    pub why: Vec<String>,
}
