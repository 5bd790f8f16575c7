//! Hardware counters per dispatch (rocprof-compute workloads) and the device they ran on.
//!
//! Readers turn raw counters (`SQ_INSTS_VALU_FMA_F32`, `TCC_EA0_RDREQ_sum`, …) into the few
//! physical quantities the analyses need: FLOPs per pipe and precision, bytes moved, and the
//! kernel's resource use. Missing counter groups stay `None`, never zero.

use serde::{Deserialize, Serialize};

/// The arithmetic pipes and precisions rocprof-compute counts (its `SQ_INSTS_VALU_*` and
/// `SQ_INSTS_VALU_MFMA_MOPS_*` counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Pipe {
    /// Vector ALU, half precision (`SQ_INSTS_VALU_*_F16`).
    #[serde(rename = "valu_f16")]
    ValuF16,
    /// Vector ALU, single precision (`SQ_INSTS_VALU_*_F32`).
    #[serde(rename = "valu_f32")]
    ValuF32,
    /// Vector ALU, double precision (`SQ_INSTS_VALU_*_F64`).
    #[serde(rename = "valu_f64")]
    ValuF64,
    /// Matrix cores (MFMA), FP8 (`SQ_INSTS_VALU_MFMA_MOPS_F8`).
    #[serde(rename = "mfma_f8")]
    MfmaF8,
    /// Matrix cores, FP16 (`SQ_INSTS_VALU_MFMA_MOPS_F16`).
    #[serde(rename = "mfma_f16")]
    MfmaF16,
    /// Matrix cores, BF16 (`SQ_INSTS_VALU_MFMA_MOPS_BF16`).
    #[serde(rename = "mfma_bf16")]
    MfmaBf16,
    /// Matrix cores, FP32 (`SQ_INSTS_VALU_MFMA_MOPS_F32`).
    #[serde(rename = "mfma_f32")]
    MfmaF32,
    /// Matrix cores, FP64 (`SQ_INSTS_VALU_MFMA_MOPS_F64`).
    #[serde(rename = "mfma_f64")]
    MfmaF64,
    /// Matrix cores, INT8: integer ops, not FLOPs (`SQ_INSTS_VALU_MFMA_MOPS_I8`).
    #[serde(rename = "mfma_i8")]
    MfmaI8,
}

impl Pipe {
    /// Every pipe, in [`Pipe::index`] order.
    pub const ALL: [Pipe; 9] = [
        Pipe::ValuF16,
        Pipe::ValuF32,
        Pipe::ValuF64,
        Pipe::MfmaF8,
        Pipe::MfmaF16,
        Pipe::MfmaBf16,
        Pipe::MfmaF32,
        Pipe::MfmaF64,
        Pipe::MfmaI8,
    ];
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
    /// Whether it is a matrix-core (MFMA) pipe rather than the vector ALU.
    pub fn is_matrix(self) -> bool {
        !matches!(self, Pipe::ValuF16 | Pipe::ValuF32 | Pipe::ValuF64)
    }
    /// Its position in [`Pipe::ALL`], in [`PipeOps`] and in [`DeviceSpec::peak_gflops`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Operations (FLOPs, or integer ops for `mfma_i8`) per pipe, indexed by [`Pipe::index`].
pub type PipeOps = [f64; 9];

/// One profiled dispatch's counters, with its own duration (counter passes are timed
/// separately from the trace pass, so rates use this, not the timeline's duration).
#[derive(Clone, Debug, Default)]
pub struct DispatchCounters {
    /// Index into `Trace::inputs` of the workload it was read from.
    pub input: u32,
    /// The kernel's name (`Kernel_Name`), interned.
    pub name: crate::model::NameId,
    /// This dispatch's duration in its counter pass (end minus start timestamp), in ns.
    pub dur_ns: i64,
    /// FLOPs per pipe; `None` when the SQ instruction counters were not collected.
    pub ops: Option<PipeOps>,
    /// Bytes between L2 and HBM (read, write); `None` without the TCC_EA counters.
    pub hbm_bytes: Option<(f64, f64)>,
    /// Bytes requested from L2; `None` without TCC_REQ.
    pub l2_bytes: Option<f64>,
    /// What the dispatch asked of a compute unit (workgroup size, registers, LDS).
    pub resources: KernelResources,
}

/// What a dispatch asked of a compute unit (the columns every counter file carries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelResources {
    /// Work-items in the whole grid.
    pub grid_size: u64,
    /// Work-items per workgroup; 0 when the file does not say.
    pub workgroup_size: u32,
    /// Lanes per wave (64 when the file does not say).
    pub wave_size: u32,
    /// Architectural VGPRs per work-item (`Arch_VGPR`).
    pub arch_vgpr: u32,
    /// Accumulation VGPRs (AGPRs, for MFMA) per work-item (`Accum_VGPR`).
    pub accum_vgpr: u32,
    /// LDS (shared memory) per workgroup, in bytes (`LDS_Per_Workgroup`).
    pub lds_per_workgroup: u32,
}

