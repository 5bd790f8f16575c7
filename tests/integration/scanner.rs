//! The Kineto event scanner against its referee, serde: every Kineto trace among the fixtures
//! and the corpus reads into the same table (names, rows, inputs, warnings) or the same error
//! either way, so every analysis and output of it is the same; the corpus's feeds are compared
//! byte for byte too.

use crate::common::{fixture, run_trace};
use crate::corpus::json_files;
use crate::with_shared;
use rocprof_classify::analysis::AnalysisOptions;
use rocprof_classify::ingest::{read_all, ReadOptions};
use std::path::Path;

/// A file read with the scanner or with serde alone: its table as text, or its error.
fn read(path: &Path, serde_events: bool) -> Result<String, String> {
    read_all(
        &[path.to_path_buf()],
        &ReadOptions {
            serde_events,
            ..Default::default()
        },
    )
    .map(|t| format!("{t:?}"))
    .map_err(|e| e.to_string())
}

#[test]
fn the_scanner_reads_every_fixture_as_serde_does() {
    let mut files = Vec::new();
    json_files(&fixture("kineto"), &mut files);
    json_files(&fixture("bad"), &mut files);
    assert!(files.len() > 200, "{}", files.len());
    for f in &files {
        assert!(
            read(f, false) == read(f, true),
            "{}: the scanner's table differs from serde's",
            f.display()
        );
    }
}

#[test]
fn the_scanner_reads_every_corpus_trace_as_serde_does() {
    with_shared!(shared => {
        let traces = crate::corpus::kineto_traces(&shared);
        assert!(traces.len() > 20, "{}", traces.len());
        for f in &traces {
            assert!(
                read(f, false) == read(f, true),
                "{}: the scanner's table differs from serde's",
                f.display()
            );
            let feed = |serde_events: bool| {
                let trace = read_all(
                    std::slice::from_ref(f),
                    &ReadOptions { serde_events, ..Default::default() },
                );
                trace.map(|t| {
                    rocprof_classify::report::json::render(&run_trace(t, &AnalysisOptions::default()))
                })
                .map_err(|e| e.to_string())
            };
            assert!(feed(false) == feed(true), "{}: feeds differ", f.display());
        }
    });
}

/// A plain file is read in place (its windows mapped from the page cache); read through the
/// stream instead, as gzip and stdin are, it gives the same table, warnings and errors, for
/// any window, piece and thread count: whole, cut mid-event, and with a byte broken. The
/// in-place read reports every byte of the file to progress, once.
#[test]
fn files_read_in_place_read_as_streamed() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    json_files(&fixture("kineto/h100"), &mut files);
    json_files(&fixture("bad"), &mut files);
    let mut plain = Vec::new();
    for (k, f) in files.iter().enumerate() {
        // Gzip inflated (a damaged one as far as it goes).
        let raw = std::fs::read(f).unwrap();
        let mut bytes = Vec::new();
        if std::io::Read::read_to_end(
            &mut flate2::read::MultiGzDecoder::new(raw.as_slice()),
            &mut bytes,
        )
        .is_err()
            && bytes.is_empty()
        {
            bytes = raw;
        }
        // The smaller captures: windows of 64 bytes in a debug build take their time.
        if bytes.len() > 1_500_000 {
            continue;
        }
        let mut write = |tag: &str, b: &[u8]| {
            let p = dir.path().join(format!("{k}_{tag}.json"));
            std::fs::write(&p, b).unwrap();
            plain.push(p);
        };
        write("whole", &bytes);
        if bytes.len() > 1000 {
            write("cut", &bytes[..bytes.len() * 2 / 3]);
            let mut broken = bytes.clone();
            broken[bytes.len() / 2] = b'#';
            write("broken", &broken);
        }
    }
    assert!(plain.len() > 25, "{}", plain.len());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    for f in &plain {
        let heard = Arc::new(AtomicU64::new(0));
        let read = |stream_files: bool, block: Option<usize>, one_thread: bool| {
            let counter = heard.clone();
            let opts = ReadOptions {
                stream_files,
                block_bytes: block,
                one_thread_per_file: one_thread,
                piece_bytes: Some(700),
                progress: Some(rocprof_classify::ingest::Progress(Arc::new(move |n| {
                    counter.fetch_add(n, Ordering::Relaxed);
                }))),
                ..Default::default()
            };
            heard.store(0, Ordering::Relaxed);
            let table = pool
                .install(|| read_all(std::slice::from_ref(f), &opts))
                .map(|t| format!("{t:?}"))
                .map_err(|e| e.to_string());
            (table, heard.load(Ordering::Relaxed))
        };
        let len = std::fs::metadata(f).unwrap().len();
        for block in [None, Some(64), Some(4096)] {
            for one_thread in [false, true] {
                let (in_place, progress) = read(false, block, one_thread);
                assert!(
                    in_place == read(true, block, one_thread).0,
                    "{}: window {block:?}, one thread {one_thread}: read in place differs",
                    f.display()
                );
                if in_place.is_ok() {
                    assert_eq!(progress, len, "{}: progress", f.display());
                }
            }
        }
    }
}
