//! Parallel jobs on our four-GPU captures (`fixtures/kineto/parallel4/`, truth by construction in
//! `truth.json` and the NCCL flight recorder's `flight.json`): a 2-D FSDP2 x TP mesh with a
//! straggler planted on one rank, pipelines over four ranks, expert parallelism over four.

use crate::common::{feed_of, fixture, read_truth};
use crate::parallel::{advice, measured_step, replayed, truth_bubbles};
use crate::partials::{assert_merge_equals_analysis, rank_files, write_partials};
use serde_json::Value;
use std::collections::BTreeMap;

const RUNS: [&str; 4] = ["fsdp_tp_2d", "pp4_gpipe", "pp4_interleaved", "moe_ep4"];

fn truth() -> Value {
    read_truth(&fixture("kineto/parallel4/truth.json"))
}

fn flight() -> Value {
    read_truth(&fixture("kineto/parallel4/flight.json"))
}

fn feed(run: &str) -> Value {
    feed_of(&fixture(&format!("kineto/parallel4/{run}")), &[])
}

/// The flight recorder's calls of a run, all ranks, by (group description, type, nccl-tests'
/// size: the larger buffer).
fn flight_calls(flight: &Value, run: &str) -> BTreeMap<(String, String, u64), u64> {
    let mut out = BTreeMap::new();
    for rank in flight[run].as_object().unwrap().values() {
        for e in rank["entries"].as_array().unwrap() {
            let name = e["profiling_name"].as_str().unwrap();
            let kind = match name.split(' ').next().unwrap() {
                // A batch's own entry: its sends and receives have theirs.
                "nccl:coalesced" => continue,
                "nccl:all_reduce" => "all_reduce",
                "nccl:all_reduce_barrier" => "barrier",
                "nccl:_all_gather_base" | "nccl:all_gather_into_tensor_coalesced" => "all_gather",
                "nccl:_reduce_scatter_base" | "nccl:reduce_scatter_tensor_coalesced" => {
                    "reduce_scatter"
                }
                "nccl:all_to_all" => "all_to_allv",
                "nccl:send" => "send",
                "nccl:recv" => "recv",
                other => panic!("{run}: {other}"),
            };
            // Our barrier row has no size (its 4-byte buffer is the barrier's own).
            let bytes = if kind == "barrier" {
                0
            } else {
                e["bytes_in"]
                    .as_u64()
                    .unwrap()
                    .max(e["bytes_out"].as_u64().unwrap())
            };
            let desc = e["process_group"]["desc"].as_str().unwrap().to_string();
            *out.entry((desc, kind.to_string(), bytes)).or_default() += 1;
        }
    }
    out
}

#[test]
fn every_four_rank_capture_s_collectives_per_group_equal_the_flight_recorders() {
    let flight = flight();
    for run in RUNS {
        let f = feed(run);
        let mut ours: BTreeMap<(String, String, u64), u64> = BTreeMap::new();
        for row in f["collectives"].as_array().unwrap() {
            let key = (
                row["process_group_desc"].as_str().unwrap().to_string(),
                row["collective"].as_str().unwrap().to_string(),
                row["bytes"].as_u64().unwrap_or(0),
            );
            *ours.entry(key).or_default() += row["count"].as_u64().unwrap();
        }
        assert_eq!(ours, flight_calls(&flight, run), "{run}");
    }
}

#[test]
fn the_2d_mesh_names_fsdp_and_tensor_parallelism_by_mesh_dimension() {
    let truth = truth();
    let f = feed("fsdp_tp_2d");
    // Every rank's groups of each mesh dimension, as the capture's DeviceMesh made them.
    let mut want: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    for groups in truth["fsdp_tp_2d"]["process_groups"]
        .as_object()
        .unwrap()
        .values()
    {
        for g in groups.as_array().unwrap() {
            if let Some(dim) = g["mesh_dim"].as_str() {
                let ranks = g["ranks"].as_array().unwrap();
                want.insert(
                    (format!("mesh_{dim}"), g["pg_name"].as_str().unwrap().into()),
                    ranks.iter().map(|r| r.as_u64().unwrap()).collect(),
                );
            }
        }
    }
    assert_eq!(want.len(), 4, "two groups per dimension: {want:?}");
    let mut have: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    for row in f["parallelism"].as_array().unwrap() {
        let dim = row["mesh_dim"].as_str().unwrap().to_string();
        let (kind, imp) = (row["kind"].as_str().unwrap(), row["impl"].as_str());
        match dim.as_str() {
            "mesh_dp" => assert_eq!((kind, imp), ("fsdp", Some("fsdp2")), "{row}"),
            "mesh_tp" => assert_eq!((kind, imp), ("tensor", Some("dtensor")), "{row}"),
            other => panic!("{other}: {row}"),
        }
        assert_eq!(row["degree"], 2, "{row}");
        let ranks = row["ranks"].as_array().unwrap();
        have.insert(
            (dim, row["group"].as_str().unwrap().into()),
            ranks.iter().map(|r| r.as_u64().unwrap()).collect(),
        );
    }
    assert_eq!(have, want);
}

