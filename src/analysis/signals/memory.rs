//! GPU memory from the caching allocator's own account (Kineto's `[memory]` events with
//! `profile_memory=True`): per device the peak allocated and reserved bytes in the window and in
//! each step, a timeline, and how close the peak runs to the device's memory.
//!
//! `Total Allocated` is what tensors hold (`torch.cuda.memory_allocated()`), `Total Reserved`
//! what the allocator holds from the driver (`memory_reserved()`: allocated plus its cache); an
//! out-of-memory error comes when reserved plus a new block exceeds the device. Events carry
//! host times (the allocation happens when the op runs on the host), so a step's peak is over
//! the events inside its CPU `ProfilerStep` range, starting from the state it was entered with.

use crate::analysis::time::steps::Steps;
use crate::classify::devices::{find_device, DevicePeaks};
use crate::model::Trace;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// At most this many points per device in `timeline`: the largest values of each stretch.
const TIMELINE_POINTS: usize = 400;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepMemory {
    pub step: u64,
    pub peak_allocated_bytes: i64,
    pub peak_reserved_bytes: i64,
}

/// One device of one input (rank).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviceMemory {
    pub rank: Option<u32>,
    pub device: u32,
    /// The peaks over the analyzed steps (the whole trace without steps).
    pub peak_allocated_bytes: i64,
    pub peak_reserved_bytes: i64,
    /// The device's memory: the trace's `totalGlobalMem`, else `rules/devices.toml`.
    pub device_bytes: Option<u64>,
    /// `peak_reserved_bytes` as a share of `device_bytes`.
    pub peak_reserved_pct: Option<f64>,
    pub per_step: Vec<StepMemory>,
    /// (ns since the device's first event, allocated, reserved): each point the largest values
    /// of its stretch of time, at most 400 points.
    pub timeline: Vec<[i64; 3]>,
    #[serde(skip)]
    pub input: u32,
}

/// The memory view of a trace's analyzed steps; empty without `[memory]` events.
pub fn analyze(trace: &Trace, steps: &Steps, table: &[DevicePeaks]) -> Vec<DeviceMemory> {
    let m = &trace.memory;
    let mut per: BTreeMap<(u32, u32), Vec<usize>> = BTreeMap::new();
    for k in 0..m.len() {
        per.entry((m.input[k], m.device[k])).or_default().push(k);
    }
    per.into_iter()
        .map(|((input, device), mut rows)| {
            rows.sort_by_key(|&k| (m.ts_ns[k], k));
            let meta = &trace.inputs[input as usize];
            // ROCm numbers the visible GPUs from 0 where kernels carry the physical id: with
            // one device in the input, it is that one.
            let known = meta
                .devices
                .iter()
                .find(|d| d.id == device)
                .or_else(|| (meta.devices.len() == 1).then(|| &meta.devices[0]));
            let device_bytes = known.and_then(|d| d.memory_bytes).or_else(|| {
                let name = known.map_or("", |d| d.name.as_str());
                let gib = find_device(table, name)?.memory_gib?;
                Some((gib * f64::from(1u32 << 30)) as u64)
            });
            let per_step = step_peaks(trace, steps, input, &rows);
            let (peak_allocated_bytes, peak_reserved_bytes) = if per_step.is_empty() {
                rows.iter().fold((0, 0), |(a, r), &k| {
                    (a.max(m.allocated[k]), r.max(m.reserved[k]))
                })
            } else {
                per_step.iter().fold((0, 0), |(a, r), s| {
                    (a.max(s.peak_allocated_bytes), r.max(s.peak_reserved_bytes))
                })
            };
            DeviceMemory {
                rank: meta.rank,
                device,
                peak_allocated_bytes,
                peak_reserved_bytes,
                device_bytes,
                peak_reserved_pct: device_bytes
                    .filter(|&b| b > 0)
                    .map(|b| crate::analysis::numbers::pct(peak_reserved_bytes, b as i64)),
                per_step,
                timeline: timeline(trace, &rows),
                input,
            }
        })
        .collect()
}

/// Per kept step of `input`, the peaks from the state it was entered with through its events.
fn step_peaks(trace: &Trace, steps: &Steps, input: u32, rows: &[usize]) -> Vec<StepMemory> {
    let m = &trace.memory;
    steps
        .kept(input as usize)
        .map(|(_, w)| {
            let first = rows.partition_point(|&k| m.ts_ns[k] < w.cpu_start_ns);
            let end = rows.partition_point(|&k| m.ts_ns[k] < w.cpu_end_ns);
            let entered = first.checked_sub(1).map(|i| rows[i]);
            let (a, r) = entered
                .into_iter()
                .chain(rows[first..end].iter().copied())
                .fold((0, 0), |(a, r), k| {
                    (a.max(m.allocated[k]), r.max(m.reserved[k]))
                });
            StepMemory {
                step: w.number,
                peak_allocated_bytes: a,
                peak_reserved_bytes: r,
            }
        })
        .collect()
}

/// The device's events thinned to [`TIMELINE_POINTS`] stretches of equal time, each its maxima.
fn timeline(trace: &Trace, rows: &[usize]) -> Vec<[i64; 3]> {
    let m = &trace.memory;
    let (Some(&first), Some(&last)) = (rows.first(), rows.last()) else {
        return Vec::new();
    };
    let t0 = m.ts_ns[first];
    let span = (m.ts_ns[last] - t0).max(1);
    let mut points: Vec<[i64; 3]> = Vec::new();
    let mut current: Option<(usize, [i64; 3])> = None;
    for &k in rows {
        let t = m.ts_ns[k] - t0;
        let bucket = ((t as i128 * TIMELINE_POINTS as i128) / (span as i128 + 1)) as usize;
        match &mut current {
            Some((b, p)) if *b == bucket => {
                p[1] = p[1].max(m.allocated[k]);
                p[2] = p[2].max(m.reserved[k]);
            }
            _ => {
                if let Some((_, p)) = current.take() {
                    points.push(p);
                }
                current = Some((bucket, [t, m.allocated[k], m.reserved[k]]));
            }
        }
    }
    if let Some((_, p)) = current {
        points.push(p);
    }
    points
}
