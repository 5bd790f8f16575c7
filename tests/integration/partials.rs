//! Several ranks through partials: `rocprof-classify partial` per rank file, then `merge`, gives
//! the bytes analyzing the rank files together gives (that analysis merges the same partials in
//! memory); the merged numbers agree with one pass over the whole trace; partials of another
//! version, run, settings, or a rank given twice are refused.

use crate::common::{bin, fixture, read_json_gz, rules, write_json_gz};
use crate::with_shared;
use rocprof_classify::analysis::{self, AnalysisOptions};
use rocprof_classify::detect::{self, FindingId};
use rocprof_classify::ingest::{read_all, ReadOptions};
use rocprof_classify::pipeline::Partial;
use std::path::{Path, PathBuf};

const MULTI_RANK: &[&str] = &[
    "balanced",
    "ddp",
    "ddp_slow_rank",
    "fsdp2",
    "gpu_straggler",
    "host_straggler",
];

/// The rank files of a directory, as its expansion names them.
pub(crate) fn rank_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    files.sort();
    files
}

/// Writes each file's partial (with `args`) into `out`, returning the partials' paths.
pub(crate) fn write_partials(files: &[PathBuf], out: &Path, args: &[&str]) -> Vec<PathBuf> {
    files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let p = out.join(format!("part{i}.partial.json"));
            bin()
                .arg("partial")
                .arg(f)
                .arg("-o")
                .arg(&p)
                .args(args)
                .assert()
                .success();
            p
        })
        .collect()
}

fn stdout(cmd: &mut assert_cmd::Command) -> Vec<u8> {
    cmd.assert().success().get_output().stdout.clone()
}

/// Every report of `merge` (the partials in reverse order: merge sorts them by rank) equals the
/// one-process analysis of `inputs`, byte for byte.
pub(crate) fn assert_merge_equals_analysis(
    inputs: &[PathBuf],
    partials: &[PathBuf],
    extra: &[&str],
) {
    let mut reversed = partials.to_vec();
    reversed.reverse();
    for report in [
        &["--json", "-"][..],
        &["--markdown", "-"],
        &["--html", "-"],
        &[],
    ] {
        let direct = stdout(bin().args(inputs).args(report).args(extra));
        let merged = stdout(bin().arg("merge").args(&reversed).args(report));
        assert!(
            direct == merged,
            "{inputs:?} {report:?}: merge differs from the one-process analysis"
        );
    }
}

#[test]
fn merged_partials_are_the_one_process_analysis_of_the_multi_rank_fixtures() {
    let tmp = tempfile::tempdir().unwrap();
    for name in MULTI_RANK {
        let dir = fixture(&format!("kineto/h100x2/{name}"));
        let out = tmp.path().join(name);
        std::fs::create_dir(&out).unwrap();
        let partials = write_partials(&rank_files(&dir), &out, &[]);
        assert_merge_equals_analysis(&[dir], &partials, &[]);
    }
}

#[test]
fn one_partial_merges_to_its_own_analysis() {
    // A single trace is its own job: every report of `merge` of its partial is its analysis.
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "kineto/h100/eager_manual_attn.json.gz",
        "kineto/h100/compiled_graph_breaks.json.gz",
    ] {
        let f = fixture(name);
        let partials = write_partials(std::slice::from_ref(&f), tmp.path(), &[]);
        assert_merge_equals_analysis(&[f], &partials, &[]);
    }
}

#[test]
fn rank_files_without_distributed_info_take_their_ranks_from_their_names() {
    // Two real models' traces (no distributedInfo) as the ranks of one directory: each file's
    // partial takes the rank its name says, as the directory does.
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    std::fs::create_dir(&job).unwrap();
    for (model, rank) in [("gpt2_train_eager", 0), ("convnext_train_eager", 1)] {
        std::fs::copy(
            fixture(&format!("kineto/zoo/{model}.json.gz")),
            job.join(format!("rank{rank}.json.gz")),
        )
        .unwrap();
    }
    let out = tmp.path().join("partials");
    std::fs::create_dir(&out).unwrap();
    let partials = write_partials(&rank_files(&job), &out, &["-q"]);
    // Two captures as one job's ranks: analyzed together only when forced (merge has no
    // timestamps to tell them apart).
    let ranks: Vec<Option<u32>> = partials
        .iter()
        .map(|p| {
            Partial::from_json(&std::fs::read(p).unwrap(), "p")
                .unwrap()
                .rank
        })
        .collect();
    assert_eq!(ranks, [Some(0), Some(1)]);
    assert_merge_equals_analysis(&[job], &partials, &["-q", "--force"]);
}

