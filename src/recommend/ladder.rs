//! Each ladder level's status: what the trace shows about it, decided here once, as a typed
//! [`Verdict`]; what the verdict says comes from the level's `says` table in
//! `rules/ladder.toml`, with the numbers filled in.

use super::{Catalog, EnvListing, LadderRow, LevelDef, Recommendation};
use crate::analysis::Analysis;
use crate::detect::{Finding, FindingId};
use crate::model::{Format, Vendor};
use serde::Serialize;

/// A ladder level's status (FEED.md `ladder[].status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LadderStatus {
    /// Nothing left to do at this level.
    Done,
    /// Part of the level is done, part is left.
    Partial,
    /// The level's work is still to do.
    Todo,
    /// The trace cannot tell.
    Unknown,
}

impl LadderStatus {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
    /// Work left at this level (`next_level` is the lowest such level).
    pub fn is_open(self) -> bool {
        matches!(self, LadderStatus::Todo | LadderStatus::Partial)
    }
}

impl std::fmt::Display for LadderStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the trace shows about a level; each has a status and a text in the level's `says`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Level 1 without `--env`, and no fp32 GEMMs to show a missing setting.
    EnvNotGiven,
    /// Level 1 without `--env`, but fp32 GEMMs run without matrix cores.
    Fp32WithoutEnv,
    /// Level 1: every audited setting is as expected.
    EnvSet,
    /// Level 1: some audited settings are as expected, some missing.
    EnvPartly,
    /// Level 1: no audited setting is as expected.
    EnvMissing,
    /// Level 2: every step compiled, without breaks or recompiles.
    Compiled,
    /// Compiled, but with graph breaks or recompiles.
    CompiledWithBreaks,
    /// No compiled-region markers, but Inductor's kernels run (compiled code inside graphs).
    InductorKernels,
    /// Compiled code runs, but outermost modules with a share of the time run eager.
    EagerModules,
    /// CUDA/HIP graphs replay the work, but no compiled region runs.
    GraphsWithoutCompile,
    /// The trace has no GPU activity.
    NoGpuActivity,
    /// A rocprof profile has no PyTorch operators to show compile use.
    NoOperators,
    /// No compiled region runs: the model runs eager.
    Eager,
    /// Level 3: recommendations of the level fired.
    SurgeryOpportunities,
    /// Surgery findings fired, but no level-3 recommendation saves time.
    SurgeryFindings,
    /// The ops are visible and no surgery opportunity was found.
    NoSurgeryFound,
    /// No op shapes, or the work replays from graphs: surgery cannot be judged.
    OpsNotVisible,
    /// Levels 4 and 5.
    TuningOpportunities,
    /// No recommendation of the level fired: a trace cannot show tuning.
    TuningNotVisible,
}

impl Verdict {
    /// The level status this verdict gives.
    pub fn status(self) -> LadderStatus {
        use LadderStatus::*;
        use Verdict::*;
        match self {
            EnvSet | Compiled | InductorKernels | NoSurgeryFound => Done,
            EnvPartly | CompiledWithBreaks | EagerModules | GraphsWithoutCompile => Partial,
            Fp32WithoutEnv | EnvMissing | Eager | SurgeryOpportunities | SurgeryFindings
            | TuningOpportunities => Todo,
            EnvNotGiven | NoGpuActivity | NoOperators | OpsNotVisible | TuningNotVisible => Unknown,
        }
    }

