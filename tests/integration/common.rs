//! Shared helpers: paths, running the analysis, schema validation.

use rocprof_classify::analysis::{Analysis, AnalysisOptions};
use rocprof_classify::classify::RuleSet;
use rocprof_classify::model::Trace;
use rocprof_classify::recommend::Catalog;
use rocprof_classify::Run;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(rel: &str) -> PathBuf {
    root().join("fixtures").join(rel)
}

/// `../shared`, when present (CI always has it; a user's clone may not). Each call without it
/// counts as a check skipped, and the test binary's last line says how many
/// (`skipped for lack of ../shared: N`; `.ci/test` fails on N > 0 when `../shared` is there).
pub fn shared() -> Option<PathBuf> {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| {
        // libtest has no hook at the end of a run; the C library's exit handlers run after it.
        extern "C" {
            fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
        }
        extern "C" fn report() {
            let n = SKIPPED.load(std::sync::atomic::Ordering::Relaxed);
            eprintln!("skipped for lack of ../shared: {n}");
        }
        // SAFETY: registers a plain function that only reads an atomic and writes to stderr.
        unsafe {
            atexit(report);
        }
    });
    let p = root().join("..").join("shared");
    if p.is_dir() {
        Some(p)
    } else {
        SKIPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        None
    }
}

/// Checks skipped for lack of `../shared` (see [`shared`]).
static SKIPPED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Runs `$body` with the shared folder, or prints a notice and returns.
#[macro_export]
macro_rules! with_shared {
    ($name:ident => $body:block) => {
        match $crate::common::shared() {
            Some($name) => $body,
            None => {
                eprintln!("skipped: ../shared is absent (corpus tests need it)");
                return;
            }
        }
    };
}

pub fn rules() -> &'static RuleSet {
    static RULES: OnceLock<RuleSet> = OnceLock::new();
    RULES.get_or_init(|| RuleSet::load(&[]).expect("built-in rules load"))
}

pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::load(&[]).expect("built-in ladder loads"))
}

/// The library's whole pipeline (detectors and ladder too) on a trace already read, with the
/// built-in rules.
pub fn run_trace(trace: Trace, opts: &AnalysisOptions) -> Run {
    rocprof_classify::pipeline::run_trace(trace, &[], true, rules(), catalog(), None, opts)
}

/// [`rocprof_classify::run`] on one path, every kernel listed. Inputs without GPU activity (an
/// API-only rocprof file, a CPU-only HTA sample) are analyzed as `--allow-empty` does: the sweeps
/// over every corpus file read them too; `refusals` checks that they are refused otherwise.
pub fn run_path(p: &Path) -> Run {
    let config = rocprof_classify::Config {
        analysis: AnalysisOptions {
            top: usize::MAX,
            ..Default::default()
        },
        allow_empty: true,
        ..Default::default()
    };
    rocprof_classify::run(&[p.to_path_buf()], &config).unwrap_or_else(|e| panic!("{e}"))
}

/// The analysis of [`rocprof_classify::run`] on `paths`, listing `top` kernels: tests of the
/// numbers go through the same one call as the binary and the Python package.
pub fn analyze_paths(paths: &[PathBuf], top: usize) -> Analysis {
    let config = rocprof_classify::Config {
        analysis: AnalysisOptions {
            top,
            ..Default::default()
        },
        allow_empty: true,
        ..Default::default()
    };
    rocprof_classify::run(paths, &config)
        .unwrap_or_else(|e| panic!("{e}"))
        .analysis
}

/// [`analyze_paths`] of one path, every kernel listed.
pub fn analyze_path(p: &Path) -> Analysis {
    analyze_paths(&[p.to_path_buf()], usize::MAX)
}

/// Validates a feed against the repo's JSON Schema; panics with every violation.
pub fn assert_valid_feed(feed: &[u8]) -> serde_json::Value {
    static SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();
    let validator = SCHEMA.get_or_init(|| {
        let schema: serde_json::Value =
            serde_json::from_str(rocprof_classify::report::json::FEED_SCHEMA)
                .expect("schema is JSON");
        jsonschema::validator_for(&schema).expect("schema compiles")
    });
    let value: serde_json::Value = serde_json::from_slice(feed).expect("feed is JSON");
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "feed violates the schema:\n{}",
        errors.join("\n")
    );
    assert_evidence_typed(&value);
    assert_path_adds_up(&value);
    assert_savings_hold(&value);
    value
}

