//! The terminal report: a header, the bucket table, the top kernels and the unclassified share.

use crate::analysis::time::partition::Category;
use crate::analysis::Analysis;
use crate::pipeline::Run;
use crate::report::sections::{level_tag, Sections};
use comfy_table::{presets, Attribute, Cell, CellAlignment, Color, ContentArrangement, Table};
use std::fmt::Write as _;

/// How to render.
#[derive(Clone, Debug)]
pub struct TableOptions {
    /// Colour the output (ANSI escapes).
    pub color: bool,
    /// Terminal width; tables wrap to it.
    pub width: u16,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            color: false,
            width: 120,
        }
    }
}

use crate::report::format::{display_name, fmt_ns, shorten_tail};

fn new_table(opts: &TableOptions) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(opts.width);
    if !opts.color {
        t.force_no_tty();
    } else {
        t.enforce_styling();
    }
    t
}

fn header_cell(s: &str, opts: &TableOptions) -> Cell {
    let c = Cell::new(s);
    if opts.color {
        c.add_attribute(Attribute::Bold)
    } else {
        c
    }
}

fn num(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

/// Renders the whole terminal report.
pub fn render(run: &Run, opts: &TableOptions) -> Vec<u8> {
    let a = &run.analysis;
    let sections = Sections::of(run);
    let mut out = String::new();
    let s = &a.summary;
    let _ = writeln!(out, "rocprof-classify {}", env!("CARGO_PKG_VERSION"));
    for line in &sections.inputs {
        let input = line.meta;
        let of = input
            .distributed
            .as_ref()
            .and_then(|d| d.world_size)
            .map(|w| format!(" of {w}"))
            .unwrap_or_default();
        let rank = input
            .rank
            .map(|r| format!(", rank {r}{of}"))
            .unwrap_or_default();
        let trunc = if input.truncated { " [TRUNCATED]" } else { "" };
        let _ = writeln!(
            out,
            "input    {} ({}, {}{rank}){trunc}: {}",
            input.path,
            input.format.as_str(),
            input.vendor.as_str(),
            if line.devices.is_empty() {
                "no GPU activity"
            } else {
                &line.devices
            }
        );
    }
    let steps = match &s.step_ns {
        Some(st) if s.steps > 0 => {
            let warm = run.analysis.warmup_in_window;
            let mean = fmt_ns(st.mean.round() as i64);
            match (s.steps, warm) {
                (1, _) => format!("1 step, {mean}"),
                (2, true) => format!("2 (the first a warm-up, left out; 1 step, {mean})"),
                (n, _) => format!("{n} (mean {mean}, cv {:.1}%)", st.cv_pct),
            }
        }
        _ if s.iterations.is_some() => format!(
            "none; {} iterations from `{}` (see Iterations by phase)",
            s.iterations.unwrap_or(0),
            s.iteration_marker.as_deref().unwrap_or("?")
        ),
        _ => "none (window = first to last GPU activity)".to_string(),
    };
    let _ = writeln!(out, "steps    {steps}");
    for line in crate::report::sections::memory_lines(run).iter().take(8) {
        let _ = writeln!(out, "memory   {line}");
    }
    if let Some(line) = crate::report::bound::path_line(run) {
        let _ = writeln!(out, "bound    {line}");
    }
    if let Some(line) = crate::report::sections::mfu_line(run) {
        let _ = writeln!(out, "mfu      {line}");
    }
    if let Some(line) = crate::report::sections::region_line(run) {
        let _ = writeln!(out, "regions  {line}");
    }
    let _ = writeln!(
        out,
        "window   {}   GPU busy {} ({:.1}%)   GPU activity {} in {} launches of {} distinct kernels",
        fmt_ns(s.window_ns),
        fmt_ns(s.gpu_busy_ns),
        crate::analysis::numbers::pct(s.gpu_busy_ns, s.window_ns),
        fmt_ns(s.kernel_ns),
        a.activities,
        a.distinct_kernels
    );
    out.push('\n');

    let mut t = new_table(opts);
    t.set_header(
        ["bucket", "time", "%", "launches", "distinct kernels"].map(|h| header_cell(h, opts)),
    );
    for b in &sections.buckets {
        let mut name = Cell::new(b.bucket.as_str());
        if opts.color {
            name = name.fg(bucket_color(b.bucket.as_str()));
        }
        t.add_row(vec![
            name,
            num(fmt_ns(b.kernel_ns)),
            num(format!("{:.1}", b.pct)),
            num(b.launches.to_string()),
            num(b.distinct_kernels.to_string()),
        ]);
    }
    let _ = writeln!(out, "GPU time by bucket\n{t}\n");

    render_plan(&mut out, &sections);
    render_partition(&mut out, a, opts);
    render_steps(&mut out, a, opts);
    render_compile(&mut out, a);

    if !a.top_kernels.is_empty() {
        let mut t = new_table(opts);
        t.set_header(
            [
                "kernel", "bucket", "library", "rule", "launches", "time", "%",
            ]
            .map(|h| header_cell(h, opts)),
        );
        t.set_content_arrangement(ContentArrangement::Disabled);
        // Give the name whatever the other columns leave of the width (each column costs its
        // content plus 3 characters of padding and border).
        let col = |f: &dyn Fn(&crate::analysis::KernelRow) -> usize, header: usize| {
            a.top_kernels.iter().map(f).max().unwrap_or(0).max(header) + 3
        };
        let others = col(&|k| k.bucket.as_str().len(), 6)
            + col(&|k| k.library.chars().count(), 7)
            + col(&|k| k.rule_id.as_deref().unwrap_or("-").len(), 4)
            + col(&|k| k.launches.to_string().len(), 8)
            + col(&|k| fmt_ns(k.total_ns).chars().count(), 4)
            + col(&|k| format!("{:.1}", k.pct).len(), 1);
        let name_width = (opts.width as usize)
            .saturating_sub(others + 4)
            .clamp(30, 160);
        for k in &a.top_kernels {
            t.add_row(vec![
                Cell::new(shorten_tail(&display_name(&k.name), name_width)),
                Cell::new(k.bucket.as_str()),
                Cell::new(&k.library),
                Cell::new(k.rule_id.as_deref().unwrap_or("-")),
                num(k.launches.to_string()),
                num(fmt_ns(k.total_ns)),
                num(format!("{:.1}", k.pct)),
            ]);
        }
        let _ = writeln!(
            out,
            "Top {} kernels by GPU time\n{t}\n",
            a.top_kernels.len()
        );
    }
    render_attribution(&mut out, a, opts);
    render_phases(&mut out, run, opts);
    render_candidates(&mut out, run, opts);
    render_collectives(&mut out, run, opts);
    render_counters(&mut out, a, opts);
    render_findings(&mut out, run, opts);
    let _ = writeln!(
        out,
        "unclassified: {:.2}% of GPU activity time matched no rule{}",
        s.unclassified_pct,
        if s.unclassified_pct > 0.0 {
            " (see `rocprof-classify rules explain NAME`)"
        } else {
            ""
        }
    );
    out.into_bytes()
}

/// Which ops, modules and source lines own the GPU time (top 10 each), with the GEMM ops'
/// efficiency.
fn render_attribution(out: &mut String, a: &Analysis, opts: &TableOptions) {
    let opt = crate::report::format::opt_num;
    if a.ops
        .iter()
        .any(|o| o.name != crate::analysis::ops::attribution::NO_OP)
    {
        let mut t = new_table(opts);
        t.set_header(
            [
                "op", "self", "total", "launches", "bucket", "shapes", "TFLOP/s", "% peak", "GB/s",
                "% HBM",
            ]
            .map(|h| header_cell(h, opts)),
        );
        t.set_content_arrangement(ContentArrangement::Disabled);
        for o in a.ops.iter().take(10) {
            t.add_row(vec![
                Cell::new(shorten_tail(&o.name, 40)),
                num(fmt_ns(o.self_ns)),
                num(fmt_ns(o.total_ns)),
                num(o.launches.to_string()),
                Cell::new(o.bucket.as_str()),
                Cell::new(shorten_tail(o.shapes.as_deref().unwrap_or("-"), 36)),
                num(opt(o.tflops, 1)),
                num(opt(o.pct_of_peak, 1)),
                num(opt(o.gbps, 0)),
                num(opt(o.pct_of_hbm_peak, 1)),
            ]);
        }
        let _ = writeln!(
            out,
            "Top ops by GPU time (self: kernels they launched themselves)\n{t}\n"
        );
        if let Some(note) = crate::report::sections::triton_rate_note(a) {
            let _ = writeln!(out, "{note}\n");
        }
    }
    if !a.op_shapes.is_empty() {
        let mut t = new_table(opts);
        t.set_header(
            ["op", "shapes", "calls", "time", "TFLOP/s", "% peak", "GB/s"]
                .map(|h| header_cell(h, opts)),
        );
        t.set_content_arrangement(ContentArrangement::Disabled);
        for r in a.op_shapes.iter().take(10) {
            t.add_row(vec![
                Cell::new(shorten_tail(&r.op, 40)),
                Cell::new(shorten_tail(&r.shapes, 44)),
                num(r.calls.to_string()),
                num(fmt_ns(r.ns)),
                num(format!("{:.1}", r.tflops)),
                num(opt(r.pct_of_peak, 1)),
                num(opt(r.gbps, 0)),
            ]);
        }
        let _ = writeln!(
            out,
            "Efficiency by shape (GEMM, attention, convolution)\n{t}\n"
        );
    }
    for (rows, what) in [(&a.modules, "modules"), (&a.sources, "source lines")] {
        if rows.is_empty() {
            continue;
        }
        let mut t = new_table(opts);
        t.set_header(["", "self", "total"].map(|h| header_cell(h, opts)));
        for r in rows.iter().take(10) {
            let label = r.name.as_deref().or(r.location.as_deref()).unwrap_or("-");
            t.add_row(vec![
                Cell::new(shorten_tail(label, 70)),
                num(fmt_ns(r.self_ns)),
                num(fmt_ns(r.total_ns)),
            ]);
        }
        let _ = writeln!(out, "Top {what} by GPU time\n{t}\n");
    }
}

/// The top five kernel candidates (their commands are in the feed and the Markdown/HTML).
fn render_candidates(out: &mut String, run: &Run, opts: &TableOptions) {
    let Some(rows) = crate::report::sections::candidates(run, 5) else {
        return;
    };
    let mut t = new_table(opts);
    t.set_header(crate::report::sections::CANDIDATE_HEADER.map(|h| header_cell(h, opts)));
    for ([rank, kernel, op, rate, time, win], _) in rows {
        t.add_row(vec![
            num(rank),
            Cell::new(shorten_tail(&kernel, 40)),
            Cell::new(shorten_tail(&op, 48)),
            num(rate),
            num(time),
            Cell::new(shorten_tail(&win, 48)),
        ]);
    }
    let _ = writeln!(
        out,
        "Kernel candidates (time to win at 70% of the dense peak or 80% of HBM; profile and tune commands in --json/--markdown)\n{t}\n"
    );
}

/// Iterations by phase (traces without ProfilerStep).
fn render_phases(out: &mut String, run: &Run, opts: &TableOptions) {
    let Some((rows, note)) = crate::report::sections::phases(run) else {
        return;
    };
    let mut t = new_table(opts);
    t.set_header(crate::report::sections::PHASE_HEADER.map(|h| header_cell(h, opts)));
    for r in rows {
        let [phase, n, mean, p50, p90, buckets, idle, out] = r;
        t.add_row(vec![
            Cell::new(phase),
            num(n),
            num(mean),
            num(p50),
            num(p90),
            Cell::new(buckets),
            num(idle),
            Cell::new(out),
        ]);
    }
    let _ = writeln!(out, "Iterations by phase ({note})\n{t}\n");
}

/// Collectives per type, size and process group (the 12 largest by time).
fn render_collectives(out: &mut String, run: &Run, opts: &TableOptions) {
    if let Some(line) = crate::report::sections::parallelism_line(run) {
        let _ = writeln!(out, "{line}\n");
    }
    render_pipeline(out, run, opts);
    let Some((rows, note)) = crate::report::sections::collectives(run, 12) else {
        return;
    };
    let mut t = new_table(opts);
    t.set_header(crate::report::sections::COLLECTIVE_HEADER.map(|h| header_cell(h, opts)));
    for r in rows {
        let mut cells = r.into_iter();
        let mut row = vec![Cell::new(cells.next().unwrap_or_default())];
        row.extend(cells.map(num));
        t.add_row(row);
    }
    let _ = writeln!(out, "Collectives ({note})\n{t}\n");
}

/// The pipeline's stage table and its replays.
fn render_pipeline(out: &mut String, run: &Run, opts: &TableOptions) {
    let Some((rows, note)) = crate::report::sections::pipeline_stages(run) else {
        return;
    };
    let mut t = new_table(opts);
    t.set_header(crate::report::sections::STAGE_HEADER.map(|h| header_cell(h, opts)));
    for r in rows {
        t.add_row(r.into_iter().map(num).collect::<Vec<_>>());
    }
    let _ = writeln!(out, "Pipeline stages ({note})\n{t}");
    let replays = crate::report::sections::pipeline_replays(run);
    if !replays.is_empty() {
        let _ = writeln!(out, "Replayed:");
        for line in replays {
            let _ = writeln!(out, "  {line}");
        }
    }
    let _ = writeln!(out);
}

/// Hardware-counter metrics per kernel (rocprof-compute workloads): bound label, achieved
/// fractions of peak, intensity and theoretical occupancy.
fn render_counters(out: &mut String, a: &Analysis, opts: &TableOptions) {
    if a.kernel_counters.is_empty() {
        return;
    }
    let mut t = new_table(opts);
    t.set_header(
        [
            "kernel",
            "bound",
            "pipe",
            "TFLOP/s",
            "% peak",
            "HBM GB/s",
            "% peak",
            "FLOP/B",
            "waves/SIMD",
        ]
        .map(|h| header_cell(h, opts)),
    );
    t.set_content_arrangement(ContentArrangement::Disabled);
    let opt = crate::report::format::opt_num;
    for k in a.kernel_counters.iter().take(a.top_kernels.len().max(10)) {
        let occ = k.occupancy_label();
        t.add_row(vec![
            Cell::new(shorten_tail(&display_name(&k.name), 40)),
            Cell::new(k.bound.map_or("-", |b| b.as_str())),
            Cell::new(k.pipe.as_deref().unwrap_or("-")),
            num(opt(k.tflops, 2)),
            num(opt(k.pct_of_peak, 1)),
            num(opt(k.hbm_gbps, 0)),
            num(opt(k.hbm_pct_of_peak, 1)),
            num(opt(k.arithmetic_intensity, 1)),
            num(occ),
        ]);
    }
    let source = a
        .inputs
        .iter()
        .filter_map(|i| i.hardware.as_ref())
        .map(|h| match h.peak_source {
            Some(crate::model::PeakSource::Roofline) => {
                format!("{}: measured peaks (roofline.csv)", h.model)
            }
            Some(crate::model::PeakSource::Sysinfo) => {
                format!("{}: theoretical peaks (sysinfo.csv clocks)", h.model)
            }
            None => format!("{}: peaks unknown", h.model),
        })
        .collect::<Vec<_>>()
        .join("; ");
    let _ = writeln!(out, "Hardware counters per kernel ({source})\n{t}\n");
}

/// The ladder status and the ranked recommendations, each with its evidence and first action.
fn render_plan(out: &mut String, sections: &Sections) {
    let p = &sections.run.plan;
    let window_ns = sections.run.analysis.summary.window_ns;
    if p.ladder.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "Optimization ladder: {} (next: {})",
        sections.ladder.join(", "),
        sections.next_level
    );
    if p.recommendations.is_empty() {
        let _ = writeln!(out, "Recommendations: none\n");
        return;
    }
    let _ = writeln!(out, "Recommendations ({})", crate::recommend::ORDER_RULE);
    for r in &p.recommendations {
        let _ = writeln!(
            out,
            "{:>3}. [{}] {}  ({})",
            r.rank,
            level_tag(r),
            r.title,
            crate::report::sections::savings_phrase(r, window_ns),
        );
        if let Some(e) = r.evidence.first() {
            let _ = writeln!(out, "       because: {e}");
        }
        if let Some(act) = r.actions.first() {
            let _ = writeln!(out, "       {}: {}", act.kind, act.text);
        }
        for c in &r.caveats {
            let _ = writeln!(out, "       caveat: {c}");
        }
    }
    out.push('\n');
    // `--what-if`: the replayed step after the plan it prices.
    let what_if = crate::report::sections::what_if_lines(sections.run);
    if !what_if.is_empty() {
        out.push_str(&what_if.join("\n"));
        out.push_str("\n\n");
    }
}

