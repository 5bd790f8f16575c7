//! What every fuzz target does with its input: write it where a user's file would be, then run
//! the library's pipeline as the command line does (`rocprof_classify::run`: sniff, read,
//! analyze, detect, plan) and render every report. Any panic is a finding; errors are the
//! expected answer to bad input.

use rocprof_classify::classify::RuleSet;
use rocprof_classify::ingest::read_compile_log;
use std::path::{Path, PathBuf};

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

/// Runs `paths` through the pipeline and, when they read, renders every report.
fn read_and_analyze(paths: &[PathBuf]) {
    if let Ok(run) = rocprof_classify::run(paths, &rocprof_classify::Config::default()) {
        let _ = rocprof_classify::report::json::render(&run);
        let _ = rocprof_classify::report::markdown::render(&run);
        let _ = rocprof_classify::report::html::render(&run);
    }
}

/// `data` as a file named `name`, read and analyzed.
pub fn file(name: &str, data: &[u8]) {
    let dir = scratch("file");
    let path = dir.join(name);
    std::fs::write(&path, data).expect("write input");
    read_and_analyze(&[path]);
}

/// `data` as a Kineto file read with the event scanner and with serde alone, and read in place
/// and streamed: the same table or the same error (and its first event, as text, the same
/// fields or declined by the scanner).
pub fn scanner(data: &[u8]) {
    use rocprof_classify::ingest::{kineto, read_all, ReadOptions};
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(e) = kineto::check_scanner_against_serde(text.trim_start()) {
            panic!("{e}");
        }
    }
    let dir = scratch("scanner");
    let path = dir.join("trace.json");
    std::fs::write(&path, data).expect("write input");
    let read = |serde_events: bool, stream_files: bool| {
        let opts = ReadOptions {
            serde_events,
            stream_files,
            force: Some(rocprof_classify::model::Format::Kineto),
            ..Default::default()
        };
        read_all(std::slice::from_ref(&path), &opts)
            .map(|t| format!("{t:?}"))
            .map_err(|e| e.to_string())
    };
    let in_place = read(false, false);
    assert!(in_place == read(true, false), "the scanner and serde read this file differently");
    assert!(in_place == read(false, true), "the file read in place and streamed differ");
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

/// A rocpd database whose rows come from `data` (the `rocpd` target mutates SQLite pages and
/// rarely gets past the header; this one reaches the reader's queries): the views `kernels`,
/// `memory_copies` and `regions` over tables of the columns the reader selects, and the agent
/// table, filled with names, times and ids decoded from the bytes.
pub fn rocpd_rows(data: &[u8]) {
    let dir = scratch("rocpd_rows");
    let path = dir.join("rows_results.db");
    if write_rocpd(&path, data).is_ok() {
        read_and_analyze(&[path]);
    }
}

fn write_rocpd(path: &Path, data: &[u8]) -> rusqlite::Result<()> {
    let db = rusqlite::Connection::open(path)?;
    db.execute_batch(
        "CREATE TABLE k(id INTEGER PRIMARY KEY, name TEXT, start INTEGER, end INTEGER,
           agent_log_index INTEGER, stream TEXT, queue TEXT, corr_id INTEGER);
         CREATE TABLE m(id INTEGER PRIMARY KEY, name TEXT, start INTEGER, end INTEGER,
           dst_agent_log_index INTEGER, stream_name TEXT, corr_id INTEGER);
         CREATE TABLE r(id INTEGER PRIMARY KEY, category TEXT, name TEXT, pid INTEGER,
           tid INTEGER, start INTEGER, end INTEGER, corr_id INTEGER);
         CREATE TABLE rocpd_info_agent(logical_index INTEGER, type TEXT, product_name TEXT, name TEXT);
         CREATE VIEW kernels AS SELECT * FROM k;
         CREATE VIEW memory_copies AS SELECT * FROM m;
         CREATE VIEW regions AS SELECT * FROM r;
         BEGIN;",
    )?;
    let mut bytes = Bytes(data);
    const NAMES: [&str; 8] = [
        "Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1",
        "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
        "hipLaunchKernel",
        "hipMemcpyWithStream",
        "hipDeviceSynchronize",
        "ProfilerStep#1",
        "MEMORY_COPY_HOST_TO_DEVICE",
        "",
    ];
    while let Some(kind) = bytes.u8() {
        let name = match bytes.u8() {
            Some(b) if b < 200 => NAMES[b as usize % NAMES.len()].to_string(),
            Some(b) => bytes.text(b as usize - 200),
            None => break,
        };
        let (start, len) = (bytes.i64(), bytes.i64());
        let (a, b, c) = (bytes.i64(), bytes.i64(), bytes.i64());
        let end = start.wrapping_add(len);
        match kind % 4 {
            0 => db.execute(
                "INSERT INTO k(name, start, end, agent_log_index, stream, queue, corr_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![name, start, end, a % 8, (b % 4).to_string(), (b % 3).to_string(), c],
            )?,
            1 => db.execute(
                "INSERT INTO m(name, start, end, dst_agent_log_index, stream_name, corr_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                rusqlite::params![name, start, end, a % 8, (b % 4).to_string(), c],
            )?,
            2 => db.execute(
                "INSERT INTO r(category, name, pid, tid, start, end, corr_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![["HIP_RUNTIME_API", "MARKER_CORE_API", "HSA", ""][(a & 3) as usize], name, b % 5, c % 5, start, end, a],
            )?,
            _ => db.execute(
                "INSERT INTO rocpd_info_agent(logical_index, type, product_name, name) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![a % 8, if b & 1 == 0 { "GPU" } else { "CPU" }, name, "gfx942"],
            )?,
        };
    }
    db.execute_batch("COMMIT;")
}

/// Reads values off the fuzz input, zero once it runs out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn i64(&mut self) -> i64 {
        let mut v = [0u8; 8];
        let n = self.0.len().min(8);
        v[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        i64::from_le_bytes(v)
    }
    fn text(&mut self, len: usize) -> String {
        let n = self.0.len().min(len);
        let s = String::from_utf8_lossy(&self.0[..n]).into_owned();
        self.0 = &self.0[n..];
        s
    }
}

/// A rayon pool of `threads`, built once per process.
fn pool(threads: usize) -> &'static rayon::ThreadPool {
    static POOLS: std::sync::OnceLock<[rayon::ThreadPool; 2]> = std::sync::OnceLock::new();
    let pools = POOLS.get_or_init(|| {
        [1, 2].map(|n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .expect("thread pool")
        })
    });
    &pools[usize::from(threads > 1)]
}

/// `data` (after its first byte) as a file `trace.json`, read on one thread and in pieces of
/// 1 to 256 bytes (the first byte) on two: the same feed, or the same error. Pieces start at
/// guessed event boundaries that the scan verifies; a difference is a finding.
pub fn pieces(data: &[u8]) {
    let Some((&size, data)) = data.split_first() else {
        return;
    };
    let dir = scratch("pieces");
    let path = dir.join("trace.json");
    std::fs::write(&path, data).expect("write input");
    let feed = |threads: usize, piece_bytes: Option<usize>| {
        let config = rocprof_classify::Config {
            piece_bytes,
            ..Default::default()
        };
        pool(threads).install(|| match rocprof_classify::run(&[path.clone()], &config) {
            Ok(run) => Ok(rocprof_classify::report::json::render(&run)),
            Err(e) => Err(e.to_string()),
        })
    };
    let one_thread = feed(1, None);
    let pieces = feed(2, Some(usize::from(size) + 1));
    assert!(one_thread == pieces, "parsed in pieces of {} bytes: a different result", usize::from(size) + 1);
}
