//! The diagnosis (steps, time partition, compile signals, findings) against what is known to be
//! true of real traces: our H100 captures (truth.json, truth_extra.json) and the AMD corpus.

use crate::common::{fixture, run_path, run_trace};
use crate::with_shared;
use rocprof_classify::analysis::AnalysisOptions;
use rocprof_classify::ingest::{read_all, ReadOptions};
use rocprof_classify::Run;
use serde_json::Value;

fn h100(name: &str) -> Run {
    run_path(&fixture(&format!("kineto/h100/{name}.json.gz")))
}

fn ids(a: &Run) -> Vec<&str> {
    a.findings.iter().map(|f| f.id.as_str()).collect()
}

fn finding<'a>(a: &'a Run, id: &str) -> &'a rocprof_classify::detect::Finding {
    a.findings
        .iter()
        .find(|f| f.id.as_str() == id)
        .unwrap_or_else(|| panic!("no {id} finding in {:?}", ids(a)))
}

fn truth(file: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(&format!("kineto/h100/{file}"))).unwrap())
        .unwrap()
}

fn idle_rank(a: &Run) -> Vec<&'static str> {
    let mut idle: Vec<_> = a
        .analysis
        .time_partition
        .iter()
        .filter(|r| {
            r.category.as_str().contains("idle")
                || r.category == rocprof_classify::analysis::Category::LaunchOverhead
        })
        .collect();
    idle.sort_by_key(|r| std::cmp::Reverse(r.ns));
    idle.iter().map(|r| r.category.as_str()).collect()
}

#[test]
fn graph_breaks_from_a_data_dependent_branch_in_a_loop() {
    let a = h100("compiled_graph_breaks");
    let t = &truth("truth.json")["compiled_graph_breaks"];
    assert!(a.analysis.compile.compiled && a.analysis.compile.graph_breaks.detected);
    assert_eq!(
        a.analysis.compile.regions_per_step,
        t["compiled_regions_per_step"].as_f64().unwrap()
    );
    assert!(a.analysis.compile.graph_breaks.per_step >= 1.0);
    assert_eq!(
        a.analysis.compile.graph_breaks.frames,
        vec![1],
        "frame 0 skipped, the block runs as frame 1"
    );
    let f = finding(&a, "graph_breaks");
    assert_eq!(
        f.evidence.to_json()["signal"],
        "repeated_frame_without_outer"
    );
    // The Tensor.item() that breaks the graph shows up as host syncs between the regions.
    assert!(
        f.evidence.to_json()["item_syncs_per_step"]
            .as_f64()
            .unwrap()
            >= 1.0,
        "{}",
        f.evidence
    );
    assert_eq!(a.analysis.compile.recompiles.count, 0);
}

#[test]
fn graph_breaks_from_explicit_breaks_are_a_frame_sequence() {
    let a = h100("compiled_graph_breaks_explicit");
    let t = &truth("truth_extra.json")["compiled_graph_breaks_explicit"];
    let breaks = t["explain"]["graph_break_count"].as_f64().unwrap();
    assert_eq!(a.analysis.compile.graph_breaks.per_step, breaks);
    assert_eq!(a.analysis.compile.graph_breaks.frames, vec![0, 1, 2]);
    assert_eq!(
        finding(&a, "graph_breaks").evidence.to_json()["signal"],
        "frame_sequence"
    );
}

