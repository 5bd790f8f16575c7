//! The `args` values the event scanner has checked already (see [`Checked`]).

use super::lex::{number, skip_value, word_at};

/// Values of `args` the scanner has checked already: a value at depth 2 that starts with the
/// whole of a checked list, object or string is that value (their ends are decided by their
/// own bytes; a number's is not), so recorded shapes, strides and types, a few hundred
/// distinct values repeated op after op, are compared, not walked again. Found by their first
/// 16 bytes, many ways to a bucket (values that share them, `["c10::BFloat16", …`, crowd
/// one), and told apart by their first 32 as words. The way a value was last found in is
/// kept by the hash of those 32 bytes: most values are found there at once, without searching
/// their crowded bucket (a way found there is compared all the same).
pub struct Checked {
    /// Per bucket, its ways (a length of 0: none).
    ways: Vec<Way>,
    bytes: Vec<u8>,
    /// The next way to replace, per bucket.
    next: Vec<u8>,
    /// By the hash of a value's first 32 bytes, the way (index into `ways`) it was last
    /// found in or put in; out of range: none.
    recent: Vec<u32>,
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
            recent: vec![u32::MAX; 1 << Self::RECENT_BITS],
        }
    }
}

impl Checked {
    const BITS: u32 = 7;
    const WAYS: usize = 16;
    const RECENT_BITS: u32 = 10;
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
            _ if b.get(i).is_some_and(u8::is_ascii_digit) => return number(b, i),
            _ => return skip_value(b, i, 2),
        };
        let w: [u64; 4] = std::array::from_fn(|k| word_at(head, 8 * k));
        // By the first 16 bytes only: what follows a shorter value (the next key's value) is
        // not part of it.
        let h = (w[0] ^ w[1].rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let bucket = (h >> (64 - Self::BITS)) as usize;
        let h32 = (h ^ (w[2] ^ w[3].rotate_left(23)).wrapping_mul(0xc2b2_ae3d_27d4_eb4f))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let recent = (h32 >> (64 - Self::RECENT_BITS)) as usize;
        let rest = || b.get(i + Self::HEAD..).unwrap_or_default();
        if let Some(way) = self.ways.get(self.recent[recent] as usize) {
            if let Some(len) = self.holds(way, &w, rest()) {
                return Some(i + len);
            }
        }
        let first = bucket * Self::WAYS;
        for (k, way) in self.ways[first..first + Self::WAYS].iter().enumerate() {
            if let Some(len) = self.holds(way, &w, rest()) {
                self.recent[recent] = (first + k) as u32;
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
                let k = bucket * Self::WAYS + usize::from(*way);
                self.recent[recent] = k as u32;
                self.ways[k] = Way {
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

    /// The length of `way`'s value when the value whose first 32 bytes are `w` (followed by
    /// `rest`) starts with the whole of it.
    #[inline(always)]
    fn holds(&self, way: &Way, w: &[u64; 4], rest: &[u8]) -> Option<usize> {
        let differ = (0..4).fold(0, |d, k| d | ((w[k] ^ way.head[k]) & way.masks[k]));
        if way.len == 0 || differ != 0 {
            return None;
        }
        let (at, len) = (way.at as usize, way.len as usize);
        (len <= Self::HEAD || rest.starts_with(&self.bytes[at..at + len - Self::HEAD]))
            .then_some(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lookup ends where the walk ends the value: values found by the way they were last
    /// in, by the search of their bucket, after their way was given to another value (a
    /// bucket's ways are fewer than the values crowding it), and values that begin like a
    /// kept one but are not it.
    #[test]
    fn found_values_end_where_the_walk_ends_them() {
        let mut checked = Checked::default();
        // The same first 16 bytes: one bucket, more values than ways.
        let crowd =
            (0..3 * Checked::WAYS).map(|k| format!(r#"["c10::BFloat16", "c10::Float", {k}]"#));
        let short = (0..8).map(|k| format!(r#""s{k}""#));
        let values: Vec<String> = crowd.chain(short).collect();
        let walk = |b: &[u8]| skip_value(b, 0, 2);
        for round in 0..3 {
            for (k, v) in values.iter().enumerate() {
                // What follows a value changes from event to event.
                let text = format!(r#"{v}, "Ev Idx": {}}}"#, k + round);
                let b = text.as_bytes();
                assert_eq!(checked.skip(b, 0), walk(b), "{text}");
            }
        }
        for text in [
            r#"["c10::BFloat16", "c10::Float", 1, 2], "x": 0}"#,
            r#""s1x", "x": 0}"#,
            r#"["c10::BFloat16", "c10::Float", 3"#,
            r#"["c10::BFloat16", "c10::Float", 4]"#,
        ] {
            let b = text.as_bytes();
            assert_eq!(checked.skip(b, 0), walk(b), "{text}");
        }
    }
}
