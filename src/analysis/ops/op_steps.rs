//! GPU time per step of each launching op and shape: what `diff` matches across two runs and
//! tests against the step-to-step noise. Kernel names differ across vendors and versions; the
//! op, its shapes and types do not, so rows are keyed by those (with the module class, source
//! and bucket the fallbacks match on), never by kernel.

use crate::analysis::ops::attribution::NO_OP;
use crate::analysis::time::steps::Steps;
use crate::classify::Bucket;
use crate::model::{NameId, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Rows kept per analysis; the rest fold into one `(other ops)` row per bucket, so a trace of
/// many distinct shapes stays bounded (rows × steps).
pub const MAX_ROWS: usize = 1000;
pub const OTHER_OPS: &str = "(other ops)";
/// The step number of an input without steps: its whole window is one sample.
pub const WINDOW: u64 = u64::MAX;

/// One op and shape's GPU time in each step it ran in (keyed by strings so ranks add up).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct OpStepTotals {
    /// The innermost launching op (`(no op)` without one), its raw `Input Dims` and `Input type`.
    pub op: String,
    pub dims: String,
    pub types: String,
    /// The innermost `nn.Module`'s class (its instance number dropped), with `with_stack`.
    pub module: Option<String>,
    /// Inductor's `kernel_file`, else the user's source line (`with_stack`).
    pub source: Option<String>,
    pub bucket: Bucket,
    /// Per step number: GPU ns of the activities the op launched in that step, and the op's
    /// calls (an op launching several kernels is one call).
    pub per_step: BTreeMap<u64, (i64, u64)>,
}

impl OpStepTotals {
    pub fn ns(&self) -> i64 {
        self.per_step.values().map(|v| v.0).sum()
    }
    fn key(&self) -> RowKey<'_> {
        (
            &self.op,
            &self.dims,
            &self.types,
            self.module.as_deref(),
            self.source.as_deref(),
            self.bucket,
        )
    }
}

type RowKey<'a> = (
    &'a str,
    &'a str,
    &'a str,
    Option<&'a str>,
    Option<&'a str>,
    Bucket,
);