#[test]
fn recompiles_and_compile_time_in_the_window() {
    with_shared!(shared => {
        let a = run_path(&shared.join("traces/h100/compiled_recompiles.json.gz"));
        let t: Value = serde_json::from_str(&std::fs::read_to_string(shared.join("traces/h100/truth.json")).unwrap()).unwrap();
        let expected: Vec<String> =
            t["compiled_recompiles"]["compile_ids_in_trace"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        assert_eq!(a.analysis.compile.recompiles.count, t["compiled_recompiles"]["expected_recompiles_in_profile"].as_u64().unwrap() as usize);
        assert_eq!(a.analysis.compile.recompiles.compile_ids, expected);
        assert!(a.analysis.compile.compile_in_window_ns > 0);
        assert_eq!(finding(&a, "compile_in_window").time_at_stake_ns, a.analysis.compile.compile_in_window_ns);
        assert_eq!(finding(&a, "recompiles").evidence.to_json()["count"], 4);
        assert!(!a.analysis.compile.graph_breaks.detected);
    });
}

#[test]
fn a_clean_compile_has_no_compile_findings() {
    let a = h100("compiled_clean");
    assert!(a.analysis.compile.compiled);
    assert_eq!(a.analysis.compile.regions_per_step, 1.0);
    assert!(
        !a.analysis.compile.graph_breaks.detected
            && a.analysis.compile.recompiles.count == 0
            && !a.analysis.compile.cudagraphs
    );
    for id in [
        "graph_breaks",
        "recompiles",
        "compile_in_window",
        "compiled_loop",
        "manual_attention",
    ] {
        assert!(!ids(&a).contains(&id), "{id} in {:?}", ids(&a));
    }
}

#[test]
fn cuda_graph_replays_are_busy_not_idle() {
    let a = h100("compiled_cudagraphs");
    assert!(a.analysis.compile.cudagraphs);
    let f = finding(&a, "cudagraphs_in_use");
    let replayed = f.evidence.to_json()["replayed_kernel_ns"].as_i64().unwrap();
    assert!(replayed as f64 > 0.9 * a.analysis.summary.kernel_ns as f64);
    // Replayed kernels (and the gaps inside one replay) are busy time, never idle.
    let busy: i64 = a.analysis.time_partition.iter().take(7).map(|r| r.ns).sum();
    assert!(busy >= replayed, "busy {busy} < replayed {replayed}");
}

#[test]
fn launch_bound_eager_model() {
    let a = h100("eager_launch_bound");
    assert!(truth("truth.json")["eager_launch_bound"]["launch_bound"]
        .as_bool()
        .unwrap());
    let f = finding(&a, "launch_bound");
    assert!(
        f.evidence.to_json()["kernels_under_10us_pct"]
            .as_f64()
            .unwrap()
            > 50.0
    );
    assert_eq!(idle_rank(&a)[0], "launch_overhead");
    assert_eq!(
        f.time_at_stake_ns,
        a.analysis
            .partition_ns(rocprof_classify::analysis::Category::LaunchOverhead)
    );
}

#[test]
fn host_bound_when_the_data_loader_sleeps() {
    let a = h100("eager_host_bound");
    let f = finding(&a, "host_bound");
    assert_eq!(idle_rank(&a)[0], "host_idle");
    assert!(f.evidence.to_json()["host_idle_pct"].as_f64().unwrap() > 50.0);
    assert!(!ids(&a).contains(&"launch_bound"));
}

#[test]
fn sync_stalls_inside_steps_but_not_the_trailing_sync() {
    let a = h100("eager_sync_heavy");
    let t = &truth("truth_extra.json")["eager_sync_heavy"];
    let f = finding(&a, "sync_stalls");
    let by_api: Vec<(String, u64)> = f.evidence.to_json()["by_api"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["api"].as_str().unwrap().to_string(),
                v["calls"].as_u64().unwrap(),
            )
        })
        .collect();
    // 2 torch.cuda.synchronize() and 4 stream syncs (3 .item(), 1 .cpu()) in each of 5 steps; the
    // synchronize after the last step and the profiler's own at exit are not stalls.
    assert_eq!(
        by_api,
        vec![
            ("cudaDeviceSynchronize".to_string(), 10),
            ("cudaStreamSynchronize".to_string(), 20)
        ],
        "{t}"
    );
    assert_eq!(f.evidence.to_json()["per_step"], 6.0);
    assert_eq!(f.evidence.to_json()["device_to_host_copies"], 20);
}

#[test]
fn manual_attention_and_unfused_projections_in_eager() {
    let a = h100("eager_manual_attn");
    let f = finding(&a, "manual_attention");
    assert_eq!(f.evidence.to_json()["chains_per_step"], 4.0, "4 layers");
    let kinds: Vec<&str> = a
        .findings
        .iter()
        .filter(|f| f.id.as_str() == "unfused_projections")
        .map(|f| f.kind().unwrap())
        .collect();
    assert!(
        kinds.contains(&"qkv") && kinds.contains(&"gate_up"),
        "{kinds:?}"
    );
    for f in a
        .findings
        .iter()
        .filter(|f| f.id.as_str() == "unfused_projections")
    {
        assert_eq!(f.evidence.to_json()["runs_per_step"], 4.0, "{}", f.evidence);
    }
}

