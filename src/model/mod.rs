//! The normalized trace: one columnar table of GPU activities and one of host events, with names
//! interned once. Every reader writes into [`Trace`]; every analysis reads only from it.
//!
//! Times are integer nanoseconds (`*_ns`) on the input's own clock: readers convert once, at the
//! edge, so no analysis ever sees a microsecond float.

pub mod comms;
pub mod compile_log;
mod counters;
pub mod inductor;
pub mod intern;
pub mod ops;
pub mod units;

pub use counters::{DeviceSpec, DispatchCounters, KernelResources, PeakSource, Pipe, PipeOps};
pub use intern::{Interner, NameId};
use serde::{Deserialize, Serialize};

/// What kind of GPU activity a row of [`GpuActivities`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    Kernel,
    Memcpy,
    Memset,
}

/// GPU activities (kernels, memcpys, memsets) as a struct of arrays: row `i` is
/// `(kind[i], name[i], input[i], …)`.
#[derive(Default, Debug, Clone)]
pub struct GpuActivities {
    pub kind: Vec<ActivityKind>,
    pub name: Vec<NameId>,
    /// Index into [`Trace::inputs`] (one entry per file and rank).
    pub input: Vec<u32>,
    pub device: Vec<u32>,
    pub stream: Vec<u32>,
    pub ts_ns: Vec<i64>,
    pub dur_ns: Vec<i64>,
    /// Runtime correlation id linking the activity to its launch call; 0 when absent.
    pub correlation: Ids,
    /// `External id` of the launching cpu_op; 0 when absent.
    pub external_id: Ids,
    /// Workgroups (thread blocks) of a kernel's grid; 0 when the trace does not say.
    pub workgroups: Vec<u32>,
    /// The collective arguments of the few NCCL/RCCL kernels that carry them, sparse:
    /// (row, interned [`comms::CommArgs`]) in row order.
    comm: Vec<(u32, NameId)>,
}

/// One GPU activity, as readers hand it to [`GpuActivities::push`].
#[derive(Debug, Clone, Copy)]
pub struct Activity {
    pub kind: ActivityKind,
    pub name: NameId,
    pub input: u32,
    pub device: u32,
    pub stream: u32,
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub correlation: u64,
    pub external_id: u64,
    /// Workgroups of a kernel's grid (0: unknown).
    pub workgroups: u32,
    /// The interned [`comms::CommArgs`] of a collective kernel ([`NameId::NONE`]: none).
    pub comm: NameId,
}

/// A column of ids (correlation, External id) that are nearly always below 2^31: 4 bytes each,
/// the rare wider one kept in a side list and its index stored above 2^31.
#[derive(Default, Debug, Clone)]
pub struct Ids {
    small: Vec<u32>,
    wide: Vec<u64>,
}

/// Values from here up are indices into [`Ids::wide`].
const WIDE_ID: u32 = 1 << 31;

