//! Opening and reading inputs: progress, parallel reading.

use super::*;

/// The progress callback hears every byte of the file (compressed bytes for .gz), once.
#[test]
fn progress_counts_the_file_bytes() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kineto/h100/eager_manual_attn.json.gz");
    let seen = Arc::new(AtomicU64::new(0));
    let counter = seen.clone();
    let opts = ReadOptions {
        progress: Some(Progress(Arc::new(move |n| {
            counter.fetch_add(n, Ordering::Relaxed);
        }))),
        ..Default::default()
    };
    let trace = read_all(std::slice::from_ref(&path), &opts).unwrap();
    assert!(!trace.activities.is_empty());
    assert_eq!(
        seen.load(Ordering::Relaxed),
        std::fs::metadata(&path).unwrap().len()
    );
}

/// Reading files in parallel and appending them gives the table reading them in sequence
/// into one trace gives: same names in the same order, same rows.
#[test]
fn parallel_reading_equals_sequential_reading() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kineto/h100");
    let paths: Vec<PathBuf> = ["eager_manual_attn", "compiled_clean", "eager_sdpa_fused"]
        .iter()
        .map(|n| dir.join(format!("{n}.json.gz")))
        .collect();
    let opts = ReadOptions::default();
    let mut sequential = Trace::default();
    for p in &paths {
        read_one(p, &mut sequential, &opts).unwrap();
    }
    let parallel = read_all(&paths, &opts).unwrap();
    let names = |t: &Trace| {
        t.names
            .iter()
            .map(|(_, s)| s.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&parallel), names(&sequential));
    assert_eq!(parallel.inputs.len(), 3);
    let (a, b) = (&parallel.activities, &sequential.activities);
    assert_eq!(
        (a.name.clone(), a.input.clone(), a.ts_ns.clone()),
        (b.name.clone(), b.input.clone(), b.ts_ns.clone())
    );
    let (a, b) = (&parallel.host, &sequential.host);
    let dims =
        |h: &crate::model::HostEvents| (0..h.len()).map(|i| h.input_dims(i)).collect::<Vec<_>>();
    assert_eq!(
        (a.name.clone(), a.input.clone(), dims(a), a.threads.clone()),
        (b.name.clone(), b.input.clone(), dims(b), b.threads.clone())
    );
}
