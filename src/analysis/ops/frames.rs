//! GPU time by the Python frames around each launch (`with_stack=True`): `nn.Module` frames
//! (FEED.md `modules`) and the model's own source lines (`sources`), and the outermost modules.

use crate::analysis::ops::op_index::{owners, threads_of};
use crate::analysis::time::links::Links;
use crate::model::{HostKind, NameId, Trace};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One row of the feed's `modules` or `sources`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FrameRow {
    /// `nn.Module: Name_0` for modules; `file.py(line): function` for sources (as `location`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    pub self_ns: i64,
    pub total_ns: i64,
}

/// A Python frame of the model's own code: a source file, not PyTorch's internals or a builtin.
pub fn is_user_frame(name: &str) -> bool {
    name.contains(".py(")
        && !name.starts_with("torch/")
        && !name.contains("/torch/")
        && !name.starts_with("<")
        && !name.starts_with("threading.py")
        && !name.starts_with("runpy.py")
        && !name.starts_with("multiprocessing/")
        && !name.starts_with("contextlib.py")
}

/// The frame rows, and each activity's innermost frame (`NameId::NONE` without one; empty when
/// the trace has no frames of the kind).
#[derive(Debug, Default)]
pub struct Frames {
    pub rows: Vec<FrameRow>,
    pub of_activity: Vec<NameId>,
    /// Modules only: the outermost modules (each activity's root), their GPU time and how much
    /// of it compiled code ran, largest first.
    pub roots: Vec<RootModule>,
}

/// An outermost `nn.Module` (a model, a text encoder, a VAE decoder) and the GPU time under it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RootModule {
    pub name: String,
    pub kernel_ns: i64,
    /// Of it, launched by compiled code (a compiled region, Inductor's kernels, or an
    /// `OptimizedModule` on the module stack).
    pub compiled_ns: i64,
}

/// GPU time by the Python frames (`with_stack=True`) around each launch: `nn.Module` frames for
/// `modules`, user source lines for `sources`. Empty when the trace has no such frames.
/// `compiled` (per activity, modules only) splits the root modules' time.
pub fn frames(
    trace: &Trace,
    links: &Links,
    in_scope: &[bool],
    modules: bool,
    compiled: &[bool],
) -> Frames {
    let keep = |n: &str| {
        if modules {
            n.starts_with("nn.Module: ")
        } else {
            is_user_frame(n)
        }
    };
    let threads = threads_of(trace, HostKind::Python, keep);
    if threads.is_empty() {
        return Frames::default();
    }
    let host = &trace.host;
    let mut acc: BTreeMap<NameId, (i64, i64)> = BTreeMap::new();
    let mut none = 0i64;
    let acts = &trace.activities;
    let owners = owners(trace, links, &threads);
    let mut of_activity = vec![NameId::NONE; acts.len()];
    let wrapper = trace
        .names
        .per_name(|n| n.starts_with("nn.Module: OptimizedModule"));
    let mut roots: BTreeMap<NameId, (i64, i64)> = BTreeMap::new();
    for a in 0..acts.len() {
        let owner = owners[a].get();
        if let Some(o) = owner {
            of_activity[a] = host.name[threads.get(o.thread).op(o.op as usize)];
        }
        if !in_scope[a] {
            continue;
        }
        let dur = acts.dur_ns[a];
        let Some(o) = owner else {
            none += dur;
            continue;
        };
        let t = threads.get(o.thread);
        let k = o.op as usize;
        acc.entry(host.name[t.op(k)]).or_default().0 += dur;
        let mut seen: Vec<NameId> = Vec::new();
        let mut cur = Some(k);
        let mut root = host.name[t.op(k)];
        let mut under_wrapper = false;
        while let Some(i) = cur {
            let name = host.name[t.op(i)];
            if !seen.contains(&name) {
                seen.push(name);
                acc.entry(name).or_default().1 += dur;
            }
            root = name;
            under_wrapper |= wrapper[name.index()];
            cur = t.parent(i);
        }
        if modules {
            let r = roots.entry(root).or_default();
            r.0 += dur;
            if under_wrapper || compiled.get(a).copied().unwrap_or(false) {
                r.1 += dur;
            }
        }
    }
    let make = |label: String, self_ns: i64, total_ns: i64| {
        if modules {
            FrameRow {
                name: Some(label),
                location: None,
                self_ns,
                total_ns,
            }
        } else {
            FrameRow {
                name: None,
                location: Some(label),
                self_ns,
                total_ns,
            }
        }
    };
    let mut rows: Vec<FrameRow> = acc
        .iter()
        .map(|(n, &(s, t))| make(trace.names.get(*n).to_string(), s, t))
        .collect();
    if none > 0 {
        rows.push(make(
            if modules {
                "(no module)"
            } else {
                "(no source)"
            }
            .to_string(),
            none,
            none,
        ));
    }
    let key = |r: &FrameRow| r.name.clone().or(r.location.clone()).unwrap_or_default();
    rows.sort_by(|a, b| {
        b.self_ns
            .cmp(&a.self_ns)
            .then(b.total_ns.cmp(&a.total_ns))
            .then(key(a).cmp(&key(b)))
    });
    let mut roots: Vec<RootModule> = roots
        .into_iter()
        .map(|(n, (kernel_ns, compiled_ns))| RootModule {
            name: trace.names.get(n).to_string(),
            kernel_ns,
            compiled_ns,
        })
        .collect();
    roots.sort_by(|a, b| b.kernel_ns.cmp(&a.kernel_ns).then(a.name.cmp(&b.name)));
    Frames {
        rows,
        of_activity,
        roots,
    }
}
