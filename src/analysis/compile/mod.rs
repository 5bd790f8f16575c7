//! torch.compile's signals, read in one place: as the trace shows them (FEED.md
//! "torch.compile": compiled regions per step, graph breaks, recompiles, compile time inside the
//! window, CUDA/HIP graph replay), and what its logs add, joined to the trace ([`logs`]). The
//! compile findings are `detect::compile`'s; the fixes they print are `rules/ladder.toml`'s.

pub(crate) mod logs;

use crate::analysis::time::links::{compiled_region, is_compile_event, is_graph_launch, Links};
use crate::analysis::time::steps::Steps;
use crate::model::{HostKind, Trace};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, Serialize, Deserialize, Default)]
pub struct GraphBreaks {
    pub detected: bool,
    pub per_step: f64,
    pub frames: Vec<u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize, Default)]
pub struct Recompiles {
    pub count: usize,
    pub compile_ids: Vec<String>,
}

/// The feed's `compile` block.
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
pub struct CompileSummary {
    pub compiled: bool,
    pub regions_per_step: f64,
    pub graph_breaks: GraphBreaks,
    pub recompiles: Recompiles,
    pub cudagraphs: bool,
    pub compile_in_window_ns: i64,
    /// Share (%) of GPU activity time in kernels Inductor generated: torch.compile in use even
    /// where no `Torch-Compiled Region` marker runs (its code replayed inside graphs).
    pub inductor_kernel_pct: f64,
    /// In a trace that runs compiled code: the outermost modules that run eager and hold at least
    /// [`EAGER_MODULE_MIN_PCT`] of the kernel time (a text encoder or VAE left out of
    /// `torch.compile`), largest first; needs `with_stack=True`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub eager_modules: Vec<EagerModule>,
}

/// A root module's share of kernel time below which its running eager is not worth naming.
pub const EAGER_MODULE_MIN_PCT: f64 = 2.0;

/// An outermost module that runs eager beside compiled code.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct EagerModule {
    /// `nn.Module: T5EncoderModel_0` as the profiler names it.
    pub name: String,
    /// GPU time of its eager kernels.
    pub kernel_ns: i64,
    /// Of the kernel time in the window.
    pub pct: f64,
}

/// The root modules that run eager beside compiled code ([`CompileSummary::eager_modules`]):
/// only when something runs compiled, each root mostly eager (≥ 90% of its time) and holding
/// at least [`EAGER_MODULE_MIN_PCT`] of `kernel_ns`.
pub fn eager_modules(
    roots: &[crate::analysis::ops::frames::RootModule],
    kernel_ns: i64,
    compiled_anywhere: bool,
) -> Vec<EagerModule> {
    if !compiled_anywhere && roots.iter().all(|r| r.compiled_ns == 0) {
        return Vec::new();
    }
    roots
        .iter()
        .filter(|r| r.name.starts_with("nn.Module: "))
        .map(|r| (r, r.kernel_ns - r.compiled_ns))
        .filter(|&(r, eager)| eager as f64 >= 0.9 * r.kernel_ns as f64)
        .map(|(r, eager)| EagerModule {
            name: r.name.clone(),
            kernel_ns: eager,
            pct: crate::analysis::numbers::pct(eager, kernel_ns),
        })
        .filter(|m| m.pct >= EAGER_MODULE_MIN_PCT)
        .collect()
}

/// What the detectors need beyond the summary.
#[derive(Clone, Debug, Default)]
pub struct CompileDetail {
    /// Per analyzed step: the compiled regions `(frame, compile)` in order.
    pub step_regions: Vec<Vec<(u32, u32)>>,
    /// Per analyzed step: `aten::item` / `aten::_local_scalar_dense` calls (host syncs).
    pub step_item_calls: Vec<usize>,
    /// ATen ops that ran eagerly between compiled regions of a step (the code a break leaves
    /// out of the graph), by count, most frequent first.
    pub ops_between_regions: Vec<(String, usize)>,
    /// Which signal found the breaks: "frame_sequence" or "repeated_frame_without_outer".
    pub break_signal: Option<&'static str>,
    /// Frames compiled once and called several times per step (a deliberate compiled loop).
    pub loop_frames: Vec<u32>,
    /// Dynamo/Inductor compile ranges inside the window.
    pub compile_events_in_window: usize,
    pub graph_launches: u64,
    pub graph_kernels: u64,
    pub graph_kernel_ns: i64,
}

