//! The user docs: the README stays short, the book (`docs/`) has every page reachable and every
//! link resolving, its generated pages are current, and the feed contract
//! (`docs/reference/feed.md`) names every field of the schema and of `../shared/FEED.md`.
//!
//! `UPDATE_DOCS=1 cargo test --test integration docs::` rewrites the generated pages.

use crate::common::{bin, catalog, root};
use crate::with_shared;
use rocprof_classify::report::explain;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const README_MAX_LINES: usize = 250;

fn book() -> PathBuf {
    root().join("docs")
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            markdown_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p);
        }
    }
}

/// The targets of a page's Markdown links (`[text](target)`), code spans and blocks left out.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        // Code spans hold `[x](y)`-looking text that is not a link.
        let bare: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
        let mut rest = bare.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn the_readme_stays_short() {
    let lines = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines (at most {README_MAX_LINES}): move detail into docs/"
    );
}

#[test]
fn every_page_is_reachable_and_every_link_resolves() {
    let src = book();
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<PathBuf> = links(&summary).iter().map(|l| src.join(l)).collect();
    let mut pages = Vec::new();
    markdown_files(&src, &mut pages);
    let unlisted: Vec<_> = pages
        .iter()
        .filter(|p| p.file_name().unwrap() != "SUMMARY.md" && !listed.contains(*p))
        .collect();
    assert!(
        unlisted.is_empty(),
        "pages missing from SUMMARY.md: {unlisted:?}"
    );
    // Links of the book, the README and CONTRIBUTING.md: local ones name a file that exists.
    let mut files = pages.clone();
    files.extend([root().join("README.md"), root().join("CONTRIBUTING.md")]);
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for link in links(&text) {
            if link.starts_with("http://") || link.starts_with("https://") || link.starts_with('#')
            {
                continue;
            }
            let path = link.split('#').next().unwrap();
            let target = file.parent().unwrap().join(path);
            checked += 1;
            if !target.exists() {
                broken.push(format!("{}: {link}", file.display()));
            }
        }
    }
    assert!(checked >= 40, "only {checked} local links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The help of every command, as the binary prints it.
fn cli_page() -> String {
    let mut page = String::from(
        "# Command line\n\n\
         <!-- Generated from the program by tests/integration/docs.rs: \
         UPDATE_DOCS=1 cargo test --test integration docs:: -->\n\n\
         Every command's `--help`, as the binary prints it. The guide's \
         [commands page](../guide/usage.md) shows them at work.\n",
    );
    let commands: &[&[&str]] = &[
        &[],
        &["diff"],
        &["partial"],
        &["merge"],
        &["explain"],
        &["rules"],
        &["rules", "list"],
        &["rules", "check"],
        &["rules", "explain"],
        &["rules", "classify"],
        &["schema"],
        &["completions"],
    ];
    for args in commands {
        let out = bin()
            .args(*args)
            .arg("--help")
            .env("COLUMNS", "100")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?} --help failed");
        let name = std::iter::once("rocprof-classify")
            .chain(args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        let help = String::from_utf8(out.stdout).unwrap();
        page.push_str(&format!(
            "\n## `{name}`\n\n```text\n{}\n```\n",
            help.trim_end()
        ));
    }
    page
}

fn findings_page() -> String {
    format!(
        "# Findings\n\n\
         <!-- Generated from the program by tests/integration/docs.rs: \
         UPDATE_DOCS=1 cargo test --test integration docs:: -->\n\n\
         Each finding has a severity, the time at stake (the time the problem accounts for, not \
         a savings estimate) and its evidence in the feed (`findings[]`). This table is the \
         detectors' own definition of each (`detect::DEFINITIONS`), with the recommendations \
         each can trigger ([recommendations](recommendations.md)); \
         `rocprof-classify explain ID` prints one.\n\n{}",
        explain::findings_table(catalog())
    )
}

fn recommendations_page() -> String {
    format!(
        "# Recommendations\n\n\
         <!-- Generated from the program by tests/integration/docs.rs: \
         UPDATE_DOCS=1 cargo test --test integration docs:: -->\n\n\
         Every recommendation of the built-in ladder (`rules/ladder.toml`): when it fires, the \
         evidence it cites, how its saving is estimated and the seed document it comes from. \
         [How recommendations are chosen](../concepts/recommendations.md) explains the ranking; \
         `rocprof-classify explain ID` prints one, with its actions.\n\n{}",
        explain::recommendations_table(catalog())
    )
}

#[test]
fn generated_pages_are_current() {
    let update = std::env::var("UPDATE_DOCS").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for (rel, text) in [
        ("reference/cli.md", cli_page()),
        ("reference/findings.md", findings_page()),
        ("reference/recommendations.md", recommendations_page()),
    ] {
        let path = book().join(rel);
        if update {
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(rel);
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated pages {stale:?}: run UPDATE_DOCS=1 cargo test --test integration docs::"
    );
}

/// The schema's fields: each path (`summary.window_ns`, `inputs[].devices[].name`) with what it
/// defines. A field of a block that several places share through a `$ref` defines
/// `#block.field` wherever it appears (documenting one of its places documents it); any other
/// field defines its own path.
fn schema_fields() -> BTreeMap<String, String> {
    let schema: serde_json::Value =
        serde_json::from_str(rocprof_classify::report::json::FEED_SCHEMA).unwrap();
    struct Walk<'s> {
        defs: &'s serde_json::Value,
        out: BTreeMap<String, String>,
    }
    impl Walk<'_> {
        /// `block`: the `$ref` block being walked and the path it starts at.
        fn node(&mut self, node: &serde_json::Value, path: &str, block: Option<(&str, &str)>) {
            if let Some(r) = node["$ref"].as_str() {
                let name = r.rsplit('/').next().unwrap();
                // A block inside itself (none today) is walked once.
                if block.is_some_and(|(b, _)| b == name) {
                    return;
                }
                self.node(&self.defs[name].clone(), path, Some((name, path)));
                return;
            }
            for key in ["anyOf", "oneOf", "allOf"] {
                for sub in node[key].as_array().into_iter().flatten() {
                    self.node(sub, path, block);
                }
            }
            if let Some(props) = node["properties"].as_object() {
                for (k, v) in props {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    let defines = match block {
                        Some((name, root)) => format!("#{name}{}", &p[root.len()..]),
                        None => p.clone(),
                    };
                    self.out.insert(p.clone(), defines);
                    self.node(v, &p, block);
                }
            }
            if node["items"].is_object() {
                self.node(&node["items"], &format!("{path}[]"), block);
            }
            if node["additionalProperties"].is_object() {
                self.node(&node["additionalProperties"], &format!("{path}.*"), block);
            }
        }
    }
    let mut walk = Walk {
        defs: &schema["$defs"],
        out: BTreeMap::new(),
    };
    walk.node(&schema, "", None);
    walk.out
}

