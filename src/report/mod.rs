//! Reporters render an [`Analysis`](crate::analysis::Analysis) into bytes in memory; the CLI
//! decides where the bytes go. None of them reads the trace.

pub mod charts;
pub mod diff;
#[cfg(feature = "polars")]
pub mod export;
pub mod html;
pub mod json;
pub mod markdown;
pub mod perfetto;
pub mod table;

/// An optional number with `digits` decimals, `-` when unknown (the hardware-counter tables).
pub fn opt_num(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

/// The feed's JSON Schema (draft 2020-12), also printed by `rocprof-classify schema`.
pub const FEED_SCHEMA: &str = include_str!("feed.schema.json");
