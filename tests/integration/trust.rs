//! The numbers a user checks against their own timer and the tool they used before: step times
//! against CUDA events and torch_tb_profiler's definition, 2021-era steps, busy time on graph
//! replays, memory activities and top kernels, directories as profilers leave them, cuDNN's
//! CUTLASS convolutions. Each test fails on the behaviour it replaces.

use crate::common::{analyze_path, assert_valid_feed, bin, feed_of, fixture};
use crate::with_shared;
use rocprof_classify::analysis::Analysis;
use serde_json::Value;
use std::io::Read;
use std::path::Path;

const TB_SAMPLE: &str = "corpus/kineto_tb_plugin/worker0.1623143089861.pt.trace.json.gz";

pub(crate) fn raw_events(path: &Path) -> Vec<Value> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["traceEvents"].as_array().unwrap().clone()
}

/// µs (integer or with ns decimals) to ns, exactly (epoch-scale µs overflow an f64's digits).
fn ns(v: &Value) -> i64 {
    if let Some(us) = v.as_i64() {
        return us * 1000;
    }
    let text = v.to_string();
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let frac: String = frac.chars().chain(std::iter::repeat('0')).take(3).collect();
    int.parse::<i64>().unwrap() * 1000 + frac.parse::<i64>().unwrap()
}

/// torch_tb_profiler's step windows (event_parser.py, `StepParser._find_device_steps` and
/// `_update_steps_duration`), computed from the raw events: (step, start_ns, end_ns).
/// A runtime call belongs to a step when it lies wholly inside the step's CPU range; its
/// kernels, copies and memsets (by correlation id) extend the step's end; the first step starts
/// after device work outside every step that ends before the step's first device activity;
/// each later one at the later of its CPU start and the previous end.
pub(crate) fn tb_plugin_steps(events: &[Value]) -> Vec<(u64, i64, i64)> {
    let cat = |e: &Value| e["cat"].as_str().unwrap_or("").to_ascii_lowercase();
    let corr = |e: &Value| e["args"]["correlation"].as_u64();
    let mut steps: Vec<(u64, i64, i64)> = events
        .iter()
        .filter(|e| {
            e["ph"] == "X"
                && matches!(cat(e).as_str(), "operator" | "cpu_op" | "user_annotation")
                && e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("ProfilerStep#"))
        })
        .map(|e| {
            let n = e["name"].as_str().unwrap()["ProfilerStep#".len()..]
                .parse()
                .unwrap();
            (n, ns(&e["ts"]), ns(&e["ts"]) + ns(&e["dur"]))
        })
        .collect();
    let device: Vec<(u64, i64, i64)> = events
        .iter()
        .filter(|e| {
            e["ph"] == "X"
                && matches!(
                    cat(e).as_str(),
                    "kernel" | "memcpy" | "gpu_memcpy" | "memset" | "gpu_memset"
                )
        })
        .map(|e| {
            (
                corr(e).unwrap_or(0),
                ns(&e["ts"]),
                ns(&e["ts"]) + ns(&e["dur"]),
            )
        })
        .collect();
    let mut runtimes: Vec<(i64, i64, u64)> = events
        .iter()
        .filter(|e| e["ph"] == "X" && matches!(cat(e).as_str(), "runtime" | "cuda_runtime"))
        .map(|e| {
            (
                ns(&e["ts"]),
                ns(&e["ts"]) + ns(&e["dur"]),
                corr(e).unwrap_or(0),
            )
        })
        .collect();
    runtimes.sort();
    let mut steps_device = vec![(i64::MAX, i64::MIN, 0usize); steps.len()];
    let mut matched = std::collections::HashSet::new();
    let (mut i, mut r) = (0, 0);
    while i < steps.len() && r < runtimes.len() {
        let (s0, s1) = (steps[i].1, steps[i].2);
        let (r0, r1, c) = runtimes[r];
        if r0 < s0 {
            r += 1;
        } else if r1 <= s1 {
            for (k, d) in device
                .iter()
                .enumerate()
                .filter(|(_, d)| d.0 == c && c != 0)
            {
                let sd = &mut steps_device[i];
                *sd = (sd.0.min(d.1), sd.1.max(d.2), sd.2 + 1);
                matched.insert(k);
            }
            r += 1;
        } else if r0 < s1 {
            r += 1;
        } else {
            i += 1;
        }
    }
    assert!(
        !matched.is_empty(),
        "the sample has kernels launched inside steps"
    );
    let mut prev_end = steps[0].1;
    if steps_device[0].0 != i64::MAX {
        for (k, d) in device.iter().enumerate() {
            if !matched.contains(&k) && d.2 < steps_device[0].0 {
                prev_end = prev_end.max(d.2);
            }
        }
    }
    for (step, dev) in steps.iter_mut().zip(&steps_device) {
        let start = prev_end.max(step.1);
        let mut end = step.2;
        if dev.0 == i64::MAX {
            end = end.max(start);
        } else {
            end = end.max(dev.1).max(start);
        }
        *step = (step.0, start, end);
        prev_end = end;
    }
    // The plugin leaves out trailing steps without device work, or with less than 80% of the
    // previous step's: the profiler may have missed their kernels.
    let mut keep = steps.len();
    while keep > 0 && steps_device[keep - 1].2 == 0 {
        keep -= 1;
    }
    if keep > 1 && (steps_device[keep - 2].2 as f64) * 0.8 > steps_device[keep - 1].2 as f64 {
        keep -= 1;
    }
    steps.truncate(keep);
    steps
}

