//! The module graph follows the layer order of `src/lib.rs`: a top-level module imports only
//! modules below it (`error` is at the bottom, under everything), and no two files of `src/`
//! import each other in a circle, inside a folder or across folders. The edges come from the
//! sources (paths through `crate::`, `super::` and `self::`, outside unit tests and comments;
//! a folder's `mod.rs` naming the files of its own folder is its face, not an import); an edge
//! the order does not allow fails, and so does any circle.
//! The rooms stay small enough to find one's way: `src/analysis/` keeps at most 12 entries and
//! no source file runs past 800 lines.

use crate::common::root;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layers, bottom first; modules of one layer may not import each other.
const LAYERS: &[&[&str]] = &[
    &["error"],
    &["model"],
    &["ingest", "classify"],
    &["analysis"],
    &["detect"],
    &["recommend"],
    &["compare"],
    &["pipeline"],
    &["report"],
    &["cli"],
];

/// Longest a source file may be.
const MAX_LINES: usize = 800;
/// Most entries `src/analysis/` may hold (files and folders, `mod.rs` counted).
const MAX_ANALYSIS_ENTRIES: usize = 12;

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every `.rs` file under `src/`, keyed by its module path (`analysis::time::steps`; the crate
/// root's files `lib.rs` and `main.rs` under their own names).
fn modules() -> BTreeMap<Vec<String>, PathBuf> {
    let src = root().join("src");
    let mut out = BTreeMap::new();
    let mut stack = vec![src.clone()];
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
            let mut parts: Vec<String> = rel
                .iter()
                .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            out.insert(parts, path);
        }
    }
    out
}

/// The code a file's imports are read from: no unit tests (they may reach anywhere), no
/// comments.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let code = text.split("#[cfg(test)]").next().unwrap();
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The file a path names: its longest prefix that is a module.
fn resolve<'a>(
    modules: &'a BTreeMap<Vec<String>, PathBuf>,
    path: &[String],
) -> Option<&'a Vec<String>> {
    (1..=path.len())
        .rev()
        .find_map(|n| modules.get_key_value(&path[..n]).map(|(k, _)| k))
}

/// File-level imports: module path → the module paths it names.
fn file_edges(
    modules: &BTreeMap<Vec<String>, PathBuf>,
) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    // The whole path, its last segment included (`use crate::a::b;` names the file `a/b.rs`).
    let path_re =
        regex::Regex::new(r"(?:^|[^\w:])((?:[a-z_][a-z0-9_]*::)+[A-Za-z_][A-Za-z0-9_]*)").unwrap();
    let mut out: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, file) in modules {
        if module.len() == 1 && (module[0] == "lib" || module[0] == "main") {
            continue;
        }
        let is_mod_rs = file.file_name().is_some_and(|n| n == "mod.rs");
        let code = code_of(file);
        // `use a::{b::c, d}`: each path inside braces continues the prefix before them.
        let expanded = expand_groups(&code);
        for c in path_re.captures_iter(&expanded) {
            let segments: Vec<String> = c[1].split("::").map(str::to_string).collect();
            let absolute: Vec<String> = match segments[0].as_str() {
                "crate" => segments[1..].to_vec(),
                "super" => {
                    let mut base = module.clone();
                    let mut rest = &segments[..];
                    while rest.first().is_some_and(|s| s == "super") {
                        base.pop();
                        rest = &rest[1..];
                    }
                    base.extend(rest.iter().cloned());
                    base
                }
                "self" => {
                    let mut base = module.clone();
                    base.extend(segments[1..].iter().cloned());
                    base
                }
                _ => continue,
            };
            if let Some(to) = resolve(modules, &absolute) {
                // A folder's `mod.rs` declaring, re-exporting or calling into the files of its
                // folder is the folder's face, not an import: the files below may import it.
                let inside = is_mod_rs && to.len() > module.len() && to.starts_with(module);
                if to != module && !inside {
                    out.entry(module.clone()).or_default().insert(to.clone());
                }
            }
        }
    }
    out
}

