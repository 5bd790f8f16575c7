//! The `rocprof-classify` binary: parse the command line, run, map the outcome to an exit code.
//! This is the only place that exits.

use clap::Parser;
use std::process::ExitCode;

/// glibc raises its mmap threshold each time a large block is freed (up to 32 MiB); past that,
/// the analysis's large temporary columns come from the heap and stay with the process when
/// freed. A fixed threshold keeps blocks of 4 MiB and more mapped on their own, given back when
/// freed: the compact 2 GB replica's peak RSS drops from ~385 to ~335 MiB, big_eager's wall time
/// unchanged (`cargo bench --bench end_to_end`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn fix_mmap_threshold() {
    // SAFETY: mallopt only sets an allocator parameter; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn fix_mmap_threshold() {}

fn main() -> ExitCode {
    fix_mmap_threshold();
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
            ExitCode::from(rocprof_classify::cli::exit_code(&e))
        }
    }
}
