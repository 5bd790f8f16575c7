//! The classified activity table for tools beyond this one (Spark, DuckDB, polars): one row per
//! GPU activity with its rank, device, stream, times and name, and what the analysis decided
//! about it (the run's [`ActivityTable`](crate::analysis::ActivityTable): bucket, family,
//! library, rule, step, launching op, module, source line, and `in_window`, whether it counts
//! in the feed's `summary.kernel_ns`). Written through polars in batches, so memory stays
//! bounded by one batch beyond the run itself; polars types stay inside this module.

use crate::model::ActivityKind;
use crate::pipeline::Run;
use polars::prelude::{
    Column, CsvWriter, DataFrame, IntoColumn, NamedFrom, ParquetWriter, PolarsError, SerWriter,
    Series,
};
use std::io::Write;

/// Rows per written batch (a Parquet row group).
const BATCH_ROWS: usize = 1 << 20;

/// Output format of [`write`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Parquet,
    Csv,
}

/// Writes the classified activity table of `run` (before [`Run::drop_rows`]); returns the
/// number of rows.
pub fn write<W: Write + Send>(
    run: &Run,
    format: ExportFormat,
    out: W,
) -> Result<usize, PolarsError> {
    let trace = &run.trace;
    let acts = &trace.activities;
    let batch = |from: usize, to: usize| -> Result<DataFrame, PolarsError> {
        let rows: Vec<_> = (from..to).map(|a| run.activities.get(trace, a)).collect();
        let range = from..to;
        let columns: Vec<Column> = vec![
            Series::new(
                "rank".into(),
                rows.iter().map(|r| r.rank).collect::<Vec<Option<u32>>>(),
            ),
            Series::new("input".into(), acts.input[range.clone()].to_vec()),
            Series::new("device".into(), acts.device[range.clone()].to_vec()),
            Series::new("stream".into(), acts.stream[range.clone()].to_vec()),
            Series::new(
                "kind".into(),
                range
                    .clone()
                    .map(|a| match acts.kind[a] {
                        ActivityKind::Kernel => "kernel",
                        ActivityKind::Memcpy => "memcpy",
                        ActivityKind::Memset => "memset",
                    })
                    .collect::<Vec<&str>>(),
            ),
            Series::new("start_ns".into(), acts.ts_ns[range.clone()].to_vec()),
            Series::new("dur_ns".into(), acts.dur_ns[range.clone()].to_vec()),
            Series::new(
                "name".into(),
                range
                    .clone()
                    .map(|a| trace.names.get(acts.name[a]))
                    .collect::<Vec<&str>>(),
            ),
            Series::new(
                "bucket".into(),
                rows.iter()
                    .map(|r| r.bucket.as_str())
                    .collect::<Vec<&str>>(),
            ),
            Series::new(
                "family".into(),
                rows.iter().map(|r| r.family).collect::<Vec<&str>>(),
            ),
            Series::new(
                "library".into(),
                rows.iter().map(|r| r.library).collect::<Vec<&str>>(),
            ),
            Series::new(
                "step".into(),
                rows.iter().map(|r| r.step).collect::<Vec<Option<u64>>>(),
            ),
            Series::new(
                "rule".into(),
                rows.iter().map(|r| r.rule).collect::<Vec<Option<&str>>>(),
            ),
            Series::new(
                "op".into(),
                rows.iter().map(|r| r.op).collect::<Vec<Option<&str>>>(),
            ),
            Series::new(
                "module".into(),
                rows.iter().map(|r| r.module).collect::<Vec<Option<&str>>>(),
            ),
            Series::new(
                "source".into(),
                rows.iter().map(|r| r.source).collect::<Vec<Option<&str>>>(),
            ),
            Series::new(
                "in_window".into(),
                rows.iter().map(|r| r.in_window).collect::<Vec<bool>>(),
            ),
        ]
        .into_iter()
        .map(IntoColumn::into_column)
        .collect();
        DataFrame::new_infer_height(columns)
    };
    let n = acts.len();
    let first = batch(0, n.min(BATCH_ROWS))?;
    match format {
        ExportFormat::Parquet => {
            let mut w = ParquetWriter::new(out).batched(first.schema())?;
            w.write_batch(&first)?;
            for from in (BATCH_ROWS..n).step_by(BATCH_ROWS) {
                w.write_batch(&batch(from, (from + BATCH_ROWS).min(n))?)?;
            }
            w.finish()?;
        }
        ExportFormat::Csv => {
            let mut w = CsvWriter::new(out).batched(first.schema())?;
            w.write_batch(&first)?;
            for from in (BATCH_ROWS..n).step_by(BATCH_ROWS) {
                w.write_batch(&batch(from, (from + BATCH_ROWS).min(n))?)?;
            }
            w.finish()?;
        }
    }
    Ok(n)
}
