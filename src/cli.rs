//! The command line: clap definitions, and `run`, which turns them into library calls. Nothing
//! below this module sees a clap type.

use crate::analysis::steps::StepRange;
use crate::analysis::AnalysisOptions;
use crate::classify::RuleSet;
use crate::detect::Severity;
use crate::ingest::Progress;
use crate::pipeline::{Config, Run};
use crate::recommend::Catalog;
use crate::report::{self, table::TableOptions};
use anyhow::{bail, Context, Result};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

const EXAMPLES: &str = "\
Examples:
  rocprof-classify trace.json.gz                 where the GPU time goes
  rocprof-classify traces/                        every rank in a directory
  rocprof-classify --json feed.json trace.json    also write the JSON feed
  rocprof-classify --json - trace.json | jq .buckets
  rocprof-classify rules explain 'Cijk_Alik_Bljk_HHS_BH_MT128x128x32'
  rocprof-classify rules check my-rules/
  rocprof-classify diff base.json.gz new.json.gz --markdown - --fail-on-regression 5
  rocprof-classify trace.json.gz --fail-on high --max-unclassified-pct 2";

/// Where a PyTorch model's GPU time goes, from torch.profiler (Kineto) traces of AMD ROCm and
/// NVIDIA CUDA runs.
#[derive(Parser, Debug)]
#[command(
    name = "rocprof-classify",
    version,
    about,
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    subcommand_precedence_over_arg = false
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Trace files (.json or .json.gz), directories (one file per rank), or - for stdin.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    #[command(flatten)]
    pub analysis: AnalysisArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub trace_output: TraceOutputArgs,

    /// Exit 1 when a finding of this severity or worse (high, medium, low, info), or with this
    /// id, fires. Repeatable.
    #[arg(long, value_name = "SEVERITY|FINDING_ID")]
    pub fail_on: Vec<String>,

    /// Exit 1 when more than this share (%) of GPU time matched no classification rule.
    #[arg(long, value_name = "P")]
    pub max_unclassified_pct: Option<f64>,

    #[command(flatten)]
    pub global: GlobalArgs,
}

/// What to analyze and how (shared by the analysis and `diff`).
#[derive(Args, Debug, Clone)]
pub struct AnalysisArgs {
    /// Number of kernels in the top-kernels table and feed.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub top: usize,

    #[command(flatten)]
    pub compute: ComputeArgs,

    /// The output of `env` on the machine that ran the trace: audits the ladder's level-1 settings.
    #[arg(long, value_name = "FILE")]
    pub env: Option<PathBuf>,

    /// torch.compile's log of the same run (TORCH_LOGS="graph_breaks,recompiles" stderr):
    /// graph breaks and recompiles get their reason, user-code line and fix. Repeatable; a log
    /// given as an input path is recognized too.
    #[arg(long, value_name = "LOG")]
    pub torch_logs: Vec<PathBuf>,
}

/// The options that change what a trace (or a rank's partial) computes: partials merge only
/// with the same.
#[derive(Args, Debug, Clone)]
pub struct ComputeArgs {
    /// Treat a truncated trace as an error instead of analyzing what was written.
    #[arg(long)]
    pub strict: bool,

    /// Read the inputs as this format instead of telling it from their content.
    #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
    pub input_format: InputFormat,

    /// Analyze only these steps: A..B (B excluded), A..=B, A.., ..B or N (ProfilerStep numbers,
    /// or iteration indices from 0 in traces without them).
    #[arg(long, value_name = "A..B")]
    pub steps: Option<StepRange>,

    /// Leave the first step (the warm-up) out of the analysis; on iterations, every iteration
    /// that is not steady state (graph capture, compile, warm-up).
    #[arg(long)]
    pub skip_warmup: bool,

    /// Take iterations from this annotation (a `record_function` name or its prefix, or a
    /// Python function with `with_stack`) instead of `ProfilerStep#N` or the marker found.
    #[arg(long, value_name = "NAME")]
    pub iteration_marker: Option<String>,

    /// Analyze only iterations of this phase.
    #[arg(long, value_enum)]
    pub phase: Option<PhaseArg>,

    /// Skip attributing GPU time to ops, modules and source lines (kernel-name buckets only;
    /// no op view, no GEMM efficiency): a little faster on huge traces.
    #[arg(long)]
    pub no_attribution: bool,

