//! Exact number parsing from JSON lexemes.
//!
//! Kineto writes microseconds as decimals (`2204338330536.067`); traces without
//! `baseTimeNanoseconds` carry epoch-scale values (`1712195495506161.2`) with more significant
//! digits than an f64 holds. Parsing the lexeme straight to integer nanoseconds keeps every
//! nanosecond; values in strings (rocprof v1 JSON writes `"ts":"622109046136"`) parse the same way.

/// Strips the quotes of a string lexeme (numbers in strings carry no escapes).
pub fn unquote(lexeme: &str) -> &str {
    let s = lexeme.trim();
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

/// Parses a microsecond value (`12`, `12.5`, `1.2e3`, `"12"`) into nanoseconds, exactly for plain
/// decimals. `None` for `null`, non-numbers, NaN and values out of range.
pub fn micros_to_ns(lexeme: &str) -> Option<i64> {
    let s = unquote(lexeme).trim();
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

/// Parses an id or count (`17`, `"17"`, `17.0`); negative and fractional ids are truncated toward
/// zero and clamped at zero. `None` for `null` and non-numbers.
pub fn to_u64(lexeme: &str) -> Option<u64> {
    let s = unquote(lexeme).trim();
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
