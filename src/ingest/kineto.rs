//! PyTorch profiler (Kineto) Chrome traces, from CUDA (CUPTI) and ROCm (roctracer) builds, 2021
//! to now. See <https://pytorch.org/docs/stable/profiler.html> and `reference/formats.md` §1.
//!
//! The file is streamed (`json_stream::scan_parallel`):
//! each window of it is cut into pieces at likely event boundaries, and every piece is parsed on
//! a worker thread with serde into borrowed skeletons (only the fields we use; serde skips the
//! rest, and finds each event's end in the same pass) and then into a `Chunk` of columns with
//! names, ranks and string ids of its own. The chunks are appended in file order, renumbered as
//! if read one event at a time, so the table is the same for any thread count and piece size.
//!
//! **Why serde_json and not simd-json.** simd-json parses whole documents only, so it needs the
//! scanner to find each event's end first; serde_json finds it while parsing (a streaming
//! deserializer over the rest of the window). On the parallel path, `cargo bench --bench
//! hot_paths -- "pieces|parse|scan"` (the 41k events of
//! `fixtures/kineto/h100/eager_launch_bound.json.gz`, criterion medians of one run, 2 cores,
//! 2026-11-26):
//!
//! | walk over the events | one thread | pool (2 threads) |
//! |---|---|---|
//! | serde_json, ends found while parsing (the reader) | 32.9 ms | 20.3 ms |
//! | scanner, then simd-json's tape per event (buffers reused per thread) | 44.0 ms | 26.3 ms |
//!
//! Apart, in the same run: the scan alone 13.5 ms, serde_json per scanned event 38.4 ms,
//! simd-json's tape per scanned event 29.8 ms. simd-json's tape parses faster, but the scan it
//! needs costs more than it saves; and it parses every number to `f64`, while Kineto's
//! timestamps are microseconds with nanosecond decimals (`1712867402367756.123` has 19 digits;
//! `f64` keeps 16): the table's integer nanoseconds would be off by up to hundreds of ns on
//! epoch-based traces. serde_json hands over the number's text (`RawValue`), which
//! `micros_to_ns` converts exactly. (An earlier run, one thread on scanned events: serde_json
//! 14.5 ms, simd-json serde mode 16.5 ms, tape per event 12.3 ms, tape per batch of 10k events
//! 23.0 ms.)

use super::json_stream::{PieceInput, PieceParser, PieceSink, ScanError};
use super::num::{micros_to_ns, to_u64, trailing_u64, unquote};
use super::{ReadOptions, Reader, Source};
use crate::error::IngestError;
use crate::model::comms::CommArgs;
use crate::model::inductor::InductorArgs;
use crate::model::{
    Activity, ActivityKind, Device, Format, GpuActivities, GpuSync, GpuSyncs, HostEvent,
    HostEvents, HostKind, InputMeta, Interner, MemoryEvents, NameId, SyncKind, Trace, Vendor,
};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// The Kineto reader.
pub struct KinetoReader;

impl Reader for KinetoReader {
    fn format(&self) -> Format {
        Format::Kineto
    }

    fn looks_for(&self) -> &'static str {
        "a JSON object with a \"traceEvents\" array of Kineto events"
    }
    fn sniff(&self, head: &[u8]) -> Option<bool> {
        let start = head
            .iter()
            .position(|b| !b.is_ascii_whitespace() && *b != 0xEF && *b != 0xBB && *b != 0xBF)?;
        if !matches!(head[start], b'{' | b'[') {
            return Some(false);
        }
        if looks_like_rocprof_v1_json(head)
            || memchr::memmem::find(head, b"\"rocprofiler-sdk-tool\"").is_some()
        {
            return Some(false);
        }
        let has = |s: &[u8]| memchr::memmem::find(head, s).is_some();
        if has(b"\"traceEvents\"") || (head[start] == b'[' && has(b"\"ph\"")) {
            return Some(true);
        }
        // A small JSON document without events is not a trace; a big one may have them later.
        if head.len() < super::SNIFF_BYTES {
            Some(false)
        } else {
            None
        }
    }

    fn read(&self, src: Source, trace: &mut Trace, opts: &ReadOptions) -> Result<(), IngestError> {
        let label = src.label.clone();
        let unit = src.offset_unit();
        let head_error = src.head_error.clone();
        let mut sink = KinetoSink::new(trace, label.clone());
        let parser = KinetoParser {
            skip_python_frames: opts.skip_python_frames,
        };
        let scanned = opts.scan_pieces(src.into_reader(), &parser, &mut sink);
        let outcome = match scanned {
            Ok(o) => o,
            Err(ScanError::Syntax { offset, message }) => {
                return Err(IngestError::Json {
                    path: label,
                    offset,
                    message: format!("{message}{}", unit_note(unit)),
                })
            }
            Err(ScanError::Io { offset, source }) => {
                return Err(IngestError::Io {
                    path: label,
                    offset,
                    source,
                })
            }
        };
        if !outcome.saw_events && outcome.truncated {
            // Cut before its events: a damaged trace, not a stray JSON file.
            return Err(IngestError::Json {
                path: label,
                offset: outcome.bytes,
                message: format!(
                    "the file ends before any \"traceEvents\"{}",
                    unit_note(unit)
                ),
            });
        }
        // A JSON array none of whose elements is an event (no "ph"), such as a metrics log, is
        // not a trace either.
        if !outcome.saw_events || (outcome.events > 0 && sink.without_ph == outcome.events) {
            return Err(IngestError::NoEvents {
                path: label,
                bytes: outcome.bytes,
            });
        }
        let mut warnings = Vec::new();
        let truncated = outcome.truncated;
        if truncated {
            if opts.strict {
                return Err(IngestError::Truncated {
                    path: label,
                    offset: outcome.bytes,
                    events: outcome.events,
                });
            }
            let cause = outcome
                .truncation_cause
                .or(head_error)
                .map(|c| format!(" ({c})"))
                .unwrap_or_default();
            warnings.push(format!(
                "truncated: the trace ends at byte {}{} inside the document{cause}; analyzed the {} complete events before it",
                outcome.bytes, unit, outcome.events
            ));
        }
        sink.finish(truncated, warnings);
        Ok(())
    }
}

fn unit_note(unit: &str) -> String {
    if unit.is_empty() {
        String::new()
    } else {
        format!(" (offset{unit})")
    }
}

/// rocprof v1 `results.json` is also a Chrome trace with `traceEvents`, but written by roctracer:
/// an empty first event, `BeginNs` args, `CPU HIP API` / `GPU0` process names, string timestamps.
pub fn looks_like_rocprof_v1_json(head: &[u8]) -> bool {
    let compact: Vec<u8> = head
        .iter()
        .take(256)
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let has = |s: &[u8]| memchr::memmem::find(head, s).is_some();
    memchr::memmem::find(&compact, b"\"traceEvents\":[{}").is_some()
        || has(b"\"BeginNs\"")
        || (has(b"\"CPU HIP API\"") && !has(b"\"cat\""))
}

/// The event fields we read; serde skips the rest without allocating.
#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(borrow, default)]
    ph: Option<Text<'a>>,
    #[serde(borrow, default)]
    cat: Option<Text<'a>>,
    #[serde(borrow, default)]
    name: Option<Text<'a>>,
    #[serde(borrow, default)]
    pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args: Option<RawArgs<'a>>,
}

