//! The fields of a Kineto event the model reads, as written: what serde or the scanner
//! ([`super::scan`]) finds in one event object, before any conversion.

use super::super::num::to_u64;
use crate::model::comms::CommArgs;
use crate::model::inductor::InductorArgs;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The event fields we read; serde skips the rest without allocating.
#[derive(Deserialize, Default, Debug)]
pub(super) struct RawEvent<'a> {
    #[serde(borrow, default)]
    pub(super) ph: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub(super) cat: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub(super) name: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub(super) pid: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub(super) tid: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub(super) ts: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub(super) dur: Option<Raw<'a>>,
    /// Absent or null: no field (every reader of it treats the two alike).
    #[serde(borrow, default, deserialize_with = "args_or_none")]
    pub(super) args: RawArgs<'a>,
}

/// `args` as an object, or none of its fields for `null`.
fn args_or_none<'de: 'a, 'a, D: serde::Deserializer<'de>>(d: D) -> Result<RawArgs<'a>, D::Error> {
    Option::<RawArgs<'a>>::deserialize(d).map(Option::unwrap_or_default)
}

/// A JSON value's text as written (a number's lexeme, a string with its quotes, a list), borrowed
/// from the input: serde's `RawValue`, or the scanner's slice of the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Raw<'a>(pub(super) &'a str);

impl<'a> Raw<'a> {
    pub(super) fn get(self) -> &'a str {
        self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(d).map(|r| Raw(r.get()))
    }
}

/// A string borrowed from the input unless it has escapes. serde borrows a `Cow<str>` field
/// only when it is not inside an `Option`: this newtype puts the borrow back (one allocation
/// per string and three per event otherwise).
#[derive(Deserialize, Debug)]
pub(super) struct Text<'a>(#[serde(borrow)] pub(super) Cow<'a, str>);

/// The `args` fields we read, in the same serde pass as the event.
#[derive(Deserialize, Default, Debug)]
pub(super) struct RawArgs<'a> {
    #[serde(rename = "External id", borrow, default)]
    pub(super) external_id: Option<Raw<'a>>,
    /// 2021 traces spell it in lower case.
    #[serde(rename = "external id", borrow, default)]
    pub(super) external_id_old: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub(super) correlation: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub(super) device: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub(super) stream: Option<Raw<'a>>,
    /// A kernel's grid, `[x, y, z]`: in workgroups (thread blocks), except for kernels
    /// `hipExtModuleLaunchKernel` launched (Tensile, hipBLASLt), where it is in work-items.
    #[serde(borrow, default)]
    pub(super) grid: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub(super) block: Option<Raw<'a>>,
    #[serde(rename = "Input Dims", borrow, default)]
    pub(super) input_dims: Option<Raw<'a>>,
    #[serde(rename = "Input type", borrow, default)]
    pub(super) input_types: Option<Raw<'a>>,
    #[serde(rename = "Concrete Inputs", borrow, default)]
    pub(super) concrete_inputs: Option<Raw<'a>>,
    #[serde(rename = "Input Strides", borrow, default)]
    pub(super) input_strides: Option<Raw<'a>>,
    /// Set per event by TraceLens when it merges ranks into one file.
    #[serde(borrow, default)]
    pub(super) rank: Option<Raw<'a>>,
    /// `with_stack` frames, innermost first: tells a 2021 `record_function` range from an op.
    #[serde(rename = "Call stack", borrow, default)]
    pub(super) call_stack: Option<Raw<'a>>,
    /// A collective's arguments, on `record_param_comms` and (since late 2023) on the NCCL/RCCL
    /// kernel it launched (see [`crate::model::comms`]).
    /// Raw values, not strings: a number or list under these common keys must not make the
    /// event unreadable.
    #[serde(rename = "Collective name", borrow, default)]
    pub(super) collective: Option<Raw<'a>>,
    #[serde(rename = "In msg nelems", borrow, default)]
    pub(super) in_nelems: Option<Raw<'a>>,
    #[serde(rename = "Out msg nelems", borrow, default)]
    pub(super) out_nelems: Option<Raw<'a>>,
    /// Before December 2023 the element counts were called sizes.
    #[serde(rename = "In msg size", borrow, default)]
    pub(super) in_nelems_old: Option<Raw<'a>>,
    #[serde(rename = "Out msg size", borrow, default)]
    pub(super) out_nelems_old: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub(super) dtype: Option<Raw<'a>>,
    #[serde(rename = "Group size", borrow, default)]
    pub(super) group_size: Option<Raw<'a>>,
    #[serde(rename = "Process Group Name", borrow, default)]
    pub(super) pg_name: Option<Raw<'a>>,
    #[serde(rename = "Process Group Description", borrow, default)]
    pub(super) pg_desc: Option<Raw<'a>>,
    #[serde(rename = "Process Group Ranks", borrow, default)]
    pub(super) pg_ranks: Option<Raw<'a>>,
    #[serde(rename = "Seq", borrow, default)]
    pub(super) seq: Option<Raw<'a>>,
    #[serde(rename = "In split size", borrow, default)]
    pub(super) in_splits: Option<Raw<'a>>,
    #[serde(rename = "Out split size", borrow, default)]
    pub(super) out_splits: Option<Raw<'a>>,
    /// A send's and a receive's peer, as its rank in the process group.
    #[serde(rename = "Dst Rank", borrow, default)]
    pub(super) dst_rank: Option<Raw<'a>>,
    #[serde(rename = "Src Rank", borrow, default)]
    pub(super) src_rank: Option<Raw<'a>>,
    /// A `[memory]` event's allocator state (`profile_memory=True`).
    #[serde(rename = "Total Allocated", borrow, default)]
    pub(super) total_allocated: Option<Raw<'a>>,
    #[serde(rename = "Total Reserved", borrow, default)]
    pub(super) total_reserved: Option<Raw<'a>>,
    #[serde(rename = "Device Id", borrow, default)]
    pub(super) device_id: Option<Raw<'a>>,
    /// c10's DeviceType: 0 the host, 1 CUDA, 6 HIP.
    #[serde(rename = "Device Type", borrow, default)]
    pub(super) device_type: Option<Raw<'a>>,
    /// Inductor's, on a Triton kernel's launcher cpu_op (see [`InductorArgs`]).
    #[serde(borrow, default)]
    pub(super) kernel_file: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub(super) kernel_num_gb: Option<Raw<'a>>,
    #[serde(borrow, default)]
    pub(super) kernel_flop: Option<Raw<'a>>,
    /// A `cuda_sync` stream wait's other stream (-1 in torch 2.11: not recorded).
    #[serde(borrow, default)]
    pub(super) wait_on_stream: Option<Raw<'a>>,
    /// A `cuda_sync` stream wait's `cudaEventRecord` correlation (-1: not recorded).
    #[serde(borrow, default)]
    pub(super) wait_on_cuda_event_record_corr_id: Option<Raw<'a>>,
}

