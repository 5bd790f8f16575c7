//! Reading inputs into the normalized [`Trace`].
//!
//! [`open`] hides files, directories, stdin and gzip (decided by magic bytes, not by the file
//! name); [`sniff`] looks at the first bytes of the (decompressed) data and picks a [`Reader`];
//! each input format is one module implementing [`Reader`]. Readers never analyze: they convert
//! units, intern names and append rows.

/// The event scanner under the Kineto reader, open to the benches (not an API).
#[doc(hidden)]
pub mod json_stream;
/// The Kineto reader, open to the benches (not an API).
#[doc(hidden)]
pub mod kineto;
pub(crate) mod num;
mod ranks;
pub(crate) mod rocpd;
pub(crate) mod rocprof_compute;
pub(crate) mod rocprof_csv;
pub(crate) mod rocprof_v1_json;
pub(crate) mod rocprofv3_json;
pub(crate) mod torch_logs;
pub use ranks::rank_in_file_name;
use ranks::{assign_file_ranks, skip_other_formats};
pub use rocprof_compute::wanted_columns;
pub use torch_logs::{looks_like_torch_logs, parse as parse_torch_logs};
pub(crate) mod torch_trace;

use crate::error::IngestError;
use crate::model::{Format, Trace};
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};

/// How many decompressed bytes format sniffing looks at.
pub const SNIFF_BYTES: usize = 64 << 10;

/// Options every reader honours.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Turn recoverable problems (a truncated file) into errors.
    pub strict: bool,
    /// Read every input as this format instead of sniffing it.
    pub force: Option<Format>,
    /// Told how many bytes of each input file were read (the file's bytes, compressed or not).
    pub progress: Option<Progress>,
    /// Window of the streaming JSON scanner in bytes (None: the default 4 MiB). Output never
    /// depends on it; tests vary it to prove that.
    pub block_bytes: Option<usize>,
    /// Size of the pieces of a window that are scanned and parsed in parallel (None: the
    /// default [`json_stream::PIECE`]). Output never depends on it; tests vary it.
    pub piece_bytes: Option<usize>,
    /// Read and parse each file on one thread, without the read-ahead thread and parallel
    /// pieces of [`json_stream::scan_parallel`] (or the scan thread of
    /// [`json_stream::scan_pipelined`]): [`read_all`] sets it when it reads at least as many
    /// files at once as there are worker threads, which keeps every core busy already.
    pub one_thread_per_file: bool,
    /// Decompression-bomb ratio for gzip inputs (None: [`MAX_GUNZIP_RATIO`]).
    pub max_gunzip_ratio: Option<u64>,
    /// When set, reading stops at the next block (the read then fails; the caller knows why).
    pub cancel: Option<Cancel>,
    /// Leave out Python frames (`python_function` events, `with_stack=True`): only the module
    /// and source views read them, and they can be most of a trace's host events.
    pub skip_python_frames: bool,
    /// Read every Kineto event with serde, the scanner's referee (tests and benches; the
    /// output never depends on it).
    #[doc(hidden)]
    pub serde_events: bool,
    /// Stream plain files as gzip and stdin are, rather than read them in place (tests and
    /// benches; the output never depends on it).
    #[doc(hidden)]
    pub stream_files: bool,
}

