//! `TORCH_TRACE=dir` structured logs (what `tlparse` reads): one glog-prefixed JSON envelope per
//! record (`V1206 15:18:20.252000 1500233 torch/_dynamo/utils.py:1288] {"dynamo_start": …,
//! "frame_id": 0, "frame_compile_id": 0, "attempt": 0}`), its payload, when it has one
//! (`has_payload`), on the following tab-indented lines.
//!
//! What we keep: `compilation_metrics` (graph-break restarts in `restart_reasons`, compile
//! failures, the function), `artifact` `recompile_reasons` (the failed guards of each
//! recompile, newest cache entry first), `dynamo_start` (the compiled function's stack) and the
//! `str` table its file names index. A payload that should be JSON and is not is counted and
//! skipped, as tlparse does; the rest of the log is still read.

use super::torch_logs::{break_part, glog, glog_time, guard_entry};
use crate::model::compile_log::{
    CodeLocation, CompileId, CompileLog, LogEvent, LogFormat, LogRecord, LogTime, Recompile,
};
use serde_json::Value;
use std::collections::HashMap;

/// Does this text look like a TORCH_TRACE log (its first record a glog line with a JSON object)?
pub fn looks_like_torch_trace(head: &str) -> bool {
    head.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(glog)
        .is_some_and(|c| c[10].starts_with('{'))
}

struct Envelope {
    line: usize,
    pid: Option<u32>,
    time: LogTime,
    json: Value,
    payload: Option<String>,
}

fn compile_id(env: &Value) -> Option<CompileId> {
    Some(CompileId {
        frame: env["frame_id"].as_u64()? as u32,
        attempt: env["frame_compile_id"].as_u64()? as u32,
    })
}

/// Reads a TORCH_TRACE log.
pub fn parse(text: &str, path: &str) -> CompileLog {
    let read = read_envelopes(text);
    let mut log = Collector {
        skipped: read.skipped,
        ..Collector::default()
    };
    for e in &read.envelopes {
        log.envelope(e);
    }
    log.place_breaks_at_resumes();
    log.name_recompiles();
    let Collector {
        records,
        skipped,
        mut warnings,
        ..
    } = log;
    if let Some(line) = read.first_bad {
        warnings.push(format!(
            "unreadable lines skipped, the first at line {line}"
        ));
    }
    CompileLog {
        path: path.to_string(),
        format: LogFormat::TorchTrace,
        records,
        skipped_lines: skipped,
        warnings,
    }
}

/// The log's envelopes, their payloads attached, and the lines that were not one.
struct ReadEnvelopes {
    envelopes: Vec<Envelope>,
    skipped: u64,
    first_bad: Option<usize>,
}

/// Splits the log into envelopes, attaching each payload's tab-indented lines to its envelope.
fn read_envelopes(text: &str) -> ReadEnvelopes {
    let mut envelopes: Vec<Envelope> = Vec::new();
    let mut skipped = 0u64;
    let mut first_bad: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        if let Some(p) = raw.strip_prefix('\t') {
            match envelopes.last_mut() {
                Some(e) if e.json.get("has_payload").is_some() => {
                    let payload = e.payload.get_or_insert_with(String::new);
                    if !payload.is_empty() {
                        payload.push('\n');
                    }
                    payload.push_str(p);
                }
                _ => skipped += 1,
            }
            continue;
        }
        if raw.trim().is_empty() {
            continue;
        }
        let parsed = glog(raw).and_then(|c| {
            let json: Value = serde_json::from_str(&c[10]).ok()?;
            Some(Envelope {
                line: i + 1,
                pid: c[8].parse().ok(),
                time: glog_time(&c),
                json,
                payload: None,
            })
        });
        match parsed {
            Some(e) => envelopes.push(e),
            None => {
                skipped += 1;
                first_bad.get_or_insert(i + 1);
            }
        }
    }
    ReadEnvelopes {
        envelopes,
        skipped,
        first_bad,
    }
}

/// A record of the envelope's event, stamped with its process, time, compile id and line.
fn log_record(e: &Envelope, id: Option<CompileId>, event: LogEvent) -> LogRecord {
    LogRecord {
        pid: e.pid,
        time: Some(e.time),
        compile_id: id,
        line: e.line,
        event,
    }
}

/// What the envelopes add up to, in log order.
#[derive(Default)]
struct Collector {
    strings: HashMap<u64, String>,
    records: Vec<LogRecord>,
    // (pid, file, function, line) of each `torch_dynamo_resume_in_{function}_at_{line}` frame.
    resumes: Vec<(Option<u32>, String, String, u32)>,
    // The function of each compile id, from its metrics, to name the recompiles.
    functions: HashMap<(Option<u32>, CompileId), (String, Option<String>)>,
    skipped: u64,
    warnings: Vec<String>,
}

impl Collector {
    /// Takes in one envelope: a string-table entry, a frame start, metrics or recompile reasons.
    fn envelope(&mut self, e: &Envelope) {
        let j = &e.json;
        let recompile_reasons = j["artifact"]["name"] == "recompile_reasons";
        self.check_json_payload(e, recompile_reasons);
        let id = compile_id(j);
        if let Some(s) = j["str"].as_array() {
            if let (Some(path), Some(k)) = (
                s.first().and_then(Value::as_str),
                s.get(1).and_then(Value::as_u64),
            ) {
                self.strings.insert(k, path.to_string());
            }
        } else if let Some(stack) = j["dynamo_start"]["stack"].as_array() {
            let location = stack.last().map(|f| CodeLocation {
                file: f["filename"]
                    .as_u64()
                    .and_then(|k| self.strings.get(&k).cloned())
                    .or_else(|| f["filename"].as_str().map(str::to_string))
                    .unwrap_or_default(),
                line: f["line"].as_u64().unwrap_or(0) as u32,
                function: f["name"].as_str().map(str::to_string),
                source: f["loc"].as_str().map(str::to_string),
            });
            self.records
                .push(log_record(e, id, LogEvent::FrameStart { location }));
        } else if let Some(m) = j.get("compilation_metrics") {
            self.compilation_metrics(e, id, m);
        } else if recompile_reasons {
            self.recompile(e, id);
        }
    }