fn steps_of(a: &Analysis) -> Vec<(u64, i64, i64)> {
    a.step_breakdown
        .iter()
        .map(|s| (s.step, s.start_ns, s.start_ns + s.dur_ns))
        .collect()
}

/// torch 1.8/1.9 traces file `ProfilerStep#N` and every other `record_function` range under the
/// `Operator` category: they are ranges (steps, idle time inside them), not ops.
#[test]
fn a_2021_trace_has_its_steps_and_its_ranges_are_not_ops() {
    with_shared!(shared => {
        let a = analyze_path(&shared.join(TB_SAMPLE));
        assert_eq!(a.summary.steps, 6, "ProfilerStep#5..#10");
        assert_eq!(a.step_breakdown.first().map(|s| s.step), Some(5));
        for op in &a.ops {
            assert!(!op.name.contains('#'), "a record_function range became an op: {}", op.name);
        }
        // The DataLoader ranges (68 ms in step 5) hold the host with the GPU idle: data loading,
        // not dispatch. Read as ops they made every idle ns launch overhead.
        let loading = a.partition_ns(rocprof_classify::analysis::Category::DataLoading) as f64 / a.summary.window_ns as f64;
        let launch = a.partition_ns(rocprof_classify::analysis::Category::LaunchOverhead) as f64 / a.summary.window_ns as f64;
        assert!(loading > 0.10, "data loading is {:.1}% of the window", loading * 100.0);
        assert!(launch < 0.35, "launch overhead is {:.1}% of the window", launch * 100.0);
    });
}

/// The step windows equal torch_tb_profiler's, computed from the raw trace here, on the sample
/// the plugin ships.
#[test]
fn step_windows_equal_torch_tb_profilers_on_its_sample() {
    with_shared!(shared => {
        let path = shared.join(TB_SAMPLE);
        let theirs = tb_plugin_steps(&raw_events(&path));
        let ours = steps_of(&analyze_path(&path));
        assert_eq!(theirs.len(), 6, "{theirs:?}");
        assert_eq!(ours, theirs);
        // Disjoint, and together no longer than the span they cover.
        let sum: i64 = ours.iter().map(|s| s.2 - s.1).sum();
        assert!(sum <= ours.last().unwrap().2 - ours[0].1);
    });
}

/// The same on our own traces of real models, where the GPU runs behind the CPU (the plugin's
/// first-step rule and the tail of each step running into the next both matter there).
#[test]
fn step_windows_equal_torch_tb_profilers_on_real_models() {
    for name in [
        "gpt2_train_eager",
        "llama_decode_reduce_overhead",
        "resnet18_train_eager",
    ] {
        let path = fixture(&format!("kineto/zoo/{name}.json.gz"));
        // The plugin also reads `gpu_user_annotation` ProfilerStep ranges as steps (duplicates
        // on the GPU's timeline): the CPU ones are the steps.
        let events: Vec<Value> = raw_events(&path)
            .into_iter()
            .filter(|e| e["cat"] != "gpu_user_annotation")
            .collect();
        let theirs = tb_plugin_steps(&events);
        let ours = steps_of(&analyze_path(&path));
        assert_eq!(ours.len(), 4, "{name}");
        assert_eq!(theirs.len(), 4, "{name}: {theirs:?}");
        // Kernels launched across a step boundary may differ by a call straddling it: compare
        // each step within 0.1%.
        for (o, t) in ours.iter().zip(&theirs) {
            assert_eq!(o.0, t.0, "{name}");
            let (od, td) = (o.2 - o.1, t.2 - t.1);
            assert!(
                (od - td).abs() as f64 <= 0.001 * td as f64,
                "{name} step {}: ours {od} ns, tb_plugin {td} ns",
                o.0
            );
        }
    }
}