impl Ids {
    pub fn push(&mut self, v: u64) {
        match u32::try_from(v) {
            Ok(small) if small < WIDE_ID => self.small.push(small),
            _ => {
                self.small.push(WIDE_ID + self.wide.len() as u32);
                self.wide.push(v);
            }
        }
    }
    /// The id of row `i`.
    pub fn get(&self, i: usize) -> u64 {
        match self.small[i] {
            v if v < WIDE_ID => u64::from(v),
            v => self.wide[(v - WIDE_ID) as usize],
        }
    }
    pub fn len(&self) -> usize {
        self.small.len()
    }
    pub fn is_empty(&self) -> bool {
        self.small.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
    fn retain_by(&mut self, keep: &[bool]) {
        retain_by(&mut self.small, keep);
    }
    /// Appends another column's rows (its wide ids after this one's).
    fn append(&mut self, o: Ids) {
        let base = self.wide.len() as u32;
        self.small.extend(
            o.small
                .into_iter()
                .map(|v| if v < WIDE_ID { v } else { v + base }),
        );
        self.wide.extend(o.wide);
    }
    fn reserve_exact(&mut self, more: usize) {
        self.small.reserve_exact(more);
    }
    fn shrink_to_fit(&mut self) {
        self.small.shrink_to_fit();
        self.wide.shrink_to_fit();
    }
}

/// Keeps the elements of `column` whose index `keep` marks.
fn retain_by<T>(column: &mut Vec<T>, keep: &[bool]) {
    let mut i = 0;
    column.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

/// Which rows have times a profiler can write (duration within `max_dur`, start within
/// [`MAX_TS_NS`]), and how many rows per input do not.
fn plausible(
    ts: &[i64],
    dur: &[i64],
    input: &[u32],
    max_dur: i64,
) -> (Vec<bool>, std::collections::BTreeMap<u32, u64>) {
    let keep: Vec<bool> = ts
        .iter()
        .zip(dur)
        .map(|(t, d)| (0..=max_dur).contains(d) && (0..=MAX_TS_NS).contains(t))
        .collect();
    let mut dropped = std::collections::BTreeMap::new();
    for (i, _) in keep.iter().enumerate().filter(|(_, k)| !**k) {
        *dropped.entry(input[i]).or_default() += 1;
    }
    (keep, dropped)
}

/// Times a trace can hold: from 0 (the epoch, or boot) to about 146 years after it (2^62 ns),
/// so that sums and differences of two of them never overflow an i64.
pub const MAX_TS_NS: i64 = 1 << 62;
/// The longest GPU activity kept (1 hour) and host event (1 day): longer ones are corrupt times.
pub const MAX_ACTIVITY_NS: i64 = 3_600_000_000_000;
pub const MAX_HOST_EVENT_NS: i64 = 86_400_000_000_000;

impl GpuActivities {
    /// Drops the activities whose times cannot be real ([`MAX_ACTIVITY_NS`], [`MAX_TS_NS`]);
    /// returns how many, per input.
    pub fn drop_implausible(&mut self) -> std::collections::BTreeMap<u32, u64> {
        let (keep, dropped) = plausible(&self.ts_ns, &self.dur_ns, &self.input, MAX_ACTIVITY_NS);
        if !dropped.is_empty() {
            retain_by(&mut self.kind, &keep);
            retain_by(&mut self.name, &keep);
            retain_by(&mut self.input, &keep);
            retain_by(&mut self.device, &keep);
            retain_by(&mut self.stream, &keep);
            retain_by(&mut self.ts_ns, &keep);
            retain_by(&mut self.dur_ns, &keep);
            self.correlation.retain_by(&keep);
            self.external_id.retain_by(&keep);
            retain_by(&mut self.workgroups, &keep);
            // Rows move down by the number of dropped rows before them.
            let mut kept_before = Vec::with_capacity(keep.len());
            let mut n = 0u32;
            for &k in &keep {
                kept_before.push(n);
                n += u32::from(k);
            }
            self.comm.retain(|&(row, _)| keep[row as usize]);
            for (row, _) in &mut self.comm {
                *row = kept_before[*row as usize];
            }
        }
        dropped
    }
    pub fn len(&self) -> usize {
        self.name.len()
    }
    pub fn is_empty(&self) -> bool {
        self.name.is_empty()
    }
    /// Grows every column by half when full (see [`HostEvents::push`]).
    fn grow(&mut self) {
        let len = self.name.len();
        if len < self.name.capacity() {
            return;
        }
        let more = (len / 2).max(1024);
        self.kind.reserve_exact(more);
        self.name.reserve_exact(more);
        self.input.reserve_exact(more);
        self.device.reserve_exact(more);
        self.stream.reserve_exact(more);
        self.ts_ns.reserve_exact(more);
        self.dur_ns.reserve_exact(more);
        self.correlation.reserve_exact(more);
        self.external_id.reserve_exact(more);
        self.workgroups.reserve_exact(more);
    }
    pub fn push(&mut self, a: Activity) {
        self.grow();
        self.kind.push(a.kind);
        self.name.push(a.name);
        self.input.push(a.input);
        self.device.push(a.device);
        self.stream.push(a.stream);
        self.ts_ns.push(a.ts_ns);
        self.dur_ns.push(a.dur_ns);
        self.correlation.push(a.correlation);
        self.external_id.push(a.external_id);
        self.workgroups.push(a.workgroups);
        if a.comm != NameId::NONE {
            self.comm.push((self.name.len() as u32 - 1, a.comm));
        }
    }
    /// The interned [`comms::CommArgs`] of row `i` ([`NameId::NONE`] for most rows).
    pub fn comm(&self, i: usize) -> NameId {
        match self.comm.binary_search_by_key(&(i as u32), |&(row, _)| row) {
            Ok(k) => self.comm[k].1,
            Err(_) => NameId::NONE,
        }
    }
    /// Rows with collective arguments, in row order.
    pub fn comm_rows(&self) -> impl Iterator<Item = (usize, NameId)> + '_ {
        self.comm.iter().map(|&(row, id)| (row as usize, id))
    }
    /// Appends another table's rows column by column, renaming names and shifting inputs.
    /// Appends another table's rows, renaming their names and inputs.
    pub fn extend_from(
        &mut self,
        o: GpuActivities,
        name: impl Fn(NameId) -> NameId,
        input: impl Fn(u32) -> u32,
    ) {
        let base = self.name.len() as u32;
        self.comm
            .extend(o.comm.into_iter().map(|(row, id)| (base + row, name(id))));
        self.kind.extend(o.kind);
        self.name.extend(o.name.into_iter().map(&name));
        self.input.extend(o.input.into_iter().map(input));
        self.device.extend(o.device);
        self.stream.extend(o.stream);
        self.ts_ns.extend(o.ts_ns);
        self.dur_ns.extend(o.dur_ns);
        self.correlation.append(o.correlation);
        self.external_id.append(o.external_id);
        self.workgroups.extend(o.workgroups);
    }
    /// Gives back the columns' spare capacity once reading is done.
    pub fn shrink_to_fit(&mut self) {
        self.kind.shrink_to_fit();
        self.name.shrink_to_fit();
        self.input.shrink_to_fit();
        self.device.shrink_to_fit();
        self.stream.shrink_to_fit();
        self.ts_ns.shrink_to_fit();
        self.dur_ns.shrink_to_fit();
        self.correlation.shrink_to_fit();
        self.external_id.shrink_to_fit();
        self.workgroups.shrink_to_fit();
        self.comm.shrink_to_fit();
    }
    /// End of row `i` (`ts + dur`).
    pub fn end_ns(&self, i: usize) -> i64 {
        self.ts_ns[i].saturating_add(self.dur_ns[i])
    }
    /// Row `i` as one value (the inverse of [`GpuActivities::push`]).
    pub fn row(&self, i: usize) -> Activity {
        Activity {
            kind: self.kind[i],
            name: self.name[i],
            input: self.input[i],
            device: self.device[i],
            stream: self.stream[i],
            ts_ns: self.ts_ns[i],
            dur_ns: self.dur_ns[i],
            correlation: self.correlation.get(i),
            external_id: self.external_id.get(i),
            workgroups: self.workgroups[i],
            comm: self.comm(i),
        }
    }
}

/// What kind of host-side event a row of [`HostEvents`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostKind {
    /// A runtime API call (`cudaLaunchKernel`, `hipMemcpyAsync`, …; Kineto `cuda_runtime`).
    Runtime,
    /// A driver API call (`cuLaunchKernel`; Kineto `cuda_driver`).
    Driver,
    /// A framework operator (`aten::mm`, `Torch-Compiled Region: 0/1`, …; Kineto `cpu_op`).
    CpuOp,
    /// A `record_function` range (`ProfilerStep#3`, user annotations).
    Annotation,
    /// A Python frame (`with_stack=True`: `model.py(42): forward`, `nn.Module: Block_0`).
    Python,
}