    /// Its key in the level's `says` table.
    pub fn key(self) -> &'static str {
        use Verdict::*;
        match self {
            EnvNotGiven => "env_not_given",
            Fp32WithoutEnv => "fp32_without_env",
            EnvSet => "env_set",
            EnvPartly => "env_partly",
            EnvMissing => "env_missing",
            Compiled => "compiled",
            CompiledWithBreaks => "compiled_with_breaks",
            InductorKernels => "inductor_kernels",
            EagerModules => "eager_modules",
            GraphsWithoutCompile => "graphs_without_compile",
            NoGpuActivity => "no_gpu_activity",
            NoOperators => "no_operators",
            Eager => "eager",
            SurgeryOpportunities => "opportunities",
            SurgeryFindings => "findings",
            NoSurgeryFound => "none_found",
            OpsNotVisible => "ops_not_visible",
            TuningOpportunities => "opportunities",
            TuningNotVisible => "not_visible",
        }
    }

    /// The verdicts a level can reach (levels past 3 share the tuning ones).
    pub fn of_level(level: u8) -> &'static [Verdict] {
        use Verdict::*;
        match level {
            1 => &[EnvNotGiven, Fp32WithoutEnv, EnvSet, EnvPartly, EnvMissing],
            2 => &[
                Compiled,
                CompiledWithBreaks,
                InductorKernels,
                EagerModules,
                GraphsWithoutCompile,
                NoGpuActivity,
                NoOperators,
                Eager,
            ],
            3 => &[
                SurgeryOpportunities,
                SurgeryFindings,
                NoSurgeryFound,
                OpsNotVisible,
            ],
            _ => &[TuningOpportunities, TuningNotVisible],
        }
    }
}

/// Keys a level's `says` table needs beyond its verdicts' (level 1's item for fp32 GEMMs).
pub const FP32_ITEM: &str = "fp32_item";

/// Every level's row: its verdict, in words.
pub(super) fn status(
    a: &Analysis,
    findings: &[Finding],
    catalog: &Catalog,
    recs: &[Recommendation],
    env: Option<&EnvListing>,
) -> Vec<LadderRow> {
    catalog
        .levels
        .iter()
        .map(|l| {
            let (verdict, args) = match l.level {
                1 => level1(a, findings, catalog, l, env),
                2 => level2(a, findings),
                3 => level3(a, findings, recs),
                level => tuning(recs, level),
            };
            LadderRow {
                level: l.level,
                name: l.name.clone(),
                status: verdict.status(),
                evidence: say(l, verdict, &args),
                est_savings_ns: 0,
            }
        })
        .collect()
}

/// The level's text for `verdict`, with `{name}` placeholders filled from `args`.
fn say(level: &LevelDef, verdict: Verdict, args: &[(&str, String)]) -> String {
    let mut text = level
        .says
        .get(verdict.key())
        .cloned()
        .unwrap_or_else(|| verdict.key().to_string());
    for (name, value) in args {
        text = text.replace(&format!("{{{name}}}"), value);
    }
    text
}

