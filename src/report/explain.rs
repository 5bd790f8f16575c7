//! What the `rules` and `explain` commands print: the rule table, names classified, why a name
//! lands where it does, and what a finding or recommendation id means.

use crate::analysis::time::partition::Category;
use crate::classify::RuleSet;
use crate::recommend::{Basis, Catalog, RecDef};
use std::fmt::Write;

/// `rules list`: every rule with its bucket, family, library, priority and file.
pub fn rules_list(rules: &RuleSet) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::NOTHING);
    t.set_header(["id", "bucket", "family", "library", "priority", "file"]);
    for r in &rules.rules {
        t.add_row(vec![
            r.def.id.clone(),
            r.def.bucket.as_str().to_string(),
            r.def.family.clone(),
            r.def.library.clone().unwrap_or_else(|| "(by name)".into()),
            r.def.priority.to_string(),
            r.file.display().to_string(),
        ]);
    }
    format!("{t}\n")
}

/// `rules classify`: bucket, family, library, rule and name per line of `text`, tab-separated.
pub fn classified_names(rules: &RuleSet, text: &str) -> String {
    let mut out = String::new();
    for name in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
        let c = rules.classify(name);
        let rule = c.rule.map_or("-", |i| rules.rules[i].def.id.as_str());
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}",
            c.bucket.as_str(),
            c.family,
            c.library,
            rule,
            name
        );
    }
    out
}

/// `rules explain NAME`: the normalized name and every rule that matches it, winner first.
pub fn rule_explanation(rules: &RuleSet, name: &str) -> String {
    let ex = rules.explain(name);
    let mut out = String::new();
    if ex.normalized != name {
        let _ = writeln!(out, "normalized: {}", ex.normalized);
    }
    if ex.matched.is_empty() {
        out.push_str("no rule matches: unclassified (bucket other)\n");
    }
    for (k, &i) in ex.matched.iter().enumerate() {
        let r = &rules.rules[i];
        let _ = writeln!(
            out,
            "{} {:<32} priority {:>4}  bucket {:<13} family {:<16} library {}  ({})",
            if k == 0 { "WINNER" } else { "      " },
            r.def.id,
            r.def.priority,
            r.def.bucket.as_str(),
            r.def.family,
            r.def.library.as_deref().unwrap_or("(by name)"),
            r.file.display()
        );
    }
    out
}

/// Every finding and recommendation id `explain` knows.
pub fn known_ids(catalog: &Catalog) -> Vec<&str> {
    let mut known: Vec<&str> = crate::detect::DEFINITIONS
        .iter()
        .map(|d| d.0.as_str())
        .collect();
    known.extend(catalog.recommendations.iter().map(|r| r.id.as_str()));
    known
}

/// `explain ID`: when a finding fires and what it can trigger, or a recommendation's trigger,
/// savings model, actions and seed; None for an unknown id.
pub fn explain_id(catalog: &Catalog, id: &str) -> Option<String> {
    if id == "recommendations" {
        return Some(recommendations_table(catalog));
    }
    if let Some((_, def)) = crate::detect::DEFINITIONS
        .iter()
        .find(|(f, _)| f.as_str() == id)
    {
        let mut out = format!("finding {id}\n  fires when: {def}\n");
        let recs: Vec<&str> = catalog
            .recommendations
            .iter()
            .filter(|r| r.findings.iter().any(|f| f.as_str() == id))
            .map(|r| r.id.as_str())
            .collect();
        if !recs.is_empty() {
            let _ = writeln!(out, "  recommendations it can trigger: {}", recs.join(", "));
        }
        return Some(out);
    }
    catalog.get(id).map(explain_recommendation)
}

fn join_categories(cats: &[Category]) -> String {
    cats.iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(" + ")
}

