//! How close GEMM ops run to the device's peak: FLOPs from an op's `Input Dims`, its data type
//! from `Input type`, and the peak of the device it ran on from `rules/devices.toml` (datasheet
//! figures, matched on the trace's device name or arch).

pub(crate) use super::attention_flops::iteration_attention_flops;
pub use super::attention_flops::{
    attention_bytes, attention_is_decode, attention_model_flops, flex_attention_factor,
    is_attention_op, is_iteration_attention, IterationTokens,
};
pub use super::shapes::dims_of;
use super::shapes::{concrete_of, fprod, int_list};
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
        // e8m0 is a scale type (MX block scales), never an operand's.
        t if t.starts_with("c10::Float8_e8m0") => return None,
        t if t.starts_with("c10::Float8") => Dtype::Fp8,
        t if t.starts_with("c10::Float6") => Dtype::Fp6,
        t if t.starts_with("c10::Float4") => Dtype::Fp4,
        _ => return None,
    })
}

/// FLOPs of one call of a GEMM op from its `Input Dims` (a multiply-add counts 2), or None for
/// another op or shapes that do not fit. Scaled GEMMs of packed FP4 (`float4_e2m1fn_x2`: two
/// values a byte, so K is twice the recorded size) are doubled by [`packed_k_factor`].
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
        // `_scaled_mm(self [M, K], mat2 [K, N], scale_a, scale_b, …)`: FP8 / MX GEMMs.
        "aten::mm" | "aten::bmm" | "aten::matmul" | "aten::_scaled_mm" => {
            mm(dims.first()?, dims.get(1)?)
        }
        "aten::addmm" | "aten::addmm_" | "aten::baddbmm" | "aten::_addmm_activation" => {
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

/// How many values one recorded element of a scaled GEMM's operands holds: 2 for torch's
/// packed FP4 (`c10::Float4_e2m1fn_x2`), 1 otherwise.
pub fn packed_k_factor(input_types: &str) -> f64 {
    if input_types.contains("Float4_e2m1fn_x2") {
        2.0
    } else {
        1.0
    }
}

/// Bytes a GEMM call moves at least once: both operands read, the result written.
pub fn gemm_bytes(op: &str, input_dims: &str, dtype: Dtype) -> Option<f64> {
    let dims = dims_of(input_dims)?;
    let (a, b) = match op {
        "aten::addmm" | "aten::addmm_" | "aten::baddbmm" | "aten::_addmm_activation" => {
            (dims.get(1)?, dims.get(2)?)
        }
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
    // Recorded sizes are storage elements: packed FP4 stores two values in one, so its bytes
    // are the recorded count at one byte each.
    let bytes = if dtype == Dtype::Fp4 {
        1.0
    } else {
        dtype.bits() as f64 / 8.0
    };
    Some(bytes * (rows * k as f64 + weights + rows * n as f64))
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
    ) || super::attention_flops::is_forward_attention(op)
}

/// Ops [`composite_flops`] knows.
pub fn is_composite(op: &str) -> bool {
    matches!(
        op,
        "aten::convolution" | "aten::convolution_backward" | "torchvision::deform_conv2d"
    ) || is_attention_op(op)
}

/// A convolution's output size along one dimension, or None when nothing is left. In i128:
/// shapes and strides are input, and must not overflow.
fn conv_output(input: i64, kernel: i64, stride: i64, padding: i64, dilation: i64) -> Option<f64> {
    let (x, k, p, d) = (
        i128::from(input),
        i128::from(kernel),
        i128::from(padding),
        i128::from(dilation),
    );
    let o = (x + 2 * p - d * (k - 1) - 1) / i128::from(stride.max(1)) + 1;
    (o > 0).then_some(o as f64)
}

/// FLOPs of one call of a composite op whose kernels its children launch: attention
/// (`attention_flops`: QKᵀ and PV; causal masking halves the pairs; grouped K/V heads count
/// the query heads; flex attention dense, its block mask unknown) and convolution, forward
/// (transposed too) and backward (not transposed).
pub fn composite_flops(op: &str, input_dims: &str, concrete: &str) -> Option<f64> {
    let dims = dims_of(input_dims)?;
    let args = concrete_of(concrete);
    if is_attention_op(op) {
        return super::attention_flops::executed_flops(op, &dims, &args);
    }
    match op {
        "aten::convolution" => {
            // (input [N,C,*in], weight [K,C/g,*kernel], bias, stride, padding, dilation,
            //  transposed, output_padding, groups)
            let (x, w) = (dims.first()?, dims.get(1)?);
            if x.len() < 3 || w.len() != x.len() {
                return None;
            }
            if args.get(6).is_some_and(|t| t == "True") {
                // Transposed (weight [C_in, C_out/g, *kernel]): every input pixel meets the
                // whole kernel, as FlopCounterMode counts it.
                return Some(2.0 * x[0] as f64 * w[0] as f64 * fprod(&x[2..]) * fprod(&w[1..]));
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
                outputs *= conv_output(x[2 + i], w[2 + i], stride[i], padding[i], dilation[i])?;
            }
            let kernel = fprod(&w[1..]); // C/g · R · S
            Some(2.0 * x[0] as f64 * w[0] as f64 * outputs * kernel)
        }
        "torchvision::deform_conv2d" => {
            // (input [N,C,H,W], weight [K,C/g,kh,kw], offset, mask, bias, stride_h, stride_w,
            //  pad_h, pad_w, dilation_h, dilation_w, groups, offset_groups, use_mask): the GEMM
            // over its sampled columns, as a convolution of the same shapes counts.
            let (x, w) = (dims.first()?, dims.get(1)?);
            if x.len() != 4 || w.len() != 4 {
                return None;
            }
            let int = |i: usize| -> Option<i64> { args.get(i)?.parse().ok() };
            let mut outputs = 1.0;
            for (i, (stride, pad, dil)) in [(5, 7, 9), (6, 8, 10)].into_iter().enumerate() {
                outputs *= conv_output(x[2 + i], w[2 + i], int(stride)?, int(pad)?, int(dil)?)?;
            }
            Some(2.0 * x[0] as f64 * w[0] as f64 * outputs * fprod(&w[1..]))
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
        "aten::addmm" | "aten::addmm_" | "aten::baddbmm" | "aten::_addmm_activation" => {
            (dims.get(1)?, dims.get(2)?)
        }
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
    fn mx_and_fp4_peaks_where_devices_have_them() {
        // No GPU here runs FP4 or FP6: the table's entries are checked as data.
        let devices = crate::classify::devices::load_devices(&[]).unwrap();
        let d = |name: &str| find_device(&devices, name).unwrap();
        for name in ["AMD Instinct MI355X", "AMD Instinct MI350X"] {
            let p = d(name);
            assert_eq!(p.fp4, p.fp6, "{name}: MXFP4 and MXFP6 run at one rate");
            assert_eq!(
                p.fp4,
                p.fp8.map(|f| (2.0 * f * 10.0).round() / 10.0),
                "{name}"
            );
            assert_eq!(p.tf32, None, "{name}: CDNA 4 has no TF32");
            assert_eq!(p.peak_tflops(Dtype::Fp4), p.fp4);
        }
        assert_eq!(d("gfx950").tf32, None);
        assert_eq!(d("NVIDIA B200").fp4, Some(9000.0));
        assert_eq!(d("NVIDIA B200").fp6, None);
        for name in [
            "NVIDIA H100 80GB HBM3",
            "NVIDIA H200",
            "AMD Instinct MI300X",
            "gfx942",
        ] {
            assert_eq!((d(name).fp4, d(name).fp6), (None, None), "{name}");
        }
        assert_eq!(Dtype::Fp4.bits(), 4);
        assert_eq!(Dtype::Fp6.bytes(), 1);
    }

    #[test]
    fn scaled_gemms_take_their_operands_type() {
        // The captured FP8 MLP: e4m3 operands, fp32 scales (tensorwise, then rowwise).
        let dims = "[[8192,4096],[4096,14336],[],[],[],[],[],[]]";
        let types = r#"["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float", "", "", "Scalar", "Scalar"]"#;
        assert_eq!(
            gemm_flops("aten::_scaled_mm", dims),
            Some(2.0 * 8192.0 * 4096.0 * 14336.0)
        );
        assert_eq!(dtype_of(types), Some(Dtype::Fp8));
        assert_eq!(packed_k_factor(types), 1.0);
        // MXFP4: packed e2m1 (two values a byte: K = 2 x 2048) with e8m0 block scales.
        let types = r#"["c10::Float4_e2m1fn_x2", "c10::Float4_e2m1fn_x2", "c10::Float8_e8m0fnu", "c10::Float8_e8m0fnu"]"#;
        assert_eq!(dtype_of(types), Some(Dtype::Fp4));
        assert_eq!(packed_k_factor(types), 2.0);
        // A scale type never names the operands' type.
        assert_eq!(dtype_of(r#"["", "c10::Float8_e8m0fnu"]"#), None);
        assert_eq!(
            gemm_flops("aten::addmm_", "[[64,4096],[64,576],[576,4096]]"),
            Some(2.0 * 64.0 * 576.0 * 4096.0)
        );
    }

    #[test]
    fn attention_packages_and_flex_attention() {
        // flash_attn and aiter take [B, S, H, D]: B·H = 2·8, L = S = 1024, D = 128.
        let bshd = "[[2,1024,8,128],[2,1024,2,128],[2,1024,2,128],[],[],[]]";
        let dense = 2.0 * 16.0 * 1024.0 * 1024.0 * 256.0;
        for op in [
            "flash_attn::_flash_attn_forward",
            "aiter::mha_fwd",
            "aiter::fmha_v3_fwd",
        ] {
            assert_eq!(attention_model_flops(op, bshd), Some(dense), "{op}");
            let causal = composite_flops(op, bshd, r#"["", "", "", "0.", "0.088", "True"]"#);
            assert_eq!(causal, Some(dense / 1024.0 * 1025.0 / 2.0), "{op}");
        }
        let bwd = "[[2,1024,8,128],[2,1024,8,128],[2,1024,2,128],[2,1024,2,128]]";
        assert_eq!(
            attention_model_flops("flash_attn::_flash_attn_backward", bwd),
            Some(2.5 * dense)
        );
        assert!(is_attention_op("aiter::mha_bwd"));
        // Variable-length forms pack sequences of unrecorded lengths: no number.
        assert_eq!(
            attention_model_flops("flash_attn::_flash_attn_varlen_forward", bshd),
            None
        );
        // The captured flex attention templates: q, k, v [4, 16, 4096, 64] first.
        let flex = "[[4,16,4096,64],[4,16,4096,64],[4,16,4096,64],[4,16,4096],[4,16,4096]]";
        let fwd = 2.0 * 64.0 * 4096.0 * 4096.0 * 128.0;
        assert_eq!(
            attention_model_flops("triton_tem_fused_flex_attention_0", flex),
            Some(fwd)
        );
        assert_eq!(
            composite_flops("triton_tem_fused_flex_attention_backward_1", flex, "[]"),
            Some(2.5 * fwd)
        );
        assert_eq!(
            flex_attention_factor("triton_per_fused_flex_attention_backward_0"),
            None
        );
        assert_eq!(flex_attention_factor("triton_tem_fused_mm_0"), None);
        assert!(attention_is_decode(
            "aten::_scaled_dot_product_cudnn_attention",
            "[[8,16,1,128],[8,4,520,128],[8,4,520,128]]"
        ));
        assert!(!attention_is_decode(
            "aten::_scaled_dot_product_cudnn_attention",
            flex
        ));
    }

    #[test]
    fn transposed_and_deformable_convolutions() {
        // Mask R-CNN's mask head: ConvTranspose2d 256 -> 256, 2x2, stride 2 on 14x14.
        let t = composite_flops(
            "aten::convolution",
            "[[200,256,14,14],[256,256,2,2],[256],[],[],[],[],[],[]]",
            r#"["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"]"#,
        );
        assert_eq!(t, Some(2.0 * 200.0 * 256.0 * 196.0 * 256.0 * 4.0));
        let d = composite_flops(
            "torchvision::deform_conv2d",
            "[[4,64,64,64],[64,64,3,3],[4,18,64,64],[4,1],[64],[],[],[],[],[],[],[],[],[]]",
            r#"["", "", "", "", "", "1", "1", "1", "1", "1", "1", "1", "1", "False"]"#,
        );
        assert_eq!(d, Some(2.0 * 4.0 * 64.0 * 4096.0 * 64.0 * 9.0));
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
