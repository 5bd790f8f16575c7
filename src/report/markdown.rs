//! A GitHub-flavoured Markdown summary sized for a pull-request comment (well under GitHub's
//! 65,536-character limit): headline, buckets, partition, top recommendations, findings.

use crate::analysis::Analysis;
use crate::pipeline::Run;
use crate::report::format::{display_name, fmt_ns, shorten_tail};
use crate::report::sections::{level_tag, Sections};
use std::fmt::Write as _;

/// Escapes text for a Markdown table cell.
pub fn cell(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('\n', " ")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Inline code that survives backticks inside.
pub fn code(s: &str) -> String {
    if s.contains('`') {
        format!("``{s}``")
    } else {
        format!("`{s}`")
    }
}

/// The Markdown report of a run (a PR comment).
pub fn render(run: &Run) -> String {
    let a = &run.analysis;
    let sections = Sections::of(run);
    let mut out = String::new();
    render_header(&mut out, &sections);

    render_buckets(&mut out, &sections);
    render_partition(&mut out, &sections);
    let memory = crate::report::sections::memory_lines(run);
    if !memory.is_empty() {
        let _ = writeln!(out, "\nGPU memory: {}", cell(&memory.join("; ")));
    }
    if let Some(line) = crate::report::bound::path_line(run) {
        let _ = writeln!(out, "\nCritical path: {}", cell(&line));
        render_path_top(&mut out, run);
    }
    if let Some(line) = crate::report::sections::mfu_line(run) {
        let _ = writeln!(out, "\nMFU: {}", cell(&line));
    }
    render_regions(&mut out, run);

    render_recommendations(&mut out, run);
    render_ladder(&mut out, &sections);

    render_findings(&mut out, run);
    render_top_kernels(&mut out, a);
    render_top_ops(&mut out, a);
    render_op_shapes(&mut out, a);
    render_phases(&mut out, run);
    render_candidates(&mut out, run);
    render_collectives(&mut out, run);
    render_counters(&mut out, a);
    let _ = writeln!(
        out,
        "\n<sub>rocprof-classify {}</sub>",
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// The heading (the inputs, each once), the headline and a warning for truncated traces.
fn render_header(out: &mut String, sections: &Sections) {
    let a = &sections.run.analysis;
    let inputs: Vec<String> = a
        .inputs
        .iter()
        .map(|i| format!("{} ({}, {})", i.path, i.format.as_str(), i.vendor.as_str()))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    let inputs: Vec<String> = inputs
        .into_iter()
        .filter(|i| seen.insert(i.clone()))
        .collect();
    let _ = writeln!(out, "## rocprof-classify: {}\n", cell(&inputs.join(", ")));
    let _ = writeln!(out, "{}\n", sections.headline());
    if sections.truncated() {
        let _ = writeln!(
            out,
            "> **Warning:** a trace is truncated; the analysis covers what was written.\n"
        );
    }
}

/// GPU time and launches by bucket.
fn render_buckets(out: &mut String, sections: &Sections) {
    let _ = writeln!(
        out,
        "| bucket | GPU time | % | launches |\n|---|---:|---:|---:|"
    );
    for b in &sections.buckets {
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {} |",
            b.bucket.as_str(),
            fmt_ns(b.kernel_ns),
            b.pct,
            b.launches
        );
    }
}

/// The window's time partition.
fn render_partition(out: &mut String, sections: &Sections) {
    let _ = writeln!(
        out,
        "\n| time partition | time | % of window |\n|---|---:|---:|"
    );
    for r in &sections.partition {
        let _ = writeln!(out, "| {} | {} | {:.1} |", r.category, fmt_ns(r.ns), r.pct);
    }
}

/// The regions' top two levels (per occurrence), at most 20 rows; the HTML report has the tree.
fn render_regions(out: &mut String, run: &Run) {
    use crate::report::sections::{region_cells, REGION_HEADER};
    let rows: Vec<_> = run
        .analysis
        .regions
        .iter()
        .filter(|r| r.depth <= 1)
        .take(20)
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n| {} |\n|---|---:|---:|---:|---:|---:|---|---:|",
        REGION_HEADER.join(" | ")
    );
    for r in rows {
        let mut c = region_cells(r);
        if r.depth > 0 {
            c[0] = format!("↳ {}", c[0]);
        }
        let c: Vec<String> = c.iter().map(|s| cell(s)).collect();
        let _ = writeln!(out, "| {} |", c.join(" | "));
    }
}

/// The top three recommendations, each with its first piece of evidence and two actions; the
/// rest folded, one line each with their caveats.
fn render_recommendations(out: &mut String, run: &Run) {
    let _ = writeln!(out, "\n### Top recommendations\n");
    if !run.plan.recommendations.is_empty() {
        let _ = writeln!(out, "Ranked {}.\n", crate::recommend::ORDER_RULE);
    }
    if run.plan.recommendations.is_empty() {
        let _ = writeln!(out, "None.");
    }
    for r in run.plan.recommendations.iter().take(3) {
        let _ = writeln!(
            out,
            "{}. **[{}] {}**: {}",
            r.rank,
            level_tag(r),
            cell(&r.title),
            cell(&crate::report::sections::savings_phrase(
                r,
                run.analysis.summary.window_ns
            )),
        );
        if let Some(e) = r.evidence.first() {
            let _ = writeln!(out, "   - because: {}", cell(e));
        }
        for act in r.actions.iter().take(2) {
            let _ = writeln!(out, "   - {}: {}", act.kind, code(&act.text));
        }
        for c in &r.caveats {
            let _ = writeln!(out, "   - caveat: {}", cell(c));
        }
    }
    // The rest, one line each, folded; their caveats stay visible in the fold.
    let rest = run.plan.recommendations.get(3..).unwrap_or_default();
    if !rest.is_empty() {
        let _ = writeln!(
            out,
            "\n<details><summary>{} more recommendation(s)</summary>\n",
            rest.len()
        );
        for r in rest {
            let after = match r.after.is_empty() {
                true => String::new(),
                false => format!(
                    ", {:.1}% after {}",
                    crate::analysis::numbers::pct(
                        r.marginal_savings_ns,
                        run.analysis.summary.window_ns
                    ),
                    r.after.join(" + ")
                ),
            };
            let _ = writeln!(
                out,
                "{}. [{}] {}: saves ~{} ({:.1}%{after})",
                r.rank,
                level_tag(r),
                cell(&r.title),
                fmt_ns(r.est_savings_ns),
                r.est_savings_pct
            );
            for c in &r.caveats {
                let _ = writeln!(out, "   - caveat: {}", cell(c));
            }
        }
        let _ = writeln!(out, "\n</details>");
    }
}

/// Each ladder level's status on one line.
fn render_ladder(out: &mut String, sections: &Sections) {
    if !sections.ladder.is_empty() {
        let _ = writeln!(out, "\nLadder: {}", sections.ladder.join(" · "));
    }
}

/// The first 25 findings as a table.
fn render_findings(out: &mut String, run: &Run) {
    let _ = writeln!(out, "\n### Findings\n");
    if run.findings.is_empty() {
        let _ = writeln!(out, "None.");
    } else {
        let _ = writeln!(
            out,
            "| severity | finding | at stake | what the trace shows |\n|---|---|---:|---|"
        );
        for f in run.findings.iter().take(25) {
            let stake = if f.time_at_stake_ns > 0 {
                fmt_ns(f.time_at_stake_ns)
            } else {
                "-".into()
            };
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} |",
                f.severity.as_str(),
                f.id,
                stake,
                cell(&f.summary)
            );
        }
    }
}

