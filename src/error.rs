//! Typed errors at the library's seams. Every message names the file and, where there is one,
//! the byte offset or rule id, so a user can find the problem without a debugger.

use std::path::PathBuf;

/// Reading an input failed; nothing from this input can be trusted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// The input (a file or a directory) cannot be opened.
    #[error("{path}: cannot open: {source}")]
    Open {
        /// The input as named (`<stdin>` for `-`).
        path: String,
        /// Why it cannot be opened.
        source: std::io::Error,
    },
    /// Reading the input failed part-way.
    #[error("{path}: read error at byte {offset}: {source}")]
    Io {
        /// The input as named (`<stdin>` for `-`).
        path: String,
        /// Byte offset (decompressed) where the read failed.
        offset: u64,
        /// The read error.
        source: std::io::Error,
    },
    /// The input has no bytes: in a directory of ranks, a rank that died.
    #[error("{path}: empty file")]
    Empty {
        /// The input as named (`<stdin>` for `-`).
        path: String,
    },
    /// No reader recognizes the input: not a trace this tool reads.
    #[error("{path}: not a trace this tool reads (byte {offset}): {reason}")]
    Unrecognized {
        /// The input as named (`<stdin>` for `-`).
        path: String,
        /// Byte offset the reason is about (the first non-blank byte, or 0).
        offset: u64,
        /// What the input looks like, and what each reader looks for.
        reason: String,
    },
    /// A gzip file whose data does not decompress: a damaged trace, not a stray file.
    #[error("{path}: corrupt gzip data at byte {offset}: {reason}")]
    CorruptGzip {
        /// The input as named (`<stdin>` for `-`).
        path: String,
        /// Byte offset in the decompressed data where decompression failed.
        offset: u64,
        /// The decompressor's error.
        reason: String,
    },
    /// A format the tool recognizes but cannot read (or a `--format` no reader takes).
    #[error("{path}: {format} input is recognized but not supported yet")]
    Unsupported {
        /// The input as named (`<stdin>` for `-`).
        path: String,
        /// The format's name.
        format: &'static str,
    },
    /// The input is malformed JSON, or ends before its events.
    #[error("{path}: malformed JSON at byte {offset}: {message}")]
    Json {
        /// The input as named (`<stdin>` for `-`).
        path: String,
        /// Byte offset (decompressed) of the error; 0 where the reader cannot tell.
        offset: u64,
        /// What is wrong (the parser's message).
        message: String,
    },
    /// JSON without a `traceEvents` array or without events in it: not a trace.
    #[error("{path}: no \"traceEvents\" array (read {bytes} bytes)")]
    NoEvents {
        /// The input as named (`<stdin>` for `-`).
        path: String,
        /// Bytes read (decompressed) before giving up.
        bytes: u64,
    },
    /// The input ends mid-document: an error only under `--strict` (else a warning).
    #[error(
        "{path}: truncated at byte {offset} after {events} events (--strict makes this an error)"
    )]
    Truncated {
        /// The input as named (`<stdin>` for `-`).
        path: String,
        /// Bytes read (decompressed) before the end; 0 where the reader cannot tell.
        offset: u64,
        /// Complete events read before the end; 0 where the reader cannot tell.
        events: u64,
    },
    /// A CSV header or row this tool cannot read.
    #[error("{path}: line {line}: {message}")]
    Csv {
        /// The input as named (`<stdin>` for `-`).
        path: String,
        /// The line (from 1) of the problem.
        line: u64,
        /// What is wrong with it.
        message: String,
    },
    /// The CSV's last row is cut short: an error only under `--strict` (else a warning).
    #[error("{path}: truncated at line {line} (--strict makes this an error)")]
    TruncatedCsv {
        /// The input as named (`<stdin>` for `-`).
        path: String,
        /// The line (from 1) that is cut short.
        line: u64,
    },
    /// An SQLite input that is not a readable rocpd profile.
    #[error("{path}: {message}")]
    Database {
        /// The input as named (`<stdin>` for `-`).
        path: String,
        /// What is wrong, or SQLite's error.
        message: String,
    },
    /// A directory with no trace files in it.
    #[error("{path}: no trace files found in this directory")]
    EmptyDir {
        /// The directory.
        path: String,
    },
    /// A directory none of whose files is a trace this tool reads.
    #[error("{path}: no file in this directory is a trace this tool reads ({skipped})")]
    NoTraceInDir {
        /// The directory.
        path: String,
        /// Why each file was left out, joined by `; `.
        skipped: String,
    },
}

impl IngestError {
    /// The input the error is about.
    pub fn path(&self) -> &str {
        match self {
            IngestError::Open { path, .. }
            | IngestError::Io { path, .. }
            | IngestError::Empty { path }
            | IngestError::Unrecognized { path, .. }
            | IngestError::CorruptGzip { path, .. }
            | IngestError::Unsupported { path, .. }
            | IngestError::Json { path, .. }
            | IngestError::NoEvents { path, .. }
            | IngestError::Truncated { path, .. }
            | IngestError::Csv { path, .. }
            | IngestError::TruncatedCsv { path, .. }
            | IngestError::Database { path, .. }
            | IngestError::EmptyDir { path }
            | IngestError::NoTraceInDir { path, .. } => path,
        }
    }

