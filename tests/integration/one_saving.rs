//! One saving per rung: on every before/after pair we hold, the base run's figure for the
//! rung(s) applied is the same number in the feed, the terminal, Markdown and HTML reports,
//! `--what-if` and `diff --applied` (without the profiler's cost), and `diff --applied`'s
//! profiled prediction is `--what-if`'s profiled replay.

use crate::common::{fixture, read_truth};
use rayon::prelude::*;
use rocprof_classify::pipeline::{self, DiffSide};
use rocprof_classify::report::{html, markdown, text};
use rocprof_classify::{Config, Run};
use std::path::{Path, PathBuf};

/// Every arm of every pair set that applies rungs: its set, baseline, arm and rung ids.
fn arms() -> Vec<(String, String, String, Vec<String>)> {
    let mut out = Vec::new();
    for set in ["set1", "set2", "set3", "set4", "set5", "set6"] {
        let truth = read_truth(&fixture(&format!("kineto/pairs/{set}/truth.json")));
        for (b, v) in truth["baselines"].as_object().unwrap() {
            for (a, t) in v["arms"].as_object().unwrap() {
                let ids = crate::replays::arm_ids(b, a, t);
                if a != "base" && !ids.is_empty() {
                    out.push((set.to_string(), b.clone(), a.clone(), ids));
                }
            }
        }
    }
    out
}

fn pair_path(set: &str, b: &str, arm: &str) -> PathBuf {
    fixture(&format!("kineto/pairs/{set}/{b}/{arm}.json.gz"))
}

/// The base run's report figure for one rung, checked in each rendering.
fn report_figure(run: &Run, id: &str) -> Option<i64> {
    let r = run.plan.recommendations.iter().find(|r| r.id == id)?;
    let pct = format!("{:.1}% of the window", r.est_savings_pct);
    let opts = text::TableOptions {
        color: false,
        width: 400,
    };
    let terminal = String::from_utf8(text::render(run, &opts)).unwrap();
    let line = terminal.lines().find(|l| l.contains(&r.title)).unwrap();
    assert!(line.contains(&pct), "terminal: {line}");
    let md = markdown::render(run);
    assert!(
        md.lines().any(|l| l.contains(&r.title)
            && (l.contains(&pct) || l.contains(&format!("({:.1}%", r.est_savings_pct)))),
        "markdown: {id}"
    );
    let page = html::render(run);
    let cell = format!("data-v=\"{}\">", r.est_savings_ns);
    assert!(
        page.contains(&cell) && page.contains(&format!("({:.1}%)</td>", r.est_savings_pct)),
        "html: {id}"
    );
    Some(r.est_savings_ns)
}

#[test]
fn one_rung_has_one_saving_in_every_output() {
    let arms = arms();
    assert!(arms.len() >= 90, "{} arms", arms.len());
    let catalog = crate::common::catalog();
    let checked: Vec<String> = arms
        .par_iter()
        .map(|(set, b, arm, ids)| {
            let base = pair_path(set, b, "base");
            let plain =
                rocprof_classify::run(std::slice::from_ref(&base), &Config::default()).unwrap();
            let feed: serde_json::Value =
                serde_json::from_slice(&rocprof_classify::report::json::render(&plain)).unwrap();
            // The what-if rides on the diff's own analysis of the base run.
            let replayable = ids
                .iter()
                .all(|id| catalog.get(id).is_some_and(|d| d.replay.is_some()));
            let mut what_if = None;
            let config = Config {
                applied: ids.clone(),
                ..Config::default()
            };
            let analyze = |side: DiffSide, p: &Path, mut c: Config| {
                if side == DiffSide::Base && replayable {
                    c.what_if = ids.clone();
                }
                let r = rocprof_classify::run(&[p.to_path_buf()], &c)?;
                if side == DiffSide::Base {
                    what_if = r.analysis.parts.what_if.clone();
                }
                Ok::<Run, rocprof_classify::error::RunError>(r)
            };
            let new = pair_path(set, b, arm);
            let d = pipeline::diff(
                (base.as_path(), new.as_path()),
                &config,
                (None, None),
                analyze,
            )
            .unwrap();
            let a = &d.applied[0];
            let who = format!("{set} {b}/{arm} ({})", ids.join("+"));
            if let [id] = &ids[..] {
                if let Some(ns) = report_figure(&plain, id) {
                    let fed = feed["recommendations"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|r| r["id"] == id.as_str())
                        .unwrap();
                    assert_eq!(fed["est_savings_ns"].as_i64(), Some(ns), "{who}: feed");
                    assert_eq!(
                        a.predicted_ns, ns,
                        "{who}: diff --applied against the report"
                    );
                }
            }
            if let Some(w) = &what_if {
                assert_eq!(
                    w.saving_ns,
                    Some(a.predicted_ns),
                    "{who}: --what-if against diff"
                );
                assert_eq!(
                    w.profiled_saving_ns, a.predicted_profiled_ns,
                    "{who}: profiled"
                );
                assert!(
                    a.predicted_profiled_ns.is_some(),
                    "{who}: a profiled prediction"
                );
            }
            let [lo, hi] = a.profiled_range_ns.unwrap_or(a.range_ns);
            assert_eq!(
                a.within_range,
                lo <= a.measured_ns && a.measured_ns <= hi,
                "{who}"
            );
            who
        })
        .collect();
    eprintln!("{} arms checked", checked.len());
}

/// On every several-rank fixture, the report's saving of its first replayed rung is the job's:
/// `--what-if` of that rung prints the job's step (slowest rank per step) and the same saving.
#[test]
fn the_job_saving_is_the_what_ifs_on_every_multi_rank_fixture() {
    let dirs: Vec<PathBuf> = crate::snapshots::fixture_inputs()
        .into_iter()
        .map(|(dir, name)| dir.join(name))
        .filter(|p| p.is_dir())
        .collect();
    assert!(dirs.len() >= 10, "{} rank directories", dirs.len());
    let checked: usize =
        dirs.par_iter()
            .map(|dir| {
                let plain =
                    rocprof_classify::run(std::slice::from_ref(dir), &Config::default()).unwrap();
                let Some(r) =
                    plain.plan.recommendations.iter().find(|r| {
                        r.savings_basis == rocprof_classify::recommend::SavingsBasis::Replay
                    })
                else {
                    return 0;
                };
                let config = Config {
                    what_if: vec![r.id.clone()],
                    ..Config::default()
                };
                let asked = rocprof_classify::run(std::slice::from_ref(dir), &config).unwrap();
                let w = asked.analysis.parts.what_if.as_ref().unwrap();
                assert_eq!(
                    w.saving_ns,
                    Some(r.est_savings_ns),
                    "{}: {}",
                    dir.display(),
                    r.id
                );
                let ranks: std::collections::BTreeSet<_> = w.steps.iter().map(|s| s.rank).collect();
                if ranks.len() > 1 {
                    assert!(!w.job.is_empty(), "{}", dir.display());
                    for j in &w.job {
                        let slowest = w
                            .steps
                            .iter()
                            .filter(|s| s.step == j.step)
                            .map(|s| s.replay_ns)
                            .max();
                        assert_eq!(Some(j.replay_ns), slowest, "{}", dir.display());
                    }
                }
                1
            })
            .sum();
    assert!(
        checked >= 5,
        "{checked} rank directories with a replayed rung"
    );
}