/// The top ten kernels, folded.
fn render_top_kernels(out: &mut String, a: &Analysis) {
    let _ = writeln!(out, "\n<details><summary>Top kernels</summary>\n\n| kernel | bucket | library | time | % |\n|---|---|---|---:|---:|");
    for k in a.top_kernels.iter().take(10) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.1} |",
            code(&shorten_tail(&display_name(&k.name), 80)),
            k.bucket.as_str(),
            cell(&k.library),
            fmt_ns(k.total_ns),
            k.pct
        );
    }
    let _ = writeln!(out, "\n</details>");
}

/// The top ten ops with their efficiency, folded; only when the trace has ops.
fn render_top_ops(out: &mut String, a: &Analysis) {
    if a.ops
        .iter()
        .any(|o| o.name != crate::analysis::ops::attribution::NO_OP)
    {
        let _ = writeln!(out, "\n<details><summary>Top ops</summary>\n\n| op | self | total | bucket | shapes | TFLOP/s | % of peak | GB/s | % of HBM peak |\n|---|---:|---:|---|---|---:|---:|---:|---:|");
        let opt = crate::report::format::opt_num;
        for o in a.ops.iter().take(10) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                code(&o.name),
                fmt_ns(o.self_ns),
                fmt_ns(o.total_ns),
                o.bucket.as_str(),
                o.shapes
                    .as_deref()
                    .map_or("-".to_string(), |s| code(&shorten_tail(s, 50))),
                opt(o.tflops, 1),
                opt(o.pct_of_peak, 1),
                opt(o.gbps, 0),
                opt(o.pct_of_hbm_peak, 1)
            );
        }
        if let Some(note) = crate::report::sections::triton_rate_note(a) {
            let _ = writeln!(out, "\n{}", cell(&note));
        }
        let _ = writeln!(out, "\n</details>");
    }
}

/// Efficiency by op and shape, folded; only when there are shapes.
fn render_op_shapes(out: &mut String, a: &Analysis) {
    if !a.op_shapes.is_empty() {
        let _ = writeln!(out, "\n<details><summary>Efficiency by shape</summary>\n\n| op | shapes | calls | time | TFLOP/s | % of peak | GB/s |\n|---|---|---:|---:|---:|---:|---:|");
        let opt = crate::report::format::opt_num;
        for r in a.op_shapes.iter().take(10) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {:.1} | {} | {} |",
                code(&r.op),
                code(&shorten_tail(&r.shapes, 50)),
                r.calls,
                fmt_ns(r.ns),
                r.tflops,
                opt(r.pct_of_peak, 1),
                opt(r.gbps, 0)
            );
        }
        let _ = writeln!(out, "\n</details>");
    }
}

