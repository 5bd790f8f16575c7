//! What must be true of our own H100 traces (fixtures/kineto/h100, truth.json).

use crate::common::{analyze_path, fixture};
use rocprof_classify::classify::Bucket;

#[test]
fn manual_attention_is_gemm_then_elementwise_with_softmax_and_transpose_copies() {
    let a = analyze_path(&fixture("kineto/h100/eager_manual_attn.json.gz"));
    let order: Vec<Bucket> = a.buckets.iter().map(|b| b.bucket).collect();
    let mut top_two = order[..2].to_vec();
    top_two.sort();
    assert_eq!(
        top_two,
        vec![Bucket::Gemm, Bucket::Elementwise],
        "{order:?}"
    );
    assert!(
        a.buckets
            .iter()
            .all(|b| b.bucket != Bucket::Attention || b.launches == 0),
        "no fused attention kernel runs"
    );
    let softmax = a
        .top_kernels
        .iter()
        .find(|k| k.name.contains("softmax_warp_forward"))
        .expect("softmax kernel");
    assert_eq!(
        (softmax.bucket, softmax.family.as_str()),
        (Bucket::Elementwise, "softmax")
    );
    // The transpose before the batched matmul materializes as an ATen copy kernel.
    let copy = a
        .top_kernels
        .iter()
        .find(|k| k.name.contains("direct_copy_kernel"))
        .expect("transpose copy kernel");
    assert_eq!(
        (copy.bucket, copy.family.as_str()),
        (Bucket::Elementwise, "copy")
    );
    assert_eq!(a.summary.unclassified_pct, 0.0);
    assert_eq!(a.summary.steps, 5);
}

#[test]
fn sdpa_trace_has_attention_from_the_cudnn_kernel() {
    let a = analyze_path(&fixture("kineto/h100/eager_sdpa_fused.json.gz"));
    let attn = a
        .buckets
        .iter()
        .find(|b| b.bucket == Bucket::Attention)
        .unwrap();
    assert!(attn.launches > 0 && attn.kernel_ns > 0);
    let k = a
        .top_kernels
        .iter()
        .find(|k| k.bucket == Bucket::Attention)
        .unwrap();
    assert!(
        k.name.starts_with("cudnn_generated_fort_native_sdpa"),
        "{}",
        k.name
    );
    assert_eq!(k.library, "cuDNN");
    // No standalone softmax: SDPA fused it.
    assert!(!a.top_kernels.iter().any(|k| k.family == "softmax"));
}

#[test]
fn fp32_training_gemms_are_gemm_with_the_fp32_family() {
    let a = analyze_path(&fixture("kineto/h100/train_eager_fp32.json.gz"));
    let ffma: Vec<_> = a
        .top_kernels
        .iter()
        .filter(|k| k.name.contains("ffma"))
        .collect();
    let simt: Vec<_> = a
        .top_kernels
        .iter()
        .filter(|k| k.name.contains("simt_sgemm"))
        .collect();
    assert!(
        !ffma.is_empty() && !simt.is_empty(),
        "trace has both kernel kinds"
    );
    for k in ffma.iter().chain(&simt) {
        assert_eq!(
            (k.bucket, k.family.as_str()),
            (Bucket::Gemm, "gemm_fp32"),
            "{}",
            k.name
        );
    }
    let gemm = a.buckets.iter().find(|b| b.bucket == Bucket::Gemm).unwrap();
    assert_eq!(
        a.buckets[0].bucket,
        Bucket::Gemm,
        "fp32 GEMMs dominate: {gemm:?}"
    );
}

#[test]
fn bucket_shares_add_up_and_match_the_kernel_total() {
    for name in [
        "eager_manual_attn",
        "eager_sdpa_fused",
        "train_eager_fp32",
        "compiled_cudagraphs",
        "eager_launch_bound",
    ] {
        let a = analyze_path(&fixture(&format!("kineto/h100/{name}.json.gz")));
        let sum: i64 = a.buckets.iter().map(|b| b.kernel_ns).sum();
        assert_eq!(sum, a.summary.kernel_ns, "{name}");
        let pct: f64 = a.buckets.iter().map(|b| b.pct).sum();
        assert!((pct - 100.0).abs() < 0.01, "{name}: {pct}");
        let launches: u64 = a.buckets.iter().map(|b| b.launches).sum();
        assert_eq!(launches, a.activities, "{name}");
        assert!(a.summary.gpu_busy_ns <= a.summary.window_ns, "{name}");
        // Busy time is a union (never above the activity sum), except that the gaps inside one
        // CUDA-graph replay count as busy too.
        if !a.compile.cudagraphs {
            assert!(a.summary.gpu_busy_ns <= a.summary.kernel_ns, "{name}");
        }
    }
}

#[test]
fn steps_extend_to_the_gpu_work_they_launched() {
    // reduce-overhead replays CUDA graphs whose kernels finish after the CPU step range.
    let a = analyze_path(&fixture("kineto/h100/compiled_cudagraphs.json.gz"));
    assert!(a.summary.steps > 0);
    let first = a.step_breakdown.first().unwrap();
    let last = a.step_breakdown.last().unwrap();
    assert!(a.summary.window_ns >= last.start_ns + last.dur_ns - first.start_ns);
    // The last step ends after its CPU range: the replayed kernels finish later.
    assert!(a.step_breakdown.iter().all(|s| s.gpu_busy_ns > 0));
    let stats = a.summary.step_ns.clone().unwrap();
    assert!(stats.mean > 0.0 && stats.cv_pct >= 0.0);
}