impl RawArgs<'_> {
    /// The interned form of the collective's arguments, when the event has them.
    /// Inductor's launcher arguments, when the event has any.
    pub(super) fn inductor(&self) -> Option<String> {
        if self.kernel_file.is_none() && self.kernel_num_gb.is_none() {
            return None;
        }
        let num = |r: Option<Raw<'_>>| {
            r.and_then(|r| r.get().trim_matches('"').trim().parse::<f64>().ok())
        };
        Some(
            InductorArgs {
                file: self
                    .kernel_file
                    .and_then(|r| serde_json::from_str::<String>(r.get()).ok()),
                num_gb: num(self.kernel_num_gb),
                flop: num(self.kernel_flop),
            }
            .encode(),
        )
    }

    pub(super) fn comm(&self) -> Option<String> {
        // A string value without its quotes, a number or list as written.
        let text = |r: Option<Raw<'_>>| {
            r.map(|r| {
                let v = r.get();
                serde_json::from_str::<String>(v).unwrap_or_else(|_| v.to_string())
            })
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty() && v != "null")
        };
        let collective = text(self.collective)?;
        let num = |r: Option<Raw<'_>>| r.and_then(|r| to_u64(r.get().trim_matches('"')));
        Some(
            CommArgs {
                collective,
                in_nelems: num(self.in_nelems).or_else(|| num(self.in_nelems_old)),
                out_nelems: num(self.out_nelems).or_else(|| num(self.out_nelems_old)),
                dtype: text(self.dtype),
                group_size: num(self.group_size).and_then(|g| u32::try_from(g).ok()),
                process_group: text(self.pg_name),
                process_group_desc: text(self.pg_desc),
                process_group_ranks: text(self.pg_ranks),
                seq: num(self.seq),
                // Even splits are written `[]`: nothing to keep.
                in_splits: text(self.in_splits).filter(|s| s != "[]"),
                out_splits: text(self.out_splits).filter(|s| s != "[]"),
                peer: num(self.dst_rank)
                    .or_else(|| num(self.src_rank))
                    .and_then(|p| u32::try_from(p).ok()),
            }
            .encode(),
        )
    }
}
