//! Integer nanoseconds for people: the one way every message and report writes a duration.

/// `999 ns`, `1.500 µs`, `2.000 ms`, `3.000 s`.
pub fn fmt_ns(ns: i64) -> String {
    let a = ns.unsigned_abs() as f64;
    let (v, unit) = if a >= 1e9 {
        (ns as f64 / 1e9, "s")
    } else if a >= 1e6 {
        (ns as f64 / 1e6, "ms")
    } else if a >= 1e3 {
        (ns as f64 / 1e3, "µs")
    } else {
        (ns as f64, "ns")
    };
    if unit == "ns" {
        format!("{ns} ns")
    } else {
        format!("{v:.3} {unit}")
    }
}
