//! One Kineto event: its fields as written ([`RawEvent`], found by serde or by the
//! [`super::scan`] scanner) and what the event becomes ([`Parsed`]).

use super::super::json_stream::PieceInput;
use super::super::num::{micros_to_ns, to_u64, trailing_u64, unquote};
use super::raw::{Raw, RawEvent};
use crate::model::{ActivityKind, GpuSync, HostKind, SyncKind};
use std::borrow::Cow;

pub(super) const NO_PH: &str = "event without \"ph\"";

/// What one event became.
pub(super) enum Parsed<'a> {
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

pub(super) struct GpuRow<'a> {
    pub(super) kind: ActivityKind,
    pub(super) name: Cow<'a, str>,
    pub(super) device: u32,
    pub(super) stream: u32,
    pub(super) ts_ns: i64,
    pub(super) dur_ns: i64,
    pub(super) correlation: u64,
    pub(super) external_id: u64,
    pub(super) workgroups: u32,
    /// Work-items per workgroup.
    pub(super) block: u32,
    pub(super) rank: Option<u32>,
    /// A collective kernel's arguments ([`CommArgs::encode`]).
    pub(super) comm: Option<String>,
}

pub(super) struct HostRow<'a> {
    pub(super) kind: HostKind,
    pub(super) name: Cow<'a, str>,
    pub(super) pid: Id<'a>,
    pub(super) tid: Id<'a>,
    pub(super) ts_ns: i64,
    pub(super) dur_ns: i64,
    pub(super) correlation: u64,
    pub(super) input_dims: Option<&'a str>,
    pub(super) input_types: Option<&'a str>,
    pub(super) concrete_inputs: Option<&'a str>,
    pub(super) input_strides: Option<&'a str>,
    pub(super) rank: Option<u32>,
    /// A `record_param_comms` op's collective arguments ([`CommArgs::encode`]).
    pub(super) comm: Option<String>,
    /// A Triton launcher op's Inductor arguments ([`InductorArgs::encode`]).
    pub(super) inductor: Option<String>,
}

/// A pid/tid: numeric, or a string (`"Spans"`, `"stream 7"`, `"25738"`).
pub(super) enum Id<'a> {
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

fn id_of(raw: Option<Raw<'_>>) -> Id<'_> {
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
        Ok(ev) => interpret(&ev, at),
        Err(e) => Parsed::Bad {
            at: at + offset_in(bytes, &e),
            why: e.to_string(),
        },
    }
}

/// Which reads the events: the scanner (serde for the events it declines), or serde alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EventPath {
    Scanner,
    Serde,
}

/// Parses the event that starts at `s` and finds its end in the same pass (the scanner's own
/// pass over it would cost a sixth of the read). An element serde cannot read is measured by
/// the scanner and parsed alone, so its error and offset are those of [`parse_event`].
pub(super) fn parse_element<'a>(
    input: &PieceInput<'a>,
    s: usize,
    path: EventPath,
    seen: &mut super::seen::Seen,
) -> Option<(usize, Parsed<'a>)> {
    if let Some(text) = input.text_from(s) {
        if path == EventPath::Scanner {
            let mut ev = RawEvent::default();
            if let Some(e) = super::seen::scan_event(text, &mut ev, seen) {
                return Some((s + e, interpret(&ev, s)));
            }
        }
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<RawEvent<'a>>();
        if let Some(Ok(ev)) = stream.next() {
            return Some((s + stream.byte_offset(), interpret(&ev, s)));
        }
    }
    let e = input.value_end(s)?;
    Some((e, parse_event(&input.buf[s..e], input.text_of(s, e), s)))
}

