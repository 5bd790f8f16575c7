//! The evidence of the host's and the steps' findings.

use crate::analysis::time::phases::{Exclusion, Phase};
use serde::{Deserialize, Serialize};

use super::{ApiCalls, Shape};
// ---- the host ----

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchBound {
    pub launch_overhead_ns: i64,
    pub launch_overhead_pct: f64,
    pub kernels: usize,
    pub kernels_under_10us_pct: f64,
    pub median_kernel_ns: i64,
    pub launches_per_step: f64,
}
impl Shape for LaunchBound {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostBound {
    pub host_idle_ns: i64,
    pub host_idle_pct: f64,
    /// GPU idle while the host was in the DataLoader's `__next__` (part of `host_idle_ns`).
    pub data_loading_ns: i64,
    pub data_loading_pct: f64,
    pub blocked_in_sync_or_compile_ns: i64,
    pub gpu_busy_pct: f64,
    pub per_step_ns: f64,
}
impl Shape for HostBound {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SyncStalls {
    pub calls: u64,
    pub per_step: f64,
    pub blocked_ns: i64,
    pub idle_after_ns: i64,
    pub by_api: Vec<ApiCalls>,
    pub device_to_host_copies: u64,
    pub item_calls: usize,
    pub hint: String,
}
impl Shape for SyncStalls {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllocatorChurn {
    pub calls: u64,
    pub frees: u64,
    pub ns: i64,
    pub pct: f64,
    pub by_api: Vec<ApiCalls>,
}
impl Shape for AllocatorChurn {}

/// `per_parameter_optimizer`: the optimizer's kernels and host time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerParameterOptimizer {
    pub optimizer: String,
    pub kernels_per_step: f64,
    pub multi_tensor_pct: f64,
    pub kernel_ns: i64,
    pub host_ns: i64,
    pub pct: f64,
}
impl Shape for PerParameterOptimizer {}

/// `unrepresentative_profile`: one long wait, or a profile of warm-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UnrepresentativeProfile {
    OneCall(OneCallWait),
    Warmup(WarmupShare),
}
shapes!(UnrepresentativeProfile { OneCall(OneCallWait), Warmup(WarmupShare) });

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileKind {
    OneCall,
    Warmup,
}

/// The GPU idles inside one host call for most of the window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OneCallWait {
    pub kind: ProfileKind,
    pub call: String,
    pub idle_ns: i64,
    pub idle_pct: f64,
    /// When the call starts, on the trace's clock (which step it falls in).
    pub start_ns: i64,
}

/// The steady steps hold little of the kernel time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarmupShare {
    pub kind: ProfileKind,
    pub steady_kernel_ns: i64,
    pub kernel_ns: i64,
    pub steady_pct: f64,
}
kinded!(OneCallWait: ProfileKind, WarmupShare: ProfileKind);

// ---- steps ----

/// `high_step_variance`: of the steps, or of one phase's iterations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HighStepVariance {
    Steps(StepVariance),
    Phase(PhaseVariance),
}
shapes!(HighStepVariance { Steps(StepVariance), Phase(PhaseVariance) });

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepVariance {
    pub cv_pct: f64,
    pub mean_ns: f64,
    pub std_ns: f64,
    pub slowest_steps: Vec<StepTime>,
}
impl Shape for StepVariance {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepTime {
    pub step: u64,
    pub dur_ns: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseVariance {
    pub phase: Phase,
    pub cv_pct: f64,
    pub mean_ns: f64,
    pub std_ns: f64,
    pub iterations: usize,
    pub slowest_iterations: Vec<IterationTime>,
}
impl Shape for PhaseVariance {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterationTime {
    pub iteration: u64,
    pub dur_ns: i64,
}

/// `warmup_in_window`: a first step, or iterations out of their phase's steady state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WarmupInWindow {
    Step(WarmupStep),
    Iterations(WarmupIterations),
}
shapes!(WarmupInWindow { Step(WarmupStep), Iterations(WarmupIterations) });

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarmupStep {
    pub step: u64,
    pub dur_ns: i64,
    pub median_ns: f64,
    pub ratio: f64,
    pub extra_pct: f64,
}
impl Shape for WarmupStep {}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmupKind {
    Iteration,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarmupIterations {
    pub kind: WarmupKind,
    pub iterations: Vec<LeftOut>,
    pub extra_pct: f64,
}
kinded!(WarmupIterations: WarmupKind);

/// An iteration left out of its phase's steady state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeftOut {
    pub iteration: u64,
    pub phase: Phase,
    pub reason: Exclusion,
    pub dur_ns: i64,
    pub phase_median_ns: i64,
}
