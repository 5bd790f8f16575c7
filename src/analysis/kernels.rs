//! The bucket table and the top kernels: GPU time per (bucket, kernel name) over the activities
//! in scope, from one trace or from several ranks' rows summed.

use crate::analysis::numbers::pct;
use crate::classify::{Bucket, Classified, KernelTag, RuleSet};
use crate::model::{NameId, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One row of the feed's `buckets`: a bucket's kernel time and launches.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BucketRow {
    /// The bucket.
    pub bucket: Bucket,
    /// Its kernels' time in the analysis, in ns.
    pub kernel_ns: i64,
    /// Its share of all kernel time, in percent.
    pub pct: f64,
    /// Kernel launches.
    pub launches: u64,
    /// Distinct kernel names.
    pub distinct_kernels: u64,
}

/// One row of the feed's `top_kernels`: a kernel name's time, class and launches.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KernelRow {
    /// The kernel's name as the trace records it.
    pub name: String,
    /// The bucket it counts in.
    pub bucket: Bucket,
    /// Its family within the bucket (the matching rule's).
    pub family: String,
    /// The library that ships it (cuBLAS, hipBLASLt, Triton, …).
    pub library: String,
    /// The id of the classification rule that matched (None: unclassified).
    pub rule_id: Option<String>,
    /// Launches.
    pub launches: u64,
    /// Time in the analysis, in ns.
    pub total_ns: i64,
    /// Share of all kernel time, in percent.
    pub pct: f64,
}

/// The bucket table, the top kernels and the counts over the activities in scope.
pub(crate) struct KernelTables {
    pub(crate) buckets: Vec<BucketRow>,
    pub(crate) top_kernels: Vec<KernelRow>,
    pub(crate) kernel_ns: i64,
    pub(crate) unclassified_ns: i64,
    pub(crate) activities: u64,
    pub(crate) distinct_kernels: u64,
    /// Every (bucket, name) row, most time first.
    pub(crate) kernels: Vec<KernelTotals>,
}

pub(crate) fn kernel_tables(
    trace: &Trace,
    rules: &RuleSet,
    classified: &Classified,
    activity_buckets: &[Bucket],
    in_scope: &[bool],
    top: usize,
) -> KernelTables {
    let acts = &trace.activities;
    // Per (name, bucket): launches and time (the op that launched a kernel can put one name in
    // several buckets).
    let mut per_name_bucket: BTreeMap<(Bucket, NameId), (u64, i64)> = BTreeMap::new();
    let mut kernel_ns = 0i64;
    for a in (0..acts.len()).filter(|&a| in_scope[a]) {
        let e = per_name_bucket
            .entry((activity_buckets[a], acts.name[a]))
            .or_default();
        // Saturating: a corrupt trace with absurd durations must not overflow.
        e.0 += 1;
        e.1 = e.1.saturating_add(acts.dur_ns[a]);
        kernel_ns = kernel_ns.saturating_add(acts.dur_ns[a]);
    }
    // One row per (name, bucket): the op that launched a kernel can put one name in two
    // buckets, and the rows of a bucket then add up to its `buckets` row.
    let rows: Vec<KernelTotals> = per_name_bucket
        .iter()
        .map(|(&(bucket, n), &(launches, ns))| {
            let c = classified.get(n);
            KernelTotals {
                bucket,
                name: trace.names.get(n).to_string(),
                class_bucket: c.bucket,
                tag: c.tag,
                family: c.family.clone(),
                library: c.library.clone(),
                rule_id: c.rule.map(|r| rules.rules[r].def.id.clone()),
                launches,
                ns,
            }
        })
        .collect();
    tables_from_rows(rows, kernel_ns, top)
}

/// The bucket table, the top kernels and the counts from every (bucket, name) row of one trace
/// or of several ranks (summed by [`merge`]); `kernel_ns` is their total.
pub(crate) fn tables_from_rows(
    mut kernels: Vec<KernelTotals>,
    kernel_ns: i64,
    top: usize,
) -> KernelTables {
    let mut by_bucket: BTreeMap<Bucket, (i64, u64, u64)> =
        Bucket::ALL.iter().map(|&b| (b, (0, 0, 0))).collect();
    let mut names: std::collections::BTreeSet<&str> = Default::default();
    let mut unclassified_ns = 0i64;
    for k in &kernels {
        let e = by_bucket.entry(k.bucket).or_default();
        e.0 = e.0.saturating_add(k.ns);
        e.1 += k.launches;
        e.2 += 1;
        names.insert(&k.name);
        if k.unclassified() {
            unclassified_ns = unclassified_ns.saturating_add(k.ns);
        }
    }
    let distinct_kernels = names.len() as u64;
    let mut buckets: Vec<BucketRow> = by_bucket
        .into_iter()
        .map(|(bucket, (ns, launches, distinct))| BucketRow {
            bucket,
            kernel_ns: ns,
            pct: pct(ns, kernel_ns),
            launches,
            distinct_kernels: distinct,
        })
        .collect();
    buckets.sort_by(|a, b| {
        b.kernel_ns
            .cmp(&a.kernel_ns)
            .then(a.bucket.as_str().cmp(b.bucket.as_str()))
    });
    let activities = kernels.iter().map(|k| k.launches).sum();
    kernels.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.bucket.as_str().cmp(b.bucket.as_str()))
    });
    let top_kernels = kernels
        .iter()
        .take(top)
        .map(|k| KernelRow {
            name: k.name.clone(),
            bucket: k.bucket,
            family: k.family.clone(),
            library: k.library.clone(),
            rule_id: k.rule_id.clone(),
            launches: k.launches,
            total_ns: k.ns,
            pct: pct(k.ns, kernel_ns),
        })
        .collect();
    KernelTables {
        buckets,
        top_kernels,
        kernel_ns,
        unclassified_ns,
        activities,
        distinct_kernels,
        kernels,
    }
}

/// GPU time of one kernel name in one bucket (the launching op's, which can differ from the
/// name's own class), with the name's class: what the kernel tables and the kernel findings
/// are computed from.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KernelTotals {
    pub bucket: Bucket,
    pub name: String,
    /// The class of the name itself (its rule's bucket, tag, family, library).
    pub class_bucket: Bucket,
    pub tag: Option<KernelTag>,
    pub family: String,
    pub library: String,
    pub rule_id: Option<String>,
    pub launches: u64,
    pub ns: i64,
}

impl KernelTotals {
    /// No rule matched the name (`Classified::is_unclassified`).
    pub fn unclassified(&self) -> bool {
        self.rule_id.is_none() && self.family == "unclassified"
    }
}

/// Hand-written attention on one stream, its kernels in order: a GEMM, a softmax within `gap`
/// kernels after it with no GEMM between, then a GEMM within `gap` kernels of the softmax; each
/// chain as its (GEMM, softmax, GEMM) positions, chains never overlapping. `manual_attention`
/// finds them, and the SDPA replay replaces them.
pub(crate) fn attention_chains(
    len: usize,
    gap: usize,
    is_gemm: impl Fn(usize) -> bool,
    is_softmax: impl Fn(usize) -> bool,
) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < len {
        if !is_gemm(i) {
            i += 1;
            continue;
        }
        let soft = (i + 1..(i + 1 + gap).min(len)).find(|&j| is_softmax(j));
        let pv = soft.and_then(|j| (j + 1..(j + 1 + gap).min(len)).find(|&k| is_gemm(k)));
        match (soft, pv) {
            (Some(j), Some(k)) if !(i + 1..j).any(&is_gemm) => {
                out.push((i, j, k));
                i = k + 1;
            }
            _ => i += 1,
        }
    }
    out
}
