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
//!   end while parsing it), while the input is read a block ahead on its own thread. A piece's
//!   work is kept only when the scan of the piece before it, from a verified start, ends exactly
//!   where it starts; so a guess inside a string costs time, never correctness, and the
//!   `PieceSink` gets the same events with the same errors at the same offsets as from the
//!   sequential walk, for any piece size and thread count.
//!
//! A document that ends early (a profiler that died mid-write) is not an error here: the scan
//! stops at the last complete event and `ScanOutcome::truncated` says so.

use memchr::{memchr2, memchr3};
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

/// Block reader with a sliding window over the input.
struct Window<R> {
    reader: R,
    buf: Vec<u8>,
    /// Start of unconsumed data.
    pos: usize,
    /// End of valid data.
    end: usize,
    /// Absolute offset of `buf[0]`.
    base: u64,
    eof: bool,
    eof_cause: Option<String>,
}

impl<R: Read> Window<R> {
    fn new(reader: R, block: usize) -> Self {
        Window {
            reader,
            buf: vec![0; block],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            eof_cause: None,
        }
    }

    /// Reads more data, keeping `buf[keep..end]`, until the window is full or the input ends
    /// (a decoder hands over a few KiB per call; pieces parsed in parallel need a full window).
    /// Returns false when nothing more could be read.
    fn refill(&mut self, keep: usize) -> Result<bool, ScanError> {
        if self.eof {
            return Ok(false);
        }
        if keep > 0 {
            self.buf.copy_within(keep..self.end, 0);
            self.end -= keep;
            self.pos -= keep;
            self.base += keep as u64;
        }
        if self.end == self.buf.len() {
            let n = self.buf.len() * 2;
            self.buf.resize(n, 0);
        }
        let before = self.end;
        while self.end < self.buf.len() {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A corrupt or cut compressed stream: treat as the end of the data we can trust.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::UnexpectedEof
                            | io::ErrorKind::InvalidInput
                            | io::ErrorKind::InvalidData
                    ) =>
                {
                    self.eof = true;
                    self.eof_cause = Some(e.to_string());
                    break;
                }
                Err(e) => {
                    return Err(ScanError::Io {
                        offset: self.base + self.end as u64,
                        source: e,
                    })
                }
            }
        }
        Ok(self.end > before)
    }

    fn abs(&self, i: usize) -> u64 {
        self.base + i as u64
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// First non-blank position at or after `i`, or `buf.len()`.
fn skip_ws(buf: &[u8], i: usize) -> usize {
    i + buf[i.min(buf.len())..]
        .iter()
        .take_while(|&&b| is_ws(b))
        .count()
}

/// Position after the closing quote of the string whose opening quote is at `i`, or None when
/// the buffer ends first.
fn string_end(buf: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let k = j + memchr2(b'"', b'\\', &buf[j..])?;
        if buf[k] == b'"' {
            return Some(k + 1);
        }
        j = k + 2; // skip the escaped byte
        if j > buf.len() {
            return None;
        }
    }
}

/// Position after the object or array that opens at `i` (counting only its own bracket kind,
/// which is enough to find its end: serde validates the inside), or None when the buffer ends.
fn container_end(buf: &[u8], i: usize) -> Option<usize> {
    let (open, close) = if buf[i] == b'{' {
        (b'{', b'}')
    } else {
        (b'[', b']')
    };
    let mut depth = 0usize;
    let mut j = i;
    loop {
        let k = j + memchr3(b'"', open, close, &buf[j..])?;
        match buf[k] {
            b'"' => j = string_end(buf, k)?,
            c if c == open => {
                depth += 1;
                j = k + 1;
            }
            _ => {
                depth -= 1;
                j = k + 1;
                if depth == 0 {
                    return Some(j);
                }
            }
        }
    }
}

/// End of a scalar (number, literal) starting at `i`: the first delimiter after it. `None` when
/// the buffer ends first and more input may follow.
fn scalar_end(buf: &[u8], i: usize, at_eof: bool) -> Option<usize> {
    match buf[i..]
        .iter()
        .position(|&b| matches!(b, b',' | b'}' | b']') || is_ws(b))
    {
        Some(p) => Some(i + p),
        None if at_eof => Some(buf.len()),
        None => None,
    }
}

