//! How host events relate to GPU activities: the launch call of each activity (by correlation
//! id; one graph launch correlates to many kernels), and which host calls block or compile.

use crate::model::{HostKind, Trace};
use rustc_hash::FxHashMap as HashMap;

/// Per GPU activity, the index (into `trace.host`) of the runtime or driver call that launched it.
pub struct Links {
    pub launch: Vec<Option<u32>>,
}

impl Links {
    pub fn build(trace: &Trace) -> Links {
        let host = &trace.host;
        let mut by_corr: HashMap<(u32, u64), u32> = HashMap::default();
        for i in 0..host.len() {
            if matches!(host.kind[i], HostKind::Runtime | HostKind::Driver)
                && host.correlation[i] != 0
            {
                by_corr
                    .entry((host.input[i], host.correlation[i]))
                    .or_insert(i as u32);
            }
        }
        let acts = &trace.activities;
        let launch = (0..acts.len())
            .map(|a| match acts.correlation[a] {
                0 => None,
                c => by_corr.get(&(acts.input[a], c)).copied(),
            })
            .collect();
        Links { launch }
    }

    /// When activity `a` was launched: its launch call's start, or its own start without one.
    pub fn launch_ts(&self, trace: &Trace, a: usize) -> i64 {
        self.launch[a].map_or(trace.activities.ts_ns[a], |h| trace.host.ts_ns[h as usize])
    }
}

/// Host calls that block until the GPU catches up (the host waits: idle, not dispatching).
pub fn is_sync_call(name: &str) -> bool {
    matches!(
        name,
        "cudaDeviceSynchronize"
            | "cudaStreamSynchronize"
            | "cudaEventSynchronize"
            | "cudaMemcpy"
            | "cudaMemcpy2D"
            | "cudaMemcpyFromSymbol"
            | "cuCtxSynchronize"
            | "cuStreamSynchronize"
            | "cuEventSynchronize"
            | "hipDeviceSynchronize"
            | "hipStreamSynchronize"
            | "hipEventSynchronize"
            | "hipMemcpy"
            | "hipMemcpy2D"
            | "hipMemcpyWithStream"
            | "hipMemcpyDtoH"
            | "hipMemcpyFromSymbol"
    )
}

/// Runtime calls that replay a captured CUDA/HIP graph.
pub fn is_graph_launch(name: &str) -> bool {
    matches!(name, "cudaGraphLaunch" | "cuGraphLaunch" | "hipGraphLaunch")
}

/// torch.compile's own work (Dynamo tracing, AOT, Inductor codegen, autotuning), which
/// `dynamo_timed` wraps in record_function ranges named `… (dynamo_timed)`.
pub fn is_compile_event(name: &str) -> bool {
    name.ends_with(" (dynamo_timed)")
}

/// `Torch-Compiled Region: F/C` → (F, C).
pub fn compiled_region(name: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix("Torch-Compiled Region: ")?;
    let (f, c) = rest.trim().split_once('/')?;
    // Newer torch may add an attempt suffix (`0/1_2`): the compile id is what comes before it.
    let c = c.split(|ch: char| !ch.is_ascii_digit()).next()?;
    Some((f.parse().ok()?, c.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_region_names_parse() {
        assert_eq!(compiled_region("Torch-Compiled Region: 1/0"), Some((1, 0)));
        assert_eq!(compiled_region("Torch-Compiled Region: 0/4"), Some((0, 4)));
        assert_eq!(
            compiled_region("Torch-Compiled Region: 2/1_1"),
            Some((2, 1))
        );
        assert_eq!(compiled_region("TorchDynamo Cache Lookup"), None);
        assert!(is_sync_call("hipDeviceSynchronize") && !is_sync_call("hipLaunchKernel"));
        assert!(is_compile_event("_compile.compile_inner (dynamo_timed)"));
    }
}
