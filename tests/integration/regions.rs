//! Regions against CUDA events: real training traces of a `transformers` GPT-2 on an H100
//! (`fixtures/kineto/h100/train_{regions,layers,checkpoint}.json.gz`, made by
//! `make_region_traces.py`) with forward / backward / optimizer in `record_function` and CUDA
//! events recorded at each boundary (`regions_truth.json`); PyTorch's own phases on the 2-GPU
//! DDP and FSDP2 traces and on corpus traces nobody annotated.

use crate::common::{
    feed_of, fixture, profiled_steps, read_json_gz, read_truth, stdout_of, write_json_gz,
};
use crate::with_shared;
use serde_json::Value;

fn truth() -> Value {
    read_truth(&fixture("kineto/h100/regions_truth.json"))
}

fn region<'a>(feed: &'a Value, path: &str) -> &'a Value {
    feed["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == path)
        .unwrap_or_else(|| panic!("no region {path}: {:#}", feed["regions"]))
}

fn ns(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap()
}

#[test]
fn region_times_agree_with_cuda_events() {
    let truth = truth();
    for run in ["train_regions", "train_layers", "train_checkpoint"] {
        let feed = feed_of(&fixture(&format!("kineto/h100/{run}.json.gz")), &[]);
        let steps = profiled_steps(&truth, run);
        for name in ["forward", "backward", "optimizer"] {
            let r = region(&feed, name);
            assert_eq!(r["count"], steps.len(), "{run} {name}");
            assert_eq!(r["kind"], "annotation");
            assert_eq!(r["depth"], 0);
            let events: f64 = steps
                .iter()
                .map(|s| s[format!("{name}_ns")].as_f64().unwrap())
                .sum();
            // Events start timing when the host reaches the range: the elapsed time includes the
            // GPU's wait for the first launch (the optimizer's host work), the span does not.
            let elapsed = ns(r, "gpu_elapsed_ns");
            assert!(
                (elapsed - events).abs() <= 0.03 * events,
                "{run} {name}: elapsed {elapsed} vs CUDA events {events}"
            );
            if name != "optimizer" {
                let span = ns(r, "gpu_span_ns");
                assert!(
                    (span - events).abs() <= 0.05 * events,
                    "{run} {name}: span {span} vs CUDA events {events}"
                );
            }
            assert!(ns(r, "gpu_span_ns") <= elapsed);
        }
        // Backward launches from the autograd thread, outside the main thread's range in time
        // order: its kernels still count (Kineto's gpu_user_annotation gives it 1 µs).
        let (fwd, bwd) = (region(&feed, "forward"), region(&feed, "backward"));
        assert!(
            ns(bwd, "gpu_ns") > 1.3 * ns(fwd, "gpu_ns"),
            "{run}: backward {} vs forward {}",
            bwd["gpu_ns"],
            fwd["gpu_ns"]
        );
        // Kineto's own gpu_user_annotation spans a range's main-thread launches: forward launches
        // from the main thread alone, so its span is ours to the µs (the profiler's timestamps).
        let raw = crate::common::read_json_gz(&fixture(&format!("kineto/h100/{run}.json.gz")));
        let kineto: f64 = raw["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "gpu_user_annotation" && e["name"] == "forward")
            .map(|e| e["dur"].as_f64().unwrap() * 1e3)
            .sum();
        assert!(
            (kineto - ns(fwd, "gpu_span_ns")).abs() <= 3.0 * 1e3,
            "{run}: Kineto {kineto} vs {}",
            fwd["gpu_span_ns"]
        );
        // PyTorch's optimizer ranges nest in the user's.
        let step = region(&feed, "optimizer / Optimizer.step#AdamW.step");
        assert_eq!(step["kind"], "phase");
        assert_eq!(step["depth"], 1);
        assert_eq!(region(&feed, "optimizer")["gpu_ns"], step["gpu_ns"]);
    }
}

/// Training steps of torchvision, timm and transformers models nobody annotated
/// (`fixtures/kineto/h200/phases`, `make_phase_traces.py`): the derived forward and backward, and
/// PyTorch's `Optimizer.step`, against the CUDA events the script recorded around each.
#[test]
fn derived_phases_agree_with_cuda_events() {
    let dir = fixture("kineto/h200/phases");
    let truth = read_truth(&dir.join("phases_truth.json"));
    for run in [
        "resnet18_amp",
        "vit_b16_bf16",
        "llama_sdpa_bf16",
        "llama_gqa_sdpa_bf16",
    ] {
        let feed = feed_of(&dir.join(format!("{run}.json.gz")), &[]);
        assert_consistent(&feed, run);
        let steps = profiled_steps(&truth, run);
        for (path, key) in [
            ("forward", "forward_ns"),
            ("backward", "backward_ns"),
            ("Optimizer.step#AdamW.step", "optimizer_ns"),
        ] {
            let r = region(&feed, path);
            assert_eq!(r["kind"], "phase");
            assert_eq!(r["count"], steps.len(), "{run} {path}");
            let events: f64 = steps.iter().map(|s| s[key].as_f64().unwrap()).sum();
            let elapsed = ns(r, "gpu_elapsed_ns");
            assert!(
                (elapsed - events).abs() <= 0.05 * events,
                "{run} {path}: elapsed {elapsed} vs CUDA events {events}"
            );
        }
        // Nothing the user wrote: no annotation rows.
        assert!(feed["regions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["kind"] == "phase"));
    }
}

/// Phases come from the main thread's outermost ops in time order: a profiler writes them in
/// order (read in place), but a trace written in any other order must give the same tree.
#[test]
fn derived_phases_do_not_depend_on_the_order_events_are_written_in() {
    let path = fixture("kineto/h200/phases/resnet18_amp.json.gz");
    let mut doc = read_json_gz(&path);
    doc["traceEvents"].as_array_mut().unwrap().reverse();
    let dir = tempfile::tempdir().unwrap();
    let reversed = dir.path().join("resnet18_amp_reversed.json.gz");
    write_json_gz(&reversed, &doc);
    let (in_order, out_of_order) = (feed_of(&path, &[]), feed_of(&reversed, &[]));
    assert!(region(&in_order, "backward")["count"].as_u64().unwrap() > 0);
    assert_eq!(in_order["regions"], out_of_order["regions"]);
}

/// The orders of a training step that trip a phase finder, captured for this
/// (`make_phase_edge_traces.py`, `phases_edge_truth.json`): `zero_grad()` between the loss and
/// `backward()`; one range around the loss and `backward()` together; the math SDPA backend;
/// reentrant activation checkpointing; and an inference loop whose steps are forward alone.
#[test]
fn derived_phases_survive_other_step_orders() {
    let dir = fixture("kineto/h200/phases");
    let truth = read_truth(&dir.join("phases_edge_truth.json"));
    let cases: [(&str, &[(&str, &str)]); 5] = [
        (
            "zero_grad_after_loss",
            &[("forward", "forward_ns"), ("backward", "backward_ns")],
        ),
        (
            "loss_and_backward_range",
            &[
                ("loss_and_backward / forward", "forward_ns"),
                ("loss_and_backward / backward", "backward_ns"),
            ],
        ),
        (
            "math_sdpa",
            &[("forward", "forward_ns"), ("backward", "backward_ns")],
        ),
        (
            "checkpoint_reentrant",
            &[("forward", "forward_ns"), ("backward", "backward_ns")],
        ),
        ("inference_steps", &[("forward", "forward_ns")]),
    ];
    for (run, phases) in cases {
        let feed = feed_of(&dir.join(format!("{run}.json.gz")), &[]);
        assert_consistent(&feed, run);
        let steps = profiled_steps(&truth, run);
        for &(path, key) in phases {
            let r = region(&feed, path);
            assert_eq!(r["count"], steps.len(), "{run} {path}");
            let events: f64 = steps.iter().map(|s| s[key].as_f64().unwrap()).sum();
            let elapsed = ns(r, "gpu_elapsed_ns");
            assert!(
                (elapsed - events).abs() <= 0.05 * events,
                "{run} {path}: elapsed {elapsed} vs CUDA events {events}"
            );
        }
        if run == "inference_steps" {
            assert!(feed["regions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["name"] != "backward"));
        }
    }
}

#[test]
fn layers_nest_in_forward_and_share_its_time() {
    let feed = feed_of(&fixture("kineto/h100/train_layers.json.gz"), &[]);
    let fwd = region(&feed, "forward");
    let layers: Vec<&Value> = (0..6)
        .map(|i| region(&feed, &format!("forward / layer_{i}")))
        .collect();
    let per_layer: Vec<f64> = layers.iter().map(|l| ns(l, "gpu_ns")).collect();
    // Six identical blocks: equal GPU time, within a few percent.
    let (lo, hi) = per_layer
        .iter()
        .fold((f64::MAX, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(hi <= 1.05 * lo, "{per_layer:?}");
    // The blocks are most of forward; embeddings and the LM head the rest.
    let sum: f64 = per_layer.iter().sum();
    assert!(
        sum < ns(fwd, "gpu_ns") && sum > 0.5 * ns(fwd, "gpu_ns"),
        "{sum}"
    );
    // Pre-order: forward, then its layers in program order.
    let paths: Vec<&str> = feed["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    let at = |p: &str| paths.iter().position(|x| *x == p).unwrap();
    assert!(at("forward") < at("forward / layer_0"));
    for i in 0..5 {
        assert!(at(&format!("forward / layer_{i}")) < at(&format!("forward / layer_{}", i + 1)));
    }
    assert!(at("forward / layer_5") < at("backward"));
}

/// What every region row must satisfy, on any trace.
fn assert_consistent(feed: &Value, what: &str) {
    let regions = feed["regions"].as_array().unwrap();
    for r in regions {
        let span = r["gpu_span_ns"].as_i64().unwrap();
        let part: i64 = r["time_partition"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["ns"].as_i64().unwrap())
            .sum();
        assert_eq!(part, span, "{what} {}: partition vs span", r["path"]);
        let buckets: i64 = r["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["kernel_ns"].as_i64().unwrap())
            .sum();
        assert_eq!(
            buckets,
            r["gpu_ns"].as_i64().unwrap(),
            "{what} {}",
            r["path"]
        );
        assert!(r["gpu_elapsed_ns"].as_i64().unwrap() >= span);
        // A child's work was launched inside its parent's range.
        let path = r["path"].as_str().unwrap();
        if let Some((parent, _)) = path.rsplit_once(" / ") {
            let p = regions.iter().find(|x| x["path"] == parent).unwrap();
            assert!(
                r["gpu_ns"].as_i64() <= p["gpu_ns"].as_i64(),
                "{what} {path} exceeds its parent"
            );
        }
    }
}

#[test]
fn pytorch_phases_where_nothing_was_annotated() {
    // DDP: the derived forward inside DistributedDataParallel.forward (transformers computes
    // the loss inside the model's forward), backward from the autograd thread (the bucket
    // all-reduces launched from its hooks), one of each per step and rank.
    let feed = feed_of(&fixture("kineto/h100x2/ddp"), &[]);
    assert_consistent(&feed, "ddp");
    let steps = feed["step_breakdown"].as_array().unwrap().len();
    for path in [
        "DistributedDataParallel.forward",
        "DistributedDataParallel.forward / forward",
        "backward",
        "Optimizer.step#SGD.step",
    ] {
        let r = region(&feed, path);
        assert_eq!(r["count"], steps, "{path}");
        assert_eq!(r["kind"], "phase");
        assert_eq!(r["ranks"], serde_json::json!([0, 1]));
    }
    let bwd = region(&feed, "backward");
    let comm = bwd["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["bucket"] == "communication")
        .expect("DDP's all-reduces run in backward");
    assert!(comm["kernel_ns"].as_i64().unwrap() > 0);
    // The phases hold nearly all GPU work.
    let top: i64 = feed["regions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["depth"] == 0)
        .map(|r| r["gpu_ns"].as_i64().unwrap())
        .sum();
    let kernel = feed["summary"]["kernel_ns"].as_i64().unwrap();
    assert!(top as f64 >= 0.95 * kernel as f64, "{top} of {kernel}");

    // FSDP2: its post-backward hooks run on the autograd thread, inside backward.
    let feed = feed_of(&fixture("kineto/h100x2/fsdp2/rank0.json.gz"), &[]);
    assert_consistent(&feed, "fsdp2");
    let reduce = region(
        &feed,
        "backward / FSDP::post_backward_reduce (transformer.h.3)",
    );
    assert_eq!(reduce["count"], 3);
    assert!(
        region(&feed, "forward / FSDP::pre_forward (transformer.h.0)")["gpu_ns"].as_i64() > Some(0)
    );
}

#[test]
fn corpus_phases_without_steps_or_annotations() {
    with_shared!(shared => {
        // AMD MI300X, ResNet-18 training without ProfilerStep: five iterations, a forward
        // before each backward.
        let feed = feed_of(&shared.join("corpus/tracelens/train_resnet18.json.gz"), &[]);
        assert_consistent(&feed, "resnet18");
        let (f, b) = (region(&feed, "forward"), region(&feed, "backward"));
        assert_eq!(f["count"], 5);
        assert_eq!(b["count"], 5);
        assert_eq!(region(&feed, "Optimizer.step#SGD.step")["count"], 5);
        // Activation checkpointing with DDP (H100): backward re-runs forward work.
        let feed = feed_of(&shared.join("corpus/tracelens/resnet_act_checkpoint.json.gz"), &[]);
        assert_consistent(&feed, "act_checkpoint");
        assert!(region(&feed, "backward")["gpu_ns"].as_i64() > region(&feed, "forward")["gpu_ns"].as_i64());
        // A diffusion pipeline's own annotation with compiled graphs inside.
        let feed = feed_of(&shared.join("corpus/tracelens/profile_trace_rank_0.json.gz"), &[]);
        assert_consistent(&feed, "diffusion");
        assert_eq!(feed["regions"][0]["kind"], "annotation");
    });
}

#[test]
fn reports_show_the_phases_the_tree_and_mfu() {
    let trace = fixture("kineto/h100/train_layers.json.gz");
    let run = |args: &[&str]| stdout_of(&trace, args);
    let feed = feed_of(&trace, &[]);
    let table = run(&[]);
    let line = table.lines().find(|l| l.starts_with("regions")).unwrap();
    // Top-level phases in program order, each per occurrence.
    let (f, b, o) = (
        line.find("forward").unwrap(),
        line.find("backward").unwrap(),
        line.find("optimizer").unwrap(),
    );
    assert!(f < b && b < o, "{line}");
    assert!(!line.contains("layer_0"), "{line}");
    let mfu = table.lines().find(|l| l.starts_with("mfu")).unwrap();
    let pct = format!("{:.1}%", feed["summary"]["mfu_pct"].as_f64().unwrap());
    assert!(mfu.contains(&pct) && mfu.contains("bf16"), "{mfu}");

    let md = run(&["--markdown", "-"]);
    assert!(md.contains("| ↳ layer_0 | 3 |"), "{md}");
    assert!(md.contains("MFU: "));

    let html = run(&["--html", "-"]);
    assert!(html.contains("<h2>Regions</h2>") && html.contains("<h2>Model FLOP utilization</h2>"));
    // forward is an open branch holding its six layers as leaves.
    let forward = html.find("<details open><summary").unwrap();
    let closing = html[forward..].find("</details>").unwrap() + forward;
    assert_eq!(html[forward..closing].matches("layer_").count(), 6);
}
