//! rocprof family inputs (issue 6): rocprof v1 CSV and JSON, rocprofv2 timestamps, rocprofv3 CSV
//! (files and a whole output directory) and JSON, rocpd SQLite.

use crate::common::{analyze_path, bin, rules};
use crate::with_shared;
use predicates::prelude::*;
use rocprof_classify::classify::Bucket;
use rocprof_classify::ingest::{read_all, ReadOptions};

/// Every rocprof trace file of the corpus: (path, format, dispatches it must give, why when 0).
const TRACES: &[(&str, &str, usize)] = &[
    (
        "corpus/tracelens_rocprof/908_results.json.gz",
        "rocprofv3-json",
        43_915,
    ),
    ("corpus/rocpd/28_results.db", "rocpd", 151),
    ("corpus/rocpd/15_results.db", "rocpd", 301),
    ("corpus/rocprof1_batched_gemm/results.json", "rocprof-v1", 4),
    (
        "corpus/rocprof1_hip_programming/results.json",
        "rocprof-v1",
        4,
    ),
    ("corpus/rocprof1_kokkos/results.json", "rocprof-v1", 42),
    (
        "corpus/rocprof1_hip_programming/output_vec_add_gpu.csv",
        "rocprof-v1",
        1,
    ),
    (
        "corpus/rocprofv3_sdk_docs/kernel_trace.csv",
        "rocprofv3-csv",
        7,
    ),
    (
        "corpus/rocprofv3_sdk_docs_2025/kernel_trace.csv",
        "rocprofv3-csv",
        9,
    ),
    (
        "corpus/rocprofv3_sdk_docs_2025/kernel_trace_truncated.csv",
        "rocprofv3-csv",
        4,
    ),
    (
        "corpus/rocprofv3_sdk_docs/memory_copy_trace.csv",
        "rocprofv3-csv",
        2,
    ),
    (
        "corpus/rocprofv3_sdk_docs_2025/memory_copy_trace.csv",
        "rocprofv3-csv",
        4,
    ),
    (
        "corpus/rocprof_compute/vcopy/MI100/timestamps.csv",
        "rocprofv2-csv",
        3,
    ),
    (
        "corpus/rocprof_compute/vcopy/MI200/timestamps.csv",
        "rocprofv2-csv",
        3,
    ),
    (
        "corpus/rocprof_compute/vcopy/MI300X_A1/timestamps.csv",
        "rocprofv2-csv",
        3,
    ),
    (
        "corpus/rocprof_compute/vcopy/MI300A_A1/timestamps.csv",
        "rocprofv2-csv",
        3,
    ),
    (
        "corpus/rocprof_compute/dispatch_0_1/MI300X_A1/timestamps.csv",
        "rocprofv2-csv",
        3,
    ),
    (
        "corpus/rocprof_compute/ipblocks_SQ/MI300X_A1/timestamps.csv",
        "rocprofv2-csv",
        3,
    ),
    // API traces alone: host calls, no GPU activity (the dispatches are in kernel_trace.csv).
    (
        "corpus/rocprofv3_sdk_docs/hip_runtime_trace.csv",
        "rocprofv3-csv",
        0,
    ),
    (
        "corpus/rocprofv3_sdk_docs_2025/hip_runtime_trace.csv",
        "rocprofv3-csv",
        0,
    ),
];

