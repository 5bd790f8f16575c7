//! What the activity and host-event tables share: a compact column of ids, row filtering, and
//! the times a profiler can write.

/// A column of values nearly always in 0..2^31: 4 bytes each, the rare other one kept in a
/// side list and its index stored above 2^31. Millions of rows in large traces.
#[derive(Default, Debug, Clone)]
pub struct Compact<T> {
    small: Vec<u32>,
    wide: Vec<T>,
}

/// Ids (correlation, External id).
pub type Ids = Compact<u64>;
/// Host event durations in ns: nearly every op and call is under 2^31 ns (2.1 s); steps,
/// whole-run ranges and negative durations go to the side list.
pub type Durations = Compact<i64>;

/// Values from here up are indices into [`Compact::wide`].
const WIDE: u32 = 1 << 31;

impl<T: Copy + TryInto<u32> + From<u32>> Compact<T> {
    /// Appends `v` as the last row.
    pub fn push(&mut self, v: T) {
        match v.try_into() {
            Ok(small) if small < WIDE => self.small.push(small),
            _ => {
                self.small.push(WIDE + self.wide.len() as u32);
                self.wide.push(v);
            }
        }
    }
    /// The value of row `i`.
    pub fn get(&self, i: usize) -> T {
        match self.small[i] {
            v if v < WIDE => T::from(v),
            v => self.wide[(v - WIDE) as usize],
        }
    }
    /// Sets row `i` to `v`. A row already wide keeps its slot in the side list; one made
    /// narrow leaves its old slot unused (rows rarely change, and seldom from wide to narrow).
    pub(crate) fn set(&mut self, i: usize, v: T) {
        let old = self.small[i];
        match v.try_into() {
            Ok(small) if small < WIDE => self.small[i] = small,
            _ if old >= WIDE => self.wide[(old - WIDE) as usize] = v,
            _ => {
                self.small[i] = WIDE + self.wide.len() as u32;
                self.wide.push(v);
            }
        }
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.small.len()
    }
    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.small.is_empty()
    }
    /// The values in row order.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
    pub(crate) fn retain_by(&mut self, keep: &[bool]) {
        retain_by(&mut self.small, keep);
    }
    /// Appends another column's rows (its wide values after this one's).
    pub(crate) fn append(&mut self, o: Compact<T>) {
        let base = self.wide.len() as u32;
        self.small.extend(
            o.small
                .into_iter()
                .map(|v| if v < WIDE { v } else { v + base }),
        );
        self.wide.extend(o.wide);
    }
    pub(crate) fn reserve_exact(&mut self, more: usize) {
        self.small.reserve_exact(more);
    }
    pub(crate) fn shrink_to_fit(&mut self) {
        self.small.shrink_to_fit();
        self.wide.shrink_to_fit();
    }
}

/// A column whose value changes rarely along the rows, stored as runs: each run's first row
/// and value. The input a row came from is one per file, in runs of millions of rows.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct Runs {
    /// `(first row, value)` of each run, by row; neighbouring runs differ in value.
    runs: Vec<(usize, u32)>,
    len: usize,
}

impl Runs {
    /// Appends `v` as the last row.
    pub fn push(&mut self, v: u32) {
        if self.runs.last().map(|r| r.1) != Some(v) {
            self.runs.push((self.len, v));
        }
        self.len += 1;
    }
    /// The run holding row `i` (a row past the end panics, as a slice's index does).
    fn run_of(&self, i: usize) -> usize {
        assert!(i < self.len, "row {i} of a column of {} rows", self.len);
        self.runs.partition_point(|r| r.0 <= i) - 1
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The values in row order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.ranges()
            .flat_map(|(rows, v)| std::iter::repeat_n(v, rows.len()))
    }
    /// Each run's rows and value, in row order.
    pub fn ranges(&self) -> impl Iterator<Item = (std::ops::Range<usize>, u32)> + '_ {
        self.runs.iter().enumerate().map(move |(k, &(first, v))| {
            let end = self.runs.get(k + 1).map_or(self.len, |r| r.0);
            (first..end, v)
        })
    }
    /// The values as a plain column (for exports that want one).
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
    pub(crate) fn retain_by(&mut self, keep: &[bool]) {
        let mut kept = Runs::default();
        for (v, _) in self.iter().zip(keep).filter(|(_, k)| **k) {
            kept.push(v);
        }
        *self = kept;
    }
    /// Appends another column's rows, each value mapped.
    pub(crate) fn append(&mut self, o: Runs, map: impl Fn(u32) -> u32) {
        for (k, &(first, v)) in o.runs.iter().enumerate() {
            let end = o.runs.get(k + 1).map_or(o.len, |r| r.0);
            let v = map(v);
            if self.runs.last().map(|r| r.1) != Some(v) {
                self.runs.push((self.len, v));
            }
            self.len += end - first;
        }
    }
    pub(crate) fn shrink_to_fit(&mut self) {
        self.runs.shrink_to_fit();
    }
}

