//! How close GEMM ops run to the device's peak: FLOPs from an op's `Input Dims`, its data type
//! from `Input type`, and the peak of the device it ran on from `rules/devices.toml` (datasheet
//! figures, matched on the trace's device name or arch).

pub use crate::classify::devices::{find_device, DevicePeaks, Dtype};
pub use crate::model::ops::is_gemm_op;

/// The type the work runs in: fp32 inputs run on tensor/matrix cores as TF32 where the device
/// has a TF32 peak, unless the kernel is a SIMT fp32 GEMM.
pub fn compute_dtype(input: Dtype, peaks: Option<&DevicePeaks>, simt_fp32: bool) -> Dtype {
    match input {
        Dtype::Fp32 if !simt_fp32 && peaks.is_some_and(|p| p.tf32.is_some()) => Dtype::Tf32,
        d => d,
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

/// The product of dimensions in f64: shapes are input, and an i64 product can overflow.
fn fprod(dims: &[i64]) -> f64 {
    dims.iter().map(|&d| d as f64).product()
}

/// FLOPs of one call of a GEMM op from its `Input Dims` (a multiply-add counts 2), or None for
/// another op or shapes that do not fit.
pub fn gemm_flops(op: &str, input_dims: &str) -> Option<f64> {
    let dims = dims_of(input_dims)?;
    let mm = |a: &[i64], b: &[i64]| -> Option<f64> {
        // a: [..., M, K], b: [..., K, N] (b's batch broadcast); batch = the larger.
        let (ra, rb) = (a.len(), b.len());
        if ra < 2 || rb < 2 || a[ra - 1] != b[rb - 2] {
            return None;
        }
        let (m, k, n) = (a[ra - 2], a[ra - 1], b[rb - 1]);
        let b = fprod(&a[..ra - 2]).max(fprod(&b[..rb - 2]));
        Some(2.0 * b * (m as f64) * (k as f64) * (n as f64))
    };
    match op {
        "aten::mm" | "aten::bmm" | "aten::matmul" => mm(dims.first()?, dims.get(1)?),
        "aten::addmm" | "aten::baddbmm" | "aten::_addmm_activation" => {
            mm(dims.get(1)?, dims.get(2)?)
        }
        // Grouped GEMMs (MoE experts): `offs` splits one operand's rows (or columns) among
        // the groups, so the groups' FLOPs add up to the whole operand's.
        "aten::_grouped_mm" | "aten::_scaled_grouped_mm" => {
            let (a, b) = (dims.first()?, dims.get(1)?);
            match (a.len(), b.len()) {
                // [M, K] x [G, K, N]: each row meets one group's weight.
                (2, 3) if a[1] == b[1] => Some(2.0 * fprod(&[a[0], a[1], b[2]])),
                // [G, M, K] x [K, N]: each column block meets one group.
                (3, 2) if a[2] == b[0] => Some(2.0 * fprod(&[a[1], a[2], b[1]])),
                // [P, M] x [M, Q] split along M (the weight gradient), and [G, M, K] x
                // [G, K, N]: as a plain (batched) matmul.
                (2, 2) | (3, 3) => mm(a, b),
                _ => None,
            }
        }
        "aten::linear" => {
            // input [..., K], weight [N, K]
            let (x, w) = (dims.first()?, dims.get(1)?);
            let k = *x.last()?;
            if w.len() != 2 || w[1] != k {
                return None;
            }
            let rows = fprod(&x[..x.len() - 1]);
            Some(2.0 * rows * k as f64 * w[0] as f64)
        }
        _ => None,
    }
}

/// `Input Dims` as lists of sizes (empty for non-tensors).
pub fn dims_of(input_dims: &str) -> Option<Vec<Vec<i64>>> {
    Some(
        serde_json::from_str::<Vec<serde_json::Value>>(input_dims)
            .ok()?
            .iter()
            .map(|d| {
                d.as_array()
                    .map(|a| a.iter().filter_map(|x| x.as_i64()).collect())
                    .unwrap_or_default()
            })
            .collect(),
    )
}

/// `Concrete Inputs` as strings (`"[2, 2]"`, `"True"`, `""` for tensors).
fn concrete_of(concrete: &str) -> Vec<String> {
    serde_json::from_str(concrete).unwrap_or_default()
}

/// `"[2, 2]"` → [2, 2].
fn int_list(s: &str) -> Option<Vec<i64>> {
    s.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|x| x.trim().parse().ok())
        .collect()
}

/// Bytes a GEMM call moves at least once: both operands read, the result written.
pub fn gemm_bytes(op: &str, input_dims: &str, dtype: Dtype) -> Option<f64> {
    let dims = dims_of(input_dims)?;
    let (a, b) = match op {
        "aten::addmm" | "aten::baddbmm" | "aten::_addmm_activation" => (dims.get(1)?, dims.get(2)?),
        _ => (dims.first()?, dims.get(1)?),
    };
    let (k, n) = (
        *a.last()?,
        if op == "aten::linear" {
            *b.first()?
        } else {
            *b.last()?
        },
    );
    let rows = fprod(&a[..a.len().checked_sub(1)?]);
    let weights = fprod(b);
    Some(dtype.bytes() as f64 * (rows * k as f64 + weights + rows * n as f64))
}

/// The attention ops whose FLOPs their shapes give: (name, index of the query among the
/// inputs, index of `is_causal`, FLOPs as a multiple of the forward's). Compiled code calls
/// the `_scaled_dot_product_*` ops without the public one around them, so both are listed.
/// Backward counts 2.5 forwards (dV, dP, dQ, dK and the recomputed scores: five matmuls to
/// the forward's two), the convention of FlashAttention's own benchmarks.
const ATTENTION_OPS: &[(&str, usize, usize, f64)] = &[
    ("aten::scaled_dot_product_attention", 0, 5, 1.0),
    ("aten::_scaled_dot_product_flash_attention", 0, 4, 1.0),
    ("aten::_scaled_dot_product_efficient_attention", 0, 6, 1.0),
    ("aten::_scaled_dot_product_cudnn_attention", 0, 6, 1.0),
    (
        "aten::_scaled_dot_product_flash_attention_backward",
        1,
        11,
        2.5,
    ),
    (
        "aten::_scaled_dot_product_efficient_attention_backward",
        1,
        11,
        2.5,
    ),
    (
        "aten::_scaled_dot_product_cudnn_attention_backward",
        1,
        14,
        2.5,
    ),
];

/// Attention ops whose FLOPs [`composite_flops`] computes (`aten::_scaled_dot_product_*`, …).
pub fn is_attention_op(op: &str) -> bool {
    ATTENTION_OPS.iter().any(|(name, ..)| *name == op)
}

/// Counted ops that only forward runs (backward calls `aten::mm`, `aten::bmm` and the
/// `*_backward` ops): one inside backward is recomputation.
pub fn is_forward_only_op(op: &str) -> bool {
    matches!(
        op,
        "aten::addmm"
            | "aten::_addmm_activation"
            | "aten::baddbmm"
            | "aten::linear"
            | "aten::convolution"
    ) || ATTENTION_OPS
        .iter()
        .any(|(name, _, _, factor)| *name == op && *factor == 1.0)
}

/// FLOPs of one attention call as torch's FlopCounterMode counts them: every query-key pair,
/// causal or not (as PaLM's `12·L·H·Q·T` does); backward, its five matmuls (scores
/// again, dV, dP, dQ, dK: `2·L·S·(3·E + 2·Ev)` per head, 2.5 forwards when E = Ev). MFU reads
/// these; the op's achieved rate reads [`composite_flops`]'s, which skips the masked half.
pub fn attention_model_flops(op: &str, input_dims: &str) -> Option<f64> {
    let &(_, q_at, _, factor) = ATTENTION_OPS.iter().find(|(n, ..)| *n == op)?;
    let dims = dims_of(input_dims)?;
    let (q, k, v) = (dims.get(q_at)?, dims.get(q_at + 1)?, dims.get(q_at + 2)?);
    if q.len() < 3 || k.len() < 3 || v.len() < 3 {
        return None;
    }
    let (l, e) = (q[q.len() - 2] as f64, q[q.len() - 1] as f64);
    let (s, ev) = (k[k.len() - 2] as f64, v[v.len() - 1] as f64);
    let per_pair = if factor == 1.0 {
        e + ev
    } else {
        3.0 * e + 2.0 * ev
    };
    Some(2.0 * fprod(&q[..q.len() - 2]) * l * s * per_pair)
}

/// Ops [`composite_flops`] knows.
pub fn is_composite(op: &str) -> bool {
    matches!(op, "aten::convolution" | "aten::convolution_backward") || is_attention_op(op)
}

/// FLOPs of one call of a composite op whose kernels its children launch: attention
/// ([`ATTENTION_OPS`]: QKᵀ and PV; causal masking halves the pairs; grouped K/V heads count
/// the query heads) and convolution, forward and backward (not transposed).
pub fn composite_flops(op: &str, input_dims: &str, concrete: &str) -> Option<f64> {
    let dims = dims_of(input_dims)?;
    let args = concrete_of(concrete);
    if let Some(&(_, q_at, causal_at, factor)) = ATTENTION_OPS.iter().find(|(n, ..)| *n == op) {
        // (…, query [B,H,L,E], key [B,Hk,S,E], value [B,Hk,S,Ev], …, is_causal, …)
        let (q, k, v) = (dims.get(q_at)?, dims.get(q_at + 1)?, dims.get(q_at + 2)?);
        if q.len() < 3 || k.len() < 3 || v.len() < 3 {
            return None;
        }
        let (l, e) = (q[q.len() - 2], q[q.len() - 1]);
        let (s, ev) = (k[k.len() - 2], v[v.len() - 1]);
        let heads = fprod(&q[..q.len() - 2]);
        // Without `Concrete Inputs` (older traces) causality is unknown: no number.
        let causal = args.get(causal_at)? == "True";
        let (l, s) = (l as f64, s as f64);
        let pairs = if causal && l == s {
            l * (l + 1.0) / 2.0
        } else if causal {
            l * s / 2.0
        } else {
            l * s
        };
        return Some(factor * 2.0 * heads * pairs * (e as f64 + ev as f64));
    }
    match op {
        "aten::convolution" => {
            // (input [N,C,*in], weight [K,C/g,*kernel], bias, stride, padding, dilation,
            //  transposed, output_padding, groups)
            let (x, w) = (dims.first()?, dims.get(1)?);
            if args.get(6).is_some_and(|t| t == "True") || x.len() < 3 || w.len() != x.len() {
                return None;
            }
            let spatial = x.len() - 2;
            // Strides and padding come from `Concrete Inputs`; older traces lack them, and a
            // guess (stride 1) would overcount a strided convolution: no number then.
            let per = |i: usize| -> Option<Vec<i64>> {
                let v = int_list(args.get(i)?)?;
                Some(if v.len() == 1 { vec![v[0]; spatial] } else { v })
            };
            let (stride, padding, dilation) = (per(3)?, per(4)?, per(5)?);
            if stride.len() != spatial || padding.len() != spatial || dilation.len() != spatial {
                return None;
            }
            let mut outputs = 1.0;
            for i in 0..spatial {
                // i128: shapes and strides are input, and must not overflow.
                let (xi, p, d, k) = (
                    i128::from(x[2 + i]),
                    i128::from(padding[i]),
                    i128::from(dilation[i]),
                    i128::from(w[2 + i]),
                );
                let o = (xi + 2 * p - d * (k - 1) - 1) / i128::from(stride[i].max(1)) + 1;
                if o <= 0 {
                    return None;
                }
                outputs *= o as f64;
            }
            let kernel = fprod(&w[1..]); // C/g · R · S
            Some(2.0 * x[0] as f64 * w[0] as f64 * outputs * kernel)
        }
        "aten::convolution_backward" => {
            // (grad_output [N,K,*out], input [N,C,*in], weight [K,C/g,*kernel], bias_sizes,
            //  stride, padding, dilation, transposed, output_padding, groups, output_mask).
            // The output size is grad_output's; each of grad_input and grad_weight costs one
            // forward, and `output_mask` says which were asked for (no mask: no number).
            let (dy, w) = (dims.first()?, dims.get(2)?);
            if args.get(7).is_some_and(|t| t == "True") || dy.len() < 3 || w.len() != dy.len() {
                return None;
            }
            let mask = args.get(10)?;
            let mask: Vec<&str> = mask
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .map(str::trim)
                .collect();
            let grads = mask.iter().take(2).filter(|m| **m == "True").count();
            let (outputs, kernel) = (fprod(&dy[2..]), fprod(&w[1..]));
            Some(grads as f64 * 2.0 * dy[0] as f64 * w[0] as f64 * outputs * kernel)
        }
        _ => None,
    }
}

/// (batch, M, K, N) of a GEMM.
pub type Mkn = (i64, i64, i64, i64);

/// (batch, M, K, N) of a GEMM op's most frequent `Input Dims`.
pub fn gemm_mkn(op: &str, shapes: &str) -> Option<Mkn> {
    let dims = dims_of(shapes)?;
    // (a, b) = the two matrix operands.
    let (a, b) = match op {
        "aten::addmm" | "aten::baddbmm" | "aten::_addmm_activation" => (dims.get(1)?, dims.get(2)?),
        _ => (dims.first()?, dims.get(1)?),
    };
    let k = *a.last()?;
    let n = *if op == "aten::linear" {
        b.first()?
    } else {
        b.last()?
    };
    // Batched ops keep their batch apart; linear/mm fold every leading dim into M.
    let batched = matches!(op, "aten::bmm" | "aten::baddbmm" | "aten::matmul") && a.len() >= 3;
    // Shapes are input: products saturate rather than overflow.
    let product = |v: &[i64]| v.iter().fold(1i64, |p, &x| p.saturating_mul(x));
    Some(if batched {
        (product(&a[..a.len() - 2]), a[a.len() - 2], k, n)
    } else {
        (1, product(&a[..a.len().saturating_sub(1)]), k, n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_model_flops_follow_flop_counter_mode() {
        // q [2,4,128,192], k [2,4,256,192], v [2,4,256,128] (MLA-like head sizes).
        let fwd = "[[2,4,128,192],[2,4,256,192],[2,4,256,128]]";
        let bwd = "[[2,4,128,128],[2,4,128,192],[2,4,256,192],[2,4,256,128]]";
        let pairs = 2.0 * 4.0 * 128.0 * 256.0;
        assert_eq!(
            attention_model_flops("aten::_scaled_dot_product_flash_attention", fwd),
            Some(2.0 * pairs * (192.0 + 128.0))
        );
        assert_eq!(
            attention_model_flops("aten::_scaled_dot_product_flash_attention_backward", bwd),
            Some(2.0 * pairs * (3.0 * 192.0 + 2.0 * 128.0))
        );
        assert_eq!(attention_model_flops("aten::mm", fwd), None);
    }

    #[test]
    fn the_device_table_loads_and_matches() {
        let devices = crate::classify::devices::load_devices(&[]).unwrap();
        let device_for = |name: &str| find_device(&devices, name);
        assert!(devices.len() >= 10);
        for d in &devices {
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
    fn grouped_gemm_flops_add_up_the_groups() {
        // A captured MoE layer (torch._grouped_mm, 4 experts, 1776 routed rows): the forward
        // and the input gradient are 2D x 3D, the weight gradient 2D x 2D.
        let fwd = gemm_flops("aten::_grouped_mm", "[[1776,512],[4,512,1408],[4],[],[]]");
        assert_eq!(fwd, Some(2.0 * 1776.0 * 512.0 * 1408.0));
        let dgrad = gemm_flops("aten::_grouped_mm", "[[1776,1408],[4,1408,512],[4],[],[]]");
        assert_eq!(dgrad, fwd);
        let wgrad = gemm_flops("aten::_grouped_mm", "[[1408,1776],[1776,512],[4],[],[]]");
        assert_eq!(wgrad, fwd);
        assert_eq!(
            gemm_flops("aten::_grouped_mm", "[[4,64,32],[4,32,16],[],[],[]]"),
            Some(2.0 * 4.0 * 64.0 * 32.0 * 16.0)
        );
        assert_eq!(
            gemm_flops("aten::_grouped_mm", "[[4,64,32],[32,16],[4],[],[]]"),
            Some(2.0 * 64.0 * 32.0 * 16.0)
        );
        assert_eq!(
            gemm_flops("aten::_grouped_mm", "[[1776,512],[4,256,1408]]"),
            None
        );
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

    #[test]
    fn sdpa_and_convolution_flops() {
        // Causal self-attention, B·H = 128, L = S = 512, E = 64: 2·128·(512·513/2)·128.
        let sdpa = composite_flops(
            "aten::scaled_dot_product_attention",
            "[[8,16,512,64],[8,16,512,64],[8,16,512,64],[],[],[],[],[]]",
            r#"["", "", "", "", "0.", "True", "", "False"]"#,
        );
        assert_eq!(sdpa, Some(2.0 * 128.0 * (512.0 * 513.0 / 2.0) * 128.0));
        let full = composite_flops(
            "aten::scaled_dot_product_attention",
            "[[8,16,512,64],[8,4,512,64],[8,4,512,64],[],[],[],[],[]]",
            r#"["", "", "", "", "0.", "False", "", "True"]"#,
        );
        assert_eq!(
            full,
            Some(2.0 * 128.0 * 512.0 * 512.0 * 128.0),
            "GQA counts query heads"
        );
        // ResNet stem: 512x3x224x224, 64x3x7x7, stride 2, padding 3 → 112x112 outputs.
        let conv = composite_flops(
            "aten::convolution",
            "[[512,3,224,224],[64,3,7,7],[],[],[],[],[],[],[]]",
            r#"["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"]"#,
        );
        assert_eq!(conv, Some(2.0 * 512.0 * 64.0 * 112.0 * 112.0 * 3.0 * 49.0));
    }

    #[test]
    fn backward_flops() {
        // The H100 training trace's efficient-attention backward: 2.5 causal forwards.
        let bwd = composite_flops(
            "aten::_scaled_dot_product_efficient_attention_backward",
            "[[4,8,256,64],[4,8,256,64],[4,8,256,64],[4,8,256,64],[],[4,8,256,64],[4,8,256],[],[],[],[],[],[]]",
            r#"["", "", "", "", "", "", "", "", "", "0.", "[True, True, True, False]", "True", ""]"#,
        );
        assert_eq!(bwd, Some(2.5 * 2.0 * 32.0 * (256.0 * 257.0 / 2.0) * 128.0));
        // ResNet-18 (MI300X) 3x3 layer: grad_input and grad_weight, each one forward.
        let dims = "[[512,512,7,7],[512,512,7,7],[512,512,3,3],[],[],[],[],[],[],[],[]]";
        let args = |mask: &str| {
            format!(
                r#"["", "", "", "[0]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "{mask}"]"#
            )
        };
        let forward = 2.0 * 512.0 * 512.0 * 49.0 * 512.0 * 9.0;
        let both = composite_flops(
            "aten::convolution_backward",
            dims,
            &args("[True, True, False]"),
        );
        assert_eq!(both, Some(2.0 * forward));
        let weight_only = composite_flops(
            "aten::convolution_backward",
            dims,
            &args("[False, True, False]"),
        );
        assert_eq!(
            weight_only,
            Some(forward),
            "the first layer needs no grad_input"
        );
        assert_eq!(
            composite_flops("aten::convolution_backward", dims, "[]"),
            None,
            "no output mask, no number"
        );
    }
}
