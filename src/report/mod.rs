//! Reporters render a [`Run`](crate::pipeline::Run) into bytes in memory; the CLI decides where
//! the bytes go. The terminal table, Markdown and HTML lay out the same [`sections`]; the JSON
//! feed serializes the run; Perfetto and the Parquet/CSV export write its activities back out
//! (the only ones that read the trace).

pub mod catalog;
pub mod charts;
pub mod diff;
#[cfg(feature = "polars")]
pub mod export;
pub mod html;
pub mod json;
pub mod markdown;
pub mod perfetto;
pub mod sections;
pub mod table;

/// An optional number with `digits` decimals, `-` when unknown (the hardware-counter tables).
pub fn opt_num(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

/// The feed's JSON Schema (draft 2020-12), also printed by `rocprof-classify schema`.
pub const FEED_SCHEMA: &str = include_str!("feed.schema.json");