/// The hard limits of savings: each within the window and its range (below zero only where a
/// replay says the change costs time), an A/B check wherever the worst case is a slowdown; the
/// plan's steps chain the marginal savings, the levels add up to the same total (every
/// recommendation applied together: the replayed floor the plan ends on), never past the window.
pub fn assert_savings_hold(feed: &serde_json::Value) {
    let window = feed["summary"]["window_ns"].as_i64().unwrap_or(0);
    let mut marginal = 0i64;
    let recs = feed["recommendations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let plan = feed["plan"].as_array().cloned().unwrap_or_default();
    assert_eq!(plan.len(), recs.len(), "one plan step per recommendation");
    for (r, step) in recs.iter().zip(&plan) {
        let id = r["id"].as_str().unwrap_or("?");
        let est = r["est_savings_ns"].as_i64().unwrap();
        let range = r["est_savings_range_ns"].as_array().unwrap();
        let (worst, best) = (range[0].as_i64().unwrap(), range[1].as_i64().unwrap());
        let floor = if r["savings_basis"] == "replay" {
            -window.max(0)
        } else {
            0
        };
        assert!(
            (floor..=window.max(0)).contains(&est) && best == est && worst <= best,
            "{id}: est {est}, range {worst}..{best}, window {window}"
        );
        assert_eq!(
            worst < 0,
            r["verify"] == "ab" && r["revert_if_slower_pct"].is_number(),
            "{id}: a worst case below zero, and only then, asks for an A/B check"
        );
        marginal += r["marginal_savings_ns"].as_i64().unwrap();
        assert_eq!(step["id"], r["id"]);
        assert_eq!(
            step["saved_ns"].as_i64().unwrap(),
            marginal,
            "{id}: the plan chains the marginals"
        );
        assert_eq!(
            step["window_ns"].as_i64().unwrap(),
            window - marginal,
            "{id}"
        );
    }
    assert!(
        marginal <= window.max(0),
        "marginal savings {marginal} past the window {window}"
    );
    let mut levels = 0i64;
    for l in feed["ladder"].as_array().into_iter().flatten() {
        let ns = l["est_savings_ns"].as_i64().unwrap();
        assert!(
            ns <= window.max(0),
            "level {}: {ns} of {window}",
            l["level"]
        );
        levels += ns;
    }
    if !recs.is_empty() && feed["ladder"].as_array().is_some_and(|l| !l.is_empty()) {
        assert_eq!(
            levels, marginal,
            "the levels and the plan add up to the same total"
        );
    }
}

/// The critical path's invariants, for the job and each rank: each step's labels add up to its
/// path, which is its step's time; the path adds up to its steps and stays within the window.
pub fn assert_path_adds_up(feed: &serde_json::Value) {
    let views = std::iter::once(feed).chain(feed["ranks"].as_array().into_iter().flatten());
    for view in views {
        let Some(path) = view.get("critical_path") else {
            continue;
        };
        let ns = |v: &serde_json::Value| v["ns"].as_i64().unwrap();
        let steps = path["per_step"].as_array().unwrap();
        let labels: i64 = path["labels"].as_array().unwrap().iter().map(ns).sum();
        assert_eq!(labels, ns(path), "the labels add up to the path");
        assert_eq!(
            steps.iter().map(ns).sum::<i64>(),
            ns(path),
            "the steps add up to the path"
        );
        let window = view["summary"]["window_ns"].as_i64().unwrap();
        assert!(
            ns(path) <= window,
            "path {} over the window {window}",
            ns(path)
        );
        let breakdown = feed["step_breakdown"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for step in steps {
            let sum: i64 = step["labels"].as_array().unwrap().iter().map(ns).sum();
            assert_eq!(sum, ns(step), "a step's labels add up to its path: {step}");
            // Its step's time, where one row and one path have its rank and step.
            let rank = step.get("rank").cloned().unwrap_or(serde_json::Value::Null);
            let rows: Vec<_> = breakdown
                .iter()
                .filter(|r| r["step"] == step["step"] && r["rank"] == rank)
                .collect();
            let twins = steps
                .iter()
                .filter(|t| t["step"] == step["step"] && t.get("rank") == step.get("rank"))
                .count();
            if let ([row], Some(_), 1) = (rows.as_slice(), step.get("step"), twins) {
                assert_eq!(
                    ns(step),
                    row["dur_ns"].as_i64().unwrap(),
                    "step {step} vs {row}"
                );
            }
        }
    }
}

/// Each finding of a feed reads back as its id's evidence type and writes the same JSON again,
/// with only the keys and the kind that type declares (what a ladder rule may name).
pub fn assert_evidence_typed(feed: &serde_json::Value) {
    use rocprof_classify::detect::{Detail, Finding};
    for json in feed["findings"].as_array().into_iter().flatten() {
        let f: Finding =
            serde_json::from_value(json.clone()).unwrap_or_else(|e| panic!("{e}: {json}"));
        assert_eq!(&serde_json::to_value(&f).unwrap(), json, "{}", f.id);
        let keys = Detail::keys(f.id);
        for key in json["evidence"].as_object().unwrap().keys() {
            assert!(
                keys.contains(&key.as_str()),
                "{}: {key} not in {keys:?}",
                f.id
            );
        }
        if let Some(kind) = f.kind() {
            assert!(Detail::kinds(f.id).contains(&kind), "{}: {kind}", f.id);
            assert_eq!(json["evidence"]["kind"], kind, "{}", f.id);
        }
    }
}

pub fn bin() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("rocprof-classify").expect("binary is built")
}

/// Total length of the union of `[start, end)` intervals, each clipped to `[lo, hi)`.
pub fn union_ns(mut iv: Vec<(i64, i64)>, lo: i64, hi: i64) -> i64 {
    iv.sort_unstable();
    let (mut total, mut cur) = (0i64, i64::MIN);
    for (s, e) in iv {
        let (s, e) = (s.max(lo).max(cur), e.min(hi));
        if e > s {
            total += e - s;
            cur = e;
        }
    }
    total
}

/// The binary's JSON feed (`--json -`) for `path` with extra `args`, checked against the schema.
pub fn feed_of(path: &Path, args: &[&str]) -> serde_json::Value {
    let args: Vec<&str> = ["--json", "-"].iter().chain(args).copied().collect();
    assert_valid_feed(stdout_of(path, &args).as_bytes())
}

/// A gzipped JSON file (a raw trace), parsed.
pub fn read_json_gz(path: &Path) -> serde_json::Value {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()),
        &mut text,
    )
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Writes `doc` gzipped to `path` (a trace a test rewrote).
pub fn write_json_gz(path: &Path, doc: &serde_json::Value) {
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::fast(),
    );
    serde_json::to_writer(&mut gz, doc).unwrap();
    gz.finish().unwrap();
}