    /// The byte offset in the (decompressed) input where the problem is, when there is one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            IngestError::Io { offset, .. }
            | IngestError::Unrecognized { offset, .. }
            | IngestError::CorruptGzip { offset, .. }
            | IngestError::Json { offset, .. }
            | IngestError::Truncated { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// The line (from 1) of a CSV input where the problem is, when there is one.
    pub fn line(&self) -> Option<u64> {
        match self {
            IngestError::Csv { line, .. } | IngestError::TruncatedCsv { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// The file is not any input this tool reads (as opposed to one it reads but finds broken):
    /// in a directory such a file is a note or a config, left out with a warning. An empty
    /// file is not one: in a directory of ranks it is the trace of a rank that died.
    pub fn is_not_a_trace(&self) -> bool {
        matches!(
            self,
            IngestError::Unrecognized { .. }
                | IngestError::Unsupported { .. }
                | IngestError::NoEvents { .. }
        )
    }
}

/// Loading or checking classification rules failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// A rule file or directory cannot be read.
    #[error("{file}: cannot read: {source}")]
    Read {
        /// The file or directory.
        file: PathBuf,
        /// The read error.
        source: std::io::Error,
    },
    /// A rule file is not the TOML its schema expects, or of another schema version.
    #[error("{file}: {message}")]
    Parse {
        /// The rule file.
        file: PathBuf,
        /// The parser's message, or what is missing.
        message: String,
    },
    /// A rule's regex does not compile.
    #[error("{file}: rule '{id}': bad pattern: {message}")]
    Pattern {
        /// The rule file (`rules` for the combined set).
        file: PathBuf,
        /// The rule's id (`library NAME` for a library, `(set)` for the combined set).
        id: String,
        /// The regex compiler's message.
        message: String,
    },
    /// A rule fails a check of its content: a pattern against its own examples, an unknown id.
    #[error("{file}: rule '{id}': {message}")]
    Example {
        /// The rule file.
        file: PathBuf,
        /// The rule's (or recommendation's) id.
        id: String,
        /// What the check found.
        message: String,
    },
    /// A rule id defined twice.
    #[error("{file}: duplicate rule id '{id}' (first defined in {first})")]
    Duplicate {
        /// The file with the second definition.
        file: PathBuf,
        /// The repeated id.
        id: String,
        /// The file with the first definition.
        first: PathBuf,
    },
}

/// The pipeline (`rocprof_classify::run`) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// Reading an input failed.
    #[error(transparent)]
    Ingest(#[from] IngestError),
    /// Loading the rules (built-in or `--rules DIR`) failed.
    #[error("loading the rules: {0}")]
    Rules(#[from] RuleError),
    /// The `--env` listing cannot be read.
    #[error("{path}: cannot read the environment listing: {source}")]
    Env {
        /// The `--env` file.
        path: String,
        /// The read error.
        source: std::io::Error,
    },
    /// The run was stopped through `Config::cancel` before it finished.
    #[error("cancelled")]
    Cancelled,
    /// `--what-if` names a recommendation that is not in the catalog or has no replay.
    #[error("--what-if {id}: {why}")]
    WhatIf {
        /// The recommendation id given.
        id: String,
        /// Why it cannot be replayed.
        why: String,
    },
    /// A partial that cannot be read or merged with the others.
    #[error("{path}: {why}")]
    Partial {
        /// The partial (or the inputs) it is about; `(merge)` when none.
        path: String,
        /// Why it cannot be read or merged.
        why: String,
    },
    /// The inputs' ranks come from different jobs (`Config::force` analyzes them anyway).
    #[error("{first} and {other} are not one job: {why}; pass --force to analyze them together")]
    MixedJob {
        /// The first rank's input.
        first: String,
        /// The input that differs from it.
        other: String,
        /// What differs.
        why: String,
    },
    /// `--steps`, `--skip-warmup` or `--phase` kept no step.
    #[error("{selection} selects no step: {have}")]
    EmptySelection {
        /// The selection asked for (`--steps 100..200`).
        selection: String,
        /// What the inputs have (`the trace has steps 1..=2`).
        have: String,
    },
    /// The inputs hold no GPU activity (no kernel, copy or fill): nothing to analyze
    /// (`Config::allow_empty` reports them anyway). Exit code [`EXIT_NOTHING`].
    #[error(
        "{paths}: no GPU activity (no kernel, copy or fill was recorded): nothing to analyze; \
         --allow-empty reports it anyway{}",
        warnings.iter().map(|w| format!("; {w}")).collect::<String>()
    )]
    NoGpuWork {
        /// The inputs, comma-separated.
        paths: String,
        /// What the readers warned of (a cut before the first kernel), each with its file.
        warnings: Vec<String>,
    },
}

/// Exit codes, the same at every front door (the command line, the Python package's
/// exceptions' `exit_code`): all went well.
pub const EXIT_OK: u8 = 0;
/// A gate the user asked for tripped (`--fail-on`, `--fail-on-regression`, …).
pub const EXIT_GATE: u8 = 1;
/// An error: an input, an option or the rules cannot be used.
pub const EXIT_ERROR: u8 = 2;
/// Nothing to analyze: the inputs hold no GPU activity ([`RunError::NoGpuWork`]).
pub const EXIT_NOTHING: u8 = 3;

impl RunError {
    /// The process exit code this error ends a run with: [`EXIT_NOTHING`] for inputs without
    /// GPU activity, else [`EXIT_ERROR`].
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::NoGpuWork { .. } => EXIT_NOTHING,
            _ => EXIT_ERROR,
        }
    }
}
