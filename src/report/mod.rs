//! Reporters render a [`Run`](crate::pipeline::Run) into bytes in memory; the CLI decides where
//! the bytes go. The terminal table ([`text`]), Markdown and HTML lay out the same
//! `sections` and format numbers and names alike ([`format`]); the JSON feed serializes the
//! run; `diff` renders a before/after comparison in each of those forms; the `writers`
//! write the run's activities back out (the only ones that read the trace); [`explain`] is
//! what the `rules` and `explain` commands print.

pub(crate) mod bound;
pub mod diff;
pub mod explain;
pub(crate) mod format;
pub mod html;
pub mod json;
pub mod markdown;
pub(crate) mod sections;
pub mod text;
pub(crate) mod writers;
pub use sections::Sections;
#[cfg(feature = "polars")]
pub use writers::export::{arrow_stream, write_dataset, ArrowArrayStream};
