//! Bad input: a clear one-line error naming the file and byte offset, exit 2, no panic; a cut
//! trace is analyzed up to its last complete event with a warning and `truncated: true`.

use crate::common::{assert_valid_feed, bin, fixture};
use predicates::prelude::*;
use std::io::{Read, Write};

fn fails_with(rel: &str, expected: &[&str]) {
    let path = fixture(rel);
    let out = bin()
        .arg(&path)
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(
        err.contains(&path.display().to_string()),
        "names the file: {err}"
    );
    for e in expected {
        assert!(err.contains(e), "{rel}: expected {e:?} in {err}");
    }
    assert!(!err.contains("panicked"));
}

#[test]
fn empty_file() {
    fails_with("bad/empty.json", &["empty file"]);
}

#[test]
fn binary_garbage() {
    fails_with("bad/garbage.bin", &["byte 0", "expected a JSON trace"]);
}

#[test]
fn gzip_of_garbage() {
    fails_with(
        "bad/gzip_of_garbage.json.gz",
        &["byte 0", "expected a JSON trace"],
    );
}

#[test]
fn corrupt_gzip() {
    fails_with("bad/corrupt_gzip.json.gz", &["byte 0", "gzip"]);
}

#[test]
fn unknown_csv_given_as_json() {
    fails_with("bad/unknown_csv.json", &["byte 0", "time,value,unit"]);
}

#[test]
fn no_trace_events() {
    fails_with("bad/no_trace_events.json", &["no \"traceEvents\""]);
}

#[test]
fn trace_events_not_an_array() {
    fails_with("bad/events_not_array.json", &["byte 16", "not an array"]);
}

#[test]
fn missing_file() {
    bin()
        .arg("does/not/exist.json")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does/not/exist.json: cannot open"));
}

fn decompressed_fixture() -> Vec<u8> {
    let mut v = Vec::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(fixture("kineto/h100/eager_manual_attn.json.gz")).unwrap(),
    )
    .read_to_end(&mut v)
    .unwrap();
    v
}

fn feed_of(path: &std::path::Path, extra: &[&str]) -> (serde_json::Value, String) {
    let out = bin()
        .args(extra)
        .arg("--json")
        .arg("-")
        .arg(path)
        .assert()
        .success()
        .get_output()
        .clone();
    // Parsed in pieces of a few events on several threads: the same feed and warnings.
    let pieces = bin()
        .args(extra)
        .args(["--json", "-", "--threads", "4", "--piece-bytes", "3000"])
        .arg(path)
        .output()
        .unwrap();
    assert_eq!(
        (&pieces.stdout, &pieces.stderr),
        (&out.stdout, &out.stderr),
        "{}: parsed in pieces",
        path.display()
    );
    (
        assert_valid_feed(&out.stdout),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_trace_cut_mid_write_is_analyzed_up_to_its_last_event() {
    let full = decompressed_fixture();
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.json");
    std::fs::write(&whole, &full).unwrap();
    let (whole_feed, _) = feed_of(&whole, &[]);
    let whole_kernels = whole_feed["summary"]["kernel_ns"].as_i64().unwrap();
    let mut previous = 0;
    for frac in [0.3, 0.6, 0.9, 0.999] {
        let cut = (full.len() as f64 * frac) as usize;
        let p = dir.path().join(format!("cut_{cut}.json"));
        std::fs::write(&p, &full[..cut]).unwrap();
        // A cut before the first kernel holds no GPU activity: exit 3 unless --allow-empty.
        let (feed, err) = feed_of(&p, &["--allow-empty"]);
        assert_eq!(feed["inputs"][0]["truncated"], true);
        assert!(
            err.contains("warning")
                && err.contains("truncated")
                && err.contains(&format!("byte {cut}")),
            "{err}"
        );
        let warnings = feed["inputs"][0]["warnings"].as_array().unwrap();
        assert!(warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("truncated")));
        // More of the file, more of the GPU time; never more than the whole.
        let k = feed["summary"]["kernel_ns"].as_i64().unwrap();
        assert!(k >= previous && k <= whole_kernels, "{frac}: {k}");
        previous = k;
        let plain = bin().arg(&p).output().unwrap();
        assert_eq!(
            plain.status.code(),
            Some(if k == 0 { 3 } else { 0 }),
            "{frac}"
        );
        // --strict turns it into an error.
        bin()
            .arg("--strict")
            .arg(&p)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("truncated at byte"));
    }
    assert!(previous > 0);
}

