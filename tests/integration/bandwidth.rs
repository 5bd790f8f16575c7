//! Memory-bound ops' bandwidth (`memory_shapes[]`, `ops[].gbps`, `low_bandwidth_efficiency`) on
//! real traces: eager elementwise, norm, reduction, copy and cast ops captured on an H200
//! (`fixtures/kineto/h200/bandwidth`, `make_bandwidth_traces.py`), whose bytes follow from their
//! shapes and whose kernels the script timed.

use crate::common::{analyze_path, assert_valid_feed, fixture, run_path, stdout_of};
use rocprof_classify::analysis::MemoryShapeRow;
use serde_json::Value;

fn truth() -> Value {
    let p = fixture("kineto/h200/bandwidth/bandwidth_truth.json");
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// The op that launches the kernels of each truth row, and its tensor inputs' types.
fn launching_op(label: &str) -> Option<(&'static str, &'static str)> {
    Some(match label {
        "softmax" => ("aten::_softmax", "bf16"),
        "mul_scalar" => ("aten::mul", "bf16"),
        "add" => ("aten::add", "bf16,bf16"),
        "transpose_copy" => ("aten::copy_", "bf16,bf16"),
        "cast_bf16_fp32" => ("aten::copy_", "fp32,bf16"),
        "layer_norm" => ("aten::native_layer_norm", "bf16,bf16,bf16"),
        "silu" => ("aten::silu", "bf16"),
        "sum_lastdim" => ("aten::sum", "bf16"),
        "zero_" => ("aten::fill_", "fp32"),
        // A TensorList's element type is not recorded: no bytes.
        "cat_dim0" => return None,
        other => panic!("a truth row this test does not know: {other}"),
    })
}

#[test]
fn eager_memory_bound_ops_move_the_bytes_their_shapes_say() {
    let a = analyze_path(&fixture("kineto/h200/bandwidth/eager_elementwise.json.gz"));
    let t = truth();
    let ops = t["eager"]["ops"].as_array().unwrap();
    assert_eq!(ops.len(), 10);
    let rows: &[MemoryShapeRow] = &a.memory_shapes;
    for op in ops {
        let label = op["label"].as_str().unwrap();
        let Some((name, dtypes)) = launching_op(label) else {
            assert!(
                rows.iter().all(|r| r.op != "aten::cat"),
                "{label}: no bytes"
            );
            continue;
        };
        let row = rows
            .iter()
            .find(|r| r.op == name && r.dtypes == dtypes)
            .unwrap_or_else(|| panic!("{label}: no row for {name} {dtypes}: {rows:?}"));
        assert_eq!(row.calls, op["trace"]["calls"].as_u64().unwrap(), "{label}");
        // Bytes: the script's reads + writes (layer_norm also writes fp32 mean and rstd per row,
        // 0.2% more than the script counts).
        let want = op["bytes_total"].as_f64().unwrap();
        assert!(
            (row.bytes_per_call / want - 1.0).abs() < 0.005,
            "{label}: {} bytes vs {want}",
            row.bytes_per_call
        );
        // GB/s: over the same kernels' time the script read from the trace (within 1%), and
        // within 20% of its own CUDA-event timing of the op (a separate loop).
        let from_trace = op["trace"]["achieved_gbps_from_trace"].as_f64().unwrap();
        assert!(
            (row.gbps / from_trace - 1.0).abs() < 0.01,
            "{label}: {} GB/s vs {from_trace}",
            row.gbps
        );
        let events = op["achieved_gbps"].as_f64().unwrap();
        assert!(
            (row.gbps / events - 1.0).abs() < 0.2,
            "{label}: {} vs {events}",
            row.gbps
        );
        // Of the H200's 4800 GB/s.
        assert_eq!(row.peak_gbps, Some(4800.0));
        let pct = row.pct_of_hbm_peak.unwrap();
        assert!(
            (pct - (row.gbps / 48.0).min(100.0)).abs() < 0.01,
            "{label}: {pct}"
        );
    }
    // The op view: the copy_ row mixes the cast and the transposed copy, by time.
    let copy = a.ops.iter().find(|o| o.name == "aten::copy_").unwrap();
    let copies: Vec<&MemoryShapeRow> = rows.iter().filter(|r| r.op == "aten::copy_").collect();
    assert_eq!(copies.len(), 2);
    let bytes: f64 = copies
        .iter()
        .map(|r| r.bytes_per_call * r.calls as f64)
        .sum();
    let ns: i64 = copies.iter().map(|r| r.ns).sum();
    assert!((copy.gbps.unwrap() - bytes / ns as f64).abs() < 0.1);
}

#[test]
fn the_transposed_copy_is_the_slow_one() {
    let run = run_path(&fixture("kineto/h200/bandwidth/eager_elementwise.json.gz"));
    let f = run
        .findings
        .iter()
        .find(|f| f.id.as_str() == "low_bandwidth_efficiency")
        .expect("fires");
    let ops_json = f.evidence.to_json();
    let ops = ops_json["ops"].as_array().unwrap();
    // Only the transposed copy (14% of the peak): the cast runs at 43%, the rest faster.
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert_eq!(ops[0]["op"], "aten::copy_");
    assert!((ops[0]["gbps"].as_f64().unwrap() - 679.0).abs() < 10.0);
    assert!(run
        .plan
        .recommendations
        .iter()
        .any(|r| r.id == "tuning.memory-bound"));
    assert_valid_feed(&rocprof_classify::report::json::render(&run));
    // The eager model with hand-written attention (H100): its transposed K copy, 535 GB/s.
    let run = run_path(&fixture("kineto/h100/eager_manual_attn.json.gz"));
    let f = run
        .findings
        .iter()
        .find(|f| f.id.as_str() == "low_bandwidth_efficiency")
        .expect("fires");
    let shapes_json = f.evidence.to_json();
    let shapes: Vec<&str> = shapes_json["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["shapes"].as_str().unwrap())
        .collect();
    assert!(
        shapes.contains(&"[[8,16,64,512],[8,16,64,512],[]]"),
        "{shapes:?}"
    );
}

#[test]
fn tiny_decode_ops_are_latency_bound_not_slow_bandwidth() {
    // The serving loop's decode ops move kilobytes per call at the kernel floor: launch-bound
    // and elementwise-heavy, not a bandwidth finding.
    let run = run_path(&fixture("kineto/h200/serving/serving_llama_flash.json.gz"));
    let ids: Vec<&str> = run.findings.iter().map(|f| f.id.as_str()).collect();
    assert!(!ids.contains(&"low_bandwidth_efficiency"), "{ids:?}");
    assert!(ids.contains(&"launch_bound"));
    // Their rates are still measured.
    let mul = run
        .analysis
        .memory_shapes
        .iter()
        .find(|r| r.op == "aten::mul")
        .unwrap();
    assert!(
        mul.bytes_per_call < 100_000.0 && mul.gbps < 100.0,
        "{mul:?}"
    );
}

#[test]
fn device_peaks_come_from_the_arch_when_the_name_is_empty() {
    crate::with_shared!(shared => {
        // vLLM's MI300X trace names its device "" with gfx942: MFU and bandwidth use MI300X's
        // peaks (1307.4 TFLOP/s bf16, 5300 GB/s).
        let a = analyze_path(&shared.join("corpus/tracelens/graph_execution.json.gz"));
        assert_eq!(a.inputs[0].devices[0].name, "");
        assert_eq!(a.summary.mfu.peak_flops, Some(1307.4e12));
        let mm = a.ops.iter().find(|o| o.name == "aten::mm").unwrap();
        let (gbps, pct) = (mm.gbps.unwrap(), mm.pct_of_hbm_peak.unwrap());
        assert!((pct - gbps / 53.0).abs() < 0.01, "{gbps} GB/s is {pct}% of 5300");
    });
}

#[test]
fn triton_kernels_take_inductors_bytes_when_the_run_asked_for_them() {
    // Compiled with TORCHINDUCTOR_BENCHMARK_KERNEL=1: each Triton launcher op carries Inductor's
    // kernel_num_gb; its bandwidth is that over its kernels' time (the script's own reading).
    let t = truth();
    let runs = &t["compiled"]["runs"];
    let a = analyze_path(&fixture(
        "kineto/h200/bandwidth/compiled_bench_kernel.json.gz",
    ));
    let launchers = runs["bench_kernel"]["triton_launchers"].as_array().unwrap();
    assert_eq!(launchers.len(), 4);
    for l in launchers {
        let name = l["name"].as_str().unwrap();
        let row = a
            .memory_shapes
            .iter()
            .find(|r| r.op == name)
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(row.calls, l["calls"].as_u64().unwrap(), "{name}");
        assert_eq!(
            row.bytes_per_call,
            l["kernel_num_gb"].as_f64().unwrap() * 1e9
        );
        let want = l["achieved_gbps"].as_f64().unwrap();
        assert!(
            (row.gbps / want - 1.0).abs() < 0.01,
            "{name}: {} vs {want}",
            row.gbps
        );
        let op = a.ops.iter().find(|o| o.name == name).unwrap();
        assert_eq!(op.gbps, Some(row.gbps));
    }
    // Without it the same kernels have no rate, and the reports say why.
    let run = run_path(&fixture(
        "kineto/h200/bandwidth/compiled_no_bench_kernel.json.gz",
    ));
    for l in runs["no_bench_kernel"]["triton_launchers"]
        .as_array()
        .unwrap()
    {
        let name = l["name"].as_str().unwrap();
        let op = run.analysis.ops.iter().find(|o| o.name == name).unwrap();
        assert_eq!((op.gbps, op.pct_of_hbm_peak), (None, None), "{name}");
    }
    let md = rocprof_classify::report::markdown::render(&run);
    assert!(md.contains("TORCHINDUCTOR_BENCHMARK_KERNEL=1"), "{md}");
    let table = rocprof_classify::report::text::render(&run, &Default::default());
    assert!(String::from_utf8_lossy(&table).contains("TORCHINDUCTOR_BENCHMARK_KERNEL=1"));
}

/// Kernel candidates: ranked by the time they would save at 70% of the dense peak (80% of HBM
/// for memory-bound work), with what launched them and how to look closer.
#[test]
fn kernel_candidates_rank_by_headroom_with_commands() {
    use rocprof_classify::analysis::{CommandKind, Unit};
    let run = run_path(&fixture("kineto/h100/eager_manual_attn.json.gz"));
    let c = &run.analysis.kernel_candidates;
    assert!(c.len() >= 5, "{c:?}");
    for (i, k) in c.iter().enumerate() {
        assert_eq!(k.rank as usize, i + 1);
    }
    let rated: Vec<i64> = c.iter().filter_map(|k| k.headroom_ns).collect();
    assert!(rated.windows(2).all(|w| w[0] >= w[1]), "{rated:?}");
    // First: the transposed K copy, memory-bound, 534.6 of the H100's 3350 GB/s.
    let first = &c[0];
    assert_eq!(first.op, "aten::copy_");
    assert_eq!(
        first.shapes.as_deref(),
        Some("[[8,16,64,512],[8,16,64,512],[]]")
    );
    assert_eq!((first.unit, first.peak), (Some(Unit::Gbps), Some(3350.0)));
    let want = (first.total_ns as f64 * (1.0 - first.achieved.unwrap() / (0.8 * 3350.0))).round();
    assert!((first.headroom_ns.unwrap() as f64 - want).abs() <= 1.0);
    // NVIDIA: ncu, not rocprofv3.
    let profile: Vec<&str> = first
        .commands
        .iter()
        .filter(|x| x.kind == CommandKind::Profile)
        .map(|x| x.text.as_str())
        .collect();
    assert_eq!(profile.len(), 1);
    assert!(profile[0].starts_with("ncu --kernel-name regex:'elementwise_kernel'"));
    // A GEMM in TFLOP/s with its TunableOp line.
    let mm = c
        .iter()
        .find(|k| k.op == "aten::mm")
        .expect("a GEMM candidate");
    assert_eq!(mm.unit, Some(Unit::Tflops));
    let tune = mm
        .commands
        .iter()
        .find(|x| x.kind == CommandKind::Tune)
        .unwrap();
    assert!(
        tune.text.contains("PYTORCH_TUNABLEOP_ENABLED=1"),
        "{}",
        tune.text
    );
    assert!(tune.text.contains("M=4096 N=1024 K=1024"), "{}", tune.text);
    // In the reports: the top five.
    let md = rocprof_classify::report::markdown::render(&run);
    assert!(md.contains("<summary>Kernel candidates</summary>"));
    assert_eq!(md.matches("   - profile: ").count(), 5);
    assert_valid_feed(&rocprof_classify::report::json::render(&run));
}

#[test]
fn triton_candidates_name_their_file_or_why_they_have_no_rate() {
    use rocprof_classify::analysis::CommandKind;
    let a = analyze_path(&fixture(
        "kineto/h200/bandwidth/compiled_bench_kernel.json.gz",
    ));
    let triton: Vec<_> = a
        .kernel_candidates
        .iter()
        .filter(|k| k.name.starts_with("triton_"))
        .collect();
    assert!(!triton.is_empty(), "{:?}", a.kernel_candidates);
    for k in &triton {
        assert!(
            k.source.as_deref().is_some_and(|s| s.ends_with(".py")),
            "{k:?}"
        );
        let tune = k
            .commands
            .iter()
            .find(|x| x.kind == CommandKind::Tune)
            .unwrap();
        assert!(tune
            .text
            .contains("TORCHINDUCTOR_COORDINATE_DESCENT_TUNING=1"));
        assert!(tune.text.contains(k.source.as_deref().unwrap()));
    }
    let a = analyze_path(&fixture(
        "kineto/h200/bandwidth/compiled_no_bench_kernel.json.gz",
    ));
    let silu = a
        .kernel_candidates
        .iter()
        .find(|k| k.name == "triton_poi_fused__unsafe_view_mul_silu_1")
        .expect("5% of GPU time, listed without a rate");
    assert_eq!(silu.headroom_ns, None);
    assert!(silu
        .no_rate_reason
        .as_deref()
        .is_some_and(|r| r.contains("TORCHINDUCTOR_BENCHMARK_KERNEL=1")));
}

#[test]
fn amd_decode_gemm_is_a_bandwidth_candidate_with_rocm_commands() {
    crate::with_shared!(shared => {
        let a = analyze_path(&shared.join("corpus/tracelens/graph_execution.json.gz"));
        let lm_head = a
            .kernel_candidates
            .iter()
            .find(|k| k.op == "aten::mm")
            .expect("the eager lm_head GEMM");
        assert_eq!(lm_head.shapes.as_deref(), Some("[[32,2880],[2880,201088]]"));
        // M = 32 sequences: far from the compute roof, near the memory one.
        assert_eq!(lm_head.unit, Some(rocprof_classify::analysis::Unit::Gbps));
        assert_eq!(lm_head.peak, Some(5300.0));
        let text: Vec<&str> = lm_head.commands.iter().map(|c| c.text.as_str()).collect();
        assert!(text.iter().any(|t| t.starts_with("rocprofv3 --kernel-trace")), "{text:?}");
        assert!(text.iter().any(|t| t.starts_with("rocprof-compute profile")));
        assert!(text.iter().any(|t| t.contains("M=32 N=201088 K=2880")));
        assert!(text.iter().all(|t| !t.starts_with("ncu")));
    });
}

#[test]
fn the_html_roofline_places_every_rated_shape() {
    for f in [
        "kineto/h100/eager_manual_attn.json.gz",
        "kineto/h200/bandwidth/eager_elementwise.json.gz",
    ] {
        let run = run_path(&fixture(f));
        let a = &run.analysis;
        let html = rocprof_classify::report::html::render(&run);
        let at = html
            .find("Roofline: ")
            .unwrap_or_else(|| panic!("{f}: no roofline"));
        let svg = &html[html[..at].rfind("<svg").unwrap()..at + html[at..].find("</svg>").unwrap()];
        let gemm = a
            .op_shapes
            .iter()
            .filter(|r| r.tflops > 0.0 && r.gbps.is_some_and(|g| g > 0.0))
            .count();
        let memory = a.memory_shapes.iter().filter(|m| m.gbps > 0.0).count();
        assert_eq!(svg.matches("<circle").count(), gemm + memory, "{f}");
        assert!(memory > 0, "{f}");
    }
}

/// The roofline's roofs come from the device table the run used, `--rules` included: a user
/// who measured their H100's bandwidth (a compiled GPT-2 block, whose Triton kernels give the
/// roofline no memory-bound shape to read the HBM peak from) sees that roof, not the built-in
/// datasheet's.
#[test]
fn the_html_roofline_uses_the_devices_the_rules_give() {
    let trace = fixture("kineto/h100/compiled_clean.json.gz");
    let roofline = |html: &str| {
        let at = html.find("Roofline: ").expect("a roofline");
        html[at..at + html[at..].find(" (dot area").unwrap()].to_string()
    };
    let built_in = stdout_of(&trace, &["--html", "-"]);
    assert_eq!(roofline(&built_in), "Roofline: 989 TFLOP/s, 3350 GB/s");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("devices.toml"),
        r#"[[device]]
model = "NVIDIA H100 SXM (measured)"
names = ["H100"]
fp32 = 67.0
tf32 = 494.7
bf16 = 989.4
fp16 = 989.4
fp8 = 1978.9
hbm_gbps = 2900.0
memory_gib = 80.0
source = "a STREAM copy on this machine"
"#,
    )
    .unwrap();
    let rules = dir.path().to_str().unwrap();
    let measured = stdout_of(&trace, &["--rules", rules, "--html", "-"]);
    assert_eq!(roofline(&measured), "Roofline: 989 TFLOP/s, 2900 GB/s");
}

/// TunableOp's untuned lines from the trace's GEMM ops equal the ones PyTorch 2.11 recorded for
/// the same calls (`PYTORCH_TUNABLEOP_RECORD_UNTUNED=1`, H200): mm, addmm with a bias, linear
/// (an mm of a transposed weight), bmm, a transposed first operand, fp16 and fp32.
#[test]
fn tunableop_lines_are_the_ones_pytorch_records() {
    use rocprof_classify::analysis::tunableop_line;
    let p = fixture("kineto/h200/tunableop/tunableop_truth.json");
    let t: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    let cases = t["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 8);
    for case in cases {
        let label = case["label"].as_str().unwrap();
        let want = case["untuned_lines_alone"].as_array().unwrap();
        assert_eq!(want.len(), 1, "{label}");
        let op = &case["trace"]["kernels"][0]["launched_by"];
        let arg = |k: &str| op[k].to_string();
        let got = tunableop_line(
            op["name"].as_str().unwrap(),
            &arg("Input Dims"),
            &arg("Input Strides"),
            &arg("Input type"),
            &arg("Concrete Inputs"),
        );
        assert_eq!(got.as_deref(), want[0].as_str(), "{label}");
    }
    // The candidates of that trace carry them, with the command tuning the line alone.
    let a = analyze_path(&fixture("kineto/h200/tunableop/tunableop_gemms.json.gz"));
    let recorded: Vec<String> =
        std::fs::read_to_string(fixture("kineto/h200/tunableop/tunableop_untuned.csv"))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
    let lines: Vec<&str> = a
        .kernel_candidates
        .iter()
        .filter_map(|k| k.tunableop.as_deref())
        .collect();
    assert!(!lines.is_empty());
    for l in &lines {
        assert!(
            recorded.iter().any(|r| r == l),
            "{l} not recorded: {recorded:?}"
        );
    }
    let with_line = a
        .kernel_candidates
        .iter()
        .find(|k| k.tunableop.is_some())
        .unwrap();
    assert!(with_line
        .commands
        .iter()
        .any(|c| c.text.contains("tune_gemm_in_file")
            && c.text.contains(with_line.tunableop.as_deref().unwrap())));
}

/// Inductor's Triton GEMM templates (max-autotune) carry kernel_flop: their TFLOP/s is that over
/// their kernels' time, they count in MFU, and they become compute candidates.
#[test]
fn triton_templates_are_rated_from_inductors_flops() {
    let p = fixture("kineto/h200/bandwidth/template_truth.json");
    let t: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    let run = run_path(&fixture("kineto/h200/bandwidth/compiled_templates.json.gz"));
    let a = &run.analysis;
    let launchers = t["triton_launchers"].as_array().unwrap();
    assert_eq!(launchers.len(), 2);
    let mut flops = 0.0;
    for l in launchers {
        let name = l["name"].as_str().unwrap();
        let op = a.ops.iter().find(|o| o.name == name).unwrap();
        let want =
            l["kernel_flop"].as_f64().unwrap() / (l["mean_kernel_us"].as_f64().unwrap() * 1e6);
        let got = op.tflops.unwrap();
        assert!(
            (got / want - 1.0).abs() < 0.01,
            "{name}: {got} vs {want} TFLOP/s"
        );
        assert!(op.pct_of_peak.is_some());
        flops += l["kernel_flop"].as_f64().unwrap();
        // A candidate while under 70% of the dense peak (the second runs at 72%: nothing to win).
        let cand = a.kernel_candidates.iter().find(|k| k.name == name);
        if op.pct_of_peak.unwrap() < 70.0 {
            let cand = cand.expect("a candidate");
            assert_eq!(cand.unit, Some(rocprof_classify::analysis::Unit::Tflops));
            assert!(cand
                .commands
                .iter()
                .any(|c| c.text.contains("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM=1")));
        } else {
            assert!(cand.is_none(), "{name}");
        }
    }
    // One forward per step: MFU's FLOPs are the two templates'.
    assert_eq!(a.summary.mfu.model_flops_per_step, Some(flops));
}
