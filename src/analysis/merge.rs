//! Several ranks as one job: each rank is analyzed alone, and [`merge`] forms the job's
//! [`Analysis`] from the ranks' analyses and the few sums beside them ([`Parts`]). What a rank
//! contributes is bounded by its steps, collectives and distinct names, not by its events, so
//! the ranks may be analyzed anywhere (`rocprof-classify partial`) and merged later.
//!
//! How each block is formed (docs/guide/several-ranks.md): integers add; the kernel, op, shape,
//! module and source tables add by name, then sort and truncate; the time partition adds the
//! ranks' fractional partitions in rank order; steps take the slowest rank per step number;
//! torch.compile's per-step slots concatenate; collectives are matched across the ranks'
//! calls exactly as in one trace; regions add by path; inputs, step rows and memory
//! concatenate in rank order.

use crate::analysis::compile::{self};
use crate::analysis::kernels::KernelTotals;
use crate::analysis::numbers::pct;
use crate::analysis::ops::attribution::{self, OpTotals, ShapeTotals};
use crate::analysis::ops::frames::{FrameRow, RootModule};
use crate::analysis::output::{Analysis, Parts, Summary};
use crate::analysis::signals::collective_calls::Call;
use crate::analysis::signals::collectives;
use crate::analysis::time::partition::{self, Category, PartitionRow};
use crate::analysis::time::regions::{RegionBucket, RegionRow};
use crate::analysis::time::steps;
use crate::classify::devices::DevicePeaks;
use crate::classify::{Bucket, KernelTag};
use std::collections::BTreeMap;

/// The job's steps from its ranks': each step number's slowest time and busiest GPU work, and
/// every step number any rank has.
#[derive(Default)]
struct StepsMerge {
    durations: BTreeMap<u64, i64>,
    work: BTreeMap<u64, i64>,
    numbers: Vec<u64>,
}

impl StepsMerge {
    fn add(&mut self, rp: &Parts) {
        for &(n, d) in &rp.step_durations {
            let e = self.durations.entry(n).or_insert(0);
            *e = (*e).max(d);
        }
        for &(n, w) in &rp.step_work {
            let e = self.work.entry(n).or_insert(0);
            *e = (*e).max(w);
        }
        self.numbers.extend(&rp.step_numbers);
    }

    fn into_parts(mut self, p: &mut Parts) {
        p.step_durations = self.durations.into_iter().collect();
        p.step_work = p
            .step_durations
            .iter()
            .map(|&(n, _)| (n, self.work.get(&n).copied().unwrap_or(0)))
            .collect();
        self.numbers.sort_unstable();
        self.numbers.dedup();
        p.step_numbers = self.numbers;
    }
}

