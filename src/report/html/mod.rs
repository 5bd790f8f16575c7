//! `--html PATH`: one self-contained HTML file (inline CSS, SVG charts and a few lines of
//! script for sorting tables; no network fetches), readable on a laptop and in print.

pub(crate) mod charts;
mod parallel;
mod path;

use crate::analysis::Analysis;
use crate::classify::devices::DevicePeaks;
use crate::pipeline::Run;
use crate::report::format::{display_name, fmt_ns, shorten_tail};
use crate::report::sections::Sections;
use charts::{category_color, Bar, Stack};
use std::fmt::Write as _;

/// HTML-escapes text (kernel names are full of `<`, `>` and `&`).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1180px;padding:16px 24px;color:#222}
h1{font-size:22px;margin:8px 0}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.regions summary,.regions .leaf,.region-head{display:grid;grid-template-columns:minmax(220px,3fr) 4em repeat(4,6em) 2fr 6em;gap:0 8px;padding:2px 0}
.regions summary{cursor:pointer}.regions summary .name::before{content:"\25B8  "}.regions details[open]>summary .name::before{content:"\25BE  "}.regions .leaf .name::before{content:"\00A0\00A0  "}.region-head{font-weight:600;border-bottom:1px solid #ddd}.regions span:not(:first-child){text-align:right}.regions span:nth-child(7){text-align:left}
.headline{font-size:16px;background:#f4f6f8;padding:10px 14px;border-radius:6px}
table{border-collapse:collapse;width:100%;margin:8px 0}th,td{border:1px solid #ddd;padding:4px 8px;vertical-align:top;text-align:left}
th{background:#f0f0f0;cursor:pointer;user-select:none}td.n{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
code,pre{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;border-radius:4px}pre{padding:6px;white-space:pre-wrap;margin:4px 0}
.sev-high{color:#b00020;font-weight:600}.sev-medium{color:#a15c00;font-weight:600}.sev-low{color:#1a5fb4}.sev-info{color:#666}
.chart svg{max-width:100%;height:auto}.muted{color:#666}input.filter{margin:4px 0;padding:3px 6px;width:260px}
.up{color:#b00020}.down{color:#0a7d2c}
@media print{th{cursor:auto}input.filter{display:none}body{max-width:none}}
"#;

const SCRIPT: &str = r#"
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
    var rows=Array.from(t.tBodies[0].rows),asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';
    rows.sort(function(a,b){var x=a.cells[i].dataset.v||a.cells[i].textContent,y=b.cells[i].dataset.v||b.cells[i].textContent;
      var nx=parseFloat(x),ny=parseFloat(y);var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return asc?c:-c;});
    rows.forEach(function(r){t.tBodies[0].appendChild(r);});});});});
document.querySelectorAll('input.filter').forEach(function(inp){var t=document.getElementById(inp.dataset.table);
  inp.addEventListener('input',function(){var q=inp.value.toLowerCase();Array.from(t.tBodies[0].rows).forEach(function(r){
    r.style.display=r.textContent.toLowerCase().indexOf(q)<0?'none':'';});});});
"#;

pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n<title>{}</title><style>{STYLE}</style></head>\n<body>\n{body}\n<p class=\"muted\">rocprof-classify {}</p>\n<script>{SCRIPT}</script>\n</body></html>\n",
        esc(title),
        env!("CARGO_PKG_VERSION")
    )
}

pub(crate) fn chart(svg: &str) -> String {
    format!("<div class=\"chart\">{svg}</div>\n")
}

pub(crate) fn num(ns: i64) -> String {
    format!("<td class=\"n\" data-v=\"{ns}\">{}</td>", fmt_ns(ns))
}

/// The single-trace report.
pub fn render(run: &Run) -> String {
    let a = &run.analysis;
    let sections = Sections::of(run);
    let mut b = String::new();
    render_header(&mut b, &sections);
    render_inputs(&mut b, &sections);

    // Where the GPU time goes.
    render_buckets(&mut b, &sections);

    // Partition, per step.
    render_partition(&mut b, &sections);
    render_memory(&mut b, run);
    path::render_path(&mut b, run);
    render_mfu(&mut b, run);
    render_regions(&mut b, run);
    render_compile(&mut b, a);

    // Ladder and recommendations.
    render_ladder(&mut b, run);
    render_recommendations(&mut b, run);

    // Findings.
    render_findings(&mut b, run);

    // Kernels.
    render_top_kernels(&mut b, a);
    render_attribution(&mut b, a, &run.devices);
    render_phases(&mut b, run);
    render_candidates(&mut b, run);
    parallel::render_collectives(&mut b, run);
    render_counters(&mut b, a);
    page(&format!("rocprof-classify: {}", sections.title), &b)
}

