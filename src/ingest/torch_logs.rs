//! `TORCH_LOGS="graph_breaks,recompiles,perf_hints"` text (what torch.compile writes to
//! stderr), in both styles PyTorch has used:
//!
//! - 2024+ glog lines: `V1125 22:09:07.988000 415 torch/_dynamo/guards.py:4760] [0/1]
//!   [__recompiles] Recompiling function forward in ./make_traces.py:61`: level, month and day,
//!   time, pid, source, compile id, artifact, then the text. A multi-line message repeats the
//!   prefix on each of its lines.
//! - 2023 Python-logging lines: `[2023-10-10 02:04:37,366] torch._dynamo.convert_frame.__recompiles:
//!   [DEBUG] ('Recompiling function inner in f.py:15', 'triggered by the following guard
//!   failures: [...]')`, sometimes after other text on the line; a graph break warning continues
//!   on unprefixed lines (its user-code traceback).
//!
//! Lines that are neither (the program's own output) are ignored. See `reference/formats.md`.

use crate::model::compile_log::{
    CodeLocation, CompileId, CompileLog, FailedGuard, GraphBreak, GuardKind, LogEvent, LogFormat,
    LogRecord, LogTime, Recompile,
};
use regex::Regex;
use std::sync::LazyLock;

static GLOG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^([VIWEF])(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6}) +(\d+) ([^\]]*)\] ?(.*)$",
    )
    .expect("valid regex")
});

/// A glog line, without the `[rank3]:` torch.distributed puts before each line of a rank.
pub(super) fn glog(line: &str) -> Option<regex::Captures<'_>> {
    let line = match line.strip_prefix("[rank") {
        Some(rest) => rest.split_once("]:").map_or(line, |(_, l)| l),
        None => line,
    };
    GLOG.captures(line)
}

