//! The GPU-side synchronization records Kineto writes with
//! `_ExperimentalConfig(enable_cuda_sync_events=True)` (category `cuda_sync`): which stream
//! waited on which, and which stream a host synchronize waited for. The dependency model reads
//! them; traces without them have their waits inferred from the runtime calls.

use serde::Serialize;

/// What a `cuda_sync` record says happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncKind {
    /// `Stream Wait Event`: a stream waits for an event recorded on another stream.
    StreamWait,
    /// `Event Sync`: the host waits for an event (`cudaEventSynchronize`).
    EventSync,
    /// `Stream Sync`: the host waits for a stream (`cudaStreamSynchronize`).
    StreamSync,
    /// `Context Sync`: the host waits for the whole device (`cudaDeviceSynchronize`).
    ContextSync,
}

impl SyncKind {
    /// The kind of a `cuda_sync` event's name (or its `cuda_sync_kind`).
    pub fn of_name(name: &str) -> Option<SyncKind> {
        match name {
            "Stream Wait Event" => Some(SyncKind::StreamWait),
            "Event Sync" => Some(SyncKind::EventSync),
            "Stream Sync" => Some(SyncKind::StreamSync),
            "Context Sync" => Some(SyncKind::ContextSync),
            _ => None,
        }
    }
}

/// One `cuda_sync` record, as readers hand it to [`GpuSyncs::push`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuSync {
    /// What it is.
    pub kind: SyncKind,
    /// Index into `Trace::inputs`.
    pub input: u32,
    /// The GPU.
    pub device: u32,
    /// The stream that waits (a stream wait) or is waited for (a stream sync).
    pub stream: u32,
    /// The stream whose event is waited for, where the trace says (older Kineto; torch 2.11
    /// writes -1, read as `None`).
    pub wait_on_stream: Option<u32>,
    /// Correlation id of the runtime call it belongs to (`cudaStreamWaitEvent`, …).
    pub correlation: u64,
    /// Correlation id of the `cudaEventRecord` call of the event waited for, where the trace
    /// says (0: it does not).
    pub record_correlation: u64,
}

/// The `cuda_sync` records of all inputs, in file order (a few per step: one table of rows is
/// enough).
#[derive(Default, Debug, Clone)]
pub struct GpuSyncs {
    /// The records.
    pub rows: Vec<GpuSync>,
}

impl GpuSyncs {
    /// Appends one record.
    pub fn push(&mut self, s: GpuSync) {
        self.rows.push(s);
    }
    /// Number of records.
    pub fn len(&self) -> usize {
        self.rows.len()
    }
    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
    /// Appends another table's records, renumbering their inputs.
    pub fn extend_from(&mut self, o: GpuSyncs, input: impl Fn(u32) -> u32) {
        self.rows.extend(o.rows.into_iter().map(|s| GpuSync {
            input: input(s.input),
            ..s
        }));
    }
}