impl ReadOptions {
    /// Streams a JSON document into `sink` the way these options ask.
    pub fn scan<R: Read + Send, S: json_stream::ScanSink>(
        &self,
        reader: R,
        sink: &mut S,
    ) -> Result<json_stream::ScanOutcome, json_stream::ScanError> {
        let block = self.block_bytes.unwrap_or(json_stream::BLOCK);
        if self.one_thread_per_file {
            json_stream::scan(reader, sink, block)
        } else {
            json_stream::scan_pipelined(reader, sink, block)
        }
    }
    /// [`ReadOptions::scan_pieces`] of a file read in place.
    pub fn scan_in_place<P, S>(
        &self,
        file: json_stream::InPlace,
        parser: &P,
        sink: &mut S,
    ) -> Result<json_stream::ScanOutcome, json_stream::ScanError>
    where
        P: json_stream::PieceParser,
        S: json_stream::PieceSink<P::Piece> + Send,
    {
        let block = self.block_bytes.unwrap_or(json_stream::BLOCK);
        let piece = match self.one_thread_per_file {
            true => usize::MAX,
            false => self.piece_bytes.unwrap_or(json_stream::PIECE),
        };
        json_stream::scan_in_place(file, parser, sink, block, piece)
    }
    /// Streams a JSON document into `sink` with its events parsed by `parser` in pieces, in
    /// parallel unless each file has one thread.
    pub fn scan_pieces<R, P, S>(
        &self,
        reader: R,
        parser: &P,
        sink: &mut S,
    ) -> Result<json_stream::ScanOutcome, json_stream::ScanError>
    where
        R: Read + Send,
        P: json_stream::PieceParser,
        S: json_stream::PieceSink<P::Piece> + Send,
    {
        let block = self.block_bytes.unwrap_or(json_stream::BLOCK);
        if self.one_thread_per_file {
            json_stream::scan_pieces(reader, parser, sink, block)
        } else {
            let piece = self.piece_bytes.unwrap_or(json_stream::PIECE);
            json_stream::scan_parallel(reader, parser, sink, block, piece)
        }
    }
}

/// A callback for read progress (the CLI draws a progress bar with it).
#[derive(Clone)]
pub struct Progress(pub std::sync::Arc<dyn Fn(u64) + Send + Sync>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress")
    }
}

/// A flag another thread sets to stop a long read (the Python package's Ctrl-C).
#[derive(Clone, Debug, Default)]
pub struct Cancel(pub std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Cancel {
    /// Asks the read to stop.
    pub fn set(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    /// Whether a stop was asked for.
    pub fn is_set(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Counts the bytes read through it, and stops when the read is cancelled.
struct Counted<R> {
    inner: R,
    progress: Option<Progress>,
    cancel: Option<Cancel>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.as_ref().is_some_and(Cancel::is_set) {
            return Err(io::Error::other("cancelled"));
        }
        let n = self.inner.read(buf)?;
        if let Some(p) = &self.progress {
            (p.0)(n as u64);
        }
        Ok(n)
    }
}

/// An opened input: its name for messages and a reader over its decompressed bytes, with the
/// sniffed head already put back in front.
pub struct Source {
    /// The path as the user gave it (`-` reads as `<stdin>`).
    pub label: String,
    /// Whether its bytes are gzip (inflated as they are read).
    pub gzip: bool,
    /// The file behind the source (None for stdin): formats that need random access (SQLite) use it.
    pub path: Option<PathBuf>,
    /// The first bytes of the decompressed data, for sniffing.
    pub head: Vec<u8>,
    /// Set when reading the head already hit a corrupt or cut compressed stream.
    pub head_error: Option<String>,
    reader: Box<dyn Read + Send>,
    /// The file itself, when its bytes are the data and it maps: read in place.
    in_place: Option<json_stream::InPlace>,
}

impl Source {
    /// The whole decompressed stream, head included.
    pub fn into_reader(self) -> Box<dyn Read + Send> {
        Box::new(Cursor::new(self.head).chain(self.reader))
    }
    /// The file to read in place instead of through [`Source::into_reader`] (a regular,
    /// uncompressed file), once.
    pub fn take_in_place(&mut self) -> Option<json_stream::InPlace> {
        self.in_place.take()
    }
    /// "byte N" or, for compressed input, "byte N of the decompressed data".
    pub fn offset_unit(&self) -> &'static str {
        if self.gzip {
            " of the decompressed data"
        } else {
            ""
        }
    }
}

/// One format's reader.
pub trait Reader: Send + Sync {
    /// The format this reader reads.
    fn format(&self) -> Format;
    /// `Some(true)`: this reader's format; `Some(false)`: certainly not; `None`: can't tell.
    fn sniff(&self, head: &[u8]) -> Option<bool>;
    /// What `sniff` looks for, for the message when nothing matches.
    fn looks_for(&self) -> &'static str;
    /// The reader's name in that message (the format's, unless two readers share it).
    fn name(&self) -> &'static str {
        self.format().as_str()
    }
    /// Appends the input's rows to `trace` (one or more `inputs` entries).
    fn read(&self, src: Source, trace: &mut Trace, opts: &ReadOptions) -> Result<(), IngestError>;
}

/// Every reader, in sniffing order.
pub fn readers() -> Vec<Box<dyn Reader>> {
    vec![
        Box::new(rocpd::RocpdReader),
        Box::new(rocprofv3_json::RocprofV3JsonReader),
        Box::new(rocprof_v1_json::RocprofV1JsonReader),
        Box::new(kineto::KinetoReader),
        Box::new(rocprof_csv::RocprofCsvReader(Format::RocprofV3Csv)),
        Box::new(rocprof_csv::RocprofCsvReader(Format::RocprofV1)),
        Box::new(rocprof_csv::RocprofCsvReader(Format::RocprofV2Csv)),
    ]
}

/// Expands the user's paths: directories become their trace files (sorted by name, one file per
/// rank), `-` stays stdin.
pub fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, IngestError> {
    Ok(expand_into_groups(paths)?
        .into_iter()
        .flat_map(|g| g.files)
        .collect())
}

/// The files of one path the user gave: a directory's candidate files, or the path itself.
struct Group {
    /// The directory the files were listed from (its files that are not traces are skipped).
    dir: Option<PathBuf>,
    files: Vec<PathBuf>,
}

/// [`expand_paths`], keeping each directory's files together (a path given alone is a group of
/// one).
fn expand_into_groups(paths: &[PathBuf]) -> Result<Vec<Group>, IngestError> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() != "-"
            && p.is_dir()
            && rocprof_csv::rocprofv3_dir_files(p).is_none()
            && rocprof_compute::rocprof_compute_dir(p).is_none()
        {
            let label = p.display().to_string();
            let entries = std::fs::read_dir(p).map_err(|source| IngestError::Open {
                path: label.clone(),
                source,
            })?;
            let mut files: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && is_trace_file_name(f))
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(IngestError::EmptyDir { path: label });
            }
            out.push(Group {
                dir: Some(p.clone()),
                files,
            });
        } else {
            out.push(Group {
                dir: None,
                files: vec![p.clone()],
            });
        }
    }
    Ok(out)
}

