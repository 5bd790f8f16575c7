//! A host thread's time as segments: what it was doing, sorted and disjoint, with what the
//! allocator, syncs and the data loader painted over its ops and calls.

use crate::analysis::path::Label;
use crate::model::NameId;

/// A span of one host thread's time and what the thread was doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HostSeg {
    pub start: i64,
    pub end: i64,
    pub label: Label,
    /// The event it is inside (an op, a runtime call, the loader's range).
    pub name: NameId,
}

/// The union of possibly overlapping segments, sorted (the first one's label and name kept).
pub(crate) fn disjoint(mut v: Vec<HostSeg>) -> Vec<HostSeg> {
    v.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    let mut out: Vec<HostSeg> = Vec::with_capacity(v.len());
    for s in v {
        match out.last_mut() {
            Some(last) if s.start < last.end => last.end = last.end.max(s.end),
            _ => out.push(s),
        }
    }
    out
}

/// `base` (sorted, disjoint) with `over` (sorted, disjoint) painted on top, sorted: what is
/// left of `base` and `over` merged as they are made (both come in order; a sort of the
/// millions of segments took a fifth of the model on a 2 GB trace).
pub(crate) fn paint(base: Vec<HostSeg>, over: &[HostSeg]) -> Vec<HostSeg> {
    if over.is_empty() {
        return base;
    }
    let mut out: Vec<HostSeg> = Vec::with_capacity(base.len() + 2 * over.len());
    // The next of `over` to merge in: before any piece of `base` that sorts after it.
    let mut next = 0;
    let emit = |out: &mut Vec<HostSeg>, next: &mut usize, seg: HostSeg| {
        while *next < over.len() && (over[*next].start, over[*next].end) < (seg.start, seg.end) {
            out.push(over[*next]);
            *next += 1;
        }
        out.push(seg);
    };
    let mut j = 0;
    for b in base {
        let mut cur = b.start;
        while j < over.len() && over[j].end <= cur {
            j += 1;
        }
        let mut k = j;
        while k < over.len() && over[k].start < b.end {
            if over[k].start > cur {
                let seg = HostSeg {
                    start: cur,
                    end: over[k].start,
                    ..b
                };
                emit(&mut out, &mut next, seg);
            }
            cur = cur.max(over[k].end);
            k += 1;
        }
        if cur < b.end {
            emit(&mut out, &mut next, HostSeg { start: cur, ..b });
        }
    }
    out.extend_from_slice(&over[next..]);
    out
}

#[cfg(test)]
mod tests {
    use super::{paint, HostSeg, Label};
    use crate::model::NameId;

    /// Painting merges as it goes what sorting the pieces and the paint together gives: over
    /// segments before, inside, across and after the base's, touching them or not.
    #[test]
    fn painting_keeps_the_segments_sorted() {
        let seg = |start: i64, end: i64, label| HostSeg {
            start,
            end,
            label,
            name: NameId::NONE,
        };
        let base: Vec<HostSeg> = [(0, 10), (10, 20), (25, 40), (50, 51), (60, 90)]
            .iter()
            .map(|&(s, e)| seg(s, e, Label::Launch))
            .collect();
        let overs: [&[(i64, i64)]; 6] = [
            &[(-5, -1)],
            &[(2, 4), (5, 12), (30, 55)],
            &[(0, 10), (20, 25)],
            &[(-3, 100)],
            &[(40, 50), (51, 60), (95, 99)],
            &[(1, 2), (3, 4), (61, 62), (63, 64), (89, 91)],
        ];
        for over in overs {
            let over: Vec<HostSeg> = over.iter().map(|&(s, e)| seg(s, e, Label::Sync)).collect();
            let got = paint(base.clone(), &over);
            let mut want: Vec<HostSeg> = Vec::new();
            for b in &base {
                // What of `b` no segment of `over` covers, by unit of time.
                let free = |t: i64| !over.iter().any(|o| o.start <= t && t < o.end);
                let mut t = b.start;
                while t < b.end {
                    if free(t) {
                        let s = t;
                        while t < b.end && free(t) {
                            t += 1;
                        }
                        want.push(HostSeg {
                            start: s,
                            end: t,
                            ..*b
                        });
                    } else {
                        t += 1;
                    }
                }
            }
            want.extend_from_slice(&over);
            want.sort_by_key(|s| (s.start, s.end));
            assert_eq!(got, want, "{over:?}");
        }
    }
}
