//! Typed errors at the library's seams. Every message names the file and, where there is one,
//! the byte offset or rule id, so a user can find the problem without a debugger.

use std::path::PathBuf;

/// Reading an input failed; nothing from this input can be trusted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    #[error("{path}: cannot open: {source}")]
    Open {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: read error at byte {offset}: {source}")]
    Io {
        path: String,
        offset: u64,
        source: std::io::Error,
    },
    #[error("{path}: empty file")]
    Empty { path: String },
    #[error("{path}: not a trace this tool reads (byte {offset}): {reason}")]
    Unrecognized {
        path: String,
        offset: u64,
        reason: String,
    },
    /// A gzip file whose data does not decompress: a damaged trace, not a stray file.
    #[error("{path}: corrupt gzip data at byte {offset}: {reason}")]
    CorruptGzip {
        path: String,
        offset: u64,
        reason: String,
    },
    #[error("{path}: {format} input is recognized but not supported yet")]
    Unsupported { path: String, format: &'static str },
    #[error("{path}: malformed JSON at byte {offset}: {message}")]
    Json {
        path: String,
        offset: u64,
        message: String,
    },
    #[error("{path}: no \"traceEvents\" array (read {bytes} bytes)")]
    NoEvents { path: String, bytes: u64 },
    #[error(
        "{path}: truncated at byte {offset} after {events} events (--strict makes this an error)"
    )]
    Truncated {
        path: String,
        offset: u64,
        events: u64,
    },
    #[error("{path}: line {line}: {message}")]
    Csv {
        path: String,
        line: u64,
        message: String,
    },
    #[error("{path}: truncated at line {line} (--strict makes this an error)")]
    TruncatedCsv { path: String, line: u64 },
    #[error("{path}: {message}")]
    Database { path: String, message: String },
    #[error("{path}: no trace files found in this directory")]
    EmptyDir { path: String },
    #[error("{path}: no file in this directory is a trace this tool reads ({skipped})")]
    NoTraceInDir { path: String, skipped: String },
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
    #[error("{file}: cannot read: {source}")]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Parse { file: PathBuf, message: String },
    #[error("{file}: rule '{id}': bad pattern: {message}")]
    Pattern {
        file: PathBuf,
        id: String,
        message: String,
    },
    #[error("{file}: rule '{id}': {message}")]
    Example {
        file: PathBuf,
        id: String,
        message: String,
    },
    #[error("{file}: duplicate rule id '{id}' (first defined in {first})")]
    Duplicate {
        file: PathBuf,
        id: String,
        first: PathBuf,
    },
}

/// The pipeline (`rocprof_classify::run`) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    #[error(transparent)]
    Ingest(#[from] IngestError),
    #[error("loading the rules: {0}")]
    Rules(#[from] RuleError),
    #[error("{path}: cannot read the environment listing: {source}")]
    Env {
        path: String,
        source: std::io::Error,
    },
    #[error("cancelled")]
    Cancelled,
    /// A partial that cannot be read or merged with the others.
    #[error("{path}: {why}")]
    Partial { path: String, why: String },
}