/// What a parsed event becomes; `at` is its offset, for the reasons it may be unreadable.
fn interpret<'a>(ev: &RawEvent<'a>, at: usize) -> Parsed<'a> {
    match ev.ph.as_ref().map(|t| t.0.as_ref()) {
        Some("X") => {}
        Some("i" | "I") if ev.name.as_ref().is_some_and(|n| n.0 == "[memory]") => {
            return memory_event(ev);
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
        Some(Category::Sync) => return sync_event(ev),
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
    let args = &ev.args;
    let num = |r: Option<Raw<'_>>| r.and_then(|r| to_u64(r.get()));
    let external_id = num(args.external_id)
        .or_else(|| num(args.external_id_old))
        .unwrap_or(0);
    let correlation = num(args.correlation).unwrap_or(0);
    let rank = num(args.rank).map(|r| r as u32);
    // A nameless event keeps its time under a name that says so.
    let name = ev
        .name
        .as_ref()
        .map_or(Cow::Borrowed("(unnamed)"), |t| t.0.clone());
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
    let args = &ev.args;
    let num = |r: Option<Raw<'_>>| r.and_then(|r| to_u64(r.get()));
    let Some(kind) = ev.name.as_ref().and_then(|n| SyncKind::of_name(&n.0)) else {
        return Parsed::Skip;
    };
    let (Some(stream), Some(correlation)) = (num(args.stream), num(args.correlation)) else {
        return Parsed::Skip;
    };
    // torch 2.11 writes -1 where it did not record the other side.
    let known = |r: Option<Raw<'_>>| {
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
    let args = &ev.args;
    let int = |r: Option<Raw<'_>>| r.and_then(|r| r.get().trim().parse::<i64>().ok());
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
pub(super) fn grid_in_work_items(call: &str) -> bool {
    call == "hipExtModuleLaunchKernel" || call == "hipHccModuleLaunchKernel"
}

/// The product of a grid or block `[x, y, z]` (0 when it is not 1 to 3 numbers; saturating).
pub(super) fn workgroups(raw: &str) -> u32 {
    plain_workgroups(raw.as_bytes()).unwrap_or_else(|| listed_workgroups(raw))
}

/// [`workgroups`] of any form: the text split at its commas, each part that parses a dimension.
pub(super) fn listed_workgroups(raw: &str) -> u32 {
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

/// [`workgroups`] of a list as Kineto writes it (`[240, 1, 1]`: one to three runs of up to 19
/// digits, commas and spaces between them) without the splitting; None for anything else,
/// which the general path decides.
fn plain_workgroups(b: &[u8]) -> Option<u32> {
    let inner = b.strip_prefix(b"[")?.strip_suffix(b"]")?;
    let (mut product, mut dims) = (1u64, 0);
    for part in inner.split(|&c| c == b',') {
        let start = part.iter().position(|&c| c != b' ')?;
        let end = part.iter().rposition(|&c| c != b' ')? + 1;
        let digits = &part[start..end];
        if digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let d = digits
            .iter()
            .fold(0u64, |v, &c| v * 10 + u64::from(c - b'0'));
        product = product.saturating_mul(d);
        dims += 1;
    }
    (dims <= 3).then(|| u32::try_from(product).unwrap_or(u32::MAX))
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

/// The reader's parse of the element at `s`, on its own (by the scanner, or by serde alone),
/// `seen` holding what the scanner saw in the piece's earlier elements: its end, and
/// whether it is a row (GPU or host). The parser benchmark's view of the hot path; not a
/// stable API.
#[doc(hidden)]
pub fn element_for_bench(
    input: &PieceInput<'_>,
    s: usize,
    serde_only: bool,
    seen: &mut super::seen::Seen,
) -> Option<(usize, bool)> {
    let path = if serde_only {
        EventPath::Serde
    } else {
        EventPath::Scanner
    };
    let (e, parsed) = parse_element(input, s, path, seen)?;
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

/// The scanner fuzz target's check: the scanner reads the event at the start of `text` as serde
/// does (the same fields, the same end), or declines it. Not an API.
#[doc(hidden)]
pub fn check_scanner_against_serde(text: &str) -> Result<(), String> {
    let mut seen = super::seen::Seen::default();
    check_scanned(text, &mut seen)?;
    // Again, with the shape and the values it saw the first time remembered.
    check_scanned(text, &mut seen)
}

/// [`check_scanner_against_serde`] with what the scanner saw before.
pub(super) fn check_scanned(text: &str, seen: &mut super::seen::Seen) -> Result<(), String> {
    let mut scanned = RawEvent::default();
    let Some(end) = super::seen::scan_event(text, &mut scanned, seen) else {
        return Ok(());
    };
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<RawEvent<'_>>();
    match stream.next() {
        Some(Ok(ev))
            if stream.byte_offset() == end && format!("{ev:?}") == format!("{scanned:?}") =>
        {
            Ok(())
        }
        Some(Ok(ev)) => Err(format!(
            "serde read {ev:?} ending at {}, the scanner {scanned:?} ending at {end}",
            stream.byte_offset()
        )),
        Some(Err(e)) => Err(format!("serde failed ({e}), the scanner read {scanned:?}")),
        None => Err(format!("serde read nothing, the scanner {scanned:?}")),
    }
}