/// The caching allocator's state after each GPU allocation or free (Kineto's `[memory]`
/// instant events, `profile_memory=True`), as a struct of arrays. Host timestamps: the
/// allocation happens when the op runs on the host, before its kernels.
#[derive(Default, Debug, Clone)]
pub struct MemoryEvents {
    pub input: Vec<u32>,
    pub device: Vec<u32>,
    pub ts_ns: Vec<i64>,
    /// `Total Allocated` and `Total Reserved` on the device after the event, in bytes.
    pub allocated: Vec<i64>,
    pub reserved: Vec<i64>,
}

impl MemoryEvents {
    pub fn push(&mut self, input: u32, device: u32, ts_ns: i64, allocated: i64, reserved: i64) {
        self.input.push(input);
        self.device.push(device);
        self.ts_ns.push(ts_ns);
        self.allocated.push(allocated);
        self.reserved.push(reserved);
    }
    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ts_ns.is_empty()
    }
    /// Appends another table's rows, renumbering their inputs.
    pub fn extend_from(&mut self, o: MemoryEvents, input: impl Fn(u32) -> u32) {
        self.input.extend(o.input.into_iter().map(input));
        self.device.extend(o.device);
        self.ts_ns.extend(o.ts_ns);
        self.allocated.extend(o.allocated);
        self.reserved.extend(o.reserved);
    }
}

