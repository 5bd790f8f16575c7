//! The Kineto event scanner: reads one event object into a [`RawEvent`] without serde. It walks
//! the object's keys, matches the ones the model reads, takes their values' text as written
//! (numbers are converted later, exactly, by `micros_to_ns` / `to_u64`), and skips the rest
//! while checking them as strictly as serde_json does (string escapes and control characters,
//! number grammar, literals, nesting). Whatever it is not sure of (an escape in a key or in a
//! string the model reads, a repeated key, a value of an unexpected type, deep nesting, the
//! end of the text) makes it decline, and the serde path reads that event: an event gives the
//! same [`RawEvent`], or the same error, whichever path read it.

use super::raw::{Raw, RawArgs, RawEvent, Text};
use std::borrow::Cow;

/// Deepest nesting the scanner walks (serde_json stops at 128; deeper events go to it).
const MAX_DEPTH: u32 = 100;

/// Reads the event object at the start of `text` into `ev` (as it comes from
/// `RawEvent::default()`, filled in place: the fields are most of a kilobyte) and returns its
/// end (the byte after its `}`), or None when serde must decide (`ev` is then partly filled).
pub(super) fn scan_event<'a>(text: &'a str, ev: &mut RawEvent<'a>) -> Option<usize> {
    let mut s = Scanner {
        b: text.as_bytes(),
        text,
        i: 0,
    };
    s.event(ev)?;
    Some(s.i)
}

struct Scanner<'a> {
    b: &'a [u8],
    text: &'a str,
    i: usize,
}

