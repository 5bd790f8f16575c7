//! The clap definitions: the analysis's arguments and every subcommand's.

use crate::analysis::time::steps::StepRange;
use crate::analysis::AnalysisOptions;
use crate::classify::RuleSet;
use crate::ingest::Progress;
use crate::pipeline::Config;
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;

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

    /// Replay the step with these recommendations' changes together (ids, comma-separated, e.g.
    /// compile.enable,graphs.capture) and print the replayed step and its critical path.
    #[arg(long, value_name = "ID[,ID...]", value_delimiter = ',')]
    pub what_if: Vec<String>,

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

    /// The share (0 to 1] of query-key blocks that flex attention's block masks keep (a
    /// causal mask: about 0.5; `BlockMask.sparsity()` gives 100 x (1 - density)). The trace
    /// does not record it: without it flex attention counts dense and MFU is an upper bound.
    #[arg(long, value_name = "F")]
    pub flex_density: Option<f64>,

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

    /// Analyze ranks together although they look like different jobs (another world size,
    /// backend or NCCL version in their distributedInfo, a rank given twice, recorded apart in
    /// time), which is otherwise an error.
    #[arg(long)]
    pub force: bool,

    /// Report inputs that hold no GPU activity instead of exiting 3 (nothing to analyze).
    #[arg(long)]
    pub allow_empty: bool,
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
    fn phase(self) -> crate::analysis::time::phases::Phase {
        use crate::analysis::time::phases::Phase;
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

    /// Read every Kineto event with serde, the scanner's referee (benches and tests: output
    /// never depends on it).
    #[arg(long, global = true, hide = true)]
    pub serde_events: bool,

    /// When to color the terminal output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,

    /// No warnings or notes on stderr (errors are still printed).
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// Print how long reading and each stage of the analysis took, on stderr.
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
        /// (host noise), which is reported, not gated. With fewer than 3 steps a side: when the
        /// step time or a bucket's time per step grows by more than PCT percent.
        #[arg(long, value_name = "PCT")]
        fail_on_regression: Option<f64>,
        /// Gate host-time regressions too: a slower step from launch overhead or host idle with
        /// the same launches per step and unchanged GPU work (by default: host noise, reported).
        #[arg(long, requires = "fail_on_regression")]
        gate_host_time: bool,
        /// The recommendations applied between the two runs (ids, comma-separated): report the
        /// saving the base run predicted for them beside the one measured, and whether it fell
        /// inside the predicted range.
        #[arg(long, value_name = "ID[,ID...]", value_delimiter = ',')]
        applied: Vec<String>,
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

pub(super) fn use_color(choice: ColorChoice) -> bool {
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

pub(super) fn load_rules(dirs: &[PathBuf]) -> Result<RuleSet> {
    RuleSet::load(dirs).context("loading classification rules")
}

/// The library's configuration from the command line's options.
pub(super) fn config(
    args: &AnalysisArgs,
    global: &GlobalArgs,
    progress: Option<Progress>,
) -> Result<Config> {
    let c = &args.compute;
    if !(c.dispatch_threshold_us >= 0.0 && c.dispatch_threshold_us.is_finite()) {
        bail!("--dispatch-threshold-us must be a non-negative number");
    }
    if let Some(d) = c.flex_density {
        if !(d > 0.0 && d <= 1.0) {
            bail!("--flex-density must be in (0, 1], the share of blocks the mask keeps; got {d}");
        }
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
            what_if: Vec::new(),
            replay_profiled: false,
            flex_density: c.flex_density,
            ..Default::default()
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
        serde_events: global.serde_events,
        what_if: args.what_if.clone(),
        applied: Vec::new(),
        force: c.force,
        allow_empty: c.allow_empty,
    })
}