impl std::ops::Index<usize> for Runs {
    type Output = u32;
    fn index(&self, i: usize) -> &u32 {
        &self.runs[self.run_of(i)].1
    }
}

/// A column of ids mostly 0: only the other rows are stored (row, value), 8 B each. A host
/// event's correlation: only runtime and driver calls have one, ops (most rows) do not.
#[derive(Default, Debug, Clone)]
pub struct SparseIds {
    /// Rows with a value, ascending.
    rows: Vec<u32>,
    values: Ids,
    len: usize,
}

impl SparseIds {
    /// Appends `v` as the last row.
    pub fn push(&mut self, v: u64) {
        if v != 0 {
            self.rows.push(self.len as u32);
            self.values.push(v);
        }
        self.len += 1;
    }
    /// The value of row `i` (0 where it has none).
    pub fn get(&self, i: usize) -> u64 {
        match self.rows.binary_search(&(i as u32)) {
            Ok(k) => self.values.get(k),
            Err(_) => 0,
        }
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The rows with a value and their values, by row.
    pub fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.rows
            .iter()
            .enumerate()
            .map(|(k, &r)| (r as usize, self.values.get(k)))
    }
    pub(crate) fn retain_by(&mut self, keep: &[bool]) {
        let mut kept = SparseIds::default();
        let mut next = self.nonzero().peekable();
        for (i, _) in keep.iter().enumerate() {
            let v = match next.peek() {
                Some(&(r, v)) if r == i => {
                    next.next();
                    v
                }
                _ => 0,
            };
            if keep[i] {
                kept.push(v);
            }
        }
        drop(next);
        *self = kept;
    }
    /// Appends another column's rows.
    pub(crate) fn append(&mut self, o: SparseIds) {
        let base = self.len as u32;
        self.rows.extend(o.rows.iter().map(|r| r + base));
        self.values.append(o.values);
        self.len += o.len;
    }
    pub(crate) fn shrink_to_fit(&mut self) {
        self.rows.shrink_to_fit();
        self.values.shrink_to_fit();
    }
}