#[test]
fn every_rocprof_trace_loads() {
    with_shared!(shared => {
        println!("{:<66} {:<15} {:>10} {:>13}", "file", "format", "dispatches", "unclassified");
        let mut problems = Vec::new();
        for &(file, format, expected) in TRACES {
            let path = shared.join(file);
            if !path.exists() {
                problems.push(format!("{file}: missing from the corpus"));
                continue;
            }
            let run = crate::common::run_path(&path);
            crate::common::assert_valid_feed(&rocprof_classify::report::json::render(&run));
            let a = &run.analysis;
            println!("{file:<66} {:<15} {:>10} {:>12.2}%", a.inputs[0].format.as_str(), a.activities, a.summary.unclassified_pct);
            if a.inputs[0].format.as_str() != format {
                problems.push(format!("{file}: read as {}, expected {format}", a.inputs[0].format.as_str()));
            }
            if a.activities as usize != expected {
                problems.push(format!("{file}: {} dispatches, expected {expected}", a.activities));
            }
            if a.vendor() != rocprof_classify::model::Vendor::Amd {
                problems.push(format!("{file}: vendor {:?}", a.vendor()));
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    });
}

#[test]
fn rocpd_batched_gemms_are_gemm_and_fills_memory() {
    with_shared!(shared => {
        for (db, gemms, fills) in [("corpus/rocpd/28_results.db", 150, 1), ("corpus/rocpd/15_results.db", 150, 151)] {
            let a = analyze_path(&shared.join(db));
            assert_eq!(a.bucket(Bucket::Gemm).launches, gemms, "{db}");
            assert_eq!(a.bucket(Bucket::Memory).launches, fills, "{db}");
            assert_eq!(a.summary.unclassified_pct, 0.0, "{db}");
        }
        // The custom kernel of the second database, named by the generic GEMM rule.
        let c = rules().classify("void batched_matrix_multiplication_matrix_core_128x128x16<128u, 128u, 16u>(unsigned int)");
        assert_eq!(c.bucket, Bucket::Gemm);
    });
}

#[test]
fn rocprofv3_json_joins_kernel_names_and_agents() {
    with_shared!(shared => {
        let a = analyze_path(&shared.join("corpus/tracelens_rocprof/908_results.json.gz"));
        assert!(a.summary.unclassified_pct < 2.0, "{}", a.summary.unclassified_pct);
        assert!(a.inputs[0].devices.iter().all(|d| d.name.contains("MI350")), "{:?}", a.inputs[0].devices);
        assert!(a.bucket(Bucket::Communication).launches > 0 && a.bucket(Bucket::Gemm).launches > 0);
        // No API records: idle time cannot be attributed to the host.
        assert!(a.partition_ns(rocprof_classify::analysis::Category::IdleUnattributed) > 0 && a.partition_ns(rocprof_classify::analysis::Category::LaunchOverhead) == 0);
    });
}

#[test]
fn a_rocprofv3_directory_is_one_input_with_its_api_calls() {
    with_shared!(shared => {
        let dir = shared.join("corpus/rocprofv3_sdk_docs_2025");
        let trace = read_all(&[dir], &ReadOptions::default()).unwrap();
        assert_eq!(trace.inputs.len(), 1);
        assert_eq!(trace.inputs[0].format.as_str(), "rocprofv3-csv");
        let kinds: std::collections::BTreeSet<_> = trace.activities.kind.iter().copied().collect();
        assert_eq!(kinds.len(), 2, "kernels and memory copies");
        assert!(!trace.host.is_empty(), "HIP API calls were read");
    });
}

#[test]
fn rocprof_v1_json_kernels_and_copies() {
    with_shared!(shared => {
        let a = analyze_path(&shared.join("corpus/rocprof1_batched_gemm/results.json"));
        assert_eq!(a.bucket(Bucket::Gemm).launches, 1);
        assert_eq!(a.bucket(Bucket::Memory).launches, 3);
        assert!(a.time_partition.iter().any(|r| r.category == rocprof_classify::analysis::Category::HostIdle), "HIP API calls give the host side");
    });
}

#[test]
fn csv_errors_name_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let header = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n";
    let row = |i: u64| {
        format!(
            "\"KERNEL_DISPATCH\",\"Agent 2\",1,3,\"Cijk_Alik_Bljk_HHS_BH_MT64x64x32\",{i},{},{}\n",
            1000 + i * 100,
            1050 + i * 100
        )
    };
    let good: String = std::iter::once(header.to_string())
        .chain((1..=5).map(row))
        .collect();

    let bad_time = dir.path().join("bad_time.csv");
    std::fs::write(&bad_time, good.replacen("1300", "soon", 1)).unwrap();
    // A row whose time does not read is skipped with a warning naming its line and column;
    // --strict refuses the file.
    bin().arg(&bad_time).assert().code(0).stderr(
        predicate::str::contains("skipped 1 rows whose times do not read")
            .and(predicate::str::contains("line 4"))
            .and(predicate::str::contains("start_timestamp")),
    );
    bin()
        .arg(&bad_time)
        .arg("--strict")
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("line 4").and(predicate::str::contains("start_timestamp")),
        );

    let missing = dir.path().join("missing.csv");
    std::fs::write(&missing, good.replace("\"End_Timestamp\"", "\"Other\"")).unwrap();
    // Without End_Timestamp the header is still a kernel trace: the error names the column.
    bin()
        .arg(&missing)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 1").and(predicate::str::contains("end_timestamp")));

    // Cut mid-row: the complete rows are analyzed, with a warning; --strict refuses.
    let cut = dir.path().join("cut.csv");
    std::fs::write(&cut, &good[..good.len() - 12]).unwrap();
    let out = bin()
        .arg(&cut)
        .args(["--json", "-"])
        .assert()
        .success()
        .get_output()
        .clone();
    let feed = crate::common::assert_valid_feed(&out.stdout);
    assert_eq!(feed["inputs"][0]["truncated"], true);
    assert_eq!(feed["buckets"][0]["launches"], 4);
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated"));
    bin()
        .arg(&cut)
        .arg("--strict")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("truncated at line"));
}

