//! Integration tests: one binary (see Cargo.toml `autotests = false`).

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
mod diagnosis;
mod diff;
mod efficiency;
mod exports;
mod fuzz_regressions;
mod graphs;
mod h100;
mod invariants;
mod layers;
mod memory;
mod mfu;
mod partials;
mod peers;
mod pipeline;
mod ranks;
mod recommend;
mod regions;
mod review;
mod rocprof;
mod serving;
mod snapshots;
mod trust;
mod zoo;
