//! Criterion benchmarks of the hot parts of reading and classifying a Kineto trace, on a real H100
//! trace that ships with the repo (`fixtures/kineto/h100/eager_launch_bound.json.gz`, 41k events):
//!
//! - `scan`: the streaming scanner finding each event's bytes (strings skipped, braces counted);
//! - `parse/*`: turning those events into rows, one thread. `serde_json` is what the reader does
//!   (borrowed strings, `args` kept raw and parsed only for kept events); `simd_json_serde` and
//!   `simd_json_tape` are simd-json's two modes extracting the same fields per event, and
//!   `simd_json_tape_batch` parses a whole batch of events as one array (simd-json's best case);
//! - `pieces/*`: the reader's whole walk over the events as [`json_stream::scan_parallel`] runs
//!   it, on one thread and on the rayon pool: serde_json finding each event's end while parsing
//!   it (what the reader does), against simd-json's tape, which needs the scanner to find the
//!   end first (it parses only whole documents);
//! - `classify`: classifying the trace's distinct kernel names with the built-in rules.
//!
//! `cargo bench --bench hot_paths` (add `-- parse` to run one group). The numbers that decided
//! the parser are in the doc comment of `ingest::kineto`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rocprof_classify::classify::RuleSet;
use rocprof_classify::ingest::json_stream::{
    self, PieceInput, PieceParser, PieceSink, ScanError, ScanSink,
};
use rocprof_classify::ingest::{kineto, read_all, ReadOptions};
use serde::Deserialize;
use simd_json::prelude::*;
use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

const FIXTURE: &str = "fixtures/kineto/h100/eager_launch_bound.json.gz";

fn document() -> Vec<u8> {
    let file = std::fs::File::open(FIXTURE).expect("run from the repository root");
    let mut doc = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut doc)
        .unwrap();
    doc
}

/// The byte range of every event, as the scanner finds them.
#[derive(Default)]
struct Ranges(Vec<(usize, usize)>);

impl ScanSink for Ranges {
    fn events(&mut self, _: &[u8], ranges: &[(usize, usize)], base: u64) -> Result<(), ScanError> {
        let base = base as usize;
        self.0
            .extend(ranges.iter().map(|&(s, e)| (base + s, base + e)));
        Ok(())
    }
    fn meta(&mut self, _: &str, _: &[u8], _: u64) -> Result<(), ScanError> {
        Ok(())
    }
}

/// The fields the reader needs, in simd-json's serde mode (no raw values there: `args` is
/// parsed for every event).
#[derive(Deserialize)]
#[allow(dead_code)] // read through black_box
struct SimdEvent<'a> {
    #[serde(borrow, default)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    pid: Option<simd_json::OwnedValue>,
    #[serde(default)]
    tid: Option<simd_json::OwnedValue>,
    #[serde(default)]
    ts: Option<f64>,
    #[serde(default)]
    dur: Option<f64>,
    #[serde(default)]
    args: Option<SimdArgs>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct SimdArgs {
    #[serde(rename = "External id", default)]
    external_id: Option<u64>,
    #[serde(default)]
    correlation: Option<u64>,
    #[serde(default)]
    device: Option<u64>,
    #[serde(default)]
    stream: Option<u64>,
    #[serde(rename = "Input Dims", default)]
    input_dims: Option<simd_json::OwnedValue>,
}

/// Is this an event the reader keeps (a complete event of a kept category)?
fn kept(ph: Option<&str>, cat: Option<&str>) -> bool {
    ph == Some("X")
        && matches!(
            cat,
            Some("kernel" | "gpu_memcpy" | "gpu_memset" | "cuda_runtime" | "cuda_driver")
                | Some("cpu_op" | "user_annotation" | "python_function")
        )
}

fn simd_serde(doc: &[u8], ranges: &[(usize, usize)]) -> usize {
    let mut scratch = Vec::new();
    let mut buffers = simd_json::Buffers::new(4096);
    let mut rows = 0;
    for &(s, e) in ranges {
        scratch.clear();
        scratch.extend_from_slice(&doc[s..e]);
        let Ok(ev) =
            simd_json::serde::from_slice_with_buffers::<SimdEvent>(&mut scratch, &mut buffers)
        else {
            continue;
        };
        if kept(ev.ph.as_deref(), ev.cat.as_deref()) {
            std::hint::black_box(&ev);
            rows += 1;
        }
    }
    rows
}