#[test]
fn sdpa_model_has_no_manual_attention_and_fused_qkv_but_separate_gate_up() {
    let a = h100("eager_sdpa_fused");
    assert!(!ids(&a).contains(&"manual_attention"));
    let kinds: Vec<&str> = a
        .findings
        .iter()
        .filter(|f| f.id.as_str() == "unfused_projections")
        .map(|f| f.kind().unwrap())
        .collect();
    assert_eq!(kinds, vec!["gate_up"]);
}

#[test]
fn manual_attention_in_compiled_code_unless_inductor_fused_it() {
    // Inductor's pattern matcher rewrote matmul-softmax-matmul into SDPA: nothing to report.
    let fused = h100("compiled_manual_attn");
    assert!(!ids(&fused).contains(&"manual_attention"));
    assert!(fused
        .analysis
        .buckets
        .iter()
        .any(|b| b.bucket == rocprof_classify::classify::Bucket::Attention && b.launches > 0));
    // With the pattern matcher off the chain stays: GEMM, Triton softmax, GEMM.
    let manual = h100("compiled_manual_attn_nopm");
    let f = finding(&manual, "manual_attention");
    assert_eq!(f.evidence.to_json()["chains_per_step"], 4.0);
    assert!(f.evidence.to_json()["example_kernels"][1]
        .as_str()
        .unwrap()
        .contains("softmax"));
}

#[test]
fn fp32_gemms_without_tensor_cores() {
    let a = h100("train_eager_fp32");
    let f = finding(&a, "fp32_gemm");
    assert!(f.evidence.to_json()["gemm_pct"].as_f64().unwrap() > 90.0);
    // The same training step with TF32 allowed runs tensor-core kernels: no finding.
    assert!(!ids(&h100("eager_fp32_tf32")).contains(&"fp32_gemm"));
}