/// End of any JSON value starting at `i` (non-blank).
fn value_end(buf: &[u8], i: usize, at_eof: bool) -> Option<usize> {
    match buf[i] {
        b'{' | b'[' => container_end(buf, i),
        b'"' => string_end(buf, i),
        _ => scalar_end(buf, i, at_eof),
    }
}

fn describe(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// Where a run of events stopped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RunEnd {
    /// At the `]` that closes the array; `pos` is after it.
    Closed,
    /// The window ends inside an element or before the next one: refill, resume at `pos`.
    NeedMore,
    /// The next element starts at `pos`, at or past the end of the piece (its comma consumed).
    NextPiece,
}

/// A run of events scanned from one position.
#[derive(Clone, Copy, Debug)]
struct EventsRun {
    pos: usize,
    /// No `,` is expected before the next element.
    first: bool,
    end: RunEnd,
}

/// Walks the complete events of the array from `p` (`first`: no `,` before the next element)
/// until the `]`, the end of the window, or an element starting at `piece_end` or later. The one loop both the sequential and the parallel scan run, so they agree on every
/// boundary and every error offset.
/// `element(s)` takes the element that starts at `s` and returns its end, or None when the
/// window ends first.
fn scan_events(
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
trait Handler {
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
    walk(reader, &mut batches, block)
}

/// Walks the document: the top-level object's keys, and the events array through `handler`.
// One state machine over the window: its states share the cursor and the window, and split
// into functions they would pass all of them back and forth.
#[allow(clippy::too_many_lines)]
fn walk<R: Read, H: Handler>(
    reader: R,
    handler: &mut H,
    block: usize,
) -> Result<ScanOutcome, ScanError> {
    let mut w = Window::new(reader, block.max(16));
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
        if !w.refill(keep)? {
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

/// Part of a window as a piece parser sees it: the bytes, and as much of them from the piece's
/// start as is valid UTF-8 (checked once per piece, so strings need no check of their own).
pub struct PieceInput<'a> {
    pub buf: &'a [u8],
    /// `buf[text_at..]` as far as it is UTF-8 (at most to the piece's end).
    text: &'a str,
    text_at: usize,
    /// Absolute offset of `buf[0]` in the (decompressed) input.
    pub base: u64,
    /// No input follows `buf`.
    pub eof: bool,
}

impl<'a> PieceInput<'a> {
    /// `buf[s..]` as text, as far as it was checked (None when `s` is outside the piece's text).
    pub fn text_from(&self, s: usize) -> Option<&'a str> {
        self.text.get(s.checked_sub(self.text_at)?..)
    }
    /// `buf[s..e]` as text, when it was checked.
    pub fn text_of(&self, s: usize, e: usize) -> Option<&'a str> {
        self.text
            .get(s.checked_sub(self.text_at)?..e.checked_sub(self.text_at)?)
    }
    /// The end of the JSON value that starts at `s`, found the way [`scan`] finds it (None when
    /// the window ends first).
    pub fn value_end(&self, s: usize) -> Option<usize> {
        value_end(self.buf, s, self.eof)
    }
}

/// Parses the elements of the events array piece by piece, on any thread: what
/// [`scan_parallel`] hands each worker.
pub trait PieceParser: Sync {
    /// What a piece of events becomes (columns of its own, appended in file order).
    type Piece: Send + Default;
    /// Reads the element that starts at `s` into `piece`; returns its end, or None when the
    /// window ends first (then `piece` is unchanged). The end must be the one
    /// [`PieceInput::value_end`] finds (a parser may find it while parsing a valid element).
    fn element(&self, piece: &mut Self::Piece, input: &PieceInput<'_>, s: usize) -> Option<usize>;
}

/// Receives the parsed pieces in file order, and the other top-level values.
pub trait PieceSink<P> {
    fn append(&mut self, piece: P) -> Result<(), ScanError>;
    fn meta(&mut self, key: &str, value: &[u8], offset: u64) -> Result<(), ScanError>;
}

/// [`scan_parallel`] on the caller's thread: one piece per window.
pub fn scan_pieces<R: Read, P: PieceParser, S: PieceSink<P::Piece> + Send>(
    reader: R,
    parser: &P,
    sink: &mut S,
    block: usize,
) -> Result<ScanOutcome, ScanError> {
    let mut pieces = Pieces {
        parser,
        sink,
        piece_bytes: usize::MAX,
        pending: Vec::new(),
    };
    walk(reader, &mut pieces, block)
}

/// Pieces of about `piece_bytes`, scanned and parsed in parallel.
struct Pieces<'a, P: PieceParser, S> {
    parser: &'a P,
    sink: &'a mut S,
    piece_bytes: usize,
    /// Verified pieces of the previous window, appended while the next window is parsed.
    pending: Vec<P::Piece>,
}

