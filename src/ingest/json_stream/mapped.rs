//! A plain file read in place: each window is the next stretch of the file mapped into memory
//! where the page cache holds it, the event the window before cut mapped again at its front.
//! Nothing is copied: `read` copies the page cache into our buffers at about 1.7 GB/s here, 12%
//! of big_eager's two-thread run by `perf` (`_copy_to_iter`), while a mapping costs a page
//! fault per 64 KiB or more (18k more faults than `read` on a 2 GB trace). big_eager with two
//! threads: 0.89x the wall time and half the system time of the read-ahead thread's copies
//! (9 alternating runs, medians); with one thread, where one buffer is reused, no change.
//!
//! A stretch stays mapped only while its window is read (peak RSS holds one window), and the
//! file's length is asked again at each window, so one that grows is read as far as it goes.
//! A file cut shorter by another process while it is read would fault (SIGBUS): the risk of
//! every reader that maps its input (ripgrep takes it too); gzip and stdin are streamed.

use super::{Bytes, Feed, ScanError, Window};
use crate::ingest::{Cancel, Progress};
use std::fs::File;
use std::io::{self, Seek};

/// A regular file whose bytes are the data (not compressed), to be read in place; progress
/// hears its bytes as they are mapped, and a cancel stops the read at the next window.
pub struct InPlace {
    file: File,
    progress: Option<Progress>,
    cancel: Option<Cancel>,
}

impl InPlace {
    /// `file` when it is a regular file that maps (else it is streamed).
    pub fn new(file: File, progress: Option<Progress>, cancel: Option<Cancel>) -> Option<Self> {
        let len = file.metadata().ok().filter(|m| m.is_file())?.len();
        // A probe: some file systems (FUSE, /proc) do not map.
        // SAFETY: the mapping is read-only and dropped at once; see the module docs for a file
        // cut while mapped.
        unsafe {
            memmap2::MmapOptions::new()
                .len(len.min(1) as usize)
                .map(&file)
        }
        .ok()?;
        Some(InPlace {
            file,
            progress,
            cancel,
        })
    }

    /// The windows of `width` new bytes each (a window that keeps more than `width` bytes of
    /// an event takes as many new bytes as it kept, so that it doubles).
    pub(super) fn feed(self, width: usize) -> Mapped {
        // Bytes already read through the stream the head came from (the file's offset is
        // shared with it) were counted: progress hears the rest.
        let reported = (&self.file).stream_position().unwrap_or(0);
        Mapped {
            source: self,
            width,
            reported,
        }
    }
}

/// [`InPlace`] as a window's feed.
pub(super) struct Mapped {
    source: InPlace,
    width: usize,
    /// The file's bytes progress has heard of.
    reported: u64,
}

impl Feed for Mapped {
    fn first_buffer(&self, _block: usize) -> Bytes {
        Bytes::Owned(Vec::new())
    }
    fn refill(&mut self, w: &mut Window, keep: usize) -> Result<bool, ScanError> {
        if w.eof {
            return Ok(false);
        }
        if self.source.cancel.as_ref().is_some_and(Cancel::is_set) {
            w.stop_at_error(io::Error::other("cancelled"), w.end)?;
        }
        let len = match self.source.file.metadata() {
            Ok(m) => m.len(),
            Err(e) => {
                let at = w.end;
                w.stop_at_error(e, at)?;
                return Ok(false);
            }
        };
        let kept_at = w.base + keep as u64;
        let tail = w.end - keep;
        let data_end = w.base + w.end as u64;
        if data_end >= len {
            w.eof = true;
            return Ok(false);
        }
        let wanted = (tail + self.width.max(tail)) as u64;
        let map_len = wanted.min(len - kept_at) as usize;
        // SAFETY: read-only, within the file's length as just asked; see the module docs for
        // a file cut while mapped.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(kept_at)
                .len(map_len)
                .map(&self.source.file)
        };
        let map = match map {
            Ok(m) => m,
            Err(e) => {
                let at = w.end;
                w.stop_at_error(e, at)?;
                return Ok(false);
            }
        };
        // A file not in the page cache yet is read ahead of the faults, as `read` would.
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Sequential);
        let mapped_end = kept_at + map_len as u64;
        if let Some(p) = &self.source.progress {
            if mapped_end > self.reported {
                (p.0)(mapped_end - self.reported);
            }
        }
        self.reported = self.reported.max(mapped_end);
        w.buf = Bytes::Mapped(map);
        w.pos -= keep;
        w.base = kept_at;
        w.end = map_len;
        w.eof = mapped_end >= len;
        Ok(map_len > tail)
    }
}
