//! Model FLOP utilization against torch's own count: the GPT-2 training traces of
//! `make_region_traces.py` record `torch.utils.flop_counter.FlopCounterMode`'s FLOPs of one step
//! (`regions_truth.json`: executed, and the model's without activation checkpointing);
//! recomputation on the checkpointing fixture and on the corpus's ResNet with activation
//! checkpointing (MI300X); per rank on the 2-GPU DDP trace.

use crate::common::{feed_of, fixture, read_json_gz, read_truth, write_json_gz};
use crate::with_shared;
use serde_json::Value;

fn truth() -> Value {
    read_truth(&fixture("kineto/h100/regions_truth.json"))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is {}", v[key]))
}

/// MFU and HFU follow from the FLOPs, the mean step and the peak.
fn assert_mfu_follows(s: &Value) {
    let seconds = num(&s["step_ns"], "mean") / 1e9;
    let peak = num(s, "peak_flops");
    let mfu = num(s, "model_flops_per_step") / (seconds * peak) * 100.0;
    let hfu = num(s, "executed_flops_per_step") / (seconds * peak) * 100.0;
    assert!((num(s, "mfu_pct") - mfu).abs() < 1e-3, "{s:#}");
    assert!((num(s, "hfu_pct") - hfu).abs() < 1e-3, "{s:#}");
    assert!(
        (num(s, "executed_flops_per_step")
            - num(s, "model_flops_per_step")
            - num(s, "recompute_flops_per_step")
            - num(s, "padding_flops_per_step"))
        .abs()
            < 2.0
    );
}

#[test]
fn flops_per_step_equal_flop_counter_modes() {
    let truth = truth();
    for run in ["train_regions", "train_layers", "train_checkpoint"] {
        let feed = feed_of(&fixture(&format!("kineto/h100/{run}.json.gz")), &[]);
        let s = &feed["summary"];
        let t = &truth["runs"][run];
        for (ours, theirs) in [
            ("executed_flops_per_step", "flops_per_step_executed"),
            ("model_flops_per_step", "flops_per_step_model"),
        ] {
            let (a, b) = (num(s, ours), num(t, theirs));
            // The issue asks for 10%; counting as FlopCounterMode does (attention over every
            // query-key pair, backward 2.5 forwards) gives its number.
            assert!((a - b).abs() <= 0.01 * b, "{run} {ours}: {a} vs {b}");
        }
        assert_eq!(s["mfu_dtype"], "bf16");
        assert_eq!(s["mfu_basis"], "steps");
        assert_eq!(s["mfu_lower_bound"], false, "{run}: every GEMM has shapes");
        // H100 SXM's dense BF16 peak, from rules/devices.toml.
        assert_eq!(num(s, "peak_flops"), 989.4e12);
        assert_mfu_follows(s);
        let recomputed = num(s, "recompute_flops_per_step");
        if run == "train_checkpoint" {
            // Every transformer block re-runs its forward: the executed minus the model's.
            let expect = num(t, "flops_per_step_executed") - num(t, "flops_per_step_model");
            assert!(
                (recomputed - expect).abs() <= 0.01 * expect,
                "{recomputed} vs {expect}"
            );
            assert!(num(s, "hfu_pct") > num(s, "mfu_pct"));
        } else {
            assert_eq!(recomputed, 0.0, "{run}: nothing recomputed");
            assert_eq!(s["hfu_pct"], s["mfu_pct"]);
        }
    }
}

/// torchvision ResNet-18 (convolutions, autocast), timm ViT-B/16 (cuDNN attention, not causal),
/// transformers Llama with and without grouped K/V heads (causal): FlopCounterMode's FLOPs of
/// one step (`fixtures/kineto/h200/phases/phases_truth.json`).
#[test]
fn flops_equal_flop_counter_modes_on_library_models() {
    let dir = fixture("kineto/h200/phases");
    let truth = read_truth(&dir.join("phases_truth.json"));
    for run in [
        "resnet18_amp",
        "vit_b16_bf16",
        "llama_sdpa_bf16",
        "llama_gqa_sdpa_bf16",
    ] {
        let feed = feed_of(&dir.join(format!("{run}.json.gz")), &[]);
        let s = &feed["summary"];
        let expect = num(&truth["runs"][run], "flops_per_step");
        let ours = num(s, "model_flops_per_step");
        assert!(
            (ours - expect).abs() <= 0.001 * expect,
            "{run}: {ours} vs {expect}"
        );
        assert_eq!(s["recompute_flops_per_step"], 0.0, "{run}");
        assert_eq!(s["mfu_dtype"], "bf16", "{run}");
        // Layout copies inside convolution ops are conv time, not uncounted FLOPs.
        assert_eq!(s["mfu_lower_bound"], false, "{run}: {}", s["flops_missing"]);
        assert_mfu_follows(s);
    }
}

/// The math SDPA backend (its matmuls inside the counted attention call, once), reentrant
/// activation checkpointing (recomputation under `CheckpointFunctionBackward`), a hand-written
/// backward whose matmuls have forward's shapes (not recomputation), and an inference loop.
#[test]
fn flops_and_recomputation_on_other_step_orders() {
    let dir = fixture("kineto/h200/phases");
    let truth = read_truth(&dir.join("phases_edge_truth.json"));
    for run in [
        "zero_grad_after_loss",
        "math_sdpa",
        "checkpoint_reentrant",
        "custom_backward_matmul",
        "inference_steps",
    ] {
        let feed = feed_of(&dir.join(format!("{run}.json.gz")), &[]);
        let s = &feed["summary"];
        let t = &truth["runs"][run];
        let executed = num(t, "flops_per_step");
        let model = t["flops_per_step_model"].as_f64().unwrap_or(executed);
        for (ours, theirs) in [
            ("executed_flops_per_step", executed),
            ("model_flops_per_step", model),
            ("recompute_flops_per_step", executed - model),
        ] {
            let a = num(s, ours);
            assert!(
                (a - theirs).abs() <= 0.001 * executed,
                "{run} {ours}: {a} vs {theirs}"
            );
        }
        assert_mfu_follows(s);
    }
}

