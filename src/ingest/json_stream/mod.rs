//! Streams a Chrome-trace JSON document without building it in memory.
//!
//! The document is `{ "traceEvents": [ {...}, ... ], "other": ... }` (keys in any order) or a bare
//! array of events. This scanner reads it in windows and walks its top level; every other
//! top-level value is handed over whole (they are small: device properties, distributed info).
//! Memory is one window plus the largest single event, whatever the file size.
//!
//! The events array is taken one of two ways:
//! - `scan`: a cheap structural scan (strings skipped with `memchr`, only braces counted) finds
//!   the byte range of each complete event, and a `ScanSink` gets them in batches.
//! - `scan_parallel`: each window is cut into pieces at likely element boundaries (`}` `,` `{`)
//!   that the rayon pool parses at once through a `PieceParser` (which may find an element's
//!   end while parsing it), while the input is read a window ahead on its own thread (swapped
//!   in whole, the event the window before cut copied in front of it). A piece's
//!   work is kept only when the scan of the piece before it, from a verified start, ends exactly
//!   where it starts; so a guess inside a string costs time, never correctness, and the
//!   `PieceSink` gets the same events with the same errors at the same offsets as from the
//!   sequential walk, for any piece size and thread count.
//! - `scan_in_place`: the same for a plain file, its windows mapped where the page cache holds
//!   them instead of read (copied) into buffers of ours (`mapped`).
//!
//! A document that ends early (a profiler that died mid-write) is not an error here: the scan
//! stops at the last complete event and `ScanOutcome::truncated` says so.

mod lexical;
mod mapped;
mod pieces;
mod pipelined;
#[cfg(test)]
mod tests;

pub use mapped::InPlace;
pub use pieces::{scan_in_place, scan_parallel, scan_pieces, PieceInput, PieceParser, PieceSink};
pub use pipelined::{scan_default, scan_pipelined};

use lexical::{describe, skip_ws, string_end, value_end};
use std::io::{self, Read};

/// Initial block size; a block grows only when one event is larger than it.
pub const BLOCK: usize = 4 << 20;

/// Bytes of events per piece parsed in parallel: a window makes 16, enough to keep cores even.
pub const PIECE: usize = 256 << 10;

/// A structural problem at an absolute byte offset.
#[derive(Debug)]
pub enum ScanError {
    Syntax { offset: u64, message: String },
    Io { offset: u64, source: io::Error },
}

/// How the scan ended.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ScanOutcome {
    /// The input ended before the document was complete.
    pub truncated: bool,
    /// A `traceEvents` array (or top-level array) was found.
    pub saw_events: bool,
    /// Number of complete events handed over.
    pub events: u64,
    /// Bytes consumed (decompressed).
    pub bytes: u64,
    /// Why the input ended early, when it did (an I/O error such as a corrupt gzip tail).
    pub truncation_cause: Option<String>,
}

/// Receives what the scanner finds.
pub trait ScanSink {
    /// A batch of complete events: `ranges` index into `buf`; `base` is the absolute offset of
    /// `buf[0]` in the (decompressed) input, for error messages.
    fn events(&mut self, buf: &[u8], ranges: &[(usize, usize)], base: u64)
        -> Result<(), ScanError>;
    /// A top-level key other than `traceEvents`, with its complete value.
    fn meta(&mut self, key: &str, value: &[u8], offset: u64) -> Result<(), ScanError>;
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Before the first non-blank byte.
    Start,
    /// In the top-level object, expecting a key or `}`.
    ObjectKey { first: bool },
    /// In the events array, expecting an element or `]`.
    Events { first: bool, in_object: bool },
    /// After the top-level value.
    Done,
}

/// A window's bytes: a buffer of ours, or a stretch of a file mapped where the page cache
/// holds it ([`InPlace`]).
pub(super) enum Bytes {
    Owned(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl Bytes {
    /// The buffer, for a feed that reads into it (a mapped stretch becomes a copy first; no
    /// feed mixes the two).
    fn owned(&mut self) -> &mut Vec<u8> {
        if let Bytes::Mapped(m) = self {
            *self = Bytes::Owned(m.to_vec());
        }
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped(_) => unreachable!("replaced above"),
        }
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped(m) => m,
        }
    }
}