/// When a recommendation fires: its findings and every narrowing condition, in words.
fn trigger(r: &RecDef) -> Vec<String> {
    let ids: Vec<&str> = r.findings.iter().map(|f| f.as_str()).collect();
    let mut when = vec![format!("any of the findings {}", ids.join(", "))];
    if !r.findings_if_compiled.is_empty() {
        let only: Vec<&str> = r.findings_if_compiled.iter().map(|f| f.as_str()).collect();
        when.push(format!("{} only when compiled", only.join(", ")));
    }
    if let Some(k) = &r.finding_kind {
        when.push(format!("with evidence.kind = {k}"));
    }
    if let Some(k) = &r.evidence_key {
        when.push(format!("with evidence.{k} set"));
    }
    if let Some(p) = r.min_stake_pct {
        when.push(format!("its time at stake >= {p}% of the window"));
    }
    if let Some(w) = r.min_workgroups {
        when.push(format!(
            "its kernels' largest grid >= {w} workgroups (or unknown)"
        ));
    }
    if !r.vendors.is_empty() {
        let vendors: Vec<&str> = r.vendors.iter().map(|v| v.as_str()).collect();
        when.push(format!("on {}", vendors.join(", ")));
    }
    if !r.archs.is_empty() {
        when.push(format!("on architectures {}*", r.archs.join("*, ")));
    }
    if let Some(c) = r.compiled {
        when.push(if c { "compiled" } else { "not compiled" }.into());
    }
    if let Some(c) = r.cudagraphs {
        when.push(
            if c {
                "CUDA/HIP graphs in use"
            } else {
                "no CUDA/HIP graphs"
            }
            .into(),
        );
    }
    if let Some(m) = &r.min_bucket {
        when.push(format!(
            "{} >= {}% of GPU activity time",
            m.bucket.as_str(),
            m.pct
        ));
    }
    if let Some(l) = &r.gemm_library {
        when.push(format!(
            "GEMM libraries matching /{l}/ carry most GEMM time"
        ));
    }
    if let Some(p) = r.max_low_precision_gemm_pct {
        when.push(format!(
            "under {p}% of GEMM time already on 8-bit or narrower operands"
        ));
    }
    if let Some(t) = &r.max_tag_share {
        let tag = serde_json::to_value(t.tag)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        when.push(format!(
            "{tag} kernels under {}% of {} time",
            t.pct,
            t.bucket.as_str()
        ));
    }
    if r.rank_first {
        when.push("ranked first whenever it fires".into());
    }
    when
}

/// What a recommendation saves, in words.
fn savings_model(r: &RecDef) -> String {
    let basis = if r.basis == Basis::Finding {
        "the finding's time at stake".to_string()
    } else {
        format!("the time of {}", join_categories(&r.acts_on))
    };
    let estimate = format!(
        "{} x {basis}, at most the time of {} (steady steps only); confidence {}",
        r.fraction,
        join_categories(&r.acts_on),
        r.confidence
    );
    match r.replay {
        Some(t) => format!(
            "the step replayed with `{}` (docs/concepts/replays.md), steady steps only; where it cannot act: {estimate}",
            t.as_str()
        ),
        None => estimate,
    }
}

/// The evidence a recommendation cites: its own facts, then its findings' summaries.
fn evidence_said(r: &RecDef) -> String {
    let mut said: Vec<&str> = r.because.iter().map(|f| f.describe()).collect();
    said.push("the triggering findings' summaries");
    said.join("; ")
}

/// When a recommendation fires, what it saves, its actions and its seed.
fn explain_recommendation(r: &RecDef) -> String {
    let mut out = format!("recommendation {} (level {}): {}\n", r.id, r.level, r.title);
    let _ = writeln!(out, "  fires when: {}", trigger(r).join("; "));
    let _ = writeln!(out, "  evidence: {}", evidence_said(r));
    let _ = writeln!(out, "  savings: {}", savings_model(r));
    for a in &r.actions {
        let vendor = a
            .vendor
            .map(|v| format!(" [{}]", v.as_str()))
            .unwrap_or_default();
        let _ = writeln!(out, "  {}{vendor}: {}", a.kind, a.text);
    }
    for c in &r.caveats {
        let vendor = c
            .vendor
            .map(|v| format!(" [{}]", v.as_str()))
            .unwrap_or_default();
        let _ = writeln!(out, "  caveat{vendor}: {}", c.text);
    }
    let _ = writeln!(out, "  source: {}", r.seed);
    out
}

/// Every recommendation as a Markdown table (the book's recommendations reference;
/// `rocprof-classify explain recommendations`): trigger and thresholds, evidence, savings
/// model, seed.
pub fn recommendations_table(catalog: &Catalog) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from(
        "| id | level | fires when (thresholds) | evidence | savings model | seed |\n|---|---|---|---|---|---|\n",
    );
    let mut recs: Vec<&RecDef> = catalog.recommendations.iter().collect();
    recs.sort_by(|a, b| a.level.cmp(&b.level).then(a.id.cmp(&b.id)));
    for r in recs {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            r.id,
            r.level,
            cell(&trigger(r).join("; ")),
            cell(&evidence_said(r)),
            cell(&savings_model(r)),
            cell(&r.seed)
        );
    }
    out
}

/// Every finding as a Markdown table (the book's findings reference): its id, when it fires
/// (`detect::DEFINITIONS`) and the recommendations it can trigger (`rules/ladder.toml`).
pub fn findings_table(catalog: &Catalog) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from("| id | fires when | recommendations |\n|---|---|---|\n");
    for (id, when) in crate::detect::DEFINITIONS {
        let mut recs: Vec<&str> = catalog
            .recommendations
            .iter()
            .filter(|r| r.findings.contains(id) || r.findings_if_compiled.contains(id))
            .map(|r| r.id.as_str())
            .collect();
        recs.sort_unstable();
        recs.dedup();
        let recs: Vec<String> = recs.iter().map(|r| format!("`{r}`")).collect();
        let _ = writeln!(
            out,
            "| `{id}` | {} | {} |",
            cell(when),
            if recs.is_empty() {
                "-".to_string()
            } else {
                recs.join(", ")
            }
        );
    }
    out
}
