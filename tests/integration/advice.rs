//! Recommendations an AMD engineer would act on (issue 18), on real MI300X traces of the corpus
//! and the committed H100 traces: idle time blamed on its real cause, the savings that follow,
//! and the ladder's order.

use crate::common::{fixture, run_path};
use crate::with_shared;
use rocprof_classify::analysis::{Category, Transform};
use rocprof_classify::detect::FindingId;
use rocprof_classify::Run;

fn first_rec(r: &Run) -> &str {
    r.plan.recommendations[0].id.as_str()
}

fn rec<'a>(r: &'a Run, id: &str) -> Option<&'a rocprof_classify::recommend::Recommendation> {
    r.plan.recommendations.iter().find(|x| x.id == id)
}

fn finding(r: &Run, id: FindingId) -> Option<&rocprof_classify::detect::Finding> {
    r.findings.iter().find(|f| f.id == id)
}

/// `train_resnet18`: 1,300 hipFree calls hold the host for 3.35 s. A free synchronizes: the GPU
/// idle is host idle, not launch overhead, and the allocator is the first thing to fix.
#[test]
fn device_frees_are_blocking_and_allocator_churn_comes_first() {
    with_shared!(shared => {
        let r = run_path(&shared.join("corpus/tracelens/train_resnet18.json.gz"));
        let a = &r.analysis;
        let (launch, idle) = (a.partition_ns(Category::LaunchOverhead), a.partition_ns(Category::HostIdle));
        assert!(idle > 10 * launch, "host idle {idle} vs launch overhead {launch}");
        let churn = finding(&r, FindingId::AllocatorChurn).expect("allocator_churn fires");
        assert!(churn.evidence.to_json()["frees"].as_u64().unwrap() > 1000, "{}", churn.evidence);
        assert_eq!(first_rec(&r), "env.caching-allocator");
        let def = crate::common::catalog().get("env.caching-allocator").unwrap();
        assert!(def.seed.starts_with("beyond the seeds"), "{}", def.seed);
        assert!(finding(&r, FindingId::LaunchBound).is_none(), "the frees are not dispatch");
    });
}

/// A blocking call's cost is the GPU idle after it returns, not the host's wait inside it: the
/// SGLang decode trace's one copy blocks 463 ms while nothing follows it; Flux's D2H copy waits
/// while graphs replay.
#[test]
fn a_sync_costs_the_idle_after_its_return() {
    with_shared!(shared => {
        for (rel, max_ms) in [
            ("corpus/tracelens/sglang_Qwen3-8B_decode.json.gz", 1.0),
            ("corpus/tracelens/profile_trace_rank_0.json.gz", 20.0),
        ] {
            let r = run_path(&shared.join(rel));
            let f = finding(&r, FindingId::SyncStalls).expect("sync_stalls fires");
            let idle = f.evidence.to_json()["idle_after_ns"].as_i64().unwrap();
            let blocked = f.evidence.to_json()["blocked_ns"].as_i64().unwrap();
            assert_eq!(f.time_at_stake_ns, idle, "{rel}");
            assert!(idle < blocked, "{rel}: idle after {idle} vs blocked {blocked}");
            assert!((idle as f64) < max_ms * 1e6, "{rel}: {idle} ns");
            let save = rec(&r, "surgery.remove-syncs").map_or(0, |x| x.est_savings_ns);
            assert!(save <= idle, "{rel}: saves {save} of an idle {idle}");
        }
    });
}

