//! What the event scanner has seen, to read later events with less work: the events' shapes (the bytes between their values) and the `args` values
//! it has checked. Neither changes what is read: a shape or a value is used only where the
//! input holds its exact bytes, and the values are checked as the walk checks them.

use super::checked::Checked;
use super::lex::word_at;
use super::raw::RawEvent;
use super::scan::{read_field, walk, Field, Step};

/// The scanner's memory (one per reading thread, kept from piece to piece and file to file).
#[derive(Default)]
pub struct Seen {
    pub(super) shapes: Shapes,
    pub(super) values: Checked,
    /// The walk's notes on the event it is reading.
    pub(super) steps: Vec<Step>,
}

impl Seen {
    /// Forgets the values once their copies pass a few MiB (a trace of ever new shapes).
    pub(super) fn trim(&mut self) {
        if self.values.full() {
            self.values = Checked::default();
        }
    }
}

/// The layouts of the events seen: an event is its values and the bytes between them (its
/// keys, blanks, commas and braces), which repeat event after event in a profiler's output
/// (15 layouts among big_eager's 430,000 events). An event whose bytes between values are
/// those of a shape reads its values in the shape's order, by what read them the first time,
/// without walking keys and blanks. Found by the event's first 16 bytes (its `ph`, in Kineto's
/// layouts), a few per bucket, the last used first; layouts that start alike (the `X` events
/// of every category) share the values read before they part.
pub(super) struct Shapes {
    buckets: Vec<Vec<Shape>>,
}

impl Default for Shapes {
    fn default() -> Self {
        Self {
            buckets: vec![Vec::new(); 1 << Self::BITS],
        }
    }
}

impl Shapes {
    const BITS: u32 = 4;
    const WAYS: usize = 8;

    /// The bucket of the event at the start of `b`.
    fn bucket(b: &[u8]) -> usize {
        let h = (word_at(b, 0) ^ word_at(b, 8).rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> (64 - Self::BITS)) as usize
    }

    /// Reads the event at the start of `text` (into `ev`, as it comes from
    /// `RawEvent::default()`) by a shape of its bucket (see [`Shape::read`]); None when none
    /// fits (`ev` is then as it came).
    pub(super) fn read<'a>(
        &mut self,
        text: &'a str,
        ev: &mut RawEvent<'a>,
        values: &mut Checked,
        steps: &mut Vec<Step>,
    ) -> Option<usize> {
        let ways = &mut self.buckets[Self::bucket(text.as_bytes())];
        // The values the last shape tried read before its bytes parted from the event's.
        let mut read = Read::default();
        let mut tried: Option<usize> = None;
        let mut written = false;
        for way in 0..ways.len() {
            let from = match tried {
                Some(t) if ways[way].shares(&ways[t], read.steps) => read,
                _ => {
                    if written {
                        *ev = RawEvent::default();
                        written = false;
                    }
                    Read::default()
                }
            };
            match ways[way].read(text, ev, values, steps, from) {
                Ok(end) => {
                    ways[..=way].rotate_right(1);
                    return Some(end);
                }
                Err(r) => {
                    read = r.unwrap_or_default();
                    written |= r.is_none_or(|r| r.steps > 0);
                }
            }
            tried = Some(way);
        }
        if written {
            *ev = RawEvent::default();
        }
        None
    }

    /// Keeps the shape of `event` (its whole text), whose values the walk noted in `steps`.
    pub(super) fn learn(&mut self, event: &[u8], steps: &[Step]) {
        if steps.is_empty() {
            return;
        }
        let mut shape = Shape {
            gaps: Vec::with_capacity(event.len()),
            steps: Vec::with_capacity(steps.len()),
        };
        let mut at = 0;
        for step in steps {
            shape.push_gap(&event[at..step.start], Some(step.field));
            at = step.end;
        }
        shape.push_gap(&event[at..], None);
        let ways = &mut self.buckets[Self::bucket(event)];
        ways.insert(0, shape);
        ways.truncate(Self::WAYS);
    }
}

/// How far a shape read an event: its first `steps` values, up to `at`.
#[derive(Clone, Copy, Default)]
struct Read {
    steps: usize,
    at: usize,
}

/// One event layout: the bytes between its values, end to end, and per value the bytes before
/// it and what reads it (None: the bytes after the last value).
#[derive(Clone)]
struct Shape {
    gaps: Vec<u8>,
    steps: Vec<Gap>,
}

