//! rocprof CSV outputs (`reference/formats.md` §2–§4): rocprofv3 `kernel_trace.csv` (all three
//! header generations, `Agent_Id` as `2` or `"Agent 2"`, with or without `Stream_Id`),
//! `memory_copy_trace.csv` and the API traces (`hip_api_trace.csv`, …); rocprof v1 `results.csv`;
//! rocprofv2 / rocprof-compute `timestamps.csv`. Columns are found by name, so reordered or added
//! columns do not matter. A rocprofv3 output directory is read as one input, so API calls join
//! their dispatches by correlation id as in a Kineto trace.
//!
//! Rows are streamed with the `csv` crate: a CSV cut mid-row keeps every complete row.

use super::{ReadOptions, Reader, Source};
use crate::error::IngestError;
use crate::model::{
    Activity, ActivityKind, Device, Format, HostEvent, HostKind, InputMeta, NameId, Trace, Vendor,
};
use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

/// What a CSV holds, told by its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsvKind {
    /// rocprofv3 `kernel_trace.csv`.
    V3Kernels,
    /// rocprofv3 `memory_copy_trace.csv`.
    V3Copies,
    /// rocprofv3 API traces (`hip_api_trace.csv`, `hsa_api_trace.csv`, `marker_api_trace.csv`, …).
    V3Api,
    /// rocprof v1 `results.csv`.
    V1Results,
    /// rocprofv2 / rocprof-compute `timestamps.csv`.
    V2Timestamps,
    /// Aggregate statistics: rocprof v1 `results.stats.csv` (5 columns) or rocprofv3
    /// `kernel_stats.csv` (with Min/Max/StdDev).
    Stats,
    /// rocprofv3 `counter_collection.csv`: a row per counter per dispatch.
    V3Counters,
}

impl CsvKind {
    pub fn format(self) -> Format {
        match self {
            CsvKind::V3Kernels | CsvKind::V3Copies | CsvKind::V3Api | CsvKind::V3Counters => {
                Format::RocprofV3Csv
            }
            // The 5-column layout is rocprof v1's; rocprofv3 adds MinNs/MaxNs/StdDev.
            CsvKind::Stats => Format::RocprofV1,
            CsvKind::V1Results => Format::RocprofV1,
            CsvKind::V2Timestamps => Format::RocprofV2Csv,
        }
    }
}

/// Column names, normalized (no quotes or BOM, lower case).
fn header_fields(line: &str) -> Vec<String> {
    line.trim_start_matches('\u{feff}')
        .trim_end_matches(['\r', '\n'])
        .split(',')
        .map(|f| f.trim().trim_matches('"').to_ascii_lowercase())
        .collect()
}

/// The kind of a CSV from its header line.
pub fn kind_of_header(line: &str) -> Option<CsvKind> {
    let h = header_fields(line);
    let has = |c: &str| h.iter().any(|x| x == c);
    if has("kind") && has("kernel_name") && has("start_timestamp") {
        Some(CsvKind::V3Kernels)
    } else if has("kind") && has("direction") && has("start_timestamp") {
        Some(CsvKind::V3Copies)
    } else if has("domain") && has("function") && has("start_timestamp") {
        Some(CsvKind::V3Api)
    } else if has("kernelname") && (has("index") || has("gpu-id")) {
        Some(CsvKind::V1Results)
    } else if has("kernel_name")
        && has("dispatch_id")
        && has("start_timestamp")
        && !has("counter_name")
    {
        Some(CsvKind::V2Timestamps)
    } else if has("name") && has("calls") && has("totaldurationns") {
        Some(CsvKind::Stats)
    } else if has("kernel_name") && has("counter_name") && has("dispatch_id") {
        Some(CsvKind::V3Counters)
    } else {
        None
    }
}

fn first_line(head: &[u8]) -> String {
    let end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    String::from_utf8_lossy(&head[..end]).into_owned()
}

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

/// Adds an input entry.
pub(super) fn new_input(trace: &mut Trace, label: &str, format: Format) -> u32 {
    trace.inputs.push(InputMeta {
        path: label.to_string(),
        format,
        vendor: Vendor::Amd,
        devices: Vec::new(),
        rank: None,
        truncated: false,
        warnings: Vec::new(),
        hardware: None,
        base_time_ns: None,
        distributed: None,
    });
    (trace.inputs.len() - 1) as u32
}

