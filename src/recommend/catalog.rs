//! Loading `rules/ladder.toml` (built in) and a user `ladder.toml` (`--rules DIR`), whose
//! entries replace built-in ones with the same id.

use crate::analysis::time::partition::Category;
use crate::classify::Bucket;
use crate::error::RuleError;
use crate::model::compile_log::{ActionKind, CompileFixes, FixCause};
use crate::model::Vendor;
use serde::Deserialize;
use std::path::{Path, PathBuf};

const BUILTIN: &str = include_str!("../../rules/ladder.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LadderFile {
    schema: u32,
    #[serde(default, rename = "level")]
    levels: Vec<LevelDef>,
    #[serde(default, rename = "env_check")]
    env_checks: Vec<EnvCheck>,
    #[serde(default, rename = "recommendation")]
    recommendations: Vec<RecDef>,
    #[serde(default)]
    compile_fixes: CompileFixes,
}

/// One ladder level (`[[level]]` in `rules/ladder.toml`).
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct LevelDef {
    /// Its number (1-5); a user level of the same number replaces it.
    pub level: u8,
    /// Its name in the ladder (`torch.compile`).
    pub name: String,
    /// What each verdict on this level says (`Verdict::key` → text with `{name}` placeholders).
    #[serde(default)]
    pub says: std::collections::BTreeMap<String, String>,
}

/// A level-1 environment variable to audit.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct EnvCheck {
    /// The environment variable.
    pub name: String,
    /// The value it should have (unless `unset`).
    #[serde(default)]
    pub expected: Option<String>,
    /// The variable should not be set at all.
    #[serde(default)]
    pub unset: bool,
    /// Checked only on this vendor's traces (absent, or vendor unknown: always).
    #[serde(default)]
    pub vendor: Option<Vendor>,
    /// Why it is checked (its source).
    #[serde(default)]
    pub why: String,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct MinBucket {
    pub bucket: Bucket,
    pub pct: f64,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct ActionDef {
    pub kind: ActionKind,
    pub text: String,
    #[serde(default)]
    pub vendor: Option<Vendor>,
    /// Shown only to jobs that use one of these parallelisms (`kind` or `kind:impl`, `impl`
    /// `none` for one without a wrapper: `ddp:ddp`, `fsdp:fsdp2`, `ddp:none`, `tensor`): no
    /// recommendation names a wrapper the job does not use.
    #[serde(default)]
    pub parallelism: Vec<String>,
}

/// Whether the job uses a parallelism `selectors` name (`kind` or `kind:impl`; empty: any job).
pub fn uses_parallelism(
    selectors: &[String],
    rows: &[crate::analysis::signals::parallelism::Parallelism],
) -> bool {
    selectors.is_empty()
        || selectors.iter().any(|sel| {
            let (kind, imp) = match sel.split_once(':') {
                Some((k, i)) => (k, Some(i)),
                None => (sel.as_str(), None),
            };
            rows.iter().any(|r| {
                r.kind.as_str() == kind
                    && imp.is_none_or(|i| match &r.implementation {
                        Some(have) => have == i,
                        None => i == "none",
                    })
            })
        })
}

/// A tag's share of a bucket (`max_tag_share`).
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct TagShare {
    pub tag: crate::classify::KernelTag,
    pub bucket: crate::classify::Bucket,
    pub pct: f64,
}

/// A caveat of a recommendation: the seed's measurement of what can go wrong.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct CaveatDef {
    pub text: String,
    #[serde(default)]
    pub vendor: Option<Vendor>,
}