/// A sliding window over the input: `buf[pos..end]` is what is not consumed yet.
pub(super) struct Window {
    pub(super) buf: Bytes,
    /// Start of unconsumed data.
    pub(super) pos: usize,
    /// End of valid data.
    pub(super) end: usize,
    /// Absolute offset of `buf[0]`.
    pub(super) base: u64,
    pub(super) eof: bool,
    pub(super) eof_cause: Option<String>,
}

impl Window {
    fn abs(&self, i: usize) -> u64 {
        self.base + i as u64
    }

    /// An error from the input found after `at` (a window index): a corrupt or cut compressed
    /// stream ends the data we can trust (the window keeps what came before it); anything
    /// else fails the scan there.
    pub(super) fn stop_at_error(&mut self, e: io::Error, at: usize) -> Result<(), ScanError> {
        match e.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::InvalidInput
            | io::ErrorKind::InvalidData => {
                self.eof = true;
                self.eof_cause = Some(e.to_string());
                Ok(())
            }
            _ => Err(ScanError::Io {
                offset: self.abs(at),
                source: e,
            }),
        }
    }
}

/// Where a window's bytes come from: a reader copied into it ([`Stream`]), or whole blocks
/// read ahead on another thread and swapped in (`pieces::Blocks`).
pub(super) trait Feed {
    /// The window's first buffer (`block` bytes).
    fn first_buffer(&self, block: usize) -> Bytes {
        Bytes::Owned(vec![0; block])
    }
    /// Reads more data into `w`, keeping `w.buf[keep..w.end]` (moved to the front, `w.pos`
    /// with it), until the window is full or the input ends (a decoder hands over a few KiB
    /// per call; pieces parsed in parallel need a full window). Returns false when nothing
    /// more could be read.
    fn refill(&mut self, w: &mut Window, keep: usize) -> Result<bool, ScanError>;
}

/// A reader read into the window.
pub(super) struct Stream<R>(pub(super) R);

impl<R: Read> Feed for Stream<R> {
    fn refill(&mut self, w: &mut Window, keep: usize) -> Result<bool, ScanError> {
        if w.eof {
            return Ok(false);
        }
        let buf = w.buf.owned();
        if keep > 0 {
            buf.copy_within(keep..w.end, 0);
            w.end -= keep;
            w.pos -= keep;
            w.base += keep as u64;
        }
        if w.end == buf.len() {
            let n = buf.len() * 2;
            buf.resize(n, 0);
        }
        let before = w.end;
        while w.end < buf.len() {
            match self.0.read(&mut buf[w.end..]) {
                Ok(0) => {
                    w.eof = true;
                    break;
                }
                Ok(n) => w.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let at = w.end;
                    w.stop_at_error(e, at)?;
                    break;
                }
            }
        }
        Ok(w.end > before)
    }
}

/// Where a run of events stopped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum RunEnd {
    /// At the `]` that closes the array; `pos` is after it.
    Closed,
    /// The window ends inside an element or before the next one: refill, resume at `pos`.
    NeedMore,
    /// The next element starts at `pos`, at or past the end of the piece (its comma consumed).
    NextPiece,
}

/// A run of events scanned from one position.
#[derive(Clone, Copy, Debug)]
pub(super) struct EventsRun {
    pub(super) pos: usize,
    /// No `,` is expected before the next element.
    pub(super) first: bool,
    pub(super) end: RunEnd,
}

