//! `--perfetto PATH`: the run's GPU activities for the Perfetto UI, each annotated with what the
//! analysis decided (bucket, family, library, rule, step, launching op, `in_window`, related
//! findings) in `args["rocprof-classify"]`, and the findings added as global instant events.
//!
//! One Kineto file in: its events are streamed again and copied as read (host events and args
//! intact); each GPU event is joined to its analyzed activity by the reader's own key (times,
//! device, stream, correlation), so its classes are the feed's. Anything else (rocprof outputs,
//! several files, stdin): a trace rebuilt from the model, GPU activities and host events.

use crate::classify::{Bucket, KernelTag};
use crate::detect::{Finding, FindingId};
use crate::error::IngestError;
use crate::ingest::json_stream::{self, ScanError, ScanSink};
use crate::ingest::kineto::{activity_key, ActivityKey};
use crate::ingest::open;
use crate::model::{ActivityKind, Format, HostKind, Trace};
use crate::pipeline::Run;
use rustc_hash::FxHashMap as HashMap;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;

/// Findings that concern a class of kernels, by bucket and family.
fn related(
    findings: &[Finding],
    bucket: Bucket,
    tag: Option<KernelTag>,
    unclassified: bool,
) -> Vec<FindingId> {
    let fired = |id: FindingId| findings.iter().any(|f| f.id == id);
    let mut out = Vec::new();
    let mut add = |id: FindingId, cond: bool| {
        if cond && fired(id) {
            out.push(id);
        }
    };
    add(FindingId::Fp32Gemm, tag == Some(KernelTag::Fp32Gemm));
    add(
        FindingId::ConvLayoutTransposes,
        tag == Some(KernelTag::LayoutTranspose),
    );
    add(
        FindingId::ManualAttention,
        tag == Some(KernelTag::Softmax) || bucket == Bucket::Gemm,
    );
    add(FindingId::ElementwiseHeavy, bucket == Bucket::Elementwise);
    add(
        FindingId::ExposedCommunication,
        bucket == Bucket::Communication,
    );
    add(FindingId::MemcpyHeavy, bucket == Bucket::Memory);
    add(FindingId::UnclassifiedTime, unclassified);
    out
}

/// Activity `a`'s annotation: the row of the run's activity table.
fn tag(run: &Run, a: usize) -> Value {
    let row = run.activities.get(&run.trace, a);
    let unclassified = row.rule.is_none()
        && run.trace.activities.kind[a] == ActivityKind::Kernel
        && run
            .activities
            .classified
            .is_unclassified(run.trace.activities.name[a]);
    json!({
        "bucket": row.bucket.as_str(),
        "family": row.family,
        "library": row.library,
        "rule": row.rule,
        "step": row.step,
        "op": row.op,
        "in_window": row.in_window,
        "findings": related(&run.findings, row.bucket, row.tag, unclassified),
    })
}

/// `ns` as the microseconds Chrome traces carry, exactly (three decimals).
fn micros(ns: i64) -> String {
    format!("{}.{:03}", ns.div_euclid(1000), ns.rem_euclid(1000))
}

struct Out<W: Write> {
    out: W,
    first: bool,
    events: u64,
    error: Option<std::io::Error>,
}

impl<W: Write> Out<W> {
    fn write(&mut self, bytes: &[u8]) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(bytes) {
                self.error = Some(e);
            }
        }
    }
    /// One element of the `traceEvents` array.
    fn event(&mut self, bytes: &[u8]) {
        self.write(if self.first { b"\n" } else { b",\n" });
        self.first = false;
        self.write(bytes);
        self.events += 1;
    }
}

/// A trace file's top-level keys other than `traceEvents`, with their raw JSON values.
type TopLevel = Vec<(String, Vec<u8>)>;

/// Copies a Kineto file's events, annotating the GPU activities the run analyzed.
struct Copier<'a, 'o, W: Write> {
    out: &'o mut Out<W>,
    run: &'a Run,
    /// The run's activities by the reader's key (several for identical keys, taken in order).
    by_key: HashMap<ActivityKey, Vec<u32>>,
    annotated: u64,
    meta: TopLevel,
}

