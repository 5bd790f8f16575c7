//! The module graph follows the layer order of `src/lib.rs`: a top-level module imports only
//! modules below it (`error` is at the bottom, under everything). The edges come from the
//! sources (`crate::X` outside unit tests); an edge the order does not allow fails, and so
//! does any cycle.

use crate::common::root;
use std::collections::{BTreeMap, BTreeSet};

/// Layers, bottom first; modules of one layer may not import each other.
const LAYERS: &[&[&str]] = &[
    &["error"],
    &["model"],
    &["ingest", "classify"],
    &["analysis"],
    &["detect"],
    &["recommend"],
    &["pipeline"],
    &["report"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn edges() -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![root().join("src")];
    let src = root().join("src");
    let reference = regex::Regex::new(r"crate::([a-z_]+)").unwrap();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let top = rel
                .iter()
                .next()
                .unwrap()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string();
            if layer_of(&top).is_none() {
                continue; // lib.rs, main.rs
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // Unit tests may reach anywhere.
            let code = text.split("#[cfg(test)]").next().unwrap();
            for c in reference.captures_iter(code) {
                let to = c[1].to_string();
                if to != top && layer_of(&to).is_some() {
                    out.entry(top.clone()).or_default().insert(to);
                }
            }
        }
    }
    out
}

#[test]
fn modules_import_only_downward() {
    let edges = edges();
    assert!(
        edges.get("cli").is_some_and(|e| e.contains("report")),
        "the scan sees imports: {edges:?}"
    );
    let mut bad = Vec::new();
    for (from, tos) in &edges {
        for to in tos {
            let (f, t) = (layer_of(from).unwrap(), layer_of(to).unwrap());
            let allowed = t < f || to == "error";
            if allowed {
                continue;
            }
            bad.push(format!("{from} -> {to}"));
        }
    }
    assert!(
        bad.is_empty(),
        "imports against the layer order: {}",
        bad.join(", ")
    );
}
