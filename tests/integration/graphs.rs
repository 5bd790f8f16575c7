//! CUDA graphs whose capture lies in the profiled window (`fixtures/kineto/h200_graphs`, real
//! H200 traces, `make_graph_traces.py`): the replayed kernels belong to the ops that launched
//! them during the capture, as the same model's eager run shows.

use crate::common::{analyze_path, fixture};
use rocprof_classify::analysis::{OpRow, NO_OP};
use std::collections::BTreeMap;

fn op<'a>(ops: &'a [OpRow], name: &str) -> &'a OpRow {
    ops.iter()
        .find(|o| o.name == name)
        .unwrap_or_else(|| panic!("{name}"))
}

/// Kernel launches per execution of the model, by op (ops that launched GPU work).
fn launches_per_run(ops: &[OpRow], runs: u64) -> BTreeMap<String, u64> {
    ops.iter()
        .filter(|o| o.launches > 0 && o.name != NO_OP && o.name != "aten::fill_")
        .map(|o| {
            assert_eq!(o.launches % runs, 0, "{}: {} launches", o.name, o.launches);
            (o.name.clone(), o.launches / runs)
        })
        .collect()
}

#[test]
fn replayed_kernels_belong_to_the_captured_ops() {
    let dir = fixture("kineto/h200_graphs");
    let eager = analyze_path(&dir.join("eager_reference.json.gz"));
    let graph = analyze_path(&dir.join("graph_capture.json.gz"));
    // 5 eager steps; the capture step runs nothing, then 4 replays.
    assert_eq!(
        launches_per_run(&graph.ops, 4),
        launches_per_run(&eager.ops, 5)
    );
    // Every replayed kernel found its op: no GPU time is left without one.
    assert!(graph.ops.iter().all(|o| o.name != NO_OP), "{:?}", graph.ops);
    // The GEMMs run the same kernels at the same shapes: FLOPs count once per replay, so the
    // rate matches the eager run's.
    let (e, g) = (
        op(&eager.ops, "aten::mm").tflops.unwrap(),
        op(&graph.ops, "aten::mm").tflops.unwrap(),
    );
    assert!((g / e - 1.0).abs() < 0.1, "eager {e} vs graph {g} TFLOP/s");
    let sdpa = op(&graph.ops, "aten::scaled_dot_product_attention");
    assert_eq!(sdpa.bucket.as_str(), "attention");
    assert!(sdpa.tflops.is_some());
    let shape = graph
        .op_shapes
        .iter()
        .find(|r| r.op == "aten::scaled_dot_product_attention")
        .unwrap();
    assert_eq!(shape.calls, 2 * 4, "two blocks, four replays");
}

/// torch.compile's reduce-overhead mode records its graph in the window's first call: the
/// Triton kernels and extern GEMMs of all 5 graph launches belong to their ops.
#[test]
fn compiled_reduce_overhead_replays_belong_to_their_ops() {
    let dir = fixture("kineto/h200_graphs");
    let eager = analyze_path(&dir.join("eager_reference.json.gz"));
    let compiled = analyze_path(&dir.join("compiled_reduce_overhead.json.gz"));
    assert!(compiled.compile.cudagraphs);
    assert_eq!(op(&compiled.ops, "aten::mm").launches, 8 * 5);
    let triton: u64 = compiled
        .ops
        .iter()
        .filter(|o| o.name.starts_with("triton_"))
        .map(|o| o.launches)
        .sum();
    assert!(triton >= 5 * 5, "{triton} Triton launches");
    let (e, c) = (
        op(&eager.ops, "aten::mm").tflops.unwrap(),
        op(&compiled.ops, "aten::mm").tflops.unwrap(),
    );
    assert!(
        (c / e - 1.0).abs() < 0.15,
        "eager {e} vs compiled {c} TFLOP/s"
    );
}

/// Without the capture in the window (compiled with cudagraphs, warmed up before profiling),
/// the replayed kernels belong to the op around their graph launch, the compiled region: no
/// ATen op inside it claims them.
#[test]
fn replays_without_their_capture_stay_with_the_graph_launch() {
    let a = analyze_path(&fixture("kineto/h100/compiled_cudagraphs.json.gz"));
    let region = &a.ops[0];
    assert!(
        region.name.starts_with("Torch-Compiled Region"),
        "{region:?}"
    );
    assert!(region.self_ns * 10 > a.summary.kernel_ns * 9, "{region:?}");
    assert!(a
        .ops
        .iter()
        .all(|o| o.name != "aten::mm" || o.launches == 0));
}

/// Two captures of the same length before one replay: which one it replays is unknown, so its
/// kernels stay with the graph launch's op instead of taking the ops of either capture.
#[test]
fn a_replay_that_several_captures_fit_stays_with_its_launch() {
    let capture = |t0: i64, begin: &str, op: &str, corr: u64| {
        format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"{begin}","pid":1,"tid":1,"ts":{t0},"dur":1,"args":{{"correlation":{c0}}}}},
               {{"ph":"X","cat":"cpu_op","name":"{op}","pid":1,"tid":1,"ts":{t1},"dur":10,"args":{{"External id":{c0}}}}},
               {{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{t2},"dur":2,"args":{{"correlation":{corr}}}}},
               {{"ph":"X","cat":"cuda_runtime","name":"cudaStreamEndCapture","pid":1,"tid":1,"ts":{t3},"dur":1,"args":{{"correlation":{c1}}}}}"#,
            c0 = corr + 100,
            c1 = corr + 200,
            t1 = t0 + 2,
            t2 = t0 + 4,
            t3 = t0 + 20,
        )
    };
    let doc = |second_begin: &str| {
        format!(
            r#"{{"traceEvents":[{},{},
               {{"ph":"X","cat":"cpu_op","name":"replay_region","pid":1,"tid":1,"ts":200,"dur":50}},
               {{"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":210,"dur":5,"args":{{"correlation":77}}}},
               {{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":220,"dur":30,"args":{{"correlation":77,"device":0,"stream":7}}}}]}}"#,
            capture(100, "cudaStreamBeginCapture", "aten::mm", 1),
            capture(150, second_begin, "aten::add", 2)
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two_captures.json");
    std::fs::write(&path, doc("cudaStreamBeginCapture")).unwrap();
    let a = analyze_path(&path);
    assert_eq!(op(&a.ops, "replay_region").self_ns, 30_000, "{:?}", a.ops);
    // Without the second capture, the one that fits claims the replay.
    std::fs::write(&path, doc("cudaEventRecord")).unwrap();
    let b = analyze_path(&path);
    assert_eq!(op(&b.ops, "aten::mm").self_ns, 30_000, "{:?}", b.ops);
}