/// The job's analysis from its ranks' (in merge order: by rank); `top` rows of `top_kernels`
/// are kept.
pub fn merge(ranks: &[&Analysis], devices: &[DevicePeaks], top: usize) -> Analysis {
    let mut inputs = Vec::new();
    let mut p = Parts::default();
    let mut steps = StepsMerge::default();
    let mut counters: BTreeMap<&str, crate::analysis::signals::counters::CounterSums> =
        BTreeMap::new();
    let (mut window_ns, mut kernel_ns) = (0i64, 0i64);
    let mut out = Analysis::default();
    let mut op_view = false;
    for a in ranks {
        let offset = inputs.len() as u32;
        let rp = &a.parts;
        inputs.extend(a.inputs.iter().cloned());
        window_ns = window_ns.saturating_add(a.summary.window_ns);
        kernel_ns = kernel_ns.saturating_add(a.summary.kernel_ns);
        op_view |= a.summary.bucket_view == "ops";
        out.has_op_shapes |= a.has_op_shapes;
        p.partition.add(&rp.partition);
        steps.add(rp);
        p.steps_per_input.extend(&rp.steps_per_input);
        p.compile.append(&rp.compile);
        p.flops.extend(rp.flops.iter().cloned());
        p.calls.extend(rp.calls.iter().map(|c| Call {
            input: c.input + offset,
            ..c.clone()
        }));
        p.has_steps.extend(&rp.has_steps);
        p.loads.extend(rp.loads.iter().cloned());
        for (row, &input) in a.memory.iter().zip(&rp.memory_inputs) {
            out.memory
                .push(crate::analysis::signals::memory::DeviceMemory {
                    input: input + offset,
                    ..row.clone()
                });
            p.memory_inputs.push(input + offset);
        }
        for (tag, ns) in &rp.tagged_ns {
            *p.tagged_ns.entry(*tag).or_default() += ns;
        }
        out.step_breakdown.extend(a.step_breakdown.iter().cloned());
        for c in &rp.counters {
            match counters.get_mut(c.name.as_str()) {
                Some(sum) => sum.add(c),
                None => {
                    counters.insert(
                        c.name.as_str(),
                        crate::analysis::signals::counters::CounterSums {
                            input: c.input + offset,
                            ..c.clone()
                        },
                    );
                }
            }
        }
    }

    let (kernels, ops, shapes, roots) = sum_tables(ranks);
    let mut tables = crate::analysis::kernels::tables_from_rows(kernels, kernel_ns, top);
    p.kernels = std::mem::take(&mut tables.kernels);
    steps.into_parts(&mut p);
    let durations: Vec<i64> = p.step_durations.iter().map(|d| d.1).collect();
    let work: Vec<i64> = p.step_work.iter().map(|d| d.1).collect();
    let warmup_in_window = steps::step_stats(&durations, Some(&work)).is_some_and(|(_, w)| w);
    let (mut compile, _) = compile::summarize(&p.compile);
    compile.inductor_kernel_pct = pct(
        p.tagged_ns.get(&KernelTag::Inductor).copied().unwrap_or(0),
        tables.kernel_ns,
    );
    p.roots = roots;
    let compiled = compile.compiled || compile.inductor_kernel_pct > 0.0;
    compile.eager_modules = compile::eager_modules(&p.roots, tables.kernel_ns, compiled);
    p.ops = ops;
    p.shapes = shapes;
    p.phases = crate::analysis::time::phases::merge_phases(
        ranks.iter().map(|a| a.parts.phases.as_slice()),
    );
    // Ranks of one job mark their iterations alike; the first rank's marker names them.
    p.iteration_marker = ranks.iter().find_map(|a| a.parts.iteration_marker.clone());

    let summary = summary(&inputs, &p, &tables, (window_ns, op_view), devices);
    out.collectives = collectives::analyze(
        &p.calls,
        &collectives::CallInputs {
            inputs: &inputs,
            has_steps: &p.has_steps,
            devices,
        },
    );
    let rows: Vec<_> = ranks.iter().map(|a| a.parallelism.clone()).collect();
    out.parallelism = crate::analysis::signals::parallelism::merge(&rows);
    let waits = collectives::waits(
        &p.calls,
        &collectives::CallInputs {
            inputs: &inputs,
            has_steps: &p.has_steps,
            devices,
        },
    );
    out.pipeline = crate::analysis::signals::pipeline::merge(
        ranks.iter().filter_map(|a| a.pipeline.as_ref()),
        &p.calls,
        |i| inputs[i as usize].rank.unwrap_or(i),
        &waits,
    );
    out.time_partition = partition::rows(&p.partition, window_ns);
    out.summary = summary;
    out.buckets = tables.buckets;
    out.top_kernels = tables.top_kernels;
    out.activities = tables.activities;
    out.distinct_kernels = tables.distinct_kernels;
    out.compile = compile;
    out.warmup_in_window = warmup_in_window;
    out.ops = attribution::op_rows(&p.ops);
    out.op_shapes = attribution::shape_rows(&p.shapes);
    p.memory_shapes = merge_memory_shapes(ranks);
    out.memory_shapes = attribution::memory_shape_rows(&p.memory_shapes);
    out.modules = merge_frames(ranks.iter().map(|a| a.modules.as_slice()));
    out.sources = merge_frames(ranks.iter().map(|a| a.sources.as_slice()));
    out.regions = merge_regions(ranks.iter().map(|a| a.regions.as_slice()));
    out.phases = crate::analysis::time::phases::phase_rows(&p.phases);
    p.counters = counters.into_values().collect();
    out.kernel_counters = crate::analysis::signals::counters::kernel_counters(&p.counters, &inputs);
    out.tagged_ns = p.tagged_ns.clone();
    out.inputs = inputs;
    p.candidates = crate::analysis::ops::candidates::merge(
        &ranks
            .iter()
            .map(|a| a.parts.candidates.as_slice())
            .collect::<Vec<_>>(),
    );
    let candidates = crate::analysis::ops::candidates::rows(&p.candidates, &out.rating(), devices);
    out.kernel_candidates = candidates;
    p.op_steps = crate::analysis::ops::op_steps::merge(
        &ranks
            .iter()
            .map(|a| a.parts.op_steps.clone())
            .collect::<Vec<_>>(),
    );
    merge_paths(&mut out, &mut p, ranks, (window_ns, top), &waits);
    p.replays = crate::analysis::path::replay::results::Replays::merge(
        &ranks.iter().map(|a| &a.parts.replays).collect::<Vec<_>>(),
    );
    // A pipeline's changes are replayed across its ranks, by the pipeline's own model.
    if let Some(pipe) = &out.pipeline {
        p.replays
            .sets
            .extend(crate::analysis::signals::pipeline::replays::sets(pipe));
    }
    p.what_if = crate::analysis::path::replay::results::WhatIf::merge(
        ranks.iter().filter_map(|a| a.parts.what_if.as_ref()),
    );
    out.parts = p;
    out
}

