//! A rank's partial result and the merge of several: what lets the ranks of one job be
//! analyzed on many machines. `rocprof-classify partial` writes one [`Partial`] per rank file;
//! `rocprof-classify merge` reads them and produces the job's outputs. Analyzing several rank
//! files in one process goes the same way (each rank's partial, encoded and decoded as a file
//! would be, then [`merge`]), so the two cannot drift apart.
//!
//! The format is JSON (docs/guide/several-ranks.md); its [`PARTIAL_VERSION`]
//! changes whenever a field or a definition does, and partials of another version, of another
//! run, of other settings, or of a rank already given are refused.

use super::RankView;
use crate::analysis::{output::Parts, Analysis, AnalysisOptions};
use crate::classify::RuleSet;
use crate::detect::{self, Finding};
use crate::error::RunError;
use crate::model::{Distributed, InputMeta, SkippedFile};
use serde::{Deserialize, Serialize};

/// What every partial says it is.
pub const PARTIAL_FORMAT: &str = "rocprof-classify-partial";
/// Bumped on any change of a field or of what a number means.
pub const PARTIAL_VERSION: u32 = 10;

/// The options a rank was analyzed with: partials merge only with the same.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// `--steps A..B` as given (start, exclusive end).
    pub steps: Option<(Option<u64>, Option<u64>)>,
    pub skip_warmup: bool,
    pub dispatch_threshold_ns: i64,
    pub attribution: bool,
    /// `--iteration-marker` and `--phase`.
    pub iteration_marker: Option<String>,
    pub phase: Option<crate::analysis::time::phases::Phase>,
    /// `--flex-density` as given (a string: settings compare exactly).
    #[serde(default)]
    pub flex_density: Option<String>,
    /// FNV-1a over the loaded rules: classification, op and library rules, device table.
    pub rules: String,
}

impl Settings {
    pub fn of(opts: &AnalysisOptions, rules: &RuleSet) -> Settings {
        // Everything the rules decide with: each rule as loaded (pattern, bucket, priority, tag,
        // library …) in load order, the op rules, the library table, the device peaks (MFU, the
        // collectives' link bandwidth). Their files' paths are left out: the same rules read from
        // another directory are the same rules.
        let defs: Vec<&crate::classify::rules::RuleDef> =
            rules.rules.iter().map(|r| &r.def).collect();
        let libraries: Vec<_> = rules.libraries.iter().map(|l| &l.def).collect();
        let text = format!(
            "{defs:?}{:?}{libraries:?}{:?}",
            rules.ops.rules, rules.devices
        );
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        Settings {
            steps: opts.steps.map(|s| (s.start, s.end)),
            skip_warmup: opts.skip_warmup,
            dispatch_threshold_ns: opts.dispatch_threshold_ns,
            attribution: opts.attribution,
            iteration_marker: opts.iteration_marker.clone(),
            phase: opts.phase,
            flex_density: opts.flex_density.map(|d| d.to_string()),
            rules: format!("{h:016x}"),
        }
    }
}

/// One rank's partial result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Partial {
    /// `PARTIAL_FORMAT`.
    pub format: String,
    /// `PARTIAL_VERSION`: the layout of this file.
    pub version: u32,
    /// The version of the tool that wrote it: definitions change between versions.
    pub tool_version: String,
    /// The analysis settings it was made with: partials merge only under the same ones.
    pub settings: Settings,
    /// What the job's ranks share (Kineto's `distributedInfo` less the rank): partials of one
    /// run only merge.
    pub run: Option<Distributed>,
    /// None: an input without a rank.
    pub rank: Option<u32>,
    /// The rank's own analysis.
    pub analysis: Analysis,
    /// What merging needs beyond the analysis' feed blocks.
    pub parts: Parts,
    /// The rank's findings, before the job's merge.
    pub findings: Vec<Finding>,
}

impl Partial {
    /// The partial of one rank's analysis.
    pub fn new(
        rank: Option<u32>,
        mut analysis: Analysis,
        findings: Vec<Finding>,
        settings: Settings,
    ) -> Partial {
        let parts = std::mem::take(&mut analysis.parts);
        Partial {
            format: PARTIAL_FORMAT.to_string(),
            version: PARTIAL_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            settings,
            run: run_identity(&analysis.inputs),
            rank,
            analysis,
            parts,
            findings,
        }
    }

