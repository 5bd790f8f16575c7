//! Small numeric helpers every analysis shares.

/// `part` as a percentage of `whole` (0 when `whole` is not positive).
pub fn pct(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        0.0
    } else {
        // Rounded to 1e-4 so reports do not depend on float summation order.
        (part as f64 * 100.0 / whole as f64 * 1e4).round() / 1e4
    }
}

/// The median of a slice (0 for an empty one).
pub fn median(values: &[i64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    if v.len() % 2 == 1 {
        v[v.len() / 2] as f64
    } else {
        (v[v.len() / 2 - 1] as f64 + v[v.len() / 2] as f64) / 2.0
    }
}

/// Time spans (start, end) sorted, those that overlap or touch merged into one.
pub fn merge_spans(v: &mut Vec<(i64, i64)>) {
    v.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(v.len());
    for &(s, e) in v.iter() {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    *v = merged;
}

/// `v.round() as i64` (halves away from zero, saturating, NaN as 0) without the call to libm's
/// `round` that the portable build makes: a replay at another host speed rounds every piece.
pub fn round_to_i64(v: f64) -> i64 {
    let t = v as i64;
    // Exact: below 2^52 `t` is within 1 of `v`; above, `v` is an integer and the difference 0.
    let fraction = v - t as f64;
    if fraction >= 0.5 {
        t.saturating_add(1)
    } else if fraction <= -0.5 {
        t.saturating_sub(1)
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::round_to_i64;

    #[test]
    fn rounding_agrees_with_std() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            0.49999999999999994,
            -0.49999999999999994,
            4503599627370495.5,
            4503599627370497.0,
            9007199254740993.0,
            9.3e18,
            -9.3e18,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::EPSILON,
            f64::MIN_POSITIVE,
        ];
        // Durations at a host speed: integers times factors near 1.
        for ns in [1_i64, 7, 999, 123_456_789, 9_876_543_210_123] {
            for f in [0.5, 0.8, 0.999, 1.001, 1.2, 1.5, 2.0, 1.0 / 3.0] {
                values.push(ns as f64 * f);
                values.push(-(ns as f64) * f);
            }
        }
        for v in values {
            assert_eq!(round_to_i64(v), v.round() as i64, "{v:e}");
        }
    }
}