#[test]
fn steps_can_be_selected() {
    let path = fixture("kineto/h100/eager_manual_attn.json.gz");
    let trace = read_all(&[path], &ReadOptions::default()).unwrap();
    let all = run_trace(trace.clone(), &AnalysisOptions::default());
    assert!(all.analysis.warmup_in_window && ids(&all).contains(&"warmup_in_window"));
    let skip = run_trace(
        trace.clone(),
        &AnalysisOptions {
            skip_warmup: true,
            ..Default::default()
        },
    );
    assert_eq!(skip.analysis.summary.steps, all.analysis.summary.steps - 1);
    assert!(!ids(&skip).contains(&"warmup_in_window"));
    assert!(skip.analysis.summary.kernel_ns < all.analysis.summary.kernel_ns);
    let two = run_trace(
        trace.clone(),
        &AnalysisOptions {
            steps: Some("1..3".parse().unwrap()),
            ..Default::default()
        },
    );
    assert_eq!(two.analysis.summary.steps, 2);
    assert_eq!(
        two.analysis
            .step_breakdown
            .iter()
            .map(|s| s.step)
            .collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert!((two.analysis.summary.kernel_ns as f64) < 0.5 * all.analysis.summary.kernel_ns as f64);
}

#[test]
fn the_dispatch_threshold_moves_idle_between_causes() {
    let path = fixture("kineto/h100/eager_host_bound.json.gz");
    let trace = read_all(&[path], &ReadOptions::default()).unwrap();
    let at = |us: i64| {
        run_trace(
            trace.clone(),
            &AnalysisOptions {
                dispatch_threshold_ns: us * 1000,
                ..Default::default()
            },
        )
    };
    let (small, large) = (at(10), at(20_000));
    // A 20 ms threshold bridges the data loader's 4 ms sleeps: they become "dispatch".
    assert!(
        large
            .analysis
            .partition_ns(rocprof_classify::analysis::Category::LaunchOverhead)
            > small
                .analysis
                .partition_ns(rocprof_classify::analysis::Category::LaunchOverhead)
    );
    assert!(
        large
            .analysis
            .partition_ns(rocprof_classify::analysis::Category::HostIdle)
            < small
                .analysis
                .partition_ns(rocprof_classify::analysis::Category::HostIdle)
    );
    assert_eq!(
        small.analysis.summary.window_ns,
        large.analysis.summary.window_ns
    );
}

#[test]
fn step_partitions_add_up() {
    for name in [
        "eager_manual_attn",
        "compiled_cudagraphs",
        "eager_host_bound",
    ] {
        let a = h100(name);
        for s in &a.analysis.step_breakdown {
            let sum: i64 = s.time_partition.iter().map(|r| r.ns).sum();
            assert_eq!(sum, s.dur_ns, "{name} step {}", s.step);
        }
    }
}

#[test]
fn a_compiled_transformer_called_four_times_per_step_is_a_loop_not_breaks() {
    with_shared!(shared => {
        let a = run_path(&shared.join("corpus/tracelens/profile_trace_rank_0.json.gz"));
        assert_eq!(a.analysis.compile.regions_per_step, 4.0);
        assert!(!a.analysis.compile.graph_breaks.detected);
        assert!(ids(&a).contains(&"compiled_loop") && !ids(&a).contains(&"graph_breaks"));
    });
}

/// Every finding fired on an AMD corpus trace, and why it is right.
const AMD_LEDGER: &[(&str, &[(&str, &str)])] = &[
    ("corpus/hpctraining/merged_all_events.json.gz", &[
        ("conv_heavy", "MIOpen convolutions are 37% of GPU time"),
        ("exposed_communication", "4-rank DDP ResNet: RCCL all-reduces overlap compute for only ~26% of their time"),
        ("launch_bound", "77% of 12k kernels run under 10 µs and dispatch gaps outweigh GPU busy time"),
        ("sync_stalls", "hipMemcpyWithStream D2H copies and hipEventSynchronize inside the steps block the host"),
        ("conv_layout_transposes", "MIOpen batched_transpose kernels around NCHW convolutions"),
        ("gemm_backend", "Tensile kernels: the plain names could be rocBLAS or hipBLASLt"),
        ("straggler_rank", "rank 3's all-reduces take 3.6 ms against ~50 ms on ranks 0-2 in all 3 steps (the others wait for it), with no more GPU work but twice their launch overhead"),
    ]),
    ("corpus/hpctraining/replay_trace.json", &[
        ("conv_heavy", "a convolution replay: MIOpen kernels are all its GPU time"),
        ("high_step_variance", "step times range from ~15 to ~29 ms (CV 25%)"),
    ]),
    ("corpus/hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz", &[
        ("elementwise_heavy", "a toy model: optimizer and pointwise kernels outweigh its tiny GEMMs"),
        ("fp32_gemm", "its Tensile GEMMs have single-precision data type (Cijk_…_S…)"),
        ("gemm_backend", "Tensile GEMMs"),
        ("launch_bound", "14 tiny kernels in a 2-step trace dominated by dispatch"),
        ("low_gemm_efficiency", "its [5,128]x[128,128] GEMMs reach ~0% of the peak, found from its gfx90a arch (the trace names the GPU 'AMD Radeon Graphics')"),
        ("memcpy_heavy", "host-device copies are a quarter of its small GPU time"),
        ("sync_stalls", "a blocking copy per step"),
        ("high_step_variance", "its second step is a 49 µs tail without GPU work after a 9.3 ms first step: CV 99% (step 1, all the work, is no warm-up)"),
        ("unrepresentative_profile", "the GPU idles 6.6 ms (71% of a 9.4 ms window) inside one AccumulateGrad of the first step"),
    ]),
    ("corpus/tracelens/Falconsai_nsfw_image_detection__1016002.json.gz", &[
        ("conv_layout_transposes", "MIOpen transposes around the ViT patch-embedding convolution"),
        ("gemm_backend", "hipBLASLt (Tensile with UserArgs)"),
        ("launch_bound", "batch-1 ViT inference: 75% of kernels under 10 µs"),
        ("sync_stalls", "a blocking copy of the logits inside the step"),
        ("unfused_projections", "HF ViT computes query, key and value with three nn.Linear on the same hidden states"),
        ("norm_activation_heavy", "eager ViT: its LayerNorm (8%) and GELUActivation (4%) modules run their own kernels"),
        ("low_gemm_efficiency", "ViT-base batch 1: its addmm on [788, 768] x [768, 768] reaches ~11% of the MI300X bf16 peak: 42 tiles of 128x128 cannot fill 304 CUs"),
    ]),
    ("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", &[
        ("elementwise_heavy", "eager HF generate: RMSNorm, rotary and SiLU run as separate ATen kernels"),
        ("gemm_backend", "hipBLASLt"),
        ("sync_stalls", "generate() copies tokens to the host inside the step"),
        ("unfused_projections", "HF Qwen2 has separate q/k/v and gate/up projections"),
        ("norm_activation_heavy", "eager Qwen2: Qwen2RMSNorm modules hold 13% of kernel time (pow, mean, rsqrt, mul kernels)"),
        ("memory_headroom", "a 0.5B model on a 192 GB MI300X: 2.4 GiB reserved while the GPU is busy 88% of the window"),
    ]),
    ("corpus/tracelens/gaunernst_bert-small-uncased__1016001.json.gz", &[
        ("gemm_backend", "hipBLASLt"),
        ("launch_bound", "small BERT, batch 1: 90% of kernels under 10 µs"),
        ("sync_stalls", "a device synchronize and a blocking copy inside the step"),
        ("unfused_projections", "HF BERT self-attention has separate query/key/value linears"),
        ("norm_activation_heavy", "eager BERT: LayerNorm (10%) and GELUActivation (6%) modules"),
        ("low_gemm_efficiency", "BERT-small batch 1: addmm on [141, 512] x [512, 512] reaches ~3.5% of peak (8 output tiles)"),
    ]),
    ("corpus/tracelens/gpu_only_trace.json.gz", &[
        ("conv_heavy", "MIOpen convolutions are 30% of GPU time"),
        ("conv_layout_transposes", "MIOpen batched_transpose kernels are 15% of GPU time"),
        ("elementwise_heavy", "batch-norm and pointwise kernels outweigh the convolutions"),
        ("gemm_backend", "hipBLASLt"),
    ]),
    ("corpus/tracelens/graph_execution.json.gz", &[
        ("cudagraphs_in_use", "vLLM full-graph decode: one hipGraphLaunch replays 421 kernels"),
        ("gemm_backend", "mostly Triton GEMMs, the rest hipBLASLt"),
        ("eager_modules", "vLLM compiles the model's forward; its LogitsProcessor (the lm_head GEMM, 2.6%) runs eager outside it"),
        ("sync_stalls", "the decode iteration (vLLM's marker) holds a hipEventSynchronize; the GPU idles 0.5 ms after it"),
    ]),
    ("corpus/tracelens/normalization_layer_test.json.gz", &[
        ("elementwise_heavy", "a normalization-layer test: all GPU work is norm kernels"),
        ("launch_bound", "tiny kernels separated by long dispatch gaps"),
        ("norm_activation_heavy", "LayerNorm and RMSNorm modules under test (the rest of its norm kernels run outside modules)"),
    ]),
    ("corpus/tracelens/profile_trace_rank_0.json.gz", &[
        ("compiled_loop", "xDiT Flux: the compiled transformer (frame 0) runs 4 times per step"),
        ("conv_layout_transposes", "MIOpen transposes around the VAE convolutions"),
        ("cudagraphs_in_use", "4 hipGraphLaunch calls replay the denoising steps"),
        ("eager_modules", "the transformer is compiled; the T5 text encoder (12%) and the VAE Decoder (2.6%) run eager"),
        ("gemm_backend", "hipBLASLt"),
        ("manual_attention", "the CLIP text encoder computes attention with bmm + softmax"),
        ("sync_stalls", "hipMemcpyWithStream waits ~114 ms inside the step"),
        ("unfused_projections", "the CLIP text encoder's q/k/v projections are separate linears on [1, 77, 768]"),
        ("low_gemm_efficiency", "xDiT Flux: mm [512, 4096] x [4096, 4096] reaches ~29% of the MI300X bf16 peak (128 tiles for 304 CUs)"),
    ]),
    ("corpus/tracelens/resnet_act_checkpoint.json.gz", &[
        ("conv_heavy", "MIOpen and CK convolutions are 11.5% of GPU time"),
        ("conv_layout_transposes", "MIOpen transposes around convolutions"),
        ("exposed_communication", "8-rank DDP: most all-reduce time is not overlapped"),
        ("gemm_backend", "Tensile GEMMs"),
    ]),
    ("corpus/tracelens/sglang_Qwen3-8B_decode.json.gz", &[
        ("cudagraphs_in_use", "SGLang decode replays one HIP graph of 544 kernels"),
        ("gemm_backend", "hipBLASLt"),
        ("paged_attention_heavy", "decode: vLLM's paged_attention_ll4mi kernels are 22% of kernel time on a bf16 KV cache (Fp8KVCacheDataType 0)"),
        ("sync_stalls", "the host waits ~463 ms in one blocking hipMemcpyWithStream while the GPU works ~10 ms"),
        ("unrepresentative_profile", "that wait is 97.7% of the window: the profile shows it, not the decode"),
    ]),
    ("corpus/tracelens/trace.json.gz", &[
        ("gemm_backend", "hipBLASLt"),
        ("unfused_projections", "the repro block runs q/k/v and gate/up as separate mm calls"),
    ]),
    ("corpus/tracelens/train_resnet18.json.gz", &[
        ("conv_heavy", "MIOpen convolutions are 45% of GPU time"),
        ("allocator_churn", "hipFree calls hold the host 3.35 s of the 3.39 s window: each synchronizes the device (not launch overhead)"),
        ("conv_layout_transposes", "MIOpen batched_transpose kernels are 16% of GPU time"),
        ("elementwise_heavy", "batch-norm backward dominates this ResNet step"),
        ("gemm_backend", "hipBLASLt"),
        ("sync_stalls", "blocking copies inside the step"),
    ]),
];

#[test]
fn every_finding_on_amd_corpus_traces_is_accounted_for() {
    with_shared!(shared => {
        let mut problems = Vec::new();
        for (file, expected) in AMD_LEDGER {
            let a = run_path(&shared.join(file));
            assert_eq!(a.analysis.vendor(), rocprof_classify::model::Vendor::Amd, "{file}");
            let mut fired: Vec<&str> = ids(&a);
            fired.sort();
            fired.dedup();
            let mut listed: Vec<&str> = expected.iter().map(|e| e.0).collect();
            listed.sort();
            if fired != listed {
                problems.push(format!("{file}: fired {fired:?}, listed {listed:?}"));
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    });
}

#[test]
fn gpu_time_is_attributed_to_the_launching_ops() {
    let a = h100("eager_manual_attn");
    let op = |n: &str| {
        a.analysis
            .ops
            .iter()
            .find(|o| o.name == n)
            .unwrap_or_else(|| panic!("no {n}"))
    };
    // The softmax kernel belongs to aten::_softmax, the attention GEMMs to aten::bmm under aten::matmul.
    let softmax = op("aten::_softmax");
    assert_eq!(
        softmax.bucket,
        rocprof_classify::classify::Bucket::Elementwise
    );
    assert_eq!(softmax.launches, 20);
    let kernel = a
        .analysis
        .top_kernels
        .iter()
        .find(|k| k.family == "softmax")
        .unwrap();
    assert_eq!(softmax.self_ns, kernel.total_ns);
    assert_eq!(
        op("aten::bmm").bucket,
        rocprof_classify::classify::Bucket::Gemm
    );
    assert!(op("aten::matmul").total_ns >= op("aten::bmm").self_ns);
    assert_eq!(op("aten::matmul").self_ns, 0);
    assert_eq!(
        a.analysis.ops.iter().map(|o| o.self_ns).sum::<i64>(),
        a.analysis.summary.kernel_ns
    );
    assert!(a
        .analysis
        .ops
        .windows(2)
        .all(|w| w[0].self_ns >= w[1].self_ns));
    assert!(op("aten::mm")
        .shapes
        .as_deref()
        .unwrap()
        .starts_with("[[4096,1024]"));
    // No Python stacks in this trace: no module or source rows.
    assert!(a.analysis.modules.is_empty() && a.analysis.sources.is_empty());
}

#[test]
fn modules_and_source_lines_from_python_stacks() {
    with_shared!(shared => {
        let a = run_path(&shared.join("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
        assert!(a.analysis.modules.iter().any(|m| m.name.as_deref().is_some_and(|n| n.starts_with("nn.Module: Qwen2Attention"))));
        let top = a.analysis.sources.iter().find(|s| s.location.as_deref() != Some("(no source)")).unwrap();
        assert!(top.location.as_deref().unwrap().contains("modeling_qwen2.py("), "{top:?}");
        assert!(a.analysis.sources.iter().all(|s| !s.location.as_deref().unwrap().starts_with("torch/")));
        for list in [&a.analysis.modules, &a.analysis.sources] {
            assert_eq!(list.iter().map(|r| r.self_ns).sum::<i64>(), a.analysis.summary.kernel_ns);
            assert!(list.iter().all(|r| r.total_ns >= r.self_ns));
        }
    });
}
