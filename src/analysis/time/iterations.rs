//! Iterations of traces without `ProfilerStep#N` (serving engines, generate loops): which
//! annotation marks them, each one's phase (prefill, decode, mixed), the time its stream spent
//! queued behind work outside the trace, and which ones are not steady state (graph capture,
//! compile, warm-up). [`crate::analysis::time::steps::Steps`] turns the marked ranges into steps, so the window,
//! `--steps`, the per-step partition and the step findings work on iterations unchanged.

use crate::analysis::time::links::{is_compile_event, Links};
use crate::analysis::time::phases::{Exclusion, MarkerSource, Phase};
use crate::model::{HostKind, NameId, Trace};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::LazyLock;
/// How an input's iterations were found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationMarker {
    pub source: MarkerSource,
    /// The marker's name with its numbers as `#` (known engines), or the name itself.
    pub marker: String,
}

/// Python frames of serving engines' per-iteration functions.
const ENGINE_FUNCTIONS: &[&str] = &["execute_model", "run_batch", "forward_batch_generation"];

/// Generic markers must cover at least this share of their input's GPU time.
const MIN_COVERAGE: f64 = 0.5;

static VLLM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^execute_\d+_context_(\d+)\([^)]*\)_generation_(\d+)\([^)]*\)$")
        .expect("valid regex")
});
static VLLM_NATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^execute_context_(\d+)\([^)]*\)_generation_(\d+)\([^)]*\)$").expect("valid regex")
});
static SGLANG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^step\[(DECODE|EXTEND|PREFILL|MIXED|IDLE)\b[^\]]*\]$").expect("valid regex")
});

/// A serving engine's iteration marker: its family and the phase its name states (`None` for
/// an idle step, which is not an iteration).
pub fn parse_marker(name: &str) -> Option<(MarkerSource, Option<Phase>)> {
    let by_requests = |c: &regex::Captures| {
        let n = |i: usize| c[i].parse::<u64>().unwrap_or(0);
        match (n(1) > 0, n(2) > 0) {
            (true, true) => Some(Phase::Mixed),
            (true, false) => Some(Phase::Prefill),
            (false, true) => Some(Phase::Decode),
            (false, false) => None,
        }
    };
    if let Some(c) = VLLM.captures(name) {
        return Some((MarkerSource::Vllm, by_requests(&c)));
    }
    if let Some(c) = VLLM_NATIVE.captures(name) {
        return Some((MarkerSource::VllmNative, by_requests(&c)));
    }
    let c = SGLANG.captures(name)?;
    let phase = match &c[1] {
        "DECODE" => Some(Phase::Decode),
        "EXTEND" | "PREFILL" => Some(Phase::Prefill),
        "MIXED" => Some(Phase::Mixed),
        _ => None,
    };
    Some((MarkerSource::Sglang, phase))
}

/// How the reports name an engine's marker family.
fn family_pattern(source: MarkerSource) -> &'static str {
    match source {
        MarkerSource::Vllm => "execute_#_context_#(…)_generation_#(…)",
        MarkerSource::VllmNative => "execute_context_#(…)_generation_#(…)",
        MarkerSource::Sglang => "step[…]",
        _ => "",
    }
}

/// A name with each run of digits as `#`: the iterations of one marker differ only in counts.
pub fn skeleton(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for ch in name.chars() {
        if ch.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(ch);
        }
    }
    out
}

/// An input's iterations: how they were found, and the host events that mark them (by start).
pub struct Marked {
    pub marker: IterationMarker,
    pub occurrences: Vec<u32>,
    /// The phase each marker's name states (known engines), per occurrence.
    pub stated: Vec<Option<Phase>>,
}

/// The function of a Python frame's name (`vllm/…/gpu_model_runner.py(3380): execute_model`).
fn python_function(name: &str) -> &str {
    name.rsplit_once("): ").map_or(name, |(_, f)| f)
}

