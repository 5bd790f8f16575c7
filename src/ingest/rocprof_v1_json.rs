//! rocprof v1 `results.json` (`--hip-trace`/`--sys-trace`, `reference/formats.md` §2.3): a Chrome
//! trace written by roctracer, with processes named `GPU<n>` (kernels), `COPY` (copies),
//! `CPU HIP API` (runtime calls) and `Markers and Ranges`; times as strings, exact ns in
//! `args.BeginNs`/`EndNs`.

use super::json_stream::{ScanError, ScanSink};
use super::num::{micros_to_ns, to_u64, trailing_u64};
use super::{ReadOptions, Reader, Source};
use crate::error::IngestError;
use crate::model::{
    Activity, ActivityKind, Device, Format, HostEvent, HostKind, InputMeta, NameId, Trace, Vendor,
};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

pub struct RocprofV1JsonReader;

impl Reader for RocprofV1JsonReader {
    fn format(&self) -> Format {
        Format::RocprofV1
    }
    fn name(&self) -> &'static str {
        "rocprof-v1 JSON"
    }
    fn looks_for(&self) -> &'static str {
        "a roctracer JSON: traceEvents starting with {}, BeginNs args"
    }
    fn sniff(&self, head: &[u8]) -> Option<bool> {
        Some(super::kineto::looks_like_rocprof_v1_json(head))
    }
    fn read(&self, src: Source, trace: &mut Trace, opts: &ReadOptions) -> Result<(), IngestError> {
        let label = src.label.clone();
        let input = trace.inputs.len() as u32;
        trace.inputs.push(InputMeta {
            path: label.clone(),
            format: Format::RocprofV1,
            vendor: Vendor::Amd,
            devices: Vec::new(),
            rank: None,
            truncated: false,
            warnings: Vec::new(),
            hardware: None,
            base_time_ns: None,
            distributed: None,
        });
        let mut sink = Sink {
            trace,
            input,
            process: HashMap::new(),
            devices: BTreeSet::new(),
        };
        let outcome = opts
            .scan(src.into_reader(), &mut sink)
            .map_err(|e| match e {
                ScanError::Syntax { offset, message } => IngestError::Json {
                    path: label.clone(),
                    offset,
                    message,
                },
                ScanError::Io { offset, source } => IngestError::Io {
                    path: label.clone(),
                    offset,
                    source,
                },
            })?;
        let devices = std::mem::take(&mut sink.devices);
        let meta = &mut trace.inputs[input as usize];
        meta.devices = devices
            .into_iter()
            .map(|id| Device::named(id, String::new()))
            .collect();
        if outcome.truncated {
            if opts.strict {
                return Err(IngestError::Truncated {
                    path: label,
                    offset: outcome.bytes,
                    events: outcome.events,
                });
            }
            meta.truncated = true;
            meta.warnings.push(format!(
                "truncated: the trace ends at byte {}; analyzed the {} complete events before it",
                outcome.bytes, outcome.events
            ));
        }
        Ok(())
    }
}

struct Sink<'t> {
    trace: &'t mut Trace,
    input: u32,
    /// pid (as written) → process name from the `M` events.
    process: HashMap<String, String>,
    devices: BTreeSet<u32>,
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl ScanSink for Sink<'_> {
    fn events(
        &mut self,
        buf: &[u8],
        ranges: &[(usize, usize)],
        _base: u64,
    ) -> Result<(), ScanError> {
        for &(s, e) in ranges {
            let Ok(ev) = serde_json::from_slice::<Value>(&buf[s..e]) else {
                continue;
            };
            let pid = ev.get("pid").map(text).unwrap_or_default();
            match ev.get("ph").and_then(Value::as_str) {
                Some("M") => {
                    if let Some(name) = ev.pointer("/args/name").and_then(Value::as_str) {
                        self.process.insert(pid, name.to_string());
                    }
                    continue;
                }
                Some("X") => {}
                _ => continue,
            }
            let process = self.process.get(&pid).cloned().unwrap_or_default();
            let args = ev.get("args").cloned().unwrap_or(Value::Null);
            let arg = |k: &str| args.get(k).map(text);
            // Exact ns from the args, else the µs strings.
            let (start, end) = match (
                arg("BeginNs").and_then(|v| to_u64(&v)),
                arg("EndNs").and_then(|v| to_u64(&v)),
            ) {
                (Some(b), Some(e)) => (b as i64, e as i64),
                _ => {
                    let ts = ev
                        .get("ts")
                        .and_then(|t| micros_to_ns(&t.to_string()))
                        .unwrap_or(0);
                    let dur = ev
                        .get("dur")
                        .and_then(|t| micros_to_ns(&t.to_string()))
                        .unwrap_or(0);
                    (ts, ts + dur)
                }
            };
            let name = ev
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let input = self.input;
            if process.starts_with("GPU") && !process.starts_with("GPU Barriers")
                || process == "COPY"
            {
                let copy = process == "COPY";
                let device = if copy {
                    arg("dev-id").and_then(|d| trailing_u64(&d)).unwrap_or(0) as u32
                } else {
                    trailing_u64(&process)
                        .or_else(|| arg("dev-id").and_then(|d| trailing_u64(&d)))
                        .unwrap_or(0) as u32
                };
                self.devices.insert(device);
                let stream = arg("queue-id")
                    .or_else(|| arg("stream-id"))
                    .and_then(|q| trailing_u64(&q))
                    .unwrap_or(0) as u32;
                let name = self.trace.names.intern(&name);
                self.trace.activities.push(Activity {
                    kind: if copy {
                        ActivityKind::Memcpy
                    } else {
                        ActivityKind::Kernel
                    },
                    name,
                    input,
                    device,
                    stream,
                    ts_ns: start,
                    dur_ns: end.saturating_sub(start).max(0),
                    correlation: 0,
                    external_id: 0,
                    workgroups: 0,
                    comm: NameId::NONE,
                });
            } else if process == "CPU HIP API" || process == "Markers and Ranges" {
                let tid = ev
                    .get("tid")
                    .map(text)
                    .and_then(|t| trailing_u64(&t))
                    .unwrap_or(0);
                let name = self.trace.names.intern(&name);
                self.trace.host.push(HostEvent {
                    kind: if process == "CPU HIP API" {
                        HostKind::Runtime
                    } else {
                        HostKind::Annotation
                    },
                    name,
                    input,
                    pid: 0,
                    tid,
                    ts_ns: start,
                    dur_ns: end.saturating_sub(start).max(0),
                    correlation: 0,
                    input_dims: NameId::NONE,
                    input_types: NameId::NONE,
                    concrete_inputs: NameId::NONE,
                    input_strides: NameId::NONE,
                    comm: NameId::NONE,
                    inductor: NameId::NONE,
                });
            }
        }
        Ok(())
    }
    fn meta(&mut self, _key: &str, _value: &[u8], _offset: u64) -> Result<(), ScanError> {
        Ok(())
    }
}