    /// The partial as the JSON file `--partial` writes.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a partial serializes")
    }

    /// Reads a partial; `path` names it in errors.
    pub fn from_json(bytes: &[u8], path: &str) -> Result<Partial, RunError> {
        let bad = |why: String| RunError::Partial {
            path: path.to_string(),
            why,
        };
        // The header first, so another version says so rather than failing on a field.
        #[derive(Deserialize)]
        struct Header {
            format: Option<String>,
            version: Option<u32>,
            tool_version: Option<String>,
        }
        let head: Header = serde_json::from_slice(bytes).map_err(|e| {
            bad(format!(
                "not a partial: {e} (byte {})",
                byte_offset(bytes, e.line(), e.column())
            ))
        })?;
        if head.format.as_deref() != Some(PARTIAL_FORMAT) {
            return Err(bad(format!(
                "not a partial (its \"format\" is not \"{PARTIAL_FORMAT}\"; write one with `rocprof-classify partial`)"
            )));
        }
        if head.version != Some(PARTIAL_VERSION) {
            return Err(bad(format!(
                "partial format version {} but this rocprof-classify reads version {PARTIAL_VERSION}: write the partials again with this version",
                head.version.map_or("(none)".to_string(), |v| v.to_string())
            )));
        }
        let tool = env!("CARGO_PKG_VERSION");
        if head.tool_version.as_deref() != Some(tool) {
            return Err(bad(format!(
                "written by rocprof-classify {} but this is {tool}: write the partials again with this version",
                head.tool_version.as_deref().unwrap_or("(unknown)")
            )));
        }
        let mut p: Partial = serde_json::from_slice(bytes).map_err(|e| {
            bad(format!(
                "{e} (byte {})",
                byte_offset(bytes, e.line(), e.column())
            ))
        })?;
        p.check()
            .map_err(|why| bad(format!("inconsistent partial: {why}")))?;
        for (row, &input) in p.analysis.memory.iter_mut().zip(&p.parts.memory_inputs) {
            row.input = input;
        }
        p.analysis.tagged_ns = p.parts.tagged_ns.clone();
        Ok(p)
    }
}

impl Partial {
    /// What the merge indexes by is in range: per-input lists have one entry per input, and
    /// every input a row names exists (an edited or damaged file is refused, not trusted).
    fn check(&self) -> Result<(), String> {
        let n = self.analysis.inputs.len();
        let p = &self.parts;
        for (name, len) in [
            ("parts.loads", p.loads.len()),
            ("parts.has_steps", p.has_steps.len()),
            ("parts.steps_per_input", p.steps_per_input.len()),
        ] {
            if len != n {
                return Err(format!("{name} has {len} entries for {n} inputs"));
            }
        }
        if !p.flops.is_empty() && p.flops.len() != n {
            return Err(format!(
                "parts.flops has {} entries for {n} inputs",
                p.flops.len()
            ));
        }
        if p.memory_inputs.len() != self.analysis.memory.len() {
            return Err("parts.memory_inputs does not match analysis.memory".into());
        }
        let inputs = p
            .memory_inputs
            .iter()
            .chain(p.calls.iter().map(|c| &c.input))
            .chain(p.counters.iter().map(|c| &c.input));
        if let Some(bad) = inputs.copied().find(|&i| i as usize >= n) {
            return Err(format!("a row names input {bad} of {n}"));
        }
        if p.compile.step_regions.len() != p.compile.step_item_calls.len() {
            return Err("parts.compile's step lists differ in length".into());
        }
        Ok(())
    }
}