/// What reading one input accumulates across its files.
#[derive(Default)]
pub(super) struct InputState {
    pub devices: BTreeSet<u32>,
    pub warnings: Vec<String>,
    pub truncated: bool,
    /// String ids (queue handles, "Agent 2") mapped to small numbers.
    ids: HashMap<String, u32>,
}

impl InputState {
    pub(super) fn finish(self, trace: &mut Trace, input: u32) {
        let meta = &mut trace.inputs[input as usize];
        meta.devices = self
            .devices
            .into_iter()
            .map(|id| Device::named(id, String::new()))
            .collect();
        // A warning about the input's own file need not name it again (a directory's do).
        let own = format!("{}: ", meta.path);
        meta.warnings = self
            .warnings
            .into_iter()
            .map(|w| w.strip_prefix(&own).map_or(w.clone(), str::to_string))
            .collect();
        meta.truncated = self.truncated;
    }

    /// A stream id as a small number: numeric ids as they are, string ids (queue handles) from
    /// 1,000,000 up in the order first seen.
    fn small_id(&mut self, s: &str) -> u32 {
        if let Ok(v) = s.trim().parse::<u32>() {
            return v;
        }
        let n = self.ids.len() as u32;
        *self.ids.entry(s.to_string()).or_insert(1_000_000 + n)
    }
}

/// Integer nanoseconds from `1071423114883652`, `1.071e15` (spreadsheet-mangled) or `12.0`.
pub fn ns(s: &str) -> Option<i64> {
    let s = s.trim().trim_matches('"');
    if let Ok(v) = s.parse::<i64>() {
        return Some(v);
    }
    let v: f64 = s.parse().ok()?;
    (v.is_finite() && v.abs() < 9.0e18).then(|| v.round() as i64)
}

