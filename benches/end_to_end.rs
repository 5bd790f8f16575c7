//! End-to-end speed and memory of the release binary at trace scale (issue 7's targets).
//!
//! `cargo bench --bench end_to_end` (needs ../shared). It builds the inputs once under
//! `target/bench-inputs/`: `big_eager.json` (186 MB, decompressed from traces/h100) and Kineto
//! traces of 50 MB, 200 MB, 1 GB and 2 GB that replicate big_eager's real events with shifted
//! timestamps, ids and step numbers; an 8-rank directory of big_eager; a 200 MB rocprofv3
//! `kernel_trace.csv` and a rocpd database of at least 900k dispatches and regions, replicated from the
//! corpus's real rows the same way. Then it runs
//! `rocprof-classify -q --json /dev/null INPUT` (every detector and the feed) and prints, per
//! input, the median wall time of the runs, MB/s (uncompressed bytes / 10^6 / s) and the peak RSS
//! of the process (from wait4), plus the one-thread serde_json skeleton parse of big_eager.
//!
//! With `BENCH_MAX_MB` of 2000 or more (the default) it also writes a compact 2 GB replica (no
//! whitespace, the most events per byte) and a replica of 13 big_eager copies one event per
//! line, and prints their peak RSS per host event (and compares them with the baseline).
//! `big_eager.json.gz` is timed against inflating it alone into a null sink.
//!
//! `BENCH_RUNS=N` sets the runs per input (default 3); `BENCH_MAX_MB=N` skips larger inputs;
//! `BENCH_ONLY=attribution` runs only the attribution on/off comparison on big_eager.
//! `BENCH_BASELINE=REV` first builds commit REV (a git worktree, release, its own target
//! directory under `bench-baseline/`, seeded with this build's dependencies) and runs it against
//! this build on big_eager and on 8 ranks of it, alternating, and prints old/new wall and
//! peak-RSS ratios;
//! `BENCH_ONLY=baseline` stops after that. `BENCH_ONLY=floors` runs only big_eager against its
//! floors: `big_eager.json.gz` against inflating it alone, and the one-thread serde skeleton
//! parse.

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rocprof-classify");

/// Wall time and peak RSS (bytes) of one run of the binary.
fn run_once(args: &[&str], input: &Path) -> (Duration, u64) {
    run_bin(Path::new(BIN), args, input)
}

/// [`run_once`] of another binary (a baseline build).
fn run_bin(bin: &Path, args: &[&str], input: &Path) -> (Duration, u64) {
    let start = Instant::now();
    #[allow(clippy::zombie_processes)]
    let child = Command::new(bin)
        .args(args)
        .arg(input)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the release binary runs");
    // The child is reaped by wait4 below (which also gives its own peak RSS), not by Child::wait.
    let child = std::mem::ManuallyDrop::new(child);
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data, filled by the kernel for this child only.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert_eq!(waited, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{} failed on {}",
        bin.display(),
        input.display()
    );
    (wall, usage.ru_maxrss as u64 * 1024)
}

fn median_run(args: &[&str], input: &Path, runs: usize) -> (Duration, u64) {
    let mut results: Vec<(Duration, u64)> = (0..runs).map(|_| run_once(args, input)).collect();
    results.sort();
    results[runs / 2]
}

/// Uncompressed bytes of an input (a directory: the sum of its files).
fn input_bytes(p: &Path) -> u64 {
    if p.is_dir() {
        return std::fs::read_dir(p)
            .unwrap()
            .map(|e| input_bytes(&e.unwrap().path()))
            .sum();
    }
    if p.extension().is_some_and(|e| e == "gz") {
        let mut n = 0u64;
        let mut d = flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap());
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let k = d.read(&mut buf).unwrap();
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        return n;
    }
    std::fs::metadata(p).unwrap().len()
}

/// How a replica writes its events.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    /// Indented, as torch.profiler writes them.
    Pretty,
    /// No whitespace between tokens (as some writers emit; ~20% more events per byte).
    Compact,
    /// One compact event per line (as trace mergers and streaming writers emit).
    Lines,
}

/// When a replica stops.
#[derive(Clone, Copy)]
enum Until {
    /// At least this many bytes.
    Bytes(u64),
    /// After this many whole copies.
    Copies(u64),
}

