//! One function per command: the analysis, `partial`, `merge`, `diff`, `rules` and `explain`.

use super::args::{
    config, load_rules, AnalysisArgs, Cli, ComputeArgs, GlobalArgs, OutputArgs, RulesAction,
};
use super::output::{
    emit, export_perfetto, export_tables, progress_bar, table_options, write_stdout, Status,
};
use crate::analysis::time::steps::StepRange;
use crate::analysis::AnalysisOptions;
use crate::detect::Severity;
use crate::ingest::Progress;
use crate::pipeline::{Config, DiffSide, Run};
use crate::recommend::Catalog;
use crate::report::{self};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

pub(super) fn run_analyze(cli: &Cli) -> Result<Status> {
    let mut run = run_inputs(
        &cli.paths,
        &cli.analysis,
        &cli.global,
        cli.trace_output.perfetto.is_some(),
    )?;
    export_tables(cli, &run)?;
    export_perfetto(cli, &run)?;
    // The reports need neither the trace nor the activity table.
    run.drop_rows();
    let json = || report::json::render(&run);
    let markdown = || report::markdown::render(&run).into_bytes();
    let html = || report::html::render(&run).into_bytes();
    let stdout_used = emit(&[
        (&cli.output.json, &json),
        (&cli.output.markdown, &markdown),
        (&cli.output.html, &html),
    ])?;
    if !stdout_used {
        write_stdout(&report::text::render(&run, &table_options(&cli.global)))?;
    }
    // CI gates: say which tripped, on stderr.
    let tripped = gates(&run, &cli.fail_on, cli.max_unclassified_pct)?;
    for t in &tripped {
        eprintln!("gate tripped: {t}");
    }
    Ok(if tripped.is_empty() { 0 } else { 1 })
}

/// The gates that trip for an analysis.
pub(super) fn gates(
    run: &Run,
    fail_on: &[String],
    max_unclassified: Option<f64>,
) -> Result<Vec<String>> {
    let mut tripped = Vec::new();
    for gate in fail_on {
        let severity = match gate.as_str() {
            "high" => Some(Severity::High),
            "medium" => Some(Severity::Medium),
            "low" => Some(Severity::Low),
            "info" => Some(Severity::Info),
            _ => None,
        };
        let id = crate::detect::FindingId::from_name(gate);
        if severity.is_none() && id.is_none() {
            bail!("--fail-on {gate}: not a severity (high, medium, low, info) or a finding id (see `rocprof-classify explain`)");
        }
        for f in &run.findings {
            let hit = match severity {
                Some(s) => f.severity <= s,
                None => Some(f.id) == id,
            };
            if hit {
                tripped.push(format!(
                    "--fail-on {gate}: {} ({}): {}",
                    f.id,
                    f.severity.as_str(),
                    f.summary
                ));
            }
        }
    }
    if let Some(max) = max_unclassified {
        if run.analysis.summary.unclassified_pct > max {
            tripped.push(format!(
                "--max-unclassified-pct {max}: {:.2}% of GPU time matched no rule",
                run.analysis.summary.unclassified_pct
            ));
        }
    }
    Ok(tripped)
}