/// The heading and the one-line headline.
fn render_header(b: &mut String, sections: &Sections) {
    let _ = writeln!(b, "<h1>rocprof-classify: {}</h1>", esc(&sections.title));
    let _ = writeln!(
        b,
        "<p class=\"headline\">{}</p>",
        esc(&sections.headline().replace("**", ""))
    );
}

/// One row per input: format, vendor, rank, devices and warnings.
fn render_inputs(b: &mut String, sections: &Sections) {
    let _ = writeln!(b, "<table><thead><tr><th>input</th><th>format</th><th>vendor</th><th>rank</th><th>devices</th><th>notes</th></tr></thead><tbody>");
    for line in &sections.inputs {
        let i = line.meta;
        let notes = if i.truncated {
            format!("TRUNCATED. {}", i.warnings.join(" "))
        } else {
            i.warnings.join(" ")
        };
        let _ = writeln!(
            b,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&i.path),
            i.format.as_str(),
            i.vendor.as_str(),
            i.rank.map_or("-".into(), |r| r.to_string()),
            esc(&line.devices),
            esc(&notes)
        );
    }
    let _ = writeln!(b, "</tbody></table>");
}

/// GPU activity time by bucket, as a chart and a sortable table.
fn render_buckets(b: &mut String, sections: &Sections) {
    let a = &sections.run.analysis;
    let _ = writeln!(b, "<h2>GPU time by bucket</h2>");
    let bars: Vec<Bar> = a
        .buckets
        .iter()
        .filter(|x| x.kernel_ns > 0)
        .map(|x| Bar {
            label: x.bucket.as_str().into(),
            value: x.kernel_ns as f64 / 1e6,
            color: category_color(x.bucket.as_str()),
        })
        .collect();
    b.push_str(&chart(&charts::bars(
        "GPU activity time by bucket",
        &bars,
        " ms",
        900,
    )));
    let _ = writeln!(b, "<table class=\"sortable\"><thead><tr><th>bucket</th><th>time</th><th>%</th><th>launches</th><th>distinct kernels</th></tr></thead><tbody>");
    for x in &sections.buckets {
        let _ = writeln!(b, "<tr><td>{}</td>{}<td class=\"n\">{:.1}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>", x.bucket.as_str(), num(x.kernel_ns), x.pct, x.launches, x.distinct_kernels);
    }
    let _ = writeln!(b, "</tbody></table>");
}

/// The time partition (busy by bucket, idle by cause): a chart per step, a table for the window.
fn render_partition(b: &mut String, sections: &Sections) {
    let a = &sections.run.analysis;
    let _ = writeln!(b, "<h2>Where the wall time goes, step by step</h2>");
    let mut stacks: Vec<Stack> = a
        .step_breakdown
        .iter()
        .take(40)
        .map(|s| Stack {
            label: match s.rank {
                Some(r) if a.inputs.len() > 1 => format!("r{r} #{}", s.step),
                _ => format!("#{}", s.step),
            },
            segments: s
                .time_partition
                .iter()
                .map(|p| (p.category.to_string(), p.ns as f64 / 1e6))
                .collect(),
        })
        .collect();
    if stacks.is_empty() {
        stacks.push(Stack {
            label: "window".into(),
            segments: a
                .time_partition
                .iter()
                .map(|p| (p.category.to_string(), p.ns as f64 / 1e6))
                .collect(),
        });
    }
    b.push_str(&chart(&charts::stacked(
        "Time partition per step (busy by bucket, idle by cause)",
        &stacks,
        " ms",
        1000,
    )));
    let _ = writeln!(
        b,
        "<table><thead><tr><th>category</th><th>time</th><th>% of window</th></tr></thead><tbody>"
    );
    for r in &sections.partition {
        let _ = writeln!(
            b,
            "<tr><td>{}</td>{}<td class=\"n\">{:.1}</td></tr>",
            r.category,
            num(r.ns),
            r.pct
        );
    }
    let _ = writeln!(b, "</tbody></table>");
}