/// Host events as a struct of arrays (see [`GpuActivities`]).
#[derive(Default, Debug, Clone)]
pub struct HostEvents {
    pub kind: Vec<HostKind>,
    pub name: Vec<NameId>,
    pub input: Vec<u32>,
    /// Index into `threads`: each event's host process and thread, stored once per thread.
    pub thread: Vec<u32>,
    /// The distinct (pid, tid) pairs; strings in old traces are mapped to numbers by the reader.
    pub threads: Vec<(u64, u64)>,
    thread_ids: rustc_hash::FxHashMap<(u64, u64), u32>,
    pub ts_ns: Vec<i64>,
    pub dur_ns: Vec<i64>,
    /// Correlation id of a runtime/driver call (0 when absent). (No host `External id`: the
    /// ops own their kernels by time nesting on their thread, and launches by correlation.)
    pub correlation: Ids,
    /// Per event: 1 + its index in `op_args`, or 0 without any (only cpu_ops of traces
    /// recorded with `record_shapes` have them).
    op_args_of: Vec<u32>,
    /// The distinct recorded inputs, each once: a model runs the same ops on the same shapes
    /// every step, so a few thousand serve millions of events.
    op_args: Vec<OpArgs>,
    op_args_ids: rustc_hash::FxHashMap<OpArgs, u32>,
}

/// A cpu_op's inputs as the profiler records them (`record_shapes=True`), each raw JSON
/// interned; [`NameId::NONE`] when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpArgs {
    /// `Input Dims`.
    pub input_dims: NameId,
    /// `Input type` (`["c10::BFloat16", …]`).
    pub input_types: NameId,
    /// `Concrete Inputs` (scalars: strides, `is_causal`, …).
    pub concrete_inputs: NameId,
    /// `Input Strides` of a GEMM cpu_op (element strides per input).
    pub input_strides: NameId,
    /// The interned [`comms::CommArgs`] of a `record_param_comms` op.
    pub comm: NameId,
    /// The interned [`inductor::InductorArgs`] of a Triton kernel's launcher op.
    pub inductor: NameId,
}

impl OpArgs {
    pub const NONE: OpArgs = OpArgs {
        input_dims: NameId::NONE,
        input_types: NameId::NONE,
        concrete_inputs: NameId::NONE,
        input_strides: NameId::NONE,
        comm: NameId::NONE,
        inductor: NameId::NONE,
    };
}

/// One host event, as readers hand it to [`HostEvents::push`].
#[derive(Debug, Clone, Copy)]
pub struct HostEvent {
    pub kind: HostKind,
    pub name: NameId,
    pub input: u32,
    pub pid: u64,
    pub tid: u64,
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub correlation: u64,
    pub input_dims: NameId,
    pub input_types: NameId,
    pub concrete_inputs: NameId,
    pub input_strides: NameId,
    /// The interned [`comms::CommArgs`] of a `record_param_comms` op ([`NameId::NONE`]: none).
    pub comm: NameId,
    /// The interned [`inductor::InductorArgs`] of a Triton launcher op ([`NameId::NONE`]: none).
    pub inductor: NameId,
}