/// `LlamaAttention_3` → `LlamaAttention`: the class, so layers of one kind are one row.
fn module_class(frame: &str) -> &str {
    let name = frame.strip_prefix("nn.Module: ").unwrap_or(frame);
    match name.rsplit_once('_') {
        Some((class, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => class,
        _ => name,
    }
}

/// What the rows are built from, per activity.
pub struct Annotations<'a> {
    pub op_of: &'a [Option<u32>],
    pub modules: &'a [NameId],
    pub sources: &'a [NameId],
    pub buckets: &'a [Bucket],
    pub in_scope: &'a [bool],
}

/// Every op and shape's GPU time per kept step (activities launched outside a step are left
/// out: they belong to no step's sample; an input without steps is one [`WINDOW`] sample), in
/// key order.
pub fn totals(trace: &Trace, steps: &Steps, at: &Annotations) -> Vec<OpStepTotals> {
    let (acts, host) = (&trace.activities, &trace.host);
    type Key = (NameId, NameId, NameId, NameId, NameId, Bucket);
    let mut by: rustc_hash::FxHashMap<Key, BTreeMap<u64, (i64, u64)>> = Default::default();
    // An op launching several kernels is one call: counted at its first activity.
    let mut counted: rustc_hash::FxHashSet<u32> = Default::default();
    for a in (0..acts.len()).filter(|&a| at.in_scope[a]) {
        let input = acts.input[a] as usize;
        let number = match steps.of_activity[a] {
            Some(k) if steps.selected[input][k as usize] => {
                steps.per_input[input][k as usize].number
            }
            Some(_) => continue,
            // An input without steps (rocprof's outputs) is one sample of its window.
            None if steps.per_input[input].is_empty() => WINDOW,
            None => continue,
        };
        let frame = at.sources.get(a).copied().unwrap_or(NameId::NONE);
        let module = at.modules.get(a).copied().unwrap_or(NameId::NONE);
        let owner = at.op_of.get(a).copied().flatten();
        let (op, dims, types, source, call) = match owner {
            Some(h) => {
                let args = host.op_args(h as usize);
                (
                    host.name[h as usize],
                    args.input_dims,
                    args.input_types,
                    crate::analysis::ops::candidates::source_of(&args, frame),
                    u64::from(counted.insert(h)),
                )
            }
            None => (NameId::NONE, NameId::NONE, NameId::NONE, frame, 1),
        };
        let e = by
            .entry((op, dims, types, module, source, at.buckets[a]))
            .or_default()
            .entry(number)
            .or_default();
        e.0 += acts.dur_ns[a];
        e.1 += call;
    }
    let text = |id: NameId| trace.names.get(id).to_string();
    let some = |id: NameId| (id != NameId::NONE).then(|| text(id));
    let rows = by
        .into_iter()
        .map(|((op, dims, types, module, source, bucket), per_step)| {
            let source = crate::analysis::ops::candidates::source_text(trace, source);
            OpStepTotals {
                op: if op == NameId::NONE {
                    NO_OP.to_string()
                } else {
                    text(op)
                },
                dims: text(dims),
                types: text(types),
                module: some(module).map(|m| module_class(&m).to_string()),
                source,
                bucket,
                per_step,
            }
        })
        .collect();
    bounded(merge(&[rows]))
}

/// The largest [`MAX_ROWS`] rows, the rest folded into one `(other ops)` row per bucket.
fn bounded(rows: Vec<OpStepTotals>) -> Vec<OpStepTotals> {
    if rows.len() <= MAX_ROWS {
        return rows;
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let ns: Vec<i64> = rows.iter().map(OpStepTotals::ns).collect();
    order.sort_by(|&a, &b| ns[b].cmp(&ns[a]).then(a.cmp(&b)));
    let keep: std::collections::BTreeSet<usize> = order[..MAX_ROWS].iter().copied().collect();
    let mut out = Vec::with_capacity(MAX_ROWS + Bucket::ALL.len());
    let mut other: BTreeMap<Bucket, OpStepTotals> = BTreeMap::new();
    for (i, r) in rows.into_iter().enumerate() {
        if keep.contains(&i) {
            out.push(r);
            continue;
        }
        let o = other.entry(r.bucket).or_insert_with(|| OpStepTotals {
            op: OTHER_OPS.to_string(),
            bucket: r.bucket,
            ..Default::default()
        });
        add_steps(&mut o.per_step, &r.per_step);
    }
    out.extend(other.into_values());
    merge(&[out])
}

fn add_steps(into: &mut BTreeMap<u64, (i64, u64)>, from: &BTreeMap<u64, (i64, u64)>) {
    for (n, (ns, calls)) in from {
        let e = into.entry(*n).or_default();
        e.0 += ns;
        e.1 += calls;
    }
}

/// Several ranks' rows as one list: added by key and step number (a step's value is the job's
/// total, as the per-step buckets are), in key order.
pub fn merge(ranks: &[Vec<OpStepTotals>]) -> Vec<OpStepTotals> {
    let mut by: BTreeMap<RowKey, OpStepTotals> = BTreeMap::new();
    for rows in ranks {
        for r in rows {
            match by.get_mut(&r.key()) {
                Some(e) => add_steps(&mut e.per_step, &r.per_step),
                None => {
                    by.insert(r.key(), r.clone());
                }
            }
        }
    }
    by.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_classes_drop_the_instance_number() {
        assert_eq!(
            module_class("nn.Module: LlamaAttention_3"),
            "LlamaAttention"
        );
        assert_eq!(module_class("Linear_0"), "Linear");
        assert_eq!(module_class("nn.Module: conv_block"), "conv_block");
        assert_eq!(module_class("Model"), "Model");
    }

    #[test]
    fn ranks_add_by_key_and_step() {
        let row = |op: &str, steps: &[(u64, i64)]| OpStepTotals {
            op: op.into(),
            per_step: steps.iter().map(|&(n, ns)| (n, (ns, 1))).collect(),
            ..Default::default()
        };
        let m = merge(&[
            vec![row("aten::mm", &[(1, 10), (2, 20)])],
            vec![
                row("aten::mm", &[(2, 5), (3, 7)]),
                row("aten::add", &[(1, 1)]),
            ],
        ]);
        assert_eq!(m.len(), 2);
        let mm = m.iter().find(|r| r.op == "aten::mm").unwrap();
        assert_eq!(mm.per_step[&2], (25, 2));
        assert_eq!(mm.ns(), 42);
    }

    #[test]
    fn many_rows_fold_into_other_ops_per_bucket() {
        let rows: Vec<OpStepTotals> = (0..MAX_ROWS as i64 + 10)
            .map(|i| OpStepTotals {
                op: format!("op{i:05}"),
                bucket: Bucket::Elementwise,
                per_step: [(0, (i + 1, 1))].into(),
                ..Default::default()
            })
            .collect();
        let total: i64 = rows.iter().map(OpStepTotals::ns).sum();
        let b = bounded(rows);
        assert_eq!(b.len(), MAX_ROWS + 1);
        assert_eq!(b.iter().map(OpStepTotals::ns).sum::<i64>(), total);
        let other = b.iter().find(|r| r.op == OTHER_OPS).unwrap();
        // The ten smallest folded.
        assert_eq!(other.ns(), (1..=10).sum::<i64>());
    }
}
