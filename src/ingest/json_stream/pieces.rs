//! The events array cut into pieces that the rayon pool scans and parses at once, while the
//! input is read a block ahead on its own thread ([`scan_parallel`]).

use super::lexical::{is_ws, skip_ws, value_end};
use super::{
    scan_events, walk, Bytes, EventsRun, Feed, Handler, InPlace, RunEnd, ScanError, ScanOutcome,
    Stream, Window,
};
use std::io::{self, Read};

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
    walk(Stream(reader), &mut pieces, block)
}

/// [`scan_parallel`] of a file read in place: its windows are mapped from the page cache, not
/// copied out of it (see [`InPlace`]), so no thread reads ahead. With one worker thread, one
/// piece per window, as [`scan_pieces`].
pub fn scan_in_place<P: PieceParser, S: PieceSink<P::Piece> + Send>(
    file: InPlace,
    parser: &P,
    sink: &mut S,
    block: usize,
    piece_bytes: usize,
) -> Result<ScanOutcome, ScanError> {
    let mut pieces = Pieces {
        parser,
        sink,
        piece_bytes: if rayon::current_num_threads() < 2 {
            usize::MAX
        } else {
            piece_bytes
        },
        pending: Vec::new(),
    };
    walk(file.feed(block.max(16)), &mut pieces, block)
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
            // simdutf8 checks 32 bytes a step (std's check was 3% of a one-thread read); only
            // a piece that is not UTF-8 to its end asks std where it stops.
            let text = match simdutf8::basic::from_utf8(region) {
                Ok(t) => t,
                Err(_) => match std::str::from_utf8(region) {
                    Ok(t) => t,
                    Err(e) => std::str::from_utf8(&region[..e.valid_up_to()]).unwrap_or_default(),
                },
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

/// One block read ahead: `len` bytes of data after `head` spare bytes; `last` when the input
/// ended with it (or failed: `error`).
struct Filled {
    block: Vec<u8>,
    len: usize,
    last: bool,
    error: Option<io::Error>,
}

/// Windows read (decompressed, or copied out of the page cache) a block ahead on their own
/// thread. Each block keeps `head` spare bytes before its data, where the end of the window
/// before it (the event the window cut) is copied: a refill swaps buffers instead of copying
/// the window (that copy, made while the pieces' threads waited, was 30-50 ms of big_eager's
/// 0.25 s two-thread read).
struct Blocks {
    filled: std::sync::mpsc::Receiver<Filled>,
    /// Buffers done with, handed back to the reading thread to fill again (a fresh block is
    /// zeroed and faulted in: a few percent of a read).
    spare: std::sync::mpsc::SyncSender<Vec<u8>>,
    head: usize,
}

/// After a block's data is in `w`: the input ends with it when it was the last (or failed).
fn ended(w: &mut Window, last: bool, error: Option<io::Error>) -> Result<(), ScanError> {
    w.eof = last;
    match error {
        Some(e) => w.stop_at_error(e, w.end),
        None => Ok(()),
    }
}

impl Feed for Blocks {
    fn first_buffer(&self, _block: usize) -> Bytes {
        Bytes::Owned(Vec::new())
    }
    fn refill(&mut self, w: &mut Window, keep: usize) -> Result<bool, ScanError> {
        if w.eof {
            return Ok(false);
        }
        let Ok(mut f) = self.filled.recv() else {
            // The reading thread is gone without saying why: the data ends here.
            w.eof = true;
            return Ok(false);
        };
        let tail = w.end - keep;
        let kept_at = w.base + keep as u64;
        if tail <= self.head && kept_at >= (self.head - tail) as u64 {
            let start = self.head - tail;
            f.block[start..self.head].copy_from_slice(&w.buf[keep..w.end]);
            if let Bytes::Owned(done) = std::mem::replace(&mut w.buf, Bytes::Owned(f.block)) {
                let _ = self.spare.try_send(done);
            }
            w.base = kept_at - start as u64;
            w.pos = start + (w.pos - keep);
            w.end = self.head + f.len;
            ended(w, f.last, f.error)?;
            return Ok(f.len > 0);
        }
        // The first window, or one that keeps more than `head` (an event longer than the
        // window): copied, with blocks until the new data is at least as long as what was
        // kept, so that a window that must grow doubles.
        let mut buf = Vec::with_capacity(tail + f.len.max(tail));
        buf.extend_from_slice(&w.buf[keep..w.end]);
        let (last, error) = loop {
            buf.extend_from_slice(&f.block[self.head..self.head + f.len]);
            let _ = self.spare.try_send(f.block);
            if f.last || buf.len() - tail >= tail.max(1) {
                break (f.last, f.error);
            }
            match self.filled.recv() {
                Ok(next) => f = next,
                Err(_) => break (true, None),
            }
        };
        w.buf = Bytes::Owned(buf);
        w.base = kept_at;
        w.pos -= keep;
        w.end = w.buf.len();
        ended(w, last, error)?;
        Ok(w.end > tail)
    }
}

/// Scans `reader` with the events array cut into pieces of about `piece_bytes` that the rayon
/// pool scans and parses in parallel (`parser`), appended to `sink` in file order; the input
/// is read (decompressed) a block ahead on its own thread. The sink sees the same events, in
/// the same order, with the same errors at the same offsets as with [`scan`](super::scan), for any piece
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
    // Handed over one at a time: the thread fills the next block while this one is parsed.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Filled>(0);
    let (spare_tx, spare_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(1);
    let width = block.max(16);
    let head = width.min(64 << 10);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut reader = reader;
            loop {
                let mut block = spare_rx.try_recv().unwrap_or_default();
                block.resize(head + width, 0);
                let (len, error) = crate::ingest::fill(&mut reader, &mut block[head..]);
                let last = len < width || error.is_some();
                let filled = Filled {
                    block,
                    len,
                    last,
                    error,
                };
                if tx.send(filled).is_err() || last {
                    return;
                }
            }
        });
        let blocks = Blocks {
            filled: rx,
            spare: spare_tx,
            head,
        };
        // The walk owns the receiver: when it stops early, the reader thread's next send
        // fails and it ends.
        walk(blocks, &mut pieces, block)
    })
}