impl<W: Write> Copier<'_, '_, W> {
    fn annotate(&mut self, raw: &[u8]) -> Option<Vec<u8>> {
        let key = activity_key(raw)?;
        let rows = self.by_key.get_mut(&key)?;
        let a = rows.pop()? as usize;
        let mut ev: Map<String, Value> = serde_json::from_slice(raw).ok()?;
        let args = ev
            .entry("args")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(args) = args {
            args.insert("rocprof-classify".into(), tag(self.run, a));
        }
        serde_json::to_vec(&ev).ok()
    }
}

impl<W: Write> ScanSink for Copier<'_, '_, W> {
    fn events(
        &mut self,
        buf: &[u8],
        ranges: &[(usize, usize)],
        _base: u64,
    ) -> Result<(), ScanError> {
        for &(s, e) in ranges {
            let raw = &buf[s..e];
            match self.annotate(raw) {
                Some(bytes) => {
                    self.annotated += 1;
                    self.out.event(&bytes);
                }
                None => self.out.event(raw),
            }
        }
        Ok(())
    }
    fn meta(&mut self, key: &str, value: &[u8], _offset: u64) -> Result<(), ScanError> {
        self.meta.push((key.to_string(), value.to_vec()));
        Ok(())
    }
}

/// What the export wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exported {
    pub events: u64,
    pub annotated: u64,
    pub findings: u64,
    /// Whether the input file was copied (one Kineto file) rather than rebuilt from the model.
    pub copied: bool,
}

/// Writes the run's activities for Perfetto: `inputs` are the paths the run read (one Kineto
/// file is copied with its events intact; anything else is rebuilt from the model). Call it
/// before [`Run::drop_rows`].
pub fn export(
    run: &Run,
    inputs: &[std::path::PathBuf],
    out: impl Write,
) -> Result<Exported, IngestError> {
    let kineto_file = match (inputs, run.trace.inputs.as_slice()) {
        ([path], [only])
            if path.as_os_str() != "-" && path.is_file() && only.format == Format::Kineto =>
        {
            Some(path.as_path())
        }
        _ => None,
    };
    let mut out = Out {
        out,
        first: true,
        events: 0,
        error: None,
    };
    out.write(b"{\"traceEvents\": [");
    let (annotated, meta) = match kineto_file {
        Some(path) => copy_kineto(run, path, &mut out)?,
        None => (rebuild(run, &mut out), Vec::new()),
    };
    let findings = write_findings(&run.trace, &run.findings, &mut out);
    out.write(b"\n]");
    for (key, value) in meta {
        out.write(b",\n");
        out.write(serde_json::to_string(&key).unwrap_or_default().as_bytes());
        out.write(b": ");
        out.write(&value);
    }
    out.write(b"\n}\n");
    if let Some(source) = out.error.take() {
        return Err(IngestError::Io {
            path: "perfetto output".into(),
            offset: 0,
            source,
        });
    }
    Ok(Exported {
        events: out.events - findings,
        annotated,
        findings,
        copied: kineto_file.is_some(),
    })
}