/// Keys of an event object the model reads, by bit.
const PH: u32 = 1;
const CAT: u32 = 2;
const NAME: u32 = 4;
const PID: u32 = 8;
const TID: u32 = 16;
const TS: u32 = 32;
const DUR: u32 = 64;
const ARGS: u32 = 128;

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// Consumes `c` after blanks.
    fn expect(&mut self, c: u8) -> Option<()> {
        self.skip_ws();
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn event(&mut self, ev: &mut RawEvent<'a>) -> Option<()> {
        let mut seen = 0u32;
        self.object(|sc, key| {
            let bit = match key {
                "ph" => PH,
                "cat" => CAT,
                "name" => NAME,
                "pid" => PID,
                "tid" => TID,
                "ts" => TS,
                "dur" => DUR,
                "args" => ARGS,
                _ => return sc.skip_value(1),
            };
            // A repeated key is an error for serde: it says which.
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            match bit {
                PH => ev.ph = sc.text_value()?,
                CAT => ev.cat = sc.text_value()?,
                NAME => ev.name = sc.text_value()?,
                PID => ev.pid = sc.raw_value(1)?,
                TID => ev.tid = sc.raw_value(1)?,
                TS => ev.ts = sc.raw_value(1)?,
                DUR => ev.dur = sc.raw_value(1)?,
                _ => sc.args(&mut ev.args)?,
            }
            Some(())
        })
    }

    /// `args`: an object of the keys [`RawArgs`] reads (null: none of them).
    fn args(&mut self, args: &mut RawArgs<'a>) -> Option<()> {
        self.skip_ws();
        if self.peek()? == b'n' {
            return self.literal(b"null");
        }
        let mut seen = 0u64;
        self.object(|sc, key| {
            let Some((bit, slot)) = args.slot(key) else {
                return sc.skip_value(2);
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            *slot = sc.raw_value(2)?;
            Some(())
        })
    }

    /// Walks an object: `field` reads each key's value (its key has no escapes).
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.expect(b'{')?;
        self.skip_ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.expect(b'"')?;
            let start = self.i;
            let end = self.plain_string_end()?;
            let key = self.text.get(start..end)?;
            self.expect(b':')?;
            self.skip_ws();
            field(self, key)?;
            self.skip_ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string the model reads as text: borrowed when it has no escapes (else serde decides),
    /// None for null.
    fn text_value(&mut self) -> Option<Option<Text<'a>>> {
        match self.peek()? {
            b'"' => {
                self.i += 1;
                let start = self.i;
                let end = self.plain_string_end()?;
                Some(Some(Text(Cow::Borrowed(self.text.get(start..end)?))))
            }
            b'n' => self.literal(b"null").map(|_| None),
            _ => None,
        }
    }

    /// A value's text as written (null: None), checked as serde checks it.
    fn raw_value(&mut self, depth: u32) -> Option<Option<Raw<'a>>> {
        let start = self.i;
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        self.skip_value(depth)?;
        Some(Some(Raw(self.text.get(start..self.i)?)))
    }

    /// The end of a string without escapes or control characters whose opening quote is
    /// behind `i`; `i` moves past its closing quote.
    fn plain_string_end(&mut self) -> Option<usize> {
        let q = special_byte(self.b, self.i)?;
        if self.b[q] != b'"' {
            return None;
        }
        self.i = q + 1;
        Some(q)
    }

    /// Skips any string whose opening quote is behind `i`, escapes checked as serde_json
    /// checks a string it ignores (a `\u` needs four hex digits, whatever they encode).
    #[inline]
    fn skip_string(&mut self) -> Option<()> {
        loop {
            let q = special_byte(self.b, self.i)?;
            self.i = q + 1;
            match self.b[q] {
                b'"' => return Some(()),
                b'\\' => {}
                _ => return None,
            }
            match self.peek()? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 1,
                b'u' => {
                    let hex = self.b.get(self.i + 1..self.i + 5)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.i += 5;
                }
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.b.get(self.i..self.i + word.len())? != word {
            return None;
        }
        self.i += word.len();
        Some(())
    }

    /// Skips a number, checked against JSON's grammar (`-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`).
    fn number(&mut self) -> Option<()> {
        let b = self.b;
        let mut i = self.i;
        if *b.get(i)? == b'-' {
            i += 1;
        }
        match *b.get(i)? {
            b'0' => {
                i += 1;
                if b.get(i).is_some_and(u8::is_ascii_digit) {
                    return None;
                }
            }
            b'1'..=b'9' => i = digits_end(b, i + 1),
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            if !b.get(i + 1)?.is_ascii_digit() {
                return None;
            }
            i = digits_end(b, i + 2);
        }
        if let Some(b'e' | b'E') = b.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            if !b.get(i)?.is_ascii_digit() {
                return None;
            }
            i = digits_end(b, i + 1);
        }
        self.i = i;
        // A number must be followed by something (the text may end mid-number).
        self.peek().map(|_| ())
    }

    /// Skips the value at `i`, at nesting `depth`.
    fn skip_value(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.skip_string()
            }
            b'{' => self.object(|sc, _| sc.skip_value(depth + 1)),
            b'[' => self.skip_array(depth),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    /// Skips the array at `i` (nesting `depth`) and the arrays inside it in one loop, not a
    /// call per element: recorded shapes and strides are lists of lists of numbers, most of
    /// the bytes an event's arguments hold. Objects and literals inside go to [`Self::skip_value`].
    fn skip_array(&mut self, depth: u32) -> Option<()> {
        // Arrays this walk opened and has not closed.
        let mut open = 0u32;
        loop {
            // A value starts at `i`.
            match self.peek()? {
                b'[' => {
                    if depth + open > MAX_DEPTH {
                        return None;
                    }
                    open += 1;
                    self.i += 1;
                    self.skip_ws();
                    if self.peek()? != b']' {
                        continue;
                    }
                    self.i += 1;
                    open -= 1;
                }
                b'"' => {
                    self.i += 1;
                    self.skip_string()?;
                }
                b'0'..=b'9' => {
                    // Integers up to a delimiter (most of the values here) without the
                    // grammar's walk; anything else (fractions, exponents, `01`) gets it.
                    let mut j = self.i + 1;
                    if self.b[self.i] != b'0' {
                        while self.b.get(j).is_some_and(u8::is_ascii_digit) {
                            j += 1;
                        }
                    }
                    match self.b.get(j) {
                        Some(b',' | b']' | b' ') => self.i = j,
                        _ => self.number()?,
                    }
                }
                b'-' => self.number()?,
                _ => self.skip_value(depth + open)?,
            }
            // After a value: `]`s close arrays, a `,` starts the next value.
            loop {
                if open == 0 {
                    return Some(());
                }
                self.skip_ws();
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        self.skip_ws();
                        break;
                    }
                    b']' => {
                        self.i += 1;
                        open -= 1;
                    }
                    _ => return None,
                }
            }
        }
    }
}

/// The end of the digits from `i`.
#[inline]
fn digits_end(b: &[u8], i: usize) -> usize {
    i + b.get(i..).map_or(0, |rest| {
        rest.iter()
            .position(|c| !c.is_ascii_digit())
            .unwrap_or(rest.len())
    })
}