fn zoo_truth() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture("kineto/zoo/truth.json")).unwrap())
        .unwrap()
}

/// A GPU-bound eager training loop (transformers GPT-2, AdamW): each step's time equals the
/// GPU's own, measured with CUDA events on the stream when the trace was captured. Overlapping
/// windows reported twice that (a step's GPU tail counted again in the next step).
#[test]
fn step_time_equals_cuda_events_on_a_gpu_bound_training_loop() {
    let truth = zoo_truth();
    let a = analyze_path(&fixture("kineto/zoo/gpt2_train_eager.json.gz"));
    let events = truth["gpt2_train_eager"]["cuda_event_step_ms"]
        .as_object()
        .unwrap();
    assert_eq!(a.step_breakdown.len(), events.len());
    for s in &a.step_breakdown {
        let cuda_ns = events[&s.step.to_string()].as_f64().unwrap() * 1e6;
        // GPU-bound: the GPU is busy nearly all of the step.
        assert!(
            s.gpu_busy_ns as f64 > 0.95 * s.dur_ns as f64,
            "step {} busy {} of {}",
            s.step,
            s.gpu_busy_ns,
            s.dur_ns
        );
        let err = (s.dur_ns as f64 - cuda_ns).abs() / cuda_ns;
        assert!(
            err < 0.005,
            "step {}: {} ns against CUDA events' {cuda_ns:.0} ns",
            s.step,
            s.dur_ns
        );
    }
    let mean_cuda: f64 = events
        .values()
        .map(|v| v.as_f64().unwrap() * 1e6)
        .sum::<f64>()
        / events.len() as f64;
    let mean = a.summary.step_ns.as_ref().unwrap().mean;
    assert!(
        (mean - mean_cuda).abs() / mean_cuda < 0.005,
        "mean {mean} against {mean_cuda}"
    );
    assert!(
        !a.warmup_in_window,
        "no step absorbs the warm-up's GPU tail"
    );
}

