//! Host events (cpu_ops, runtime and driver calls, annotations, Python frames) as a struct of
//! arrays, with the cpu_ops' recorded inputs, and the caching allocator's memory events.

use crate::model::columns::{plausible, retain_by, SparseIds, MAX_HOST_EVENT_NS};
use crate::model::intern::NameId;
use serde::Serialize;

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
    /// Index into `Trace::inputs`.
    pub input: Vec<u32>,
    /// The GPU whose memory it is (Kineto `Device Id`).
    pub device: Vec<u32>,
    /// Host time of the allocation or free on the trace's clock, in ns.
    pub ts_ns: Vec<i64>,
    /// `Total Allocated` and `Total Reserved` on the device after the event, in bytes.
    pub allocated: Vec<i64>,
    /// `Total Reserved`: what the allocator holds on the device after the event, in bytes.
    pub reserved: Vec<i64>,
}

impl MemoryEvents {
    /// Appends one event as the last row (sizes in bytes).
    pub fn push(&mut self, input: u32, device: u32, ts_ns: i64, allocated: i64, reserved: i64) {
        self.input.push(input);
        self.device.push(device);
        self.ts_ns.push(ts_ns);
        self.allocated.push(allocated);
        self.reserved.push(reserved);
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }
    /// Whether it has no rows.
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

/// Host events as a struct of arrays (see `GpuActivities`).
#[derive(Default, Debug, Clone)]
pub struct HostEvents {
    /// What each row is.
    pub kind: Vec<HostKind>,
    /// Event name (`aten::mm`, `hipLaunchKernel`, …), interned.
    pub name: Vec<NameId>,
    /// Index into `Trace::inputs`.
    pub input: super::columns::Runs,
    /// Index into `threads`: each event's host process and thread, stored once per thread.
    pub thread: Vec<u32>,
    /// The distinct (pid, tid) pairs; strings in old traces are mapped to numbers by the reader.
    pub threads: Vec<(u64, u64)>,
    thread_ids: rustc_hash::FxHashMap<(u64, u64), u32>,
    /// The last pair looked up and its index: events come thread by thread, most of them
    /// on the thread of the one before.
    last_thread: Option<((u64, u64), u32)>,
    /// Start on the trace's clock, in ns.
    pub ts_ns: Vec<i64>,
    /// Duration, in ns.
    pub dur_ns: super::columns::Durations,
    /// Correlation id of a runtime/driver call (0 when absent). (No host `External id`: the
    /// ops own their kernels by time nesting on their thread, and launches by correlation.)
    pub correlation: SparseIds,
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
    /// The interned `comms::CommArgs` of a `record_param_comms` op.
    pub comm: NameId,
    /// The interned `inductor::InductorArgs` of a Triton kernel's launcher op.
    pub inductor: NameId,
}

impl OpArgs {
    /// No recorded inputs: every field [`NameId::NONE`].
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
    /// What it is.
    pub kind: HostKind,
    /// Its name, interned.
    pub name: NameId,
    /// Index into `Trace::inputs`.
    pub input: u32,
    /// Host process id.
    pub pid: u64,
    /// Host thread id.
    pub tid: u64,
    /// Start on the trace's clock, in ns.
    pub ts_ns: i64,
    /// Duration, in ns.
    pub dur_ns: i64,
    /// Correlation id of a runtime/driver call; 0 when absent.
    pub correlation: u64,
    /// `Input Dims` as raw JSON, interned ([`NameId::NONE`]: none).
    pub input_dims: NameId,
    /// `Input type` as raw JSON, interned ([`NameId::NONE`]: none).
    pub input_types: NameId,
    /// `Concrete Inputs` as raw JSON, interned ([`NameId::NONE`]: none).
    pub concrete_inputs: NameId,
    /// `Input Strides` as raw JSON, interned ([`NameId::NONE`]: none).
    pub input_strides: NameId,
    /// The interned `comms::CommArgs` of a `record_param_comms` op ([`NameId::NONE`]: none).
    pub comm: NameId,
    /// The interned `inductor::InductorArgs` of a Triton launcher op ([`NameId::NONE`]: none).
    pub inductor: NameId,
}

impl HostEvents {
    /// Drops the host events whose times cannot be real ([`MAX_HOST_EVENT_NS`],
    /// `MAX_TS_NS`); returns how many, per input.
    pub fn drop_implausible(&mut self) -> std::collections::BTreeMap<u32, u64> {
        let (keep, dropped) = plausible(
            &self.ts_ns,
            self.dur_ns.iter(),
            &self.input,
            MAX_HOST_EVENT_NS,
        );
        if !dropped.is_empty() {
            retain_by(&mut self.kind, &keep);
            retain_by(&mut self.name, &keep);
            self.input.retain_by(&keep);
            retain_by(&mut self.thread, &keep);
            retain_by(&mut self.ts_ns, &keep);
            self.dur_ns.retain_by(&keep);
            self.correlation.retain_by(&keep);
            retain_by(&mut self.op_args_of, &keep);
        }
        dropped
    }
    /// Number of rows.
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
        self.ts_ns[i].saturating_add(self.dur_ns.get(i))
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
        match self.last_thread {
            Some((last, t)) if last == key => return t,
            _ => {}
        }
        let t = match self.thread_ids.get(&key) {
            Some(&t) => t,
            None => {
                let t = self.threads.len() as u32;
                self.threads.push(key);
                self.thread_ids.insert(key, t);
                t
            }
        };
        self.last_thread = Some((key, t));
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
        self.input.append(o.input, input);
        let threads: Vec<u32> = o.threads.iter().map(|&t| self.thread_of(t)).collect();
        self.thread
            .extend(o.thread.into_iter().map(|t| threads[t as usize]));
        self.ts_ns.extend(o.ts_ns);
        self.dur_ns.append(o.dur_ns);
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
            dur_ns: self.dur_ns.get(i),
            correlation: self.correlation.get(i),
            input_dims: self.input_dims(i),
            input_types: self.input_types(i),
            concrete_inputs: self.concrete_inputs(i),
            input_strides: self.input_strides(i),
            comm: self.op_args(i).comm,
            inductor: self.op_args(i).inductor,
        }
    }
    /// Whether it has no rows.
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
        self.thread.reserve_exact(more);
        self.ts_ns.reserve_exact(more);
        self.dur_ns.reserve_exact(more);
        self.op_args_of.reserve_exact(more);
    }
    /// Appends one event as the last row, its recorded inputs stored once per distinct set.
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
