//! Exact number parsing from JSON lexemes.
//!
//! Kineto writes microseconds as decimals (`2204338330536.067`); traces without
//! `baseTimeNanoseconds` carry epoch-scale values (`1712195495506161.2`) with more significant
//! digits than an f64 holds. Parsing the lexeme straight to integer nanoseconds keeps every
//! nanosecond; values in strings (rocprof v1 JSON writes `"ts":"622109046136"`) parse the same way.

/// `s.trim()`, without the scan when its ends are plain ASCII (every lexeme serde hands over).
fn trim(s: &str) -> &str {
    let plain = |b: Option<&u8>| b.is_some_and(|&b| b.is_ascii() && !b.is_ascii_whitespace());
    if plain(s.as_bytes().first()) && plain(s.as_bytes().last()) {
        s
    } else {
        s.trim()
    }
}

/// Strips the quotes of a string lexeme (numbers in strings carry no escapes).
pub fn unquote(lexeme: &str) -> &str {
    let s = trim(lexeme);
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

/// Parses a microsecond value (`12`, `12.5`, `1.2e3`, `"12"`) into nanoseconds, exactly for plain
/// decimals. `None` for `null`, non-numbers, NaN and values out of range.
pub fn micros_to_ns(lexeme: &str) -> Option<i64> {
    // A plain decimal, as Kineto writes every timestamp, needs no trimming or unquoting.
    if let Some(ns) = plain_micros_to_ns(lexeme.as_bytes()) {
        return ns;
    }
    let s = trim(unquote(lexeme));
    if let Some(ns) = plain_micros_to_ns(s.as_bytes()) {
        return ns;
    }
    if s.is_empty() {
        return None;
    }
    if s.bytes().any(|b| matches!(b, b'e' | b'E')) {
        let v: f64 = s.parse().ok()?;
        let ns = v * 1000.0;
        return (ns.is_finite() && ns.abs() < 9.0e18).then(|| ns.round() as i64);
    }
    let (neg, digits) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (int, frac) = match digits.find('.') {
        Some(p) => (&digits[..p], &digits[p + 1..]),
        None => (digits, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut ns = whole.checked_mul(1000)?;
    let fb = frac.as_bytes();
    let mut scale = 100;
    for &d in fb.iter().take(3) {
        ns = ns.checked_add(i64::from(d - b'0') * scale)?;
        scale /= 10;
    }
    // Round half up on the first dropped digit.
    if fb.len() > 3 && fb[3] >= b'5' {
        ns = ns.checked_add(1)?;
    }
    Some(if neg { -ns } else { ns })
}

/// [`micros_to_ns`] of a plain decimal (`digits[.digits]`, Kineto's every timestamp) in one
/// pass over its bytes, eight digits at a time; `None` when the lexeme is anything else
/// (blanks, quotes, signs, exponents, an empty integer part, more than 18 integer digits: the
/// general path decides those). Same result as the general path, overflow included (the
/// fraction adds at most 1000 ns, so one checked addition decides what the general path's
/// several do).
fn plain_micros_to_ns(b: &[u8]) -> Option<Option<i64>> {
    let n = digits_end(b, 0);
    if n == 0 || n > 18 {
        return None;
    }
    let frac = match &b[n..] {
        [] => &b[n..],
        [b'.', rest @ ..] => rest,
        _ => return None,
    };
    if digits_end(frac, 0) != frac.len() {
        return None;
    }
    // 18 digits fit an i64.
    let whole = digits_value(b, n) as i64;
    let digit = |k: usize| frac.get(k).map_or(0, |&c| i64::from(c - b'0'));
    // Round half up on the first dropped digit.
    let add = digit(0) * 100 + digit(1) * 10 + digit(2) + i64::from(digit(3) >= 5);
    Some(whole.checked_mul(1000).and_then(|ns| ns.checked_add(add)))
}

/// A run of 1 to 19 ASCII digits as a number (10^19 - 1 fits a u64); None for anything else.
fn plain_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    if b.len() < 8 {
        // Ids and counts, a few digits each: one pass, one at a time.
        return b.iter().try_fold(0u64, |acc, &c| {
            let d = c.wrapping_sub(b'0');
            (d <= 9).then(|| acc * 10 + u64::from(d))
        });
    }
    (digits_end(b, 0) == b.len()).then(|| digits_value(b, b.len()))
}

/// Parses an id or count (`17`, `"17"`, `17.0`); negative and fractional ids are truncated toward
/// zero and clamped at zero. `None` for `null` and non-numbers.
pub fn to_u64(lexeme: &str) -> Option<u64> {
    // Kineto's every id: plain digits, no trimming, unquoting or checks for overflow.
    if let Some(v) = plain_u64(lexeme.as_bytes()) {
        return Some(v);
    }
    let s = trim(unquote(lexeme));
    if let Ok(v) = s.parse::<u64>() {
        return Some(v);
    }
    let v: f64 = s.parse().ok()?;
    v.is_finite().then_some(if v <= 0.0 { 0 } else { v as u64 })
}

/// The number at the end of a string such as `"stream 7"` (2021 Kineto stream tids).
pub fn trailing_u64(s: &str) -> Option<u64> {
    let s = unquote(s);
    let digits = s.len() - s.bytes().rev().take_while(|b| b.is_ascii_digit()).count();
    s[digits..].parse().ok()
}

// Digits eight at a time, as words.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that is not an ASCII digit, exact for the lowest such byte
/// (a borrow can mark bytes above it): a byte is not a digit where subtracting `0` borrows
/// into its high bit (below `0`), where adding 0x46 reaches its high bit (above `9`), or where
/// its high bit is set already.
#[inline(always)]
fn non_digits(w: u64) -> u64 {
    let below_zero = w.wrapping_sub(ONES * 0x30) & !w & HIGH;
    below_zero | ((w.wrapping_add(ONES * 0x46) | w) & HIGH)
}

/// The eight bytes of `b` at `i` as a word, the first the lowest (None past the end).
#[inline(always)]
fn word(b: &[u8], i: usize) -> Option<u64> {
    let chunk: [u8; 8] = b.get(i..i + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(chunk))
}

/// The end of the ASCII digits from `i`, eight bytes at a time (timestamps have 13-19 digits).
#[inline(always)]
pub(super) fn digits_end(b: &[u8], mut i: usize) -> usize {
    while let Some(w) = word(b, i) {
        let other = non_digits(w);
        if other != 0 {
            return i + (other.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// The value of eight ASCII digits, the first in the lowest byte; bytes of 0 count as leading
/// zeros (the pairs, then the fours, then the eight, each a multiply).
#[inline(always)]
fn eight_digits(w: u64) -> u64 {
    let w = (w & 0x0F0F_0F0F_0F0F_0F0F).wrapping_mul(2561) >> 8;
    let w = (w & 0x00FF_00FF_00FF_00FF).wrapping_mul(6_553_601) >> 16;
    (w & 0x0000_FFFF_0000_FFFF).wrapping_mul(42_949_672_960_001) >> 32
}

/// The value of the ASCII digits `b[..n]` (n at most 19), eight at a time: the last few read
/// as the eight bytes ending with them, those before them masked to zeros (fewer than eight in
/// all: one at a time).
#[inline]
fn digits_value(b: &[u8], n: usize) -> u64 {
    const SCALE: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];
    let mut v = 0u64;
    let mut i = 0;
    while i + 8 <= n {
        v = v * 100_000_000 + word(b, i).map_or(0, eight_digits);
        i += 8;
    }
    let r = n - i;
    if r == 0 {
        return v;
    }
    match n.checked_sub(8).and_then(|at| word(b, at)) {
        Some(w) => v * SCALE[r] + eight_digits(w & (u64::MAX << (8 * (8 - r)))),
        // Fewer than eight: one at a time (ids and counts, a few digits each).
        None => b[..n]
            .iter()
            .fold(0, |acc, &c| acc * 10 + u64::from(c - b'0')),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_become_exact_nanoseconds() {
        assert_eq!(
            micros_to_ns("2204338330536.067"),
            Some(2_204_338_330_536_067)
        );
        assert_eq!(
            micros_to_ns("1712195495506161.2"),
            Some(1_712_195_495_506_161_200)
        );
        assert_eq!(micros_to_ns("12"), Some(12_000));
        assert_eq!(micros_to_ns("\"622109046136\""), Some(622_109_046_136_000));
        assert_eq!(micros_to_ns("2.4045"), Some(2_405));
        assert_eq!(micros_to_ns("-1.5"), Some(-1_500));
        assert_eq!(micros_to_ns(".5"), Some(500));
        assert_eq!(micros_to_ns("1.5e3"), Some(1_500_000));
        assert_eq!(micros_to_ns("null"), None);
        assert_eq!(micros_to_ns("\"NaN\""), None);
        assert_eq!(micros_to_ns("1e300"), None);
        assert_eq!(micros_to_ns("99999999999999999999"), None);
        assert_eq!(micros_to_ns("9223372036854775.999"), None);
    }

    #[test]
    fn the_plain_decimal_path_agrees_with_the_general_one() {
        let general = |s: &str| {
            // micros_to_ns with the fast path disabled: the lexeme with a leading '+' takes the
            // general path and means the same number.
            micros_to_ns(&format!("+{s}"))
        };
        for s in [
            "0",
            "7",
            "12.5",
            "2204338330536.067",
            "1712195495506161.2",
            "2.4045",
            "2.4044",
            "0.0005",
            "0.0004999",
            "999999999999999999",
            "9223372036854775",
            "9223372036854775.807",
            "9223372036854775.808",
            "9223372036854776",
            "123.",
            "1.99950",
            "1.9995",
            "00012.000",
            "1.23456789",
            "123456789012345678.5",
            "1234567890123456789",
        ] {
            assert_eq!(micros_to_ns(s), general(s), "{s}");
            assert!(
                plain_micros_to_ns(s.as_bytes()).is_some() || s.len() > 18,
                "{s}"
            );
        }
        assert_eq!(micros_to_ns(" 12.5 "), Some(12_500));
        assert_eq!(micros_to_ns("\u{a0}12"), micros_to_ns("12"));
    }

    #[test]
    fn digit_runs_end_at_the_first_other_byte() {
        let digits = b"12345678901234567890";
        for len in 0..digits.len() {
            for other in [b'.', b',', b'/', b':', b' ', 0x80, 0xff, b'e', 0] {
                let mut b = digits[..len].to_vec();
                b.push(other);
                b.extend_from_slice(b"123456789");
                for from in 0..=len {
                    assert_eq!(digits_end(&b, from), len, "{len} {other} {from}");
                }
            }
            assert_eq!(digits_end(&digits[..len], 0), len);
        }
    }

    /// Eight at a time, as the digits are written: every length, alone in its lexeme or
    /// followed by more bytes, against the digit-by-digit value.
    #[test]
    fn digit_runs_read_as_their_value() {
        let digits = b"9876543210123456789";
        for start in 0..digits.len() {
            for len in 1..=digits.len() - start {
                let d = &digits[start..start + len];
                let want = d.iter().fold(0u64, |v, &c| v * 10 + u64::from(c - b'0'));
                assert_eq!(digits_value(d, len), want);
                let mut longer = d.to_vec();
                longer.extend_from_slice(b".123456789");
                assert_eq!(digits_value(&longer, len), want);
                assert_eq!(plain_u64(d), Some(want));
            }
        }
        assert_eq!(plain_u64(b"00000000000000000001"), None);
        assert_eq!(plain_u64(b"12a"), None);
    }

    #[test]
    fn ids_parse_from_numbers_and_strings() {
        assert_eq!(to_u64("42"), Some(42));
        assert_eq!(to_u64("\"42\""), Some(42));
        assert_eq!(to_u64("42.0"), Some(42));
        assert_eq!(to_u64("-3"), Some(0));
        // Plain digits take the short path; what it declines, std's parse decides.
        let std_parse = |s: &str| {
            let float = || s.parse::<f64>().ok().filter(|v| v.is_finite());
            s.parse::<u64>().ok().or_else(|| float().map(|v| v as u64))
        };
        for s in [
            "0",
            "007",
            "9999999999999999999",
            "18446744073709551616",
            "+5",
            "1x",
            "",
        ] {
            assert_eq!(to_u64(s), std_parse(s), "{s}");
        }
        assert_eq!(to_u64("null"), None);
        assert_eq!(trailing_u64("stream 7"), Some(7));
        assert_eq!(trailing_u64("\"25738\""), Some(25738));
        assert_eq!(trailing_u64("Spans"), None);
    }
}
