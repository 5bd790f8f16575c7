//! Renderers for a before → after comparison: terminal table, Markdown, JSON.

pub mod html;

use crate::compare::op_match::Match;
use crate::compare::stats::Verdict;
use crate::compare::{Cause, Delta, Diff, KernelDelta, OpDelta};
use crate::detect::FindingId;
use crate::report::format::{display_name, fmt_ns, shorten_tail};
use crate::report::markdown::{cell, code};
use crate::report::text::TableOptions;
use comfy_table::{presets, Cell, CellAlignment, Table};
use serde::Serialize;
use std::fmt::Write as _;

fn signed(ns: i64) -> String {
    if ns >= 0 {
        format!("+{}", fmt_ns(ns))
    } else {
        format!("-{}", fmt_ns(-ns))
    }
}

fn pct(d: &Delta) -> String {
    d.delta_pct
        .map_or("new".to_string(), |p| format!("{p:+.1}%"))
}

fn side_label(d: &Diff, base: bool) -> String {
    let s = if base { &d.base } else { &d.new };
    let mut what = vec![s.vendor.to_string()];
    what.extend(s.devices.iter().cloned());
    what.push(if s.compiled {
        "compiled".into()
    } else {
        "eager".into()
    });
    if s.cudagraphs {
        what.push(format!(
            "graph replay: {} kernels per step",
            s.graph_replayed_kernels_per_step
        ));
    }
    format!("{} ({})", s.inputs.join(", "), what.join(", "))
}

/// `slower: step 11.1 ms → 12.3 ms (+10.7%), confidence 1.000 (Welch's t-test, 24 vs 24
/// steps), from GPU work and host time`.
pub fn verdict_line(d: &Diff) -> String {
    let mut out = format!(
        "{}: step {} → {} ({})",
        d.verdict.as_str(),
        fmt_ns(d.step.base_ns),
        fmt_ns(d.step.new_ns),
        pct(&d.step)
    );
    match d.confidence {
        Some(c) if d.verdict.changed() => {
            let _ = write!(
                out,
                ", confidence {c:.3} (Welch's t-test, {} vs {} steps)",
                d.base.compared_steps, d.new.compared_steps
            );
        }
        Some(c) => {
            let p = 1.0 - c;
            let floor = if p < d.statistics.alpha {
                format!("under the {}% floor, ", d.statistics.step_floor_pct)
            } else {
                String::new()
            };
            let _ = write!(
                out,
                " ({floor}p = {p:.3}, Welch's t-test, {} vs {} steps)",
                d.base.compared_steps, d.new.compared_steps
            );
        }
        None => {
            let _ = write!(
                out,
                " ({} vs {} steps; {} a side are needed for a verdict)",
                d.base.compared_steps,
                d.new.compared_steps,
                crate::compare::stats::MIN_STEPS
            );
        }
    }
    if d.verdict == Verdict::Mixed {
        // Both parts, each with its change: which one the user's step follows depends on
        // which bounds it without the profiler.
        let part = |name: &str, what: &str| {
            d.components.iter().find(|c| c.name == name).map(|c| {
                let pct = if c.base_ns_per_step > 0 {
                    format!(
                        " ({:+.1}%)",
                        c.delta_ns_per_step as f64 / c.base_ns_per_step as f64 * 100.0
                    )
                } else {
                    String::new()
                };
                format!(
                    "{what} {} {} → {}{pct}",
                    c.verdict.as_str().replace('_', " "),
                    fmt_ns(c.base_ns_per_step),
                    fmt_ns(c.new_ns_per_step)
                )
            })
        };
        let parts: Vec<String> = [part("gpu_work", "GPU work"), part("host_time", "host time")]
            .into_iter()
            .flatten()
            .collect();
        let _ = write!(
            out,
            "; the step is {} but {}: a step the GPU bounds follows its GPU work",
            d.step_verdict.as_str().replace('_', " "),
            parts.join(", ")
        );
        return out;
    }
    if let Some(c) = d.cause {
        out.push_str(match c {
            Cause::GpuWork => ", from GPU work",
            Cause::HostTime if d.verdict == Verdict::WithinNoise => ", the change is host time",
            Cause::HostTime if d.host_noise() => {
                ", from host time with the same launches per step (host noise, not the code)"
            }
            Cause::HostTime => ", from host time",
            Cause::Both => ", from GPU work and host time",
        });
    }
    out
}

