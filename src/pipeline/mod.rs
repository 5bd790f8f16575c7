//! The whole job as one call: [`run`] reads the inputs (traces and torch.compile logs, files or
//! directories), classifies and analyzes them, runs the detectors and evaluates the ladder,
//! and hands back a [`Run`] that every output renders from. The command line, the tests, the
//! benches and the fuzz targets all call it; [`run_trace`] starts from a trace already read.

use crate::analysis::time::partition::PartitionRow;
use crate::analysis::time::steps::StepRange;
use crate::analysis::{self, ActivityTable, Analysis, AnalysisOptions, BucketRow, Stages, Summary};
use crate::classify::devices::DevicePeaks;
use crate::classify::RuleSet;
use crate::compare::{self, Diff};
use crate::detect::{self, Finding};
use crate::error::RunError;
use crate::ingest::{self, Cancel, Progress, ReadOptions};
use crate::model::compile_log::{CompileLog, LogFormat};
use crate::model::{Format, InputMeta, Trace, Vendor};
use crate::recommend::{self, Catalog, EnvListing, Plan};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod job;
pub(crate) mod partial;
pub use partial::Partial;

/// What to read and compute: plain data, no command-line types.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// How to analyze (steps, attribution, what to list).
    pub analysis: AnalysisOptions,
    /// Treat a truncated trace as an error instead of analyzing what was written.
    pub strict: bool,
    /// Read every input as this format instead of telling it from its content.
    pub force_format: Option<Format>,
    /// Decompression-bomb ratio for gzip inputs (None: the default).
    pub max_gunzip_ratio: Option<u64>,
    /// Directories of extra rule files (classification, ops, devices, ladder).
    pub rule_dirs: Vec<PathBuf>,
    /// torch.compile logs of the same run (inputs recognized as logs join these).
    pub torch_logs: Vec<PathBuf>,
    /// The output of `env` on the machine that ran the trace (the ladder's level-1 audit).
    pub env_file: Option<PathBuf>,
    /// Told how many input bytes were read.
    pub progress: Option<Progress>,
    /// Set from another thread to stop the run: reading stops at its next block and `run`
    /// returns [`RunError::Cancelled`].
    pub cancel: Option<Cancel>,
    /// Keep the Python frames of `with_stack` traces even without attribution (which alone
    /// reads them): a Perfetto export rebuilt from the trace shows them.
    pub keep_python_frames: bool,
    /// Bytes of a file parsed as one piece in parallel (None: the default). Output never
    /// depends on it; tests vary it.
    pub piece_bytes: Option<usize>,
    /// Read every Kineto event with serde, the scanner's referee (benches; output never
    /// depends on it).
    pub serde_events: bool,
    /// Recommendation ids whose changes to replay together (`--what-if`).
    pub what_if: Vec<String>,
    /// `diff --applied`: the recommendation ids applied between the two runs.
    pub applied: Vec<String>,
    /// Analyze ranks together although they look like different jobs (`--force`).
    pub force: bool,
    /// Report inputs without GPU activity instead of refusing them (`--allow-empty`).
    pub allow_empty: bool,
}

/// One rank's view (the feed's `ranks[]`).
#[derive(Clone, Debug, Serialize)]
pub struct RankView {
    /// The rank.
    pub rank: u32,
    /// Its headline numbers.
    pub summary: Summary,
    /// Its kernel time per bucket.
    pub buckets: Vec<BucketRow>,
    /// Its window's time by category.
    pub time_partition: Vec<PartitionRow>,
    /// What bounds its steps.
    pub critical_path: crate::analysis::CriticalPath,
    /// Its own findings.
    pub findings: Vec<Finding>,
}

/// How long the stages took (for `--timings`; never rendered into a report).
#[derive(Clone, Debug, Default)]
pub struct Timings {
    /// Reading the inputs.
    pub read: Duration,
    /// Analysis, detection and the plan.
    pub analysis: Duration,
    /// The analysis's own stages (summed over ranks when it analyzed several).
    pub stages: Stages,
}

