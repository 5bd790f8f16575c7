//! Serving traces without `ProfilerStep#N`: iterations from their marker, each one's phase and
//! time, the iterations left out of the steady state, and `--steps` / `--phase` /
//! `--skip-warmup` / `--iteration-marker` on them. Fixtures: a transformers Llama serving loop
//! captured on an H200 (`fixtures/kineto/h200/serving`, `make_serving_trace.py`, truth from CUDA
//! events); the corpus' vLLM and SGLang decode traces (AMD MI300X).

use crate::common::{assert_valid_feed, fixture, rules, run_trace};
use rocprof_classify::analysis::{AnalysisOptions, StepRow};
use rocprof_classify::analysis::{Exclusion, MarkerSource, Phase};
use rocprof_classify::ingest::{read_all, ReadOptions};
use rocprof_classify::Run;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn serving(name: &str) -> PathBuf {
    fixture(&format!("kineto/h200/serving/{name}"))
}

fn run_with(path: &Path, opts: &AnalysisOptions) -> Run {
    let trace = read_all(&[path.to_path_buf()], &ReadOptions::default()).unwrap();
    run_trace(trace, opts)
}

fn truth(name: &str) -> Vec<Value> {
    let t: Value = serde_json::from_slice(&std::fs::read(serving(name)).unwrap()).unwrap();
    t["iterations"].as_array().unwrap().clone()
}

fn phase_of(name: &str) -> Phase {
    name.parse().unwrap()
}

/// Iteration count, each one's phase and time (within 5% of CUDA events around it), the graph
/// capture left out of the steady state, on both captures of the loop.
#[test]
fn serving_loop_iterations_match_the_script() {
    for (trace, truth_file) in [
        ("serving_llama_flash.json.gz", "serving_flash_truth.json"),
        ("serving_llama.json.gz", "serving_truth.json"),
    ] {
        let run = run_with(&serving(trace), &AnalysisOptions::default());
        let a = &run.analysis;
        let truth = truth(truth_file);
        assert_eq!(a.summary.steps, 0, "{trace}: no ProfilerStep");
        assert!(a.summary.step_ns.is_none());
        assert_eq!(a.summary.iterations, Some(truth.len()), "{trace}");
        assert_eq!(a.summary.iteration_marker.as_deref(), Some("execute_model"));
        assert_eq!(a.summary.iteration_source, Some(MarkerSource::Annotation));
        let rows: &[StepRow] = &a.step_breakdown;
        assert_eq!(rows.len(), truth.len());
        for (r, t) in rows.iter().zip(&truth) {
            assert_eq!(r.step, t["index"].as_u64().unwrap());
            assert_eq!(
                r.phase,
                Some(phase_of(t["phase"].as_str().unwrap())),
                "{trace} #{}",
                r.step
            );
            // CUDA events inside the range, and around it (which add the range's own entry).
            for key in ["cuda_event_inner_ms", "cuda_event_ms"] {
                let want = t[key].as_f64().unwrap() * 1e6;
                let err = (r.dur_ns as f64 / want - 1.0).abs();
                assert!(
                    err < 0.05,
                    "{trace} #{} {key}: {} vs {want}",
                    r.step,
                    r.dur_ns
                );
            }
            if t["capture"].as_bool().unwrap() {
                assert_eq!(r.excluded, Some(Exclusion::Capture), "{trace} #{}", r.step);
            }
        }
        // Phases: steady iterations per phase are the script's less the ones left out.
        for p in &a.phases {
            let in_truth = truth
                .iter()
                .filter(|t| phase_of(t["phase"].as_str().unwrap()) == p.phase)
                .count();
            assert_eq!(
                p.iterations + p.excluded.len(),
                in_truth,
                "{trace} {}",
                p.phase
            );
            assert!(p.p50_ns <= p.p90_ns);
            let part: i64 = p.time_partition.iter().map(|r| r.ns).sum();
            let steady: i64 = rows
                .iter()
                .filter(|r| r.phase == Some(p.phase) && r.excluded.is_none())
                .map(|r| r.dur_ns)
                .sum();
            assert!(
                (part - steady).abs() <= 16,
                "{trace} {}: partition adds up",
                p.phase
            );
            let kernel: i64 = p.buckets.iter().map(|b| b.kernel_ns).sum();
            assert!(kernel > 0 && kernel < steady);
        }
        let phases: Vec<Phase> = a.phases.iter().map(|p| p.phase).collect();
        assert_eq!(phases, [Phase::Prefill, Phase::Decode, Phase::Mixed]);
        let ids: Vec<&str> = run.findings.iter().map(|f| f.id.as_str()).collect();
        assert!(ids.contains(&"warmup_in_window"), "{trace}: {ids:?}");
        assert_valid_feed(&rocprof_classify::report::json::render(&run));
    }
}