/// torch.compile and CUDA/HIP graph use, when either is present.
fn render_compile(b: &mut String, a: &Analysis) {
    let c = &a.compile;
    if c.compiled || c.cudagraphs {
        let _ = writeln!(
            b,
            "<p>torch.compile: {} compiled regions per step, frames {:?}, {} graph breaks per step, {} recompiles, {} compiling in the window; CUDA/HIP graphs {}.</p>",
            c.regions_per_step,
            c.graph_breaks.frames,
            c.graph_breaks.per_step,
            c.recompiles.count,
            fmt_ns(c.compile_in_window_ns),
            if c.cudagraphs { "in use" } else { "not used" }
        );
    }
}

/// The optimization ladder as a chart and a list with each level's evidence.
fn render_ladder(b: &mut String, run: &Run) {
    let _ = writeln!(b, "<h2>Optimization ladder</h2>");
    let levels: Vec<(u8, String, &str)> = run
        .plan
        .ladder
        .iter()
        .map(|l| (l.level, l.name.clone(), l.status.as_str()))
        .collect();
    b.push_str(&chart(&charts::ladder(&levels, 1000)));
    let _ = writeln!(b, "<ul>");
    for l in &run.plan.ladder {
        let _ = writeln!(
            b,
            "<li><b>L{} {}</b> ({}): {}</li>",
            l.level,
            esc(&l.name),
            l.status,
            esc(&l.evidence)
        );
    }
    let _ = writeln!(b, "</ul>");
}

/// The ranked recommendations with their evidence and actions.
fn render_recommendations(b: &mut String, run: &Run) {
    let _ = writeln!(b, "<h2>Recommendations</h2>");
    if run.plan.recommendations.is_empty() {
        let _ = writeln!(b, "<p>None.</p>");
    } else {
        let _ = writeln!(
            b,
            "<p class=\"muted\">Ranked {}.</p>",
            esc(crate::recommend::ORDER_RULE)
        );
        let _ = writeln!(b, "<table class=\"sortable\"><thead><tr><th>#</th><th>level</th><th>recommendation</th><th>est. savings</th><th>how sure</th><th>evidence and actions</th></tr></thead><tbody>");
        for r in &run.plan.recommendations {
            let blocked = r
                .blocked_by_level
                .map(|l| format!("<br><span class=\"muted\">after level {l}</span>"))
                .unwrap_or_default();
            let mut detail = String::new();
            for e in &r.evidence {
                let _ = write!(detail, "<div>{}</div>", esc(e));
            }
            for act in &r.actions {
                let _ = write!(
                    detail,
                    "<div>{}:<pre>{}</pre></div>",
                    esc(&act.kind.to_string()),
                    esc(&act.text)
                );
            }
            for c in &r.caveats {
                let _ = write!(detail, "<div><b>caveat:</b> {}</div>", esc(c));
            }
            let _ = write!(detail, "<div class=\"muted\">{}</div>", esc(&r.seed));
            let sure = crate::report::sections::savings_phrase(r, run.analysis.summary.window_ns);
            let sure = sure.split_once("; ").map_or("", |x| x.1);
            let _ = writeln!(
                b,
                "<tr><td class=\"n\">{}</td><td>L{}{blocked}</td><td>{}</td><td class=\"n\" data-v=\"{}\">{} ({:.1}%)</td><td>{}</td><td>{detail}</td></tr>",
                r.rank,
                r.level,
                esc(&r.title),
                r.est_savings_ns,
                fmt_ns(r.est_savings_ns),
                r.est_savings_pct,
                esc(sure)
            );
        }
        let _ = writeln!(b, "</tbody></table>");
    }
}

/// The findings with severity, time at stake and evidence.
fn render_findings(b: &mut String, run: &Run) {
    let _ = writeln!(b, "<h2>Findings</h2>");
    if run.findings.is_empty() {
        let _ = writeln!(b, "<p>None.</p>");
    } else {
        let _ = writeln!(b, "<table class=\"sortable\"><thead><tr><th>severity</th><th>finding</th><th>at stake</th><th>what the trace shows</th></tr></thead><tbody>");
        for f in &run.findings {
            let evidence = serde_json::to_string_pretty(&f.evidence).unwrap_or_default();
            let _ = writeln!(
                b,
                "<tr><td class=\"sev-{0}\" data-v=\"{1}\">{0}</td><td><code>{2}</code></td>{3}<td>{4}<details><summary>evidence</summary><pre>{5}</pre></details></td></tr>",
                f.severity.as_str(),
                f.severity as u8,
                f.id,
                num(f.time_at_stake_ns),
                esc(&f.summary),
                esc(&evidence)
            );
        }
        let _ = writeln!(b, "</tbody></table>");
    }
}

