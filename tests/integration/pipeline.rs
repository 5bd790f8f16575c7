//! The library's one call, `rocprof_classify::run`, on real traces: it is what the command line
//! runs (same feed, logs joined), its activity table agrees with its analysis, and a caller can
//! follow its progress and cancel it.

use crate::common::{bin, fixture};
use rocprof_classify::error::RunError;
use rocprof_classify::ingest::{Cancel, Progress};
use rocprof_classify::{run, Config};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[test]
fn the_library_run_is_what_the_command_line_prints() {
    let zoo = fixture("kineto/zoo");
    let inputs = vec![
        zoo.join("gpt2_train_compiled.json.gz"),
        zoo.join("gpt2_train_compiled.torch_logs.txt"),
    ];
    let r = run(&inputs, &Config::default()).expect("runs");
    // The log joined the trace: it is an input, and the findings carry its causes.
    assert_eq!(r.analysis.inputs.len(), 2);
    let ours = rocprof_classify::report::json::render(&r);
    let cli = bin()
        .args(&inputs)
        .args(["-q", "--json", "-"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(ours == cli, "the library's feed differs from the binary's");
}

#[test]
fn the_activity_table_agrees_with_the_analysis() {
    let r = run(
        &[fixture("kineto/zoo/resnet18_train_eager.json.gz")],
        &Config::default(),
    )
    .unwrap();
    let (trace, table) = (&r.trace, &r.activities);
    assert_eq!(table.len(), trace.activities.len());
    let mut by_bucket: BTreeMap<&str, i64> = BTreeMap::new();
    let (mut with_op, mut with_step) = (0, 0);
    for a in 0..table.len() {
        let row = table.get(trace, a);
        if row.in_window {
            *by_bucket.entry(row.bucket.as_str()).or_default() += trace.activities.dur_ns[a];
        }
        with_op += usize::from(row.op.is_some());
        with_step += usize::from(row.step.is_some());
    }
    for b in &r.analysis.buckets {
        assert_eq!(
            by_bucket.get(b.bucket.as_str()).copied().unwrap_or(0),
            b.kernel_ns,
            "{}",
            b.bucket.as_str()
        );
    }
    // An eager training step launches everything from ATen ops inside ProfilerStep ranges.
    assert!(
        with_op * 10 >= table.len() * 9,
        "{with_op} of {} have an op",
        table.len()
    );
    assert!(
        with_step * 10 >= table.len() * 9,
        "{with_step} of {} have a step",
        table.len()
    );
    // Most conv time is launched by convolution ops (a few copies inside them are conv too:
    // the enclosing op decides the bucket).
    let mut conv_ops: BTreeMap<&str, i64> = BTreeMap::new();
    for a in 0..table.len() {
        let row = table.get(trace, a);
        if row.bucket.as_str() == "conv" {
            *conv_ops.entry(row.op.unwrap_or("-")).or_default() += trace.activities.dur_ns[a];
        }
    }
    let top = conv_ops
        .iter()
        .max_by_key(|(_, ns)| **ns)
        .map(|(op, _)| *op);
    assert!(
        top.is_some_and(|op| op.contains("conv") || op.contains("cudnn")),
        "{conv_ops:?}"
    );
}

#[test]
fn progress_hears_every_byte_and_a_cancelled_run_stops() {
    let path = fixture("kineto/h100/eager_manual_attn.json.gz");
    let heard = Arc::new(AtomicU64::new(0));
    let counter = heard.clone();
    let config = Config {
        progress: Some(Progress(Arc::new(move |n| {
            counter.fetch_add(n, Ordering::Relaxed);
        }))),
        ..Default::default()
    };
    run(std::slice::from_ref(&path), &config).unwrap();
    assert_eq!(
        heard.load(Ordering::Relaxed),
        std::fs::metadata(&path).unwrap().len()
    );
    let cancel = Cancel::default();
    cancel.set();
    let cancelled = run(
        &[path],
        &Config {
            cancel: Some(cancel),
            ..Default::default()
        },
    );
    assert!(
        matches!(cancelled, Err(RunError::Cancelled)),
        "{cancelled:?}"
    );
}

/// Without attribution nothing reads the Python frames of a `with_stack` trace: they are left
/// out as they are read (Qwen1.5: 4,266 of its host events), and the feed is the one with them.
/// A Perfetto export keeps them.
#[test]
fn python_frames_are_dropped_without_attribution() {
    use rocprof_classify::analysis::AnalysisOptions;
    use rocprof_classify::model::HostKind;
    crate::with_shared!(shared => {
        let path = shared.join("corpus/tracelens/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
        let config = |keep_python_frames: bool| Config {
            analysis: AnalysisOptions {
                attribution: false,
                ..Default::default()
            },
            keep_python_frames,
            ..Default::default()
        };
        let dropped = run(std::slice::from_ref(&path), &config(false)).expect("runs");
        let kept = run(std::slice::from_ref(&path), &config(true)).expect("runs");
        let python = |r: &rocprof_classify::Run| {
            r.trace.host.kind.iter().filter(|&&k| k == HostKind::Python).count()
        };
        assert!(python(&kept) > 4000, "{}", python(&kept));
        assert_eq!(python(&dropped), 0);
        assert_eq!(dropped.trace.host.len() + python(&kept), kept.trace.host.len());
        assert!(
            rocprof_classify::report::json::render(&dropped)
                == rocprof_classify::report::json::render(&kept),
            "the feed does not depend on frames nothing reads"
        );
        // With attribution they are read: the module view needs them.
        let attributed = run(&[path], &Config::default()).expect("runs");
        assert!(python(&attributed) > 4000);
        assert!(!attributed.analysis.modules.is_empty());
    });
}

/// A trace given through a named pipe (`<(zcat trace.json.gz)`) is read once, as given: the
/// same feed as from the file (the pipe used to be opened twice, and the run waited forever).
#[cfg(unix)]
#[test]
fn a_trace_through_a_named_pipe_reads_as_the_file() {
    let trace = fixture("kineto/h100/eager_sdpa_fused.json.gz");
    let dir = tempfile::tempdir().unwrap();
    let pipe = dir.path().join("trace.pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(made.success());
    let bytes = std::fs::read(&trace).unwrap();
    let writer = {
        let pipe = pipe.clone();
        std::thread::spawn(move || std::fs::write(pipe, bytes).unwrap())
    };
    let through_pipe = bin()
        .arg(&pipe)
        .args(["-q", "--json", "-"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    writer.join().unwrap();
    assert!(through_pipe.status.success(), "{through_pipe:?}");
    let from_file = bin()
        .arg(&trace)
        .args(["-q", "--json", "-"])
        .output()
        .unwrap();
    let feed = |o: &std::process::Output| {
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        // The input's path is the one difference.
        v["inputs"] = serde_json::Value::Null;
        v
    };
    assert_eq!(feed(&through_pipe), feed(&from_file));
}