/// A string borrowed from the input unless it has escapes. serde borrows a `Cow<str>` field
/// only when it is not inside an `Option`: this newtype puts the borrow back (one allocation
/// per string and three per event otherwise).
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// The `args` fields we read, in the same serde pass as the event.
#[derive(Deserialize, Default)]
struct RawArgs<'a> {
    #[serde(rename = "External id", borrow, default)]
    external_id: Option<&'a RawValue>,
    /// 2021 traces spell it in lower case.
    #[serde(rename = "external id", borrow, default)]
    external_id_old: Option<&'a RawValue>,
    #[serde(borrow, default)]
    correlation: Option<&'a RawValue>,
    #[serde(borrow, default)]
    device: Option<&'a RawValue>,
    #[serde(borrow, default)]
    stream: Option<&'a RawValue>,
    /// A kernel's grid, `[x, y, z]`: in workgroups (thread blocks), except for kernels
    /// `hipExtModuleLaunchKernel` launched (Tensile, hipBLASLt), where it is in work-items.
    #[serde(borrow, default)]
    grid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    block: Option<&'a RawValue>,
    #[serde(rename = "Input Dims", borrow, default)]
    input_dims: Option<&'a RawValue>,
    #[serde(rename = "Input type", borrow, default)]
    input_types: Option<&'a RawValue>,
    #[serde(rename = "Concrete Inputs", borrow, default)]
    concrete_inputs: Option<&'a RawValue>,
    #[serde(rename = "Input Strides", borrow, default)]
    input_strides: Option<&'a RawValue>,
    /// Set per event by TraceLens when it merges ranks into one file.
    #[serde(borrow, default)]
    rank: Option<&'a RawValue>,
    /// `with_stack` frames, innermost first: tells a 2021 `record_function` range from an op.
    #[serde(rename = "Call stack", borrow, default)]
    call_stack: Option<&'a RawValue>,
    /// A collective's arguments, on `record_param_comms` and (since late 2023) on the NCCL/RCCL
    /// kernel it launched (see [`crate::model::comms`]).
    /// Raw values, not strings: a number or list under these common keys must not make the
    /// event unreadable.
    #[serde(rename = "Collective name", borrow, default)]
    collective: Option<&'a RawValue>,
    #[serde(rename = "In msg nelems", borrow, default)]
    in_nelems: Option<&'a RawValue>,
    #[serde(rename = "Out msg nelems", borrow, default)]
    out_nelems: Option<&'a RawValue>,
    /// Before December 2023 the element counts were called sizes.
    #[serde(rename = "In msg size", borrow, default)]
    in_nelems_old: Option<&'a RawValue>,
    #[serde(rename = "Out msg size", borrow, default)]
    out_nelems_old: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dtype: Option<&'a RawValue>,
    #[serde(rename = "Group size", borrow, default)]
    group_size: Option<&'a RawValue>,
    #[serde(rename = "Process Group Name", borrow, default)]
    pg_name: Option<&'a RawValue>,
    #[serde(rename = "Process Group Description", borrow, default)]
    pg_desc: Option<&'a RawValue>,
    #[serde(rename = "Process Group Ranks", borrow, default)]
    pg_ranks: Option<&'a RawValue>,
    #[serde(rename = "Seq", borrow, default)]
    seq: Option<&'a RawValue>,
    #[serde(rename = "In split size", borrow, default)]
    in_splits: Option<&'a RawValue>,
    #[serde(rename = "Out split size", borrow, default)]
    out_splits: Option<&'a RawValue>,
    /// A send's and a receive's peer, as its rank in the process group.
    #[serde(rename = "Dst Rank", borrow, default)]
    dst_rank: Option<&'a RawValue>,
    #[serde(rename = "Src Rank", borrow, default)]
    src_rank: Option<&'a RawValue>,
    /// A `[memory]` event's allocator state (`profile_memory=True`).
    #[serde(rename = "Total Allocated", borrow, default)]
    total_allocated: Option<&'a RawValue>,
    #[serde(rename = "Total Reserved", borrow, default)]
    total_reserved: Option<&'a RawValue>,
    #[serde(rename = "Device Id", borrow, default)]
    device_id: Option<&'a RawValue>,
    /// c10's DeviceType: 0 the host, 1 CUDA, 6 HIP.
    #[serde(rename = "Device Type", borrow, default)]
    device_type: Option<&'a RawValue>,
    /// Inductor's, on a Triton kernel's launcher cpu_op (see [`InductorArgs`]).
    #[serde(borrow, default)]
    kernel_file: Option<&'a RawValue>,
    #[serde(borrow, default)]
    kernel_num_gb: Option<&'a RawValue>,
    #[serde(borrow, default)]
    kernel_flop: Option<&'a RawValue>,
    /// A `cuda_sync` stream wait's other stream (-1 in torch 2.11: not recorded).
    #[serde(borrow, default)]
    wait_on_stream: Option<&'a RawValue>,
    /// A `cuda_sync` stream wait's `cudaEventRecord` correlation (-1: not recorded).
    #[serde(borrow, default)]
    wait_on_cuda_event_record_corr_id: Option<&'a RawValue>,
}

impl RawArgs<'_> {
    /// The interned form of the collective's arguments, when the event has them.
    /// Inductor's launcher arguments, when the event has any.
    fn inductor(&self) -> Option<String> {
        if self.kernel_file.is_none() && self.kernel_num_gb.is_none() {
            return None;
        }
        let num = |r: Option<&RawValue>| {
            r.and_then(|r| r.get().trim_matches('"').trim().parse::<f64>().ok())
        };
        Some(
            InductorArgs {
                file: self
                    .kernel_file
                    .and_then(|r| serde_json::from_str::<String>(r.get()).ok()),
                num_gb: num(self.kernel_num_gb),
                flop: num(self.kernel_flop),
            }
            .encode(),
        )
    }

    fn comm(&self) -> Option<String> {
        // A string value without its quotes, a number or list as written.
        let text = |r: Option<&RawValue>| {
            r.map(|r| {
                let v = r.get();
                serde_json::from_str::<String>(v).unwrap_or_else(|_| v.to_string())
            })
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty() && v != "null")
        };
        let collective = text(self.collective)?;
        let num = |r: Option<&RawValue>| r.and_then(|r| to_u64(r.get().trim_matches('"')));
        Some(
            CommArgs {
                collective,
                in_nelems: num(self.in_nelems).or_else(|| num(self.in_nelems_old)),
                out_nelems: num(self.out_nelems).or_else(|| num(self.out_nelems_old)),
                dtype: text(self.dtype),
                group_size: num(self.group_size).and_then(|g| u32::try_from(g).ok()),
                process_group: text(self.pg_name),
                process_group_desc: text(self.pg_desc),
                process_group_ranks: text(self.pg_ranks),
                seq: num(self.seq),
                // Even splits are written `[]`: nothing to keep.
                in_splits: text(self.in_splits).filter(|s| s != "[]"),
                out_splits: text(self.out_splits).filter(|s| s != "[]"),
                peer: num(self.dst_rank)
                    .or_else(|| num(self.src_rank))
                    .and_then(|p| u32::try_from(p).ok()),
            }
            .encode(),
        )
    }
}

const NO_PH: &str = "event without \"ph\"";

/// What one event became.
enum Parsed<'a> {
    Gpu(GpuRow<'a>),
    Host(HostRow<'a>),
    /// A `[memory]` instant event of a GPU: (device, ts, allocated, reserved, rank).
    Memory(u32, i64, i64, i64, Option<u32>),
    /// A `cuda_sync` record, and the rank it names.
    Sync(GpuSync, Option<u32>),
    /// Not an event we keep (flows, metadata, python functions, …).
    Skip,
    /// An event we would keep but cannot read; `at` is its offset inside the batch buffer.
    Bad {
        at: usize,
        why: String,
    },
}

struct GpuRow<'a> {
    kind: ActivityKind,
    name: Cow<'a, str>,
    device: u32,
    stream: u32,
    ts_ns: i64,
    dur_ns: i64,
    correlation: u64,
    external_id: u64,
    workgroups: u32,
    /// Work-items per workgroup.
    block: u32,
    rank: Option<u32>,
    /// A collective kernel's arguments ([`CommArgs::encode`]).
    comm: Option<String>,
}