/// One piece's scan: where it stopped, its events, what they became.
type Scanned<T> = Result<(EventsRun, u64, T), ScanError>;

impl<P: PieceParser, S: PieceSink<P::Piece> + Send> Pieces<'_, P, S> {
    fn flush(&mut self) -> Result<(), ScanError> {
        for piece in self.pending.drain(..) {
            self.sink.append(piece)?;
        }
        Ok(())
    }
}

impl<P: PieceParser, S: PieceSink<P::Piece> + Send> Handler for Pieces<'_, P, S> {
    fn events(
        &mut self,
        buf: &[u8],
        p: usize,
        eof: bool,
        first: bool,
        base: u64,
        count: &mut u64,
    ) -> Result<EventsRun, ScanError> {
        use rayon::prelude::*;
        let starts = piece_starts(buf, p, self.piece_bytes);
        let parser = self.parser;
        // Each piece but the first starts at a guessed boundary; its scan is kept only when the
        // piece before it, scanned from a verified start, ends exactly there.
        let scan_piece = |(k, &start): (usize, &usize)| -> Scanned<P::Piece> {
            let piece_end = starts.get(k + 1).copied();
            let region = &buf[start..piece_end.unwrap_or(buf.len())];
            let text = match std::str::from_utf8(region) {
                Ok(t) => t,
                Err(e) => std::str::from_utf8(&region[..e.valid_up_to()]).unwrap_or_default(),
            };
            let input = PieceInput {
                buf,
                text,
                text_at: start,
                base,
                eof,
            };
            let mut piece = P::Piece::default();
            let mut n = 0;
            let run = scan_events(
                buf,
                base,
                start,
                first || k > 0,
                piece_end.unwrap_or(usize::MAX),
                |s| {
                    let e = parser.element(&mut piece, &input, s)?;
                    n += 1;
                    Some(e)
                },
            )?;
            Ok((run, n, piece))
        };
        // The previous window's pieces are appended while this window's are parsed.
        let (scanned, flushed) = rayon::join(
            || -> Vec<Scanned<P::Piece>> {
                starts.par_iter().enumerate().map(scan_piece).collect()
            },
            || self.flush(),
        );
        flushed?;
        let mut last = EventsRun {
            pos: p,
            first,
            end: RunEnd::NeedMore,
        };
        for (k, piece) in scanned.into_iter().enumerate() {
            let (run, n, piece) = piece?;
            if n > 0 {
                *count += n;
                self.pending.push(piece);
            }
            last = run;
            if run.end != RunEnd::NextPiece || starts.get(k + 1) != Some(&run.pos) {
                break;
            }
        }
        Ok(last)
    }
    fn meta(&mut self, key: &str, value: &[u8], offset: u64) -> Result<(), ScanError> {
        self.flush()?;
        self.sink.meta(key, value, offset)
    }
    fn done(&mut self) -> Result<(), ScanError> {
        self.flush()
    }
}

/// Where the pieces of `buf[p..]` start: `p`, then a likely element boundary about every
/// `piece_bytes` (the last piece takes the rest of the window).
fn piece_starts(buf: &[u8], p: usize, piece_bytes: usize) -> Vec<usize> {
    let piece_bytes = piece_bytes.max(1);
    let mut starts = vec![p];
    let mut at = p.saturating_add(piece_bytes);
    while at.saturating_add(piece_bytes / 2) < buf.len() {
        match likely_element_start(buf, at) {
            Some(s) => {
                starts.push(s);
                at = s.saturating_add(piece_bytes);
            }
            None => break,
        }
    }
    starts
}

