//! The report's sections as the terminal table, Markdown and HTML all show them: which inputs,
//! buckets and partition rows appear, how devices, steps and savings read, the headline and the
//! ladder line. Decided once here; the renderers only lay them out.

use crate::analysis::time::partition::PartitionRow;
use crate::analysis::BucketRow;
use crate::model::units::fmt_ns;
use crate::model::InputMeta;
use crate::pipeline::Run;
use crate::recommend::Recommendation;

/// One input as the reports list it.
pub struct InputLine<'r> {
    pub meta: &'r InputMeta,
    /// `gpu 0 (NVIDIA H100 80GB HBM3), gpu 1`; empty without GPU activity.
    pub devices: String,
}

/// The sections of one run's report.
pub struct Sections<'r> {
    /// The run they lay out.
    pub run: &'r Run,
    /// The distinct input paths, comma-separated (the HTML title).
    pub title: String,
    /// One line per input: its path, format, vendor and devices.
    pub inputs: Vec<InputLine<'r>>,
    /// Buckets with at least one launch, largest first.
    pub buckets: Vec<&'r BucketRow>,
    /// Partition categories with time in the window, in the feed's order.
    pub partition: Vec<&'r PartitionRow>,
    /// `L1 todo`, `L2 done`, …, in level order.
    pub ladder: Vec<String>,
    /// `level 2`, or `none` when no level has work left.
    pub next_level: String,
}