struct HostRow<'a> {
    kind: HostKind,
    name: Cow<'a, str>,
    pid: Id<'a>,
    tid: Id<'a>,
    ts_ns: i64,
    dur_ns: i64,
    correlation: u64,
    input_dims: Option<&'a str>,
    input_types: Option<&'a str>,
    concrete_inputs: Option<&'a str>,
    input_strides: Option<&'a str>,
    rank: Option<u32>,
    /// A `record_param_comms` op's collective arguments ([`CommArgs::encode`]).
    comm: Option<String>,
    /// A Triton launcher op's Inductor arguments ([`InductorArgs::encode`]).
    inductor: Option<String>,
}

/// A pid/tid: numeric, or a string (`"Spans"`, `"stream 7"`, `"25738"`).
enum Id<'a> {
    Num(u64),
    Text(&'a str),
}

enum Category {
    Gpu(ActivityKind),
    Host(HostKind),
    /// A `cuda_sync` record (stream waits and host synchronizes, as the GPU saw them).
    Sync,
    Skip,
}

/// Maps a category, current or 2021 spelling, case-insensitively.
fn category(cat: &str) -> Category {
    let is = |s: &str| cat.eq_ignore_ascii_case(s);
    if is("kernel") {
        Category::Gpu(ActivityKind::Kernel)
    } else if is("gpu_memcpy") || is("memcpy") {
        Category::Gpu(ActivityKind::Memcpy)
    } else if is("gpu_memset") || is("memset") {
        Category::Gpu(ActivityKind::Memset)
    } else if is("cuda_runtime") || is("runtime") {
        Category::Host(HostKind::Runtime)
    } else if is("cuda_driver") {
        Category::Host(HostKind::Driver)
    } else if is("cpu_op") || is("operator") {
        Category::Host(HostKind::CpuOp)
    } else if is("user_annotation") {
        Category::Host(HostKind::Annotation)
    } else if is("python_function") {
        Category::Host(HostKind::Python)
    } else if is("cuda_sync") {
        Category::Sync
    } else {
        Category::Skip
    }
}

/// In torch 1.8/1.9 traces every `record_function` range is an `Operator` event like the ops:
/// PyTorch's own ranges carry a `#` (`ProfilerStep#5`, `enumerate(DataLoader)#…`,
/// `Optimizer.step#SGD.step`), and with `with_stack` any range's innermost frame is
/// `record_function.__enter__` in `autograd/profiler.py`. Ops (`aten::add_`, `AddmmBackward`,
/// `torch::autograd::AccumulateGrad`) have neither.
fn is_record_function_range(name: &str, call_stack: Option<&str>) -> bool {
    if name.contains('#') {
        return true;
    }
    call_stack.is_some_and(|raw| {
        let innermost = unquote(raw).split(';').next().unwrap_or("");
        innermost.contains("profiler.py(") && innermost.trim_end().ends_with("__enter__")
    })
}

fn id_of(raw: Option<&RawValue>) -> Id<'_> {
    match raw {
        None => Id::Num(0),
        Some(r) => {
            let s = r.get();
            match to_u64(s) {
                Some(v) if !s.starts_with('"') => Id::Num(v),
                _ => Id::Text(unquote(s)),
            }
        }
    }
}

/// Parses one event. `text` is the same bytes when the caller already knows them to be UTF-8:
/// serde_json then skips validating every string again (a sixth of the parse).
fn parse_event<'a>(bytes: &'a [u8], text: Option<&'a str>, at: usize) -> Parsed<'a> {
    let parsed = match text {
        Some(t) => serde_json::from_str(t),
        None => serde_json::from_slice(bytes),
    };
    match parsed {
        Ok(ev) => interpret(ev, at),
        Err(e) => Parsed::Bad {
            at: at + offset_in(bytes, &e),
            why: e.to_string(),
        },
    }
}

/// Parses the event that starts at `s` and finds its end in the same pass (the scanner's own
/// pass over it would cost a sixth of the read). An element serde cannot read is measured by
/// the scanner and parsed alone, so its error and offset are those of [`parse_event`].
fn parse_element<'a>(input: &PieceInput<'a>, s: usize) -> Option<(usize, Parsed<'a>)> {
    if let Some(text) = input.text_from(s) {
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<RawEvent<'a>>();
        if let Some(Ok(ev)) = stream.next() {
            return Some((s + stream.byte_offset(), interpret(ev, s)));
        }
    }
    let e = input.value_end(s)?;
    Some((e, parse_event(&input.buf[s..e], input.text_of(s, e), s)))
}

/// What a parsed event becomes; `at` is its offset, for the reasons it may be unreadable.
fn interpret<'a>(ev: RawEvent<'a>, at: usize) -> Parsed<'a> {
    match ev.ph.as_ref().map(|t| t.0.as_ref()) {
        Some("X") => {}
        Some("i" | "I") if ev.name.as_ref().is_some_and(|n| n.0 == "[memory]") => {
            return memory_event(&ev);
        }
        Some(_) => return Parsed::Skip,
        None => {
            return Parsed::Bad {
                at,
                why: NO_PH.into(),
            }
        }
    }
    let cat = match ev.cat.as_ref().map(|t| category(&t.0)) {
        Some(c @ (Category::Gpu(_) | Category::Host(_))) => c,
        Some(Category::Sync) => return sync_event(&ev),
        _ => return Parsed::Skip,
    };
    let is_old_operator = ev
        .cat
        .as_ref()
        .is_some_and(|c| c.0.eq_ignore_ascii_case("operator"));
    let Some(ts_ns) = ev.ts.and_then(|r| micros_to_ns(r.get())) else {
        return Parsed::Bad {
            at,
            why: match ev.ts {
                None => "missing \"ts\"".into(),
                Some(r) => format!(
                    "\"ts\" is not a time in µs within range: {}",
                    r.get().chars().take(40).collect::<String>()
                ),
            },
        };
    };
    let dur_ns = match ev.dur.map(|r| micros_to_ns(r.get())) {
        Some(Some(d)) if d >= 0 => d,
        Some(Some(_)) => {
            return Parsed::Bad {
                at,
                why: "negative \"dur\"".into(),
            }
        }
        Some(None) => {
            return Parsed::Bad {
                at,
                why: "\"dur\" is not a time in µs within range".into(),
            }
        }
        None => {
            return Parsed::Bad {
                at,
                why: "complete event without \"dur\"".into(),
            }
        }
    };
    let args = ev.args.unwrap_or_default();
    let num = |r: Option<&RawValue>| r.and_then(|r| to_u64(r.get()));
    let external_id = num(args.external_id)
        .or_else(|| num(args.external_id_old))
        .unwrap_or(0);
    let correlation = num(args.correlation).unwrap_or(0);
    let rank = num(args.rank).map(|r| r as u32);
    // A nameless event keeps its time under a name that says so.
    let name = ev.name.map_or(Cow::Borrowed("(unnamed)"), |t| t.0);
    match cat {
        Category::Gpu(kind) => {
            let device = num(args.device)
                .or_else(|| ev.pid.and_then(|p| trailing_u64(p.get())))
                .unwrap_or(0) as u32;
            let stream = num(args.stream)
                .or_else(|| ev.tid.and_then(|t| trailing_u64(t.get())))
                .unwrap_or(0) as u32;
            Parsed::Gpu(GpuRow {
                kind,
                name,
                device,
                stream,
                ts_ns,
                dur_ns,
                correlation,
                external_id,
                workgroups: args.grid.map_or(0, |g| workgroups(g.get())),
                block: args.block.map_or(0, |b| workgroups(b.get())),
                rank,
                comm: args.comm(),
            })
        }
        Category::Host(kind) => Parsed::Host(HostRow {
            kind: if is_old_operator
                && is_record_function_range(&name, args.call_stack.map(|r| r.get()))
            {
                HostKind::Annotation
            } else {
                kind
            },
            name,
            pid: id_of(ev.pid),
            tid: id_of(ev.tid),
            ts_ns,
            dur_ns,
            correlation,
            input_dims: args.input_dims.map(|r| r.get()),
            input_types: args.input_types.map(|r| r.get()),
            concrete_inputs: args.concrete_inputs.map(|r| r.get()),
            input_strides: args.input_strides.map(|r| r.get()),
            rank,
            comm: args.comm(),
            inductor: args.inductor(),
        }),
        Category::Skip | Category::Sync => Parsed::Skip,
    }
}

