//! Every input the fuzz targets found trouble with (`fuzz/regressions/<target>/`), replayed
//! the way its target feeds it to the tool: no panic, no hang, exit 0 (read) or 2 (refused).

use crate::common::{bin, root};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where a regression input goes, as the fuzz target puts it (fuzz/src/lib.rs).
fn materialize(target: &str, input: &Path, dir: &Path) -> (PathBuf, Vec<String>) {
    let data = std::fs::read(input).unwrap();
    let put = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let file_name = input.file_name().unwrap().to_string_lossy().to_string();
    match target {
        "rocprof_compute" => {
            for (part, name) in
                data.split(|&b| b == 0)
                    .zip(["sysinfo.csv", "pmc_perf.csv", "timestamps.csv"])
            {
                put(name, part);
            }
            (dir.to_path_buf(), vec![])
        }
        "rules" => {
            let (pick, text) = data.split_first().unwrap();
            let name = ["user.toml", "ops.toml", "devices.toml", "ladder.toml"][*pick as usize % 4];
            put(name, text);
            (dir.to_path_buf(), vec!["rules".into(), "check".into()])
        }
        // The file keeps its name: it tells the readers what it is (results.stats.csv, …).
        _ => (put(&file_name, &data), vec![]),
    }
}

#[test]
fn fuzz_regressions_replay_cleanly() {
    let base = root().join("fuzz/regressions");
    let mut replayed = 0;
    for target in std::fs::read_dir(&base).unwrap().map(|e| e.unwrap().path()) {
        let name = target.file_name().unwrap().to_string_lossy().to_string();
        for input in std::fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap().path())
        {
            let dir = tempfile::tempdir().unwrap();
            let (path, mut args) = materialize(&name, &input, dir.path());
            args.push(path.display().to_string());
            let out = bin()
                .args(&args)
                .args(
                    ["-q", "--json", "/dev/null"]
                        .iter()
                        .filter(|_| name != "rules"),
                )
                .timeout(Duration::from_secs(60))
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !stderr.contains("panicked"),
                "{}: {stderr}",
                input.display()
            );
            let code = out.status.code();
            // 3: nothing to analyze (no GPU activity left once implausible rows are dropped).
            assert!(
                matches!(code, Some(0 | 2 | 3)),
                "{}: exit {code:?} {stderr}",
                input.display()
            );
            replayed += 1;
        }
    }
    assert!(
        replayed > 0,
        "fuzz/regressions holds the inputs fuzzing found"
    );
}
