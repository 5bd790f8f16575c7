//! What cannot be analyzed is refused, with a message naming the files and an exit code of its
//! own: ranks of two jobs, a rank directory's stray file of another format, a step selection
//! that keeps nothing, inputs without GPU activity; and what can is described as it is (a
//! trace without steps, the only step with the work).

use crate::common::{assert_valid_feed, bin, feed_of, fixture, stdout_of};
use crate::with_shared;
use std::path::PathBuf;

/// A directory holding copies of `files` (each `(source, name)`).
fn rank_dir(files: &[(PathBuf, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (src, name) in files {
        std::fs::copy(src, dir.path().join(name)).unwrap();
    }
    dir
}

fn parallel(job: &str, rank: u32) -> PathBuf {
    fixture(&format!("kineto/parallel/{job}/rank{rank}.json.gz"))
}

/// The binary's exit code and stderr on `args`.
fn refused(args: &[&str]) -> (i32, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Rank 0 of one 2-rank job beside rank 1 of another (both DDP-era captures with the same
/// distributedInfo) was analyzed as one job with a "straggler": now refused, naming both files
/// and that they were recorded 35 s apart; `--force` analyzes them together as before. Ranks of
/// one job still pass, and a rank given twice or a job of another world size is refused too.
#[test]
fn ranks_of_two_jobs_are_refused_unless_forced() {
    let dir = rank_dir(&[
        (parallel("cp", 0), "rank0.json.gz"),
        (parallel("fsdp1", 1), "rank1.json.gz"),
    ]);
    let path = dir.path().to_str().unwrap();
    let (code, err) = refused(&[path, "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("rank0.json.gz") && err.contains("rank1.json.gz"),
        "{err}"
    );
    assert!(
        err.contains("not one job") && err.contains("apart") && err.contains("--force"),
        "{err}"
    );
    let feed = feed_of(dir.path(), &["--force", "--quiet"]);
    assert_eq!(feed["ranks"].as_array().map(Vec::len), Some(2));
    // One job's ranks are analyzed as ever.
    let one = fixture("kineto/parallel/cp");
    assert_eq!(
        feed_of(&one, &["--quiet"])["ranks"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    // The same rank of two jobs.
    let dir = rank_dir(&[
        (parallel("cp", 0), "a.json.gz"),
        (parallel("fsdp1", 0), "b.json.gz"),
    ]);
    let (code, err) = refused(&[dir.path().to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("both hold rank 0"), "{err}");
    // Ranks of a 2-rank and a 4-rank job.
    let four = fixture("kineto/parallel4");
    let four_rank = std::fs::read_dir(&four)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir() && p.join("rank3.json.gz").exists())
        .expect("a 4-rank job")
        .join("rank3.json.gz");
    let dir = rank_dir(&[
        (parallel("cp", 0), "rank0.json.gz"),
        (four_rank, "rank3.json.gz"),
    ]);
    let (code, err) = refused(&[dir.path().to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("world_size"), "{err}");
}

/// An AMD `kernel_names.csv` among NVIDIA rank traces became a third rank; now it is skipped
/// with a warning naming it, and the job is the two ranks.
#[test]
fn a_file_of_another_format_in_a_rank_directory_is_skipped_with_a_notice() {
    with_shared!(shared => {
        let stray = shared.join("corpus/rocprofv3_sdk_docs/kernel_names.csv");
        let dir = rank_dir(&[
            (parallel("cp", 0), "rank0.json.gz"),
            (parallel("cp", 1), "rank1.json.gz"),
            (stray, "kernel_names.csv"),
        ]);
        let out = bin()
            .args([dir.path().to_str().unwrap(), "--json", "-"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("skipped") && err.contains("kernel_names.csv"), "{err}");
        let feed = assert_valid_feed(&out.stdout);
        assert_eq!(feed["ranks"].as_array().map(Vec::len), Some(2));
        assert_eq!(feed["inputs"].as_array().map(Vec::len), Some(2));
    });
}

/// `--steps 100..200` on a trace of steps that exist elsewhere exits 2 naming the steps it has
/// (it analyzed an empty window, exit 0); a selection inside them still works.
#[test]
fn a_step_selection_that_keeps_no_step_is_an_error_naming_the_steps() {
    let path = fixture("kineto/h100/eager_manual_attn.json.gz");
    let all = feed_of(&path, &["--quiet"]);
    let numbers: Vec<u64> = all["step_breakdown"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_u64().unwrap())
        .collect();
    let (lo, hi) = (numbers[0], numbers[numbers.len() - 1]);
    let (code, err) = refused(&[path.to_str().unwrap(), "--steps", "100..200"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--steps 100..200 selects no step")
            && err.contains(&format!("steps {lo}..={hi}")),
        "{err}"
    );
    let one = feed_of(&path, &["--quiet", "--steps", &hi.to_string()]);
    assert_eq!(one["summary"]["steps"], 1);
}

/// A Kineto trace cut before its first kernel has no GPU activity: exit 3 (a gate would have
/// passed on "Recommendations: none"), naming the file; `--allow-empty` reports it.
#[test]
fn inputs_without_gpu_activity_exit_3_unless_allowed() {
    let raw = {
        let mut s = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(
                std::fs::File::open(fixture("kineto/h100/eager_manual_attn.json.gz")).unwrap(),
            ),
            &mut s,
        )
        .unwrap();
        s
    };
    let kernel = find(&raw, b"\"cat\": \"kernel\"")
        .or_else(|| find(&raw, b"\"cat\":\"kernel\""))
        .expect("a kernel");
    let cut = raw[..kernel].iter().rposition(|&b| b == b'{').unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut_before_kernels.json");
    std::fs::write(&path, &raw[..cut]).unwrap();
    let p = path.to_str().unwrap();
    let (code, err) = refused(&[p, "--fail-on", "low"]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("cut_before_kernels.json") && err.contains("no GPU activity"),
        "{err}"
    );
    let out = bin()
        .args([p, "--allow-empty", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no GPU activity"));
    // A rank's partial, the other front door to a job, refuses it alike.
    let (code, err) = refused(&["partial", p, "-o", "/dev/null"]);
    assert_eq!(code, 3, "{err}");
    let (code, err) = refused(&["partial", p, "-o", "/dev/null", "--allow-empty", "-q"]);
    assert_eq!(code, 0, "{err}");
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// HTA's MI250 toy training trace has two steps: #1 with all 16 kernels (9.3 ms) and #2, a
/// 49 µs tail with none. #1 was dropped as a warm-up, so the step was 49 µs and 10 of 11 rungs
/// saved "~0 ns". The only step with the work is kept: the mean is of both, no warm-up finding,
/// and compile saves what it saves on step 1 alone. One step analyzed says "1 step".
#[test]
fn the_only_step_with_the_work_is_never_the_warm_up() {
    with_shared!(shared => {
        let path = shared.join("corpus/hta/mi250_minitoy_train_ROCm6_2_kineto.json.gz");
        let feed = feed_of(&path, &["--quiet"]);
        let steps = feed["step_breakdown"].as_array().unwrap();
        assert_eq!(steps.len(), 2);
        let (d1, d2) = (steps[0]["dur_ns"].as_f64().unwrap(), steps[1]["dur_ns"].as_f64().unwrap());
        assert!(steps[1]["gpu_busy_ns"].as_i64().unwrap() == 0 && d1 > 100.0 * d2);
        let mean = feed["summary"]["step_ns"]["mean"].as_f64().unwrap();
        assert!((mean - (d1 + d2) / 2.0).abs() <= 1.0, "{mean} vs {d1}, {d2}");
        let ids: Vec<&str> = feed["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        assert!(!ids.contains(&"warmup_in_window"), "{ids:?}");
        let compile = |f: &serde_json::Value| {
            f["recommendations"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["id"] == "compile.enable")
                .map(|r| r["est_savings_ns"].as_f64().unwrap() / f["summary"]["window_ns"].as_f64().unwrap())
                .expect("compile.enable")
        };
        let first = feed_of(&path, &["--quiet", "--steps", "1"]);
        let (all, one) = (compile(&feed), compile(&first));
        assert!(all > 0.5 && (all - one).abs() < 0.05, "{all} vs {one} on step 1 alone");
        let text = stdout_of(&path, &["--steps", "1"]);
        assert!(text.contains("steps    1 step, "), "{text}");
        assert!(!text.contains("cv 0.0%"), "{text}");
    });
}

/// A rocprof kernel trace has no steps: the header says so once, and the bound line speaks of
/// the window it measured, not of "each step".
#[test]
fn a_trace_without_steps_says_so_and_describes_its_window() {
    with_shared!(shared => {
        let path = shared.join("corpus/rocprof1_batched_gemm/results.json");
        let text = stdout_of(&path, &["--quiet"]);
        assert_eq!(text.matches("steps    none").count(), 1, "{text}");
        let bound = text.lines().find(|l| l.starts_with("bound")).expect("a bound line");
        assert!(bound.contains("the window is bound by"), "{bound}");
        assert!(!text.contains("each step"), "{text}");
    });
}

/// The same rules hold from the library: the pipeline's errors carry the exit code the binary
/// uses (2 for a mixed job, 3 for no GPU activity).
#[test]
fn the_library_refuses_with_the_binarys_exit_codes() {
    let dir = rank_dir(&[
        (parallel("cp", 0), "rank0.json.gz"),
        (parallel("fsdp1", 1), "rank1.json.gz"),
    ]);
    let paths = [dir.path().to_path_buf()];
    let err = rocprof_classify::run(&paths, &Default::default()).unwrap_err();
    assert!(
        matches!(err, rocprof_classify::error::RunError::MixedJob { .. }),
        "{err}"
    );
    assert_eq!(err.exit_code(), rocprof_classify::error::EXIT_ERROR);
    let forced = rocprof_classify::Config {
        force: true,
        ..Default::default()
    };
    assert!(rocprof_classify::run(&paths, &forced).is_ok());
}
