//! What the model knows of op names, where a reader needs it: which ops' `Input Strides` are
//! kept (GEMM efficiency reasons, and whether convolutions run in channels_last).

/// The GEMM ops whose FLOPs their shapes give.
pub fn is_gemm_op(op: &str) -> bool {
    matches!(
        op,
        "aten::mm"
            | "aten::bmm"
            | "aten::matmul"
            | "aten::addmm"
            | "aten::baddbmm"
            | "aten::_addmm_activation"
            | "aten::linear"
    )
}

/// Ops whose `Input Strides` the readers keep (only these: strides of every op would cost
/// memory on big traces for nothing).
pub fn keeps_input_strides(op: &str) -> bool {
    is_gemm_op(op) || op == "aten::convolution"
}
