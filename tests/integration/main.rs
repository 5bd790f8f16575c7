//! Integration tests: one binary (see Cargo.toml `autotests = false`).
//!
//! Where a new test goes, by what it checks (every test runs on real data: the fixtures, or
//! `../shared` through `with_shared!`, which skips with a notice when it is absent):
//!
//! | what it checks | modules |
//! |---|---|
//! | reading inputs, by format | `rocprof`, `amd`, `compile_logs`, `corpus` (every corpus trace), `scanner` (the Kineto scanner against serde) |
//! | bad and hostile input; what is refused (mixed jobs, empty selections, no GPU work) | `bad_input`, `bad_input_matrix`, `fuzz_regressions`, `refusals` |
//! | the numbers: steps, partition, attribution | `diagnosis`, `invariants`, `trust`, `peers`, `h100`, `zoo` |
//! | what bounds each step: the critical path, the dependency model | `critical_path` |
//! | one analysis area | `efficiency`, `mfu`, `bandwidth`, `memory`, `regions`, `serving`, `graphs`, `collectives`, `ranks` |
//! | findings and recommendations | `diagnosis`, `recommend`, `advice` |
//! | several ranks and partials | `partials`, `ranks`, `collectives`, `parallel` (parallelism, pipelines) |
//! | comparing runs | `diff`, `review` |
//! | outputs and interfaces | `cli` (the binary), `pipeline` (the library's `run`), `exports`, `browser`, `snapshots` (every fixture's renders) |
//! | the project itself | `layers` (module graph, rooms, front door), `docs` (README, book, feed contract) |
//!
//! Two ways in, both in `common`: the library's one call, `rocprof_classify::run`
//! (`run_path`, `run_trace`, and `analyze_path` for its analysis alone), and the binary (`bin()`,
//! with `feed_of` and `stdout_of` for its JSON feed and its stdout). `assert_valid_feed` checks a
//! feed against the schema and each finding's typed evidence.

mod common;

mod advice;
mod amd;
mod bad_input;
mod bad_input_matrix;
mod bandwidth;
mod browser;
mod cli;
mod collectives;
mod compile_logs;
mod corpus;
mod critical_path;
mod diagnosis;
mod diff;
mod docs;
mod efficiency;
mod exports;
mod fuzz_regressions;
mod graphs;
mod h100;
mod invariants;
mod kernel_flops;
mod layers;
mod memory;
mod mfu;
mod one_saving;
mod parallel;
mod parallel4;
mod partials;
mod peers;
mod pipeline;
mod ranks;
mod recommend;
mod refusals;
mod regions;
mod replays;
mod review;
mod rocprof;
mod scanner;
mod serving;
mod snapshots;
mod trust;
mod zoo;