#[test]
fn settings_carry_into_partials_and_the_merge_agrees_under_them() {
    // --steps and --no-attribution change what a rank computes: the partials carry them.
    let dir = fixture("kineto/h100x2/ddp_slow_rank");
    let tmp = tempfile::tempdir().unwrap();
    let partials = write_partials(&rank_files(&dir), tmp.path(), &["--steps", "3..5"]);
    let mut reversed = partials.clone();
    reversed.reverse();
    let direct = stdout(bin().arg(&dir).args(["--steps", "3..5", "--json", "-"]));
    let merged = stdout(bin().arg("merge").args(&reversed).args(["--json", "-"]));
    assert!(direct == merged);
    let feed: serde_json::Value = serde_json::from_slice(&merged).unwrap();
    assert_eq!(
        feed["summary"]["steps"], 2,
        "the selection is the partials'"
    );
}

/// Copies of the DDP ranks as a job of `n` ranks: rank i is rank (i % 2)'s trace with its
/// `distributedInfo` saying rank i of n (the copies share pids and thread ids, as ranks on
/// different hosts do).
fn ddp_job(dir: &Path, n: u32) -> Vec<PathBuf> {
    let src = fixture("kineto/h100x2/ddp");
    let docs = [
        read_json_gz(&src.join("rank0.json.gz")),
        read_json_gz(&src.join("rank1.json.gz")),
    ];
    (0..n)
        .map(|i| {
            let mut doc = docs[(i % 2) as usize].clone();
            let info = &mut doc["distributedInfo"];
            info["rank"] = i.into();
            info["world_size"] = n.into();
            for pg in info["pg_config"].as_array_mut().unwrap() {
                pg["pg_size"] = n.into();
                pg["ranks"] = (0..n).collect::<Vec<u32>>().into();
            }
            let path = dir.join(format!("rank{i}.json.gz"));
            write_json_gz(&path, &doc);
            path
        })
        .collect()
}

