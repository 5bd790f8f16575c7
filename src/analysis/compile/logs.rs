//! Joins torch.compile's logs to a trace: which graph breaks and recompiles of the log belong to
//! the profiled run, and what each one says (reason, user-code line, failed guards, the fix).
//!
//! Compile ids alone do not identify a function: they restart after `torch._dynamo.reset()`,
//! one log often covers a whole script, and a break is logged under the frame that broke
//! (`[0/0]`) while the trace runs the frame that resumed (`1/0`). So the log is cut into
//! sessions (a compile id seen again after others is a new session), records are kept only for
//! the trace's process id, and the session chosen is the latest one, before the trace ends on
//! the wall clock, that compiled a region the trace runs.

use crate::analysis::time::links::compiled_region;
use crate::model::compile_log::{
    CompileId, CompileLog, GraphBreak, LogEvent, LogRecord, Recompile,
};
use crate::model::{HostKind, Trace};
use std::collections::{BTreeMap, BTreeSet};

/// Log lines carry microseconds, the trace nanoseconds; the two clocks are the same machine's.
const LOG_CLOCK_SLACK_NS: i64 = 1_000_000;

/// What of the logs belongs to the trace, and how that was decided.
#[derive(Debug, Default)]
pub struct Joined<'l> {
    pub breaks: Vec<(&'l LogRecord, &'l GraphBreak)>,
    pub recompiles: Vec<(&'l LogRecord, &'l Recompile)>,
    /// Inductor's performance hints (fallback kernels), in log order.
    pub hints: Vec<&'l str>,
    /// Seconds spent compiling frames (TORCH_TRACE metrics), summed.
    pub compile_s: f64,
    /// How the records were matched (for the evidence).
    pub matched_by: String,
    pub log_paths: Vec<String>,
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The year of a wall-clock time (ns since the epoch).
fn year_of(ns: i64) -> i64 {
    let days = ns.div_euclid(86_400_000_000_000);
    // Inverse of days_from_civil, year only.
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(m <= 2)
}

/// A record's wall-clock time, the year taken from the trace when the log has none.
fn wall_ns(r: &LogRecord, trace_year: Option<i64>) -> Option<i64> {
    let t = r.time?;
    let year = t.year.map(i64::from).or(trace_year)?;
    let days = days_from_civil(year, t.month, t.day);
    Some(days * 86_400_000_000_000 + t.micros * 1000)
}

/// Cuts a log's records (of one process) into compile sessions: a compile id seen again after
/// others, or the same break logged again for the same compile id, starts a new one (Dynamo
/// compiles each id once per session; `torch._dynamo.reset()` starts over at 0/0).
fn sessions<'l>(records: &[&'l LogRecord]) -> Vec<Vec<&'l LogRecord>> {
    let mut out: Vec<Vec<&LogRecord>> = Vec::new();
    let mut seen: BTreeSet<CompileId> = BTreeSet::new();
    let mut last: Option<CompileId> = None;
    for &r in records {
        // Every record with an id counts, perf hints included: with TORCH_LOGS="graph_breaks,
        // recompiles,perf_hints" a clean compile after a reset logs nothing else. (A lazily
        // compiled backward logging under its forward's id after later ids also starts a
        // session: its forward's breaks are then not joined.)
        if let Some(id) = r.compile_id {
            let repeated_break = matches!(&r.event, LogEvent::GraphBreak(b)
            if out.last().is_some_and(|s: &Vec<&LogRecord>| s.iter().any(|x| {
                x.compile_id == Some(id) && matches!(&x.event, LogEvent::GraphBreak(y) if y == b)
            })));
            if seen.contains(&id) && (last != Some(id) || repeated_break) {
                out.push(Vec::new());
                seen.clear();
            }
            seen.insert(id);
            last = Some(id);
        }
        if out.is_empty() {
            out.push(Vec::new());
        }
        out.last_mut().expect("pushed").push(r);
    }
    out
}

/// The compiled regions (`Torch-Compiled Region: F/A`) a trace runs.
fn trace_regions(trace: &Trace) -> BTreeSet<CompileId> {
    let is_region = trace.names.per_name(compiled_region);
    let mut out = BTreeSet::new();
    for h in 0..trace.host.len() {
        if trace.host.kind[h] == HostKind::CpuOp {
            if let Some((frame, attempt)) = is_region[trace.host.name[h].index()] {
                out.insert(CompileId { frame, attempt });
            }
        }
    }
    out
}

/// The trace's wall-clock window, where it has one.
fn trace_window(trace: &Trace) -> Option<(i64, i64)> {
    let base = trace.inputs.iter().find_map(|i| i.base_time_ns)?;
    let acts = &trace.activities;
    let host = &trace.host;
    let starts = acts.ts_ns.iter().chain(host.ts_ns.iter()).copied();
    let t0 = starts.min()?;
    let t1 = (0..acts.len())
        .map(|a| acts.end_ns(a))
        .chain((0..host.len()).map(|h| host.ts_ns[h].saturating_add(host.dur_ns.get(h))))
        .max()?;
    Some((base.saturating_add(t0), base.saturating_add(t1)))
}