/// Streams `path` into `out`, annotating its GPU events; returns how many were annotated and
/// the file's other top-level keys (written after the events).
fn copy_kineto<W: Write>(
    run: &Run,
    path: &Path,
    out: &mut Out<W>,
) -> Result<(u64, TopLevel), IngestError> {
    let acts = &run.trace.activities;
    let mut by_key: HashMap<ActivityKey, Vec<u32>> = HashMap::default();
    // Reversed, so popping takes identical keys in file order.
    for a in (0..acts.len()).rev() {
        by_key
            .entry((
                acts.ts_ns[a],
                acts.dur_ns[a],
                acts.device[a],
                acts.stream[a],
                acts.correlation.get(a),
            ))
            .or_default()
            .push(a as u32);
    }
    let src = open(path)?;
    let label = src.label.clone();
    let mut copier = Copier {
        out,
        run,
        by_key,
        annotated: 0,
        meta: Vec::new(),
    };
    json_stream::scan_default(src.into_reader(), &mut copier).map_err(|e| match e {
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
    Ok((copier.annotated, std::mem::take(&mut copier.meta)))
}

/// The model as a Chrome trace: per (input, device) a process of GPU streams, per input a
/// process of host threads. Returns the number of GPU activities written.
fn rebuild<W: Write>(run: &Run, out: &mut Out<W>) -> u64 {
    let trace = &run.trace;
    let acts = &trace.activities;
    // Process ids: GPUs first (input * 1000 + device), then each input's host (1_000_000 + input).
    let gpu_pid = |input: u32, device: u32| u64::from(input) * 1000 + u64::from(device);
    let mut named = std::collections::BTreeSet::new();
    for a in 0..acts.len() {
        if named.insert((acts.input[a], acts.device[a])) {
            let meta = &trace.inputs[acts.input[a] as usize];
            let name = format!("GPU {} ({})", acts.device[a], meta.path);
            let ev = json!({"ph": "M", "name": "process_name", "pid": gpu_pid(acts.input[a], acts.device[a]), "args": {"name": name}});
            out.event(ev.to_string().as_bytes());
        }
    }
    for a in 0..acts.len() {
        let cat = match acts.kind[a] {
            ActivityKind::Kernel => "kernel",
            ActivityKind::Memcpy => "gpu_memcpy",
            ActivityKind::Memset => "gpu_memset",
        };
        let ev = format!(
            "{{\"ph\":\"X\",\"cat\":\"{cat}\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"correlation\":{},\"rocprof-classify\":{}}}}}",
            json!(trace.names.get(acts.name[a])),
            gpu_pid(acts.input[a], acts.device[a]),
            acts.stream[a],
            micros(acts.ts_ns[a]),
            micros(acts.dur_ns[a]),
            acts.correlation.get(a),
            tag(run, a),
        );
        out.event(ev.as_bytes());
    }
    let host = &trace.host;
    for h in 0..host.len() {
        let cat = match host.kind[h] {
            HostKind::Runtime => "cuda_runtime",
            HostKind::Driver => "cuda_driver",
            HostKind::CpuOp => "cpu_op",
            HostKind::Annotation => "user_annotation",
            HostKind::Python => "python_function",
        };
        let ev = format!(
            "{{\"ph\":\"X\",\"cat\":\"{cat}\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"correlation\":{}}}}}",
            json!(trace.names.get(host.name[h])),
            1_000_000 + u64::from(host.input[h]),
            host.tid(h),
            micros(host.ts_ns[h]),
            micros(host.dur_ns.get(h)),
            host.correlation.get(h),
        );
        out.event(ev.as_bytes());
    }
    acts.len() as u64
}

/// The findings, as global instants at the start of the GPU activity; returns how many.
fn write_findings<W: Write>(trace: &Trace, findings: &[Finding], out: &mut Out<W>) -> u64 {
    let acts = &trace.activities;
    let first = (0..acts.len()).min_by_key(|&a| (acts.ts_ns[a], a));
    let ts = first.map_or(0, |a| acts.ts_ns[a]);
    for f in findings {
        let ev = json!({
            "ph": "i", "s": "g", "cat": "rocprof-classify", "name": format!("{} ({})", f.id, f.severity.as_str()),
            "pid": 0, "tid": 0, "ts": "TS",
            "args": {"summary": f.summary, "time_at_stake_ns": f.time_at_stake_ns, "evidence": f.evidence},
        });
        let text = serde_json::to_string(&ev)
            .unwrap_or_default()
            .replace("\"ts\":\"TS\"", &format!("\"ts\":{}", micros(ts)));
        out.event(text.as_bytes());
    }
    findings.len() as u64
}
