//! What host event names mean to the time axis: a step (`ProfilerStep#N`), a phase PyTorch
//! annotates itself, or an annotation that is no region. Steps, iterations and regions all read
//! these, so they live below the three.

/// `ProfilerStep#N` → N.
pub fn step_number(name: &str) -> Option<u64> {
    name.strip_prefix("ProfilerStep#")?.trim().parse().ok()
}

/// Annotations PyTorch writes itself: phases, not the user's.
/// Is this annotation the DataLoader's fetch of a batch (`enumerate(DataLoader)#…__next__`)?
pub(crate) fn is_data_loading(name: &str) -> bool {
    name.starts_with("enumerate(DataLoader)#") && name.contains("__next__")
}

pub(crate) fn is_pytorch_phase(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "Optimizer.",
        "DistributedDataParallel.",
        "FullyShardedDataParallel.",
        "FSDP::",
        "enumerate(DataLoader)",
        // Inductor's call of a compiled graph (`## Call CompiledFxGraph f… ##`).
        "## Call CompiledFxGraph",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Annotations that are not regions: steps (the frame the tree sits in) and the process group's
/// per-collective ranges (the collectives table reports those).
pub(crate) fn is_not_a_region(name: &str) -> bool {
    step_number(name).is_some()
        || ["nccl:", "gloo:", "mpi:", "ucc:", "xccl:"]
            .iter()
            .any(|p| name.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_numbers_parse() {
        assert_eq!(step_number("ProfilerStep#12"), Some(12));
        assert_eq!(step_number("ProfilerStep"), None);
    }
}