    /// Host gaps shorter than this (µs) between profiled host events count as dispatch
    /// (launch overhead); longer gaps are host idle.
    #[arg(long, value_name = "US", default_value_t = 50.0)]
    pub dispatch_threshold_us: f64,

    /// Refuse a .gz input that expands to more than this many times its size (and 256 MiB) as a
    /// decompression bomb.
    #[arg(long, value_name = "RATIO", default_value_t = crate::ingest::MAX_GUNZIP_RATIO)]
    pub max_gunzip_ratio: u64,
}

/// `--phase`: an iteration's phase.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum PhaseArg {
    Prefill,
    Decode,
    Mixed,
    Step,
}

impl PhaseArg {
    fn phase(self) -> crate::analysis::iterations::Phase {
        use crate::analysis::iterations::Phase;
        match self {
            PhaseArg::Prefill => Phase::Prefill,
            PhaseArg::Decode => Phase::Decode,
            PhaseArg::Mixed => Phase::Mixed,
            PhaseArg::Step => Phase::Step,
        }
    }
}

/// Where the reports go; `-` is stdout (only one report may go there, and then no table).
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Write the JSON feed (FEED.md) to PATH, or to stdout with `-`.
    #[arg(long, value_name = "PATH|-")]
    pub json: Option<PathBuf>,

    /// Write a GitHub-flavoured Markdown summary (for a PR comment) to PATH, or stdout with `-`.
    #[arg(long, value_name = "PATH|-")]
    pub markdown: Option<PathBuf>,

    /// Write a self-contained HTML report (inline SVG charts, no network) to PATH, or stdout with `-`.
    #[arg(long, value_name = "PATH|-")]
    pub html: Option<PathBuf>,
}

/// Outputs only a single-trace analysis has.
#[derive(Args, Debug, Clone)]
pub struct TraceOutputArgs {
    /// Write the GPU activities annotated with their classes (bucket, family, rule, step, op,
    /// in_window, findings) and the findings as instant events, for the Perfetto UI: a copy of
    /// one Kineto input, else a trace rebuilt from what was read.
    #[arg(long, value_name = "PATH")]
    pub perfetto: Option<PathBuf>,

    /// Write the classified activity table (one row per GPU activity: rank, input, device,
    /// stream, kind, start_ns, dur_ns, name, bucket, family, library, step, rule, op, module,
    /// source, in_window) as Parquet, for Spark, DuckDB or polars.
    #[arg(long, value_name = "PATH")]
    pub export_parquet: Option<PathBuf>,

    /// Write the classified activity table as a Parquet dataset partitioned by rank, Hive style
    /// (DIR/rank=N/part-0.parquet; inputs without a rank in rank=__HIVE_DEFAULT_PARTITION__),
    /// so Spark, DuckDB or polars read a whole job as one table.
    #[arg(long, value_name = "DIR")]
    pub export_parquet_dir: Option<PathBuf>,

    /// Write the classified activity table (the columns of --export-parquet) as CSV.
    #[arg(long, value_name = "PATH")]
    pub export_csv: Option<PathBuf>,
}

/// Options every command takes.
#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Directory of extra rule files (*.toml); a rule with a built-in id replaces it. Repeatable.
    #[arg(long, value_name = "DIR", global = true)]
    pub rules: Vec<PathBuf>,

    /// Worker threads (default: all cores).
    #[arg(long, value_name = "N", global = true)]
    pub threads: Option<usize>,

    /// Bytes of a trace parsed as one piece in parallel (tests vary it: output never depends
    /// on it).
    #[arg(long, value_name = "BYTES", global = true, hide = true)]
    pub piece_bytes: Option<usize>,

    /// When to color the terminal output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,

    /// No warnings or notes on stderr (errors are still printed).
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// Print how long reading, analysis and rendering took, on stderr.
    #[arg(long, global = true)]
    pub timings: bool,
}

/// `--input-format` values (the feed's `inputs[].format` names).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum InputFormat {
    Auto,
    Kineto,
    #[value(name = "rocprof-v1")]
    RocprofV1,
    #[value(name = "rocprofv2-csv")]
    RocprofV2Csv,
    #[value(name = "rocprofv3-csv")]
    RocprofV3Csv,
    #[value(name = "rocprofv3-json")]
    RocprofV3Json,
    Rocpd,
}

