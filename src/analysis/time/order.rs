//! Sorting and searching rows that come mostly in time order. A profiler writes each thread's
//! events as they end, so a list of them by start is sorted but for a few (the outer events,
//! written after the ones inside them): a general sort of hundreds of thousands of indices,
//! each compared through the columns, was a tenth of some analyses.

/// Sorts `v` by `key`, stably, where it is a few sorted runs (a list of a profiler's events by
/// start: each category or thread written in order, the outer ranges after what they hold):
/// the runs found in one pass and merged pairwise, each merge through a buffer of its shorter
/// side (the standard stable sort takes half the list beside it, up front). More runs than
/// [`MANY_RUNS`] are sorted in place by the standard unstable sort: callers whose keys tie
/// end them with the row's index, so that both sorts agree.
pub(crate) fn sort_mostly_sorted_by_key<T: Copy, K: Ord>(v: &mut [T], key: impl Fn(T) -> K) {
    let mut runs: Vec<usize> = vec![0];
    let mut prev: Option<K> = None;
    for (i, &x) in v.iter().enumerate() {
        let k = key(x);
        if prev.as_ref().is_some_and(|p| k < *p) {
            runs.push(i);
            if runs.len() > MANY_RUNS {
                v.sort_unstable_by_key(|&x| key(x));
                return;
            }
        }
        prev = Some(k);
    }
    runs.push(v.len());
    let mut buf: Vec<T> = Vec::new();
    // Bounds of the runs left; each round merges them two by two.
    while runs.len() > 2 {
        let mut next = vec![0];
        for pair in runs[1..].chunks(2) {
            if let [mid, end] = *pair {
                let start = *next.last().unwrap_or(&0);
                merge_runs(&mut v[start..end], mid - start, &key, &mut buf);
            }
            next.push(*pair.last().unwrap_or(&0));
        }
        runs = next;
    }
}

/// How many runs [`sort_mostly_sorted_by_key`] merges; past it, the list is shuffled enough.
const MANY_RUNS: usize = 64;

/// Merges `v[..mid]` and `v[mid..]`, each sorted, stably (the left first on ties), through
/// `buf` holding a copy of the shorter.
fn merge_runs<T: Copy, K: Ord>(v: &mut [T], mid: usize, key: &impl Fn(T) -> K, buf: &mut Vec<T>) {
    let n = v.len();
    if mid == 0 || mid == n || key(v[mid - 1]) <= key(v[mid]) {
        return;
    }
    buf.clear();
    if mid <= n - mid {
        // The left aside, merged from the front: the write never passes the right's next row.
        buf.extend_from_slice(&v[..mid]);
        let (mut i, mut j, mut at) = (0, mid, 0);
        while i < buf.len() {
            if j < n && key(v[j]) < key(buf[i]) {
                v[at] = v[j];
                j += 1;
            } else {
                v[at] = buf[i];
                i += 1;
            }
            at += 1;
        }
    } else {
        // The right aside, merged from the back.
        buf.extend_from_slice(&v[mid..]);
        let (mut i, mut j, mut at) = (mid, buf.len(), n);
        while j > 0 {
            at -= 1;
            if i > 0 && key(buf[j - 1]) < key(v[i - 1]) {
                v[at] = v[i - 1];
                i -= 1;
            } else {
                v[at] = buf[j - 1];
                j -= 1;
            }
        }
    }
}

/// `v.partition_point(pred)` (`pred` true on a prefix of `v`), searched outwards from `near`
/// (a guess, such as the last answer) in steps that double: few probes when it is close.
pub(crate) fn partition_point_near<T>(v: &[T], near: usize, pred: impl Fn(&T) -> bool) -> usize {
    let near = near.min(v.len());
    if near < v.len() && pred(&v[near]) {
        // The answer is past `near`: `pred` holds below `lo`.
        let (mut lo, mut step) = (near + 1, 1);
        loop {
            let hi = lo + step;
            if hi >= v.len() || !pred(&v[hi]) {
                let hi = hi.min(v.len());
                return lo + v[lo..hi].partition_point(&pred);
            }
            (lo, step) = (hi + 1, step * 2);
        }
    }
    // The answer is at or before `near`: `pred` fails from `hi` on.
    let (mut hi, mut step) = (near, 1);
    while hi > 0 {
        let lo = hi.saturating_sub(step);
        if pred(&v[lo]) {
            return lo + 1 + v[lo + 1..hi].partition_point(&pred);
        }
        (hi, step) = (lo, step * 2);
    }
    0
}

#[cfg(test)]
mod tests {
    use super::{partition_point_near, sort_mostly_sorted_by_key};

    /// Lists sorted, nearly sorted (a few rows late or early, at either end, repeated values),
    /// in runs, and shuffled sort as the standard stable sort sorts them.
    #[test]
    fn mostly_sorted_lists_sort_as_the_standard_sort_does() {
        let mut lists: Vec<Vec<i64>> = vec![vec![], vec![3], vec![2, 1], vec![5; 10]];
        let sorted: Vec<i64> = (0..500).map(|k| k / 3).collect();
        lists.push(sorted.clone());
        for (from, to) in [(0, 499), (499, 0), (250, 10), (10, 250), (100, 101)] {
            let mut v = sorted.clone();
            let x = v.remove(from);
            v.insert(to, x);
            lists.push(v);
        }
        // Outer events late, as a profiler writes them: every tenth row moved 5 on.
        let mut late = sorted.clone();
        for k in (0..480).step_by(10) {
            late[k..k + 6].rotate_left(1);
        }
        lists.push(late);
        // Runs: two, three of other lengths, as many as may be merged and one more.
        for parts in [2, 3, 64, 65] {
            lists.push(
                (0..parts)
                    .flat_map(|r| (0..7).map(move |i| i * 100 + r))
                    .collect(),
            );
        }
        lists.push(
            (0..300)
                .map(|k| if k < 280 { k } else { k - 200 })
                .collect(),
        );
        lists.push((0..500).map(|k| (k * 7919) % 503).collect());
        lists.push((0..500).rev().collect());
        for list in lists {
            // By value then index, as callers key rows; by value alone, where runs keep ties.
            let mut rows: Vec<u32> = (0..list.len() as u32).collect();
            let key = |r: u32| (list[r as usize], r);
            let mut want = rows.clone();
            want.sort_by_key(|&r| key(r));
            sort_mostly_sorted_by_key(&mut rows, key);
            assert_eq!(rows, want, "{list:?}");
            let runs = 1 + list.windows(2).filter(|w| w[1] < w[0]).count();
            if runs <= super::MANY_RUNS {
                let mut rows: Vec<u32> = (0..list.len() as u32).collect();
                sort_mostly_sorted_by_key(&mut rows, |r| list[r as usize]);
                assert_eq!(rows, want, "{list:?}");
            }
        }
    }

    /// The search from a guess answers as the binary search does, from every guess, on lists
    /// with repeated values.
    #[test]
    fn searching_near_a_guess_finds_the_partition_point() {
        let lists: [&[i64]; 5] = [&[], &[5], &[1, 1, 1], &[0, 2, 2, 2, 4, 7, 7, 9], &[3; 40]];
        for v in lists {
            let mut long: Vec<i64> = v.to_vec();
            long.extend((0..100).map(|k| 10 + k / 3));
            for v in [v, &long[..]] {
                for t in -1..50 {
                    let want = v.partition_point(|&x| x <= t);
                    for near in 0..v.len() + 3 {
                        let got = partition_point_near(v, near, |&x| x <= t);
                        assert_eq!(got, want, "{v:?} {t} {near}");
                    }
                }
            }
        }
    }
}
