//! The real-model zoo (`fixtures/kineto/zoo`, `make_zoo.py`): every trace classified, FEED.md's
//! time invariants, step times against the CUDA events of the run, and every finding its truth
//! names raised or kept silent.

use crate::common::fixture;
use rocprof_classify::analysis::{median, AnalysisOptions};
use rocprof_classify::ingest::{read_all, ReadOptions};
use serde_json::Value;

#[test]
fn the_zoo_is_classified_timed_and_diagnosed_as_built() {
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("kineto/zoo/truth.json")).unwrap())
            .unwrap();
    let models: Vec<(&String, &Value)> = truth
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, v)| !k.starts_with('_') && *k != "env" && v.get("findings").is_some())
        .collect();
    assert!(models.len() >= 14, "the zoo has {} traces", models.len());
    let mut failures = Vec::new();
    for (name, t) in models {
        let path = fixture(&format!("kineto/zoo/{name}.json.gz"));
        assert!(
            std::fs::metadata(&path).unwrap().len() <= 1_000_000,
            "{name} is over 1 MB"
        );
        let trace = read_all(&[path], &ReadOptions::default()).unwrap();
        let run = crate::common::run_trace(trace.clone(), &AnalysisOptions::default());
        let a = &run.analysis;
        if a.summary.unclassified_pct > 2.0 {
            failures.push(format!(
                "{name}: {:.2}% unclassified",
                a.summary.unclassified_pct
            ));
        }
        failures.extend(crate::invariants::check(name, &trace));
        // Step time: on GPU-bound steps, the median within 5% of the CUDA events' median.
        let events = t["cuda_event_step_ms"].as_object().unwrap();
        let bound: Vec<_> = a
            .step_breakdown
            .iter()
            .filter(|s| s.gpu_busy_ns as f64 > 0.9 * s.dur_ns as f64)
            .collect();
        if !bound.is_empty() {
            let ours = median(&bound.iter().map(|s| s.dur_ns).collect::<Vec<_>>());
            let cuda = median(
                &bound
                    .iter()
                    .map(|s| (events[&s.step.to_string()].as_f64().unwrap() * 1e6) as i64)
                    .collect::<Vec<_>>(),
            );
            if (ours - cuda).abs() > 0.05 * cuda {
                failures.push(format!(
                    "{name}: median step {ours} ns, CUDA events {cuda} ns"
                ));
            }
        }
        let fired: Vec<&str> = run.findings.iter().map(|f| f.id.as_str()).collect();
        for id in t["findings"]["fire"].as_array().unwrap() {
            if !fired.contains(&id.as_str().unwrap()) {
                failures.push(format!("{name}: {id} should fire (fired: {fired:?})"));
            }
        }
        for id in t["findings"]["silent"].as_array().unwrap() {
            if fired.contains(&id.as_str().unwrap()) {
                failures.push(format!("{name}: {id} should stay silent"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