/// Every zoo trace: on GPU-bound steps the step time is the CUDA-event time.
#[test]
fn step_time_equals_cuda_events_on_gpu_bound_steps_of_every_zoo_trace() {
    let truth = zoo_truth();
    let mut checked = 0;
    for (name, t) in truth.as_object().unwrap() {
        let Some(events) = t["cuda_event_step_ms"].as_object() else {
            continue;
        };
        let a = analyze_path(&fixture(&format!("kineto/zoo/{name}.json.gz")));
        for s in a
            .step_breakdown
            .iter()
            .filter(|s| s.gpu_busy_ns as f64 > 0.9 * s.dur_ns as f64)
        {
            let cuda_ns = events[&s.step.to_string()].as_f64().unwrap() * 1e6;
            let err = (s.dur_ns as f64 - cuda_ns).abs() / cuda_ns;
            assert!(
                err < 0.01,
                "{name} step {}: {} ns against CUDA events' {cuda_ns:.0} ns",
                s.step,
                s.dur_ns
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} GPU-bound steps checked");
}

/// Graph replays: the GPU idle between a replay's kernels is `graph_gaps`, not busy time, so busy
/// time never exceeds the GPU's activity and no bucket gets more time than its kernels ran.
#[test]
fn graph_gaps_are_not_busy_time() {
    for rel in [
        "kineto/zoo/llama_decode_reduce_overhead.json.gz",
        "kineto/h100/compiled_cudagraphs.json.gz",
    ] {
        let run = crate::common::run_path(&fixture(rel));
        let a = &run.analysis;
        let gaps = a.partition_ns(rocprof_classify::analysis::Category::GraphGaps);
        assert!(
            gaps > 0,
            "{rel}: graphs replay, with gaps between their kernels"
        );
        assert!(
            a.summary.gpu_busy_ns <= a.summary.kernel_ns,
            "{rel}: busy {} > activity {}",
            a.summary.gpu_busy_ns,
            a.summary.kernel_ns
        );
        for b in &a.buckets {
            let part = a.partition_ns(rocprof_classify::analysis::Category::of_bucket(b.bucket));
            assert!(
                part <= b.kernel_ns + 1,
                "{rel}: {} partition {part} > its kernels' {}",
                b.bucket.as_str(),
                b.kernel_ns
            );
        }
        // Neither busy nor launch overhead: the launch-bound finding's evidence leaves it out.
        if let Some(f) = run
            .findings
            .iter()
            .find(|f| f.id.as_str() == "launch_bound")
        {
            assert_eq!(
                f.evidence.to_json()["launch_overhead_ns"].as_i64(),
                Some(a.partition_ns(rocprof_classify::analysis::Category::LaunchOverhead)),
                "{rel}"
            );
        }
    }
    // An eager trace has no graph gaps.
    assert_eq!(
        analyze_path(&fixture("kineto/zoo/gpt2_train_eager.json.gz"))
            .partition_ns(rocprof_classify::analysis::Category::GraphGaps),
        0
    );
}

/// Graph gaps show in every report.
#[test]
fn reports_show_graph_gaps() {
    let path = fixture("kineto/zoo/llama_decode_reduce_overhead.json.gz");
    let table = bin()
        .arg(&path)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let table = String::from_utf8(table).unwrap();
    assert!(
        table.contains("graph_gaps") && table.contains("graph gaps %"),
        "{table}"
    );
    for flag in ["--markdown", "--html"] {
        let out = bin()
            .arg(&path)
            .args([flag, "-"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        assert!(
            String::from_utf8(out).unwrap().contains("graph_gaps"),
            "{flag}"
        );
    }
}

/// Copies and memsets are memory whichever op launched them, and `top_kernels` (one row per
/// name and bucket) adds up to `buckets` exactly.
#[test]
fn memsets_are_memory_and_top_kernels_add_up_to_buckets() {
    let mut paths = vec![
        fixture("kineto/zoo/resnet18_train_eager.json.gz"),
        fixture("kineto/zoo/convnext_train_eager.json.gz"),
        fixture("kineto/h100/eager_manual_attn.json.gz"),
    ];
    if let Some(shared) = crate::common::shared() {
        paths.push(shared.join(TB_SAMPLE));
    }
    for path in paths {
        let feed = feed_of(&path, &["--top", "100000"]);
        let mut by_bucket = std::collections::BTreeMap::<String, (i64, u64)>::new();
        for k in feed["top_kernels"].as_array().unwrap() {
            let e = by_bucket
                .entry(k["bucket"].as_str().unwrap().to_string())
                .or_default();
            e.0 += k["total_ns"].as_i64().unwrap();
            e.1 += k["launches"].as_u64().unwrap();
            if k["name"].as_str().unwrap().starts_with("Memset")
                || k["name"].as_str().unwrap().starts_with("Memcpy")
            {
                assert_eq!(k["bucket"], "memory", "{}: {k}", path.display());
            }
        }
        for b in feed["buckets"].as_array().unwrap() {
            let got = by_bucket
                .get(b["bucket"].as_str().unwrap())
                .copied()
                .unwrap_or_default();
            assert_eq!(
                got,
                (
                    b["kernel_ns"].as_i64().unwrap(),
                    b["launches"].as_u64().unwrap()
                ),
                "{}: {}",
                path.display(),
                b["bucket"]
            );
        }
    }
}

/// The activity table says the same: every memcpy and memset row is memory.
#[cfg(feature = "polars")]
#[test]
fn exported_memsets_are_memory() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("a.csv");
    bin()
        .arg(fixture("kineto/zoo/resnet18_train_eager.json.gz"))
        .arg("--export-csv")
        .arg(&csv)
        .assert()
        .success();
    let mut r = csv::Reader::from_path(&csv).unwrap();
    let headers = r.headers().unwrap().clone();
    let col = |n: &str| headers.iter().position(|h| h == n).unwrap();
    let (kind, bucket) = (col("kind"), col("bucket"));
    let mut copies = 0;
    for row in r.records() {
        let row = row.unwrap();
        if matches!(&row[kind], "memset" | "memcpy") {
            assert_eq!(&row[bucket], "memory", "{row:?}");
            copies += 1;
        }
    }
    assert!(copies > 0);
}

/// cuDNN's CUTLASS convolutions (a ViT's patch embedding), its depthwise convolutions
/// (ConvNeXt) and the kernels around them are classified by name, so traces without ops
/// (rocprof-style, or kernel-name views) see them as conv too.
#[test]
fn cudnn_cutlass_and_depthwise_convolutions_are_conv() {
    for (name, rule) in [
        ("vit_infer_eager", "conv.cudnn-cutlass"),
        ("convnext_train_eager", "conv.cudnn-depthwise"),
        ("resnet18_train_eager", "conv.cudnn-cutlass-helper"),
    ] {
        let feed = feed_of(
            &fixture(&format!("kineto/zoo/{name}.json.gz")),
            &["--top", "100000", "--no-attribution"],
        );
        assert_eq!(
            feed["summary"]["unclassified_pct"].as_f64(),
            Some(0.0),
            "{name}"
        );
        let rows: Vec<&Value> = feed["top_kernels"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k["rule_id"] == rule)
            .collect();
        assert!(!rows.is_empty(), "{name}: no kernel matched {rule}");
        assert!(rows.iter().all(|k| k["bucket"] == "conv"), "{name}");
    }
}

fn write_dir_with_stray_files(dir: &Path) {
    for (i, f) in ["eager_manual_attn", "eager_sdpa_fused"].iter().enumerate() {
        std::fs::copy(
            fixture(&format!("kineto/h100/{f}.json.gz")),
            dir.join(format!("rank{i}.json.gz")),
        )
        .unwrap();
    }
    std::fs::copy(fixture("kineto/zoo/truth.json"), dir.join("truth.json")).unwrap();
    // A config larger than the sniffed head, with no traceEvents by its end.
    let big: Vec<String> = (0..20_000).map(|i| format!("\"key_{i}\": {i}")).collect();
    std::fs::write(dir.join("config.json"), format!("{{{}}}", big.join(", "))).unwrap();
    std::fs::write(dir.join("notes.csv"), "a,b\n1,2\n").unwrap();
}

/// A profiler's output directory as users leave it: the traces are read, each stray file is
/// skipped with a warning naming it, and the feed lists what was skipped.
#[test]
fn a_directory_with_stray_files_reads_its_traces() {
    let dir = tempfile::tempdir().unwrap();
    write_dir_with_stray_files(dir.path());
    let out = bin()
        .arg(dir.path())
        .args(["--json", "-"])
        .assert()
        .success();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let feed = assert_valid_feed(&out.get_output().stdout);
    assert_eq!(feed["inputs"].as_array().unwrap().len(), 2);
    let skipped: Vec<&str> = feed["skipped_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    for f in ["config.json", "notes.csv", "truth.json"] {
        assert!(
            skipped.iter().any(|p| p.ends_with(f)),
            "{f} not in {skipped:?}"
        );
        assert_eq!(
            stderr
                .lines()
                .filter(|l| l.starts_with("warning: skipped") && l.contains(f))
                .count(),
            1,
            "{stderr}"
        );
    }
    // The same ranks as the two traces alone.
    let ranks: Vec<i64> = feed["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["rank"].as_i64().unwrap())
        .collect();
    assert_eq!(ranks, [0, 1]);
}

/// A file a reader recognizes but cannot read still fails the run: a silently dropped rank
/// would falsify the aggregate. A directory with no trace at all is an error too.
#[test]
fn a_broken_trace_in_a_directory_still_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    write_dir_with_stray_files(dir.path());
    // Malformed JSON (a truncated one is analyzed as far as it goes, with a warning).
    std::fs::write(dir.path().join("rank2.json"), "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 1, \"dur\": 2}]]}").unwrap();
    let out = bin().arg(dir.path()).assert().code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("rank2.json: malformed JSON at byte 78"),
        "{stderr}"
    );
    // A damaged gzip is a damaged trace too.
    std::fs::remove_file(dir.path().join("rank2.json")).unwrap();
    std::fs::copy(
        fixture("bad/corrupt_gzip.json.gz"),
        dir.path().join("rank2.json.gz"),
    )
    .unwrap();
    let out = bin().arg(dir.path()).assert().code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("rank2.json.gz: corrupt gzip data at byte 0"),
        "{stderr}"
    );

    let only_stray = tempfile::tempdir().unwrap();
    std::fs::write(only_stray.path().join("config.json"), "{\"lr\": 0.1}").unwrap();
    let out = bin().arg(only_stray.path()).assert().code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        stderr.contains("no file in this directory is a trace") && stderr.contains("config.json"),
        "{stderr}"
    );
}

