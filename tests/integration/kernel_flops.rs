//! Today's kernels counted and classified, on real captures (`fixtures/kineto/h200_kernels`,
//! `make_kernel_traces.py`, H200, torch 2.11): MoE grouped GEMMs, FP8 `_scaled_mm` and its bf16
//! twin, compiled flex attention with a causal block mask, a transformers Mixtral (GQA), Mask
//! R-CNN and torchvision's detection ops, a Llama decode on cuDNN's SDPA. Truth: FLOPs by hand
//! and `FlopCounterMode`'s where it counts (`truth.json`).

use crate::common::{bin, feed_of, fixture, read_truth, run_path};
use serde_json::Value;

fn truth(run: &str) -> Value {
    read_truth(&fixture("kineto/h200_kernels/truth.json"))[run].clone()
}

fn trace(run: &str) -> std::path::PathBuf {
    fixture(&format!("kineto/h200_kernels/{run}.json.gz"))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is {}", v[key]))
}

fn within(ours: f64, truth: f64, share: f64) -> bool {
    (ours - truth).abs() <= share * truth
}

/// MFU divides the model's FLOPs by the mean step and the dominant type's dense peak.
fn assert_mfu_at(s: &Value, peak: f64) {
    assert_eq!(num(s, "peak_flops"), peak);
    let mfu = num(s, "model_flops_per_step") / (num(&s["step_ns"], "mean") / 1e9 * peak) * 100.0;
    assert!((num(s, "mfu_pct") - mfu).abs() < 1e-3, "{s:#}");
}

#[test]
fn moe_grouped_gemms_count_the_routed_tokens() {
    // Our MoE (experts as three torch._grouped_mm, rows padded to 16) and transformers'
    // Mixtral on its grouped_mm experts: FlopCounterMode counts neither grouped GEMM.
    for (run, hand) in [
        ("moe_train", "hand_flops_per_step"),
        ("mixtral_train", "hand_flops_per_step"),
    ] {
        let t = truth(run);
        let s = &feed_of(&trace(run), &[])["summary"];
        let (ours, hand) = (num(s, "model_flops_per_step"), num(&t, hand));
        assert!(within(ours, hand, 0.10), "{run}: {ours} vs {hand} by hand");
        assert_eq!(s["mfu_lower_bound"], false, "{run}: {s:#}");
        assert_eq!(s["mfu_dtype"], "bf16");
        assert_mfu_at(s, 989.4e12);
        // Padding rows (each expert's group rounded up to 16) are executed, not the model's:
        // `offs` is not recorded, the router's `aten::topk` gives the routed rows.
        let executed = num(s, "executed_flops_per_step");
        let padding = num(s, "padding_flops_per_step");
        assert!((executed - ours - padding).abs() < 2.0, "{s:#}");
        if run == "moe_train" {
            assert!(within(ours, hand, 1e-9), "{ours} vs {hand}");
            let by_hand = num(&t, "hand_executed_flops_per_step");
            assert!(within(executed, by_hand, 1e-9), "{executed} vs {by_hand}");
            assert!(padding > 0.0 && executed > ours, "{s:#}");
            assert!(num(s, "hfu_pct") > num(s, "mfu_pct"));
        } else {
            // GQA (16 query heads over 4 KV heads): the query heads count. Rows are tokens x
            // top-k exactly: no padding.
            assert!(within(ours, hand, 1e-6), "{ours} vs {hand}");
            assert_eq!(padding, 0.0);
        }
    }
}

#[test]
fn fp8_scaled_mm_is_counted_at_the_fp8_peak_and_its_bf16_twin_is_unchanged() {
    let fp8 = &feed_of(&trace("fp8_mlp"), &[])["summary"];
    let bf16 = &feed_of(&trace("bf16_mlp"), &[])["summary"];
    for (s, run) in [(fp8, "fp8_mlp"), (bf16, "bf16_mlp")] {
        let t = truth(run);
        // FlopCounterMode counts both (aten._scaled_mm and aten.mm): the same number.
        assert_eq!(
            num(s, "model_flops_per_step"),
            num(&t, "flop_counter_per_step")
        );
        assert_eq!(
            num(s, "model_flops_per_step"),
            num(&t, "hand_flops_per_step")
        );
        assert_eq!(s["mfu_lower_bound"], false);
        // One type does all the work: each type at its own peak is the same number.
        assert_eq!(s["mfu_mixed_pct"], s["mfu_pct"]);
        let ceiling = num(s, "mfu_ceiling_pct");
        assert!(ceiling >= num(s, "mfu_pct") && ceiling <= 100.0, "{s:#}");
    }
    assert_eq!(fp8["mfu_dtype"], "fp8");
    assert_mfu_at(fp8, 1978.9e12);
    assert_eq!(bf16["mfu_dtype"], "bf16");
    assert_mfu_at(bf16, 989.4e12);
}