/// The step's parts before and after with their verdicts (`gpu_work 4.1 ms → 4.4 ms (slower)`),
/// as identifiers or, with `words`, as words.
pub fn components_text(d: &Diff, words: bool, sep: &str) -> String {
    let word = |s: &str| {
        if words {
            s.replace('_', " ")
        } else {
            s.to_string()
        }
    };
    d.components
        .iter()
        .filter(|c| c.base_ns_per_step != 0 || c.new_ns_per_step != 0)
        .map(|c| {
            format!(
                "{} {} → {} ({})",
                word(c.name),
                fmt_ns(c.base_ns_per_step),
                fmt_ns(c.new_ns_per_step),
                word(c.verdict.as_str())
            )
        })
        .collect::<Vec<_>>()
        .join(sep)
}

/// An op row's name: `aten::mm [[4096,1024],[1024,1024]] bf16`, with the new side's op where it
/// differs; fallback groups say what they group.
pub fn op_label(o: &OpDelta) -> String {
    let mut out = match o.matched {
        Match::Module => format!("module {}", o.op),
        Match::Source => format!("source {}", o.op),
        Match::Bucket => format!("{} (unmatched ops)", o.op),
        _ => o.op.clone(),
    };
    for x in [&o.shapes, &o.dtype].into_iter().flatten() {
        out.push(' ');
        out.push_str(x);
    }
    if let Some(n) = &o.new_op {
        let _ = write!(out, " → {n}");
    }
    out
}

/// `(+22 calls)` when the calls per step differ.
fn calls_note(o: &OpDelta) -> String {
    let d = ((o.new_calls_per_step - o.base_calls_per_step) * 100.0).round() / 100.0;
    if d == 0.0 || matches!(o.matched, Match::Bucket | Match::Module | Match::Source) {
        String::new()
    } else {
        format!(" ({d:+} calls)")
    }
}

fn op_table(rows: &[OpDelta], width: usize) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED).force_no_tty();
    t.set_header(["op", "match", "base", "new", "change", "verdict"]);
    for o in rows {
        t.add_row(vec![
            Cell::new(format!(
                "{}{}",
                shorten_tail(&op_label(o), width.saturating_sub(75).max(40)),
                calls_note(o)
            )),
            Cell::new(o.matched.as_str()),
            Cell::new(fmt_ns(o.base_ns_per_step)).set_alignment(CellAlignment::Right),
            Cell::new(fmt_ns(o.new_ns_per_step)).set_alignment(CellAlignment::Right),
            Cell::new(signed(o.delta_ns_per_step)).set_alignment(CellAlignment::Right),
            Cell::new(o.verdict.as_str()),
        ]);
    }
    t
}

fn delta_rows(rows: &[&Delta]) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED).force_no_tty();
    t.set_header(["", "base", "new", "change", "%"]);
    for d in rows {
        t.add_row(vec![
            Cell::new(&d.name),
            Cell::new(fmt_ns(d.base_ns)).set_alignment(CellAlignment::Right),
            Cell::new(fmt_ns(d.new_ns)).set_alignment(CellAlignment::Right),
            Cell::new(signed(d.delta_ns)).set_alignment(CellAlignment::Right),
            Cell::new(pct(d)).set_alignment(CellAlignment::Right),
        ]);
    }
    t
}

fn kernel_lines(out: &mut String, title: &str, list: &[KernelDelta], width: usize) {
    if list.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title}");
    for k in list.iter().take(8) {
        let _ = writeln!(
            out,
            "  {:>12}  {:<12} {}",
            signed(k.delta_ns),
            k.bucket.as_str(),
            shorten_tail(&display_name(&k.name), width.saturating_sub(30).max(30))
        );
    }
}