fn is_trace_file_name(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".json")
        || name.ends_with(".json.gz")
        || name.ends_with(".db")
        || name.ends_with(".csv")
}

/// Opens a path (or `-` for stdin), undoing gzip when the data starts with its magic bytes.
pub fn open(path: &Path) -> Result<Source, IngestError> {
    open_with_progress(path, None)
}

/// A gzip input may expand to this many times its compressed size (and at least
/// [`MIN_GUNZIP_LIMIT`] bytes) before it is refused as a decompression bomb; real traces expand
/// 10-30x. `--max-gunzip-ratio` raises it.
pub const MAX_GUNZIP_RATIO: u64 = 200;
/// Any gzip input may expand to at least this many bytes.
pub const MIN_GUNZIP_LIMIT: u64 = 256 << 20;

/// Fails the read once more than `limit` decompressed bytes have come through.
struct Capped<R> {
    inner: R,
    read: u64,
    limit: u64,
    ratio: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.limit {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!(
                    "the gzip data expands past {} bytes, over {}x its compressed size: refused as a decompression bomb (--max-gunzip-ratio raises the limit)",
                    self.limit, self.ratio
                ),
            ));
        }
        Ok(n)
    }
}

/// [`open`], reporting the file bytes read to `progress`.
pub fn open_with_progress(path: &Path, progress: Option<&Progress>) -> Result<Source, IngestError> {
    open_with(path, progress, None, MAX_GUNZIP_RATIO)
}