/// Everything one run computed.
#[derive(Debug)]
pub struct Run {
    /// The inputs as read (empty after [`Run::drop_rows`]).
    pub trace: Trace,
    /// Per GPU activity of `trace`: what the analysis decided about it.
    pub activities: ActivityTable,
    /// The numbers every report shows.
    pub analysis: Analysis,
    /// What the detectors found, sorted (FEED.md order).
    pub findings: Vec<Finding>,
    /// Recommendations and ladder status.
    pub plan: Plan,
    /// Each rank's own view, when the inputs hold several ranks.
    pub ranks: Vec<RankView>,
    /// Detection passes this run made: one per rank analyzed here, and one for the job (a trace
    /// without several ranks is its own job: one).
    pub detect_passes: u32,
    /// The device table the analysis rated against (the built-in one, extended by `--rules`):
    /// what renderers read device peaks from.
    pub devices: Vec<DevicePeaks>,
    /// How long the stages took.
    pub timings: Timings,
}

impl Run {
    /// Frees the trace and the activity table: the reports need neither.
    pub fn drop_rows(&mut self) {
        self.trace = Trace::default();
        self.activities = ActivityTable::default();
    }

    /// What a before/after comparison reads of this run.
    pub fn outcome(&self) -> compare::Outcome<'_> {
        compare::Outcome {
            analysis: &self.analysis,
            finding_ids: self.findings.iter().map(|f| f.id).collect(),
            ladder: self
                .plan
                .ladder
                .iter()
                .map(|l| (l.level, l.name.clone(), l.status))
                .collect(),
            next_level: self.plan.next_level,
            replayed_kernels: detect::graph_replayed(&self.findings).0,
        }
    }
}

/// Reads `inputs` and does the whole analysis. Paths may be trace files, directories (one
/// file per rank, or a rocprof output directory), torch.compile logs, or `-` for stdin.
pub fn run(inputs: &[PathBuf], config: &Config) -> Result<Run, RunError> {
    let env = read_env(config)?;
    // torch.compile logs given as inputs join the trace instead of being read as one.
    let (log_inputs, paths): (Vec<PathBuf>, Vec<PathBuf>) = inputs
        .iter()
        .cloned()
        .partition(|p| ingest::is_compile_log(p));
    let logs = config
        .torch_logs
        .iter()
        .chain(&log_inputs)
        .map(|p| ingest::read_compile_log(p))
        .collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    // Compiling the rules overlaps reading the traces (it only matters once they are read).
    let (trace, loaded) = rayon::join(
        || read_traces(&paths, config),
        || -> Result<(RuleSet, Catalog), RunError> {
            Ok((
                RuleSet::load(&config.rule_dirs)?,
                Catalog::load(&config.rule_dirs)?,
            ))
        },
    );
    if config.cancel.as_ref().is_some_and(Cancel::is_set) {
        return Err(RunError::Cancelled);
    }
    let (rules, catalog) = loaded?;
    let opts = AnalysisOptions {
        what_if: what_if(&config.what_if, &catalog)?,
        launch_queue_depth: catalog.replay.launch_queue_depth.value.clone(),
        ..config.analysis.clone()
    };
    let mut trace = trace?;
    let read = started.elapsed();
    if !paths.is_empty() {
        if !config.force {
            job::check_one_job(&trace)?;
        }
        if !config.allow_empty && !job::has_gpu_work(&trace) {
            return Err(job::nothing_to_analyze(&trace));
        }
    }
    add_log_inputs(&mut trace, &logs);
    let mut run = run_trace(
        trace,
        &logs,
        !paths.is_empty(),
        &rules,
        &catalog,
        env.as_ref(),
        &opts,
    );
    if !paths.is_empty() {
        check_selection(&run.analysis, &opts)?;
    }
    if run.analysis.parts.what_if.is_some() {
        // The report's price of the same rungs together: one number in every output.
        let price = recommend::price_together(
            &config.what_if,
            &run.analysis,
            &run.findings,
            &run.plan,
            &catalog,
        );
        if let Some(w) = &mut run.analysis.parts.what_if {
            w.recommendations = config.what_if.clone();
            w.saving_ns = Some(price.ns);
            w.profiled_saving_ns = price.profiled_ns;
        }
    }
    run.timings.read = read;
    run.timings.analysis = started.elapsed() - read;
    Ok(run)
}

