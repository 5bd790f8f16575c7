//! Model FLOP utilization: the FLOPs a step's GEMM, attention and convolution calls do (forward
//! and backward, counted from their recorded shapes as FlopCounterMode counts them) over the
//! step time times the devices' dense peak for the type most of them compute in. Activation
//! checkpointing re-runs forward calls inside backward: those count toward the hardware FLOP
//! utilization (`hfu_pct`) only.

use crate::analysis::ops::calls::FlopTally;
use crate::analysis::ops::efficiency::{DevicePeaks, Dtype};
use crate::model::InputMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// GEMM, attention or convolution GPU time whose FLOPs are unknown, by launching op.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MissingFlops {
    pub op: String,
    pub gpu_ns: i64,
}

/// The MFU numbers of one analysis (the whole job, or one rank's view).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Mfu {
    /// FLOPs per step the model needs: executed minus recomputed and padding (summed over ranks).
    pub model_flops_per_step: Option<f64>,
    /// FLOPs per step the hardware ran, recomputation included.
    pub executed_flops_per_step: Option<f64>,
    pub recompute_flops_per_step: Option<f64>,
    /// Grouped GEMMs' alignment padding per step (MoE rows that hold no token): executed, not
    /// the model's.
    pub padding_flops_per_step: Option<f64>,
    /// Dense peak FLOP/s of the devices for `mfu_dtype`, summed over devices.
    pub peak_flops: Option<f64>,
    pub mfu_pct: Option<f64>,
    pub hfu_pct: Option<f64>,
    /// The compute type with the most FLOPs (its peak is the denominator).
    pub mfu_dtype: Option<String>,
    /// Per step (`steps`) or over the window (`window`: no ProfilerStep).
    pub mfu_basis: Option<String>,
    /// Some GEMM/attention/conv time has no FLOP count: MFU is a lower bound.
    pub mfu_lower_bound: bool,
    /// That time by op, largest first (at most 10).
    pub flops_missing: Vec<MissingFlops>,
    /// Flex attention counted dense (its block mask's density not given): MFU is an upper
    /// bound.
    pub mfu_upper_bound: bool,
    /// Each type's FLOPs at its own type's dense peak, over the step time: the share of the
    /// step the work would take at peak (mixed precision: an FP8 GEMM counts at the FP8 peak).
    pub mfu_mixed_pct: Option<f64>,
    /// The best rate the trace's GEMMs reached as a share of their peak (shapes holding at
    /// least 1% of the GEMM time): the MFU the step's FLOPs would reach at that rate.
    pub mfu_ceiling_pct: Option<f64>,
    /// Bytes per step the counted calls moved over the step time x the devices' HBM peak,
    /// when decode is over half the window (decode is bandwidth-bound: MFU says little) and
    /// the calls whose bytes are known hold at least half of the GPU time.
    pub hbm_util_pct: Option<f64>,
}

/// Missing time below this share of the GEMM/attention/conv time leaves MFU exact enough.
const LOWER_BOUND_PCT: f64 = 1.0;

/// What MFU reads besides the FLOP tallies.
pub struct Timing {
    /// Kept steps per input (0: no steps, the window counts as one).
    pub steps_per_input: Vec<usize>,
    /// Mean step time (slowest rank per step), when there are steps.
    pub step_ns: Option<f64>,
    /// The window summed over devices, and the number of devices.
    pub window_ns: i64,
    pub devices: usize,
    /// GEMM + attention + conv GPU time in scope.
    pub compute_ns: i64,
    /// The decode iterations' share of the window, when iterations have phases.
    pub decode_share: Option<f64>,
    /// All GPU activity time in scope.
    pub kernel_ns: i64,
}