#[test]
fn ops_without_shapes_make_mfu_a_lower_bound() {
    // The same trace with the addmm calls' shapes removed, as a profile without record_shapes
    // for those ops would be.
    let mut doc = read_json_gz(&fixture("kineto/h100/train_regions.json.gz"));
    for e in doc["traceEvents"].as_array_mut().unwrap() {
        if e["name"] == "aten::addmm" {
            if let Some(args) = e["args"].as_object_mut() {
                args.remove("Input Dims");
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no_addmm_shapes.json.gz");
    write_json_gz(&path, &doc);
    let full = feed_of(&fixture("kineto/h100/train_regions.json.gz"), &[]);
    let cut = feed_of(&path, &[]);
    let s = &cut["summary"];
    assert_eq!(s["mfu_lower_bound"], true);
    assert_eq!(s["flops_missing"][0]["op"], "aten::addmm", "{s:#}");
    assert!(num(&s["flops_missing"][0], "gpu_ns") > 0.0);
    assert!(num(s, "mfu_pct") < num(&full["summary"], "mfu_pct"));
    assert!(num(s, "model_flops_per_step") < num(&full["summary"], "model_flops_per_step"));
}

#[test]
fn each_rank_has_its_own_mfu() {
    let feed = feed_of(&fixture("kineto/h100x2/ddp"), &[]);
    let s = &feed["summary"];
    assert_mfu_follows(s);
    let ranks = feed["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    let sum: f64 = ranks
        .iter()
        .map(|r| num(&r["summary"], "model_flops_per_step"))
        .sum();
    assert!((sum - num(s, "model_flops_per_step")).abs() <= 2.0);
    for r in ranks {
        let rs = &r["summary"];
        assert_mfu_follows(rs);
        // Data parallel: every rank does the same work.
        assert_eq!(
            rs["model_flops_per_step"],
            ranks[0]["summary"]["model_flops_per_step"]
        );
    }
    // fp32 GEMMs without TF32 (PyTorch's default) run on the SIMT units: their peak, for the
    // step and for every GEMM shape (cuBLAS's split-K calls start with a memset that says
    // nothing of the precision; their SIMT kernel does).
    assert_eq!(s["mfu_dtype"], "fp32");
    for row in feed["op_shapes"].as_array().unwrap() {
        if row["op"] == "aten::mm" || row["op"] == "aten::addmm" {
            let pct = num(row, "pct_of_peak");
            assert!((40.0..=100.0).contains(&pct), "{row}");
        }
    }
}

#[test]
fn recomputation_found_in_the_corpus_checkpointing_trace() {
    with_shared!(shared => {
        let corpus = shared.join("corpus/tracelens");
        let feed = feed_of(&corpus.join("resnet_act_checkpoint.json.gz"), &[]);
        let s = &feed["summary"];
        let r = num(s, "recompute_flops_per_step");
        let model = num(s, "model_flops_per_step");
        // Checkpointed ResNet blocks re-run their convolutions in backward.
        assert!(r > 0.1 * model && r < model, "{r} of {model}");
        assert!(num(s, "hfu_pct") > num(s, "mfu_pct"));
        assert_mfu_follows(s);
        // Traces without checkpointing recompute nothing.
        for name in ["train_resnet18.json.gz", "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"] {
            let feed = feed_of(&corpus.join(name), &[]);
            assert_eq!(feed["summary"]["recompute_flops_per_step"], 0.0, "{name}");
            assert!(num(&feed["summary"], "model_flops_per_step") > 0.0);
        }
    });
}

#[test]
fn grouped_gemm_flops_equal_the_expert_loops_on_the_same_routing() {
    // The same MoE, weights and batch (identical losses), its experts once as a Python loop
    // of GEMMs and once as torch._grouped_mm under expert parallelism: the grouped run's model
    // FLOPs are the loop's; the rows padding each expert's group to 16 (at most 15 x 4 experts
    // of ~1,700 rows, found from the dispatch all-to-all's received rows) are executed only.
    let flops = |run: &str| {
        let f = feed_of(&fixture(&format!("kineto/parallel/{run}")), &[]);
        let s = &f["summary"];
        assert_eq!(s["mfu_lower_bound"], false, "{run}");
        assert!(s["flops_missing"].as_array().unwrap().is_empty(), "{run}");
        (
            num(s, "model_flops_per_step"),
            num(s, "executed_flops_per_step"),
        )
    };
    let ((looped, looped_executed), (grouped, executed)) =
        (flops("moe_ep"), flops("moe_ep_grouped"));
    eprintln!(
        "loop {looped:.6e} vs grouped {grouped:.6e} ({executed:.6e} executed) FLOPs per step"
    );
    assert_eq!(looped, looped_executed);
    assert!(
        (grouped / looped - 1.0).abs() < 1e-9,
        "{looped} vs {grouped}"
    );
    assert!(
        executed > grouped && executed / grouped - 1.0 < 0.035,
        "{grouped} vs {executed}"
    );
}