/// The first column of the field tables under `## Field reference`.
fn documented_paths(contract: &str) -> BTreeMap<String, usize> {
    let fields = contract
        .split("\n## Field reference")
        .nth(1)
        .expect("feed.md has a '## Field reference' section");
    let mut out = BTreeMap::new();
    for line in fields.lines() {
        let Some(cell) = line.strip_prefix("| `") else {
            continue;
        };
        let Some(end) = cell.find('`') else { continue };
        *out.entry(cell[..end].to_string()).or_default() += 1;
    }
    out
}

#[test]
fn the_feed_contract_documents_every_schema_field() {
    let contract = std::fs::read_to_string(book().join("reference/feed.md")).unwrap();
    let documented = documented_paths(&contract);
    let fields = schema_fields();
    assert!(fields.len() > 300, "{} schema paths", fields.len());
    let defined: BTreeSet<&String> = documented.keys().filter_map(|p| fields.get(p)).collect();
    let mut undocumented: Vec<&String> = Vec::new();
    for (path, defines) in &fields {
        if !defined.contains(defines) && !undocumented.iter().any(|u| fields[*u] == *defines) {
            undocumented.push(path);
        }
    }
    let unknown: Vec<&String> = documented
        .keys()
        .filter(|p| !fields.contains_key(*p))
        .collect();
    let twice: Vec<&String> = documented
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(p, _)| p)
        .collect();
    assert!(
        undocumented.is_empty(),
        "schema fields feed.md does not define: {undocumented:?}"
    );
    assert!(
        unknown.is_empty(),
        "feed.md defines fields the schema lacks: {unknown:?}"
    );
    assert!(twice.is_empty(), "fields defined twice: {twice:?}");
}

/// Words of `../shared/FEED.md`'s name sections that are not names of the feed: kernel names,
/// Kineto event categories and a Python function it mentions as examples.
const NOT_FEED_NAMES: &[&str] = &[
    "cpu_op",
    "direct_copy_kernel",
    "spin_kernel",
    "torch.cuda._sleep",
    "user_annotation",
];

#[test]
fn the_feed_contract_keeps_every_name_of_the_original() {
    with_shared!(shared => {
        let original = std::fs::read_to_string(shared.join("FEED.md")).unwrap();
        let contract = std::fs::read_to_string(book().join("reference/feed.md")).unwrap();
        let schema = rocprof_classify::report::json::FEED_SCHEMA;
        // The keys of its JSON skeleton.
        let start = original.find("```\n{").expect("FEED.md has its skeleton");
        let end = start + 4 + original[start + 4..].find("```").unwrap();
        let mut names: BTreeSet<String> = BTreeSet::new();
        for piece in original[start..end].split('"').skip(1).step_by(2) {
            if piece.chars().all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
                && !piece.is_empty()
            {
                names.insert(piece.to_string());
            }
        }
        // The backticked names of its Buckets, Time partition, Finding ids and Additions sections.
        for title in ["## Buckets", "## Time partition", "## Finding ids", "## Additions"] {
            let from = original.find(title).unwrap_or_else(|| panic!("{title}"));
            let to = original[from + 1..].find("\n## ").map_or(original.len(), |i| from + 1 + i);
            for piece in original[from..to].split('`').skip(1).step_by(2) {
                if !piece.is_empty()
                    && piece.chars().all(|c| c.is_ascii_lowercase() || "_.[]0123456789".contains(c))
                {
                    names.insert(piece.to_string());
                }
            }
        }
        assert!(names.len() > 150, "{} names read from FEED.md", names.len());
        let mut missing = Vec::new();
        for name in names.iter().filter(|n| !NOT_FEED_NAMES.contains(&n.as_str())) {
            if !contract.contains(&format!("`{name}`")) && !contract.contains(&format!("\"{name}\"")) {
                missing.push(format!("{name} (feed.md)"));
            }
            // In the schema, a dotted name's last part is a property or an enum value.
            let leaf = name.rsplit('.').next().unwrap().trim_end_matches("[]");
            if !schema.contains(&format!("\"{leaf}\"")) {
                missing.push(format!("{name} (feed.schema.json)"));
            }
        }
        assert!(missing.is_empty(), "names of ../shared/FEED.md missing: {missing:?}");
    });
}