/// Writes a Kineto trace whose events are big_eager's, copy after copy, each copy shifted past
/// the previous one in time (by the trace's span), with its ids offset by copy x 10,000,000
/// and its step numbers by copy x 100,000; process and thread names once.
fn replicate(src: &str, until: Until, out: &Path, layout: Layout) {
    let doc: serde_json::Map<String, Value> = serde_json::from_str(src).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let (mut t0, mut t1) = (f64::MAX, f64::MIN);
    for e in events {
        if let Some(ts) = e["ts"].as_f64() {
            t0 = t0.min(ts);
            t1 = t1.max(ts + e["dur"].as_f64().unwrap_or(0.0));
        }
    }
    let span = t1 - t0 + 1000.0;
    let tmp = out.with_extension("partial");
    let mut w = BufWriter::new(std::fs::File::create(&tmp).unwrap());
    match layout {
        Layout::Compact => {
            write!(w, "{{\"schemaVersion\":1,\"deviceProperties\":").unwrap();
            serde_json::to_writer(&mut w, &doc["deviceProperties"]).unwrap();
            write!(w, ",\"traceEvents\":[").unwrap();
        }
        Layout::Lines => {
            write!(w, "{{\"schemaVersion\":1,\"deviceProperties\":").unwrap();
            serde_json::to_writer(&mut w, &doc["deviceProperties"]).unwrap();
            writeln!(w, ",\"traceEvents\":[").unwrap();
        }
        Layout::Pretty => {
            write!(w, "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": ").unwrap();
            serde_json::to_writer_pretty(&mut w, &doc["deviceProperties"]).unwrap();
            write!(w, ",\n  \"traceEvents\": [\n").unwrap();
        }
    }
    let separator: &[u8] = if layout == Layout::Compact {
        b","
    } else {
        b",\n"
    };
    let mut written = 0u64;
    let mut first = true;
    'copies: for copy in 0u64.. {
        if matches!(until, Until::Copies(n) if copy == n) {
            break;
        }
        for e in events {
            // Metadata (process and thread names) once.
            if copy > 0 && e["ph"] == "M" {
                continue;
            }
            let mut e = e.clone();
            if copy > 0 {
                if let Some(ts) = e["ts"].as_f64() {
                    e["ts"] = serde_json::json!(ts + span * copy as f64);
                }
                for key in ["External id", "correlation", "Record function id"] {
                    if let Some(v) = e["args"][key].as_u64() {
                        e["args"][key] = (v + copy * 10_000_000).into();
                    }
                }
                if let Some(v) = e["id"].as_u64() {
                    e["id"] = (v + copy * 10_000_000).into();
                }
                if let Some(n) = e["name"]
                    .as_str()
                    .and_then(|n| n.strip_prefix("ProfilerStep#"))
                {
                    if let Ok(k) = n.parse::<u64>() {
                        e["name"] = format!("ProfilerStep#{}", k + copy * 100_000).into();
                    }
                }
            }
            let text = if layout == Layout::Pretty {
                serde_json::to_string_pretty(&e).unwrap()
            } else {
                serde_json::to_string(&e).unwrap()
            };
            if !first {
                w.write_all(separator).unwrap();
            }
            first = false;
            w.write_all(text.as_bytes()).unwrap();
            written += (text.len() + separator.len()) as u64;
            if matches!(until, Until::Bytes(b) if written >= b) {
                break 'copies;
            }
        }
    }
    match layout {
        Layout::Compact => write!(w, "],\"traceName\":\"replicated big_eager\"}}").unwrap(),
        Layout::Lines => write!(w, "\n],\"traceName\":\"replicated big_eager\"}}\n").unwrap(),
        Layout::Pretty => {
            write!(w, "\n  ],\n  \"traceName\": \"replicated big_eager\"\n}}\n").unwrap()
        }
    }
    w.flush().unwrap();
    drop(w);
    std::fs::rename(&tmp, out).unwrap();
}

