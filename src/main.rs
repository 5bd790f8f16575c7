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
            // The chain, without repeating what an outer message already says.
            let mut msg = e.to_string();
            for cause in e.chain().skip(1) {
                let c = cause.to_string();
                if !msg.contains(&c) {
                    msg = format!("{msg}: {c}");
                }
            }
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}
