//! How numbers and kernel names read in every human-facing report.

pub use crate::model::units::fmt_ns;

/// A kernel name as a person scans it in a table: demangled, without the return type, the
/// parameter list and the `at::native::` / `(anonymous namespace)::` noise.
pub fn display_name(name: &str) -> String {
    let normalized = crate::classify::normalize(name);
    let mut s: &str = &normalized;
    s = s.strip_prefix("void ").unwrap_or(s);
    if s.starts_with("std::enable_if<") {
        if let Some(p) = s.find(">::type ") {
            s = &s[p + 8..];
        }
    }
    // Drop a trailing parameter list: the '(' that balances the final ')' outside any <...>.
    if s.ends_with(')') {
        let (mut depth, mut angle) = (0i32, 0i32);
        for (i, c) in s.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 && angle == 0 && i > 0 {
                        s = &s[..i];
                        break;
                    }
                }
                '>' => angle += 1,
                '<' => angle -= 1,
                _ => {}
            }
        }
    }
    s.replace("at::native::", "")
        .replace("(anonymous namespace)::", "")
        .replace("at::detail::", "")
}

/// Shortens a long kernel name at its end.
pub fn shorten_tail(name: &str, max: usize) -> String {
    if name.chars().count() <= max {
        return name.to_string();
    }
    let mut s: String = name.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// An optional number with `digits` decimals, `-` when unknown (the hardware-counter tables).
pub fn opt_num(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}