/// Where the window's wall time goes (FEED.md "Time partition").
fn render_partition(out: &mut String, a: &Analysis, opts: &TableOptions) {
    if a.summary.window_ns <= 0 {
        return;
    }
    let mut t = new_table(opts);
    t.set_header(["category", "time", "% of window"].map(|h| header_cell(h, opts)));
    for r in &a.time_partition {
        if r.ns > 0 || r.category.is_host_caused() {
            let mut name = Cell::new(r.category.as_str());
            if opts.color {
                name = name.fg(bucket_color(r.category.as_str()));
            }
            t.add_row(vec![name, num(fmt_ns(r.ns)), num(format!("{:.1}", r.pct))]);
        }
    }
    let _ = writeln!(
        out,
        "Time partition of the window (busy time by bucket, idle time by cause)\n{t}\n"
    );
}

/// One row per analyzed step (first and last few when there are many).
fn render_steps(out: &mut String, a: &Analysis, opts: &TableOptions) {
    let rows = &a.step_breakdown;
    if rows.is_empty() {
        return;
    }
    let multi_rank = a.inputs.len() > 1;
    // Graph gaps get a column only where graphs replay.
    let graph_gaps = rows.iter().any(|r| {
        r.time_partition
            .iter()
            .any(|p| p.category == Category::GraphGaps && p.ns > 0)
    });
    // Data loading too, only where the host loads batches in the step.
    let loading = rows.iter().any(|r| {
        r.time_partition
            .iter()
            .any(|p| p.category == Category::DataLoading && p.ns > 0)
    });
    let mut t = new_table(opts);
    let mut header = vec![
        "step",
        "time",
        "GPU busy %",
        "launch overhead %",
        "host idle %",
        "largest bucket",
    ];
    if graph_gaps {
        header.insert(5, "graph gaps %");
    }
    if loading {
        header.insert(4, "data loading %");
    }
    if multi_rank {
        header.insert(0, "rank");
    }
    t.set_header(header.into_iter().map(|h| header_cell(h, opts)));
    const SHOW: usize = 12;
    let shown: Vec<usize> = if rows.len() <= SHOW {
        (0..rows.len()).collect()
    } else {
        (0..6).chain(rows.len() - 6..rows.len()).collect()
    };
    for (k, &i) in shown.iter().enumerate() {
        if k > 0 && i != shown[k - 1] + 1 {
            let mut gap = vec![Cell::new(format!("… {} more", i - shown[k - 1] - 1))];
            gap.extend((1..t.column_count()).map(|_| Cell::new("")));
            t.add_row(gap);
        }
        let r = &rows[i];
        let get = |c: Category| {
            r.time_partition
                .iter()
                .find(|p| p.category == c)
                .map_or(0.0, |p| p.pct)
        };
        let busy: f64 = r.time_partition.iter().take(7).map(|p| p.pct).sum();
        let largest = r
            .time_partition
            .iter()
            .take(7)
            .filter(|p| p.ns > 0)
            .max_by_key(|p| p.ns)
            .map_or("-", |p| p.category.as_str());
        // Iterations say their phase, and why one is left out of its phase's statistics.
        let label = match (r.phase, r.excluded) {
            (Some(p), Some(why)) => format!("#{} {p} ({})", r.step, why.as_str()),
            (Some(p), None) => format!("#{} {p}", r.step),
            _ => format!("#{}", r.step),
        };
        let mut row = vec![
            Cell::new(label),
            num(fmt_ns(r.dur_ns)),
            num(format!("{busy:.1}")),
            num(format!("{:.1}", get(Category::LaunchOverhead))),
            num(format!("{:.1}", get(Category::HostIdle))),
            Cell::new(largest),
        ];
        if graph_gaps {
            row.insert(5, num(format!("{:.1}", get(Category::GraphGaps))));
        }
        if loading {
            row.insert(4, num(format!("{:.1}", get(Category::DataLoading))));
        }
        if multi_rank {
            row.insert(
                0,
                Cell::new(r.rank.map_or("-".to_string(), |x| x.to_string())),
            );
        }
        t.add_row(row);
    }
    let warm = if a.warmup_in_window {
        " (the first is a warm-up, left out of the mean)"
    } else {
        ""
    };
    let title = if rows.iter().any(|r| r.phase.is_some()) {
        "Iterations (the time of each: its window less the time its stream sat queued)"
    } else {
        "Steps"
    };
    let _ = writeln!(out, "{title}{warm}\n{t}\n");
}