/// The job's critical path from its ranks': each rank's collective kernels split into waiting
/// for the last rank (`rank_wait`) and transfer, with the waits of the collectives matched
/// across ranks; each rank's own path kept for its view.
fn merge_paths(
    out: &mut Analysis,
    p: &mut Parts,
    ranks: &[&Analysis],
    (window_ns, top): (i64, usize),
    waits: &rustc_hash::FxHashMap<(u32, u32, i64), i64>,
) {
    use crate::analysis::path::{split_rank_waits, CriticalPath};
    // A scheduled pipeline's sends and receives on its group wait for the neighbouring stage
    // (a pipeline by hand without a schedule keeps them as waits for a rank).
    let scheduled = out.pipeline.as_ref().is_some_and(|p| p.schedule.is_some());
    let pipeline_groups: Vec<Option<String>> = out
        .parallelism
        .iter()
        .filter(|r| {
            scheduled && r.kind == crate::analysis::signals::parallelism::ParallelKind::Pipeline
        })
        .map(|r| r.group.clone())
        .collect();
    let bubbles: std::collections::HashSet<(u32, u32, i64)> = p
        .calls
        .iter()
        .filter(|c| {
            crate::analysis::signals::pipeline::is_p2p(c.kind)
                && pipeline_groups.contains(&c.args.as_ref().and_then(|a| a.process_group.clone()))
        })
        .map(|c| (c.input, c.stream, c.ts))
        .collect();
    let (mut per_step, mut items) = (Vec::new(), Vec::new());
    let mut offset = 0u32;
    for a in ranks {
        let comms: Vec<_> = a
            .parts
            .path_comms
            .iter()
            .map(|c| crate::analysis::path::PathComm {
                input: c.input + offset,
                ..c.clone()
            })
            .collect();
        offset += a.inputs.len() as u32;
        let (steps, rank_items) = split_rank_waits(
            a.critical_path.per_step.clone(),
            a.parts.path_items.clone(),
            &comms,
            waits,
            &bubbles,
        );
        if let Some(rank) = a.inputs.first().and_then(|i| i.rank) {
            let path =
                CriticalPath::from_parts(steps.clone(), &rank_items, a.summary.window_ns, top);
            p.rank_paths.push((rank, path));
        }
        per_step.extend(steps);
        items.extend(rank_items);
        p.path_comms.extend(comms);
    }
    items.sort_by(|a, b| (a.kind, &a.name, a.label).cmp(&(b.kind, &b.name, b.label)));
    out.critical_path = CriticalPath::from_parts(per_step, &items, window_ns, top);
    p.path_items = items;
}

