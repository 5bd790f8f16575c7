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