/// What the critical path spends most on, folded: the first ops and kernels of `top[]`.
fn render_path_top(out: &mut String, run: &Run) {
    let path = &run.analysis.critical_path;
    if path.top.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n<details><summary>On the critical path</summary>\n\n| op or kernel | label | time on the path | % of path |\n|---|---|---:|---:|"
    );
    for item in path.top.iter().take(8) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} |",
            code(&shorten_tail(&item.name, 80)),
            item.label,
            fmt_ns(item.ns),
            item.pct_of_path
        );
    }
    let _ = writeln!(out, "\n</details>");
}

/// The top five kernel candidates with their commands, folded.
fn render_candidates(out: &mut String, run: &Run) {
    let Some(rows) = crate::report::sections::candidates(run, 5) else {
        return;
    };
    let _ = writeln!(
        out,
        "\n<details><summary>Kernel candidates</summary>\n\nThe kernels whose tuning could win back the most time (at 70% of the dense peak, or 80% of HBM for memory-bound work).\n"
    );
    for ([rank, kernel, op, rate, time, win], k) in rows {
        let _ = writeln!(
            out,
            "{rank}. {} under {}: {rate}, {time}; to win: {}",
            code(&shorten_tail(&kernel, 60)),
            code(&shorten_tail(&op, 80)),
            cell(&win)
        );
        if let Some(src) = &k.source {
            let _ = writeln!(out, "   - source: {}", code(src));
        }
        for c in &k.commands {
            let kind = match c.kind {
                crate::analysis::ops::candidates::CommandKind::Profile => "profile",
                crate::analysis::ops::candidates::CommandKind::Tune => "tune",
            };
            let _ = writeln!(out, "   - {kind}: {}", code(&c.text));
        }
    }
    let _ = writeln!(out, "\n</details>");
}

/// Iterations by phase (traces without ProfilerStep); open: it is what such a trace is about.
fn render_phases(out: &mut String, run: &Run) {
    let Some((rows, note)) = crate::report::sections::phases(run) else {
        return;
    };
    let header = crate::report::sections::PHASE_HEADER;
    let _ = writeln!(
        out,
        "\n### Iterations by phase\n\n{}\n\n| {} |\n|---|---:|---:|---:|---:|---|---:|---|",
        cell(&note),
        header.join(" | ")
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| {} |",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
}

/// Collectives per type, size and process group, folded; only when there are any.
fn render_collectives(out: &mut String, run: &Run) {
    if let Some(line) = crate::report::sections::parallelism_line(run) {
        let _ = writeln!(out, "\n{}", cell(&line));
    }
    if let Some((rows, note)) = crate::report::sections::pipeline_stages(run) {
        let header = crate::report::sections::STAGE_HEADER;
        folded_table(out, "Pipeline stages", &note, &header, &rows);
        let replays = crate::report::sections::pipeline_replays(run);
        if !replays.is_empty() {
            let _ = writeln!(out, "\nReplayed:\n");
            for line in replays {
                let _ = writeln!(out, "- {}", cell(&line));
            }
        }
        let _ = writeln!(out, "\n</details>");
    }
    let Some((rows, note)) = crate::report::sections::collectives(run, 12) else {
        return;
    };
    let header = crate::report::sections::COLLECTIVE_HEADER;
    folded_table(out, "Collectives", note, &header, &rows);
    let _ = writeln!(out, "\n</details>");
}

/// A folded table's opening: its summary, its note, its header (the first column left, the
/// others numbers) and its rows; the caller closes the `<details>`.
fn folded_table<const N: usize>(
    out: &mut String,
    summary: &str,
    note: &str,
    header: &[&str; N],
    rows: &[[String; N]],
) {
    let _ = writeln!(
        out,
        "\n<details><summary>{summary}</summary>\n\n{}\n\n| {} |\n|---|{}",
        cell(note),
        header.join(" | "),
        "---:|".repeat(N - 1)
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| {} |",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
}

/// Hardware counters of the top ten kernels, folded; only when there are counters.
fn render_counters(out: &mut String, a: &Analysis) {
    if !a.kernel_counters.is_empty() {
        let _ = writeln!(out, "\n<details><summary>Hardware counters per kernel</summary>\n\n| kernel | bound | pipe | TFLOP/s | % of peak | HBM GB/s | % of peak | FLOP/byte | waves/SIMD |\n|---|---|---|---:|---:|---:|---:|---:|---|");
        let opt = crate::report::format::opt_num;
        for k in a.kernel_counters.iter().take(10) {
            let occ = k.occupancy_label();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                code(&shorten_tail(&display_name(&k.name), 60)),
                k.bound.map_or("-", |b| b.as_str()),
                k.pipe.as_deref().unwrap_or("-"),
                opt(k.tflops, 2),
                opt(k.pct_of_peak, 1),
                opt(k.hbm_gbps, 0),
                opt(k.hbm_pct_of_peak, 1),
                opt(k.arithmetic_intensity, 1),
                occ
            );
        }
        let _ = writeln!(out, "\n</details>");
    }
}