#[test]
fn flex_attention_is_an_upper_bound_until_its_density_is_given() {
    let t = truth("flex_train");
    let dense = &feed_of(&trace("flex_train"), &[])["summary"];
    assert_eq!(dense["mfu_upper_bound"], true);
    assert_eq!(dense["mfu_lower_bound"], false, "the templates are counted");
    let ours = num(dense, "model_flops_per_step");
    assert!(within(ours, num(&t, "hand_flops_per_step_dense"), 1e-9));
    let density = num(&t, "block_mask_density");
    let masked = &feed_of(
        &trace("flex_train"),
        &["--flex-density", &density.to_string()],
    )["summary"];
    assert_eq!(masked["mfu_upper_bound"], false);
    let ours = num(masked, "model_flops_per_step");
    let hand = num(&t, "hand_flops_per_step_masked");
    assert!(within(ours, hand, 0.10), "{ours} vs {hand} by hand");
    assert!(num(masked, "mfu_pct") < num(dense, "mfu_pct"));
    // The terminal says which bound it is.
    let out = bin().arg(trace("flex_train")).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        text.contains("an upper bound: flex attention counted dense"),
        "{text}"
    );
    for bad in ["0", "1.5", "nan"] {
        bin()
            .args(["--flex-density", bad])
            .arg(trace("flex_train"))
            .assert()
            .code(2)
            .stderr(predicates::str::contains("--flex-density"));
    }
}

#[test]
fn detection_ops_are_classified_and_convolutions_counted() {
    let t = truth("maskrcnn_infer");
    let run = run_path(&trace("maskrcnn_infer"));
    let a = &run.analysis;
    assert!(
        a.summary.unclassified_pct <= 2.0,
        "{}",
        a.summary.unclassified_pct
    );
    let family = |f: &str| -> i64 {
        a.top_kernels
            .iter()
            .filter(|k| k.family == f)
            .map(|k| k.total_ns)
            .sum()
    };
    // NMS and RoIAlign: the detection family, a real share of the step.
    assert!(
        family("detection") * 100 > a.summary.kernel_ns,
        "{}",
        family("detection")
    );
    // Transposed convolutions (the mask head) counted as FlopCounterMode counts them.
    let m = &a.summary.mfu;
    let ours = m.model_flops_per_step.unwrap();
    assert!(
        within(ours, num(&t, "flop_counter_per_step"), 1e-6),
        "{ours}"
    );
    assert!(!m.mfu_lower_bound, "{:?}", m.flops_missing);

    let ops = run_path(&trace("vision_ops"));
    let a = &ops.analysis;
    assert_eq!(a.summary.unclassified_pct, 0.0);
    for (needle, family) in [
        ("gather_keep_from_mask", "detection"),
        ("nms_kernel_impl", "detection"),
        ("roi_align_forward", "detection"),
        ("roi_pool_forward", "detection"),
        ("ps_roi_align_forward", "detection"),
        ("deformable_im2col", "deform_conv"),
    ] {
        let k = a.top_kernels.iter().find(|k| k.name.contains(needle));
        assert_eq!(k.map(|k| k.family.as_str()), Some(family), "{needle}");
    }
    // deform_conv2d: its GEMM over the sampled columns, 2·N·K·Ho·Wo·C·kh·kw, once.
    let flops = a.summary.mfu.model_flops_per_step.unwrap();
    assert_eq!(flops, 2.0 * 4.0 * 64.0 * 64.0 * 64.0 * 64.0 * 9.0);
    assert!(!a.summary.mfu.mfu_lower_bound);
}