/// Detection runs once per rank and once for the job, each pass over a complete analysis: the
/// detectors see the modules, sources and kernel candidates the reports show.
#[test]
fn detection_runs_once_per_rank_and_once_per_job() {
    let one = crate::common::run_path(&fixture("kineto/h100/eager_manual_attn.json.gz"));
    assert_eq!(one.detect_passes, 1);
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    std::fs::create_dir(&job).unwrap();
    ddp_job(&job, 8);
    let run = crate::common::run_path(&job);
    assert_eq!(run.ranks.len(), 8);
    assert_eq!(run.detect_passes, 8 + 1);
    with_shared!(shared => {
        // Python stacks: modules, sources and kernel candidates are there before detection.
        let trace = shared.join("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
        let read = read_all(std::slice::from_ref(&trace), &ReadOptions::default()).unwrap();
        let opts = AnalysisOptions::default();
        let ctx = analysis::prepare(&read, rules(), &opts);
        assert!(!ctx.analysis.modules.is_empty() && !ctx.analysis.sources.is_empty());
        assert!(!ctx.analysis.kernel_candidates.is_empty());
        let seen = serde_json::to_string(&ctx.analysis).unwrap();
        let (finished, _) = ctx.finish();
        assert_eq!(seen, serde_json::to_string(&finished).unwrap());
    });
}

#[test]
fn an_eight_rank_directory_merges_to_its_one_process_analysis() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    std::fs::create_dir(&job).unwrap();
    let files = ddp_job(&job, 8);
    let out = tmp.path().join("partials");
    std::fs::create_dir(&out).unwrap();
    let partials = write_partials(&files, &out, &[]);
    assert_merge_equals_analysis(std::slice::from_ref(&job), &partials, &[]);

    let feed: serde_json::Value =
        serde_json::from_slice(&stdout(bin().arg(&job).args(["--json", "-"]))).unwrap();
    let ranks: Vec<u64> = feed["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_u64().unwrap())
        .collect();
    assert_eq!(ranks, (0..8).collect::<Vec<u64>>());
    // Every all-reduce is matched across the eight ranks.
    let rows = feed["collectives"].as_array().unwrap();
    assert!(!rows.is_empty());
    for row in rows {
        assert_eq!(row["ranks"], 8, "{row}");
        assert!(row["matched"].as_u64().unwrap() > 0, "{row}");
    }
    // An event-level finding every rank has is kept once, with each rank's time at stake.
    let stalls = feed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "sync_stalls")
        .expect("the DDP ranks synchronize inside steps");
    let per_rank = stalls["evidence"]["ranks"].as_array().unwrap();
    assert_eq!(per_rank.len(), 8);
    let sum: i64 = per_rank
        .iter()
        .map(|r| r["time_at_stake_ns"].as_i64().unwrap())
        .sum();
    assert_eq!(stalls["time_at_stake_ns"].as_i64().unwrap(), sum);
    assert!(
        stalls["summary"]
            .as_str()
            .unwrap()
            .contains("[on all 8 ranks, rank "),
        "{}",
        stalls["summary"]
    );
    // A kernel-table finding is the job's own: no per-rank list.
    let fp32 = feed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "fp32_gemm")
        .unwrap();
    assert!(fp32["evidence"].get("ranks").is_none());
}

