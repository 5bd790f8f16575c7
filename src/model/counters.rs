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
    #[serde(rename = "valu_f16")]
    ValuF16,
    #[serde(rename = "valu_f32")]
    ValuF32,
    #[serde(rename = "valu_f64")]
    ValuF64,
    #[serde(rename = "mfma_f8")]
    MfmaF8,
    #[serde(rename = "mfma_f16")]
    MfmaF16,
    #[serde(rename = "mfma_bf16")]
    MfmaBf16,
    #[serde(rename = "mfma_f32")]
    MfmaF32,
    #[serde(rename = "mfma_f64")]
    MfmaF64,
    #[serde(rename = "mfma_i8")]
    MfmaI8,
}

impl Pipe {
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
    pub fn is_matrix(self) -> bool {
        !matches!(self, Pipe::ValuF16 | Pipe::ValuF32 | Pipe::ValuF64)
    }
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
    pub input: u32,
    pub name: crate::model::NameId,
    pub dur_ns: i64,
    /// FLOPs per pipe; `None` when the SQ instruction counters were not collected.
    pub ops: Option<PipeOps>,
    /// Bytes between L2 and HBM (read, write); `None` without the TCC_EA counters.
    pub hbm_bytes: Option<(f64, f64)>,
    /// Bytes requested from L2; `None` without TCC_REQ.
    pub l2_bytes: Option<f64>,
    pub resources: KernelResources,
}

/// What a dispatch asked of a compute unit (the columns every counter file carries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelResources {
    /// Work-items in the whole grid.
    pub grid_size: u64,
    pub workgroup_size: u32,
    pub wave_size: u32,
    pub arch_vgpr: u32,
    pub accum_vgpr: u32,
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
    pub model: String,
    /// `gfx942`, …
    pub arch: String,
    pub cu_count: u32,
    pub simd_per_cu: u32,
    pub max_waves_per_cu: u32,
    pub wave_size: u32,
    pub lds_bytes_per_cu: u32,
    pub num_xcd: u32,
    /// Peak FLOP/s per pipe in GFLOP/s (`None`: unknown for this device); in the feed as
    /// `peak_gflops: {"mfma_bf16": …}` with the known pipes only.
    #[serde(serialize_with = "known_peaks", deserialize_with = "read_peaks")]
    pub peak_gflops: [Option<f64>; 9],
    pub peak_hbm_gbps: Option<f64>,
    pub peak_l2_gbps: Option<f64>,
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
