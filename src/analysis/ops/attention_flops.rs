//! Attention FLOPs from the recorded shapes: SDPA and its backends, the FlashAttention package,
//! aiter's CK attention and Inductor's flex attention templates, as FlopCounterMode counts them
//! for MFU, and as the kernels execute them (a causal mask's half) for an op's achieved rate.

use super::shapes::{dims_of, fprod};
use crate::classify::devices::Dtype;
use crate::model::{HostKind, NameId, Trace};
use rustc_hash::FxHashMap as HashMap;

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

/// Attention ops whose FLOPs their shapes give (`aten::_scaled_dot_product_*`, …), or their
/// shapes and their iteration's token counts (vLLM's).
pub fn is_attention_op(op: &str) -> bool {
    attention_op(op).is_some() || flex_attention_factor(op).is_some() || is_iteration_attention(op)
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

/// Serving engines' attention ops, whose q `[T, H, D]` packs every request of the iteration:
/// how many keys each query meets is not in the op's record but in the iteration's marker.
const ITERATION_ATTENTION_OPS: &[&str] = &[
    "vllm::unified_attention_with_output",
    "vllm::unified_attention",
];

/// Whether an op's FLOPs come from its iteration's token counts ([`IterationTokens`]).
pub fn is_iteration_attention(op: &str) -> bool {
    ITERATION_ATTENTION_OPS.contains(&op)
}

/// One phase's sums over its requests: query tokens (`sq`), keys they attend to (`sk`, the
/// cached prefix included), Σ sq² and Σ sq·sk.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TokenSums {
    pub sq: f64,
    pub sk: f64,
    pub sqsq: f64,
    pub sqsk: f64,
}

/// A serving iteration's token sums, prefill (context) and decode (generation) apart, as
/// vLLM's detailed marker writes them
/// (`execute_<T>_context_<n>(sq…sk…sqsq…sqsk…)_generation_<m>(sq…sk…sqsq…sqsk…)`, the form
/// TraceLens reads), or its older prefill-only form `execute_context_<n>(<sq>_<sqsk>)
/// _generation_0(0)` (no cached prefix: sk = sq). vLLM's own `execute_context_<n>(<tokens>)
/// _generation_<m>(<tokens>)` has no key counts: None, the time stays uncounted.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IterationTokens {
    pub context: TokenSums,
    pub generation: TokenSums,
}

impl IterationTokens {
    pub fn parse(name: &str) -> Option<IterationTokens> {
        let rest = name.strip_prefix("execute_")?;
        if let Some(rest) = rest.strip_prefix("context_") {
            // Older form: context_<n>(<sq>_<sqsk>)_generation_0(0).
            let (_, rest) = number(rest)?;
            let rest = rest.strip_prefix('(')?;
            let (sq, rest) = number(rest)?;
            let (sqsk, rest) = number(rest.strip_prefix('_')?)?;
            let rest = rest.strip_prefix(")_generation_0(0)")?;
            return rest.is_empty().then_some(IterationTokens {
                context: TokenSums {
                    sq,
                    sk: sq,
                    sqsq: sqsk,
                    sqsk,
                },
                generation: TokenSums::default(),
            });
        }
        let (_, rest) = number(rest)?;
        let rest = rest.strip_prefix("_context_")?;
        let (context, rest) = phase_sums(rest)?;
        let (generation, rest) = phase_sums(rest.strip_prefix("_generation_")?)?;
        rest.is_empty().then_some(IterationTokens {
            context,
            generation,
        })
    }

    /// Query-key pairs the kernels compute: every cached key, and within a prefill chunk the
    /// causal triangle with its diagonal (Σ sq·sk − Σ sq²/2 + Σ sq/2; TraceLens leaves out the
    /// diagonal's half, 1/(sq+1) of a single prompt's pairs). Decode queries meet every key.
    fn executed_pairs(&self) -> f64 {
        let c = &self.context;
        c.sqsk - c.sqsq / 2.0 + c.sq / 2.0 + self.generation.sqsk
    }

    /// Every query-key pair, masked or not, as MFU counts attention.
    fn model_pairs(&self) -> f64 {
        self.context.sqsk + self.generation.sqsk
    }
}

/// `<n>(sq<a>sk<b>sqsq<c>sqsk<d>)` and what follows it.
fn phase_sums(s: &str) -> Option<(TokenSums, &str)> {
    let (_, rest) = number(s)?;
    let rest = rest.strip_prefix("(sq")?;
    let (sq, rest) = number(rest)?;
    let (sk, rest) = number(rest.strip_prefix("sk")?)?;
    let (sqsq, rest) = number(rest.strip_prefix("sqsq")?)?;
    let (sqsk, rest) = number(rest.strip_prefix("sqsk")?)?;
    let sums = TokenSums { sq, sk, sqsq, sqsk };
    Some((sums, rest.strip_prefix(')')?))
}

/// A run of ASCII digits at the start of `s` and what follows it.
fn number(s: &str) -> Option<(f64, &str)> {
    let end = s.bytes().take_while(u8::is_ascii_digit).count();
    let value: u64 = s[..end].parse().ok()?;
    Some((value as f64, &s[end..]))
}

/// (executed, model) FLOPs of one serving attention call: q `[T, Hq, Dqk]`, v `[…, Dv]`; the
/// pairs from its iteration's token sums, the query heads counted (grouped K/V heads too).
pub(crate) fn iteration_attention_flops(
    dims: &[Vec<i64>],
    tokens: &IterationTokens,
) -> Option<(f64, f64)> {
    let (q, v) = (dims.first()?, dims.get(2)?);
    if q.len() < 3 || v.is_empty() {
        return None;
    }
    let heads = q[q.len() - 2] as f64;
    let per_pair = 2.0 * heads * (q[q.len() - 1] + v[v.len() - 1]) as f64;
    Some((
        per_pair * tokens.executed_pairs(),
        per_pair * tokens.model_pairs(),
    ))
}

