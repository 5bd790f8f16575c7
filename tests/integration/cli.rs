//! The command line as users and CI call it.

use crate::common::{assert_valid_feed, bin, fixture};
use predicates::prelude::*;

const MANUAL: &str = "kineto/h100/eager_manual_attn.json.gz";

#[test]
fn json_to_stdout_prints_only_the_feed() {
    let out = bin()
        .args(["--json", "-"])
        .arg(fixture(MANUAL))
        .assert()
        .success()
        .get_output()
        .clone();
    let feed = assert_valid_feed(&out.stdout);
    assert_eq!(feed["schema_version"], 4);
    assert_eq!(feed["tool"]["name"], "rocprof-classify");
    assert_eq!(feed["inputs"][0]["format"], "kineto");
    assert_eq!(feed["inputs"][0]["vendor"], "nvidia");
    assert!(out.stderr.is_empty());
}

#[test]
fn json_to_a_file_and_the_table_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("feed.json");
    let out = bin()
        .arg("--json")
        .arg(&path)
        .arg(fixture(MANUAL))
        .assert()
        .success()
        .get_output()
        .clone();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains("GPU time by bucket")
            && table.contains("gemm")
            && table.contains("elementwise")
    );
    assert_valid_feed(&std::fs::read(&path).unwrap());
}

#[test]
fn stdin_reads_the_same_trace() {
    let bytes = std::fs::read(fixture(MANUAL)).unwrap();
    let from_stdin = bin()
        .args(["--json", "-", "-"])
        .write_stdin(bytes)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let from_file = bin()
        .args(["--json", "-"])
        .arg(fixture(MANUAL))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let a = assert_valid_feed(&from_stdin);
    let b = assert_valid_feed(&from_file);
    assert_eq!(a["buckets"], b["buckets"]);
    assert_eq!(a["inputs"][0]["path"], "<stdin>");
}

