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

/// The `args` fields we read, each named once: the struct serde fills in the same pass as the
/// event, and [`RawArgs::slot`], the scanner's lookup of the same keys.
macro_rules! raw_args {
    ($($(#[doc = $doc:expr])* $field:ident = $key:literal,)*) => {
        #[derive(Deserialize, Default, Debug)]
        pub(super) struct RawArgs<'a> {
            $(
                $(#[doc = $doc])*
                #[serde(rename = $key, borrow, default)]
                pub(super) $field: Option<Raw<'a>>,
            )*
        }

        impl<'a> RawArgs<'a> {
            /// The field `key` names and a bit of its own (the scanner's repeated-key check);
            /// None for a key the model does not read.
            #[allow(unused_assignments)]
            pub(super) fn slot(&mut self, key: &[u8]) -> Option<(u64, &mut Option<Raw<'a>>)> {
                let mut bit = 1u64;
                $(
                    if key == $key.as_bytes() {
                        return Some((bit, &mut self.$field));
                    }
                    bit <<= 1;
                )*
                None
            }

            /// The field of index `k` (its bit's place in [`RawArgs::slot`]).
            #[allow(unused_assignments)]
            pub(super) fn slot_at(&mut self, k: u8) -> Option<&mut Option<Raw<'a>>> {
                let mut at = 0u8;
                $(
                    if k == at {
                        return Some(&mut self.$field);
                    }
                    at += 1;
                )*
                None
            }
        }
    };
}

raw_args! {
    external_id = "External id",
    /// 2021 traces spell it in lower case.
    external_id_old = "external id",
    correlation = "correlation",
    device = "device",
    stream = "stream",
    /// A kernel's grid, `[x, y, z]`: in workgroups (thread blocks), except for kernels
    /// `hipExtModuleLaunchKernel` launched (Tensile, hipBLASLt), where it is in work-items.
    grid = "grid",
    block = "block",
    input_dims = "Input Dims",
    input_types = "Input type",
    concrete_inputs = "Concrete Inputs",
    input_strides = "Input Strides",
    /// Set per event by TraceLens when it merges ranks into one file.
    rank = "rank",
    /// `with_stack` frames, innermost first: tells a 2021 `record_function` range from an op.
    call_stack = "Call stack",
    /// A collective's arguments, on `record_param_comms` and (since late 2023) on the NCCL/RCCL
    /// kernel it launched (see [`crate::model::comms`]).
    /// Raw values, not strings: a number or list under these common keys must not make the
    /// event unreadable.
    collective = "Collective name",
    in_nelems = "In msg nelems",
    out_nelems = "Out msg nelems",
    /// Before December 2023 the element counts were called sizes.
    in_nelems_old = "In msg size",
    out_nelems_old = "Out msg size",
    dtype = "dtype",
    group_size = "Group size",
    pg_name = "Process Group Name",
    pg_desc = "Process Group Description",
    pg_ranks = "Process Group Ranks",
    seq = "Seq",
    in_splits = "In split size",
    out_splits = "Out split size",
    /// A send's and a receive's peer, as its rank in the process group.
    dst_rank = "Dst Rank",
    src_rank = "Src Rank",
    /// A `[memory]` event's allocator state (`profile_memory=True`).
    total_allocated = "Total Allocated",
    total_reserved = "Total Reserved",
    device_id = "Device Id",
    /// c10's DeviceType: 0 the host, 1 CUDA, 6 HIP.
    device_type = "Device Type",
    /// Inductor's, on a Triton kernel's launcher cpu_op (see [`InductorArgs`]).
    kernel_file = "kernel_file",
    kernel_num_gb = "kernel_num_gb",
    kernel_flop = "kernel_flop",
    /// A `cuda_sync` stream wait's other stream (-1 in torch 2.11: not recorded).
    wait_on_stream = "wait_on_stream",
    /// A `cuda_sync` stream wait's `cudaEventRecord` correlation (-1: not recorded).
    wait_on_cuda_event_record_corr_id = "wait_on_cuda_event_record_corr_id",
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
