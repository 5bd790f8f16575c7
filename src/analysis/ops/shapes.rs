//! An op's recorded shapes and arguments as numbers: `Input Dims`, `Concrete Inputs`.

/// The product of dimensions in f64: shapes are input, and an i64 product can overflow.
pub(crate) fn fprod(dims: &[i64]) -> f64 {
    dims.iter().map(|&d| d as f64).product()
}

/// `Input Dims` as lists of sizes (empty for non-tensors).
pub fn dims_of(input_dims: &str) -> Option<Vec<Vec<i64>>> {
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