/// Step slots: (input, cpu range) of each kept step, sorted; one slot per input without steps.
fn step_slots(trace: &Trace, steps: &Steps) -> Vec<(u32, i64, i64)> {
    let mut slots: Vec<(u32, i64, i64)> = Vec::new();
    for input in 0..trace.inputs.len() {
        let kept: Vec<_> = steps
            .kept(input)
            .map(|(_, s)| (input as u32, s.cpu_start_ns, s.cpu_end_ns))
            .collect();
        if kept.is_empty() && steps.per_input[input].is_empty() {
            slots.push((input as u32, i64::MIN, i64::MAX));
        } else {
            slots.extend(kept);
        }
    }
    slots.sort();
    slots
}

/// The slot of a host event of `input` at `t`.
fn slot_of(slots: &[(u32, i64, i64)], input: u32, t: i64) -> Option<usize> {
    let k = slots.partition_point(|s| (s.0, s.1) <= (input, t));
    (k > 0 && slots[k - 1].0 == input && t < slots[k - 1].2).then(|| k - 1)
}

/// The union of nesting ranges, in ns.
fn union_ns(mut ranges: Vec<(i64, i64)>) -> i64 {
    ranges.sort_unstable();
    let (mut total, mut cur_end) = (0i64, i64::MIN);
    for (s, e) in ranges {
        let s = s.max(cur_end);
        if e > s {
            total += e - s;
            cur_end = e;
        }
    }
    total
}

/// Eager ATen ops between the first and last compiled region of a step, outside every
/// region, with their counts.
fn ops_between_regions(
    trace: &Trace,
    slots: &[(u32, i64, i64)],
    region_spans: &mut [Vec<(i64, i64)>],
) -> BTreeMap<String, usize> {
    let host = &trace.host;
    let mut between: BTreeMap<&str, usize> = BTreeMap::new();
    for spans in region_spans.iter_mut() {
        spans.sort_unstable();
    }
    // ATen ops that do work, not the allocation and view plumbing inside them.
    let eager_work = trace.names.per_name(|name| {
        let plumbing = matches!(
            name,
            "aten::empty"
                | "aten::empty_strided"
                | "aten::as_strided"
                | "aten::resize_"
                | "aten::_local_scalar_dense"
                | "aten::view"
                | "aten::detach"
                | "aten::alias"
                | "aten::lift_fresh"
        );
        name.starts_with("aten::") && !plumbing
    });
    for i in 0..host.len() {
        if host.kind[i] != HostKind::CpuOp || !eager_work[host.name[i].index()] {
            continue;
        }
        let name = trace.names.get(host.name[i]);
        let ts = host.ts_ns[i];
        let Some(slot) = slot_of(slots, host.input[i], ts) else {
            continue;
        };
        let spans = &region_spans[slot];
        if spans.len() < 2 || ts < spans[0].0 || ts > spans[spans.len() - 1].0 {
            continue;
        }
        if !spans.iter().any(|&(s, e)| ts >= s && ts < e) {
            *between.entry(name).or_default() += 1;
        }
    }
    between
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// What a trace says of torch.compile before it is summed up: per step slot (kept steps in
/// input order; one slot per input without steps) its compiled regions and host syncs, the
/// region ids, the eager ops between regions, compile time and graph replays. Ranks' facts
/// concatenate ([`CompileFacts::append`]) into the job's, which [`summarize`] reads.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CompileFacts {
    pub step_regions: Vec<Vec<(u32, u32)>>,
    pub step_item_calls: Vec<usize>,
    /// Every compiled region's (frame, compile) id, and those that start inside the window.
    pub all_regions: BTreeSet<(u32, u32)>,
    pub ids_in_window: BTreeSet<(u32, u32)>,
    pub ops_between_regions: BTreeMap<String, usize>,
    pub compile_in_window_ns: i64,
    pub compile_events_in_window: usize,
    pub graph_launches: u64,
    pub graph_kernels: u64,
    pub graph_kernel_ns: i64,
}

impl CompileFacts {
    /// Another rank's facts after these (slots in rank order, ids as a set: every rank compiles
    /// the same frames).
    pub fn append(&mut self, other: &CompileFacts) {
        self.step_regions.extend(other.step_regions.iter().cloned());
        self.step_item_calls.extend(&other.step_item_calls);
        self.all_regions.extend(&other.all_regions);
        self.ids_in_window.extend(&other.ids_in_window);
        for (op, n) in &other.ops_between_regions {
            *self.ops_between_regions.entry(op.clone()).or_default() += n;
        }
        self.compile_in_window_ns += other.compile_in_window_ns;
        self.compile_events_in_window += other.compile_events_in_window;
        self.graph_launches += other.graph_launches;
        self.graph_kernels += other.graph_kernels;
        self.graph_kernel_ns += other.graph_kernel_ns;
    }
}

