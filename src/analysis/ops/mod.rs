//! GPU time attributed to what launched it: the op that owns each activity ([`op_index`]), ops
//! and shapes ([`attribution`], from the [`calls`] their shapes describe), modules and source
//! lines ([`frames`]), GEMM efficiency and device peaks ([`efficiency`]), bytes moved by
//! memory-bound work ([`bytes_moved`]), model FLOP utilization ([`mfu`]), the kernels worth
//! tuning ([`candidates`]) and each op's time per step ([`op_steps`], what `diff` compares).

pub mod attribution;
pub mod bytes_moved;
pub mod calls;
pub mod candidates;
pub mod efficiency;
pub mod frames;
pub mod mfu;
pub mod op_index;
pub mod op_steps;
