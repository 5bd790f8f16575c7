//! Hardware-counter metrics per kernel (rocprof-compute workloads): achieved FLOP/s and bandwidth
//! against the device's peaks, arithmetic intensity, theoretical occupancy (seeds/003, "Compute
//! the occupancy of a kernel") and a bound label from the roofline.

use crate::analysis::numbers::pct;
use crate::classify::{Bucket, Classified};
use crate::model::{DeviceSpec, KernelResources, Pipe, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Below this share of the roofline's attainable performance a kernel is reaching neither roof:
/// it waits (latency, occupancy, too little parallelism) rather than being compute or memory bound.
pub const ROOF_NEAR_PCT: f64 = 30.0;

/// What limits a kernel (FEED `kernel_counters[].bound`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Compute,
    Memory,
    Latency,
}

impl Bound {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
}

/// Theoretical occupancy from the kernel's resources (seeds/003's formula).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Occupancy {
    /// Waves each SIMD (execution unit) can hold for this kernel.
    pub waves_per_simd: f64,
    pub max_waves_per_simd: u32,
    /// `vgpr`, `lds` or `none` (the hardware maximum).
    pub limiter: String,
    /// VGPRs per wave as allocated (rounded up to the allocation granule).
    pub vgprs: u32,
    /// The most VGPRs that still allow one more wave per SIMD (the `waves_per_eu` target).
    pub vgprs_for_next_wave: Option<u32>,
    /// Waves per SIMD the grid can fill at most (small grids leave SIMDs empty).
    pub grid_waves_per_simd: f64,
}

/// One kernel's counter metrics (FEED `kernel_counters[]`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KernelCounters {
    pub name: String,
    pub bucket: Bucket,
    pub dispatches: u64,
    /// Summed duration of the counter passes' dispatches.
    pub total_ns: i64,
    /// The pipe with the most operations (`mfma_bf16`, `valu_f32`, …); null without FLOPs.
    pub pipe: Option<String>,
    pub tflops: Option<f64>,
    /// Achieved FLOP/s over the peak of `pipe`, at most 100.
    pub pct_of_peak: Option<f64>,
    /// Share of the FLOPs on matrix cores (MFMA).
    pub matrix_pct: Option<f64>,
    pub hbm_gbps: Option<f64>,
    pub hbm_pct_of_peak: Option<f64>,
    pub l2_gbps: Option<f64>,
    /// FLOPs per HBM byte.
    pub arithmetic_intensity: Option<f64>,
    /// Achieved FLOP/s over the roofline's attainable FLOP/s at this intensity.
    pub roofline_pct: Option<f64>,
    pub bound: Option<Bound>,
    pub occupancy: Option<Occupancy>,
    pub resources: KernelResources,
}

impl KernelCounters {
    /// `8.0/8 (none)`: waves per SIMD, the maximum, and the limiter; `-` when unknown.
    pub fn occupancy_label(&self) -> String {
        self.occupancy.as_ref().map_or("-".to_string(), |o| {
            format!(
                "{:.1}/{} ({})",
                o.waves_per_simd, o.max_waves_per_simd, o.limiter
            )
        })
    }
}

/// Theoretical waves per SIMD for a kernel on a device: VGPR limit (unified 512-entry file on
/// gfx90a and later, allocated in granules), LDS limit (workgroups per CU), and the hardware maximum.
pub fn occupancy(r: &KernelResources, d: &DeviceSpec) -> Option<Occupancy> {
    if r.workgroup_size == 0 {
        return None;
    }
    let max = d.max_waves_per_simd();
    let simd = d.simd_per_cu.max(1);
    let wave = r.wave_size.max(1);
    let waves_per_wg = r.workgroup_size.div_ceil(wave);
    let round = |v: u32, g: u32| v.div_ceil(g).saturating_mul(g);
    // seeds/003: 512 VGPRs per lane per SIMD, allocated in units of 16 on MI300; gfx90a
    // allocates in 8s; gfx908 has separate 256-entry arch and accumulation files.
    let (vgprs, budget, granule): (u32, u32, u32) = if d.unified_vgprs() {
        let g = if d.arch.starts_with("gfx90a") { 8 } else { 16 };
        (round(r.arch_vgpr.saturating_add(r.accum_vgpr), g), 512, g)
    } else {
        (round(r.arch_vgpr.max(r.accum_vgpr), 4), 256, 4)
    };
    let vgpr_waves = budget.checked_div(vgprs).map_or(max, |w| w.min(max));
    // Counter files are user input: absurd resource values saturate instead of overflowing.
    let wg_by_vgpr = vgpr_waves.saturating_mul(simd) / waves_per_wg;
    let wg_by_lds = d
        .lds_bytes_per_cu
        .checked_div(r.lds_per_workgroup)
        .unwrap_or(u32::MAX);
    let wg_by_max = max.saturating_mul(simd) / waves_per_wg;
    let wgs = wg_by_vgpr.min(wg_by_lds).min(wg_by_max);
    let limiter = if wgs == wg_by_max && wg_by_max <= wg_by_vgpr.min(wg_by_lds) {
        "none"
    } else if wg_by_lds < wg_by_vgpr {
        "lds"
    } else {
        "vgpr"
    };
    let waves_per_simd = wgs as f64 * waves_per_wg as f64 / simd as f64;
    let vgprs_for_next_wave = (vgpr_waves < max)
        .then(|| budget / (vgpr_waves + 1) / granule * granule)
        .filter(|&v| v > 0);
    let grid_waves = r.grid_size.div_ceil(wave as u64) as f64;
    let simds = d.cu_count.max(1) as f64 * simd as f64;
    Some(Occupancy {
        waves_per_simd,
        max_waves_per_simd: max,
        limiter: limiter.to_string(),
        vgprs,
        vgprs_for_next_wave,
        grid_waves_per_simd: grid_waves / simds,
    })
}