/// Annotations PyTorch, its process groups and the profiler write themselves: never markers
/// (the same ones the region tree leaves out as not the user's).
fn is_framework_annotation(name: &str) -> bool {
    crate::analysis::time::names::is_pytorch_phase(name)
        || crate::analysis::time::names::is_not_a_region(name)
}

/// A candidate marker: its key, and its occurrences as host indices.
#[derive(Default)]
struct Group {
    source: Option<MarkerSource>,
    hosts: Vec<u32>,
}

/// Per input without `ProfilerStep#N` (every input with `flag`): its iteration marker, if one
/// is found. Known engine markers first (the one covering the most GPU time; the outer one
/// when two cover about as much), then a repeating user annotation covering at least half the
/// GPU time and not nested in another such, then an engine's Python frame.
pub fn find(
    trace: &Trace,
    links: &Links,
    flag: Option<&str>,
    has_profiler_steps: &[bool],
) -> Vec<Option<Marked>> {
    let host = &trace.host;
    let n_inputs = trace.inputs.len();
    let wanted: Vec<bool> = (0..n_inputs)
        .map(|i| flag.is_some() || !has_profiler_steps[i])
        .collect();
    if !wanted.iter().any(|&w| w) {
        return (0..n_inputs).map(|_| None).collect();
    }
    // Candidate groups per input, keyed by what makes them one marker.
    let mut groups: Vec<BTreeMap<(u8, String), Group>> =
        (0..n_inputs).map(|_| BTreeMap::new()).collect();
    let names = &trace.names;
    // Per name, once: an engine's marker, and the name's skeleton (host events repeat names).
    let known: Vec<Option<(MarkerSource, Option<Phase>)>> = names.per_name(parse_marker);
    let mut skeletons: BTreeMap<NameId, String> = BTreeMap::new();
    for h in 0..host.len() {
        let input = host.input[h] as usize;
        if !wanted[input] {
            continue;
        }
        let id = host.name[h];
        let name = names.get(id);
        let mut skeleton = || {
            skeletons
                .entry(id)
                .or_insert_with(|| skeleton(name))
                .clone()
        };
        let key = match (host.kind[h], flag) {
            (HostKind::Annotation, Some(f)) if name == f || name.starts_with(f) => {
                Some((0, f.to_string(), MarkerSource::Flag))
            }
            (HostKind::Python, Some(f)) if python_function(name) == f || name == f => {
                Some((1, f.to_string(), MarkerSource::Flag))
            }
            (_, Some(_)) => None,
            // An engine's markers are one family, whatever their phase says (SGLang's
            // `step[DECODE bs=#]` and `step[EXTEND bs=# toks=#]` mark the same loop).
            (HostKind::Annotation, None) => match known[id.index()] {
                Some((_, None)) => None,
                Some((source, Some(_))) => Some((0, family_pattern(source).to_string(), source)),
                None if is_framework_annotation(name) => None,
                None => Some((1, skeleton(), MarkerSource::Annotation)),
            },
            (HostKind::Python, None) if ENGINE_FUNCTIONS.contains(&python_function(name)) => {
                Some((2, skeleton(), MarkerSource::Python))
            }
            _ => None,
        };
        if let Some((tier, k, source)) = key {
            let g = groups[input].entry((tier, k)).or_default();
            g.source = Some(source);
            g.hosts.push(h as u32);
        }
    }
    let coverage = Coverage::build(trace, links, &wanted);
    groups
        .into_iter()
        .enumerate()
        .map(|(input, mut g)| {
            for grp in g.values_mut() {
                grp.hosts.sort_unstable_by_key(|&h| {
                    (
                        host.ts_ns[h as usize],
                        std::cmp::Reverse(host.dur_ns.get(h as usize)),
                        h,
                    )
                });
                if flag.is_some() || grp.source != Some(MarkerSource::Annotation) {
                    // Known markers and the flag's: the outermost occurrences.
                    grp.hosts = outermost(trace, &grp.hosts);
                }
            }
            choose(trace, input, g, &coverage)
        })
        .collect()
}

