//! rocprof-classify: where a PyTorch model's GPU time goes, and what to do next.
//!
//! Module map (data flows top to bottom):
//!
//! | module | owns |
//! |---|---|
//! | [`ingest`] | opening files/dirs/stdin/gzip, format sniffing, one reader per input format (Kineto, rocprof v1/v2/v3 CSV and JSON, rocpd, rocprof-compute workloads, torch.compile logs); several files read in parallel |
//! | [`model`] | the normalized columnar [`model::Trace`]: GPU activities, host events, interned names, hardware counters per dispatch; what torch.compile logs say ([`model::compile_log`]); durations for people ([`model::units`]) |
//! | [`classify`] | rule files (`rules/*.toml`), the regex engine, name normalization (demangling), the device table ([`classify::devices`]) |
//! | [`analysis`] | steps and window, buckets, time partition, torch.compile signals (and their logs joined to the trace), top kernels, attribution, hardware-counter metrics: plain `Serialize` data |
//! | [`detect`] | one function per finding (graph breaks, launch-bound, manual attention, …), reading only the analysis context |
//! | [`diff`] | two analyses compared per step (buckets, partition, kernels, findings, ladder) |
//! | [`recommend`] | the ladder catalog (`rules/ladder.toml`): triggers, savings, ranking, ladder status |
//! | [`report`] | renderers into memory: terminal table, JSON feed (+ its JSON Schema), Markdown, HTML, diff; writers of the trace back out: Perfetto, Parquet/CSV activity export |
//! | [`cli`] | clap definitions and `run`; the only module that knows about the command line |
//! | [`error`] | typed errors at the seams (ingest, rules) |
//!
//! Readers never analyze, analyses never see a file format, reporters never see the trace (except
//! the two that write its rows back out).
//!
//! Layers import only downward: `error` ← `model` ← `ingest`, `classify` ← `analysis` ←
//! `detect`, `diff` ← `recommend` ← `report` ← `cli` (a test reads the sources and fails on any
//! other edge; `analysis` still reaching up to `detect` and `recommend` is the last exception).

pub mod analysis;
pub mod classify;
pub mod cli;
pub mod detect;
pub mod error;
pub mod ingest;
pub mod model;
pub mod pipeline;
pub mod recommend;
pub mod report;

pub use pipeline::{run, Config, Run};