/// One recommendation of the catalog.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct RecDef {
    /// Unique id (`env.matmul-precision`); a user entry with it replaces the built-in one.
    pub id: String,
    /// The ladder level it belongs to (1-5).
    pub level: u8,
    /// One-line title shown in reports.
    pub title: String,
    /// Fires when any of these findings fired.
    pub findings: Vec<crate::detect::FindingId>,
    /// Of `findings`, those that count only in a compiled trace.
    #[serde(default)]
    pub findings_if_compiled: Vec<crate::detect::FindingId>,
    /// Only findings whose `evidence.kind` is this.
    #[serde(default)]
    pub finding_kind: Option<String>,
    /// Only findings whose evidence has this key set (not null, false or empty).
    #[serde(default)]
    pub evidence_key: Option<String>,
    /// Only on these vendors (empty: all).
    #[serde(default)]
    pub vendors: Vec<Vendor>,
    /// Only when the trace is (not) compiled.
    #[serde(default)]
    pub compiled: Option<bool>,
    /// Only when CUDA/HIP graphs are (not) in use.
    #[serde(default)]
    pub cudagraphs: Option<bool>,
    /// Only when libraries matching this regex carry most of the GEMM time.
    #[serde(default)]
    pub gemm_library: Option<String>,
    /// Only when a bucket has at least this share of kernel time.
    #[serde(default)]
    pub min_bucket: Option<MinBucket>,
    /// Only on these architectures (prefixes: `gfx94` for MI300, `sm_9` for Hopper); devices
    /// whose architecture the trace does not give do not hold it back.
    #[serde(default)]
    pub archs: Vec<String>,
    /// Only while less than this share (%) of GEMM time already runs on 8-bit or narrower
    /// operands (kernels a rule tags `low_precision_gemm`).
    #[serde(default)]
    pub max_low_precision_gemm_pct: Option<f64>,
    /// Only while kernels a rule tags `tag` hold less than `pct`% of `bucket`'s time (aiter flash
    /// attention is not for paged-attention decode kernels).
    #[serde(default)]
    pub max_tag_share: Option<TagShare>,
    /// Only findings whose time at stake is at least this share (%) of the window.
    #[serde(default)]
    pub min_stake_pct: Option<f64>,
    /// Only findings whose `evidence.max_workgroups` (the largest grid of the kernels they name)
    /// reaches this, or is unknown: tile advice is for grids that fill the device (seeds/003).
    #[serde(default)]
    pub min_workgroups: Option<u64>,
    /// The facts of the analysis the advice rests on, said first in its evidence.
    #[serde(default)]
    pub because: Vec<super::Fact>,
    /// Ranked after these recommendations when they are listed too.
    #[serde(default)]
    pub after: Vec<String>,
    /// Ranked first whenever it fires (a profile that cannot support other advice).
    #[serde(default)]
    pub rank_first: bool,
    /// Offered only to jobs that use one of these parallelisms (as an action's
    /// `parallelism`); a recommendation whose every action the job's parallelism leaves out
    /// is not offered either.
    #[serde(default)]
    pub parallelism: Vec<String>,
    /// The change a replay of the step model applies to price it (`est_savings_ns`); without
    /// one, `fraction` × `basis` estimates it.
    #[serde(default)]
    pub replay: Option<crate::analysis::Transform>,
    /// Partition categories whose time the action can recover (the savings ceiling).
    pub acts_on: Vec<Category>,
    /// What `fraction` is of: the acts_on time (default) or the finding's time at stake.
    #[serde(default)]
    pub basis: Basis,
    /// Share (0-1) of the basis the action is estimated to save.
    pub fraction: f64,
    /// How sure the estimate is (0-1); ranking uses savings x confidence.
    pub confidence: f64,
    /// Where the advice comes from, shown as its source.
    pub seed: String,
    /// `action`: what to do, each with a kind, a text and an optional vendor.
    #[serde(rename = "action")]
    pub actions: Vec<ActionDef>,
    /// What can go wrong with it (per vendor), shown with it in every report.
    #[serde(default, rename = "caveat")]
    pub caveats: Vec<CaveatDef>,
}

/// What a recommendation's saving is a fraction of.
#[derive(Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Basis {
    /// The time of its `acts_on` partition categories.
    #[default]
    Categories,
    /// The largest time at stake of the findings that fired it.
    Finding,
}

