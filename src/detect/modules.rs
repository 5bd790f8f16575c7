//! Findings from the module view (`nn.Module` frames, `with_stack=True`), which the analysis
//! computes beside the detectors: they read the finished [`Analysis`].

use super::evidence as ev;
use super::{ms, pct, Detail, Finding, Fix, Severity};
use crate::analysis::Analysis;
use crate::model::compile_log::ActionKind;
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// `nn.Module: Qwen2RMSNorm_3` → `Qwen2RMSNorm`.
pub fn module_class(name: &str) -> &str {
    let bare = name.strip_prefix("nn.Module: ").unwrap_or(name);
    match bare.rsplit_once('_') {
        Some((class, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => class,
        _ => bare,
    }
}

/// Outermost modules left eager in a trace that runs compiled code: level 2 is partial until
/// they are compiled too (an L2 action, so level 3+ has something to wait for).
fn eager_modules(a: &Analysis) -> Option<Finding> {
    let eager = &a.compile.eager_modules;
    if eager.is_empty() {
        return None;
    }
    let total: i64 = eager.iter().map(|m| m.kernel_ns).sum();
    let named: Vec<String> = eager
        .iter()
        .map(|m| {
            format!(
                "{} ({}, {:.1}%)",
                module_class(&m.name),
                ms(m.kernel_ns),
                m.pct
            )
        })
        .collect();
    let fixes: Vec<_> = eager
        .iter()
        .map(|m| {
            Fix {
                kind: ActionKind::Code,
                text: format!(
                    "compile {} too: module = torch.compile(module, mode=\"default\")   # {:.1}% of kernel time runs eager in it",
                    module_class(&m.name), m.pct
                ),
                only_for: Some(super::EAGER_MODULES.to_string()),
            }
        })
        .collect();
    Some(
        Finding::new(
            Severity::Medium,
            format!(
            "compiled code runs, but these outermost modules run eager: {} of kernel time ({:.1}%)",
            named.join(", "),
            pct(total, a.summary.kernel_ns)
        ),
            total,
            Detail::EagerModules(ev::EagerModules {
                modules: eager
                    .iter()
                    .map(|m| ev::EagerModule {
                        module: module_class(&m.name).to_string(),
                        name: m.name.clone(),
                        kernel_ns: m.kernel_ns,
                        pct: m.pct,
                    })
                    .collect(),
                pct: pct(total, a.summary.kernel_ns),
            }),
        )
        .with_fixes(fixes),
    )
}

/// Norm and activation modules together at least this share of kernel time make their fused
/// kernels worth writing (seeds/000 Level 4, seeds/002: RMSNorm 4x, GELU+Mul 2.5x in Triton).
pub const NORM_ACTIVATION_MIN_PCT: f64 = 10.0;

/// The module classes whose kernels seeds/000 and 002 fuse in Triton: RMSNorm and LayerNorm
/// (with the residual add), and the activation of act(gate) * up.
static NORM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(rms_?norm|layer_?norm)$").expect("valid regex"));
static ACTIVATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(SiLU|GELU|GELUTanh|SiLUActivation|GELUActivation|NewGELUActivation|FastGELUActivation|QuickGELUActivation|PytorchGELUTanh|SwiGLU|GeGLU|Mish)$")
        .expect("valid regex")
});

/// Norm and activation modules (their own kernels, `modules[].self_ns`) hold a large share of
/// kernel time: compile fuses them; what compile leaves, Triton kernels fuse (level 4).
fn norm_activation_heavy(a: &Analysis) -> Option<Finding> {
    let mut by_class: BTreeMap<&str, (i64, ev::ModuleRole)> = BTreeMap::new();
    for row in &a.modules {
        let Some(name) = row.name.as_deref() else {
            continue;
        };
        let class = module_class(name);
        let role = if NORM.is_match(class) {
            ev::ModuleRole::Norm
        } else if ACTIVATION.is_match(class) {
            ev::ModuleRole::Activation
        } else {
            continue;
        };
        by_class.entry(class).or_insert((0, role)).0 += row.self_ns;
    }
    let total: i64 = by_class.values().map(|v| v.0).sum();
    let share = pct(total, a.summary.kernel_ns);
    if share < NORM_ACTIVATION_MIN_PCT {
        return None;
    }
    let mut rows: Vec<(&str, i64, ev::ModuleRole)> =
        by_class.iter().map(|(c, &(ns, r))| (*c, ns, r)).collect();
    rows.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
    let named: Vec<String> = rows
        .iter()
        .map(|(c, ns, _)| format!("{c} {:.1}%", pct(*ns, a.summary.kernel_ns)))
        .collect();
    let compiled = a.compile.compiled || a.compile.inductor_kernel_pct > 0.0;
    let fixes: Vec<_> = rows
        .iter()
        .filter(|(_, ns, _)| pct(*ns, a.summary.kernel_ns) >= 1.0)
        .map(|(c, ns, role)| {
            let how = if *role == ev::ModuleRole::Norm {
                "one fused Triton kernel (residual add + norm in one pass over memory)"
            } else {
                "act(gate) * up in one fused Triton kernel"
            };
            Fix {
                kind: ActionKind::Code,
                text: format!("{c} ({:.1}% of kernel time): {how}, registered with torch.library.custom_op so it stays compile-compatible", pct(*ns, a.summary.kernel_ns)),
                only_for: Some(super::TRITON_FUSIONS.to_string()),
            }
        })
        .collect();
    Some(Finding::new(
        Severity::Medium,
        format!(
            "norm and activation modules run {share:.1}% of kernel time in their own kernels ({}); {}",
            named.join(", "),
            if compiled {
                "the compiled code leaves them unfused"
            } else {
                "eager: torch.compile fuses them first"
            }
        ),
        total,
        Detail::NormActivationHeavy(ev::NormActivationHeavy {
            pct: share,
            compiled,
            modules: rows
                .iter()
                .map(|(c, ns, role)| ev::NormModule {
                    module: c.to_string(),
                    role: *role,
                    kernel_ns: *ns,
                    pct: pct(*ns, a.summary.kernel_ns),
                })
                .collect(),
        }),
    )
    .with_fixes(fixes))
}

/// The module-view findings of a finished analysis.
pub fn from_modules(a: &Analysis) -> Vec<Finding> {
    [eager_modules(a), norm_activation_heavy(a)]
        .into_iter()
        .flatten()
        .collect()
}