impl<'r> Sections<'r> {
    /// The sections of `run`'s report.
    pub fn of(run: &'r Run) -> Sections<'r> {
        let a = &run.analysis;
        let mut seen = std::collections::BTreeSet::new();
        let title = a
            .inputs
            .iter()
            .map(|i| i.path.clone())
            .filter(|p| seen.insert(p.clone()))
            .collect::<Vec<_>>()
            .join(", ");
        let inputs = a
            .inputs
            .iter()
            .map(|meta| InputLine {
                meta,
                devices: meta
                    .devices
                    .iter()
                    .map(|d| {
                        let label = d.label();
                        if label.is_empty() {
                            format!("gpu {}", d.id)
                        } else {
                            format!("gpu {} ({label})", d.id)
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            })
            .collect();
        Sections {
            run,
            title,
            inputs,
            buckets: a.buckets.iter().filter(|b| b.launches > 0).collect(),
            partition: a.time_partition.iter().filter(|r| r.ns > 0).collect(),
            ladder: run
                .plan
                .ladder
                .iter()
                .map(|l| format!("L{} {}", l.level, l.status))
                .collect(),
            next_level: next_level(&run.plan),
        }
    }

    /// The one-line summary, with its lead in Markdown bold (`**step 1.2 ms**`).
    pub fn headline(&self) -> String {
        let s = &self.run.analysis.summary;
        let phases = &self.run.analysis.phases;
        let step = match &s.step_ns {
            Some(st) if s.steps > 0 => {
                let compared = s.steps - usize::from(self.run.analysis.warmup_in_window);
                if compared == 1 {
                    format!(
                        "**step {}** (1 step{})",
                        fmt_ns(st.mean.round() as i64),
                        if s.steps > 1 { " after a warm-up" } else { "" }
                    )
                } else {
                    format!(
                        "**step {}** (mean of {} steps, CV {:.1}%)",
                        fmt_ns(st.mean.round() as i64),
                        s.steps,
                        st.cv_pct
                    )
                }
            }
            // Iterations: the phase with the most steady iterations leads.
            _ if !phases.is_empty() => {
                let lead = phases
                    .iter()
                    .max_by_key(|p| (p.iterations, std::cmp::Reverse(p.phase)))
                    .expect("not empty");
                format!(
                    "**{} {}** (p50 of {} steady iterations; {} iterations in all)",
                    lead.phase,
                    fmt_ns(lead.p50_ns),
                    lead.iterations,
                    s.iterations.unwrap_or(0)
                )
            }
            _ => format!("**window {}** (no steps)", fmt_ns(s.window_ns)),
        };
        format!(
            "{step} · GPU busy {:.1}% of the window · {} of GPU activity · next ladder level: {}",
            crate::analysis::numbers::pct(s.gpu_busy_ns, s.window_ns),
            fmt_ns(s.kernel_ns),
            self.next_level
        )
    }

    /// Whether any input is truncated (its analysis covers what was written).
    pub fn truncated(&self) -> bool {
        self.inputs.iter().any(|i| i.meta.truncated)
    }
}

/// The level to work on next, and where a lower level has rungs, that they are ranked after
/// it (the list says why).
fn next_level(plan: &crate::recommend::Plan) -> String {
    let Some(next) = plan.next_level else {
        return "none".into();
    };
    let mut lower: Vec<u8> = plan
        .recommendations
        .iter()
        .map(|r| r.level)
        .filter(|&l| l < next)
        .collect();
    lower.sort();
    lower.dedup();
    match lower.as_slice() {
        [] => format!("level {next}"),
        levels => format!(
            "level {next}, ranked ahead of level {}'s rungs",
            levels
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// What a recommendation saves, in words: the estimate, its share of the window, where it comes
/// from with its range, its saving on top of the ones above it, and the A/B check a possible
/// slowdown asks for.
pub fn savings_phrase(r: &Recommendation, window_ns: i64) -> String {
    use crate::recommend::SavingsBasis;
    let pct = |ns: i64| crate::analysis::numbers::pct(ns, window_ns);
    let mut out = format!(
        "saves ~{}, {:.1}% of the window",
        fmt_ns(r.est_savings_ns),
        r.est_savings_pct
    );
    let [worst, best] = r.est_savings_range_ns;
    match r.savings_basis {
        SavingsBasis::Replay => {
            out += &format!("; replayed: {:.1}% to {:.1}%", pct(worst), pct(best));
            if !r.after.is_empty() {
                // Ranked past its level: it pays once these are applied.
                out += &format!(
                    ", {:.1}% after {}",
                    pct(r.marginal_savings_ns),
                    r.after.join(" + ")
                );
            } else if r.rank > 1 && r.marginal_savings_ns != r.est_savings_ns {
                out += &format!(", {:.1}% after the ones above", pct(r.marginal_savings_ns));
            }
        }
        _ => out += "; estimated",
    }
    if let (Some(_), Some(p)) = (r.verify, r.revert_if_slower_pct) {
        out += &format!(
            "; may slow the run down: time it before and after, revert if over {p}% slower"
        );
    }
    out
}

/// `[L3, after level 2]`'s inner part for a recommendation: its level, and the level it waits
/// for.
pub fn level_tag(r: &Recommendation) -> String {
    let blocked = r
        .blocked_by_level
        .map(|l| format!(", after level {l}"))
        .unwrap_or_default();
    format!("L{}{blocked}", r.level)
}

/// The collectives table's columns (terminal, Markdown and HTML).
pub const COLLECTIVE_HEADER: [&str; 11] = [
    "collective",
    "size",
    "group",
    "calls",
    "time",
    "algbw GB/s",
    "busbw GB/s",
    "% of link",
    "wait",
    "transfer",
    "overlap %",
];

/// The largest collectives (by time), as cells of [`COLLECTIVE_HEADER`], and the line that
/// says what their bandwidth is over; None without collectives.
pub fn collectives(run: &Run, top: usize) -> Option<(Vec<[String; 11]>, &'static str)> {
    let c = &run.analysis.collectives;
    if c.rows.is_empty() {
        return None;
    }
    let dash = || "-".to_string();
    let rows = c
        .rows
        .iter()
        .take(top)
        .map(|r| {
            let lower = r.bandwidth_basis == "kernel_time";
            [
                r.collective.as_str().to_string(),
                r.bytes.map_or_else(dash, fmt_bytes),
                match (&r.process_group_desc, &r.process_group, r.group_size) {
                    (Some(d), _, Some(n)) | (None, Some(d), Some(n)) => format!("{d} ({n})"),
                    (Some(d), _, None) | (None, Some(d), None) => d.clone(),
                    (None, None, Some(n)) => format!("({n})"),
                    (None, None, None) => dash(),
                },
                r.count.to_string(),
                fmt_ns(r.total_ns),
                r.algbw_gbps
                    .map_or_else(dash, |b| format!("{}{b:.1}", if lower { "≥ " } else { "" })),
                r.busbw_gbps
                    .map_or_else(dash, |b| format!("{}{b:.1}", if lower { "≥ " } else { "" })),
                r.pct_of_link_peak
                    .map_or_else(dash, |p| format!("{}{p:.1}", if lower { "≥ " } else { "" })),
                r.wait_ns.map_or_else(dash, fmt_ns),
                r.transfer_ns.map_or_else(dash, fmt_ns),
                r.transfer_overlap_pct
                    .map_or_else(dash, |p| format!("{p:.0}")),
            ]
        })
        .collect();
    let several = c.rows.iter().any(|r| r.bandwidth_basis == "transfer");
    let note = if several {
        "bus bandwidth (nccl-tests' definitions, decimal GB/s) over the transfer time after the last rank arrived; wait = arrival skew; time, wait and transfer summed over ranks; % of link = of the device's GPU-to-GPU link per direction"
    } else {
        "one rank: bus bandwidth over the kernel time, waiting included (≥: a lower bound); analyze every rank's trace together to split wait from transfer"
    };
    Some((rows, note))
}

/// The parallelisms the job uses, in one line: `Parallelism: tensor of degree 8 (vllm);
/// pipeline of degree 2 (torch.pipelining, group 0)`; None when it shows none.
pub fn parallelism_line(run: &Run) -> Option<String> {
    let rows = &run.analysis.parallelism;
    if rows.is_empty() {
        return None;
    }
    let parts: Vec<String> = rows
        .iter()
        .map(|p| {
            let degree = p
                .degree
                .map(|d| format!(" of degree {d}"))
                .unwrap_or_default();
            let what: Vec<String> = p
                .implementation
                .iter()
                .cloned()
                .chain(
                    p.mesh_dim
                        .clone()
                        .or_else(|| p.group.as_ref().map(|g| format!("group {g}"))),
                )
                .collect();
            let what = if what.is_empty() {
                String::new()
            } else {
                format!(" ({})", what.join(", "))
            };
            let load = p
                .expert_imbalance
                .filter(|&x| x > 1.0)
                .map(|x| format!(", the busiest rank's experts get {x:.2}x the mean rows"))
                .unwrap_or_default();
            format!("{}{degree}{what}{load}", p.kind.as_str())
        })
        .collect();
    Some(format!("Parallelism: {}", parts.join("; ")))
}

/// The header of the pipeline's stage table ([`pipeline_stages`]).
pub const STAGE_HEADER: [&str; 12] = [
    "rank",
    "stages",
    "step",
    "step time",
    "compute",
    "bubble",
    "bubble %",
    "fill",
    "drain",
    "p2p wait",
    "p2p transfer",
    "p2p bytes",
];

/// The pipeline's stage table, one row per rank and step, and the line that names the
/// schedule; None for jobs without a pipeline.
pub fn pipeline_stages(run: &Run) -> Option<(Vec<[String; 12]>, String)> {
    let p = run.analysis.pipeline.as_ref()?;
    if p.stages.is_empty() {
        return None;
    }
    let dash = || "-".to_string();
    let rows = p
        .stages
        .iter()
        .map(|r| {
            [
                r.rank.to_string(),
                r.stages
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                r.step.to_string(),
                fmt_ns(r.step_ns),
                fmt_ns(r.compute_ns),
                fmt_ns(r.bubble_ns),
                format!("{:.1}", r.bubble_pct),
                fmt_ns(r.warmup_ns),
                fmt_ns(r.cooldown_ns),
                r.p2p_wait_ns.map_or_else(dash, fmt_ns),
                r.p2p_transfer_ns.map_or_else(dash, fmt_ns),
                r.p2p_bytes.map_or_else(dash, fmt_bytes),
            ]
        })
        .collect();
    let schedule = p
        .schedule
        .map_or("a schedule without annotations", |s| s.torch_class());
    let note = format!(
        "{schedule}, {} stages on {} ranks, {} microbatches; bubble = step - the rank's compute (its chunks' GPU spans and other kernels; receives spinning while the neighbour computes count as bubble); fill: before its first compute kernel, drain: after its last",
        p.stages_total, p.ranks, p.microbatches
    );
    Some((rows, note))
}

/// The pipeline's replays as lines: `ScheduleInterleaved1F1B, 2 stages a rank: 100.82 ms
/// (saves 7.11 ms), bubble 22.3%`; empty without replays.
pub fn pipeline_replays(run: &Run) -> Vec<String> {
    let Some(p) = run.analysis.pipeline.as_ref() else {
        return Vec::new();
    };
    p.replays
        .iter()
        .map(|r| {
            let what = if r.as_run {
                "as run".to_string()
            } else if r.saving_ns >= 0 {
                format!("saves {}", fmt_ns(r.saving_ns))
            } else {
                format!("loses {}", fmt_ns(-r.saving_ns))
            };
            let balanced = match (&r.layers, r.rebalanced) {
                (Some(l), true) => format!(", layers per rank {l:?}"),
                (None, true) => ", stages rebalanced".to_string(),
                _ => String::new(),
            };
            format!(
                "{}, {} stage(s) a rank{balanced}: {} ({what}), bubble {:.1}%",
                r.schedule.torch_class(),
                r.stages_per_rank,
                fmt_ns(r.step_ns),
                r.bubble_pct
            )
        })
        .collect()
}

/// Why Inductor's Triton kernels have no bandwidth, when some have none: `3 Triton kernels (4.5%
/// of GPU time) have no bandwidth: …`; None when every one has its bytes.
pub fn triton_rate_note(a: &crate::analysis::Analysis) -> Option<String> {
    let without: Vec<&crate::analysis::ops::attribution::OpRow> = a
        .ops
        .iter()
        .filter(|o| {
            crate::analysis::ops::bytes_moved::is_inductor_memory_kernel(&o.name)
                && o.self_ns > 0
                && o.gbps.is_none()
        })
        .collect();
    if without.is_empty() {
        return None;
    }
    let ns: i64 = without.iter().map(|o| o.self_ns).sum();
    Some(format!(
        "{} Triton kernel(s) ({:.1}% of GPU time) have no bandwidth: Inductor writes each kernel's bytes (kernel_num_gb) into the trace only when the run sets TORCHINDUCTOR_BENCHMARK_KERNEL=1",
        without.len(),
        crate::analysis::numbers::pct(ns, a.summary.kernel_ns)
    ))
}

pub const CANDIDATE_HEADER: [&str; 6] = [
    "#",
    "kernel",
    "launching op and shapes",
    "achieved / peak",
    "time",
    "to win",
];

/// The top `n` kernel candidates as cells of [`CANDIDATE_HEADER`], with their commands; None
/// without candidates.
pub fn candidates(
    run: &Run,
    n: usize,
) -> Option<Vec<([String; 6], &crate::analysis::ops::candidates::Candidate)>> {
    let c = &run.analysis.kernel_candidates;
    if c.is_empty() {
        return None;
    }
    Some(
        c.iter()
            .take(n)
            .map(|k| {
                let rate = match (k.achieved, k.peak, k.unit) {
                    (Some(a), Some(p), Some(u)) => {
                        let u = match u {
                            crate::analysis::ops::candidates::Unit::Tflops => "TFLOP/s",
                            crate::analysis::ops::candidates::Unit::Gbps => "GB/s",
                        };
                        format!("{a:.1} / {p:.0} {u}")
                    }
                    _ => "-".to_string(),
                };
                let op = match (&k.shapes, &k.dtype) {
                    (Some(s), Some(d)) => format!("{} {s} {d}", k.op),
                    (Some(s), None) => format!("{} {s}", k.op),
                    _ => k.op.clone(),
                };
                (
                    [
                        k.rank.to_string(),
                        crate::report::format::display_name(&k.name),
                        op,
                        rate,
                        fmt_ns(k.total_ns),
                        k.headroom_ns.map_or_else(
                            || k.no_rate_reason.clone().unwrap_or_else(|| "-".to_string()),
                            fmt_ns,
                        ),
                    ],
                    k,
                )
            })
            .collect(),
    )
}

pub const PHASE_HEADER: [&str; 8] = [
    "phase",
    "iterations",
    "mean",
    "p50",
    "p90",
    "largest buckets",
    "idle %",
    "left out",
];

/// Iterations by phase as cells of [`PHASE_HEADER`], and the line that says what marks them;
/// None without iterations.
pub fn phases(run: &Run) -> Option<(Vec<[String; 8]>, String)> {
    let a = &run.analysis;
    if a.phases.is_empty() {
        return None;
    }
    let rows = a
        .phases
        .iter()
        .map(|p| {
            let buckets: Vec<String> = p
                .buckets
                .iter()
                .filter(|b| b.kernel_ns > 0)
                .take(2)
                .map(|b| format!("{} {:.0}%", b.bucket.as_str(), b.pct))
                .collect();
            let idle: f64 = p
                .time_partition
                .iter()
                .filter(|r| r.category.is_idle())
                .map(|r| r.pct)
                .sum();
            let out: Vec<String> = p
                .excluded
                .iter()
                .map(|e| {
                    format!(
                        "#{} {} ({})",
                        e.iteration,
                        e.reason.as_str(),
                        fmt_ns(e.dur_ns)
                    )
                })
                .collect();
            [
                p.phase.to_string(),
                p.iterations.to_string(),
                fmt_ns(p.mean_ns),
                fmt_ns(p.p50_ns),
                fmt_ns(p.p90_ns),
                buckets.join(", "),
                format!("{idle:.1}"),
                if out.is_empty() {
                    "-".to_string()
                } else {
                    out.join(", ")
                },
            ]
        })
        .collect();
    let s = &a.summary;
    let marker = s.iteration_marker.as_deref().unwrap_or("?");
    let source = s.iteration_source.map_or("", |m| m.describe());
    let note = format!(
        "{} iterations marked by `{marker}` ({source}); times are each iteration's window less the time its stream sat queued behind work the trace does not show; statistics over steady iterations",
        s.iterations.unwrap_or(0)
    );
    Some((rows, note))
}

/// `33.6 MB` (decimal, as nccl-tests and NCCL's logs print sizes).
pub fn fmt_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

/// One line per device with memory events: `gpu 0: peak 3.0 GiB allocated, 3.1 GiB reserved of
/// 79.2 GiB (3.9%)`.
pub fn memory_lines(run: &Run) -> Vec<String> {
    let gib = |b: i64| format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30));
    run.analysis
        .memory
        .iter()
        .map(|m| {
            let who = match m.rank {
                Some(r) => format!("rank {r} gpu {}", m.device),
                None => format!("gpu {}", m.device),
            };
            let of = match (m.device_bytes, m.peak_reserved_pct) {
                (Some(d), Some(p)) => format!(" of {} ({p:.1}%)", gib(d as i64)),
                _ => String::new(),
            };
            format!(
                "{who}: peak {} allocated, {} reserved{of}",
                gib(m.peak_allocated_bytes),
                gib(m.peak_reserved_bytes)
            )
        })
        .collect()
}

/// The top-level regions with GPU work, each as its GPU time per occurrence as events around it
/// measure (`forward 9.7 ms · backward 11.3 ms`); none without regions.
pub fn region_line(run: &Run) -> Option<String> {
    let parts: Vec<String> = run
        .analysis
        .regions
        .iter()
        .filter(|r| r.depth == 0 && r.gpu_elapsed_ns > 0)
        .take(8)
        .map(|r| {
            format!(
                "{} {}",
                r.name,
                fmt_ns(r.gpu_elapsed_ns / r.count.max(1) as i64)
            )
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "{} (per occurrence, as CUDA/HIP events around the range measure)",
            parts.join(" · ")
        )
    })
}

/// One region's row for the Markdown and HTML tables: region, count, CPU, GPU time, GPU span,
/// elapsed (each per occurrence), the two largest buckets, the idle share of its spans.
pub fn region_cells(r: &crate::analysis::time::regions::RegionRow) -> [String; 8] {
    let per = |ns: i64| fmt_ns(ns / r.count.max(1) as i64);
    let buckets: Vec<String> = r
        .buckets
        .iter()
        .take(2)
        .map(|b| format!("{} {:.0}%", b.bucket.as_str(), b.pct))
        .collect();
    let idle: f64 = r
        .time_partition
        .iter()
        .filter(|p| p.category.is_idle())
        .map(|p| p.pct)
        .sum();
    [
        r.name.clone(),
        r.count.to_string(),
        per(r.cpu_ns),
        per(r.gpu_ns),
        per(r.gpu_span_ns),
        per(r.gpu_elapsed_ns),
        buckets.join(", "),
        if r.gpu_span_ns > 0 {
            format!("{idle:.1}%")
        } else {
            String::new()
        },
    ]
}

pub const REGION_HEADER: [&str; 8] = [
    "region",
    "count",
    "CPU",
    "GPU time",
    "GPU span",
    "elapsed",
    "buckets",
    "idle in span",
];

/// `7.3% of the bf16 dense peak (1.78 TFLOP per step at 989.4 TFLOP/s); HFU 9.0% with 0.39
/// TFLOP recomputed`, with a lower-bound note; none without counted FLOPs.
pub fn mfu_line(run: &Run) -> Option<String> {
    let m = &run.analysis.summary.mfu;
    let model = m.model_flops_per_step?;
    let per = if m.mfu_basis.as_deref() == Some("window") {
        "in the window"
    } else {
        "per step"
    };
    let tflop = |f: f64| format!("{:.3} TFLOP", f / 1e12);
    let mut line = match (m.mfu_pct, m.peak_flops, m.mfu_dtype.as_deref()) {
        (Some(pct), Some(peak), Some(dtype)) => format!(
            "{pct:.1}% of the {dtype} dense peak ({} {per} at {:.1} TFLOP/s)",
            tflop(model),
            peak / 1e12
        ),
        _ => format!("{} {per}; the device's peak is unknown", tflop(model)),
    };
    // Executed beyond the model's FLOPs: recomputation, MoE groups' alignment padding.
    let beyond: Vec<String> = [
        (m.recompute_flops_per_step, "recomputed"),
        (m.padding_flops_per_step, "padding expert groups"),
    ]
    .into_iter()
    .filter_map(|(f, what)| {
        f.filter(|&f| f > 0.0)
            .map(|f| format!("{} {what}", tflop(f)))
    })
    .collect();
    if let (false, Some(hfu)) = (beyond.is_empty(), m.hfu_pct) {
        line.push_str(&format!("; HFU {hfu:.1}% with {}", beyond.join(" and ")));
    }
    if m.mfu_lower_bound {
        let ops: Vec<String> = m
            .flops_missing
            .iter()
            .take(3)
            .map(|x| format!("{} {}", x.op, fmt_ns(x.gpu_ns)))
            .collect();
        line.push_str(&format!(
            "; a lower bound: no FLOP count for {}",
            ops.join(", ")
        ));
    }
    if m.mfu_upper_bound {
        line.push_str(
            "; an upper bound: flex attention counted dense (its block mask's density is not \
             in the trace: --flex-density)",
        );
    }
    if let (Some(mixed), Some(pct)) = (m.mfu_mixed_pct, m.mfu_pct) {
        if (mixed - pct).abs() >= 0.05 {
            line.push_str(&format!("; {mixed:.1}% with each type at its own peak"));
        }
    }
    if let Some(ceiling) = m.mfu_ceiling_pct {
        line.push_str(&format!(
            "; the best GEMM shape ran at {ceiling:.0}% of peak"
        ));
    }
    if let Some(hbm) = m.hbm_util_pct {
        line.push_str(&format!("; decode: {hbm:.1}% of the HBM bandwidth peak"));
    }
    Some(line)
}

/// `--what-if`: the heading, one line per step (replayed as is and with the changes) and the
/// line saying what would bound the replayed steps.
pub fn what_if_lines(run: &Run) -> Vec<String> {
    use crate::analysis::Label;
    let Some(w) = &run.analysis.parts.what_if else {
        return Vec::new();
    };
    let mut out = vec![format!(
        "What if: {} (replayed together, without the profiler's own cost)",
        w.recommendations.join(" + ")
    )];
    let row = |who: &str, step: Option<u64>, (base, replay): (i64, i64)| {
        let step = step.map_or("window".to_string(), |n| format!("step #{n}"));
        format!(
            "  {who}{step}: {} as is, {} with the changes ({:.1}% saved)",
            fmt_ns(base),
            fmt_ns(replay),
            crate::analysis::numbers::pct(base - replay, base)
        )
    };
    for s in &w.steps {
        let rank = s.rank.map(|r| format!("rank {r} ")).unwrap_or_default();
        out.push(row(&rank, s.step, (s.base_ns, s.replay_ns)));
    }
    // Several ranks: the job's step is its slowest rank's, before and after.
    for j in &w.job {
        out.push(row("job ", j.step, (j.base_ns, j.replay_ns)));
    }
    if let Some(ns) = w.saving_ns {
        let window = run.analysis.summary.window_ns;
        let pct = |ns: i64| crate::analysis::numbers::pct(ns, window);
        let profiled = w
            .profiled_saving_ns
            .map(|p| format!("; in profiled steps {:.1}%", pct(p)))
            .unwrap_or_default();
        out.push(format!(
            "  saves {:.1}% of the window{profiled} (the report's price of these rungs together)",
            pct(ns)
        ));
    }
    // Over every replayed step: what its path spends most on.
    let mut by: std::collections::BTreeMap<Label, i64> = Default::default();
    for l in w.steps.iter().flat_map(|s| &s.labels) {
        *by.entry(l.label).or_insert(0) += l.ns;
    }
    let total: i64 = by.values().sum();
    let mut ranked: Vec<(Label, i64)> = by.into_iter().filter(|x| x.1 > 0).collect();
    ranked.sort_by_key(|&(l, ns)| (std::cmp::Reverse(ns), l));
    if !ranked.is_empty() {
        let parts: Vec<String> = ranked
            .iter()
            .take(3)
            .map(|&(l, ns)| format!("{l} {:.1}%", crate::analysis::numbers::pct(ns, total)))
            .collect();
        out.push(format!(
            "  bound: the replayed steps' critical path is {}",
            parts.join(", ")
        ));
    }
    for b in &w.blocked {
        out.push(format!("  not applied: {b}"));
    }
    out
}