/// Writes a rocprofv3 `kernel_trace.csv` of at least `target` bytes from a real one's rows,
/// copy after copy, shifted in time, with fresh dispatch and correlation ids.
fn replicate_rocprofv3_csv(src: &Path, target: u64, out: &Path) {
    let mut rdr = csv::Reader::from_path(src).unwrap();
    let header = rdr.headers().unwrap().clone();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (start, end) = (col("Start_Timestamp"), col("End_Timestamp"));
    let (dispatch, corr) = (col("Dispatch_Id"), col("Correlation_Id"));
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    let num = |r: &csv::StringRecord, i: usize| r[i].parse::<u64>().unwrap();
    let t0 = rows.iter().map(|r| num(r, start)).min().unwrap();
    let span = rows.iter().map(|r| num(r, end)).max().unwrap() - t0 + 1000;
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let tmp = out.with_extension("partial");
    let mut w = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::NonNumeric)
        .from_path(&tmp)
        .unwrap();
    w.write_record(&header).unwrap();
    let mut copy = 0u64;
    'copies: loop {
        for r in &rows {
            let mut fields: Vec<String> = r.iter().map(str::to_string).collect();
            fields[start] = (num(r, start) + span * copy).to_string();
            fields[end] = (num(r, end) + span * copy).to_string();
            fields[dispatch] = (num(r, dispatch) + copy * 1_000).to_string();
            fields[corr] = (num(r, corr) + copy * 1_000).to_string();
            w.write_record(&fields).unwrap();
            if copy % 1024 == 0 && w.get_ref().metadata().unwrap().len() >= target {
                break 'copies;
            }
        }
        copy += 1;
    }
    w.flush().unwrap();
    drop(w);
    std::fs::rename(&tmp, out).unwrap();
}

/// Copies a rocpd database and doubles its kernel dispatches, regions and copies until it holds
/// at least `rows` of them, each copy shifted past the previous in time (ids are new; the copies
/// share the originals' events and strings).
fn replicate_rocpd(src: &Path, rows: u64, out: &Path) {
    let tmp = out.with_extension("partial");
    std::fs::copy(src, &tmp).unwrap();
    let db = rusqlite::Connection::open(&tmp).unwrap();
    db.pragma_update(None, "journal_mode", "OFF").unwrap();
    db.pragma_update(None, "synchronous", "OFF").unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND (name LIKE 'rocpd_kernel_dispatch%' OR name LIKE 'rocpd_region%' OR name LIKE 'rocpd_memory_copy%')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let count = |db: &rusqlite::Connection| -> u64 {
        tables
            .iter()
            .map(|t| {
                db.query_row(&format!("SELECT count(*) FROM \"{t}\""), [], |r| {
                    r.get::<_, i64>(0)
                })
                .unwrap() as u64
            })
            .sum()
    };
    let (t0, t1): (i64, i64) = db
        .query_row(
            &format!("SELECT min(start), max(\"end\") FROM \"{}\"", tables[0]),
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let mut span = t1 - t0 + 1000;
    while count(&db) < rows {
        for t in &tables {
            let cols: Vec<String> = db
                .prepare(&format!("PRAGMA table_info(\"{t}\")"))
                .unwrap()
                .query_map([], |r| r.get::<_, String>(1))
                .unwrap()
                .map(Result::unwrap)
                .filter(|c| c != "id")
                .collect();
            let select: Vec<String> = cols
                .iter()
                .map(|c| match c.as_str() {
                    "start" | "end" => format!("\"{c}\" + {span}"),
                    _ => format!("\"{c}\""),
                })
                .collect();
            let names: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
            db.execute(
                &format!(
                    "INSERT INTO \"{t}\" ({}) SELECT {} FROM \"{t}\"",
                    names.join(", "),
                    select.join(", ")
                ),
                [],
            )
            .unwrap();
        }
        span *= 2;
    }
    drop(db);
    std::fs::rename(&tmp, out).unwrap();
}

/// What the skeleton parse reads of each event: the fields every analysis needs, strings borrowed.
#[derive(Deserialize)]
#[allow(dead_code)]
struct SkeletonEvent<'a> {
    #[serde(borrow)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    pid: Option<IgnoredAny>,
    tid: Option<IgnoredAny>,
    ts: Option<f64>,
    dur: Option<f64>,
    args: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Skeleton<'a> {
    #[serde(borrow, rename = "traceEvents")]
    events: Vec<SkeletonEvent<'a>>,
}

fn skeleton_parse(path: &Path) -> Duration {
    let start = Instant::now();
    let text = std::fs::read_to_string(path).unwrap();
    let doc: Skeleton = serde_json::from_str(&text).unwrap();
    std::hint::black_box(doc.events.len());
    start.elapsed()
}

/// Builds one input in a child process: the generator's memory (the whole source trace as JSON
/// values) must not count in the peak RSS of the measured runs, which the kernel carries over a
/// fork from the parent.
fn generate_in_child(what: &str, out: &Path, src: &Path, mb: u64) {
    let status = Command::new(std::env::current_exe().unwrap())
        .env("BENCH_GENERATE", what)
        .env("BENCH_GENERATE_OUT", out)
        .env("BENCH_GENERATE_SRC", src)
        .env("BENCH_GENERATE_MB", mb.to_string())
        .status()
        .unwrap();
    assert!(status.success(), "generating {} failed", out.display());
}