/// Markers' (start, end, name), by start.
type MarkerSpans = Vec<(i64, i64, NameId)>;

/// The iteration markers that state token sums ([`IterationTokens`]), per (input, host
/// thread), by start: a serving attention op reads the one around it on its thread.
#[derive(Default)]
pub(crate) struct IterationMarkers {
    by_thread: HashMap<(u32, u32), MarkerSpans>,
    /// The serving attention ops' name ids.
    ops: Vec<NameId>,
}

impl IterationMarkers {
    /// Empty unless the trace runs a serving engine's attention op.
    pub(crate) fn of(trace: &Trace) -> IterationMarkers {
        let names = &trace.names;
        let ops: Vec<NameId> = ITERATION_ATTENTION_OPS
            .iter()
            .filter_map(|op| names.lookup(op))
            .collect();
        let mut by_thread: HashMap<(u32, u32), MarkerSpans> = HashMap::default();
        if ops.is_empty() {
            return IterationMarkers::default();
        }
        let stated = names.per_name(|n| IterationTokens::parse(n).is_some());
        let host = &trace.host;
        for h in 0..host.name.len() {
            if host.kind[h] == HostKind::Annotation && stated[host.name[h].index()] {
                let start = host.ts_ns[h];
                by_thread
                    .entry((host.input[h], host.thread[h]))
                    .or_default()
                    .push((
                        start,
                        start.saturating_add(host.dur_ns.get(h)),
                        host.name[h],
                    ));
            }
        }
        for list in by_thread.values_mut() {
            list.sort_unstable();
        }
        IterationMarkers { by_thread, ops }
    }

    /// For a serving attention op `h`, the marker around it on its thread; [`NameId::NONE`]
    /// for any other op or without one.
    pub(crate) fn around(&self, trace: &Trace, h: usize) -> NameId {
        let host = &trace.host;
        if !self.ops.contains(&host.name[h]) {
            return NameId::NONE;
        }
        let Some(list) = self.by_thread.get(&(host.input[h], host.thread[h])) else {
            return NameId::NONE;
        };
        let at = host.ts_ns[h];
        let k = list.partition_point(|m| m.0 <= at);
        match k.checked_sub(1).map(|i| list[i]) {
            Some((_, end, name)) if at < end => name,
            _ => NameId::NONE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_markers_give_token_sums() {
        // TraceLens's examples of vLLM's detailed marker: a chunked prefill with a cached
        // prefix beside three decodes.
        let mixed = IterationTokens::parse(
            "execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)\
             _generation_3(sq3sk6144sqsq3sqsk6144)",
        )
        .unwrap();
        assert_eq!(
            mixed.context,
            TokenSums {
                sq: 6144.0,
                sk: 7144.0,
                sqsq: 20971520.0,
                sqsk: 23019520.0
            }
        );
        assert_eq!(mixed.generation.sqsk, 6144.0);
        // The older prefill-only form: 888 tokens, 888² pairs.
        let prompt =
            IterationTokens::parse("execute_context_1(888_788544)_generation_0(0)").unwrap();
        assert_eq!((prompt.context.sq, prompt.context.sk), (888.0, 888.0));
        assert_eq!(
            (prompt.context.sqsq, prompt.context.sqsk),
            (788544.0, 788544.0)
        );
        assert_eq!(prompt.generation, TokenSums::default());
        // vLLM's own marker has no key counts; nor do truncated or trailing forms.
        for none in [
            "execute_context_2(14721)_generation_0(0)",
            "execute_context_0(0)_generation_64(64)",
            "execute_context_1(888_788544)_generation_2(2)",
            "execute_64_context_0(sq0sk0sqsq0sqsk0)_generation_64(sq64sk131072sqsq64)",
            "execute_64_context_0(sq0sk0sqsq0sqsk0)_generation_64(sq64sk1sqsq64sqsk1)x",
            "execute_99999999999999999999999_context_0(sq0sk0sqsq0sqsk0)_generation_0(sq0sk0sqsq0sqsk0)",
            "ProfilerStep#3",
        ] {
            assert_eq!(IterationTokens::parse(none), None, "{none}");
        }
    }

    #[test]
    fn serving_attention_counts_the_query_heads_over_the_stated_pairs() {
        // gpt-oss-like layer: q [888, 8, 64], k/v [888, 1, 64], one 888-token prompt.
        let dims = vec![
            vec![888, 8, 64],
            vec![888, 1, 64],
            vec![888, 1, 64],
            vec![888, 8, 64],
        ];
        let prompt =
            IterationTokens::parse("execute_context_1(888_788544)_generation_0(0)").unwrap();
        let (executed, model) = iteration_attention_flops(&dims, &prompt).unwrap();
        let per_pair = 2.0 * 8.0 * (64.0 + 64.0);
        // The causal triangle with its diagonal, as SDPA's causal count: 888·889/2 pairs.
        assert_eq!(executed, per_pair * 888.0 * 889.0 / 2.0);
        assert_eq!(model, per_pair * 888.0 * 888.0);
        // Decode: every query meets all its keys.
        let decode = IterationTokens::parse(
            "execute_64_context_0(sq0sk0sqsq0sqsk0)_generation_64(sq64sk131072sqsq64sqsk131072)",
        )
        .unwrap();
        let (executed, model) = iteration_attention_flops(&dims, &decode).unwrap();
        assert_eq!(
            (executed, model),
            (per_pair * 131072.0, per_pair * 131072.0)
        );
        assert!(is_attention_op("vllm::unified_attention_with_output"));
        assert!(iteration_attention_flops(&dims[..2], &decode).is_none());
    }
}
