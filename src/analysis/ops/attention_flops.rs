//! Attention FLOPs from the recorded shapes: SDPA and its backends, the FlashAttention package,
//! aiter's CK attention and Inductor's flex attention templates, as FlopCounterMode counts them
//! for MFU, and as the kernels execute them (a causal mask's half) for an op's achieved rate.

use super::shapes::{dims_of, fprod};
use crate::classify::devices::Dtype;

/// An attention op whose FLOPs its shapes give.
#[derive(Clone, Copy)]
struct AttentionOp {
    name: &'static str,
    /// Index of the query among the inputs (key and value follow it).
    q_at: usize,
    /// Index of `is_causal` among the `Concrete Inputs`.
    causal_at: usize,
    /// FLOPs as a multiple of the forward's.
    factor: f64,
    /// `[B, S, H, D]` tensors (FlashAttention, aiter) rather than SDPA's `[B, H, S, D]`.
    seq_major: bool,
}

const fn op(name: &'static str, q_at: usize, causal_at: usize, factor: f64) -> AttentionOp {
    AttentionOp {
        name,
        q_at,
        causal_at,
        factor,
        seq_major: false,
    }
}

const fn seq_major(name: &'static str, q_at: usize, causal_at: usize, factor: f64) -> AttentionOp {
    AttentionOp {
        seq_major: true,
        ..op(name, q_at, causal_at, factor)
    }
}

/// The attention ops whose FLOPs their shapes give. Compiled code calls the
/// `_scaled_dot_product_*` ops without the public one around them, so both are listed; the
/// FlashAttention package (`flash_attn::*`) and aiter's CK attention (`aiter::mha_*`,
/// `aiter::fmha_v3_*`) take `[B, S, H, D]`. Their variable-length forms pack sequences whose
/// lengths the trace does not record (`cu_seqlens` values): not counted. Backward counts 2.5
/// forwards (dV, dP, dQ, dK and the recomputed scores: five matmuls to the forward's two), the
/// convention of FlashAttention's own benchmarks.
const ATTENTION_OPS: &[AttentionOp] = &[
    op("aten::scaled_dot_product_attention", 0, 5, 1.0),
    op("aten::_scaled_dot_product_flash_attention", 0, 4, 1.0),
    op("aten::_scaled_dot_product_efficient_attention", 0, 6, 1.0),
    op("aten::_scaled_dot_product_cudnn_attention", 0, 6, 1.0),
    op(
        "aten::_scaled_dot_product_flash_attention_backward",
        1,
        11,
        2.5,
    ),
    op(
        "aten::_scaled_dot_product_efficient_attention_backward",
        1,
        11,
        2.5,
    ),
    op(
        "aten::_scaled_dot_product_cudnn_attention_backward",
        1,
        14,
        2.5,
    ),
    // flash_attn 2: _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, …),
    // _flash_attn_backward(dout, q, k, v, out, softmax_lse, dq, dk, dv, dropout_p,
    // softmax_scale, causal, …).
    seq_major("flash_attn::_flash_attn_forward", 0, 5, 1.0),
    seq_major("flash_attn::_flash_attn_backward", 1, 11, 2.5),
    // aiter: mha_fwd(q, k, v, dropout_p, softmax_scale, is_causal, …), mha_bwd(dout, q, k, v,
    // out, softmax_lse, dropout_p, softmax_scale, is_causal, …); fmha_v3_* (the asm kernels)
    // take the same leading arguments.
    seq_major("aiter::mha_fwd", 0, 5, 1.0),
    seq_major("aiter::fmha_v3_fwd", 0, 5, 1.0),
    seq_major("aiter::mha_bwd", 1, 8, 2.5),
    seq_major("aiter::fmha_v3_bwd", 1, 8, 2.5),
];

fn attention_op(name: &str) -> Option<&'static AttentionOp> {
    ATTENTION_OPS.iter().find(|a| a.name == name)
}

/// Attention ops whose FLOPs [`super::efficiency::composite_flops`] computes
/// (`aten::_scaled_dot_product_*`, …).
pub fn is_attention_op(op: &str) -> bool {
    attention_op(op).is_some() || flex_attention_factor(op).is_some()
}

/// Inductor's flex attention templates (`torch.compile`d `flex_attention`): the kernel's own
/// launcher op records q, k and v `[B, H, L, E]` first. Its FLOPs as a multiple of the
/// forward's (2.5 for backward), or None for another op. The block mask's density is not in the
/// trace: the count is dense unless the user gives it.
pub fn flex_attention_factor(op: &str) -> Option<f64> {
    if !op.starts_with("triton_tem_")
        || !(op.contains("flex_attention") || op.contains("flex_decod"))
    {
        return None;
    }
    Some(if op.contains("backward") { 2.5 } else { 1.0 })
}