/// The ids of a feed's `findings` or `recommendations`, in the feed's order.
pub fn feed_ids(feed: &serde_json::Value, key: &str) -> Vec<String> {
    feed[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

/// A fixture's truth file (what a capture script recorded), parsed.
pub fn read_truth(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The iterations of `run` in a capture script's truth that the profiler recorded.
pub fn profiled_steps<'a>(truth: &'a serde_json::Value, run: &str) -> Vec<&'a serde_json::Value> {
    truth["runs"][run]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["profiled"] == true)
        .collect()
}

/// What the binary prints on stdout for `path` with `args`.
pub fn stdout_of(path: &Path, args: &[&str]) -> String {
    let out = bin()
        .arg(path)
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// The share of the window the compute kernels kept the GPU busy (communication and copies
/// excluded), from the time partition.
pub fn compute_busy_pct(run: &Run) -> f64 {
    run.analysis
        .time_partition
        .iter()
        .filter(|r| {
            matches!(
                r.category,
                rocprof_classify::analysis::Category::Gemm
                    | rocprof_classify::analysis::Category::Attention
                    | rocprof_classify::analysis::Category::Conv
                    | rocprof_classify::analysis::Category::Elementwise
                    | rocprof_classify::analysis::Category::Other
            )
        })
        .map(|r| r.pct)
        .sum()
}
