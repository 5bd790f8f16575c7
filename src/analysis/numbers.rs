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