impl HostEvents {
    /// Drops the host events whose times cannot be real ([`MAX_HOST_EVENT_NS`],
    /// [`MAX_TS_NS`]); returns how many, per input.
    pub fn drop_implausible(&mut self) -> std::collections::BTreeMap<u32, u64> {
        let (keep, dropped) = plausible(&self.ts_ns, &self.dur_ns, &self.input, MAX_HOST_EVENT_NS);
        if !dropped.is_empty() {
            retain_by(&mut self.kind, &keep);
            retain_by(&mut self.name, &keep);
            retain_by(&mut self.input, &keep);
            retain_by(&mut self.thread, &keep);
            retain_by(&mut self.ts_ns, &keep);
            retain_by(&mut self.dur_ns, &keep);
            self.correlation.retain_by(&keep);
            retain_by(&mut self.op_args_of, &keep);
        }
        dropped
    }
    pub fn len(&self) -> usize {
        self.name.len()
    }
    /// The recorded inputs of event `i` (all [`NameId::NONE`] without any).
    pub fn op_args(&self, i: usize) -> OpArgs {
        match self.op_args_of[i] {
            0 => OpArgs::NONE,
            k => self.op_args[k as usize - 1],
        }
    }
    /// `Input Dims` of event `i`.
    pub fn input_dims(&self, i: usize) -> NameId {
        self.op_args(i).input_dims
    }
    /// `Input type` of event `i`.
    pub fn input_types(&self, i: usize) -> NameId {
        self.op_args(i).input_types
    }
    /// `Concrete Inputs` of event `i`.
    pub fn concrete_inputs(&self, i: usize) -> NameId {
        self.op_args(i).concrete_inputs
    }
    /// `Input Strides` of event `i`.
    pub fn input_strides(&self, i: usize) -> NameId {
        self.op_args(i).input_strides
    }
    /// Whether any event has recorded input shapes.
    pub fn has_input_dims(&self) -> bool {
        self.op_args.iter().any(|a| a.input_dims != NameId::NONE)
    }
    /// Gives back the columns' spare capacity once reading is done.
    pub fn shrink_to_fit(&mut self) {
        self.kind.shrink_to_fit();
        self.name.shrink_to_fit();
        self.input.shrink_to_fit();
        self.thread.shrink_to_fit();
        self.ts_ns.shrink_to_fit();
        self.dur_ns.shrink_to_fit();
        self.correlation.shrink_to_fit();
        self.op_args_of.shrink_to_fit();
        self.op_args.shrink_to_fit();
    }
    /// When event `i` ends.
    pub fn end_ns(&self, i: usize) -> i64 {
        self.ts_ns[i].saturating_add(self.dur_ns[i])
    }
    /// The process of event `i`.
    pub fn pid(&self, i: usize) -> u64 {
        self.threads[self.thread[i] as usize].0
    }
    /// The thread of event `i`.
    pub fn tid(&self, i: usize) -> u64 {
        self.threads[self.thread[i] as usize].1
    }
    /// The index of a (pid, tid) pair in `threads`, added when new.
    fn thread_of(&mut self, key: (u64, u64)) -> u32 {
        if let Some(&t) = self.thread_ids.get(&key) {
            return t;
        }
        let t = self.threads.len() as u32;
        self.threads.push(key);
        self.thread_ids.insert(key, t);
        t
    }
    /// Appends another table's rows column by column, renaming names and inputs.
    pub fn extend_from(
        &mut self,
        o: HostEvents,
        name: impl Fn(NameId) -> NameId,
        input: impl Fn(u32) -> u32,
    ) {
        self.kind.extend(o.kind);
        self.name.extend(o.name.into_iter().map(&name));
        self.input.extend(o.input.into_iter().map(input));
        let threads: Vec<u32> = o.threads.iter().map(|&t| self.thread_of(t)).collect();
        self.thread
            .extend(o.thread.into_iter().map(|t| threads[t as usize]));
        self.ts_ns.extend(o.ts_ns);
        self.dur_ns.extend(o.dur_ns);
        self.correlation.append(o.correlation);
        let args: Vec<u32> = o
            .op_args
            .iter()
            .map(|a| {
                self.args_id(OpArgs {
                    input_dims: name(a.input_dims),
                    input_types: name(a.input_types),
                    concrete_inputs: name(a.concrete_inputs),
                    input_strides: name(a.input_strides),
                    comm: name(a.comm),
                    inductor: name(a.inductor),
                })
            })
            .collect();
        self.op_args_of.extend(o.op_args_of.into_iter().map(|k| {
            if k == 0 {
                0
            } else {
                args[k as usize - 1]
            }
        }));
    }
    /// 1 + the index of `args` in `op_args`, added when new.
    fn args_id(&mut self, args: OpArgs) -> u32 {
        if let Some(&k) = self.op_args_ids.get(&args) {
            return k;
        }
        self.op_args.push(args);
        let k = self.op_args.len() as u32;
        self.op_args_ids.insert(args, k);
        k
    }
    /// Row `i` as one value (the inverse of [`HostEvents::push`]).
    pub fn row(&self, i: usize) -> HostEvent {
        HostEvent {
            kind: self.kind[i],
            name: self.name[i],
            input: self.input[i],
            pid: self.pid(i),
            tid: self.tid(i),
            ts_ns: self.ts_ns[i],
            dur_ns: self.dur_ns[i],
            correlation: self.correlation.get(i),
            input_dims: self.input_dims(i),
            input_types: self.input_types(i),
            concrete_inputs: self.concrete_inputs(i),
            input_strides: self.input_strides(i),
            comm: self.op_args(i).comm,
            inductor: self.op_args(i).inductor,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.name.is_empty()
    }
    /// Grows every column by half when full (not the doubling of `Vec::push`): at most a third
    /// of a column is spare capacity while reading, instead of half.
    fn grow(&mut self) {
        let len = self.name.len();
        if len < self.name.capacity() {
            return;
        }
        let more = (len / 2).max(1024);
        self.kind.reserve_exact(more);
        self.name.reserve_exact(more);
        self.input.reserve_exact(more);
        self.thread.reserve_exact(more);
        self.ts_ns.reserve_exact(more);
        self.dur_ns.reserve_exact(more);
        self.correlation.reserve_exact(more);
        self.op_args_of.reserve_exact(more);
    }
    pub fn push(&mut self, e: HostEvent) {
        self.grow();
        self.kind.push(e.kind);
        self.name.push(e.name);
        self.input.push(e.input);
        let thread = self.thread_of((e.pid, e.tid));
        self.thread.push(thread);
        self.ts_ns.push(e.ts_ns);
        self.dur_ns.push(e.dur_ns);
        self.correlation.push(e.correlation);
        let args = OpArgs {
            input_dims: e.input_dims,
            input_types: e.input_types,
            concrete_inputs: e.concrete_inputs,
            input_strides: e.input_strides,
            comm: e.comm,
            inductor: e.inductor,
        };
        let args = if args == OpArgs::NONE {
            0
        } else {
            self.args_id(args)
        };
        self.op_args_of.push(args);
    }
}

/// Input formats, named as in the feed's `inputs[].format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Format {
    #[serde(rename = "kineto")]
    Kineto,
    #[serde(rename = "rocprof-v1")]
    RocprofV1,
    #[serde(rename = "rocprofv2-csv")]
    RocprofV2Csv,
    #[serde(rename = "rocprofv3-csv")]
    RocprofV3Csv,
    #[serde(rename = "rocprofv3-json")]
    RocprofV3Json,
    #[serde(rename = "rocpd")]
    Rocpd,
    #[serde(rename = "rocprof-compute")]
    RocprofCompute,
    #[serde(rename = "torch-logs")]
    TorchLogs,
    #[serde(rename = "torch-trace")]
    TorchTrace,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Kineto => "kineto",
            Format::RocprofV1 => "rocprof-v1",
            Format::RocprofV2Csv => "rocprofv2-csv",
            Format::RocprofV3Csv => "rocprofv3-csv",
            Format::RocprofV3Json => "rocprofv3-json",
            Format::Rocpd => "rocpd",
            Format::RocprofCompute => "rocprof-compute",
            Format::TorchLogs => "torch-logs",
            Format::TorchTrace => "torch-trace",
        }
    }
}