/// `2`, `"Agent 2"`, `GPU 2` → 2.
pub(super) fn agent_number(s: &str) -> Option<u32> {
    super::num::trailing_u64(s.trim().trim_matches('"')).map(|v| v as u32)
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

/// The header's column names, normalized (no quotes or BOM, lower case).
fn read_headers<R: Read>(
    rdr: &mut csv::Reader<R>,
    label: &str,
) -> Result<Vec<String>, IngestError> {
    match rdr.headers() {
        Ok(h) => Ok(h
            .iter()
            .map(|f| {
                f.trim()
                    .trim_start_matches('\u{feff}')
                    .trim_matches('"')
                    .to_ascii_lowercase()
            })
            .collect()),
        Err(e) => Err(IngestError::Unrecognized {
            path: label.into(),
            offset: 0,
            reason: format!("unreadable CSV header: {e}"),
        }),
    }
}

/// Where a CSV kind's fields are; `usize::MAX` for start/end means the file has no times.
struct Columns {
    name: usize,
    start: usize,
    end: usize,
    agent: Option<usize>,
    dispatch: Option<usize>,
    stream: Option<usize>,
    corr: Option<usize>,
    tid: Option<usize>,
    pid: Option<usize>,
    domain: Option<usize>,
}

impl Columns {
    /// Maps the header's columns for `kind`, failing on a missing required one.
    fn find(
        headers: &[String],
        kind: CsvKind,
        label: &str,
        state: &mut InputState,
    ) -> Result<Columns, IngestError> {
        let col = |name: &str| headers.iter().position(|h| h == name);
        let (name, start, end) = required_columns(headers, kind, label, state)?;
        let agent = match kind {
            CsvKind::V3Kernels | CsvKind::V3Counters => col("agent_id"),
            CsvKind::V3Copies => col("destination_agent_id"),
            CsvKind::V1Results => col("gpu-id"),
            CsvKind::V2Timestamps => col("gpu_id"),
            CsvKind::V3Api | CsvKind::Stats => None,
        };
        Ok(Columns {
            name,
            start,
            end,
            agent,
            dispatch: col("dispatch_id"),
            stream: col("stream_id")
                .or_else(|| col("queue_id"))
                .or_else(|| col("queue-id")),
            corr: col("correlation_id"),
            tid: col("thread_id").or_else(|| col("tid")),
            pid: col("process_id").or_else(|| col("pid")),
            domain: col("domain"),
        })
    }
}

/// The (name, start, end) columns each kind requires; times may be absent, with a warning.
fn required_columns(
    headers: &[String],
    kind: CsvKind,
    label: &str,
    state: &mut InputState,
) -> Result<(usize, usize, usize), IngestError> {
    let col = |name: &str| headers.iter().position(|h| h == name);
    let need = |name: &str| {
        col(name).ok_or_else(|| IngestError::Csv {
            path: label.into(),
            line: 1,
            message: format!(
                "missing required column '{name}' (found: {})",
                headers.join(", ")
            ),
        })
    };
    // Required columns per kind.
    Ok(match kind {
        CsvKind::V3Kernels => (
            need("kernel_name")?,
            need("start_timestamp")?,
            need("end_timestamp")?,
        ),
        CsvKind::V3Copies => (
            need("direction")?,
            need("start_timestamp")?,
            need("end_timestamp")?,
        ),
        CsvKind::V3Api => (
            need("function")?,
            need("start_timestamp")?,
            need("end_timestamp")?,
        ),
        CsvKind::V2Timestamps => (
            need("kernel_name")?,
            need("start_timestamp")?,
            need("end_timestamp")?,
        ),
        CsvKind::V3Counters => {
            let n = need("kernel_name")?;
            match (col("start_timestamp"), col("end_timestamp")) {
                (Some(b), Some(e)) => (n, b, e),
                _ => {
                    state.warnings.push("counter collection without timestamps: dispatches are counted, their times are zero".into());
                    (n, usize::MAX, usize::MAX)
                }
            }
        }
        // Statistics are read by `read_stats`; reaching here means a caller mixed the two up.
        CsvKind::Stats => {
            return Err(IngestError::Unrecognized {
                path: label.into(),
                offset: 0,
                reason: "aggregate statistics have no per-dispatch rows".into(),
            })
        }
        CsvKind::V1Results => {
            let n = need("kernelname")?;
            // Without `--timestamp on` rocprof v1 writes no times: the dispatches still count.
            match (col("beginns"), col("endns")) {
                (Some(b), Some(e)) => (n, b, e),
                _ => {
                    state.warnings.push("no BeginNs/EndNs columns (rocprof run without --timestamp on): dispatches are counted, their times are zero".into());
                    (n, usize::MAX, usize::MAX)
                }
            }
        }
    })
}

/// A row's start and end times, both zero where the file has no time columns.
fn row_times(
    record: &csv::StringRecord,
    cols: &Columns,
    headers: &[String],
    label: &str,
    line: u64,
) -> Result<(i64, i64), IngestError> {
    let get = |c: usize| record.get(c).unwrap_or("");
    let time = |c: usize, what: &str| -> Result<i64, IngestError> {
        if c == usize::MAX {
            return Ok(0);
        }
        ns(get(c)).ok_or_else(|| IngestError::Csv {
            path: label.into(),
            line,
            message: format!("column '{what}': not a time: {:?}", get(c)),
        })
    };
    time(
        cols.start,
        &headers.get(cols.start).cloned().unwrap_or_default(),
    )
    .and_then(|start| {
        Ok((
            start,
            time(
                cols.end,
                &headers.get(cols.end).cloned().unwrap_or_default(),
            )?,
        ))
    })
}

/// What was wrong with a file's rows, counted as they are read and warned about at the end.
#[derive(Default)]
struct RowIssues {
    exponent_times: bool,
    zero_len: u64,
    /// The line of the latest short row, while no full row has followed it.
    short_row: Option<u64>,
    skipped: u64,
    first_skipped: Option<u64>,
    long_rows: (u64, u64),                 // (count, first line)
    bad_times: Option<(u64, u64, String)>, // (count, first line, message)
}

impl RowIssues {
    /// Notes a row's field count against the header's; false for a short row, not to be read.
    fn check_width(&mut self, len: usize, width: usize, line: u64) -> bool {
        // A short row is a row cut mid-write when it is the last one (checked at the end), else
        // a malformed row to skip.
        if len < width {
            if let Some(previous) = self.short_row.replace(line) {
                self.skipped += 1;
                self.first_skipped.get_or_insert(previous);
            }
            return false;
        }
        if let Some(previous) = self.short_row.take() {
            self.skipped += 1;
            self.first_skipped.get_or_insert(previous);
        }
        if len > width {
            self.long_rows.0 += 1;
            if self.long_rows.1 == 0 {
                self.long_rows.1 = line;
            }
        }
        true
    }

    /// Counts a row skipped for times that do not read, keeping the first one's message.
    fn note_bad_times(&mut self, e: &IngestError, line: u64) {
        let text = match e {
            IngestError::Csv { line, message, .. } => format!("line {line}: {message}"),
            other => other.to_string(),
        };
        self.bad_times.get_or_insert((0, line, text)).0 += 1;
    }

    /// Turns the counts into the input's warnings (a cut last row is an error under `--strict`).
    fn report(
        self,
        label: &str,
        kind: CsvKind,
        timed: bool,
        opts: &ReadOptions,
        state: &mut InputState,
    ) -> Result<(), IngestError> {
        if let Some(line) = self.short_row {
            if opts.strict {
                return Err(IngestError::TruncatedCsv {
                    path: label.into(),
                    line,
                });
            }
            state.truncated = true;
            state.warnings.push(format!(
                "{label}: truncated: line {line} is cut short; read the complete rows before it"
            ));
        }
        if self.skipped > 0 {
            state.warnings.push(format!(
                "{label}: skipped {} rows with fewer fields than the header (first at line {})",
                self.skipped,
                self.first_skipped.unwrap_or(0)
            ));
        }
        if self.long_rows.0 > 0 {
            state.warnings.push(format!(
                "{label}: {} rows have more fields than the header (first at line {}): the extra fields were ignored",
                self.long_rows.0, self.long_rows.1
            ));
        }
        if let Some((count, _, first)) = self.bad_times {
            state.warnings.push(format!(
                "{label}: skipped {count} rows whose times do not read (first: {first})"
            ));
        }
        if self.exponent_times {
            state.warnings.push(format!(
                "{label}: timestamps in exponent notation (a spreadsheet round trip?) lost their precision: durations are unreliable"
            ));
        }
        if self.zero_len > 0 && timed && kind != CsvKind::V3Api {
            state.warnings.push(format!(
                "{label}: {} rows with zero or negative duration",
                self.zero_len
            ));
        }
        Ok(())
    }
}

/// One row that read, with its times, to add to the trace.
struct Row<'a> {
    record: &'a csv::StringRecord,
    cols: &'a Columns,
    input: u32,
    start: i64,
    dur: i64,
}