#[test]
fn the_default_capture_varies_by_decode_and_says_so() {
    // cuDNN attention plans each new sequence length on the host (~65 ms), so decode iterations
    // that meet a new length are slow: decode time varies far beyond 10%.
    let run = run_with(
        &serving("serving_llama.json.gz"),
        &AnalysisOptions::default(),
    );
    let f = run
        .findings
        .iter()
        .find(|f| f.id.as_str() == "high_step_variance")
        .expect("decode variance found");
    assert_eq!(f.evidence.to_json()["phase"], "decode");
    assert!(f.evidence.to_json()["cv_pct"].as_f64().unwrap() > 20.0);
    // The flash capture's decode iterations repeat: no such finding.
    let flash = run_with(
        &serving("serving_llama_flash.json.gz"),
        &AnalysisOptions::default(),
    );
    assert!(flash
        .findings
        .iter()
        .all(|f| f.id.as_str() != "high_step_variance"));
}

#[test]
fn steps_phase_and_skip_warmup_select_iterations() {
    let path = serving("serving_llama_flash.json.gz");
    let all = run_with(&path, &AnalysisOptions::default());
    let numbers =
        |r: &Run| -> Vec<u64> { r.analysis.step_breakdown.iter().map(|s| s.step).collect() };
    let some = run_with(
        &path,
        &AnalysisOptions {
            steps: Some("2..5".parse().unwrap()),
            ..Default::default()
        },
    );
    assert_eq!(numbers(&some), [2, 3, 4]);
    assert_eq!(some.analysis.summary.iterations, Some(3));
    assert!(some.analysis.summary.kernel_ns < all.analysis.summary.kernel_ns);
    let decode = run_with(
        &path,
        &AnalysisOptions {
            phase: Some(Phase::Decode),
            ..Default::default()
        },
    );
    assert!(decode
        .analysis
        .step_breakdown
        .iter()
        .all(|r| r.phase == Some(Phase::Decode)));
    assert_eq!(decode.analysis.phases.len(), 1);
    let steady = run_with(
        &path,
        &AnalysisOptions {
            skip_warmup: true,
            ..Default::default()
        },
    );
    let left_out: Vec<u64> = all
        .analysis
        .step_breakdown
        .iter()
        .filter(|r| r.excluded.is_some())
        .map(|r| r.step)
        .collect();
    assert!(left_out.contains(&5), "the capture iteration: {left_out:?}");
    assert!(numbers(&steady).iter().all(|n| !left_out.contains(n)));
    assert_eq!(numbers(&steady).len(), 24 - left_out.len());
    assert!(steady.analysis.phases.iter().all(|p| p.excluded.is_empty()));
    // A selection that keeps every iteration changes nothing.
    let every = run_with(
        &path,
        &AnalysisOptions {
            steps: Some("0..".parse().unwrap()),
            ..Default::default()
        },
    );
    assert_eq!(
        every.analysis.time_partition.len(),
        all.analysis.time_partition.len()
    );
    for (x, y) in every
        .analysis
        .time_partition
        .iter()
        .zip(&all.analysis.time_partition)
    {
        assert_eq!((x.category, x.ns), (y.category, y.ns));
    }
}

/// The iterations' findings count per iteration, not per trace.
#[test]
fn per_step_figures_of_findings_are_per_iteration() {
    let run = run_with(
        &serving("serving_llama_flash.json.gz"),
        &AnalysisOptions::default(),
    );
    let f = run
        .findings
        .iter()
        .find(|f| f.id.as_str() == "unfused_projections")
        .expect("HF Llama runs q/k/v apart");
    assert!(f.summary.contains("(4.3 per step)"), "{}", f.summary);
}

/// The feed of `path`, warnings off (serving traces warn about what they lack).
fn feed_of(path: &Path, args: &[&str]) -> Value {
    let args: Vec<&str> = ["-q"].iter().chain(args).copied().collect();
    crate::common::feed_of(path, &args)
}

