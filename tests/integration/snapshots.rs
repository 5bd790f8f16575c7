//! Snapshots of the feed and the table for committed fixtures (`cargo insta review` to bless).

use crate::common::{assert_valid_feed, fixture, run_path};
use rocprof_classify::report::{json, text};

fn feed_snapshot(rel: &str) -> serde_json::Value {
    let a = run_path(&fixture(rel));
    let mut v = assert_valid_feed(&json::render(&a));
    // Absolute paths and the version change between machines and releases.
    v["tool"]["version"] = "[version]".into();
    for input in v["inputs"].as_array_mut().unwrap() {
        input["path"] = rel.into();
    }
    v
}

#[test]
fn feeds() {
    for name in [
        "eager_manual_attn",
        "eager_sdpa_fused",
        "train_eager_fp32",
        "compiled_graph_breaks",
        "compiled_cudagraphs",
    ] {
        let rel = format!("kineto/h100/{name}.json.gz");
        insta::assert_json_snapshot!(format!("feed_{name}"), feed_snapshot(&rel));
    }
}

#[test]
fn terminal_table() {
    let mut a = run_path(&fixture("kineto/h100/eager_manual_attn.json.gz"));
    a.analysis.inputs[0].path = "eager_manual_attn.json.gz".into();
    a.analysis.top_kernels.truncate(8);
    let rendered = String::from_utf8(text::render(
        &a,
        &text::TableOptions {
            color: false,
            width: 120,
        },
    ))
    .unwrap();
    let text = rendered.replace(env!("CARGO_PKG_VERSION"), "[version]");
    insta::assert_snapshot!("table_eager_manual_attn", text);
}

/// Every committed fixture input: each trace file, and each directory of rank files, as
/// (the folder to run in, the argument naming it there).
pub(crate) fn fixture_inputs() -> Vec<(std::path::PathBuf, String)> {
    fn walk(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                let ranks = std::fs::read_dir(&p)
                    .unwrap()
                    .all(|e| e.unwrap().file_name().to_string_lossy().starts_with("rank"));
                if ranks {
                    out.push((dir.to_path_buf(), name));
                } else {
                    walk(&p, out);
                }
            } else if name.ends_with(".json.gz") {
                out.push((dir.to_path_buf(), name));
            }
        }
    }
    let mut out = Vec::new();
    walk(&fixture("kineto"), &mut out);
    out
}

/// A page with each chart (`<svg>…</svg>`) as its length and FNV-1a digest: the charts draw the
/// numbers the page's tables and the feed already show, and in full they would weigh megabytes
/// on every clone; a chart that changes still changes its digest.
fn charts_as_digests(html: &str) -> String {
    let svg = regex::Regex::new(r"(?s)<svg[^>]*>.*?</svg>").unwrap();
    svg.replace_all(html, |c: &regex::Captures| {
        let text = &c[0];
        let digest = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        format!("<svg bytes=\"{}\" fnv1a=\"{digest:016x}\"/>", text.len())
    })
    .into_owned()
}

/// Every committed fixture rendered by the binary in every format (terminal table, JSON feed,
/// Markdown, HTML), byte for byte, from the fixture's own folder so paths are relative: a
/// change to any output shows here (`cargo insta review` to accept one that is meant).
#[test]
fn every_fixture_renders_as_committed() {
    let inputs = fixture_inputs();
    assert!(inputs.len() >= 30, "{} fixture inputs", inputs.len());
    let version = env!("CARGO_PKG_VERSION");
    for (dir, arg) in inputs {
        let out = tempfile::tempdir().unwrap();
        let file = |ext: &str| out.path().join(format!("out.{ext}"));
        let run = crate::common::bin()
            .current_dir(&dir)
            .arg(&arg)
            .args(["--color", "never", "-q", "--json"])
            .arg(file("json"))
            .arg("--markdown")
            .arg(file("md"))
            .arg("--html")
            .arg(file("html"))
            .assert()
            .success();
        let table = String::from_utf8(run.get_output().stdout.clone()).unwrap();
        assert_valid_feed(&std::fs::read(file("json")).unwrap());
        // One folder per input, as the fixtures lie: snapshots/render/h100/eager_manual_attn/.
        let rel = dir.strip_prefix(fixture("kineto")).unwrap().join(&arg);
        let folder = rel.to_string_lossy().replace('\\', "/");
        let folder = format!("snapshots/render/{}", folder.trim_end_matches(".json.gz"));
        // The before/after pairs are scored by replays.rs and the parallel captures by
        // parallel.rs and parallel4.rs: their table alone is kept (their feeds and pages would weigh megabytes on
        // every clone).
        let pairs = folder.contains("/pairs/")
            || folder.contains("/parallel/")
            || folder.contains("/parallel4/");
        insta::with_settings!({snapshot_path => folder, prepend_module_to_snapshot => false}, {
            for (format, text) in [
                ("table", table),
                ("json", std::fs::read_to_string(file("json")).unwrap()),
                ("md", std::fs::read_to_string(file("md")).unwrap()),
                ("html", std::fs::read_to_string(file("html")).unwrap()),
            ] {
                if pairs && format != "table" {
                    continue;
                }
                let text = match format {
                    "html" => charts_as_digests(&text),
                    _ => text,
                };
                insta::assert_snapshot!(format, text.replace(version, "[version]"));
            }
        });
    }
}