#[test]
fn aggregate_statistics_load_with_exact_totals() {
    with_shared!(shared => {
        // Old rocprof writes kernel names with commas unquoted: the numbers are the last fields.
        let a = analyze_path(&shared.join("corpus/rocprof1_kokkos/results.stats.csv"));
        assert_eq!(a.activities, 12);
        // Every kernel row keeps its full comma-laden name ("Unknown command type" is rocprof's own row).
        assert!(
            a.top_kernels.iter().filter(|k| k.name != "Unknown command type").all(|k| k.name.contains("Kokkos")),
            "names intact"
        );
        assert!(a.top_kernels.iter().any(|k| k.name.contains(", ")), "a comma-laden name survived whole");
        assert!(a.inputs[0].warnings.iter().any(|w| w.contains("timeline is synthetic")));
        // API statistics: host calls, no GPU activity (said, not silent).
        let api = analyze_path(&shared.join("corpus/rocprof1_kokkos/results.hip_stats.csv"));
        assert_eq!(api.activities, 0);
        assert!(api.inputs[0].warnings.iter().any(|w| w.contains("API call statistics")));
        let v3 = analyze_path(&shared.join("corpus/rocprofv3_sdk_docs/hip_api_stats.csv"));
        assert_eq!(v3.inputs[0].format.as_str(), "rocprofv3-csv");
    });
}

#[test]
fn a_trace_and_its_statistics_agree() {
    with_shared!(shared => {
        // rocprof v1 wrote both results.json (the trace) and results.stats.csv / results.copy_stats.csv.
        for dir in ["rocprof1_batched_gemm", "rocprof1_hip_programming", "rocprof1_kokkos"] {
            let d = shared.join("corpus").join(dir);
            let trace = analyze_path(&d.join("results.json"));
            for (stats, bucket) in [("results.stats.csv", None), ("results.copy_stats.csv", Some(Bucket::Memory))] {
                let s = analyze_path(&d.join(stats));
                let theirs = s.summary.kernel_ns as f64;
                let ours = match bucket {
                    Some(b) => trace.bucket(b).kernel_ns as f64,
                    None => (trace.summary.kernel_ns - trace.bucket(Bucket::Memory).kernel_ns) as f64,
                };
                assert!((ours - theirs).abs() <= 0.01 * theirs.max(1.0), "{dir}/{stats}: trace {ours} ns vs statistics {theirs} ns");
            }
        }
    });
}

#[test]
fn every_rocprof_compute_workload_loads() {
    with_shared!(shared => {
        let workloads = [
            ("corpus/rocprof_compute/dispatch_0_1/MI300X_A1", 3, "MI300X"),
            ("corpus/rocprof_compute/ipblocks_SQ/MI300X_A1", 3, "MI300X"),
            ("corpus/rocprof_compute/vcopy/MI100", 3, "MI100"),
            ("corpus/rocprof_compute/vcopy/MI200", 3, "MI200"),
            ("corpus/rocprof_compute/vcopy/MI300A_A1", 3, "MI300A"),
            ("corpus/rocprof_compute/vcopy/MI300X_A1", 3, "MI300X"),
            ("corpus/rocprof_compute_2025/vcopy/MI300X_A1_rocpd", 3, "MI300X"),
            ("corpus/rocprof_compute_2025/vcopy/MI350", 3, "MI350"),
            ("corpus/rocprof_compute_v3_bmm1/MI300X_A1", 301, "MI300X"),
        ];
        for (dir, dispatches, gpu) in workloads {
            let a = analyze_path(&shared.join(dir));
            assert_eq!(a.inputs.len(), 1, "{dir}: one input");
            assert_eq!(a.inputs[0].format.as_str(), "rocprof-compute", "{dir}");
            assert_eq!(a.activities, dispatches, "{dir}");
            assert!(a.inputs[0].devices[0].name.contains(gpu), "{dir}: {:?}", a.inputs[0].devices);
            assert_eq!(a.summary.unclassified_pct, 0.0, "{dir}");
        }
    });
}