#[test]
fn inputs_are_listed_by_rank_not_by_file_name() {
    // A directory lists rank10 before rank2; the job's inputs and views go by rank.
    let tmp = tempfile::tempdir().unwrap();
    ddp_job(tmp.path(), 12);
    let feed: serde_json::Value =
        serde_json::from_slice(&stdout(bin().arg(tmp.path()).args(["--json", "-"]))).unwrap();
    let ranks = |key: &str| -> Vec<u64> {
        feed[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["rank"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(ranks("inputs"), (0..12).collect::<Vec<u64>>());
    assert_eq!(ranks("ranks"), (0..12).collect::<Vec<u64>>());
    let steps: Vec<u64> = feed["step_breakdown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_u64().unwrap())
        .collect();
    assert!(steps.windows(2).all(|w| w[0] <= w[1]), "{steps:?}");
}

#[test]
fn merged_numbers_agree_with_one_pass_over_the_whole_trace() {
    // What merging ranks computes against what one analysis of the combined trace computes
    // (the way several ranks were analyzed before partials): the same buckets, partition,
    // steps, collectives and straggler; regions' partitions within a nanosecond per category
    // (each rank's is rounded before they add).
    for name in MULTI_RANK {
        let dir = fixture(&format!("kineto/h100x2/{name}"));
        let trace = read_all(std::slice::from_ref(&dir), &ReadOptions::default()).unwrap();
        let opts = AnalysisOptions::default();
        let ctx = analysis::prepare(&trace, rules(), &opts);
        let whole_findings = detect::detect(&ctx, None);
        let whole = ctx.finish().0;
        let merged = crate::common::run_path(&dir);
        let m = &merged.analysis;
        let json = |v: &dyn erased::Ser| v.json();
        assert_eq!(json(&m.buckets), json(&whole.buckets), "{name} buckets");
        assert_eq!(
            json(&m.time_partition),
            json(&whole.time_partition),
            "{name} partition"
        );
        assert_eq!(
            json(&m.step_breakdown),
            json(&whole.step_breakdown),
            "{name} steps"
        );
        assert_eq!(m.summary.steps, whole.summary.steps, "{name}");
        assert_eq!(json(&m.summary.step_ns), json(&whole.summary.step_ns));
        assert_eq!(m.summary.gpu_busy_ns, whole.summary.gpu_busy_ns, "{name}");
        assert_eq!(m.summary.kernel_ns, whole.summary.kernel_ns, "{name}");
        assert_eq!(
            json(&m.collectives),
            json(&whole.collectives),
            "{name} collectives"
        );
        assert_eq!(json(&m.ops), json(&whole.ops), "{name} ops");
        assert_eq!(json(&m.summary.mfu), json(&whole.summary.mfu), "{name} mfu");
        let straggler = |f: &[detect::Finding]| {
            f.iter()
                .find(|f| f.id == FindingId::StragglerRank)
                .map(|f| (f.evidence.to_json()["rank"].clone(), f.time_at_stake_ns))
        };
        assert_eq!(
            straggler(&merged.findings),
            straggler(&whole_findings),
            "{name} straggler"
        );
        assert_eq!(m.regions.len(), whole.regions.len(), "{name} regions");
        for (a, b) in m.regions.iter().zip(&whole.regions) {
            assert_eq!((&a.path, a.gpu_ns, a.count), (&b.path, b.gpu_ns, b.count));
            for (x, y) in a.time_partition.iter().zip(&b.time_partition) {
                assert!(
                    (x.ns - y.ns).abs() <= 1,
                    "{name} {} {:?}",
                    a.path,
                    x.category
                );
            }
        }
    }
    // The straggler fixtures do have one.
    let run = crate::common::run_path(&fixture("kineto/h100x2/host_straggler"));
    assert!(run
        .findings
        .iter()
        .any(|f| f.id == FindingId::StragglerRank));
}

/// Serializes anything the feed holds, for comparing blocks.
mod erased {
    pub trait Ser {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Ser for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap()
        }
    }
}

#[test]
fn a_partial_reads_back_to_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let files = rank_files(&fixture("kineto/h100x2/fsdp2"));
    let p = &write_partials(&files[..1], tmp.path(), &[])[0];
    let bytes = std::fs::read(p).unwrap();
    let partial = Partial::from_json(&bytes, "p").unwrap();
    assert_eq!(partial.rank, Some(0));
    let back = partial.to_json();
    if back != bytes {
        let i = back
            .iter()
            .zip(&bytes)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "differs at {i}: {:?} vs {:?}",
            String::from_utf8_lossy(&back[i.saturating_sub(200)..(i + 100).min(back.len())]),
            String::from_utf8_lossy(&bytes[i.saturating_sub(200)..(i + 100).min(bytes.len())])
        );
    }
    assert!(partial.parts.calls.len() > 10, "its collectives travel");
}

/// `merge` of these partials fails with exit 2 and a message containing `expect`.
fn assert_refused(partials: &[PathBuf], expect: &str) {
    let out = bin().arg("merge").args(partials).assert().code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains(expect), "expected {expect:?} in: {err}");
}

/// A copy of a partial with `edit` applied to its JSON text.
fn edited(src: &Path, dst: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(src).unwrap();
    let new = edit(text.clone());
    assert_ne!(new, text, "the edit applies");
    std::fs::write(dst, new).unwrap();
    dst.to_path_buf()
}

