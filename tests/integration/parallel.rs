//! Parallel jobs on our two-GPU captures (`fixtures/kineto/parallel/`, truth by construction in
//! `truth.json` and the NCCL flight recorder's `flight.json`): each job's parallelism and group
//! named, pipeline bubbles against CUDA events, point-to-point sizes against the flight
//! recorder, schedules replayed against the captures of the change, advice that fits the kind.

use crate::common::{feed_of, fixture, read_truth};
use crate::partials::{assert_merge_equals_analysis, rank_files, write_partials};
use crate::with_shared;
use serde_json::Value;

const PIPELINES: [&str; 4] = ["pp_gpipe", "pp_1f1b", "pp_interleaved", "pp_unequal"];
const RUNS: [&str; 15] = [
    "cp",
    "ddp_accum",
    "ddp_accum_nosync",
    "ddp_compiled",
    "fsdp2_compiled",
    "tp_compiled",
    "fsdp1",
    "moe_ep",
    "moe_ep_grouped",
    "pp_1f1b",
    "pp_gpipe",
    "pp_interleaved",
    "pp_unequal",
    "tp",
    "tp_sp",
];

fn truth() -> Value {
    read_truth(&fixture("kineto/parallel/truth.json"))
}

fn feed(run: &str) -> Value {
    feed_of(&fixture(&format!("kineto/parallel/{run}")), &[])
}

