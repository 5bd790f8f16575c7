//! Inline SVG charts for the HTML report, drawn with plotters' SVG backend (no fonts needed: the
//! browser renders the text).

use plotters::prelude::*;

/// One horizontal bar.
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub color: RGBColor,
}

/// A horizontal bar chart of labelled values; `unit` is appended to the value labels.
pub fn bars(title: &str, rows: &[Bar], unit: &str, width: u32) -> String {
    let mut svg = String::new();
    let height = 40 + 26 * rows.len().max(1) as u32;
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let max = rows
            .iter()
            .map(|r| r.value)
            .fold(0.0f64, f64::max)
            .max(1e-9);
        let label_w = 260i32;
        let bar_w = width as i32 - label_w - 110;
        let _ = root.draw(&Text::new(
            title.to_string(),
            (8, 8),
            ("sans-serif", 15).into_font().color(&BLACK),
        ));
        for (i, r) in rows.iter().enumerate() {
            let y = 34 + 26 * i as i32;
            let w = ((r.value / max) * bar_w as f64).round() as i32;
            let _ = root.draw(&Text::new(
                r.label.clone(),
                (8, y + 4),
                ("sans-serif", 12).into_font().color(&BLACK),
            ));
            let _ = root.draw(&Rectangle::new(
                [(label_w, y), (label_w + w.max(1), y + 18)],
                r.color.filled(),
            ));
            let _ = root.draw(&Text::new(
                format!("{:.2}{unit}", r.value),
                (label_w + w.max(1) + 6, y + 4),
                ("sans-serif", 12).into_font().color(&BLACK),
            ));
        }
        let _ = root.present();
    }
    svg
}

/// One row of a before/after chart: the base's value (grey) over the new one's (`color`).
pub struct PairedBar {
    pub label: String,
    pub base: f64,
    pub new: f64,
    pub color: RGBColor,
}

/// Horizontal bar pairs, base above new, on one scale; `unit` follows the value labels.
pub fn paired_bars(title: &str, rows: &[PairedBar], unit: &str, width: u32) -> String {
    let mut svg = String::new();
    let row_h = 34i32;
    let height = 40 + row_h as u32 * rows.len().max(1) as u32;
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let max = rows
            .iter()
            .map(|r| r.base.max(r.new))
            .fold(0.0f64, f64::max)
            .max(1e-9);
        let label_w = 360i32;
        let bar_w = width as i32 - label_w - 110;
        let _ = root.draw(&Text::new(
            title.to_string(),
            (8, 8),
            ("sans-serif", 15).into_font().color(&BLACK),
        ));
        for (i, r) in rows.iter().enumerate() {
            let y = 34 + row_h * i as i32;
            let _ = root.draw(&Text::new(
                r.label.clone(),
                (8, y + 9),
                ("sans-serif", 12).into_font().color(&BLACK),
            ));
            for (k, (v, color)) in [(r.base, RGBColor(170, 170, 170)), (r.new, r.color)]
                .into_iter()
                .enumerate()
            {
                let top = y + 14 * k as i32;
                let w = ((v / max) * bar_w as f64).round() as i32;
                let _ = root.draw(&Rectangle::new(
                    [(label_w, top), (label_w + w.max(1), top + 12)],
                    color.filled(),
                ));
                let _ = root.draw(&Text::new(
                    format!("{v:.1}{unit}"),
                    (label_w + w.max(1) + 6, top + 1),
                    ("sans-serif", 11).into_font().color(&BLACK),
                ));
            }
        }
        let _ = root.present();
    }
    svg
}

/// Colors of the buckets and partition categories (the same in every chart).
pub fn category_color(category: &str) -> RGBColor {
    match category {
        "gemm" => RGBColor(31, 119, 180),
        "attention" => RGBColor(148, 103, 189),
        "conv" => RGBColor(23, 190, 207),
        "elementwise" => RGBColor(255, 127, 14),
        "communication" => RGBColor(44, 160, 44),
        "memory" => RGBColor(188, 189, 34),
        "other" => RGBColor(127, 127, 127),
        "launch_overhead" => RGBColor(214, 39, 40),
        "data_loading" => RGBColor(255, 187, 120),
        "host_idle" => RGBColor(140, 86, 75),
        "graph_gaps" => RGBColor(227, 119, 194),
        _ => RGBColor(199, 199, 199),
    }
}

