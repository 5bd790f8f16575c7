//! Several ranks: ranks from the files, per-rank views and the straggler, on real two-rank DDP
//! traces with a known straggler (`fixtures/kineto/h100x2`, made by `make_straggler_traces.py`
//! on two GPUs; `truth.json` says which rank was slowed and how).

use crate::common::{assert_valid_feed, bin, fixture, run_trace};
use crate::with_shared;
use rocprof_classify::analysis::AnalysisOptions;
use rocprof_classify::detect::Finding;
use rocprof_classify::ingest::{read_all, ReadOptions};
use rocprof_classify::Run;
use std::path::PathBuf;

fn planned(paths: &[PathBuf]) -> Run {
    let trace = read_all(paths, &ReadOptions::default()).unwrap();
    run_trace(trace, &AnalysisOptions::default())
}

fn truth() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture("kineto/h100x2/truth.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn straggler(a: &Run) -> Option<&Finding> {
    a.findings
        .iter()
        .find(|f| f.id.as_str() == "straggler_rank")
}

fn recommended(a: &Run) -> Vec<&str> {
    a.plan
        .recommendations
        .iter()
        .map(|r| r.id.as_str())
        .collect()
}

#[test]
fn the_slowed_rank_is_named_with_its_cause() {
    let truth = truth();
    for (run, rec, not_rec) in [
        (
            "host_straggler",
            "env.rank-placement",
            "surgery.balance-ranks",
        ),
        (
            "gpu_straggler",
            "surgery.balance-ranks",
            "env.rank-placement",
        ),
    ] {
        let a = planned(&[fixture(&format!("kineto/h100x2/{run}"))]);
        let ranks: Vec<Option<u32>> = a.analysis.inputs.iter().map(|i| i.rank).collect();
        assert_eq!(
            ranks,
            [Some(0), Some(1)],
            "{run}: distributedInfo gives the ranks"
        );
        assert_eq!(a.ranks.len(), 2, "{run}");
        let f = straggler(&a).unwrap_or_else(|| panic!("{run}: no straggler found"));
        let expected = truth[run]["straggler"].as_u64().unwrap();
        assert_eq!(
            f.evidence.to_json()["rank"],
            expected,
            "{run}: {}",
            f.summary
        );
        assert_eq!(
            f.evidence.to_json()["kind"],
            truth[run]["cause"],
            "{run}: {}",
            f.summary
        );
        // Last at the all-reduce in every profiled step, and the wait is what the other rank
        // spends in communication beyond the straggler's own.
        let steps_json = f.evidence.to_json();
        let steps = steps_json["steps"].as_array().unwrap();
        assert_eq!(
            steps.len() as u64,
            f.evidence.to_json()["steps_compared"].as_u64().unwrap()
        );
        assert_eq!(steps.len(), a.analysis.summary.steps, "{run}");
        let per_rank_json = f.evidence.to_json();
        let per_rank = per_rank_json["ranks"].as_array().unwrap();
        // The collectives match across the ranks: the straggler starts last at every one, and
        // what the steps lose is its latest arrival of each step.
        assert_eq!(f.evidence.to_json()["basis"], "arrival_skew", "{run}");
        let arrivals_json = f.evidence.to_json();
        let arrivals = arrivals_json["arrivals"].as_array().unwrap();
        let mine = &arrivals[expected as usize];
        assert_eq!(
            mine["times_last"], mine["collectives"],
            "{run}: {}",
            f.summary
        );
        assert_eq!(arrivals[1 - expected as usize]["times_last"], 0, "{run}");
        assert_eq!(f.time_at_stake_ns, mine["step_late_ns"].as_i64().unwrap());
        if run == "host_straggler" {
            // Late by its 15 ms sleep at each step's first all_reduce (within 20%).
            let per_step = f.time_at_stake_ns as f64 / steps.len() as f64;
            let slept = truth[run]["sleep_s"].as_f64().unwrap() * 1e9;
            assert!(
                (per_step - slept).abs() < slept * 0.2,
                "{run}: {per_step} vs {slept}"
            );
        }
        if run == "host_straggler" {
            // 15 ms of host sleep per step: its host gaps exceed the other rank's by about that.
            let gap = |r: u64| per_rank[r as usize]["host_gap_ns"].as_i64().unwrap();
            let extra = gap(expected) - gap(1 - expected);
            let slept = (truth[run]["sleep_s"].as_f64().unwrap() * 1e9) as i64 * steps.len() as i64;
            assert!(extra > slept * 3 / 4, "{run}: {extra} vs {slept}");
        } else {
            let work = f.evidence.to_json()["more_gpu_work_pct"].as_f64().unwrap();
            assert!(work > 30.0, "{run}: twice the batch, {work}% more GPU work");
        }
        let recs = recommended(&a);
        assert!(recs.contains(&rec), "{run}: {recs:?}");
        assert!(!recs.contains(&not_rec), "{run}: {recs:?}");
    }
    let balanced = planned(&[fixture("kineto/h100x2/balanced")]);
    assert_eq!(balanced.ranks.len(), 2);
    assert!(straggler(&balanced).is_none(), "{:?}", straggler(&balanced));
}

