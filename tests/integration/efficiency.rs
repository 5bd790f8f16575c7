//! GEMM efficiency: FLOPs from `Input Dims`, time from the op's kernels, peaks from
//! `rules/devices.toml`. Checked by hand on one GEMM per vendor and bounded on every trace.

use crate::common::{analyze_path, fixture, shared};
use crate::with_shared;
use rocprof_classify::analysis::OpRow;
use std::io::Read;
use std::path::Path;

/// Every cpu_op `name` call's `Input Dims` in a raw trace.
fn calls(path: &Path, name: &str) -> Vec<Vec<Vec<i64>>> {
    calls_with_args(path, name)
        .into_iter()
        .map(|(dims, _)| dims)
        .collect()
}

/// 2·B·M·K·N for `[.., M, K] × [.., K, N]`, written out here independently of the library.
fn flops_by_hand(a: &[i64], b: &[i64]) -> f64 {
    let batch: i64 = a[..a.len() - 2].iter().product();
    let (m, k, n) = (a[a.len() - 2], a[a.len() - 1], b[b.len() - 1]);
    assert_eq!(k, b[b.len() - 2]);
    2.0 * (batch * m * k * n) as f64
}

fn op<'a>(ops: &'a [OpRow], name: &str) -> &'a OpRow {
    ops.iter().find(|o| o.name == name).unwrap()
}

fn check_by_hand(path: &Path, name: &str, peak_tflops: f64) {
    let a = analyze_path(path);
    let row = op(&a.ops, name);
    let calls = calls(path, name);
    // Every call launched at least one kernel (some launch a copy beside the GEMM): the row's
    // time is all of them.
    assert!(
        calls.len() as u64 <= row.launches && !calls.is_empty(),
        "{name}"
    );
    let flops: f64 = calls.iter().map(|d| flops_by_hand(&d[0], &d[1])).sum();
    let tflops = flops / row.self_ns as f64 / 1e3;
    let got = row.tflops.unwrap();
    assert!(
        (got - tflops).abs() <= tflops * 1e-3,
        "{name}: {got} vs {tflops} by hand"
    );
    let pct = row.pct_of_peak.unwrap();
    assert!(
        (pct - tflops * 100.0 / peak_tflops).abs() < 0.02,
        "{name}: {pct}%"
    );
    println!("{}: {name} {} calls, {flops:.3e} FLOPs in {} ns = {tflops:.1} TFLOP/s = {pct}% of {peak_tflops}", path.display(), calls.len(), row.self_ns);
}

/// NVIDIA: the batched GEMMs of manual attention on an H100 (bf16, 989.4 TFLOP/s dense).
#[test]
fn an_h100_bmm_checked_by_hand() {
    check_by_hand(
        &fixture("kineto/h100/eager_manual_attn.json.gz"),
        "aten::bmm",
        989.4,
    );
}

/// AMD: a bf16 GEMM on an MI300X (1307.4 TFLOP/s dense), from the TraceLens repro trace.
#[test]
fn an_mi300x_mm_checked_by_hand() {
    with_shared!(shared => {
        check_by_hand(&shared.join("corpus/tracelens/trace.json.gz"), "aten::mm", 1307.4);
    });
}