static PY2023: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}),(\d{3})\] (torch\.[\w.]+): \[(\w+)\] ?(.*)$")
        .expect("valid regex")
});
static COMPILE_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[!?(\d+/\d+)(?:_\d+)?\] ").expect("valid regex"));
static ARTIFACT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[__(\w+)\] ?").expect("valid regex"));
static FRAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"File "([^"]+)", line (\d+), in (\S+)"#).expect("valid regex"));
static GB_LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(https?://\S+/(gb\d+)\.html)").expect("valid regex"));

/// Does this text look like TORCH_LOGS output?
pub fn looks_like_torch_logs(head: &str) -> bool {
    head.lines().any(|l| {
        (glog(l).is_some() && l.contains("] [__"))
            || PY2023.captures(l).is_some_and(|c| {
                c[8].starts_with("torch._dynamo") || c[8].starts_with("torch._inductor")
            })
    })
}

/// One message: consecutive lines with the same prefix (glog) or one prefixed line and its
/// unprefixed continuation (2023).
struct Message {
    line: usize,
    pid: Option<u32>,
    time: LogTime,
    compile_id: Option<CompileId>,
    /// The artifact (`graph_breaks`, `recompiles`, `perf_hints`) or the 2023 logger name.
    channel: String,
    level: String,
    lines: Vec<String>,
}

/// The time of a glog line (month, day and time; glog prints no year).
pub(super) fn glog_time(c: &regex::Captures<'_>) -> LogTime {
    LogTime {
        year: None,
        month: c[2].parse().unwrap_or(0),
        day: c[3].parse().unwrap_or(0),
        micros: micros(&c[4], &c[5], &c[6], c[7].parse().unwrap_or(0)),
    }
}

fn micros(h: &str, m: &str, s: &str, frac_us: i64) -> i64 {
    let n = |x: &str| x.parse::<i64>().unwrap_or(0);
    ((n(h) * 60 + n(m)) * 60 + n(s)) * 1_000_000 + frac_us
}

fn split_messages(text: &str) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    // The prefix of the last glog line, to group a message's lines.
    let mut last_key: Option<String> = None;
    let mut in_2023 = false;
    for (i, raw) in text.lines().enumerate() {
        if let Some(c) = glog(raw) {
            in_2023 = false;
            let mut rest = c.get(10).map_or("", |m| m.as_str());
            let compile_id = COMPILE_ID.captures(rest).and_then(|m| {
                let id = CompileId::parse(&m[1]);
                rest = &rest[m.get(0).map_or(0, |x| x.end())..];
                id
            });
            let channel = match ARTIFACT.captures(rest) {
                Some(m) => {
                    let name = m[1].to_string();
                    rest = &rest[m.get(0).map_or(0, |x| x.end())..];
                    name
                }
                None => String::new(),
            };
            let whole = c.get(0).map_or("", |m| m.as_str());
            let prefix = &whole[..c.get(10).map_or(whole.len(), |m| m.start())];
            let key = format!("{prefix} {compile_id:?} {channel}");
            let line = rest.to_string();
            if last_key.as_deref() == Some(key.as_str()) {
                if let Some(m) = out.last_mut() {
                    m.lines.push(line);
                    continue;
                }
            }
            last_key = Some(key);
            out.push(Message {
                line: i + 1,
                pid: c[8].parse().ok(),
                time: glog_time(&c),
                compile_id,
                channel,
                level: c[1].to_string(),
                lines: vec![line],
            });
        } else if let Some(c) = PY2023.captures(raw) {
            last_key = None;
            in_2023 = true;
            let time = LogTime {
                year: c[1].parse().ok(),
                month: c[2].parse().unwrap_or(0),
                day: c[3].parse().unwrap_or(0),
                micros: micros(&c[4], &c[5], &c[6], c[7].parse::<i64>().unwrap_or(0) * 1000),
            };
            let channel = c[8].to_string();
            let text = c[10].to_string();
            // The verbose recompile style repeats the prefix on each line of one message.
            if let Some(m) = out.last_mut() {
                if m.pid.is_none() && m.time == time && m.channel == channel {
                    m.lines.push(text);
                    continue;
                }
            }
            out.push(Message {
                line: i + 1,
                pid: None,
                time,
                compile_id: None,
                channel,
                level: c[9].to_string(),
                lines: vec![text],
            });
        } else if in_2023 {
            // A 2023 message continues on unprefixed lines (a traceback) until a blank line.
            if raw.trim().is_empty() {
                in_2023 = false;
            } else if let Some(m) = out.last_mut() {
                m.lines.push(raw.to_string());
            }
        } else {
            last_key = None;
        }
    }
    out
}

/// `L['x']` → `x`, `L['self'].scale` → `self.scale` (Dynamo's names for a frame's locals).
fn local_name(s: &str) -> String {
    static LOCAL: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"[LG]\[['"]([^'"]+)['"]\]"#).expect("valid regex"));
    LOCAL.replace_all(s.trim(), "$1").into_owned()
}

/// Classifies a failed guard's text.
pub fn guard_kind(text: &str) -> GuardKind {
    static SIZE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"tensor '(.+?)' size mismatch at index (\d+)\. expected (\S+?),? actual (\S+)")
            .expect("valid regex")
    });
    static TENSOR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"tensor '(.+?)' (dtype|requires_grad|dispatch key set|stride|device|rank|dimensionality) mismatch")
            .expect("valid regex")
    });
    static OBJ_ID: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"___check_(?:obj|type)_id\((.+?), ").expect("valid regex"));
    static LEN: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^len\((.+?)\) ==").expect("valid regex"));
    static VALUE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^(.+?) == ([^=]+?)(?:\s*#.*)?$").expect("valid regex"));
    // "…, with LHS value: 1" reports the new value; the guard is before it.
    let guard = text.split(", with LHS value").next().unwrap_or(text).trim();
    if let Some(c) = SIZE.captures(guard) {
        return GuardKind::SizeMismatch {
            tensor: local_name(&c[1]),
            dim: c[2].parse().unwrap_or(0),
            expected: c[3].to_string(),
            actual: c[4].trim_end_matches('.').to_string(),
        };
    }
    if let Some(c) = TENSOR.captures(guard) {
        return GuardKind::TensorMismatch {
            tensor: local_name(&c[1]),
            what: c[2].to_string(),
        };
    }
    if guard.contains("___check_global_state") {
        return GuardKind::GlobalState;
    }
    if let Some(c) = OBJ_ID.captures(guard) {
        return GuardKind::ObjectIdentity {
            name: local_name(&c[1]),
        };
    }
    if let Some(c) = LEN.captures(guard) {
        return GuardKind::Length {
            name: local_name(&c[1]),
        };
    }
    if let Some(c) = VALUE.captures(guard) {
        if !guard.contains("___") && !c[1].contains(' ') {
            return GuardKind::ValueSpecialized {
                name: local_name(&c[1]),
                value: c[2].trim().to_string(),
            };
        }
    }
    GuardKind::Other
}