/// One kernel's counter sums over its dispatches: what its [`KernelCounters`] row is
/// computed from (and what ranks' partials add by name).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CounterSums {
    pub name: String,
    pub bucket: Bucket,
    pub dispatches: u64,
    pub ns: i64,
    /// Operations per pipe.
    pub ops: Option<[f64; 9]>,
    pub hbm: Option<f64>,
    pub l2: Option<f64>,
    /// Of its first dispatch, and the input it ran in (whose device rates it).
    pub resources: KernelResources,
    pub input: u32,
}

impl CounterSums {
    /// Another rank's sums of the same kernel.
    pub fn add(&mut self, o: &CounterSums) {
        self.dispatches += o.dispatches;
        self.ns = self.ns.saturating_add(o.ns);
        if let Some(ops) = o.ops {
            for (s, x) in self.ops.get_or_insert([0.0; 9]).iter_mut().zip(ops) {
                *s += x;
            }
        }
        if let Some(b) = o.hbm {
            *self.hbm.get_or_insert(0.0) += b;
        }
        if let Some(b) = o.l2 {
            *self.l2.get_or_insert(0.0) += b;
        }
    }
}

/// Per kernel name, the counter sums over all inputs with counters, by name.
pub fn counter_sums(trace: &Trace, classified: &Classified) -> Vec<CounterSums> {
    let mut per: BTreeMap<&str, CounterSums> = BTreeMap::new();
    for c in &trace.counters {
        let a = per
            .entry(trace.names.get(c.name))
            .or_insert_with(|| CounterSums {
                name: trace.names.get(c.name).to_string(),
                bucket: classified.get(c.name).bucket,
                dispatches: 0,
                ns: 0,
                ops: None,
                hbm: None,
                l2: None,
                resources: c.resources,
                input: c.input,
            });
        a.dispatches += 1;
        a.ns = a.ns.saturating_add(c.dur_ns);
        if let Some(ops) = c.ops {
            let sum = a.ops.get_or_insert([0.0; 9]);
            for (s, o) in sum.iter_mut().zip(ops) {
                *s += o;
            }
        }
        if let Some((r, w)) = c.hbm_bytes {
            *a.hbm.get_or_insert(0.0) += r + w;
        }
        if let Some(b) = c.l2_bytes {
            *a.l2.get_or_insert(0.0) += b;
        }
    }
    per.into_values().collect()
}