#[test]
fn decode_reports_hbm_bandwidth_beside_mfu() {
    let t = truth("llama_decode");
    let run = run_path(&trace("llama_decode"));
    let a = &run.analysis;
    // cuDNN's split-KV combine is attention time, not unclassified.
    let lean = a
        .top_kernels
        .iter()
        .find(|k| k.name.contains("lean_reduction_kernel"))
        .expect("the capture runs cuDNN's lean attention");
    assert_eq!(lean.family, "sdpa");
    assert_eq!(a.summary.unclassified_pct, 0.0);
    let m = &a.summary.mfu;
    let hbm = m.hbm_util_pct.expect("every step decodes");
    // Each step reads every weight but the embedding table (decode gathers 8 of its 32,000
    // rows) and the KV cache: the bytes behind the number cover the weights, and not twice.
    let step_s = a.summary.step_ns.as_ref().unwrap().mean / 1e9;
    let bytes = hbm / 100.0 * step_s * 4800e9;
    let weights = num(&t, "weight_bytes") - 32000.0 * 2048.0 * 2.0;
    assert!(
        bytes >= weights && bytes < 1.5 * weights,
        "{bytes} vs {weights}"
    );
    // A training step is no decode: no bandwidth line.
    let train = run_path(&trace("moe_train"));
    assert_eq!(train.analysis.summary.mfu.hbm_util_pct, None);
}

/// vLLM's attention op packs every request's tokens in one q `[T, H, D]`: its FLOPs come from
/// the iteration's marker, which TraceLens's instrumented vLLM writes with the token sums
/// (TraceLens's own B200 sample: one 888-token prompt through 36 gpt-oss layers, q in FP8).
#[test]
fn vllm_attention_is_counted_from_its_iteration_marker() {
    crate::with_shared!(shared => {
        let path = shared.join("corpus/tracelens_nv/eager_trace.json.gz");
        let feed = feed_of(&path, &["-q"]);
        let s = &feed["summary"];
        let missing: Vec<&str> = s["flops_missing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["op"].as_str().unwrap())
            .collect();
        assert!(!missing.contains(&"vllm::unified_attention_with_output"), "{missing:?}");
        // The fused MoE has no count yet: still a lower bound.
        assert!(missing.contains(&"vllm::moe_forward"));
        assert_eq!(s["mfu_lower_bound"], true);
        let row = feed["op_shapes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["op"] == "vllm::unified_attention_with_output")
            .expect("the attention calls have a rate");
        assert_eq!(row["calls"], 36);
        assert_eq!(row["shapes"], "[[888,8,64],[888,1,64],[888,1,64],[888,8,64],[],[],[]]");
        // 8 query heads x (64 + 64) x the causal triangle of 888 tokens, per layer.
        let executed = 36.0 * 2.0 * 8.0 * 128.0 * 888.0 * 889.0 / 2.0;
        let tflops = executed / row["ns"].as_f64().unwrap() / 1e3;
        assert!((row["tflops"].as_f64().unwrap() - tflops).abs() < 1e-3 * tflops, "{row}");
        // The step's FLOPs: the GEMMs' (their rows) and every query-key pair of the attention
        // calls, 888² a layer (one iteration: the step is the iteration).
        let gemms: f64 = feed["op_shapes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["op"] != "vllm::unified_attention_with_output")
            .filter_map(|r| Some(r["tflops"].as_f64()? * r["ns"].as_f64()? * 1e3))
            .sum();
        let model = gemms + 36.0 * 2.0 * 8.0 * 128.0 * 888.0 * 888.0;
        assert!(within(num(s, "model_flops_per_step"), model, 1e-5), "{s}");
    });
}

/// Every Kineto trace among the fixtures: at most 2% of its kernel time unclassified (the zoo
/// and the corpus have their own tests).
#[test]
fn every_kineto_fixture_is_classified() {
    fn gz_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                gz_files(&p, out);
            } else if p.to_string_lossy().ends_with(".json.gz") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    gz_files(&fixture("kineto"), &mut files);
    files.sort();
    assert!(files.len() >= 100, "{} traces", files.len());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let a = crate::common::analyze_paths(std::slice::from_ref(p), 1);
            (a.summary.unclassified_pct > 2.0)
                .then(|| format!("{}: {:.2}%", p.display(), a.summary.unclassified_pct))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