/// How far the log's clock is ahead of the trace's, in ns. glog and Python logging print local
/// time, Kineto's `baseTimeNanoseconds` is UTC: the offset is a time zone, a whole number of
/// quarter hours. UTC is taken when a session then lies within 10 minutes of the trace (its
/// compiles run in the warm-up just before); otherwise the quarter hour that brings a session
/// nearest the trace.
fn clock_offset(candidates: &[(i64, i64, Vec<&LogRecord>)], w0: i64, w1: i64) -> i64 {
    const QUARTER_HOUR: i64 = 15 * 60 * 1_000_000_000;
    let distance = |offset: i64| -> u64 {
        candidates
            .iter()
            .map(|(first, last, _)| {
                let (a, b) = (first.saturating_sub(offset), last.saturating_sub(offset));
                if b < w0 {
                    w0.abs_diff(b)
                } else if a > w1 {
                    a.abs_diff(w1)
                } else {
                    0
                }
            })
            .min()
            .unwrap_or(u64::MAX)
    };
    if distance(0) <= 10 * 60 * 1_000_000_000 {
        return 0;
    }
    (-56..=56)
        .map(|k| k * QUARTER_HOUR)
        .min_by_key(|&o| (distance(o), o.unsigned_abs()))
        .unwrap_or(0)
}

/// Picks the log records that belong to `trace` (all of them when there is no trace).
pub fn join<'l>(logs: &'l [CompileLog], trace: Option<&Trace>) -> Joined<'l> {
    let mut joined = Joined {
        log_paths: logs.iter().map(|l| l.path.clone()).collect(),
        ..Default::default()
    };
    let all: Vec<&LogRecord> = logs.iter().flat_map(|l| l.records.iter()).collect();
    let chosen: Vec<&LogRecord> = match trace {
        None => {
            joined.matched_by = "no trace: every record of the log".into();
            all
        }
        Some(trace) => {
            let pids: BTreeSet<u64> = trace.host.threads.iter().map(|t| t.0).collect();
            let regions = trace_regions(trace);
            let window = trace_window(trace);
            let year = window.map(|w| year_of(w.0));
            // Per process of the trace (records without a pid: the 2023 format, one process).
            let mut by_pid: BTreeMap<Option<u32>, Vec<&LogRecord>> = BTreeMap::new();
            for &r in &all {
                if r.pid.is_none_or(|p| pids.contains(&u64::from(p))) {
                    by_pid.entry(r.pid).or_default().push(r);
                }
            }
            // Sessions that compiled a region the trace runs, with their first and last time.
            let mut candidates: Vec<(i64, i64, Vec<&LogRecord>)> = Vec::new();
            for records in by_pid.values() {
                for s in sessions(records) {
                    if !s
                        .iter()
                        .any(|r| r.compile_id.is_some_and(|id| regions.contains(&id)))
                    {
                        continue;
                    }
                    let times = s.iter().filter_map(|r| wall_ns(r, year));
                    let first = times.clone().min().unwrap_or(0);
                    let last = times.max().unwrap_or(0);
                    candidates.push((first, last, s));
                }
            }
            let pids_text = pids
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let regions_text = regions
                .iter()
                .map(CompileId::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let Some((w0, w1)) = window else {
                joined.matched_by = match candidates.last() {
                    Some(_) => "the last compile session that compiled the regions the trace runs (the trace has no wall clock)".into(),
                    None => "nothing: no compile session of the log compiled a region the trace runs".into(),
                };
                return finish(
                    joined,
                    candidates.last().map(|c| c.2.clone()).unwrap_or_default(),
                );
            };
            let offset = clock_offset(&candidates, w0, w1);
            let until = w1.saturating_add(LOG_CLOCK_SLACK_NS);
            // The latest session that started before the trace ended (compilation runs before
            // and during the profiled steps), minus what it logged after the trace ended (a
            // later run's); else the session nearest the trace.
            let before = candidates
                .iter()
                .filter(|c| c.0.saturating_sub(offset) <= until)
                .max_by_key(|c| c.0);
            let clock = match offset {
                0 => String::new(),
                o => format!(
                    "; the log's clock read as UTC{}{:02}:{:02}",
                    if o > 0 { "+" } else { "-" },
                    o.unsigned_abs() / 3_600_000_000_000,
                    o.unsigned_abs() / 60_000_000_000 % 60
                ),
            };
            let chosen: Vec<&LogRecord> = match before {
                Some(c) => {
                    joined.matched_by = format!(
                        "process {pids_text} and the compile session, before the trace ended, that compiled the regions the trace runs ({regions_text}){clock}"
                    );
                    c.2.iter()
                        .copied()
                        .filter(|r| {
                            wall_ns(r, year).is_none_or(|t| t.saturating_sub(offset) <= until)
                        })
                        .collect()
                }
                None => match candidates
                    .iter()
                    .min_by_key(|c| c.0.saturating_sub(offset).abs_diff(w0))
                {
                    Some(c) => {
                        joined.matched_by = format!(
                            "process {pids_text}: no session that compiled the regions the trace runs ({regions_text}) started before it ended; took the nearest{clock}"
                        );
                        c.2.clone()
                    }
                    None => {
                        joined.matched_by = "nothing: no compile session of the log compiled a region the trace runs".into();
                        Vec::new()
                    }
                },
            };
            chosen
        }
    };
    finish(joined, chosen)
}

/// Sorts the chosen records into the join.
fn finish<'l>(mut joined: Joined<'l>, chosen: Vec<&'l LogRecord>) -> Joined<'l> {
    for r in chosen {
        match &r.event {
            LogEvent::GraphBreak(b) => joined.breaks.push((r, b)),
            LogEvent::Recompile(c) => joined.recompiles.push((r, c)),
            LogEvent::PerfHint { text } => joined.hints.push(text),
            LogEvent::CompileTime { seconds, .. } => joined.compile_s += seconds,
            LogEvent::FrameStart { .. } => {}
        }
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2026, 11, 25), 20_782);
        assert_eq!(year_of(1_790_857_026_000_000_000), 2026);
        assert_eq!(year_of(0), 1970);
    }
}