/// Reads the compile signals over the analyzed steps (the whole trace as one step without any).
pub fn facts(trace: &Trace, links: &Links, steps: &Steps, windows: &[(i64, i64)]) -> CompileFacts {
    let host = &trace.host;
    let mut facts = CompileFacts::default();
    let slots = step_slots(trace, steps);
    facts.step_regions = vec![Vec::new(); slots.len()];
    facts.step_item_calls = vec![0; slots.len()];
    let slot_of = |input: u32, t: i64| slot_of(&slots, input, t);

    let mut compile_iv: Vec<Vec<(i64, i64)>> = vec![Vec::new(); trace.inputs.len()];
    let mut region_rows: Vec<(i64, usize, (u32, u32))> = Vec::new();
    let mut region_spans: Vec<Vec<(i64, i64)>> = vec![Vec::new(); slots.len()];
    // What each distinct name says, decided once.
    let regions = trace.names.per_name(compiled_region);
    let compiling = trace.names.per_name(is_compile_event);
    let graph_launches = trace.names.per_name(is_graph_launch);
    for i in 0..host.len() {
        let n = host.name[i].index();
        let name = trace.names.get(host.name[i]);
        let input = host.input[i];
        let (w0, w1) = windows[input as usize];
        let ts = host.ts_ns[i];
        if host.kind[i] == HostKind::CpuOp {
            if let Some(id) = regions[n] {
                facts.all_regions.insert(id);
                if ts >= w0 && ts < w1 {
                    facts.ids_in_window.insert(id);
                }
                if let Some(slot) = slot_of(input, ts) {
                    region_rows.push((ts, slot, id));
                    region_spans[slot].push((ts, ts.saturating_add(host.dur_ns.get(i))));
                }
                continue;
            }
            if name == "aten::item" || name == "aten::_local_scalar_dense" {
                if let Some(slot) = slot_of(input, ts) {
                    // _local_scalar_dense runs inside item: count the outer call once.
                    if name == "aten::item" {
                        facts.step_item_calls[slot] += 1;
                    }
                }
            }
        }
        if compiling[n] {
            let (s, e) = (ts.max(w0), ts.saturating_add(host.dur_ns.get(i)).min(w1));
            if e > s {
                compile_iv[input as usize].push((s, e));
                facts.compile_events_in_window += 1;
            }
        }
        if matches!(host.kind[i], HostKind::Runtime | HostKind::Driver) && graph_launches[n] {
            facts.graph_launches += 1;
        }
    }
    region_rows.sort();
    for (_, slot, id) in region_rows {
        facts.step_regions[slot].push(id);
    }
    facts.ops_between_regions = ops_between_regions(trace, &slots, &mut region_spans);

    // Kernels replayed by a graph launch.
    for (a, launch) in links.launch.iter().enumerate() {
        if let Some(h) = launch {
            if is_graph_launch(trace.names.get(host.name[*h as usize])) {
                facts.graph_kernels += 1;
                facts.graph_kernel_ns += trace.activities.dur_ns[a];
            }
        }
    }

    // Compile time: the union of compile ranges (they nest) inside the window.
    facts.compile_in_window_ns = compile_iv.into_iter().map(union_ns).sum();
    facts
}