/// Reads the kept fields of one event from a tape value.
fn tape_row(v: simd_json::tape::Value<'_, '_>) -> usize {
    let ph = v.get_str("ph");
    let cat = v.get_str("cat");
    if !kept(ph, cat) {
        return 0;
    }
    let name = v.get_str("name");
    let ts = v.get("ts").and_then(|x| x.cast_f64());
    let dur = v.get("dur").and_then(|x| x.cast_f64());
    let pid = v.get("pid").and_then(|x| x.as_u64());
    let tid = v.get("tid").and_then(|x| x.as_u64());
    let args = v.get("args").map(|a| {
        let num = |key| a.get(key).and_then(|x| x.as_u64());
        let ids = [
            num("External id"),
            num("correlation"),
            num("device"),
            num("stream"),
        ];
        (ids, a.get("Input Dims").is_some())
    });
    std::hint::black_box((name, ts, dur, pid, tid, args));
    1
}

fn simd_tape(doc: &[u8], ranges: &[(usize, usize)]) -> usize {
    let mut scratch = Vec::new();
    let mut buffers = simd_json::Buffers::new(4096);
    let mut rows = 0;
    for &(s, e) in ranges {
        scratch.clear();
        scratch.extend_from_slice(&doc[s..e]);
        if let Ok(tape) = simd_json::to_tape_with_buffers(&mut scratch, &mut buffers) {
            rows += tape_row(tape.as_value());
        }
    }
    rows
}

/// One tape for a whole batch: the events' bytes are contiguous (separated by commas), so the
/// batch is one JSON array once wrapped in brackets.
fn simd_tape_batch(doc: &[u8], ranges: &[(usize, usize)]) -> usize {
    let mut rows = 0;
    let mut buffers = simd_json::Buffers::new(4 << 20);
    for chunk in ranges.chunks(10_000) {
        let (from, to) = (chunk[0].0, chunk[chunk.len() - 1].1);
        let mut batch = Vec::with_capacity(to - from + 2);
        batch.push(b'[');
        batch.extend_from_slice(&doc[from..to]);
        batch.push(b']');
        let tape = simd_json::to_tape_with_buffers(&mut batch, &mut buffers).unwrap();
        let events = tape.as_value();
        let events = events.as_array().unwrap();
        rows += events.iter().map(tape_row).sum::<usize>();
    }
    rows
}

/// The reader's parse of each element with serde_json alone (the end found while parsing):
/// rows kept.
struct SerdePieces;

impl PieceParser for SerdePieces {
    type Piece = Counted;
    fn element(&self, piece: &mut Self::Piece, input: &PieceInput<'_>, s: usize) -> Option<usize> {
        let (rows, seen) = piece;
        let (e, kept) = kineto::element_for_bench(input, s, true, seen)?;
        *rows += usize::from(kept);
        Some(e)
    }
}

/// The reader's parse of each element by its event scanner (serde for what it declines).
struct ScannerPieces;

impl PieceParser for ScannerPieces {
    type Piece = Counted;
    fn element(&self, piece: &mut Self::Piece, input: &PieceInput<'_>, s: usize) -> Option<usize> {
        let (rows, seen) = piece;
        let (e, kept) = kineto::element_for_bench(input, s, false, seen)?;
        *rows += usize::from(kept);
        Some(e)
    }
}

/// simd-json's tape per element (buffers reused per thread), its end found by the scanner
/// first.
struct SimdPieces;

impl PieceParser for SimdPieces {
    type Piece = Counted;
    fn element(&self, piece: &mut Counted, input: &PieceInput<'_>, s: usize) -> Option<usize> {
        let rows = &mut piece.0;
        thread_local! {
            static SCRATCH: std::cell::RefCell<(Vec<u8>, simd_json::Buffers)> =
                std::cell::RefCell::new((Vec::new(), simd_json::Buffers::new(4096)));
        }
        let e = input.value_end(s)?;
        SCRATCH.with_borrow_mut(|(scratch, buffers)| {
            scratch.clear();
            scratch.extend_from_slice(&input.buf[s..e]);
            if let Ok(tape) = simd_json::to_tape_with_buffers(scratch, buffers) {
                *rows += tape_row(tape.as_value());
            }
        });
        Some(e)
    }
}