fn render_compile(out: &mut String, a: &Analysis) {
    let c = &a.compile;
    if !c.compiled && !c.cudagraphs {
        return;
    }
    let _ = writeln!(
        out,
        "torch.compile: {} compiled regions per step (frames {:?}), {} graph breaks per step, {} recompiles{}, {} compiling in the window, CUDA/HIP graphs {}\n",
        c.regions_per_step,
        c.graph_breaks.frames,
        c.graph_breaks.per_step,
        c.recompiles.count,
        if c.recompiles.compile_ids.is_empty() { String::new() } else { format!(" ({})", c.recompiles.compile_ids.join(", ")) },
        fmt_ns(c.compile_in_window_ns),
        if c.cudagraphs { "in use" } else { "not used" }
    );
}

fn render_findings(out: &mut String, run: &Run, opts: &TableOptions) {
    if run.findings.is_empty() {
        let _ = writeln!(out, "Findings: none\n");
        return;
    }
    let mut t = new_table(opts);
    t.set_header(
        ["severity", "finding", "at stake", "what the trace shows"].map(|h| header_cell(h, opts)),
    );
    for f in &run.findings {
        let mut sev = Cell::new(f.severity.as_str());
        if opts.color {
            sev = sev.fg(match f.severity {
                crate::detect::Severity::High => Color::Red,
                crate::detect::Severity::Medium => Color::Yellow,
                crate::detect::Severity::Low => Color::Blue,
                crate::detect::Severity::Info => Color::Grey,
            });
        }
        let stake = if f.time_at_stake_ns > 0 {
            fmt_ns(f.time_at_stake_ns)
        } else {
            "-".to_string()
        };
        t.add_row(vec![
            sev,
            Cell::new(f.id),
            num(stake),
            Cell::new(&f.summary),
        ]);
    }
    let _ = writeln!(out, "Findings\n{t}\n");
}

fn bucket_color(b: &str) -> Color {
    match b {
        "gemm" => Color::Cyan,
        "attention" => Color::Magenta,
        "conv" => Color::Blue,
        "elementwise" => Color::Yellow,
        "communication" => Color::Green,
        "memory" => Color::DarkYellow,
        "launch_overhead" => Color::Red,
        "data_loading" => Color::DarkYellow,
        "host_idle" => Color::DarkRed,
        "graph_gaps" => Color::DarkMagenta,
        _ => Color::Grey,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_durations_and_names() {
        assert_eq!(fmt_ns(999), "999 ns");
        assert_eq!(fmt_ns(1_234_567), "1.235 ms");
        assert_eq!(fmt_ns(2_500_000_000), "2.500 s");
        assert_eq!(
            display_name("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"),
            "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, Array<char*, 3> >"
        );
        assert_eq!(
            display_name("_Z21ncclDevKernel_GenericP11ncclDevComm12channelMasksP8ncclWork"),
            "ncclDevKernel_Generic"
        );
        assert_eq!(
            display_name("Memcpy DtoH (Device -> Pinned)"),
            "Memcpy DtoH (Device -> Pinned)"
        );
    }
}
