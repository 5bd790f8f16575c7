//! From a classified trace to what every report shows: steps and the window, the bucket table,
//! the time partition, torch.compile signals, top kernels, attribution to ops, modules and
//! source lines. [`prepare`] builds the [`Context`] the detectors read; [`Context::finish`]
//! cuts it into the [`Analysis`] (plain `Serialize` data) and the per-activity
//! [`ActivityTable`].
//!
//! | room | holds |
//! |---|---|
//! | [`context`] | [`AnalysisOptions`], [`prepare`] and the [`Context`] detectors read, [`Context::finish`] |
//! | [`output`] | the [`Analysis`] and its [`Summary`]; [`output::Parts`], what merging ranks needs beyond them |
//! | [`time`] | the time axis: steps, iterations, links between host and GPU, the window and its partition, regions |
//! | [`kernels`] | the bucket table and the top kernels |
//! | [`ops`] | attribution to ops, modules and source lines; efficiency, bytes moved, MFU, kernel candidates, per-step op rows |
//! | [`compile`] | torch.compile's signals from the trace and its logs |
//! | [`signals`] | collectives, GPU memory, hardware counters |
//! | [`merge`] | the job's analysis from its ranks' |
//! | [`table`] | the per-activity [`ActivityTable`] |
//! | [`numbers`] | small shared helpers (`pct`, `median`) |

pub mod compile;
pub mod context;
pub mod kernels;
pub mod merge;
pub mod numbers;
pub mod ops;
pub mod output;
pub mod signals;
pub mod table;
pub mod time;

pub use context::{prepare, AnalysisOptions, Context};
pub use kernels::{BucketRow, KernelRow};
pub use output::{Analysis, Summary};
pub use table::ActivityTable;
pub use time::steps::StepStats;
pub use time::window::StepRow;

use crate::classify::RuleSet;
use crate::model::Trace;

/// Classifies and aggregates, without the detectors: the numbers alone.
pub fn analyze(trace: &Trace, rules: &RuleSet, opts: &AnalysisOptions) -> Analysis {
    prepare(trace, rules, opts).finish().0
}