/// The comparison as the terminal prints it: the verdict, its cause, the largest changes.
pub fn table(d: &Diff, opts: &TableOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "base  {}\nnew   {}\n",
        side_label(d, true),
        side_label(d, false)
    );
    let _ = writeln!(out, "{}", verdict_line(d));
    let _ = writeln!(out, "per step: {}", components_text(d, false, ", "));
    for line in applied_lines(d) {
        let _ = writeln!(out, "{line}");
    }
    for n in &d.statistics.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out.push('\n');
    if !d.ops.is_empty() {
        let rows: Vec<OpDelta> = d.ops.iter().take(12).cloned().collect();
        let _ = writeln!(
            out,
            "Ops matched across the runs (GPU time per step; {} of {})\n{}\n",
            rows.len(),
            d.ops_total,
            op_table(&rows, opts.width as usize)
        );
    }
    let rows: Vec<&Delta> = d
        .buckets
        .iter()
        .filter(|b| b.base_ns != 0 || b.new_ns != 0)
        .collect();
    let _ = writeln!(out, "GPU time per step by bucket\n{}\n", delta_rows(&rows));
    let rows: Vec<&Delta> = d
        .time_partition
        .iter()
        .filter(|b| b.base_ns != 0 || b.new_ns != 0)
        .collect();
    let _ = writeln!(out, "Time partition per step\n{}\n", delta_rows(&rows));
    let rows: Vec<&Delta> = d.libraries.iter().take(8).collect();
    let _ = writeln!(
        out,
        "Largest changes by bucket/library (per step)\n{}\n",
        delta_rows(&rows)
    );
    let w = opts.width as usize;
    kernel_lines(
        &mut out,
        "Kernels that appeared (per step)",
        &d.kernels_appeared,
        w,
    );
    kernel_lines(
        &mut out,
        "Kernels that vanished (per step)",
        &d.kernels_vanished,
        w,
    );
    kernel_lines(
        &mut out,
        "Kernels that changed most (per step)",
        &d.kernels_changed,
        w,
    );
    let _ = writeln!(
        out,
        "\nfindings resolved: {}\nfindings introduced: {}",
        if d.findings_resolved.is_empty() {
            "none".into()
        } else {
            names(&d.findings_resolved).join(", ")
        },
        if d.findings_introduced.is_empty() {
            "none".into()
        } else {
            names(&d.findings_introduced).join(", ")
        }
    );
    let _ = writeln!(out, "ladder: {}", ladder_steps(d, "").join(", "));
    out
}

/// The comparison as Markdown (a PR comment).
pub fn markdown(d: &Diff) -> String {
    let mut out = String::new();
    let line = verdict_line(d);
    let (verdict, rest) = line.split_once(": ").unwrap_or((&line, ""));
    let _ = writeln!(
        out,
        "## rocprof-classify diff: {}\n\n**S{}**\n",
        verdict.replace('_', " "),
        rest.strip_prefix('s').unwrap_or(rest)
    );
    let top: Vec<&OpDelta> = d.ops.iter().take(3).collect();
    if !top.is_empty() {
        let _ = writeln!(out, "Largest op changes (GPU time per step):\n");
        for o in top {
            let _ = writeln!(
                out,
                "- {}: {} → {}{} · {} ({})",
                code(&shorten_tail(&op_label(o), 110)),
                fmt_ns(o.base_ns_per_step),
                fmt_ns(o.new_ns_per_step),
                calls_note(o),
                o.verdict.as_str().replace('_', " "),
                o.matched.as_str()
            );
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "- base: {}\n- new: {}\n",
        cell(&side_label(d, true)),
        cell(&side_label(d, false))
    );
    let _ = writeln!(out, "Per step: {}\n", components_text(d, true, " · "));
    for n in &d.statistics.notes {
        let _ = writeln!(out, "> {}\n", cell(n));
    }
    let table = |out: &mut String, title: &str, rows: Vec<&Delta>| {
        let _ = writeln!(
            out,
            "| {title} | base | new | change | % |\n|---|---:|---:|---:|---:|"
        );
        for r in rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell(&r.name),
                fmt_ns(r.base_ns),
                fmt_ns(r.new_ns),
                signed(r.delta_ns),
                pct(r)
            );
        }
        out.push('\n');
    };
    table(
        &mut out,
        "bucket (per step)",
        d.buckets
            .iter()
            .filter(|b| b.base_ns != 0 || b.new_ns != 0)
            .collect(),
    );
    table(
        &mut out,
        "time partition (per step)",
        d.time_partition
            .iter()
            .filter(|b| b.base_ns != 0 || b.new_ns != 0)
            .collect(),
    );
    let _ = writeln!(
        out,
        "**Findings** resolved: {} · introduced: {}\n",
        list(&d.findings_resolved),
        list(&d.findings_introduced)
    );
    let _ = writeln!(out, "**Ladder** {}\n", ladder_steps(d, "**").join(" · "));
    if !d.ops.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>Ops ({} of {})</summary>\n\n| op | match | base | new | change | verdict |\n|---|---|---:|---:|---:|---|",
            d.ops.len(),
            d.ops_total
        );
        for o in &d.ops {
            let _ = writeln!(
                out,
                "| {}{} | {} | {} | {} | {} | {} |",
                code(&shorten_tail(&op_label(o), 90)),
                cell(&calls_note(o)),
                o.matched.as_str(),
                fmt_ns(o.base_ns_per_step),
                fmt_ns(o.new_ns_per_step),
                signed(o.delta_ns_per_step),
                o.verdict.as_str()
            );
        }
        let _ = writeln!(out, "\n</details>\n");
    }
    let _ = writeln!(out, "<details><summary>Kernels</summary>\n\n| change | kernel | bucket | per step |\n|---|---|---|---:|");
    for (label, list) in [
        ("appeared", &d.kernels_appeared),
        ("vanished", &d.kernels_vanished),
        ("changed", &d.kernels_changed),
    ] {
        for k in list.iter().take(8) {
            let _ = writeln!(
                out,
                "| {label} | {} | {} | {} |",
                code(&shorten_tail(&display_name(&k.name), 70)),
                k.bucket.as_str(),
                signed(k.delta_ns)
            );
        }
    }
    let _ = writeln!(
        out,
        "\n</details>\n\n<sub>rocprof-classify {}</sub>",
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// Each ladder level as `L2 todo`, or `L2 todo → partial` wrapped in `emphasis` when it moved.
fn ladder_steps(d: &Diff, emphasis: &str) -> Vec<String> {
    d.ladder
        .iter()
        .map(|l| {
            if l.unchanged() {
                format!("L{} {}", l.level, l.new_name())
            } else {
                let (b, n) = (l.base.as_str(), l.new_name());
                format!("{emphasis}L{} {b} → {n}{emphasis}", l.level)
            }
        })
        .collect()
}

/// Finding ids by name.
fn names(v: &[FindingId]) -> Vec<&'static str> {
    v.iter().map(|id| id.as_str()).collect()
}