pub(super) fn run_partial(
    paths: &[PathBuf],
    output: &Path,
    rank: Option<u32>,
    compute: &ComputeArgs,
    global: &GlobalArgs,
) -> Result<Status> {
    // What a partial does not read (top, env, logs) stays at its default.
    let args = AnalysisArgs {
        top: 20,
        compute: compute.clone(),
        env: None,
        torch_logs: Vec::new(),
        what_if: Vec::new(),
    };
    let config = config(&args, global, None)?;
    let partial = crate::pipeline::partial(paths, &config, rank)?;
    if !global.quiet {
        for input in &partial.analysis.inputs {
            for w in &input.warnings {
                eprintln!("warning: {}: {w}", input.path);
            }
        }
    }
    let bytes = partial.to_json();
    emit(&[(&Some(output.to_path_buf()), &|| bytes.clone())])?;
    Ok(0)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run_merge(
    paths: &[PathBuf],
    top: usize,
    env: Option<PathBuf>,
    output: &OutputArgs,
    fail_on: &[String],
    max_unclassified: Option<f64>,
    global: &GlobalArgs,
) -> Result<Status> {
    let mut partials = Vec::with_capacity(paths.len());
    for p in paths {
        let bytes = if p.as_os_str() == "-" {
            let mut b = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut b).context("reading stdin")?;
            b
        } else {
            std::fs::read(p).with_context(|| format!("reading {}", p.display()))?
        };
        partials.push((p.display().to_string(), bytes));
    }
    // The analysis options were the partials' own: merge reads the rules, top and env.
    let config = Config {
        analysis: AnalysisOptions {
            top,
            ..Default::default()
        },
        rule_dirs: global.rules.clone(),
        env_file: env,
        ..Default::default()
    };
    let run = crate::pipeline::merge(&partials, &config)?;
    let json = || report::json::render(&run);
    let markdown = || report::markdown::render(&run).into_bytes();
    let html = || report::html::render(&run).into_bytes();
    let stdout_used = emit(&[
        (&output.json, &json),
        (&output.markdown, &markdown),
        (&output.html, &html),
    ])?;
    if !stdout_used {
        write_stdout(&report::text::render(&run, &table_options(global)))?;
    }
    let tripped = gates(&run, fail_on, max_unclassified)?;
    for t in &tripped {
        eprintln!("gate tripped: {t}");
    }
    Ok(if tripped.is_empty() { 0 } else { 1 })
}

pub(super) fn run_diff(
    (base, new): (&PathBuf, &PathBuf),
    (args, applied): (&AnalysisArgs, &[String]),
    (base_steps, new_steps): (Option<StepRange>, Option<StepRange>),
    output: &OutputArgs,
    fail: Option<(f64, bool)>,
    global: &GlobalArgs,
) -> Result<Status> {
    let mut config = config(args, global, None)?;
    config.applied = applied.to_vec();
    let steps = (base_steps, new_steps);
    let d = crate::pipeline::diff((base, new), &config, steps, |side, path, side_config| {
        let run = run_configured(
            std::slice::from_ref(&path.to_path_buf()),
            side_config,
            global,
        );
        match side {
            DiffSide::Base => run.with_context(|| format!("analyzing the base {}", path.display())),
            DiffSide::New => run.with_context(|| format!("analyzing {}", path.display())),
        }
    })?;
    let json = || report::diff::json(&d);
    let markdown = || report::diff::markdown(&d).into_bytes();
    let html = || report::diff::html::render(&d).into_bytes();
    let stdout_used = emit(&[
        (&output.json, &json),
        (&output.markdown, &markdown),
        (&output.html, &html),
    ])?;
    if !stdout_used {
        write_stdout(report::diff::table(&d, &table_options(global)).as_bytes())?;
    }
    if let Some((pct, gate_host_time)) = fail {
        let gate = d.gate(pct, gate_host_time);
        for r in &gate.notices {
            eprintln!("--fail-on-regression {pct}: {r}");
        }
        for r in &gate.tripped {
            eprintln!("gate tripped: --fail-on-regression {pct}: {r}");
        }
        if !gate.tripped.is_empty() {
            return Ok(1);
        }
    }
    Ok(0)
}

