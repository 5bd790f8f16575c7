//! `diff`: op rows matched across runs and vendors, and verdicts that know the noise. The
//! captures (`fixtures/kineto/h200/diff`, made by its `make_diff_traces.py` on an H200): a
//! transformers Llama run eagerly twice in two processes (the noise pair), once with 22 extra
//! `aten::mm` of a shape the model runs (planted), and compiled; 24 profiled steps each.

use crate::common::{assert_valid_feed, bin, fixture};
use crate::with_shared;
use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn capture(name: &str) -> PathBuf {
    fixture(&format!("kineto/h200/diff/{name}.json.gz"))
}

fn truth() -> Value {
    let text = std::fs::read_to_string(fixture("kineto/h200/diff/truth.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn diff_with(base: &Path, new: &Path, extra: &[&str]) -> Value {
    let out = bin()
        .arg("diff")
        .arg(base)
        .arg(new)
        .args(extra)
        .args(["--json", "-", "--top", "1000"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_valid_feed(&out)["diff"].clone()
}

fn diff(base: &Path, new: &Path) -> Value {
    diff_with(base, new, &[])
}

fn ops(d: &Value) -> &Vec<Value> {
    d["ops"].as_array().unwrap()
}

fn component<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
}

fn row<'a>(d: &'a Value, op: &str, shapes: &str) -> &'a Value {
    ops(d)
        .iter()
        .find(|o| o["op"] == op && o["shapes"] == shapes)
        .unwrap_or_else(|| panic!("no row {op} {shapes}: {:#}", d["ops"]))
}

const PLANTED_SHAPE: &str = "[[4096,1024],[1024,1024]]";

#[test]
fn the_same_code_run_twice_is_noise_and_host_time() {
    let d = diff(&capture("base_a"), &capture("base_b"));
    assert_eq!(d["base"]["compared_steps"], 24);
    assert_eq!(d["new"]["compared_steps"], 24);
    // Every op row matches exactly, and none is called faster or slower.
    assert!(ops(&d).len() >= 30, "{}", ops(&d).len());
    for o in ops(&d) {
        assert_eq!(o["match"], "op_shape", "{o}");
        assert_eq!(o["verdict"], "within_noise", "{o}");
        assert_eq!(o["base_calls_per_step"], o["new_calls_per_step"], "{o}");
    }
    assert_eq!(component(&d, "gpu_work")["verdict"], "within_noise");
    // The step moved (host noise), and the cause says where.
    assert_ne!(d["step"]["delta_ns"], 0);
    assert_eq!(d["cause"], "host_time", "{:#}", d["components"]);
    assert_ne!(d["verdict"], "slower");
    assert_eq!(
        d["base"]["launches_per_step"],
        d["new"]["launches_per_step"]
    );
    // The gate leaves it alone even at 1%, both ways.
    for (b, n) in [("base_a", "base_b"), ("base_b", "base_a")] {
        bin()
            .arg("diff")
            .arg(capture(b))
            .arg(capture(n))
            .args(["--fail-on-regression", "1", "--json", "/dev/null"])
            .assert()
            .code(0)
            .stderr(predicate::str::contains("gate tripped").not());
    }
}

#[test]
fn host_noise_of_a_third_of_the_step_is_reported_not_gated() {
    // timm ViT-B/16 eager twice (`make_noise_pairs.py`): one process ran its steps ~50% longer
    // on the host, with the same kernels.
    let (a, b) = (capture("vit_noise_a"), capture("vit_noise_b"));
    let d = diff(&b, &a);
    assert_eq!(d["verdict"], "slower");
    assert!(
        d["step"]["delta_pct"].as_f64().unwrap() > 20.0,
        "{}",
        d["step"]
    );
    assert_eq!(d["cause"], "host_time");
    assert_eq!(component(&d, "gpu_work")["verdict"], "within_noise");
    assert_eq!(
        d["base"]["launches_per_step"],
        d["new"]["launches_per_step"]
    );
    assert!(
        ops(&d).iter().all(|o| o["verdict"] == "within_noise"),
        "{:#}",
        d["ops"]
    );
    bin()
        .arg("diff")
        .arg(&b)
        .arg(&a)
        .args(["--fail-on-regression", "5", "--json", "/dev/null"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains("not gated").and(predicate::str::contains("host noise")));
    // Asked for, host time is gated too.
    bin()
        .arg("diff")
        .arg(&b)
        .arg(&a)
        .args([
            "--fail-on-regression",
            "5",
            "--gate-host-time",
            "--json",
            "/dev/null",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("from host_time"));
}

#[test]
fn a_planted_matmul_is_its_op_rows_slowdown() {
    let t = truth();
    let plant = &t["runs"]["planted"]["planted"];
    let count = plant["count_per_step"].as_f64().unwrap();
    let expected_ns = plant["expected_added_gpu_ms_per_step"].as_f64().unwrap() * 1e6;
    let d = diff(&capture("base_a"), &capture("planted"));
    let mm = row(&d, "aten::mm", PLANTED_SHAPE);
    assert_eq!(mm["match"], "op_shape");
    assert_eq!(mm["verdict"], "slower", "{mm}");
    assert!(mm["confidence"].as_f64().unwrap() >= 0.99, "{mm}");
    // By the planted GPU time (CUDA events before the profile), and by its calls.
    let delta = mm["delta_ns_per_step"].as_f64().unwrap();
    assert!(
        (delta / expected_ns - 1.0).abs() < 0.10,
        "{delta} ns vs {expected_ns} planted"
    );
    let calls =
        mm["new_calls_per_step"].as_f64().unwrap() - mm["base_calls_per_step"].as_f64().unwrap();
    assert_eq!(calls, count);
    // It is the largest change, and the only op row that moved.
    assert_eq!(&ops(&d)[0], mm);
    for o in ops(&d).iter().skip(1) {
        assert_eq!(o["verdict"], "within_noise", "{o}");
    }
    // GPU work grew by what the trace's kernels say; the step by more (host dispatch of the
    // extra calls), and the cause names both.
    let busy = |run: &str| {
        let per_step = t["runs"][run]["trace_facts"]["per_step"]
            .as_object()
            .unwrap();
        per_step
            .values()
            .map(|s| s["kernel_busy_ms"].as_f64().unwrap())
            .sum::<f64>()
            * 1e6
            / per_step.len() as f64
    };
    let gpu = component(&d, "gpu_work");
    assert_eq!(gpu["verdict"], "slower");
    let truth_gpu = busy("planted") - busy("base_a");
    let got = gpu["delta_ns_per_step"].as_f64().unwrap();
    assert!((got / truth_gpu - 1.0).abs() < 0.03, "{got} vs {truth_gpu}");
    assert_eq!(d["verdict"], "slower");
    assert!(
        d["cause"] == "both" || d["cause"] == "gpu_work",
        "{}",
        d["cause"]
    );
    // The gate trips on it and names the row; the other way round it is faster.
    bin()
        .arg("diff")
        .arg(capture("base_a"))
        .arg(capture("planted"))
        .args(["--fail-on-regression", "5", "--json", "/dev/null"])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("slower at confidence").and(predicate::str::contains(
                format!("largest slower op: aten::mm {PLANTED_SHAPE}"),
            )),
        );
    let back = diff(&capture("planted"), &capture("base_a"));
    assert_eq!(back["verdict"], "faster");
    assert_eq!(row(&back, "aten::mm", PLANTED_SHAPE)["verdict"], "faster");
}

#[test]
fn compiling_is_faster_and_its_kernels_meet_their_eager_ops() {
    let d = diff(&capture("base_a"), &capture("compiled"));
    assert_eq!(d["verdict"], "faster");
    assert!(d["confidence"].as_f64().unwrap() >= 0.99);
    assert_eq!(component(&d, "gpu_work")["verdict"], "faster");
    assert!(
        d["step"]["delta_pct"].as_f64().unwrap() < -50.0,
        "{}",
        d["step"]
    );
    // Inductor's GEMMs (aten::mm with an out= tensor) meet the eager ones by signature.
    let mm = row(&d, "aten::mm", PLANTED_SHAPE);
    assert_eq!(
        (mm["match"].as_str(), mm["via"].as_str()),
        (Some("op_shape"), Some("gemm_signature"))
    );
    assert_eq!(mm["new_shapes"], "[[4096,1024],[1024,1024],[4096,1024]]");
    assert_eq!(mm["base_calls_per_step"], mm["new_calls_per_step"]);
    // Triton kernels meet the eager ops their names keep: the MLP's mul and silu.
    let silu = ops(&d)
        .iter()
        .find(|o| o["via"] == "inductor_name" && o["op"] == "aten::mul + aten::silu")
        .unwrap_or_else(|| panic!("{:#}", d["ops"]));
    assert!(
        silu["new_op"].as_str().unwrap().contains("mul_silu"),
        "{silu}"
    );
    assert_eq!(silu["verdict"], "faster");
    // Whatever does not match by name falls back to its bucket, not to new/removed rows of
    // work both runs do.
    assert!(ops(&d).iter().any(|o| o["match"] == "bucket"));
    // Each side's time is all there: rows add up to the GPU time launched in the steps.
    let sum = |side: &str| -> i64 {
        ops(&d)
            .iter()
            .map(|o| o[format!("{side}_ns_per_step")].as_i64().unwrap())
            .sum()
    };
    for (side, total) in [("base", "kernel_busy_ms"), ("new", "kernel_busy_ms")] {
        let run = if side == "base" { "base_a" } else { "compiled" };
        let t = truth();
        let per_step = t["runs"][run]["trace_facts"]["per_step"]
            .as_object()
            .unwrap();
        let truth_ns = per_step
            .values()
            .map(|s| s[total].as_f64().unwrap())
            .sum::<f64>()
            * 1e6
            / per_step.len() as f64;
        let got = sum(side) as f64;
        assert!(
            (got / truth_ns - 1.0).abs() < 0.01,
            "{side}: {got} vs {truth_ns}"
        );
    }
}

#[test]
fn step_windows_pick_each_sides_steps() {
    // One run against itself, its first half against its second: the same code, no change
    // the test can call in the GPU work.
    let a = capture("base_a");
    let d = diff_with(&a, &a, &["--base-steps", "3..15", "--new-steps", "15..27"]);
    assert_eq!(
        d["base"]["compared_step_numbers"],
        serde_json::json!([3, 14])
    );
    assert_eq!(
        d["new"]["compared_step_numbers"],
        serde_json::json!([15, 26])
    );
    assert_eq!(component(&d, "gpu_work")["verdict"], "within_noise");
    assert!(ops(&d).iter().all(|o| o["verdict"] == "within_noise"));
    // The same steps on both sides: nothing changes at all.
    let same = diff_with(&a, &a, &[]);
    assert_eq!(same["verdict"], "within_noise");
    assert_eq!(same["step"]["delta_ns"], 0);
    assert!(ops(&same).iter().all(|o| o["delta_ns_per_step"] == 0));
    // Four steps a side call a large, consistent change (the planted GEMM)...
    let four = diff_with(&a, &capture("planted"), &["--base-steps", "3..7"]);
    assert_eq!(four["base"]["compared_steps"], 4);
    assert_eq!(four["verdict"], "slower");
    assert_eq!(row(&four, "aten::mm", PLANTED_SHAPE)["verdict"], "slower");
    // ...two are too few: no verdict, and the gate says it falls back.
    let few = diff_with(&a, &capture("planted"), &["--base-steps", "3..5"]);
    assert_eq!(few["verdict"], "too_few_steps");
    assert_eq!(few["confidence"], Value::Null);
    assert_eq!(few["base"]["compared_steps"], 2);
    assert_eq!(
        row(&few, "aten::mm", PLANTED_SHAPE)["verdict"],
        "too_few_steps"
    );
    bin()
        .arg("diff")
        .arg(&a)
        .arg(capture("planted"))
        .args([
            "--base-steps",
            "3..5",
            "--fail-on-regression",
            "5",
            "--json",
            "/dev/null",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "too few steps for a verdict (base 2, new 24",
        ));
}

#[test]
fn launch_bound_to_cuda_graphs_is_faster_from_host_time() {
    let eager = fixture("kineto/h100/eager_launch_bound.json.gz");
    let graphs = fixture("kineto/h100/compiled_cudagraphs.json.gz");
    let d = diff(&eager, &graphs);
    assert_eq!(d["verdict"], "faster");
    assert_eq!(d["cause"], "host_time", "{:#}", d["components"]);
    assert_eq!(component(&d, "host_time")["verdict"], "faster");
    // Graph replays have no ops of their own in this capture: rows match by bucket.
    assert!(
        ops(&d).iter().all(|o| o["match"] == "bucket"),
        "{:#}",
        d["ops"]
    );
    // Back to eager is a regression of the code although it is host time: the launches per
    // step changed.
    assert_ne!(
        d["base"]["launches_per_step"],
        d["new"]["launches_per_step"]
    );
    bin()
        .arg("diff")
        .arg(&graphs)
        .arg(&eager)
        .args(["--fail-on-regression", "5", "--json", "/dev/null"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("from host_time"));
}

#[test]
fn reports_lead_with_the_verdict_and_the_largest_op_changes() {
    let out = bin()
        .arg("diff")
        .arg(capture("base_a"))
        .arg(capture("planted"))
        .args(["--markdown", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8(out).unwrap();
    let mut lines = md.lines().filter(|l| !l.is_empty());
    assert_eq!(lines.next(), Some("## rocprof-classify diff: slower"));
    let lead = lines.next().unwrap();
    assert!(
        lead.contains("confidence 1.000 (Welch's t-test, 24 vs 24 steps)"),
        "{lead}"
    );
    assert!(lines.next().unwrap().starts_with("Largest op changes"));
    let top: Vec<&str> = lines.by_ref().take(3).collect();
    assert!(top.iter().all(|l| l.starts_with("- `")), "{top:?}");
    assert!(
        top[0].contains(&format!("aten::mm {PLANTED_SHAPE} bf16"))
            && top[0].contains("(+22 calls) · slower"),
        "{}",
        top[0]
    );
    // The terminal names the verdict and the rows; the HTML draws per-op bars.
    let table = bin()
        .arg("diff")
        .arg(capture("base_a"))
        .arg(capture("planted"))
        .output()
        .unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains("slower: step ") && text.contains("Ops matched across the runs"),
        "{text}"
    );
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("d.html");
    bin()
        .arg("diff")
        .arg(capture("base_a"))
        .arg(capture("planted"))
        .arg("--html")
        .arg(&html)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Largest op changes") && page.contains("<svg"));
    assert!(page.contains("slower: step "));
}

#[test]
fn a_jobs_op_rows_add_its_ranks() {
    let dir = fixture("kineto/h100x2/balanced");
    let job = diff(&dir, &dir);
    let rank = |r: &str| {
        let p = dir.join(format!("rank{r}.json.gz"));
        diff(&p, &p)
    };
    let (r0, r1) = (rank("0"), rank("1"));
    // Traces without shapes: rows are ops alone.
    let mm = |d: &Value| -> Value {
        ops(d)
            .iter()
            .find(|o| o["op"] == "aten::mm")
            .cloned()
            .unwrap()
    };
    assert_eq!(mm(&job)["shapes"], Value::Null);
    let sum = |k: &str| mm(&r0)[k].as_f64().unwrap() + mm(&r1)[k].as_f64().unwrap();
    assert!(
        (mm(&job)["base_ns_per_step"].as_f64().unwrap() - sum("base_ns_per_step")).abs() <= 1.0
    );
    assert_eq!(
        mm(&job)["base_calls_per_step"].as_f64().unwrap(),
        sum("base_calls_per_step")
    );
}

#[test]
fn diffs_are_identical_on_any_thread_count() {
    let run = |threads: &str| {
        bin()
            .env("RAYON_NUM_THREADS", threads)
            .arg("diff")
            .arg(capture("base_a"))
            .arg(capture("compiled"))
            .args(["--json", "-"])
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(run("1"), run("4"));
}

#[test]
fn an_mi300x_run_and_an_h100_run_match_gemms_by_op_and_shape() {
    with_shared!(shared => {
        let amd = shared.join("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
        let nv = shared.join("corpus/tracelens_nv/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
        let d = diff(&amd, &nv);
        // One profiled step a side: no verdict, but the rows match.
        assert_eq!(d["verdict"], "too_few_steps");
        for (op, shapes, calls) in [
            ("aten::mm", "[[8944,1024],[1024,2816]]", 48.0),
            ("aten::addmm", "[[1024],[8944,1024],[1024,1024],[],[]]", 72.0),
            ("aten::mm", "[[8944,2816],[2816,1024]]", 24.0),
        ] {
            let r = row(&d, op, shapes);
            assert_eq!((r["match"].as_str(), r["dtype"].as_str()), (Some("op_shape"), Some("bf16")), "{r}");
            assert_eq!(r["base_calls_per_step"], calls, "{r}");
            assert_eq!(r["new_calls_per_step"], calls, "{r}");
            assert_eq!(r["verdict"], "too_few_steps");
            // Hipblaslt's and cuBLAS's kernels differ; the H100 runs these GEMMs 10–40% faster.
            let ratio = r["new_ns_per_step"].as_f64().unwrap() / r["base_ns_per_step"].as_f64().unwrap();
            assert!((0.6..0.9).contains(&ratio), "{r}");
        }
        // Every GEMM of either side is in a matched row.
        for o in ops(&d).iter().filter(|o| o["bucket"] == "gemm") {
            assert_eq!(o["match"], "op_shape", "{o}");
        }
        bin()
            .arg("diff")
            .arg(&amd)
            .arg(&nv)
            .args(["--fail-on-regression", "50", "--json", "/dev/null"])
            .assert()
            .code(0)
            .stderr(predicate::str::contains("gating on the bare percentage"));
    });
}

/// A profiled step that moved against its GPU work is `mixed`, and a gate trips on the slower GPU
/// work. Set2's BERT training (an H200): SDPA measured 9.7% faster without the profiler, while
/// its profiled step is `slower` with its GPU work `faster` (the host took longer): `mixed`, not
/// `slower`. Reversed, eager attention after TF32 (both measured, `truth.json`): GPU work slower,
/// host time faster, the profiled step faster; the user's step, which its GPU bounds without the
/// profiler, got no faster: `mixed`, and `--fail-on-regression 5` exits 1 on the GPU work.
#[test]
fn a_step_that_moved_against_its_gpu_work_is_mixed_and_gated() {
    let dir = fixture("kineto/pairs/set2/bert_train");
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("../truth.json")).unwrap()).unwrap();
    let measured = |arm: &str| {
        truth["baselines"]["bert_train"]["arms"][arm]["measured_saving_pct"]
            .as_f64()
            .unwrap()
    };
    assert!(measured("sdpa") > 5.0, "{}", measured("sdpa"));
    let d = diff(&dir.join("base.json.gz"), &dir.join("sdpa.json.gz"));
    assert_eq!(d["step_verdict"], "slower");
    assert_eq!(component(&d, "gpu_work")["verdict"], "faster");
    assert_eq!(d["verdict"], "mixed");

    let (base, new) = (dir.join("tf32.json.gz"), dir.join("base.json.gz"));
    let d = diff(&base, &new);
    assert_eq!(d["step_verdict"], "faster");
    assert_eq!(component(&d, "gpu_work")["verdict"], "slower");
    assert_eq!(component(&d, "host_time")["verdict"], "faster");
    assert_eq!(d["verdict"], "mixed");
    // Without the profiler, TF32 saved nothing measurable on this host-bound step: the
    // profiled step's −27% is the host's.
    assert!(measured("tf32").abs() < 2.0, "{}", measured("tf32"));
    let out = bin()
        .arg("diff")
        .arg(&base)
        .arg(&new)
        .args(["--fail-on-regression", "5"])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("GPU work +")
                .and(predicate::str::contains("while the step is faster")),
        )
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    let verdict = text
        .lines()
        .find(|l| l.starts_with("mixed:"))
        .expect("the verdict line");
    assert!(
        verdict.contains("GPU work slower") && verdict.contains("host time faster"),
        "{verdict}"
    );
    // A gate well above the GPU work's change does not trip.
    bin()
        .arg("diff")
        .arg(&base)
        .arg(&new)
        .args(["--fail-on-regression", "50", "--json", "/dev/null"])
        .assert()
        .code(0);
}