impl InputFormat {
    fn format(self) -> Option<crate::model::Format> {
        use crate::model::Format as F;
        match self {
            InputFormat::Auto => None,
            InputFormat::Kineto => Some(F::Kineto),
            InputFormat::RocprofV1 => Some(F::RocprofV1),
            InputFormat::RocprofV2Csv => Some(F::RocprofV2Csv),
            InputFormat::RocprofV3Csv => Some(F::RocprofV3Csv),
            InputFormat::RocprofV3Json => Some(F::RocprofV3Json),
            InputFormat::Rocpd => Some(F::Rocpd),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand, Debug)]
#[allow(clippy::large_enum_variant)] // parsed once per run
pub enum Command {
    /// List, check or explain the classification rules.
    Rules {
        #[command(subcommand)]
        action: RulesAction,
    },
    /// Print shell completions.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the JSON Schema of the feed.
    Schema,
    /// Compare two runs (files or directories, any format or vendor): a verdict on the step time
    /// (faster, slower, within_noise or too_few_steps, by Welch's t-test over the steps) with its
    /// cause, ops matched by op and shape (--top of them), buckets, time partition, kernels,
    /// findings and the ladder, before → after.
    Diff {
        /// The baseline trace.
        base: PathBuf,
        /// The trace to compare with it.
        new: PathBuf,
        #[command(flatten)]
        analysis: AnalysisArgs,
        #[command(flatten)]
        output: OutputArgs,
        /// The base's steps to compare (A..B as --steps; overrides --steps for the base).
        #[arg(long, value_name = "A..B")]
        base_steps: Option<StepRange>,
        /// The new run's steps to compare (A..B; overrides --steps for the new run).
        #[arg(long, value_name = "A..B")]
        new_steps: Option<StepRange>,
        /// Exit 1 when the step time is `slower` (Welch's t-test over the steps) by more than
        /// PCT percent, unless the change is host time alone with the same launches per step
        /// (host noise), which is reported, not gated. With fewer than 5 steps a side: when the
        /// step time or a bucket's time per step grows by more than PCT percent.
        #[arg(long, value_name = "PCT")]
        fail_on_regression: Option<f64>,
        /// Gate host-time regressions too: a slower step from launch overhead or host idle with
        /// the same launches per step and unchanged GPU work (by default: host noise, reported).
        #[arg(long, requires = "fail_on_regression")]
        gate_host_time: bool,
    },
    /// One rank's partial result (JSON), to merge with the other ranks' later, on any machine:
    /// `rocprof-classify merge` of every rank's partial gives what analyzing the rank files
    /// together gives.
    Partial {
        /// The rank's trace file(s).
        #[arg(value_name = "PATH", required = true)]
        paths: Vec<PathBuf>,
        /// Where to write it (`-`: stdout).
        #[arg(short, long, value_name = "PATH|-", default_value = "-")]
        output: PathBuf,
        /// The rank: of a file holding several, the one to take; of a trace that does not say
        /// (no `distributedInfo`), the one it is (default: the `rankN` its file name says).
        #[arg(long, value_name = "N")]
        rank: Option<u32>,
        #[command(flatten)]
        analysis: ComputeArgs,
    },
    /// Merge the ranks' partials into the job's reports (the same as analyzing the rank files
    /// together); refuses partials of another version, run or settings, and a rank given twice.
    Merge {
        /// Partials written by `rocprof-classify partial`.
        #[arg(value_name = "PARTIAL", required = true)]
        partials: Vec<PathBuf>,
        /// Number of kernels in the top-kernels table and feed.
        #[arg(long, value_name = "N", default_value_t = 20)]
        top: usize,
        /// The output of `env` on the machines that ran the job: audits the ladder's level-1 settings.
        #[arg(long, value_name = "FILE")]
        env: Option<PathBuf>,
        #[command(flatten)]
        output: OutputArgs,
        /// Exit 1 when a finding of this severity or worse, or with this id, fires. Repeatable.
        #[arg(long, value_name = "SEVERITY|FINDING_ID")]
        fail_on: Vec<String>,
        /// Exit 1 when more than this share (%) of GPU time matched no classification rule.
        #[arg(long, value_name = "P")]
        max_unclassified_pct: Option<f64>,
    },
    /// What a finding or recommendation id means: its trigger, savings model, actions and seed.
    Explain {
        /// A finding id (graph_breaks, …) or recommendation id (compile.enable, …); `recommendations`
        /// prints every recommendation as a Markdown table.
        id: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum RulesAction {
    /// Every rule: id, bucket, family, library, priority, file.
    List,
    /// Load the rules (built-in plus DIR) and check every example; exit 2 on any problem.
    Check {
        /// A directory of rule files to check with the built-in ones.
        dir: Option<PathBuf>,
    },
    /// Classify kernel names, one per line, from FILE or stdin: prints bucket, family, library,
    /// rule and name as tab-separated columns.
    Classify {
        /// A file of names, one per line (default: stdin).
        file: Option<PathBuf>,
    },
    /// Every rule that matches NAME, its priority, and which one wins.
    Explain {
        /// A kernel name as it appears in a trace (mangled names are demangled first).
        name: String,
    },
}

/// Exit status: 0 ok, 1 a requested gate tripped, 2 error (returned as `Err`).
pub type Status = i32;

fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::env::var("TERM").map_or(true, |t| t != "dumb")
        }
    }
}

