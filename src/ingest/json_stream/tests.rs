//! The scanner on small documents: every window size, cut documents, pieces in parallel.

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
    fn element(&self, piece: &mut Self::Piece, input: &PieceInput<'_>, s: usize) -> Option<usize> {
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

/// Hands over `data` in reads of `step` bytes, then fails with `kind` at byte `fail_at`.
struct Failing<'a> {
    data: &'a [u8],
    at: usize,
    step: usize,
    fail_at: usize,
    kind: io::ErrorKind,
}
impl Read for Failing<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at >= self.fail_at {
            return Err(io::Error::new(self.kind, "the stream broke"));
        }
        let n = out.len().min(self.step).min(self.fail_at - self.at);
        out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn blocks_read_ahead_end_where_the_plain_read_does() {
    // A corrupt compressed tail ends the data (what came before it is analyzed); any other
    // failure fails the scan at the same offset, whichever way the window is filled.
    let events: Vec<String> = (0..2000)
        .map(|i| match i % 5 {
            0 => format!(r#"{{"ph":"X","name":"{}","ts":{i}}}"#, "n".repeat(i % 300)),
            _ => format!(r#"{{"ph":"X","name":"k{i}","ts":{i}}}"#),
        })
        .collect();
    let doc = format!(r#"{{"traceEvents":[{}],"z":1}}"#, events.join(",\n"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    for kind in [io::ErrorKind::InvalidData, io::ErrorKind::Other] {
        for fail_at in [0, 1, 100, doc.len() / 3, doc.len() - 5, doc.len()] {
            let failing = |step| Failing {
                data: doc.as_bytes(),
                at: 0,
                step,
                fail_at,
                kind,
            };
            let mut plain = Offsets::default();
            let a = scan(failing(1000), &mut plain, 4096);
            for (block, piece, step) in [(4096, 500, 1000), (64, 7, 13), (1 << 20, 100, 4096)] {
                let mut parallel = Offsets::default();
                let b = pool
                    .install(|| scan_parallel(failing(step), &Texts, &mut parallel, block, piece));
                let what = format!("{kind:?} at {fail_at}, window {block}, piece {piece}");
                match (&a, &b) {
                    (Ok(x), Ok(y)) => {
                        assert_eq!(x, y, "{what}");
                        assert_eq!(plain.seen, parallel.seen, "{what}");
                    }
                    (
                        Err(ScanError::Io { offset: x, .. }),
                        Err(ScanError::Io { offset: y, .. }),
                    ) => {
                        assert_eq!(x, y, "{what}");
                    }
                    other => panic!("{what}: {other:?}"),
                }
            }
            if kind == io::ErrorKind::InvalidData && fail_at > 0 && fail_at < doc.len() {
                let out = a.as_ref().unwrap();
                assert!(out.truncated && out.truncation_cause.is_some(), "{fail_at}");
            }
        }
    }
}
