//! What-if replays against before/after pairs (fixtures/kineto/pairs): the step model of the
//! base run replayed with each arm's change, against the arm timed without the profiler.

use crate::common::{fixture, read_truth, rules, run_path};
use rocprof_classify::analysis::{self, AnalysisOptions, ReplayConstants, Replayer, Transform};
use rocprof_classify::ingest::{read_all, ReadOptions};
use rocprof_classify::recommend::SavingsBasis;
use rocprof_classify::Run;

/// The recommendations whose changes each arm of the first set applies (negative controls:
/// the one a user might wrongly try; it must not promise a saving).
const SET1: &[(&str, &str, &[&str])] = &[
    ("gpt2_train", "compile", &["compile.enable"]),
    ("gpt2_train", "fused_adamw", &["surgery.fused-optimizer"]),
    ("gpt2_train", "sdpa", &["surgery.sdpa"]),
    ("gpt2_train", "no_syncs", &["surgery.remove-syncs"]),
    ("gpt2_train", "tf32", &["env.matmul-precision"]),
    ("resnet50_train", "tf32", &["env.matmul-precision"]),
    (
        "resnet50_train",
        "channels_last",
        &["surgery.channels-last"],
    ),
    ("resnet50_train", "workers8", &["env.host-pipeline"]),
    ("resnet50_train", "fused_sgd", &["surgery.fused-optimizer"]),
    ("llama_decode", "compile", &["compile.enable"]),
    (
        "llama_decode",
        "reduce_overhead",
        &["compile.enable", "graphs.capture"],
    ),
    ("llama_decode", "sdpa", &["surgery.sdpa"]),
    ("llama_decode", "tf32", &["env.matmul-precision"]),
];

/// The replayed saving (%) of a set of recommendations' changes, the median over the steps
/// (the measured saving is the median over rounds of steady steps); 0 where none fires.
fn predicted_pct(run: &Run, ids: &[&str]) -> f64 {
    let transforms: Vec<Transform> = ids
        .iter()
        .filter(|id| run.plan.recommendations.iter().any(|r| r.id == **id))
        .filter_map(|id| {
            rocprof_classify::recommend::Catalog::load(&[])
                .ok()?
                .get(id)?
                .replay
        })
        .collect();
    if transforms.is_empty() {
        return 0.0;
    }
    let Some(set) = run.analysis.parts.replays.get(&transforms) else {
        return 0.0;
    };
    let mut per_step: Vec<f64> = set
        .steps
        .iter()
        .filter(|s| s.base_ns > 0)
        .map(|s| 100.0 * (s.base_ns - s.replay_ns) as f64 / s.base_ns as f64)
        .collect();
    per_step.sort_by(f64::total_cmp);
    per_step.get(per_step.len() / 2).copied().unwrap_or(0.0)
}

fn set1_run(baseline: &str) -> Run {
    run_path(&fixture(&format!(
        "kineto/pairs/set1/{baseline}/base.json.gz"
    )))
}

#[test]
fn the_identity_replay_reproduces_every_measured_step() {
    for rel in [
        "kineto/pairs/set1/gpt2_train/base.json.gz",
        "kineto/pairs/set1/resnet50_train/base.json.gz",
        "kineto/pairs/set1/llama_decode/base.json.gz",
        "kineto/zoo/llama_prefill_eager.json.gz",
        "kineto/h100/eager_sync_heavy.json.gz",
        "kineto/h200_deps/resnet18_loader.json.gz",
    ] {
        let path = fixture(rel);
        let trace = read_all(std::slice::from_ref(&path), &ReadOptions::default()).unwrap();
        let opts = AnalysisOptions::default();
        let ctx = analysis::prepare(&trace, rules(), &opts);
        let r = Replayer::new(&ctx, &ReplayConstants::builtin());
        let steps = r.fidelity();
        assert!(!steps.is_empty(), "{rel}: no step replayed");
        for (measured, identity, unprofiled) in steps {
            let err = (identity - measured).abs() as f64 / measured as f64;
            assert!(
                err < 0.02,
                "{rel}: identity {identity} vs measured {measured}"
            );
            // Without the profiler's cost the step is never longer, and keeps its GPU work.
            assert!(
                unprofiled <= identity + 1_000 && unprofiled > 0,
                "{rel}: {unprofiled} vs {identity}"
            );
        }
    }
}

