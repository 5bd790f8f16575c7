//! The lexical steps of the scan: blanks, and where a string, a container or a scalar ends
//! (found with `memchr`, not validated: the parsers validate what they read).

use memchr::{memchr2, memchr3};

pub(super) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// First non-blank position at or after `i`, or `buf.len()`.
pub(super) fn skip_ws(buf: &[u8], i: usize) -> usize {
    i + buf[i.min(buf.len())..]
        .iter()
        .take_while(|&&b| is_ws(b))
        .count()
}

/// Position after the closing quote of the string whose opening quote is at `i`, or None when
/// the buffer ends first.
pub(super) fn string_end(buf: &[u8], i: usize) -> Option<usize> {
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
pub(super) fn container_end(buf: &[u8], i: usize) -> Option<usize> {
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
pub(super) fn scalar_end(buf: &[u8], i: usize, at_eof: bool) -> Option<usize> {
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
pub(super) fn value_end(buf: &[u8], i: usize, at_eof: bool) -> Option<usize> {
    match buf[i] {
        b'{' | b'[' => container_end(buf, i),
        b'"' => string_end(buf, i),
        _ => scalar_end(buf, i, at_eof),
    }
}

pub(super) fn describe(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}