impl Row<'_> {
    fn get(&self, c: usize) -> &str {
        self.record.get(c).unwrap_or("")
    }

    /// An optional numeric column, 0 where absent or unreadable.
    fn number(&self, c: Option<usize>) -> u64 {
        c.and_then(|c| self.get(c).trim().parse::<u64>().ok())
            .unwrap_or(0)
    }

    /// An API-trace row: HIP runtime calls and markers become host events, other domains are
    /// dropped.
    fn push_api_call(&self, trace: &mut Trace) {
        let domain = self.cols.domain.map(|c| self.get(c)).unwrap_or("");
        let kind = if domain.starts_with("HIP_RUNTIME") || domain.starts_with("HIP_API") {
            HostKind::Runtime
        } else if domain.starts_with("MARKER") {
            HostKind::Annotation
        } else {
            return;
        };
        let name = trace.names.intern(self.get(self.cols.name).trim());
        let tid = self.number(self.cols.tid);
        let pid = self.number(self.cols.pid);
        trace.host.push(HostEvent {
            kind,
            name,
            input: self.input,
            pid,
            tid,
            ts_ns: self.start,
            dur_ns: self.dur,
            correlation: self.number(self.cols.corr),
            input_dims: NameId::NONE,
            input_types: NameId::NONE,
            concrete_inputs: NameId::NONE,
            input_strides: NameId::NONE,
            comm: NameId::NONE,
            inductor: NameId::NONE,
        });
    }

    /// A kernel dispatch or memory copy row, noting its device.
    fn push_activity(&self, kind: CsvKind, trace: &mut Trace, state: &mut InputState) {
        let (akind, name) = match kind {
            CsvKind::V3Copies => (
                ActivityKind::Memcpy,
                self.get(self.cols.name).trim().to_string(),
            ),
            _ => (
                ActivityKind::Kernel,
                self.get(self.cols.name).trim().to_string(),
            ),
        };
        let device = self
            .cols
            .agent
            .and_then(|c| agent_number(self.get(c)))
            .unwrap_or(0);
        let stream = self
            .cols
            .stream
            .map(|c| state.small_id(self.get(c)))
            .unwrap_or(0);
        state.devices.insert(device);
        let name = trace.names.intern(&name);
        trace.activities.push(Activity {
            kind: akind,
            name,
            input: self.input,
            device,
            stream,
            ts_ns: self.start,
            dur_ns: self.dur,
            correlation: self.number(self.cols.corr),
            external_id: 0,
            workgroups: 0,
            comm: NameId::NONE,
        });
    }
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
        let src = super::open(path)?;
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
