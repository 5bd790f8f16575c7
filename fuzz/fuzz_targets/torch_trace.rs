#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rocprof_classify_fuzz::compile_log("dedicated_log_torch_trace_rank_0.log", data);
});
