//! The device table (`rules/devices.toml`, plus a `devices.toml` in a `--rules` directory):
//! each GPU's dense peaks per data type and HBM bandwidth, matched on the trace's device name
//! or gfx arch. Rules data, loaded with the rules; the efficiency analysis reads it.

use serde::{Deserialize, Serialize};
use std::sync::LazyLock;

/// One device's dense peaks (TFLOP/s per data type) and HBM bandwidth.
#[derive(Clone, Debug, Deserialize)]
pub struct DevicePeaks {
    pub model: String,
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub archs: Vec<String>,
    pub fp32: Option<f64>,
    pub tf32: Option<f64>,
    pub bf16: Option<f64>,
    pub fp16: Option<f64>,
    pub fp8: Option<f64>,
    /// The microscaling (OCP MX) FP6 and FP4 peaks, where the device has them (CDNA 4,
    /// Blackwell); none on Hopper or CDNA 3.
    #[serde(default)]
    pub fp6: Option<f64>,
    #[serde(default)]
    pub fp4: Option<f64>,
    pub hbm_gbps: Option<f64>,
    /// Strides that are multiples of this many bytes hotspot memory channels (MI300).
    #[serde(default)]
    pub stride_hotspot_bytes: Option<i64>,
    pub source: String,
    /// The GPU-to-GPU link inside a node (`NVLink 4, 18 links`), its peak in GB/s per GPU and
    /// direction (what nccl-tests' bus bandwidth is compared with), and where that comes from.
    #[serde(default)]
    pub link: Option<String>,
    #[serde(default)]
    pub link_gbps: Option<f64>,
    /// Its memory in GiB (the datasheet's "GB" of HBM), when the trace does not say.
    #[serde(default)]
    pub memory_gib: Option<f64>,
    /// On a mesh of one link per peer (AMD xGMI), one link's GB/s per direction: a group of
    /// `n` GPUs reaches `n - 1` of them.
    #[serde(default)]
    pub link_per_peer_gbps: Option<f64>,
    #[serde(default)]
    pub link_source: Option<String>,
}

#[derive(Deserialize)]
struct DeviceTable {
    device: Vec<DevicePeaks>,
}

static DEVICES: LazyLock<Vec<DevicePeaks>> = LazyLock::new(|| {
    toml::from_str::<DeviceTable>(include_str!("../../rules/devices.toml"))
        .expect("rules/devices.toml is valid (tested)")
        .device
});

/// The device table: `devices.toml` of the `--rules` directories first (a user's entry for a
/// device wins over the built-in one), then the built-in table.
pub fn load_devices(
    extra_dirs: &[std::path::PathBuf],
) -> Result<Vec<DevicePeaks>, crate::error::RuleError> {
    let mut out = Vec::new();
    for dir in extra_dirs {
        let file = dir.join("devices.toml");
        if !file.is_file() {
            continue;
        }
        let text =
            std::fs::read_to_string(&file).map_err(|source| crate::error::RuleError::Read {
                file: file.clone(),
                source,
            })?;
        let table: DeviceTable =
            toml::from_str(&text).map_err(|e| crate::error::RuleError::Parse {
                file: file.clone(),
                message: e.to_string(),
            })?;
        out.extend(table.device);
    }
    out.extend(DEVICES.iter().cloned());
    Ok(out)
}

/// The first entry of `table` matching a device name (or gfx arch).
pub fn find_device<'t>(table: &'t [DevicePeaks], name: &str) -> Option<&'t DevicePeaks> {
    let lower = name.to_lowercase();
    table.iter().find(|d| {
        d.names.iter().any(|n| lower.contains(&n.to_lowercase()))
            || d.archs.iter().any(|a| lower.contains(a.as_str()))
    })
}

/// The peaks of a trace's device: by its marketing name, else by its arch (vLLM's traces may
/// carry an empty name and `gfx942`).
pub fn peaks_of<'t>(
    table: &'t [DevicePeaks],
    device: &crate::model::Device,
) -> Option<&'t DevicePeaks> {
    find_device(table, &device.name)
        .or_else(|| device.arch.as_deref().and_then(|a| find_device(table, a)))
}

/// The data type a GEMM computes in. New variants go last: the FLOP tallies of partial files
/// are keyed by it, and their order is the tie-break of the dominant type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Dtype {
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
    /// OCP MX FP6 (`e2m3` / `e3m2`) and FP4 (`e2m1`, packed two a byte in torch).
    Fp6,
    Fp4,
}

impl Dtype {
    /// Its name in the feed. Not serde's: serde's (`Fp32`) key the FLOP tallies of partial
    /// files, whose format stays as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Tf32 => "tf32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
            Dtype::Fp6 => "fp6",
            Dtype::Fp4 => "fp4",
        }
    }
    /// Bits per element of the operands.
    pub fn bits(self) -> i64 {
        match self {
            Dtype::Fp4 => 4,
            Dtype::Fp6 => 6,
            Dtype::Fp8 => 8,
            Dtype::Bf16 | Dtype::Fp16 => 16,
            Dtype::Fp32 | Dtype::Tf32 => 32,
        }
    }
    /// Bytes per element, rounded up (strides and rows are whole bytes).
    pub fn bytes(self) -> i64 {
        (self.bits() + 7) / 8
    }
}

impl DevicePeaks {
    pub fn peak_tflops(&self, d: Dtype) -> Option<f64> {
        match d {
            Dtype::Fp32 => self.fp32,
            Dtype::Tf32 => self.tf32,
            Dtype::Bf16 => self.bf16,
            Dtype::Fp16 => self.fp16,
            Dtype::Fp8 => self.fp8,
            Dtype::Fp6 => self.fp6,
            Dtype::Fp4 => self.fp4,
        }
    }
}