/// No op runs above its device's peak on any Kineto trace we hold, and every GEMM op of a
/// trace on a known device with shapes and types gets a number.
#[test]
fn no_efficiency_above_the_peak_on_any_trace() {
    let mut paths: Vec<std::path::PathBuf> = Vec::new();
    let mut add_dir = |dir: &Path| {
        if let Ok(entries) = std::fs::read_dir(dir) {
            let mut v: Vec<_> = entries
                .map(|e| e.unwrap().path())
                .filter(|p| {
                    p.to_string_lossy().ends_with(".json.gz")
                        || p.to_string_lossy().ends_with(".json")
                })
                .collect();
            v.sort();
            paths.extend(v);
        }
    };
    add_dir(&fixture("kineto/h100"));
    add_dir(&fixture("kineto/h200_graphs"));
    add_dir(&fixture("kineto/h100_torch_trace"));
    for run in ["balanced", "host_straggler", "gpu_straggler"] {
        add_dir(&fixture("kineto/h100x2").join(run));
    }
    if let Some(shared) = shared() {
        for d in [
            "traces/h100",
            "corpus/tracelens",
            "corpus/tracelens_nv",
            "corpus/hta",
            "corpus/kineto_tb_plugin",
            "corpus/hpctraining",
        ] {
            add_dir(&shared.join(d));
        }
    }
    let mut with_pct = 0;
    for p in &paths {
        let trace = match rocprof_classify::ingest::read_all(
            std::slice::from_ref(p),
            &Default::default(),
        ) {
            Ok(t) => t,
            Err(_) => continue, // not a Kineto trace (rocprof JSON, a bad-input fixture)
        };
        let a = rocprof_classify::analysis::analyze(
            &trace,
            crate::common::rules(),
            &Default::default(),
        );
        for o in &a.ops {
            if let Some(pct) = o.pct_of_peak {
                with_pct += 1;
                assert!(
                    (0.0..=100.0).contains(&pct),
                    "{}: {} at {pct}% of peak",
                    p.display(),
                    o.name
                );
            }
            if let Some(t) = o.tflops {
                assert!(t.is_finite() && t > 0.0, "{}: {}", p.display(), o.name);
            }
        }
    }
    assert!(with_pct >= 5, "only {with_pct} ops with an efficiency");
}

/// The ops table with its efficiency reaches the terminal, Markdown and HTML reports.
#[test]
fn every_report_shows_the_ops_and_their_efficiency() {
    let path = fixture("kineto/h100/eager_manual_attn.json.gz");
    let a = analyze_path(&path);
    let mm = op(&a.ops, "aten::mm");
    let tflops = format!("{:.1}", mm.tflops.unwrap());
    for (flag, heading) in [
        ("--color", "Top ops by GPU time"),
        ("--markdown", "Top ops"),
        ("--html", "Ops, modules and source lines"),
    ] {
        let mut cmd = crate::common::bin();
        cmd.arg(&path);
        if flag == "--color" {
            cmd.args(["--color", "never"]);
        } else {
            cmd.args([flag, "-"]);
        }
        let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
        assert!(out.contains(heading), "{flag}");
        assert!(out.contains(&tflops), "{flag}: {tflops} missing");
        // The per-shape rows: the top shape and its own rate.
        let top = &a.op_shapes[0];
        let rate = format!("{:.1}", top.tflops);
        let row = out
            .lines()
            .find(|l| l.contains(&top.shapes) && l.contains(&rate))
            .unwrap_or_else(|| panic!("{flag}: no row for {} at {rate}", top.shapes));
        assert!(row.contains(&top.calls.to_string()), "{flag}: {row}");
    }
}