fn load_rules(dirs: &[PathBuf]) -> Result<RuleSet> {
    RuleSet::load(dirs).context("loading classification rules")
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Status> {
    if let Some(n) = cli.global.threads {
        if n == 0 {
            bail!("--threads must be at least 1");
        }
        // Fails only if a pool exists already (tests calling run twice): keep that one.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
    }
    match cli.command {
        Some(Command::Rules { action }) => run_rules(action, &cli.global),
        Some(Command::Completions { shell }) => {
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "rocprof-classify", &mut std::io::stdout());
            Ok(0)
        }
        Some(Command::Schema) => {
            write_stdout(report::FEED_SCHEMA.as_bytes())?;
            Ok(0)
        }
        Some(Command::Explain { id }) => run_explain(&id, &cli.global),
        Some(Command::Partial {
            paths,
            output,
            rank,
            analysis,
        }) => run_partial(&paths, &output, rank, &analysis, &cli.global),
        Some(Command::Merge {
            partials,
            top,
            env,
            output,
            fail_on,
            max_unclassified_pct,
        }) => run_merge(
            &partials,
            top,
            env,
            &output,
            &fail_on,
            max_unclassified_pct,
            &cli.global,
        ),
        Some(Command::Diff {
            base,
            new,
            analysis,
            output,
            base_steps,
            new_steps,
            fail_on_regression,
            gate_host_time,
        }) => run_diff(
            (&base, &new),
            &analysis,
            (base_steps, new_steps),
            &output,
            fail_on_regression.map(|pct| (pct, gate_host_time)),
            &cli.global,
        ),
        None => run_analyze(&cli),
    }
}

/// The library's configuration from the command line's options.
fn config(args: &AnalysisArgs, global: &GlobalArgs, progress: Option<Progress>) -> Result<Config> {
    let c = &args.compute;
    if !(c.dispatch_threshold_us >= 0.0 && c.dispatch_threshold_us.is_finite()) {
        bail!("--dispatch-threshold-us must be a non-negative number");
    }
    Ok(Config {
        analysis: AnalysisOptions {
            top: args.top,
            steps: c.steps,
            skip_warmup: c.skip_warmup,
            attribution: !c.no_attribution,
            regions: true,
            dispatch_threshold_ns: (c.dispatch_threshold_us * 1000.0).round() as i64,
            iteration_marker: c.iteration_marker.clone(),
            phase: c.phase.map(PhaseArg::phase),
            op_series: false,
        },
        strict: c.strict,
        force_format: c.input_format.format(),
        max_gunzip_ratio: Some(c.max_gunzip_ratio),
        rule_dirs: global.rules.clone(),
        torch_logs: args.torch_logs.clone(),
        env_file: args.env.clone(),
        progress,
        cancel: None,
        keep_python_frames: false,
        piece_bytes: global.piece_bytes,
    })
}

/// Runs the pipeline on `paths` with a progress bar, printing what it warns about.
/// `keep_python_frames`: a Perfetto export is asked for (it shows them even without attribution).
fn run_inputs(
    paths: &[PathBuf],
    args: &AnalysisArgs,
    global: &GlobalArgs,
    keep_python_frames: bool,
) -> Result<Run> {
    run_configured(paths, args, global, |c| Config {
        keep_python_frames,
        ..c
    })
}