/// Rewrites `a::{b::c, d}` as `a::b::c, a::d` (nested groups too), so every path in a grouped
/// `use` names its whole path.
fn expand_groups(code: &str) -> String {
    let group = regex::Regex::new(r"((?:[a-z_][a-z0-9_]*::)+)\{([^{}]*)\}").unwrap();
    let mut text = code.to_string();
    loop {
        let next = group
            .replace_all(&text, |c: &regex::Captures| {
                c[2].split(',')
                    .map(|item| format!("{}{}", &c[1], item.trim()))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .into_owned();
        if next == text {
            return text;
        }
        text = next;
    }
}

/// The circles of a graph (its strongly connected components of more than one node).
fn circles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<BTreeSet<Vec<String>>> {
    // Tarjan's algorithm, recursive: the graph has a few hundred nodes.
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        out: Vec<BTreeSet<Vec<String>>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(tos) = s.edges.get(v) {
            for w in tos {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.insert(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn modules_import_only_downward() {
    let modules = modules();
    let edges = file_edges(&modules);
    let mut top: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, tos) in &edges {
        for to in tos {
            if from[0] != to[0] && layer_of(&from[0]).is_some() && layer_of(&to[0]).is_some() {
                top.entry(&from[0]).or_default().insert(&to[0]);
            }
        }
    }
    assert!(
        top.get("cli").is_some_and(|e| e.contains("report")),
        "the scan sees imports: {top:?}"
    );
    let mut bad = Vec::new();
    for (from, tos) in &top {
        for to in tos {
            let (f, t) = (layer_of(from).unwrap(), layer_of(to).unwrap());
            if !(t < f || *to == "error") {
                bad.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "imports against the layer order: {}",
        bad.join(", ")
    );
}

#[test]
fn no_file_imports_itself_in_a_circle() {
    let modules = modules();
    let edges = file_edges(&modules);
    // The scan sees imports inside a folder: a context file's use of its sibling.
    let context = vec!["analysis".to_string(), "context".to_string()];
    assert!(
        edges
            .get(&context)
            .is_some_and(|e| e.iter().any(|m| m[0] == "analysis")),
        "the scan sees imports inside a folder: {:?}",
        edges.get(&context)
    );
    let found: Vec<String> = circles(&edges)
        .iter()
        .map(|c| {
            c.iter()
                .map(|m| m.join("::"))
                .collect::<Vec<_>>()
                .join(" <-> ")
        })
        .collect();
    assert!(found.is_empty(), "import circles: {}", found.join("; "));
}

#[test]
fn the_circle_finder_finds_circles() {
    let m = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (a, b) in [
        ("a::x", "a::y"),
        ("a::y", "a::z"),
        ("a::z", "a::x"),
        ("a::z", "b"),
    ] {
        edges.entry(m(a)).or_default().insert(m(b));
    }
    let found = circles(&edges);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].len(), 3);
    edges.get_mut(&m("a::z")).unwrap().remove(&m("a::x"));
    assert!(circles(&edges).is_empty());
    assert_eq!(
        expand_groups("use crate::a::{b::{c, d}, e};"),
        "use crate::a::b::c, crate::a::b::d, crate::a::e;"
    );
}

#[test]
fn rooms_stay_small() {
    let src = root().join("src");
    let analysis: Vec<String> = std::fs::read_dir(src.join("analysis"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        analysis.len() <= MAX_ANALYSIS_ENTRIES,
        "src/analysis/ holds {} entries (at most {MAX_ANALYSIS_ENTRIES}): {analysis:?}",
        analysis.len()
    );
    let mut long = Vec::new();
    for file in modules().values() {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let lines = std::fs::read_to_string(file).unwrap().lines().count();
        if lines > MAX_LINES {
            long.push(format!("{rel} ({lines})"));
        }
    }
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines: {}",
        long.join(", ")
    );
}

/// The modules inside a layer that are public: the renderers' and the benches' (hidden). Every
/// other room is `pub(crate)`, and what outside callers need is re-exported at its layer's top.
const PUBLIC_ROOMS: &[&str] = &[
    "ingest/json_stream",
    "ingest/kineto",
    "report/diff",
    "report/diff/html",
    "report/explain",
    "report/html",
    "report/json",
    "report/markdown",
    "report/text",
];

#[test]
fn the_front_door_stays_small() {
    let src = root().join("src");
    let mut public = Vec::new();
    for file in modules().values() {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if rel == "lib.rs" {
            continue;
        }
        let folder = rel.trim_end_matches(".rs").trim_end_matches("/mod");
        for line in std::fs::read_to_string(file).unwrap().lines() {
            if let Some(name) = line.trim().strip_prefix("pub mod ") {
                public.push(format!("{folder}/{}", name.trim_end_matches(';')));
            }
        }
    }
    public.sort();
    assert_eq!(public, PUBLIC_ROOMS, "public modules inside the layers");
    // What stays public carries documentation (missing_docs); CI also builds the docs with
    // warnings as errors.
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    assert!(lib.contains("#![warn(missing_docs)]"));
}
