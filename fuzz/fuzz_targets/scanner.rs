#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    rocprof_classify_fuzz::scanner(data);
});