/// One stacked bar: a label and (category, value) segments.
pub struct Stack {
    pub label: String,
    pub segments: Vec<(String, f64)>,
}

/// Horizontal stacked bars, each scaled to the longest, with a legend of the categories used.
pub fn stacked(title: &str, rows: &[Stack], unit: &str, width: u32) -> String {
    let mut svg = String::new();
    let mut legend: Vec<String> = Vec::new();
    for r in rows {
        for (c, v) in &r.segments {
            if *v > 0.0 && !legend.contains(c) {
                legend.push(c.clone());
            }
        }
    }
    let height = 70 + 24 * rows.len().max(1) as u32;
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let max = rows
            .iter()
            .map(|r| r.segments.iter().map(|s| s.1).sum::<f64>())
            .fold(0.0f64, f64::max)
            .max(1e-9);
        let label_w = 90i32;
        let bar_w = width as i32 - label_w - 100;
        let font = |size| ("sans-serif", size).into_font().color(&BLACK);
        let _ = root.draw(&Text::new(title.to_string(), (8, 8), font(15)));
        let mut x = 8;
        for c in &legend {
            let _ = root.draw(&Rectangle::new(
                [(x, 32), (x + 12, 44)],
                category_color(c).filled(),
            ));
            let _ = root.draw(&Text::new(c.clone(), (x + 16, 32), font(11)));
            x += 22 + 7 * c.len() as i32;
        }
        for (i, r) in rows.iter().enumerate() {
            let y = 56 + 24 * i as i32;
            let _ = root.draw(&Text::new(r.label.clone(), (8, y + 3), font(12)));
            let mut x0 = label_w as f64;
            for (c, v) in &r.segments {
                let w = v / max * bar_w as f64;
                if w > 0.0 {
                    let _ = root.draw(&Rectangle::new(
                        [(x0.round() as i32, y), ((x0 + w).round() as i32, y + 16)],
                        category_color(c).filled(),
                    ));
                }
                x0 += w;
            }
            let total: f64 = r.segments.iter().map(|s| s.1).sum();
            let _ = root.draw(&Text::new(
                format!("{total:.2}{unit}"),
                (x0.round() as i32 + 6, y + 3),
                font(12),
            ));
        }
        let _ = root.present();
    }
    svg
}

/// The ladder as five boxes colored by status.
pub fn ladder(levels: &[(u8, String, &str)], width: u32) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 86)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let n = levels.len().max(1) as i32;
        let w = (width as i32 - 16) / n;
        for (i, (level, name, status)) in levels.iter().enumerate() {
            let x = 8 + w * i as i32;
            let color = match *status {
                "done" => RGBColor(152, 223, 138),
                "partial" => RGBColor(255, 221, 113),
                "todo" => RGBColor(255, 152, 150),
                _ => RGBColor(220, 220, 220),
            };
            let _ = root.draw(&Rectangle::new([(x, 8), (x + w - 6, 78)], color.filled()));
            let font = |size| ("sans-serif", size).into_font().color(&BLACK);
            let _ = root.draw(&Text::new(
                format!("L{level} {status}"),
                (x + 8, 16),
                font(14),
            ));
            let _ = root.draw(&Text::new(name.clone(), (x + 8, 40), font(11)));
        }
        let _ = root.present();
    }
    svg
}

/// A line: its label, color and points (x in ms, y in GiB).
pub type Series = (String, RGBColor, Vec<(f64, f64)>);

