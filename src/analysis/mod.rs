//! From a classified trace to what every report shows: steps and the window, the bucket table,
//! the time partition, torch.compile signals, top kernels, attribution to ops, modules and
//! source lines. [`prepare`] builds the [`Context`] the detectors read; [`Context::finish`]
//! cuts it into the [`Analysis`] (plain `Serialize` data) and the per-activity
//! [`ActivityTable`].
//!
//! | room | holds |
//! |---|---|
//! | `context` | [`AnalysisOptions`], [`prepare`] and the [`Context`] detectors read, [`Context::finish`] |
//! | `output` | the [`Analysis`] and its [`Summary`]; `output::Parts`, what merging ranks needs beyond them |
//! | `time` | the time axis: steps, iterations, links between host and GPU, the window and its partition, regions |
//! | `kernels` | the bucket table and the top kernels |
//! | `ops` | attribution to ops, modules and source lines; efficiency, bytes moved, MFU, kernel candidates, per-step op rows |
//! | `compile` | torch.compile's signals from the trace and its logs |
//! | `signals` | collectives, GPU memory, hardware counters |
//! | `merge` | the job's analysis from its ranks' |
//! | `table` | the per-activity [`ActivityTable`] |
//! | `numbers` | small shared helpers (`pct`, `median`) |

pub(crate) mod compile;
pub(crate) mod context;
pub(crate) mod kernels;
pub(crate) mod merge;
pub(crate) mod numbers;
pub(crate) mod ops;
pub(crate) mod output;
pub(crate) mod path;
pub(crate) mod signals;
pub(crate) mod table;
pub(crate) mod time;

pub use context::{prepare, AnalysisOptions, Context, Stages};
pub use kernels::{BucketRow, KernelRow};
pub use numbers::median;
pub use ops::attribution::{MemoryShapeRow, OpRow, NO_OP};
pub use ops::candidates::{tunableop_line, CommandKind, Unit};
pub use output::{Analysis, Summary};
pub use path::replay::{
    Constants as ReplayConstants, PerVendor, ReplaySet, Replayer, Replays, StepReplay, Transform,
    WhatIf, WhatIfJobStep, WhatIfStep,
};
pub(crate) use path::without_profiler as path_without_profiler;
pub use path::{
    dependencies, CriticalPath, Dependencies, ItemKind, Label, LabelNs, LabelRow, PathItem,
    StepPath,
};
pub use table::ActivityTable;
pub use time::partition::Category;
pub use time::phases::{Exclusion, MarkerSource, Phase};
pub use time::steps::{StepRange, StepStats};
pub use time::window::StepRow;

use crate::classify::RuleSet;
use crate::model::Trace;

/// Classifies and aggregates, without the detectors: the numbers alone.
pub fn analyze(trace: &Trace, rules: &RuleSet, opts: &AnalysisOptions) -> Analysis {
    prepare(trace, rules, opts).finish().0
}
