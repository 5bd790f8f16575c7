//! PyTorch profiler (Kineto) Chrome traces, from CUDA (CUPTI) and ROCm (roctracer) builds, 2021
//! to now. See <https://pytorch.org/docs/stable/profiler.html> and `reference/formats.md` §1.
//!
//! The file is streamed (`json_stream::scan_parallel`; a plain file is mapped in place,
//! `json_stream::scan_in_place`): each window of it is cut into pieces at
//! likely event boundaries, and every piece is read on a worker thread, event by event, into
//! the fields the model uses (`raw`: text as written, borrowed from the window) and then into
//! a `Chunk` of columns with names, ranks and string ids of its own. The chunks are appended in
//! file order, renumbered as if read one event at a time, so the table is the same for any
//! thread count and piece size.
//!
//! **Who reads an event.** Our own scanner (`scan`) walks the event's keys, takes the values
//! the model reads as written and skips the rest, checking what it skips as strictly as
//! serde_json would (escapes, control characters, number grammar, literals, nesting), and finds
//! the event's end in the same pass. Whatever it is not sure of (an escape in a key or in a name,
//! a repeated key, a value of an unexpected type, deep nesting, the end of the piece) it leaves
//! to serde_json, which reads that event as it always did: a streaming deserializer into the
//! same fields. So an event gives the same fields or the same error whichever path reads it;
//! `ReadOptions::serde_events` (`--serde-events`, hidden) reads every event with serde, and the
//! tests (every fixture and corpus trace reads to the same table either way) and the `scanner`
//! fuzz target hold the two to that. Numbers stay text until `micros_to_ns` / `to_u64` convert
//! them exactly: Kineto's timestamps are microseconds with nanosecond decimals
//! (`1712867402367756.123` has 19 digits; an `f64` keeps 16, hence no simd-json: its tape
//! parses every number to `f64`, and it needs each event's end found first).
//!
//! `cargo bench --bench hot_paths -- pieces` (the walk over the 41k events of
//! `fixtures/kineto/h100/eager_launch_bound.json.gz` as the reader runs it, criterion medians of
//! one run, 2 cores, 2026-11-28):
//!
//! | walk over the events | one thread | pool (2 threads) |
//! |---|---|---|
//! | the scanner (serde for what it declines) | 12.1 ms | 7.0 ms |
//! | serde_json alone, ends found while parsing (the reader until now) | 22.7 ms | 13.3 ms |
//! | the scan for ends, then simd-json's tape per event | 27.4 ms | 15.8 ms |
//!
//! The scanner's first version ran 16.3 ms on one thread: it built the fields (most of a
//! kilobyte) and moved them per event, and looked for a string's end with `memchr2` and then for
//! control characters in a second pass; filling them in place and testing eight bytes at a time
//! for a quote, a backslash or a control character gave the rest. Recorded shapes and strides
//! (lists of lists of integers) are most of an event's argument bytes: they are skipped in one
//! loop, integers to their delimiter, which took the scanner from 242 M to 219 M instructions
//! on the first 20 MB of big_eager (callgrind, `--threads 1`; the run 847 M → 825 M).
//!
//! **What the scanner has seen** (`seen`, one per reading thread). A profiler writes a few
//! layouts over and over (15 among big_eager's 430,000 events: the same keys, blanks and
//! punctuation between the values), and a few hundred distinct recorded shapes, strides and
//! types. An event whose bytes between its values are those of a layout seen before is read by
//! that layout (`seen::Shape`): the bytes between values compared as words, each value read by
//! what read it the first time, checked as the walk checks it; any other event is walked key by
//! key and its layout kept. An `args` list or string whose bytes are those of one checked
//! before is that value, without walking it again (`checked::Checked`; a number is walked, its
//! end being none of its own bytes; the way a value was last found in is tried first, by the
//! hash of its first 32 bytes, before its bucket's search). Neither changes what is read: both
//! are used only where the input holds the exact bytes, and the scanner's tests and fuzz target
//! check each event twice against serde, the second time read by what the first taught. The
//! walk itself passes its position by value (a cursor behind `&mut self` shared with closures
//! was stored and reloaded at every byte) and skips digit runs eight bytes at a time.
//! big_eager, `--threads 1`, by callgrind: the run 6.23 G → 4.96 G instructions, the read
//! 4.03 G → 2.76 G, the scanner 2.74 G → 1.46 G. Numbers as Kineto writes them (`ts`, `dur`,
//! ids: plain digits) convert in one pass without trimming, unquoting or overflow checks
//! (`num`; 247 → 165 instructions a call): 4.96 G → 4.77 G with the last way and the thread
//! remembered. Timestamps' digits found and valued eight at a time (a word's digits by three
//! multiplies), numbers read or skipped by their grammar without the dispatch on their first
//! byte, grids multiplied out without splitting their text and each event added to its piece's
//! columns where it is parsed (not moved twice): 4.51 G → 4.25 G (2026-11-30).

mod checked;
mod event;
mod lex;
mod raw;
mod scan;
mod seen;
#[cfg(test)]
mod tests;

pub use event::{
    activity_key, check_scanner_against_serde, element_for_bench, parse_batch_for_bench,
    ActivityKey,
};
use event::{grid_in_work_items, parse_element, EventPath, Id, Parsed, NO_PH};
#[doc(hidden)]
pub use seen::Seen;

use super::json_stream::{PieceInput, PieceParser, PieceSink, ScanError};
use super::num::{to_u64, trailing_u64};
use super::{ReadOptions, Reader, Source};
use crate::error::IngestError;
use crate::model::{
    Activity, Device, Format, GpuActivities, GpuSync, GpuSyncs, HostEvent, HostEvents, HostKind,
    InputMeta, Interner, MemoryEvents, NameId, Trace, Vendor,
};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use serde::Deserialize;
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

    fn read(
        &self,
        mut src: Source,
        trace: &mut Trace,
        opts: &ReadOptions,
    ) -> Result<(), IngestError> {
        let label = src.label.clone();
        let unit = src.offset_unit();
        let head_error = src.head_error.clone();
        let mut sink = KinetoSink::new(trace, label.clone());
        let parser = KinetoParser {
            skip_python_frames: opts.skip_python_frames,
            path: if opts.serde_events {
                EventPath::Serde
            } else {
                EventPath::Scanner
            },
        };
        let scanned = match src.take_in_place().filter(|_| !opts.stream_files) {
            Some(file) => opts.scan_in_place(file, &parser, &mut sink),
            None => opts.scan_pieces(src.into_reader(), &parser, &mut sink),
        };
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
    path: EventPath,
}

impl PieceParser for KinetoParser {
    type Piece = Chunk;
    fn element(&self, chunk: &mut Chunk, input: &PieceInput<'_>, s: usize) -> Option<usize> {
        // Pushed where it is parsed: an event's fields are most of a kilobyte to move.
        SEEN.with_borrow_mut(|seen| {
            seen.trim();
            let (e, parsed) = parse_element(input, s, self.path, seen)?;
            chunk.push(parsed, input.base, self.skip_python_frames);
            Some(e)
        })
    }
}

thread_local! {
    /// What the event scanner has seen on this thread, in any piece of any file: the shapes
    /// and values a piece's first events would otherwise learn again (a cache: what is read
    /// does not depend on it).
    static SEEN: std::cell::RefCell<seen::Seen> = std::cell::RefCell::default();
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