#[test]
fn corpus_vllm_and_sglang_decode_iterations_come_from_their_single_marker() {
    crate::with_shared!(shared => {
        let corpus = shared.join("corpus");
        // (trace, source, phase, least queued time): the model runs in one graph replay, so only
        // the marker's name tells the phase; the stream waited behind unprofiled work first.
        for (file, source, phase, queued_ns) in [
            ("tracelens/graph_execution.json.gz", "vllm", "decode", 7_000_000),
            ("tracelens/sglang_Qwen3-8B_decode.json.gz", "vllm", "decode", 400_000_000),
            ("tracelens_nv/eager_trace.json.gz", "vllm-native", "prefill", 0),
        ] {
            let feed = feed_of(&corpus.join(file), &[]);
            let s = &feed["summary"];
            assert_eq!(s["steps"], 0, "{file}");
            assert_eq!(s["iterations"], 1, "{file}");
            assert_eq!(s["iteration_source"], source, "{file}");
            let rows = feed["step_breakdown"].as_array().unwrap();
            assert_eq!(rows.len(), 1);
            let r = &rows[0];
            assert_eq!(r["phase"], phase, "{file}");
            assert!(r["blocked_ns"].as_i64().unwrap() >= queued_ns, "{file}: {r}");
            // The iteration is its GPU work and the host's lead to it, not the wait before it:
            // graph traces within 10% of their GPU busy time (19.1 ms and 473.8 ms windows
            // otherwise).
            let (dur, busy) = (r["dur_ns"].as_f64().unwrap(), r["gpu_busy_ns"].as_f64().unwrap());
            if phase == "decode" {
                assert!(dur >= busy && dur < 1.1 * busy, "{file}: {dur} vs busy {busy}");
            }
            let phases = feed["phases"].as_array().unwrap();
            assert_eq!(phases.len(), 1);
            assert_eq!(phases[0]["phase"], phase);
            assert_eq!(phases[0]["iterations"], 1);
            // The phase's buckets are the iteration's kernels.
            let kernel: i64 = phases[0]["buckets"].as_array().unwrap().iter().map(|b| b["kernel_ns"].as_i64().unwrap()).sum();
            assert_eq!(kernel, s["kernel_ns"].as_i64().unwrap(), "{file}");
        }
        // SGLang nests step[DECODE bs=32] inside the outer marker: the outer one marks the
        // iteration; asked for, the inner one gives the same phase.
        let sglang = corpus.join("tracelens/sglang_Qwen3-8B_decode.json.gz");
        let inner = feed_of(&sglang, &["--iteration-marker", "step[DECODE"]);
        assert_eq!(inner["summary"]["iteration_source"], "flag");
        assert_eq!(inner["step_breakdown"][0]["phase"], "decode");
        // vLLM's Python frame, asked for by function name.
        let frame = feed_of(&corpus.join("tracelens/graph_execution.json.gz"), &["--iteration-marker", "execute_model"]);
        assert_eq!(frame["summary"]["iterations"], 1);
    });
}

#[test]
fn traces_without_a_repeating_marker_have_no_iterations() {
    crate::with_shared!(shared => {
        let corpus = shared.join("corpus");
        for file in [
            "tracelens/normalization_layer_test.json.gz",
            "tracelens/train_resnet18.json.gz",
            "hta/benchmark_simple_add_trace.json.gz",
            "hta/benchmark_result_924719_1679055439_trace.json.gz",
        ] {
            // HTA's 924719 sample holds host events only.
            let feed = feed_of(&corpus.join(file), &["--allow-empty"]);
            assert!(feed["summary"].get("iterations").is_none(), "{file}");
            assert!(feed.get("phases").is_none(), "{file}");
        }
    });
    // ProfilerStep traces keep their steps.
    let zoo = crate::common::analyze_path(&fixture("kineto/zoo/llama_decode_eager.json.gz"));
    assert!(zoo.summary.steps > 0);
    assert!(zoo.summary.iterations.is_none());
    let _ = rules();
}

/// A synthetic SGLang-style trace: one loop marked by `step[EXTEND …]` and `step[DECODE …]`
/// ranges, each launching one kernel.
fn sglang_like(dir: &Path) -> PathBuf {
    let mut events = Vec::new();
    for i in 0..6u64 {
        let ts = 1_000.0 * i as f64;
        let name = if i % 3 == 0 {
            "step[EXTEND bs=2 toks=256]"
        } else {
            "step[DECODE bs=2]"
        };
        events.push(
            serde_json::json!({"ph": "X", "cat": "user_annotation", "name": name,
            "pid": 1, "tid": 1, "ts": ts, "dur": 500.0}),
        );
        events.push(
            serde_json::json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
            "pid": 1, "tid": 1, "ts": ts + 10.0, "dur": 5.0, "args": {"correlation": i + 1}}),
        );
        events.push(
            serde_json::json!({"ph": "X", "cat": "kernel", "name": "decode_kernel",
            "pid": 0, "tid": 7, "ts": ts + 20.0, "dur": 100.0,
            "args": {"correlation": i + 1, "device": 0, "stream": 7}}),
        );
    }
    let path = dir.join("sglang_like.json");
    let doc = serde_json::json!({"schemaVersion": 1, "traceEvents": events});
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

#[test]
fn an_engines_markers_of_both_phases_are_one_loop() {
    // Neither SGLang phase alone launches half the GPU work: the family does.
    let tmp = tempfile::tempdir().unwrap();
    let feed = feed_of(&sglang_like(tmp.path()), &[]);
    assert_eq!(feed["summary"]["iterations"], 6);
    assert_eq!(feed["summary"]["iteration_source"], "sglang");
    let phases: Vec<(String, u64)> = feed["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["phase"].as_str().unwrap().to_string(),
                p["iterations"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        phases,
        [("prefill".to_string(), 2), ("decode".to_string(), 4)]
    );
}

#[test]
fn a_marker_that_matches_nothing_says_so() {
    let feed = feed_of(
        &serving("serving_llama_flash.json.gz"),
        &["--iteration-marker", "no_such_range"],
    );
    let warnings = feed["inputs"][0]["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("no_such_range")),
        "{warnings:?}"
    );
    assert!(feed["step_breakdown"].as_array().unwrap().is_empty());
}