/// Occurrences not inside an earlier one on the same thread (recursion, nested re-entries).
fn outermost(trace: &Trace, sorted: &[u32]) -> Vec<u32> {
    let host = &trace.host;
    let mut open_until: BTreeMap<u32, i64> = BTreeMap::new();
    let mut out = Vec::with_capacity(sorted.len());
    for &h in sorted {
        let (t, end) = (host.ts_ns[h as usize], host.end_ns(h as usize));
        let until = open_until
            .entry(host.thread[h as usize])
            .or_insert(i64::MIN);
        if t >= *until {
            out.push(h);
            *until = end;
        }
    }
    out
}

/// Whether the occurrences overlap one another on one thread.
fn self_overlapping(trace: &Trace, sorted: &[u32]) -> bool {
    outermost(trace, sorted).len() != sorted.len()
}

/// Which group of an input marks its iterations.
fn choose(
    trace: &Trace,
    input: usize,
    groups: BTreeMap<(u8, String), Group>,
    coverage: &Coverage,
) -> Option<Marked> {
    let host = &trace.host;
    // (tier, coverage, group) of the groups that qualify.
    let mut qualified: Vec<(u8, f64, String, Group)> = Vec::new();
    for ((tier, key), g) in groups {
        let source = g.source?;
        let generic = matches!(source, MarkerSource::Annotation | MarkerSource::Python);
        if generic && (g.hosts.len() < 2 || self_overlapping(trace, &g.hosts)) {
            continue;
        }
        let c = coverage.of(trace, input, &g.hosts);
        if c >= MIN_COVERAGE || source == MarkerSource::Flag {
            qualified.push((tier, c, key, g));
        }
    }
    // A generic marker nested in another qualifying one is a phase of it, not the iteration.
    let spans: Vec<Spans> = qualified
        .iter()
        .map(|q| Spans::of(trace, &q.3.hosts))
        .collect();
    let nested: Vec<bool> = qualified
        .iter()
        .enumerate()
        .map(|(i, (tier, _, _, g))| {
            *tier > 0
                && spans
                    .iter()
                    .enumerate()
                    .any(|(j, o)| i != j && g.hosts.iter().all(|&h| o.contains(trace, h)))
        })
        .collect();
    let mut best: Option<(u8, f64, String, Group)> = None;
    for (q, nest) in qualified.into_iter().zip(nested) {
        if nest {
            continue;
        }
        let better = match &best {
            None => true,
            Some(b) if q.0 != b.0 => q.0 < b.0,
            // Within 2 points, keep the earlier-starting (outer) marker.
            Some(b) if (q.1 - b.1).abs() <= 0.02 => {
                host.ts_ns[q.3.hosts[0] as usize] < host.ts_ns[b.3.hosts[0] as usize]
            }
            Some(b) => q.1 > b.1,
        };
        if better {
            best = Some(q);
        }
    }
    let (_, _, key, g) = best?;
    let source = g.source?;
    let stated = g
        .hosts
        .iter()
        .map(|&h| parse_marker(trace.names.get(host.name[h as usize])).and_then(|p| p.1))
        .collect();
    Some(Marked {
        marker: IterationMarker {
            source,
            marker: key,
        },
        occurrences: g.hosts,
        stated,
    })
}

/// A group's occurrences per process, by start, with the latest end so far: whether a host
/// event lies inside one of them is a binary search.
struct Spans(BTreeMap<u64, (Vec<i64>, Vec<i64>)>);