/// A step selection (`--steps`, `--phase`; `--skip-warmup` where the inputs have steps) that
/// kept no step is an error naming the steps the inputs have.
fn check_selection(a: &Analysis, opts: &AnalysisOptions) -> Result<(), RunError> {
    let numbers = &a.parts.step_numbers;
    let asked: Vec<String> = [
        opts.steps.map(|r| format!("--steps {r}")),
        opts.phase.map(|p| format!("--phase {p}")),
        (opts.skip_warmup && !numbers.is_empty()).then(|| "--skip-warmup".to_string()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if asked.is_empty() || a.parts.steps_per_input.iter().sum::<usize>() > 0 {
        return Ok(());
    }
    Err(RunError::EmptySelection {
        selection: asked.join(" "),
        have: job::describe_steps(numbers, a.summary.iterations.is_some()),
    })
}

/// The changes of the recommendations `ids` (`--what-if`): each must be in the catalog and
/// name a replay.
fn what_if(ids: &[String], catalog: &Catalog) -> Result<Vec<analysis::Transform>, RunError> {
    ids.iter()
        .map(|id| {
            let def = catalog.get(id).ok_or_else(|| RunError::WhatIf {
                id: id.clone(),
                why: "no recommendation has this id (rocprof-classify explain recommendations)"
                    .into(),
            })?;
            def.replay.ok_or_else(|| {
                let with: Vec<&str> = catalog
                    .recommendations
                    .iter()
                    .filter(|r| r.replay.is_some())
                    .map(|r| r.id.as_str())
                    .collect();
                RunError::WhatIf {
                    id: id.clone(),
                    why: format!(
                        "no replay models it yet; these have one: {}",
                        with.join(", ")
                    ),
                }
            })
        })
        .collect()
}

/// One rank's partial result from its trace file(s) (`rank` overrides the rank they carry):
/// what `rocprof-classify partial` writes and [`merge`] reads.
pub fn partial(
    inputs: &[PathBuf],
    config: &Config,
    rank: Option<u32>,
) -> Result<partial::Partial, RunError> {
    let refuse = |why: String| RunError::Partial {
        path: inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        why,
    };
    if !config.torch_logs.is_empty() || inputs.iter().any(|p| ingest::is_compile_log(p)) {
        return Err(refuse(
            "torch.compile logs are not read into partials: analyze the rank files together with the logs instead".into(),
        ));
    }
    let rules = RuleSet::load(&config.rule_dirs)?;
    let mut trace = read_traces(inputs, config)?;
    if config.cancel.as_ref().is_some_and(Cancel::is_set) {
        return Err(RunError::Cancelled);
    }
    if !config.allow_empty && !job::has_gpu_work(&trace) {
        return Err(job::nothing_to_analyze(&trace));
    }
    let ranks: std::collections::BTreeSet<Option<u32>> =
        trace.inputs.iter().map(|i| i.rank).collect();
    match rank {
        // A file of several ranks (merged traces): the one asked for.
        Some(r) if ranks.len() > 1 => {
            let mine: Vec<u32> = (0..trace.inputs.len() as u32)
                .filter(|&i| trace.inputs[i as usize].rank == Some(r))
                .collect();
            if mine.is_empty() {
                return Err(refuse(format!("holds no rank {r}")));
            }
            trace = trace.subset(&mine);
        }
        // A trace that does not say its rank (or says another): the one given.
        Some(r) => {
            for i in &mut trace.inputs {
                i.rank = Some(r);
            }
        }
        // One file that does not say: the rank its name says (`rank3.json`), as in a directory.
        None => {
            if let ([path], [input]) = (inputs, trace.inputs.as_mut_slice()) {
                if input.rank.is_none() {
                    input.rank = ingest::rank_in_file_name(path);
                }
            }
        }
    }
    let ranks: std::collections::BTreeSet<Option<u32>> =
        trace.inputs.iter().map(|i| i.rank).collect();
    if ranks.len() > 1 {
        return Err(refuse(format!(
            "holds {} ranks: a partial is one rank's (give --rank N to take one)",
            ranks.len()
        )));
    }
    let rank = ranks.into_iter().next().flatten();
    let opts = partial_options(&config.analysis);
    let catalog = Catalog::load(&config.rule_dirs)?;
    let (analysis, _, findings, _) = analyze_one(&trace, (&rules, &catalog), &opts, None);
    Ok(partial::Partial::new(
        rank,
        analysis,
        findings,
        partial::Settings::of(&config.analysis, &rules),
    ))
}

/// The job from its ranks' partials (`(name, bytes)` each, the name for errors), as analyzing
/// the rank files together gives it; the run holds no trace or activity rows.
pub fn merge(partials: &[(String, Vec<u8>)], config: &Config) -> Result<Run, RunError> {
    let started = Instant::now();
    let env = read_env(config)?;
    let rules = RuleSet::load(&config.rule_dirs)?;
    let catalog = Catalog::load(&config.rule_dirs)?;
    let decoded = partials
        .iter()
        .map(|(name, bytes)| partial::Partial::from_json(bytes, name))
        .collect::<Result<Vec<_>, _>>()?;
    let settings = partial::Settings::of(&config.analysis, &rules);
    if let Some((i, _)) = decoded
        .iter()
        .enumerate()
        .find(|(_, p)| p.settings.rules != settings.rules)
    {
        return Err(RunError::Partial {
            path: partials[i].0.clone(),
            why: "analyzed with other rules than this merge: give merge the --rules the partials were written with".into(),
        });
    }
    let names: Vec<String> = partials.iter().map(|p| p.0.clone()).collect();
    let merged = partial::merge(decoded, &names, &rules, config.analysis.top, Vec::new())?;
    let plan = recommend::plan(&merged.analysis, &merged.findings, &catalog, env.as_ref());
    Ok(Run {
        trace: Trace::default(),
        activities: ActivityTable::default(),
        analysis: merged.analysis,
        findings: merged.findings,
        plan,
        ranks: merged.ranks,
        devices: rules.devices.clone(),
        detect_passes: 1,
        timings: Timings {
            analysis: started.elapsed(),
            ..Timings::default()
        },
    })
}

/// The `env` listing of the machine that ran the trace (`--env`), parsed.
fn read_env(config: &Config) -> Result<Option<EnvListing>, RunError> {
    let Some(p) = &config.env_file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(p).map_err(|source| RunError::Env {
        path: p.display().to_string(),
        source,
    })?;
    Ok(Some(recommend::parse_env(&text)))
}

fn read_traces(paths: &[PathBuf], config: &Config) -> Result<Trace, RunError> {
    if paths.is_empty() {
        // The logs alone: what they say, without a trace to join.
        return Ok(Trace::default());
    }
    let opts = ReadOptions {
        strict: config.strict,
        force: config.force_format,
        progress: config.progress.clone(),
        cancel: config.cancel.clone(),
        max_gunzip_ratio: config.max_gunzip_ratio,
        // Without attribution nothing reads the Python frames: dropped as they are read.
        skip_python_frames: !config.analysis.attribution && !config.keep_python_frames,
        piece_bytes: config.piece_bytes,
        serde_events: config.serde_events,
        ..Default::default()
    };
    Ok(ingest::read_all(paths, &opts)?)
}

/// The logs are inputs too (after the traces; they hold no rows).
fn add_log_inputs(trace: &mut Trace, logs: &[CompileLog]) {
    for log in logs {
        trace.inputs.push(InputMeta {
            path: log.path.clone(),
            format: match log.format {
                LogFormat::TorchLogs => Format::TorchLogs,
                LogFormat::TorchTrace => Format::TorchTrace,
            },
            vendor: Vendor::Unknown,
            devices: Vec::new(),
            rank: None,
            truncated: false,
            warnings: log.warnings.clone(),
            hardware: None,
            base_time_ns: None,
            distributed: None,
        });
    }
}

/// The analysis of a trace already read: `logs` are torch.compile logs of the same run
/// (`has_trace` false when the logs came alone, with nothing to join them to).
pub fn run_trace(
    trace: Trace,
    logs: &[CompileLog],
    has_trace: bool,
    rules: &RuleSet,
    catalog: &Catalog,
    env: Option<&EnvListing>,
    opts: &AnalysisOptions,
) -> Run {
    let joined = (!logs.is_empty())
        .then(|| analysis::compile::logs::join(logs, has_trace.then_some(&trace)));
    let logs = joined.as_ref().map(|j| (j, &catalog.compile_fixes));
    let a = analyze_all(&trace, (rules, catalog), opts, logs);
    let plan = recommend::plan(&a.analysis, &a.findings, catalog, env);
    Run {
        trace,
        activities: a.table,
        analysis: a.analysis,
        findings: a.findings,
        plan,
        ranks: a.ranks,
        devices: rules.devices.clone(),
        detect_passes: a.passes,
        timings: Timings {
            stages: a.stages,
            ..Timings::default()
        },
    }
}

/// The analysis and findings of one trace (or one rank's part of it): one detection pass over
/// its complete analysis.
fn analyze_one(
    trace: &Trace,
    (rules, catalog): (&RuleSet, &Catalog),
    opts: &AnalysisOptions,
    logs: Option<detect::CompileLogs>,
) -> (Analysis, ActivityTable, Vec<Finding>, Stages) {
    let mut ctx = analysis::prepare(trace, rules, opts);
    let mut stages = std::mem::take(&mut ctx.stages);
    let models = std::mem::take(&mut ctx.path_models);
    // The step model, while the context holds what it is built from; replayed once the
    // findings say which changes the plan prices.
    let constants = catalog.replay.clone();
    let wanted = |findings: &[Finding]| {
        recommend::wants_replays(findings, catalog) || !opts.what_if.is_empty()
    };
    let (findings, replayer) = if rayon::current_num_threads() > 1 {
        // Built beside the detectors: the bound's path without the profiler replays it, and
        // most traces have a finding it prices.
        // Its dependency models are built again there, beside the detectors: held from the
        // critical path on instead, they raised the compact 2 GB replica's peak RSS from 323
        // to 350 MB (medians of 6 runs).
        drop(models);
        let ((findings, detecting), (replayer, modelling)) = rayon::join(
            || timed(|| detect::detect(&ctx, logs)),
            || timed(|| analysis::Replayer::new(&ctx, &constants)),
        );
        stages.add("detect", detecting);
        stages.add("replays' step model", modelling);
        (findings, replayer)
    } else {
        let (findings, detecting) = timed(|| detect::detect(&ctx, logs));
        stages.add("detect", detecting);
        let (replayer, modelling) =
            timed(|| analysis::Replayer::from_models(&ctx, models, &constants));
        stages.add("replays' step model", modelling);
        (findings, replayer)
    };
    let (mut analysis, table) = ctx.finish();
    let replaying = Instant::now();
    // A comparison and a what-if also replay each change with the profiler's cost kept: what
    // the profiled run after it can confirm.
    let replayer = match opts.replay_profiled || !opts.what_if.is_empty() {
        true => replayer.with_profiled_arm(),
        false => replayer,
    };
    if wanted(&findings) {
        analysis.parts.replays =
            recommend::replays(&analysis, &findings, catalog, &|set| replayer.replay(set));
        if !opts.what_if.is_empty() {
            // The what-if's own set, priced as the plan prices a rung.
            if analysis.parts.replays.get(&opts.what_if).is_none() {
                let set = replayer.replay(&opts.what_if);
                analysis.parts.replays.sets.push(set);
                analysis
                    .parts
                    .replays
                    .sets
                    .sort_by(|x, y| x.transforms.cmp(&y.transforms));
            }
            analysis.parts.what_if = Some(replayer.what_if(&opts.what_if));
        }
    }
    stages.add("replays", replaying.elapsed());
    // What bounds the step the user times: its path replayed without the profiler's cost.
    let bounding = Instant::now();
    if analysis.critical_path.ns > 0 {
        let path = &analysis.critical_path;
        analysis.critical_path.without_profiler = replayer
            .unprofiled_paths()
            .and_then(|steps| analysis::path_without_profiler(trace, steps, path, opts.top))
            .map(Box::new);
    }
    stages.add("path without the profiler", bounding.elapsed());
    (analysis, table, findings, stages)
}

/// `f`'s result and how long it took.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let out = f();
    (out, started.elapsed())
}

/// [`analyze_one`] of the whole trace; when it holds several ranks, each rank's partial (in
/// parallel) merged into the job ([`partial::merge`]), each partial encoded and decoded as a
/// file would be, so that merging written partials gives the same bytes.
fn analyze_all(
    trace: &Trace,
    (rules, catalog): (&RuleSet, &Catalog),
    opts: &AnalysisOptions,
    logs: Option<detect::CompileLogs>,
) -> Analyzed {
    use rayon::prelude::*;
    let mut ranks: BTreeMap<Option<u32>, Vec<u32>> = BTreeMap::new();
    for (i, input) in trace.inputs.iter().enumerate() {
        ranks.entry(input.rank).or_default().push(i as u32);
    }
    if ranks.keys().flatten().count() <= 1 {
        let (analysis, table, findings, stages) = analyze_one(trace, (rules, catalog), opts, logs);
        return Analyzed {
            analysis,
            table,
            findings,
            ranks: Vec::new(),
            passes: 1,
            stages,
        };
    }
    // Inputs without a rank (torch.compile logs, a stray trace) are one more part, merged last.
    let mut groups: Vec<(Option<u32>, Vec<u32>)> = ranks.into_iter().collect();
    let unranked_first = usize::from(groups[0].0.is_none());
    groups.rotate_left(unranked_first);
    let settings = partial::Settings::of(opts, rules);
    let rank_opts = partial_options(opts);
    let parts: Vec<RankPart> = groups
        .into_par_iter()
        .map(|(rank, inputs)| {
            let (subset, cutting) = timed(|| trace.subset(&inputs));
            let (a, table, findings, mut stages) =
                analyze_one(&subset, (rules, catalog), &rank_opts, None);
            stages.add("rank subsets", cutting);
            let (p, encoding) = timed(|| {
                let p = partial::Partial::new(rank, a, findings, settings.clone());
                // Through JSON, as a file carries it (one holding a non-finite float from a
                // corrupt counter, which JSON cannot, is kept as it is rather than failing).
                partial::Partial::from_json(&p.to_json(), "(in memory)").unwrap_or(p)
            });
            stages.add("partials through JSON", encoding);
            (p, (table, inputs), stages)
        })
        .collect();
    // The ranks' stages summed (they ran side by side), then the merge.
    let mut stages = Stages::start();
    let (mut partials, mut tables) = (Vec::new(), Vec::new());
    for (p, t, s) in parts {
        partials.push(p);
        tables.push(t);
        stages.add_all(&s);
    }
    let rank_passes = partials.len() as u32;
    let skipped = trace.skipped.clone();
    let merged = partial::merge_in_rank_order(partials, rules, (opts.top, skipped), logs);
    let table = ActivityTable::stitch(trace, tables);
    stages.lap("merge ranks");
    Analyzed {
        analysis: merged.analysis,
        table,
        findings: merged.findings,
        ranks: merged.ranks,
        passes: rank_passes + 1,
        stages,
    }
}

/// One rank's analysis as a partial, its activity table and inputs, and its stages.
type RankPart = (partial::Partial, (ActivityTable, Vec<u32>), Stages);

/// What [`analyze_all`] computed.
struct Analyzed {
    analysis: Analysis,
    table: ActivityTable,
    findings: Vec<Finding>,
    ranks: Vec<RankView>,
    /// Detection passes: one per rank, and one for the job.
    passes: u32,
    stages: Stages,
}

/// Which run of a comparison is being analyzed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffSide {
    /// The run compared against (before).
    Base,
    /// The run being judged (after).
    New,
}

