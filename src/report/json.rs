//! The JSON feed (`--json`), the contract in FEED.md. Field names are an API: add, never rename.

use crate::analysis::{Analysis, BucketRow, KernelRow, Summary};
use crate::model::InputMeta;
use serde::Serialize;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Tool {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct Feed<'a> {
    schema_version: u32,
    tool: Tool,
    inputs: &'a [InputMeta],
    summary: &'a Summary,
    buckets: &'a [BucketRow],
    top_kernels: &'a [KernelRow],
}

/// Renders the feed, pretty-printed, newline-terminated.
pub fn render(a: &Analysis) -> Vec<u8> {
    let feed = Feed {
        schema_version: SCHEMA_VERSION,
        tool: Tool {
            name: "rocprof-classify",
            version: env!("CARGO_PKG_VERSION"),
        },
        inputs: &a.inputs,
        summary: &a.summary,
        buckets: &a.buckets,
        top_kernels: &a.top_kernels,
    };
    let mut out =
        serde_json::to_vec_pretty(&feed).expect("the feed is plain data and always serializes");
    out.push(b'\n');
    out
}
