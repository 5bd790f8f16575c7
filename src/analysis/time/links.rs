//! How host events relate to GPU activities: the launch call of each activity (by correlation
//! id; one graph launch correlates to many kernels), and which host calls block or compile.

use crate::model::{ActivityKind, HostKind, Trace};
use rustc_hash::FxHashMap as HashMap;

/// Per GPU activity, the index (into `trace.host`) of the runtime or driver call that launched it.
pub struct Links {
    pub launch: Vec<Option<u32>>,
    /// Activities replayed by a graph launch whose capture lies in the trace: the call that
    /// launched the same work during the capture (its cpu_op is the one that owns the work).
    captured: HashMap<u32, u32>,
}

impl Links {
    pub fn build(trace: &Trace) -> Links {
        let host = &trace.host;
        let mut by_corr: HashMap<(u32, u64), u32> = HashMap::default();
        for (i, c) in host.correlation.nonzero() {
            if matches!(host.kind[i], HostKind::Runtime | HostKind::Driver) {
                by_corr.entry((host.input[i], c)).or_insert(i as u32);
            }
        }
        let acts = &trace.activities;
        let launch: Vec<Option<u32>> = (0..acts.len())
            .map(|a| match acts.correlation.get(a) {
                0 => None,
                c => by_corr.get(&(acts.input[a], c)).copied(),
            })
            .collect();
        let captured = captured_launches(trace, &launch);
        Links { launch, captured }
    }

    /// Graph-replayed activities attributed to a capture: activity → its graph launch call.
    pub fn replays(&self) -> HashMap<u32, u32> {
        self.captured
            .keys()
            .filter_map(|&a| Some((a, self.launch[a as usize]?)))
            .collect()
    }

    /// The call whose host context (thread, enclosing ops) owns activity `a`: the launch
    /// during the capture for graph-replayed work, else its own launch call.
    pub fn owner_call(&self, a: usize) -> Option<u32> {
        self.captured.get(&(a as u32)).copied().or(self.launch[a])
    }

    /// When activity `a` was launched: its launch call's start, or its own start without one.
    pub fn launch_ts(&self, trace: &Trace, a: usize) -> i64 {
        self.launch[a].map_or(trace.activities.ts_ns[a], |h| trace.host.ts_ns[h as usize])
    }
}

/// What a call issued during a stream capture puts into the graph, if anything.
fn captured_kind(name: &str) -> Option<ActivityKind> {
    if name.contains("LaunchKernel") || name.contains("LaunchCooperativeKernel") {
        Some(ActivityKind::Kernel)
    } else if name.contains("Memset") {
        Some(ActivityKind::Memset)
    } else if name.contains("Memcpy") && name.contains("Async") {
        Some(ActivityKind::Memcpy)
    } else {
        None
    }
}

/// Graph replays matched to a capture in the trace: per thread, the kernel, memset and copy
/// calls between `*StreamBeginCapture` and `*StreamEndCapture` are the graph's nodes in capture
/// order; a graph launch whose activities (in start order, all on one stream) have the same
/// kinds in the same order as exactly one capture before it replays that capture, node by node.
/// Anything ambiguous keeps the graph launch: several captures that fit (vLLM's per-batch-size
/// graphs), replays spread over streams (their order need not be the capture's), captures
/// outside the window.
fn captured_launches(trace: &Trace, launch: &[Option<u32>]) -> HashMap<u32, u32> {
    let (host, acts) = (&trace.host, &trace.activities);
    let name = |h: usize| trace.names.get(host.name[h]);
    let is_call = |h: usize| matches!(host.kind[h], HostKind::Runtime | HostKind::Driver);
    let mut out = HashMap::default();
    if !(0..host.len()).any(|h| is_call(h) && name(h).ends_with("StreamBeginCapture")) {
        return out;
    }
    // The runtime/driver calls of each thread, in time order: one sort, then every capture
    // window is a slice of it.
    let mut threads: std::collections::BTreeMap<(u32, u64), Vec<(i64, u32)>> = Default::default();
    for h in (0..host.len()).filter(|&h| is_call(h)) {
        threads
            .entry((host.input[h], host.tid(h)))
            .or_default()
            .push((host.ts_ns[h], h as u32));
    }
    // Each capture: (input, end time, node calls in capture order with their kinds).
    type Capture = (u32, i64, Vec<(u32, ActivityKind)>);
    let mut captures: Vec<Capture> = Vec::new();
    for ((input, _), calls) in &mut threads {
        calls.sort_unstable();
        let mut open: Option<usize> = None;
        for (i, &(_, h)) in calls.iter().enumerate() {
            let n = name(h as usize);
            if n.ends_with("StreamBeginCapture") {
                open = Some(i);
            } else if n.ends_with("StreamEndCapture") {
                if let Some(b) = open.take() {
                    let nodes = calls[b + 1..i]
                        .iter()
                        .filter_map(|&(_, c)| Some((c, captured_kind(name(c as usize))?)))
                        .collect();
                    captures.push((*input, calls[i].0, nodes));
                }
            }
        }
    }
    // The activities of each graph launch, in start order.
    let mut replays: std::collections::BTreeMap<u32, Vec<(i64, u32)>> = Default::default();
    for (a, l) in launch.iter().enumerate() {
        if let Some(h) = *l {
            if is_graph_launch(name(h as usize)) {
                replays
                    .entry(h)
                    .or_default()
                    .push((acts.ts_ns[a], a as u32));
            }
        }
    }
    for (h, mut replayed) in replays {
        replayed.sort_unstable();
        let stream = acts.stream[replayed[0].1 as usize];
        if replayed
            .iter()
            .any(|&(_, a)| acts.stream[a as usize] != stream)
        {
            continue;
        }
        let at = host.ts_ns[h as usize];
        let mut fits = captures.iter().filter(|(input, end, nodes)| {
            *input == host.input[h as usize]
                && *end <= at
                && nodes.len() == replayed.len()
                && nodes
                    .iter()
                    .zip(&replayed)
                    .all(|((_, k), (_, a))| acts.kind[*a as usize] == *k)
        });
        if let (Some((_, _, nodes)), None) = (fits.next(), fits.next()) {
            for ((call, _), (_, a)) in nodes.iter().zip(&replayed) {
                out.insert(*a, *call);
            }
        }
    }
    out
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

/// Device-memory frees: they synchronize the device before returning, so the host waits in
/// them like in a synchronize.
pub fn is_free_call(name: &str) -> bool {
    matches!(
        name,
        "hipFree" | "cudaFree" | "cuMemFree" | "cuMemFree_v2" | "hipHostFree" | "cudaFreeHost"
    )
}

/// Calls of the device allocator (frees and mallocs): many of them in a step is allocator churn.
pub fn is_allocator_call(name: &str) -> bool {
    is_free_call(name)
        || matches!(
            name,
            "hipMalloc"
                | "cudaMalloc"
                | "cuMemAlloc"
                | "cuMemAlloc_v2"
                | "hipHostMalloc"
                | "cudaMallocHost"
                | "cudaHostAlloc"
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