#[test]
fn partials_of_other_versions_runs_settings_or_a_rank_twice_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let files = rank_files(&fixture("kineto/h100x2/ddp"));
    let p = write_partials(&files, t, &[]);
    let version = edited(&p[1], &t.join("v.json"), |s| {
        // Whatever the current version is.
        let at = s.find("\"version\":").unwrap() + "\"version\":".len();
        let end = at + s[at..].find(',').unwrap();
        format!("{}99{}", &s[..at], &s[end..])
    });
    assert_refused(&[p[0].clone(), version], "partial format version 99");
    let nccl = edited(&p[1], &t.join("n.json"), |s| {
        s.replacen("\"nccl_version\":\"2.", "\"nccl_version\":\"9.", 1)
    });
    assert_refused(&[p[0].clone(), nccl], "another run");
    let group = edited(&p[1], &t.join("g.json"), |s| {
        s.replacen("\"ranks\":\"[0,1]\"", "\"ranks\":\"[0,2]\"", 1)
    });
    assert_refused(
        &[p[0].clone(), group],
        "pg_config (the default group) differs",
    );
    // A rank counts only the process groups it belongs to: their number may differ by rank.
    let count = edited(&p[1], &t.join("c.json"), |s| {
        s.replacen("\"process_groups\":1", "\"process_groups\":3", 1)
    });
    bin().arg("merge").arg(&p[0]).arg(&count).assert().success();
    assert_refused(&[p[0].clone(), p[0].clone()], "rank 0 is given twice");
    let steps_dir = t.join("steps");
    std::fs::create_dir(&steps_dir).unwrap();
    let with_steps = write_partials(&files[1..], &steps_dir, &["--steps", "2..4"]);
    assert_refused(&[p[0].clone(), with_steps[0].clone()], "other settings");
    let garbage = t.join("garbage.json");
    std::fs::write(
        &garbage,
        "{\"format\": \"rocprof-classify-partial\", \"version\": 1,,}",
    )
    .unwrap();
    assert_refused(&[garbage], "byte ");
    let feed = t.join("feed.json");
    std::fs::write(&feed, stdout(bin().arg(&files[0]).args(["--json", "-"]))).unwrap();
    assert_refused(&[feed], "not a partial");
    // A damaged partial whose lists disagree is refused, not indexed out of range.
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&p[1]).unwrap()).unwrap();
    doc["parts"]["calls"][0]["input"] = 7.into();
    let damaged = t.join("damaged.json");
    std::fs::write(&damaged, serde_json::to_vec(&doc).unwrap()).unwrap();
    assert_refused(
        &[p[0].clone(), damaged],
        "inconsistent partial: a row names input 7 of 1",
    );
    // Two traces without a rank are two runs, not two ranks.
    let single_dir = t.join("single");
    std::fs::create_dir(&single_dir).unwrap();
    let single = write_partials(
        &[
            fixture("kineto/h100/eager_manual_attn.json.gz"),
            fixture("kineto/h100/eager_sdpa_fused.json.gz"),
        ],
        &single_dir,
        &[],
    );
    assert_refused(&single, "has no rank");
    // A partial is one rank's: a directory of two is refused, and --rank takes one of them.
    let dir = fixture("kineto/h100x2/ddp");
    let out = bin().arg("partial").arg(&dir).assert().code(2);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("holds 2 ranks"));
    let one = stdout(bin().arg("partial").arg(&dir).args(["--rank", "1"]));
    assert_eq!(Partial::from_json(&one, "one").unwrap().rank, Some(1));
}

#[test]
fn corpus_ranks_of_one_file_and_of_a_sampled_job_merge_as_they_analyze() {
    crate::with_shared!(shared => {
        let tmp = tempfile::tempdir().unwrap();
        // Four ranks merged into one file: a partial takes one rank of it.
        let merged = shared.join("corpus/hpctraining/merged_nccl_only.json.gz");
        if merged.exists() {
            let partials: Vec<PathBuf> = (0..4)
                .map(|r| {
                    let p = tmp.path().join(format!("m{r}.json"));
                    bin().arg("partial").arg(&merged).args(["--rank", &r.to_string(), "-o"])
                        .arg(&p).assert().success();
                    p
                })
                .collect();
            assert_merge_equals_analysis(std::slice::from_ref(&merged), &partials, &[]);
        } else {
            eprintln!("skipped: {} is absent", merged.display());
        }
        // Two ranks of a 128-rank job (HTA's sample).
        let hta: Vec<PathBuf> = ["rank-0", "rank-1"]
            .iter()
            .map(|r| shared.join(format!("corpus/hta/sampled_{r}.json.gz")))
            .collect();
        if hta.iter().all(|p| p.exists()) {
            let out = tmp.path().join("hta");
            std::fs::create_dir(&out).unwrap();
            let partials = write_partials(&hta, &out, &[]);
            assert_merge_equals_analysis(&hta, &partials, &[]);
        } else {
            eprintln!("skipped: HTA's sampled ranks are absent");
        }
    });
}

