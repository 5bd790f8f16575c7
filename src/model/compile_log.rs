//! What torch.compile's own logs say (TORCH_LOGS text, TORCH_TRACE structured logs): graph
//! breaks with their reason and user-code location, recompiles with the guards that failed, and
//! performance hints. Readers fill it; `analysis::compile_log` joins it to a trace.

use serde::{Deserialize, Serialize};

/// A Dynamo compile id `frame/attempt` (`[0/1]`: frame 0, its second compilation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CompileId {
    pub frame: u32,
    pub attempt: u32,
}

impl std::fmt::Display for CompileId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.frame, self.attempt)
    }
}

impl CompileId {
    /// `"0/1"` → frame 0, attempt 1 (brackets, a compiled-autograd `!` prefix and a `_N`
    /// restart suffix tolerated).
    pub fn parse(s: &str) -> Option<CompileId> {
        let s = s
            .trim()
            .trim_start_matches(['[', '!'])
            .trim_end_matches(']');
        let s = s.split(['!', '_']).next()?;
        let (f, a) = s.split_once('/')?;
        Some(CompileId {
            frame: f.trim().parse().ok()?,
            attempt: a.trim().parse().ok()?,
        })
    }
}

/// When a log line was written: glog lines have month, day and time but no year; the 2023
/// Python-logging lines have a full date. Kept as read; the join places it on the trace's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct LogTime {
    pub year: Option<i32>,
    pub month: u32,
    pub day: u32,
    /// Microseconds since midnight.
    pub micros: i64,
}

/// A line of user code.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeLocation {
    pub file: String,
    pub line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// The source text of the line, when the log prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl std::fmt::Display for CodeLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One graph break as Dynamo explains it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphBreak {
    /// The reason line (`Unsupported Tensor.item() call with capture_scalar_outputs=False`).
    pub reason: String,
    /// The graph-break-site id (`gb0124`), when the log links one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gb_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Where in user code it broke.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<CodeLocation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// A break Dynamo hit while handling this one (`graph break in loop`, gb7000): a
    /// consequence, fixed by fixing this break.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consequence: Option<Box<GraphBreak>>,
}

/// What a failed guard checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GuardKind {
    /// `tensor 'x' size mismatch at index 1. expected 32, actual 64`.
    SizeMismatch {
        /// The tensor's local name (`x` of `L['x']`).
        tensor: String,
        /// The dimension whose size changed.
        dim: u32,
        /// The size the guard expected, as logged.
        expected: String,
        /// The size it got, as logged.
        actual: String,
    },
    /// `tensor 'x' dtype mismatch. expected Float, actual Half` (and `dispatch key set` etc.).
    TensorMismatch {
        /// The tensor's local name.
        tensor: String,
        /// What differed: `dtype`, `requires_grad`, `device`, `stride`, …
        what: String,
    },
    /// `L['scale'] == 1`: a Python int (or bool, float) specialized to a constant.
    ValueSpecialized {
        /// The variable's local name.
        name: String,
        /// The constant it was specialized to.
        value: String,
    },
    /// `___check_obj_id(…)`: an object's identity (a module, a function, a `None`) changed.
    ObjectIdentity {
        /// The object's local name.
        name: String,
    },
    /// `len(L['x']) == 3`: a list or tuple length.
    Length {
        /// The list's or tuple's local name.
        name: String,
    },
    /// `___check_global_state()`: grad mode, autocast, default dtype changed.
    GlobalState,
    /// A guard that none of the other kinds match.
    Other,
}

/// One failed guard of a recompile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedGuard {
    /// The guard as logged.
    pub text: String,
    /// The earlier compile whose guard failed (`- 0/0: …`), when logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub of: Option<CompileId>,
    #[serde(flatten)]
    pub kind: GuardKind,
}

/// One recompilation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Recompile {
    pub function: String,
    /// `file:line` of the function, as logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    pub guards: Vec<FailedGuard>,
    /// Why, in Dynamo's words, when the log gives a reason instead of guards (TORCH_TRACE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What one log record says.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LogEvent {
    /// A graph break, with its reason and user-code location.
    GraphBreak(GraphBreak),
    /// A recompilation, with the guards that failed.
    Recompile(Recompile),
    /// An Inductor performance hint (`Using FallbackKernel: …`).
    PerfHint {
        /// The hint as logged.
        text: String,
    },
    /// The start of a frame's compilation (TORCH_TRACE `dynamo_start`), with the user code
    /// location of the compiled function.
    FrameStart {
        /// The compiled function's location in user code, when logged.
        location: Option<CodeLocation>,
    },
    /// How long one frame's compilation took (TORCH_TRACE `compilation_metrics`).
    CompileTime {
        /// The compiled function's name (`co_name`).
        function: String,
        /// The frame's compile time, in seconds (`entire_frame_compile_time_s`).
        seconds: f64,
    },
}