/// Where the peak numbers came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakSource {
    /// `roofline.csv`: rocprof-compute's measured (empirical) peaks.
    Roofline,
    /// Computed from `sysinfo.csv` clocks and unit counts (theoretical).
    Sysinfo,
}

/// The GPU a counter workload ran on: shape (for occupancy) and peaks (for fractions of peak).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceSpec {
    /// Marketing name (`sysinfo.csv` `gpu_model`, e.g. `MI300X`); empty when absent.
    pub model: String,
    /// `gfx942`, …
    pub arch: String,
    /// Compute units on the whole GPU (`cu_per_gpu`; 0 when unknown).
    pub cu_count: u32,
    /// SIMDs per compute unit (4 when `sysinfo.csv` does not say).
    pub simd_per_cu: u32,
    /// Most waves one compute unit can hold (32 when not stated).
    pub max_waves_per_cu: u32,
    /// Lanes per wave (64 when not stated).
    pub wave_size: u32,
    /// LDS per compute unit, in bytes (64 KiB; 160 KiB on gfx950).
    pub lds_bytes_per_cu: u32,
    /// Accelerator complex dies (XCDs) the GPU is built from (1 when not stated).
    pub num_xcd: u32,
    /// Peak FLOP/s per pipe in GFLOP/s (`None`: unknown for this device); in the feed as
    /// `peak_gflops: {"mfma_bf16": …}` with the known pipes only.
    #[serde(serialize_with = "known_peaks", deserialize_with = "read_peaks")]
    pub peak_gflops: [Option<f64>; 9],
    /// Peak HBM bandwidth in GB/s (`None`: unknown).
    pub peak_hbm_gbps: Option<f64>,
    /// Peak L2 bandwidth in GB/s (`None`: unknown).
    pub peak_l2_gbps: Option<f64>,
    /// Where the peaks came from (`None`: no peaks are known).
    pub peak_source: Option<PeakSource>,
}

fn known_peaks<S: serde::Serializer>(p: &[Option<f64>; 9], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(None)?;
    for pipe in Pipe::ALL {
        if let Some(v) = p[pipe.index()] {
            m.serialize_entry(pipe.as_str(), &v)?;
        }
    }
    m.end()
}

/// [`known_peaks`]'s map read back (a rank's partial carries it).
fn read_peaks<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[Option<f64>; 9], D::Error> {
    let map: std::collections::BTreeMap<String, f64> = serde::Deserialize::deserialize(d)?;
    let mut out = [None; 9];
    for (name, v) in map {
        let pipe = Pipe::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown pipe {name:?}")))?;
        out[pipe.index()] = Some(v);
    }
    Ok(out)
}

impl DeviceSpec {
    /// Peak of `pipe` in GFLOP/s (GOP/s for `mfma_i8`); `None` when unknown or zero.
    pub fn peak(&self, pipe: Pipe) -> Option<f64> {
        self.peak_gflops[pipe.index()].filter(|&p| p > 0.0)
    }
    /// Most waves one SIMD can hold.
    pub fn max_waves_per_simd(&self) -> u32 {
        (self.max_waves_per_cu / self.simd_per_cu.max(1)).max(1)
    }
    /// The unified VGPR file of gfx90a and later holds arch and accumulation registers together.
    pub fn unified_vgprs(&self) -> bool {
        !self.arch.starts_with("gfx908")
    }
}