/// [`open_with_progress`], stopping when `cancel` is set, with a decompression-bomb ratio.
pub fn open_with(
    path: &Path,
    progress: Option<&Progress>,
    cancel: Option<&Cancel>,
    max_gunzip_ratio: u64,
) -> Result<Source, IngestError> {
    let stdin = path.as_os_str() == "-";
    let label = if stdin {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let mut direct = None;
    let mut raw: Box<dyn Read + Send> = if stdin {
        Box::new(io::stdin())
    } else {
        let file = File::open(path).map_err(|source| IngestError::Open {
            path: label.clone(),
            source,
        })?;
        direct = file.try_clone().ok();
        Box::new(file)
    };
    if progress.is_some() || cancel.is_some() {
        raw = Box::new(Counted {
            inner: raw,
            progress: progress.cloned(),
            cancel: cancel.cloned(),
        });
    }
    let mut raw = BufReader::with_capacity(1 << 20, raw);
    let mut magic = [0u8; 2];
    let n = read_full(&mut raw, &mut magic).map_err(|source| IngestError::Io {
        path: label.clone(),
        offset: 0,
        source,
    })?;
    let rest = Cursor::new(magic[..n].to_vec()).chain(raw);
    let gzip = n == 2 && magic == [0x1f, 0x8b];
    let mut reader: Box<dyn Read + Send> = if gzip {
        let compressed = if stdin {
            0
        } else {
            std::fs::metadata(path).map_or(0, |m| m.len())
        };
        let limit = compressed
            .saturating_mul(max_gunzip_ratio)
            .max(MIN_GUNZIP_LIMIT);
        let decompressed = Capped {
            inner: MultiGzDecoder::new(rest),
            read: 0,
            limit,
            ratio: max_gunzip_ratio,
        };
        // One compressed read of 1 MiB can expand to a gigabyte: cancellation is checked on
        // the decompressed side too.
        Box::new(BufReader::with_capacity(
            1 << 20,
            Counted {
                inner: decompressed,
                progress: None,
                cancel: cancel.cloned(),
            },
        ))
    } else {
        Box::new(rest)
    };
    let mut head = vec![0u8; SNIFF_BYTES];
    let mut filled = 0;
    let mut head_error = None;
    while filled < head.len() {
        match reader.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(k) => filled += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if gzip => {
                if filled == 0 {
                    return Err(IngestError::CorruptGzip {
                        path: label,
                        offset: 0,
                        reason: format!("the data cannot be decompressed: {e}"),
                    });
                }
                head_error = Some(e.to_string());
                reader = Box::new(io::empty());
                break;
            }
            Err(source) => {
                return Err(IngestError::Io {
                    path: label,
                    offset: filled as u64,
                    source,
                })
            }
        }
    }
    head.truncate(filled);
    if filled == 0 {
        return Err(IngestError::Empty { path: label });
    }
    let in_place = direct
        .filter(|_| !gzip)
        .and_then(|f| json_stream::InPlace::new(f, progress.cloned(), cancel.cloned()));
    Ok(Source {
        label,
        gzip,
        path: (!stdin).then(|| path.to_path_buf()),
        head,
        head_error,
        reader,
        in_place,
    })
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    match fill(r, buf) {
        (n, None) => Ok(n),
        (_, Some(e)) => Err(e),
    }
}

/// Reads into `buf` until it is full or the input ends: the bytes read, and the error that
/// stopped it early, if one did (what came before a corrupt gzip tail is still data).
fn fill(r: &mut impl Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

/// Picks the reader for a source, or says what the data looks like when none fits.
pub fn sniff<'r>(
    src: &Source,
    readers: &'r [Box<dyn Reader>],
) -> Result<&'r dyn Reader, IngestError> {
    let head = &src.head;
    let mut undecided = None;
    for r in readers {
        match r.sniff(head) {
            Some(true) => return Ok(r.as_ref()),
            None if undecided.is_none() => undecided = Some(r.as_ref()),
            _ => {}
        }
    }
    if let Some(other) = recognize_unsupported(head) {
        return Err(IngestError::Unsupported {
            path: src.label.clone(),
            format: other.as_str(),
        });
    }
    if let Some(r) = undecided {
        return Ok(r);
    }
    let first = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    let shown: String = String::from_utf8_lossy(&head[first..head.len().min(first + 40)])
        .chars()
        .take_while(|&c| c != '\n' && c != '\r')
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    // Each explanation once, with the readers it covers (the CSV readers share one).
    let mut wanted: Vec<(Vec<&str>, &str)> = Vec::new();
    for r in readers {
        let name = r.name();
        match wanted.iter_mut().find(|(_, why)| *why == r.looks_for()) {
            Some((names, _)) if !names.contains(&name) => names.push(name),
            Some(_) => {}
            None => wanted.push((vec![name], r.looks_for())),
        }
    }
    let wanted: Vec<String> = wanted
        .iter()
        .map(|(names, why)| format!("{} ({why})", names.join(", ")))
        .collect();
    let reason = if head.starts_with(b"SQLite format 3\0") {
        "an SQLite database that is not a rocpd profile".to_string()
    } else if head[first..].starts_with(b"{") || head[first..].starts_with(b"[") {
        "JSON, but neither a Chrome trace (no \"traceEvents\") nor a rocprof output".to_string()
    } else {
        format!("expected a JSON trace, found \"{shown}\"")
    };
    Err(IngestError::Unrecognized {
        path: src.label.clone(),
        offset: first as u64,
        reason: format!("{reason}; the readers look for: {}", wanted.join("; ")),
    })
}