/// The loaded catalog.
#[derive(Clone, Debug)]
pub struct Catalog {
    /// The ladder's levels, by number.
    pub levels: Vec<LevelDef>,
    /// The level-1 environment variables to audit.
    pub env_checks: Vec<EnvCheck>,
    /// Every recommendation; user entries replace built-in ones of the same id.
    pub recommendations: Vec<RecDef>,
    /// The fixes of each cause torch.compile's logs name.
    pub compile_fixes: CompileFixes,
    /// The replays' constants (`rules/replay.toml`).
    pub replay: crate::analysis::ReplayConstants,
    /// How sure savings are (`rules/priors.toml`).
    pub priors: super::priors::Priors,
}

impl Catalog {
    /// The built-in catalog plus `ladder.toml` in any of `dirs`.
    pub fn load(dirs: &[PathBuf]) -> Result<Catalog, RuleError> {
        let builtin = Path::new("rules/ladder.toml");
        let mut cat = parse(BUILTIN, builtin)?;
        check_ids(&cat, &cat.recommendations, builtin)?;
        if let Some(id) = crate::detect::RECOMMENDATIONS_NAMED
            .iter()
            .find(|id| cat.get(id).is_none())
        {
            return Err(RuleError::Example {
                file: builtin.into(),
                id: (*id).to_string(),
                message: "a detector names this recommendation for its fixes, and there is none"
                    .into(),
            });
        }
        if let Some(c) = FixCause::ALL
            .iter()
            .find(|c| !cat.compile_fixes.0.contains_key(c.key()))
        {
            return Err(RuleError::Parse {
                file: "rules/ladder.toml".into(),
                message: format!("compile_fixes.{} is missing", c.key()),
            });
        }
        for dir in dirs {
            let path = dir.join("ladder.toml");
            if !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&path).map_err(|source| RuleError::Read {
                file: path.clone(),
                source,
            })?;
            let user = parse(&text, &path)?;
            let theirs = user.recommendations.clone();
            for rec in user.recommendations {
                match cat.recommendations.iter_mut().find(|r| r.id == rec.id) {
                    Some(r) => *r = rec,
                    None => cat.recommendations.push(rec),
                }
            }
            cat.env_checks.extend(user.env_checks);
            for level in user.levels {
                match cat.levels.iter_mut().find(|l| l.level == level.level) {
                    Some(l) => *l = level,
                    None => cat.levels.push(level),
                }
            }
            cat.levels.sort_by_key(|l| l.level);
            // A user file's causes replace the built-in fixes of that cause.
            cat.compile_fixes.0.extend(user.compile_fixes.0);
            check_ids(&cat, &theirs, &path)?;
        }
        cat.replay = super::priors::load_replay_constants(dirs)?;
        cat.priors = super::priors::Priors::load(dirs)?;
        if let Some(p) = cat
            .priors
            .priors
            .iter()
            .find(|p| cat.get(&p.recommendation).is_none())
        {
            return Err(RuleError::Parse {
                file: "rules/priors.toml".into(),
                message: format!(
                    "a prior names '{}', which no recommendation has",
                    p.recommendation
                ),
            });
        }
        Ok(cat)
    }

    /// The recommendation with this id.
    pub fn get(&self, id: &str) -> Option<&RecDef> {
        self.recommendations.iter().find(|r| r.id == id)
    }
}