impl Spans {
    fn of(trace: &Trace, hosts: &[u32]) -> Spans {
        let host = &trace.host;
        let mut by: BTreeMap<u64, Vec<(i64, i64)>> = BTreeMap::new();
        for &h in hosts {
            by.entry(host.pid(h as usize))
                .or_default()
                .push((host.ts_ns[h as usize], host.end_ns(h as usize)));
        }
        Spans(
            by.into_iter()
                .map(|(pid, mut v)| {
                    v.sort_unstable();
                    let mut latest = i64::MIN;
                    let ends = v
                        .iter()
                        .map(|x| {
                            latest = latest.max(x.1);
                            latest
                        })
                        .collect();
                    (pid, (v.into_iter().map(|x| x.0).collect(), ends))
                })
                .collect(),
        )
    }
    /// Whether host event `h` lies inside one of the spans of its process (and is shorter).
    fn contains(&self, trace: &Trace, h: u32) -> bool {
        let host = &trace.host;
        let (t, end) = (host.ts_ns[h as usize], host.end_ns(h as usize));
        let Some((starts, ends)) = self.0.get(&host.pid(h as usize)) else {
            return false;
        };
        let k = starts.partition_point(|&s| s <= t);
        k > 0 && ends[k - 1] >= end && (ends[k - 1] > end || starts[0] < t)
    }
}

/// Launch times, sorted, and the running sum of the launched activities' durations (one more).
type LaunchSums = (Vec<i64>, Vec<i64>);

/// Per input and host process: the launched GPU activities by launch time, with the running
/// sum of their durations, so the GPU time launched inside a range is two binary searches.
struct Coverage {
    per_input: Vec<BTreeMap<u64, LaunchSums>>,
    total: Vec<i64>,
}

impl Coverage {
    fn build(trace: &Trace, links: &Links, wanted: &[bool]) -> Coverage {
        let acts = &trace.activities;
        let mut lists: Vec<BTreeMap<u64, Vec<(i64, i64)>>> = vec![BTreeMap::new(); wanted.len()];
        let mut total = vec![0i64; wanted.len()];
        for a in 0..acts.len() {
            let input = acts.input[a] as usize;
            if !wanted[input] {
                continue;
            }
            total[input] += acts.dur_ns[a];
            if let Some(h) = links.launch[a] {
                let pid = trace.host.pid(h as usize);
                lists[input]
                    .entry(pid)
                    .or_default()
                    .push((trace.host.ts_ns[h as usize], acts.dur_ns[a]));
            }
        }
        let per_input = lists
            .into_iter()
            .map(|m| {
                m.into_iter()
                    .map(|(pid, mut v)| {
                        v.sort_unstable();
                        let mut sums = Vec::with_capacity(v.len() + 1);
                        sums.push(0i64);
                        for &(_, d) in &v {
                            sums.push(sums.last().copied().unwrap_or(0) + d);
                        }
                        (pid, (v.into_iter().map(|x| x.0).collect(), sums))
                    })
                    .collect()
            })
            .collect();
        Coverage { per_input, total }
    }

    /// The share of the input's GPU time launched inside the occurrences (by start, disjoint).
    fn of(&self, trace: &Trace, input: usize, occurrences: &[u32]) -> f64 {
        let host = &trace.host;
        if self.total[input] <= 0 {
            return 0.0;
        }
        let mut covered = 0i64;
        let mut last_end: BTreeMap<u64, i64> = BTreeMap::new();
        for &h in occurrences {
            let pid = host.pid(h as usize);
            let Some((ts, sums)) = self.per_input[input].get(&pid) else {
                continue;
            };
            // Overlapping occurrences on other threads count once.
            let prev = last_end.entry(pid).or_insert(i64::MIN);
            let start = host.ts_ns[h as usize].max(*prev);
            let end = host.end_ns(h as usize);
            if end <= start {
                continue;
            }
            *prev = end;
            let lo = ts.partition_point(|&t| t < start);
            let hi = ts.partition_point(|&t| t < end);
            covered += sums[hi] - sums[lo];
        }
        covered as f64 / self.total[input] as f64
    }
}

/// Attention ops whose first two inputs are q `[B, H, L, E]` and k `[B, H, S, E]`.
fn is_sdpa(name: &str) -> bool {
    name == "aten::scaled_dot_product_attention" || name.starts_with("aten::_scaled_dot_product_")
}