    /// Payloads that are JSON must parse; a corrupted one is counted, and skipped.
    fn check_json_payload(&mut self, e: &Envelope, recompile_reasons: bool) {
        let j = &e.json;
        let json_payload = j.get("chromium_event").is_some()
            || j.get("dynamo_guards").is_some()
            || (j["artifact"]["encoding"] == "json" && !recompile_reasons);
        if let (Some(p), true) = (&e.payload, json_payload) {
            if let Err(err) = serde_json::from_str::<serde::de::IgnoredAny>(p) {
                self.skipped += 1;
                self.warnings.push(format!(
                    "unreadable JSON payload of the record at line {} ({err}): skipped",
                    e.line
                ));
            }
        }
    }

    /// A compile's metrics: its time, its graph breaks (restarts) and its failure, if any.
    fn compilation_metrics(&mut self, e: &Envelope, id: Option<CompileId>, m: &Value) {
        let function = m["co_name"].as_str().unwrap_or("").to_string();
        if let Some((f, line)) = function
            .strip_prefix("torch_dynamo_resume_in_")
            .and_then(|rest| rest.rsplit_once("_at_"))
        {
            if let Ok(line) = line.parse::<u32>() {
                let file = m["co_filename"].as_str().unwrap_or("").to_string();
                self.resumes.push((e.pid, file, f.to_string(), line));
            }
        }
        let at = m["co_filename"]
            .as_str()
            .map(|f| format!("{f}:{}", m["co_firstlineno"].as_u64().unwrap_or(0)));
        if let Some(id) = id {
            self.functions
                .insert((e.pid, id), (function.clone(), at.clone()));
        }
        let seconds = m["entire_frame_compile_time_s"]
            .as_f64()
            .or_else(|| m["duration_us"].as_f64().map(|us| us / 1e6))
            .or_else(|| {
                m["dynamo_cumulative_compile_time_us"]
                    .as_f64()
                    .map(|us| us / 1e6)
            });
        if let Some(seconds) = seconds {
            self.records.push(log_record(
                e,
                id,
                LogEvent::CompileTime {
                    function: function.clone(),
                    seconds,
                },
            ));
        }
        self.graph_breaks(e, id, m, &function);
        if let Some(fail) = m["fail_type"].as_str() {
            self.warnings.push(format!(
                "compile {} of {function} failed: {fail}: {}",
                id.map(|i| i.to_string()).unwrap_or_else(|| "?".into()),
                m["fail_reason"]
                    .as_str()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("")
            ));
        }
    }

    /// Each restart in a compile's metrics is one graph break.
    fn graph_breaks(&mut self, e: &Envelope, id: Option<CompileId>, m: &Value, function: &str) {
        for reason in m["restart_reasons"].as_array().into_iter().flatten() {
            // The reason may be Dynamo's whole explanation: reason, Explanation, Hint, link.
            let text = reason.as_str().unwrap_or("").trim_matches('\'');
            let lines: Vec<&str> = text.lines().collect();
            let mut b = break_part(&lines);
            if b.reason.is_empty() {
                b.reason = text.to_string();
            }
            // The function that broke (its first line); the break is inside it.
            b.location = Some(CodeLocation {
                file: m["co_filename"].as_str().unwrap_or("").to_string(),
                line: m["co_firstlineno"].as_u64().unwrap_or(0) as u32,
                function: Some(function.to_string()),
                source: None,
            });
            self.records
                .push(log_record(e, id, LogEvent::GraphBreak(b)));
        }
    }

    /// A `recompile_reasons` artifact: the failed guards that made this compile a recompile.
    fn recompile(&mut self, e: &Envelope, id: Option<CompileId>) {
        // A JSON list of "0/0: guard" strings; torch 2.11 writes a single one bare.
        let text = e.payload.as_deref().unwrap_or("");
        let guards = match serde_json::from_str::<Vec<String>>(text) {
            Ok(list) => list.iter().map(|g| guard_entry(g)).collect(),
            Err(_) => text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(guard_entry)
                .collect(),
        };
        self.records.push(log_record(
            e,
            id,
            LogEvent::Recompile(Recompile {
                guards,
                ..Default::default()
            }),
        ));
    }

    /// Dynamo resumes after a break in a frame named `torch_dynamo_resume_in_{f}_at_{line}`:
    /// that names the line of the break in `f` (same file), which the metrics alone do not.
    fn place_breaks_at_resumes(&mut self) {
        for r in &mut self.records {
            if let LogEvent::GraphBreak(b) = &mut r.event {
                if let Some(loc) = &mut b.location {
                    let resumed = self.resumes.iter().find(|(pid, file, f, line)| {
                        *pid == r.pid
                            && *file == loc.file
                            && Some(f.as_str()) == loc.function.as_deref()
                            && *line > loc.line
                    });
                    if let Some((_, _, _, line)) = resumed {
                        loc.line = *line;
                    }
                }
            }
        }
    }

    /// Name each recompile's function from its compile's metrics (logged after the artifact).
    fn name_recompiles(&mut self) {
        for r in &mut self.records {
            if let (LogEvent::Recompile(c), Some(id)) = (&mut r.event, r.compile_id) {
                if let Some((f, at)) = self.functions.get(&(r.pid, id)) {
                    c.function = f.clone();
                    c.location = at.clone();
                }
            }
        }
    }
}