/// The bytes before a value: where they end in [`Shape::gaps`], and the first 16 of them as
/// two words with the masks of their bytes, compared without a call.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Gap {
    end: usize,
    len: usize,
    words: [u64; 2],
    masks: [u64; 2],
    field: Option<Field>,
}

impl Gap {
    /// Whether `b` holds these bytes (`bytes`, which the words start) at `i`.
    #[inline(always)]
    fn at(&self, b: &[u8], i: usize, bytes: &[u8]) -> bool {
        match b.get(i..i + 16) {
            Some(head) if self.len <= 16 => {
                let (lo, hi) = head.split_at(8);
                let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap_or_default());
                ((word(lo) ^ self.words[0]) & self.masks[0])
                    | ((word(hi) ^ self.words[1]) & self.masks[1])
                    == 0
            }
            _ => b.get(i..i + self.len) == Some(bytes),
        }
    }
}

impl Shape {
    fn push_gap(&mut self, bytes: &[u8], field: Option<Field>) {
        let head = &bytes[..bytes.len().min(16)];
        let mask = |n: usize| match n {
            0 => 0,
            1..8 => (1u64 << (n * 8)) - 1,
            _ => u64::MAX,
        };
        self.gaps.extend_from_slice(bytes);
        self.steps.push(Gap {
            end: self.gaps.len(),
            len: bytes.len(),
            words: [word_at(head, 0), word_at(head, 8)],
            masks: [mask(head.len()), mask(head.len().saturating_sub(8))],
            field,
        });
    }

    /// Whether this shape's first `n` values and the bytes before them are `other`'s.
    fn shares(&self, other: &Shape, n: usize) -> bool {
        n > 0
            && self.steps.get(..n) == other.steps.get(..n)
            && self.gaps.get(..self.steps[n - 1].end) == other.gaps.get(..other.steps[n - 1].end)
    }

    /// Reads the event at the start of `text` when it has this shape, from what a shape that
    /// starts alike read (`from`): each value's bytes before it must be the shape's, and the
    /// value what its field reads, checked as the walk checks it. On a mismatch, how far it
    /// got when the bytes parted (None when a value did not read: `ev` is then partly filled).
    fn read<'a>(
        &self,
        text: &'a str,
        ev: &mut RawEvent<'a>,
        values: &mut Checked,
        steps: &mut Vec<Step>,
        from: Read,
    ) -> Result<usize, Option<Read>> {
        let b = text.as_bytes();
        let mut i = from.at;
        let mut start = self
            .steps
            .get(from.steps.wrapping_sub(1))
            .map_or(0, |g| g.end);
        for (n, gap) in self.steps.iter().enumerate().skip(from.steps) {
            if !gap.at(b, i, &self.gaps[start..gap.end]) {
                return Err(Some(Read { steps: n, at: i }));
            }
            i += gap.len;
            start = gap.end;
            match gap.field {
                Some(field) => i = read_field(text, i, field, ev, values, steps).ok_or(None)?,
                None => return Ok(i),
            }
        }
        Err(None)
    }
}

/// Reads the event object at the start of `text` into `ev` (as it comes from
/// `RawEvent::default()`, filled in place: the fields are most of a kilobyte) and returns its
/// end (the byte after its `}`), or None when serde must decide (`ev` is then partly filled).
/// An event laid out as one `seen` before (the same bytes between its values: keys, blanks,
/// punctuation) is read by that shape, its values checked as the walk checks them; any other
/// is walked, and its shape kept.
pub(super) fn scan_event<'a>(
    text: &'a str,
    ev: &mut RawEvent<'a>,
    seen: &mut Seen,
) -> Option<usize> {
    if let Some(e) = seen
        .shapes
        .read(text, ev, &mut seen.values, &mut seen.steps)
    {
        return Some(e);
    }
    seen.steps.clear();
    let e = walk(text, ev, &mut seen.values, &mut seen.steps)?;
    seen.shapes.learn(&text.as_bytes()[..e], &seen.steps);
    Some(e)
}

#[cfg(test)]
mod tests {
    use super::super::event::check_scanner_against_serde;
    use super::super::raw::RawEvent;
    use super::{scan_event, Seen};

