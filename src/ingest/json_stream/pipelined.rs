//! The batch scan with the scan on its own thread ([`scan_pipelined`]).

use super::{scan, ScanError, ScanOutcome, ScanSink, BLOCK};
use std::io::Read;

/// [`scan`] with the scan on its own thread: while the caller's `sink` parses one batch, the
/// scanner decompresses and splits the next (a bounded queue of two batches keeps memory at a
/// few blocks). Each batch is copied out of the window, a memcpy that is small next to parsing.
/// The sink sees the same calls in the same order as with [`scan`]; with one worker thread
/// (`--threads 1`) this is [`scan`] itself.
pub fn scan_pipelined<R: Read + Send, S: ScanSink>(
    reader: R,
    sink: &mut S,
    block: usize,
) -> Result<ScanOutcome, ScanError> {
    if rayon::current_num_threads() < 2 {
        return scan(reader, sink, block);
    }
    enum Batch {
        Events {
            bytes: Vec<u8>,
            ranges: Vec<(usize, usize)>,
            base: u64,
        },
        Meta {
            key: String,
            value: Vec<u8>,
            offset: u64,
        },
    }
    /// The scanner thread's sink: copies each batch and queues it.
    struct Forward(std::sync::mpsc::SyncSender<Batch>);
    /// The consumer stopped (its sink failed): end the scan quietly.
    fn hung_up() -> ScanError {
        ScanError::Syntax {
            offset: 0,
            message: "consumer stopped".into(),
        }
    }
    impl ScanSink for Forward {
        fn events(
            &mut self,
            buf: &[u8],
            ranges: &[(usize, usize)],
            base: u64,
        ) -> Result<(), ScanError> {
            let from = ranges.first().map_or(0, |r| r.0);
            let to = ranges.last().map_or(0, |r| r.1);
            let batch = Batch::Events {
                bytes: buf[from..to].to_vec(),
                ranges: ranges.iter().map(|&(s, e)| (s - from, e - from)).collect(),
                base: base + from as u64,
            };
            self.0.send(batch).map_err(|_| hung_up())
        }
        fn meta(&mut self, key: &str, value: &[u8], offset: u64) -> Result<(), ScanError> {
            let batch = Batch::Meta {
                key: key.to_string(),
                value: value.to_vec(),
                offset,
            };
            self.0.send(batch).map_err(|_| hung_up())
        }
    }
    let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(2);
    std::thread::scope(|scope| {
        let scanner = scope.spawn(move || scan(reader, &mut Forward(tx), block));
        let mut failed = None;
        for batch in rx.iter() {
            let done = match batch {
                Batch::Events {
                    bytes,
                    ranges,
                    base,
                } => sink.events(&bytes, &ranges, base),
                Batch::Meta { key, value, offset } => sink.meta(&key, &value, offset),
            };
            if let Err(e) = done {
                failed = Some(e);
                break;
            }
        }
        // Hanging up makes a scanner blocked on a full queue return.
        drop(rx);
        let scanned = match scanner.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        match failed {
            Some(e) => Err(e),
            None => scanned,
        }
    })
}

/// Convenience: the default block size.
pub fn scan_default<R: Read, S: ScanSink>(
    reader: R,
    sink: &mut S,
) -> Result<ScanOutcome, ScanError> {
    scan(reader, sink, BLOCK)
}