/// GPU vendor of an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Vendor {
    Amd,
    Nvidia,
    #[default]
    Unknown,
}

impl Vendor {
    pub fn as_str(self) -> &'static str {
        match self {
            Vendor::Amd => "amd",
            Vendor::Nvidia => "nvidia",
            Vendor::Unknown => "unknown",
        }
    }
}

/// The architecture of an AMD Instinct GPU by its marketing name.
pub fn arch_of_amd_name(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_uppercase();
    if n.contains("MI35") {
        Some("gfx950")
    } else if n.contains("MI30") || n.contains("MI325") {
        Some("gfx942")
    } else if n.contains("MI250") || n.contains("MI210") {
        Some("gfx90a")
    } else if n.contains("MI100") {
        Some("gfx908")
    } else {
        None
    }
}

/// A GPU the input describes or uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    pub id: u32,
    /// Marketing name from the trace's device properties (empty when the trace has none).
    pub name: String,
    /// The architecture: `gfx942` (MI300), `gfx950` (MI350), `gfx90a` (MI200), `sm_90` (H100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// Compute units (AMD) or streaming multiprocessors (NVIDIA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_units: Option<u32>,
    /// Its memory in bytes (`totalGlobalMem` of the trace's device properties).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

impl Device {
    /// A device known by its name; a name that is an architecture (`gfx942`, as rocprof's agents
    /// name them) is its arch too.
    pub fn named(id: u32, name: String) -> Device {
        let arch = if name.starts_with("gfx") {
            Some(name.split(':').next().unwrap_or(&name).to_string())
        } else {
            arch_of_amd_name(&name).map(str::to_string)
        };
        Device {
            id,
            name,
            arch,
            compute_units: None,
            memory_bytes: None,
        }
    }

