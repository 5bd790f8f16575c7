//! AMD kernel families on real AMD data from the corpus: Kineto traces of MI300X/MI250/MI210 runs,
//! and kernel names that appear in rocprof outputs (rocprofv3 JSON, rocpd, rocprof-compute), which
//! this test pulls out of the raw bytes to classify.

use crate::common::{analyze_path, rules};
use crate::with_shared;
use rocprof_classify::classify::Bucket;
use std::io::Read;
use std::path::Path;

/// The bytes of a corpus file, gunzipped when needed.
fn bytes(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap();
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    } else {
        raw
    }
}

/// Distinct names matching `pattern` in a corpus file.
fn names_in(path: &Path, pattern: &str) -> Vec<String> {
    let re = regex::bytes::Regex::new(pattern).unwrap();
    let mut v: Vec<String> = re
        .find_iter(&bytes(path))
        .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned())
        .collect();
    v.sort();
    v.dedup();
    v
}

fn assert_bucket(names: &[String], bucket: Bucket, what: &str) {
    assert!(!names.is_empty(), "no {what} names found");
    for n in names {
        let c = rules().classify(n);
        assert_eq!(c.bucket, bucket, "{what}: {n} → {c:?}");
        assert!(c.rule.is_some(), "{what}: {n} matched no rule");
    }
}

#[test]
fn tensile_gemms_are_gemm() {
    with_shared!(shared => {
        for f in ["corpus/tracelens/sglang_Qwen3-8B_decode.json.gz", "corpus/hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz"] {
            let a = analyze_path(&shared.join(f));
            let cijk: Vec<_> = a.top_kernels.iter().filter(|k| k.name.starts_with("Cijk_")).collect();
            assert!(!cijk.is_empty(), "{f}");
            for k in cijk {
                assert_eq!(k.bucket, Bucket::Gemm, "{}", k.name);
                assert_eq!(k.library, "hipBLASLt/Tensile");
            }
        }
    });
}