pub(crate) fn kinds(feed: &Value) -> Vec<(String, Option<String>)> {
    feed["parallelism"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap().to_string(),
                p["impl"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn every_capture_names_its_parallelism_and_its_group() {
    let truth = truth();
    // What each capture's wrapper is called, where its names say it.
    let implementations = [
        ("fsdp1", "fsdp", Some("fsdp1")),
        ("tp", "tensor", Some("dtensor")),
        ("tp_sp", "sequence", Some("dtensor")),
        ("pp_gpipe", "pipeline", Some("torch.pipelining")),
        ("ddp_accum", "ddp", Some("ddp")),
        ("cp", "context", None),
        ("moe_ep", "expert", None),
        // Compiled blocks: the traffic still tells, the names that remain name the wrapper.
        ("tp_compiled", "tensor", Some("dtensor")),
        ("fsdp2_compiled", "fsdp", Some("fsdp2")),
        ("ddp_compiled", "ddp", Some("ddp")),
    ];
    for run in RUNS {
        let f = feed(run);
        let have = kinds(&f);
        for want in truth[run]["kinds"].as_array().unwrap() {
            // The truth's "data" is data parallelism without a wrapper: a ddp row, impl null.
            let want = match want.as_str().unwrap() {
                "data" => "ddp",
                k => k,
            };
            assert!(
                have.iter().any(|(k, _)| k == want),
                "{run}: {want} not among {have:?}"
            );
        }
        for row in f["parallelism"].as_array().unwrap() {
            // One 2-GPU group: the default one (its pg_name is "0"), of degree 2, on both ranks.
            let pgs = &truth[run]["process_groups"]["0"];
            let default = pgs
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["is_default"] == true)
                .unwrap();
            assert_eq!(row["group"], default["pg_name"], "{run}: {row}");
            assert_eq!(row["degree"], 2, "{run}: {row}");
            assert_eq!(row["ranks"], serde_json::json!([0, 1]), "{run}: {row}");
            assert!(!row["evidence"].as_array().unwrap().is_empty());
        }
        if let Some((_, kind, imp)) = implementations.iter().find(|(r, _, _)| *r == run) {
            assert!(
                have.iter().any(|(k, i)| k == kind && i.as_deref() == *imp),
                "{run}: want {kind} by {imp:?}, have {have:?}"
            );
        }
    }
    // The earlier captures: DDP and FSDP2 of a GPT-2.
    for (dir, kind, imp) in [("ddp", "ddp", "ddp"), ("fsdp2", "fsdp", "fsdp2")] {
        let f = feed_of(&fixture(&format!("kineto/h100x2/{dir}")), &[]);
        assert_eq!(
            kinds(&f),
            vec![(kind.to_string(), Some(imp.to_string()))],
            "{dir}"
        );
    }
}

/// Per rank, the events' bubble of the job's step: both ranks start `schedule.step()` together
/// (after a barrier), so the step is the slowest rank's span and a rank that finishes early
/// idles until the next step (bubble too).
pub(crate) fn truth_bubbles(truth: &Value, run: &str) -> Vec<(u32, f64)> {
    let per_rank = truth[run]["per_rank"].as_object().unwrap();
    let steps: Vec<(u32, &Value)> = per_rank
        .iter()
        .map(|(r, v)| {
            let s = v["steps"].as_object().unwrap().values().next().unwrap();
            (r.parse().unwrap(), s)
        })
        .collect();
    let job = steps
        .iter()
        .map(|(_, s)| s["step_ms"].as_f64().unwrap())
        .fold(0.0, f64::max);
    steps
        .iter()
        .map(|(r, s)| (*r, 1.0 - s["compute_ms"].as_f64().unwrap() / job))
        .collect()
}

#[test]
fn pipeline_bubbles_match_the_cuda_events_within_five_points() {
    let truth = truth();
    for run in PIPELINES {
        let f = feed(run);
        let p = &f["pipeline"];
        let schedule = match truth[run]["schedule"].as_str().unwrap() {
            "ScheduleGPipe" => "gpipe",
            "Schedule1F1B" => "1f1b",
            "ScheduleInterleaved1F1B" => "interleaved_1f1b",
            other => panic!("{other}"),
        };
        assert_eq!(p["schedule"], schedule, "{run}");
        assert_eq!(p["microbatches"], truth[run]["n_microbatches"], "{run}");
        assert_eq!(p["stages_total"], truth[run]["n_stages"], "{run}");
        for (rank, want) in truth_bubbles(&truth, run) {
            let row = p["stages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["rank"] == rank)
                .unwrap();
            let got = row["bubble_pct"].as_f64().unwrap() / 100.0;
            eprintln!("{run} rank {rank}: bubble {got:.3} vs events {want:.3}");
            assert!(
                (got - want).abs() <= 0.05,
                "{run} rank {rank}: {got} vs {want}"
            );
            let stages: Vec<u64> = truth[run]["per_rank"][rank.to_string()]["stages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_u64().unwrap())
                .collect();
            assert_eq!(
                row["stages"],
                serde_json::json!(stages),
                "{run} rank {rank}"
            );
            assert_eq!(row["microbatches"], truth[run]["n_microbatches"]);
            // The fill and the drain are part of the bubble.
            assert!(
                row["warmup_ns"].as_i64().unwrap() + row["cooldown_ns"].as_i64().unwrap()
                    <= row["bubble_ns"].as_i64().unwrap()
            );
            // Memory per stage, from the [memory] events.
            assert!(row["peak_allocated_bytes"].as_i64().unwrap() > 1 << 30);
        }
        // Layers from the attention kernels of each forward chunk.
        let layers: Vec<u64> = p["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["layers"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = truth[run]["layers_per_stage"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_u64().unwrap())
            .collect();
        assert_eq!(layers, want, "{run}");
    }
}

#[test]
fn point_to_point_sizes_equal_the_flight_recorders() {
    let flight = read_truth(&fixture("kineto/parallel/flight.json"));
    for run in PIPELINES {
        let f = feed(run);
        for (rank, entries) in flight[run].as_object().unwrap() {
            let sizes: Vec<u64> = entries["entries"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| {
                    let n = e["profiling_name"].as_str().unwrap();
                    n.starts_with("nccl:send") || n.starts_with("nccl:recv")
                })
                .map(|e| e["bytes_in"].as_u64().unwrap())
                .collect();
            let row = f["pipeline"]["stages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["rank"].as_u64() == rank.parse().ok())
                .unwrap();
            assert_eq!(
                row["p2p_bytes"].as_u64(),
                Some(sizes.iter().sum::<u64>()),
                "{run} rank {rank}"
            );
            // Each send and receive moves one microbatch's activations.
            assert!(
                sizes.iter().all(|&b| b == 4 * 2048 * 2048 * 2),
                "{run}: {sizes:?}"
            );
        }
        // The collectives' rows of the sends and receives carry their sizes too.
        for row in f["collectives"].as_array().unwrap() {
            if matches!(
                row["collective"].as_str(),
                Some("send" | "recv" | "send_recv")
            ) {
                assert!(row["bytes"].as_u64().is_some_and(|b| b > 0), "{run}: {row}");
            }
        }
    }
}

/// The measured step of a capture: per step the slowest rank's, averaged.
pub(crate) fn measured_step(f: &Value) -> f64 {
    f["pipeline"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step_ns"].as_f64().unwrap())
        .fold(0.0, f64::max)
}

pub(crate) fn replayed(f: &Value, schedule: &str, rebalanced: bool) -> f64 {
    f["pipeline"]["replays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["schedule"] == schedule && r["rebalanced"] == rebalanced)
        .unwrap_or_else(|| panic!("no {schedule} replay"))["step_ns"]
        .as_f64()
        .unwrap()
}

#[test]
fn the_gpipe_capture_replayed_predicts_the_other_schedules_captures_within_15_percent() {
    let gpipe = feed("pp_gpipe");
    for (run, schedule) in [("pp_1f1b", "1f1b"), ("pp_interleaved", "interleaved_1f1b")] {
        let predicted = replayed(&gpipe, schedule, false);
        let measured = measured_step(&feed(run));
        let err = predicted / measured - 1.0;
        eprintln!(
            "GPipe as {schedule}: {:.1} ms vs {run} {:.1} ms ({:+.1}%)",
            predicted / 1e6,
            measured / 1e6,
            err * 100.0
        );
        assert!(err.abs() <= 0.15, "{schedule}: {predicted} vs {measured}");
    }
    // The unequal stages (1 + 3 layers) rebalanced to 2 + 2: the GPipe capture's split.
    let unequal = feed("pp_unequal");
    let best = unequal["pipeline"]["replays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["schedule"] == "gpipe" && r["rebalanced"] == true)
        .unwrap();
    assert_eq!(best["layers"], serde_json::json!([2, 2]));
    let err = best["step_ns"].as_f64().unwrap() / measured_step(&gpipe) - 1.0;
    eprintln!(
        "unequal rebalanced: {:+.1}% vs the 2+2 capture",
        err * 100.0
    );
    assert!(err.abs() <= 0.15);
    // The schedule as run replays the measured step (the rest of the step stays).
    for run in PIPELINES {
        let f = feed(run);
        let as_run = f["pipeline"]["replays"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["as_run"] == true)
            .unwrap();
        assert_eq!(as_run["saving_ns"], 0, "{run}");
    }
}

#[test]
fn the_first_recommendation_on_a_pipeline_is_a_pipeline_fix_and_no_straggler_is_named() {
    for run in PIPELINES {
        let f = feed(run);
        let first = f["recommendations"][0]["id"].as_str().unwrap();
        assert!(first.starts_with("surgery.pipeline-"), "{run}: {first}");
        let findings = crate::common::feed_ids(&f, "findings");
        assert!(!findings.contains(&"straggler_rank".to_string()), "{run}");
        assert!(findings.iter().any(|f| f.starts_with("pipeline_")), "{run}");
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
    // The unequal stages: rebalancing first, naming the move, priced by the pipeline's replay
    // (its saving's share of the step, times the window).
    let f = feed("pp_unequal");
    assert_eq!(f["recommendations"][0]["id"], "surgery.pipeline-rebalance");
    assert_eq!(f["recommendations"][0]["savings_basis"], "replay");
    let saving = f["pipeline"]["replays"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["rebalanced"] == true && r["schedule"] == "gpipe")
        .map(|r| r["saving_ns"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let want = saving / measured_step(&f) * f["summary"]["window_ns"].as_f64().unwrap();
    let got = f["recommendations"][0]["est_savings_ns"].as_f64().unwrap();
    assert!((got / want - 1.0).abs() < 0.01, "{got} vs {want}");
    let evidence = f["recommendations"][0]["evidence"].to_string();
    assert!(evidence.contains("[1, 3] moved to [2, 2]"), "{evidence}");
}

/// The action texts of a feed, joined.
pub(crate) fn advice(f: &Value) -> String {
    f["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["actions"].as_array().unwrap())
        .map(|a| a["text"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// No action names DDP, FSDP or DistributedSampler to a job that uses neither.
pub(crate) fn assert_advice_fits(name: &str, f: &Value) {
    let kinds = kinds(f);
    let has = |k: &str, i: Option<&str>| {
        kinds
            .iter()
            .any(|(kk, ii)| kk == k && (i.is_none() || ii.as_deref() == i))
    };
    let text = advice(f);
    if !has("ddp", Some("ddp")) {
        for word in ["bucket_cap_mb", "DDP(model,", "no_sync"] {
            assert!(!text.contains(word), "{name}: {word} in\n{text}");
        }
    }
    if !has("fsdp", None) && !has("hsdp", None) {
        for word in [
            "FSDP(",
            "BackwardPrefetch",
            "fully_shard",
            "set_modules_to_",
        ] {
            assert!(!text.contains(word), "{name}: {word} in\n{text}");
        }
    }
    if !has("ddp", None) && !has("fsdp", None) && !has("hsdp", None) {
        assert!(!text.contains("DistributedSampler"), "{name}: {text}");
    }
}

#[test]
fn no_advice_names_a_wrapper_the_job_does_not_use() {
    for run in RUNS {
        assert_advice_fits(run, &feed(run));
    }
    for dir in [
        "ddp",
        "fsdp2",
        "ddp_slow_rank",
        "gpu_straggler",
        "p2p_late_sender",
    ] {
        let f = feed_of(&fixture(&format!("kineto/h100x2/{dir}")), &[]);
        assert_advice_fits(dir, &f);
    }
    // The DDP job is told DDP's own knobs; the FSDP1 job FSDP1's; TP jobs async TP.
    assert!(advice(&feed("ddp_accum")).contains("no_sync"));
    assert!(advice(&feed("fsdp1")).contains("BackwardPrefetch"));
    assert!(advice(&feed("tp")).contains("_micro_pipeline_tp"));
}

#[test]
fn the_corpus_parallel_jobs_are_named() {
    with_shared!(shared => {
        let corpus = shared.join("corpus");
        let vllm = feed_of(&corpus.join("tracelens_nv/eager_trace.json.gz"), &[]);
        let rows = vllm["parallelism"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0]["kind"], "tensor");
        assert_eq!(rows[0]["impl"], "vllm");
        assert_eq!(rows[0]["degree"], 8);
        assert_advice_fits("tracelens_nv", &vllm);
        let hpc = feed_of(&corpus.join("hpctraining/merged_all_events.json.gz"), &[]);
        assert_eq!(kinds(&hpc), vec![("ddp".to_string(), Some("ddp".to_string()))]);
        let out = crate::common::bin()
            .arg(corpus.join("hta/sampled_rank-0.json.gz"))
            .arg(corpus.join("hta/sampled_rank-1.json.gz"))
            .args(["--json", "-"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let hta: Value = serde_json::from_slice(&out).unwrap();
        assert!(kinds(&hta).iter().any(|(k, i)| k == "ddp" && i.as_deref() == Some("ddp")), "{:?}", kinds(&hta));
    });
}

#[test]
fn partials_of_the_parallel_captures_merge_to_their_one_process_analysis() {
    let tmp = tempfile::tempdir().unwrap();
    for run in ["pp_1f1b", "pp_interleaved", "tp_sp", "moe_ep"] {
        let dir = fixture(&format!("kineto/parallel/{run}"));
        let out = tmp.path().join(run);
        std::fs::create_dir(&out).unwrap();
        let partials = write_partials(&rank_files(&dir), &out, &[]);
        assert_merge_equals_analysis(&[dir], &partials, &[]);
    }
}

#[test]
fn every_capture_s_collectives_equal_the_flight_recorders_calls() {
    // The flight recorder's entries of the profiled window, both ranks, by type and
    // nccl-tests' size (the larger buffer): the collectives' rows count the same calls.
    let flight = read_truth(&fixture("kineto/parallel/flight.json"));
    for run in [
        "tp",
        "tp_sp",
        "fsdp1",
        "cp",
        "moe_ep",
        "moe_ep_grouped",
        "ddp_accum",
        "ddp_accum_nosync",
        "tp_compiled",
        "fsdp2_compiled",
        "ddp_compiled",
    ] {
        let f = feed(run);
        let mut ours: std::collections::BTreeMap<(String, u64), u64> = Default::default();
        for row in f["collectives"].as_array().unwrap() {
            let key = (
                row["collective"].as_str().unwrap().to_string(),
                row["bytes"].as_u64().unwrap(),
            );
            *ours.entry(key).or_default() += row["count"].as_u64().unwrap();
        }
        let mut theirs: std::collections::BTreeMap<(String, u64), u64> = Default::default();
        for rank in flight[run].as_object().unwrap().values() {
            for e in rank["entries"].as_array().unwrap() {
                let kind = match e["profiling_name"].as_str().unwrap() {
                    "nccl:all_reduce" => "all_reduce",
                    "nccl:all_reduce_barrier" => "barrier",
                    "nccl:_all_gather_base" | "nccl:all_gather_into_tensor_coalesced" => {
                        "all_gather"
                    }
                    "nccl:_reduce_scatter_base" | "nccl:reduce_scatter_tensor_coalesced" => {
                        "reduce_scatter"
                    }
                    "nccl:all_to_all" => "all_to_allv",
                    "nccl:broadcast" => "broadcast",
                    other => panic!("{run}: {other}"),
                };
                let bytes = e["bytes_in"]
                    .as_u64()
                    .unwrap()
                    .max(e["bytes_out"].as_u64().unwrap());
                *theirs.entry((kind.to_string(), bytes)).or_default() += 1;
            }
        }
        assert_eq!(ours, theirs, "{run}");
    }
}

#[test]
fn the_experts_load_is_the_all_to_alls_split_sizes() {
    let truth = truth();
    let f = feed("moe_ep");
    let expert = f["parallelism"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "expert")
        .unwrap();
    let mut received = Vec::new();
    for load in expert["expert_load"].as_array().unwrap() {
        let rank = load["rank"].to_string();
        let t = &truth["moe_ep"]["per_rank"][&rank];
        assert_eq!(
            load["sent_rows"], t["dispatched_rows_to_rank_profiled"],
            "rank {rank}"
        );
        assert_eq!(
            load["received_rows"], t["received_rows_from_rank_profiled"],
            "rank {rank}"
        );
        received.push(
            load["received_rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .sum::<u64>() as f64,
        );
    }
    // The router sends rank 1's experts about 3x rank 0's rows.
    let mean = received.iter().sum::<f64>() / received.len() as f64;
    let most = received.iter().copied().fold(0.0, f64::max);
    let imbalance = expert["expert_imbalance"].as_f64().unwrap();
    assert!((imbalance - most / mean).abs() < 1e-3, "{imbalance}");
    assert!(received[1] > 3.5 * received[0], "{received:?}");
    // The busiest rank's load is named, and advice to even it.
    assert!(stdout_of_run("moe_ep").contains(&format!(
        "the busiest rank's experts get {imbalance:.2}x the mean rows"
    )));
    assert!(advice(&f).contains("Even the experts' load"));
}

fn stdout_of_run(run: &str) -> String {
    crate::common::stdout_of(
        &fixture(&format!("kineto/parallel/{run}")),
        &["--color", "never"],
    )
}

#[test]
fn ddp_accumulation_without_no_sync_is_found_and_priced_below_what_no_sync_saved() {
    let truth = truth();
    let before = feed("ddp_accum");
    let ddp = |f: &Value| {
        f["parallelism"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == "ddp")
            .unwrap()
            .clone()
    };
    // Every microbatch's backward all-reduced: as many as the capture accumulates.
    let acc = &ddp(&before)["accumulation"];
    assert_eq!(
        acc["synced_microbatches"],
        truth["ddp_accum"]["accumulation_microbatches"]
    );
    let finding = before["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "ddp_accumulation_sync")
        .expect("the finding");
    assert_eq!(finding["time_at_stake_ns"], acc["avoidable_exposed_ns"]);
    let rec = before["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "surgery.ddp-no-sync")
        .expect("the rung");
    // The change applied (no_sync on all but the last microbatch): nothing to find, and the
    // profiled step shorter by at least the predicted share of it (the prediction counts the
    // skipped all-reduces alone, not DDP's per-parameter hooks they also skip).
    let after = feed("ddp_accum_nosync");
    assert!(ddp(&after)["accumulation"].is_null());
    assert!(
        !crate::common::feed_ids(&after, "findings").contains(&"ddp_accumulation_sync".to_string())
    );
    let step = |f: &Value| f["summary"]["step_ns"]["mean"].as_f64().unwrap();
    let predicted =
        rec["est_savings_ns"].as_f64().unwrap() / before["summary"]["window_ns"].as_f64().unwrap();
    let measured = 1.0 - step(&after) / step(&before);
    eprintln!(
        "no_sync: predicted {:.1}% of the step, measured {:.1}% ({:.2} -> {:.2} ms)",
        predicted * 100.0,
        measured * 100.0,
        step(&before) / 1e6,
        step(&after) / 1e6
    );
    assert!(
        predicted > 0.01 && measured >= predicted,
        "{predicted} vs {measured}"
    );
    // No other DDP job is told so.
    for f in [
        feed("ddp_compiled"),
        feed_of(&fixture("kineto/h100x2/ddp"), &[]),
    ] {
        assert!(
            !crate::common::feed_ids(&f, "findings").contains(&"ddp_accumulation_sync".to_string())
        );
    }
}

#[test]
fn experts_run_as_a_loop_are_found_and_priced_against_the_grouped_capture() {
    let truth = truth();
    let before = feed("moe_ep");
    let expert = |f: &Value| {
        f["parallelism"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["kind"] == "expert")
            .unwrap()
            .clone()
    };
    // Three GEMMs per local expert between each dispatch and its combine.
    let per_rank = truth["moe_ep"]["experts_per_rank"].as_u64().unwrap();
    let lp = &expert(&before)["expert_loop"];
    assert_eq!(lp["gemms_per_section"].as_u64(), Some(3 * per_rank));
    let rec = before["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "surgery.grouped-experts")
        .expect("the rung");
    // The change applied (torch._grouped_mm, the same weights: the same losses): no loop left,
    // and the profiled step shorter by about the predicted share.
    let after = feed("moe_ep_grouped");
    assert_eq!(
        truth["moe_ep_grouped"]["per_rank"]["0"]["losses"],
        truth["moe_ep"]["per_rank"]["0"]["losses"]
    );
    assert!(expert(&after)["expert_loop"].is_null());
    assert!(!crate::common::feed_ids(&after, "findings").contains(&"expert_gemm_loop".to_string()));
    let step = |f: &Value| f["summary"]["step_ns"]["mean"].as_f64().unwrap();
    let predicted =
        rec["est_savings_ns"].as_f64().unwrap() / before["summary"]["window_ns"].as_f64().unwrap();
    let measured = 1.0 - step(&after) / step(&before);
    eprintln!(
        "grouped experts: predicted {:.1}% of the step, measured {:.1}% ({:.2} -> {:.2} ms)",
        predicted * 100.0,
        measured * 100.0,
        step(&before) / 1e6,
        step(&after) / 1e6
    );
    assert!(
        (predicted / measured - 1.0).abs() <= 0.5,
        "{predicted} vs {measured}"
    );
    // Two experts a rank over four ranks: six GEMMs a section, still a loop.
    let four = feed_of(&fixture("kineto/parallel4/moe_ep4"), &[]);
    assert_eq!(expert(&four)["expert_loop"]["gemms_per_section"], 6);
}