#[test]
fn the_first_pairs_are_predicted_within_their_rounds_and_in_order() {
    let truth = read_truth(&fixture("kineto/pairs/set1/truth.json"));
    let mut rows = Vec::new();
    for baseline in ["gpt2_train", "resnet50_train", "llama_decode"] {
        let run = set1_run(baseline);
        for (b, arm, ids) in SET1.iter().filter(|r| r.0 == baseline) {
            let t = &truth["baselines"][b]["arms"][arm];
            let measured = t["measured_saving_pct"].as_f64().unwrap();
            let negative = t["negative_control"].as_bool().unwrap();
            let predicted = predicted_pct(&run, ids);
            eprintln!("{b}/{arm}: predicted {predicted:.1}% measured {measured:.1}%");
            rows.push((*b, *arm, predicted, measured, negative));
        }
    }
    for &(b, arm, predicted, measured, negative) in &rows {
        if negative || measured.abs() < 3.0 {
            // A change that did nothing is promised nothing.
            assert!(
                predicted < 5.0,
                "{b}/{arm}: {predicted:.1}% promised, {measured:.1}% measured"
            );
        } else if measured > 25.0 {
            // Large savings: the step after the change within 25% of the measured one.
            let step = (100.0 - predicted) / (100.0 - measured);
            assert!(
                (0.75..=1.25).contains(&step),
                "{b}/{arm}: step {step:.2} of the measured"
            );
        }
    }
    // Per baseline, the arm predicted first is the best one, or loses at most
    // max(3 points, 20% of the best).
    for b in ["gpt2_train", "resnet50_train", "llama_decode"] {
        let mine: Vec<_> = rows.iter().filter(|r| r.0 == b).collect();
        let first = mine.iter().max_by(|x, y| x.2.total_cmp(&y.2)).unwrap();
        let best = mine.iter().map(|r| r.3).fold(f64::MIN, f64::max);
        assert!(
            best - first.3 <= (0.2 * best).max(3.0),
            "{b}: {} first, {best:.1}% best",
            first.1
        );
        assert!(first.3 > 0.0, "{b}: {} first measured slower", first.1);
    }
}

#[test]
fn recommendations_carry_replayed_savings_with_ranges_and_marginals() {
    let run = set1_run("gpt2_train");
    let window = run.analysis.summary.window_ns;
    let rec = |id: &str| {
        run.plan
            .recommendations
            .iter()
            .find(|r| r.id == id)
            .unwrap_or_else(|| panic!("{id} fires"))
    };
    // The per-parameter AdamW (foreach=False) fires its rung; the fused arm does not.
    let fused = rec("surgery.fused-optimizer");
    assert_eq!(fused.savings_basis, SavingsBasis::Replay);
    assert!(
        fused.validated,
        "NVIDIA pairs validate the optimizer replay"
    );
    let fused_arm = run_path(&fixture("kineto/pairs/set1/gpt2_train/fused_adamw.json.gz"));
    assert!(fused_arm
        .findings
        .iter()
        .all(|f| f.id.as_str() != "per_parameter_optimizer"));
    let compile = rec("compile.enable");
    assert_eq!(compile.rank, 1, "level 2 before the surgery");
    // The first rung's marginal saving is its own; the ones after it are replayed on top.
    assert_eq!(compile.marginal_savings_ns, compile.est_savings_ns);
    let sdpa = rec("surgery.sdpa");
    assert!(
        sdpa.marginal_savings_ns < sdpa.est_savings_ns,
        "attention is cheaper once compiled"
    );
    let total: i64 = run
        .plan
        .recommendations
        .iter()
        .map(|r| r.marginal_savings_ns.max(0))
        .sum();
    assert!(total <= window);
    for r in &run.plan.recommendations {
        let [worst, best] = r.est_savings_range_ns;
        assert!(
            worst <= best && best == r.est_savings_ns,
            "{}: {worst}..{best}",
            r.id
        );
    }
    // Level 2 replayed as one is the compile replay; no level promises more than the window.
    let l2 = run.plan.ladder.iter().find(|l| l.level == 2).unwrap();
    assert_eq!(l2.est_savings_ns, compile.est_savings_ns);
    assert!(run.plan.ladder.iter().all(|l| l.est_savings_ns <= window));
}

#[test]
fn graphs_are_not_offered_where_a_sync_blocks_capture() {
    // Five synchronizes and .item()s per step: capture would fail.
    let run = run_path(&fixture("kineto/h100/eager_sync_heavy.json.gz"));
    assert!(run
        .plan
        .recommendations
        .iter()
        .all(|r| r.id != "graphs.capture"));
    let set = run.analysis.parts.replays.get(&[Transform::CudaGraphs]);
    if let Some(set) = set {
        assert!(
            set.blocked.iter().any(|b| b.contains("blocks capture")),
            "{:?}",
            set.blocked
        );
    }
    // Decode without syncs (an input upload aside): graphs are offered after compile, and the
    // two together save what reduce-overhead saved (92.4% measured).
    let run = set1_run("llama_decode");
    let ids: Vec<&str> = run
        .plan
        .recommendations
        .iter()
        .map(|r| r.id.as_str())
        .collect();
    let (c, g) = (
        ids.iter().position(|i| *i == "compile.enable").unwrap(),
        ids.iter().position(|i| *i == "graphs.capture").unwrap(),
    );
    assert!(c < g, "{ids:?}");
    let both = predicted_pct(&run, &["compile.enable", "graphs.capture"]);
    assert!((80.0..=97.0).contains(&both), "{both}");
}

#[test]
fn an_unknown_replay_in_a_user_ladder_is_refused_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("../rules/ladder.toml"))
        .unwrap()
        .replacen("replay = \"tf32\"", "replay = \"warp_drive\"", 1);
    std::fs::write(dir.path().join("ladder.toml"), text).unwrap();
    let err = rocprof_classify::recommend::Catalog::load(&[dir.path().to_path_buf()])
        .expect_err("an unknown change is refused");
    let msg = err.to_string();
    assert!(
        msg.contains("ladder.toml") && msg.contains("warp_drive"),
        "{msg}"
    );
}
