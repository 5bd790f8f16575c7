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
/// pass; `None` when the lexeme is anything else (signs, exponents, empty parts: the general
/// path decides those). Same result as the general path, overflow included.
fn plain_micros_to_ns(b: &[u8]) -> Option<Option<i64>> {
    let int_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let frac = match &b[int_len..] {
        [] => &b[int_len..],
        [b'.', rest @ ..] if rest.iter().all(u8::is_ascii_digit) => rest,
        _ => return None,
    };
    if int_len == 0 || int_len > 18 {
        // Empty integer parts (`.5`) and long ones (possible overflow) take the general path.
        return None;
    }
    let whole = b[..int_len]
        .iter()
        .fold(0i64, |acc, &d| acc * 10 + i64::from(d - b'0'));
    let mut ns = whole.checked_mul(1000);
    let mut scale = 100;
    for &d in frac.iter().take(3) {
        ns = ns.and_then(|n| n.checked_add(i64::from(d - b'0') * scale));
        scale /= 10;
    }
    if frac.len() > 3 && frac[3] >= b'5' {
        ns = ns.and_then(|n| n.checked_add(1));
    }
    Some(ns)
}

/// Parses an id or count (`17`, `"17"`, `17.0`); negative and fractional ids are truncated toward
/// zero and clamped at zero. `None` for `null` and non-numbers.
pub fn to_u64(lexeme: &str) -> Option<u64> {
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
        assert_eq!(to_u64("null"), None);
        assert_eq!(trailing_u64("stream 7"), Some(7));
        assert_eq!(trailing_u64("\"25738\""), Some(25738));
        assert_eq!(trailing_u64("Spans"), None);
    }
}
