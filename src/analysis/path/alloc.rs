//! Allocator calls that waited for the GPU: one of the step model's waits.
//!
//! A device allocation (`cudaMalloc`, `hipMalloc` and kin) is host work most of the time, but
//! the driver may hold it until the device drains (HIP's `hipMalloc` can synchronize; CUDA's
//! may when it must reclaim memory). The trace does not say which; the timing does. Its own
//! cost says nothing (it grows with the size: 6 µs to 764 ms for the `cudaMalloc`s of one of
//! HTA's sample traces), so a malloc is taken as having waited when the device drained while
//! it ran and it returned right after:
//! - the work launched before it that ended last (on any stream of its input) was still
//!   running [`RETURN_NS`] after the call started, and
//! - the call returned within [`RETURN_NS`] of that work's end.
//!
//! Then the call returned because that work ended, as a synchronize does: the walk follows it
//! to the GPU, and a replay returns it the same latency after that work's new end.

use crate::model::{NameId, Trace};

/// How soon after the GPU work ends an allocator call that waited for it returns: as a
/// synchronize does. Of the 486 synchronizes that waited over 20 µs in the NVIDIA traces of the
/// fixtures and `../shared/corpus`, the median returned 8.9 µs after its work ended, the 90th
/// percentile 24 µs, the 99th 34 µs. A call that returns later did its own work after the
/// drain; one whose wait is shorter than this cannot be told from a coincidence.
pub(crate) const RETURN_NS: i64 = 35_000;

/// An allocator call that waited for the GPU: it returned at `end`, after `activity` ended.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AllocWait {
    pub thread: u32,
    pub start: i64,
    pub end: i64,
    pub activity: u32,
    pub name: NameId,
    /// The call's host event.
    pub host: u32,
}

/// The allocator calls of one input (`calls`, host events) that waited for the GPU.
/// `last_before(t)` is the activity launched before `t` that ended last, on any stream.
pub(crate) fn allocator_waits(
    trace: &Trace,
    calls: &[u32],
    last_before: &dyn Fn(i64) -> Option<u32>,
) -> Vec<AllocWait> {
    let (acts, host) = (&trace.activities, &trace.host);
    let mut out = Vec::new();
    for &h in calls {
        let hi = h as usize;
        let (s, e) = (host.ts_ns[hi], host.end_ns(hi));
        let Some(a) = last_before(s) else {
            continue;
        };
        let done = acts.end_ns(a as usize);
        // Clock skew aside, the work ended before the call returned, and not just after it began.
        if done - s <= RETURN_NS || !(-1_000..=RETURN_NS).contains(&(e - done)) {
            continue;
        }
        out.push(AllocWait {
            thread: host.thread[hi],
            start: s,
            end: e,
            activity: a,
            name: host.name[hi],
            host: h,
        });
    }
    out
}