    /// How reports name it: its marketing name, or its architecture and size where the name
    /// says nothing (empty, or older ROCm's generic "AMD Radeon Graphics").
    pub fn label(&self) -> String {
        let generic = self.name.is_empty() || self.name == "AMD Radeon Graphics";
        match (&self.arch, generic) {
            (Some(arch), true) => match self.compute_units {
                Some(cu) => format!("{arch}, {cu} CUs"),
                None => arch.clone(),
            },
            _ => self.name.clone(),
        }
    }
}

/// One input: a file, or one rank of a file that holds several ranks.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InputMeta {
    pub path: String,
    pub format: Format,
    pub vendor: Vendor,
    /// Devices with GPU activity in this input (ascending id).
    pub devices: Vec<Device>,
    pub rank: Option<u32>,
    pub truncated: bool,
    pub warnings: Vec<String>,
    /// The GPU's shape and peaks, where the input describes them (rocprof-compute `sysinfo.csv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<DeviceSpec>,
    /// Wall-clock time (ns since the Unix epoch) of timestamp 0, when the input says
    /// (Kineto `baseTimeNanoseconds`): places the trace on the clock of torch.compile's logs.
    #[serde(skip)]
    pub base_time_ns: Option<i64>,
    /// The job the rank belongs to, where the input says (Kineto `distributedInfo`): what its
    /// ranks share, which tells one run's ranks from another's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed: Option<Distributed>,
}

/// What a rank's trace says of its job (Kineto `distributedInfo`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Distributed {
    /// The process group backend (`nccl`, `gloo`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_size: Option<u32>,
    /// Number of process groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_groups: Option<u32>,
    /// The NCCL/RCCL version the job ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_version: Option<String>,
    /// The default process group's `pg_config` entry (`pg_name` "0"), which every rank of a job
    /// writes alike (a rank's other groups are the ones it belongs to, which differ by rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_group: Option<ProcessGroup>,
}