/// Without hardware counters, `low_gemm_efficiency` comes from the op view: the launch-bound
/// H100 trace's tiny GEMM ([16, 256] x [256, 256]) runs far under peak, and the finding says why.
#[test]
fn a_tiny_gemm_is_a_low_efficiency_finding_with_its_reasons() {
    let run = crate::common::run_path(&fixture("kineto/h100/eager_launch_bound.json.gz"));
    let a = &run.analysis;
    let f = run
        .findings
        .iter()
        .find(|f| f.id.as_str() == "low_gemm_efficiency")
        .expect("fires");
    assert_eq!(f.evidence.to_json()["kind"], "ops");
    let row = &f.evidence.to_json()["ops"][0];
    assert_eq!(row["op"], "aten::mm");
    assert_eq!(row["shapes"], "[[16,256],[256,256]]");
    let mm = op(&a.ops, "aten::mm");
    assert_eq!(row["pct_of_peak"].as_f64(), mm.pct_of_peak);
    assert!(mm.pct_of_peak.unwrap() < 1.0);
    let why: Vec<&str> = row["why"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    // ceil(16/128) x ceil(256/128) = 2 tiles; M = 16.
    assert!(
        why.iter().any(|w| w.starts_with("2 output tiles")),
        "{why:?}"
    );
    assert!(why.iter().any(|w| w.starts_with("M = 16 rows")), "{why:?}");
    // Its 512-byte rows (K = 256, bf16) hotspot nothing on an H100: no stride reason.
    assert!(!why.iter().any(|w| w.contains("bytes")), "{why:?}");
    assert!(f.evidence.to_json()["stride_hotspot_bytes"].is_null());
    // The well-shaped GEMMs of the manual-attention trace (70% of peak) are not in it.
    let b = crate::common::run_path(&fixture("kineto/h100/eager_manual_attn.json.gz"));
    let f = b
        .findings
        .iter()
        .find(|f| f.id.as_str() == "low_gemm_efficiency")
        .expect("its bmm");
    let ops_json = f.evidence.to_json();
    let ops: Vec<&str> = ops_json["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["aten::bmm"]);
}

/// SDPA, a composite op: its FLOPs (causal: the lower triangle of each 512x512 score matrix,
/// for QKᵀ and PV) over the time of every kernel under it, by hand.
#[test]
fn an_h100_causal_sdpa_checked_by_hand() {
    let path = fixture("kineto/h100/eager_sdpa_fused.json.gz");
    let a = analyze_path(&path);
    let row = op(&a.ops, "aten::scaled_dot_product_attention");
    let calls = calls(&path, "aten::scaled_dot_product_attention");
    assert!(!calls.is_empty());
    let flops: f64 = calls
        .iter()
        .map(|d| {
            let q = &d[0]; // [B, H, L, E], self-attention: S = L, Ev = E
            let (bh, l, e) = (q[0] * q[1], q[2], q[3]);
            2.0 * bh as f64 * (l * (l + 1) / 2) as f64 * (2 * e) as f64
        })
        .sum();
    let tflops = flops / row.total_ns as f64 / 1e3;
    let got = row.tflops.unwrap();
    assert!(
        (got - tflops).abs() <= tflops * 1e-3,
        "{got} vs {tflops} by hand"
    );
    assert!((row.pct_of_peak.unwrap() - tflops * 100.0 / 989.4).abs() < 0.02);
}

/// A `devices.toml` in a `--rules` directory overrides the built-in peaks for a device.
#[test]
fn a_user_device_table_overrides_the_builtin_peaks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("devices.toml"),
        "schema = 1\n[[device]]\nmodel = \"our H100 at a lower clock\"\nnames = [\"H100\"]\nbf16 = 900.0\nsource = \"measured on our cluster\"\n",
    )
    .unwrap();
    let path = fixture("kineto/h100/eager_manual_attn.json.gz");
    let builtin = analyze_path(&path);
    let rules = rocprof_classify::classify::RuleSet::load(&[dir.path().to_path_buf()]).unwrap();
    let trace =
        rocprof_classify::ingest::read_all(std::slice::from_ref(&path), &Default::default())
            .unwrap();
    let user = rocprof_classify::analysis::analyze(&trace, &rules, &Default::default());
    let (a, b) = (op(&builtin.ops, "aten::mm"), op(&user.ops, "aten::mm"));
    assert_eq!(a.tflops, b.tflops, "the same work");
    // A lower peak: a larger share (989.4 / 900).
    let ratio = b.pct_of_peak.unwrap() / a.pct_of_peak.unwrap();
    assert!((ratio - 989.4 / 900.0).abs() < 0.01, "{ratio}");
    // The classification rules are untouched by the extra file.
    assert_eq!(rules.rules.len(), crate::common::rules().rules.len());
}