fn failed_guard(line: &str) -> Option<FailedGuard> {
    Some(guard_entry(line.trim().strip_prefix("- ")?))
}

/// A failed guard as Dynamo lists it: `0/0: tensor 'x' size mismatch …` or the guard alone.
pub fn guard_entry(t: &str) -> FailedGuard {
    let t = t.trim();
    // `- 0/0: tensor 'x' …` names the compile whose guard failed.
    let (of, text) = match t.split_once(": ") {
        Some((id, rest)) if CompileId::parse(id).is_some() && !id.contains(' ') => {
            (CompileId::parse(id), rest.trim())
        }
        _ => (None, t),
    };
    FailedGuard {
        text: text.to_string(),
        of,
        kind: guard_kind(text),
    }
}

/// `Recompiling function forward in ./m.py:61` → ("forward", "./m.py:61").
fn recompiling(line: &str) -> Option<(String, Option<String>)> {
    let rest = line.trim().strip_prefix("Recompiling function ")?;
    Some(match rest.split_once(" in ") {
        Some((f, at)) => (f.trim().to_string(), Some(at.trim().to_string())),
        None => (rest.trim().to_string(), None),
    })
}

fn parse_recompile(lines: &[String]) -> Option<Recompile> {
    let (function, location) = lines.iter().find_map(|l| recompiling(l))?;
    let guards = lines.iter().filter_map(|l| failed_guard(l)).collect();
    Some(Recompile {
        function,
        location,
        guards,
        reason: None,
    })
}

/// The 2023 tuple style: `('Recompiling function f in x.py:3', "triggered by the following
/// guard failure: L['a'] == 0, with LHS value: 1")` or `… guard failures: ['g1', "g2"]`.
fn parse_recompile_tuple(text: &str) -> Option<Recompile> {
    let start = text.find("Recompiling function ")?;
    let head = &text[start..];
    let end = head.find(['\'', '"']).unwrap_or(head.len());
    let (function, location) = recompiling(&head[..end])?;
    let mut guards = Vec::new();
    if let Some(p) = text.find("guard failures: [") {
        // The list sits inside a quoted string of the tuple: its own quotes are escaped.
        let list = text[p + "guard failures: [".len()..].replace("\\'", "'");
        for item in python_strings(&list) {
            guards.push(FailedGuard {
                kind: guard_kind(&item),
                text: item,
                of: None,
            });
        }
    } else if let Some(p) = text.find("guard failure: ") {
        let g = text[p + "guard failure: ".len()..]
            .trim_end_matches(')')
            .trim_end_matches(['\'', '"'])
            .to_string();
        guards.push(FailedGuard {
            kind: guard_kind(&g),
            text: g,
            of: None,
        });
    }
    Some(Recompile {
        function,
        location,
        guards,
        reason: None,
    })
}

/// The string items of a Python list repr (`['a', "b 'c'"]`), up to its closing bracket.
fn python_strings(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ']' => break,
            '\'' | '"' => {
                let mut item = String::new();
                while let Some(d) = chars.next() {
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            item.push(e);
                        }
                    } else if d == c {
                        break;
                    } else {
                        item.push(d);
                    }
                }
                out.push(item);
            }
            _ => {}
        }
    }
    out
}

/// The user-code frames of a traceback: (location, source line), outermost first.
fn traceback(lines: &[String]) -> Vec<CodeLocation> {
    let mut frames: Vec<CodeLocation> = Vec::new();
    for (k, l) in lines.iter().enumerate() {
        if let Some(c) = FRAME.captures(l) {
            let source = lines
                .get(k + 1)
                .filter(|n| !FRAME.is_match(n) && !n.trim().is_empty())
                .map(|n| n.trim().to_string());
            frames.push(CodeLocation {
                file: c[1].to_string(),
                line: c[2].parse().unwrap_or(0),
                function: Some(c[3].to_string()),
                source,
            });
        }
    }
    frames
}

