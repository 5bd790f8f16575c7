//! Findings about what the GPU runs: fp32 GEMMs, which GEMM libraries, elementwise weight,
//! memory-bound ops far from the HBM peak, layout transposes, exposed communication, memcpy
//! weight, unclassified time.

use super::evidence::{self as ev, NamedTime};
use super::{ms, pct, round2, Detail, Finding, Severity};
// The achievable bandwidth share and the latency-bound call time are the kernel candidates'
// definitions, so the finding and the candidates agree.
use crate::analysis::kernels::KernelTotals;
use crate::analysis::ops::candidates::{ACHIEVABLE_BANDWIDTH_PCT, MIN_STREAM_NS};
use crate::analysis::{Analysis, Context};
use crate::classify::{Bucket, KernelTag};
use crate::model::{HostKind, NameId};
use std::collections::BTreeMap;

/// Time and launches per key, over the kernel table (every (bucket, name) in scope).
fn time_by<K: Ord>(
    a: &Analysis,
    mut key: impl FnMut(&KernelTotals) -> Option<K>,
) -> BTreeMap<K, (i64, u64)> {
    let mut out: BTreeMap<K, (i64, u64)> = BTreeMap::new();
    for k in &a.parts.kernels {
        if let Some(key) = key(k) {
            let e = out.entry(key).or_default();
            e.0 += k.ns;
            e.1 += k.launches;
        }
    }
    out
}

/// Sum of in-scope activity time per key (for keys the kernel table does not hold).
fn activity_time_by<K: Ord>(
    ctx: &Context,
    mut key: impl FnMut(usize) -> Option<K>,
) -> BTreeMap<K, (i64, u64)> {
    let acts = &ctx.trace.activities;
    let mut out: BTreeMap<K, (i64, u64)> = BTreeMap::new();
    for a in (0..acts.len()).filter(|&a| ctx.in_scope[a]) {
        if let Some(k) = key(a) {
            let e = out.entry(k).or_default();
            e.0 += acts.dur_ns[a];
            e.1 += 1;
        }
    }
    out
}

/// The `n` largest entries of a per-name map.
fn top_names(map: &BTreeMap<String, (i64, u64)>, n: usize) -> Vec<NamedTime> {
    let mut v: Vec<_> = map.iter().collect();
    v.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    v.into_iter()
        .take(n)
        .map(|(k, (ns, l))| NamedTime {
            name: k.clone(),
            ns: *ns,
            launches: *l,
        })
        .collect()
}

pub fn fp32_gemm(a: &Analysis) -> Vec<Finding> {
    // GEMM kernels of the gemm bucket only: an fp32 SIMT GEMM that cuDNN runs inside a
    // convolution is conv time, and the share below is of the gemm bucket.
    let names = time_by(a, |k| {
        (k.bucket == Bucket::Gemm
            && k.class_bucket == Bucket::Gemm
            && k.tag == Some(KernelTag::Fp32Gemm))
        .then(|| k.name.clone())
    });
    let ns: i64 = names.values().map(|v| v.0).sum();
    if ns == 0 {
        return vec![];
    }
    let gemm_ns = a
        .buckets
        .iter()
        .find(|b| b.bucket == Bucket::Gemm)
        .map_or(0, |b| b.kernel_ns);
    let share = pct(ns, gemm_ns);
    // A stray fp32 GEMM (a loss, a sampler) is not worth a finding.
    if share < 1.0 {
        return vec![];
    }
    let severity = if share >= 50.0 {
        Severity::High
    } else if share >= 10.0 {
        Severity::Medium
    } else {
        Severity::Low
    };
    // Tensile names its matrix instruction (`_MI16x16x1_`): an fp32 GEMM on MFMA already uses
    // the matrix cores, at the fp32 rate; the step up is bf16, not "matrix cores on".
    let mfma_ns: i64 = names
        .iter()
        .filter(|(n, _)| is_mfma_kernel(n))
        .map(|(_, v)| v.0)
        .sum();
    let (kind, summary) = if mfma_ns * 2 >= ns {
        (ev::Fp32GemmKind::Mfma, format!("{share:.1}% of GEMM time runs in fp32 on the matrix cores (Tensile MFMA fp32 kernels, at the fp32 rate): bf16/fp16 runs them several times faster"))
    } else {
        (ev::Fp32GemmKind::Simt, format!("{share:.1}% of GEMM time runs in fp32 without matrix/tensor cores (FFMA/SIMT/Tensile single precision): use bf16/fp16 or allow TF32 (torch.set_float32_matmul_precision('high'))"))
    };
    vec![Finding::new(
        severity,
        summary,
        ns,
        Detail::Fp32Gemm(ev::Fp32Gemm {
            kind,
            fp32_gemm_ns: ns,
            mfma_ns,
            gemm_pct: share,
            kernels: top_names(&names, 5),
        }),
    )]
}