/// The `{` of the first `}` `,` `{` (blanks allowed between) at or after `at`: the start of an
/// array element, unless the pattern sits inside a string, which the scan of the piece before
/// finds out. Kineto writes `},\n  {`; this does not rely on the blanks.
fn likely_element_start(buf: &[u8], at: usize) -> Option<usize> {
    let mut i = at;
    loop {
        let comma = i + memchr::memchr(b',', buf.get(i..)?)?;
        let before = buf[..comma].iter().rposition(|&b| !is_ws(b));
        let after = skip_ws(buf, comma + 1);
        if before.is_some_and(|b| buf[b] == b'}') && buf.get(after) == Some(&b'{') {
            return Some(after);
        }
        i = comma + 1;
    }
}

/// Reads on its own thread, a block ahead: decompression (or the copy out of the page cache)
/// runs beside the parse.
struct ReadAhead {
    blocks: std::sync::mpsc::Receiver<io::Result<Vec<u8>>>,
    current: Vec<u8>,
    at: usize,
    done: bool,
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.current.len() {
            if self.done {
                return Ok(0);
            }
            match self.blocks.recv() {
                Ok(Ok(block)) => {
                    self.current = block;
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Ok(0);
                }
            }
        }
        let n = out.len().min(self.current.len() - self.at);
        out[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Scans `reader` with the events array cut into pieces of about `piece_bytes` that the rayon
/// pool scans and parses in parallel (`parser`), appended to `sink` in file order; the input
/// is read (decompressed) a block ahead on its own thread. The sink sees the same events, in
/// the same order, with the same errors at the same offsets as with [`scan`], for any piece
/// size and thread count: a piece starts at a guessed element boundary, and its work is kept
/// only when the scan of the piece before it ends exactly there (else the window is scanned
/// on from where that scan ended). With one worker thread it reads and parses on the caller's
/// thread, one piece per window.
pub fn scan_parallel<R: Read + Send, P: PieceParser, S: PieceSink<P::Piece> + Send>(
    reader: R,
    parser: &P,
    sink: &mut S,
    block: usize,
    piece_bytes: usize,
) -> Result<ScanOutcome, ScanError> {
    if rayon::current_num_threads() < 2 {
        return scan_pieces(reader, parser, sink, block);
    }
    let mut pieces = Pieces {
        parser,
        sink,
        piece_bytes,
        pending: Vec::new(),
    };
    let (tx, rx) = std::sync::mpsc::sync_channel::<io::Result<Vec<u8>>>(2);
    let read_bytes = block.clamp(64 << 10, 1 << 20);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut reader = reader;
            loop {
                let mut next = vec![0; read_bytes];
                let (n, failed) = super::fill(&mut reader, &mut next);
                next.truncate(n);
                let at_end = next.is_empty() || failed.is_some();
                if !next.is_empty() && tx.send(Ok(next)).is_err() {
                    return;
                }
                if let Some(e) = failed {
                    let _ = tx.send(Err(e));
                }
                if at_end {
                    return;
                }
            }
        });
        let ahead = ReadAhead {
            blocks: rx,
            current: Vec::new(),
            at: 0,
            done: false,
        };
        // The walk owns the receiver: when it stops early, the reader thread's next send
        // fails and it ends.
        walk(ahead, &mut pieces, block)
    })
}