/// One entry of Kineto's `distributedInfo.pg_config`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProcessGroup {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desc: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_config: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
    /// Its ranks as written (`[0, 1, 2, 3]`; long lists may be cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<String>,
}

/// A file of an input directory that no reader recognized (a config, a note), left out.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// The normalized trace every analysis reads.
#[derive(Default, Debug, Clone)]
pub struct Trace {
    pub names: Interner,
    pub activities: GpuActivities,
    pub host: HostEvents,
    pub inputs: Vec<InputMeta>,
    /// Hardware counters of profiled dispatches (rocprof-compute); empty for timeline traces.
    pub counters: Vec<DispatchCounters>,
    /// The allocator's state over time (Kineto with `profile_memory=True`; empty otherwise).
    pub memory: MemoryEvents,
    /// Files of input directories that are not traces, left out of `inputs`.
    pub skipped: Vec<SkippedFile>,
}

impl Trace {
    /// Appends another trace's inputs after this one's, re-interning its names: reading files
    /// separately and appending them in order gives the same trace as reading them in sequence.
    pub fn append(&mut self, other: Trace) {
        if self.inputs.is_empty() && self.names.len() <= 1 && self.skipped.is_empty() {
            *self = other;
            return;
        }
        self.skipped.extend(other.skipped);
        let names = other.names.renamed_into(&mut self.names);
        let name = |id: NameId| names[id.index()];
        let offset = self.inputs.len() as u32;
        self.inputs.extend(other.inputs);
        self.activities
            .extend_from(other.activities, name, |i| i + offset);
        self.host.extend_from(other.host, name, |i| i + offset);
        self.memory.extend_from(other.memory, |i| i + offset);
        for c in other.counters {
            self.counters.push(DispatchCounters {
                input: c.input + offset,
                name: name(c.name),
                ..c
            });
        }
    }

    /// The rows of some inputs only, renumbered from 0 in the order given (names are shared).
    pub fn subset(&self, inputs: &[u32]) -> Trace {
        let map = |i: u32| inputs.iter().position(|&x| x == i).map(|p| p as u32);
        let mut out = Trace {
            names: self.names.clone(),
            inputs: inputs
                .iter()
                .map(|&i| self.inputs[i as usize].clone())
                .collect(),
            ..Default::default()
        };
        for k in 0..self.activities.len() {
            let mut r = self.activities.row(k);
            if let Some(input) = map(r.input) {
                r.input = input;
                out.activities.push(r);
            }
        }
        for k in 0..self.host.len() {
            let mut r = self.host.row(k);
            if let Some(input) = map(r.input) {
                r.input = input;
                out.host.push(r);
            }
        }
        for c in &self.counters {
            if let Some(input) = map(c.input) {
                out.counters.push(DispatchCounters { input, ..c.clone() });
            }
        }
        let m = &self.memory;
        for k in 0..m.len() {
            if let Some(input) = map(m.input[k]) {
                out.memory.push(
                    input,
                    m.device[k],
                    m.ts_ns[k],
                    m.allocated[k],
                    m.reserved[k],
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Ids;

    #[test]
    fn ids_keep_wide_values_through_append_and_retain() {
        let values = [0u64, 9, (1 << 31) - 1, 1 << 31, u64::MAX, 7];
        let mut a = Ids::default();
        for v in values {
            a.push(v);
        }
        assert_eq!(a.iter().collect::<Vec<_>>(), values);
        let mut b = Ids::default();
        b.push(1 << 40);
        b.push(3);
        a.append(b);
        assert_eq!(a.get(6), 1 << 40);
        assert_eq!(a.get(7), 3);
        a.retain_by(&[true, false, false, true, true, false, true, true]);
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            [0, 1 << 31, u64::MAX, 1 << 40, 3]
        );
    }
}