/// Lines around a break's reason that are not the reason.
fn is_break_boilerplate(t: &str) -> bool {
    (t.starts_with("Graph break ") && t.contains("in user code at"))
        || t.starts_with("Developer debug context")
        || t.starts_with("For more details")
}

/// One break's explanation block: reason, explanation, hint, link.
pub(super) fn break_part(lines: &[&str]) -> GraphBreak {
    let mut b = GraphBreak::default();
    for l in lines {
        let t = l.trim();
        if let Some(c) = GB_LINK.captures(t) {
            b.link = Some(c[1].to_string());
            b.gb_id = Some(c[2].to_string());
        } else if let Some(x) = t.strip_prefix("Explanation:") {
            b.explanation = Some(x.trim().to_string());
        } else if let Some(x) = t.strip_prefix("Hint:") {
            b.hint = Some(x.trim().to_string());
        } else if let Some(x) = t.strip_prefix("Graph Break Reason:") {
            let x = x.trim();
            // "… Graph break encountered:" or "Encountered graph break when attempting to trace
            // CALL: …:" wrap the real reason, which follows on its own line.
            if !x.ends_with(':') && b.reason.is_empty() {
                b.reason = x.to_string();
            }
        } else if b.reason.is_empty() && !t.is_empty() && !is_break_boilerplate(t) {
            b.reason = t.to_string();
        }
    }
    b
}

fn parse_graph_break(lines: &[String]) -> Option<GraphBreak> {
    // "Graph break in user code at F:L", or for a repeat "Graph break (user stack suppressed
    // due to duplicate graph break) in user code at F:L".
    let location = lines.iter().find_map(|l| {
        let at = l
            .trim()
            .strip_prefix("Graph break ")?
            .split_once("in user code at ")?
            .1;
        let (file, line) = at.rsplit_once(':')?;
        Some(CodeLocation {
            file: file.to_string(),
            line: line.trim().parse().ok()?,
            function: None,
            source: None,
        })
    });
    let tb_start = lines
        .iter()
        .position(|l| l.trim() == "User code traceback:")
        .unwrap_or(lines.len());
    let frames = traceback(&lines[tb_start..]);
    let body: Vec<&str> = lines[..tb_start].iter().map(String::as_str).collect();
    let mut parts =
        body.split(|l| l.contains("While handling this graph break, another graph break occurred"));
    let mut root = break_part(parts.next()?);
    if root.reason.is_empty() {
        return None;
    }
    // The innermost frame of the traceback is the line that broke.
    root.location = match (location, frames.last()) {
        (Some(at), Some(f)) if f.file == at.file && f.line == at.line => Some(f.clone()),
        (Some(at), _) => Some(at),
        (None, Some(f)) => Some(f.clone()),
        (None, None) => None,
    };
    let mut tail = &mut root;
    for part in parts {
        let b = break_part(part);
        if !b.reason.is_empty() {
            tail.consequence = Some(Box::new(b));
            tail = tail.consequence.as_mut().expect("just set");
        }
    }
    Some(root)
}

/// The 2023 warning: `Graph break: REASON from user code at   File "f.py", line 9, in fwd` and
/// the traceback on the following lines (innermost last).
fn parse_graph_break_2023(lines: &[String]) -> Option<GraphBreak> {
    let first = &lines[0];
    let reason = first.strip_prefix("Graph break: ")?;
    let reason = reason
        .split(" from user code at")
        .next()?
        .trim()
        .to_string();
    let mut all: Vec<String> = Vec::new();
    if let Some(p) = first.find("File \"") {
        all.push(first[p..].to_string());
    }
    all.extend(lines[1..].iter().cloned());
    Some(GraphBreak {
        reason,
        location: traceback(&all).pop(),
        ..Default::default()
    })
}