/// [`scan`] with the scan on its own thread: while the caller's `sink` parses one batch, the
/// scanner decompresses and splits the next (a bounded queue of two batches keeps memory at a
/// few blocks). Each batch is copied out of the window, a memcpy that is small next to parsing.
/// The sink sees the same calls in the same order as with [`scan`]; with one worker thread
/// (`--threads 1`) this is [`scan`] itself.
pub fn scan_pipelined<R: Read + Send, S: ScanSink>(
    reader: R,
    sink: &mut S,
    block: usize,
) -> Result<ScanOutcome, ScanError> {
    if rayon::current_num_threads() < 2 {
        return scan(reader, sink, block);
    }
    enum Batch {
        Events {
            bytes: Vec<u8>,
            ranges: Vec<(usize, usize)>,
            base: u64,
        },
        Meta {
            key: String,
            value: Vec<u8>,
            offset: u64,
        },
    }
    /// The scanner thread's sink: copies each batch and queues it.
    struct Forward(std::sync::mpsc::SyncSender<Batch>);
    /// The consumer stopped (its sink failed): end the scan quietly.
    fn hung_up() -> ScanError {
        ScanError::Syntax {
            offset: 0,
            message: "consumer stopped".into(),
        }
    }
    impl ScanSink for Forward {
        fn events(
            &mut self,
            buf: &[u8],
            ranges: &[(usize, usize)],
            base: u64,
        ) -> Result<(), ScanError> {
            let from = ranges.first().map_or(0, |r| r.0);
            let to = ranges.last().map_or(0, |r| r.1);
            let batch = Batch::Events {
                bytes: buf[from..to].to_vec(),
                ranges: ranges.iter().map(|&(s, e)| (s - from, e - from)).collect(),
                base: base + from as u64,
            };
            self.0.send(batch).map_err(|_| hung_up())
        }
        fn meta(&mut self, key: &str, value: &[u8], offset: u64) -> Result<(), ScanError> {
            let batch = Batch::Meta {
                key: key.to_string(),
                value: value.to_vec(),
                offset,
            };
            self.0.send(batch).map_err(|_| hung_up())
        }
    }
    let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(2);
    std::thread::scope(|scope| {
        let scanner = scope.spawn(move || scan(reader, &mut Forward(tx), block));
        let mut failed = None;
        for batch in rx.iter() {
            let done = match batch {
                Batch::Events {
                    bytes,
                    ranges,
                    base,
                } => sink.events(&bytes, &ranges, base),
                Batch::Meta { key, value, offset } => sink.meta(&key, &value, offset),
            };
            if let Err(e) = done {
                failed = Some(e);
                break;
            }
        }
        // Hanging up makes a scanner blocked on a full queue return.
        drop(rx);
        let scanned = match scanner.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        match failed {
            Some(e) => Err(e),
            None => scanned,
        }
    })
}

