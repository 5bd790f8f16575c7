//! The annotated activity table: what the analysis decided about each GPU activity, computed
//! once and read by every output that writes activities back out (Parquet/CSV, Perfetto).
//! Columns are indexed like `trace.activities`; strings are resolved through the trace.

use crate::classify::{Bucket, Classified, KernelTag};
use crate::model::{NameId, Trace};

/// Per GPU activity: bucket, kernel-name class (family, library, rule), step, launching op,
/// innermost `nn.Module` and user source line, and whether it counts in `summary.kernel_ns`.
#[derive(Debug, Default)]
pub struct ActivityTable {
    /// The feed's bucket (the launching op's where an op rule decides).
    pub bucket: Vec<Bucket>,
    /// Per distinct name: its kernel-name class.
    pub classified: Classified,
    /// Rule ids by rule index (what `classified` refers to).
    pub rule_ids: Vec<String>,
    /// Index of the step (of the activity's input) it was launched in.
    pub step: Vec<Option<u32>>,
    /// Per input: its steps' `ProfilerStep#N` numbers.
    pub step_numbers: Vec<Vec<u64>>,
    /// Host index of the innermost launching op.
    pub op: Vec<Option<u32>>,
    /// Innermost `nn.Module` frame and user source frame around the launch (`NameId::NONE`
    /// without one); empty when the trace has no such frames.
    pub module: Vec<NameId>,
    /// Per activity: the user source frame around its launch.
    pub source: Vec<NameId>,
    /// Counts in the analysis (`summary.kernel_ns`, `buckets`): inside the selected steps.
    pub in_window: Vec<bool>,
}

/// One activity's annotations, resolved to strings.
#[derive(Clone, Debug, PartialEq)]
pub struct Annotation<'a> {
    pub bucket: Bucket,
    pub family: &'a str,
    /// The rule's tag, what detectors key on.
    pub tag: Option<KernelTag>,
    pub library: &'a str,
    pub rule: Option<&'a str>,
    pub step: Option<u64>,
    pub op: Option<&'a str>,
    pub module: Option<&'a str>,
    pub source: Option<&'a str>,
    pub rank: Option<u32>,
    pub in_window: bool,
}

impl ActivityTable {
    /// The table of a whole trace from the tables of its parts: `parts` holds each part's table
    /// with the trace's input indices it was cut from ([`Trace::subset`] keeps the order of
    /// activities and host events, and the names).
    pub fn stitch(trace: &Trace, parts: Vec<(ActivityTable, Vec<u32>)>) -> ActivityTable {
        let n = trace.activities.len();
        let mut out = ActivityTable {
            bucket: vec![Bucket::Other; n],
            step: vec![None; n],
            step_numbers: vec![Vec::new(); trace.inputs.len()],
            op: vec![None; n],
            in_window: vec![false; n],
            ..Default::default()
        };
        let frames = parts.iter().any(|(t, _)| !t.module.is_empty());
        if frames {
            out.module = vec![NameId::NONE; n];
            out.source = vec![NameId::NONE; n];
        }
        // Per input of the trace: its part and its index there.
        let mut place: Vec<Option<(usize, u32)>> = vec![None; trace.inputs.len()];
        for (p, (_, inputs)) in parts.iter().enumerate() {
            for (local, &i) in inputs.iter().enumerate() {
                place[i as usize] = Some((p, local as u32));
            }
        }
        // Host events of each part, in the trace's numbering.
        let mut host_of: Vec<Vec<u32>> = vec![Vec::new(); parts.len()];
        for (h, i) in trace.host.input.iter().enumerate() {
            if let Some((p, _)) = place[i as usize] {
                host_of[p].push(h as u32);
            }
        }
        let mut next = vec![0usize; parts.len()];
        for (a, i) in trace.activities.input.iter().enumerate() {
            let Some((p, _)) = place[i as usize] else {
                continue;
            };
            let t = &parts[p].0;
            let k = next[p];
            next[p] += 1;
            out.bucket[a] = t.bucket[k];
            out.step[a] = t.step[k];
            out.op[a] = t.op[k].map(|h| host_of[p][h as usize]);
            out.in_window[a] = t.in_window[k];
            if frames && !t.module.is_empty() {
                out.module[a] = t.module[k];
                out.source[a] = t.source[k];
            }
        }
        for (i, pl) in place.iter().enumerate() {
            if let Some((p, local)) = pl {
                out.step_numbers[i] = parts[*p].0.step_numbers[*local as usize].clone();
            }
        }
        for (t, _) in parts {
            if out.rule_ids.is_empty() {
                out.rule_ids = t.rule_ids;
            }
            out.classified.absorb(t.classified);
        }
        out
    }

    /// Number of activities.
    pub fn len(&self) -> usize {
        self.bucket.len()
    }
    /// Whether it holds no activity.
    pub fn is_empty(&self) -> bool {
        self.bucket.is_empty()
    }

    /// Activity `a`'s annotations (`trace` is the one the table was computed from).
    pub fn get<'a>(&'a self, trace: &'a Trace, a: usize) -> Annotation<'a> {
        let acts = &trace.activities;
        let input = acts.input[a] as usize;
        let class = self.classified.get(acts.name[a]);
        let frame = |column: &[NameId]| {
            column
                .get(a)
                .filter(|&&n| n != NameId::NONE)
                .map(|&n| trace.names.get(n))
        };
        Annotation {
            bucket: self.bucket[a],
            family: &class.family,
            tag: class.tag,
            library: &class.library,
            rule: class.rule.map(|r| self.rule_ids[r].as_str()),
            step: self.step[a].map(|s| self.step_numbers[input][s as usize]),
            op: self.op[a].map(|h| trace.names.get(trace.host.name[h as usize])),
            module: frame(&self.module),
            source: frame(&self.source),
            rank: trace.inputs[input].rank,
            in_window: self.in_window[a],
        }
    }
}
