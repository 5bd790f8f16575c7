//! rocprof CSV outputs (`reference/formats.md` §2–§4): rocprofv3 `kernel_trace.csv` (all three
//! header generations, `Agent_Id` as `2` or `"Agent 2"`, with or without `Stream_Id`),
//! `memory_copy_trace.csv` and the API traces (`hip_api_trace.csv`, …); rocprof v1 `results.csv`;
//! rocprofv2 / rocprof-compute `timestamps.csv`. Columns are found by name, so reordered or added
//! columns do not matter. A rocprofv3 output directory is read as one input, so API calls join
//! their dispatches by correlation id as in a Kineto trace.
//!
//! Rows are streamed with the `csv` crate: a CSV cut mid-row keeps every complete row.

pub(crate) mod rows;

use crate::error::IngestError;
use crate::ingest::{ReadOptions, Reader, Source};
use crate::model::{Activity, ActivityKind, Format, NameId, Trace};
use rows::{
    first_line, header_fields, kind_of_header, new_input, ns, read_headers, row_times, Columns,
    CsvKind, InputState, Row, RowIssues,
};
use std::io::Read;
use std::path::{Path, PathBuf};
/// One reader per CSV format (they share the code; `sniff` picks by header).
pub struct RocprofCsvReader(pub Format);

impl Reader for RocprofCsvReader {
    fn format(&self) -> Format {
        self.0
    }
    fn name(&self) -> &'static str {
        match self.0 {
            Format::RocprofV1 => "rocprof-v1 CSV",
            f => f.as_str(),
        }
    }
    fn looks_for(&self) -> &'static str {
        "a CSV header with Kernel_Name/KernelName and start/end times, or Domain,Function,… API columns"
    }
    fn sniff(&self, head: &[u8]) -> Option<bool> {
        Some(kind_of_header(&first_line(head)).is_some_and(|k| stats_format(k, head) == self.0))
    }
    fn read(&self, src: Source, trace: &mut Trace, opts: &ReadOptions) -> Result<(), IngestError> {
        let kind =
            kind_of_header(&first_line(&src.head)).ok_or_else(|| IngestError::Unrecognized {
                path: src.label.clone(),
                offset: 0,
                reason: "not a rocprof CSV header".into(),
            })?;
        let label = src.label.clone();
        let input = new_input(trace, &label, stats_format(kind, &src.head));
        let mut state = InputState::default();
        if kind == CsvKind::Stats {
            let name = src
                .path
                .as_ref()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().to_lowercase())
                .unwrap_or_default();
            read_stats(src.into_reader(), &label, &name, input, trace, &mut state)?;
        } else {
            read_csv(
                src.into_reader(),
                &label,
                kind,
                input,
                trace,
                &mut state,
                opts,
            )?;
        }
        state.finish(trace, input);
        Ok(())
    }
}

/// The format of a file of this kind: stats files are rocprof v1's unless they carry rocprofv3's
/// extra columns.
fn stats_format(kind: CsvKind, head: &[u8]) -> Format {
    if kind == CsvKind::Stats
        && header_fields(&first_line(head))
            .iter()
            .any(|h| h == "minns")
    {
        Format::RocprofV3Csv
    } else {
        kind.format()
    }
}

/// Most synthetic activities one statistics file expands to (one per call up to it): a few
/// hundred bytes claiming millions of calls must not take gigabytes.
const MAX_STATS_LAUNCHES: u64 = 1_000_000;

