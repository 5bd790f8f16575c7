//! The classified activity table for tools beyond this one (Spark, DuckDB, polars): one row per
//! GPU activity with its rank, device, stream, times and name, and what the analysis decided
//! about it (the run's [`ActivityTable`](crate::analysis::ActivityTable): bucket, family,
//! library, rule, step, launching op, module, source line, and `in_window`, whether it counts
//! in the feed's `summary.kernel_ns`). Written through polars in batches, so memory stays
//! bounded by one batch beyond the run itself; polars types stay inside this module.

use crate::model::ActivityKind;
use crate::pipeline::Run;
use polars::prelude::{
    ArrowDataType, ArrowField, Column, CompatLevel, CsvWriter, DataFrame, IntoColumn, NamedFrom,
    ParquetWriter, PolarsError, SchemaExt, SerWriter, Series,
};
use polars_arrow::array::{Array, StructArray};
use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

/// Rows per written batch (a Parquet row group).
const BATCH_ROWS: usize = 1 << 20;

/// Output format of [`write`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Parquet,
    Csv,
}

/// The classified activity table of `run` (before [`Run::drop_rows`]) as data frames of at most
/// [`BATCH_ROWS`] rows each, in activity order (one empty frame for a run without activities).
pub fn frames(run: &Run) -> impl Iterator<Item = Result<DataFrame, PolarsError>> + '_ {
    batch_ranges(run).map(move |rows| frame(run, rows))
}

/// The rows of each frame: [`BATCH_ROWS`] at a time, one empty range when there are none.
fn batch_ranges(run: &Run) -> impl Iterator<Item = Range<usize>> + 'static {
    let n = run.trace.activities.len();
    (0..n.max(1))
        .step_by(BATCH_ROWS)
        .map(move |from| from..(from + BATCH_ROWS).min(n))
}

/// Rows `range` of the classified activity table.
fn frame(run: &Run, range: Range<usize>) -> Result<DataFrame, PolarsError> {
    frame_of(run, &range.collect::<Vec<usize>>(), true)
}