/// Keeps the elements of `column` whose index `keep` marks.
pub(crate) fn retain_by<T>(column: &mut Vec<T>, keep: &[bool]) {
    let mut i = 0;
    column.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

/// Which rows have times a profiler can write (duration within `max_dur`, start within
/// [`MAX_TS_NS`]), and how many rows per input do not.
pub(crate) fn plausible(
    ts: &[i64],
    dur: impl IntoIterator<Item = i64>,
    input: &Runs,
    max_dur: i64,
) -> (Vec<bool>, std::collections::BTreeMap<u32, u64>) {
    let keep: Vec<bool> = ts
        .iter()
        .zip(dur)
        .map(|(t, d)| (0..=max_dur).contains(&d) && (0..=MAX_TS_NS).contains(t))
        .collect();
    let mut dropped = std::collections::BTreeMap::new();
    for (i, _) in keep.iter().enumerate().filter(|(_, k)| !**k) {
        *dropped.entry(input[i]).or_default() += 1;
    }
    (keep, dropped)
}

/// Times a trace can hold: from 0 (the epoch, or boot) to about 146 years after it (2^62 ns),
/// so that sums and differences of two of them never overflow an i64.
pub const MAX_TS_NS: i64 = 1 << 62;
/// The longest GPU activity kept (1 hour) and host event (1 day): longer ones are corrupt times.
pub const MAX_ACTIVITY_NS: i64 = 3_600_000_000_000;
/// The longest host event kept: 1 day, in ns (longer ones are corrupt times).
pub const MAX_HOST_EVENT_NS: i64 = 86_400_000_000_000;

#[cfg(test)]
mod tests {
    use super::{Durations, Ids, Runs, SparseIds};

    /// Every duration reads back as set, narrow or wide, and a wide row set again keeps its
    /// slot in the side list (a replay rewrites rows many times).
    #[test]
    fn durations_read_back_as_set() {
        let mut d = Durations::default();
        for _ in 0..4 {
            d.push(0);
        }
        let values = [
            0,
            7,
            (1 << 31) - 1,
            1 << 31,
            u32::MAX as i64,
            9_000_000_000,
            -3,
        ];
        for (k, &v) in values.iter().enumerate() {
            let i = k % 4;
            d.set(i, v);
            assert_eq!(d.get(i), v, "{v}");
        }
        let wide = d.wide.len();
        for i in 0..4 {
            d.set(i, -1 - i as i64);
            assert_eq!(d.get(i), -1 - i as i64);
        }
        assert!(d.wide.len() <= wide + 4);
        for i in 0..4 {
            d.set(i, 5);
            assert_eq!(d.get(i), 5);
        }
        assert_eq!(d.iter().collect::<Vec<_>>(), [5; 4]);
    }

    /// A sparse column reads back as the plain one, through push, append and retain.
    #[test]
    fn sparse_ids_read_back_as_the_plain_column() {
        let values = [0u64, 7, 0, 0, 1 << 40, 3, 0];
        let mut col = SparseIds::default();
        for v in values {
            col.push(v);
        }
        let read = |c: &SparseIds| (0..c.len()).map(|i| c.get(i)).collect::<Vec<_>>();
        assert_eq!(read(&col), values);
        let mut both = col.clone();
        both.append(col.clone());
        assert_eq!(read(&both), [values, values].concat());
        let keep: Vec<bool> = (0..both.len()).map(|i| i % 3 != 1).collect();
        both.retain_by(&keep);
        let expected: Vec<u64> = [values, values]
            .concat()
            .into_iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(v, _)| v)
            .collect();
        assert_eq!(read(&both), expected);
        assert_eq!(
            both.nonzero().count(),
            expected.iter().filter(|&&v| v != 0).count()
        );
    }

    /// Runs read back as the plain column they stand for, through push, append and retain.
    #[test]
    fn runs_read_back_as_the_plain_column() {
        let values = [0u32, 0, 0, 1, 1, 0, 2, 2, 2, 2];
        let mut runs = Runs::default();
        for v in values {
            runs.push(v);
        }
        assert_eq!(runs.to_vec(), values);
        assert_eq!(
            (0..values.len()).map(|i| runs[i]).collect::<Vec<_>>(),
            values
        );
        let mut other = Runs::default();
        for v in [5u32, 5, 0] {
            other.push(v);
        }
        let mut joined = runs.clone();
        joined.append(other, |v| v.saturating_sub(3));
        let mut expected = values.to_vec();
        expected.extend([2, 2, 0]);
        assert_eq!(joined.to_vec(), expected);
        assert_eq!(joined.len(), 13);
        let keep: Vec<bool> = (0..13).map(|i| i % 3 != 0).collect();
        joined.retain_by(&keep);
        let kept: Vec<u32> = expected
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(v, _)| *v)
            .collect();
        assert_eq!(joined.to_vec(), kept);
        // Equal neighbours merge: the append's first run continues the last one.
        assert_eq!(joined.runs.len(), 4);
        assert!(Runs::default().is_empty());
    }

    #[test]
    fn durations_keep_long_and_negative_values_through_append_and_retain() {
        let values = [0i64, 9, (1 << 31) - 1, 1 << 31, 86_400_000_000_000, -5, 7];
        let mut a = Durations::default();
        for v in values {
            a.push(v);
        }
        assert_eq!(a.iter().collect::<Vec<_>>(), values);
        let mut b = Durations::default();
        b.push(1 << 40);
        b.push(3);
        a.append(b);
        assert_eq!((a.get(7), a.get(8)), (1 << 40, 3));
        a.retain_by(&[false, true, true, true, true, true, false, true, true]);
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            [
                9,
                (1 << 31) - 1,
                1 << 31,
                86_400_000_000_000,
                -5,
                1 << 40,
                3
            ]
        );
    }

    #[test]
    fn ids_keep_wide_values_through_append_and_retain() {
        let values = [0u64, 9, (1 << 31) - 1, 1 << 31, u64::MAX, 7];
        let mut a = Ids::default();
        for v in values {
            a.push(v);
        }
        assert_eq!(a.iter().collect::<Vec<_>>(), values);
        let mut b = Ids::default();
        b.push(1 << 40);
        b.push(3);
        a.append(b);
        assert_eq!(a.get(6), 1 << 40);
        assert_eq!(a.get(7), 3);
        a.retain_by(&[true, false, false, true, true, false, true, true]);
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            [0, 1 << 31, u64::MAX, 1 << 40, 3]
        );
    }
}