fn generate(what: &str) {
    let var = |k: &str| std::env::var(k).unwrap();
    let (out, src) = (
        PathBuf::from(var("BENCH_GENERATE_OUT")),
        PathBuf::from(var("BENCH_GENERATE_SRC")),
    );
    match what {
        "gunzip" => {
            let mut text = String::new();
            flate2::read::GzDecoder::new(std::fs::File::open(&src).unwrap())
                .read_to_string(&mut text)
                .unwrap();
            std::fs::write(&out, &text).unwrap();
        }
        "rocprofv3_csv" => {
            let mb: u64 = var("BENCH_GENERATE_MB").parse().unwrap();
            replicate_rocprofv3_csv(&src, mb * 1_000_000, &out);
        }
        "rocpd" => {
            let rows: u64 = var("BENCH_GENERATE_MB").parse().unwrap();
            replicate_rocpd(&src, rows, &out);
        }
        kind => {
            let text = std::fs::read_to_string(&src).unwrap();
            let n: u64 = var("BENCH_GENERATE_MB").parse().unwrap();
            let (until, layout) = match kind {
                "replicate_compact" => (Until::Bytes(n * 1_000_000), Layout::Compact),
                // Here the number is of copies.
                "replicate_lines" => (Until::Copies(n), Layout::Lines),
                _ => (Until::Bytes(n * 1_000_000), Layout::Pretty),
            };
            replicate(&text, until, &out, layout);
        }
    }
}

/// Runs git in the current directory; its trimmed stdout.
fn git(args: &[&str]) -> String {
    let out = Command::new("git").args(args).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The release binary of commit `rev`, built once per commit hash into
/// `bench-baseline/<hash>/`: a detached worktree, built with its own target directory (seeded
/// from this build's release directory, so only the crate itself compiles).
fn build_baseline(rev: &str, target_dir: &Path) -> PathBuf {
    let hash = git(&["rev-parse", "--verify", &format!("{rev}^{{commit}}")]);
    let root = std::fs::canonicalize(target_dir)
        .unwrap()
        .join("bench-baseline");
    let bin = root.join(&hash).join("rocprof-classify");
    if bin.exists() {
        return bin;
    }
    let worktree = root.join(format!("src-{hash}"));
    let target = root.join("target");
    if !target.join("release").exists() {
        std::fs::create_dir_all(&target).unwrap();
        let seeded = Command::new("cp")
            .arg("-r")
            .arg(std::fs::canonicalize(target_dir).unwrap().join("release"))
            .arg(&target)
            .status()
            .is_ok_and(|s| s.success());
        eprintln!("baseline: seeded its target directory from this build: {seeded}");
    }
    let _ = std::fs::remove_dir_all(&worktree);
    let _ = git(&["worktree", "prune"]);
    git(&[
        "worktree",
        "add",
        "--detach",
        &worktree.to_string_lossy(),
        &hash,
    ]);
    eprintln!("baseline: building {hash} (release) ...");
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--locked",
            "--bin",
            "rocprof-classify",
        ])
        .current_dir(&worktree)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the baseline {hash} failed");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(target.join("release").join("rocprof-classify"), &bin).unwrap();
    let _ = git(&["worktree", "remove", "--force", &worktree.to_string_lossy()]);
    bin
}

/// This build against the baseline binary on big_eager: runs alternate, so drift on a shared
/// machine hits both alike. Peak RSS with the default threads depends on how the reader's
/// threads interleave (several MB from run to run), so it is compared on one thread too, where
/// it repeats to the 100 kB.
fn against_baseline(rev: &str, old: &Path, (big, ranks): (&Path, &Path), runs: usize) {
    let runs = runs.max(5);
    let pair_on = |input: &Path, args: &[&str]| alternating(old, args, input, runs);
    let pair = |args: &[&str]| pair_on(big, args);
    let (ow, nw, orss, nrss) = pair(&["-q", "--json", "/dev/null"]);
    let (ow1, nw1, orss1, nrss1) = pair(&["-q", "--threads", "1", "--json", "/dev/null"]);
    println!(
        "baseline {rev} vs this build on big_eager ({runs} runs each, alternating, medians): wall {:.3} s vs {:.3} s, old/new wall {:.3}; peak RSS {:.1} MB vs {:.1} MB (new/old {:.3}); one thread: wall {:.3} s vs {:.3} s, old/new wall {:.3}, peak RSS {:.1} MB vs {:.1} MB (new/old {:.3})",
        ow.as_secs_f64(),
        nw.as_secs_f64(),
        ow.as_secs_f64() / nw.as_secs_f64(),
        orss as f64 / 1e6,
        nrss as f64 / 1e6,
        nrss as f64 / orss as f64,
        ow1.as_secs_f64(),
        nw1.as_secs_f64(),
        ow1.as_secs_f64() / nw1.as_secs_f64(),
        orss1 as f64 / 1e6,
        nrss1 as f64 / 1e6,
        nrss1 as f64 / orss1 as f64
    );
    let (ow, nw, orss, nrss) = pair_on(ranks, &["-q", "--json", "/dev/null"]);
    println!(
        "baseline {rev} vs this build on 8 ranks of big_eager ({runs} runs each, alternating, medians): wall {:.3} s vs {:.3} s, old/new wall {:.3}; peak RSS {:.1} MB vs {:.1} MB (new/old {:.3})",
        ow.as_secs_f64(),
        nw.as_secs_f64(),
        ow.as_secs_f64() / nw.as_secs_f64(),
        orss as f64 / 1e6,
        nrss as f64 / 1e6,
        nrss as f64 / orss as f64
    );
}