#[test]
fn a_counter_workload_merges_its_kernel_counters_by_name() {
    crate::with_shared!(shared => {
        let w = shared.join("corpus/rocprof_compute/dispatch_0_1/MI300X_A1");
        let tmp = tempfile::tempdir().unwrap();
        // Alone, it is its own job (its device's peaks travel in the partial).
        let one = tmp.path().join("one.json");
        bin().arg("partial").arg(&w).arg("-o").arg(&one).arg("-q").assert().success();
        assert_merge_equals_analysis(std::slice::from_ref(&w), &[one], &["-q"]);
        // As two ranks: one row per kernel, its dispatches and bytes summed, its rates unchanged.
        let ranks: Vec<PathBuf> = (0..2)
            .map(|r| {
                let p = tmp.path().join(format!("r{r}.json"));
                bin().arg("partial").arg(&w).args(["-q", "--rank", &r.to_string(), "-o"])
                    .arg(&p).assert().success();
                p
            })
            .collect();
        let merged: serde_json::Value = serde_json::from_slice(&stdout(
            bin().arg("merge").args(&ranks).args(["--json", "-"]),
        ))
        .unwrap();
        let alone: serde_json::Value =
            serde_json::from_slice(&stdout(bin().arg(&w).args(["-q", "--json", "-"]))).unwrap();
        let (m, a) = (&merged["kernel_counters"], &alone["kernel_counters"]);
        assert_eq!(m.as_array().unwrap().len(), a.as_array().unwrap().len());
        for (m, a) in m.as_array().unwrap().iter().zip(a.as_array().unwrap()) {
            assert_eq!(m["name"], a["name"]);
            assert_eq!(m["dispatches"].as_u64().unwrap(), 2 * a["dispatches"].as_u64().unwrap());
            let (mg, ag) = (m["hbm_gbps"].as_f64().unwrap(), a["hbm_gbps"].as_f64().unwrap());
            assert!((mg - ag).abs() < 1e-6 * ag, "{mg} vs {ag}");
        }
    });
}

#[test]
fn serving_iterations_merge_across_ranks() {
    // Two ranks of a serving loop without ProfilerStep (the default and the flash-attention
    // capture): their iterations, phases and exclusions merge as one job's, and a single
    // rank's partial merges to its own analysis, `--phase` carried in the partials.
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job");
    std::fs::create_dir(&job).unwrap();
    for (name, rank) in [("serving_llama", 0), ("serving_llama_flash", 1)] {
        std::fs::copy(
            fixture(&format!("kineto/h200/serving/{name}.json.gz")),
            job.join(format!("rank{rank}.json.gz")),
        )
        .unwrap();
    }
    let out = tmp.path().join("partials");
    std::fs::create_dir(&out).unwrap();
    let partials = write_partials(&rank_files(&job), &out, &["-q"]);
    // Two captures as one job's ranks: analyzed together only when forced.
    assert_merge_equals_analysis(std::slice::from_ref(&job), &partials, &["-q", "--force"]);
    let merged: serde_json::Value = serde_json::from_slice(&stdout(
        bin().arg("merge").args(&partials).args(["--json", "-"]),
    ))
    .unwrap();
    assert_eq!(merged["summary"]["iterations"], 24);
    let decode = merged["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "decode")
        .unwrap();
    // Per iteration the slower rank's time: the default run (cuDNN re-plans every new length).
    assert!(decode["p50_ns"].as_i64().unwrap() > 50_000_000, "{decode}");
    let phase_dir = tmp.path().join("decode");
    std::fs::create_dir(&phase_dir).unwrap();
    let flash = [fixture("kineto/h200/serving/serving_llama_flash.json.gz")];
    let one = write_partials(&flash, &phase_dir, &["--phase", "decode"]);
    assert_merge_equals_analysis(&flash, &one, &["--phase", "decode"]);
}