/// Convenience: the default block size.
pub fn scan_default<R: Read, S: ScanSink>(
    reader: R,
    sink: &mut S,
) -> Result<ScanOutcome, ScanError> {
    scan(reader, sink, BLOCK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        events: Vec<String>,
        meta: Vec<(String, String)>,
    }
    impl ScanSink for Collect {
        fn events(
            &mut self,
            buf: &[u8],
            ranges: &[(usize, usize)],
            _base: u64,
        ) -> Result<(), ScanError> {
            for &(s, e) in ranges {
                self.events
                    .push(String::from_utf8_lossy(&buf[s..e]).into_owned());
            }
            Ok(())
        }
        fn meta(&mut self, key: &str, value: &[u8], _offset: u64) -> Result<(), ScanError> {
            self.meta
                .push((key.to_string(), String::from_utf8_lossy(value).into_owned()));
            Ok(())
        }
    }

    const DOC: &str = r#" {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "x}\"{"}],
      "traceEvents": [ {"ph":"X","name":"a \"}\\ b","args":{"Input Dims":[[1,2],[]]}} ,
      {"ph":"i","name":"[]"} ], "displayTimeUnit": "ms", "n": -1.5e3 } "#;

    #[test]
    fn every_block_size_gives_the_same_events() {
        type Seen = (Vec<String>, Vec<(String, String)>);
        let mut reference: Option<Seen> = None;
        for block in [16, 17, 23, 31, 64, 100, 4096] {
            let mut c = Collect::default();
            let out = scan(DOC.as_bytes(), &mut c, block).unwrap();
            assert!(!out.truncated, "block {block}");
            assert_eq!(out.events, 2);
            assert_eq!(
                c.events[0],
                r#"{"ph":"X","name":"a \"}\\ b","args":{"Input Dims":[[1,2],[]]}}"#
            );
            assert_eq!(c.meta.len(), 4, "block {block}: {:?}", c.meta);
            assert_eq!(c.meta[3], ("n".to_string(), "-1.5e3".to_string()));
            match &reference {
                None => reference = Some((c.events, c.meta)),
                Some(r) => assert_eq!((&c.events, &c.meta), (&r.0, &r.1), "block {block}"),
            }
        }
    }

    #[test]
    fn a_cut_document_keeps_its_complete_events() {
        let cut = &DOC[..DOC.find(r#"{"ph":"i""#).unwrap() + 5];
        for block in [16, 29, 4096] {
            let mut c = Collect::default();
            let out = scan(cut.as_bytes(), &mut c, block).unwrap();
            assert!(out.truncated);
            assert_eq!(c.events.len(), 1, "block {block}");
        }
    }

    #[test]
    fn a_bare_array_is_a_list_of_events() {
        let mut c = Collect::default();
        let out = scan(&b"[{\"a\":1},{\"b\":[2]}]"[..], &mut c, 16).unwrap();
        assert_eq!(
            (out.events, out.truncated, out.saw_events),
            (2, false, true)
        );
    }

    #[test]
    fn syntax_errors_name_the_offset() {
        let mut c = Collect::default();
        match scan(&b"  nope"[..], &mut c, 64) {
            Err(ScanError::Syntax { offset, .. }) => assert_eq!(offset, 2),
            other => panic!("{other:?}"),
        }
        match scan(&br#"{"traceEvents": {"a": 1}}"#[..], &mut c, 64) {
            Err(ScanError::Syntax { offset, message }) => {
                assert_eq!(offset, 16);
                assert!(message.contains("not an array"));
            }
            other => panic!("{other:?}"),
        }
        match scan(&br#"{"traceEvents": [{"a":1} {"b":2}]}"#[..], &mut c, 64) {
            Err(ScanError::Syntax { offset, .. }) => assert_eq!(offset, 25),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn empty_input_is_truncated_with_no_events() {
        let mut c = Collect::default();
        let out = scan(&b""[..], &mut c, 64).unwrap();
        assert!(out.truncated && !out.saw_events);
    }

    /// Records every event with its absolute offset, and fails on request.
    #[derive(Default)]
    struct Offsets {
        seen: Vec<(u64, String)>,
        fail_at: Option<usize>,
    }
    impl ScanSink for Offsets {
        fn events(
            &mut self,
            buf: &[u8],
            ranges: &[(usize, usize)],
            base: u64,
        ) -> Result<(), ScanError> {
            for &(s, e) in ranges {
                if self.fail_at == Some(self.seen.len()) {
                    return Err(ScanError::Syntax {
                        offset: base + s as u64,
                        message: "sink refused".into(),
                    });
                }
                let text = String::from_utf8_lossy(&buf[s..e]).into_owned();
                self.seen.push((base + s as u64, text));
            }
            Ok(())
        }
        fn meta(&mut self, key: &str, _value: &[u8], offset: u64) -> Result<(), ScanError> {
            self.seen.push((offset, key.to_string()));
            Ok(())
        }
    }

    #[test]
    fn the_pipelined_scan_hands_over_what_the_plain_scan_does() {
        let events: Vec<String> = (0..2000)
            .map(|i| format!(r#"{{"ph":"X","name":"k{i} \"}}","ts":{i}}}"#))
            .collect();
        let doc = format!(
            r#"{{"a":1,"traceEvents":[{}],"b":[2]}}"#,
            events.join(",\n ")
        );
        let cut = &doc[..doc.len() * 2 / 3];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for input in [doc.as_str(), cut] {
            for block in [64, 1000, 1 << 20] {
                let mut plain = Offsets::default();
                let a = scan(input.as_bytes(), &mut plain, block).unwrap();
                let mut piped = Offsets::default();
                let b = pool
                    .install(|| scan_pipelined(input.as_bytes(), &mut piped, block))
                    .unwrap();
                assert_eq!(a, b, "block {block}");
                assert_eq!(plain.seen, piped.seen, "block {block}");
                assert!(plain.seen.len() > 1000);
            }
        }
        // A sink that fails stops the scanner (no hang on the full queue) and its error wins.
        let mut failing = Offsets {
            fail_at: Some(10),
            ..Default::default()
        };
        match pool.install(|| scan_pipelined(doc.as_bytes(), &mut failing, 64)) {
            Err(ScanError::Syntax { message, .. }) => assert_eq!(message, "sink refused"),
            other => panic!("{other:?}"),
        }
        // A syntax error after many good batches still surfaces, at its offset.
        let broken = format!(
            r#"{{"traceEvents":[{} {}]}}"#,
            events[..1500].join(",\n "),
            events[1500..].join(",\n ")
        );
        let mut plain = Offsets::default();
        let mut piped = Offsets::default();
        let a = scan(broken.as_bytes(), &mut plain, 256).unwrap_err();
        let b = pool
            .install(|| scan_pipelined(broken.as_bytes(), &mut piped, 256))
            .unwrap_err();
        match (a, b) {
            (ScanError::Syntax { offset: x, .. }, ScanError::Syntax { offset: y, .. }) => {
                assert_eq!(x, y)
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(plain.seen, piped.seen);
        assert!(plain.seen.len() > 1000);
    }

    /// Collects each piece's events with their offsets, for [`scan_parallel`].
    struct Texts;
    impl PieceParser for Texts {
        type Piece = Vec<(u64, String)>;
        fn element(
            &self,
            piece: &mut Self::Piece,
            input: &PieceInput<'_>,
            s: usize,
        ) -> Option<usize> {
            let e = input.value_end(s)?;
            let text = String::from_utf8_lossy(&input.buf[s..e]).into_owned();
            piece.push((input.base + s as u64, text));
            Some(e)
        }
    }
    impl PieceSink<Vec<(u64, String)>> for Offsets {
        fn append(&mut self, piece: Vec<(u64, String)>) -> Result<(), ScanError> {
            self.seen.extend(piece);
            Ok(())
        }
        fn meta(&mut self, key: &str, _value: &[u8], offset: u64) -> Result<(), ScanError> {
            self.seen.push((offset, key.to_string()));
            Ok(())
        }
    }

    #[test]
    fn pieces_scanned_in_parallel_give_what_the_plain_scan_does() {
        // Element boundaries inside strings (`},{` in a name, compact and pretty) send pieces
        // to wrong starts that the scan of the piece before must catch.
        let events: Vec<String> = (0..3000)
            .map(|i| match i % 7 {
                0 => format!(r#"{{"name":"a}},{{\"b\":{i}}}, {{x","ts":{i}}}"#),
                1 => format!("{{\"args\":{{\"s\":\"}},\\n  {{\"}},\"ts\":{i}}}"),
                2 => format!(r#"{{"nested":[{{"a":1}},{{"b":[{{}},{{}}]}}],"ts":{i}}}"#),
                _ => format!(r#"{{"ph":"X","name":"k{i}","ts":{i}}}"#),
            })
            .collect();
        let pretty = format!(
            r#"{{"a":1,"traceEvents":[{}],"b":[2]}}"#,
            events.join(",\n  ")
        );
        let compact = format!(r#"[{}]"#, events.join(","));
        let broken = format!(
            r#"{{"traceEvents":[{} {}]}}"#,
            events[..2000].join(","),
            events[2000..].join(",")
        );
        let trailing_comma = format!(r#"{{"traceEvents":[{},], "z": 3}}"#, events.join(","));
        let docs = [pretty.as_str(), &compact, &broken, &trailing_comma];
        for threads in [2, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for doc in docs {
                for input in [doc, &doc[..doc.len() / 2], &doc[..doc.len() - 3]] {
                    let mut plain = Offsets::default();
                    let a = scan(input.as_bytes(), &mut plain, 4096);
                    for (block, piece) in [(1 << 20, 1), (1 << 20, 100), (4096, 300), (64, 7)] {
                        let mut parallel = Offsets::default();
                        let b = pool.install(|| {
                            scan_parallel(input.as_bytes(), &Texts, &mut parallel, block, piece)
                        });
                        let what = format!("{threads} threads, window {block}, piece {piece}");
                        match (&a, &b) {
                            (Ok(x), Ok(y)) => assert_eq!(x, y, "{what}"),
                            (
                                Err(ScanError::Syntax {
                                    offset: x,
                                    message: m,
                                }),
                                Err(ScanError::Syntax {
                                    offset: y,
                                    message: n,
                                }),
                            ) => assert_eq!((x, m), (y, n), "{what}"),
                            other => panic!("{what}: {other:?}"),
                        }
                        if a.is_ok() {
                            assert_eq!(plain.seen, parallel.seen, "{what}");
                            assert!(plain.seen.len() > 1000, "{what}");
                        }
                    }
                }
            }
        }
    }
}
