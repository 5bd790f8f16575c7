//! The bad-input matrix: one test per row. Each malformed input is built here around a small
//! valid trace (one step, one `aten::mm` launching one GEMM kernel of 200 µs) and must give a
//! clear warning or error naming the file and position, keep the analysis of what is valid,
//! and never panic or hang (each run has a time limit).

use crate::common::{assert_valid_feed, bin};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The valid part every Kineto row keeps: 200 µs of GEMM in one step.
fn base_events() -> Vec<Value> {
    vec![
        json!({"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":1000,"dur":500}),
        json!({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1010,"dur":50,"args":{"External id":1}}),
        json!({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1020,"dur":10,"args":{"correlation":7,"External id":1}}),
        json!({"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_nn","pid":0,"tid":7,"ts":1100,"dur":200,"args":{"correlation":7,"device":0,"stream":7,"External id":1}}),
    ]
}

/// A trace document of the base events plus `extra` (raw JSON text, appended to the array).
fn kineto_with(extra: &str) -> Vec<u8> {
    let base = serde_json::to_string(&base_events()).unwrap();
    let events = if extra.is_empty() {
        base
    } else {
        format!("{},{extra}]", &base[..base.len() - 1])
    };
    format!("{{\"traceEvents\":{events}}}").into_bytes()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

struct Run {
    code: i32,
    feed: Option<Value>,
    stderr: String,
}

/// Runs the binary on `path` with a time limit; the feed when it succeeded.
fn run(path: &Path) -> Run {
    let out = bin()
        .arg(path)
        .args(["--json", "-"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{}: {stderr}", path.display());
    let code = out
        .status
        .code()
        .expect("exited, not killed by the time limit or a signal");
    let feed = (code == 0).then(|| assert_valid_feed(&out.stdout));
    // Parsed in pieces of a few bytes on several threads (most pieces start at a wrong guess
    // of an event boundary), the same output, warnings and exit code.
    let pieces = bin()
        .arg(path)
        .args(["--json", "-", "--threads", "4", "--piece-bytes", "40"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        (
            pieces.status.code(),
            &pieces.stdout,
            String::from_utf8_lossy(&pieces.stderr)
        ),
        (Some(code), &out.stdout, stderr.as_str().into()),
        "{}: parsed in pieces",
        path.display()
    );
    Run { code, feed, stderr }
}

/// The row analyzes with exit 0, keeps the valid GEMM, and warns with `expected` (naming the
/// file on stderr and in `inputs[].warnings`) or, when `expected` is empty, says nothing.
fn tolerated(name: &str, bytes: &[u8], expected: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), name, bytes);
    let r = run(&path);
    assert_eq!(r.code, 0, "{name}: {}", r.stderr);
    let feed = r.feed.unwrap();
    let gemm = feed["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["bucket"] == "gemm")
        .unwrap();
    assert!(
        gemm["kernel_ns"].as_i64().unwrap() >= 200_000,
        "{name}: the valid GEMM is kept: {gemm}"
    );
    let warnings: Vec<&str> = feed["inputs"][0]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let warnings = warnings.join("\n");
    for e in expected {
        assert!(warnings.contains(e), "{name}: expected {e:?} in {warnings}");
        assert!(
            r.stderr.contains(e) && r.stderr.contains(&path.display().to_string()),
            "{name}: {}",
            r.stderr
        );
    }
    if expected.is_empty() {
        assert_eq!(feed["inputs"][0]["warnings"], json!([]), "{name}");
    }
    feed
}

/// The row is refused: exit 2, one line naming the file and `expected`.
fn refused(name: &str, bytes: &[u8], expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), name, bytes);
    let r = run(&path);
    assert_eq!(r.code, 2, "{name}: {}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{name}: {}", r.stderr);
    assert!(
        r.stderr.starts_with("error: ") && r.stderr.contains(&path.display().to_string()),
        "{}",
        r.stderr
    );
    for e in expected {
        assert!(
            r.stderr.contains(e),
            "{name}: expected {e:?} in {}",
            r.stderr
        );
    }
}

fn kernel(extra_fields: &str) -> String {
    format!(
        r#"{{"ph":"X","cat":"kernel","pid":0,"tid":7,"args":{{"stream":7,"device":0}}{extra_fields}}}"#
    )
}

#[test]
fn array_at_the_top_is_the_chrome_array_form() {
    // Chrome's trace format allows a bare array of events: read as such.
    tolerated(
        "array.json",
        serde_json::to_string(&base_events()).unwrap().as_bytes(),
        &[],
    );
}

#[test]
fn valid_json_of_another_shape_is_refused() {
    refused(
        "object.json",
        br#"{"traceEvents": {"ph": "X"}}"#,
        &["traceEvents"],
    );
    refused("number.json", b"42", &["byte 0"]);
}

#[test]
fn an_event_without_ph() {
    tolerated(
        "no_ph.json",
        &kineto_with(r#"{"cat":"kernel","name":"k2","ts":1400,"dur":5}"#),
        &["event without \"ph\"", "at byte"],
    );
}

#[test]
fn an_event_without_ts() {
    tolerated(
        "no_ts.json",
        &kineto_with(&kernel(r#","name":"k2","dur":5"#)),
        &["missing \"ts\""],
    );
}

#[test]
fn an_event_without_dur() {
    tolerated(
        "no_dur.json",
        &kineto_with(&kernel(r#","name":"k2","ts":1400"#)),
        &["without \"dur\""],
    );
}

#[test]
fn an_event_without_name_keeps_its_time() {
    let feed = tolerated(
        "no_name.json",
        &kineto_with(&kernel(r#","ts":1400,"dur":5"#)),
        &[],
    );
    assert!(feed["top_kernels"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["name"] == "(unnamed)" && k["total_ns"] == 5000));
}

#[test]
fn null_fields() {
    tolerated(
        "nulls.json",
        &kineto_with(
            r#"{"ph":"X","cat":"kernel","name":null,"pid":null,"tid":null,"ts":null,"dur":null,"args":null}"#,
        ),
        &["missing \"ts\""],
    );
}

#[test]
fn times_as_strings_are_read() {
    let feed = tolerated(
        "strings.json",
        &kineto_with(&kernel(r#","name":"k2","ts":"1400","dur":"5""#)),
        &[],
    );
    assert_eq!(feed["summary"]["kernel_ns"], 205_000);
}

#[test]
fn negative_times() {
    tolerated(
        "negative.json",
        &kineto_with(&kernel(r#","name":"k2","ts":1400,"dur":-5"#)),
        &["negative \"dur\""],
    );
}

#[test]
fn nan_is_not_json() {
    tolerated(
        "nan.json",
        &kineto_with(&kernel(r#","name":"k2","ts":NaN,"dur":5"#)),
        &["unreadable events", "at byte"],
    );
}

#[test]
fn huge_times() {
    tolerated(
        "huge.json",
        &kineto_with(&kernel(r#","name":"k2","ts":1e300,"dur":5"#)),
        &["\"ts\" is not a time in µs within range"],
    );
}

#[test]
fn epoch_scale_fractions_keep_their_nanoseconds() {
    // 1.7e15 µs with three decimals: nanosecond precision survives (no f64 rounding).
    let extra = kernel(r#","name":"k2","ts":1700000000123456.789,"dur":5.123"#);
    let feed = tolerated("epoch.json", &kineto_with(&extra), &[]);
    let k2 = feed["top_kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "k2")
        .unwrap()
        .clone();
    assert_eq!(k2["total_ns"], 5123);
}

#[test]
fn invalid_utf8_in_a_name() {
    let mut doc = kineto_with(&kernel(r#","name":"kBAD","ts":1400,"dur":5"#));
    let at = doc.windows(3).position(|w| w == b"BAD").unwrap();
    doc[at..at + 3].copy_from_slice(&[0xff, 0xfe, b'x']);
    tolerated("utf8.json", &doc, &["unreadable events", "at byte"]);
}

#[test]
fn duplicate_keys() {
    tolerated(
        "dup.json",
        &kineto_with(&kernel(r#","name":"k2","name":"k3","ts":1400,"dur":5"#)),
        &["duplicate field `name`"],
    );
}

#[test]
fn control_characters_never_reach_the_terminal() {
    let doc = kineto_with(&kernel(
        r#","name":"k\u0001\u001b[31m2\u0007","ts":1400,"dur":5"#,
    ));
    // …and a device name with an escape sequence.
    let doc = String::from_utf8(doc)
        .unwrap()
        .replacen(
            "{\"traceEvents\"",
            r#"{"deviceProperties":[{"id":0,"name":"GPU\u001b]0;pwned\u0007"}],"traceEvents""#,
            1,
        )
        .into_bytes();
    tolerated("control.json", &doc, &[]);
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "control.json", &doc);
    for flag in [
        &["--color", "never"][..],
        &["--markdown", "-"],
        &["--html", "-"],
        &["--json", "-"],
    ] {
        let out = bin().arg(&path).args(flag).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(
            !out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07),
            "{flag:?}"
        );
    }
}

#[test]
fn deeply_nested_args_do_not_overflow_the_stack() {
    let deep = format!(
        r#"{{"ph":"X","cat":"cpu_op","name":"deep","pid":1,"tid":1,"ts":1400,"dur":5,"args":{{"x":{}{}}}}}"#,
        "[".repeat(200_000),
        "]".repeat(200_000)
    );
    tolerated("deep.json", &kineto_with(&deep), &[]);
}

#[test]
fn a_name_of_several_megabytes() {
    let name = "k".repeat(8 << 20);
    let feed = tolerated(
        "long_name.json",
        &kineto_with(&kernel(&format!(r#","name":"{name}","ts":1400,"dur":5"#))),
        &[],
    );
    assert_eq!(feed["summary"]["kernel_ns"], 205_000);
}

#[test]
fn events_out_of_order() {
    let mut events = base_events();
    events.reverse();
    let doc = serde_json::to_vec(&json!({ "traceEvents": events })).unwrap();
    let feed = tolerated("reversed.json", &doc, &[]);
    assert_eq!(feed["summary"]["steps"], 1);
    assert_eq!(feed["summary"]["kernel_ns"], 200_000);
}

#[test]
fn overlapping_kernels_on_one_stream() {
    let feed = tolerated(
        "overlap.json",
        &kineto_with(&kernel(r#","name":"k2","ts":1150,"dur":300"#)),
        &["1 GPU activities start before the previous one on their stream ends (by up to 150.000 µs)"],
    );
    // Busy time is the union (1100..1450), not the sum.
    assert_eq!(feed["summary"]["gpu_busy_ns"], 350_000);
}

#[test]
fn zero_length_kernels() {
    let feed = tolerated(
        "zero.json",
        &kineto_with(&kernel(r#","name":"k2","ts":1400,"dur":0"#)),
        &[],
    );
    assert!(feed["top_kernels"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["name"] == "k2" && k["launches"] == 1));
}

#[test]
fn correlation_ids_pointing_nowhere() {
    let feed = tolerated(
        "orphan.json",
        &kineto_with(
            r#"{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":1400,"dur":5,"args":{"stream":7,"device":0,"correlation":999999}}"#,
        ),
        &[],
    );
    // The orphan has no launching op: it is owned by no op, and still counted.
    let no_op = feed["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "(no op)")
        .unwrap()
        .clone();
    assert_eq!(no_op["self_ns"], 5000);
}

#[test]
fn a_2021_trace() {
    // torch 1.8's format: capitalized categories, string thread ids, "external id".
    let doc = br#"{"schemaVersion": 1, "traceEvents": [
      {"ph":"X","cat":"Operator","name":"ProfilerStep#3","pid":25738,"tid":"25738","ts":1623142623400000,"dur":300},
      {"ph":"X","cat":"Operator","name":"aten::mm","pid":25738,"tid":"25738","ts":1623142623400010,"dur":50,"args":{"External id":2}},
      {"ph":"X","cat":"Runtime","name":"cudaLaunchKernel","pid":25738,"tid":"25738","ts":1623142623400020,"dur":20,"args":{"cbid":211,"correlation":34417,"external id":2}},
      {"ph":"X","cat":"Kernel","name":"volta_sgemm_64x64_nn","pid":0,"tid":"stream 7","ts":1623142623400100,"dur":200,"args":{"correlation":34417,"external id":2}}
    ]}"#;
    let feed = tolerated("2021.json", doc, &[]);
    assert_eq!(feed["ops"][0]["name"], "aten::mm");
}

// ---- CSV (rocprofv3 kernel trace; the same reader serves rocprof v1/v2 CSVs)

const V3_HEADER: &str = r#""Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z""#;
const V3_ROWS: [&str; 2] = [
    r#""KERNEL_DISPATCH","Agent 4",1,1,834304,1,10,"Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN",1,1550151853029637,1550151853042437,0,0,8,0,16,64,1,1,1024,1024,1"#,
    r#""KERNEL_DISPATCH","Agent 4",1,1,834304,4,11,"void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",4,1550151853064037,1550151853075237,0,0,12,4,16,64,1,1,1024,1024,1"#,
];

/// Reads a CSV kernel trace; (exit code, feed, stderr).
fn csv_run(lines: &[String], eol: &str, prefix: &str) -> (Run, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{prefix}{}{eol}", lines.join(eol));
    let path = write(dir.path(), "run_kernel_trace.csv", text.as_bytes());
    (run(&path), path, dir)
}

fn lines(rows: &[&str]) -> Vec<String> {
    std::iter::once(V3_HEADER)
        .chain(rows.iter().copied())
        .map(str::to_string)
        .collect()
}

/// GEMM 12.8 µs, elementwise 11.2 µs when both rows read.
fn assert_both_rows(r: &Run) {
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.feed.as_ref().unwrap()["summary"]["kernel_ns"], 24_000);
}

#[test]
fn csv_with_a_byte_order_mark() {
    let (r, ..) = csv_run(&lines(&V3_ROWS), "\n", "\u{feff}");
    assert_both_rows(&r);
}

#[test]
fn csv_with_crlf_line_ends() {
    let (r, ..) = csv_run(&lines(&V3_ROWS), "\r\n", "");
    assert_both_rows(&r);
}

#[test]
fn csv_with_an_extra_column() {
    let mut l = lines(&V3_ROWS);
    for (i, line) in l.iter_mut().enumerate() {
        line.push_str(if i == 0 { r#","Extra""# } else { ",42" });
    }
    let (r, ..) = csv_run(&l, "\n", "");
    assert_both_rows(&r);
}

#[test]
fn csv_missing_a_required_column() {
    let drop = V3_HEADER
        .split(',')
        .position(|c| c == r#""End_Timestamp""#)
        .unwrap();
    let l: Vec<String> = lines(&V3_ROWS)
        .iter()
        .map(|line| {
            let mut f: Vec<&str> = line.split(',').collect();
            f.remove(drop);
            f.join(",")
        })
        .collect();
    let (r, path, _dir) = csv_run(&l, "\n", "");
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains(&path.display().to_string())
            && r.stderr
                .contains("line 1: missing required column 'end_timestamp'"),
        "{}",
        r.stderr
    );
}

#[test]
fn csv_row_with_too_few_fields_is_skipped_with_its_line() {
    let short: String = V3_ROWS[1].split(',').take(9).collect::<Vec<_>>().join(",");
    let (r, path, _dir) = csv_run(&lines(&[&short, V3_ROWS[0]]), "\n", "");
    assert_eq!(r.code, 0);
    assert!(
        r.stderr.contains(&path.display().to_string())
            && r.stderr
                .contains("skipped 1 rows with fewer fields than the header (first at line 2)"),
        "{}",
        r.stderr
    );
    assert_eq!(r.feed.unwrap()["summary"]["kernel_ns"], 12_800);
}

#[test]
fn csv_row_with_too_many_fields_is_read_with_a_warning() {
    let long = format!("{},7,8", V3_ROWS[1]);
    let (r, ..) = csv_run(&lines(&[&long, V3_ROWS[0]]), "\n", "");
    assert_both_rows(&r);
    assert!(
        r.stderr
            .contains("1 rows have more fields than the header (first at line 2)"),
        "{}",
        r.stderr
    );
}

#[test]
fn csv_row_with_an_unreadable_time_is_skipped_with_its_line() {
    let bad = V3_ROWS[1].replace("1550151853064037", "12abc");
    let (r, ..) = csv_run(&lines(&[&bad, V3_ROWS[0]]), "\n", "");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("skipped 1 rows whose times do not read (first: line 2: column 'start_timestamp': not a time: \"12abc\")"), "{}", r.stderr);
    assert_eq!(r.feed.unwrap()["summary"]["kernel_ns"], 12_800);
    // --strict makes it the error it is.
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "k_kernel_trace.csv",
        format!("{}\n", lines(&[&bad]).join("\n")).as_bytes(),
    );
    let out = bin().arg(&path).arg("--strict").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn csv_cut_mid_row() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{V3_HEADER}\n{}\n{}", V3_ROWS[0], &V3_ROWS[1][..40]);
    let r = run(&write(dir.path(), "cut_kernel_trace.csv", text.as_bytes()));
    assert_eq!(r.code, 0);
    let feed = r.feed.unwrap();
    assert_eq!(feed["inputs"][0]["truncated"], true);
    assert!(
        r.stderr.contains("truncated: line 3 is cut short"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_statistics_file_claiming_millions_of_calls_is_scaled() {
    // rocprof v1 `results.stats.csv` rows are expanded into one activity per call; a tiny file
    // claiming millions of calls (found by fuzzing) gets at most 1,000,000 synthetic launches,
    // its times exact, with a warning, instead of taking gigabytes.
    let dir = tempfile::tempdir().unwrap();
    let text = "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\"\n\"k\",1500000,3000000,2,75\n\"j\",500000,1000000,2,25\n";
    let path = write(dir.path(), "results.stats.csv", text.as_bytes());
    let r = run(&path);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("2000000 calls are more than the 1000000 synthetic launches"),
        "{}",
        r.stderr
    );
    let feed = r.feed.unwrap();
    assert_eq!(feed["summary"]["kernel_ns"], 4_000_000, "times stay exact");
    let launches: Vec<(String, i64)> = feed["top_kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap().to_string(),
                k["launches"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        launches,
        [("k".to_string(), 750_000), ("j".to_string(), 250_000)]
    );
}

#[test]
fn absurd_shapes_do_not_overflow() {
    // Input Dims near i64::MAX on a GEMM, an SDPA and a convolution: no number overflows (the
    // test binary checks overflow), the rates come out as numbers or nothing.
    let big = i64::MAX;
    let ops = format!(
        r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1011,"dur":40,"args":{{"External id":2,"Input Dims":[[{big},{big}],[{big},{big}]],"Input type":["c10::BFloat16","c10::BFloat16"]}}}},
           {{"ph":"X","cat":"cpu_op","name":"aten::scaled_dot_product_attention","pid":1,"tid":1,"ts":1070,"dur":40,"args":{{"External id":3,"Input Dims":[[{big},{big},{big},{big}],[{big},{big},{big},{big}],[{big},{big},{big},{big}]],"Concrete Inputs":["","","","","0.","True"],"Input type":["float","float","float"]}}}},
           {{"ph":"X","cat":"cpu_op","name":"aten::convolution","pid":1,"tid":1,"ts":1120,"dur":40,"args":{{"External id":4,"Input Dims":[[{big},{big},{big},{big}],[{big},{big},3,3]],"Concrete Inputs":["","","","[{big}, {big}]","[{big}, {big}]","[{big}, {big}]","False","[0, 0]","1"],"Input type":["float","float"]}}}},
           {{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1080,"dur":5,"args":{{"correlation":8}}}},
           {{"ph":"X","cat":"kernel","name":"flash_fwd_kernel","pid":0,"tid":7,"ts":1400,"dur":5,"args":{{"correlation":8,"device":0,"stream":7}}}},
           {{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1130,"dur":5,"args":{{"correlation":9}}}},
           {{"ph":"X","cat":"kernel","name":"implicit_convolve_sgemm","pid":0,"tid":7,"ts":1410,"dur":5,"args":{{"correlation":9,"device":0,"stream":7}}}}"#
    );
    let doc = String::from_utf8(kineto_with(&ops)).unwrap().replacen(
        "{\"traceEvents\"",
        r#"{"deviceProperties":[{"id":0,"name":"NVIDIA H100 80GB HBM3"}],"traceEvents""#,
        1,
    );
    let feed = tolerated("shapes.json", doc.as_bytes(), &[]);
    for o in feed["ops"].as_array().unwrap() {
        assert!(
            o["tflops"].is_null() || o["tflops"].as_f64().unwrap().is_finite(),
            "{o}"
        );
    }
}

#[test]
fn csv_times_no_profiler_writes_are_left_out() {
    // Three dispatches spanning almost all of i64 (found by fuzzing: their durations overflowed
    // the sums), beside one real one: the real one is analyzed, the three are left out, said.
    let huge = V3_ROWS[1]
        .replace("1550151853064037", "-9223372036854775000")
        .replace("1550151853075237", "9223372036854775000");
    let (r, path, _dir) = csv_run(&lines(&[V3_ROWS[0], &huge, &huge, &huge]), "\n", "");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&path.display().to_string())
            && r.stderr
                .contains("left out 3 GPU activities longer than an hour"),
        "{}",
        r.stderr
    );
    assert_eq!(r.feed.unwrap()["summary"]["kernel_ns"], 12_800);
}