/// The feed's `compile` block and what the detectors read, from the facts of one trace or of
/// several ranks.
pub fn summarize(facts: &CompileFacts) -> (CompileSummary, CompileDetail) {
    let mut between: Vec<(String, usize)> = facts
        .ops_between_regions
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    between.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    between.truncate(8);
    let mut detail = CompileDetail {
        step_regions: facts.step_regions.clone(),
        step_item_calls: facts.step_item_calls.clone(),
        ops_between_regions: between,
        compile_events_in_window: facts.compile_events_in_window,
        graph_launches: facts.graph_launches,
        graph_kernels: facts.graph_kernels,
        graph_kernel_ns: facts.graph_kernel_ns,
        ..Default::default()
    };
    let all_regions = &facts.all_regions;

    // Graph breaks per step.
    let frame0_seen = all_regions.iter().any(|&(f, _)| f == 0);
    let mut breaks_total = 0usize;
    let mut signal = None;
    let mut repeats: BTreeMap<u32, usize> = BTreeMap::new();
    for seq in &detail.step_regions {
        let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
        for &(f, _) in seq {
            *counts.entry(f).or_default() += 1;
        }
        let repeated = counts.values().any(|&c| c >= 2);
        let breaks = if !frame0_seen && repeated && seq.len() >= 2 {
            // Dynamo gave up on the outer frame after a break in a loop: the loop body runs as a
            // later frame once per iteration from eager code.
            signal.get_or_insert("repeated_frame_without_outer");
            seq.len() - 1
        } else {
            // A break makes Dynamo resume in a new frame: 0/0 → 1/0 → 2/0 is two breaks.
            let up = seq.windows(2).filter(|w| w[1].0 > w[0].0).count();
            if up > 0 {
                signal.get_or_insert("frame_sequence");
            }
            up
        };
        breaks_total += breaks;
        if breaks == 0 {
            for (f, c) in counts {
                if c >= 2 {
                    *repeats.entry(f).or_default() += 1;
                }
            }
        }
    }
    let n_slots = detail.step_regions.len().max(1) as f64;
    let regions: usize = detail.step_regions.iter().map(Vec::len).sum();
    let per_step = round3(breaks_total as f64 / n_slots);
    detail.break_signal = signal;
    // A frame present from 0/0 and run several times in most steps, without breaks: a loop.
    detail.loop_frames = repeats
        .into_iter()
        .filter(|&(_, steps)| steps * 2 >= detail.step_regions.len())
        .map(|(f, _)| f)
        .collect();
    if !frame0_seen || per_step > 0.0 {
        detail.loop_frames.clear();
    }

    let recompiled: Vec<(u32, u32)> = facts
        .ids_in_window
        .iter()
        .copied()
        .filter(|&(_, c)| c >= 1)
        .collect();
    let summary = CompileSummary {
        compiled: !all_regions.is_empty(),
        regions_per_step: round3(regions as f64 / n_slots),
        graph_breaks: GraphBreaks {
            detected: per_step > 0.0,
            per_step,
            frames: all_regions
                .iter()
                .map(|&(f, _)| f)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        },
        recompiles: Recompiles {
            count: recompiled.len(),
            compile_ids: recompiled.iter().map(|(f, c)| format!("{f}/{c}")).collect(),
        },
        cudagraphs: detail.graph_launches > 0,
        compile_in_window_ns: facts.compile_in_window_ns,
        // The kernels' share comes with the kernel tables (`analysis::prepare`).
        inductor_kernel_pct: 0.0,
        eager_modules: Vec::new(),
    };
    (summary, detail)
}

fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

/// Per GPU activity: whether compiled code launched it: its launch call runs inside a
/// `Torch-Compiled Region` on the same thread, or its kernel is one Inductor generated (code
/// replayed from a graph keeps no region marker). [`crate::analysis::ops::frames::frames`] adds
/// the activities under an `OptimizedModule` frame (`torch.compile(model)`).
pub fn compiled_activities(
    trace: &Trace,
    links: &Links,
    classified: &crate::classify::Classified,
) -> Vec<bool> {
    use crate::classify::KernelTag;
    let host = &trace.host;
    let regions = trace.names.per_name(compiled_region);
    let mut spans: BTreeMap<(u32, u64), Vec<(i64, i64)>> = BTreeMap::new();
    for i in 0..host.len() {
        if host.kind[i] == HostKind::CpuOp && regions[host.name[i].index()].is_some() {
            spans
                .entry((host.input[i], host.tid(i)))
                .or_default()
                .push((
                    host.ts_ns[i],
                    host.ts_ns[i].saturating_add(host.dur_ns.get(i)),
                ));
        }
    }
    // Regions nest only within a frame's own call: merge each thread's spans for a binary search.
    for list in spans.values_mut() {
        *list = crate::analysis::time::partition::merge(std::mem::take(list), 0);
    }
    let acts = &trace.activities;
    (0..acts.len())
        .map(|a| {
            if classified.get(acts.name[a]).tag == Some(KernelTag::Inductor) {
                return true;
            }
            let Some(call) = links.owner_call(a) else {
                return false;
            };
            let c = call as usize;
            let t = host.ts_ns[c];
            spans
                .get(&(host.input[c], host.tid(c)))
                .is_some_and(|list| {
                    let k = list.partition_point(|&(s, _)| s <= t);
                    k > 0 && list[k - 1].1 > t
                })
        })
        .collect()
}
