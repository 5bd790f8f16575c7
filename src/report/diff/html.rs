//! The before → after report as a self-contained HTML page (the single-trace report's page,
//! style and charts).

use crate::compare::{Delta, Diff};
use crate::report::diff::{components_text, op_label, verdict_line};
use crate::report::format::{display_name, fmt_ns, shorten_tail};
use crate::report::html::charts::{self, Stack};
use crate::report::html::{chart, esc, num, page};
use std::fmt::Write as _;

fn delta_cell(d: &Delta) -> String {
    let class = if d.delta_ns > 0 {
        "up"
    } else if d.delta_ns < 0 {
        "down"
    } else {
        ""
    };
    let pct = d
        .delta_pct
        .map_or("new".to_string(), |p| format!("{p:+.1}%"));
    format!(
        "<td class=\"n {class}\" data-v=\"{}\">{}{} ({pct})</td>",
        d.delta_ns,
        if d.delta_ns >= 0 { "+" } else { "-" },
        fmt_ns(d.delta_ns.abs())
    )
}

/// The op rows matched across the runs: paired bars of the largest changes, then the table.
fn render_op_deltas(b: &mut String, d: &Diff) {
    use crate::compare::stats::Verdict;
    if d.ops.is_empty() {
        return;
    }
    let rows: Vec<charts::PairedBar> = d
        .ops
        .iter()
        .take(12)
        .map(|o| charts::PairedBar {
            label: shorten_tail(&op_label(o), 58),
            base: o.base_ns_per_step as f64 / 1e3,
            new: o.new_ns_per_step as f64 / 1e3,
            color: match o.verdict {
                Verdict::Slower => plotters::style::RGBColor(214, 39, 40),
                Verdict::Faster => plotters::style::RGBColor(44, 160, 44),
                _ => plotters::style::RGBColor(31, 119, 180),
            },
        })
        .collect();
    b.push_str(&chart(&charts::paired_bars(
        "Largest op changes: GPU time per step, base (grey) and new (red slower, green faster, blue within noise)",
        &rows,
        " µs",
        1000,
    )));
    let _ = writeln!(
        b,
        "<h2>Ops matched across the runs ({} of {}, per step)</h2><table class=\"sortable\"><thead><tr><th>op</th><th>match</th><th>base</th><th>new</th><th>change</th><th>calls</th><th>verdict</th><th>confidence</th></tr></thead><tbody>",
        d.ops.len(),
        d.ops_total
    );
    for o in &d.ops {
        let label = op_label(o);
        let _ = writeln!(
            b,
            "<tr><td><code title=\"{}\">{}</code></td><td>{}</td>{}{}{}<td class=\"n\">{} → {}</td><td>{}</td><td class=\"n\">{}</td></tr>",
            esc(&label),
            esc(&shorten_tail(&label, 90)),
            o.matched.as_str(),
            num(o.base_ns_per_step),
            num(o.new_ns_per_step),
            delta_cell(&Delta {
                name: String::new(),
                base_ns: o.base_ns_per_step,
                new_ns: o.new_ns_per_step,
                delta_ns: o.delta_ns_per_step,
                delta_pct: o.delta_pct,
            }),
            o.base_calls_per_step,
            o.new_calls_per_step,
            o.verdict.as_str(),
            o.confidence.map_or("–".to_string(), |c| format!("{c:.3}"))
        );
    }
    let _ = writeln!(b, "</tbody></table>");
}

fn delta_table(b: &mut String, title: &str, rows: &[Delta]) {
    let _ = writeln!(b, "<table class=\"sortable\"><thead><tr><th>{title}</th><th>base</th><th>new</th><th>change</th></tr></thead><tbody>");
    for d in rows.iter().filter(|d| d.base_ns != 0 || d.new_ns != 0) {
        let _ = writeln!(
            b,
            "<tr><td>{}</td>{}{}{}</tr>",
            esc(&d.name),
            num(d.base_ns),
            num(d.new_ns),
            delta_cell(d)
        );
    }
    let _ = writeln!(b, "</tbody></table>");
}

/// The before → after report.
pub fn render(d: &Diff) -> String {
    let mut b = String::new();
    let _ = writeln!(b, "<h1>rocprof-classify diff</h1>");
    for (label, s) in [("base", &d.base), ("new", &d.new)] {
        let replay = if s.cudagraphs {
            format!(
                ", graph replay: {} kernels per step",
                s.graph_replayed_kernels_per_step
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            b,
            "<p><b>{label}</b>: {} ({}, {}, {}{replay})</p>",
            esc(&s.inputs.join(", ")),
            s.vendor,
            esc(&s.devices.join(", ")),
            if s.compiled { "compiled" } else { "eager" }
        );
    }
    let _ = writeln!(b, "<p class=\"headline\">{}</p>", esc(&verdict_line(d)));
    let _ = writeln!(
        b,
        "<p>Per step: {}</p>",
        esc(&components_text(d, true, " · "))
    );
    for n in &d.statistics.notes {
        let _ = writeln!(b, "<p class=\"note\">{}</p>", esc(n));
    }
    render_op_deltas(&mut b, d);
    let stacks: Vec<Stack> = [("base", true), ("new", false)]
        .iter()
        .map(|(label, base)| Stack {
            label: label.to_string(),
            segments: d
                .time_partition
                .iter()
                .map(|p| {
                    (
                        p.name.clone(),
                        (if *base { p.base_ns } else { p.new_ns }) as f64 / 1e6,
                    )
                })
                .collect(),
        })
        .collect();
    b.push_str(&chart(&charts::stacked(
        "Time partition per step, before and after",
        &stacks,
        " ms",
        1000,
    )));
    let _ = writeln!(b, "<h2>Per step</h2>");
    delta_table(&mut b, "bucket", &d.buckets);
    delta_table(&mut b, "time partition", &d.time_partition);
    delta_table(&mut b, "bucket/library", &d.libraries);
    let _ = writeln!(b, "<h2>Kernels (per step)</h2><table class=\"sortable\"><thead><tr><th>change</th><th>kernel</th><th>bucket</th><th>base</th><th>new</th></tr></thead><tbody>");
    for (label, list) in [
        ("appeared", &d.kernels_appeared),
        ("vanished", &d.kernels_vanished),
        ("changed", &d.kernels_changed),
    ] {
        for k in list {
            let _ = writeln!(
                b,
                "<tr><td>{label}</td><td><code title=\"{}\">{}</code></td><td>{}</td>{}{}</tr>",
                esc(&k.name),
                esc(&shorten_tail(&display_name(&k.name), 90)),
                k.bucket.as_str(),
                num(k.base_ns),
                num(k.new_ns)
            );
        }
    }
    let _ = writeln!(b, "</tbody></table>\n<h2>Findings and ladder</h2>");
    let list = |v: &[crate::detect::FindingId]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|x| format!("<code>{}</code>", esc(x.as_str())))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let _ = writeln!(
        b,
        "<p>Resolved: {}<br>Introduced: {}<br>Still present: {}</p>",
        list(&d.findings_resolved),
        list(&d.findings_introduced),
        list(&d.findings_remaining)
    );
    let levels: Vec<(u8, String, &str)> = d
        .ladder
        .iter()
        .map(|l| {
            (
                l.level,
                if l.unchanged() {
                    l.name.clone()
                } else {
                    format!("{} (was {})", l.name, l.base.as_str())
                },
                l.new_name(),
            )
        })
        .collect();
    b.push_str(&chart(&charts::ladder(&levels, 1000)));
    page("rocprof-classify diff", &b)
}