/// Aggregate statistics (`Name,Calls,TotalDurationNs,…`): each row becomes `Calls` activities of
/// the average duration (the remainder spread so the total is exact), laid end to end: buckets,
/// launches and top kernels are right, the timeline is synthetic. Old rocprof writes names with
/// commas unquoted, so the numbers are read from the end of the row. API statistics
/// (`hip_stats`) describe host calls and give no GPU activity.
fn read_stats(
    reader: impl Read,
    label: &str,
    file_name: &str,
    input: u32,
    trace: &mut Trace,
    state: &mut InputState,
) -> Result<(), IngestError> {
    let api = ["hip_stats", "api_stats", "domain_stats", "hsa_stats"]
        .iter()
        .any(|n| file_name.contains(n));
    let copies = file_name.contains("copy_stats");
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(true)
        .from_reader(reader);
    let width = rdr.headers().map(|h| h.len()).unwrap_or(5).max(3);
    // Numbers after the name: Calls, TotalDurationNs, AverageNs, Percentage (+ MinNs, MaxNs, StdDev).
    let numbers = width - 1;
    let mut clock = 0i64;
    let mut expanded = 0u64;
    let mut rows: Vec<(String, u64, i64)> = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| IngestError::Csv {
            path: label.into(),
            line: e.position().map_or(0, |p| p.line()),
            message: e.to_string(),
        })?;
        let line = rec.position().map_or(0, |p| p.line());
        if rec.len() < width {
            state.warnings.push(format!(
                "{label}: line {line} has fewer fields than the header; skipped"
            ));
            continue;
        }
        let fields: Vec<&str> = rec.iter().collect();
        let name_end = fields.len() - numbers;
        let name = fields[..name_end].join(",");
        let calls: u64 = fields[name_end]
            .trim()
            .parse()
            .map_err(|_| IngestError::Csv {
                path: label.into(),
                line,
                message: format!("column 'Calls': not a count: {:?}", fields[name_end]),
            })?;
        let total = ns(fields[name_end + 1]).ok_or_else(|| IngestError::Csv {
            path: label.into(),
            line,
            message: format!(
                "column 'TotalDurationNs': not a time: {:?}",
                fields[name_end + 1]
            ),
        })?;
        if api {
            continue;
        }
        expanded = expanded.saturating_add(calls);
        rows.push((name.trim().to_string(), calls, total));
    }
    // Each call becomes one synthetic activity, up to a budget per file (a few hundred bytes
    // may claim millions of calls): past it, each row gets its share of the budget, its time
    // spread over them exactly, and the launch counts are said to be scaled.
    let scale = if expanded > MAX_STATS_LAUNCHES {
        state.warnings.push(format!(
            "{label}: {expanded} calls are more than the {MAX_STATS_LAUNCHES} synthetic launches one statistics file expands to: times are exact, launch counts scaled down"
        ));
        MAX_STATS_LAUNCHES as f64 / expanded as f64
    } else {
        1.0
    };
    for (name, calls, total) in rows {
        let calls = if scale < 1.0 {
            ((calls as f64 * scale) as u64).max(u64::from(calls > 0))
        } else {
            calls
        };
        let kind = if copies || name.starts_with("Copy") {
            ActivityKind::Memcpy
        } else if name == "FillBuffer" {
            ActivityKind::Memset
        } else {
            ActivityKind::Kernel
        };
        let id = trace.names.intern(&name);
        let (each, extra) = if calls == 0 {
            (0, 0)
        } else {
            (total / calls as i64, total % calls as i64)
        };
        for k in 0..calls as i64 {
            let dur = each + i64::from(k < extra);
            trace.activities.push(Activity {
                kind,
                name: id,
                input,
                device: 0,
                stream: 0,
                ts_ns: clock,
                dur_ns: dur,
                correlation: 0,
                external_id: 0,
                workgroups: 0,
                comm: NameId::NONE,
            });
            clock = clock.saturating_add(dur);
        }
        state.devices.insert(0);
    }
    state.warnings.push(if api {
        format!("{label}: API call statistics: host calls only, no GPU activity")
    } else {
        format!("{label}: aggregate statistics: kernel totals and launches are exact, the timeline is synthetic")
    });
    Ok(())
}

pub(super) fn read_csv(
    reader: impl Read,
    label: &str,
    kind: CsvKind,
    input: u32,
    trace: &mut Trace,
    state: &mut InputState,
    opts: &ReadOptions,
) -> Result<(), IngestError> {
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(true)
        .from_reader(reader);
    let headers = read_headers(&mut rdr, label)?;
    let cols = Columns::find(&headers, kind, label, state)?;
    let width = headers.len();
    // The counter file repeats each dispatch once per counter.
    let mut dispatches_seen = std::collections::HashSet::new();
    let mut record = csv::StringRecord::new();
    let mut issues = RowIssues::default();
    loop {
        let more = match rdr.read_record(&mut record) {
            Ok(m) => m,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                return Err(IngestError::Csv {
                    path: label.into(),
                    line,
                    message: e.to_string(),
                });
            }
        };
        if !more {
            break;
        }
        let line = record.position().map_or(0, |p| p.line());
        if !issues.check_width(record.len(), width, line) {
            continue;
        }
        let get = |c: usize| record.get(c).unwrap_or("");
        if kind == CsvKind::V3Counters {
            if let Some(c) = cols.dispatch {
                if !dispatches_seen.insert(get(c).to_string()) {
                    continue;
                }
            }
        }
        // A row whose times do not read is skipped (and counted), unless `--strict`.
        let (start, end) = match row_times(&record, &cols, &headers, label, line) {
            Ok(t) => t,
            Err(e) if opts.strict => return Err(e),
            Err(e) => {
                issues.note_bad_times(&e, line);
                continue;
            }
        };
        if cols.start != usize::MAX && (get(cols.start).contains(['e', 'E'])) {
            issues.exponent_times = true;
        }
        let dur = end.saturating_sub(start).max(0);
        if dur == 0 && cols.start != usize::MAX {
            issues.zero_len += 1;
        }
        let row = Row {
            record: &record,
            cols: &cols,
            input,
            start,
            dur,
        };
        match kind {
            CsvKind::V3Api => row.push_api_call(trace),
            _ => row.push_activity(kind, trace, state),
        }
    }
    issues.report(label, kind, cols.start != usize::MAX, opts, state)
}