/// Reads TORCH_LOGS text.
pub fn parse(text: &str, path: &str) -> CompileLog {
    let messages = split_messages(text);
    let has_break_artifact = messages.iter().any(|m| m.channel == "graph_breaks");
    let mut records = Vec::new();
    for m in &messages {
        let event = match m.channel.as_str() {
            // torch 2.2-2.4 and 2023 DEBUG: "Graph break: REASON from user code at" + frames.
            c if (c == "graph_breaks" || c.ends_with("__graph_breaks"))
                && m.lines[0].starts_with("Graph break:") =>
            {
                parse_graph_break_2023(&m.lines).map(LogEvent::GraphBreak)
            }
            "graph_breaks" => parse_graph_break(&m.lines).map(LogEvent::GraphBreak),
            "recompiles" | "recompiles_verbose" => {
                parse_recompile(&m.lines).map(LogEvent::Recompile)
            }
            "perf_hints" => Some(LogEvent::PerfHint {
                text: m.lines.join("\n").trim().to_string(),
            }),
            c if c.ends_with("__recompiles") || c.ends_with("__recompiles_verbose") => {
                if m.lines[0].trim_start().starts_with('(') {
                    parse_recompile_tuple(&m.lines.join(" ")).map(LogEvent::Recompile)
                } else {
                    parse_recompile(&m.lines).map(LogEvent::Recompile)
                }
            }
            // Without the graph_breaks artifact, the warning is all there is.
            c if c.starts_with("torch._dynamo") && m.level == "WARNING" => {
                parse_graph_break_2023(&m.lines).map(LogEvent::GraphBreak)
            }
            _ if !has_break_artifact
                && m.level == "W"
                && m.lines[0].starts_with("Graph break from `") =>
            {
                let reason = m.lines[0]
                    .trim_end_matches(", consider setting:")
                    .trim()
                    .to_string();
                Some(LogEvent::GraphBreak(GraphBreak {
                    reason,
                    location: traceback(&m.lines).pop(),
                    ..Default::default()
                }))
            }
            _ => None,
        };
        if let Some(event) = event {
            records.push(LogRecord {
                pid: m.pid,
                time: Some(m.time),
                compile_id: m.compile_id,
                line: m.line,
                event,
            });
        }
    }
    CompileLog {
        path: path.to_string(),
        format: LogFormat::TorchLogs,
        records,
        skipped_lines: 0,
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_are_classified() {
        let k = guard_kind("tensor 'L['x']' size mismatch at index 1. expected 32, actual 64");
        assert_eq!(
            k,
            GuardKind::SizeMismatch {
                tensor: "x".into(),
                dim: 1,
                expected: "32".into(),
                actual: "64".into()
            }
        );
        assert_eq!(
            guard_kind("L['a'] == 0, with LHS value: 1"),
            GuardKind::ValueSpecialized {
                name: "a".into(),
                value: "0".into()
            }
        );
        assert_eq!(
            guard_kind("___check_global_state()"),
            GuardKind::GlobalState
        );
        assert!(matches!(
            guard_kind("___check_obj_id(L['args'][1], 140039813517312)"),
            GuardKind::ObjectIdentity { .. }
        ));
        assert!(matches!(
            guard_kind("tensor 'L['x']' dtype mismatch. expected Float, actual Half"),
            GuardKind::TensorMismatch { .. }
        ));
        assert!(matches!(
            guard_kind("len(L['x']) == 3"),
            GuardKind::Length { .. }
        ));
    }

    /// Dynamo logs a repeated break in a shorter form; it must not become its own reason.
    #[test]
    fn a_suppressed_duplicate_break_keeps_its_reason_and_line() {
        let p =
            "V0101 00:00:01.000000 7 torch/_dynamo/symbolic_convert.py:1] [0/1] [__graph_breaks] ";
        let text = format!(
            "{p}Graph break (user stack suppressed due to duplicate graph break) in user code at /m.py:12\n\
             {p}Graph Break Reason: Unsupported Tensor.item() call with capture_scalar_outputs=False\n"
        );
        let log = parse(&text, "x");
        let (r, b) = log.graph_breaks().next().expect("one break");
        assert_eq!(
            b.reason,
            "Unsupported Tensor.item() call with capture_scalar_outputs=False"
        );
        assert_eq!(
            b.location.as_ref().map(|l| (l.file.as_str(), l.line)),
            Some(("/m.py", 12))
        );
        assert_eq!(r.compile_id.map(|c| c.to_string()), Some("0/1".into()));
        assert_eq!(
            CompileId::parse("[!0/1]").map(|c| c.to_string()),
            Some("0/1".into())
        );
    }
}
