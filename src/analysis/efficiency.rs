//! How close GEMM ops run to the device's peak: FLOPs from an op's `Input Dims`, its data type
//! from `Input type`, and the peak of the device it ran on from `rules/devices.toml` (datasheet
//! figures, matched on the trace's device name or arch).

use serde::Deserialize;
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
    pub hbm_gbps: Option<f64>,
    pub source: String,
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

/// The built-in device table.
pub fn devices() -> &'static [DevicePeaks] {
    &DEVICES
}

/// The peaks of a device by its name in the trace (or its gfx arch), if the table knows it.
pub fn device_for(name: &str) -> Option<&'static DevicePeaks> {
    let lower = name.to_lowercase();
    DEVICES.iter().find(|d| {
        d.names.iter().any(|n| lower.contains(&n.to_lowercase()))
            || d.archs.iter().any(|a| lower.contains(a.as_str()))
    })
}

/// The data type a GEMM computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dtype {
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
}

impl DevicePeaks {
    pub fn peak_tflops(&self, d: Dtype) -> Option<f64> {
        match d {
            Dtype::Fp32 => self.fp32,
            Dtype::Tf32 => self.tf32,
            Dtype::Bf16 => self.bf16,
            Dtype::Fp16 => self.fp16,
            Dtype::Fp8 => self.fp8,
        }
    }
}

/// The data type of an op from its `Input type` list (the first typed input); fp32 inputs are
/// `Fp32` (the caller decides whether tensor cores ran them as TF32).
pub fn dtype_of(input_types: &str) -> Option<Dtype> {
    let types: Vec<String> = serde_json::from_str(input_types).ok()?;
    let first = types.iter().find(|t| !t.is_empty())?;
    Some(match first.as_str() {
        "c10::BFloat16" => Dtype::Bf16,
        "c10::Half" => Dtype::Fp16,
        "float" => Dtype::Fp32,
        t if t.starts_with("c10::Float8") => Dtype::Fp8,
        _ => return None,
    })
}

/// FLOPs of one call of a GEMM op from its `Input Dims` (a multiply-add counts 2), or None for
/// another op or shapes that do not fit.
pub fn gemm_flops(op: &str, input_dims: &str) -> Option<f64> {
    let dims: Vec<Vec<i64>> = serde_json::from_str::<Vec<serde_json::Value>>(input_dims)
        .ok()?
        .iter()
        .map(|d| {
            d.as_array()
                .map(|a| a.iter().filter_map(|x| x.as_i64()).collect())
                .unwrap_or_default()
        })
        .collect();
    let mm = |a: &[i64], b: &[i64]| -> Option<f64> {
        // a: [..., M, K], b: [..., K, N] (b's batch broadcast); batch = the larger.
        let (ra, rb) = (a.len(), b.len());
        if ra < 2 || rb < 2 || a[ra - 1] != b[rb - 2] {
            return None;
        }
        let (m, k, n) = (a[ra - 2], a[ra - 1], b[rb - 1]);
        let batch = |x: &[i64]| x[..x.len() - 2].iter().product::<i64>();
        let b = batch(a).max(batch(b));
        Some(2.0 * (b as f64) * (m as f64) * (k as f64) * (n as f64))
    };
    match op {
        "aten::mm" | "aten::bmm" | "aten::matmul" => mm(dims.first()?, dims.get(1)?),
        "aten::addmm" | "aten::baddbmm" | "aten::_addmm_activation" => {
            mm(dims.get(1)?, dims.get(2)?)
        }
        "aten::linear" => {
            // input [..., K], weight [N, K]
            let (x, w) = (dims.first()?, dims.get(1)?);
            let k = *x.last()?;
            if w.len() != 2 || w[1] != k {
                return None;
            }
            let rows: i64 = x[..x.len() - 1].iter().product();
            Some(2.0 * rows as f64 * k as f64 * w[0] as f64)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_table_loads_and_matches() {
        assert!(devices().len() >= 10);
        for d in devices() {
            assert!(
                !d.source.is_empty() && (!d.names.is_empty() || !d.archs.is_empty()),
                "{}",
                d.model
            );
        }
        assert_eq!(
            device_for("NVIDIA H100 80GB HBM3").unwrap().model,
            "NVIDIA H100 SXM"
        );
        assert_eq!(
            device_for("NVIDIA H100 PCIe").unwrap().model,
            "NVIDIA H100 PCIe"
        );
        assert_eq!(
            device_for("AMD Instinct MI300X").unwrap().bf16,
            Some(1307.4)
        );
        assert_eq!(
            device_for("NVIDIA A100-PG509-200").unwrap().model,
            "NVIDIA A100 SXM"
        );
        assert!(device_for("AMD Radeon Graphics").is_none());
    }

    #[test]
    fn gemm_flops_from_shapes() {
        assert_eq!(
            gemm_flops("aten::mm", "[[4096,1024],[1024,1024]]"),
            Some(2.0 * 4096.0 * 1024.0 * 1024.0)
        );
        assert_eq!(
            gemm_flops("aten::bmm", "[[128,512,64],[128,64,512]]"),
            Some(2.0 * 128.0 * 512.0 * 64.0 * 512.0)
        );
        assert_eq!(
            gemm_flops("aten::addmm", "[[1024],[8,512],[512,1024]]"),
            Some(2.0 * 8.0 * 512.0 * 1024.0)
        );
        assert_eq!(
            gemm_flops("aten::linear", "[[8,512,1024],[4096,1024],[]]"),
            Some(2.0 * 4096.0 * 1024.0 * 4096.0)
        );
        assert_eq!(gemm_flops("aten::mm", "[[4,3],[5,6]]"), None);
        assert_eq!(gemm_flops("aten::relu", "[[4,3]]"), None);
        assert_eq!(
            dtype_of(r#"["c10::BFloat16", "c10::BFloat16", ""]"#),
            Some(Dtype::Bf16)
        );
        assert_eq!(dtype_of(r#"["", "float"]"#), Some(Dtype::Fp32));
    }
}
