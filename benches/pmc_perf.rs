//! Which CSV engine reads rocprof-compute's wide `pmc_perf.csv`: polars with column projection
//! (what `ingest::rocprof_compute` uses) against the csv crate reading every field of every row.
//!
//! `cargo bench --bench pmc_perf` (needs ../shared/corpus). The real 301-dispatch MI300X workload
//! is repeated to 20,000 dispatches (2,043 columns, as a long training-step profile would give).

use polars::prelude::{CsvReadOptions, PlSmallStr, SerReader};
use std::io::Read;
use std::time::{Duration, Instant};

fn polars_projected(bytes: &[u8], wanted: &[String]) -> usize {
    let names: std::sync::Arc<[PlSmallStr]> = wanted
        .iter()
        .map(|h| PlSmallStr::from(h.as_str()))
        .collect();
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .with_columns(Some(names))
        .with_infer_schema_length(Some(0))
        .with_n_threads(Some(1))
        .into_reader_with_file_handle(std::io::Cursor::new(bytes.to_vec()))
        .finish()
        .unwrap();
    df.height() * df.width()
}

fn csv_all_fields(bytes: &[u8], wanted: &[String]) -> usize {
    let mut rdr = csv::Reader::from_reader(bytes);
    let cols: Vec<usize> = {
        let h = rdr.headers().unwrap();
        wanted
            .iter()
            .filter_map(|w| h.iter().position(|x| x == *w))
            .collect()
    };
    let mut cells = 0;
    let mut rec = csv::StringRecord::new();
    while rdr.read_record(&mut rec).unwrap() {
        cells += cols.iter().filter(|&&c| rec.get(c).is_some()).count();
    }
    cells
}

fn median(f: &dyn Fn() -> usize, runs: usize) -> (Duration, usize) {
    let mut times = Vec::new();
    let mut out = 0;
    for _ in 0..runs {
        let t = Instant::now();
        out = std::hint::black_box(f());
        times.push(t.elapsed());
    }
    times.sort();
    (times[runs / 2], out)
}

fn main() {
    let src =
        std::path::Path::new("../shared/corpus/rocprof_compute_v3_bmm1/MI300X_A1/pmc_perf.csv.gz");
    if !src.exists() {
        eprintln!("skipped: {} is absent", src.display());
        return;
    }
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(src).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let rows: Vec<&str> = lines.collect();
    let mut big = String::from(header);
    big.push('\n');
    for i in 0..20_000 {
        big.push_str(rows[i % rows.len()]);
        big.push('\n');
    }
    let bytes = big.into_bytes();
    println!(
        "pmc_perf.csv: {} dispatches x {} columns, {:.1} MB",
        20_000,
        header.split(',').count(),
        bytes.len() as f64 / 1e6
    );
    // The columns the counter reader asks for.
    let header_names: Vec<String> = header.split(',').map(str::to_string).collect();
    let wanted = rocprof_classify::ingest::wanted_columns(&header_names);
    let (tp, np) = median(&|| polars_projected(&bytes, &wanted), 5);
    let (tc, nc) = median(&|| csv_all_fields(&bytes, &wanted), 5);
    assert_eq!(np, nc, "both engines read the same cells");
    println!(
        "polars, projected columns : {:>8.1} ms (median of 5)",
        tp.as_secs_f64() * 1e3
    );
    println!(
        "csv crate, every field    : {:>8.1} ms (median of 5)",
        tc.as_secs_f64() * 1e3
    );
    println!(
        "csv / polars              : {:>8.2}x",
        tc.as_secs_f64() / tp.as_secs_f64()
    );
}