#[test]
fn a_gzip_cut_mid_write_is_analyzed_with_a_warning() {
    let gz = std::fs::read(fixture("kineto/h100/eager_manual_attn.json.gz")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.json.gz");
    // Kineto writes CPU events first and GPU activity last: cut late enough to keep some kernels.
    std::fs::File::create(&p)
        .unwrap()
        .write_all(&gz[..gz.len() * 97 / 100])
        .unwrap();
    let (feed, err) = feed_of(&p, &[]);
    assert_eq!(feed["inputs"][0]["truncated"], true, "{err}");
    assert!(err.contains("decompressed"), "{err}");
    assert!(feed["summary"]["kernel_ns"].as_i64().unwrap() > 0);
}

#[test]
fn quiet_silences_the_warning_but_not_the_feed() {
    let full = decompressed_fixture();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.json");
    std::fs::write(&p, &full[..full.len() * 9 / 10]).unwrap();
    let (feed, err) = feed_of(&p, &["-q"]);
    assert!(err.is_empty(), "{err}");
    assert_eq!(feed["inputs"][0]["truncated"], true);
}

/// A .gz that expands past 200x its size (and 256 MiB) is refused as a decompression bomb, with
/// the file and the offset, exit 2; `--max-gunzip-ratio` raises the limit.
#[test]
fn a_decompression_bomb_is_refused() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.json.gz");
    // One gzip member per MiB of blanks, the same member 300 times (gzip allows a stream of
    // members): 300 MiB from a few hundred kilobytes, made in no time.
    let member = |data: &[u8]| {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(data).unwrap();
        gz.finish().unwrap()
    };
    let mut file = std::fs::File::create(&bomb).unwrap();
    file.write_all(&member(br#"{"traceEvents": ["#)).unwrap();
    let blanks = member(&vec![b' '; 1 << 20]);
    for _ in 0..300 {
        file.write_all(&blanks).unwrap();
    }
    drop(file);
    let size = std::fs::metadata(&bomb).unwrap().len();
    assert!(
        size * 200 < 1 << 30,
        "the test file must expand more than 200x: {size}"
    );
    let out = crate::common::bin().arg(&bomb).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bomb.json.gz") && err.contains("decompression bomb"),
        "{err}"
    );
    assert!(err.contains("byte "), "names the offset: {err}");
    assert!(out.stdout.is_empty());
    // Raised: read to the end (an unfinished document: a truncation warning, no events).
    let out = crate::common::bin()
        .arg(&bomb)
        .args(["--max-gunzip-ratio", "100000", "--json", "-"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("decompression bomb"), "{err}");
    assert!(err.contains("truncated"), "{err}");
}

/// Every h100 trace cut at 50% and at 99% of its bytes: every output format says it is
/// truncated, and at 99% the bucket shares stay within 2 points of the whole trace's.
#[test]
fn every_h100_trace_cut_short_is_reported_as_truncated() {
    use std::io::Read;
    let Some(shared) = crate::common::shared() else {
        eprintln!("skipped: ../shared is absent");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut traces: Vec<_> = std::fs::read_dir(shared.join("traces/h100"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    traces.sort();
    assert!(traces.len() >= 9);
    let shares = |feed: &serde_json::Value| -> std::collections::BTreeMap<String, f64> {
        feed["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["bucket"].as_str().unwrap().to_string(),
                    b["pct"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let run = |path: &std::path::Path| -> (serde_json::Value, [String; 3]) {
        let out = |ext: &str| dir.path().join(format!("out.{ext}"));
        let table = crate::common::bin()
            .arg(path)
            // A cut before the first kernel has no GPU activity: reported, not refused.
            .args(["--allow-empty", "--color", "never", "--json"])
            .arg(out("json"))
            .arg("--markdown")
            .arg(out("md"))
            .arg("--html")
            .arg(out("html"))
            .output()
            .unwrap();
        assert_eq!(table.status.code(), Some(0), "{}", path.display());
        let read = |p: std::path::PathBuf| std::fs::read_to_string(p).unwrap();
        let feed = crate::common::assert_valid_feed(read(out("json")).as_bytes());
        (
            feed,
            [
                String::from_utf8(table.stdout).unwrap(),
                read(out("md")),
                read(out("html")),
            ],
        )
    };
    for trace in &traces {
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(trace).unwrap())
            .read_to_end(&mut text)
            .unwrap();
        let (whole, _) = run(trace);
        assert_eq!(whole["inputs"][0]["truncated"], false);
        for pct in [50, 99] {
            let cut = dir.path().join(format!("cut{pct}.json"));
            std::fs::write(&cut, &text[..text.len() * pct / 100]).unwrap();
            let (feed, reports) = run(&cut);
            let name = trace.file_name().unwrap().to_string_lossy();
            assert_eq!(feed["inputs"][0]["truncated"], true, "{name} at {pct}%");
            for (r, what) in reports.iter().zip(["table", "markdown", "html"]) {
                assert!(
                    r.to_lowercase().contains("truncated"),
                    "{name} at {pct}%: {what}"
                );
            }
            if pct == 99 {
                let (a, b) = (shares(&whole), shares(&feed));
                for (bucket, p) in &a {
                    let q = b.get(bucket).copied().unwrap_or(0.0);
                    assert!((p - q).abs() <= 2.0, "{name}: {bucket} {p} vs {q} at 99%");
                }
            }
        }
    }
}

/// The step a 99% cut leaves unfinished is left out, and stderr says so (a fixture, so this
/// runs without ../shared).
#[test]
fn the_unfinished_step_of_a_cut_trace_is_named_on_stderr() {
    use std::io::Read;
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(fixture("kineto/h100/train_eager_fp32.json.gz")).unwrap(),
    )
    .read_to_end(&mut text)
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &text[..text.len() * 99 / 100]).unwrap();
    let out = crate::common::bin()
        .arg(&cut)
        .args(["--json", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("left out 1 step(s) the cut left unfinished"),
        "{err}"
    );
    let feed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let whole = crate::common::analyze_path(&fixture("kineto/h100/train_eager_fp32.json.gz"));
    assert_eq!(
        feed["summary"]["steps"].as_u64().unwrap() as usize,
        whole.summary.steps - 1
    );
}