/// What looks like a stray file but is a damaged or missing rank fails the run too: an empty
/// file (a rank that died), a gzip trace damaged before its events. A large JSON array of
/// non-events (a metrics log) is a stray file, not an empty rank.
#[test]
fn damaged_ranks_fail_and_a_metrics_log_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    write_dir_with_stray_files(dir.path());
    let log: Vec<String> = (0..5000)
        .map(|i| format!("{{\"step\": {i}, \"loss\": 0.5}}"))
        .collect();
    std::fs::write(
        dir.path().join("metrics.json"),
        format!("[{}]", log.join(",\n")),
    )
    .unwrap();
    let out = bin()
        .arg(dir.path())
        .args(["--json", "-"])
        .assert()
        .success();
    let feed = assert_valid_feed(&out.get_output().stdout);
    assert_eq!(
        feed["inputs"].as_array().unwrap().len(),
        2,
        "no phantom rank"
    );
    assert!(feed["skipped_files"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["path"].as_str().unwrap().ends_with("metrics.json")));

    std::fs::write(dir.path().join("rank2.json"), "").unwrap();
    let out = bin().arg(dir.path()).assert().code(2);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("rank2.json: empty file"));

    std::fs::remove_file(dir.path().join("rank2.json")).unwrap();
    let mut gz = std::fs::read(fixture("kineto/h100/eager_sdpa_fused.json.gz")).unwrap();
    gz.truncate(200);
    gz.extend(std::iter::repeat_n(0xA5u8, 4096));
    std::fs::write(dir.path().join("rank2.json.gz"), gz).unwrap();
    let out = bin().arg(dir.path()).assert().code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("rank2.json.gz: corrupt gzip data"),
        "{stderr}"
    );
}