/// Compares two runs (`rocprof-classify diff`, Python's `diff`): each side is analyzed by
/// `analyze` with its own configuration (every kernel kept, each op's GPU time per step, the
/// side's own steps where given), freed of its rows, and the two compared with
/// `config.analysis.top` op rows. `analyze` is [`run`] or a caller's wrapper of it (a progress
/// bar, warnings on stderr).
pub fn diff<E: From<RunError>>(
    (base, new): (&Path, &Path),
    config: &Config,
    (base_steps, new_steps): (Option<StepRange>, Option<StepRange>),
    mut analyze: impl FnMut(DiffSide, &Path, Config) -> Result<Run, E>,
) -> Result<Diff, E> {
    let catalog = Catalog::load(&config.rule_dirs).map_err(RunError::from)?;
    if let Some(id) = config.applied.iter().find(|id| catalog.get(id).is_none()) {
        return Err(RunError::WhatIf {
            id: id.clone(),
            why: "--applied: no recommendation has this id (rocprof-classify explain recommendations)".into(),
        }
        .into());
    }
    let mut b = analyze(DiffSide::Base, base, diff_side(config, base_steps))?;
    b.drop_rows();
    let mut n = analyze(DiffSide::New, new, diff_side(config, new_steps))?;
    n.drop_rows();
    let mut d = compare::diff(&b.outcome(), &n.outcome(), config.analysis.top);
    d.applied = compare::applied(
        (&b.analysis, &b.findings, &b.plan),
        &n.analysis,
        &config.applied,
        &catalog,
    );
    Ok(d)
}

/// What one side of a `diff` is analyzed with: every kernel (so the kernel lists are complete),
/// each op's GPU time per step (the op rows' samples), and the side's own steps
/// (`--base-steps`/`--new-steps`) where given.
fn diff_side(config: &Config, steps: Option<StepRange>) -> Config {
    let mut c = config.clone();
    c.analysis.top = usize::MAX;
    c.analysis.op_series = true;
    c.analysis.replay_profiled = true;
    if steps.is_some() {
        c.analysis.steps = steps;
    }
    c
}

/// What a rank is analyzed with for its partial: with the region tree, which the job's is
/// merged from.
pub fn partial_options(opts: &AnalysisOptions) -> AnalysisOptions {
    AnalysisOptions {
        regions: true,
        ..opts.clone()
    }
}