/// The top kernels by GPU time, as a chart and a filterable table.
fn render_top_kernels(b: &mut String, a: &Analysis) {
    let _ = writeln!(b, "<h2>Top kernels</h2>");
    let bars: Vec<Bar> = a
        .top_kernels
        .iter()
        .take(12)
        .map(|k| Bar {
            label: shorten_tail(&display_name(&k.name), 40),
            value: k.total_ns as f64 / 1e6,
            color: category_color(k.bucket.as_str()),
        })
        .collect();
    b.push_str(&chart(&charts::bars(
        "Top kernels by GPU time",
        &bars,
        " ms",
        1000,
    )));
    let _ = writeln!(b, "<input class=\"filter\" data-table=\"kernels\" placeholder=\"filter kernels\"><table id=\"kernels\" class=\"sortable\"><thead><tr><th>kernel</th><th>bucket</th><th>family</th><th>library</th><th>rule</th><th>launches</th><th>time</th><th>%</th></tr></thead><tbody>");
    for k in &a.top_kernels {
        let _ = writeln!(
            b,
            "<tr><td><code title=\"{0}\">{1}</code></td><td>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td><td class=\"n\">{6}</td>{7}<td class=\"n\">{8:.1}</td></tr>",
            esc(&k.name),
            esc(&shorten_tail(&display_name(&k.name), 90)),
            k.bucket.as_str(),
            esc(&k.family),
            esc(&k.library),
            esc(k.rule_id.as_deref().unwrap_or("-")),
            k.launches,
            num(k.total_ns),
            k.pct
        );
    }
    let _ = writeln!(b, "</tbody></table>");
}

/// Ops, modules and source lines by GPU time, and the GEMM ops' efficiency as a chart.
fn render_attribution(b: &mut String, a: &Analysis, devices: &[DevicePeaks]) {
    if !a
        .ops
        .iter()
        .any(|o| o.name != crate::analysis::ops::attribution::NO_OP)
    {
        return;
    }
    let _ = writeln!(b, "<h2>Ops, modules and source lines</h2>");
    let bars: Vec<Bar> = a
        .ops
        .iter()
        .filter(|o| o.pct_of_peak.is_some())
        .take(12)
        .map(|o| Bar {
            label: format!("{} {}", o.name, o.shapes.as_deref().map_or("", |s| s)),
            value: o.pct_of_peak.unwrap_or(0.0),
            color: category_color(o.bucket.as_str()),
        })
        .collect();
    if !bars.is_empty() {
        b.push_str(&chart(&charts::bars(
            "GEMM efficiency: achieved FLOP/s as % of the device's dense peak",
            &bars,
            " %",
            1000,
        )));
    }
    render_roofline(b, a, devices);
    let opt = crate::report::format::opt_num;
    let _ = writeln!(b, "<input class=\"filter\" data-table=\"ops\" placeholder=\"filter ops\"><table id=\"ops\" class=\"sortable\"><thead><tr><th>op</th><th>self</th><th>total</th><th>launches</th><th>bucket</th><th>shapes</th><th>TFLOP/s</th><th>% of peak</th><th>GB/s</th><th>% of HBM peak</th></tr></thead><tbody>");
    for o in &a.ops {
        let _ = writeln!(
            b,
            "<tr><td><code>{}</code></td>{}{}<td class=\"n\">{}</td><td>{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&o.name),
            num(o.self_ns),
            num(o.total_ns),
            o.launches,
            o.bucket.as_str(),
            esc(o.shapes.as_deref().unwrap_or("-")),
            opt(o.tflops, 1),
            opt(o.pct_of_peak, 1),
            opt(o.gbps, 0),
            opt(o.pct_of_hbm_peak, 1)
        );
    }
    let _ = writeln!(b, "</tbody></table>");
    if let Some(note) = crate::report::sections::triton_rate_note(a) {
        let _ = writeln!(b, "<p class=\"muted\">{}</p>", esc(&note));
    }
    if !a.op_shapes.is_empty() {
        let _ = writeln!(b, "<h3>GEMM, attention and convolution shapes</h3><table class=\"sortable\"><thead><tr><th>op</th><th>shapes</th><th>calls</th><th>time</th><th>TFLOP/s</th><th>% of peak</th><th>GB/s</th></tr></thead><tbody>");
        for r in &a.op_shapes {
            let _ = writeln!(
                b,
                "<tr><td><code>{}</code></td><td><code>{}</code></td><td class=\"n\">{}</td>{}<td class=\"n\">{:.1}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                esc(&r.op),
                esc(&r.shapes),
                r.calls,
                num(r.ns),
                r.tflops,
                opt(r.pct_of_peak, 1),
                opt(r.gbps, 0)
            );
        }
        let _ = writeln!(b, "</tbody></table>");
    }
    for (rows, what) in [(&a.modules, "Modules"), (&a.sources, "Source lines")] {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(b, "<h3>{what}</h3><table class=\"sortable\"><thead><tr><th></th><th>self</th><th>total</th></tr></thead><tbody>");
        for r in rows {
            let label = r.name.as_deref().or(r.location.as_deref()).unwrap_or("-");
            let _ = writeln!(
                b,
                "<tr><td><code>{}</code></td>{}{}</tr>",
                esc(label),
                num(r.self_ns),
                num(r.total_ns)
            );
        }
        let _ = writeln!(b, "</tbody></table>");
    }
}

