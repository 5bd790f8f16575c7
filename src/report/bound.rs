//! The report's `bound` line: what bounds each step, from the critical path (the one without
//! the profiler's cost where there is one), in the text, Markdown and HTML reports alike.

use crate::model::units::fmt_ns;
use crate::pipeline::Run;

/// `each step is bound by data_loading (89.7% of its critical path), then host (5.8%);
/// on it most: enumerate(DataLoader)#…__next__ 606.02 ms`, from the path without the
/// profiler's cost where there is one (saying so, and what the profiled path says where its
/// first label differs); none without a path.
pub fn path_line(run: &Run) -> Option<String> {
    let measured = &run.analysis.critical_path;
    let p = measured.bounding();
    let unprofiled = !std::ptr::eq(p, measured);
    let (first, share) = p.bound_by()?;
    let name = |p: &crate::analysis::CriticalPath, l: crate::analysis::Label| {
        if l != crate::analysis::Label::GpuCompute {
            return l.to_string();
        }
        // gpu_compute names its largest bucket.
        let bucket = p
            .labels
            .iter()
            .filter(|r| r.label == l)
            .max_by_key(|r| r.ns)
            .and_then(|r| r.bucket);
        match bucket {
            Some(b) => format!("gpu_compute, mostly {}", b.as_str()),
            None => l.to_string(),
        }
    };
    let mut how = match (unprofiled, measured.bound_by()) {
        (false, _) => String::new(),
        (true, Some((l, s))) if l == first => {
            format!(" without the profiler's cost; {s:.1}% as profiled")
        }
        (true, Some((l, s))) => {
            format!(
                " without the profiler's cost; as profiled, {} {s:.1}%",
                name(measured, l)
            )
        }
        (true, None) => " without the profiler's cost".to_string(),
    };
    // Balanced: a host as much slower as its speed drifts would be the bound instead.
    if let Some(slow) = p.slower_host.as_ref() {
        if let Some((l, s)) = slow.bound_by().filter(|b| b.0 != first) {
            let slower = (slow.factor - 1.0) * 100.0;
            how.push_str(&format!(
                "; balanced: with the host {slower:.0}% slower, {} {s:.1}%",
                name(p, l)
            ));
        }
    }
    // A trace without steps is one span (its iterations', or its whole window's).
    let s = &run.analysis.summary;
    let what = match (s.steps, s.iterations) {
        (0, Some(_)) => "each iteration is",
        (0, None) => "the window is",
        _ => "each step is",
    };
    let mut line = format!(
        "{what} bound by {} ({share:.1}% of its critical path{how})",
        name(p, first)
    );
    let second = crate::analysis::Label::ALL
        .into_iter()
        .filter(|&l| l != first)
        .map(|l| (l, p.ns_of(l)))
        .filter(|&(_, ns)| ns > 0)
        .max_by_key(|&(l, ns)| (ns, std::cmp::Reverse(l)));
    if let Some((l, _)) = second {
        line.push_str(&format!(", then {} ({:.1}%)", name(p, l), p.pct_of(l)));
    }
    // The path's top item under its first label (the profiled path's where the unprofiled
    // one names no host work).
    let top = p
        .top
        .iter()
        .find(|t| t.label == first)
        .or_else(|| measured.top.iter().find(|t| t.label == first))
        .or(p.top.first());
    if let Some(top) = top {
        line.push_str(&format!("; on it most: {} {}", top.name, fmt_ns(top.ns)));
    }
    Some(line)
}