/// The "not a trace" message names each reader once and each explanation once.
#[test]
fn the_not_a_trace_message_lists_each_reader_once() {
    let out = bin()
        .arg(fixture("bad/no_trace_events.json"))
        .assert()
        .code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    for name in [
        "rocpd",
        "rocprofv3-json",
        "rocprof-v1 JSON",
        "kineto",
        "rocprofv3-csv",
        "rocprof-v1 CSV",
        "rocprofv2-csv",
    ] {
        assert!(stderr.contains(name), "{name} missing: {stderr}");
    }
    assert_eq!(stderr.matches("a CSV header").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("rocprof-v1 (").count(), 0, "{stderr}");
}

/// The dependency fixtures' truth is what their traces show: the loader's `__next__` spans take
/// the time the capture script timed around `next(loader)` in the profiled steps, and the side
/// stream's joins appear as Kineto's `Stream Wait Event` records, as many per step as the script
/// issued.
#[test]
fn the_dependency_fixtures_agree_with_their_truth() {
    let dir = fixture("kineto/h200_deps");
    let truth = crate::common::read_truth(&dir.join("truth.json"));
    let run = crate::common::run_path(&dir.join("resnet18_loader.json.gz"));
    let names = &run.trace.names;
    let host = &run.trace.host;
    let mut spans: Vec<f64> = (0..host.len())
        .filter(|&h| {
            names
                .get(host.name[h])
                .starts_with("enumerate(DataLoader)#")
        })
        .map(|h| host.dur_ns.get(h) as f64 / 1e6)
        .collect();
    spans.sort_by(f64::total_cmp);
    let mut timed: Vec<f64> = truth["resnet18_loader"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| (2..6).contains(&s["step"].as_u64().unwrap()))
        .map(|s| s["loader_ms"].as_f64().unwrap())
        .collect();
    timed.sort_by(f64::total_cmp);
    assert_eq!(spans.len(), timed.len(), "{spans:?} vs {timed:?}");
    for (span, t) in spans.iter().zip(&timed) {
        // The timer also holds the iterator's own Python around the profiled span.
        assert!(
            *span <= *t && *span > 0.9 * t,
            "loader span {span} ms vs timed {t} ms"
        );
    }
    // The side stream's waits: Kineto records each as a `cuda_sync` event.
    let raw = crate::common::read_json_gz(&dir.join("side_stream_waits.json.gz"));
    let waits = raw["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "cuda_sync" && e["name"] == "Stream Wait Event")
        .count() as u64;
    let per_step = truth["side_stream_waits"]["wait_stream_calls_per_step"]
        .as_u64()
        .unwrap();
    assert_eq!(waits, per_step * 4, "4 profiled steps");
}