/// Model FLOP utilization: the job's line, and each rank's when there are several.
fn render_mfu(b: &mut String, run: &Run) {
    let Some(line) = crate::report::sections::mfu_line(run) else {
        return;
    };
    let _ = writeln!(
        b,
        "<h2>Model FLOP utilization</h2><p>{}</p><p class=\"muted\">GEMM, attention and convolution FLOPs (forward and backward, from the recorded shapes, counted as torch's FlopCounterMode counts them; recomputed forward calls left out) over the step time times the devices' dense peak for the type most of them compute in.</p>",
        esc(&line)
    );
    let ranks: Vec<String> = run
        .ranks
        .iter()
        .filter_map(|r| {
            let m = &r.summary.mfu;
            Some(format!(
                "<li>rank {}: MFU {:.1}%, HFU {:.1}%</li>",
                r.rank, m.mfu_pct?, m.hfu_pct?
            ))
        })
        .collect();
    if !ranks.is_empty() {
        let _ = writeln!(b, "<ul>{}</ul>", ranks.concat());
    }
}

/// Regions as a collapsible tree: each a `<details>` whose summary holds its numbers (per
/// occurrence), children inside; the top level open.
fn render_regions(b: &mut String, run: &Run) {
    use crate::report::sections::{region_cells, REGION_HEADER};
    let regions = &run.analysis.regions;
    if regions.is_empty() {
        return;
    }
    let _ = writeln!(
        b,
        "<h2>Regions</h2><p class=\"muted\">Annotated ranges and PyTorch's phases, merged by path over steps and ranks; times per occurrence. GPU time: the durations of what the range launched (any thread); span: its first activity's start to its last one's end; elapsed: what CUDA/HIP events around the range measure.</p>"
    );
    let _ = writeln!(
        b,
        "<div class=\"regions\"><div class=\"region-head\">{}</div>",
        REGION_HEADER
            .iter()
            .map(|h| format!("<span>{}</span>", esc(h)))
            .collect::<String>()
    );
    let mut open = 0u32;
    for (k, r) in regions.iter().enumerate() {
        while open > r.depth {
            let _ = writeln!(b, "</details>");
            open -= 1;
        }
        let has_children = regions.get(k + 1).is_some_and(|n| n.depth > r.depth);
        // The name indented by depth (the other columns stay aligned), the rest as they are.
        let cells = region_cells(r)
            .iter()
            .enumerate()
            .map(|(i, c)| match i {
                0 => format!(
                    "<span class=\"name\" style=\"padding-left:{}em\">{}</span>",
                    r.depth,
                    esc(c)
                ),
                _ => format!("<span>{}</span>", esc(c)),
            })
            .collect::<String>();
        if has_children {
            let _ = writeln!(
                b,
                "<details{}><summary>{cells}</summary>",
                if r.depth == 0 { " open" } else { "" }
            );
            open += 1;
        } else {
            let _ = writeln!(b, "<div class=\"leaf\">{cells}</div>");
        }
    }
    while open > 0 {
        let _ = writeln!(b, "</details>");
        open -= 1;
    }
    let _ = writeln!(b, "</div>");
}

