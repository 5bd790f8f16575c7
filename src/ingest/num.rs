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

/// The value of an ASCII digit, None for any other byte.
fn digit(c: u8) -> Option<u8> {
    let d = c.wrapping_sub(b'0');
    (d <= 9).then_some(d)
}

/// [`micros_to_ns`] of a plain decimal (`digits[.digits]`, Kineto's every timestamp) in one
/// pass over its bytes; `None` when the lexeme is anything else (blanks, quotes, signs,
/// exponents, an empty integer part, more than 18 integer digits: the general path decides
/// those). Same result as the general path, overflow included (the fraction adds at most
/// 1000 ns, so one checked addition decides what the general path's several do).
fn plain_micros_to_ns(b: &[u8]) -> Option<Option<i64>> {
    let mut whole = 0i64;
    let mut i = 0;
    while let Some(d) = b.get(i).copied().and_then(digit) {
        if i == 18 {
            return None;
        }
        whole = whole * 10 + i64::from(d);
        i += 1;
    }
    let frac = match &b[i..] {
        [] => &b[i..],
        [b'.', rest @ ..] => rest,
        _ => return None,
    };
    if i == 0 {
        return None;
    }
    let mut add = 0i64;
    for (k, &c) in frac.iter().enumerate() {
        let d = i64::from(digit(c)?);
        match k {
            0 => add += d * 100,
            1 => add += d * 10,
            2 => add += d,
            // Round half up on the first dropped digit.
            3 => add += i64::from(d >= 5),
            _ => {}
        }
    }
    Some(whole.checked_mul(1000).and_then(|ns| ns.checked_add(add)))
}

/// A run of 1 to 19 ASCII digits as a number (10^19 - 1 fits a u64); None for anything else.
fn plain_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    b.iter()
        .try_fold(0u64, |acc, &c| Some(acc * 10 + u64::from(digit(c)?)))
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
