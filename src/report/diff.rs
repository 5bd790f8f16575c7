//! Renderers for a before → after comparison: terminal table, Markdown, JSON.

use crate::analysis::diff::{Delta, Diff, KernelDelta};
use crate::report::markdown::{cell, code};
use crate::report::table::{display_name, fmt_ns, shorten_tail, TableOptions};
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

pub fn table(d: &Diff, opts: &TableOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "base  {}\nnew   {}\n",
        side_label(d, true),
        side_label(d, false)
    );
    let _ = writeln!(
        out,
        "step time {} → {} ({}), per step: GPU busy {} → {}\n",
        fmt_ns(d.step.base_ns),
        fmt_ns(d.step.new_ns),
        pct(&d.step),
        fmt_ns(d.gpu_busy.base_ns),
        fmt_ns(d.gpu_busy.new_ns)
    );
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
            d.findings_resolved.join(", ")
        },
        if d.findings_introduced.is_empty() {
            "none".into()
        } else {
            d.findings_introduced.join(", ")
        }
    );
    let ladder: Vec<String> = d
        .ladder
        .iter()
        .map(|l| {
            if l.base == l.new {
                format!("L{} {}", l.level, l.new)
            } else {
                format!("L{} {} → {}", l.level, l.base, l.new)
            }
        })
        .collect();
    let _ = writeln!(out, "ladder: {}", ladder.join(", "));
    out
}

pub fn markdown(d: &Diff) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## rocprof-classify diff\n\n- base: {}\n- new: {}\n",
        cell(&side_label(d, true)),
        cell(&side_label(d, false))
    );
    let _ = writeln!(
        out,
        "**Step time {} → {} ({})**\n",
        fmt_ns(d.step.base_ns),
        fmt_ns(d.step.new_ns),
        pct(&d.step)
    );
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
    let ladder: Vec<String> = d
        .ladder
        .iter()
        .map(|l| {
            if l.base == l.new {
                format!("L{} {}", l.level, l.new)
            } else {
                format!("**L{} {} → {}**", l.level, l.base, l.new)
            }
        })
        .collect();
    let _ = writeln!(out, "**Ladder** {}\n", ladder.join(" · "));
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

fn list(v: &[String]) -> String {
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