/// The cost of attributing GPU time to ops, modules and source lines: big_eager with and
/// without it, runs interleaved so machine noise hits both alike.
fn attribution_cost(big: &Path, runs: usize) {
    let on_args = ["-q", "--json", "/dev/null"];
    let off_args = ["-q", "--no-attribution", "--json", "/dev/null"];
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(3) {
        on.push(run_once(&on_args, big).0);
        off.push(run_once(&off_args, big).0);
    }
    on.sort();
    off.sort();
    let (on, off) = (on[on.len() / 2], off[off.len() / 2]);
    println!(
        "big_eager with attribution {:.3} s, without {:.3} s: {:.2}x (median of {})",
        on.as_secs_f64(),
        off.as_secs_f64(),
        on.as_secs_f64() / off.as_secs_f64(),
        runs.max(3)
    );
}

fn main() {
    if let Ok(what) = std::env::var("BENCH_GENERATE") {
        return generate(&what);
    }
    let shared = Path::new("../shared");
    let src_gz = shared.join("traces/h100/big_eager.json.gz");
    if !src_gz.exists() {
        eprintln!("skipped: {} is absent", src_gz.display());
        return;
    }
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let max_mb: u64 = std::env::var("BENCH_MAX_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(u64::MAX);
    let target_dir =
        PathBuf::from(std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()));
    let dir = target_dir.join("bench-inputs");
    std::fs::create_dir_all(&dir).unwrap();

    let big = dir.join("big_eager.json");
    if !big.exists() {
        generate_in_child("gunzip", &big, &src_gz, 0);
    }
    let replicas = large_replicas(&dir, &big, max_mb);
    if let Ok(rev) = std::env::var("BENCH_BASELINE") {
        let old = build_baseline(&rev, &target_dir);
        let ranks = rank_directory(&dir, &big);
        against_baseline(&rev, &old, (&big, &ranks), runs);
        for (label, p) in &replicas {
            against_baseline_on(&rev, &old, (label, p), runs);
        }
    }
    if std::env::var("BENCH_ONLY").is_ok_and(|v| v == "baseline") {
        return;
    }
    if std::env::var("BENCH_ONLY").is_ok_and(|v| v == "floors") {
        gzip_floor(&src_gz, runs);
        let (big_wall, _) = median_run(&["-q", "--json", "/dev/null"], &big, runs);
        skeleton_parse_floor(&big, runs, big_wall);
        return;
    }
    attribution_cost(&big, runs);
    if std::env::var("BENCH_ONLY").is_ok_and(|v| v == "attribution") {
        return;
    }
    gzip_floor(&src_gz, runs);
    let mut generated = replicated_kineto(&dir, &big, max_mb);
    generated.extend(replicas.iter().cloned());
    let ranks = rank_directory(&dir, &big);

    // rocprofv3 CSV and rocpd at scale, from the corpus's real rows.
    let replicated_amd = replicated_amd(shared, &dir, max_mb);

    let mut inputs = corpus_inputs(shared, &big, &src_gz);
    inputs.extend(replicated_amd);
    inputs.extend(generated);

    let args = ["-q", "--json", "/dev/null"];
    let big_wall = time_inputs(&inputs, &big, &args, runs);

    // Several ranks: default threads against one thread.
    compare_rank_threads(&ranks, &args, runs);

    // Memory per host event at scale: each replica's peak RSS over its host events.
    for (label, p) in &replicas {
        let (_, rss) = median_run(&args, p, 1);
        let (_, host) = event_counts(p);
        println!(
            "{label}: {host} host events, peak RSS {:.1} MB, {:.0} B per host event",
            rss as f64 / 1e6,
            rss as f64 / host as f64
        );
    }

    // The floor: serde_json parsing big_eager's event skeleton on one thread.
    skeleton_parse_floor(&big, runs, big_wall);
    same_feed_for_any_thread_count(&big, &dir);
}

