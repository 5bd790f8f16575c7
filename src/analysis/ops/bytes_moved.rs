//! Bytes a memory-bound op moves, from its `Input Dims`, `Input type` and `Concrete Inputs`:
//! the reads of its tensor inputs and the writes of its result, each once (the least HBM
//! traffic the op can have; a kernel re-reading from HBM moves more, one hitting the cache
//! less). With its kernels' time this is the op's achieved bandwidth (`ops[].gbps`).
//!
//! Per family (n = elements, s = bytes per element, input i):
//!
//! | family | reads | writes |
//! |---|---|---|
//! | unary (`relu`, `silu`, `exp`, `_softmax`, …) | n0·s0 | n0·s0 (`_softmax` with `half_to_float`: n0·4) |
//! | binary and ternary (`add`, `mul`, `where`, …; comparisons write bools) | every tensor input's n·s | the largest n × the widest s |
//! | in-place (`add_`, `mul_`, …) | every tensor input's n·s | n0·s0 |
//! | `copy_` (copies and casts: `to`, `contiguous`, `clone` call it) | n1·s1 | n0·s0 |
//! | `fill_`, `zero_` | 0 | n0·s0 |
//! | `native_layer_norm` | x, weight, bias | y, and mean and rstd (fp32 per row) |
//! | `_fused_rms_norm` | x, weight | y, rstd (fp32 per row) |
//! | vLLM `_C::rms_norm` [out, x, w] | x, w | out |
//! | vLLM `_C::fused_add_rms_norm` [x, residual, w] | 2 x, w | 2 x |
//! | `_softmax_backward_data` [grad, out] | 2 n·s | n·s |
//! | activation backwards (`silu_backward`, …) | the gradient and the input | n0·s0 |
//! | reductions (`sum`, `mean`, `amax`, `argmax`, …) | n0·s0 | the result's elements (from `dim`, `keepdim`) × s0 (8 for `argmax`/`argmin`) |
//! | `cumsum` | n0·s0 | n0·s0 |
//! | `index_select` on dim 0 (`embedding` calls it) [table, dim, index] | index·8 + rows·row bytes | rows·row bytes |
//!
//! Scalars (empty dims) move nothing. `cat` takes a `TensorList`, whose element type the
//! profiler does not record: it gets no bytes.

use crate::analysis::ops::efficiency::dims_of;

/// Bytes per element of a profiler `Input type`, or None for a scalar or an unknown type.
pub fn elem_bytes(t: &str) -> Option<u32> {
    Some(match t {
        "c10::BFloat16" | "c10::Half" | "short int" | "short" => 2,
        "float" | "int" | "unsigned int" | "c10::complex<c10::Half>" => 4,
        "double" | "long int" | "long" | "c10::complex<float>" => 8,
        "bool" | "unsigned char" | "signed char" => 1,
        t if t.starts_with("c10::Float8") => 1,
        _ => return None,
    })
}

