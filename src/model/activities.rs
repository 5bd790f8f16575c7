//! GPU activities (kernels, memcpys, memsets) as a struct of arrays.

use crate::model::columns::{plausible, retain_by, Ids, MAX_ACTIVITY_NS};
use crate::model::intern::NameId;
use serde::Serialize;

/// What kind of GPU activity a row of [`GpuActivities`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    /// A kernel dispatch.
    Kernel,
    /// A memory copy (host to device, device to host, or device to device).
    Memcpy,
    /// A memory fill.
    Memset,
}

/// GPU activities (kernels, memcpys, memsets) as a struct of arrays: row `i` is
/// `(kind[i], name[i], input[i], …)`.
#[derive(Default, Debug, Clone)]
pub struct GpuActivities {
    /// What each row is.
    pub kind: Vec<ActivityKind>,
    /// Kernel or copy name, interned in `Trace::names`.
    pub name: Vec<NameId>,
    /// Index into `Trace::inputs` (one entry per file and rank).
    pub input: super::columns::Runs,
    /// GPU index within the input (Kineto `device`, rocprof agent or GPU id); see `Device::id`.
    pub device: Vec<u32>,
    /// Stream (CUDA/HIP) or queue number on its device; 0 when the trace has none.
    pub stream: Vec<u32>,
    /// Start on the trace's clock, in ns.
    pub ts_ns: Vec<i64>,
    /// Duration, in ns.
    pub dur_ns: Vec<i64>,
    /// Runtime correlation id linking the activity to its launch call; 0 when absent.
    pub correlation: Ids,
    /// `External id` of the launching cpu_op; 0 when absent.
    pub external_id: Ids,
    /// Workgroups (thread blocks) of a kernel's grid; 0 when the trace does not say.
    pub workgroups: Vec<u32>,
    /// The collective arguments of the few NCCL/RCCL kernels that carry them, sparse:
    /// (row, interned [`comms::CommArgs`]) in row order.
    comm: Vec<(u32, NameId)>,
}

/// One GPU activity, as readers hand it to [`GpuActivities::push`].
#[derive(Debug, Clone, Copy)]
pub struct Activity {
    /// What it is.
    pub kind: ActivityKind,
    /// Its name, interned.
    pub name: NameId,
    /// Index into `Trace::inputs`.
    pub input: u32,
    /// GPU index within the input.
    pub device: u32,
    /// Stream or queue number on its device; 0 when unknown.
    pub stream: u32,
    /// Start on the trace's clock, in ns.
    pub ts_ns: i64,
    /// Duration, in ns.
    pub dur_ns: i64,
    /// Runtime correlation id linking it to its launch call; 0 when absent.
    pub correlation: u64,
    /// `External id` of the launching cpu_op; 0 when absent.
    pub external_id: u64,
    /// Workgroups of a kernel's grid (0: unknown).
    pub workgroups: u32,
    /// The interned `comms::CommArgs` of a collective kernel ([`NameId::NONE`]: none).
    pub comm: NameId,
}

