//! The files of a rank directory: which are its ranks, and which rank each holds.

use crate::model::Trace;
use std::path::{Path, PathBuf};

/// The rank in a per-rank trace file's name (`rank0`, `rank_3`, `rank-12.Apr_03…pt.trace.json`,
/// any case), as launch scripts and `tensorboard_trace_handler` runs name them.
pub fn rank_in_file_name(path: &Path) -> Option<u32> {
    static RANK: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)(?:^|[^a-z])rank[_-]?(\d{1,6})(?:\D|$)").expect("valid regex")
    });
    let name = path.file_name()?.to_str()?;
    RANK.captures(name)?.get(1)?.as_str().parse().ok()
}

/// A rank directory holds one format: files of another (an AMD `kernel_names.csv` among
/// Kineto rank traces) are notes or leftovers, not more ranks. The format most files have
/// stays (on a tie, the first file's); the others are skipped with a notice naming them.
/// `kept`: this directory's files, the last `kept.len()` of `parts`.
pub(super) fn skip_other_formats(
    kept: &mut Vec<&PathBuf>,
    parts: &mut Vec<Trace>,
    skipped: &mut Vec<crate::model::SkippedFile>,
) {
    let first = parts.len() - kept.len();
    let format_of = |t: &Trace| t.inputs.first().map(|i| i.format);
    let mut counts: Vec<(crate::model::Format, usize)> = Vec::new();
    for t in &parts[first..] {
        if let Some(f) = format_of(t) {
            match counts.iter_mut().find(|c| c.0 == f) {
                Some(c) => c.1 += 1,
                None => counts.push((f, 1)),
            }
        }
    }
    if counts.len() < 2 {
        return;
    }
    // The most files; `max_by_key` keeps the last of equals, so walk them reversed.
    let main = counts
        .iter()
        .rev()
        .max_by_key(|c| c.1)
        .map(|c| c.0)
        .expect("two formats");
    let mut k = 0;
    let mut i = first;
    while i < parts.len() {
        let f = format_of(&parts[i]);
        if f.is_some_and(|f| f != main) {
            parts.remove(i);
            let file = kept.remove(k);
            skipped.push(crate::model::SkippedFile {
                path: file.display().to_string(),
                reason: format!(
                    "a {} file among the directory's {} traces: not one of its ranks (name it on \
                     its own to analyze it)",
                    f.map_or("other", |f| f.as_str()),
                    main.as_str()
                ),
            });
        } else {
            i += 1;
            k += 1;
        }
    }
}

/// Gives ranks to the files of several that carry none (no `distributedInfo`, no per-event
/// rank): the rank in the file name, or, for a directory none of whose files names a rank, the
/// file's place in it (sorted by name). Files given one by one get ranks only from their names:
/// two unrelated traces are not two ranks.
pub(super) fn assign_file_ranks(groups: &[Vec<&PathBuf>], parts: &mut [Trace]) {
    let mut next = 0;
    for group in groups {
        let files = &mut parts[next..next + group.len()];
        next += group.len();
        let unranked = |t: &Trace| t.inputs.len() == 1 && t.inputs[0].rank.is_none();
        let named: Vec<Option<u32>> = group.iter().map(|p| rank_in_file_name(p)).collect();
        let by_place =
            group.len() > 1 && named.iter().all(Option::is_none) && files.iter().all(unranked);
        for (i, trace) in files.iter_mut().enumerate() {
            if !unranked(trace) {
                continue;
            }
            trace.inputs[0].rank = match named[i] {
                Some(r) => Some(r),
                None if by_place => Some(i as u32),
                None => continue,
            };
        }
    }
}