/// [`run_inputs`] with the configuration adjusted (a `diff` side's).
fn run_configured(
    paths: &[PathBuf],
    args: &AnalysisArgs,
    global: &GlobalArgs,
    adjust: impl FnOnce(Config) -> Config,
) -> Result<Run> {
    let bar = progress_bar(paths, global);
    let progress = bar
        .clone()
        .map(|bar| Progress(std::sync::Arc::new(move |n| bar.inc(n))));
    let config = adjust(config(args, global, progress)?);
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
    }
    Ok(run)
}

/// A requested report: where it goes (`-` is stdout) and how to render it.
type Report<'a> = (&'a Option<PathBuf>, &'a dyn Fn() -> Vec<u8>);

/// Writes each requested report; at most one may go to stdout. Returns whether one did.
fn emit(reports: &[Report]) -> Result<bool> {
    let to_stdout: Vec<_> = reports
        .iter()
        .filter(|(p, _)| p.as_ref().is_some_and(|p| p.as_os_str() == "-"))
        .collect();
    if to_stdout.len() > 1 {
        bail!("only one report can go to stdout (-): write the others to files");
    }
    for (path, render) in reports {
        match path {
            Some(p) if p.as_os_str() == "-" => write_stdout(&render())?,
            Some(p) => {
                std::fs::write(p, render()).with_context(|| format!("writing {}", p.display()))?
            }
            None => {}
        }
    }
    Ok(!to_stdout.is_empty())
}

fn table_options(global: &GlobalArgs) -> TableOptions {
    let width = if std::io::stdout().is_terminal() {
        terminal_width().unwrap_or(120)
    } else {
        120
    };
    TableOptions {
        color: use_color(global.color),
        width,
    }
}

/// Inputs this large get a progress bar on stderr, when stderr is a terminal.
const PROGRESS_MIN_BYTES: u64 = 100_000_000;

/// A read progress bar over the inputs' file bytes, or None when stderr is not a terminal, the
/// run is quiet, or the inputs are small.
fn progress_bar(paths: &[PathBuf], global: &GlobalArgs) -> Option<indicatif::ProgressBar> {
    if global.quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let files = crate::ingest::expand_paths(paths).ok()?;
    let total: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    (total >= PROGRESS_MIN_BYTES).then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "reading {bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    })
}

/// `--export-parquet` / `--export-csv`: the run's annotated activity table, through polars.
#[cfg(feature = "polars")]
fn export_tables(cli: &Cli, run: &Run) -> Result<()> {
    for (path, format) in [
        (
            &cli.trace_output.export_parquet,
            report::export::ExportFormat::Parquet,
        ),
        (
            &cli.trace_output.export_csv,
            report::export::ExportFormat::Csv,
        ),
    ] {
        let Some(path) = path else { continue };
        let file =
            std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
        let rows = report::export::write(run, format, std::io::BufWriter::new(file))
            .with_context(|| format!("writing {}", path.display()))?;
        if !cli.global.quiet {
            eprintln!("export: wrote {} ({rows} GPU activities)", path.display());
        }
    }
    if let Some(dir) = &cli.trace_output.export_parquet_dir {
        let files = report::export::write_dataset(run, dir)
            .with_context(|| format!("writing {}", dir.display()))?;
        if !cli.global.quiet {
            let rows: usize = files.iter().map(|f| f.1).sum();
            eprintln!(
                "export: wrote {} ({} partitions, {rows} GPU activities)",
                dir.display(),
                files.len()
            );
        }
    }
    Ok(())
}

/// Builds without polars (the fuzzing build) cannot write Parquet or CSV tables.
#[cfg(not(feature = "polars"))]
fn export_tables(cli: &Cli, _run: &Run) -> Result<()> {
    let t = &cli.trace_output;
    if t.export_parquet.is_some() || t.export_csv.is_some() || t.export_parquet_dir.is_some() {
        bail!(
            "--export-parquet, --export-parquet-dir and --export-csv need the `polars` feature, which this build lacks"
        );
    }
    Ok(())
}

/// `--perfetto`: the run's activities, annotated, for the Perfetto UI.
fn export_perfetto(cli: &Cli, run: &Run) -> Result<()> {
    let Some(path) = &cli.trace_output.perfetto else {
        return Ok(());
    };
    let file =
        std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
    let done = report::perfetto::export(run, &cli.paths, std::io::BufWriter::new(file))?;
    if !cli.global.quiet {
        eprintln!(
            "perfetto: wrote {} ({} of the input, {} events, {} GPU activities annotated, {} findings as instant events)",
            path.display(),
            if done.copied { "a copy" } else { "a rebuild" },
            done.events,
            done.annotated,
            done.findings
        );
    }
    Ok(())
}

