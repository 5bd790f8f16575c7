//! A job's ranks together: its parallelism line, its pipeline's stage table and replays, its
//! collectives.

use super::esc;
use crate::pipeline::Run;
use std::fmt::Write;

/// The parallelism line, then the pipeline's stages and replays (pipeline jobs).
fn render(b: &mut String, run: &Run) {
    if let Some(line) = crate::report::sections::parallelism_line(run) {
        let _ = writeln!(b, "<p class=\"parallelism\">{}</p>", esc(&line));
    }
    if let Some((rows, note)) = crate::report::sections::pipeline_stages(run) {
        let head: String = crate::report::sections::STAGE_HEADER
            .iter()
            .map(|h| format!("<th>{}</th>", esc(h)))
            .collect();
        let _ = writeln!(
        b,
        "<h2>Pipeline stages</h2><p>{}</p><table class=\"sortable\"><thead><tr>{head}</tr></thead><tbody>",
        esc(&note)
    );
        for r in rows {
            let cells: String = r
                .iter()
                .map(|c| format!("<td class=\"n\">{}</td>", esc(c)))
                .collect();
            let _ = writeln!(b, "<tr>{cells}</tr>");
        }
        let _ = writeln!(b, "</tbody></table>");
        let replays = crate::report::sections::pipeline_replays(run);
        if !replays.is_empty() {
            let items: String = replays
                .iter()
                .map(|l| format!("<li>{}</li>", esc(l)))
                .collect();
            let _ = writeln!(b, "<p>Replayed:</p><ul>{items}</ul>");
        }
    }
}

/// Collectives per type, size and process group (all rows, sortable).
pub(super) fn render_collectives(b: &mut String, run: &Run) {
    render(b, run);
    let Some((rows, note)) = crate::report::sections::collectives(run, usize::MAX) else {
        return;
    };
    let head: String = crate::report::sections::COLLECTIVE_HEADER
        .iter()
        .map(|h| format!("<th>{}</th>", esc(h)))
        .collect();
    let _ = writeln!(
        b,
        "<h2>Collectives</h2><p>{}</p><table class=\"sortable\"><thead><tr>{head}</tr></thead><tbody>",
        esc(note)
    );
    for r in rows {
        let cells: String = r
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i == 0 {
                    format!("<td>{}</td>", esc(c))
                } else {
                    format!("<td class=\"n\">{}</td>", esc(c))
                }
            })
            .collect();
        let _ = writeln!(b, "<tr>{cells}</tr>");
    }
    let _ = writeln!(b, "</tbody></table>");
}
