//! Every Kineto trace in ../shared/corpus and ../shared/traces: read, classified, feed valid.

use crate::common::assert_valid_feed;
use crate::with_shared;
use rocprof_classify::analysis::AnalysisOptions;
use rocprof_classify::ingest::{self, ReadOptions};
use rocprof_classify::model::{Format, Trace};
use rocprof_classify::recommend::Catalog;
use rocprof_classify::report;
use std::path::{Path, PathBuf};

/// Traces with no GPU kernels at all, and why; the test checks they really have none.
const NO_KERNELS: &[(&str, &str)] = &[
    (
        "corpus/hta/benchmark_result_924719_1679055439_trace.json.gz",
        "CUPTI range-profiler mode: no kernel events",
    ),
    (
        "corpus/hta/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
        "CPU-only rank (gloo)",
    ),
    ("corpus/hta/rank_non_gpu.json.gz", "CPU-only trace"),
];

const MAX_UNCLASSIFIED_PCT: f64 = 2.0;

/// The `.json` and `.json.gz` files under `dir`, depth first, in name order.
pub(crate) fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            json_files(&p, out);
        } else if p.to_string_lossy().ends_with(".json")
            || p.to_string_lossy().ends_with(".json.gz")
        {
            out.push(p);
        }
    }
}

/// The files whose content sniffs as Kineto.
pub(crate) fn kineto_traces(shared: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    json_files(&shared.join("corpus"), &mut files);
    json_files(&shared.join("traces"), &mut files);
    let readers = ingest::readers();
    files
        .into_iter()
        .filter(|p| {
            let src = ingest::open(p).expect("corpus file opens");
            matches!(ingest::sniff(&src, &readers), Ok(r) if r.format() == Format::Kineto)
        })
        .collect()
}