/// What the ops inside one iteration say of its phase.
#[derive(Clone, Copy, Default)]
struct ShapeEvidence {
    attention_decode: u32,
    attention_prefill: u32,
    linear_decode: u32,
    linear_prefill: u32,
    backward: bool,
}

/// Per iteration (of `windows`, sorted by CPU start), its phase: the marker's name where it
/// states one, else the query length of its attention ops (one new token per sequence: decode;
/// more: prefill; both: mixed), else of its 3-D linear layers' inputs `[B, L, D]`. Shapes say
/// prefill only in an input that also decodes (a plain forward loop is a `step`); an iteration
/// with a backward pass is a `step`.
pub fn phases(
    trace: &Trace,
    input: usize,
    cpu_ranges: &[(i64, i64, u64)],
    stated: &[Option<Phase>],
) -> Vec<Phase> {
    let host = &trace.host;
    let mut evidence = vec![ShapeEvidence::default(); cpu_ranges.len()];
    if stated.iter().any(|s| s.is_none()) {
        for h in 0..host.len() {
            if host.input[h] as usize != input || host.kind[h] != HostKind::CpuOp {
                continue;
            }
            let t = host.ts_ns[h];
            let k = cpu_ranges.partition_point(|r| r.0 <= t);
            if k == 0 || t >= cpu_ranges[k - 1].1 || host.pid(h) != cpu_ranges[k - 1].2 {
                continue;
            }
            let e = &mut evidence[k - 1];
            let name = trace.names.get(host.name[h]);
            if name.starts_with("autograd::engine::evaluate_function") {
                e.backward = true;
                continue;
            }
            let sdpa = is_sdpa(name);
            if !sdpa && name != "aten::linear" {
                continue;
            }
            let dims = host.input_dims(h);
            if dims == crate::model::NameId::NONE {
                continue;
            }
            let Some(d) = crate::analysis::ops::efficiency::dims_of(trace.names.get(dims)) else {
                continue;
            };
            match (sdpa, d.first().map(Vec::as_slice)) {
                (true, Some([_, _, l, _])) => {
                    if *l == 1 {
                        e.attention_decode += 1;
                    } else if *l > 1 {
                        e.attention_prefill += 1;
                    }
                }
                (false, Some([_, l, _])) => {
                    if *l == 1 {
                        e.linear_decode += 1;
                    } else if *l > 1 {
                        e.linear_prefill += 1;
                    }
                }
                _ => {}
            }
        }
    }
    let from_shapes = |e: &ShapeEvidence| {
        if e.backward {
            return Phase::Step;
        }
        let (d, p) = if e.attention_decode + e.attention_prefill > 0 {
            (e.attention_decode, e.attention_prefill)
        } else {
            // Linear layers alone: a prefill's lm_head may run on the last token only
            // (`logits_to_keep=1`), so a small minority of one kind does not make it mixed.
            let (d, p) = (e.linear_decode, e.linear_prefill);
            let minor = d.min(p) * 10 < d.max(p);
            match (minor, d > p) {
                (true, true) => (d, 0),
                (true, false) => (0, p),
                _ => (d, p),
            }
        };
        match (d > 0, p > 0) {
            (true, true) => Phase::Mixed,
            (true, false) => Phase::Decode,
            (false, true) => Phase::Prefill,
            (false, false) => Phase::Step,
        }
    };
    let mut out: Vec<Phase> = stated
        .iter()
        .zip(&evidence)
        .map(|(s, e)| s.unwrap_or_else(|| from_shapes(e)))
        .collect();
    let decodes = stated
        .iter()
        .zip(&out)
        .any(|(s, p)| s.is_none() && matches!(p, Phase::Decode | Phase::Mixed));
    if !decodes {
        for (p, s) in out.iter_mut().zip(stated) {
            if s.is_none() && *p == Phase::Prefill {
                *p = Phase::Step;
            }
        }
    }
    out
}

