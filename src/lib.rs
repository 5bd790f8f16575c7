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
//! | [`error`] | typed errors at the seams (ingest, rules, the run) and the exit codes every front door shares; under everything |
//! | [`model`] | the normalized columnar [`model::Trace`] (GPU activities, host events, interned names, counters, collectives' arguments, the allocator's memory events), what torch.compile logs say, durations for people |
//! | [`ingest`] | files, directories, stdin, gzip; sniffing; one reader per format (Kineto, rocprof v1/v2/v3 CSV and JSON, rocpd, rocprof-compute, torch.compile logs) behind one trait |
//! | [`classify`] | rule files (`rules/*.toml`), the regex engine, demangling, the device table |
//! | [`analysis`] | one trace's numbers, in rooms: `analysis::context` (prepare, the [`analysis::Context`] detectors read, finish), `analysis::output` (the [`analysis::Analysis`]), `analysis::time` (steps, iterations and phases, links, the window's partition, regions), `analysis::kernels` (buckets, top kernels), `analysis::ops` (attribution to ops, modules and sources; efficiency, bytes moved, MFU, kernel candidates, per-step op rows), `analysis::compile`, `analysis::signals` (collectives, GPU memory, hardware counters), `analysis::merge` (the job from its ranks'), the per-activity [`analysis::ActivityTable`] |
//! | [`detect`] | one function per finding ([`detect::FindingId`]), reading the analysis [`analysis::Context`]; torch.compile's in `detect::compile`; each finding's evidence a type in `detect::evidence` |
//! | [`recommend`] | the ladder catalog (`rules/ladder.toml`: levels and what their statuses say, recommendations, the fixes of torch.compile's causes): triggers, savings, ranking, status |
//! | [`compare`] | two runs before → after: the step verdict against the noise and its cause (`compare::stats`), op rows matched across runs and vendors (`compare::op_match`), kernels and ladder changes |
//! | [`pipeline`] | [`run`]: read → analyze → detect → plan, into a [`Run`], refusing what cannot be analyzed (ranks of two jobs, no GPU activity, a selection of no step: `pipeline::job`); several ranks as one partial per rank merged into the job ([`pipeline::partial`], also across machines); two runs compared ([`pipeline::diff`]) |
//! | [`report`] | renderers of a [`Run`] (terminal [`report::text`], JSON feed, Markdown, [`report::html`], [`report::diff`]; the human-facing three lay out the same `report::sections`) and `report::writers` of its activities (Perfetto, Parquet/CSV) |
//! | [`cli`] | clap definitions ([`cli::Cli`]); one function per command calls [`run`] and the renderers, routes outputs, applies gates |
//!
//! `error` ← `model` ← `ingest`, `classify` ← `analysis` ← `detect` ← `recommend` ← `compare`
//! ← `pipeline` ← `report` ← `cli`; no two files import each other in a circle
//! (`tests/integration/layers.rs` fails on either). Readers never analyze, analyses never see a file format, and reporters
//! read no file (but Perfetto, which copies a Kineto input as it annotates it).
//!
//! The front door: [`run`], [`Config`] and [`Run`], the layers above, and in each layer what
//! the binary, the Python package, the benches, the fuzz targets and the tests use, re-exported
//! at its top (`analysis::Category`, `ingest::Cancel`, `detect::Finding`, …). The rooms inside
//! a layer are `pub(crate)` (the renderers under [`report`] excepted); every public item has a
//! doc comment (`missing_docs`), and `tests/integration/layers.rs` lists the public rooms.

#![warn(missing_docs)]

pub mod analysis;
pub mod classify;
/// The command line's arguments and commands: the binary's, not an API (the binary is its
/// only caller; [`run`] and the renderers are the library's front door).
#[doc(hidden)]
pub mod cli;
pub mod compare;
pub mod detect;
pub mod error;
pub mod ingest;
pub mod model;
pub mod pipeline;
pub mod recommend;
pub mod report;

pub use pipeline::{run, Config, Run};