#[test]
fn every_kineto_trace_is_classified() {
    with_shared!(shared => {
        let traces = kineto_traces(&shared);
        assert!(traces.len() >= 40, "expected the corpus's Kineto traces, found {}", traces.len());
        let mut failures = Vec::new();
        let catalog = Catalog::load(&[]).unwrap();
        println!("{:<72} {:>8} {:>14} {:>13}", "file", "kernels", "kernel time", "unclassified");
        for path in &traces {
            let rel = path.strip_prefix(&shared).unwrap().to_string_lossy().replace('\\', "/");
            let mut trace = Trace::default();
            let src = ingest::open(path).unwrap();
            let readers = ingest::readers();
            let reader = ingest::sniff(&src, &readers).unwrap();
            if let Err(e) = reader.read(src, &mut trace, &ReadOptions::default()) {
                failures.push(format!("{rel}: {e}"));
                continue;
            }
            let truncated = trace.inputs.iter().any(|i| i.truncated);
            let run = crate::common::run_trace(trace, &AnalysisOptions::default());
            crate::recommend::assert_savings_bounded(&run, &catalog, &rel);
            let feed = report::json::render(&run);
            assert_valid_feed(&feed);
            let a = &run.analysis;
            // Attribution is complete: every activity's time lands on exactly one op (module, source).
            for (list, sum) in [
                ("ops", a.ops.iter().map(|o| o.self_ns).sum::<i64>()),
                ("modules", a.modules.iter().map(|o| o.self_ns).sum::<i64>()),
                ("sources", a.sources.iter().map(|o| o.self_ns).sum::<i64>()),
            ] {
                let empty = match list {
                    "modules" => a.modules.is_empty(),
                    "sources" => a.sources.is_empty(),
                    _ => a.ops.is_empty() && a.activities == 0,
                };
                if !empty && sum != a.summary.kernel_ns {
                    failures.push(format!("{rel}: {list} self_ns sum to {sum}, kernel_ns is {}", a.summary.kernel_ns));
                }
            }
            // The time partition covers the window exactly.
            let ns: i64 = a.time_partition.iter().map(|r| r.ns).sum();
            let pct: f64 = a.time_partition.iter().map(|r| r.pct).sum();
            if ns != a.summary.window_ns || (a.summary.window_ns > 0 && (pct - 100.0).abs() > 0.1) {
                failures.push(format!("{rel}: partition sums to {ns} ns ({pct:.3}%) of a {} ns window", a.summary.window_ns));
            }
            println!("{rel:<72} {:>8} {:>11} µs {:>12.2}%", a.activities, a.summary.kernel_ns / 1000, a.summary.unclassified_pct);
            if let Some((_, why)) = NO_KERNELS.iter().find(|(f, _)| *f == rel) {
                if a.activities != 0 {
                    failures.push(format!("{rel}: listed as having no kernels ({why}) but has {}", a.activities));
                }
                continue;
            }
            if a.activities == 0 {
                failures.push(format!("{rel}: no GPU activity read"));
            }
            if a.summary.unclassified_pct > MAX_UNCLASSIFIED_PCT {
                failures.push(format!("{rel}: {:.2}% unclassified", a.summary.unclassified_pct));
            }
            if truncated {
                failures.push(format!("{rel}: reported truncated"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    });
}

#[test]
fn rocprof_v1_json_is_told_apart_from_kineto_by_content() {
    with_shared!(shared => {
        for dir in ["rocprof1_batched_gemm", "rocprof1_hip_programming", "rocprof1_kokkos"] {
            let path = shared.join("corpus").join(dir).join("results.json");
            let src = ingest::open(&path).unwrap();
            let readers = ingest::readers();
            let reader = ingest::sniff(&src, &readers).unwrap();
            assert_eq!(reader.format(), Format::RocprofV1, "{dir}");
        }
    });
}

#[test]
fn a_visible_device_renumbered_by_rocm_keeps_its_name() {
    with_shared!(shared => {
        // deviceProperties lists id 0; the kernels run on agent 9.
        let a = crate::common::analyze_path(&shared.join("corpus/tracelens/sglang_Qwen3-8B_decode.json.gz"));
        assert_eq!(a.inputs[0].devices.len(), 1);
        assert_eq!(a.inputs[0].devices[0].id, 9);
        assert_eq!(a.inputs[0].devices[0].name, "AMD Instinct MI300X");
    });
}

#[test]
fn vendors_are_detected() {
    with_shared!(shared => {
        let amd = crate::common::analyze_path(&shared.join("corpus/tracelens/trace.json.gz"));
        assert_eq!(amd.vendor(), rocprof_classify::model::Vendor::Amd);
        let nv = crate::common::analyze_path(&shared.join("corpus/tracelens_nv/eager_trace.json.gz"));
        assert_eq!(nv.vendor(), rocprof_classify::model::Vendor::Nvidia);
        // MI250 trace without version keys: told by the device name / runtime calls.
        let mi250 = crate::common::analyze_path(&shared.join("corpus/hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
        assert_eq!(mi250.vendor(), rocprof_classify::model::Vendor::Amd);
    });
}

#[test]
fn a_merged_multi_rank_file_becomes_one_input_per_rank() {
    with_shared!(shared => {
        let a = crate::common::analyze_path(&shared.join("corpus/hpctraining/merged_nccl_only.json.gz"));
        let ranks: Vec<Option<u32>> = a.inputs.iter().map(|i| i.rank).collect();
        assert!(ranks.len() > 1, "{ranks:?}");
        assert!(ranks.iter().all(|r| r.is_some()));
        let comm = a.buckets.iter().find(|b| b.bucket == rocprof_classify::classify::Bucket::Communication).unwrap();
        assert_eq!(comm.pct, 100.0);
    });
}

#[test]
fn epoch_scale_fractional_timestamps_keep_nanoseconds() {
    with_shared!(shared => {
        // ts like 1712195495519689.047 µs: more digits than an f64 holds exactly (0.25 µs steps).
        let path = shared.join("corpus/hta/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz");
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()), &mut text).unwrap();
        // Every fractional ts lexeme "…ddd.d" must appear in the table as the exact nanosecond value.
        let re = regex::Regex::new(r#""ts": (\d{16})\.(\d{3})\b"#).unwrap();
        let expected: std::collections::BTreeSet<i64> = re
            .captures_iter(&text)
            .take(2000)
            .map(|c| c[1].parse::<i64>().unwrap() * 1000 + c[2].parse::<i64>().unwrap())
            .collect();
        assert!(expected.len() > 100);
        let trace = ingest::read_all(&[path], &ReadOptions::default()).unwrap();
        let have: std::collections::BTreeSet<i64> = trace.activities.ts_ns.iter().chain(&trace.host.ts_ns).copied().collect();
        let found = expected.iter().filter(|t| have.contains(t)).count();
        // Not every event is kept (flows, python functions), but every kept one is exact.
        assert!(found * 2 > expected.len(), "{found} of {} exact", expected.len());
        // Values an f64 of microseconds cannot represent are still exact.
        assert!(expected.iter().any(|&t| have.contains(&t) && ((t as f64 / 1000.0) * 1000.0).round() as i64 != t));
    });
}
