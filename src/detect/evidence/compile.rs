//! The evidence of torch.compile's findings.

use serde::{Deserialize, Serialize};

use super::{FromLogOnly, OpCalls, Shape};

/// `graph_breaks`: from the trace, or from the log alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GraphBreaks {
    Trace(GraphBreaksSeen),
    Log(FromLogOnly),
}
shapes!(GraphBreaks { Trace(GraphBreaksSeen), Log(FromLogOnly) });

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphBreaksSeen {
    pub per_step: f64,
    pub regions_per_step: f64,
    pub frames: Vec<u32>,
    /// Which signal showed the breaks.
    pub signal: Option<String>,
    pub example_step_regions: Vec<String>,
    pub item_syncs: usize,
    pub ops_between_regions: Vec<OpCalls>,
    pub item_syncs_per_step: f64,
    pub hint: String,
}
impl Shape for GraphBreaksSeen {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompiledLoop {
    pub frames: Vec<u32>,
    pub regions_per_step: f64,
}
impl Shape for CompiledLoop {}

/// `recompiles`: from the trace, or a count from the log alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Recompiles {
    Trace(RecompilesSeen),
    Log(RecompileCount),
}
shapes!(Recompiles { Trace(RecompilesSeen), Log(RecompileCount) });

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecompilesSeen {
    pub count: usize,
    pub compile_ids: Vec<String>,
    pub compile_in_window_ns: i64,
    pub hint: String,
}
impl Shape for RecompilesSeen {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecompileCount {
    pub count: usize,
}
impl Shape for RecompileCount {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompileInWindow {
    pub compile_ns: i64,
    pub window_pct: f64,
    pub compile_events: usize,
}
impl Shape for CompileInWindow {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CudagraphsInUse {
    pub graph_launches: u64,
    pub replayed_kernels: u64,
    pub replayed_kernel_ns: i64,
    pub kernels_per_launch: f64,
}
impl Shape for CudagraphsInUse {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InductorFallbacks {
    pub ops: Vec<OpCompiles>,
}
impl Shape for InductorFallbacks {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpCompiles {
    pub op: String,
    pub compiles: usize,
}