/// Per iteration (CPU ranges sorted by start, with their process): whether it captures a graph
/// or compiles.
pub fn host_exclusions(
    trace: &Trace,
    input: usize,
    cpu_ranges: &[(i64, i64, u64)],
) -> Vec<Option<Exclusion>> {
    let host = &trace.host;
    let mut out = vec![None; cpu_ranges.len()];
    for h in 0..host.len() {
        if host.input[h] as usize != input {
            continue;
        }
        let name = trace.names.get(host.name[h]);
        let why = match host.kind[h] {
            HostKind::Runtime | HostKind::Driver
                if name.ends_with("StreamBeginCapture") || name.contains("GraphInstantiate") =>
            {
                Exclusion::Capture
            }
            _ if is_compile_event(name) => Exclusion::Compile,
            _ => continue,
        };
        let t = host.ts_ns[h];
        let k = cpu_ranges.partition_point(|r| r.0 <= t);
        if k > 0 && t < cpu_ranges[k - 1].1 && host.pid(h) == cpu_ranges[k - 1].2 {
            let slot = &mut out[k - 1];
            // Capture names the iteration before compile does (a capture compiles nothing).
            if slot.is_none_or(|s| why < s) {
                *slot = Some(why);
            }
        }
    }
    out
}

/// Leading iterations of each phase taking more than twice the median of the phase: warm-up
/// (a cold cache or allocator; prefill times vary with prompt length, so only the leading ones).
pub fn mark_warmup(phases: &[Phase], durations: &[i64], excluded: &mut [Option<Exclusion>]) {
    for phase in Phase::ALL {
        let idx: Vec<usize> = (0..phases.len())
            .filter(|&i| phases[i] == phase && excluded[i].is_none())
            .collect();
        if idx.len() < 3 {
            continue;
        }
        let d: Vec<i64> = idx.iter().map(|&i| durations[i]).collect();
        let median = crate::analysis::numbers::median(&d);
        for &i in &idx {
            if durations[i] as f64 > 2.0 * median {
                excluded[i] = Some(Exclusion::Warmup);
            } else {
                break;
            }
        }
    }
}

