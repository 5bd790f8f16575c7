//! How sure a replayed saving is (`rules/priors.toml`): the model's own uncertainty, what the
//! seeds measured of a rung on a vendor and architecture, and where before/after pairs validate
//! the replays.

use crate::analysis::Transform;
use crate::error::RuleError;
use crate::model::Vendor;
use serde::Deserialize;
use std::path::Path;

const BUILTIN: &str = include_str!("../../rules/priors.toml");

/// The share of the best case the worst case loses, by where the rates came from.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Uncertainty {
    /// Every rate from the trace itself.
    pub trace: f64,
    /// Some rate from the datasheet table.
    pub table: f64,
    /// Why these values.
    pub source: String,
}

/// When a change is a regression to revert.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Revert {
    /// Slower than this (%) after the change: revert it.
    pub slower_pct: f64,
    /// Where it comes from.
    pub source: String,
}

/// What a rung measured on a vendor (and architectures) as a whole run's speed-up.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Prior {
    /// The recommendation's id.
    pub recommendation: String,
    /// The vendor it was measured on.
    pub vendor: Vendor,
    /// Architecture prefixes (`gfx950`); empty: every architecture of the vendor.
    #[serde(default)]
    pub archs: Vec<String>,
    /// Run time before over after (0.07: 14x slower).
    pub speedup: f64,
    /// The seed's measurement.
    pub source: String,
}

/// Transforms validated by before/after pairs on a vendor.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Validated {
    /// The vendor the pairs ran on.
    pub vendor: Vendor,
    /// The changes the pairs applied.
    pub transforms: Vec<Transform>,
    /// The pairs.
    pub source: String,
}

/// `rules/priors.toml`.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Priors {
    /// The file's format version (1).
    pub schema: u32,
    /// The model's own uncertainty.
    pub uncertainty: Uncertainty,
    /// When to revert.
    pub revert: Revert,
    /// Per rung and vendor, what the seeds measured.
    #[serde(default, rename = "prior")]
    pub priors: Vec<Prior>,
    /// Where pairs validate the replays.
    #[serde(default)]
    pub validated: Vec<Validated>,
}

impl Priors {
    /// The built-in priors, or `priors.toml` of the last of `dirs` that has one (it replaces
    /// them whole).
    pub fn load(dirs: &[std::path::PathBuf]) -> Result<Priors, RuleError> {
        load_last(dirs, "priors.toml", BUILTIN, parse)
    }

    /// The most pessimistic prior of a recommendation on this vendor and these architectures.
    pub fn worst(&self, id: &str, vendor: Vendor, archs: &[&str]) -> Option<&Prior> {
        self.priors
            .iter()
            .filter(|p| p.recommendation == id && p.vendor == vendor)
            .filter(|p| {
                p.archs.is_empty()
                    || (!archs.is_empty()
                        && archs
                            .iter()
                            .all(|a| p.archs.iter().any(|x| a.starts_with(x.as_str()))))
            })
            .min_by(|a, b| a.speedup.total_cmp(&b.speedup))
    }

    /// Whether pairs on this vendor validate the change.
    pub fn validates(&self, vendor: Vendor, t: Transform) -> bool {
        self.validated
            .iter()
            .any(|v| v.vendor == vendor && v.transforms.contains(&t))
    }
}

fn parse(text: &str, file: &Path) -> Result<Priors, RuleError> {
    let p: Priors = toml::from_str(text).map_err(|e| RuleError::Parse {
        file: file.to_path_buf(),
        message: e.to_string(),
    })?;
    let bad = |message: String| RuleError::Parse {
        file: file.to_path_buf(),
        message,
    };
    if p.schema != 1 {
        return Err(bad(format!("unknown schema {}", p.schema)));
    }
    for u in [p.uncertainty.trace, p.uncertainty.table] {
        if !(0.0..=1.0).contains(&u) {
            return Err(bad(format!("uncertainty {u} is not within 0..=1")));
        }
    }
    if let Some(prior) = p
        .priors
        .iter()
        .find(|x| x.speedup.is_nan() || x.speedup <= 0.0 || x.source.is_empty())
    {
        return Err(bad(format!(
            "prior of {}: speedup must be above 0 and the source given",
            prior.recommendation
        )));
    }
    Ok(p)
}

/// The replays' constants: the built-in `rules/replay.toml`, or the one of the last of `dirs`
/// that has one (it replaces them whole).
pub fn load_replay_constants(
    dirs: &[std::path::PathBuf],
) -> Result<crate::analysis::ReplayConstants, RuleError> {
    load_last(
        dirs,
        "replay.toml",
        include_str!("../../rules/replay.toml"),
        parse_constants,
    )
}

/// The built-in `rules/NAME` (`builtin`), replaced whole by `NAME` in each of `dirs` that has
/// one, in order: every file is parsed (and checked), the last one wins.
fn load_last<T>(
    dirs: &[std::path::PathBuf],
    name: &str,
    builtin: &str,
    parse: fn(&str, &Path) -> Result<T, RuleError>,
) -> Result<T, RuleError> {
    let mut out = parse(builtin, &Path::new("rules").join(name))?;
    for dir in dirs {
        let path = dir.join(name);
        if path.is_file() {
            let text = std::fs::read_to_string(&path).map_err(|source| RuleError::Read {
                file: path.clone(),
                source,
            })?;
            out = parse(&text, &path)?;
        }
    }
    Ok(out)
}

fn parse_constants(text: &str, file: &Path) -> Result<crate::analysis::ReplayConstants, RuleError> {
    let bad = |message: String| RuleError::Parse {
        file: file.to_path_buf(),
        message,
    };
    let c: crate::analysis::ReplayConstants =
        toml::from_str(text).map_err(|e| bad(e.to_string()))?;
    if c.schema != 1 {
        return Err(bad(format!("unknown schema {}", c.schema)));
    }
    regex::Regex::new(&c.fp32_conv_kernels.value)
        .map_err(|e| bad(format!("fp32_conv_kernels: {e}")))?;
    let u = c.host_speed_uncertainty.value;
    if !(0.0..1.0).contains(&u) {
        return Err(bad(format!(
            "host_speed_uncertainty: {u} is not a share in [0, 1)"
        )));
    }
    let link = &c.pinned_copy_gbps.value;
    if link.amd <= 0 || link.nvidia <= 0 {
        return Err(bad("pinned_copy_gbps: a rate must be positive".to_string()));
    }
    let depth = &c.launch_queue_depth.value;
    if depth.amd < 2 || depth.nvidia < 2 {
        return Err(bad(
            "launch_queue_depth: a queue holds at least 2 launches".to_string()
        ));
    }
    let sources = [
        &c.profiler_overhead_ns.source,
        &c.launch_latency_ns.source,
        &c.launch_queue_depth.source,
        &c.compile_wrapper_ns.source,
        &c.compile_training_call_ns.source,
        &c.host_speed_uncertainty.source,
        &c.graph_node_gap_ns.source,
        &c.graph_launch_ns.source,
        &c.loader_workers.source,
        &c.pinned_copy_gbps.source,
        &c.fused_optimizer_launches.source,
        &c.unremovable_sync_ops.source,
        &c.fp32_conv_kernels.source,
    ];
    if sources.iter().any(|s| s.trim().is_empty()) {
        return Err(bad("every constant needs its source".into()));
    }
    Ok(c)
}
