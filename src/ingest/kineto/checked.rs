//! The `args` values the event scanner has checked already (see [`Checked`]).

use super::lex::{skip_value, word_at};

/// Values of `args` the scanner has checked already: a value at depth 2 that starts with the
/// whole of a checked list, object or string is that value (their ends are decided by their
/// own bytes; a number's is not), so recorded shapes, strides and types, a few hundred
/// distinct values repeated op after op, are compared, not walked again. Found by their first
/// 16 bytes, many ways to a bucket (values that share them, `["c10::BFloat16", …`, crowd
/// one), and told apart by their first 32 as words.
pub struct Checked {
    /// Per bucket, its ways (a length of 0: none).
    ways: Vec<Way>,
    bytes: Vec<u8>,
    /// The next way to replace, per bucket.
    next: Vec<u8>,
}

/// A checked value: its first 32 bytes as words, with the masks of the bytes it has of them
/// (compared without a call), and where the rest is in [`Checked::bytes`].
#[derive(Clone, Copy, Default)]
struct Way {
    head: [u64; 4],
    masks: [u64; 4],
    at: u32,
    len: u32,
}

impl Default for Checked {
    fn default() -> Self {
        Self {
            ways: vec![Way::default(); Self::WAYS << Self::BITS],
            bytes: Vec::new(),
            next: vec![0; 1 << Self::BITS],
        }
    }
}

impl Checked {
    const BITS: u32 = 7;
    const WAYS: usize = 16;
    /// The bytes of a value compared as words.
    const HEAD: usize = 32;
    /// The most bytes of values kept (see [`Self::full`]).
    const MAX_BYTES: usize = 4 << 20;

    /// Whether the copies of the values passed a few MiB (a trace of ever new values): the
    /// caller starts again with an empty table.
    pub(super) fn full(&self) -> bool {
        self.bytes.len() > Self::MAX_BYTES
    }
    /// Values this short are checked faster than looked up (`[]`, `""`).
    const SHORT: usize = 4;

    /// [`skip_value`] at depth 2 for the value at `i`, from the table when it holds it.
    pub(super) fn skip(&mut self, b: &[u8], i: usize) -> Option<usize> {
        let head = match b.get(i..i + Self::HEAD) {
            Some(head) if matches!(head[0], b'[' | b'{' | b'"') => head,
            _ => return skip_value(b, i, 2),
        };
        let w: [u64; 4] = std::array::from_fn(|k| word_at(head, 8 * k));
        // By the first 16 bytes only: what follows a shorter value (the next key's value) is
        // not part of it.
        let h = (w[0] ^ w[1].rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let bucket = (h >> (64 - Self::BITS)) as usize;
        for way in &self.ways[bucket * Self::WAYS..][..Self::WAYS] {
            let differ = (0..4).fold(0, |d, k| d | ((w[k] ^ way.head[k]) & way.masks[k]));
            if way.len == 0 || differ != 0 {
                continue;
            }
            let (at, len) = (way.at as usize, way.len as usize);
            let rest = b.get(i + Self::HEAD..).unwrap_or_default();
            if len <= Self::HEAD || rest.starts_with(&self.bytes[at..at + len - Self::HEAD]) {
                return Some(i + len);
            }
        }
        let e = skip_value(b, i, 2)?;
        let len = e - i;
        if len >= Self::SHORT {
            let rest = b.get(i + Self::HEAD..e).unwrap_or_default();
            if let (Ok(at), Ok(len32)) = (u32::try_from(self.bytes.len()), u32::try_from(len)) {
                self.bytes.extend_from_slice(rest);
                let mask = |k: usize| match len.saturating_sub(8 * k) {
                    0 => 0,
                    n @ 1..8 => (1u64 << (n * 8)) - 1,
                    _ => u64::MAX,
                };
                let way = &mut self.next[bucket];
                self.ways[bucket * Self::WAYS + usize::from(*way)] = Way {
                    head: w,
                    masks: std::array::from_fn(mask),
                    at,
                    len: len32,
                };
                *way = (*way + 1) % Self::WAYS as u8;
            }
        }
        Some(e)
    }
}