/// Lines over time: each series (label, color, points of (x in ms, y in GiB)) on shared axes,
/// with the device's memory as a red line when it is within the plotted range.
pub fn lines(title: &str, series: &[Series], limit: Option<f64>, width: u32) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 260)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let x_max = series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.0))
            .fold(0.0f64, f64::max)
            .max(1e-9);
        let y_max = series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.1))
            .fold(0.0f64, f64::max)
            .max(1e-9)
            * 1.1;
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .x_desc("ms")
            .y_desc("GiB")
            .label_style(("sans-serif", 11))
            .draw();
        for (label, color, points) in series {
            let color = *color;
            if let Ok(drawn) = chart.draw_series(LineSeries::new(points.iter().copied(), color)) {
                drawn
                    .label(label.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], color));
            }
        }
        if let Some(l) = limit.filter(|l| *l <= y_max) {
            let _ = chart.draw_series(LineSeries::new([(0.0, l), (x_max, l)], RED.stroke_width(1)));
        }
        let _ = chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 11))
            .draw();
        let _ = root.present();
    }
    svg
}

/// One piece of work on the roofline: its arithmetic intensity (FLOP/byte), achieved TFLOP/s,
/// GPU time (the dot's area) and color.
pub struct RoofPoint {
    pub label: String,
    pub intensity: f64,
    pub tflops: f64,
    pub ns: i64,
    pub color: RGBColor,
}

/// A log-log roofline: the device's roof `min(peak, intensity × bandwidth)` and each piece of
/// work as a dot whose area is its GPU time; the largest five are labelled.
pub fn roofline(
    title: &str,
    points: &[RoofPoint],
    (peak_tflops, hbm_gbps): (f64, f64),
    width: u32,
) -> String {
    let mut svg = String::new();
    if points.is_empty() || peak_tflops <= 0.0 || hbm_gbps <= 0.0 {
        return svg;
    }
    // TFLOP/s = FLOP/byte × GB/s / 1e3; the ridge where the two roofs meet.
    let ridge = peak_tflops * 1e3 / hbm_gbps;
    let x_lo = points
        .iter()
        .map(|p| p.intensity)
        .fold(ridge / 100.0, f64::min)
        .max(1e-3)
        / 2.0;
    let x_hi = points
        .iter()
        .map(|p| p.intensity)
        .fold(ridge * 10.0, f64::max)
        * 2.0;
    let y_hi = peak_tflops * 2.0;
    let y_lo = points
        .iter()
        .map(|p| p.tflops)
        .filter(|t| *t > 0.0)
        .fold(x_lo * hbm_gbps / 1e3, f64::min)
        .max(1e-6)
        / 2.0;
    {
        let root = SVGBackend::with_string(&mut svg, (width, 360)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(64)
            .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .x_desc("FLOP per byte")
            .y_desc("TFLOP/s")
            .label_style(("sans-serif", 11))
            .draw();
        let roof = |x: f64| (x * hbm_gbps / 1e3).min(peak_tflops);
        let xs = [x_lo, ridge, x_hi];
        let _ = chart.draw_series(LineSeries::new(
            xs.iter().map(|&x| (x, roof(x))),
            BLACK.stroke_width(2),
        ));
        let total: f64 = points
            .iter()
            .map(|p| p.ns.max(0) as f64)
            .sum::<f64>()
            .max(1.0);
        let radius = |ns: i64| (3.0 + 22.0 * (ns.max(0) as f64 / total).sqrt()).round() as i32;
        let _ = chart.draw_series(points.iter().map(|p| {
            Circle::new(
                (p.intensity, p.tflops.max(y_lo)),
                radius(p.ns),
                p.color.mix(0.6).filled(),
            )
        }));
        let mut largest: Vec<&RoofPoint> = points.iter().collect();
        largest.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.label.cmp(&b.label)));
        let _ = chart.draw_series(largest.iter().take(5).map(|p| {
            Text::new(
                p.label.clone(),
                (p.intensity, p.tflops.max(y_lo)),
                ("sans-serif", 10).into_font(),
            )
        }));
        let _ = root.present();
    }
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_render_text_without_fonts() {
        let svg = bars(
            "t",
            &[Bar {
                label: "gemm".into(),
                value: 2.0,
                color: RGBColor(10, 20, 30),
            }],
            " ms",
            600,
        );
        assert!(
            svg.starts_with("<svg") && svg.contains("gemm") && svg.contains("<rect"),
            "{svg}"
        );
    }
}