#[test]
fn the_planted_straggler_is_named_with_its_groups() {
    let truth = truth();
    let planted = truth["fsdp_tp_2d"]["straggler"]["rank"].as_u64().unwrap();
    let f = feed("fsdp_tp_2d");
    let finding = f["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == "straggler_rank")
        .expect("a straggler");
    assert_eq!(finding["evidence"]["rank"].as_u64(), Some(planted));
    // Its sleeps are GPU work the others lack.
    assert_eq!(finding["evidence"]["kind"], "more_gpu_work");
    let summary = finding["summary"].as_str().unwrap();
    assert!(summary.contains("in mesh_tp (tensor)"), "{summary}");
    assert!(summary.contains("in mesh_dp (fsdp)"), "{summary}");
    // Its arrivals per group: last at nearly every collective of both of its groups.
    let arrivals = finding["evidence"]["arrivals"].as_array().unwrap();
    let mine = arrivals
        .iter()
        .find(|a| a["rank"].as_u64() == Some(planted))
        .unwrap();
    for g in mine["by_group"].as_array().unwrap() {
        let (n, last) = (
            g["collectives"].as_u64().unwrap(),
            g["times_last"].as_u64().unwrap(),
        );
        if g["desc"] != "default_pg" {
            assert!(last * 10 >= n * 9, "{g}");
        }
    }
    assert_eq!(f["recommendations"][0]["id"], "surgery.balance-ranks");
}

#[test]
fn four_stage_pipelines_bubbles_match_the_cuda_events_and_their_hops_are_paired() {
    let truth = truth();
    let flight = flight();
    for run in ["pp4_gpipe", "pp4_interleaved"] {
        let f = feed(run);
        let p = &f["pipeline"];
        assert_eq!(p["ranks"], 4, "{run}");
        assert_eq!(p["stages_total"], truth[run]["n_stages"], "{run}");
        assert_eq!(p["microbatches"], truth[run]["n_microbatches"], "{run}");
        for (rank, want) in truth_bubbles(&truth, run) {
            let row = p["stages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["rank"] == rank)
                .unwrap();
            let got = row["bubble_pct"].as_f64().unwrap() / 100.0;
            eprintln!("{run} rank {rank}: bubble {got:.3} vs events {want:.3}");
            assert!((got - want).abs() <= 0.05, "{run} rank {rank}");
            // Sends and receives paired with their peers across four ranks: wait and transfer.
            let (wait, transfer) = (
                row["p2p_wait_ns"].as_i64().unwrap(),
                row["p2p_transfer_ns"].as_i64().unwrap(),
            );
            assert_eq!(
                wait + transfer,
                row["p2p_kernel_ns"].as_i64().unwrap(),
                "{run} rank {rank}"
            );
            assert!(transfer > 0 && wait > transfer, "{run} rank {rank}");
            let sent: u64 = flight[run][rank.to_string()]["entries"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["is_p2p"] == true)
                .map(|e| e["bytes_in"].as_u64().unwrap())
                .sum();
            assert_eq!(row["p2p_bytes"].as_u64(), Some(sent), "{run} rank {rank}");
        }
        // One hop: 32 MiB of activations over NVLink, a fraction of a millisecond.
        let hop = p["hop_ns"].as_i64().unwrap();
        assert!((20_000..2_000_000).contains(&hop), "{run}: {hop}");
        // Waiting on the neighbouring stage is the bubble on the critical path.
        let bubble: i64 = f["critical_path"]["labels"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["label"] == "pipeline_bubble")
            .map(|l| l["ns"].as_i64().unwrap())
            .sum();
        assert!(bubble > 0, "{run}");
    }
}

#[test]
fn the_four_stage_gpipe_replayed_interleaved_predicts_the_interleaved_capture() {
    let gpipe = feed("pp4_gpipe");
    let predicted = replayed(&gpipe, "interleaved_1f1b", false);
    let measured = measured_step(&feed("pp4_interleaved"));
    let err = predicted / measured - 1.0;
    eprintln!(
        "GPipe as interleaved_1f1b: {:.1} ms vs the capture's {:.1} ms ({:+.1}%)",
        predicted / 1e6,
        measured / 1e6,
        err * 100.0
    );
    assert!(err.abs() <= 0.15, "{predicted} vs {measured}");
    // Pipeline fixes lead, rebalancing (the last stage holds the head and the loss) first,
    // then the schedule.
    let ids: Vec<&str> = gpipe["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids[..2],
        ["surgery.pipeline-rebalance", "surgery.pipeline-schedule"],
        "{ids:?}"
    );
    assert!(advice(&gpipe).contains("ScheduleInterleaved1F1B"));
}

#[test]
fn the_experts_load_over_four_ranks_is_the_all_to_alls_split_sizes() {
    let truth = truth();
    let f = feed("moe_ep4");
    let expert = f["parallelism"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "expert")
        .unwrap();
    assert_eq!(expert["degree"], 4);
    let loads = expert["expert_load"].as_array().unwrap();
    assert_eq!(loads.len(), 4);
    let mut received = Vec::new();
    for load in loads {
        let t = &truth["moe_ep4"]["per_rank"][load["rank"].to_string()];
        assert_eq!(load["sent_rows"], t["dispatched_rows_to_rank_profiled"]);
        assert_eq!(load["received_rows"], t["received_rows_from_rank_profiled"]);
        let rows: u64 = load["received_rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum();
        received.push(rows as f64);
    }
    let mean = received.iter().sum::<f64>() / 4.0;
    let most = received.iter().copied().fold(0.0, f64::max);
    let imbalance = expert["expert_imbalance"].as_f64().unwrap();
    assert!((imbalance - most / mean).abs() < 1e-3, "{imbalance}");
    // The router's bias grows with the rank: so do the rows each rank's experts get.
    assert!(received.windows(2).all(|w| w[0] < w[1]), "{received:?}");
}

#[test]
fn partials_of_the_four_rank_captures_merge_to_their_one_process_analysis() {
    let tmp = tempfile::tempdir().unwrap();
    for run in RUNS {
        let dir = fixture(&format!("kineto/parallel4/{run}"));
        let out = tmp.path().join(run);
        std::fs::create_dir(&out).unwrap();
        let partials = write_partials(&rank_files(&dir), &out, &[]);
        assert_merge_equals_analysis(&[dir], &partials, &[]);
    }
}
