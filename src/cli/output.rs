//! Where reports go (files or stdout, at most one there), the terminal's options, the read
//! progress bar, and the activity writers (Parquet/CSV, Perfetto).

use super::args::{use_color, Cli, GlobalArgs};
use crate::pipeline::Run;
use crate::report::{self, text::TableOptions};
use anyhow::{bail, Context, Result};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// A requested report: where it goes (`-` is stdout) and how to render it.
type Report<'a> = (&'a Option<PathBuf>, &'a dyn Fn() -> Vec<u8>);

/// Writes each requested report; at most one may go to stdout. Returns whether one did.
pub(super) fn emit(reports: &[Report]) -> Result<bool> {
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

pub(super) fn table_options(global: &GlobalArgs) -> TableOptions {
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
pub(super) const PROGRESS_MIN_BYTES: u64 = 100_000_000;

/// A read progress bar over the inputs' file bytes, or None when stderr is not a terminal, the
/// run is quiet, or the inputs are small.
pub(super) fn progress_bar(
    paths: &[PathBuf],
    global: &GlobalArgs,
) -> Option<indicatif::ProgressBar> {
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
pub(super) fn export_tables(cli: &Cli, run: &Run) -> Result<()> {
    for (path, format) in [
        (
            &cli.trace_output.export_parquet,
            report::writers::export::ExportFormat::Parquet,
        ),
        (
            &cli.trace_output.export_csv,
            report::writers::export::ExportFormat::Csv,
        ),
    ] {
        let Some(path) = path else { continue };
        let file =
            std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
        let rows = report::writers::export::write(run, format, std::io::BufWriter::new(file))
            .with_context(|| format!("writing {}", path.display()))?;
        if !cli.global.quiet {
            eprintln!("export: wrote {} ({rows} GPU activities)", path.display());
        }
    }
    if let Some(dir) = &cli.trace_output.export_parquet_dir {
        let files = report::writers::export::write_dataset(run, dir)
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
pub(super) fn export_tables(cli: &Cli, _run: &Run) -> Result<()> {
    let t = &cli.trace_output;
    if t.export_parquet.is_some() || t.export_csv.is_some() || t.export_parquet_dir.is_some() {
        bail!(
            "--export-parquet, --export-parquet-dir and --export-csv need the `polars` feature, which this build lacks"
        );
    }
    Ok(())
}

/// `--perfetto`: the run's activities, annotated, for the Perfetto UI.
pub(super) fn export_perfetto(cli: &Cli, run: &Run) -> Result<()> {
    let Some(path) = &cli.trace_output.perfetto else {
        return Ok(());
    };
    let file =
        std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
    let done = report::writers::perfetto::export(run, &cli.paths, std::io::BufWriter::new(file))?;
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

pub(super) fn terminal_width() -> Option<u16> {
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok())
}

/// Writes to stdout; a closed pipe (`| head`) is reported as an `io::Error` of kind BrokenPipe,
/// which `main` turns into a quiet exit 0.
pub(super) fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(())
}

/// Exit status: 0 ok, 1 a requested gate tripped, 2 error (returned as `Err`).
pub type Status = i32;