/// A `cuda_sync` record; one without a kind we know, a stream or a correlation is skipped (it
/// only refines what the runtime calls say).
fn sync_event<'a>(ev: &RawEvent<'a>) -> Parsed<'a> {
    let Some(args) = ev.args.as_ref() else {
        return Parsed::Skip;
    };
    let num = |r: Option<&RawValue>| r.and_then(|r| to_u64(r.get()));
    let Some(kind) = ev.name.as_ref().and_then(|n| SyncKind::of_name(&n.0)) else {
        return Parsed::Skip;
    };
    let (Some(stream), Some(correlation)) = (num(args.stream), num(args.correlation)) else {
        return Parsed::Skip;
    };
    // torch 2.11 writes -1 where it did not record the other side.
    let known = |r: Option<&RawValue>| {
        r.filter(|r| !r.get().trim().trim_matches('"').starts_with('-'))
            .and_then(|r| to_u64(r.get()))
    };
    Parsed::Sync(
        GpuSync {
            kind,
            input: 0,
            device: num(args.device).unwrap_or(0) as u32,
            stream: stream as u32,
            wait_on_stream: known(args.wait_on_stream).map(|s| s as u32),
            correlation,
            record_correlation: known(args.wait_on_cuda_event_record_corr_id).unwrap_or(0),
        },
        num(args.rank).map(|r| r as u32),
    )
}

/// A `[memory]` event of a GPU allocation or free; host memory (`Device Type` 0) and events
/// without the allocator's totals (2021's, with `Bytes` alone) are skipped.
fn memory_event<'a>(ev: &RawEvent<'a>) -> Parsed<'a> {
    let Some(args) = ev.args.as_ref() else {
        return Parsed::Skip;
    };
    let int = |r: Option<&RawValue>| r.and_then(|r| r.get().trim().parse::<i64>().ok());
    let (Some(allocated), Some(reserved), Some(ts_ns)) = (
        int(args.total_allocated),
        int(args.total_reserved),
        ev.ts.and_then(|r| micros_to_ns(r.get())),
    ) else {
        return Parsed::Skip;
    };
    match (int(args.device_type), int(args.device_id)) {
        // c10's DeviceType: 1 CUDA, 6 HIP (ROCm builds), 0 the host.
        (Some(t), Some(device)) if t != 0 && device >= 0 => Parsed::Memory(
            device as u32,
            ts_ns,
            allocated,
            reserved,
            args.rank.and_then(|r| to_u64(r.get())).map(|r| r as u32),
        ),
        _ => Parsed::Skip,
    }
}

/// Launch calls whose kernels' `grid` Kineto writes in work-items (HIP's `globalWorkSize`), not
/// workgroups: a Tensile MT16x16 GEMM kernel of 8 µs shows `grid [61440,1,1]`, `block [256,1,1]`
/// (240 workgroups; 61440 of them would be beyond the device's peak).
fn grid_in_work_items(call: &str) -> bool {
    call == "hipExtModuleLaunchKernel" || call == "hipHccModuleLaunchKernel"
}

/// The product of a grid or block `[x, y, z]` (0 when it is not 1 to 3 numbers; saturating).
fn workgroups(raw: &str) -> u32 {
    let dims: Vec<u64> = raw
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .filter_map(|d| d.trim().parse::<u64>().ok())
        .collect();
    if dims.is_empty() || dims.len() > 3 {
        return 0;
    }
    let n = dims.iter().fold(1u64, |acc, &d| acc.saturating_mul(d));
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// What identifies a GPU activity of a Kineto trace in the model: (ts, dur, device, stream,
/// correlation), as the reader computes them. Writers that copy the file again (Perfetto)
/// join its events to the analyzed activities with it.
pub type ActivityKey = (i64, i64, u32, u32, u64);

/// The [`ActivityKey`] of one raw event, when the reader would make it a GPU activity.
pub fn activity_key(raw: &[u8]) -> Option<ActivityKey> {
    match parse_event(raw, None, 0) {
        Parsed::Gpu(g) => Some((g.ts_ns, g.dur_ns, g.device, g.stream, g.correlation)),
        _ => None,
    }
}

/// The parser of one batch's events: one UTF-8 check for the whole batch instead of one per
/// string (a batch with invalid UTF-8 is parsed event by event, so the bad event is named).
fn batch_parser<'a>(
    buf: &'a [u8],
    ranges: &[(usize, usize)],
) -> impl Fn(&(usize, usize)) -> Parsed<'a> + Sync {
    let from = ranges.first().map_or(0, |r| r.0);
    let to = ranges.last().map_or(0, |r| r.1);
    let text = std::str::from_utf8(&buf[from..to]).ok();
    move |&(s, e)| {
        let t = text.and_then(|t| t.get(s - from..e - from));
        parse_event(&buf[s..e], t, s)
    }
}

/// Parses events as the reader does, on one thread, and counts the (GPU, host, skipped or bad)
/// rows: the parser benchmark's view of the hot path. Not a stable API.
#[doc(hidden)]
pub fn parse_batch_for_bench(buf: &[u8], ranges: &[(usize, usize)]) -> [usize; 3] {
    let mut counts = [0; 3];
    let one = batch_parser(buf, ranges);
    for range in ranges {
        let i = match std::hint::black_box(one(range)) {
            Parsed::Gpu(_) => 0,
            Parsed::Host(_) | Parsed::Memory(..) | Parsed::Sync(..) => 1,
            Parsed::Skip | Parsed::Bad { .. } => 2,
        };
        counts[i] += 1;
    }
    counts
}

/// The reader's parse of the element at `s`, on its own: its end, and whether it is a row
/// (GPU or host). The parser benchmark's view of the hot path; not a stable API.
#[doc(hidden)]
pub fn element_for_bench(input: &PieceInput<'_>, s: usize) -> Option<(usize, bool)> {
    let (e, parsed) = parse_element(input, s)?;
    Some((e, matches!(parsed, Parsed::Gpu(_) | Parsed::Host(_))))
}

/// Byte offset of a serde_json error inside `bytes` (serde reports line and column).
fn offset_in(bytes: &[u8], e: &serde_json::Error) -> usize {
    let (line, col) = (e.line(), e.column());
    if line == 0 {
        return 0;
    }
    let mut off = 0;
    for _ in 1..line {
        match memchr::memchr(b'\n', &bytes[off..]) {
            Some(p) => off += p + 1,
            None => break,
        }
    }
    (off + col.saturating_sub(1)).min(bytes.len())
}

/// String pids/tids are numbered from here up (above any real id), in order of appearance.
const TEXT_ID: u64 = 1 << 62;

