//! The outputs that write activities back out (Perfetto, the CSV/Parquet table) carry the run's
//! own decisions: per bucket, the activities that count (`in_window`) add up to the feed's
//! bucket times, on every committed fixture (convolution traces among them) and on rocprof
//! inputs, whose Perfetto trace is rebuilt from the model.

use crate::common::{assert_valid_feed, bin, fixture};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The feed's bucket times.
fn feed_buckets(feed: &serde_json::Value) -> BTreeMap<String, i64> {
    feed["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["bucket"].as_str().unwrap().to_string(),
                b["kernel_ns"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// A Chrome-trace duration in µs as integer ns (the text keeps at most three decimals).
fn ns(v: &serde_json::Value) -> i64 {
    (v.as_f64().unwrap() * 1000.0).round() as i64
}

/// Per bucket, the durations of the Perfetto events marked `in_window`, and how many GPU
/// events carry no annotation.
fn perfetto_buckets(path: &Path) -> (BTreeMap<String, i64>, usize) {
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).expect("Perfetto output is JSON");
    let mut sums: BTreeMap<String, i64> = BTreeMap::new();
    let mut bare = 0;
    for e in v["traceEvents"].as_array().unwrap() {
        let gpu = matches!(
            e["cat"].as_str().map(str::to_ascii_lowercase).as_deref(),
            Some("kernel" | "gpu_memcpy" | "gpu_memset")
        );
        if !gpu || e["ph"] != "X" {
            continue;
        }
        let tag = &e["args"]["rocprof-classify"];
        if tag.is_null() {
            bare += 1;
            continue;
        }
        if tag["in_window"] == true {
            *sums
                .entry(tag["bucket"].as_str().unwrap().to_string())
                .or_default() += ns(&e["dur"]);
        }
    }
    (sums, bare)
}

/// Per bucket, the `in_window` rows' durations of the CSV export.
fn csv_buckets(path: &Path) -> BTreeMap<String, i64> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (bucket, dur, in_window) = (col("bucket"), col("dur_ns"), col("in_window"));
    let mut sums: BTreeMap<String, i64> = BTreeMap::new();
    for row in reader.records() {
        let row = row.unwrap();
        if &row[in_window] == "true" {
            *sums.entry(row[bucket].to_string()).or_default() += row[dur].parse::<i64>().unwrap();
        }
    }
    sums
}

/// Runs the binary on `input` with every activity output; checks both against the feed.
/// Returns whether the Perfetto output is a copy of the input (else a rebuild).
fn check(input: &Path, cwd: &Path, problems: &mut Vec<String>) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let (perfetto, csv) = (dir.path().join("p.json"), dir.path().join("a.csv"));
    let mut cmd = bin();
    cmd.current_dir(cwd)
        .arg(input)
        .args(["--json", "-", "--perfetto"])
        .arg(&perfetto);
    if cfg!(feature = "polars") {
        cmd.arg("--export-csv").arg(&csv);
    }
    let out = cmd.assert().success().get_output().clone();
    let feed = assert_valid_feed(&out.stdout);
    let want: BTreeMap<String, i64> = feed_buckets(&feed)
        .into_iter()
        .filter(|(_, ns)| *ns > 0)
        .collect();
    let label = input.display();
    let nonzero = |m: BTreeMap<String, i64>| -> BTreeMap<String, i64> {
        m.into_iter().filter(|(_, ns)| *ns > 0).collect()
    };
    let (got, bare) = perfetto_buckets(&perfetto);
    let copied = String::from_utf8_lossy(&out.stderr).contains("(a copy of the input");
    let got = nonzero(got);
    if got != want {
        problems.push(format!("{label}: Perfetto buckets {got:?}, feed {want:?}"));
    }
    if bare > 0 {
        problems.push(format!(
            "{label}: {bare} GPU events in the Perfetto output without a class"
        ));
    }
    if cfg!(feature = "polars") {
        let table = nonzero(csv_buckets(&csv));
        if table != want {
            problems.push(format!("{label}: CSV buckets {table:?}, feed {want:?}"));
        }
    }
    copied
}

#[test]
fn activity_outputs_add_up_to_the_feeds_buckets_on_every_fixture() {
    let inputs = crate::snapshots::fixture_inputs();
    let mut problems = Vec::new();
    let mut conv = false;
    for (dir, arg) in &inputs {
        check(Path::new(arg), dir, &mut problems);
        conv |= arg.contains("resnet") || arg.contains("convnext") || arg.contains("deeplab");
    }
    assert!(conv, "a convolution trace is among the fixtures");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn rocprof_inputs_get_a_perfetto_trace_rebuilt_from_the_model() {
    crate::with_shared!(shared => {
        let mut problems = Vec::new();
        for rel in [
            "corpus/rocpd/28_results.db",
            "corpus/rocprofv3_sdk_docs_2025/kernel_trace.csv",
            "corpus/rocprof1_kokkos/results.json",
        ] {
            let path: PathBuf = shared.join(rel);
            let copied = check(&path, &fixture(""), &mut problems);
            assert!(!copied, "{rel}: a rocprof output is rebuilt, not copied");
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    });
}

/// A ResNet-18 training trace: the Perfetto classes are the feed's (they once came from kernel
/// names alone, which put a ResNet-50 trace's conv time partly in gemm).
#[test]
fn a_conv_trace_keeps_its_op_aware_buckets_in_perfetto() {
    let mut problems = Vec::new();
    let zoo = fixture("kineto/zoo");
    let copied = check(
        Path::new("resnet18_train_eager.json.gz"),
        &zoo,
        &mut problems,
    );
    assert!(copied, "a Kineto file is copied with its events intact");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
