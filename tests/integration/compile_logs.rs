//! torch.compile logs (TORCH_LOGS text) read alone and joined to the traces of the same run:
//! `traces/h100/torch_logs.txt` is the stderr of the script that made the h100 traces, several
//! runs in one log (compile ids restart after each `torch._dynamo.reset()`).

use crate::common::{assert_valid_feed, bin, fixture};
use crate::with_shared;
use rocprof_classify::ingest::{looks_like_torch_logs, parse_torch_logs};
use rocprof_classify::model::{GuardKind, LogEvent};
use serde_json::Value;
use std::path::Path;

fn feed(args: &[&Path]) -> Value {
    let out = bin().args(args).args(["--json", "-"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_valid_feed(&out.stdout)
}

fn finding<'a>(feed: &'a Value, id: &str) -> Option<&'a Value> {
    feed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
}

fn actions(feed: &Value, rec: &str) -> Vec<String> {
    feed["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == rec)
        .map(|r| {
            r["actions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["text"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_recompiles_get_their_failed_guards_and_the_dynamic_shape_fix() {
    with_shared!(shared => {
        let h100 = shared.join("traces/h100");
        let truth: Value = serde_json::from_str(&std::fs::read_to_string(h100.join("truth.json")).unwrap()).unwrap();
        let f = feed(&[&h100.join("compiled_recompiles.json.gz"), Path::new("--torch-logs"), &h100.join("torch_logs.txt")]);
        let rec = finding(&f, "recompiles").expect("recompiles");
        let log = &rec["evidence"]["log"]["recompiles"];
        let expected = truth["compiled_recompiles"]["expected_recompiles_in_profile"].as_u64().unwrap();
        assert_eq!(log.as_array().unwrap().len() as u64, expected);
        let ids: Vec<&str> = log.as_array().unwrap().iter().map(|r| r["compile_id"].as_str().unwrap()).collect();
        assert_eq!(ids, truth["compiled_recompiles"]["compile_ids_in_trace"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect::<Vec<_>>());
        // Each recompile's first guard is the size of x at dim 1, against the compile before.
        for r in log.as_array().unwrap() {
            let g = &r["guards"][0];
            assert_eq!((g["kind"].as_str(), g["tensor"].as_str(), g["dim"].as_u64()), (Some("size_mismatch"), Some("x"), Some(1)), "{r}");
        }
        assert!(rec["summary"].as_str().unwrap().contains("size of x at dim 1"), "{}", rec["summary"]);
        let acts = actions(&f, "compile.dynamic-shapes");
        assert!(acts[0].starts_with("torch._dynamo.mark_dynamic(x, 1)"), "{acts:?}");
        assert!(acts.iter().any(|a| a.contains("dynamic=True")), "{acts:?}");
    });
}

#[test]
fn the_root_break_is_named_and_the_loop_break_is_its_consequence() {
    with_shared!(shared => {
        let h100 = shared.join("traces/h100");
        // The log given as another input works like --torch-logs.
        let f = feed(&[&h100.join("compiled_graph_breaks.json.gz"), &h100.join("torch_logs.txt")]);
        let formats: Vec<&str> = f["inputs"].as_array().unwrap().iter().map(|i| i["format"].as_str().unwrap()).collect();
        assert_eq!(formats, ["kineto", "torch-logs"], "the log is not read as a trace");
        let gb = finding(&f, "graph_breaks").expect("graph_breaks");
        let breaks = gb["evidence"]["log"]["breaks"].as_array().unwrap();
        // The same log holds the explain() run and a later run with the same break: only the
        // profiled run's one break joins.
        assert_eq!(breaks.len(), 1, "{breaks:?}");
        assert_eq!(breaks[0]["count"], 1);
        let root = &breaks[0];
        assert_eq!(root["gb_id"], "gb0124");
        assert!(root["reason"].as_str().unwrap().contains("Tensor.item()"));
        assert_eq!(root["location"]["line"], 66);
        assert_eq!(root["location"]["source"], "if x.abs().max().item() > 1e9:");
        assert_eq!(root["consequence"]["gb_id"], "gb7000");
        assert_eq!(root["consequence"]["reason"], "graph break in loop");
        let summary = gb["summary"].as_str().unwrap();
        assert!(summary.contains("root break") && summary.contains("gb0124") && summary.contains("if x.abs().max().item() > 1e9:"), "{summary}");
        let acts = actions(&f, "compile.fix-graph-breaks");
        assert!(acts[0].contains("capture_scalar_outputs = True"), "{acts:?}");
        assert!(acts[1].contains("make_traces.py:66"), "{acts:?}");
        // The reason reaches every report.
        for flag in ["--markdown", "--html"] {
            let out = bin().arg(h100.join("compiled_graph_breaks.json.gz")).args(["--torch-logs"]).arg(h100.join("torch_logs.txt")).args([flag, "-"]).output().unwrap();
            assert!(String::from_utf8_lossy(&out.stdout).contains("gb0124"), "{flag}");
        }
        let table = bin().arg(h100.join("compiled_graph_breaks.json.gz")).args(["--torch-logs"]).arg(h100.join("torch_logs.txt")).args(["--color", "never"]).output().unwrap();
        assert!(String::from_utf8_lossy(&table.stdout).contains("gb0124"));
    });
}

#[test]
fn other_runs_of_the_script_do_not_leak_into_a_trace() {
    with_shared!(shared => {
        let log = shared.join("traces/h100/torch_logs.txt");
        for t in ["compiled_clean", "compiled_cudagraphs", "eager_manual_attn", "eager_launch_bound"] {
            let f = feed(&[&fixture(&format!("kineto/h100/{t}.json.gz")), Path::new("--torch-logs"), &log]);
            for id in ["graph_breaks", "recompiles"] {
                assert!(finding(&f, id).is_none(), "{t}: {id} {:?}", finding(&f, id));
            }
        }
    });
}

#[test]
fn a_log_alone_reports_its_breaks_and_recompiles() {
    with_shared!(shared => {
        let f = feed(&[&shared.join("traces/h100/torch_logs.txt")]);
        let gb = finding(&f, "graph_breaks").expect("graph_breaks from the log alone");
        let breaks = gb["evidence"]["log"]["breaks"].as_array().unwrap();
        // Three runs broke at the same line: one distinct break, logged three times.
        assert_eq!((breaks.len(), breaks[0]["count"].as_u64()), (1, Some(3)));
        let rec = finding(&f, "recompiles").expect("recompiles from the log alone");
        assert_eq!(rec["evidence"]["log"]["recompiles"].as_array().unwrap().len(), 4);
    });
}

/// Every TORCH_LOGS text in the corpus, with the breaks and recompiles a reader counts in it.
#[test]
fn every_torch_logs_file_parses_with_the_counts_read_by_hand() {
    with_shared!(shared => {
        // (file, graph break records, recompiles, something each must show)
        let expected: &[(&str, usize, usize, &str)] = &[
            ("corpus/torch_logs/graph_breaks_2023_warning_format_pytorch_pr97884.txt", 1, 0, "\"line\":1114"),
            ("corpus/torch_logs/graph_breaks_2026_gbsite_format.txt", 1, 0, "gb0123"),
            ("corpus/torch_logs/recompiles_2023_report_values_pytorch_pr110928.txt", 0, 3, "___check_obj_id"),
            ("corpus/torch_logs/recompiles_2023_tuple_format_pytorch_issue99091.txt", 0, 4, "value_specialized"),
            ("corpus/torch_logs/recompiles_2024_pytorch_pr130043.txt", 0, 1, "size_mismatch"),
            ("corpus/torch_logs/recompiles_global_state_pytorch_issue123784.txt", 0, 1, "global_state"),
            ("corpus/torch_logs/recompiles_verbose_2023_pytorch_pr113585.txt", 0, 1, "length"),
            ("traces/h100/torch_logs.txt", 3, 4, "gb7000"),
        ];
        let mut listed: Vec<String> = std::fs::read_dir(shared.join("corpus/torch_logs")).unwrap()
            .map(|e| format!("corpus/torch_logs/{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        listed.sort();
        let mut named: Vec<String> = expected.iter().filter(|e| e.0.starts_with("corpus/")).map(|e| e.0.to_string()).collect();
        named.sort();
        assert_eq!(listed, named, "every corpus log has its counts here");
        for (file, breaks, recompiles, shows) in expected {
            let text = std::fs::read_to_string(shared.join(file)).unwrap();
            let log = parse_torch_logs(&text, file);
            let b = log.graph_breaks().count();
            let r = log.recompiles().count();
            println!("{file}: {b} graph breaks, {r} recompiles");
            for (rec, gb) in log.graph_breaks() {
                println!("  break line {}: {} at {:?}", rec.line, gb.reason, gb.location.as_ref().map(|l| l.to_string()));
            }
            for (rec, c) in log.recompiles() {
                println!("  recompile line {}: {} guards {:?}", rec.line, c.function, c.guards.iter().map(|g| &g.text).collect::<Vec<_>>());
            }
            assert_eq!((b, r), (*breaks, *recompiles), "{file}");
            let json = serde_json::to_string(&log).unwrap();
            assert!(json.contains(shows), "{file}: {shows} not in {json}");
            // Every recompile names its function and at least one guard the reader classified.
            for (_, c) in log.recompiles() {
                assert!(!c.function.is_empty() && !c.guards.is_empty(), "{file}: {c:?}");
                assert!(c.guards.iter().any(|g| g.kind != GuardKind::Other), "{file}: {c:?}");
            }
        }
        // The 2023 tuple with a list of failures: three guards, the escaped quotes undone.
        let text = std::fs::read_to_string(shared.join("corpus/torch_logs/recompiles_2023_report_values_pytorch_pr110928.txt")).unwrap();
        let log = parse_torch_logs(&text, "x");
        let first = &log.records[0];
        match &first.event {
            LogEvent::Recompile(c) => {
                assert_eq!(c.guards.len(), 3, "{c:?}");
                assert_eq!(c.guards[0].text, "___guarded_code.valid");
                assert!(matches!(c.guards[1].kind, GuardKind::ObjectIdentity { .. }), "{c:?}");
            }
            other => panic!("{other:?}"),
        }
    });
}

/// Every TORCH_TRACE log in the corpus: breaks (graph-break restarts), recompiles (the
/// `recompile_reasons` artifacts) and skipped lines, counted by hand.
#[test]
fn every_torch_trace_log_parses_with_the_counts_read_by_hand() {
    with_shared!(shared => {
        // (file, graph breaks, recompiles, skipped lines, compile failures)
        let expected: &[(&str, usize, usize, u64, usize)] = &[
            ("artifacts.log", 0, 0, 0, 0),
            ("autotune_with_compile_id.log", 0, 0, 0, 0),
            ("cache_hit_miss.log", 0, 0, 0, 0),
            ("chromium_events.log", 0, 0, 0, 1),
            ("comp_failure.log", 0, 0, 0, 1),
            ("comp_metrics.log", 2, 0, 0, 0),
            ("export_guard_added.log", 0, 0, 0, 0),
            ("links.log", 0, 0, 0, 0),
            ("simple.log", 0, 0, 0, 0),
            ("simple_corrupted_json.log", 0, 0, 1, 0),
            ("multi_rank_logs/dedicated_log_torch_trace_rank_0.log", 0, 0, 0, 1),
            ("multi_rank_logs/dedicated_log_torch_trace_rank_1.log.gz", 0, 14, 0, 0),
            ("multi_rank_logs/dedicated_log_torch_trace_rank_2.log", 0, 0, 0, 1),
            ("multi_rank_logs/dedicated_log_torch_trace_rank_3.log", 0, 6, 0, 0),
        ];
        let dir = shared.join("corpus/tlparse");
        let mut on_disk: Vec<String> = Vec::new();
        for sub in ["", "multi_rank_logs/"] {
            for e in std::fs::read_dir(dir.join(sub)).unwrap() {
                let p = e.unwrap().path();
                if p.is_file() {
                    on_disk.push(format!("{sub}{}", p.file_name().unwrap().to_string_lossy()));
                }
            }
        }
        on_disk.sort();
        let mut listed: Vec<String> = expected.iter().map(|e| e.0.to_string()).collect();
        listed.sort();
        assert_eq!(on_disk, listed, "every TORCH_TRACE log has its counts here");
        for (file, breaks, recompiles, skipped, failures) in expected {
            let p = dir.join(file);
            assert!(rocprof_classify::ingest::is_compile_log(&p), "{file} is recognized");
            let log = rocprof_classify::ingest::read_compile_log(&p).unwrap();
            let b = log.graph_breaks().count();
            let r = log.recompiles().count();
            let f = log.warnings.iter().filter(|w| w.contains(" failed: ")).count();
            println!("{file}: {b} graph breaks, {r} recompiles, {} skipped, {f} compile failures", log.skipped_lines);
            assert_eq!((b, r, log.skipped_lines, f), (*breaks, *recompiles, *skipped, *failures), "{file}: {:?}", log.warnings);
        }
        // rank 1 recompiles `kernel` 14 times; compile 0/i lists i failed guards, newest first,
        // each a size mismatch of x at dim 0.
        let log = rocprof_classify::ingest::read_compile_log(&dir.join("multi_rank_logs/dedicated_log_torch_trace_rank_1.log.gz")).unwrap();
        for (rec, c) in log.recompiles() {
            let id = rec.compile_id.unwrap();
            assert_eq!(c.function, "kernel");
            assert_eq!(c.guards.len() as u32, id.attempt, "{id}");
            assert_eq!(c.guards[0].of.map(|o| o.attempt), Some(id.attempt - 1));
            assert!(matches!(&c.guards[0].kind, GuardKind::SizeMismatch { tensor, dim: 0, .. } if tensor == "x"), "{c:?}");
        }
        // The two restarts of comp_metrics.log are two breaks, though their texts are equal.
        let log = rocprof_classify::ingest::read_compile_log(&dir.join("comp_metrics.log")).unwrap();
        let reasons: Vec<&str> = log.graph_breaks().map(|(_, b)| b.reason.as_str()).collect();
        assert_eq!(reasons[0], reasons[1]);
        assert!(reasons[0].contains("graph_break"), "{reasons:?}");
    });
}

/// A TORCH_TRACE log alone, through the command line: its recompiles become the finding, with
/// the dynamic-shape fix for the tensor and dim of the guards.
#[test]
fn a_torch_trace_log_alone_gives_the_recompile_fix() {
    with_shared!(shared => {
        let f = feed(&[&shared.join("corpus/tlparse/multi_rank_logs/dedicated_log_torch_trace_rank_3.log")]);
        assert_eq!(f["inputs"][0]["format"], "torch-trace");
        let rec = finding(&f, "recompiles").expect("recompiles");
        assert_eq!(rec["evidence"]["log"]["recompiles"].as_array().unwrap().len(), 6);
        let acts = actions(&f, "compile.dynamic-shapes");
        assert!(acts[0].starts_with("torch._dynamo.mark_dynamic(x, 0)"), "{acts:?}");
    });
}

/// A real TORCH_TRACE log with the trace of the same run (`fixtures/kineto/h100_torch_trace`):
/// the profiled run's two recompiles join; the earlier run's graph break (before
/// `torch._dynamo.reset()`, same compile ids) does not.
#[test]
fn a_torch_trace_log_joins_its_own_run_only() {
    let dir = fixture("kineto/h100_torch_trace");
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap();
    let t = &truth["recompiles_traced"];
    let f = feed(&[
        &dir.join("recompiles_traced.json.gz"),
        &dir.join("torch_trace_log.gz"),
    ]);
    assert_eq!(f["inputs"][1]["format"], "torch-trace");
    assert!(
        finding(&f, "graph_breaks").is_none(),
        "run A's break leaked"
    );
    let rec = finding(&f, "recompiles").expect("recompiles");
    let log = rec["evidence"]["log"]["recompiles"].as_array().unwrap();
    assert_eq!(
        log.len() as u64,
        t["recompiles_in_window"].as_u64().unwrap()
    );
    assert!(rec["evidence"]["log"]["matched_by"]
        .as_str()
        .unwrap()
        .contains(&format!("process {}", t["pid"])));
    for r in log {
        assert_eq!(r["function"], "forward");
        assert_eq!(
            (
                r["guards"][0]["tensor"].as_str(),
                r["guards"][0]["dim"].as_u64()
            ),
            (Some("x"), Some(1)),
            "{r}"
        );
    }
    assert!(rec["summary"]
        .as_str()
        .unwrap()
        .contains(t["guard"].as_str().unwrap()));
    assert!(
        actions(&f, "compile.dynamic-shapes")[0].starts_with("torch._dynamo.mark_dynamic(x, 1)")
    );
    // Alone, the log shows both runs: run A's break too, with its explanation and link.
    let alone = feed(&[&dir.join("torch_trace_log.gz")]);
    let gb = finding(&alone, "graph_breaks").expect("run A's break");
    assert_eq!(gb["evidence"]["log"]["breaks"][0]["gb_id"], "gb0124");
    assert!(gb["evidence"]["log"]["breaks"][0]["hint"]
        .as_str()
        .unwrap()
        .contains("capture_scalar_outputs"));
    // The break's line comes from the frame Dynamo resumed in (`…_resume_in_forward_at_N`).
    let line = gb["evidence"]["log"]["breaks"][0]["location"]["line"]
        .as_u64()
        .unwrap() as usize;
    let script = std::fs::read_to_string(dir.join("make_trace_with_torch_trace.py")).unwrap();
    assert!(
        script.lines().nth(line - 1).unwrap().contains(".item()"),
        "line {line}"
    );
    let rec = finding(&alone, "recompiles").unwrap();
    assert!(rec["evidence"]["log"]["compile_time_s"].as_f64().unwrap() > 0.0);
}

/// Inductor's fallback kernels from `[__perf_hints]`, for the profiled run only.
#[test]
fn inductor_fallbacks_are_an_info_finding() {
    with_shared!(shared => {
        let h100 = shared.join("traces/h100");
        let f = feed(&[&h100.join("compiled_graph_breaks.json.gz"), &h100.join("torch_logs.txt")]);
        let fb = finding(&f, "inductor_fallbacks").expect("inductor_fallbacks");
        assert_eq!(fb["severity"], "info");
        let ops = fb["evidence"]["ops"].as_array().unwrap();
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0]["op"], "torch.ops.aten._scaled_dot_product_cudnn_attention.default");
        // The profiled run compiled frame 1 once: one hint, not the log's ten.
        assert_eq!(ops[0]["compiles"], 1);
    });
}

/// The bundled TORCH_LOGS of `make_traces_extra.py` with its trace (no corpus needed): two
/// user-inserted `torch._dynamo.graph_break()` calls, each named with its line and the hint.
#[test]
fn user_inserted_breaks_are_named_with_their_lines() {
    let f = feed(&[
        &fixture("kineto/h100/compiled_graph_breaks_explicit.json.gz"),
        &fixture("kineto/h100/torch_logs_extra.txt"),
    ]);
    let gb = finding(&f, "graph_breaks").expect("graph_breaks");
    let breaks = gb["evidence"]["log"]["breaks"].as_array().unwrap();
    let mut lines: Vec<u64> = breaks
        .iter()
        .map(|b| b["location"]["line"].as_u64().unwrap())
        .collect();
    lines.sort();
    assert_eq!(lines, [84, 86], "{breaks:?}");
    for b in breaks {
        assert_eq!(b["gb_id"], "gb0025");
        assert_eq!(b["reason"], "Call to `torch._dynamo.graph_break()`");
        assert_eq!(b["location"]["source"], "torch._dynamo.graph_break()");
    }
    let acts = actions(&f, "compile.fix-graph-breaks");
    assert!(
        acts[0].starts_with("Remove the `torch._dynamo.graph_break()` call"),
        "{acts:?}"
    );
}

/// glog prints local time; the trace's clock is UTC. The same log written in UTC-5 or UTC+1
/// (hours shifted) still joins the profiled run, and not the runs before or after it.
#[test]
fn a_log_in_another_time_zone_joins_the_same_run() {
    with_shared!(shared => {
        let h100 = shared.join("traces/h100");
        let text = std::fs::read_to_string(h100.join("torch_logs.txt")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for (hour, zone) in [("17", "-05:00"), ("23", "+01:00")] {
            let shifted: String = text
                .lines()
                .map(|l| {
                    let glog = l.len() > 8 && l[1..5] == *"1125" && &l[6..8] == "22";
                    if glog { format!("{}{hour}{}\n", &l[..6], &l[8..]) } else { format!("{l}\n") }
                })
                .collect();
            let log = dir.path().join(format!("log{hour}.txt"));
            std::fs::write(&log, shifted).unwrap();
            let f = feed(&[&h100.join("compiled_graph_breaks.json.gz"), &log]);
            let gb = finding(&f, "graph_breaks").expect("graph_breaks");
            let breaks = gb["evidence"]["log"]["breaks"].as_array().unwrap();
            assert_eq!((breaks.len(), breaks[0]["count"].as_u64()), (1, Some(1)), "{zone}");
            let matched = gb["evidence"]["log"]["matched_by"].as_str().unwrap();
            assert!(matched.contains(&format!("UTC{zone}")), "{zone}: {matched}");
            let f = feed(&[&h100.join("compiled_recompiles.json.gz"), &log]);
            let rec = finding(&f, "recompiles").unwrap();
            assert_eq!(rec["evidence"]["log"]["recompiles"].as_array().unwrap().len(), 4, "{zone}");
            for t in ["compiled_clean", "eager_manual_attn"] {
                let f = feed(&[&fixture(&format!("kineto/h100/{t}.json.gz")), &log]);
                assert!(finding(&f, "graph_breaks").is_none() && finding(&f, "recompiles").is_none(), "{zone} {t}");
            }
        }
    });
}

/// torch.distributed puts `[rankN]:` before every log line; the lines still read.
#[test]
fn rank_prefixed_log_lines_are_read() {
    let text = std::fs::read_to_string(fixture("kineto/h100/torch_logs_extra.txt")).unwrap();
    let prefixed: String = text.lines().map(|l| format!("[rank3]:{l}\n")).collect();
    assert!(looks_like_torch_logs(&prefixed));
    let plain = parse_torch_logs(&text, "plain");
    let ranked = parse_torch_logs(&prefixed, "ranked");
    assert!(plain.graph_breaks().count() >= 2);
    assert_eq!(
        serde_json::to_value(&plain.records).unwrap(),
        serde_json::to_value(&ranked.records).unwrap()
    );
}

/// The fixes torch.compile's causes get are data (`[compile_fixes]` in `rules/ladder.toml`): a
/// user file replaces a cause's fixes, and a cause the tool does not know is refused.
#[test]
fn the_fixes_of_a_cause_come_from_ladder_toml() {
    let zoo = fixture("kineto/zoo");
    let trace = zoo.join("llama_prefill_recompiles.json.gz");
    let log = zoo.join("llama_prefill_recompiles.torch_logs.txt");
    let builtin = feed(&[&trace, &log]);
    let builtin_acts = actions(&builtin, "compile.dynamic-shapes");
    assert!(
        builtin_acts[0].starts_with("torch._dynamo.mark_dynamic(kwargs"),
        "{builtin_acts:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ladder.toml"),
        "schema = 1\n[compile_fixes]\nsize_mismatch = [{ kind = \"code\", text = \"bucket {tensor} dim {dim} to powers of two\" }]\n",
    )
    .unwrap();
    let user = feed(&[&trace, &log, Path::new("--rules"), dir.path()]);
    let acts = actions(&user, "compile.dynamic-shapes");
    assert!(
        acts[0].starts_with("bucket ") && acts[0].contains(" to powers of two"),
        "{acts:?}"
    );
    // The log's fix for this guard is the user's now; the recommendation's own actions stay.
    assert!(!acts.contains(&builtin_acts[0]), "{acts:?}");
    std::fs::write(
        dir.path().join("ladder.toml"),
        "schema = 1\n[compile_fixes]\nsize_missmatch = []\n",
    )
    .unwrap();
    bin()
        .args([&trace, &log])
        .arg("--rules")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("unknown cause 'size_missmatch'"));
}
