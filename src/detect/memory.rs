//! GPU memory against the device: close to running out, or far from using what it has.

use super::evidence as ev;
use super::{Detail, Finding, Severity};
use crate::analysis::numbers::pct;
use crate::analysis::signals::memory::DeviceMemory;
use crate::analysis::Context;

/// Reserved at or above this share of the device: the next larger batch, sequence or
/// fragmentation spike fails with out-of-memory.
const PRESSURE_PCT: f64 = 90.0;
/// Reserved under this share on a GPU-bound run: memory a larger batch could use.
const HEADROOM_PCT: f64 = 50.0;
/// GPU-bound: the GPU busy at least this share of the window (a larger batch then raises
/// throughput; a host-bound run needs its host fixed first).
const GPU_BOUND_PCT: f64 = 80.0;

fn gib(b: i64) -> String {
    format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30))
}

fn device_row(m: &DeviceMemory) -> ev::DeviceMemoryRow {
    ev::DeviceMemoryRow {
        rank: m.rank,
        device: m.device,
        peak_allocated_bytes: m.peak_allocated_bytes,
        peak_reserved_bytes: m.peak_reserved_bytes,
        device_bytes: m.device_bytes,
        peak_reserved_pct: m.peak_reserved_pct,
    }
}

fn where_(m: &DeviceMemory) -> String {
    match m.rank {
        Some(r) => format!("rank {r} gpu {}", m.device),
        None => format!("gpu {}", m.device),
    }
}

pub fn memory_pressure(ctx: &Context) -> Vec<Finding> {
    let tight: Vec<&DeviceMemory> = ctx
        .analysis
        .memory
        .iter()
        .filter(|m| m.peak_reserved_pct.is_some_and(|p| p >= PRESSURE_PCT))
        .collect();
    let Some(worst) = tight.iter().max_by(|a, b| {
        a.peak_reserved_pct
            .partial_cmp(&b.peak_reserved_pct)
            .unwrap_or(std::cmp::Ordering::Equal)
    }) else {
        return vec![];
    };
    vec![Finding::new(
        Severity::Medium,
        format!(
            "GPU memory runs close to the limit: {} reserves {} of its {} ({:.0}%; tensors hold {} of it), on {} device(s) at >= {PRESSURE_PCT:.0}%: a longer sequence or a fragmentation spike fails with out-of-memory",
            where_(worst),
            gib(worst.peak_reserved_bytes),
            gib(worst.device_bytes.unwrap_or(0) as i64),
            worst.peak_reserved_pct.unwrap_or(0.0),
            gib(worst.peak_allocated_bytes),
            tight.len()
        ),
        0,
        Detail::MemoryPressure(ev::MemoryPressure {
            devices: tight.iter().map(|m| device_row(m)).collect(),
        }),
    )]
}

pub fn memory_headroom(ctx: &Context) -> Vec<Finding> {
    let mem = &ctx.analysis.memory;
    let s = &ctx.analysis.summary;
    let busy = pct(s.gpu_busy_ns, s.window_ns);
    if mem.is_empty()
        || busy < GPU_BOUND_PCT
        || !mem
            .iter()
            .all(|m| m.peak_reserved_pct.is_some_and(|p| p < HEADROOM_PCT))
    {
        return vec![];
    }
    let most = mem
        .iter()
        .max_by_key(|m| m.peak_reserved_bytes)
        .expect("not empty");
    vec![Finding::new(
        Severity::Low,
        format!(
            "the GPU is busy {busy:.0}% of the window but uses little of its memory: at most {} reserved of {} ({:.0}%, {}): a larger batch (or less activation checkpointing) raises throughput",
            gib(most.peak_reserved_bytes),
            gib(most.device_bytes.unwrap_or(0) as i64),
            most.peak_reserved_pct.unwrap_or(0.0),
            where_(most)
        ),
        0,
        Detail::MemoryHeadroom(ev::MemoryHeadroom {
            gpu_busy_pct: busy,
            devices: mem.iter().map(device_row).collect(),
        }),
    )]
}