/// Walks the complete events of the array from `p` (`first`: no `,` before the next element)
/// until the `]`, the end of the window, or an element starting at `piece_end` or later. The one loop both the sequential and the parallel scan run, so they agree on every
/// boundary and every error offset.
/// `element(s)` takes the element that starts at `s` and returns its end, or None when the
/// window ends first.
pub(super) fn scan_events(
    buf: &[u8],
    base: u64,
    mut p: usize,
    mut first: bool,
    piece_end: usize,
    mut element: impl FnMut(usize) -> Option<usize>,
) -> Result<EventsRun, ScanError> {
    let need_more = |pos, first| EventsRun {
        pos,
        first,
        end: RunEnd::NeedMore,
    };
    let closed = |pos, first| EventsRun {
        pos,
        first,
        end: RunEnd::Closed,
    };
    loop {
        p = skip_ws(buf, p);
        if p >= buf.len() {
            return Ok(need_more(p, first));
        }
        if buf[p] == b']' {
            return Ok(closed(p + 1, first));
        }
        let mut s = p;
        if !first {
            if buf[s] != b',' {
                return Err(ScanError::Syntax {
                    offset: base + s as u64,
                    message: format!(
                        "expected ',' or ']' between events, found {}",
                        describe(buf[s])
                    ),
                });
            }
            s = skip_ws(buf, s + 1);
            if s >= buf.len() {
                return Ok(need_more(p, first));
            }
            if buf[s] == b']' {
                // Trailing comma before ']': tolerate it.
                return Ok(closed(s + 1, first));
            }
        }
        if s >= piece_end {
            return Ok(EventsRun {
                pos: s,
                first: true,
                end: RunEnd::NextPiece,
            });
        }
        let Some(e) = element(s) else {
            return Ok(need_more(p, first));
        };
        first = false;
        p = e;
    }
}

/// What the document walk hands the events and the other top-level values to.
pub(super) trait Handler {
    /// Takes the events of `buf` from `p`; `count` grows by the complete events handed over.
    fn events(
        &mut self,
        buf: &[u8],
        p: usize,
        eof: bool,
        first: bool,
        base: u64,
        count: &mut u64,
    ) -> Result<EventsRun, ScanError>;
    fn meta(&mut self, key: &str, value: &[u8], offset: u64) -> Result<(), ScanError>;
    /// The document ended (or was cut): hand over what is still held.
    fn done(&mut self) -> Result<(), ScanError> {
        Ok(())
    }
}

/// Every event of a window in one batch, to a [`ScanSink`].
struct Batches<'s, S> {
    sink: &'s mut S,
    ranges: Vec<(usize, usize)>,
}

impl<S: ScanSink> Handler for Batches<'_, S> {
    fn events(
        &mut self,
        buf: &[u8],
        p: usize,
        eof: bool,
        first: bool,
        base: u64,
        count: &mut u64,
    ) -> Result<EventsRun, ScanError> {
        self.ranges.clear();
        let ranges = &mut self.ranges;
        let run = scan_events(buf, base, p, first, usize::MAX, |s| {
            let e = value_end(buf, s, eof)?;
            ranges.push((s, e));
            Some(e)
        })?;
        if !self.ranges.is_empty() {
            *count += self.ranges.len() as u64;
            self.sink.events(buf, &self.ranges, base)?;
        }
        Ok(run)
    }
    fn meta(&mut self, key: &str, value: &[u8], offset: u64) -> Result<(), ScanError> {
        self.sink.meta(key, value, offset)
    }
}

/// Scans `reader` to the end, feeding `sink`. `block` is the initial window size (tests use tiny
/// windows to exercise every boundary).
pub fn scan<R: Read, S: ScanSink>(
    reader: R,
    sink: &mut S,
    block: usize,
) -> Result<ScanOutcome, ScanError> {
    let mut batches = Batches {
        sink,
        ranges: Vec::new(),
    };
    walk(Stream(reader), &mut batches, block)
}