/// big_eager's feed is byte-identical with 1, 2 and 8 worker threads.
fn same_feed_for_any_thread_count(big: &Path, dir: &Path) {
    let feed = |threads: &str| {
        let out = dir.join(format!("big_eager.threads{threads}.json"));
        let status = Command::new(BIN)
            .args(["-q", "--threads", threads, "--json"])
            .arg(&out)
            .arg(big)
            .status()
            .expect("the release binary runs");
        assert!(status.success());
        let bytes = std::fs::read(&out).unwrap();
        std::fs::remove_file(&out).unwrap();
        bytes
    };
    let one = feed("1");
    for threads in ["2", "8"] {
        assert!(
            feed(threads) == one,
            "big_eager's feed differs between --threads 1 and --threads {threads}"
        );
    }
    println!("big_eager's feed is byte-identical with --threads 1, 2 and 8");
}

/// The 2 GB-scale replicas, made if absent: compact (no whitespace: the most events per
/// byte) to 2 GB, and 13 copies of big_eager one event per line (`replicate_lines`).
fn large_replicas(dir: &Path, big: &Path, max_mb: u64) -> Vec<(String, PathBuf)> {
    if max_mb < 2000 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (label, file, kind, n) in [
        (
            "Kineto JSON, compact replica 2 GB",
            "kineto_2000mb_compact.json",
            "replicate_compact",
            2000,
        ),
        (
            "Kineto JSON, 13 copies one event per line",
            "kineto_13copies_lines.json",
            "replicate_lines",
            13,
        ),
    ] {
        let p = dir.join(file);
        if !p.exists() {
            eprintln!("generating {} ...", p.display());
            generate_in_child(kind, &p, big, n);
        }
        out.push((label.to_string(), p));
    }
    out
}

/// The baseline binary and this build run alternately on `input`: (old wall, new wall, old
/// peak RSS, new peak RSS), each a median of `runs`.
fn alternating(
    old: &Path,
    args: &[&str],
    input: &Path,
    runs: usize,
) -> (Duration, Duration, u64, u64) {
    let (mut o, mut n) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        o.push(run_bin(old, args, input));
        n.push(run_once(args, input));
    }
    o.sort();
    n.sort();
    let rss = |v: &[(Duration, u64)]| {
        let mut r: Vec<u64> = v.iter().map(|x| x.1).collect();
        r.sort_unstable();
        r[r.len() / 2]
    };
    (o[runs / 2].0, n[runs / 2].0, rss(&o), rss(&n))
}

/// The baseline against this build on one large input: alternating runs, medians.
fn against_baseline_on(rev: &str, old: &Path, (label, input): (&str, &Path), runs: usize) {
    let runs = runs.max(5);
    let (ow, nw, orss, nrss) = alternating(old, &["-q", "--json", "/dev/null"], input, runs);
    let mb = input_bytes(input) as f64 / 1e6;
    println!(
        "baseline {rev} vs this build on {label} ({runs} runs each, alternating, medians): wall {:.3} s vs {:.3} s ({:.0} vs {:.0} MB/s), old/new wall {:.3}; peak RSS {:.1} MB vs {:.1} MB",
        ow.as_secs_f64(),
        nw.as_secs_f64(),
        mb / ow.as_secs_f64(),
        mb / nw.as_secs_f64(),
        ow.as_secs_f64() / nw.as_secs_f64(),
        orss as f64 / 1e6,
        nrss as f64 / 1e6,
    );
}

/// big_eager.json.gz against its decompression alone: the reader's inflate backend (this
/// crate's flate2 build) into a null sink, runs alternating with the binary's.
fn gzip_floor(src_gz: &Path, runs: usize) {
    let args = ["-q", "--json", "/dev/null"];
    let (mut inflate, mut whole) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(3) {
        let start = Instant::now();
        let file = std::fs::File::open(src_gz).unwrap();
        let mut gz = flate2::read::GzDecoder::new(std::io::BufReader::with_capacity(1 << 20, file));
        std::io::copy(&mut gz, &mut std::io::sink()).unwrap();
        inflate.push(start.elapsed());
        whole.push(run_once(&args, src_gz).0);
    }
    inflate.sort();
    whole.sort();
    let (floor, wall) = (inflate[inflate.len() / 2], whole[whole.len() / 2]);
    println!(
        "big_eager.json.gz: {:.3} s end to end vs {:.3} s to inflate it alone (same backend, null sink): {:.2}x (medians of {})",
        wall.as_secs_f64(),
        floor.as_secs_f64(),
        wall.as_secs_f64() / floor.as_secs_f64(),
        inflate.len()
    );
}

