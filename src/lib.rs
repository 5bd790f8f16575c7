//! rocprof-classify: where a PyTorch model's GPU time goes, and what to do next.
//!
//! One call does the whole job: [`run`]`(inputs, &`[`Config`]`) -> `[`Run`] reads the inputs,
//! classifies and analyzes them, runs the detectors and evaluates the ladder; every output
//! renders from the [`Run`] (the command line, the Python package under `python/`, the tests,
//! the benches and the fuzz targets all go through it).
//!
//! Module map (layers import only downward; a test reads the sources and fails on any other
//! edge):
//!
//! | module | owns |
//! |---|---|
//! | [`error`] | typed errors at the seams (ingest, rules, the run); under everything |
//! | [`model`] | the normalized columnar [`model::Trace`] (GPU activities, host events, interned names, counters, collectives' arguments, the allocator's memory events), what torch.compile logs say, durations for people |
//! | [`ingest`] | files, directories, stdin, gzip; sniffing; one reader per format (Kineto, rocprof v1/v2/v3 CSV and JSON, rocpd, rocprof-compute, torch.compile logs) behind one trait |
//! | [`classify`] | rule files (`rules/*.toml`), the regex engine, demangling, the device table |
//! | [`analysis`] | steps and window (serving traces: iterations, their phases, [`analysis::iterations`]), buckets, time partition, torch.compile signals from traces and logs ([`analysis::compile`]), attribution (GEMM FLOP rates, memory-bound bytes: [`analysis::bytes_moved`]; the kernels worth tuning: [`analysis::candidates`]), counters, collectives (size, bus bandwidth, wait vs transfer across ranks: [`analysis::collectives`]), GPU memory ([`analysis::memory`]); the job from its ranks' analyses ([`analysis::merge`]); the per-activity [`analysis::ActivityTable`]; the before/after comparison |
//! | [`detect`] | one function per finding ([`detect::FindingId`]), reading the analysis [`analysis::Context`]; torch.compile's in `detect::compile` |
//! | [`recommend`] | the ladder catalog (`rules/ladder.toml`: levels and what their statuses say, recommendations, the fixes of torch.compile's causes): triggers, savings, ranking, status |
//! | [`pipeline`] | [`run`]: read → analyze → detect → plan, into a [`Run`]; several ranks as one partial per rank merged into the job ([`pipeline::partial`], also across machines) |
//! | [`report`] | renderers of a [`Run`] (table, JSON feed, Markdown, HTML, diff; the human-facing three lay out the same [`report::sections`]) and writers of its activities (Perfetto, Parquet/CSV, an Arrow C stream) |
//! | [`cli`] | clap definitions; parses arguments, calls [`run`] and the renderers, routes outputs, applies gates |
//!
//! `error` ← `model` ← `ingest`, `classify` ← `analysis` ← `detect` ← `recommend` ← `pipeline`
//! ← `report` ← `cli`. Readers never analyze, analyses never see a file format, and reporters
//! read no file (but Perfetto, which copies a Kineto input as it annotates it).

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
