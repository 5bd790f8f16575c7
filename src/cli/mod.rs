//! The command line: clap definitions (`args`), and `run`, which turns them into library
//! calls (`commands`, one per subcommand) and routes what they render (`output`). Nothing
//! below this module sees a clap type.

mod args;
mod commands;
mod output;

pub use args::*;
pub use output::Status;

use crate::report::{self};
use anyhow::{bail, Result};
use clap::CommandFactory;
use commands::{run_analyze, run_diff, run_explain, run_merge, run_partial, run_rules};
use output::write_stdout;

/// The exit code an error ends the process with: the pipeline's own
/// ([`crate::error::RunError::exit_code`]: 3 for inputs without GPU activity), else 2.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    e.chain()
        .find_map(|c| c.downcast_ref::<crate::error::RunError>())
        .map_or(crate::error::EXIT_ERROR, crate::error::RunError::exit_code)
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
            write_stdout(report::json::FEED_SCHEMA.as_bytes())?;
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
            applied,
        }) => run_diff(
            (&base, &new),
            (&analysis, &applied),
            (base_steps, new_steps),
            &output,
            fail_on_regression.map(|pct| (pct, gate_host_time)),
            &cli.global,
        ),
        None => run_analyze(&cli),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::PathBuf;

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
