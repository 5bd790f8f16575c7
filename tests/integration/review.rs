//! Pull-request review and CI outputs: Markdown, diff, gates.

use crate::common::{assert_valid_feed, bin, fixture};
use crate::with_shared;
use predicates::prelude::*;

const SDPA: &str = "kineto/h100/eager_sdpa_fused.json.gz";
const CLEAN: &str = "kineto/h100/compiled_clean.json.gz";

fn diff_json(base: &std::path::Path, new: &std::path::Path) -> serde_json::Value {
    let out = bin()
        .arg("diff")
        .arg(base)
        .arg(new)
        .args(["--json", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc = assert_valid_feed(&out);
    doc["diff"].clone()
}

#[test]
fn markdown_summary_fits_a_pr_comment() {
    let out = bin()
        .args(["--markdown", "-"])
        .arg(fixture("kineto/h100/eager_manual_attn.json.gz"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8(out).unwrap();
    assert!(md.len() < 65_000, "{} characters", md.len());
    assert!(md.starts_with("## rocprof-classify: "));
    assert!(
        md.contains("**step ")
            && md.contains("| bucket | GPU time |")
            && md.contains("### Top recommendations")
    );
    assert!(md.contains("[L2] Compile the model"), "{md}");
    assert!(md.contains("| high | `manual_attention` |"));
    assert!(!md.contains("\x1b["), "no terminal colors in Markdown");
    // Every table row has the same number of cells as its header.
    for block in md.split("\n\n").filter(|b| b.starts_with('|')) {
        let cols: Vec<usize> = block
            .lines()
            .map(|l| l.matches('|').count() - l.matches("\\|").count())
            .collect();
        assert!(cols.windows(2).all(|w| w[0] == w[1]), "{block}");
    }
}

#[test]
fn two_stdout_reports_are_an_error() {
    bin()
        .args(["--markdown", "-", "--json", "-"])
        .arg(fixture(SDPA))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("only one report"));
}

#[test]
fn eager_to_compiled_diff() {
    let d = diff_json(&fixture(SDPA), &fixture(CLEAN));
    assert!(d["step"]["delta_ns"].as_i64().unwrap() < 0);
    // ATen elementwise kernels are replaced by Triton ones.
    let lib = |name: &str| {
        d["libraries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == name)
            .cloned()
            .unwrap()
    };
    assert!(lib("elementwise/ATen")["delta_ns"].as_i64().unwrap() < 0);
    assert!(
        lib("elementwise/Triton/Inductor")["base_ns"] == 0
            && lib("elementwise/Triton/Inductor")["new_ns"]
                .as_i64()
                .unwrap()
                > 0
    );
    assert!(d["kernels_appeared"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["name"].as_str().unwrap().starts_with("triton_")));
    assert!(d["kernels_vanished"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["name"].as_str().unwrap().contains("at::native")));
    let l2 = d["ladder"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["level"] == 2)
        .unwrap();
    assert_eq!(
        (l2["base"].as_str(), l2["new"].as_str()),
        (Some("todo"), Some("done"))
    );
}

#[test]
fn regression_gate_trips_only_when_it_gets_slower() {
    bin()
        .arg("diff")
        .arg(fixture(SDPA))
        .arg(fixture(CLEAN))
        .args(["--fail-on-regression", "5"])
        .assert()
        .code(0);
    bin()
        .arg("diff")
        .arg(fixture(CLEAN))
        .arg(fixture(SDPA))
        .args(["--fail-on-regression", "5"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "gate tripped: --fail-on-regression 5: step time +",
        ));
}

#[test]
fn eager_to_cuda_graphs_diff() {
    with_shared!(shared => {
        let base = shared.join("traces/h100/eager_launch_bound.json.gz");
        let new = shared.join("traces/h100/compiled_cudagraphs.json.gz");
        let d = diff_json(&base, &new);
        assert!(d["step"]["delta_pct"].as_f64().unwrap() < -80.0, "{}", d["step"]);
        let launch = d["time_partition"].as_array().unwrap().iter().find(|r| r["name"] == "launch_overhead").unwrap();
        assert!(launch["delta_pct"].as_f64().unwrap() <= -90.0, "{launch}");
        assert_eq!(d["new"]["cudagraphs"], true);
        assert!(d["new"]["graph_replayed_kernels_per_step"].as_f64().unwrap() > 50.0);
        let out = bin().arg("diff").arg(&base).arg(&new).args(["--markdown", "-"]).assert().success().get_output().stdout.clone();
        let md = String::from_utf8(out).unwrap();
        assert!(md.contains("graph replay") && md.contains("launch_overhead"), "{md}");
    });
}

#[test]
fn single_trace_gates() {
    let f = fixture("kineto/h100/compiled_graph_breaks.json.gz");
    bin()
        .arg(&f)
        .args(["--fail-on", "graph_breaks"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "gate tripped: --fail-on graph_breaks: graph_breaks (high)",
        ));
    bin()
        .arg(&f)
        .args(["--fail-on", "high", "-q", "--json", "-"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("\"schema_version\": 4"));
    bin()
        .arg(fixture(CLEAN))
        .args(["--fail-on", "high"])
        .assert()
        .code(0);
    bin()
        .arg(&f)
        .args(["--fail-on", "recompiles"])
        .assert()
        .code(0);
    bin()
        .arg(&f)
        .args(["--fail-on", "nonsense"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a severity"));
    bin()
        .arg(&f)
        .args(["--max-unclassified-pct", "0"])
        .assert()
        .code(0);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("less.toml"), "schema = 1\n[[rule]]\nid = \"gemm.nvjet\"\nbucket = \"gemm\"\nfamily = \"gemm\"\npattern = '^nvjet_never'\npriority = 1\nmatch = [\"nvjet_never\"]\n").unwrap();
    bin()
        .arg("--rules")
        .arg(dir.path())
        .arg(&f)
        .args(["--max-unclassified-pct", "2"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--max-unclassified-pct 2"));
}

#[test]
fn perfetto_export_annotates_every_gpu_activity() {
    let input = fixture("kineto/h100/compiled_graph_breaks.json.gz");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("annotated.json");
    bin()
        .arg(&input)
        .arg("--perfetto")
        .arg(&out)
        .args(["--json", "-"])
        .assert()
        .success();
    let annotated: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).unwrap()).expect("valid JSON");
    let mut raw = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&input).unwrap()),
        &mut raw,
    )
    .unwrap();
    let original: serde_json::Value = serde_json::from_str(&raw).unwrap();
    let (events, before) = (
        annotated["traceEvents"].as_array().unwrap(),
        original["traceEvents"].as_array().unwrap(),
    );
    let instants: Vec<_> = events
        .iter()
        .filter(|e| e["cat"] == "rocprof-classify")
        .collect();
    assert!(instants
        .iter()
        .any(|e| e["name"].as_str().unwrap().starts_with("graph_breaks")));
    assert!(instants
        .iter()
        .all(|e| e["ph"] == "i" && e["ts"].is_number()));
    assert_eq!(events.len(), before.len() + instants.len());
    // Every GPU activity carries its class; nothing else changed.
    for (a, b) in events.iter().zip(before) {
        let gpu = matches!(
            b["cat"].as_str(),
            Some("kernel" | "gpu_memcpy" | "gpu_memset")
        );
        if gpu && b["ph"] == "X" {
            let tag = &a["args"]["rocprof-classify"];
            assert!(
                tag["bucket"].is_string() && tag["findings"].is_array(),
                "{a}"
            );
            assert_eq!(
                (&a["name"], &a["ts"], &a["dur"]),
                (&b["name"], &b["ts"], &b["dur"])
            );
        } else {
            assert_eq!(a, b);
        }
    }
    assert_eq!(annotated["deviceProperties"], original["deviceProperties"]);
    // Two files (or a rocprof output, or stdin) cannot be copied: the trace is rebuilt.
    bin()
        .arg(&input)
        .arg(&input)
        .arg("--perfetto")
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("a rebuild of the input"));
}

#[test]
fn an_mi300x_trace_diffs_against_an_h100_trace_of_the_same_model() {
    with_shared!(shared => {
        let amd = shared.join("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
        let nv = shared.join("corpus/tracelens_nv/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
        let d = diff_json(&amd, &nv);
        assert_eq!((d["base"]["vendor"].as_str(), d["new"]["vendor"].as_str()), (Some("amd"), Some("nvidia")));
        // Kernel names differ across vendors, buckets do not: both sides have GEMM and attention time.
        for bucket in ["gemm", "attention", "elementwise"] {
            let row = d["buckets"].as_array().unwrap().iter().find(|b| b["name"] == bucket).unwrap();
            assert!(row["base_ns"].as_i64().unwrap() > 0 && row["new_ns"].as_i64().unwrap() > 0, "{row}");
        }
        let libs: Vec<&str> = d["libraries"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap()).collect();
        assert!(libs.contains(&"gemm/hipBLASLt/Tensile") && libs.iter().any(|l| l.starts_with("gemm/cu") || l.starts_with("gemm/CUTLASS")), "{libs:?}");
    });
}