/// GPU memory: the peaks per device and a timeline chart of the first eight devices.
fn render_memory(b: &mut String, run: &Run) {
    let lines = crate::report::sections::memory_lines(run);
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(b, "<h2>GPU memory</h2><ul>");
    for l in &lines {
        let _ = writeln!(b, "<li>{}</li>", esc(l));
    }
    let _ = writeln!(b, "</ul>");
    let gib = |v: i64| v as f64 / f64::from(1u32 << 30);
    for m in run.analysis.memory.iter().take(8) {
        let points = |k: usize| -> Vec<(f64, f64)> {
            m.timeline
                .iter()
                .map(|p| (p[0] as f64 / 1e6, gib(p[k])))
                .collect()
        };
        let series = [
            (
                "allocated".to_string(),
                charts::category_color("gemm"),
                points(1),
            ),
            (
                "reserved".to_string(),
                charts::category_color("communication"),
                points(2),
            ),
        ];
        let title = match m.rank {
            Some(r) => format!("rank {r} gpu {}: allocated and reserved", m.device),
            None => format!("gpu {}: allocated and reserved", m.device),
        };
        let limit = m.device_bytes.map(|d| gib(d as i64));
        let _ = writeln!(b, "{}", chart(&charts::lines(&title, &series, limit, 900)));
    }
}

/// Where memory-bound work without a FLOP count sits on the roofline: one FLOP per bf16
/// element read and written (their height is then their share of the HBM peak).
pub const MEMORY_BOUND_INTENSITY: f64 = 0.25;

/// The roofline of the GEMM/attention/conv shapes (their FLOPs and bytes) and the memory-bound
/// shapes (their bandwidth), when the device's peaks are known.
fn render_roofline(b: &mut String, a: &Analysis, devices: &[DevicePeaks]) {
    // The dense peak of the dominant type (MFU's), else of the largest GEMM shape, else bf16.
    let peak_tflops = a
        .summary
        .mfu
        .peak_flops
        .map(|p| p / a.device_count().max(1) as f64 / 1e12)
        .or_else(|| {
            a.op_shapes
                .iter()
                .find_map(|r| Some(r.tflops * 100.0 / r.pct_of_peak.filter(|p| *p > 0.0)?))
        })
        .or_else(|| {
            a.inputs
                .iter()
                .flat_map(|i| &i.devices)
                .find_map(|d| crate::classify::devices::peaks_of(devices, d)?.bf16)
        });
    let hbm = a
        .memory_shapes
        .iter()
        .find_map(|m| m.peak_gbps)
        .or_else(|| {
            a.inputs
                .iter()
                .flat_map(|i| &i.devices)
                .find_map(|d| crate::classify::devices::peaks_of(devices, d)?.hbm_gbps)
        });
    let (Some(peak), Some(hbm)) = (peak_tflops, hbm) else {
        return;
    };
    let mut points: Vec<charts::RoofPoint> = a
        .op_shapes
        .iter()
        .filter(|r| r.tflops > 0.0)
        .filter_map(|r| {
            let gbps = r.gbps.filter(|g| *g > 0.0)?;
            Some(charts::RoofPoint {
                label: format!(
                    "{} {}",
                    r.op.trim_start_matches("aten::"),
                    shorten_tail(&r.shapes, 24)
                ),
                intensity: r.tflops * 1e3 / gbps,
                tflops: r.tflops,
                ns: r.ns,
                color: category_color(if crate::analysis::ops::efficiency::is_composite(&r.op) {
                    "attention"
                } else {
                    "gemm"
                }),
            })
        })
        .collect();
    points.extend(
        a.memory_shapes
            .iter()
            .filter(|m| m.gbps > 0.0)
            .map(|m| charts::RoofPoint {
                label: format!(
                    "{} {}",
                    m.op.trim_start_matches("aten::"),
                    shorten_tail(&m.shapes, 24)
                ),
                intensity: MEMORY_BOUND_INTENSITY,
                tflops: m.gbps * MEMORY_BOUND_INTENSITY / 1e3,
                ns: m.ns,
                color: category_color("elementwise"),
            }),
    );
    if points.is_empty() {
        return;
    }
    b.push_str(&chart(&charts::roofline(
        &format!("Roofline: {peak:.0} TFLOP/s, {hbm:.0} GB/s (dot area: GPU time)"),
        &points,
        (peak, hbm),
        1000,
    )));
    let _ = writeln!(
        b,
        "<p class=\"muted\">GEMM, attention and convolution shapes at their FLOPs per byte (operands and result once); memory-bound shapes, whose FLOPs are not counted, at {MEMORY_BOUND_INTENSITY} FLOP/byte, so that their height below the bandwidth roof is their share of the HBM peak.</p>"
    );
}