/// (batch x heads, L, S, E, Ev) of an attention call's q, k and v.
fn attention_sizes(a: &AttentionOp, dims: &[Vec<i64>]) -> Option<(f64, f64, f64, f64, f64)> {
    let (q, k, v) = (
        dims.get(a.q_at)?,
        dims.get(a.q_at + 1)?,
        dims.get(a.q_at + 2)?,
    );
    if q.len() < 3 || k.len() < 3 || v.len() < 3 {
        return None;
    }
    let last = |t: &[i64], from_end: usize| t[t.len() - from_end] as f64;
    if a.seq_major {
        // [B, S, H, D]: the sequence is third from the end, the heads second.
        if q.len() < 4 || k.len() < 4 {
            return None;
        }
        let heads = fprod(&q[..q.len() - 3]) * last(q, 2);
        return Some((heads, last(q, 3), last(k, 3), last(q, 1), last(v, 1)));
    }
    let heads = fprod(&q[..q.len() - 2]);
    Some((heads, last(q, 2), last(k, 2), last(q, 1), last(v, 1)))
}

/// FLOPs of one attention call as torch's FlopCounterMode counts them: every query-key pair,
/// causal or not (as PaLM's `12·L·H·Q·T` does); backward, its five matmuls (scores
/// again, dV, dP, dQ, dK: `2·L·S·(3·E + 2·Ev)` per head, 2.5 forwards when E = Ev). MFU reads
/// these; the op's achieved rate reads [`super::efficiency::composite_flops`]'s, which skips
/// the masked half.
/// Grouped-query attention counts the query heads. Flex attention counts dense.
pub fn attention_model_flops(op: &str, input_dims: &str) -> Option<f64> {
    let dims = dims_of(input_dims)?;
    let a = resolve(op)?;
    let (heads, l, s, e, ev) = attention_sizes(&a, &dims)?;
    let per_pair = if a.factor == 1.0 {
        e + ev
    } else {
        3.0 * e + 2.0 * ev
    };
    Some(2.0 * heads * l * s * per_pair)
}

/// Whether an attention call decodes: one query a sequence against a longer key.
pub fn attention_is_decode(op: &str, input_dims: &str) -> bool {
    let Some(dims) = dims_of(input_dims) else {
        return false;
    };
    let Some(a) = resolve(op) else {
        return false;
    };
    attention_sizes(&a, &dims).is_some_and(|(_, l, s, ..)| l == 1.0 && s > 1.0)
}

/// Bytes an attention call moves at least once: q, k and v read, the output written (q's
/// size), each element of `dtype`. Decode reads the whole KV cache for one query a sequence.
pub fn attention_bytes(op: &str, input_dims: &str, dtype: Dtype) -> Option<f64> {
    let dims = dims_of(input_dims)?;
    let a = resolve(op)?;
    let (q, k, v) = (
        dims.get(a.q_at)?,
        dims.get(a.q_at + 1)?,
        dims.get(a.q_at + 2)?,
    );
    let elements = 2.0 * fprod(q) + fprod(k) + fprod(v);
    Some(elements * dtype.bits() as f64 / 8.0)
}

/// A listed attention op, or a flex attention template as one (with its factor).
fn resolve(op: &str) -> Option<AttentionOp> {
    match (attention_op(op), flex_attention_factor(op)) {
        (Some(a), _) => Some(*a),
        (None, Some(factor)) => Some(AttentionOp {
            factor,
            ..op_flex()
        }),
        (None, None) => None,
    }
}

/// Flex attention's layout: q, k, v first, `[B, H, L, E]`; no causal flag.
const fn op_flex() -> AttentionOp {
    op("flex_attention", 0, usize::MAX, 1.0)
}

/// Forward attention ops (one inside backward is recomputation).
pub(crate) fn is_forward_attention(op: &str) -> bool {
    attention_op(op).is_some_and(|a| a.factor == 1.0)
}

/// FLOPs one attention call executes: QKᵀ and PV over the pairs a causal mask keeps (grouped
/// K/V heads count the query heads); flex attention dense. None without the shapes or, for the
/// ops with an `is_causal` argument, without `Concrete Inputs` (older traces).
pub(crate) fn executed_flops(op: &str, dims: &[Vec<i64>], args: &[String]) -> Option<f64> {
    let a = resolve(op)?;
    let (heads, l, s, e, ev) = attention_sizes(&a, dims)?;
    // Flex has no causal flag: its mask is the block mask, counted dense.
    let causal = flex_attention_factor(op).is_none() && args.get(a.causal_at)? == "True";
    let pairs = if causal && l == s {
        l * (l + 1.0) / 2.0
    } else if causal {
        l * s / 2.0
    } else {
        l * s
    };
    Some(a.factor * 2.0 * heads * pairs * (e + ev))
}