#[test]
fn files_without_ranks_take_them_from_their_names_or_places() {
    let dir = tempfile::tempdir().unwrap();
    let copy = |from: &str, to: &str| {
        let p = dir.path().join(to);
        std::fs::copy(fixture(&format!("kineto/h100/{from}.json.gz")), &p).unwrap();
        p
    };
    let ranks = |paths: &[PathBuf]| -> Vec<Option<u32>> {
        let a = planned(paths);
        a.analysis.inputs.iter().map(|i| i.rank).collect()
    };
    // Single-GPU traces carry no rank. Named per rank: the names say.
    let named = dir.path().join("named");
    std::fs::create_dir(&named).unwrap();
    for (from, to) in [
        ("eager_manual_attn", "named/trace_rank_5.json.gz"),
        ("eager_sdpa_fused", "named/trace_rank_12.json.gz"),
    ] {
        copy(from, to);
    }
    assert_eq!(
        ranks(std::slice::from_ref(&named)),
        [Some(5), Some(12)],
        "listed by rank (the file names sort rank 12 first)"
    );
    // A directory that names none: the files' places.
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    copy("eager_manual_attn", "plain/a.json.gz");
    copy("eager_sdpa_fused", "plain/b.json.gz");
    let a = planned(&[plain]);
    assert_eq!(
        a.analysis.inputs.iter().map(|i| i.rank).collect::<Vec<_>>(),
        [Some(0), Some(1)]
    );
    assert_eq!(a.ranks.len(), 2, "per-rank views");
    // Two traces given one by one are two traces, not two ranks.
    let one = copy("eager_manual_attn", "one.json.gz");
    let two = copy("eager_sdpa_fused", "two.json.gz");
    assert_eq!(ranks(&[one, two]), [None, None]);
}