fn parse(text: &str, file: &Path) -> Result<Catalog, RuleError> {
    let f: LadderFile = toml::from_str(text).map_err(|e| RuleError::Parse {
        file: file.to_path_buf(),
        message: e.to_string(),
    })?;
    let bad = |id: &str, message: String| RuleError::Example {
        file: file.to_path_buf(),
        id: id.to_string(),
        message,
    };
    if f.schema != 1 {
        return Err(RuleError::Parse {
            file: file.to_path_buf(),
            message: format!("unknown schema {}", f.schema),
        });
    }
    for l in &f.levels {
        let mut needs: Vec<&str> = super::Verdict::of_level(l.level)
            .iter()
            .map(|v| v.key())
            .collect();
        if l.level == 1 {
            needs.push(super::ladder::FP32_ITEM);
        }
        if let Some(key) = needs.iter().find(|k| !l.says.contains_key(**k)) {
            return Err(bad(
                &format!("level {}", l.level),
                format!("says.{key} is missing (what the level's status says then)"),
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for r in &f.recommendations {
        if !seen.insert(r.id.clone()) {
            return Err(RuleError::Duplicate {
                file: file.to_path_buf(),
                id: r.id.clone(),
                first: file.to_path_buf(),
            });
        }
        if !(1..=5).contains(&r.level) {
            return Err(bad(&r.id, format!("level {} is not 1-5", r.level)));
        }
        if !(0.0..=1.0).contains(&r.fraction) || !(0.0..=1.0).contains(&r.confidence) {
            return Err(bad(
                &r.id,
                "fraction and confidence must be within 0..=1".into(),
            ));
        }
        if r.findings.is_empty() || r.actions.is_empty() || r.acts_on.is_empty() {
            return Err(bad(
                &r.id,
                "needs findings, acts_on and at least one action".into(),
            ));
        }
        if let Some(p) = &r.gemm_library {
            regex::Regex::new(p).map_err(|e| bad(&r.id, format!("gemm_library: {e}")))?;
        }
        let selectors = r
            .parallelism
            .iter()
            .chain(r.actions.iter().flat_map(|a| &a.parallelism));
        for sel in selectors {
            let kind = sel.split(':').next().unwrap_or_default();
            if serde_json::from_value::<crate::analysis::signals::parallelism::ParallelKind>(
                serde_json::Value::String(kind.to_string()),
            )
            .is_err()
            {
                return Err(bad(
                    &r.id,
                    format!("parallelism '{sel}': '{kind}' is no kind of parallelism (ddp, fsdp, hsdp, tensor, sequence, pipeline, expert, context)"),
                ));
            }
        }
    }
    if let Some(key) = f
        .compile_fixes
        .0
        .keys()
        .find(|k| !FixCause::ALL.iter().any(|c| c.key() == k.as_str()))
    {
        return Err(bad(
            "compile_fixes",
            format!("unknown cause '{key}' (known: {})", cause_keys()),
        ));
    }
    Ok(Catalog {
        levels: f.levels,
        env_checks: f.env_checks,
        recommendations: f.recommendations,
        compile_fixes: f.compile_fixes,
        replay: crate::analysis::ReplayConstants::builtin(),
        priors: super::priors::Priors::load(&[])?,
    })
}

/// Every `after` of `recs` (the recommendations of `file`) names a recommendation of the
/// catalog, and every `finding_kind` and `evidence_key` is one the named findings' evidence has.
fn check_ids(cat: &Catalog, recs: &[RecDef], file: &Path) -> Result<(), RuleError> {
    use crate::detect::Detail;
    for r in recs {
        let error = |message: String| RuleError::Example {
            file: file.to_path_buf(),
            id: r.id.clone(),
            message,
        };
        if let Some(a) = r.after.iter().find(|a| cat.get(a).is_none()) {
            return Err(error(format!("after: no recommendation has the id '{a}'")));
        }
        let named = || r.findings.iter().chain(&r.findings_if_compiled);
        if let Some(kind) = &r.finding_kind {
            let kinds: Vec<&str> = named().flat_map(|id| Detail::kinds(*id)).collect();
            if !kinds.contains(&kind.as_str()) {
                return Err(error(format!(
                    "finding_kind: the findings' evidence has no kind '{kind}' (known: {})",
                    kinds.join(", ")
                )));
            }
        }
        if let Some(key) = &r.evidence_key {
            let keys: Vec<&str> = named().flat_map(|id| Detail::keys(*id)).collect();
            if !keys.contains(&key.as_str()) {
                return Err(error(format!(
                    "evidence_key: the findings' evidence has no key '{key}' (known: {})",
                    keys.join(", ")
                )));
            }
        }
    }
    Ok(())
}

fn cause_keys() -> String {
    FixCause::ALL
        .iter()
        .map(|c| c.key())
        .collect::<Vec<_>>()
        .join(", ")
}