type Said = (Verdict, Vec<(&'static str, String)>);

fn has(findings: &[Finding], id: FindingId) -> bool {
    findings.iter().any(|f| f.id == id)
}

/// Recommendations of `level` that save time.
fn recs_at(recs: &[Recommendation], level: u8) -> Vec<&str> {
    recs.iter()
        .filter(|r| r.level == level && r.est_savings_ns > 0)
        .map(|r| r.id.as_str())
        .collect()
}

fn level1(
    a: &Analysis,
    findings: &[Finding],
    catalog: &Catalog,
    def: &LevelDef,
    env: Option<&EnvListing>,
) -> Said {
    // fp32 GEMMs off the matrix cores: matmul precision is a level-1 setting (on MFMA they
    // already use them; bf16 is a model change).
    let fp32 = findings.iter().any(|f| {
        matches!(&f.evidence.detail, crate::detect::Detail::Fp32Gemm(e) if e.kind != crate::detect::evidence::Fp32GemmKind::Mfma)
    });
    let Some(env) = env else {
        let v = if fp32 {
            Verdict::Fp32WithoutEnv
        } else {
            Verdict::EnvNotGiven
        };
        return (v, Vec::new());
    };
    let vendor = a.vendor();
    let mut ok = Vec::new();
    let mut missing = Vec::new();
    for c in &catalog.env_checks {
        if c.vendor
            .is_some_and(|v| vendor != Vendor::Unknown && v != vendor)
        {
            continue;
        }
        let value = env.get(&c.name);
        let good = if c.unset {
            value.is_none()
        } else {
            value.is_some_and(|v| Some(v.as_str()) == c.expected.as_deref())
        };
        let label = if c.unset {
            format!("{} unset", c.name)
        } else {
            format!("{}={}", c.name, c.expected.as_deref().unwrap_or(""))
        };
        if good {
            ok.push(label);
        } else {
            missing.push(label);
        }
    }
    if fp32 {
        missing.push(def.says.get(FP32_ITEM).cloned().unwrap_or_default());
    }
    let verdict = match (ok.is_empty(), missing.is_empty()) {
        (_, true) => Verdict::EnvSet,
        (true, false) => Verdict::EnvMissing,
        (false, false) => Verdict::EnvPartly,
    };
    (
        verdict,
        vec![("set", ok.join(", ")), ("missing", missing.join(", "))],
    )
}

fn level2(a: &Analysis, findings: &[Finding]) -> Said {
    let c = &a.compile;
    let eager_left = has(findings, FindingId::EagerModules);
    let clean = !c.graph_breaks.detected && c.recompiles.count == 0;
    let verdict = if eager_left && (clean || !c.compiled) {
        Verdict::EagerModules
    } else if c.compiled && clean {
        Verdict::Compiled
    } else if c.compiled {
        Verdict::CompiledWithBreaks
    } else if c.inductor_kernel_pct > 0.0 {
        Verdict::InductorKernels
    } else if c.cudagraphs {
        Verdict::GraphsWithoutCompile
    } else if a.summary.kernel_ns == 0 {
        Verdict::NoGpuActivity
    } else if a.inputs.iter().all(|i| i.format != Format::Kineto) {
        Verdict::NoOperators
    } else {
        Verdict::Eager
    };
    (
        verdict,
        vec![
            ("regions_per_step", c.regions_per_step.to_string()),
            ("graph_breaks_per_step", c.graph_breaks.per_step.to_string()),
            ("recompiles", c.recompiles.count.to_string()),
            (
                "inductor_kernel_pct",
                format!("{:.1}", c.inductor_kernel_pct),
            ),
            (
                "eager_modules",
                c.eager_modules
                    .iter()
                    .map(|m| crate::detect::module_class(&m.name))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            (
                "eager_pct",
                format!("{:.1}", c.eager_modules.iter().map(|m| m.pct).sum::<f64>()),
            ),
        ],
    )
}

fn level3(a: &Analysis, findings: &[Finding], recs: &[Recommendation]) -> Said {
    let todo = recs_at(recs, 3);
    let verdict = if !todo.is_empty() {
        Verdict::SurgeryOpportunities
    } else if has(findings, FindingId::UnfusedProjections)
        || has(findings, FindingId::ManualAttention)
    {
        Verdict::SurgeryFindings
    } else if a.summary.kernel_ns > 0 && has_shapes(a, findings) {
        Verdict::NoSurgeryFound
    } else {
        Verdict::OpsNotVisible
    };
    (verdict, vec![("recommendations", todo.join(", "))])
}

fn tuning(recs: &[Recommendation], level: u8) -> Said {
    let todo = recs_at(recs, level);
    let verdict = if todo.is_empty() {
        Verdict::TuningNotVisible
    } else {
        Verdict::TuningOpportunities
    };
    (verdict, vec![("recommendations", todo.join(", "))])
}

/// Whether model-level detectors could see the model: cpu_ops carry shapes, and the GPU work is
/// not mostly replayed from CUDA/HIP graphs (whose ops never run on the host).
fn has_shapes(a: &Analysis, findings: &[Finding]) -> bool {
    let (_, replayed) = crate::detect::graph_replayed(findings);
    a.has_op_shapes && (replayed as f64) < 0.5 * a.summary.kernel_ns as f64
}