/// What a piece of a file's events became, on a worker thread: columns with names, inputs
/// (ranks) and string ids numbered by the piece itself, appended to the trace in file order by
/// [`KinetoSink::append`], which renumbers them: the table is the same for any piece size.
#[derive(Default)]
struct Chunk {
    names: Interner,
    activities: GpuActivities,
    host: HostEvents,
    memory: MemoryEvents,
    syncs: GpuSyncs,
    /// The rank of each of the chunk's inputs, in order of appearance (`None`: the file's own).
    ranks: Vec<Option<u32>>,
    /// Devices used, per chunk input.
    devices_used: BTreeMap<u32, BTreeSet<u32>>,
    hip_calls: u64,
    cuda_calls: u64,
    bad_events: u64,
    /// Of those, elements with no "ph" at all.
    without_ph: u64,
    first_bad: Option<(u64, String)>,
    /// String pids/tids in order of appearance: the chunk's `TEXT_ID + index`.
    texts: Vec<String>,
    text_index: HashMap<String, u64>,
    /// Per activity: its block size (see `grid_in_work_items`).
    blocks: Vec<u32>,
    /// (chunk input, correlation) of the launches that give the grid in work-items.
    work_item_grids: HashSet<(u32, u64)>,
}

impl Chunk {
    fn input_for(&mut self, rank: Option<u32>) -> u32 {
        match self.ranks.iter().position(|&r| r == rank) {
            Some(i) => i as u32,
            None => {
                self.ranks.push(rank);
                self.ranks.len() as u32 - 1
            }
        }
    }

    fn id_number(&mut self, id: Id<'_>) -> u64 {
        match id {
            Id::Num(n) => n,
            Id::Text(s) => {
                if let Some(n) = trailing_u64(s).filter(|_| s.bytes().all(|b| b.is_ascii_digit())) {
                    return n;
                }
                if let Some(&n) = self.text_index.get(s) {
                    return n;
                }
                let n = TEXT_ID + self.texts.len() as u64;
                self.texts.push(s.to_string());
                self.text_index.insert(s.to_string(), n);
                n
            }
        }
    }

    fn push(&mut self, p: Parsed<'_>, base: u64, skip_python_frames: bool) {
        match p {
            Parsed::Skip => {}
            Parsed::Bad { at, why } => {
                self.bad_events += 1;
                self.without_ph += u64::from(why == NO_PH);
                if self.first_bad.is_none() {
                    self.first_bad = Some((base + at as u64, why));
                }
            }
            Parsed::Memory(device, ts_ns, allocated, reserved, rank) => {
                let input = self.input_for(rank);
                self.memory.push(input, device, ts_ns, allocated, reserved);
            }
            Parsed::Sync(sync, rank) => {
                let input = self.input_for(rank);
                self.syncs.push(GpuSync { input, ..sync });
            }
            Parsed::Gpu(g) => {
                let input = self.input_for(g.rank);
                let name = self.names.intern(&g.name);
                self.devices_used.entry(input).or_default().insert(g.device);
                self.blocks.push(g.block);
                self.activities.push(Activity {
                    kind: g.kind,
                    name,
                    input,
                    device: g.device,
                    stream: g.stream,
                    ts_ns: g.ts_ns,
                    dur_ns: g.dur_ns,
                    correlation: g.correlation,
                    external_id: g.external_id,
                    workgroups: g.workgroups,
                    comm: g.comm.map_or(NameId::NONE, |c| self.names.intern(&c)),
                });
            }
            Parsed::Host(h) => {
                let input = self.input_for(h.rank);
                if skip_python_frames && h.kind == HostKind::Python {
                    return;
                }
                if matches!(h.kind, HostKind::Runtime | HostKind::Driver) {
                    if grid_in_work_items(&h.name) && h.correlation != 0 {
                        self.work_item_grids.insert((input, h.correlation));
                    }
                    if h.name.starts_with("hip") {
                        self.hip_calls += 1;
                    } else if h.name.starts_with("cu") {
                        self.cuda_calls += 1;
                    }
                }
                let name = self.names.intern(&h.name);
                let mut intern = |s: Option<&str>| s.map_or(NameId::NONE, |d| self.names.intern(d));
                let input_dims = intern(h.input_dims);
                let input_types = intern(h.input_types);
                let concrete_inputs = intern(h.concrete_inputs);
                let input_strides = intern(
                    h.input_strides
                        .filter(|_| crate::model::ops::keeps_input_strides(&h.name)),
                );
                let comm = intern(h.comm.as_deref());
                let inductor = intern(h.inductor.as_deref());
                let pid = self.id_number(h.pid);
                let tid = self.id_number(h.tid);
                self.host.push(HostEvent {
                    kind: h.kind,
                    name,
                    input,
                    pid,
                    tid,
                    ts_ns: h.ts_ns,
                    dur_ns: h.dur_ns,
                    correlation: h.correlation,
                    input_dims,
                    input_types,
                    concrete_inputs,
                    input_strides,
                    comm,
                    inductor,
                });
            }
        }
    }
}

/// Parses pieces of a Kineto file into [`Chunk`]s, on any thread.
struct KinetoParser {
    /// Leave out `python_function` events (no frame view will read them).
    skip_python_frames: bool,
}

impl PieceParser for KinetoParser {
    type Piece = Chunk;
    fn element(&self, chunk: &mut Chunk, input: &PieceInput<'_>, s: usize) -> Option<usize> {
        let (e, parsed) = parse_element(input, s)?;
        chunk.push(parsed, input.base, self.skip_python_frames);
        Some(e)
    }
}

/// Per-file state while streaming.
struct KinetoSink<'t> {
    trace: &'t mut Trace,
    label: String,
    /// Input index per rank given by events (`args.rank`); `None` = the file's own rank.
    inputs: BTreeMap<Option<u32>, u32>,
    devices_used: BTreeMap<u32, BTreeSet<u32>>,
    /// The devices the trace describes, by id (their ids are replaced by the activities').
    device_names: BTreeMap<u32, Device>,
    file_rank: Option<u32>,
    /// The file's `distributedInfo`: what the job's ranks share.
    distributed: Option<crate::model::Distributed>,
    base_time_ns: Option<i64>,
    vendor_hint: Vendor,
    hip_calls: u64,
    cuda_calls: u64,
    bad_events: u64,
    /// Of those, elements with no "ph" at all.
    without_ph: u64,
    first_bad: Option<(u64, String)>,
    /// String pids/tids get stable numbers: above any real id.
    text_ids: HashMap<String, u64>,
    /// Per activity of this file: its block size, while reading (see `grid_in_work_items`).
    blocks: Vec<u32>,
    /// (input, correlation) of the launches that give the grid in work-items.
    work_item_grids: HashSet<(u32, u64)>,
    /// The first activity this file added.
    first_activity: usize,
}

impl<'t> KinetoSink<'t> {
    fn new(trace: &'t mut Trace, label: String) -> Self {
        KinetoSink {
            trace,
            label,
            inputs: BTreeMap::new(),
            devices_used: BTreeMap::new(),
            device_names: BTreeMap::new(),
            file_rank: None,
            distributed: None,
            base_time_ns: None,
            vendor_hint: Vendor::Unknown,
            hip_calls: 0,
            cuda_calls: 0,
            bad_events: 0,
            without_ph: 0,
            first_bad: None,
            text_ids: HashMap::default(),
            blocks: Vec::new(),
            work_item_grids: Default::default(),
            first_activity: 0,
        }
    }