/// The replicated Kineto traces up to `max_mb` (50 MB to 2 GB), generated from big_eager if absent.
fn replicated_kineto(dir: &Path, big: &Path, max_mb: u64) -> Vec<(String, PathBuf)> {
    let mut generated = Vec::new();
    for mb in [50u64, 200, 1000, 2000] {
        let p = dir.join(format!("kineto_{mb}mb.json"));
        if mb <= max_mb && !p.exists() {
            eprintln!("generating {} ...", p.display());
            generate_in_child("replicate", &p, big, mb);
        }
        if mb <= max_mb {
            generated.push((format!("Kineto JSON, replicated {mb} MB"), p));
        }
    }
    generated
}

/// An 8-rank directory of big_eager (hard links, or copies), made if absent.
fn rank_directory(dir: &Path, big: &Path) -> PathBuf {
    let ranks = dir.join("ranks8");
    if !ranks.exists() {
        std::fs::create_dir_all(&ranks).unwrap();
        for r in 0..8 {
            std::fs::hard_link(big, ranks.join(format!("rank{r}.json")))
                .or_else(|_| std::fs::copy(big, ranks.join(format!("rank{r}.json"))).map(|_| ()))
                .unwrap();
        }
    }
    ranks
}

/// rocprofv3 CSV (200 MB) and rocpd (>= 900k rows) inputs from the corpus's rows, made if absent.
fn replicated_amd(shared: &Path, dir: &Path, max_mb: u64) -> Vec<(String, PathBuf)> {
    let mut replicated_amd = Vec::new();
    let v3_src = shared.join("corpus/rocprofv3_sdk_docs_2025/kernel_trace.csv");
    let v3 = dir.join("rocprofv3_200mb").join("run_kernel_trace.csv");
    if v3_src.exists() && 200 <= max_mb {
        if !v3.exists() {
            eprintln!("generating {} ...", v3.display());
            generate_in_child("rocprofv3_csv", &v3, &v3_src, 200);
        }
        replicated_amd.push((
            "rocprofv3 CSV, replicated 200 MB".to_string(),
            v3.parent().unwrap().to_path_buf(),
        ));
    }
    let rocpd_src = shared.join("corpus/rocpd/15_results.db");
    let rocpd = dir.join("rocpd_900k_results.db");
    if rocpd_src.exists() {
        if !rocpd.exists() {
            eprintln!("generating {} ...", rocpd.display());
            generate_in_child("rocpd", &rocpd, &rocpd_src, 900_000);
        }
        replicated_amd.push((
            "rocpd SQLite, replicated to >= 900k rows".to_string(),
            rocpd,
        ));
    }
    replicated_amd
}

/// big_eager, its gzip original and the corpus's real traces that are present.
fn corpus_inputs(shared: &Path, big: &Path, src_gz: &Path) -> Vec<(String, PathBuf)> {
    let mut inputs: Vec<(String, PathBuf)> = vec![
        ("Kineto JSON, big_eager (H100)".into(), big.to_path_buf()),
        ("Kineto .json.gz, big_eager".into(), src_gz.to_path_buf()),
    ];
    for (label, rel) in [
        (
            "Kineto .json.gz, xDiT Flux MI300X",
            "corpus/tracelens/profile_trace_rank_0.json.gz",
        ),
        (
            "rocprofv3 JSON .gz (43,915 dispatches)",
            "corpus/tracelens_rocprof/908_results.json.gz",
        ),
        ("rocprofv3 CSV directory", "corpus/rocprofv3_sdk_docs_2025"),
        ("rocpd SQLite", "corpus/rocpd/15_results.db"),
    ] {
        let p = shared.join(rel);
        if p.exists() {
            inputs.push((label.into(), p));
        }
    }
    inputs
}