/// Sums the pieces' rows.
#[derive(Default)]
struct Rows(usize);

/// A piece's rows, and what the reader's scanner checked in it (unused by the others).
type Counted = (usize, kineto::Seen);

impl PieceSink<Counted> for Rows {
    fn append(&mut self, (rows, _): Counted) -> Result<(), ScanError> {
        self.0 += rows;
        Ok(())
    }
    fn meta(&mut self, _: &str, _: &[u8], _: u64) -> Result<(), ScanError> {
        Ok(())
    }
}

fn walk_pieces<P: PieceParser<Piece = Counted>>(doc: &[u8], parser: &P, parallel: bool) -> usize {
    let mut rows = Rows::default();
    if parallel {
        json_stream::scan_parallel(
            doc,
            parser,
            &mut rows,
            json_stream::BLOCK,
            json_stream::PIECE,
        )
    } else {
        json_stream::scan_pieces(doc, parser, &mut rows, json_stream::BLOCK)
    }
    .unwrap();
    rows.0
}

fn benches(c: &mut Criterion) {
    let doc = document();
    let mut ranges = Ranges::default();
    json_stream::scan(doc.as_slice(), &mut ranges, json_stream::BLOCK).unwrap();
    let ranges = ranges.0;

    // Every variant must find the same rows, or the race is not fair.
    let [gpu, host, _] = kineto::parse_batch_for_bench(&doc, &ranges);
    assert_eq!(simd_serde(&doc, &ranges), gpu + host);
    assert_eq!(simd_tape(&doc, &ranges), gpu + host);
    assert_eq!(simd_tape_batch(&doc, &ranges), gpu + host);
    for parallel in [false, true] {
        assert_eq!(walk_pieces(&doc, &SerdePieces, parallel), gpu + host);
        assert_eq!(walk_pieces(&doc, &ScannerPieces, parallel), gpu + host);
        assert_eq!(walk_pieces(&doc, &SimdPieces, parallel), gpu + host);
    }

    let mut scan = c.benchmark_group("scan");
    scan.throughput(Throughput::Bytes(doc.len() as u64));
    scan.bench_function("json_stream", |b| {
        b.iter(|| {
            let mut r = Ranges::default();
            json_stream::scan(doc.as_slice(), &mut r, json_stream::BLOCK).unwrap();
            r.0.len()
        })
    });
    scan.finish();

    let mut parse = c.benchmark_group("parse");
    parse.throughput(Throughput::Bytes(doc.len() as u64));
    parse.bench_function("serde_json", |b| {
        b.iter(|| kineto::parse_batch_for_bench(&doc, &ranges))
    });
    parse.bench_function("simd_json_serde", |b| b.iter(|| simd_serde(&doc, &ranges)));
    parse.bench_function("simd_json_tape", |b| b.iter(|| simd_tape(&doc, &ranges)));
    parse.bench_function("simd_json_tape_batch", |b| {
        b.iter(|| simd_tape_batch(&doc, &ranges))
    });
    parse.finish();

    let mut pieces = c.benchmark_group("pieces");
    pieces.throughput(Throughput::Bytes(doc.len() as u64));
    for (parallel, how) in [(false, "one_thread"), (true, "pool")] {
        pieces.bench_function(format!("serde_json/{how}"), |b| {
            b.iter(|| walk_pieces(&doc, &SerdePieces, parallel))
        });
        pieces.bench_function(format!("scanner/{how}"), |b| {
            b.iter(|| walk_pieces(&doc, &ScannerPieces, parallel))
        });
        pieces.bench_function(format!("simd_json_tape/{how}"), |b| {
            b.iter(|| walk_pieces(&doc, &SimdPieces, parallel))
        });
    }
    pieces.finish();

    let trace = read_all(&[Path::new(FIXTURE).to_path_buf()], &ReadOptions::default()).unwrap();
    let rules = RuleSet::load(&[]).unwrap();
    c.bench_function("classify/distinct_names", |b| {
        b.iter(|| rules.classify_trace(&trace))
    });
}

criterion_group! {
    name = hot_paths;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = benches
}
criterion_main!(hot_paths);