    fn input_for(&mut self, rank: Option<u32>) -> u32 {
        if let Some(&i) = self.inputs.get(&rank) {
            return i;
        }
        let i = self.trace.inputs.len() as u32;
        self.trace.inputs.push(InputMeta {
            path: self.label.clone(),
            format: Format::Kineto,
            vendor: Vendor::Unknown,
            devices: Vec::new(),
            rank,
            truncated: false,
            warnings: Vec::new(),
            hardware: None,
            base_time_ns: None,
            distributed: None,
        });
        self.inputs.insert(rank, i);
        i
    }

    fn text_id(&mut self, s: &str) -> u64 {
        let next = TEXT_ID + self.text_ids.len() as u64;
        *self.text_ids.entry(s.to_string()).or_insert(next)
    }

    /// Appends a chunk, renumbering its names, inputs and string ids as if its events had
    /// been read here one by one.
    fn append_chunk(&mut self, c: Chunk) {
        let names = c.names.renamed_into(&mut self.trace.names);
        let inputs: Vec<u32> = c.ranks.iter().map(|&r| self.input_for(r)).collect();
        let texts: Vec<u64> = c.texts.iter().map(|s| self.text_id(s)).collect();
        let text = |id: u64| match id.checked_sub(TEXT_ID) {
            Some(k) if (k as usize) < texts.len() => texts[k as usize],
            _ => id,
        };
        let mut host = c.host;
        for t in &mut host.threads {
            *t = (text(t.0), text(t.1));
        }
        let name = |id: NameId| names[id.index()];
        let input = |i: u32| inputs[i as usize];
        if self.blocks.is_empty() && !c.blocks.is_empty() {
            self.first_activity = self.trace.activities.len();
        }
        self.blocks.extend(c.blocks);
        self.trace.activities.extend_from(c.activities, name, input);
        self.trace.host.extend_from(host, name, input);
        self.trace.memory.extend_from(c.memory, input);
        self.trace.syncs.extend_from(c.syncs, input);
        for (i, devices) in c.devices_used {
            self.devices_used
                .entry(input(i))
                .or_default()
                .extend(devices);
        }
        self.work_item_grids.extend(
            c.work_item_grids
                .into_iter()
                .map(|(i, correlation)| (input(i), correlation)),
        );
        self.hip_calls += c.hip_calls;
        self.cuda_calls += c.cuda_calls;
        self.bad_events += c.bad_events;
        self.without_ph += c.without_ph;
        if self.first_bad.is_none() {
            self.first_bad = c.first_bad;
        }
    }

    fn finish(mut self, truncated: bool, mut warnings: Vec<String>) {
        if self.inputs.is_empty() {
            // A trace with no kept events (CPU-only, empty) still is an input.
            self.input_for(None);
        }
        if self.bad_events > 0 {
            let (at, why) = self.first_bad.take().unwrap_or_default();
            warnings.push(format!(
                "skipped {} unreadable events (first at byte {at}: {why})",
                self.bad_events
            ));
        }
        if !self.work_item_grids.is_empty() {
            let acts = &mut self.trace.activities;
            for (k, &block) in self.blocks.iter().enumerate() {
                let a = self.first_activity + k;
                if block > 0
                    && self
                        .work_item_grids
                        .contains(&(acts.input[a], acts.correlation.get(a)))
                {
                    acts.workgroups[a] = acts.workgroups[a].div_ceil(block);
                }
            }
        }
        let vendor = match self.vendor_hint {
            Vendor::Unknown if self.hip_calls > self.cuda_calls => Vendor::Amd,
            Vendor::Unknown if self.cuda_calls > self.hip_calls => Vendor::Nvidia,
            v => v,
        };
        // ROCm traces list the visible GPUs from 0 while kernels carry the physical agent id
        // (HIP_VISIBLE_DEVICES): with one listed device, an unlisted id is that device.
        let only_name = (self.device_names.len() == 1)
            .then(|| self.device_names.values().next().cloned())
            .flatten();
        for (&rank, &i) in &self.inputs {
            let meta = &mut self.trace.inputs[i as usize];
            meta.rank = rank.or(self.file_rank);
            meta.base_time_ns = self.base_time_ns;
            meta.distributed.clone_from(&self.distributed);
            meta.vendor = vendor;
            meta.truncated = truncated;
            meta.warnings = warnings.clone();
            meta.devices = self
                .devices_used
                .get(&i)
                .map(|ids| {
                    ids.iter()
                        .map(|&id| Device {
                            id,
                            ..self
                                .device_names
                                .get(&id)
                                .or(only_name.as_ref())
                                .cloned()
                                .unwrap_or_default()
                        })
                        .collect()
                })
                .unwrap_or_default();
        }
    }
}

#[derive(Deserialize)]
struct DeviceProps {
    #[serde(default)]
    id: Option<u32>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "warpSize")]
    warp_size: Option<u32>,
    #[serde(default, rename = "computeMajor")]
    compute_major: Option<u32>,
    #[serde(default, rename = "computeMinor")]
    compute_minor: Option<u32>,
    #[serde(default, rename = "numSms")]
    num_sms: Option<u32>,
    #[serde(default, rename = "gcnArchName")]
    gcn_arch_name: Option<String>,
    #[serde(default, rename = "totalGlobalMem")]
    total_global_mem: Option<u64>,
}