/// The per-shape view: each GEMM shape's FLOPs and bytes over its kernels' time, by hand.
#[test]
fn op_shapes_give_each_gemm_shape_its_rate() {
    let a = analyze_path(&fixture("kineto/h100/eager_manual_attn.json.gz"));
    let row = a
        .op_shapes
        .iter()
        .find(|r| r.op == "aten::mm" && r.shapes == "[[4096,1024],[1024,4096]]")
        .expect("the up-projection shape");
    let (m, k, n) = (4096.0, 1024.0, 4096.0);
    let tflops = 2.0 * m * k * n * row.calls as f64 / row.ns as f64 / 1e3;
    assert!(
        (row.tflops - tflops).abs() <= tflops * 1e-3,
        "{} vs {tflops}",
        row.tflops
    );
    let gbps = (m * k + k * n + m * n) * 2.0 * row.calls as f64 / row.ns as f64;
    assert!((row.gbps.unwrap() - gbps).abs() <= gbps * 1e-3);
    // The shapes of an op add up to the op.
    let mm = op(&a.ops, "aten::mm");
    let ns: i64 = a
        .op_shapes
        .iter()
        .filter(|r| r.op == "aten::mm")
        .map(|r| r.ns)
        .sum();
    assert_eq!(ns, mm.self_ns);
}

/// Every call of `name` in a raw trace: (`Input Dims`, `Concrete Inputs`, empty without them).
fn calls_with_args(path: &Path, name: &str) -> Vec<(Vec<Vec<i64>>, Vec<String>)> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "cpu_op" && e["name"] == name && e["ph"] == "X")
        .map(|e| {
            (
                serde_json::from_value(e["args"]["Input Dims"].clone()).unwrap(),
                serde_json::from_value(e["args"]["Concrete Inputs"].clone()).unwrap_or_default(),
            )
        })
        .collect()
}

/// Backward: the H100 training trace's causal efficient-attention backward counts 2.5
/// forwards (five matmuls to two), and MI300X ResNet-18's `convolution_backward` one forward
/// per gradient its output mask asks for; both checked by hand, and the backward rate lies
/// near the forward's (same kernels' family, same shapes).
#[test]
fn backward_attention_and_convolution_checked_by_hand() {
    let path = fixture("kineto/h100/train_eager_fp32.json.gz");
    let a = analyze_path(&path);
    let name = "aten::_scaled_dot_product_efficient_attention_backward";
    let row = op(&a.ops, name);
    let flops: f64 = calls_with_args(&path, name)
        .iter()
        .map(|(d, args)| {
            let q = &d[1]; // (grad_out, query, key, value, …): [B, H, L, E]
            let (bh, l, e) = ((q[0] * q[1]) as f64, q[2] as f64, q[3] as f64);
            assert_eq!(args[11], "True", "the trace's attention is causal");
            2.5 * 2.0 * bh * (l * (l + 1.0) / 2.0) * 2.0 * e
        })
        .sum();
    assert!(flops > 0.0);
    let by_hand = flops / row.total_ns as f64 / 1e3;
    assert!(
        (row.tflops.unwrap() - by_hand).abs() <= by_hand * 1e-3,
        "{row:?} vs {by_hand}"
    );
    with_shared!(shared => {
        let path = shared.join("corpus/tracelens/train_resnet18.json.gz");
        let a = analyze_path(&path);
        let row = op(&a.ops, "aten::convolution_backward");
        let flops: f64 = calls_with_args(&path, "aten::convolution_backward")
            .iter()
            .map(|(d, args)| {
                let (dy, w) = (&d[0], &d[2]);
                // output_mask = [grad_input, grad_weight, grad_bias]
                let grads = args[10].split(',').take(2).filter(|m| m.contains("True")).count();
                let forward = 2.0 * (dy[0] * w[0]) as f64
                    * dy[2..].iter().product::<i64>() as f64
                    * w[1..].iter().product::<i64>() as f64;
                grads as f64 * forward
            })
            .sum();
        let by_hand = flops / row.total_ns as f64 / 1e3;
        assert!((row.tflops.unwrap() - by_hand).abs() <= by_hand * 1e-3, "{by_hand}");
        let forward = op(&a.ops, "aten::convolution").tflops.unwrap();
        let ratio = row.tflops.unwrap() / forward;
        assert!((0.5..2.0).contains(&ratio), "backward {ratio}x the forward's rate");
        assert!(row.pct_of_peak.unwrap() < 100.0);
    });
}

