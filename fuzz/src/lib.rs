//! What every fuzz target does with its input: write it where a user's file would be, then run
//! the same path the command line runs (sniff, read, analyze, render). Any panic is a finding;
//! errors are the expected answer to bad input.

use rocprof_classify::analysis::{analyze_with_ranks, AnalysisOptions};
use rocprof_classify::classify::RuleSet;
use rocprof_classify::ingest::{read_all, read_compile_log, ReadOptions};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A scratch directory of this process (tmpfs when there is one: files are written per run).
fn scratch(sub: &str) -> PathBuf {
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("rocprof-classify-fuzz-{}", std::process::id())).join(sub);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn builtin_rules() -> &'static RuleSet {
    static RULES: OnceLock<RuleSet> = OnceLock::new();
    RULES.get_or_init(|| RuleSet::load(&[]).expect("built-in rules load"))
}

/// Reads `paths` as the command line would and, when they read, analyzes and renders them.
fn read_and_analyze(paths: &[PathBuf]) {
    let opts = ReadOptions {
        one_thread_per_file: true,
        ..ReadOptions::default()
    };
    if let Ok(trace) = read_all(paths, &opts) {
        let analysis = analyze_with_ranks(&trace, builtin_rules(), &AnalysisOptions::default());
        let _ = rocprof_classify::report::json::render(&analysis);
        let _ = rocprof_classify::report::markdown::render(&analysis);
    }
}

/// `data` as a file named `name`, read and analyzed.
pub fn file(name: &str, data: &[u8]) {
    let dir = scratch("file");
    let path = dir.join(name);
    std::fs::write(&path, data).expect("write input");
    read_and_analyze(&[path]);
}

/// `data` split at NUL bytes into the files of a rocprof-compute workload directory:
/// `sysinfo.csv`, `pmc_perf.csv`, `timestamps.csv` (missing parts stay missing).
pub fn workload(data: &[u8]) {
    let dir = scratch("workload");
    for (part, name) in data
        .split(|&b| b == 0)
        .zip(["sysinfo.csv", "pmc_perf.csv", "timestamps.csv"])
    {
        std::fs::write(dir.join(name), part).expect("write input");
    }
    read_and_analyze(&[dir]);
}

/// `data` as a torch.compile log named `name` (TORCH_LOGS text or a TORCH_TRACE log).
pub fn compile_log(name: &str, data: &[u8]) {
    let dir = scratch("log");
    let path = dir.join(name);
    std::fs::write(&path, data).expect("write input");
    let _ = read_compile_log(&path);
}

/// `data` as a user rule file: the first byte picks which file of a `--rules` directory it is.
pub fn rules(data: &[u8]) {
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let dir = scratch("rules");
    let name = ["user.toml", "ops.toml", "devices.toml", "ladder.toml"][pick as usize % 4];
    std::fs::write(dir.join(name), text).expect("write input");
    if let Ok(rules) = RuleSet::load(&[dir.clone()]) {
        let _ = rules.classify("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>");
        let _ = rules.classify("Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB1");
    }
    let _ = rocprof_classify::recommend::Catalog::load(&[dir]);
}