#[test]
fn one_run_in_two_files_agrees() {
    with_shared!(shared => {
        // rocprof-compute 3.x writes the dispatches (pmc_perf.csv) and their summary (pmc_kernel_top.csv).
        let dir = shared.join("corpus/rocprof_compute_v3_bmm1/MI300X_A1");
        let a = analyze_path(&dir);
        let text = std::fs::read_to_string(dir.join("pmc_kernel_top.csv")).unwrap();
        let mut rdr = csv::ReaderBuilder::new().from_reader(text.as_bytes());
        let total: f64 = rdr.records().map(|r| r.unwrap()[2].parse::<f64>().unwrap()).sum();
        let ours = a.summary.kernel_ns as f64;
        assert!((ours - total).abs() / total < 0.01, "pmc_perf {ours} ns vs pmc_kernel_top {total} ns");
        let gemm = a.bucket(Bucket::Gemm);
        assert_eq!(gemm.launches, 150, "the batched matrix-core GEMMs");
    });
}

/// A CSV's first data rows as name → value maps (test-side reading of rocprof-compute's files).
fn csv_rows(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .unwrap();
    let headers: Vec<String> = rdr.headers().unwrap().iter().map(str::to_string).collect();
    rdr.records()
        .map(|r| {
            headers
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

#[test]
fn counter_metrics_agree_with_rocprof_computes_own_summary() {
    with_shared!(shared => {
        let dir = shared.join("corpus/rocprof_compute_v3_bmm1/MI300X_A1");
        let a = analyze_path(&dir);
        // rocprof-compute's own per-kernel summary of the same counter passes.
        let top = csv_rows(&dir.join("pmc_kernel_top.csv"));
        assert_eq!(a.kernel_counters.len(), top.len());
        for row in &top {
            let k = a.kernel_counters.iter().find(|k| k.name == row["Kernel_Name"]).unwrap();
            assert_eq!(k.dispatches.to_string(), row["Count"]);
            let theirs: f64 = row["Sum(ns)"].parse().unwrap();
            assert!((k.total_ns as f64 - theirs).abs() <= 1e-4 * theirs, "{}: {} vs {theirs}", k.name, k.total_ns);
        }
        // Fractions of peak are against roofline.csv's measured peaks of device 0.
        let peaks = &csv_rows(&dir.join("roofline.csv"))[0];
        let bf16: f64 = peaks["MFMABF16Flops"].parse().unwrap();
        let hbm: f64 = peaks["HBMBw"].parse().unwrap();
        let gemm = &a.kernel_counters[0];
        assert!(gemm.name.contains("batched_matrix_multiplication_matrix_core"));
        assert_eq!(gemm.bucket, Bucket::Gemm);
        assert_eq!(gemm.pipe.as_deref(), Some("mfma_bf16"), "a bf16 kernel on matrix cores");
        assert_eq!(gemm.matrix_pct, Some(100.0));
        let (tflops, pct) = (gemm.tflops.unwrap(), gemm.pct_of_peak.unwrap());
        assert!((pct - 100.0 * tflops * 1e3 / bf16).abs() < 1e-6);
        assert!((gemm.hbm_pct_of_peak.unwrap() - 100.0 * gemm.hbm_gbps.unwrap() / hbm).abs() < 1e-6);
        // Below the ridge point (peak FLOP/s over peak bandwidth) and near the bandwidth roof: memory bound.
        assert!(gemm.arithmetic_intensity.unwrap() < bf16 / hbm);
        assert_eq!(gemm.bound.map(|b| b.as_str()), Some("memory"));
        // 48 VGPRs, 2 KiB LDS, 256-thread workgroups: the full 8 waves per SIMD.
        let occ = gemm.occupancy.as_ref().unwrap();
        assert_eq!((occ.waves_per_simd, occ.limiter.as_str(), occ.vgprs), (8.0, "none", 48));
        // The fill kernel moves bytes and does no arithmetic.
        let fill = &a.kernel_counters[1];
        assert_eq!((fill.bucket, fill.pipe.as_deref()), (Bucket::Memory, None));
        assert!(fill.hbm_gbps.unwrap() > 1000.0);
    });
}

#[test]
fn counter_findings_and_their_recommendations() {
    with_shared!(shared => {
        let dir = shared.join("corpus/rocprof_compute_v3_bmm1/MI300X_A1");
        let out = bin().arg(&dir).args(["--json", "-"]).assert().success().get_output().clone();
        let feed = crate::common::assert_valid_feed(&out.stdout);
        let ids: Vec<&str> = feed["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap()).collect();
        assert!(ids.contains(&"memory_bound_gemm"), "{ids:?}");
        // It runs on MFMA at full occupancy: those findings stay silent.
        for quiet in ["no_matrix_cores", "low_occupancy"] {
            assert!(!ids.contains(&quiet), "{quiet} fired: {ids:?}");
        }
        let f = feed["findings"].as_array().unwrap().iter().find(|f| f["id"] == "memory_bound_gemm").unwrap();
        assert!(f["evidence"]["kernels"][0]["kernel"].as_str().unwrap().contains("batched_matrix"));
        let recs: Vec<(&str, i64)> = feed["recommendations"].as_array().unwrap().iter()
            .map(|r| (r["id"].as_str().unwrap(), r["level"].as_i64().unwrap())).collect();
        assert!(recs.contains(&("kernel.gemm-tiles", 4)), "{recs:?}");
        // Counters carry no shapes: nothing shows a 512-byte stride, so no padding advice.
        assert!(!recs.iter().any(|(id, _)| *id == "arch.gemm-stride-padding"), "{recs:?}");
        // A rocprof profile cannot show torch.compile: level 2 is unknown, so nothing waits on it.
        assert_eq!(feed["ladder"][1]["status"], "unknown");
        assert!(feed["recommendations"].as_array().unwrap().iter().all(|r| r["blocked_by_level"].is_null()));
        assert_eq!(feed["inputs"][0]["hardware"]["peak_source"], "roofline");
        // The terminal report prints the bound label and fractions of peak per kernel.
        let text = bin().arg(&dir).assert().success().get_output().stdout.clone();
        let text = String::from_utf8(text).unwrap();
        let line = text.lines().find(|l| l.contains("batched_matrix_multiplication")  && l.contains("mfma_bf16")).unwrap();
        assert!(line.contains("memory") && line.contains("8.0/8"), "{line}");
    });
}

#[test]
fn every_counter_workload_gives_metrics_or_says_why_not() {
    with_shared!(shared => {
        let mut seen = 0;
        for dir in ["rocprof_compute/dispatch_0_1/MI300X_A1", "rocprof_compute/ipblocks_SQ/MI300X_A1",
                    "rocprof_compute/vcopy/MI100", "rocprof_compute/vcopy/MI200", "rocprof_compute/vcopy/MI300A_A1",
                    "rocprof_compute/vcopy/MI300X_A1", "rocprof_compute_2025/vcopy/MI300X_A1_rocpd",
                    "rocprof_compute_2025/vcopy/MI350"] {
            let a = analyze_path(&shared.join("corpus").join(dir));
            let k = &a.kernel_counters[0];
            assert!(k.name.starts_with("vecCopy"), "{dir}");
            let hw = a.inputs[0].hardware.as_ref().unwrap();
            let warnings = a.inputs[0].warnings.join("\n");
            // A copy kernel: bytes, no matrix work; when the rate is known it is under the HBM peak.
            assert_eq!(k.matrix_pct.unwrap_or(0.0), 0.0, "{dir}");
            match (k.hbm_gbps, k.hbm_pct_of_peak) {
                (Some(_), Some(p)) => {
                    assert!(p > 0.0 && p <= 100.0, "{dir}: {p}");
                    assert!(matches!(k.bound.map(|b| b.as_str()), Some("memory" | "latency")), "{dir}");
                    seen += 1;
                }
                // Each unknown says why: no TCC counters collected, rounded timestamps, or no peaks.
                _ => assert!(dir.contains("ipblocks_SQ") || warnings.contains("rates are unknown")
                    || warnings.contains("peak"), "{dir}: {warnings}"),
            }
            // vecCopy's few VGPRs never limit occupancy: every SIMD's maximum (10 on MI100, 8 after).
            let occ = k.occupancy.as_ref().unwrap();
            assert_eq!(occ.waves_per_simd, hw.max_waves_per_cu as f64 / hw.simd_per_cu as f64, "{dir}");
        }
        assert!(seen >= 3, "metrics on only {seen} workloads");
    });
}

#[test]
fn theoretical_peaks_match_the_published_specs() {
    use rocprof_classify::model::Pipe;
    with_shared!(shared => {
        let hw = |dir: &str| {
            let t = read_all(&[shared.join("corpus").join(dir)], &ReadOptions::default()).unwrap();
            t.inputs[0].hardware.clone().unwrap()
        };
        // AMD's data sheets: MI300X 1307.4 TFLOP/s dense bf16/fp16, 2614.9 fp8, 163.4 fp32/fp64
        // matrix, 5.3 TB/s; MI100 184.6 fp16, 92.3 bf16 matrix, 1.23 TB/s.
        let mi300x = hw("rocprof_compute/dispatch_0_1/MI300X_A1");
        let close = |x: Option<f64>, spec_tflops: f64| (x.unwrap() / 1e3 - spec_tflops).abs() < 0.1;
        assert!(close(mi300x.peak(Pipe::MfmaBf16), 1307.4));
        assert!(close(mi300x.peak(Pipe::MfmaF8), 2614.9));
        assert!(close(mi300x.peak(Pipe::MfmaF64), 163.4));
        assert!((mi300x.peak_hbm_gbps.unwrap() - 5324.8).abs() < 1.0);
        let mi100 = hw("rocprof_compute/vcopy/MI100");
        assert!(close(mi100.peak(Pipe::MfmaF16), 184.6));
        assert!(close(mi100.peak(Pipe::MfmaBf16), 92.3));
        assert_eq!(mi100.peak(Pipe::MfmaF64), None, "MI100 has no fp64 matrix cores");
        // MI200's workload measured its peaks: those win over the clocks.
        let mi200 = hw("rocprof_compute/vcopy/MI200");
        assert_eq!(mi200.peak_source, Some(rocprof_classify::model::PeakSource::Roofline));
    });
}

#[test]
fn a_counter_workload_cut_mid_row_or_with_a_bad_time() {
    with_shared!(shared => {
        use std::io::Read;
        let src = shared.join("corpus/rocprof_compute_v3_bmm1/MI300X_A1");
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(src.join("pmc_perf.csv.gz")).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        let rows = text.lines().count() - 1;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("MI300X_A1");
        std::fs::create_dir(&dir).unwrap();
        std::fs::copy(src.join("sysinfo.csv"), dir.join("sysinfo.csv")).unwrap();
        // The profiler died while writing the last row: every complete row is analyzed.
        std::fs::write(dir.join("pmc_perf.csv"), &text[..text.len() - 500]).unwrap();
        let out = bin().arg(&dir).args(["--json", "-"]).assert().success().get_output().clone();
        let feed = crate::common::assert_valid_feed(&out.stdout);
        assert_eq!(feed["inputs"][0]["truncated"], true);
        let dispatches: u64 = feed["kernel_counters"].as_array().unwrap().iter().map(|k| k["dispatches"].as_u64().unwrap()).sum();
        assert_eq!(dispatches as usize, rows - 1);
        assert!(String::from_utf8_lossy(&out.stderr).contains("truncated"));
        // A time that is not a number: exit 2, naming the file, line and column.
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let header: Vec<&str> = lines[0].split(',').collect();
        let c = header.iter().position(|h| *h == "Start_Timestamp").unwrap();
        // Kernel names hold quoted commas, so replace the value by its text, not by position.
        let row: Vec<String> = csv::ReaderBuilder::new().has_headers(false).from_reader(lines[3].as_bytes())
            .records().next().unwrap().unwrap().iter().map(str::to_string).collect();
        lines[3] = lines[3].replacen(&row[c], "soon", 1);
        std::fs::write(dir.join("pmc_perf.csv"), lines.join("\n") + "\n").unwrap();
        bin().arg(&dir).assert().code(2).stderr(
            predicate::str::contains("pmc_perf.csv")
                .and(predicate::str::contains("line 4"))
                .and(predicate::str::contains("Start_Timestamp")),
        );
    });
}