/// Time an input's GPU spent idle with its next activity already launched: the stream waited
/// on something the trace does not show (earlier unprofiled work, another stream's event), not
/// on this iteration's host. Gaps shorter than `threshold_ns` after the launch are dispatch.
/// `acts_by_start`: the input's activities with (start, end, when launched), by start.
pub fn queued_gaps(acts_by_start: &[(i64, i64, i64)], threshold_ns: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut busy_end = i64::MIN;
    for &(start, end, launch) in acts_by_start {
        if busy_end != i64::MIN && start > busy_end {
            let from = busy_end.max(launch);
            if start - from > threshold_ns {
                out.push((from, start));
            }
        } else if busy_end == i64::MIN && start - launch > threshold_ns {
            out.push((launch, start));
        }
        busy_end = busy_end.max(end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::time::phases::{merge_phases, percentile, phase_rows, PhaseTotals};

    #[test]
    fn engine_markers_state_their_phase() {
        let vllm_decode =
            "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)";
        assert_eq!(
            parse_marker(vllm_decode),
            Some((MarkerSource::Vllm, Some(Phase::Decode)))
        );
        let vllm_prefill =
            "execute_512_context_2(sq512sk512sqsq131072sqsk131072)_generation_0(sq0sk0sqsq0sqsk0)";
        assert_eq!(
            parse_marker(vllm_prefill),
            Some((MarkerSource::Vllm, Some(Phase::Prefill)))
        );
        let vllm_mixed =
            "execute_40_context_1(sq8sk8sqsq64sqsk64)_generation_32(sq32sk100sqsq32sqsk100)";
        assert_eq!(parse_marker(vllm_mixed).unwrap().1, Some(Phase::Mixed));
        assert_eq!(
            parse_marker("execute_context_1(888_788544)_generation_0(0)"),
            Some((MarkerSource::VllmNative, Some(Phase::Prefill)))
        );
        assert_eq!(
            parse_marker("step[DECODE bs=32]"),
            Some((MarkerSource::Sglang, Some(Phase::Decode)))
        );
        assert_eq!(
            parse_marker("step[EXTEND bs=4 toks=1024]").unwrap().1,
            Some(Phase::Prefill)
        );
        assert_eq!(
            parse_marker("step[MIXED bs=9]").unwrap().1,
            Some(Phase::Mixed)
        );
        // An idle step is the engine's, but not an iteration.
        assert_eq!(
            parse_marker("step[IDLE]"),
            Some((MarkerSource::Sglang, None))
        );
        assert_eq!(parse_marker("execute_model"), None);
        assert_eq!(parse_marker("ProfilerStep#3"), None);
    }

    #[test]
    fn skeletons_hide_counts() {
        assert_eq!(
            skeleton("execute_32_context_0(sq0sk0)"),
            "execute_#_context_#(sq#sk#)"
        );
        assert_eq!(skeleton("decode_step"), "decode_step");
        assert_eq!(
            python_function("a/b.py(3380): execute_model"),
            "execute_model"
        );
    }

    #[test]
    fn warmup_is_leading_and_per_phase() {
        use Phase::*;
        let phases = [Prefill, Decode, Decode, Decode, Decode, Prefill, Decode];
        let durations = [50, 90, 10, 11, 10, 60, 40];
        let mut excluded = vec![None; 7];
        mark_warmup(&phases, &durations, &mut excluded);
        // The cold first decode goes; the slow later one stays (it is not leading).
        assert_eq!(excluded[1], Some(Exclusion::Warmup));
        assert_eq!(excluded[6], None);
        // Two prefills are too few to call one a warm-up.
        assert_eq!(excluded[0], None);
    }

    #[test]
    fn phase_rows_leave_out_excluded_and_take_nearest_rank_percentiles() {
        let mut t = PhaseTotals {
            phase: Phase::Decode,
            ..Default::default()
        };
        for (n, d) in (0..10).map(|n| (n, 100 + n as i64)) {
            t.durations.insert(n, d);
        }
        t.excluded.insert(0, (Exclusion::Warmup, 100));
        // Another rank: slower at iteration 5, and it captured in iteration 9.
        let mut other = t.clone();
        other.durations.insert(5, 500);
        other.excluded.insert(9, (Exclusion::Capture, 109));
        let merged =
            merge_phases([std::slice::from_ref(&t), std::slice::from_ref(&other)].into_iter());
        let rows = phase_rows(&merged);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        // Steady: 1..=8 with iteration 5 at 500.
        assert_eq!(r.iterations, 8);
        assert_eq!(r.p50_ns, 104);
        assert_eq!(r.p90_ns, 500);
        // 1231 / 8 = 153.875, rounded.
        assert_eq!(r.mean_ns, 154);
        let reasons: Vec<_> = r.excluded.iter().map(|e| (e.iteration, e.reason)).collect();
        assert_eq!(
            reasons,
            vec![(0, Exclusion::Warmup), (9, Exclusion::Capture)]
        );
        assert_eq!(percentile(&[], 50.0), 0);
        assert_eq!(percentile(&[7], 90.0), 7);
    }

    #[test]
    fn queued_gaps_are_waits_after_launch() {
        // Launched at 0, started at 500: queued 0..500. Then a gap 600..610 launched at 605:
        // dispatch. Then launched at 700 (busy until 610), started 2000: queued 700..2000.
        let acts = [(500, 600, 0), (610, 650, 605), (2000, 2100, 700)];
        assert_eq!(queued_gaps(&acts, 50), vec![(0, 500), (700, 2000)]);
        // Launch-bound: each starts right after its launch.
        assert!(queued_gaps(&[(10, 20, 5), (40, 50, 35)], 50).is_empty());
    }
}
