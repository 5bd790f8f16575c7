//! Snapshots of the feed and the table for committed fixtures (`cargo insta review` to bless).

use crate::common::{analyze_path, assert_valid_feed, fixture};
use rocprof_classify::report::{json, table};

fn feed_snapshot(rel: &str) -> serde_json::Value {
    let mut a = analyze_path(&fixture(rel));
    a.plan = rocprof_classify::recommend::plan(
        &a,
        &rocprof_classify::recommend::Catalog::load(&[]).unwrap(),
        None,
    );
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
    let mut a = analyze_path(&fixture("kineto/h100/eager_manual_attn.json.gz"));
    a.plan = rocprof_classify::recommend::plan(
        &a,
        &rocprof_classify::recommend::Catalog::load(&[]).unwrap(),
        None,
    );
    a.inputs[0].path = "eager_manual_attn.json.gz".into();
    a.top_kernels.truncate(8);
    let text = String::from_utf8(table::render(
        &a,
        &table::TableOptions {
            color: false,
            width: 120,
        },
    ))
    .unwrap();
    let text = text.replace(env!("CARGO_PKG_VERSION"), "[version]");
    insta::assert_snapshot!("table_eager_manual_attn", text);
}