/// The top five kernel candidates with their commands.
fn render_candidates(b: &mut String, run: &Run) {
    let Some(rows) = crate::report::sections::candidates(run, 5) else {
        return;
    };
    let head: String = crate::report::sections::CANDIDATE_HEADER
        .iter()
        .chain(["commands"].iter())
        .map(|h| format!("<th>{}</th>", esc(h)))
        .collect();
    let _ = writeln!(
        b,
        "<h2>Kernel candidates</h2><p>The kernels whose tuning could win back the most time, at 70% of the dense peak or 80% of HBM for memory-bound work (the feed lists up to 20).</p><table><thead><tr>{head}</tr></thead><tbody>"
    );
    for (cells, k) in rows {
        let tds: String = cells
            .iter()
            .enumerate()
            .map(|(i, c)| match i {
                1 | 2 => format!(
                    "<td><code title=\"{}\">{}</code></td>",
                    esc(c),
                    esc(&shorten_tail(c, 70))
                ),
                0 | 3 | 4 => format!("<td class=\"n\">{}</td>", esc(c)),
                _ => format!("<td>{}</td>", esc(c)),
            })
            .collect();
        let cmds: String = k
            .commands
            .iter()
            .map(|c| format!("<div><code>{}</code></div>", esc(&c.text)))
            .collect();
        let _ = writeln!(b, "<tr>{tds}<td>{cmds}</td></tr>");
    }
    let _ = writeln!(b, "</tbody></table>");
}

/// Iterations by phase (traces without ProfilerStep).
fn render_phases(b: &mut String, run: &Run) {
    let Some((rows, note)) = crate::report::sections::phases(run) else {
        return;
    };
    let head: String = crate::report::sections::PHASE_HEADER
        .iter()
        .map(|h| format!("<th>{}</th>", esc(h)))
        .collect();
    let _ = writeln!(
        b,
        "<h2>Iterations by phase</h2><p>{}</p><table><thead><tr>{head}</tr></thead><tbody>",
        esc(&note)
    );
    for r in rows {
        let cells: String = r
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if matches!(i, 1..=4 | 6) {
                    format!("<td class=\"n\">{}</td>", esc(c))
                } else {
                    format!("<td>{}</td>", esc(c))
                }
            })
            .collect();
        let _ = writeln!(b, "<tr>{cells}</tr>");
    }
    let _ = writeln!(b, "</tbody></table>");
}

fn render_counters(b: &mut String, a: &Analysis) {
    if a.kernel_counters.is_empty() {
        return;
    }
    let _ = writeln!(b, "<h2>Hardware counters</h2><table class=\"sortable\"><thead><tr><th>kernel</th><th>bound</th><th>pipe</th><th>TFLOP/s</th><th>% of peak</th><th>HBM GB/s</th><th>% of peak</th><th>FLOP/byte</th><th>roofline %</th><th>waves/SIMD</th></tr></thead><tbody>");
    let opt = crate::report::format::opt_num;
    for k in &a.kernel_counters {
        let occ = k.occupancy_label();
        let _ = writeln!(
            b,
            "<tr><td><code title=\"{}\">{}</code></td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            esc(&k.name),
            esc(&shorten_tail(&display_name(&k.name), 70)),
            k.bound.map_or("-", |x| x.as_str()),
            k.pipe.as_deref().unwrap_or("-"),
            opt(k.tflops, 2),
            opt(k.pct_of_peak, 1),
            opt(k.hbm_gbps, 0),
            opt(k.hbm_pct_of_peak, 1),
            opt(k.arithmetic_intensity, 1),
            opt(k.roofline_pct, 1),
            esc(&occ)
        );
    }
    let _ = writeln!(b, "</tbody></table>");
}