/// Walks the document: the top-level object's keys, and the events array through `handler`.
// One state machine over the window: its states share the cursor and the window, and split
// into functions they would pass all of them back and forth.
#[allow(clippy::too_many_lines)]
pub(super) fn walk<F: Feed, H: Handler>(
    mut feed: F,
    handler: &mut H,
    block: usize,
) -> Result<ScanOutcome, ScanError> {
    let mut w = Window {
        buf: feed.first_buffer(block.max(16)),
        pos: 0,
        end: 0,
        base: 0,
        eof: false,
        eof_cause: None,
    };
    let mut out = ScanOutcome::default();
    let mut state = State::Start;

    'outer: loop {
        // Work through the current window; `need_more` means "refill, keeping from w.pos".
        let mut need_more = false;
        while !need_more {
            // Skip blanks.
            w.pos = skip_ws(&w.buf[..w.end], w.pos);
            if w.pos >= w.end {
                break;
            }
            let buf = &w.buf[..w.end];
            let b = buf[w.pos];
            match state {
                State::Start => match b {
                    b'{' => {
                        w.pos += 1;
                        state = State::ObjectKey { first: true };
                    }
                    b'[' => {
                        w.pos += 1;
                        out.saw_events = true;
                        state = State::Events {
                            first: true,
                            in_object: false,
                        };
                    }
                    0xEF if buf[w.pos..].starts_with(&[0xEF, 0xBB, 0xBF]) => w.pos += 3, // UTF-8 BOM
                    _ => {
                        return Err(ScanError::Syntax {
                            offset: w.abs(w.pos),
                            message: format!(
                                "expected a JSON object or array, found {}",
                                describe(b)
                            ),
                        })
                    }
                },
                State::ObjectKey { first } => {
                    if b == b'}' {
                        w.pos += 1;
                        state = State::Done;
                        continue;
                    }
                    let mut p = w.pos;
                    if !first {
                        if b != b',' {
                            return Err(ScanError::Syntax {
                                offset: w.abs(p),
                                message: format!(
                                    "expected ',' or '}}' in the top-level object, found {}",
                                    describe(b)
                                ),
                            });
                        }
                        p += 1;
                        p = skip_ws(buf, p);
                        if p >= w.end {
                            need_more = true;
                            continue;
                        }
                    }
                    if buf[p] != b'"' {
                        return Err(ScanError::Syntax {
                            offset: w.abs(p),
                            message: format!(
                                "expected a key in the top-level object, found {}",
                                describe(buf[p])
                            ),
                        });
                    }
                    let Some(key_end) = string_end(buf, p) else {
                        need_more = true;
                        continue;
                    };
                    let mut q = key_end;
                    q = skip_ws(buf, q);
                    if q >= w.end {
                        need_more = true;
                        continue;
                    }
                    if buf[q] != b':' {
                        return Err(ScanError::Syntax {
                            offset: w.abs(q),
                            message: format!(
                                "expected ':' after a key, found {}",
                                describe(buf[q])
                            ),
                        });
                    }
                    q += 1;
                    q = skip_ws(buf, q);
                    if q >= w.end {
                        need_more = true;
                        continue;
                    }
                    let key: String = serde_json::from_slice(&buf[p..key_end]).map_err(|e| {
                        ScanError::Syntax {
                            offset: w.abs(p),
                            message: format!("bad key: {e}"),
                        }
                    })?;
                    if key == "traceEvents" {
                        if buf[q] != b'[' {
                            return Err(ScanError::Syntax {
                                offset: w.abs(q),
                                message: format!(
                                    "\"traceEvents\" is not an array (found {})",
                                    describe(buf[q])
                                ),
                            });
                        }
                        w.pos = q + 1;
                        out.saw_events = true;
                        state = State::Events {
                            first: true,
                            in_object: true,
                        };
                    } else {
                        let Some(v_end) = value_end(buf, q, w.eof) else {
                            need_more = true;
                            continue;
                        };
                        handler.meta(&key, &buf[q..v_end], w.abs(q))?;
                        w.pos = v_end;
                        state = State::ObjectKey { first: false };
                    }
                }
                State::Events { first, in_object } => {
                    let run = handler.events(buf, w.pos, w.eof, first, w.base, &mut out.events)?;
                    w.pos = run.pos;
                    state = match run.end {
                        RunEnd::Closed if in_object => State::ObjectKey { first: false },
                        RunEnd::Closed => State::Done,
                        RunEnd::NeedMore | RunEnd::NextPiece => State::Events {
                            first: run.first,
                            in_object,
                        },
                    };
                    need_more = run.end == RunEnd::NeedMore;
                }
                State::Done => {
                    // Trailing bytes after the document: ignore blanks (skipped above), stop at anything else.
                    out.bytes = w.abs(w.pos);
                    break 'outer;
                }
            }
        }
        let keep = w.pos;
        if !feed.refill(&mut w, keep)? {
            // End of input.
            w.pos = skip_ws(&w.buf[..w.end], w.pos);
            out.bytes = w.abs(w.end);
            if state != State::Done {
                out.truncated = true;
                out.truncation_cause = w.eof_cause.take();
            }
            break;
        }
    }
    handler.done()?;
    Ok(out)
}