/// The first byte at or after `i` that ends a plain run of string bytes: a quote, a
/// backslash or a control character (serde_json's errors inside strings). Eight bytes at a
/// time: a byte is zero in `w ^ c` where it equals `c`, and `x - 0x01..01` borrows into a
/// byte's high bit exactly where the byte is below 1 (below 0x20 for the control test), the
/// lowest such byte exactly.
fn special_byte(b: &[u8], mut i: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().ok()?);
        let hits = below(w ^ (ONES * u64::from(b'"')), 1)
            | below(w ^ (ONES * u64::from(b'\\')), 1)
            | below(w, 0x20);
        if hits != 0 {
            return Some(i + (hits.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    (i..b.len()).find(|&k| matches!(b[k], b'"' | b'\\' | 0..=0x1f))
}

#[cfg(test)]
mod tests {
    use super::super::event::check_scanner_against_serde;
    use super::super::raw::RawEvent;
    use super::scan_event;

    const KERNEL: &str = r#"{"ph": "X", "cat": "kernel", "name": "void gemm<128>(float*)", "pid": 0, "tid": 7, "ts": 1712867402367756.123, "dur": 4.5, "args": {"External id": 31, "device": 0, "stream": 7, "correlation": 88, "grid": [240, 1, 1], "block": [256, 1, 1], "shared memory": 0, "est. achieved occupancy %": 12.5, "Call stack": "a.py(3): f;\u00e9 \"q\""}}, {"next": 1}"#;

    #[test]
    fn reads_an_event_as_serde_does() {
        let mut ev = RawEvent::default();
        let end = scan_event(KERNEL, &mut ev).expect("a plain event is the scanner's");
        assert_eq!(&KERNEL[end - 2..end], "}}");
        assert_eq!(ev.ts.unwrap().get(), "1712867402367756.123");
        assert_eq!(ev.args.grid.unwrap().get(), "[240, 1, 1]");
        assert_eq!(ev.name.as_ref().unwrap().0, "void gemm<128>(float*)");
        check_scanner_against_serde(KERNEL).unwrap();
    }

    #[test]
    fn declines_what_serde_must_decide() {
        for text in [
            // An escape in a string the model reads, or in a key.
            r#"{"ph":"X","name":"a\"b"}"#,
            r#"{"p\u0068":"X"}"#,
            // A repeated key (serde: "duplicate field").
            r#"{"ph":"X","ph":"i"}"#,
            r#"{"args":{"device":1,"device":2}}"#,
            // Values serde rejects: a leading zero, a bare dot, a control character, a bad escape.
            r#"{"ts":01}"#,
            r#"{"ts":1.}"#,
            "{\"x\":\"a\u{1}b\"}",
            r#"{"x":"\q"}"#,
            r#"{"x":tru}"#,
            // Types the model does not expect: args as a list, a number as a name.
            r#"{"args":[1,2]}"#,
            r#"{"name":5}"#,
            // Not an object, or cut short.
            r#"["X","kernel"]"#,
            r#"{"ph":"X","ts":12"#,
        ] {
            assert!(
                scan_event(text, &mut RawEvent::default()).is_none(),
                "{text}"
            );
            check_scanner_against_serde(text).unwrap();
        }
    }

    #[test]
    fn special_bytes_are_found_first_wherever_they_sit() {
        let text = "abcdefghijklmnopqrstuvwxyz\u{e9}\u{e9}\u{e9}ABCDEFGH";
        for at in 0..text.len() {
            for c in [b'"', b'\\', 0x01, 0x1f] {
                let mut b = text.as_bytes().to_vec();
                b[at] = c;
                let want = b.iter().position(|&x| matches!(x, b'"' | b'\\' | 0..=0x1f));
                for from in 0..=at {
                    assert_eq!(super::special_byte(&b, from), want, "{at} {c}");
                }
            }
        }
        assert_eq!(
            super::special_byte(b"no special byte here, at all", 0),
            None
        );
    }

    #[test]
    fn nested_lists_read_as_serde_reads_them() {
        let deep = format!("{{\"x\":{}1{}}}", "[".repeat(150), "]".repeat(150));
        let mut texts: Vec<String> = [
            "[[2, 128, 512], [512, 512], []]",
            "[[],[[]],[[[]]]]",
            "[0, 10, -0, 0.5, 1e5, 2E-3, 7]",
            "[\"\", \"c10::BFloat16\", \"[256]\", \"a\\\"b\"]",
            "[true, null, {\"a\": [1]}, false]",
            "[ 1 , 2 ]",
            "[\n  1,\n  2\n]",
            // What serde rejects: a leading zero, a missing or trailing comma, a stray closer.
            "[01]",
            "[1 2]",
            "[1,]",
            "[,1]",
            "[1}",
            "[[1]",
            "[1.]",
            "[-]",
            "[1x]",
        ]
        .iter()
        .flat_map(|v| {
            [
                format!("{{\"args\":{{\"Input Dims\":{v}}},\"ph\":\"X\"}}"),
                format!("{{\"x\":{v},\"ph\":\"X\"}}"),
            ]
        })
        .collect();
        texts.push(deep);
        for text in &texts {
            check_scanner_against_serde(text).unwrap();
        }
        let mut ev = RawEvent::default();
        let text = r#"{"args":{"Input Dims":[[2, 128, 512], [512, 512], []]}}"#;
        assert!(scan_event(text, &mut ev).is_some());
        assert_eq!(
            ev.args.input_dims.unwrap().get(),
            "[[2, 128, 512], [512, 512], []]"
        );
    }

    #[test]
    fn nulls_and_skipped_values_read_as_serde_reads_them() {
        for text in [
            r#"{"ph":null,"ts":null,"args":null}"#,
            r#"{"x":{"y":[true,false,null,-0.5e+3,{"z":"\u00e9\\"}]},"ph":"X"}"#,
            r#"{ "ph" : "X" , "args" : { } }"#,
            r#"{}"#,
        ] {
            assert!(
                scan_event(text, &mut RawEvent::default()).is_some(),
                "{text}"
            );
            check_scanner_against_serde(text).unwrap();
        }
    }
}