/// One record: an event with where and when it was logged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogRecord {
    /// The process id of the glog prefix (the trace's pid on the same run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<LogTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_id: Option<CompileId>,
    /// 1-based line of the record's first line in the file.
    pub line: usize,
    #[serde(flatten)]
    pub event: LogEvent,
}

/// The format a compile log came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// `TORCH_LOGS=…` text on stderr (2023 Python-logging or 2024+ glog lines).
    TorchLogs,
    /// `TORCH_TRACE=dir` structured logs (tlparse's input).
    TorchTrace,
}

/// One compile log file.
#[derive(Clone, Debug, Serialize)]
pub struct CompileLog {
    pub path: String,
    pub format: LogFormat,
    pub records: Vec<LogRecord>,
    /// Lines that could not be read (a corrupted JSON payload, say): counted and skipped.
    pub skipped_lines: u64,
    pub warnings: Vec<String>,
}

impl CompileLog {
    pub fn graph_breaks(&self) -> impl Iterator<Item = (&LogRecord, &GraphBreak)> {
        self.records.iter().filter_map(|r| match &r.event {
            LogEvent::GraphBreak(b) => Some((r, b)),
            _ => None,
        })
    }
    pub fn recompiles(&self) -> impl Iterator<Item = (&LogRecord, &Recompile)> {
        self.records.iter().filter_map(|r| match &r.event {
            LogEvent::Recompile(c) => Some((r, c)),
            _ => None,
        })
    }
}

/// What torch.compile's logs can name as the cause of a graph break or recompile; each has its
/// fixes in `rules/ladder.toml` (`[compile_fixes]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FixCause {
    /// A break on `.item()` or another data-dependent value.
    ItemInGraph,
    /// A break on a call Dynamo cannot trace (print, a builtin).
    UnsupportedCall,
    /// A break on `loss.backward()` inside the compiled function.
    Backward,
    /// A break whose log line carries Dynamo's own hint (`{hint}`).
    Hint,
    /// Recompiles on a tensor dimension's size (`{tensor}`, `{dim}`, `{sizes}`).
    SizeMismatch,
    /// Recompiles on a tensor's dtype, device or layout (`{tensor}`, `{what}`).
    TensorMismatch,
    /// Recompiles on each new value of a Python number (`{name}`).
    ValueSpecialized,
    /// Recompiles on a new object each call (`{name}`).
    ObjectIdentity,
    /// Recompiles on a list's length (`{name}`).
    Length,
    /// Recompiles on grad mode, autocast or the default dtype.
    GlobalState,
}

impl FixCause {
    pub const ALL: [FixCause; 10] = [
        FixCause::ItemInGraph,
        FixCause::UnsupportedCall,
        FixCause::Backward,
        FixCause::Hint,
        FixCause::SizeMismatch,
        FixCause::TensorMismatch,
        FixCause::ValueSpecialized,
        FixCause::ObjectIdentity,
        FixCause::Length,
        FixCause::GlobalState,
    ];

    /// Its key in `[compile_fixes]` (serde's name).
    pub fn key(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

/// What a person does to apply an action or a fix (FEED.md `recommendations[].actions[].kind`):
/// set an environment variable, change code, run a command, change a configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    /// Set an environment variable.
    Env,
    /// Change the code.
    Code,
    /// Run a command.
    Command,
    /// Change a configuration.
    Config,
}

/// The feed's name of the kind (serde's, so the two cannot drift apart).
impl std::fmt::Display for ActionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.serialize(f)
    }
}

/// A fix a finding names for its own cause (`evidence.fixes[]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    /// What applying it takes.
    pub kind: ActionKind,
    /// What to do, its placeholders filled.
    pub text: String,
    /// The one recommendation it belongs to, when it is meant for one only.
    #[serde(rename = "for", default, skip_serializing_if = "Option::is_none")]
    pub only_for: Option<String>,
}

/// One fix as data: its kind and its text with `{name}` placeholders.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixText {
    pub kind: ActionKind,
    pub text: String,
}

/// The fixes of every [`FixCause`], by key (from `rules/ladder.toml`).
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(transparent)]
pub struct CompileFixes(pub std::collections::BTreeMap<String, Vec<FixText>>);

impl CompileFixes {
    /// The fixes of `cause`, placeholders filled from `args`, as the findings' evidence holds them.
    pub fn of(&self, cause: FixCause, args: &[(&str, &str)]) -> Vec<Fix> {
        self.0
            .get(cause.key())
            .into_iter()
            .flatten()
            .map(|f| {
                let mut text = f.text.clone();
                for (name, value) in args {
                    text = text.replace(&format!("{{{name}}}"), value);
                }
                Fix {
                    kind: f.kind,
                    text,
                    only_for: None,
                }
            })
            .collect()
    }
}
