//! Which op owns each GPU activity: the cpu_ops of every thread nested by time, each activity's
//! innermost launching op (launch call by correlation id → the innermost cpu_op around it on
//! the same thread), and the buckets that op view decides (`rules/ops.toml`).

use crate::analysis::time::links::Links;
use crate::classify::{Bucket, Classified, RuleSet};
use crate::model::{ActivityKind, HostKind, Trace};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

/// cpu_ops of one thread, sorted by start, with their nesting parent.
pub(crate) struct Thread {
    /// Host indices of the thread's events, by start.
    pub(crate) ops: Vec<u32>,
    /// Per op: the index in `ops` of the op enclosing it, [`NO_PARENT`] at the top (u32
    /// columns: millions of ops in large traces).
    pub(crate) parent: Vec<u32>,
}

pub(crate) const NO_PARENT: u32 = u32::MAX;

impl Thread {
    /// The host index of op `k`.
    pub(crate) fn op(&self, k: usize) -> usize {
        self.ops[k] as usize
    }
    /// The op enclosing op `k`.
    pub(crate) fn parent(&self, k: usize) -> Option<usize> {
        match self.parent[k] {
            NO_PARENT => None,
            p => Some(p as usize),
        }
    }
}

/// Innermost op of `t` containing `time`, as an index into `t.ops`.
pub(crate) fn innermost(trace: &Trace, t: &Thread, time: i64) -> Option<usize> {
    let host = &trace.host;
    let k = t.ops.partition_point(|&h| host.ts_ns[h as usize] <= time);
    let mut cur = k.checked_sub(1)?;
    loop {
        let h = t.op(cur);
        if time
            < host.ts_ns[h]
                .saturating_add(host.dur_ns.get(h))
                .max(host.ts_ns[h] + 1)
        {
            return Some(cur);
        }
        cur = t.parent(cur)?;
    }
}

pub(crate) type ThreadKey = (u32, u64);

/// The threads of some host events, in key order.
#[derive(Default)]
pub(crate) struct Threads {
    pub(crate) keys: Vec<ThreadKey>,
    pub(crate) list: Vec<Thread>,
}

impl Threads {
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    pub(crate) fn find(&self, key: &ThreadKey) -> Option<u32> {
        self.keys.binary_search(key).ok().map(|i| i as u32)
    }
    pub(crate) fn get(&self, thread: u32) -> &Thread {
        &self.list[thread as usize]
    }
}

/// One op of [`Threads`]: its thread's index and its index in that thread (8 bytes per GPU
/// activity, not the 32 of a key and an index).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct OpRef {
    pub(crate) thread: u32,
    pub(crate) op: u32,
}

impl OpRef {
    pub(crate) const NONE: OpRef = OpRef {
        thread: u32::MAX,
        op: u32::MAX,
    };
    pub(crate) fn get(self) -> Option<OpRef> {
        (self != OpRef::NONE).then_some(self)
    }
}

/// Per activity: the innermost event of `threads` around its launch call, found once per
/// distinct call (one graph launch owns many activities) with the calls in a sorted column, not
/// a map (millions of launches in large traces).
pub(crate) fn owners(trace: &Trace, links: &Links, threads: &Threads) -> Vec<OpRef> {
    use rayon::prelude::*;
    let acts = trace.activities.len();
    let mut calls: Vec<u32> = (0..acts).filter_map(|a| links.owner_call(a)).collect();
    calls.sort_unstable();
    calls.dedup();
    let of_call: Vec<OpRef> = calls
        .par_iter()
        .map(|&call| {
            let c = call as usize;
            let key = (trace.host.input[c], trace.host.tid(c));
            threads
                .find(&key)
                .and_then(|thread| {
                    innermost(trace, threads.get(thread), trace.host.ts_ns[c]).map(|k| OpRef {
                        thread,
                        op: k as u32,
                    })
                })
                .unwrap_or(OpRef::NONE)
        })
        .collect();
    (0..acts)
        .map(|a| {
            links
                .owner_call(a)
                .and_then(|c| calls.binary_search(&c).ok())
                .map_or(OpRef::NONE, |i| of_call[i])
        })
        .collect()
}