#[test]
fn the_feed_carries_the_straggler_and_both_ranks() {
    let out = bin()
        .arg(fixture("kineto/h100x2/host_straggler"))
        .args(["--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let feed = assert_valid_feed(&out.stdout);
    let ranks: Vec<u64> = feed["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(ranks, [0, 1]);
    let f = feed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "straggler_rank")
        .expect("straggler_rank in the feed");
    assert_eq!(f["evidence"]["rank"], 1);
    // Each rank's own view has no straggler: it takes several ranks.
    for r in feed["ranks"].as_array().unwrap() {
        assert!(r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["id"] != "straggler_rank"));
    }
}

/// The same 4-rank DDP run on MI300 (gfx942 Tensile kernels), whole and reduced to its RCCL kernels: both name rank 3, the
/// one whose all-reduces are short in every step; only the whole trace can say why.
#[test]
fn an_amd_run_names_the_same_straggler_from_both_of_its_files() {
    with_shared!(shared => {
        let whole = planned(&[shared.join("corpus/hpctraining/merged_all_events.json.gz")]);
        let nccl = planned(&[shared.join("corpus/hpctraining/merged_nccl_only.json.gz")]);
        let (w, n) = (straggler(&whole).unwrap(), straggler(&nccl).unwrap());
        assert_eq!((&w.evidence.to_json()["rank"], &n.evidence.to_json()["rank"]), (&3.into(), &3.into()));
        // The same collectives: the same arrivals. With steps the loss is summed per step;
        // the NCCL-only file has none, and its window counts as one step (a lower bound).
        let arrivals = |f: &Finding| f.evidence.to_json()["arrivals"].clone();
        assert_eq!(arrivals(w).as_array().unwrap().len(), 4);
        for (a, b) in arrivals(w).as_array().unwrap().iter().zip(arrivals(n).as_array().unwrap()) {
            assert_eq!((&a["times_last"], &a["late_ns"]), (&b["times_last"], &b["late_ns"]));
        }
        assert!(n.time_at_stake_ns <= w.time_at_stake_ns, "{} vs {}", n.summary, w.summary);
        assert_eq!(w.evidence.to_json()["kind"], "host", "{}", w.summary);
        assert_eq!(n.evidence.to_json()["kind"], "unknown", "{}", n.summary);
        assert!(recommended(&whole).contains(&"env.rank-placement"));
    });
}

/// Ranks of one job often run with the same pid and thread ids: a transpose of one rank's NCHW
/// convolution is not excused by another rank's channels_last convolution that happens to run
/// at the same time on a thread with the same ids.
#[test]
fn ranks_sharing_thread_ids_keep_their_own_convolutions() {
    use crate::common::{feed_of, read_json_gz, write_json_gz};
    let zoo = fixture("kineto/zoo");
    let transposes = |feed: &serde_json::Value| -> i64 {
        feed["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["id"] == "conv_layout_transposes")
            .map(|f| f["time_at_stake_ns"].as_i64().unwrap())
            .sum()
    };
    let alone = feed_of(&zoo.join("deeplabv3_infer_eager.json.gz"), &[]);
    assert!(transposes(&alone) > 0);
    // Rank 0: DeepLabV3 in NCHW (its convolutions' transposes are the finding). Rank 1:
    // ResNet-18 in channels_last, moved onto rank 0's clock and its main thread's ids.
    let mut nchw = read_json_gz(&zoo.join("deeplabv3_infer_eager.json.gz"));
    let mut cl = read_json_gz(&zoo.join("resnet18_train_eager.json.gz"));
    let start = |doc: &serde_json::Value| {
        doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["ts"].as_f64())
            .fold(f64::MAX, f64::min)
    };
    let shift = start(&nchw) - start(&cl);
    for e in cl["traceEvents"].as_array_mut().unwrap() {
        if let Some(ts) = e["ts"].as_f64() {
            e["ts"] = serde_json::json!(ts + shift);
        }
        if e["pid"] == 844 {
            e["pid"] = serde_json::json!(1263);
        }
        if e["tid"] == 844 {
            e["tid"] = serde_json::json!(1263);
        }
    }
    nchw["distributedInfo"] = serde_json::json!({"rank": 0, "world_size": 2});
    cl["distributedInfo"] = serde_json::json!({"rank": 1, "world_size": 2});
    let dir = tempfile::tempdir().unwrap();
    write_json_gz(&dir.path().join("rank0.json.gz"), &nchw);
    write_json_gz(&dir.path().join("rank1.json.gz"), &cl);
    let both = feed_of(dir.path(), &[]);
    assert_eq!(transposes(&both), transposes(&alone));
}

/// Each rank says which job it belongs to (Kineto `distributedInfo`): the feed keeps it per
/// input, and the terminal names the world size beside the rank.
#[test]
fn inputs_carry_their_jobs_distributed_info() {
    let dir = fixture("kineto/h100x2/ddp");
    let feed = crate::common::feed_of(&dir, &[]);
    for (i, input) in feed["inputs"].as_array().unwrap().iter().enumerate() {
        assert_eq!(input["rank"], i);
        assert_eq!(
            input["distributed"],
            serde_json::json!({"backend": "nccl", "world_size": 2, "process_groups": 1, "nccl_version": "2.28.9",
                "default_group": {"name": "0", "desc": "default_pg", "backend_config": "cuda:nccl", "size": 2, "ranks": "[0,1]"}})
        );
    }
    let out = bin()
        .arg(&dir)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("rank 1 of 2)"), "{text}");
    // A single-process trace has none.
    let single = crate::common::feed_of(&fixture("kineto/h100/train_regions.json.gz"), &[]);
    assert!(single["inputs"][0].get("distributed").is_none());
}

/// A rank's subset of a job's trace holds the rows of that rank's file read alone, in order
/// (the subset reads each input's runs of rows, not every row of the job per rank).
#[test]
fn a_ranks_subset_holds_its_own_files_rows_in_order() {
    let files: Vec<std::path::PathBuf> = ["rank0.json.gz", "rank1.json.gz"]
        .iter()
        .map(|f| fixture(&format!("kineto/h100x2/balanced/{f}")))
        .collect();
    let opts = ReadOptions::default();
    let job = read_all(&files, &opts).unwrap();
    assert_eq!(job.inputs.len(), 2);
    let same_rows = |alone: usize, sub: usize| {
        assert!(
            alone > 100 && alone == sub,
            "{alone} rows alone, {sub} in the subset"
        );
    };
    for (i, file) in files.iter().enumerate() {
        let alone = read_all(std::slice::from_ref(file), &opts).unwrap();
        let sub = job.subset(&[i as u32]);
        let (a, s) = (&alone.activities, &sub.activities);
        same_rows(a.len(), s.len());
        for k in 0..a.len() {
            assert_eq!(
                (
                    a.ts_ns[k],
                    a.dur_ns[k],
                    a.input[k],
                    alone.names.get(a.name[k])
                ),
                (
                    s.ts_ns[k],
                    s.dur_ns[k],
                    s.input[k],
                    sub.names.get(s.name[k])
                ),
                "activity {k} of {}",
                file.display()
            );
        }
        let (a, s) = (&alone.host, &sub.host);
        same_rows(a.len(), s.len());
        for k in 0..a.len() {
            assert_eq!(
                (a.ts_ns[k], a.input[k], alone.names.get(a.name[k])),
                (s.ts_ns[k], s.input[k], sub.names.get(s.name[k])),
                "host event {k} of {}",
                file.display()
            );
        }
    }
}