pub(super) fn run_rules(action: RulesAction, global: &GlobalArgs) -> Result<Status> {
    match action {
        RulesAction::List => {
            let rules = load_rules(&global.rules)?;
            write_stdout(report::explain::rules_list(&rules).as_bytes())?;
            Ok(0)
        }
        RulesAction::Check { dir } => {
            let mut dirs = global.rules.clone();
            dirs.extend(dir);
            let rules = load_rules(&dirs)?;
            rules
                .check_examples(true)
                .context("checking the rules' examples")?;
            let problems = rules.check_winners();
            if !problems.is_empty() {
                for p in &problems {
                    eprintln!("error: {p}");
                }
                bail!("{} rule example(s) are won by another rule", problems.len());
            }
            let examples: usize = rules
                .rules
                .iter()
                .map(|r| r.def.matches.len() + r.def.no_match.len())
                .sum();
            write_stdout(
                format!(
                    "ok: {} rules, {} examples checked\n",
                    rules.rules.len(),
                    examples
                )
                .as_bytes(),
            )?;
            Ok(0)
        }
        RulesAction::Classify { file } => {
            let rules = load_rules(&global.rules)?;
            let text = match &file {
                Some(p) if p.as_os_str() != "-" => std::fs::read_to_string(p)
                    .with_context(|| format!("reading {}", p.display()))?,
                _ => {
                    std::io::read_to_string(std::io::stdin()).context("reading names from stdin")?
                }
            };
            write_stdout(report::explain::classified_names(&rules, &text).as_bytes())?;
            Ok(0)
        }
        RulesAction::Explain { name } => {
            let rules = load_rules(&global.rules)?;
            let out = report::explain::rule_explanation(&rules, &name);
            write_stdout(out.as_bytes())?;
            Ok(0)
        }
    }
}

pub(super) fn run_explain(id: &str, global: &GlobalArgs) -> Result<Status> {
    let catalog = Catalog::load(&global.rules).context("loading the ladder catalog")?;
    match report::explain::explain_id(&catalog, id) {
        Some(text) => write_stdout(text.as_bytes())?,
        None => bail!(
            "unknown id '{id}'; known ids: {}",
            report::explain::known_ids(&catalog).join(", ")
        ),
    }
    Ok(0)
}

/// Runs the pipeline on `paths` with a progress bar, printing what it warns about.
/// `keep_python_frames`: a Perfetto export is asked for (it shows them even without attribution).
pub(super) fn run_inputs(
    paths: &[PathBuf],
    args: &AnalysisArgs,
    global: &GlobalArgs,
    keep_python_frames: bool,
) -> Result<Run> {
    let config = Config {
        keep_python_frames,
        ..config(args, global, None)?
    };
    run_configured(paths, config, global)
}

/// [`run_inputs`] with a configuration already made (a `diff` side's); the progress bar is
/// added here.
pub(super) fn run_configured(
    paths: &[PathBuf],
    config: Config,
    global: &GlobalArgs,
) -> Result<Run> {
    let bar = progress_bar(paths, global);
    let progress = bar
        .clone()
        .map(|bar| Progress(std::sync::Arc::new(move |n| bar.inc(n))));
    let config = Config { progress, ..config };
    let result = crate::pipeline::run(paths, &config);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let run = result?;
    if !global.quiet {
        for skipped in &run.trace.skipped {
            eprintln!("warning: skipped {}: {}", skipped.path, skipped.reason);
        }
        // The readers' warnings, then what the analysis added (steps a cut left unfinished).
        for input in &run.trace.inputs {
            for w in &input.warnings {
                eprintln!("warning: {}: {w}", input.path);
            }
        }
        for (before, after) in run.trace.inputs.iter().zip(&run.analysis.inputs) {
            for w in after.warnings.iter().skip(before.warnings.len()) {
                eprintln!("warning: {}: {w}", after.path);
            }
        }
    }
    if global.timings {
        eprintln!(
            "timings: read {:.3} s ({} GPU activities, {} host events), analysis {:.3} s",
            run.timings.read.as_secs_f64(),
            run.trace.activities.len(),
            run.trace.host.len(),
            run.timings.analysis.as_secs_f64()
        );
        let stages = &run.timings.stages.list;
        if !stages.is_empty() {
            let each: Vec<String> = stages
                .iter()
                .map(|(name, d)| format!("{name} {:.1}", d.as_secs_f64() * 1e3))
                .collect();
            // Each stage's wall time; the detectors and the replays' step model run side by
            // side on more than one thread, and several ranks' stages are summed.
            eprintln!("timings: analysis stages (ms): {}", each.join(", "));
        }
    }
    Ok(run)
}