    const KERNEL: &str = r#"{"ph": "X", "cat": "kernel", "name": "void gemm<128>(float*)", "pid": 0, "tid": 7, "ts": 1712867402367756.123, "dur": 4.5, "args": {"External id": 31, "device": 0, "stream": 7, "correlation": 88, "grid": [240, 1, 1], "block": [256, 1, 1], "shared memory": 0, "est. achieved occupancy %": 12.5, "Call stack": "a.py(3): f;\u00e9 \"q\""}}, {"next": 1}"#;

    #[test]
    fn reads_an_event_as_serde_does() {
        let mut ev = RawEvent::default();
        let end = scan_event(KERNEL, &mut ev, &mut Seen::default())
            .expect("a plain event is the scanner's");
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
                scan_event(text, &mut RawEvent::default(), &mut Seen::default()).is_none(),
                "{text}"
            );
            check_scanner_against_serde(text).unwrap();
        }
    }

    #[test]
    fn shapes_read_what_the_walk_reads_or_decline() {
        use super::super::event::check_scanned;
        let learned = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3, "args": {"External id": 7, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Ev Idx": 9, "other": {"a": [1]}}}"#;
        let same_shape = [
            // Other values, the same bytes between them: read by the shape.
            r#"{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 10, "tid": 20, "ts": 11.25, "dur": 4, "args": {"External id": 8, "Input Dims": [[5], []], "Input type": ["c10::BFloat16", ""], "Ev Idx": 10, "other": {"b": null}}}"#,
            // Nulls where the first had values (the first 16 bytes, which find the shape, kept).
            r#"{"ph": "X", "cat": null, "name": null, "pid": null, "tid": null, "ts": null, "dur": null, "args": {"External id": null, "Input Dims": null, "Input type": null, "Ev Idx": null, "other": null}}"#,
        ];
        let not_quite = [
            // A value of another type than its field reads.
            r#"{"ph": 5, "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3, "args": {"External id": 7, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Ev Idx": 9, "other": {"a": [1]}}}"#,
            // A bad value, a bad number, an escape where the shape had none.
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3, "args": {"External id": 7, "Input Dims": [[2, 3], [3, 4],], "Input type": ["float", "float"], "Ev Idx": 9, "other": {"a": [1]}}}"#,
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 01, "tid": 2, "ts": 10.5, "dur": 3, "args": {"External id": 7, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Ev Idx": 9, "other": {"a": [1]}}}"#,
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten\"mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3, "args": {"External id": 7, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Ev Idx": 9, "other": {"a": [1]}}}"#,
            // Other keys or blanks between the values, a repeated key, a cut.
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3, "args": {"External id": 7, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Ev Idx": 9, "other": {"a": [1]}, "x": 1}}"#,
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3, "args": {"External id": 7, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Ev Idx": 9, "other": {"a": [1]} }}"#,
            r#"{"ph": "X", "ph": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3, "args": {"External id": 7, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Ev Idx": 9, "other": {"a": [1]}}}"#,
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3, "args": {"External id": 7, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], "Ev Idx": 9, "other": {"a": [1]}}"#,
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10."#,
        ];
        for probe in same_shape.iter().chain(&not_quite) {
            let mut seen = Seen::default();
            let mut ev = RawEvent::default();
            assert!(scan_event(learned, &mut ev, &mut seen).is_some());
            check_scanned(probe, &mut seen).unwrap();
        }
        // The same-shape events are read by the shape (the walk would note their steps).
        for probe in same_shape {
            let mut seen = Seen::default();
            scan_event(learned, &mut RawEvent::default(), &mut seen).unwrap();
            seen.steps.clear();
            assert!(scan_event(probe, &mut RawEvent::default(), &mut seen).is_some());
            assert!(seen.steps.is_empty(), "{probe}");
        }
        // The others are not scanned, or scanned by a walk.
        for probe in not_quite {
            let mut seen = Seen::default();
            scan_event(learned, &mut RawEvent::default(), &mut seen).unwrap();
            seen.steps.clear();
            let read = scan_event(probe, &mut RawEvent::default(), &mut seen);
            assert!(read.is_none() || !seen.steps.is_empty(), "{probe}");
        }
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
        assert!(scan_event(text, &mut ev, &mut Seen::default()).is_some());
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
                scan_event(text, &mut RawEvent::default(), &mut Seen::default()).is_some(),
                "{text}"
            );
            check_scanner_against_serde(text).unwrap();
        }
    }
}