/// Times each input and prints the table; returns big_eager's median wall time.
fn time_inputs(inputs: &[(String, PathBuf)], big: &Path, args: &[&str], runs: usize) -> Duration {
    println!(
        "rocprof-classify end to end ({} runs per input, medians; full analysis + JSON feed)",
        runs
    );
    println!(
        "{:<42} {:>10} {:>10} {:>10} {:>11}",
        "input", "MB", "wall s", "MB/s", "peak RSS MB"
    );
    let mut big_wall = Duration::ZERO;
    for (label, p) in inputs {
        let mb = input_bytes(p) as f64 / 1e6;
        let (wall, rss) = median_run(args, p, runs);
        if p == big {
            big_wall = wall;
        }
        println!(
            "{label:<42} {mb:>10.1} {:>10.3} {:>10.1} {:>11.1}",
            wall.as_secs_f64(),
            mb / wall.as_secs_f64(),
            rss as f64 / 1e6
        );
    }
    big_wall
}

/// The 8-rank directory with default threads against `--threads 1`.
fn compare_rank_threads(ranks: &Path, args: &[&str], runs: usize) {
    let mb = input_bytes(ranks) as f64 / 1e6;
    let (par, par_rss) = median_run(args, ranks, runs);
    let (one, one_rss) = median_run(
        &["-q", "--threads", "1", "--json", "/dev/null"],
        ranks,
        runs,
    );
    println!(
        "{:<42} {mb:>10.1} {:>10.3} {:>10.1} {:>11.1}",
        "8 ranks x big_eager, default threads",
        par.as_secs_f64(),
        mb / par.as_secs_f64(),
        par_rss as f64 / 1e6
    );
    println!(
        "{:<42} {mb:>10.1} {:>10.3} {:>10.1} {:>11.1}",
        "8 ranks x big_eager, --threads 1",
        one.as_secs_f64(),
        mb / one.as_secs_f64(),
        one_rss as f64 / 1e6
    );
    println!(
        "8-rank speed-up over --threads 1: {:.2}x",
        one.as_secs_f64() / par.as_secs_f64()
    );
}

/// The one-thread serde_json skeleton parse of big_eager, against the end-to-end wall time.
fn skeleton_parse_floor(big: &Path, runs: usize, big_wall: Duration) {
    // The runs first: a child's peak RSS starts at its parent's at the fork, and the skeleton
    // parse below holds the whole file.
    let one_thread = ["-q", "--threads", "1", "--json", "/dev/null"];
    let (one, one_rss) = median_run(&one_thread, big, runs);
    let (_, default_rss) = median_run(&["-q", "--json", "/dev/null"], big, runs);
    let (_, host) = event_counts(big);
    // The fixed base: a small trace (binary, rules, buffers).
    let small = Path::new("fixtures/kineto/h100/eager_launch_bound.json.gz");
    let (_, base) = median_run(&one_thread, small, runs);
    let mut skel: Vec<Duration> = (0..runs).map(|_| skeleton_parse(big)).collect();
    skel.sort();
    let s = skel[runs / 2];
    println!(
        "serde_json skeleton parse of big_eager (1 thread, in memory): {:.3} s; end-to-end analysis runs at {:.2}x its speed (default threads, {:.3} s) and {:.2}x with --threads 1 ({:.3} s)",
        s.as_secs_f64(),
        s.as_secs_f64() / big_wall.as_secs_f64(),
        big_wall.as_secs_f64(),
        s.as_secs_f64() / one.as_secs_f64(),
        one.as_secs_f64()
    );
    let per = |rss: u64| rss as f64 / host as f64;
    let beyond = |rss: u64| rss.saturating_sub(base) as f64 / host as f64;
    println!(
        "big_eager peak RSS per host event ({host} host events): {:.0} B default threads, {:.0} B --threads 1; beyond the {:.1} MB base of a small trace: {:.0} B and {:.0} B",
        per(default_rss),
        per(one_rss),
        base as f64 / 1e6,
        beyond(default_rss),
        beyond(one_rss)
    );
}

/// GPU activities and host events of a trace, as the binary's `--timings` counts them.
fn event_counts(path: &Path) -> (u64, u64) {
    let out = Command::new(BIN)
        .args(["-q", "--timings", "--json", "/dev/null"])
        .arg(path)
        .output()
        .expect("the release binary runs");
    let text = String::from_utf8_lossy(&out.stderr);
    // "timings: read 0.753 s (48000 GPU activities, 381202 host events), analysis …"
    let number_before = |what: &str| -> u64 {
        let end = text.find(what).expect("--timings counts");
        text[..end]
            .trim_end()
            .rsplit(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .expect("a count")
    };
    (
        number_before(" GPU activities"),
        number_before(" host events"),
    )
}