/// The byte offset of a (1-based) line and column.
fn byte_offset(bytes: &[u8], line: usize, column: usize) -> usize {
    let start: usize = bytes
        .split(|&b| b == b'\n')
        .take(line.saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    start + column.saturating_sub(1)
}

/// What the inputs' `distributedInfo` says of their run (the first input that has one).
fn run_identity(inputs: &[InputMeta]) -> Option<Distributed> {
    inputs.iter().find_map(|i| i.distributed.clone())
}

/// What the job's partials merge into.
pub struct Merged {
    pub analysis: Analysis,
    pub findings: Vec<Finding>,
    pub ranks: Vec<RankView>,
}

/// The job from its ranks' partials, in any order (`paths` name them in errors; they merge by
/// rank, a partial without one last). Refuses partials of other settings or runs, and a rank
/// given twice.
pub fn merge(
    partials: Vec<Partial>,
    paths: &[String],
    rules: &RuleSet,
    top: usize,
    skipped_files: Vec<SkippedFile>,
) -> Result<Merged, RunError> {
    let mut order: Vec<usize> = (0..partials.len()).collect();
    order.sort_by_key(|&i| (partials[i].rank.is_none(), partials[i].rank, i));
    let path = |i: usize| {
        paths
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("partial {i}"))
    };
    let refuse = |i: usize, why: String| RunError::Partial { path: path(i), why };
    let Some(&first) = order.first() else {
        return Err(RunError::Partial {
            path: "(merge)".into(),
            why: "no partials to merge".into(),
        });
    };
    for w in order.windows(2) {
        let (a, b) = (&partials[w[0]], &partials[w[1]]);
        if a.rank == b.rank {
            return Err(refuse(
                w[1],
                match b.rank {
                    Some(r) => format!("rank {r} is given twice (also {})", path(w[0])),
                    None => format!(
                        "has no rank, like {}: write the partials with --rank N",
                        path(w[0])
                    ),
                },
            ));
        }
    }
    let base = &partials[first];
    for &i in &order[1..] {
        let p = &partials[i];
        if p.settings != base.settings {
            return Err(refuse(
                i,
                format!(
                    "analyzed with other settings than {} (steps, warm-up, dispatch threshold, attribution or rules): write the partials with the same options",
                    path(first)
                ),
            ));
        }
        if let Some(field) = run_difference(base.run.as_ref(), p.run.as_ref()) {
            return Err(refuse(
                i,
                format!(
                    "from another run than {}: its distributedInfo {field} differs",
                    path(first)
                ),
            ));
        }
    }
    for &i in &order {
        let p = &partials[i];
        if let (Some(r), Some(n)) = (p.rank, p.run.as_ref().and_then(|r| r.world_size)) {
            if r >= n {
                return Err(refuse(i, format!("rank {r} is outside world_size {n}")));
            }
        }
    }
    let mut ordered: Vec<Partial> = Vec::with_capacity(partials.len());
    let mut slots: Vec<Option<Partial>> = partials.into_iter().map(Some).collect();
    for i in order {
        ordered.push(slots[i].take().expect("each partial once"));
    }
    Ok(merge_in_rank_order(
        ordered,
        rules,
        (top, skipped_files),
        None,
    ))
}

/// The first field of `distributedInfo` two runs differ in.
pub(crate) fn run_difference(
    a: Option<&Distributed>,
    b: Option<&Distributed>,
) -> Option<&'static str> {
    let (a, b) = match (a, b) {
        (None, None) => return None,
        (Some(a), Some(b)) => (a, b),
        _ => return Some("(present on one only)"),
    };
    // Not `pg_count`: a rank counts the groups it belongs to, which differ by rank (tensor and
    // pipeline groups); the default group every rank writes alike.
    if a.backend != b.backend {
        Some("backend")
    } else if a.world_size != b.world_size {
        Some("world_size")
    } else if a.nccl_version != b.nccl_version {
        Some("nccl_version")
    } else if a.default_group != b.default_group {
        Some("pg_config (the default group)")
    } else {
        None
    }
}

/// [`merge`] of partials already in rank order (one without a rank last), unchecked: the
/// ranks of traces read together in one process, which are analyzed together whatever their
/// runs.
pub(crate) fn merge_in_rank_order(
    mut partials: Vec<Partial>,
    rules: &RuleSet,
    (top, skipped_files): (usize, Vec<SkippedFile>),
    logs: Option<detect::CompileLogs>,
) -> Merged {
    for p in &mut partials {
        p.analysis.parts = std::mem::take(&mut p.parts);
    }
    let views: Vec<RankView> = partials
        .iter()
        .filter_map(|p| {
            Some(RankView {
                rank: p.rank?,
                summary: p.analysis.summary.clone(),
                buckets: p.analysis.buckets.clone(),
                time_partition: p.analysis.time_partition.clone(),
                critical_path: p.analysis.critical_path.clone(),
                findings: p.findings.clone(),
            })
        })
        .collect();
    if partials.len() == 1 {
        // One rank is its own job.
        let p = partials.pop().expect("one partial");
        let mut analysis = p.analysis;
        analysis.top_kernels = crate::analysis::merge::top_kernels(&analysis, top);
        analysis.skipped_files = skipped_files;
        return Merged {
            analysis,
            findings: p.findings,
            ranks: Vec::new(),
        };
    }
    let analyses: Vec<&Analysis> = partials.iter().map(|p| &p.analysis).collect();
    let mut analysis = crate::analysis::merge::merge(&analyses, &rules.devices, top);
    analysis.skipped_files = skipped_files;
    let per_rank: Vec<(Option<u32>, &[Finding])> = partials
        .iter()
        .map(|p| (p.rank, p.findings.as_slice()))
        .collect();
    let findings = detect::merge(&per_rank, &analysis, logs);
    // Each rank's path with its collectives' waits for the others split out.
    let mut views = views;
    for v in &mut views {
        if let Some((_, path)) = analysis.parts.rank_paths.iter().find(|(r, _)| *r == v.rank) {
            v.critical_path = path.clone();
        }
    }
    Merged {
        analysis,
        findings,
        ranks: views,
    }
}
