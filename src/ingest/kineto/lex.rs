//! JSON's grammar as serde_json checks it, for the event scanner: blanks, keys, and values
//! skipped (strings with their escapes, numbers, literals, nested lists and objects) without
//! building them. Each function takes the bytes and a position and returns the position after
//! what it read, or None where serde must decide.

use super::super::num::digits_end;

/// Deepest nesting the scanner walks (serde_json stops at 128; deeper events go to it).
const MAX_DEPTH: u32 = 100;

/// What follows an object's value: another key (at its quote) or the object's end.
pub(super) enum Next {
    Key(usize),
    End(usize),
}

/// After a value ending at `i`: `,` and the next key, or `}` (the byte after it).
#[inline(always)]
pub(super) fn after_field(b: &[u8], i: usize) -> Option<Next> {
    let i = ws(b, i);
    match *b.get(i)? {
        b',' => Some(Next::Key(ws(b, i + 1))),
        b'}' => Some(Next::End(i + 1)),
        _ => None,
    }
}

/// The key whose opening quote is at `i` (no escapes) and where its value starts (after the
/// `:` and blanks).
#[inline(always)]
pub(super) fn key(b: &[u8], i: usize) -> Option<(&[u8], usize)> {
    if *b.get(i)? != b'"' {
        return None;
    }
    let q = plain_end(b, i + 1)?;
    let mut v = q + 1;
    // Kineto writes `"key": value`; blanks before the colon are allowed too.
    if b.get(v) != Some(&b':') {
        v = ws(b, v);
        if *b.get(v)? != b':' {
            return None;
        }
    }
    Some((&b[i + 1..q], ws(b, v + 1)))
}

/// Skips blanks from `i`.
#[inline(always)]
pub(super) fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// The closing quote of a string without escapes or control characters that starts at `i`
/// (after its opening quote).
#[inline(always)]
pub(super) fn plain_end(b: &[u8], i: usize) -> Option<usize> {
    let q = special_byte(b, i)?;
    (b[q] == b'"').then_some(q)
}

/// Skips any string that starts at `i` (after its opening quote) and returns the byte after
/// its closing quote; escapes checked as serde_json checks a string it ignores (a `\u` needs
/// four hex digits, whatever they encode).
#[inline]
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let q = special_byte(b, i)?;
        i = q + 1;
        match b[q] {
            b'"' => return Some(i),
            b'\\' => {}
            _ => return None,
        }
        match *b.get(i)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 1,
            b'u' => {
                let hex = b.get(i + 1..i + 5)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
                i += 5;
            }
            _ => return None,
        }
    }
}

/// `word` at `i`: the byte after it.
#[inline(always)]
pub(super) fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (b.get(i..i + word.len())? == word).then_some(i + word.len())
}

/// Skips the number at `i`, checked against JSON's grammar
/// (`-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`), and returns its end.
#[inline]
pub(super) fn number(b: &[u8], i: usize) -> Option<usize> {
    // Kineto's forms first (ids, counts, microseconds: `[1-9][0-9]*(.[0-9]+)?`, a lone `0`),
    // then the rest.
    if b.get(i) == Some(&b'0') {
        let next = *b.get(i + 1)?;
        if !next.is_ascii_digit() && !matches!(next, b'.' | b'e' | b'E') {
            return Some(i + 1);
        }
    } else if let Some(b'1'..=b'9') = b.get(i) {
        let mut j = digits_end(b, i + 1);
        if b.get(j) == Some(&b'.') {
            if !b.get(j + 1)?.is_ascii_digit() {
                return None;
            }
            j = digits_end(b, j + 2);
        }
        // A number must be followed by something (the text may end mid-number).
        if !matches!(b.get(j)?, b'e' | b'E') {
            return Some(j);
        }
    }
    any_number(b, i)
}

/// [`number`] in full.
fn any_number(b: &[u8], mut i: usize) -> Option<usize> {
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
    // A number must be followed by something (the text may end mid-number).
    b.get(i)?;
    Some(i)
}

