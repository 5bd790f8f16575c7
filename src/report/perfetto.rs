//! `--perfetto PATH`: the input trace again, each GPU activity annotated with its class (bucket,
//! family, library, rule, related findings) in `args["rocprof-classify"]`, and the findings added
//! as global instant events, so the classification shows on the Perfetto UI timeline.
//! Streams like the reader: events are copied as they are read, only GPU activities re-serialized.

use crate::analysis::Analysis;
use crate::classify::{Bucket, RuleSet};
use crate::error::IngestError;
use crate::ingest::json_stream::{self, ScanError, ScanSink};
use crate::ingest::{num::micros_to_ns, open};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::Path;

/// Findings that concern a class of kernels, by bucket and family.
fn related(a: &Analysis, bucket: Bucket, family: &str, unclassified: bool) -> Vec<&'static str> {
    let fired = |id: &str| a.findings.iter().any(|f| f.id == id);
    let mut out = Vec::new();
    let mut add = |id: &'static str, cond: bool| {
        if cond && fired(id) {
            out.push(id);
        }
    };
    add("fp32_gemm", family == "gemm_fp32");
    add("conv_layout_transposes", family == "layout_transpose");
    add(
        "manual_attention",
        family == "softmax" || bucket == Bucket::Gemm,
    );
    add("elementwise_heavy", bucket == Bucket::Elementwise);
    add("exposed_communication", bucket == Bucket::Communication);
    add("memcpy_heavy", bucket == Bucket::Memory);
    add("unclassified_time", unclassified);
    out
}

struct Writer<'a, W: Write> {
    out: W,
    rules: &'a RuleSet,
    analysis: &'a Analysis,
    first: bool,
    events: u64,
    annotated: u64,
    min_ts: Option<(i64, Value, Value)>,
    meta: Vec<(String, Vec<u8>)>,
    error: Option<std::io::Error>,
}

impl<W: Write> Writer<'_, W> {
    fn write(&mut self, bytes: &[u8]) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(bytes) {
                self.error = Some(e);
            }
        }
    }

    fn annotate(&mut self, raw: &[u8]) -> Option<Vec<u8>> {
        let mut ev: Map<String, Value> = serde_json::from_slice(raw).ok()?;
        let cat = ev.get("cat")?.as_str()?.to_ascii_lowercase();
        if !matches!(
            cat.as_str(),
            "kernel" | "gpu_memcpy" | "gpu_memset" | "memcpy" | "memset"
        ) || ev.get("ph")?.as_str()? != "X"
        {
            return None;
        }
        let name = ev.get("name")?.as_str()?.to_string();
        let c = self.rules.classify(&name);
        let bucket = if c.rule.is_none() && cat != "kernel" {
            Bucket::Memory
        } else {
            c.bucket
        };
        let unclassified = c.rule.is_none() && cat == "kernel";
        let tag = json!({
            "bucket": bucket.as_str(),
            "family": if unclassified || c.rule.is_some() { c.family.clone() } else { cat.trim_start_matches("gpu_").to_string() },
            "library": c.library,
            "rule": c.rule.map(|r| self.rules.rules[r].def.id.clone()),
            "findings": related(self.analysis, bucket, &c.family, unclassified),
        });
        if let Some(ts) = ev.get("ts").and_then(|t| micros_to_ns(&t.to_string())) {
            if self.min_ts.as_ref().is_none_or(|m| ts < m.0) {
                self.min_ts = Some((
                    ts,
                    ev.get("pid").cloned().unwrap_or(json!(0)),
                    ev.get("tid").cloned().unwrap_or(json!(0)),
                ));
            }
        }
        let args = ev
            .entry("args")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(args) = args {
            args.insert("rocprof-classify".into(), tag);
        }
        serde_json::to_vec(&ev).ok()
    }
}

impl<W: Write> ScanSink for Writer<'_, W> {
    fn events(
        &mut self,
        buf: &[u8],
        ranges: &[(usize, usize)],
        _base: u64,
    ) -> Result<(), ScanError> {
        for &(s, e) in ranges {
            let raw = &buf[s..e];
            let annotated = self.annotate(raw);
            self.write(if self.first { b"\n" } else { b",\n" });
            self.first = false;
            match annotated {
                Some(bytes) => {
                    self.annotated += 1;
                    self.write(&bytes);
                }
                None => self.write(raw),
            }
            self.events += 1;
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
}

/// Re-reads `input` and writes the annotated trace to `out`.
pub fn export(
    input: &Path,
    rules: &RuleSet,
    analysis: &Analysis,
    out: impl Write,
) -> Result<Exported, IngestError> {
    let src = open(input)?;
    let label = src.label.clone();
    let mut w = Writer {
        out,
        rules,
        analysis,
        first: true,
        events: 0,
        annotated: 0,
        min_ts: None,
        meta: Vec::new(),
        error: None,
    };
    w.write(b"{\"traceEvents\": [");
    json_stream::scan_default(src.into_reader(), &mut w).map_err(|e| match e {
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
    // The findings, as global instants at the start of the GPU activity.
    let (ts, pid, tid) = w.min_ts.clone().unwrap_or((0, json!(0), json!(0)));
    let ts_us = format!("{}.{:03}", ts.div_euclid(1000), ts.rem_euclid(1000));
    let mut findings = 0;
    for f in &analysis.findings {
        let ev = json!({
            "ph": "i", "s": "g", "cat": "rocprof-classify", "name": format!("{} ({})", f.id, f.severity.as_str()),
            "pid": pid, "tid": tid, "ts": "TS",
            "args": {"summary": f.summary, "time_at_stake_ns": f.time_at_stake_ns, "evidence": f.evidence},
        });
        let text = serde_json::to_string(&ev)
            .unwrap_or_default()
            .replace("\"ts\":\"TS\"", &format!("\"ts\":{ts_us}"));
        w.write(if w.first { b"\n" } else { b",\n" });
        w.first = false;
        w.write(text.as_bytes());
        findings += 1;
    }
    w.write(b"\n]");
    for (key, value) in std::mem::take(&mut w.meta) {
        w.write(b",\n");
        w.write(serde_json::to_string(&key).unwrap_or_default().as_bytes());
        w.write(b": ");
        w.write(&value);
    }
    w.write(b"\n}\n");
    if let Some(source) = w.error.take() {
        return Err(IngestError::Io {
            path: "perfetto output".into(),
            offset: 0,
            source,
        });
    }
    Ok(Exported {
        events: w.events,
        annotated: w.annotated,
        findings,
    })
}