/// A Tensile kernel on a matrix instruction: its name carries `_MI<M>x<N>x<K>` (`_MI16x16x1_`).
fn is_mfma_kernel(name: &str) -> bool {
    name.match_indices("_MI").any(|(i, _)| {
        let rest = &name[i + 3..];
        let dims: Vec<&str> = rest.split(['_', 'x']).take(3).collect();
        dims.len() == 3
            && dims
                .iter()
                .all(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The GEMM library a kernel name points to, and how sure the name is about it.
fn gemm_library(name: &str, library: &str) -> (String, f64) {
    match library {
        "hipBLASLt/Tensile" if name.contains("_UserArgs") || name.contains("_Bias_") => {
            ("hipBLASLt".into(), 0.9)
        }
        "hipBLASLt/Tensile" => ("rocBLAS or hipBLASLt (Tensile)".into(), 0.6),
        "unknown" => ("unknown".into(), 0.3),
        other => (other.to_string(), 0.8),
    }
}

pub fn gemm_backend(a: &Analysis) -> Vec<Finding> {
    let mut conf_ns = 0.0f64;
    let mut low_precision_ns = 0i64;
    let libs = time_by(a, |k| {
        (k.bucket == Bucket::Gemm && k.class_bucket == Bucket::Gemm).then(|| {
            let (lib, conf) = gemm_library(&k.name, &k.library);
            conf_ns += conf * k.ns as f64;
            if k.tag == Some(KernelTag::LowPrecisionGemm) {
                low_precision_ns += k.ns;
            }
            lib
        })
    });
    let total: i64 = libs.values().map(|v| v.0).sum();
    if total == 0 {
        return vec![];
    }
    let mut rows: Vec<_> = libs.iter().collect();
    rows.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    let summary = rows
        .iter()
        .map(|(l, (ns, _))| format!("{l} {:.0}%", pct(*ns, total)))
        .collect::<Vec<_>>()
        .join(", ");
    vec![Finding::new(
        Severity::Info,
        format!("GEMM libraries by time: {summary} (from kernel names)"),
        0,
        Detail::GemmBackend(ev::GemmBackend {
            libraries: rows
                .iter()
                .map(|(l, (ns, n))| ev::LibraryTime {
                    library: l.to_string(),
                    ns: *ns,
                    pct: pct(*ns, total),
                    launches: *n,
                })
                .collect(),
            confidence: round2(conf_ns / total as f64),
            low_precision_pct: pct(low_precision_ns, total),
            note: "name-based: Tensile kernels with UserArgs/Bias come from hipBLASLt; plain Tensile names may be rocBLAS or hipBLASLt".into(),
        }),
    )]
}

pub fn elementwise_heavy(a: &Analysis) -> Vec<Finding> {
    let ew = a
        .buckets
        .iter()
        .find(|b| b.bucket == Bucket::Elementwise)
        .map_or(0, |b| b.kernel_ns);
    let share = pct(ew, a.summary.kernel_ns);
    if share < 30.0 {
        return vec![];
    }
    let families = time_by(a, |k| {
        (k.bucket == Bucket::Elementwise).then(|| k.family.clone())
    });
    let compiled = a.compile.compiled;
    let advice = if compiled {
        "compiled already: fuse the remaining ops (Triton kernels for RMSNorm, SiLU+Mul, Add+RMSNorm) or check what Inductor left unfused"
    } else {
        "eager: torch.compile fuses chains of elementwise ops into single kernels"
    };
    let severity = if share >= 50.0 {
        Severity::High
    } else {
        Severity::Medium
    };
    vec![Finding::new(
        severity,
        format!("elementwise kernels take {share:.1}% of GPU activity time; {advice}"),
        ew,
        Detail::ElementwiseHeavy(ev::ElementwiseHeavy {
            elementwise_ns: ew,
            pct: share,
            compiled,
            families: top_names(&families, 8),
        }),
    )]
}

/// Convolutions at least this share of GPU activity time make their library's tuning worth it.
const CONV_HEAVY_PCT: f64 = 10.0;

/// Convolutions hold a large share of GPU time: their library's tuning (MIOpen's find mode,
/// cuDNN's benchmark mode) and layout are worth a look.
pub fn conv_heavy(a: &Analysis) -> Vec<Finding> {
    let conv = a
        .buckets
        .iter()
        .find(|b| b.bucket == Bucket::Conv)
        .map_or(0, |b| b.kernel_ns);
    let share = pct(conv, a.summary.kernel_ns);
    if share < CONV_HEAVY_PCT {
        return vec![];
    }
    let libraries = time_by(a, |k| (k.bucket == Bucket::Conv).then(|| k.library.clone()));
    vec![Finding::new(
        Severity::Low,
        format!(
            "convolutions take {share:.1}% of GPU activity time ({})",
            ms(conv)
        ),
        conv,
        Detail::ConvHeavy(ev::ConvHeavy {
            conv_ns: conv,
            pct: share,
            libraries: top_names(&libraries, 4),
        }),
    )]
}

pub fn conv_layout_transposes(ctx: &Context) -> Vec<Finding> {
    // The advice is channels_last: transposes inside convolutions whose input already is
    // channels_last (their `Input Strides` say so) are cuDNN's own, and left out.
    let convs = convolution_layouts(ctx);
    let names = activity_time_by(ctx, |a| {
        let c = ctx.classified.get(ctx.trace.activities.name[a]);
        (c.tag == Some(KernelTag::LayoutTranspose)
            && !inside_channels_last_convolution(ctx, &convs, a))
        .then(|| ctx.name(ctx.trace.activities.name[a]).to_string())
    });
    let ns: i64 = names.values().map(|v| v.0).sum();
    if ns == 0 {
        return vec![];
    }
    let share = pct(ns, ctx.analysis.summary.kernel_ns);
    let severity = if share >= 5.0 {
        Severity::Medium
    } else {
        Severity::Low
    };
    vec![Finding::new(
        severity,
        format!("NCHW↔NHWC layout transposes take {share:.1}% of GPU activity time: keep the model in channels_last (model.to(memory_format=torch.channels_last))"),
        ns,
        Detail::ConvLayoutTransposes(ev::ConvLayoutTransposes {
            transpose_ns: ns,
            pct: share,
            kernels: top_names(&names, 5),
        }),
    )]
}

/// Per thread, the forward convolutions (start, end, whether their input is channels_last: a
/// 4-D [N, C, H, W] input whose channel stride is 1, C > 1; None without `Input Strides`).
/// Convolution ops by host thread (input, pid, tid: ranks of one job often share pids) with
/// their span and whether their input was channels_last.
type ConvSpans = rustc_hash::FxHashMap<(u32, u64, u64), Vec<(i64, i64, Option<bool>)>>;

fn convolution_layouts(ctx: &Context) -> ConvSpans {
    let host = &ctx.trace.host;
    let mut out = ConvSpans::default();
    for h in 0..host.len() {
        if host.kind[h] != HostKind::CpuOp || ctx.name(host.name[h]) != "aten::convolution" {
            continue;
        }
        let first = |id: NameId| {
            crate::analysis::ops::efficiency::dims_of(ctx.name(id))
                .and_then(|d| d.into_iter().next())
        };
        let channels_last = (host.input_strides(h) != NameId::NONE)
            .then(
                || match (first(host.input_dims(h)), first(host.input_strides(h))) {
                    (Some(d), Some(s)) if d.len() == 4 && s.len() == 4 && d[1] > 1 => {
                        Some(s[1] == 1)
                    }
                    _ => None,
                },
            )
            .flatten();
        let end = host.ts_ns[h].saturating_add(host.dur_ns.get(h));
        out.entry((host.input[h], host.pid(h), host.tid(h)))
            .or_default()
            .push((host.ts_ns[h], end, channels_last));
    }
    for v in out.values_mut() {
        v.sort_unstable_by_key(|c| c.0);
    }
    out
}

/// Whether activity `a` was launched inside a convolution whose input is already channels_last:
/// such a transpose is cuDNN's own choice, which channels_last cannot remove.
fn inside_channels_last_convolution(ctx: &Context, convs: &ConvSpans, a: usize) -> bool {
    let Some(h) = ctx.links.owner_call(a).map(|h| h as usize) else {
        return false;
    };
    let host = &ctx.trace.host;
    let Some(list) = convs.get(&(host.input[h], host.pid(h), host.tid(h))) else {
        return false;
    };
    let t = host.ts_ns[h];
    let k = list.partition_point(|c| c.0 <= t);
    list[..k]
        .iter()
        .rev()
        .find(|c| c.1 > t)
        .is_some_and(|c| c.2 == Some(true))
}

/// Merged intervals.
fn union(mut v: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(l) if s <= l.1 => l.1 = l.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn overlap(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let (mut i, mut j, mut total) = (0, 0, 0i64);
    while i < a.len() && j < b.len() {
        let s = a[i].0.max(b[j].0);
        let e = a[i].1.min(b[j].1);
        if e > s {
            total += e - s;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

pub fn exposed_communication(ctx: &Context) -> Vec<Finding> {
    let acts = &ctx.trace.activities;
    let mut comm: BTreeMap<(u32, u32), Vec<(i64, i64)>> = BTreeMap::new();
    let mut compute: BTreeMap<(u32, u32), Vec<(i64, i64)>> = BTreeMap::new();
    // A pipeline rank's sends and receives spin while the neighbouring stage computes: that
    // is the schedule's bubble (the pipeline findings'), not communication to overlap.
    let pipeline = ctx
        .analysis
        .pipeline
        .as_ref()
        .is_some_and(|p| p.schedule.is_some());
    let p2p = ctx.trace.names.per_name(|n| {
        use crate::analysis::signals::collective_calls::CollectiveKind;
        crate::analysis::signals::pipeline::is_p2p(CollectiveKind::from_kernel_name(n))
    });
    for a in (0..acts.len()).filter(|&a| ctx.in_scope[a]) {
        let key = (acts.input[a], acts.device[a]);
        let iv = (acts.ts_ns[a], acts.end_ns(a));
        match ctx.bucket_of(a) {
            Bucket::Communication if pipeline && p2p[acts.name[a].index()] => {}
            Bucket::Communication => comm.entry(key).or_default().push(iv),
            Bucket::Memory => {}
            _ => compute.entry(key).or_default().push(iv),
        }
    }
    let (mut comm_ns, mut overlapped) = (0i64, 0i64);
    for (key, iv) in comm {
        let c = union(iv);
        comm_ns += c.iter().map(|x| x.1 - x.0).sum::<i64>();
        overlapped += overlap(&c, &union(compute.remove(&key).unwrap_or_default()));
    }
    if comm_ns == 0 {
        return vec![];
    }
    let exposed = comm_ns - overlapped;
    let share = pct(exposed, ctx.window_ns());
    let severity = if share >= 10.0 {
        Severity::High
    } else if share >= 2.0 {
        Severity::Medium
    } else {
        Severity::Low
    };
    vec![Finding::new(
        severity,
        format!(
            "communication overlaps compute for {:.1}% of its time; {:.1}% of the window is communication the GPU only waits on",
            pct(overlapped, comm_ns),
            share
        ),
        exposed,
        Detail::ExposedCommunication(ev::ExposedCommunication {
            communication_ns: comm_ns,
            overlapped_ns: overlapped,
            overlap_pct: pct(overlapped, comm_ns),
            exposed_ns: exposed,
            window_pct: share,
        }),
    )]
}

pub fn memcpy_heavy(a: &Analysis) -> Vec<Finding> {
    let mem = a
        .buckets
        .iter()
        .find(|b| b.bucket == Bucket::Memory)
        .map_or(0, |b| b.kernel_ns);
    let share = pct(mem, a.summary.kernel_ns);
    // Of the window, the copies' time inside it (the partition's): GPU work outside the window
    // (a warm-up step's tail before the first step) is not part of it.
    let in_window =
        a.parts.partition.0[crate::analysis::time::partition::bucket_index(Bucket::Memory)];
    let window_share = pct(in_window.round() as i64, a.summary.window_ns);
    if share < 10.0 && window_share < 5.0 {
        return vec![];
    }
    let kinds = time_by(a, |k| {
        (k.bucket == Bucket::Memory).then(|| {
            let n = k.name.as_str();
            ["HtoD", "DtoH", "DtoD", "HtoH", "PtoP"]
                .iter()
                .find(|k| n.contains(*k))
                .map_or_else(
                    || {
                        if n.starts_with("Memset") || n.contains("fill") {
                            "memset".to_string()
                        } else {
                            "other".to_string()
                        }
                    },
                    |k| k.to_string(),
                )
        })
    });
    vec![Finding::new(
        Severity::Medium,
        format!("memory copies and sets take {share:.1}% of GPU activity time ({window_share:.1}% of the window): pin host memory, keep tensors on the GPU, batch small copies"),
        mem,
        Detail::MemcpyHeavy(ev::MemcpyHeavy {
            memory_ns: mem,
            pct: share,
            window_pct: window_share,
            by_kind: top_names(&kinds, 6),
        }),
    )]
}

pub fn unclassified_time(a: &Analysis) -> Vec<Finding> {
    let share = a.summary.unclassified_pct;
    if share <= 2.0 {
        return vec![];
    }
    let names = time_by(a, |k| k.unclassified().then(|| k.name.clone()));
    let ns: i64 = names.values().map(|v| v.0).sum();
    vec![Finding::new(
        if share >= 10.0 { Severity::Medium } else { Severity::Low },
        format!("{share:.1}% of GPU activity time matched no classification rule: add rules (--rules DIR) so the buckets are complete"),
        ns,
        Detail::UnclassifiedTime(ev::UnclassifiedTime {
            unclassified_ns: ns,
            pct: share,
            kernels: top_names(&names, 10),
        }),
    )]
}

/// Paged attention at least this share of kernel time makes its KV cache's width worth a look.
const PAGED_ATTENTION_HEAVY_PCT: f64 = 15.0;

/// The KV cache's data type as vLLM's and SGLang's paged-attention kernels name it in their
/// `vllm::Fp8KVCacheDataType` template argument (0 auto: the model's dtype; 1 e4m3; 2 e5m2).
fn kv_cache_dtype(kernel: &str) -> Option<&'static str> {
    let rest = kernel.split("Fp8KVCacheDataType)").nth(1)?;
    match rest.trim_start().chars().next()? {
        '0' => Some("auto"),
        '1' => Some("fp8_e4m3"),
        '2' => Some("fp8_e5m2"),
        _ => None,
    }
}

/// Paged-attention decode kernels hold a large share of kernel time: their time is reading the
/// KV cache, which an fp8 cache halves (seeds/003). `evidence.kind`: `not_fp8` when the kernels
/// say the cache is in the model's dtype, `fp8` when it is already fp8, `unknown` otherwise.
pub fn paged_attention_heavy(a: &Analysis) -> Vec<Finding> {
    let by_name = time_by(a, |k| {
        (k.tag == Some(KernelTag::PagedAttention)).then(|| k.name.clone())
    });
    let ns: i64 = by_name.values().map(|v| v.0).sum();
    let share = pct(ns, a.summary.kernel_ns);
    if share < PAGED_ATTENTION_HEAVY_PCT {
        return vec![];
    }
    let dtypes: std::collections::BTreeSet<&str> =
        by_name.keys().filter_map(|n| kv_cache_dtype(n)).collect();
    let kind = if dtypes.iter().any(|d| d.starts_with("fp8")) {
        ev::KvCacheKind::Fp8
    } else if dtypes.contains("auto") {
        ev::KvCacheKind::NotFp8
    } else {
        ev::KvCacheKind::Unknown
    };
    vec![Finding::new(
        Severity::Medium,
        format!(
            "paged-attention decode kernels take {share:.1}% of kernel time; the KV cache is {}",
            match kind {
                ev::KvCacheKind::Fp8 => "fp8 already",
                ev::KvCacheKind::NotFp8 => "in the model's dtype (Fp8KVCacheDataType auto): an fp8 cache halves the bytes they read",
                _ => "of a dtype the kernel names do not say",
            }
        ),
        ns,
        Detail::PagedAttentionHeavy(ev::PagedAttentionHeavy {
            kind,
            pct: share,
            kv_cache_dtypes: dtypes.iter().map(|d| d.to_string()).collect(),
            kernels: top_names(&by_name, 4),
        }),
    )]
}

#[cfg(test)]
mod tests {
    use super::kv_cache_dtype;

    #[test]
    fn the_kv_cache_dtype_comes_from_the_template_argument() {
        let name = |arg: &str| {
            format!("void paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType){arg}, 1, 128, 256, false, 4, 1>")
        };
        assert_eq!(kv_cache_dtype(&name("0")), Some("auto"));
        assert_eq!(kv_cache_dtype(&name("1")), Some("fp8_e4m3"));
        assert_eq!(kv_cache_dtype(&name("2")), Some("fp8_e5m2"));
        assert_eq!(
            kv_cache_dtype("void paged_attention_ll4mi_reduce_kernel<__hip_bfloat16>"),
            None
        );
    }
}

/// Below this share of the HBM peak a memory-bound op is worth fusing or tuning.
const SLOW_BANDWIDTH_PCT: f64 = 40.0;

/// One memory-bound op (or op and shape) as the finding names it.
#[derive(Clone)]
struct SlowMemory<'a> {
    op: &'a str,
    shapes: Option<&'a str>,
    ns: i64,
    gbps: f64,
    pct: f64,
    /// What it would take at the achievable bandwidth.
    achievable_ns: f64,
    /// Inductor's source file of a Triton kernel.
    kernel_file: Option<&'a str>,
}

/// Memory-bound ops under 40% of the device's HBM peak holding >= 5% of GPU time, and taking
/// over 1.25x what they would at 80% of it (calls large enough to stream only): per op and shape
/// (`memory_shapes`), else per op where its shapes are each small (`ops`). Transposed copies,
/// casts, reductions and norms that do not stream.
pub fn low_bandwidth_efficiency(a: &Analysis) -> Vec<Finding> {
    let total = a.summary.kernel_ns;
    // Per shape large enough to stream: what it would take at the achievable bandwidth.
    let rows: Vec<SlowMemory> = a
        .memory_shapes
        .iter()
        .filter_map(|m| {
            let peak = m.peak_gbps?;
            let per_call = m.bytes_per_call / (peak * ACHIEVABLE_BANDWIDTH_PCT / 100.0);
            if per_call < MIN_STREAM_NS {
                return None;
            }
            Some(SlowMemory {
                op: &m.op,
                shapes: Some(&m.shapes),
                ns: m.ns,
                gbps: m.gbps,
                pct: m.pct_of_hbm_peak?,
                achievable_ns: per_call * m.calls as f64,
                kernel_file: m.kernel_file.as_deref(),
            })
        })
        .collect();
    let slow_enough = |m: &SlowMemory| {
        m.pct < SLOW_BANDWIDTH_PCT
            && pct(m.ns, total) >= 5.0
            && (m.ns as f64) > 1.25 * m.achievable_ns
    };
    let mut kind = ev::BandwidthKind::Shapes;
    let mut slow: Vec<SlowMemory> = rows.iter().filter(|m| slow_enough(m)).cloned().collect();
    if slow.is_empty() {
        // An op spread over many shapes, each small.
        kind = ev::BandwidthKind::Ops;
        let mut by_op: BTreeMap<&str, SlowMemory> = BTreeMap::new();
        for m in &rows {
            let e = by_op.entry(m.op).or_insert(SlowMemory {
                op: m.op,
                shapes: None,
                ns: 0,
                gbps: 0.0,
                pct: 0.0,
                achievable_ns: 0.0,
                kernel_file: m.kernel_file,
            });
            // Time-weighted bandwidth and share of the peak.
            e.gbps += m.gbps * m.ns as f64;
            e.pct += m.pct * m.ns as f64;
            e.ns += m.ns;
            e.achievable_ns += m.achievable_ns;
        }
        slow = by_op
            .into_values()
            .map(|mut m| {
                let w = m.ns.max(1) as f64;
                m.gbps /= w;
                m.pct /= w;
                m
            })
            .filter(|m| slow_enough(m))
            .collect();
    }
    if slow.is_empty() {
        return vec![];
    }
    // The time above what the work takes at 80% of the peak.
    let stake: i64 = slow
        .iter()
        .map(|m| (m.ns as f64 - m.achievable_ns).max(0.0) as i64)
        .sum();
    let share: f64 = slow.iter().map(|m| pct(m.ns, total)).sum();
    let worst = slow
        .iter()
        .max_by_key(|m| (m.ns, std::cmp::Reverse(m.op)))
        .expect("not empty");
    let compiled = a.compile.compiled || a.compile.inductor_kernel_pct > 0.0;
    let advice = if compiled {
        "tune or fuse what Inductor left (coordinate-descent tuning, a Triton kernel for the chain)"
    } else {
        "torch.compile fuses such chains; a transposed copy wants the layout its consumer reads"
    };
    vec![Finding::new(
        Severity::Medium,
        format!(
            "{} memory-bound op shape(s) move data under {SLOW_BANDWIDTH_PCT:.0}% of the HBM peak ({share:.1}% of GPU time); the largest, {}{}, reaches {:.1}% ({:.0} GB/s){}: {advice}",
            slow.len(),
            worst.op,
            worst.shapes.map_or(String::new(), |s| format!(" {s}")),
            worst.pct,
            worst.gbps,
            worst
                .kernel_file
                .map_or(String::new(), |f| format!(", its Triton code in {f}")),
        ),
        stake,
        Detail::LowBandwidthEfficiency(ev::LowBandwidthEfficiency {
            kind,
            compiled,
            ops: slow
                .iter()
                .map(|m| ev::SlowMemoryOp {
                    op: m.op.to_string(),
                    shapes: m.shapes.map(str::to_string),
                    ns: m.ns,
                    pct_of_gpu: pct(m.ns, total),
                    gbps: m.gbps,
                    pct_of_hbm_peak: m.pct,
                    kernel_file: m.kernel_file.map(str::to_string),
                })
                .collect(),
            threshold_pct: SLOW_BANDWIDTH_PCT,
            achievable_pct: ACHIEVABLE_BANDWIDTH_PCT,
        }),
    )]
}