/// The host events of one kind (that `keep` accepts) per (input, thread), nested by time.
pub(crate) fn threads_of(trace: &Trace, kind: HostKind, keep: impl Fn(&str) -> bool) -> Threads {
    let host = &trace.host;
    let kept = trace.names.per_name(keep);
    let kept = |h: usize| host.kind[h] == kind && kept[host.name[h].index()];
    // Counted first, so each thread's column is allocated once at its size (millions of ops).
    let mut sizes: BTreeMap<ThreadKey, usize> = BTreeMap::new();
    for h in (0..host.len()).filter(|&h| kept(h)) {
        *sizes.entry((host.input[h], host.tid(h))).or_default() += 1;
    }
    let mut threads = Threads {
        keys: sizes.keys().copied().collect(),
        list: sizes
            .values()
            .map(|&n| Thread {
                ops: Vec::with_capacity(n),
                parent: Vec::new(),
            })
            .collect(),
    };
    for h in (0..host.len()).filter(|&h| kept(h)) {
        if let Some(t) = threads.find(&(host.input[h], host.tid(h))) {
            threads.list[t as usize].ops.push(h as u32);
        }
    }
    for t in &mut threads.list {
        t.ops.sort_by_key(|&h| {
            let h = h as usize;
            (host.ts_ns[h], std::cmp::Reverse(host.dur_ns.get(h)), h)
        });
        let mut stack: Vec<usize> = Vec::new();
        t.parent = Vec::with_capacity(t.ops.len());
        for (k, &h) in t.ops.iter().enumerate() {
            let h = h as usize;
            while let Some(&top) = stack.last() {
                let th = t.ops[top] as usize;
                if host.ts_ns[th].saturating_add(host.dur_ns.get(th)) <= host.ts_ns[h] {
                    stack.pop();
                } else {
                    break;
                }
            }
            t.parent.push(stack.last().map_or(NO_PARENT, |&p| p as u32));
            stack.push(k);
        }
    }
    threads
}

/// The cpu_ops of every thread, nested, and each GPU activity's innermost launching op: built
/// once per analysis for the bucket view and the op view.
pub struct OpIndex {
    pub(crate) threads: Threads,
    /// Per GPU activity: its innermost launching op ([`OpRef::NONE`]: none).
    pub(crate) owner: Vec<OpRef>,
    /// Graph-replayed activities owned by a captured op: activity → its graph launch call.
    pub(crate) replay: HashMap<u32, u32>,
}

impl OpIndex {
    pub fn build(trace: &Trace, links: &Links) -> OpIndex {
        let threads = threads_of(trace, HostKind::CpuOp, |_| true);
        let owner = if threads.is_empty() {
            vec![OpRef::NONE; trace.activities.len()]
        } else {
            owners(trace, links, &threads)
        };
        let replay = links.replays();
        OpIndex {
            threads,
            owner,
            replay,
        }
    }

    /// No ops: every activity keeps its kernel-name bucket (`--no-attribution`).
    pub fn empty(trace: &Trace) -> OpIndex {
        OpIndex {
            threads: Threads::default(),
            owner: vec![OpRef::NONE; trace.activities.len()],
            replay: HashMap::default(),
        }
    }

    /// Per activity: the host index of its innermost launching op.
    pub fn owner_ops(&self) -> Vec<Option<u32>> {
        (0..self.owner.len())
            .map(|a| self.owner(a).map(|o| self.op(o) as u32))
            .collect()
    }

    /// The innermost launching op of activity `a`.
    pub(crate) fn owner(&self, a: usize) -> Option<OpRef> {
        self.owner[a].get()
    }

    /// The host index of an op.
    pub(crate) fn op(&self, o: OpRef) -> usize {
        self.threads.get(o.thread).op(o.op as usize)
    }

    /// Which execution of its op's work activity `a` is: the graph launch that replayed it,
    /// or `u32::MAX` for work launched directly (one execution per call).
    pub(crate) fn execution(&self, a: usize) -> u32 {
        self.replay.get(&(a as u32)).copied().unwrap_or(u32::MAX)
    }
}

/// Per activity, its bucket: the bucket of the nearest enclosing op an op rule matches
/// (`rules/ops.toml`), else its kernel name's; and whether that op view applied (the trace has
/// cpu_ops that launched GPU work). Inputs without ops (rocprof) keep kernel-name buckets.
pub fn activity_buckets(
    trace: &Trace,
    index: &OpIndex,
    rules: &RuleSet,
    classified: &Classified,
) -> (Vec<Bucket>, bool) {
    let acts = &trace.activities;
    // Copies and fills are memory whatever they are called and whichever op launched them
    // (FEED.md "memory"): a convolution's memset is not convolution work.
    let is_copy = |a: usize| matches!(acts.kind[a], ActivityKind::Memcpy | ActivityKind::Memset);
    let mut out: Vec<Bucket> = (0..acts.len())
        .map(|a| {
            if is_copy(a) {
                Bucket::Memory
            } else {
                classified.get(acts.name[a]).bucket
            }
        })
        .collect();
    if index.threads.is_empty() {
        return (out, false);
    }
    let decides = trace.names.per_name(|n| rules.ops.bucket_of(n));
    let mut applied = false;
    for (a, bucket) in out.iter_mut().enumerate() {
        let Some(o) = index.owner(a) else {
            continue;
        };
        applied = true;
        // The runtime's copy/fill kernels (`__amd_rocclr_fillBuffer`) stay memory too, and
        // collective kernels stay communication: context parallel's all-gathers inside an
        // attention op are not attention work.
        if matches!(*bucket, Bucket::Memory | Bucket::Communication) {
            continue;
        }
        let t = index.threads.get(o.thread);
        let mut cur = Some(o.op as usize);
        while let Some(i) = cur {
            if let Some(b) = decides[trace.host.name[t.op(i)].index()] {
                *bucket = b;
                break;
            }
            cur = t.parent(i);
        }
    }
    (out, applied)
}
