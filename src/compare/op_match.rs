//! Which work of one run is which work of another: op rows matched across runs by launching op
//! and shapes, whatever kernels ran (`Cijk_…` on MI300X and `nvjet_…` on H100 are both
//! `aten::mm [8944,1024]×[1024,2816]`). The order, each level taking only what the earlier
//! ones left:
//!
//! 1. `op_shape`: the same op, `Input Dims` and `Input type`; then GEMMs by their signature
//!    (batch, M, N, K, dtype), so Inductor's `aten::mm` with an `out=` tensor, `linear` and
//!    `addmm` forms and vLLM's GEMM meet their eager counterparts; then Inductor's Triton
//!    kernels with the eager ops their names keep (`triton_poi_fused_mul_silu_2` ↔
//!    `aten::mul` + `aten::silu`) where they share a tensor size;
//! 2. `module`: what is left, by the innermost `nn.Module` class (`with_stack` traces);
//! 3. `source`: by source line or Inductor file;
//! 4. `bucket`: by bucket;
//! 5. `new` / `removed`: the rest, by op and shape.
//!
//! A fallback group forms only where both runs have work left in it.

use crate::analysis::ops::attribution::compact_dims;
use crate::analysis::ops::bytes_moved::short_types;
use crate::analysis::ops::efficiency::{dims_of, gemm_mkn};
use crate::analysis::ops::op_steps::OpStepTotals;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// How a row's two sides were matched (FEED.md `diff.ops[].match`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Match {
    OpShape,
    Module,
    Source,
    Bucket,
    New,
    Removed,
}

impl Match {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

/// Within `op_shape`: how the two sides were found to be the same work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// The same op, dims and types.
    Exact,
    /// The same op, in traces recorded without shapes.
    OpOnly,
    /// GEMMs of the same (batch, M, N, K, dtype) under different op forms.
    GemmSignature,
    /// Inductor's fused kernel names the eager ops, and they share a tensor size.
    InductorName,
}

/// A matched group: rows of each side (indices into the inputs) and how it is shown.
#[derive(Clone, Debug)]
pub struct Group {
    pub kind: Match,
    pub via: Option<Via>,
    pub base: Vec<usize>,
    pub new: Vec<usize>,
    /// The op (or the module, source or bucket a fallback group is named by).
    pub op: String,
    pub shapes: Option<String>,
    pub dtype: Option<String>,
    /// The new side's op and shapes where they differ from the base's.
    pub new_op: Option<String>,
    pub new_shapes: Option<String>,
}

/// The pseudo-ops that have no shape to match on.
fn is_pseudo(op: &str) -> bool {
    op == crate::analysis::ops::attribution::NO_OP
        || op == crate::analysis::ops::op_steps::OTHER_OPS
}

/// The GEMM signature `batch×M×N×K dtype` of a GEMM-family op (vLLM's GEMM takes linear's
/// form), or None.
pub fn gemm_signature(op: &str, dims: &str, types: &str) -> Option<String> {
    let form = match op {
        "vllm::rocm_unquantized_gemm" | "vllm::unquantized_gemm" => "aten::linear",
        o if crate::model::ops::is_gemm_op(o) => o,
        _ => return None,
    };
    let (batch, m, k, n) = gemm_mkn(form, dims)?;
    // The operands must agree on K (a transposed record would match the wrong GEMM).
    let d = dims_of(dims)?;
    let (a, b) = match form {
        "aten::addmm" | "aten::baddbmm" | "aten::_addmm_activation" => (d.get(1)?, d.get(2)?),
        _ => (d.first()?, d.get(1)?),
    };
    let bk = if form == "aten::linear" {
        *b.get(1)?
    } else {
        *b.get(b.len().checked_sub(2)?)?
    };
    if *a.last()? != bk || m <= 0 || n <= 0 || k <= 0 {
        return None;
    }
    let dtype = short_types(types, dims);
    let dtype = dtype.split(',').next().unwrap_or("");
    Some(format!("{batch}x{m}x{n}x{k} {dtype}"))
}

