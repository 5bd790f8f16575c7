//! The critical path's section of the HTML report: what bounds each step.

use super::esc;
use crate::pipeline::Run;
use std::fmt::Write as _;

/// One line on what bounds each step, and how the path is found.
pub(super) fn render_path(b: &mut String, run: &Run) {
    let Some(line) = crate::report::bound::path_line(run) else {
        return;
    };
    let _ = writeln!(
        b,
        "<h2>Critical path</h2><p>{}</p><p class=\"muted\">Each step's critical path, found backwards from its end along what each kernel and host moment waited for last; its time is labeled by cause (GPU compute by bucket, communication, launch, host work, data loading, sync).</p>",
        esc(&line)
    );
}
