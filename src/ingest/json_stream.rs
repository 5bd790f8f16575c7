//! Streams a Chrome-trace JSON document without building it in memory.
//!
//! The document is `{ "traceEvents": [ {...}, ... ], "other": ... }` (keys in any order) or a bare
//! array of events. This scanner reads it in blocks, finds the byte range of each complete event
//! with a cheap structural scan (strings skipped with `memchr`, only braces counted), and hands
//! batches of ranges to the caller, who parses them with serde (in parallel if it likes). Memory
//! is one block plus the largest single event, whatever the file size. Every other top-level
//! value is handed over whole (they are small: device properties, distributed info).
//!
//! A document that ends early (a profiler that died mid-write) is not an error here: the scan
//! stops at the last complete event and [`ScanOutcome::truncated`] says so.

use memchr::{memchr2, memchr3};
use std::io::{self, Read};

/// Initial block size; a block grows only when one event is larger than it.
pub const BLOCK: usize = 4 << 20;

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

    /// Reads more data, keeping `buf[keep..end]`. Returns false at end of input.
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
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
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
                    return Ok(false);
                }
                Err(e) => {
                    return Err(ScanError::Io {
                        offset: self.base + self.end as u64,
                        source: e,
                    })
                }
            }
        }
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

/// Scans `reader` to the end, feeding `sink`. `block` is the initial window size (tests use tiny
/// windows to exercise every boundary).
// One state machine over the window: its states share the cursor, the window and the batch,
// and split into functions they would pass all of them back and forth in the hottest loop.
#[allow(clippy::too_many_lines)]
pub fn scan<R: Read, S: ScanSink>(
    reader: R,
    sink: &mut S,
    block: usize,
) -> Result<ScanOutcome, ScanError> {
    let mut w = Window::new(reader, block.max(16));
    let mut out = ScanOutcome::default();
    let mut state = State::Start;
    let mut ranges: Vec<(usize, usize)> = Vec::new();

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
                        sink.meta(&key, &buf[q..v_end], w.abs(q))?;
                        w.pos = v_end;
                        state = State::ObjectKey { first: false };
                    }
                }
                State::Events { first, in_object } => {
                    // Collect every complete event in the window, then hand them over at once.
                    let mut p = w.pos;
                    let mut first = first;
                    ranges.clear();
                    let mut closed = false;
                    loop {
                        p = skip_ws(buf, p);
                        if p >= w.end {
                            break;
                        }
                        if buf[p] == b']' {
                            p += 1;
                            closed = true;
                            break;
                        }
                        let mut s = p;
                        if !first {
                            if buf[s] != b',' {
                                return Err(ScanError::Syntax {
                                    offset: w.abs(s),
                                    message: format!(
                                        "expected ',' or ']' between events, found {}",
                                        describe(buf[s])
                                    ),
                                });
                            }
                            s += 1;
                            s = skip_ws(buf, s);
                            if s >= w.end {
                                break;
                            }
                        }
                        if buf[s] == b']' && !first {
                            // Trailing comma before ']': tolerate it.
                            p = s + 1;
                            closed = true;
                            break;
                        }
                        let Some(e) = value_end(buf, s, w.eof) else {
                            break;
                        };
                        ranges.push((s, e));
                        first = false;
                        p = e;
                    }
                    if !ranges.is_empty() {
                        out.events += ranges.len() as u64;
                        sink.events(buf, &ranges, w.base)?;
                    }
                    w.pos = p;
                    if closed {
                        state = if in_object {
                            State::ObjectKey { first: false }
                        } else {
                            State::Done
                        };
                    } else {
                        state = State::Events { first, in_object };
                        need_more = true;
                    }
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
    Ok(out)
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
}
