//! The classified activity table for tools beyond this one (Spark, DuckDB, polars): one row per
//! GPU activity with its rank, device, stream, times, name and classification, and the step it
//! was launched in. Written through polars in batches, so memory stays bounded by one batch
//! beyond the trace itself; polars types stay inside this module.

use crate::analysis::links::Links;
use crate::analysis::steps::Steps;
use crate::classify::RuleSet;
use crate::model::{ActivityKind, Trace};
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

/// Writes the classified activity table; returns the number of rows.
pub fn write<W: Write + Send>(
    trace: &Trace,
    rules: &RuleSet,
    format: ExportFormat,
    out: W,
) -> Result<usize, PolarsError> {
    let classified = rules.classify_trace(trace);
    let links = Links::build(trace);
    // The feed's buckets: the launching op's where an op rule decides.
    let index = crate::analysis::attribution::OpIndex::build(trace, &links);
    let (buckets, _) =
        crate::analysis::attribution::activity_buckets(trace, &index, rules, &classified);
    let steps = Steps::find(trace, &links);
    let acts = &trace.activities;
    let batch = |from: usize, to: usize| -> Result<DataFrame, PolarsError> {
        let rows = from..to;
        let class = |a: usize| classified.get(acts.name[a]);
        let columns: Vec<Column> = vec![
            Series::new(
                "rank".into(),
                rows.clone()
                    .map(|a| trace.inputs[acts.input[a] as usize].rank)
                    .collect::<Vec<Option<u32>>>(),
            ),
            Series::new("input".into(), acts.input[rows.clone()].to_vec()),
            Series::new("device".into(), acts.device[rows.clone()].to_vec()),
            Series::new("stream".into(), acts.stream[rows.clone()].to_vec()),
            Series::new(
                "kind".into(),
                rows.clone()
                    .map(|a| match acts.kind[a] {
                        ActivityKind::Kernel => "kernel",
                        ActivityKind::Memcpy => "memcpy",
                        ActivityKind::Memset => "memset",
                    })
                    .collect::<Vec<&str>>(),
            ),
            Series::new("start_ns".into(), acts.ts_ns[rows.clone()].to_vec()),
            Series::new("dur_ns".into(), acts.dur_ns[rows.clone()].to_vec()),
            Series::new(
                "name".into(),
                rows.clone()
                    .map(|a| trace.names.get(acts.name[a]))
                    .collect::<Vec<&str>>(),
            ),
            Series::new(
                "bucket".into(),
                rows.clone()
                    .map(|a| buckets[a].as_str())
                    .collect::<Vec<&str>>(),
            ),
            Series::new(
                "family".into(),
                rows.clone()
                    .map(|a| class(a).family.as_str())
                    .collect::<Vec<&str>>(),
            ),
            Series::new(
                "library".into(),
                rows.clone()
                    .map(|a| class(a).library.as_str())
                    .collect::<Vec<&str>>(),
            ),
            Series::new(
                "step".into(),
                rows.map(|a| {
                    steps.of_activity[a]
                        .map(|s| steps.per_input[acts.input[a] as usize][s as usize].number)
                })
                .collect::<Vec<Option<u64>>>(),
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