/// Skips the value at `i`, at nesting `depth`, and returns its end.
pub(super) fn skip_value(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    match *b.get(i)? {
        b'"' => skip_string(b, i + 1),
        b'{' => skip_object(b, i, depth),
        b'[' => skip_array(b, i, depth),
        b't' => literal(b, i, b"true"),
        b'f' => literal(b, i, b"false"),
        b'n' => literal(b, i, b"null"),
        _ => number(b, i),
    }
}

/// Skips the object at `i` (nesting `depth`); its keys must be plain, as the event's are.
fn skip_object(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    let mut i = ws(b, i + 1);
    if *b.get(i)? == b'}' {
        return Some(i + 1);
    }
    loop {
        let (_, v) = key(b, i)?;
        i = skip_value(b, v, depth + 1)?;
        match after_field(b, i)? {
            Next::Key(k) => i = k,
            Next::End(e) => return Some(e),
        }
    }
}

/// Skips the array at `i` (nesting `depth`) and the arrays inside it in one loop, not a
/// call per element: recorded shapes and strides are lists of lists of numbers, most of
/// the bytes an event's arguments hold. Objects and literals inside go to [`skip_value`].
fn skip_array(b: &[u8], mut i: usize, depth: u32) -> Option<usize> {
    // Arrays this walk opened and has not closed.
    let mut open = 0u32;
    loop {
        // A value starts at `i`.
        match *b.get(i)? {
            b'[' => {
                if depth + open > MAX_DEPTH {
                    return None;
                }
                open += 1;
                i = ws(b, i + 1);
                if *b.get(i)? != b']' {
                    continue;
                }
                i += 1;
                open -= 1;
            }
            b'"' => i = skip_string(b, i + 1)?,
            c @ b'0'..=b'9' => {
                // Integers up to a delimiter (most of the values here) without the
                // grammar's walk; anything else (fractions, exponents, `01`) gets it.
                let j = if c == b'0' {
                    i + 1
                } else {
                    digits_end(b, i + 1)
                };
                i = match b.get(j) {
                    Some(b',' | b']' | b' ') => j,
                    _ => number(b, i)?,
                };
            }
            b'-' => i = number(b, i)?,
            _ => i = skip_value(b, i, depth + open)?,
        }
        // After a value: `]`s close arrays, a `,` starts the next value.
        loop {
            if open == 0 {
                return Some(i);
            }
            i = ws(b, i);
            match *b.get(i)? {
                b',' => {
                    i = ws(b, i + 1);
                    break;
                }
                b']' => {
                    i += 1;
                    open -= 1;
                }
                _ => return None,
            }
        }
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` below `n` (at most 0x80), exact for the lowest such byte
/// (a borrow can mark bytes above it): `x - n` borrows into a byte's high bit where it is below.
#[inline(always)]
fn below(x: u64, n: u64) -> u64 {
    x.wrapping_sub(ONES * n) & !x & HIGH
}

/// The first byte at or after `i` that ends a plain run of string bytes: a quote, a
/// backslash or a control character (serde_json's errors inside strings). Eight bytes at a
/// time: a byte is zero in `w ^ c` where it equals `c`, and [`below`] finds the lowest byte
/// below 1 (below 0x20 for the control test) exactly.
#[inline]
fn special_byte(b: &[u8], mut i: usize) -> Option<usize> {
    while let Some(chunk) = b.get(i..i + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let w = u64::from_le_bytes(w);
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

/// The eight bytes at `i` as a word (zeros past the end of `b`).
#[inline(always)]
pub(super) fn word_at(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    if let Some(w) = b.get(i..i + 8) {
        a.copy_from_slice(w);
    } else if let Some(rest) = b.get(i..) {
        a[..rest.len()].copy_from_slice(rest);
    }
    u64::from_le_bytes(a)
}

#[cfg(test)]
mod tests {
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
}