fn list(v: &[FindingId]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.iter()
            .map(|x| format!("`{x}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[derive(Serialize)]
struct DiffFeed<'a> {
    schema_version: u32,
    tool: serde_json::Value,
    diff: &'a Diff,
}

/// The comparison as JSON (the diff feed CI gates read).
pub fn json(d: &Diff) -> Vec<u8> {
    let feed = DiffFeed {
        schema_version: crate::report::json::SCHEMA_VERSION,
        tool: serde_json::json!({"name": "rocprof-classify", "version": env!("CARGO_PKG_VERSION")}),
        diff: d,
    };
    let mut out = serde_json::to_vec_pretty(&feed).expect("the diff is plain data");
    out.push(b'\n');
    out
}

/// `--applied`: each set of rungs applied, what the base run predicted (without the profiler's
/// cost, and in profiled steps) and what the profiled runs measured.
pub fn applied_lines(d: &Diff) -> Vec<String> {
    d.applied
        .iter()
        .map(|a| {
            let pct = |ns: i64| crate::analysis::numbers::pct(ns, a.base_window_ns);
            let span = |r: [i64; 2]| format!("{:.1}% to {:.1}%", pct(r[0]), pct(r[1]));
            let profiled = match (a.predicted_profiled_ns, a.profiled_range_ns) {
                (Some(p), Some(r)) => format!("; in profiled steps {:.1}% ({})", pct(p), span(r)),
                _ => String::new(),
            };
            let which = if a.profiled_range_ns.is_some() { "profiled range" } else { "predicted range" };
            let verdict = match (a.within_range, a.interval_overlaps_range) {
                (true, _) => format!("within the {which}"),
                (false, true) => format!("outside the {which} (its 95% interval meets it)"),
                (false, false) => format!("outside the {which}"),
            };
            format!(
                "applied {}: predicted {:.1}% of the base window without the profiler ({}){}{}, measured {:.1}% ({}): {verdict}",
                a.id,
                pct(a.predicted_ns),
                span(a.range_ns),
                profiled,
                if a.recommended { "" } else { "; not recommended on the base run" },
                pct(a.measured_ns),
                span(a.measured_interval_ns),
            )
        })
        .collect()
}
