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
    /// FLOPs per step the model needs: executed minus recomputed (summed over ranks).
    pub model_flops_per_step: Option<f64>,
    /// FLOPs per step the hardware ran, recomputation included.
    pub executed_flops_per_step: Option<f64>,
    pub recompute_flops_per_step: Option<f64>,
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
}

pub fn compute(
    inputs: &[InputMeta],
    peaks: &[DevicePeaks],
    tallies: &[FlopTally],
    timing: &Timing,
) -> Mfu {
    let mut by_dtype: BTreeMap<Dtype, f64> = BTreeMap::new();
    let (mut executed, mut recomputed) = (0.0f64, 0.0f64);
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
        ..Default::default()
    };
    if executed <= 0.0 {
        return out;
    }
    let dtype = by_dtype
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(&d, _)| d);
    let model = executed - recomputed;
    out.model_flops_per_step = Some(model.round());
    out.executed_flops_per_step = Some(executed.round());
    out.recompute_flops_per_step = Some(recomputed.round());
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
    // Every device with activity, at its dense peak for the dominant type.
    let mut peak = 0.0f64;
    for (input, meta) in inputs.iter().enumerate() {
        if !counts(input) {
            continue;
        }
        for d in &meta.devices {
            let p =
                dtype.and_then(|dt| crate::classify::devices::peaks_of(peaks, d)?.peak_tflops(dt));
            match p {
                Some(tflops) => peak += tflops * 1e12,
                None => return out,
            }
        }
    }
    if peak <= 0.0 || seconds <= 0.0 {
        return out;
    }
    out.peak_flops = Some(peak);
    let round = |x: f64| (x * 1e4).round() / 1e4;
    out.mfu_pct = Some(round(model / (seconds * peak) * 100.0));
    out.hfu_pct = Some(round(executed / (seconds * peak) * 100.0));
    out
}

/// MFU from the inputs' FLOP tallies and kept steps per input, the mean step time and the
/// window, and the compute buckets' time (one trace's, or several ranks' merged).
pub(crate) fn mfu_of(
    inputs: &[InputMeta],
    devices: &[crate::classify::devices::DevicePeaks],
    (flops, steps_per_input): (&[FlopTally], &[usize]),
    (step_ns, window_ns): (Option<f64>, i64),
    buckets: &[crate::analysis::kernels::BucketRow],
) -> Mfu {
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
        },
    )
}
