//! GPU memory against what the allocator itself reported: real training traces of a
//! `transformers` GPT-2 on an H100 with `profile_memory=True`
//! (`fixtures/kineto/h100/train_{regions,layers,checkpoint}.json.gz`, made by
//! `make_region_traces.py`), whose `regions_truth.json` holds `torch.cuda.max_memory_allocated()`
//! and `max_memory_reserved()` of each step after `reset_peak_memory_stats()`; and the corpus's
//! traces with `[memory]` events (ROCm's among them).

use crate::common::{
    feed_ids as ids, feed_of, fixture, profiled_steps, read_json_gz as read_json, read_truth,
    write_json_gz,
};
use crate::with_shared;
use serde_json::Value;

fn truth() -> Value {
    read_truth(&fixture("kineto/h100/regions_truth.json"))
}

#[test]
fn peaks_per_step_equal_the_allocators_own() {
    let truth = truth();
    let mut peaks = Vec::new();
    for run in ["train_regions", "train_layers", "train_checkpoint"] {
        let feed = feed_of(&fixture(&format!("kineto/h100/{run}.json.gz")), &[]);
        let mem = feed["memory"].as_array().unwrap();
        assert_eq!(mem.len(), 1, "{run}: one GPU");
        let m = &mem[0];
        assert_eq!(
            m["device_bytes"], truth["device_memory_bytes"],
            "{run}: totalGlobalMem"
        );
        let steps = profiled_steps(&truth, run);
        let per_step = m["per_step"].as_array().unwrap();
        assert_eq!(per_step.len(), steps.len(), "{run}");
        for (ours, t) in per_step.iter().zip(&steps) {
            for (key, truth_key) in [
                ("peak_allocated_bytes", "max_memory_allocated"),
                ("peak_reserved_bytes", "max_memory_reserved"),
            ] {
                let (a, b) = (ours[key].as_f64().unwrap(), t[truth_key].as_f64().unwrap());
                assert!(
                    (a - b).abs() <= 0.02 * b,
                    "{run} step {}: {key} {a} vs {b}",
                    ours["step"]
                );
            }
        }
        let pct = m["peak_reserved_pct"].as_f64().unwrap();
        let expect = m["peak_reserved_bytes"].as_f64().unwrap() * 100.0
            / m["device_bytes"].as_f64().unwrap();
        assert!((pct - expect).abs() < 0.01);
        let timeline = m["timeline"].as_array().unwrap();
        assert!(
            timeline.len() > 50 && timeline.len() <= 401,
            "{}",
            timeline.len()
        );
        // The timeline's maxima reach the peak.
        let top = timeline
            .iter()
            .map(|p| p[1].as_i64().unwrap())
            .max()
            .unwrap();
        assert!(top >= m["peak_allocated_bytes"].as_i64().unwrap());
        peaks.push(m["peak_allocated_bytes"].as_i64().unwrap());
        // Host-bound under the profiler (GPU busy ~40%): no headroom advice.
        assert!(
            !ids(&feed, "findings").contains(&"memory_headroom".to_string()),
            "{run}"
        );
        assert!(
            !ids(&feed, "findings").contains(&"memory_pressure".to_string()),
            "{run}"
        );
    }
    // Activation checkpointing keeps a third less.
    assert!(peaks[2] * 10 < peaks[0] * 7, "{peaks:?}");
}

#[test]
fn a_device_near_its_limit_is_under_pressure() {
    // The same real trace on a device with 3.5 GB: its 3.3 GB reserved are 94% of it.
    let mut doc = read_json(&fixture("kineto/h100/train_regions.json.gz"));
    doc["deviceProperties"][0]["totalGlobalMem"] = 3_500_000_000u64.into();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.json.gz");
    write_json_gz(&path, &doc);
    let feed = feed_of(&path, &[]);
    let f: Vec<&Value> = feed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "memory_pressure")
        .collect();
    assert_eq!(f.len(), 1, "{:?}", ids(&feed, "findings"));
    let d = &f[0]["evidence"]["devices"][0];
    assert_eq!(d["device_bytes"], 3_500_000_000u64);
    assert!(d["peak_reserved_pct"].as_f64().unwrap() >= 90.0);
    assert!(ids(&feed, "recommendations").contains(&"surgery.fit-memory".to_string()));
}

#[test]
fn corpus_memory_from_rocm_and_cuda_traces() {
    with_shared!(shared => {
        for (file, headroom) in [
            // MI300X (ROCm: Device Type 6, the visible GPU numbered 0, kernels on physical 2),
            // GPU busy 88%: a larger batch fits.
            ("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", true),
            ("corpus/tracelens_nv/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", true),
            // Busy 7%: the host is the problem, not the batch.
            ("corpus/tracelens/gaunernst_bert-small-uncased__1016001.json.gz", false),
        ] {
            let path = shared.join(file);
            let feed = feed_of(&path, &[]);
            let m = &feed["memory"][0];
            // Without steps the peak is the largest total any GPU event reports.
            let doc = read_json(&path);
            let gpu: Vec<&Value> = doc["traceEvents"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["name"] == "[memory]" && e["args"]["Device Type"].as_i64().unwrap_or(0) != 0)
                .collect();
            let max = |k: &str| gpu.iter().filter_map(|e| e["args"][k].as_i64()).max().unwrap();
            assert_eq!(m["peak_allocated_bytes"].as_i64().unwrap(), max("Total Allocated"), "{file}");
            assert_eq!(m["peak_reserved_bytes"].as_i64().unwrap(), max("Total Reserved"), "{file}");
            assert_eq!(m["device_bytes"], doc["deviceProperties"][0]["totalGlobalMem"], "{file}");
            let fired = ids(&feed, "findings").contains(&"memory_headroom".to_string());
            assert_eq!(fired, headroom, "{file}");
            if headroom {
                assert!(ids(&feed, "recommendations").contains(&"surgery.larger-batch".to_string()));
            }
        }
        // 2021's memory events carry only Bytes, no totals: no memory view rather than a wrong one.
        let old = feed_of(&shared.join("corpus/kineto_tb_plugin/worker0.1623143089861.pt.trace.json.gz"), &[]);
        assert!(old["memory"].as_array().unwrap().is_empty());
    });
}