/// Formats whose readers are not written yet, recognized so the message is precise.
fn recognize_unsupported(head: &[u8]) -> Option<Format> {
    let text = String::from_utf8_lossy(head);
    let first_line = text
        .lines()
        .next()
        .unwrap_or("")
        .trim_start_matches('\u{feff}');
    // rocprof-compute counter files given alone (give the workload directory instead).
    (first_line.contains(',') && first_line.contains("SQ_WAVES")).then_some(Format::RocprofCompute)
}

/// Whether a file is a torch.compile log (TORCH_LOGS text or TORCH_TRACE), not a trace.
pub fn is_compile_log(path: &Path) -> bool {
    // Only a regular file can be opened again to be read: a named pipe's bytes (`<(zcat ..)`)
    // would be spent on this look, and its reader would wait for a writer that has left.
    if path.as_os_str() == "-" || !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    match open(path) {
        Ok(src) => {
            let head = String::from_utf8_lossy(&src.head);
            torch_logs::looks_like_torch_logs(&head) || torch_trace::looks_like_torch_trace(&head)
        }
        Err(_) => false,
    }
}

/// Reads a torch.compile log (TORCH_LOGS text or TORCH_TRACE; gzip undone).
pub fn read_compile_log(path: &Path) -> Result<crate::model::compile_log::CompileLog, IngestError> {
    let src = open(path)?;
    let label = src.label.clone();
    let mut bytes = Vec::new();
    src.into_reader()
        .read_to_end(&mut bytes)
        .map_err(|source| IngestError::Io {
            path: label.clone(),
            offset: bytes.len() as u64,
            source,
        })?;
    let text = String::from_utf8_lossy(&bytes);
    let mut head = text.len().min(SNIFF_BYTES);
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    Ok(if torch_trace::looks_like_torch_trace(&text[..head]) {
        torch_trace::parse(&text, &label)
    } else {
        torch_logs::parse(&text, &label)
    })
}

