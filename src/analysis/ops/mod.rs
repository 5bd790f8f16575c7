//! GPU time attributed to what launched it: the op that owns each activity ([`op_index`]), ops
//! and shapes ([`attribution`], from the [`calls`] their shapes describe), modules and source
//! lines ([`frames`]), GEMM efficiency and device peaks ([`efficiency`]), attention FLOPs ([`attention_flops`]), recorded shapes as numbers ([`shapes`]), MoE routing for grouped GEMMs' padding
//! ([`routing`]), bytes moved by
//! memory-bound work ([`bytes_moved`]), model FLOP utilization ([`mfu`]), the kernels worth
//! tuning ([`candidates`]) and each op's time per step ([`op_steps`], what `diff` compares).

pub(crate) mod attention_flops;
pub(crate) mod attribution;
pub(crate) mod bytes_moved;
pub(crate) mod calls;
pub(crate) mod candidates;
pub(crate) mod efficiency;
pub(crate) mod frames;
pub(crate) mod mfu;
pub(crate) mod op_index;
pub(crate) mod op_steps;
pub(crate) mod routing;
pub(crate) mod shapes;