/// The ranks' kernel, op, shape and root-module tables added by name (each sorted by its key;
/// root modules largest first, as `frames::frames` lists them).
fn sum_tables(
    ranks: &[&Analysis],
) -> (
    Vec<KernelTotals>,
    Vec<OpTotals>,
    Vec<ShapeTotals>,
    Vec<RootModule>,
) {
    let mut kernels: BTreeMap<(Bucket, &str), KernelTotals> = BTreeMap::new();
    let mut ops: BTreeMap<&str, OpTotals> = BTreeMap::new();
    let mut shapes: BTreeMap<(&str, &str), ShapeTotals> = BTreeMap::new();
    let mut roots: BTreeMap<&str, RootModule> = BTreeMap::new();
    for rp in ranks.iter().map(|a| &a.parts) {
        for k in &rp.kernels {
            let e = kernels
                .entry((k.bucket, k.name.as_str()))
                .or_insert_with(|| KernelTotals {
                    launches: 0,
                    ns: 0,
                    ..k.clone()
                });
            e.launches += k.launches;
            e.ns = e.ns.saturating_add(k.ns);
        }
        for o in &rp.ops {
            ops.entry(o.name.as_str())
                .or_insert_with(|| OpTotals {
                    name: o.name.clone(),
                    ..Default::default()
                })
                .add(o);
        }
        for s in &rp.shapes {
            shapes
                .entry((s.op.as_str(), s.dims.as_str()))
                .or_insert_with(|| ShapeTotals {
                    op: s.op.clone(),
                    dims: s.dims.clone(),
                    ..Default::default()
                })
                .add(s);
        }
        for r in &rp.roots {
            let e = roots.entry(r.name.as_str()).or_insert_with(|| RootModule {
                name: r.name.clone(),
                kernel_ns: 0,
                compiled_ns: 0,
            });
            e.kernel_ns += r.kernel_ns;
            e.compiled_ns += r.compiled_ns;
        }
    }
    let mut roots: Vec<RootModule> = roots.into_values().collect();
    roots.sort_by(|a, b| b.kernel_ns.cmp(&a.kernel_ns).then(a.name.cmp(&b.name)));
    (
        kernels.into_values().collect(),
        ops.into_values().collect(),
        shapes.into_values().collect(),
        roots,
    )
}

/// The ranks' memory-bound shapes added by (op, shapes).
fn merge_memory_shapes(
    ranks: &[&Analysis],
) -> Vec<crate::analysis::ops::attribution::MemoryShapeTotals> {
    type Key<'a> = (&'a str, &'a str, &'a str, Option<&'a str>);
    let mut by: BTreeMap<Key, crate::analysis::ops::attribution::MemoryShapeTotals> =
        BTreeMap::new();
    for rp in ranks.iter().map(|a| &a.parts) {
        for m in &rp.memory_shapes {
            let key = (
                m.op.as_str(),
                m.dims.as_str(),
                m.types.as_str(),
                m.kernel_file.as_deref(),
            );
            by.entry(key)
                .or_insert_with(|| crate::analysis::ops::attribution::MemoryShapeTotals {
                    op: m.op.clone(),
                    dims: m.dims.clone(),
                    types: m.types.clone(),
                    kernel_file: m.kernel_file.clone(),
                    ..Default::default()
                })
                .add(m);
        }
    }
    by.into_values().collect()
}

/// The job's summary from its merged parts and kernel tables (`window`: the summed window and
/// whether any rank's buckets came from ops).
fn summary(
    inputs: &[crate::model::InputMeta],
    p: &Parts,
    tables: &crate::analysis::kernels::KernelTables,
    (window_ns, op_view): (i64, bool),
    devices: &[DevicePeaks],
) -> Summary {
    let durations: Vec<i64> = p.step_durations.iter().map(|d| d.1).collect();
    let work: Vec<i64> = p.step_work.iter().map(|d| d.1).collect();
    let step_ns = steps::step_stats(&durations, Some(&work)).map(|(s, _)| s);
    let mut summary = Summary {
        window_ns,
        steps: durations.len(),
        step_ns,
        gpu_busy_ns: p.partition.busy().round() as i64,
        kernel_ns: tables.kernel_ns,
        unclassified_pct: pct(tables.unclassified_ns, tables.kernel_ns),
        bucket_view: if op_view { "ops" } else { "kernels" }.to_string(),
        ..Default::default()
    };
    summary.set_iterations(&p.phases, p.iteration_marker.as_ref());
    summary.mfu = crate::analysis::ops::mfu::mfu_of(
        inputs,
        devices,
        (&p.flops, &p.steps_per_input),
        (summary.step_ns.as_ref().map(|s| s.mean), summary.window_ns),
        &tables.buckets,
        &p.phases,
    );
    summary
}

/// The `top` largest rows of the kernel table, as the feed's `top_kernels`.
pub fn top_kernels(a: &Analysis, top: usize) -> Vec<crate::analysis::kernels::KernelRow> {
    crate::analysis::kernels::tables_from_rows(a.parts.kernels.clone(), a.summary.kernel_ns, top)
        .top_kernels
}