#[test]
fn a_directory_is_one_input_per_file() {
    let dir = tempfile::tempdir().unwrap();
    for (i, f) in ["eager_manual_attn", "eager_sdpa_fused"].iter().enumerate() {
        std::fs::copy(
            fixture(&format!("kineto/h100/{f}.json.gz")),
            dir.path().join(format!("rank{i}.json.gz")),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join("notes.txt"), "not a trace").unwrap();
    let out = bin()
        .args(["--json", "-"])
        .arg(dir.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let feed = assert_valid_feed(&out);
    assert_eq!(feed["inputs"].as_array().unwrap().len(), 2);
    let one = assert_valid_feed(
        &bin()
            .args(["--json", "-"])
            .arg(fixture(MANUAL))
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    assert!(feed["summary"]["kernel_ns"].as_i64() > one["summary"]["kernel_ns"].as_i64());
}

#[test]
fn no_color_means_no_escape_codes() {
    bin()
        .args(["--color", "never"])
        .arg(fixture(MANUAL))
        .assert()
        .success()
        .stdout(predicate::str::contains("\x1b[").not());
    bin()
        .args(["--color", "always"])
        .arg(fixture(MANUAL))
        .assert()
        .success()
        .stdout(predicate::str::contains("\x1b["));
}

/// Every trace fixture: the single-GPU traces and the two-rank directories.
fn every_trace_fixture() -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for dir in [
        "kineto/h100",
        "kineto/h100x2",
        "kineto/h200_graphs",
        "kineto/h100_torch_trace",
    ] {
        let mut entries: Vec<std::path::PathBuf> = std::fs::read_dir(fixture(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir() || p.to_string_lossy().ends_with(".json.gz"))
            // The TORCH_TRACE log is an input only beside its trace.
            .filter(|p| !p.to_string_lossy().ends_with("torch_trace_log.gz"))
            .collect();
        entries.sort();
        out.extend(entries);
    }
    assert!(out.len() >= 16, "{out:?}");
    out
}

/// One run's JSON, Markdown and HTML (written under `dir` as `tag.*`) and terminal table.
fn reports(
    dir: &std::path::Path,
    threads: &str,
    tag: &str,
    input: &std::path::Path,
    extra: &[String],
) -> Vec<Vec<u8>> {
    let out = |ext: &str| dir.join(format!("{tag}.{ext}"));
    let table = bin()
        .args(["--threads", threads, "--json"])
        .arg(out("json"))
        .arg("--markdown")
        .arg(out("md"))
        .arg("--html")
        .arg(out("html"))
        .args(extra)
        .arg(input)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let mut all: Vec<Vec<u8>> = ["json", "md", "html"]
        .iter()
        .map(|e| std::fs::read(out(e)).unwrap())
        .collect();
    all.push(table);
    all
}

#[test]
fn thread_count_does_not_change_the_output() {
    let dir = tempfile::tempdir().unwrap();
    for f in every_trace_fixture() {
        // JSON, Markdown, HTML and the terminal table of one run per thread count.
        let run = |threads: &str| reports(dir.path(), threads, threads, &f, &[]);
        let (one, four) = (run("1"), run("4"));
        for (k, what) in ["json", "markdown", "html", "table"].iter().enumerate() {
            assert!(one[k] == four[k], "{}: {what} differs", f.display());
        }
    }
}

#[test]
fn several_inputs_read_in_parallel_give_the_same_feed() {
    let files = [
        "kineto/h100/eager_launch_bound.json.gz",
        "kineto/h100/train_eager_fp32.json.gz",
        MANUAL,
    ];
    let run = |threads: &str| {
        bin()
            .args(["--threads", threads, "--json", "-"])
            .args(files.iter().map(|f| fixture(f)))
            .assert()
            .success()
            .get_output()
            .stdout
            .clone()
    };
    let one = run("1");
    assert_eq!(one, run("4"));
    let feed = crate::common::assert_valid_feed(&one);
    let paths: Vec<&str> = feed["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert!(
        paths[0].ends_with("eager_launch_bound.json.gz") && paths[2].ends_with(MANUAL),
        "{paths:?}"
    );
}

#[test]
fn rules_subcommands() {
    bin()
        .args(["rules", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("gemm.tensile"));
    bin()
        .args(["rules", "check"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("ok: "));
    bin()
        .args(["rules", "explain", "fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80, float, true, false, true, 64, 64, 64, false>::Params)"])
        .assert()
        .success()
        .stdout(predicate::str::contains("WINNER attn.mem-efficient"));
    bin()
        .args(["rules", "explain", "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}>"])
        .assert()
        .success()
        .stdout(predicate::str::contains("WINNER ew.activation").and(predicate::str::contains("ew.aten-pointwise")));
    bin()
        .args([
            "rules",
            "explain",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("WINNER comm.nccl"));
    bin()
        .args(["rules", "classify"])
        .write_stdin("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT\nmystery\n")
        .assert()
        .success()
        .stdout(
            predicate::str::contains("gemm\tgemm\tcuBLASLt\tgemm.nvjet").and(
                predicate::str::contains("other\tunclassified\tunknown\t-\tmystery"),
            ),
        );
}

#[test]
fn user_rules_add_and_override() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.toml"),
        r#"schema = 1
[[rule]]
id = "gemm.nvjet"
bucket = "other"
family = "overridden"
library = "mine"
pattern = '^nvjet_'
priority = 60
match = ["nvjet_sm90_tst_x"]
"#,
    )
    .unwrap();
    let out = bin()
        .arg("--rules")
        .arg(dir.path())
        .args(["--json", "-"])
        .arg(fixture(MANUAL))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let feed = assert_valid_feed(&out);
    let top = &feed["top_kernels"][0];
    assert_eq!(
        (top["rule_id"].as_str(), top["family"].as_str()),
        (Some("gemm.nvjet"), Some("overridden"))
    );
}

#[test]
fn a_broken_rule_is_an_error_naming_file_and_rule() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.toml"),
        r#"schema = 1
[[rule]]
id = "my.rule"
bucket = "gemm"
family = "gemm"
pattern = '^mygemm'
priority = 50
match = ["notmygemm"]
"#,
    )
    .unwrap();
    bin()
        .args(["rules", "check"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("bad.toml")
                .and(predicate::str::contains("my.rule"))
                .and(predicate::str::contains("notmygemm")),
        );
    std::fs::write(
        dir.path().join("bad.toml"),
        "schema = 1\n[[rule]]\nid = 'x'\nbucket = 'gpu'\n",
    )
    .unwrap();
    bin()
        .args(["rules", "check"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.toml"));
}

#[test]
fn subcommands_are_recognized_only_as_the_first_word() {
    // "rules" after a path is a path (here the rules/ directory, which holds no traces), not the subcommand.
    bin()
        .arg(fixture(MANUAL))
        .arg("rules")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("rules: no trace files found"));
}

#[test]
fn completions_and_schema() {
    bin()
        .args(["completions", "bash"])
        .assert()
        .success()
        .stdout(predicate::str::contains("rocprof-classify"));
    let out = bin()
        .arg("schema")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let schema: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(schema["properties"]["schema_version"]["const"], 4);
}

#[test]
fn usage_errors_exit_2() {
    bin().assert().code(2);
    bin()
        .args(["--threads", "0"])
        .arg(fixture(MANUAL))
        .assert()
        .code(2);
}

#[test]
#[cfg(feature = "polars")]
fn exported_activity_tables_read_back_with_the_feeds_totals() {
    use polars::prelude::{CsvReadOptions, ParquetReader, SerReader};
    let dir = tempfile::tempdir().unwrap();
    let (pq, csv) = (dir.path().join("a.parquet"), dir.path().join("a.csv"));
    let out = bin()
        .args(["--json", "-", "--export-parquet"])
        .arg(&pq)
        .arg("--export-csv")
        .arg(&csv)
        .arg(fixture(MANUAL))
        .assert()
        .success()
        .get_output()
        .clone();
    let feed = crate::common::assert_valid_feed(&out.stdout);
    let tables = [
        ParquetReader::new(std::fs::File::open(&pq).unwrap())
            .finish()
            .unwrap(),
        CsvReadOptions::default()
            .try_into_reader_with_file_path(Some(csv.clone()))
            .unwrap()
            .finish()
            .unwrap(),
    ];
    for df in &tables {
        let launches: u64 = feed["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["launches"].as_u64().unwrap())
            .sum();
        assert_eq!(df.height() as u64, launches);
        let dur = df.column("dur_ns").unwrap().i64().unwrap();
        assert_eq!(
            (0..df.height()).map(|i| dur.get(i).unwrap()).sum::<i64>(),
            feed["summary"]["kernel_ns"].as_i64().unwrap()
        );
        // Per bucket, the rows add up to the feed's bucket times.
        let bucket = df.column("bucket").unwrap().str().unwrap();
        for b in feed["buckets"].as_array().unwrap() {
            let name = b["bucket"].as_str().unwrap();
            let ns: i64 = (0..df.height())
                .filter(|&i| bucket.get(i) == Some(name))
                .map(|i| dur.get(i).unwrap())
                .sum();
            assert_eq!(ns, b["kernel_ns"].as_i64().unwrap(), "{name}");
        }
        // Every activity of this trace runs inside one of its 5 steps.
        let step = df
            .column("step")
            .unwrap()
            .cast(&polars::prelude::DataType::Int64)
            .unwrap();
        let step = step.i64().unwrap();
        assert_eq!(step.null_count(), 0);
        assert_eq!(
            (
                (0..df.height()).filter_map(|i| step.get(i)).min(),
                (0..df.height()).filter_map(|i| step.get(i)).max(),
            ),
            (
                Some(0),
                Some(feed["summary"]["steps"].as_i64().unwrap() - 1)
            )
        );
    }
}

#[test]
fn feeds_do_not_depend_on_the_scanner_window() {
    use rocprof_classify::analysis::AnalysisOptions;
    use rocprof_classify::ingest::{read_all, ReadOptions};
    let mut files = every_trace_fixture();
    if let Some(shared) = crate::common::shared() {
        // A merged 4-rank AMD trace and a rocprof v1 JSON (the other streaming reader).
        files.push(shared.join("corpus/hpctraining/merged_all_events.json.gz"));
        files.push(shared.join("corpus/rocprof1_kokkos/results.json"));
    }
    let pools: Vec<rayon::ThreadPool> = [2, 8]
        .iter()
        .map(|&n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
        })
        .collect();
    for f in &files {
        let feed = |block: Option<usize>, piece: Option<usize>, one_thread_per_file: bool| {
            let trace = read_all(
                std::slice::from_ref(f),
                &ReadOptions {
                    block_bytes: block,
                    piece_bytes: piece,
                    one_thread_per_file,
                    ..Default::default()
                },
            )
            .unwrap();
            rocprof_classify::report::json::render(&crate::common::run_trace(
                trace,
                &AnalysisOptions::default(),
            ))
        };
        let default = feed(None, None, false);
        // Windows far smaller than one event force every boundary case of the scanner, with
        // the scan on its own thread and on the parsing thread; pieces of a few bytes to a
        // few events start most pieces at a wrong guess, on 2 and 8 threads.
        for block in [64, 4096, 1 << 16] {
            for one_thread in [false, true] {
                assert!(
                    feed(Some(block), None, one_thread) == default,
                    "{}: window {block}, one thread per file {one_thread}",
                    f.display()
                );
            }
        }
        for pool in &pools {
            for (block, piece) in [(None, 1), (Some(1 << 16), 700)] {
                assert!(
                    pool.install(|| feed(block, Some(piece), false)) == default,
                    "{}: {} threads, window {block:?}, pieces of {piece} bytes",
                    f.display(),
                    pool.current_num_threads()
                );
            }
        }
    }
}

/// Rules safety: a user rule with an invalid or pathological (oversized) regex, a duplicate
/// id, an unknown bucket, a failing `match` or `no_match` example, or a library pattern that is
/// invalid or misses its example, is rejected, naming the file, the rule and why, both by
/// `rules check` and when analyzing with `--rules` (the built-in rules' examples are not
/// checked per run: those of the user's are).
#[test]
fn unsafe_user_rules_are_rejected_with_file_rule_and_reason() {
    let rule = |id: &str, bucket: &str, pattern: &str, example: &str| {
        format!(
            "[[rule]]\nid = '{id}'\nbucket = '{bucket}'\nfamily = 'f'\npattern = '{pattern}'\npriority = 50\nmatch = ['{example}']\n"
        )
    };
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            "invalid regex",
            rule("u.bad-regex", "gemm", "(unclosed", "x"),
            &["u.bad-regex", "pattern"],
        ),
        (
            "pathological regex",
            rule("u.huge", "gemm", "(a{1000}){1000}", "a"),
            &["u.huge", "pattern"],
        ),
        (
            "unknown bucket",
            rule("u.bucket", "gpu", "^x", "x"),
            &["bucket"],
        ),
        (
            "failing example",
            rule("u.example", "gemm", "^mygemm", "notmygemm"),
            &["u.example", "notmygemm"],
        ),
        (
            "matching its no_match example",
            format!(
                "{}no_match = ['mygemm_tn']\n",
                rule("u.no-match", "gemm", "^mygemm", "mygemm")
            ),
            &["u.no-match", "mygemm_tn"],
        ),
        (
            "library pattern missing its example",
            "[[library]]\nname = 'mylib'\npattern = '^mylib_'\nmatch = ['otherlib_gemm']\n"
                .to_string(),
            &["library mylib", "otherlib_gemm"],
        ),
        (
            "invalid library pattern",
            "[[library]]\nname = 'badlib'\npattern = '[z-a]'\nmatch = ['x']\n".to_string(),
            &["library badlib", "pattern"],
        ),
        (
            "duplicate id",
            format!(
                "{}{}",
                rule("u.twice", "gemm", "^a", "a"),
                rule("u.twice", "gemm", "^b", "b")
            ),
            &["u.twice", "duplicate"],
        ),
    ];
    for (what, body, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.toml"), format!("schema = 1\n{body}")).unwrap();
        for args in [vec!["rules", "check"], vec![]] {
            let mut cmd = bin();
            cmd.args(&args);
            if args.is_empty() {
                cmd.arg(fixture(MANUAL)).arg("--rules");
            }
            let out = cmd.arg(dir.path()).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{what} {args:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("mine.toml"), "{what}: {err}");
            for e in expected {
                assert!(err.contains(e), "{what}: {e} not in {err}");
            }
            assert!(out.stdout.is_empty(), "{what}: no report on a rules error");
        }
    }
}

/// Every input format, not only Kineto: `--threads 1`, `--threads 4` and a second `--threads 4`
/// run give byte-identical JSON, Markdown and HTML; and an input named by a relative path leaves
/// no absolute path (the working directory) in any report.
#[test]
fn every_format_is_deterministic_and_path_free() {
    let mut inputs: Vec<(std::path::PathBuf, Vec<String>)> = vec![(
        fixture("kineto/h100_torch_trace/recompiles_traced.json.gz"),
        vec![
            "--torch-logs".into(),
            fixture("kineto/h100_torch_trace/torch_trace_log.gz")
                .display()
                .to_string(),
        ],
    )];
    if let Some(shared) = crate::common::shared() {
        for rel in [
            "corpus/rocpd/15_results.db",
            "corpus/rocprofv3_sdk_docs_2025",
            "corpus/tracelens_rocprof/908_results.json.gz",
            "corpus/rocprof1_batched_gemm/results.json",
            "corpus/rocprof_compute_v3_bmm1/MI300X_A1",
            "corpus/torch_logs/recompiles_2024_pytorch_pr130043.txt",
        ] {
            inputs.push((shared.join(rel), vec![]));
        }
    } else {
        eprintln!("skipped the rocprof formats: ../shared is absent");
    }
    let dir = tempfile::tempdir().unwrap();
    for (input, extra) in &inputs {
        let run = |threads: &str, tag: &str| reports(dir.path(), threads, tag, input, extra);
        let (one, four, again) = (run("1", "a"), run("4", "b"), run("4", "c"));
        for (k, what) in ["json", "markdown", "html"].iter().enumerate() {
            assert!(
                one[k] == four[k],
                "{}: {what} differs between 1 and 4 threads",
                input.display()
            );
            assert!(
                four[k] == again[k],
                "{}: {what} differs between two runs",
                input.display()
            );
        }
    }
    // Relative paths stay relative: the working directory appears in no report.
    let cwd = crate::common::root();
    let out = bin()
        .current_dir(&cwd)
        .args([
            "fixtures/kineto/h100/eager_manual_attn.json.gz",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    let html = bin()
        .current_dir(&cwd)
        .args([
            "fixtures/kineto/h100/eager_manual_attn.json.gz",
            "--html",
            "-",
        ])
        .output()
        .unwrap();
    let abs = cwd.canonicalize().unwrap().display().to_string();
    for (what, bytes) in [("json", &out.stdout), ("html", &html.stdout)] {
        assert!(
            !String::from_utf8_lossy(bytes).contains(&abs),
            "{what} holds {abs}"
        );
    }
}

/// The analysis stages `--timings` prints: (name, milliseconds) in order, and the analysis total.
fn stage_timings(args: &[&str], input: &std::path::Path) -> (Vec<(String, f64)>, f64) {
    let out = bin()
        .args(["-q", "--timings", "--json", "-"])
        .args(args)
        .arg(input)
        .assert()
        .success()
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    let total = err
        .lines()
        .find_map(|l| l.strip_prefix("timings: read "))
        .and_then(|l| l.split("analysis ").nth(1))
        .and_then(|t| t.trim_end_matches(" s").parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no analysis time in {err}"));
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("timings: analysis stages (ms): "))
        .unwrap_or_else(|| panic!("no stages in {err}"));
    let stages = line
        .split(", ")
        .map(|s| {
            let (name, ms) = s.rsplit_once(' ').unwrap();
            (name.to_string(), ms.parse::<f64>().unwrap())
        })
        .collect();
    (stages, total * 1e3)
}

#[test]
fn timings_name_the_analysis_stages_and_add_up_to_at_most_the_analysis() {
    // One thread: the stages run one after another inside the analysis.
    let (stages, total_ms) = stage_timings(&["--threads", "1"], &fixture(MANUAL));
    let names: Vec<&str> = stages.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "classify+links",
            "ops+steps+timelines",
            "buckets+scope",
            "kernels+partition",
            "regions+compile+attribution",
            "summary",
            "collectives",
            "critical path",
            "frames+candidates",
            "detect",
            "replays' step model",
            "replays",
            "path without the profiler",
        ]
    );
    let sum: f64 = stages.iter().map(|s| s.1).sum();
    // Each is printed to 0.1 ms, the total to 1 ms.
    assert!(
        sum <= total_ms + 1.0 + 0.05 * stages.len() as f64,
        "{sum} ms of {total_ms}: {stages:?}"
    );
    // Two ranks: each rank's stages summed (with cutting its inputs out of the trace and its
    // partial's trip through JSON), then their merge.
    let (ranks, _) = stage_timings(&[], &fixture("kineto/h100x2/balanced"));
    let names: Vec<&str> = ranks.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names[stages.len()..],
        ["rank subsets", "partials through JSON", "merge ranks"]
    );
}