impl GpuActivities {
    /// Drops the activities whose times cannot be real ([`MAX_ACTIVITY_NS`], `MAX_TS_NS`);
    /// returns how many, per input.
    pub fn drop_implausible(&mut self) -> std::collections::BTreeMap<u32, u64> {
        let (keep, dropped) = plausible(
            &self.ts_ns,
            self.dur_ns.iter().copied(),
            &self.input,
            MAX_ACTIVITY_NS,
        );
        if !dropped.is_empty() {
            retain_by(&mut self.kind, &keep);
            retain_by(&mut self.name, &keep);
            self.input.retain_by(&keep);
            retain_by(&mut self.device, &keep);
            retain_by(&mut self.stream, &keep);
            retain_by(&mut self.ts_ns, &keep);
            retain_by(&mut self.dur_ns, &keep);
            self.correlation.retain_by(&keep);
            self.external_id.retain_by(&keep);
            retain_by(&mut self.workgroups, &keep);
            // Rows move down by the number of dropped rows before them.
            let mut kept_before = Vec::with_capacity(keep.len());
            let mut n = 0u32;
            for &k in &keep {
                kept_before.push(n);
                n += u32::from(k);
            }
            self.comm.retain(|&(row, _)| keep[row as usize]);
            for (row, _) in &mut self.comm {
                *row = kept_before[*row as usize];
            }
        }
        dropped
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.name.len()
    }
    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.name.is_empty()
    }
    /// Grows every column by half when full (see [`HostEvents::push`]).
    fn grow(&mut self) {
        let len = self.name.len();
        if len < self.name.capacity() {
            return;
        }
        let more = (len / 2).max(1024);
        self.kind.reserve_exact(more);
        self.name.reserve_exact(more);
        self.device.reserve_exact(more);
        self.stream.reserve_exact(more);
        self.ts_ns.reserve_exact(more);
        self.dur_ns.reserve_exact(more);
        self.correlation.reserve_exact(more);
        self.external_id.reserve_exact(more);
        self.workgroups.reserve_exact(more);
    }
    /// Appends one activity as the last row.
    pub fn push(&mut self, a: Activity) {
        self.grow();
        self.kind.push(a.kind);
        self.name.push(a.name);
        self.input.push(a.input);
        self.device.push(a.device);
        self.stream.push(a.stream);
        self.ts_ns.push(a.ts_ns);
        self.dur_ns.push(a.dur_ns);
        self.correlation.push(a.correlation);
        self.external_id.push(a.external_id);
        self.workgroups.push(a.workgroups);
        if a.comm != NameId::NONE {
            self.comm.push((self.name.len() as u32 - 1, a.comm));
        }
    }
    /// The interned `comms::CommArgs` of row `i` ([`NameId::NONE`] for most rows).
    pub fn comm(&self, i: usize) -> NameId {
        match self.comm.binary_search_by_key(&(i as u32), |&(row, _)| row) {
            Ok(k) => self.comm[k].1,
            Err(_) => NameId::NONE,
        }
    }
    /// Rows with collective arguments, in row order.
    pub fn comm_rows(&self) -> impl Iterator<Item = (usize, NameId)> + '_ {
        self.comm.iter().map(|&(row, id)| (row as usize, id))
    }
    /// Appends another table's rows column by column, renaming names and shifting inputs.
    /// Appends another table's rows, renaming their names and inputs.
    pub fn extend_from(
        &mut self,
        o: GpuActivities,
        name: impl Fn(NameId) -> NameId,
        input: impl Fn(u32) -> u32,
    ) {
        let base = self.name.len() as u32;
        self.comm
            .extend(o.comm.into_iter().map(|(row, id)| (base + row, name(id))));
        self.kind.extend(o.kind);
        self.name.extend(o.name.into_iter().map(&name));
        self.input.append(o.input, input);
        self.device.extend(o.device);
        self.stream.extend(o.stream);
        self.ts_ns.extend(o.ts_ns);
        self.dur_ns.extend(o.dur_ns);
        self.correlation.append(o.correlation);
        self.external_id.append(o.external_id);
        self.workgroups.extend(o.workgroups);
    }
    /// Gives back the columns' spare capacity once reading is done.
    pub fn shrink_to_fit(&mut self) {
        self.kind.shrink_to_fit();
        self.name.shrink_to_fit();
        self.input.shrink_to_fit();
        self.device.shrink_to_fit();
        self.stream.shrink_to_fit();
        self.ts_ns.shrink_to_fit();
        self.dur_ns.shrink_to_fit();
        self.correlation.shrink_to_fit();
        self.external_id.shrink_to_fit();
        self.workgroups.shrink_to_fit();
        self.comm.shrink_to_fit();
    }
    /// End of row `i` (`ts + dur`).
    pub fn end_ns(&self, i: usize) -> i64 {
        self.ts_ns[i].saturating_add(self.dur_ns[i])
    }
    /// Row `i` as one value (the inverse of [`GpuActivities::push`]).
    pub fn row(&self, i: usize) -> Activity {
        Activity {
            kind: self.kind[i],
            name: self.name[i],
            input: self.input[i],
            device: self.device[i],
            stream: self.stream[i],
            ts_ns: self.ts_ns[i],
            dur_ns: self.dur_ns[i],
            correlation: self.correlation.get(i),
            external_id: self.external_id.get(i),
            workgroups: self.workgroups[i],
            comm: self.comm(i),
        }
    }
}