/// The ladder's order as `ORDER_RULE` states it ([`order_broken`]); savings never above the
/// window. Every Kineto trace of the fixtures and the corpus.
#[test]
fn recommendations_follow_the_ladder_on_every_trace() {
    let mut paths: Vec<std::path::PathBuf> = crate::snapshots::fixture_inputs()
        .into_iter()
        .map(|(dir, name)| dir.join(name))
        .collect();
    let fixtures = paths.len();
    match crate::common::shared() {
        Some(shared) => paths.extend(crate::corpus::kineto_traces(&shared)),
        None => eprintln!("skipped the corpus traces: ../shared is absent"),
    }
    let mut problems = Vec::new();
    for p in &paths {
        let r = run_path(p);
        let recs = &r.plan.recommendations;
        let window = r.analysis.summary.window_ns;
        for x in recs {
            if x.est_savings_ns > window {
                problems.push(format!(
                    "{}: {} saves {} > window {window}",
                    p.display(),
                    x.id,
                    x.est_savings_ns
                ));
            }
        }
        // A rank_first recommendation (reprofile) leads; the rest follow the ladder.
        let first = |x: &rocprof_classify::recommend::Recommendation| {
            crate::common::catalog()
                .get(&x.id)
                .is_some_and(|d| d.rank_first)
        };
        if let Some(k) = recs.iter().position(first) {
            if k != 0 {
                problems.push(format!("{}: {} is not first", p.display(), recs[k].id));
            }
        }
        let recs: Vec<_> = recs.iter().filter(|x| !first(x)).cloned().collect();
        problems.extend(
            order_broken(&recs, window)
                .into_iter()
                .map(|e| format!("{}: {e}", p.display())),
        );
        if rocprof_classify::detect::low_precision_gemm_pct(&r.findings) >= 50.0
            && recs.iter().any(|x| x.id == "arch.fp8-gemm")
        {
            problems.push(format!(
                "{}: FP8 advice for GEMMs already on 8-bit or narrower operands",
                p.display()
            ));
        }
        let pos = |id: &str| recs.iter().position(|x| x.id == id);
        if let (Some(g), Some(c)) = (pos("graphs.capture"), pos("compile.enable")) {
            if g < c {
                problems.push(format!(
                    "{}: graphs.capture ahead of compile.enable",
                    p.display()
                ));
            }
        }
    }
    assert!(fixtures >= 30, "{fixtures} fixture traces");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Where `recs` break the order rule (`rocprof_classify::recommend::ORDER_RULE`): by level,
/// then saving, among the rungs that save at least 0.5% alone (a catalog follower right after
/// its leader, a leader kept ahead of its follower); a rung placed by what it saves after
/// others (`after`, or below 0.5% alone and more than that where it stands) only behind the
/// rungs it names; the rest last, by level.
fn order_broken(recs: &[rocprof_classify::recommend::Recommendation], window: i64) -> Vec<String> {
    // As the library rounds a share (to 1e-4 of a percent).
    let pct = |ns: i64, of: i64| match of > 0 {
        true => (ns as f64 * 100.0 / of as f64 * 1e4).round() / 1e4,
        false => 0.0,
    };
    let catalog = crate::common::catalog();
    let small =
        |x: &rocprof_classify::recommend::Recommendation| pct(x.est_savings_ns, window) < 0.5;
    let follows = |a: &str, b: &str| {
        catalog
            .get(b)
            .is_some_and(|d| d.after.iter().any(|l| l == a))
    };
    let placed = |x: &rocprof_classify::recommend::Recommendation| {
        small(x) && (!x.after.is_empty() || pct(x.marginal_savings_ns, window) >= 0.5)
    };
    let leader = |x: &rocprof_classify::recommend::Recommendation| {
        recs.iter().any(|o| !small(o) && follows(&x.id, &o.id))
    };
    let mut out = Vec::new();
    // The main list: the rungs that save at least 0.5% alone (and leaders kept with them).
    let main: Vec<_> = recs.iter().filter(|x| !small(x) || leader(x)).collect();
    for w in main.windows(2) {
        let followed = follows(&w[0].id, &w[1].id);
        if w[0].level > w[1].level && !followed {
            out.push(format!(
                "{} (L{}) ranked before {} (L{})",
                w[0].id, w[0].level, w[1].id, w[1].level
            ));
        }
        if w[0].level == w[1].level && w[0].est_savings_ns < w[1].est_savings_ns && !followed {
            out.push(format!(
                "{} ranked before {}, which saves more at the same level",
                w[0].id, w[1].id
            ));
        }
    }
    let pos = |id: &str| recs.iter().position(|x| x.id == id);
    let mut seen_tail = false;
    for (k, x) in recs.iter().enumerate() {
        let in_tail = small(x) && !placed(x) && !leader(x);
        // (A small rung that pays only at the end, after every other, may close the list.)
        if seen_tail && (!small(x) || leader(x)) {
            out.push(format!("{} ranked after the rungs that save nothing", x.id));
        }
        seen_tail |= in_tail;
        for a in &x.after {
            if pos(a).is_none_or(|j| j > k) {
                out.push(format!(
                    "{} says it comes after {a}, which is not above it",
                    x.id
                ));
            }
        }
        if !x.after.is_empty()
            && x.after.iter().any(|a| {
                recs.iter()
                    .find(|o| &o.id == a)
                    .is_some_and(|o| o.level <= x.level)
            })
        {
            out.push(format!(
                "{} names a rung of its own level or below in `after`",
                x.id
            ));
        }
    }
    let tail: Vec<_> = recs
        .iter()
        .filter(|x| small(x) && !placed(x) && !leader(x))
        .collect();
    for w in tail.windows(2) {
        if w[0].level > w[1].level && !follows(&w[0].id, &w[1].id) {
            out.push(format!(
                "{} (L{}) before {} (L{}) among the rungs that save nothing",
                w[0].id, w[0].level, w[1].id, w[1].level
            ));
        }
    }
    out
}

/// No regression on the H100 traces: compile first on eager models, graph breaks first on the
/// compiled one with breaks. The fp32 training step is launch-bound: TF32 alone saves nothing
/// there (its TF32 twin, `eager_fp32_tf32`, runs no faster: 7.62 vs 7.49 ms a step), so the
/// replay ranks matmul precision last, and prices it on top of compile and graphs, where the
/// GPU has become the bound.
#[test]
fn the_h100_traces_keep_their_first_recommendation() {
    for (name, first) in [
        ("eager_manual_attn", "compile.enable"),
        ("eager_sdpa_fused", "compile.enable"),
        ("eager_launch_bound", "compile.enable"),
        ("train_eager_fp32", "compile.enable"),
        ("compiled_graph_breaks", "compile.fix-graph-breaks"),
    ] {
        let r = run_path(&fixture(&format!("kineto/h100/{name}.json.gz")));
        assert_eq!(first_rec(&r), first, "{name}");
    }
    let r = run_path(&fixture("kineto/h100/train_eager_fp32.json.gz"));
    let tf32 = rec(&r, "env.matmul-precision").unwrap();
    let twin = run_path(&fixture("kineto/h100/eager_fp32_tf32.json.gz"));
    let (before, after) = (
        r.analysis.summary.window_ns,
        twin.analysis.summary.window_ns,
    );
    assert!(
        after as f64 > 0.9 * before as f64,
        "TF32 alone: {before} -> {after}"
    );
    assert!(tf32.est_savings_pct < 2.0, "{}", tf32.est_savings_pct);
    assert!(
        tf32.marginal_savings_ns > 10 * tf32.est_savings_ns.max(1),
        "once the host is fixed"
    );
}

/// A profile that is one wait cannot support advice: SGLang's decode trace idles 97.7% of its
/// window inside one copy and gets `profile.reprofile` first; Flux's longest wait (under half its
/// window) does not. Other savings leave the wait out.
#[test]
fn a_profile_that_is_one_wait_says_reprofile_first() {
    with_shared!(shared => {
        let sglang = run_path(&shared.join("corpus/tracelens/sglang_Qwen3-8B_decode.json.gz"));
        assert_eq!(first_rec(&sglang), "profile.reprofile");
        let f = finding(&sglang, FindingId::UnrepresentativeProfile).unwrap();
        assert_eq!(f.kind(), Some("one_call"));
        let wait = f.time_at_stake_ns;
        let host_idle = sglang.analysis.partition_ns(Category::HostIdle);
        for r in &sglang.plan.recommendations {
            assert!(
                r.est_savings_ns <= (host_idle - wait).max(0) + sglang.analysis.partition_ns(Category::LaunchOverhead) + sglang.analysis.summary.gpu_busy_ns,
                "{} saves {} from a wait of {wait}", r.id, r.est_savings_ns
            );
        }
        let flux = run_path(&shared.join("corpus/tracelens/profile_trace_rank_0.json.gz"));
        assert!(finding(&flux, FindingId::UnrepresentativeProfile).is_none());
        assert!(rec(&flux, "profile.reprofile").is_none());
    });
}

/// Channels-last removes the layout transposes and streams the NCHW batch norms
/// (`train_resnet18` on MI300X: MIOpen batched_transpose, 58.8 ms; ATen's NCHW batch-norm
/// kernels, 155 ms): its saving is at least the transposes' time and at most that plus the
/// batch norms' and poolings'.
#[test]
fn channels_last_saves_the_transposes_and_the_nchw_batch_norms() {
    with_shared!(shared => {
        let r = run_path(&shared.join("corpus/tracelens/train_resnet18.json.gz"));
        let f = finding(&r, FindingId::ConvLayoutTransposes).unwrap();
        let x = rec(&r, "surgery.channels-last").expect("offered");
        assert!(f.time_at_stake_ns > 50_000_000, "{}", f.time_at_stake_ns);
        let layout: i64 = r
            .analysis
            .top_kernels
            .iter()
            .filter(|k| k.name.contains("batch_norm") || k.name.contains("pool"))
            .map(|k| k.total_ns)
            .sum();
        assert!(
            x.est_savings_ns as f64 >= 0.98 * f.time_at_stake_ns as f64,
            "{} vs {}",
            x.est_savings_ns,
            f.time_at_stake_ns
        );
        assert!(
            x.est_savings_ns <= f.time_at_stake_ns + layout,
            "{} vs {} + {layout}",
            x.est_savings_ns,
            f.time_at_stake_ns
        );
        assert!(x.est_savings_ns > f.time_at_stake_ns + layout / 4, "the batch norms count");
    });
}

/// Advice fits the precision and the architecture in the trace: vLLM's MoE GEMMs already run
/// mxfp4 weights (no FP8 advice); Flux's bf16 GEMMs on gfx942 keep FP8, below the L1-L2
/// actions, and get no weight preshuffling (gfx950+, seed 004).
#[test]
fn advice_fits_the_precision_and_the_architecture() {
    with_shared!(shared => {
        let vllm = run_path(&shared.join("corpus/tracelens/graph_execution.json.gz"));
        assert_eq!(vllm.analysis.inputs[0].devices[0].arch.as_deref(), Some("gfx942"));
        assert!(crate::common::catalog().get("arch.fp8-gemm").is_some());
        assert!(rec(&vllm, "arch.fp8-gemm").is_none(), "{:?}", vllm.plan.recommendations.iter().map(|r| &r.id).collect::<Vec<_>>());
        assert!(rocprof_classify::detect::low_precision_gemm_pct(&vllm.findings) > 50.0);
        let flux = run_path(&shared.join("corpus/tracelens/profile_trace_rank_0.json.gz"));
        let fp8 = flux.plan.recommendations.iter().position(|r| r.id == "arch.fp8-gemm").expect("FP8 offered on gfx942 bf16 GEMMs");
        assert!(flux.plan.recommendations[..fp8].iter().any(|r| r.level <= 2));
        assert!(rec(&flux, "arch.preshuffle-weights").is_none());
    });
}

/// A device older ROCm names "AMD Radeon Graphics" (or not at all) reads as its architecture
/// and size.
#[test]
fn a_generic_amd_device_reads_as_its_architecture() {
    let d = rocprof_classify::model::Device {
        id: 0,
        name: "AMD Radeon Graphics".into(),
        arch: Some("gfx90a".into()),
        compute_units: Some(104),
        memory_bytes: None,
    };
    assert_eq!(d.label(), "gfx90a, 104 CUs");
    with_shared!(shared => {
        // An MI250 trace with device properties but no name.
        let mut found = false;
        for p in crate::corpus::kineto_traces(&shared) {
            let r = run_path(&p);
            for d in r.analysis.inputs.iter().flat_map(|i| &i.devices) {
                if d.arch.as_deref() == Some("gfx90a") {
                    found = true;
                    assert!(d.label().starts_with("gfx90a") || d.name.contains("MI2"), "{d:?}");
                }
            }
        }
        assert!(found, "an MI200 trace in the corpus");
    });
}

/// Compile state from the kernels: vLLM's trace replays HIP graphs of Inductor's kernels
/// without compiled-region markers; level 2's evidence cites them.
#[test]
fn inductor_kernels_show_torch_compile_in_use() {
    with_shared!(shared => {
        let r = run_path(&shared.join("corpus/tracelens/graph_execution.json.gz"));
        let c = &r.analysis.compile;
        assert!(!c.compiled && c.inductor_kernel_pct > 1.0, "{c:?}");
        let l2 = r.plan.ladder.iter().find(|l| l.level == 2).unwrap();
        // vLLM compiles the model's forward; its logits processor runs eager beside it.
        assert_eq!(l2.status.as_str(), "partial");
        assert!(l2.evidence.contains("Inductor") && l2.evidence.contains("triton_poi"), "{}", l2.evidence);
        assert!(l2.evidence.contains("LogitsProcessor"), "{}", l2.evidence);
        // An eager trace has none.
        let eager = run_path(&fixture("kineto/h100/eager_manual_attn.json.gz"));
        assert_eq!(eager.analysis.compile.inductor_kernel_pct, 0.0);
    });
}

/// Convolution-heavy AMD traces get MIOpen's tuning (seeds 001/003): `train_resnet18`'s MIOpen
/// convolutions are 5% of its window and 45% of its GPU time.
#[test]
fn convolution_heavy_amd_traces_get_miopen_tuning() {
    with_shared!(shared => {
        let r = run_path(&shared.join("corpus/tracelens/train_resnet18.json.gz"));
        let f = finding(&r, FindingId::ConvHeavy).expect("conv_heavy fires");
        assert!(f.evidence.to_json()["pct"].as_f64().unwrap() >= 10.0);
        let x = rec(&r, "env.miopen-tuning").expect("MIOpen tuning offered");
        assert!(x.actions.iter().any(|a| a.text.contains("MIOPEN_FIND_ENFORCE=3")));
        assert!(x.actions.iter().any(|a| a.text.contains("PYTORCH_MIOPEN_SUGGEST_NHWC=1")));
        // Not on NVIDIA (cuDNN) convolution traces.
        let nv = run_path(&fixture("kineto/zoo/resnet18_train_eager.json.gz"));
        assert!(finding(&nv, FindingId::ConvHeavy).is_some());
        assert!(rec(&nv, "env.miopen-tuning").is_none());
    });
}

/// An fp32 GEMM on MFMA already uses the matrix cores: the MI250 toy's Tensile `_SB_…_MI16x16x1_`
/// kernels get bf16 advice, not "matrix precision" (which stays for SIMT sgemm on the H100).
#[test]
fn fp32_gemms_on_mfma_get_bf16_advice() {
    with_shared!(shared => {
        let r = run_path(&shared.join("corpus/hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
        let f = finding(&r, FindingId::Fp32Gemm).unwrap();
        assert_eq!(f.kind(), Some("mfma"), "{}", f.summary);
        assert!(rec(&r, "surgery.bf16-on-mfma").is_some());
        assert!(rec(&r, "env.matmul-precision").is_none());
        let nv = run_path(&fixture("kineto/h100/train_eager_fp32.json.gz"));
        assert_eq!(finding(&nv, FindingId::Fp32Gemm).unwrap().kind(), Some("simt"));
        assert!(rec(&nv, "surgery.bf16-on-mfma").is_none());
    });
}

/// CUDA/HIP graph capture comes after compile, and on ROCm with the seeds' measured caveats in
/// the terminal and HTML too, and in Markdown when it is among the top three it lists (an AMD
/// eager launch-bound trace).
#[test]
fn graph_capture_on_rocm_carries_its_caveat_in_every_report() {
    with_shared!(shared => {
        let trace = shared.join("corpus/tracelens/Falconsai_nsfw_image_detection__1016002.json.gz");
        let r = run_path(&trace);
        let g = rec(&r, "graphs.capture").expect("offered");
        assert!(g.caveats.iter().any(|c| c.contains("65x slower") && c.contains("0.89x")), "{:?}", g.caveats);
        assert!(g.caveats.iter().any(|c| c.contains("Dynamo RNG patch")), "{:?}", g.caveats);
        let pos = |id: &str| r.plan.recommendations.iter().position(|x| x.id == id);
        assert!(pos("compile.enable") < pos("graphs.capture"));
        let dir = tempfile::tempdir().unwrap();
        let (md, html) = (dir.path().join("r.md"), dir.path().join("r.html"));
        let out = crate::common::bin().arg(&trace).args(["--color", "never", "--markdown"]).arg(&md).arg("--html").arg(&html).output().unwrap();
        let table = String::from_utf8(out.stdout).unwrap();
        assert!(table.contains("caveat: ROCm: measure it"), "{table}");
        assert!(std::fs::read_to_string(&html).unwrap().contains("<b>caveat:</b> ROCm: measure it"));
        // In the Markdown too, whether among the top three or folded below them.
        let md = std::fs::read_to_string(&md).unwrap();
        assert!(md.contains("caveat: ROCm: measure it"), "{md}");
        // Not on NVIDIA.
        let nv = run_path(&fixture("kineto/h100/eager_launch_bound.json.gz"));
        assert!(rec(&nv, "graphs.capture").unwrap().caveats.is_empty());
    });
}

/// aiter's flash attention is not for paged-attention decode: SGLang's decode trace (paged
/// attention kernels) gets none; the ViT image classifier's flash attention keeps it.
#[test]
fn no_flash_attention_advice_for_paged_attention() {
    with_shared!(shared => {
        let sglang = run_path(&shared.join("corpus/tracelens/sglang_Qwen3-8B_decode.json.gz"));
        assert!(sglang.analysis.bucket(rocprof_classify::classify::Bucket::Attention).pct >= 10.0);
        assert!(rec(&sglang, "arch.aiter-attention").is_none());
        let vit = run_path(&shared.join("corpus/tracelens/Falconsai_nsfw_image_detection__1016002.json.gz"));
        assert!(rec(&vit, "arch.aiter-attention").is_some());
    });
}

/// xDiT Flux: the transformer is compiled, the T5 text encoder and the VAE decoder run eager.
/// Level 2 is partial, and its recommendation naming both comes first among the code changes
/// (levels 2+); CLIP (0.6% of kernel time) is not named.
#[test]
fn eager_modules_beside_compiled_ones_leave_level_2_partial() {
    with_shared!(shared => {
        let r = run_path(&shared.join("corpus/tracelens/profile_trace_rank_0.json.gz"));
        let eager: Vec<String> = r
            .analysis
            .compile
            .eager_modules
            .iter()
            .map(|m| rocprof_classify::detect::module_class(&m.name).to_string())
            .collect();
        assert_eq!(eager, ["T5EncoderModel", "Decoder"], "{:?}", r.analysis.compile.eager_modules);
        // Each share is the module's GPU time over the kernel time, as modules[] has it.
        let t5_total = r
            .analysis
            .modules
            .iter()
            .find(|m| m.name.as_deref() == Some("nn.Module: T5EncoderModel_0"))
            .unwrap()
            .total_ns;
        assert_eq!(r.analysis.compile.eager_modules[0].kernel_ns, t5_total);
        let l2 = r.plan.ladder.iter().find(|l| l.level == 2).unwrap();
        assert_eq!(l2.status.as_str(), "partial", "{}", l2.evidence);
        assert!(l2.evidence.contains("T5EncoderModel") && l2.evidence.contains("Decoder"), "{}", l2.evidence);
        let code_changes: Vec<&str> = r
            .plan
            .recommendations
            .iter()
            .filter(|x| x.level >= 2)
            .map(|x| x.id.as_str())
            .collect();
        assert_eq!(code_changes[0], "compile.eager-modules", "{code_changes:?}");
        let rec = rec(&r, "compile.eager-modules").unwrap();
        let actions: Vec<&str> = rec.actions.iter().map(|a| a.text.as_str()).collect();
        assert!(actions.iter().any(|a| a.contains("T5EncoderModel")), "{actions:?}");
        assert!(actions.iter().any(|a| a.contains("Decoder")), "{actions:?}");
        assert!(!actions.iter().any(|a| a.contains("CLIP")), "{actions:?}");
        // Level 3+ waits for it.
        assert!(r.plan.recommendations.iter().filter(|x| x.level >= 3).all(|x| x.blocked_by_level == Some(2)));
        // Its savings come from the eager modules' own time.
        let stake: i64 = r.analysis.compile.eager_modules.iter().map(|m| m.kernel_ns).sum();
        assert!(rec.est_savings_ns > 0 && rec.est_savings_ns < stake, "{} of {stake}", rec.est_savings_ns);
        // A fully eager model is not "partial": it has no compiled code beside.
        let eager_model = run_path(&shared.join("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
        assert!(eager_model.analysis.compile.eager_modules.is_empty());
    });
}

/// Qwen1.5 eager: its Qwen2RMSNorm modules hold 13% of the kernel time. Compile comes first
/// (the first code change), then level 4's Triton fusions, naming the module with its share
/// as `modules[]` gives it.
#[test]
fn norm_modules_get_compile_first_then_named_triton_fusions() {
    with_shared!(shared => {
        let r = run_path(&shared.join("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
        let a = &r.analysis;
        let rms: i64 = a
            .modules
            .iter()
            .filter(|m| m.name.as_deref().is_some_and(|n| n.starts_with("nn.Module: Qwen2RMSNorm_")))
            .map(|m| m.self_ns)
            .sum();
        let share = rms as f64 * 100.0 / a.summary.kernel_ns as f64;
        assert!((12.0..15.0).contains(&share), "RMSNorm share {share}");
        let f = finding(&r, FindingId::NormActivationHeavy).expect("norm_activation_heavy fires");
        let row_json = f.evidence.to_json();
        let row = row_json["modules"].as_array().unwrap().iter().find(|m| m["module"] == "Qwen2RMSNorm").unwrap();
        assert!((row["pct"].as_f64().unwrap() - share).abs() < 0.01, "{row} vs {share}");
        let code: Vec<&str> = r.plan.recommendations.iter().filter(|x| x.level >= 2).map(|x| x.id.as_str()).collect();
        assert_eq!(code[0], "compile.enable", "{code:?}");
        let fusions = rec(&r, "tuning.triton-fusions").expect("Triton fusions offered after compile");
        assert_eq!(fusions.blocked_by_level, Some(2));
        assert!(fusions.actions[0].text.starts_with("Qwen2RMSNorm (13."), "{}", fusions.actions[0].text);
        // Never more than the norm and activation kernels' own time.
        assert!(fusions.est_savings_ns <= f.time_at_stake_ns);
        // A model without norm modules (ResNet-18: BatchNorm) does not get it.
        let resnet = run_path(&shared.join("corpus/tracelens/train_resnet18.json.gz"));
        assert!(finding(&resnet, FindingId::NormActivationHeavy).is_none());
    });
}

/// Each "because" is the recommendation's own evidence: TunableOp cites the GEMM share and the
/// shapes' efficiency, aiter attention the kernel that runs now; tile advice needs a grid of
/// at least 1024 workgroups (seeds/003), which Flux's small GEMMs (256) and BERT-small's do not
/// have. Kineto writes Tensile kernels' grid in work-items: the reader divides by the block.
#[test]
fn each_because_is_the_recommendations_own_evidence() {
    with_shared!(shared => {
        let flux = run_path(&shared.join("corpus/tracelens/profile_trace_rank_0.json.gz"));
        let tunable = rec(&flux, "env.tunableop").unwrap();
        assert!(tunable.evidence[0].starts_with("GEMMs hold 66."), "{:?}", tunable.evidence);
        assert!(tunable.evidence[1].contains("of the device's dense peak"), "{:?}", tunable.evidence);
        assert!(rec(&flux, "kernel.gemm-tiles").is_none(), "256-workgroup GEMMs get no tile advice");
        let slow = finding(&flux, FindingId::LowGemmEfficiency).unwrap();
        assert_eq!(slow.evidence.to_json()["max_workgroups"], 256, "{}", slow.evidence);
        let bert = run_path(&shared.join("corpus/tracelens/gaunernst_bert-small-uncased__1016001.json.gz"));
        assert!(rec(&bert, "kernel.gemm-tiles").is_none());
        let qwen = run_path(&shared.join("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
        let attention = rec(&qwen, "arch.aiter-attention").unwrap();
        assert!(attention.evidence[0].contains("attn_fwd"), "{:?}", attention.evidence);
        assert!(attention.evidence[0].contains("of the device's dense peak"), "{:?}", attention.evidence);
    });
}

/// Seeds/002 measured Triton GEMMs 60% slower than rocBLAS on MI350: GEMMs that run as Triton
/// kernels on AMD get routed to the libraries. The trace is a real ViT compiled with
/// max-autotune and Triton as its only GEMM backend (H100), read as from an AMD device; the
/// vLLM trace's Triton GEMMs are mixture-of-experts GEMMs, which no library replaces.
#[test]
fn triton_gemms_on_amd_go_to_the_libraries_but_not_moe() {
    use rocprof_classify::ingest::{read_all, ReadOptions};
    let path = fixture("kineto/zoo/vit_infer_triton_gemm.json.gz");
    let mut trace = read_all(&[path], &ReadOptions::default()).unwrap();
    let nvidia = crate::common::run_trace(trace.clone(), &Default::default());
    assert!(
        rec(&nvidia, "tuning.library-gemm").is_none(),
        "seeds/002 measured AMD only"
    );
    for input in &mut trace.inputs {
        input.vendor = rocprof_classify::model::Vendor::Amd;
    }
    let amd = crate::common::run_trace(trace, &Default::default());
    let r = rec(&amd, "tuning.library-gemm").expect("Triton GEMMs on AMD");
    assert!(r.evidence[0].starts_with("GEMMs hold"), "{:?}", r.evidence);
    assert!(
        r.actions[0].text.contains("max_autotune_gemm_backends"),
        "{:?}",
        r.actions
    );
    let gemm = amd.analysis.partition_ns(Category::Gemm);
    assert!(r.est_savings_ns > 0 && r.est_savings_ns <= gemm);
    // Inductor's Triton convolution template is a convolution, not unclassified time.
    assert!(finding(&amd, FindingId::UnclassifiedTime).is_none());
    with_shared!(shared => {
        let vllm = run_path(&shared.join("corpus/tracelens/graph_execution.json.gz"));
        assert!(rec(&vllm, "tuning.library-gemm").is_none(), "MoE GEMMs stay in Triton");
    });
}

/// SGLang decode: paged attention is 22% of kernel time with a KV cache in the model's dtype
/// (the kernels' `Fp8KVCacheDataType` argument is 0, auto): fp8 KV cache on MI300 (seeds/003).
#[test]
fn paged_attention_on_a_full_width_kv_cache_gets_fp8_kv_advice() {
    with_shared!(shared => {
        let r = run_path(&shared.join("corpus/tracelens/sglang_Qwen3-8B_decode.json.gz"));
        let f = finding(&r, FindingId::PagedAttentionHeavy).expect("paged attention is heavy");
        assert_eq!(f.kind(), Some("not_fp8"), "{}", f.evidence);
        assert_eq!(f.evidence.to_json()["kv_cache_dtypes"], serde_json::json!(["auto"]));
        let kv = rec(&r, "arch.fp8-kv-cache").expect("fp8 KV cache offered");
        assert!(kv.est_savings_ns <= f.time_at_stake_ns);
        assert!(kv.actions[0].text.contains("--kv-cache-dtype fp8"));
        // No paged attention, no KV advice.
        let qwen = run_path(&shared.join("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
        assert!(finding(&qwen, FindingId::PagedAttentionHeavy).is_none());
    });
}

/// Exposed RCCL collectives on AMD (8-rank DDP ResNet: most all-reduce time not overlapped)
/// get seeds 001/003's RCCL settings; a trace without collectives does not.
#[test]
fn exposed_rccl_collectives_get_the_rccl_environment() {
    with_shared!(shared => {
        let r = run_path(&shared.join("corpus/tracelens/resnet_act_checkpoint.json.gz"));
        let exposed = finding(&r, FindingId::ExposedCommunication).unwrap();
        let rccl = rec(&r, "env.rccl").expect("RCCL settings for exposed collectives");
        assert!(rccl.actions[0].text.contains("NCCL_MIN_NCHANNELS=112"));
        assert!(rccl.actions.iter().any(|a| a.text.contains("numa_balancing=0")));
        assert!(rccl.est_savings_ns > 0 && rccl.est_savings_ns <= exposed.time_at_stake_ns);
        assert_eq!(rccl.level, 1);
        let qwen = run_path(&shared.join("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
        assert!(rec(&qwen, "env.rccl").is_none());
    });
}

/// A warm-up step inside the window is no one's savings: an action's ceiling leaves its time
/// out. `eager_launch_bound` profiles its first (warm-up) step: compile's savings stay under
/// the launch overhead and elementwise time of the other steps.
#[test]
fn no_savings_from_a_warm_up_step() {
    let r = run_path(&fixture("kineto/h100/eager_launch_bound.json.gz"));
    let warm = finding(&r, FindingId::WarmupInWindow).expect("its first step is a warm-up");
    let step = warm.evidence.to_json()["step"].as_u64().unwrap();
    let cats = [Category::LaunchOverhead, Category::Elementwise];
    let in_warmup: i64 = r
        .analysis
        .step_breakdown
        .iter()
        .filter(|s| s.step == step)
        .flat_map(|s| s.time_partition.iter())
        .filter(|p| cats.contains(&p.category))
        .map(|p| p.ns)
        .sum();
    assert!(in_warmup > 0);
    let whole: i64 = cats.iter().map(|&c| r.analysis.partition_ns(c)).sum();
    let compile = rec(&r, "compile.enable").unwrap();
    assert!(
        compile.est_savings_ns <= whole - in_warmup,
        "{} > {} - {in_warmup}",
        compile.est_savings_ns,
        whole
    );
    // Replayed: the warm-up step's own saving is left out.
    let set = r.analysis.parts.replays.get(&[Transform::Compile]).unwrap();
    let steady = set.saving_ns_without(Some(step));
    assert!(
        steady < set.saving_ns(),
        "the warm-up step had a saving to leave out"
    );
    let expect = steady as f64 / set.base_ns() as f64 * r.analysis.summary.window_ns as f64;
    assert_eq!(compile.est_savings_ns, expect.round() as i64);
}