pub fn compute(
    inputs: &[InputMeta],
    peaks: &[DevicePeaks],
    tallies: &[FlopTally],
    timing: &Timing,
) -> Mfu {
    let mut by_dtype: BTreeMap<Dtype, f64> = BTreeMap::new();
    let (mut executed, mut recomputed, mut padding) = (0.0f64, 0.0f64, 0.0f64);
    let (mut dense_flex, mut bytes, mut best_gemm) = (0.0f64, 0.0f64, None::<f64>);
    let mut bytes_ns = 0i64;
    let (mut decode_calls, mut attention_calls) = (0u64, 0u64);
    let mut missing: BTreeMap<&str, i64> = BTreeMap::new();
    // With steps, an input without any (a rank cut before its first) has no step to divide by.
    let any_steps = timing.steps_per_input.iter().any(|&s| s > 0);
    let counts =
        |input: usize| !any_steps || timing.steps_per_input.get(input).is_some_and(|&s| s > 0);
    for (input, t) in tallies.iter().enumerate() {
        if !counts(input) {
            continue;
        }
        let per = timing
            .steps_per_input
            .get(input)
            .copied()
            .unwrap_or(0)
            .max(1) as f64;
        executed += t.executed / per;
        recomputed += t.recomputed / per;
        padding += t.padding / per;
        dense_flex += t.dense_flex_flops;
        bytes += t.bytes / per;
        bytes_ns += t.bytes_ns;
        best_gemm = match (best_gemm, t.best_gemm_fraction) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        decode_calls += t.decode_attention_calls;
        attention_calls += t.attention_calls;
        for (&d, &f) in &t.by_dtype {
            *by_dtype.entry(d).or_default() += f / per;
        }
        for (op, &ns) in &t.missing_ns {
            *missing.entry(op.as_str()).or_default() += ns;
        }
    }
    let mut flops_missing: Vec<MissingFlops> = missing
        .into_iter()
        .map(|(op, gpu_ns)| MissingFlops {
            op: op.to_string(),
            gpu_ns,
        })
        .collect();
    flops_missing.sort_by(|a, b| b.gpu_ns.cmp(&a.gpu_ns).then(a.op.cmp(&b.op)));
    let missing_ns: i64 = flops_missing.iter().map(|m| m.gpu_ns).sum();
    flops_missing.truncate(10);
    let mfu_lower_bound = crate::analysis::numbers::pct(missing_ns, timing.compute_ns.max(1))
        >= LOWER_BOUND_PCT
        && missing_ns > 0;
    let mut out = Mfu {
        mfu_lower_bound,
        flops_missing,
        mfu_upper_bound: dense_flex > 0.0,
        ..Default::default()
    };
    if executed <= 0.0 {
        return out;
    }
    let dtype = by_dtype
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(&d, _)| d);
    let model = executed - recomputed - padding;
    out.model_flops_per_step = Some(model.round());
    out.executed_flops_per_step = Some(executed.round());
    out.recompute_flops_per_step = Some(recomputed.round());
    out.padding_flops_per_step = Some(padding.round());
    out.mfu_dtype = dtype.map(|d| d.as_str().to_string());
    // Seconds per step: the mean step, or without steps each device's share of the window.
    let (seconds, basis) = match timing.step_ns {
        Some(ns) if any_steps => (ns / 1e9, "steps"),
        _ => (
            timing.window_ns as f64 / timing.devices.max(1) as f64 / 1e9,
            "window",
        ),
    };
    out.mfu_basis = Some(basis.to_string());
    let round = |x: f64| (x * 1e4).round() / 1e4;
    if seconds <= 0.0 {
        return out;
    }
    // Decode moves bytes, not FLOPs: bandwidth beside MFU when it is most of the window (the
    // iterations' phases say, else most attention calls decode).
    let decoding = match timing.decode_share {
        Some(share) => share > 0.5,
        None => decode_calls * 2 > attention_calls,
    };
    let hbm = sum_peaks(inputs, &counts, |d| {
        crate::classify::devices::peaks_of(peaks, d)?.hbm_gbps
    });
    // Only where the calls whose bytes are known hold most of the GPU time: kernels without
    // shapes (CUDA graph replays, custom ops) would leave the number far too low.
    if decoding && bytes > 0.0 && bytes_ns * 2 >= timing.kernel_ns {
        out.hbm_util_pct = hbm.map(|gbps| round(bytes / (seconds * gbps * 1e9) * 100.0));
    }
    // Every device with activity, at its dense peak for the dominant type.
    let peak_of = |dt: Dtype| {
        sum_peaks(inputs, &counts, |d| {
            crate::classify::devices::peaks_of(peaks, d)?.peak_tflops(dt)
        })
        .map(|tflops| tflops * 1e12)
    };
    let Some(peak) = dtype.and_then(peak_of).filter(|&p| p > 0.0) else {
        return out;
    };
    out.peak_flops = Some(peak);
    out.mfu_pct = Some(round(model / (seconds * peak) * 100.0));
    out.hfu_pct = Some(round(executed / (seconds * peak) * 100.0));
    // Each type at its own peak, the model's share of every type's FLOPs (recomputation out).
    let model_share = model / executed;
    let at_peak: Option<f64> = by_dtype
        .iter()
        .map(|(&dt, &f)| Some(f * model_share / peak_of(dt).filter(|&p| p > 0.0)?))
        .sum();
    out.mfu_mixed_pct = at_peak.map(|s| round(s / seconds * 100.0));
    out.mfu_ceiling_pct = best_gemm.map(|b| round(b * 100.0));
    out
}

/// A peak summed over every device with activity of the inputs that count, or None when a
/// device's is unknown.
fn sum_peaks(
    inputs: &[InputMeta],
    counts: &dyn Fn(usize) -> bool,
    peak: impl Fn(&crate::model::Device) -> Option<f64>,
) -> Option<f64> {
    let mut sum = 0.0;
    for (input, meta) in inputs.iter().enumerate() {
        if !counts(input) {
            continue;
        }
        for d in &meta.devices {
            sum += peak(d)?;
        }
    }
    Some(sum)
}

/// MFU from the inputs' FLOP tallies and kept steps per input, the mean step time and the
/// window, and the compute buckets' time (one trace's, or several ranks' merged).
pub(crate) fn mfu_of(
    inputs: &[InputMeta],
    devices: &[crate::classify::devices::DevicePeaks],
    (flops, steps_per_input): (&[FlopTally], &[usize]),
    (step_ns, window_ns): (Option<f64>, i64),
    buckets: &[crate::analysis::kernels::BucketRow],
    phases: &[crate::analysis::time::phases::PhaseTotals],
) -> Mfu {
    let phase_window: i64 = phases.iter().map(|p| p.window_ns).sum();
    let decode_share = (phase_window > 0).then(|| {
        phases
            .iter()
            .filter(|p| p.phase == crate::analysis::time::phases::Phase::Decode)
            .map(|p| p.window_ns)
            .sum::<i64>() as f64
            / phase_window as f64
    });
    compute(
        inputs,
        devices,
        flops,
        &Timing {
            steps_per_input: steps_per_input.to_vec(),
            step_ns,
            window_ns,
            devices: inputs.iter().map(|i| i.devices.len()).sum(),
            compute_ns: buckets
                .iter()
                .filter(|b| {
                    matches!(
                        b.bucket,
                        crate::classify::Bucket::Gemm
                            | crate::classify::Bucket::Attention
                            | crate::classify::Bucket::Conv
                    )
                })
                .map(|b| b.kernel_ns)
                .sum(),
            decode_share,
            kernel_ns: buckets.iter().map(|b| b.kernel_ns).sum(),
        },
    )
}