impl DeviceProps {
    /// The architecture: ROCm's `gcnArchName` when the trace has it, else from the compute
    /// capability (HIP reports gfx942 as 9.4, gfx950 as 9.5, gfx90a and gfx908 as 9.0, told
    /// apart by their 104/110 and 120 CUs); NVIDIA's `sm_XY`.
    fn arch(&self, amd: bool) -> Option<String> {
        if let Some(gcn) = &self.gcn_arch_name {
            return Some(gcn.split(':').next().unwrap_or(gcn).to_string());
        }
        if let Some(arch) = self
            .name
            .as_deref()
            .and_then(crate::model::arch_of_amd_name)
        {
            return Some(arch.to_string());
        }
        let (major, minor) = (self.compute_major?, self.compute_minor?);
        if !amd {
            return Some(format!("sm_{major}{minor}"));
        }
        match (major, minor) {
            (9, 4) => Some("gfx942".into()),
            (9, 5) => Some("gfx950".into()),
            (9, 0) if self.num_sms == Some(120) => Some("gfx908".into()),
            (9, 0) => Some("gfx90a".into()),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct DistributedInfo {
    #[serde(default)]
    rank: Option<serde_json::Value>,
    #[serde(default)]
    backend: Option<serde_json::Value>,
    #[serde(default)]
    world_size: Option<serde_json::Value>,
    #[serde(default)]
    pg_count: Option<serde_json::Value>,
    #[serde(default)]
    nccl_version: Option<serde_json::Value>,
    #[serde(default)]
    pg_config: Option<serde_json::Value>,
}

impl DistributedInfo {
    /// The default process group's entry of `pg_config` (`pg_name` "0").
    fn default_group(&self) -> Option<crate::model::ProcessGroup> {
        let groups = self.pg_config.as_ref()?.as_array()?;
        let g = groups.iter().find(|g| g["pg_name"].as_str() == Some("0"))?;
        let text = |k: &str| g[k].as_str().map(str::to_string);
        Some(crate::model::ProcessGroup {
            name: "0".into(),
            desc: text("pg_desc"),
            backend_config: text("backend_config"),
            size: g["pg_size"].as_u64().and_then(|n| u32::try_from(n).ok()),
            ranks: match &g["ranks"] {
                serde_json::Value::Null => None,
                serde_json::Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            },
        })
    }

    /// What the job's ranks share; values of another type than the profiler writes are left out.
    fn job(&self) -> Option<crate::model::Distributed> {
        let text = |v: &Option<serde_json::Value>| v.as_ref()?.as_str().map(str::to_string);
        let count = |v: &Option<serde_json::Value>| {
            v.as_ref()?.as_u64().and_then(|n| u32::try_from(n).ok())
        };
        let job = crate::model::Distributed {
            backend: text(&self.backend),
            world_size: count(&self.world_size),
            process_groups: count(&self.pg_count),
            nccl_version: text(&self.nccl_version),
            default_group: self.default_group(),
        };
        (job != crate::model::Distributed::default()).then_some(job)
    }
}

fn vendor_of_device_name(name: &str) -> Vendor {
    let n = name.to_ascii_lowercase();
    if n.contains("amd") || n.contains("instinct") || n.contains("radeon") {
        Vendor::Amd
    } else if n.contains("nvidia")
        || n.contains("tesla")
        || n.contains("geforce")
        || n.contains("quadro")
    {
        Vendor::Nvidia
    } else {
        Vendor::Unknown
    }
}

impl PieceSink<Chunk> for KinetoSink<'_> {
    fn append(&mut self, chunk: Chunk) -> Result<(), ScanError> {
        self.append_chunk(chunk);
        Ok(())
    }

    fn meta(&mut self, key: &str, value: &[u8], _offset: u64) -> Result<(), ScanError> {
        match key {
            "deviceProperties" | "computeProperties" => {
                if let Ok(props) = serde_json::from_slice::<Vec<DeviceProps>>(value) {
                    for (i, p) in props.into_iter().enumerate() {
                        let id = p.id.unwrap_or(i as u32);
                        let name = p.name.clone().unwrap_or_default();
                        let vendor = match vendor_of_device_name(&name) {
                            Vendor::Unknown if p.warp_size == Some(64) => Vendor::Amd,
                            v => v,
                        };
                        if self.vendor_hint == Vendor::Unknown {
                            self.vendor_hint = vendor;
                        }
                        let device = Device {
                            id,
                            name,
                            arch: p.arch(vendor == Vendor::Amd),
                            compute_units: p.num_sms,
                            memory_bytes: p.total_global_mem.filter(|&m| m > 0),
                        };
                        self.device_names.insert(id, device);
                    }
                }
            }
            "baseTimeNanoseconds" => {
                self.base_time_ns = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.trim().parse::<i64>().ok());
            }
            "roctracer_version" | "hip_runtime_version" | "hip_driver_version" => {
                self.vendor_hint = Vendor::Amd
            }
            "cupti_version" | "cuda_runtime_version" | "cuda_driver_version" => {
                self.vendor_hint = Vendor::Nvidia
            }
            "distributedInfo" => {
                if let Ok(info) = serde_json::from_slice::<DistributedInfo>(value) {
                    self.distributed = info.job();
                    self.file_rank = info
                        .rank
                        .and_then(|r| to_u64(&r.to_string()))
                        .map(|r| r as u32);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::{open, sniff};

    fn read_str(doc: &str) -> Result<Trace, IngestError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        std::fs::write(&p, doc).unwrap();
        let src = open(&p)?;
        let readers = crate::ingest::readers();
        let r = sniff(&src, &readers)?;
        let mut t = Trace::default();
        r.read(src, &mut t, &ReadOptions::default())?;
        Ok(t)
    }

    #[test]
    fn reads_current_kineto_events() {
        let t = read_str(
            r#"{"schemaVersion":1,"deviceProperties":[{"id":0,"name":"AMD Instinct MI300X","warpSize":64}],
            "traceEvents":[
             {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":8,"ts":100.5,"dur":10,"args":{"External id":3,"Input Dims":[[2,3],[3,4]]}},
             {"ph":"X","cat":"cuda_runtime","name":"hipExtModuleLaunchKernel","pid":7,"tid":8,"ts":101,"dur":2.25,"args":{"correlation":9,"External id":3}},
             {"ph":"X","cat":"kernel","name":"Cijk_Alik_Bljk_HHS_BH_MT128x128x32","pid":0,"tid":1,"ts":104.001,"dur":3.5,"args":{"External id":3,"device":0,"stream":1,"correlation":9}},
             {"ph":"s","id":9,"cat":"ac2g","name":"ac2g","pid":7,"tid":8,"ts":101},
             {"ph":"X","cat":"python_function","name":"f","pid":7,"tid":8,"ts":1,"dur":1}
            ],"distributedInfo":{"rank":3}}"#,
        )
        .unwrap();
        assert_eq!(t.activities.len(), 1);
        assert_eq!(t.activities.ts_ns[0], 104_001);
        assert_eq!(t.activities.dur_ns[0], 3_500);
        assert_eq!(t.activities.correlation.get(0), 9);
        assert_eq!(t.host.len(), 3);
        assert_eq!(t.host.kind[2], HostKind::Python);
        assert_eq!(t.names.get(t.host.input_dims(0)), "[[2,3],[3,4]]");
        assert_eq!(t.host.correlation.get(1), 9);
        let meta = &t.inputs[0];
        assert_eq!(
            (meta.vendor, meta.rank, meta.truncated),
            (Vendor::Amd, Some(3), false)
        );
        assert_eq!(
            meta.devices,
            vec![Device {
                id: 0,
                name: "AMD Instinct MI300X".into(),
                arch: Some("gfx942".into()),
                compute_units: None,
                memory_bytes: None,
            }]
        );
    }

    #[test]
    fn reads_2021_kineto_events() {
        let t = read_str(
            r#"{"schemaVersion":1,"traceEvents":[
             {"ph":"X","cat":"Operator","name":"aten::empty","pid":25738,"tid":"25738","ts":1623142623460111,"dur":25,"args":{"External id":2}},
             {"ph":"X","cat":"Runtime","name":"cudaLaunchKernel","pid":25738,"tid":"25738","ts":1623142623529088,"dur":20,"args":{"cbid":211,"correlation":34417,"external id":537}},
             {"ph":"X","cat":"Kernel","name":"volta_sgemm_64x64_nn","pid":0,"tid":"stream 7","ts":1623142623531625,"dur":2,"args":{"correlation":34417,"external id":537}},
             {"ph":"X","cat":"Memset","name":"Memset (Device)","pid":0,"tid":"stream 7","ts":1623142623579729,"dur":1,"args":{}}
            ]}"#,
        )
        .unwrap();
        assert_eq!(t.activities.len(), 2);
        assert_eq!(t.activities.stream[0], 7);
        assert_eq!(t.activities.external_id.get(0), 537);
        assert_eq!(t.activities.kind[1], ActivityKind::Memset);
        assert_eq!(t.host.tid(0), 25738);
        assert_eq!(t.inputs[0].vendor, Vendor::Nvidia);
    }

    #[test]
    fn record_function_ranges_of_2021_are_annotations() {
        let t = read_str(
            r#"{"traceEvents":[
             {"ph":"X","cat":"Operator","name":"ProfilerStep#5","pid":1,"tid":"1","ts":100,"dur":900,"args":{"Call stack":"a/torch/autograd/profiler.py(614): __enter__;b.py(54): <module>"}},
             {"ph":"X","cat":"Operator","name":"Optimizer.step#SGD.step","pid":1,"tid":"1","ts":200,"dur":100,"args":{}},
             {"ph":"X","cat":"Operator","name":"forward","pid":1,"tid":"1","ts":300,"dur":100,"args":{"Call stack":"x/torch/autograd/profiler.py(614): __enter__;train.py(9): <module>"}},
             {"ph":"X","cat":"Operator","name":"aten::add_","pid":1,"tid":"1","ts":310,"dur":10,"args":{"Call stack":"x/torch/nn/modules/module.py(1051): _call_impl;train.py(9): <module>"}},
             {"ph":"X","cat":"Operator","name":"AddmmBackward","pid":1,"tid":"2","ts":400,"dur":10,"args":{}},
             {"ph":"X","cat":"cpu_op","name":"odd#name","pid":1,"tid":"1","ts":500,"dur":10,"args":{}}
            ]}"#,
        )
        .unwrap();
        let kinds: Vec<HostKind> = t.host.kind.clone();
        use HostKind::{Annotation, CpuOp};
        // Ranges: PyTorch's own (a '#'), a user's (record_function's __enter__ frame); ops stay
        // ops, and today's cpu_op category is never reinterpreted.
        assert_eq!(
            kinds,
            [Annotation, Annotation, Annotation, CpuOp, CpuOp, CpuOp]
        );
    }