fn run_analyze(cli: &Cli) -> Result<Status> {
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
        write_stdout(&report::table::render(&run, &table_options(&cli.global)))?;
    }
    // CI gates: say which tripped, on stderr.
    let tripped = gates(&run, &cli.fail_on, cli.max_unclassified_pct)?;
    for t in &tripped {
        eprintln!("gate tripped: {t}");
    }
    Ok(if tripped.is_empty() { 0 } else { 1 })
}

/// The gates that trip for an analysis.
fn gates(run: &Run, fail_on: &[String], max_unclassified: Option<f64>) -> Result<Vec<String>> {
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

fn run_partial(
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
fn run_merge(
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
        write_stdout(&report::table::render(&run, &table_options(global)))?;
    }
    let tripped = gates(&run, fail_on, max_unclassified)?;
    for t in &tripped {
        eprintln!("gate tripped: {t}");
    }
    Ok(if tripped.is_empty() { 0 } else { 1 })
}

fn run_diff(
    (base, new): (&PathBuf, &PathBuf),
    args: &AnalysisArgs,
    (base_steps, new_steps): (Option<StepRange>, Option<StepRange>),
    output: &OutputArgs,
    fail: Option<(f64, bool)>,
    global: &GlobalArgs,
) -> Result<Status> {
    let mut b = run_configured(std::slice::from_ref(base), args, global, |c| {
        crate::pipeline::diff_side(&c, base_steps)
    })
    .with_context(|| format!("analyzing the base {}", base.display()))?;
    b.drop_rows();
    let mut n = run_configured(std::slice::from_ref(new), args, global, |c| {
        crate::pipeline::diff_side(&c, new_steps)
    })
    .with_context(|| format!("analyzing {}", new.display()))?;
    n.drop_rows();
    let d = crate::analysis::diff::diff(&b.outcome(), &n.outcome(), args.top);
    let json = || report::diff::json(&d);
    let markdown = || report::diff::markdown(&d).into_bytes();
    let html = || report::html::render_diff(&d).into_bytes();
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

fn terminal_width() -> Option<u16> {
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok())
}

fn run_rules(action: RulesAction, global: &GlobalArgs) -> Result<Status> {
    match action {
        RulesAction::List => {
            let rules = load_rules(&global.rules)?;
            write_stdout(report::catalog::rules_list(&rules).as_bytes())?;
            Ok(0)
        }
        RulesAction::Check { dir } => {
            let mut dirs = global.rules.clone();
            dirs.extend(dir);
            let rules = load_rules(&dirs)?;
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
            write_stdout(report::catalog::classified_names(&rules, &text).as_bytes())?;
            Ok(0)
        }
        RulesAction::Explain { name } => {
            let rules = load_rules(&global.rules)?;
            let out = report::catalog::rule_explanation(&rules, &name);
            write_stdout(out.as_bytes())?;
            Ok(0)
        }
    }
}

fn run_explain(id: &str, global: &GlobalArgs) -> Result<Status> {
    let catalog = Catalog::load(&global.rules).context("loading the ladder catalog")?;
    match report::catalog::explain_id(&catalog, id) {
        Some(text) => write_stdout(text.as_bytes())?,
        None => bail!(
            "unknown id '{id}'; known ids: {}",
            report::catalog::known_ids(&catalog).join(", ")
        ),
    }
    Ok(0)
}

/// Writes to stdout; a closed pipe (`| head`) is reported as an `io::Error` of kind BrokenPipe,
/// which `main` turns into a quiet exit 0.
fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn subcommands_only_as_first_word() {
        let c = Cli::try_parse_from(["rocprof-classify", "rules", "list"]).unwrap();
        assert!(matches!(
            c.command,
            Some(Command::Rules {
                action: RulesAction::List
            })
        ));
        let c = Cli::try_parse_from(["rocprof-classify", "trace.json", "rules"]).unwrap();
        assert!(c.command.is_none());
        assert_eq!(
            c.paths,
            vec![PathBuf::from("trace.json"), PathBuf::from("rules")]
        );
    }
}
