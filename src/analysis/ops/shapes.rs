//! An op's recorded shapes and arguments as numbers: `Input Dims`, `Concrete Inputs`.

/// The product of dimensions in f64: shapes are input, and an i64 product can overflow.
pub(crate) fn fprod(dims: &[i64]) -> f64 {
    dims.iter().map(|&d| d as f64).product()
}

/// `Input Dims` as lists of sizes (empty for non-tensors). Called for every op of every
/// trace: the common form (lists of integers) is read directly, anything else by serde_json,
/// with the same result either way.
pub fn dims_of(input_dims: &str) -> Option<Vec<Vec<i64>>> {
    plain_dims(input_dims.as_bytes()).or_else(|| dims_by_serde(input_dims))
}

/// The reference reading: a non-list entry is empty, and only integers in i64 count.
fn dims_by_serde(input_dims: &str) -> Option<Vec<Vec<i64>>> {
    Some(
        serde_json::from_str::<Vec<serde_json::Value>>(input_dims)
            .ok()?
            .iter()
            .map(|d| {
                d.as_array()
                    .map(|a| a.iter().filter_map(|x| x.as_i64()).collect())
                    .unwrap_or_default()
            })
            .collect(),
    )
}

/// `[[2, 4096], [], [7]]` without building JSON values; `None` (serde decides) for anything
/// but lists of plain integers: nested lists, non-list entries, other numbers, bad text.
fn plain_dims(s: &[u8]) -> Option<Vec<Vec<i64>>> {
    let mut i = 0;
    let out = plain_list(s, &mut i, &mut |i: &mut usize| {
        plain_list(s, i, &mut |i: &mut usize| plain_int(s, i))
    })?;
    skip_ws(s, &mut i);
    (i == s.len()).then_some(out)
}

/// A JSON list at `i` whose items `item` reads, `i` left after its `]`.
fn plain_list<T>(
    s: &[u8],
    i: &mut usize,
    item: &mut dyn FnMut(&mut usize) -> Option<T>,
) -> Option<Vec<T>> {
    skip_ws(s, i);
    if s.get(*i) != Some(&b'[') {
        return None;
    }
    *i += 1;
    let mut out = Vec::new();
    skip_ws(s, i);
    if s.get(*i) == Some(&b']') {
        *i += 1;
        return Some(out);
    }
    loop {
        skip_ws(s, i);
        out.push(item(i)?);
        skip_ws(s, i);
        match s.get(*i)? {
            b',' => *i += 1,
            b']' => {
                *i += 1;
                return Some(out);
            }
            _ => return None,
        }
    }
}

fn skip_ws(s: &[u8], i: &mut usize) {
    while s
        .get(*i)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        *i += 1;
    }
}

/// A JSON integer that fits i64 (no leading zeros, fraction or exponent), else `None`.
fn plain_int(s: &[u8], i: &mut usize) -> Option<i64> {
    let negative = s.get(*i) == Some(&b'-');
    let start = *i + usize::from(negative);
    let mut end = start;
    while s.get(end).is_some_and(u8::is_ascii_digit) {
        end += 1;
    }
    let digits = &s[start..end];
    // serde_json reads `-0` as a float: it is no size.
    let negative_zero = negative && digits == b"0";
    if digits.is_empty()
        || (digits.len() > 1 && digits[0] == b'0')
        || digits.len() > 18
        || negative_zero
    {
        return None;
    }
    if matches!(s.get(end), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    let value = digits
        .iter()
        .fold(0i64, |v, &d| v * 10 + i64::from(d - b'0'));
    *i = end;
    Some(if negative { -value } else { value })
}

/// `Concrete Inputs` as strings (`"[2, 2]"`, `"True"`, `""` for tensors).
pub(crate) fn concrete_of(concrete: &str) -> Vec<String> {
    serde_json::from_str(concrete).unwrap_or_default()
}

/// `"[2, 2]"` → [2, 2].
pub(crate) fn int_list(s: &str) -> Option<Vec<i64>> {
    s.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|x| x.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct reading agrees with serde's wherever it answers, and answers the common form.
    #[test]
    fn plain_dims_agree_with_serde() {
        let cases = [
            "[[2, 4096], [4096, 4096], []]",
            "[]",
            " [ [ 1 ,2 ] ,[] ] ",
            "[[-1, 0, 123456789012345678]]",
            "[[1234567890123456789]]",
            "[[9223372036854775808]]",
            "[[1.0, 2]]",
            "[[1e3]]",
            "[[01]]",
            "[[1, [2, 3]], []]",
            "[3, [1]]",
            "[[\"a\"], [1]]",
            "[[1,]]",
            "[[1] [2]]",
            "[[1]] x",
            "[[1]",
            "",
            "[[-]]",
            "[[-0]]",
        ];
        for c in cases {
            assert_eq!(dims_of(c), dims_by_serde(c), "{c:?}");
            if let Some(direct) = plain_dims(c.as_bytes()) {
                assert_eq!(Some(direct), dims_by_serde(c), "{c:?}");
            }
        }
        assert!(plain_dims(b"[[2, 4096], [4096, 4096], []]").is_some());
        assert!(plain_dims(b"[[1, [2, 3]], []]").is_none());
    }
}