/// The tensor inputs' element types of an `Input type` list, short (`bf16,fp32`; scalars,
/// with empty dims, left out): what tells a cast from a copy of the same shape.
pub fn short_types(raw_types: &str, raw_dims: &str) -> String {
    let dims = dims_of(raw_dims).unwrap_or_default();
    strings(raw_types)
        .iter()
        .enumerate()
        .filter(|(i, _)| dims.get(*i).is_none_or(|d| !d.is_empty()))
        .filter_map(|(_, t)| {
            Some(match t.as_str() {
                "c10::BFloat16" => "bf16",
                "c10::Half" => "fp16",
                "float" => "fp32",
                "double" => "fp64",
                "long int" => "i64",
                "int" => "i32",
                "bool" => "bool",
                t if t.starts_with("c10::Float8") => "fp8",
                t if elem_bytes(t).is_some() => t,
                _ => return None,
            })
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The ops whose result is their first input's shape and type.
const UNARY: &[&str] = &[
    "abs",
    "acos",
    "asin",
    "atan",
    "ceil",
    "clamp",
    "clamp_min",
    "clamp_max",
    "cos",
    "cosh",
    "elu",
    "erf",
    "exp",
    "expm1",
    "floor",
    "gelu",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "leaky_relu",
    "log",
    "log1p",
    "log2",
    "logit",
    "mish",
    "neg",
    "reciprocal",
    "relu",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "sinh",
    "softplus",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "trunc",
    "nan_to_num",
    "dropout",
    "native_dropout",
    "_softmax",
    "_log_softmax",
    "cumsum",
    "cumprod",
    "tril",
    "triu",
    "masked_fill",
];

/// Element-wise ops of several tensors, broadcasting.
const BINARY: &[&str] = &[
    "add",
    "sub",
    "rsub",
    "mul",
    "div",
    "pow",
    "maximum",
    "minimum",
    "where",
    "remainder",
    "fmod",
    "addcmul",
    "addcdiv",
    "lerp",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "logical_and",
    "logical_or",
    "logical_not",
    "atan2",
    "hypot",
    "copysign",
    "_log_softmax_backward_data",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "isnan",
    "isinf",
    // Activation backwards read the gradient and the input (or output).
    "gelu_backward",
    "silu_backward",
    "threshold_backward",
    "sigmoid_backward",
    "tanh_backward",
];

/// Comparisons write bools.
const COMPARISONS: &[&str] = &["eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf"];

const REDUCTIONS: &[&str] = &[
    "sum",
    "mean",
    "amax",
    "amin",
    "max",
    "min",
    "argmax",
    "argmin",
    "prod",
    "any",
    "all",
    "logsumexp",
    "var",
    "std",
    "var_mean",
    "std_mean",
    "linalg_vector_norm",
    "norm",
];

/// Reductions whose `dim` is their third argument (the second is the norm's order).
const DIM_THIRD: &[&str] = &["linalg_vector_norm", "norm"];

/// The op's base name: `aten::mul_` → (`mul`, in place).
fn base(op: &str) -> Option<(&str, bool)> {
    let name = op.strip_prefix("aten::")?;
    Some(match name.strip_suffix('_') {
        // `_softmax` and friends start with an underscore; only a trailing one means in place.
        Some(b) if !b.is_empty() => (b, true),
        _ => (name, false),
    })
}

/// The JSON list of a profiler arg (`Input type`, `Concrete Inputs`) as strings.
fn strings(raw: &str) -> Vec<String> {
    serde_json::from_str::<Vec<serde_json::Value>>(raw)
        .map(|v| {
            v.into_iter()
                .map(|x| match x {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn numel(dims: &[i64]) -> f64 {
    dims.iter().map(|&d| d.max(0) as f64).product()
}

/// One input: its elements and bytes per element; None for a scalar or unknown type.
fn tensor(dims: &[Vec<i64>], types: &[String], i: usize) -> Option<(f64, f64)> {
    let d = dims.get(i)?;
    if d.is_empty() {
        return None;
    }
    let s = elem_bytes(types.get(i)?)?;
    Some((numel(d), f64::from(s)))
}

/// The elements of a reduction's result: `dim` (a list, or one index, at `dim_at` among the
/// concrete inputs); no `dim` reduces everything.
fn reduced_numel(shape: &[i64], concrete: &[String], dim_at: usize) -> f64 {
    let rank = shape.len() as i64;
    let dims: Vec<i64> = match concrete.get(dim_at).map(|s| s.trim()) {
        Some(s) if s.starts_with('[') => s
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .filter_map(|x| x.trim().parse().ok())
            .collect(),
        Some(s) => s.parse().ok().into_iter().collect(),
        None => Vec::new(),
    };
    if dims.is_empty() {
        return 1.0;
    }
    let norm = |d: i64| if d < 0 { d + rank } else { d };
    shape
        .iter()
        .enumerate()
        .filter(|(i, _)| !dims.iter().any(|&d| norm(d) == *i as i64))
        .map(|(_, &d)| d.max(0) as f64)
        .product()
}

/// Inductor's pointwise, reduction and persistent-reduction kernels, whose launcher op bears the
/// kernel's name (`triton_poi_fused_mul_silu_1`): memory-bound by construction.
pub fn is_inductor_memory_kernel(op: &str) -> bool {
    ["triton_poi_", "triton_red_", "triton_per_"]
        .iter()
        .any(|p| op.starts_with(p))
}

/// Whether `op` is one whose bytes may be known (before looking at its shapes).
pub fn is_memory_op(op: &str) -> bool {
    is_inductor_memory_kernel(op)
        || matches!(
            op,
            "aten::native_layer_norm"
                | "aten::_fused_rms_norm"
                | "_C::rms_norm"
                | "vllm::rms_norm"
                | "_C::fused_add_rms_norm"
                | "vllm::fused_add_rms_norm"
                | "aten::_softmax_backward_data"
                | "aten::copy_"
                | "aten::fill_"
                | "aten::zero_"
                | "aten::index_select"
        )
        || base(op).is_some_and(|(name, in_place)| {
            UNARY.contains(&name)
                || BINARY.contains(&name)
                || (REDUCTIONS.contains(&name) && !in_place)
        })
}

/// Bytes one call of `op` moves (reads + writes), or None when the op is not a memory-bound
/// one this model knows, or its shapes or types do not say.
pub fn op_bytes(op: &str, input_dims: &str, input_types: &str, concrete: &str) -> Option<f64> {
    let dims = dims_of(input_dims)?;
    let types = strings(input_types);
    let concrete = strings(concrete);
    let t = |i: usize| tensor(&dims, &types, i);
    let rows = |d: &[i64]| numel(&d[..d.len().saturating_sub(1)]);
    let out = match op {
        "aten::native_layer_norm" => {
            let (n, s) = t(0)?;
            let w = t(2).map_or(0.0, |(n, s)| n * s);
            let b = t(3).map_or(0.0, |(n, s)| n * s);
            n * s + w + b + n * s + 8.0 * rows(&dims[0])
        }
        "aten::_fused_rms_norm" => {
            let (n, s) = t(0)?;
            let w = t(2).map_or(0.0, |(n, s)| n * s);
            n * s + w + n * s + 4.0 * rows(&dims[0])
        }
        "_C::rms_norm" | "vllm::rms_norm" => {
            let (n, s) = t(1)?;
            let w = t(2).map_or(0.0, |(n, s)| n * s);
            n * s + w + n * s
        }
        "_C::fused_add_rms_norm" | "vllm::fused_add_rms_norm" => {
            let (n, s) = t(0)?;
            let w = t(2).map_or(0.0, |(n, s)| n * s);
            4.0 * n * s + w
        }
        "aten::_softmax_backward_data" => {
            let (n, s) = t(0)?;
            3.0 * n * s
        }
        "aten::copy_" => {
            let (n0, s0) = t(0)?;
            let (n1, s1) = t(1)?;
            n1 * s1 + n0 * s0
        }
        "aten::fill_" | "aten::zero_" => {
            let (n, s) = t(0)?;
            n * s
        }
        "aten::index_select" => {
            let table = dims.first()?;
            let (_, s) = t(0)?;
            let (idx, _) = t(2)?;
            if table.len() != 2 || concrete.get(1).map(|c| c.trim()) != Some("0") {
                return None;
            }
            let row = table[1] as f64 * s;
            idx * 8.0 + 2.0 * idx * row
        }
        _ => {
            let (name, in_place) = base(op)?;
            if UNARY.contains(&name) {
                let (n, s) = t(0)?;
                let half_to_float = matches!(name, "_softmax" | "_log_softmax")
                    && concrete.get(2).is_some_and(|c| c.trim() == "True");
                n * s + n * if half_to_float { 4.0 } else { s }
            } else if BINARY.contains(&name) {
                let inputs: Vec<(f64, f64)> = (0..dims.len()).filter_map(t).collect();
                if inputs.is_empty() {
                    return None;
                }
                let reads: f64 = inputs.iter().map(|(n, s)| n * s).sum();
                let writes = if in_place {
                    let (n, s) = t(0)?;
                    n * s
                } else {
                    let n = inputs.iter().map(|x| x.0).fold(0.0, f64::max);
                    let s = if COMPARISONS.contains(&name) {
                        1.0
                    } else {
                        inputs.iter().map(|x| x.1).fold(0.0, f64::max)
                    };
                    n * s
                };
                reads + writes
            } else if matches!(name, "max" | "min") && t(1).is_some() {
                // `max(a, b)` of two tensors: elementwise.
                let (n0, s0) = t(0)?;
                let (n1, s1) = t(1)?;
                n0 * s0 + n1 * s1 + n0.max(n1) * s0.max(s1)
            } else if REDUCTIONS.contains(&name) && !in_place {
                let (n, s) = t(0)?;
                let out_s = if matches!(name, "argmax" | "argmin") {
                    8.0
                } else {
                    s
                };
                let dim_at = if DIM_THIRD.contains(&name) { 2 } else { 1 };
                n * s + reduced_numel(&dims[0], &concrete, dim_at) * out_s
            } else {
                return None;
            }
        }
    };
    (out.is_finite() && out > 0.0).then_some(out)
}

/// Bytes a layout-sensitive, memory-bound op (batch norm, pooling, depthwise convolution) moves
/// on a 4-d activation: its first input read and its result written (forward), or the gradient
/// and the input read and the input's gradient written (backward); a batch norm in training
/// reads its inputs twice (once for the statistics or the reductions, once to apply them), so
/// 3 and 5 activations instead of 2 and 3. None for other ops or where the shapes do not say. What such an op costs once its layout lets the
/// kernel stream memory (channels_last): these bytes at the HBM rate.
pub fn layout_op_bytes(op: &str, input_dims: &str, input_types: &str) -> Option<f64> {
    let name = op.strip_prefix("aten::").unwrap_or(op);
    let family = [
        "batch_norm",
        "pool2d",
        "pool3d",
        "conv_depthwise",
        "convolution",
    ]
    .iter()
    .any(|f| name.contains(f));
    if !family {
        return None;
    }
    let x = activation_bytes(input_dims, input_types)?;
    let passes = match (name.contains("batch_norm"), name.contains("backward")) {
        (true, true) => 5.0,
        (true, false) => 3.0,
        (false, true) => 3.0,
        (false, false) => 2.0,
    };
    Some(passes * x)
}

/// The bytes of an op's first input where it is a 4-d activation (N, C, H, W), else None.
pub fn activation_bytes(input_dims: &str, input_types: &str) -> Option<f64> {
    let dims = dims_of(input_dims)?;
    let types = strings(input_types);
    if dims.first()?.len() != 4 {
        return None;
    }
    let (n, s) = tensor(&dims, &types, 0)?;
    Some(n * s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(op: &str, dims: &str, types: &str, concrete: &str) -> Option<f64> {
        op_bytes(op, dims, types, concrete)
    }

    const X: f64 = 8.0 * 16.0 * 512.0 * 512.0;

    #[test]
    fn unary_and_softmax() {
        // softmax of a bf16 [8,16,512,512]: 64 MiB read, 64 MiB written.
        let got = b(
            "aten::_softmax",
            "[[8,16,512,512],[],[]]",
            r#"["c10::BFloat16","Scalar","Scalar"]"#,
            r#"["","-1","False"]"#,
        );
        assert_eq!(got, Some(X * 4.0));
        // half_to_float writes fp32.
        let got = b(
            "aten::_softmax",
            "[[8,16,512,512],[],[]]",
            r#"["c10::BFloat16","Scalar","Scalar"]"#,
            r#"["","-1","True"]"#,
        );
        assert_eq!(got, Some(X * 2.0 + X * 4.0));
        assert_eq!(
            b(
                "aten::silu",
                "[[8,512,4096]]",
                r#"["c10::BFloat16"]"#,
                r#"[""]"#
            ),
            Some(8.0 * 512.0 * 4096.0 * 4.0)
        );
    }

    #[test]
    fn binary_broadcast_scalar_and_in_place() {
        // x * 2: the scalar moves nothing.
        assert_eq!(
            b(
                "aten::mul",
                "[[8,16,512,512],[]]",
                r#"["c10::BFloat16","long int"]"#,
                "[]"
            ),
            Some(X * 4.0)
        );
        // x + y: two reads, one write.
        assert_eq!(
            b(
                "aten::add",
                "[[8,16,512,512],[8,16,512,512],[]]",
                r#"["c10::BFloat16","c10::BFloat16","Scalar"]"#,
                "[]"
            ),
            Some(X * 6.0)
        );
        // A broadcast operand is read once: [8,8,1,64] * [1,1,1,64].
        assert_eq!(
            b(
                "aten::mul",
                "[[8,8,1,64],[1,1,1,64]]",
                r#"["c10::BFloat16","c10::BFloat16"]"#,
                "[]"
            ),
            Some((4096.0 + 64.0) * 2.0 + 4096.0 * 2.0)
        );
        // In place writes its first input.
        assert_eq!(
            b(
                "aten::add_",
                "[[1024],[1024],[]]",
                r#"["float","c10::BFloat16","Scalar"]"#,
                "[]"
            ),
            Some(1024.0 * 4.0 + 1024.0 * 2.0 + 1024.0 * 4.0)
        );
        // A comparison writes bools.
        assert_eq!(
            b(
                "aten::eq",
                "[[1024],[1024]]",
                r#"["long int","long int"]"#,
                "[]"
            ),
            Some(1024.0 * 16.0 + 1024.0)
        );
    }

    #[test]
    fn copies_casts_fills() {
        // bf16 -> fp32 cast: copy_ [dst fp32, src bf16].
        assert_eq!(
            b(
                "aten::copy_",
                "[[8,16,512,512],[8,16,512,512],[]]",
                r#"["float","c10::BFloat16","Scalar"]"#,
                r#"["","","False"]"#
            ),
            Some(X * 2.0 + X * 4.0)
        );
        assert_eq!(
            b(
                "aten::fill_",
                "[[67108864],[]]",
                r#"["float","Scalar"]"#,
                r#"["","0"]"#
            ),
            Some(67108864.0 * 4.0)
        );
    }

    #[test]
    fn norms() {
        // layer_norm over [8,512,1024] bf16 with bf16 weight and bias: x, w, b read; y written,
        // with fp32 mean and rstd per row.
        let rows = 8.0 * 512.0;
        assert_eq!(
            b(
                "aten::native_layer_norm",
                "[[8,512,1024],[],[1024],[1024],[]]",
                r#"["c10::BFloat16","ScalarList","c10::BFloat16","c10::BFloat16","Scalar"]"#,
                "[]"
            ),
            Some(rows * 1024.0 * 2.0 * 2.0 + 2.0 * 1024.0 * 2.0 + rows * 8.0)
        );
        assert_eq!(
            b(
                "_C::fused_add_rms_norm",
                "[[32,4096],[32,4096],[4096],[]]",
                r#"["c10::BFloat16","c10::BFloat16","c10::BFloat16","Scalar"]"#,
                "[]"
            ),
            Some(4.0 * 32.0 * 4096.0 * 2.0 + 4096.0 * 2.0)
        );
    }

    #[test]
    fn reductions_write_their_result() {
        // sum over the last dim of [8,16,512,512] bf16: reads 64 MiB, writes [8,16,512].
        assert_eq!(
            b(
                "aten::sum",
                "[[8,16,512,512],[],[],[]]",
                r#"["c10::BFloat16","ScalarList","Scalar",""]"#,
                r#"["","[-1]","False",""]"#
            ),
            Some(X * 2.0 + 65536.0 * 2.0)
        );
        // argmax writes int64 indices: [8,32000] over dim -1 -> 8.
        assert_eq!(
            b(
                "aten::argmax",
                "[[8,32000],[],[]]",
                r#"["c10::BFloat16","Scalar","Scalar"]"#,
                r#"["","-1","False"]"#
            ),
            Some(8.0 * 32000.0 * 2.0 + 8.0 * 8.0)
        );
    }

    #[test]
    fn backward_and_overloads() {
        // silu_backward reads the gradient and the input, writes the input's gradient.
        assert_eq!(
            b(
                "aten::silu_backward",
                "[[1024],[1024]]",
                r#"["c10::BFloat16","c10::BFloat16"]"#,
                "[]"
            ),
            Some(1024.0 * 2.0 * 3.0)
        );
        // A vector norm's second argument is its order: dim is the third.
        assert_eq!(
            b(
                "aten::linalg_vector_norm",
                "[[8,1024],[],[],[],[]]",
                r#"["float","Scalar","ScalarList","Scalar",""]"#,
                r#"["","2","[-1]","False",""]"#
            ),
            Some(8.0 * 1024.0 * 4.0 + 8.0 * 4.0)
        );
        // max of two tensors is elementwise.
        assert_eq!(
            b("aten::max", "[[1024],[1024]]", r#"["float","float"]"#, "[]"),
            Some(1024.0 * 4.0 * 3.0)
        );
    }

    #[test]
    fn gathers_and_unknowns() {
        // embedding's index_select: 4 tokens of a [32000, 512] bf16 table.
        assert_eq!(
            b(
                "aten::index_select",
                "[[32000,512],[],[4]]",
                r#"["c10::BFloat16","Scalar","long int"]"#,
                r#"["","0",""]"#
            ),
            Some(4.0 * 8.0 + 2.0 * 4.0 * 512.0 * 2.0)
        );
        // cat's TensorList has no element type; GEMMs and views are not memory ops here.
        assert_eq!(
            b(
                "aten::cat",
                "[[[8,512],[8,512]],[]]",
                r#"["TensorList","Scalar"]"#,
                "[]"
            ),
            None
        );
        assert_eq!(
            b(
                "aten::mm",
                "[[8,512],[512,512]]",
                r#"["c10::BFloat16","c10::BFloat16"]"#,
                "[]"
            ),
            None
        );
        assert_eq!(elem_bytes("Scalar"), None);
        assert_eq!(elem_bytes("c10::Float8_e4m3fn"), Some(1));
    }

    #[test]
    fn layout_ops_move_their_activation_once_per_pass() {
        let dims = "[[64, 96, 56, 56], [96], [96]]";
        let types = "[\"float\", \"float\", \"float\"]";
        let n = 64.0 * 96.0 * 56.0 * 56.0 * 4.0;
        assert_eq!(
            layout_op_bytes("aten::cudnn_batch_norm", dims, types),
            Some(3.0 * n)
        );
        assert_eq!(
            layout_op_bytes("aten::cudnn_batch_norm_backward", dims, types),
            Some(5.0 * n)
        );
        assert_eq!(
            layout_op_bytes("aten::max_pool2d_with_indices_backward", dims, types),
            Some(3.0 * n)
        );
        // Not a layout-sensitive op, or not a 4-d activation.
        assert_eq!(layout_op_bytes("aten::add", dims, types), None);
        assert_eq!(
            layout_op_bytes("aten::native_batch_norm", "[[64, 96]]", "[\"float\"]"),
            None
        );
    }
}