/// On MI300X, a slow GEMM whose rows are a multiple of 512 bytes gets that reason (seeds/003)
/// and the stride-padding recommendation; xDiT Flux's mm [512, 4096] x [4096, 4096] in bf16
/// has rows of 8192 bytes (its `Input Strides` say so). A slow GEMM on another device keeps the recommendation away.
#[test]
fn mi300x_stride_hotspot_reason_and_padding() {
    with_shared!(shared => {
        let path = shared.join("corpus/tracelens/profile_trace_rank_0.json.gz");
        let feed = crate::common::feed_of(&path, &[]);
        let f = feed["findings"].as_array().unwrap().iter()
            .find(|f| f["id"] == "low_gemm_efficiency").expect("fires");
        assert_eq!(f["evidence"]["stride_hotspot_bytes"], 512);
        let row = f["evidence"]["ops"].as_array().unwrap().iter()
            .find(|o| o["shapes"] == "[[512,4096],[4096,4096]]").expect("the mm");
        let why = row["why"].to_string();
        // The trace has `Input Strides`: both operands' rows are 4096 bf16 = 8192 bytes apart.
        assert!(why.contains("A's rows are 8192 bytes apart (leading stride 4096), a multiple of 512 bytes"), "{why}");
        assert!(why.contains("B's rows are 8192 bytes apart"), "{why}");
        let recs: Vec<&str> = feed["recommendations"].as_array().unwrap().iter()
            .map(|r| r["id"].as_str().unwrap()).collect();
        assert!(recs.contains(&"arch.gemm-stride-padding"), "{recs:?}");
        // Tuning names exactly that shape, for TunableOp and for aiter on AMD.
        let tuning = feed["recommendations"].as_array().unwrap().iter()
            .find(|r| r["id"] == "tuning.gemm-shapes").expect("shape tuning");
        assert_eq!(tuning["level"], 4);
        let actions: Vec<&str> = tuning["actions"].as_array().unwrap().iter()
            .map(|a| a["text"].as_str().unwrap()).collect();
        assert!(actions[0].starts_with("PYTORCH_TUNABLEOP_ENABLED=1") && actions[0].contains("M=512 N=4096 K=4096 bf16"), "{actions:?}");
        assert!(actions.iter().any(|a| a.starts_with("AITER_TUNE_GEMM=1") && a.contains("M=512 N=4096 K=4096")), "{actions:?}");
        assert_eq!(actions.iter().filter(|a| a.contains("PYTORCH_TUNABLEOP_TUNING=1")).count(), 1, "the generic one is dropped");
    });
    let feed = crate::common::feed_of(&fixture("kineto/h100/eager_launch_bound.json.gz"), &[]);
    let recs: Vec<&str> = feed["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(!recs.contains(&"arch.gemm-stride-padding"), "{recs:?}");
}

/// `--no-attribution` drops the op, module and source views and the op-aware buckets: the
/// buckets are the kernel names' (`bucket_view: kernels`), and the GPU total is unchanged.
#[test]
fn no_attribution_keeps_the_kernel_name_view() {
    let path = fixture("kineto/h100/train_eager_fp32.json.gz");
    let run = |extra: &[&str]| {
        let out = crate::common::bin()
            .arg(&path)
            .args(["--top", "100000", "--json", "-"])
            .args(extra)
            .assert()
            .success();
        crate::common::assert_valid_feed(&out.get_output().stdout)
    };
    let (on, off) = (run(&[]), run(&["--no-attribution"]));
    assert_eq!(on["summary"]["bucket_view"], "ops");
    assert_eq!(off["summary"]["bucket_view"], "kernels");
    assert!(!on["ops"].as_array().unwrap().is_empty());
    for view in ["ops", "modules", "sources", "op_shapes"] {
        assert!(off[view].as_array().is_none_or(|v| v.is_empty()), "{view}");
    }
    assert_eq!(on["summary"]["kernel_ns"], off["summary"]["kernel_ns"]);
    // Without ops each kernel keeps its name's bucket: the buckets add up the kernel table's.
    let mut by_kernel = std::collections::BTreeMap::<String, i64>::new();
    for k in off["top_kernels"].as_array().unwrap() {
        *by_kernel
            .entry(k["bucket"].as_str().unwrap().into())
            .or_default() += k["total_ns"].as_i64().unwrap();
    }
    for b in off["buckets"].as_array().unwrap() {
        let ns = b["kernel_ns"].as_i64().unwrap();
        assert_eq!(
            by_kernel
                .get(b["bucket"].as_str().unwrap())
                .copied()
                .unwrap_or(0),
            ns,
            "{b}"
        );
    }
    // With ops, the kernels under SDPA's backward join attention.
    let attention = |feed: &serde_json::Value| {
        feed["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["bucket"] == "attention")
            .unwrap()["pct"]
            .as_f64()
            .unwrap()
    };
    assert!(
        attention(&on) >= attention(&off),
        "{} vs {}",
        attention(&on),
        attention(&off)
    );
}

/// fp32 GEMMs under the peak say so among their reasons: the H100 trace that runs its linears
/// in fp32 (TF32 allowed) reaches ~21% of the TF32 peak.
#[test]
fn an_fp32_gemm_is_told_to_use_bf16() {
    let feed = crate::common::feed_of(&fixture("kineto/h100/eager_fp32_tf32.json.gz"), &[]);
    let f = feed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "low_gemm_efficiency")
        .expect("fires");
    let row = &f["evidence"]["ops"][0];
    assert_eq!(row["dtype"], "fp32");
    assert!(
        row["why"]
            .to_string()
            .contains("fp32 operands: bf16 or fp16 doubles the matrix peak"),
        "{row}"
    );
    // NVIDIA: TunableOp, no aiter.
    let tuning = feed["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "tuning.gemm-shapes")
        .expect("shape tuning");
    assert!(!tuning["actions"].to_string().contains("AITER"));
}

/// `Input Strides` tell padded rows apart (seeds/003's fix for MI300's 512-byte hotspot): a real
/// H200 trace of the same [16, 4096] x [4096, 4096] bf16 GEMM as `aten::mm` on contiguous rows
/// (8192 bytes apart) and as `aten::addmm` on views of tensors allocated K + 128 wide (8448
/// bytes). With the device given MI300's hotspot by a user `devices.toml`, only the unpadded
/// GEMM gets the reason; without strides in the trace, the estimate from K flags both.
#[test]
fn padded_rows_are_told_apart_by_input_strides() {
    let rules = tempfile::tempdir().unwrap();
    std::fs::write(
        rules.path().join("devices.toml"),
        "schema = 1\n[[device]]\nmodel = \"H200 with MI300's hotspot\"\nnames = [\"H200\"]\nbf16 = 989.4\nstride_hotspot_bytes = 512\nsource = \"test\"\n",
    )
    .unwrap();
    let why_of = |path: &Path| -> std::collections::BTreeMap<String, String> {
        let out = crate::common::bin()
            .arg(path)
            .arg("--rules")
            .arg(rules.path())
            .args(["--json", "-"])
            .assert()
            .success();
        let feed: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        let f = feed["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "low_gemm_efficiency")
            .expect("fires")
            .clone();
        f["evidence"]["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["op"].as_str().unwrap().to_string(), o["why"].to_string()))
            .collect()
    };
    let path = fixture("kineto/h200/padded_strides.json.gz");
    let why = why_of(&path);
    assert!(
        why["aten::mm"].contains("A's rows are 8192 bytes apart (leading stride 4096)"),
        "{why:?}"
    );
    assert!(
        why["aten::mm"].contains("B's rows are 8192 bytes apart"),
        "{why:?}"
    );
    assert!(
        !why["aten::addmm"].contains("bytes apart"),
        "padded: {why:?}"
    );
    // The same trace without `Input Strides`: K = 4096 bf16 flags both, as an estimate.
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let stripped = dir.path().join("no_strides.json");
    std::fs::write(
        &stripped,
        text.replace("\"Input Strides\"", "\"Input Strides (dropped)\""),
    )
    .unwrap();
    let why = why_of(&stripped);
    for op in ["aten::mm", "aten::addmm"] {
        assert!(
            why[op].contains("K = 4096: rows of 8192 bytes") && why[op].contains("estimated"),
            "{why:?}"
        );
    }
}