/// Per-kernel counter metrics from the sums (`inputs` their devices), by total time
/// descending.
pub fn kernel_counters(
    sums: &[CounterSums],
    inputs: &[crate::model::InputMeta],
) -> Vec<KernelCounters> {
    let mut rows: Vec<KernelCounters> = sums
        .iter()
        .map(|a| {
            let device = inputs
                .get(a.input as usize)
                .and_then(|i| i.hardware.as_ref());
            let secs = a.ns as f64 / 1e9;
            let rate = |x: f64| (secs > 0.0).then(|| x / secs / 1e9); // per second, in G
            let flops: Option<f64> = a.ops.map(|o| o.iter().sum());
            let pipe = a.ops.and_then(|o| {
                Pipe::ALL
                    .into_iter()
                    .filter(|p| o[p.index()] > 0.0)
                    .max_by(|x, y| o[x.index()].total_cmp(&o[y.index()]))
            });
            let gflops = flops.and_then(rate);
            let hbm_gbps = a.hbm.and_then(rate);
            let peak = pipe.and_then(|p| device?.peak(p));
            let peak_hbm = device.and_then(|d| d.peak_hbm_gbps);
            let capped = |x: f64| x.clamp(0.0, 100.0);
            let pct_of_peak = gflops.zip(peak).map(|(g, p)| capped(100.0 * g / p));
            let hbm_pct = hbm_gbps.zip(peak_hbm).map(|(b, p)| capped(100.0 * b / p));
            let intensity = flops
                .zip(a.hbm)
                .filter(|(_, b)| *b > 0.0)
                .map(|(f, b)| f / b);
            // Roofline: attainable = min(peak compute, intensity × peak bandwidth).
            let roofline_pct = match (gflops, peak, peak_hbm, intensity) {
                (Some(g), Some(p), Some(bw), Some(ai)) if g > 0.0 => {
                    Some(capped(100.0 * g / p.min(ai * bw)))
                }
                _ => None,
            };
            let bound = match (intensity, peak, peak_hbm, hbm_pct) {
                // No FLOPs (a copy or fill): memory bound if it moves data near the roof.
                (_, None, Some(_), Some(m)) if flops.unwrap_or(0.0) == 0.0 => {
                    Some(if m >= ROOF_NEAR_PCT {
                        Bound::Memory
                    } else {
                        Bound::Latency
                    })
                }
                (Some(ai), Some(p), Some(bw), _) => {
                    let memory_side = ai < p / bw;
                    Some(match roofline_pct {
                        Some(r) if r < ROOF_NEAR_PCT => Bound::Latency,
                        _ if memory_side => Bound::Memory,
                        _ => Bound::Compute,
                    })
                }
                _ => None,
            };
            let matrix_pct = a.ops.and_then(|o| {
                let total: f64 = o.iter().sum();
                (total > 0.0).then(|| {
                    let m: f64 = Pipe::ALL
                        .iter()
                        .filter(|p| p.is_matrix())
                        .map(|p| o[p.index()])
                        .sum();
                    100.0 * m / total
                })
            });
            KernelCounters {
                name: a.name.clone(),
                bucket: a.bucket,
                dispatches: a.dispatches,
                total_ns: a.ns,
                pipe: pipe.map(|p| p.as_str().to_string()),
                tflops: gflops.map(|g| g / 1e3),
                pct_of_peak,
                matrix_pct,
                hbm_gbps,
                hbm_pct_of_peak: hbm_pct,
                l2_gbps: a.l2.and_then(rate),
                arithmetic_intensity: intensity,
                roofline_pct,
                bound,
                occupancy: device.and_then(|d| occupancy(&a.resources, d)),
                resources: a.resources,
            }
        })
        .collect();
    rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    rows
}

/// Share of the counter passes' kernel time (`total_ns` of all rows) a kernel takes.
pub fn share_pct(row: &KernelCounters, total_ns: i64) -> f64 {
    pct(row.total_ns, total_ns)
}

/// The counter passes' kernel time: the sum over all rows.
pub fn total_ns(rows: &[KernelCounters]) -> i64 {
    rows.iter().map(|r| r.total_ns).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mi300x() -> DeviceSpec {
        DeviceSpec {
            model: "MI300X".into(),
            arch: "gfx942".into(),
            cu_count: 304,
            simd_per_cu: 4,
            max_waves_per_cu: 32,
            wave_size: 64,
            lds_bytes_per_cu: 65536,
            num_xcd: 8,
            peak_gflops: [None; 9],
            peak_hbm_gbps: None,
            peak_l2_gbps: None,
            peak_source: None,
        }
    }

    #[test]
    fn seed_003_worked_example() {
        // seeds/003: "If the current VGPR usage is 170, the actual requested VGPR will be 176, so
        // the occupancy is only 2 waves per EU since 176 x 3 > 512."
        let r = KernelResources {
            grid_size: 1 << 20,
            workgroup_size: 256,
            wave_size: 64,
            arch_vgpr: 170,
            accum_vgpr: 0,
            lds_per_workgroup: 0,
        };
        let o = occupancy(&r, &mi300x()).unwrap();
        assert_eq!(o.vgprs, 176);
        assert_eq!(o.waves_per_simd, 2.0);
        assert_eq!(o.limiter, "vgpr");
        // waves_per_eu=3 asks the compiler for at most 160 VGPRs (512 / 3, in units of 16).
        assert_eq!(o.vgprs_for_next_wave, Some(160));
    }

    #[test]
    fn lds_limits_workgroups_per_cu() {
        // seeds/003 step 5: occ_lds = floor(65536 / L); 8 waves per workgroup, 64 KiB each:
        // one workgroup per CU, so 8 waves over 4 SIMDs = 2 per SIMD.
        let r = KernelResources {
            grid_size: 1 << 20,
            workgroup_size: 512,
            wave_size: 64,
            arch_vgpr: 32,
            accum_vgpr: 0,
            lds_per_workgroup: 65536,
        };
        let o = occupancy(&r, &mi300x()).unwrap();
        assert_eq!((o.waves_per_simd, o.limiter.as_str()), (2.0, "lds"));
        let light = KernelResources {
            lds_per_workgroup: 0,
            ..r
        };
        assert_eq!(occupancy(&light, &mi300x()).unwrap().limiter, "none");
    }
}