/// The CSV files of a rocprofv3 output directory that make one input, in the order to read.
pub fn rocprofv3_dir_files(dir: &Path) -> Option<Vec<(PathBuf, CsvKind)>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let named = |suffix: &str| {
        files
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(suffix))
            .cloned()
            .collect::<Vec<_>>()
    };
    let kernels = named("kernel_trace.csv");
    if kernels.is_empty() {
        return None;
    }
    let mut out: Vec<(PathBuf, CsvKind)> = kernels
        .into_iter()
        .map(|p| (p, CsvKind::V3Kernels))
        .collect();
    out.extend(
        named("memory_copy_trace.csv")
            .into_iter()
            .map(|p| (p, CsvKind::V3Copies)),
    );
    // One HIP API trace: the full one if present, else the runtime-only one (never both).
    let api = [
        named("hip_api_trace.csv"),
        named("hip_runtime_trace.csv"),
        named("hip_trace.csv"),
    ]
    .into_iter()
    .find(|v| !v.is_empty())
    .unwrap_or_default();
    out.extend(api.into_iter().map(|p| (p, CsvKind::V3Api)));
    out.extend(
        named("marker_api_trace.csv")
            .into_iter()
            .map(|p| (p, CsvKind::V3Api)),
    );
    Some(out)
}

/// Reads a rocprofv3 output directory as one input.
pub fn read_rocprofv3_dir(
    dir: &Path,
    files: &[(PathBuf, CsvKind)],
    trace: &mut Trace,
    opts: &ReadOptions,
) -> Result<(), IngestError> {
    let label = dir.display().to_string();
    let input = new_input(trace, &label, Format::RocprofV3Csv);
    let mut state = InputState::default();
    for (path, kind) in files {
        let src = crate::ingest::open(path)?;
        // Skip files whose header is not what the name promised (an empty or foreign file).
        if kind_of_header(&first_line(&src.head)) != Some(*kind) {
            state
                .warnings
                .push(format!("{}: not a {kind:?} CSV; skipped", path.display()));
            continue;
        }
        let file_label = path.display().to_string();
        read_csv(
            src.into_reader(),
            &file_label,
            *kind,
            input,
            trace,
            &mut state,
            opts,
        )?;
    }
    if !files.iter().any(|(_, k)| *k == CsvKind::V3Api) {
        state.warnings.push("no HIP API trace in the directory: idle time cannot be attributed (run rocprofv3 with --hip-trace)".into());
    }
    state.finish(trace, input);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::rows::agent_number;
    use super::*;

    #[test]
    fn headers_tell_the_kind() {
        assert_eq!(kind_of_header("\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\""), Some(CsvKind::V3Kernels));
        assert_eq!(kind_of_header("\u{feff}\"Kind\",\"Direction\",\"Source_Agent_Id\",\"Start_Timestamp\",\"End_Timestamp\"\r"), Some(CsvKind::V3Copies));
        assert_eq!(kind_of_header("\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\""), Some(CsvKind::V3Api));
        assert_eq!(
            kind_of_header("Index,KernelName,gpu-id,queue-id"),
            Some(CsvKind::V1Results)
        );
        assert_eq!(
            kind_of_header("Dispatch_ID,GPU_ID,Kernel_Name,Start_Timestamp,End_Timestamp"),
            Some(CsvKind::V2Timestamps)
        );
        assert_eq!(
            kind_of_header("\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\""),
            Some(CsvKind::Stats)
        );
        assert_eq!(kind_of_header("\"Name\",\"Value\""), None);
    }

    #[test]
    fn times_and_agents_parse() {
        assert_eq!(ns("1071423114883652"), Some(1_071_423_114_883_652));
        assert_eq!(ns("8.1097E+14"), Some(810_970_000_000_000));
        assert_eq!(ns("abc"), None);
        assert_eq!(agent_number("Agent 4"), Some(4));
        assert_eq!(agent_number("2"), Some(2));
    }
}
