//! The rows of a rocprof CSV: its kind told by the header, where its columns are, each row's
//! times, and what was wrong with the rows, counted as they are read.

use crate::error::IngestError;
use crate::ingest::ReadOptions;
use crate::model::{
    Activity, ActivityKind, Device, Format, HostEvent, HostKind, InputMeta, NameId, Trace, Vendor,
};
use std::collections::{BTreeSet, HashMap};
use std::io::Read;

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
pub(crate) fn header_fields(line: &str) -> Vec<String> {
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

pub(crate) fn first_line(head: &[u8]) -> String {
    let end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    String::from_utf8_lossy(&head[..end]).into_owned()
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
pub(crate) fn agent_number(s: &str) -> Option<u32> {
    crate::ingest::num::trailing_u64(s.trim().trim_matches('"')).map(|v| v as u32)
}

/// The header's column names, normalized (no quotes or BOM, lower case).
pub(crate) fn read_headers<R: Read>(
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
pub(crate) struct Columns {
    pub(crate) name: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) agent: Option<usize>,
    pub(crate) dispatch: Option<usize>,
    pub(crate) stream: Option<usize>,
    pub(crate) corr: Option<usize>,
    pub(crate) tid: Option<usize>,
    pub(crate) pid: Option<usize>,
    pub(crate) domain: Option<usize>,
}

impl Columns {
    /// Maps the header's columns for `kind`, failing on a missing required one.
    pub(crate) fn find(
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
pub(crate) fn required_columns(
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
pub(crate) fn row_times(
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
pub(crate) struct RowIssues {
    pub(crate) exponent_times: bool,
    pub(crate) zero_len: u64,
    /// The line of the latest short row, while no full row has followed it.
    pub(crate) short_row: Option<u64>,
    pub(crate) skipped: u64,
    pub(crate) first_skipped: Option<u64>,
    pub(crate) long_rows: (u64, u64), // (count, first line)
    pub(crate) bad_times: Option<(u64, u64, String)>, // (count, first line, message)
}

impl RowIssues {
    /// Notes a row's field count against the header's; false for a short row, not to be read.
    pub(crate) fn check_width(&mut self, len: usize, width: usize, line: u64) -> bool {
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
    pub(crate) fn note_bad_times(&mut self, e: &IngestError, line: u64) {
        let text = match e {
            IngestError::Csv { line, message, .. } => format!("line {line}: {message}"),
            other => other.to_string(),
        };
        self.bad_times.get_or_insert((0, line, text)).0 += 1;
    }

    /// Turns the counts into the input's warnings (a cut last row is an error under `--strict`).
    pub(crate) fn report(
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
pub(crate) struct Row<'a> {
    pub(crate) record: &'a csv::StringRecord,
    pub(crate) cols: &'a Columns,
    pub(crate) input: u32,
    pub(crate) start: i64,
    pub(crate) dur: i64,
}

impl Row<'_> {
    pub(crate) fn get(&self, c: usize) -> &str {
        self.record.get(c).unwrap_or("")
    }

    /// An optional numeric column, 0 where absent or unreadable.
    pub(crate) fn number(&self, c: Option<usize>) -> u64 {
        c.and_then(|c| self.get(c).trim().parse::<u64>().ok())
            .unwrap_or(0)
    }

    /// An API-trace row: HIP runtime calls and markers become host events, other domains are
    /// dropped.
    pub(crate) fn push_api_call(&self, trace: &mut Trace) {
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
    pub(crate) fn push_activity(&self, kind: CsvKind, trace: &mut Trace, state: &mut InputState) {
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

/// Adds an input entry.
pub(crate) fn new_input(trace: &mut Trace, label: &str, format: Format) -> u32 {
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
pub(crate) struct InputState {
    pub devices: BTreeSet<u32>,
    pub warnings: Vec<String>,
    pub truncated: bool,
    /// String ids (queue handles, "Agent 2") mapped to small numbers.
    pub(crate) ids: HashMap<String, u32>,
}

impl InputState {
    pub(crate) fn finish(self, trace: &mut Trace, input: u32) {
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
    pub(crate) fn small_id(&mut self, s: &str) -> u32 {
        if let Ok(v) = s.trim().parse::<u32>() {
            return v;
        }
        let n = self.ids.len() as u32;
        *self.ids.entry(s.to_string()).or_insert(1_000_000 + n)
    }
}