#[test]
fn triton_flash_attention_on_rocm_is_attention() {
    with_shared!(shared => {
        let a = analyze_path(&shared.join("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
        let k = a.top_kernels.iter().find(|k| k.name == "attn_fwd").expect("attn_fwd runs in this trace");
        assert_eq!((k.bucket, k.family.as_str()), (Bucket::Attention, "flash_attention"));
    });
}

#[test]
fn ck_and_aiter_attention_names_are_attention() {
    // No CK/aiter FMHA kernel runs in the corpus's traces; these are the name shapes the
    // libraries emit (ck_tile FmhaFwdKernel, aiter's asm fmha, mangled as ROCm traces leave them).
    let names = [
        "void ck_tile::kentry<256, 2, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<>, ck_tile::Default2DEpilogue<>>>(ck_tile::FmhaFwdKernel<>::FmhaFwdBatchModeKargs)",
        "_ZN5aiter26fmha_fwd_hd128_bf16_causalEv",
        "aiter::mha_bwd_hd128_bf16",
        "attn_fwd",
    ];
    assert_bucket(
        &names.map(String::from),
        Bucket::Attention,
        "CK/aiter attention",
    );
}

#[test]
fn rccl_kernels_are_communication() {
    with_shared!(shared => {
        let mut names = names_in(&shared.join("corpus/tracelens_rocprof/908_results.json.gz"), r"(rccl|nccl)\w*(Kernel|_)\w*");
        names.extend(names_in(&shared.join("corpus/tracelens/resnet_act_checkpoint.json.gz"), r"ncclDevKernel_Generic\([^)]*\)"));
        assert!(names.iter().any(|n| n.starts_with("ncclDevKernel_Generic")));
        assert_bucket(&names, Bucket::Communication, "RCCL");
        // And in a whole trace: the DDP all-reduces land in communication.
        let a = analyze_path(&shared.join("corpus/tracelens/resnet_act_checkpoint.json.gz"));
        let comm = a.buckets.iter().find(|b| b.bucket == Bucket::Communication).unwrap();
        assert!(comm.launches > 0);
    });
}

#[test]
fn rocclr_blits_are_memory() {
    with_shared!(shared => {
        let mut names = names_in(&shared.join("corpus/rocprof_compute_v3_bmm1/MI300X_A1/pmc_perf.csv.gz"), r"__amd_rocclr_\w+");
        names.extend(names_in(&shared.join("corpus/rocpd/15_results.db"), r"__amd_rocclr_(copy|fill)Buffer\w*(\.kd)?"));
        assert!(names.iter().any(|n| n.contains("copyBuffer")) && names.iter().any(|n| n.contains("fillBuffer")), "{names:?}");
        assert_bucket(&names, Bucket::Memory, "ROCclr blit");
    });
}

#[test]
fn miopen_convolutions_are_conv() {
    with_shared!(shared => {
        let names = names_in(&shared.join("corpus/hpctraining/merged_all_events.json.gz"), r"(igemm_(fwd|bwd|wrw)_gtc\w+|miopenSp3AsmConv\w+)");
        assert!(names.iter().any(|n| n.starts_with("igemm_")) && names.iter().any(|n| n.starts_with("miopenSp3AsmConv")));
        assert_bucket(&names, Bucket::Conv, "MIOpen conv");
        // A ResNet training step on MI300X: MIOpen implicit-GEMM convolutions are conv, and so
        // are the NCHW<->NHWC batched transposes MIOpen runs inside the convolution ops (the op
        // view); their family still says layout transpose (the kernel view).
        let a = analyze_path(&shared.join("corpus/tracelens/train_resnet18.json.gz"));
        assert_eq!(a.summary.bucket_view, "ops");
        let conv = a.buckets.iter().find(|b| b.bucket == Bucket::Conv).unwrap();
        assert!(conv.pct > 20.0, "{:?}", a.buckets);
        for k in &a.top_kernels {
            if k.name.starts_with("igemm_") {
                assert_eq!(k.bucket, Bucket::Conv, "{}", k.name);
            }
            if k.name.starts_with("batched_transpose_") {
                assert_eq!(k.family, "layout_transpose");
            }
        }
    });
}

/// Every kernel launched under a convolution op counts as conv, whatever its name (MIOpen
/// and CK convolutions on MI300X, ResNet traces of the TraceLens corpus).
#[test]
fn every_kernel_under_a_convolution_op_is_conv() {
    with_shared!(shared => {
        let re = regex::Regex::new(r"^aten::(convolution|_convolution|miopen_\w*convolution\w*|cudnn_convolution\w*|convolution_backward)$").unwrap();
        for f in ["corpus/tracelens/train_resnet18.json.gz", "corpus/tracelens/resnet_act_checkpoint.json.gz"] {
            let a = analyze_path(&shared.join(f));
            let conv_ns = a.buckets.iter().find(|b| b.bucket == Bucket::Conv).unwrap().kernel_ns;
            // The outermost convolution ops (forward and backward) hold all time under them.
            let under: i64 = a.ops.iter()
                .filter(|o| o.name == "aten::convolution" || o.name == "aten::convolution_backward")
                .map(|o| o.total_ns)
                .sum();
            assert!(under > 0, "{f}");
            assert!(conv_ns >= under, "{f}: conv {conv_ns} < {under} under convolution ops");
            for o in a.ops.iter().filter(|o| re.is_match(&o.name) && o.self_ns > 0) {
                assert_eq!(o.bucket, Bucket::Conv, "{f}: {}", o.name);
            }
            // And the op view adds up: every bucket's time is the ops' self time in it.
            let ops_ns: i64 = a.ops.iter().map(|o| o.self_ns).sum();
            assert_eq!(ops_ns, a.summary.kernel_ns, "{f}");
        }
    });
}
