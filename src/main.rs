//! The `rocprof-classify` binary: parse the command line, run, map the outcome to an exit code.
//! This is the only place that exits.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = rocprof_classify::cli::Cli::parse();
    match rocprof_classify::cli::run(cli) {
        Ok(status) => ExitCode::from(status as u8),
        Err(e) => {
            // `| head` closing stdout is not an error (ripgrep does the same).
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