/// Reads every path into one trace, in the order given (directories expanded). Several files
/// (ranks) are read in parallel, each into its own table, and appended in order: the result
/// does not depend on the thread count.
pub fn read_all(paths: &[PathBuf], opts: &ReadOptions) -> Result<Trace, IngestError> {
    use rayon::prelude::*;
    let groups = expand_into_groups(paths)?;
    let paths: Vec<&PathBuf> = groups.iter().flat_map(|g| &g.files).collect();
    if paths.len() == 1 && groups[0].dir.is_none() {
        let mut trace = Trace::default();
        read_one(paths[0], &mut trace, opts)?;
        return Ok(trace);
    }
    let opts = &ReadOptions {
        one_thread_per_file: opts.one_thread_per_file
            || paths.len() >= rayon::current_num_threads(),
        ..opts.clone()
    };
    let read: Vec<Result<Trace, IngestError>> = paths
        .par_iter()
        .map(|p| {
            let mut t = Trace::default();
            read_one(p, &mut t, opts).map(|()| t)
        })
        .collect();
    // The first failing file in order, whatever the thread count. A directory's file that no
    // reader recognizes is a note or a config beside the traces: skipped with a warning. A file
    // a reader recognizes but cannot read still fails the run: a silently dropped rank would
    // falsify the aggregate.
    let mut read = read.into_iter();
    let mut parts = Vec::new();
    let mut kept_groups: Vec<Vec<&PathBuf>> = Vec::new();
    let mut skipped = Vec::new();
    for group in &groups {
        let mut kept = Vec::new();
        let mut skipped_here = Vec::new();
        for file in &group.files {
            match read.next().expect("one result per file") {
                Ok(t) => {
                    kept.push(file);
                    parts.push(t);
                }
                Err(e) if group.dir.is_some() && e.is_not_a_trace() => {
                    skipped_here.push(crate::model::SkippedFile {
                        path: file.display().to_string(),
                        reason: e.to_string(),
                    });
                }
                Err(e) => return Err(e),
            }
        }
        if group.dir.is_some() {
            skip_other_formats(&mut kept, &mut parts, &mut skipped_here);
        }
        if let (Some(dir), true) = (&group.dir, kept.is_empty()) {
            return Err(IngestError::NoTraceInDir {
                path: dir.display().to_string(),
                skipped: skipped_here
                    .iter()
                    .map(|s| s.reason.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
            });
        }
        skipped.extend(skipped_here);
        kept_groups.push(kept);
    }
    assign_file_ranks(&kept_groups, &mut parts);
    let mut trace = Trace::default();
    for part in parts {
        trace.append(part);
    }
    trace.skipped = skipped;
    trace.activities.shrink_to_fit();
    trace.host.shrink_to_fit();
    Ok(trace)
}

/// Reads one file or output directory into `trace`.
fn read_one(path: &Path, trace: &mut Trace, opts: &ReadOptions) -> Result<(), IngestError> {
    read_format(path, trace, opts)?;
    // Times no profiler writes (an hour-long kernel, a timestamp centuries away) are corrupt:
    // left out with a warning, so no sum or difference of times can overflow downstream.
    let gpu = trace.activities.drop_implausible();
    let host = trace.host.drop_implausible();
    // The columns grew by doubling: up to half of each is spare capacity the analysis never uses.
    trace.activities.shrink_to_fit();
    trace.host.shrink_to_fit();
    for (input, meta) in trace.inputs.iter_mut().enumerate() {
        let (g, h) = (
            gpu.get(&(input as u32)).copied().unwrap_or(0),
            host.get(&(input as u32)).copied().unwrap_or(0),
        );
        if g + h > 0 {
            meta.warnings.push(format!(
                "left out {g} GPU activities longer than an hour and {h} host events longer than a day, or dated before the epoch or beyond 146 years after it: corrupt times"
            ));
        }
    }
    // Device names are printed like kernel names: no terminal control characters either.
    for device in trace.inputs.iter_mut().flat_map(|i| i.devices.iter_mut()) {
        if let Some(clean) = crate::model::intern::without_controls(&device.name) {
            device.name = clean;
        }
    }
    Ok(())
}

fn read_format(path: &Path, trace: &mut Trace, opts: &ReadOptions) -> Result<(), IngestError> {
    let readers = readers();
    // A rocprofv3 output directory is one input: its CSVs join on correlation ids.
    if path.is_dir() {
        if let Some(files) = rocprof_csv::rocprofv3_dir_files(path) {
            return rocprof_csv::read_rocprofv3_dir(path, &files, trace, opts);
        }
        if let Some(workload) = rocprof_compute::rocprof_compute_dir(path) {
            return rocprof_compute::read_rocprof_compute_dir(path, &workload, trace, opts);
        }
    }
    let src = open_with(
        path,
        opts.progress.as_ref(),
        opts.cancel.as_ref(),
        opts.max_gunzip_ratio.unwrap_or(MAX_GUNZIP_RATIO),
    )?;
    let reader = match opts.force {
        Some(f) => readers
            .iter()
            .find(|r| r.format() == f && r.sniff(&src.head) != Some(false))
            .or_else(|| readers.iter().find(|r| r.format() == f))
            .map(|r| r.as_ref())
            .ok_or(IngestError::Unsupported {
                path: src.label.clone(),
                format: f.as_str(),
            })?,
        // A gzip stream that broke off in the sniffed head is a damaged file, whatever the
        // few bytes before the break look like.
        None => sniff(&src, &readers).map_err(|e| match &src.head_error {
            Some(why) => IngestError::CorruptGzip {
                path: src.label.clone(),
                offset: src.head.len() as u64,
                reason: format!("the data cannot be decompressed: {why}"),
            },
            None => e,
        })?,
    };
    reader.read(src, trace, opts)
}

#[cfg(test)]
mod tests;