    #[test]
    fn per_event_ranks_split_one_file_into_inputs() {
        let t = read_str(
            r#"{"traceEvents":[
             {"ph":"X","cat":"kernel","name":"k","pid":2,"tid":4,"ts":1,"dur":1,"args":{"rank":0}},
             {"ph":"X","cat":"kernel","name":"k","pid":102,"tid":4,"ts":1,"dur":1,"args":{"rank":1}}]}"#,
        )
        .unwrap();
        assert_eq!(t.inputs.len(), 2);
        assert_eq!(
            t.inputs.iter().map(|m| m.rank).collect::<Vec<_>>(),
            vec![Some(0), Some(1)]
        );
    }

    #[test]
    fn invalid_utf8_spoils_one_event_not_its_batch() {
        // The batch-wide UTF-8 check fails; events are then parsed one by one and only the
        // event with the bad byte is lost, named by its offset.
        let mut doc = br#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"a","ts":1,"dur":1},
             {"ph":"X","cat":"kernel","name":"b?","ts":2,"dur":1},
             {"ph":"X","cat":"kernel","name":"c","ts":3,"dur":1}]}"#
            .to_vec();
        let at = doc.iter().position(|&b| b == b'?').unwrap();
        doc[at] = 0xff;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        std::fs::write(&p, &doc).unwrap();
        let src = open(&p).unwrap();
        let mut t = Trace::default();
        KinetoReader
            .read(src, &mut t, &ReadOptions::default())
            .unwrap();
        let names: Vec<&str> = (0..t.activities.len())
            .map(|i| t.names.get(t.activities.name[i]))
            .collect();
        assert_eq!(names, ["a", "c"]);
        let warning = &t.inputs[0].warnings[0];
        assert!(warning.contains("skipped 1 unreadable events"), "{warning}");
        let starts: Vec<usize> = (0..doc.len())
            .filter(|&i| doc[i..].starts_with(br#"{"ph""#))
            .collect();
        let byte: usize = warning
            .split("first at byte ")
            .nth(1)
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!((starts[1]..starts[2]).contains(&byte), "{warning}");
    }

    #[test]
    fn bad_events_are_counted_not_fatal() {
        let t = read_str(
            r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":"x","dur":1},
             {"ph":"X","cat":"kernel","name":"k","ts":5,"dur":1}]}"#,
        )
        .unwrap();
        assert_eq!(t.activities.len(), 1);
        assert!(
            t.inputs[0].warnings[0].contains("skipped 1 unreadable events"),
            "{:?}",
            t.inputs[0].warnings
        );
    }

    #[test]
    fn collective_arguments_are_read_from_kernels_and_ops_in_any_spelling() {
        use crate::model::comms::CommArgs;
        let t = read_str(
            r#"{"traceEvents":[
             {"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":1,"dur":9,"args":{"Collective name":"allreduce","In msg size":1024,"Out msg size":1024,"dtype":"Float","Process Group Name":"0","Process Group Ranks":"[0, 1]","Seq":7}},
             {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllGather_RING_LL","ts":5,"dur":1,"args":{"Collective name":"_allgather_base","In msg nelems":8,"Out msg nelems":16,"Group size":2,"dtype":"BFloat16"}},
             {"ph":"X","cat":"kernel","name":"odd","ts":6,"dur":1,"args":{"Collective name":5,"dtype":["x"]}},
             {"ph":"X","cat":"kernel","name":"plain","ts":7,"dur":1,"args":{"dtype":{"a":1}}}]}"#,
        )
        .unwrap();
        // Values of other types under these keys spoil nothing.
        assert_eq!(t.activities.len(), 3);
        assert!(
            t.inputs[0].warnings.is_empty(),
            "{:?}",
            t.inputs[0].warnings
        );
        let kernel = CommArgs::decode(t.names.get(t.activities.comm(0))).unwrap();
        assert_eq!(
            (
                kernel.collective.as_str(),
                kernel.in_nelems,
                kernel.out_nelems
            ),
            ("_allgather_base", Some(8), Some(16))
        );
        assert_eq!(
            (kernel.group_size, kernel.dtype.as_deref()),
            (Some(2), Some("BFloat16"))
        );
        assert_eq!(t.activities.comm(2), NameId::NONE);
        assert_eq!(
            CommArgs::decode(t.names.get(t.activities.comm(1)))
                .unwrap()
                .collective,
            "5"
        );
        // The 2023 spelling of the element counts, and the newest Seq, on the op.
        let op = CommArgs::decode(t.names.get(t.host.op_args(0).comm)).unwrap();
        assert_eq!(
            (op.in_nelems, op.seq, op.process_group_ranks.as_deref()),
            (Some(1024), Some(7), Some("[0, 1]"))
        );
    }

    #[test]
    fn rocprof_v1_json_is_not_kineto() {
        let head = br#"{ "traceEvents":[{}
,{"args":{"name":"CPU HIP API"},"ph":"M","pid":2,"name":"process_name","sort_index":0}"#;
        assert_eq!(KinetoReader.sniff(head), Some(false));
        assert!(looks_like_rocprof_v1_json(head));
        assert_eq!(
            KinetoReader.sniff(br#"{"traceEvents":[{"ph":"X"}]}"#),
            Some(true)
        );
        assert_eq!(KinetoReader.sniff(b"Index,KernelName"), Some(false));
    }

    #[test]
    fn grids_in_work_items_are_divided_by_the_block() {
        // hipExtModuleLaunchKernel (Tensile): grid in work-items; hipLaunchKernel: in blocks.
        let t = read_str(
            r#"{"traceEvents":[
             {"ph":"X","cat":"cuda_runtime","name":"hipExtModuleLaunchKernel","pid":7,"tid":8,"ts":100,"dur":2,"args":{"correlation":9}},
             {"ph":"X","cat":"kernel","name":"Cijk_Alik_Bljk_BBS_BH_MT16x16x512","pid":0,"tid":1,"ts":104,"dur":8,"args":{"device":0,"stream":1,"correlation":9,"grid":[61440,1,1],"block":[256,1,1]}},
             {"ph":"X","cat":"cuda_runtime","name":"hipLaunchKernel","pid":7,"tid":8,"ts":120,"dur":2,"args":{"correlation":10}},
             {"ph":"X","cat":"kernel","name":"vectorized_gather_kernel","pid":0,"tid":1,"ts":124,"dur":3,"args":{"device":0,"stream":1,"correlation":10,"grid":[77,2,1],"block":[512,1,1]}},
             {"ph":"X","cat":"kernel","name":"no_grid","pid":0,"tid":1,"ts":130,"dur":3,"args":{"device":0,"stream":1,"correlation":11}}
            ]}"#,
        )
        .unwrap();
        assert_eq!(t.activities.workgroups, vec![240, 154, 0]);
        assert_eq!(workgroups("[4294967296, 2, 1]"), u32::MAX);
        assert_eq!(workgroups("not a grid"), 0);
    }
}