/// The classified activity table's rows `rows` (activity indices), with or without the `rank`
/// column (a rank-partitioned dataset has it in its directory names).
fn frame_of(run: &Run, rows: &[usize], with_rank: bool) -> Result<DataFrame, PolarsError> {
    let trace = &run.trace;
    let acts = &trace.activities;
    let column = |v: &[u32]| rows.iter().map(|&a| v[a]).collect::<Vec<u32>>();
    let range = rows.iter().copied();
    let rows_of = rows;
    let rows: Vec<_> = rows.iter().map(|&a| run.activities.get(trace, a)).collect();
    let mut columns: Vec<Column> = Vec::with_capacity(17);
    if with_rank {
        columns.push(
            Series::new(
                "rank".into(),
                rows.iter().map(|r| r.rank).collect::<Vec<Option<u32>>>(),
            )
            .into_column(),
        );
    }
    let rest: Vec<Column> = vec![
        Series::new(
            "input".into(),
            rows_of.iter().map(|&a| acts.input[a]).collect::<Vec<u32>>(),
        ),
        Series::new("device".into(), column(&acts.device)),
        Series::new("stream".into(), column(&acts.stream)),
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
        Series::new(
            "start_ns".into(),
            range.clone().map(|a| acts.ts_ns[a]).collect::<Vec<i64>>(),
        ),
        Series::new(
            "dur_ns".into(),
            range.clone().map(|a| acts.dur_ns[a]).collect::<Vec<i64>>(),
        ),
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
    columns.extend(rest);
    DataFrame::new_infer_height(columns)
}

/// Writes the classified activity table of `run` (before [`Run::drop_rows`]); returns the
/// number of rows.
pub fn write<W: Write + Send>(
    run: &Run,
    format: ExportFormat,
    out: W,
) -> Result<usize, PolarsError> {
    let mut frames = frames(run);
    let first = frames.next().expect("frames yields at least one frame")?;
    match format {
        ExportFormat::Parquet => {
            let mut w = ParquetWriter::new(out).batched(first.schema())?;
            w.write_batch(&first)?;
            for f in frames {
                w.write_batch(&f?)?;
            }
            w.finish()?;
        }
        ExportFormat::Csv => {
            let mut w = CsvWriter::new(out).batched(first.schema())?;
            w.write_batch(&first)?;
            for f in frames {
                w.write_batch(&f?)?;
            }
            w.finish()?;
        }
    }
    Ok(run.trace.activities.len())
}

/// The partition directory of a rank: `rank=N`, or Hive's name for a null value when the input
/// has no rank (a single-process trace).
pub fn rank_partition(rank: Option<u32>) -> String {
    match rank {
        Some(r) => format!("rank={r}"),
        None => "rank=__HIVE_DEFAULT_PARTITION__".to_string(),
    }
}

/// Writes the classified activity table of `run` as a Hive-partitioned Parquet dataset:
/// `dir/rank=N/part-0.parquet` per rank (the `rank` column lives in the directory names, as
/// Spark, DuckDB and polars expect), each in row groups of `BATCH_ROWS`. Returns the files
/// written and their row counts, by rank.
pub fn write_dataset(
    run: &Run,
    dir: &std::path::Path,
) -> Result<Vec<(std::path::PathBuf, usize)>, PolarsError> {
    let trace = &run.trace;
    let acts = &trace.activities;
    let mut by_rank: std::collections::BTreeMap<Option<u32>, Vec<usize>> = Default::default();
    for a in 0..acts.len() {
        by_rank
            .entry(trace.inputs[acts.input[a] as usize].rank)
            .or_default()
            .push(a);
    }
    if by_rank.is_empty() {
        // The table's schema, even without rows.
        by_rank.insert(trace.inputs.first().and_then(|i| i.rank), Vec::new());
    }
    let mut written = Vec::new();
    for (rank, rows) in by_rank {
        let part = dir.join(rank_partition(rank));
        std::fs::create_dir_all(&part)?;
        let path = part.join("part-0.parquet");
        let file = std::io::BufWriter::new(std::fs::File::create(&path)?);
        let first = frame_of(run, &rows[..rows.len().min(BATCH_ROWS)], false)?;
        let mut w = ParquetWriter::new(file).batched(first.schema())?;
        w.write_batch(&first)?;
        for chunk in rows.chunks(BATCH_ROWS).skip(1) {
            w.write_batch(&frame_of(run, chunk, false)?)?;
        }
        w.finish()?;
        written.push((path, rows.len()));
    }
    Ok(written)
}

/// The Arrow C stream interface (`ArrowArrayStream`), as consumers such as pyarrow import it.
pub use polars_arrow::ffi::ArrowArrayStream;

/// The classified activity table of `run` as an Arrow C stream of record batches (struct
/// arrays, one per frame of `frames`), made as the consumer reads it. Strings are plain Arrow
/// large strings (`CompatLevel::oldest`), which every Arrow reader knows; nothing is copied
/// on the consumer's side.
pub fn arrow_stream(run: Arc<Run>) -> Result<ArrowArrayStream, PolarsError> {
    // An empty frame has the table's schema.
    let fields: Vec<ArrowField> = frame(&run, 0..0)?
        .schema()
        .to_arrow(CompatLevel::oldest())
        .into_iter_values()
        .collect();
    let dtype = ArrowDataType::Struct(fields);
    let field = ArrowField::new("".into(), dtype.clone(), false);
    let batches = batch_ranges(&run)
        .map(move |rows| frame(&run, rows))
        .flat_map(move |f| -> Vec<Result<Box<dyn Array>, PolarsError>> {
            let mut f = match f {
                Ok(f) => f,
                Err(e) => return vec![Err(e)],
            };
            f.rechunk_mut();
            f.iter_chunks(CompatLevel::oldest(), false)
                .map(|batch| {
                    let len = batch.height();
                    Ok(StructArray::new(dtype.clone(), len, batch.into_arrays(), None).boxed())
                })
                .collect()
        });
    Ok(polars_arrow::ffi::export_iterator(Box::new(batches), field))
}