/// Module or source rows added by name, in the order `frames::frames` sorts them.
fn merge_frames<'a>(ranks: impl Iterator<Item = &'a [FrameRow]>) -> Vec<FrameRow> {
    let key = |r: &FrameRow| r.name.clone().or(r.location.clone()).unwrap_or_default();
    let mut by: BTreeMap<String, FrameRow> = BTreeMap::new();
    for rows in ranks {
        for r in rows {
            let e = by.entry(key(r)).or_insert_with(|| FrameRow {
                self_ns: 0,
                total_ns: 0,
                ..r.clone()
            });
            e.self_ns += r.self_ns;
            e.total_ns += r.total_ns;
        }
    }
    let mut rows: Vec<FrameRow> = by.into_values().collect();
    rows.sort_by(|a, b| {
        b.self_ns
            .cmp(&a.self_ns)
            .then(b.total_ns.cmp(&a.total_ns))
            .then(key(a).cmp(&key(b)))
    });
    rows
}

/// Region trees added by path: a path's children in the order the ranks first show them, the
/// rows' integers summed, the shares recomputed from the sums.
fn merge_regions<'a>(ranks: impl Iterator<Item = &'a [RegionRow]>) -> Vec<RegionRow> {
    struct Node {
        row: RegionRow,
        children: Vec<usize>,
    }
    let mut nodes: Vec<Node> = Vec::new();
    let mut roots: Vec<usize> = Vec::new();
    let mut at: BTreeMap<String, usize> = BTreeMap::new();
    for rows in ranks {
        // The open path from the root down, by depth (rows come in pre-order).
        let mut open: Vec<usize> = Vec::new();
        for r in rows {
            open.truncate(r.depth as usize);
            let k = match at.get(&r.path) {
                Some(&k) => {
                    let m = &mut nodes[k].row;
                    m.count += r.count;
                    m.cpu_ns += r.cpu_ns;
                    m.gpu_ns += r.gpu_ns;
                    m.gpu_span_ns += r.gpu_span_ns;
                    m.gpu_elapsed_ns += r.gpu_elapsed_ns;
                    m.launches += r.launches;
                    m.ranks.extend(&r.ranks);
                    m.buckets.extend(r.buckets.iter().cloned());
                    m.time_partition.extend(r.time_partition.iter().cloned());
                    k
                }
                None => {
                    nodes.push(Node {
                        row: r.clone(),
                        children: Vec::new(),
                    });
                    let k = nodes.len() - 1;
                    match open.last() {
                        Some(&parent) => nodes[parent].children.push(k),
                        None => roots.push(k),
                    }
                    at.insert(r.path.clone(), k);
                    k
                }
            };
            open.push(k);
        }
    }
    let mut out = Vec::with_capacity(nodes.len());
    let mut todo: Vec<usize> = roots.into_iter().rev().collect();
    while let Some(k) = todo.pop() {
        todo.extend(nodes[k].children.iter().rev());
        let mut row = nodes[k].row.clone();
        row.ranks.sort_unstable();
        row.ranks.dedup();
        let mut buckets: BTreeMap<Bucket, i64> = BTreeMap::new();
        for b in &row.buckets {
            *buckets.entry(b.bucket).or_default() += b.kernel_ns;
        }
        let bucket_total: i64 = buckets.values().sum();
        row.buckets = buckets
            .into_iter()
            .map(|(bucket, kernel_ns)| RegionBucket {
                bucket,
                kernel_ns,
                pct: pct(kernel_ns, bucket_total),
            })
            .collect();
        row.buckets.sort_by(|a, b| {
            b.kernel_ns
                .cmp(&a.kernel_ns)
                .then(a.bucket.as_str().cmp(b.bucket.as_str()))
        });
        let mut cats: BTreeMap<Category, i64> = BTreeMap::new();
        for r in &row.time_partition {
            *cats.entry(r.category).or_default() += r.ns;
        }
        row.time_partition = Category::ALL
            .into_iter()
            .map(|category| {
                let ns = cats.get(&category).copied().unwrap_or(0);
                PartitionRow {
                    category,
                    ns,
                    pct: pct(ns, row.gpu_span_ns),
                }
            })
            .collect();
        out.push(row);
    }
    out
}