/// The eager op names an Inductor kernel keeps: `triton_poi_fused__unsafe_view_mul_silu_2` →
/// `_unsafe_view_mul_silu` (None for another op).
fn fused_names(op: &str) -> Option<&str> {
    let rest = op
        .strip_prefix("triton_")?
        .split_once("_fused_")
        .map(|(_, r)| r)?;
    // The trailing kernel number.
    Some(match rest.rsplit_once('_') {
        Some((names, n)) if n.bytes().all(|b| b.is_ascii_digit()) => names,
        _ => rest,
    })
}

/// Whether the fused name holds this eager op's short name as a run of `_`-separated tokens.
fn names_op(fused: &str, eager_op: &str) -> bool {
    let short = eager_op
        .strip_prefix("aten::")
        .unwrap_or(eager_op)
        .trim_end_matches('_');
    if short.is_empty() || eager_op.starts_with("triton_") {
        return false;
    }
    let tokens: Vec<&str> = fused.split('_').filter(|t| !t.is_empty()).collect();
    let want: Vec<&str> = short.split('_').filter(|t| !t.is_empty()).collect();
    !want.is_empty() && tokens.windows(want.len()).any(|w| w == want.as_slice())
}

/// Tensor element counts of an op's inputs (a tensor list's tensors each).
fn numels(dims: &str) -> BTreeSet<i64> {
    fn add(v: &serde_json::Value, out: &mut BTreeSet<i64>) {
        let Some(items) = v.as_array() else { return };
        if items.iter().all(serde_json::Value::is_i64) {
            let n = items
                .iter()
                .filter_map(serde_json::Value::as_i64)
                .fold(1i64, |p, x| p.saturating_mul(x));
            if !items.is_empty() && n > 1 {
                out.insert(n);
            }
        } else {
            for item in items.iter().filter(|i| i.is_array()) {
                add(item, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    if let Ok(serde_json::Value::Array(inputs)) = serde_json::from_str::<serde_json::Value>(dims) {
        for input in &inputs {
            add(input, &mut out);
        }
    }
    out
}

/// Matches the rows of two runs (see the module's doc for the order).
pub fn match_rows(base: &[OpStepTotals], new: &[OpStepTotals]) -> Vec<Group> {
    let mut used = [vec![false; base.len()], vec![false; new.len()]];
    let sides = [base, new];
    let mut groups = Vec::new();

    // 1. op, dims and types.
    let exact = |r: &OpStepTotals| (r.op.clone(), compact_dims(&r.dims), r.types.clone());
    let keyed = by_key(&sides, &used, |r| (!is_pseudo(&r.op)).then(|| exact(r)));
    for ((op, dims, types), [b, n]) in keyed {
        if b.is_empty() || n.is_empty() {
            continue;
        }
        mark(&mut used, &b, &n);
        groups.push(Group {
            kind: Match::OpShape,
            via: Some(if dims.is_empty() {
                Via::OpOnly
            } else {
                Via::Exact
            }),
            dtype: dtype_of(&types, &dims),
            shapes: (!dims.is_empty()).then(|| compact_dims(&dims)),
            op,
            new_op: None,
            new_shapes: None,
            base: b,
            new: n,
        });
    }
    // 1b. Inductor's kernels of two compiled runs: their numbers change with the graph, the ops
    // their names keep and their shapes do not.
    let keyed = by_key(&sides, &used, |r| {
        fused_names(&r.op).map(|f| (f.to_string(), compact_dims(&r.dims), r.types.clone()))
    });
    for ((_, dims, types), [b, n]) in keyed {
        if b.is_empty() || n.is_empty() {
            continue;
        }
        mark(&mut used, &b, &n);
        let (lb, ln) = (largest(base, &b), largest(new, &n));
        groups.push(Group {
            kind: Match::OpShape,
            via: Some(Via::InductorName),
            op: lb.op.clone(),
            shapes: (!dims.is_empty()).then_some(dims),
            dtype: dtype_of(&types, &lb.dims),
            new_op: (lb.op != ln.op).then(|| ln.op.clone()),
            new_shapes: None,
            base: b,
            new: n,
        });
    }
    // 1c. GEMM signatures.
    let keyed = by_key(&sides, &used, |r| gemm_signature(&r.op, &r.dims, &r.types));
    for (_, [b, n]) in keyed {
        if b.is_empty() || n.is_empty() {
            continue;
        }
        mark(&mut used, &b, &n);
        let (lb, ln) = (largest(base, &b), largest(new, &n));
        let differs = lb.op != ln.op || lb.dims != ln.dims;
        groups.push(Group {
            kind: Match::OpShape,
            via: Some(Via::GemmSignature),
            op: lb.op.clone(),
            shapes: Some(compact_dims(&lb.dims)),
            dtype: dtype_of(&lb.types, &lb.dims),
            new_op: differs.then(|| ln.op.clone()),
            new_shapes: differs.then(|| compact_dims(&ln.dims)),
            base: b,
            new: n,
        });
    }
    // 1d. Inductor's fused kernels and the eager ops they name.
    groups.extend(fused_groups(&sides, &mut used));
    // 2–4. Fallbacks.
    for kind in [Match::Module, Match::Source, Match::Bucket] {
        let keyed = by_key(&sides, &used, |r| match kind {
            Match::Module => r.module.clone(),
            Match::Source => r.source.clone(),
            _ => Some(r.bucket.as_str().to_string()),
        });
        for (name, [b, n]) in keyed {
            if b.is_empty() || n.is_empty() {
                continue;
            }
            mark(&mut used, &b, &n);
            groups.push(Group {
                kind,
                via: None,
                op: name,
                shapes: None,
                dtype: None,
                new_op: None,
                new_shapes: None,
                base: b,
                new: n,
            });
        }
    }
    // 5. One side only (work without an op, by bucket).
    let keyed = by_key(&sides, &used, |r| {
        let (op, dims, types) = exact(r);
        let op = if is_pseudo(&op) {
            format!("{op} {}", r.bucket.as_str())
        } else {
            op
        };
        Some((op, dims, types))
    });
    for ((op, dims, types), [b, n]) in keyed {
        let kind = if b.is_empty() {
            Match::New
        } else {
            Match::Removed
        };
        groups.push(Group {
            kind,
            via: None,
            dtype: dtype_of(&types, &dims),
            shapes: (!dims.is_empty()).then(|| compact_dims(&dims)),
            op,
            new_op: None,
            new_shapes: None,
            base: b,
            new: n,
        });
    }
    groups
}

/// The inputs' distinct element types (`bf16`; `fp32,bf16` for a cast).
fn dtype_of(types: &str, dims: &str) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for t in short_types(types, dims)
        .split(',')
        .filter(|t| !t.is_empty())
    {
        if !seen.iter().any(|s| s == t) {
            seen.push(t.to_string());
        }
    }
    (!seen.is_empty()).then(|| seen.join(","))
}

fn largest<'a>(rows: &'a [OpStepTotals], members: &[usize]) -> &'a OpStepTotals {
    members
        .iter()
        .map(|&i| &rows[i])
        .max_by(|a, b| a.ns().cmp(&b.ns()).then(b.op.cmp(&a.op)))
        .expect("a group has members")
}

fn mark(used: &mut [Vec<bool>; 2], b: &[usize], n: &[usize]) {
    for &i in b {
        used[0][i] = true;
    }
    for &i in n {
        used[1][i] = true;
    }
}

/// The unused rows of each side by a key (rows without one left out), in key order.
fn by_key<K: Ord>(
    sides: &[&[OpStepTotals]; 2],
    used: &[Vec<bool>; 2],
    key: impl Fn(&OpStepTotals) -> Option<K>,
) -> BTreeMap<K, [Vec<usize>; 2]> {
    let mut out: BTreeMap<K, [Vec<usize>; 2]> = BTreeMap::new();
    for (s, rows) in sides.iter().enumerate() {
        for (i, r) in rows.iter().enumerate() {
            if used[s][i] {
                continue;
            }
            if let Some(k) = key(r) {
                out.entry(k).or_default()[s].push(i);
            }
        }
    }
    out
}

/// Inductor's Triton kernels (either side) linked to the unused eager rows of the other side
/// their names keep and whose tensor sizes they share; each connected set is one group.
fn fused_groups(sides: &[&[OpStepTotals]; 2], used: &mut [Vec<bool>; 2]) -> Vec<Group> {
    // Nodes: (side, row). Union-find over them.
    let nodes: Vec<(usize, usize)> = (0..2)
        .flat_map(|s| {
            let u = &used[s];
            (0..sides[s].len())
                .filter(move |&i| !u[i])
                .map(move |i| (s, i))
        })
        .filter(|&(s, i)| !is_pseudo(&sides[s][i].op))
        .collect();
    let mut parent: Vec<usize> = (0..nodes.len()).collect();
    fn root(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let sizes: Vec<BTreeSet<i64>> = nodes
        .iter()
        .map(|&(s, i)| numels(&sides[s][i].dims))
        .collect();
    // Per node, the eager op names its Inductor kernel keeps (None: an eager row).
    let fused: Vec<Option<&str>> = nodes
        .iter()
        .map(|&(s, i)| fused_names(&sides[s][i].op))
        .collect();
    // Of `candidates`, the best to link with node `to`: the eager op's largest tensor must be
    // one of the kernel's (sizes such as a hidden dim are shared by nearly every tensor of a
    // model); then the most shared sizes, then the larger candidate.
    let best = |to: usize, candidates: Vec<usize>| -> Option<usize> {
        candidates
            .into_iter()
            .filter(|&c| {
                let (kernel, eager) = if fused[to].is_some() {
                    (to, c)
                } else {
                    (c, to)
                };
                sizes[eager]
                    .last()
                    .is_some_and(|m| sizes[kernel].contains(m))
            })
            .map(|c| {
                let shared = sizes[c].intersection(&sizes[to]).count();
                let (s, i) = nodes[c];
                (shared, sides[s][i].ns(), std::cmp::Reverse(c))
            })
            .max()
            .map(|(.., std::cmp::Reverse(c))| c)
    };
    let mut linked = vec![false; nodes.len()];
    // Each eager row joins the one kernel that names it (common ops such as `add` and `mul`
    // would otherwise chain every kernel of a model into one group).
    for (y, &(sy, iy)) in nodes.iter().enumerate() {
        if fused[y].is_some() {
            continue;
        }
        let kernels = (0..nodes.len())
            .filter(|&x| {
                nodes[x].0 != sy && fused[x].is_some_and(|f| names_op(f, &sides[sy][iy].op))
            })
            .collect();
        if let Some(x) = best(y, kernels) {
            let (rx, ry) = (root(&mut parent, x), root(&mut parent, y));
            parent[rx.max(ry)] = rx.min(ry);
            linked[x] = true;
            linked[y] = true;
        }
    }
    // A kernel no eager row chose (the same ops fused again elsewhere: the first layer's norm,
    // the last one's) joins the group of the linked eager row it shares the most sizes with.
    for (x, &(sx, _)) in nodes.iter().enumerate() {
        let Some(f) = fused[x].filter(|_| !linked[x]) else {
            continue;
        };
        let eager = (0..nodes.len())
            .filter(|&y| {
                let (sy, iy) = nodes[y];
                sy != sx && linked[y] && fused[y].is_none() && names_op(f, &sides[sy][iy].op)
            })
            .collect();
        if let Some(y) = best(x, eager) {
            let (rx, ry) = (root(&mut parent, x), root(&mut parent, y));
            parent[rx.max(ry)] = rx.min(ry);
            linked[x] = true;
        }
    }
    let mut components: BTreeMap<usize, [Vec<usize>; 2]> = BTreeMap::new();
    for (x, &(s, i)) in nodes.iter().enumerate() {
        if linked[x] {
            let r = root(&mut parent, x);
            components.entry(r).or_default()[s].push(i);
        }
    }
    let mut out = Vec::new();
    for [b, n] in components.into_values() {
        if b.is_empty() || n.is_empty() {
            continue;
        }
        mark(used, &b, &n);
        // The ops by time, four named.
        let names = |rows: &[OpStepTotals], members: &[usize]| {
            let mut ops: BTreeMap<&str, i64> = BTreeMap::new();
            for &i in members {
                *ops.entry(rows[i].op.as_str()).or_default() += rows[i].ns();
            }
            let mut ops: Vec<(&str, i64)> = ops.into_iter().collect();
            ops.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let mut label: Vec<&str> = ops.iter().take(4).map(|o| o.0).collect();
            let more = ops.len().saturating_sub(4);
            let more = format!("{more} more");
            if ops.len() > 4 {
                label.push(&more);
            }
            label.join(" + ")
        };
        let (lb, ln) = (largest(sides[0], &b), largest(sides[1], &n));
        out.push(Group {
            kind: Match::OpShape,
            via: Some(Via::InductorName),
            op: names(sides[0], &b),
            shapes: Some(compact_dims(&lb.dims)),
            dtype: dtype_of(&lb.types, &lb.dims),
            new_op: Some(names(sides[1], &n)),
            new_shapes: Some(compact_dims(&ln.dims)),
            base: b,
            new: n,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Bucket;

    const BF16X2: &str = r#"["c10::BFloat16","c10::BFloat16"]"#;

    fn row(op: &str, dims: &str, types: &str, bucket: Bucket) -> OpStepTotals {
        OpStepTotals {
            op: op.into(),
            dims: dims.into(),
            types: types.into(),
            bucket,
            per_step: [(1, (100, 1))].into(),
            ..Default::default()
        }
    }

    #[test]
    fn gemm_signatures_ignore_the_op_form_and_out_tensors() {
        let eager = gemm_signature("aten::mm", "[[4096,1024],[1024,4096]]", BF16X2);
        assert_eq!(eager.as_deref(), Some("1x4096x4096x1024 bf16"));
        let out = r#"["c10::BFloat16","c10::BFloat16","c10::BFloat16"]"#;
        assert_eq!(
            gemm_signature("aten::mm", "[[4096,1024],[1024,4096],[4096,4096]]", out),
            eager
        );
        // linear: x [.., K], w [N, K]; vLLM's GEMM takes its form.
        let lin = gemm_signature("aten::linear", "[[8,512,1024],[4096,1024],[]]", BF16X2);
        assert_eq!(lin, eager);
        assert_eq!(
            gemm_signature(
                "vllm::rocm_unquantized_gemm",
                "[[32,2880],[201088,2880],[]]",
                BF16X2
            )
            .as_deref(),
            Some("1x32x201088x2880 bf16")
        );
        let addmm = r#"["c10::BFloat16","c10::BFloat16","c10::BFloat16","Scalar","Scalar"]"#;
        assert_eq!(
            gemm_signature(
                "aten::addmm",
                "[[1024],[8944,1024],[1024,1024],[],[]]",
                addmm
            )
            .as_deref(),
            Some("1x8944x1024x1024 bf16")
        );
        // bmm keeps its batch; operands that disagree on K are not a GEMM.
        assert_eq!(
            gemm_signature("aten::bmm", "[[16,512,64],[16,64,512]]", BF16X2).as_deref(),
            Some("16x512x512x64 bf16")
        );
        assert_eq!(
            gemm_signature(
                "aten::_addmm_activation",
                "[[1024],[512,768],[768,1024],[],[],[]]",
                BF16X2
            )
            .as_deref(),
            Some("1x512x1024x768 bf16")
        );
        assert_eq!(gemm_signature("aten::mm", "[[4,8],[4,8]]", BF16X2), None);
        assert_eq!(gemm_signature("aten::add", "[[4,8],[4,8]]", BF16X2), None);
    }

    #[test]
    fn tensor_lists_count_each_tensor() {
        let n = numels("[[[64,1,768],[64,196,768]],[],[8,2]]");
        assert_eq!(
            n.into_iter().collect::<Vec<_>>(),
            vec![16, 64 * 768, 64 * 196 * 768]
        );
        assert!(numels("[[1],[]]").is_empty());
    }

    #[test]
    fn inductor_names_keep_the_eager_ops() {
        let f = fused_names("triton_poi_fused__unsafe_view_mul_silu_2").unwrap();
        assert_eq!(f, "_unsafe_view_mul_silu");
        assert!(names_op(f, "aten::mul") && names_op(f, "aten::silu"));
        assert!(!names_op(f, "aten::add") && !names_op(f, "aten::view_as"));
        let f = fused_names("triton_red_fused_add_native_layer_norm_6").unwrap();
        assert!(names_op(f, "aten::native_layer_norm") && names_op(f, "aten::add_"));
        assert_eq!(fused_names("aten::mm"), None);
    }

    #[test]
    fn two_compiled_runs_match_kernels_renumbered_by_inductor() {
        let k = |op: &str| {
            row(
                op,
                "[[8,512,4096],[4096,4096],[]]",
                BF16X2,
                Bucket::Elementwise,
            )
        };
        let g = match_rows(
            &[k("triton_poi_fused__unsafe_view_mul_silu_2")],
            &[k("triton_poi_fused__unsafe_view_mul_silu_5")],
        );
        assert_eq!(g.len(), 1);
        assert_eq!(
            (g[0].kind, g[0].via),
            (Match::OpShape, Some(Via::InductorName))
        );
        assert_eq!(
            g[0].new_op.as_deref(),
            Some("triton_poi_fused__unsafe_view_mul_silu_5")
        );
    }

    #[test]
    fn the_cascade_matches_exact_then_signature_then_names_then_buckets() {
        use Bucket::*;
        let base = vec![
            row("aten::mm", "[[4096,1024],[1024,1024]]", BF16X2, Gemm),
            row(
                "aten::mul",
                "[[8,512,4096],[8,512,4096]]",
                BF16X2,
                Elementwise,
            ),
            row(
                "aten::silu",
                "[[8,512,4096]]",
                r#"["c10::BFloat16"]"#,
                Elementwise,
            ),
            row(
                "aten::neg",
                "[[8,16,512,32]]",
                r#"["c10::BFloat16"]"#,
                Elementwise,
            ),
            row("aten::fill_", "[[1],[]]", r#"["int","Scalar"]"#, Memory),
        ];
        let out3 = r#"["c10::BFloat16","c10::BFloat16","c10::BFloat16"]"#;
        let new = vec![
            row(
                "aten::mm",
                "[[4096,1024],[1024,1024],[4096,1024]]",
                out3,
                Gemm,
            ),
            row(
                "triton_poi_fused__unsafe_view_mul_silu_2",
                "[[8,512,4096],[4096,4096],[]]",
                BF16X2,
                Elementwise,
            ),
            row(
                "triton_poi_fused_cat_0",
                "[[8,16,512,64]]",
                BF16X2,
                Elementwise,
            ),
        ];
        let g = match_rows(&base, &new);
        let find = |op: &str| g.iter().find(|x| x.op == op).unwrap();
        let mm = find("aten::mm");
        assert_eq!(
            (mm.kind, mm.via),
            (Match::OpShape, Some(Via::GemmSignature))
        );
        assert_eq!(
            mm.new_shapes.as_deref(),
            Some("[[4096,1024],[1024,1024],[4096,1024]]")
        );
        let fused = find("aten::mul + aten::silu");
        assert_eq!(fused.via, Some(Via::InductorName));
        assert_eq!(fused.new.len(), 1);
        // neg has no named kernel: the elementwise bucket takes it with the cat kernel.
        let bucket = find("elementwise");
        assert_eq!(bucket.kind, Match::Bucket);
        assert_eq!((bucket.base.len(), bucket.new.len()), (1, 1));
        assert_eq!(find("aten::fill_").kind, Match::Removed);
        // Every row lands in exactly one group.
        let (nb, nn): (usize, usize) = (
            g.iter().map(|x| x.base.len()).sum(),
            g.iter().map(|x| x.new.len()).sum(),
        );
        assert_eq!((nb, nn), (base.len(), new.len()));
    }
}
