//! Whether two runs differ by more than their step-to-step noise: Welch's t-test over per-step
//! samples (unequal variances and step counts), two-sided. Closed-form and deterministic, so a
//! diff's bytes do not depend on a random seed or the thread count; a bootstrap over 5–20 steps
//! would under-cover and need a seeded RNG.
//!
//! Steps are not independent (clocks drift, caches warm), which makes the test optimistic; the
//! verdicts therefore also ask for a change above a floor (a share of the base).

use serde::{Deserialize, Serialize};

/// Fewer steps than this on either side give `too_few_steps`: users' schedules record 3–5
/// active steps, and Welch's test calls a large, consistent change from 3 a side (a small or
/// noisy one stays within the noise).
pub const MIN_STEPS: usize = 3;
/// The significance level: a change is called when its two-sided p is below it.
pub const ALPHA: f64 = 0.05;

/// What a comparison concluded about one quantity (FEED.md `diff.verdict`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    WithinNoise,
    TooFewSteps,
    /// The run's verdict only (never a test's): GPU work and host time changed in opposite
    /// directions beyond their noise, or the step is faster while its GPU work is slower.
    Mixed,
}

impl Verdict {
    /// Its name in the feed and the rule files: serde's, so the two cannot differ.
    pub fn as_str(self) -> &'static str {
        crate::model::variant_name(&self)
    }
    /// Faster, slower or mixed: a change the test could tell from the noise.
    pub fn changed(self) -> bool {
        matches!(self, Verdict::Faster | Verdict::Slower | Verdict::Mixed)
    }
}

/// Welch's t-test of `new` against `base`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    pub base_mean: f64,
    pub new_mean: f64,
    /// The standard error of the difference of the means.
    pub se: f64,
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// The mean of a sample (0 for an empty one).
pub fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        0.0
    } else {
        x.iter().sum::<f64>() / x.len() as f64
    }
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// The test, or None with fewer than two samples on a side.
pub fn welch(base: &[f64], new: &[f64]) -> Option<Welch> {
    if base.len() < 2 || new.len() < 2 {
        return None;
    }
    let ((mb, vb), (mn, vn)) = (mean_var(base), mean_var(new));
    // Each side's variance of its mean, floored so that constant series give t = 0 when equal
    // and a certain change when not.
    let (eb, en) = (
        (vb / base.len() as f64).max(1e-9),
        (vn / new.len() as f64).max(1e-9),
    );
    let se = (eb + en).sqrt();
    let t = (mn - mb) / se;
    let df = (eb + en).powi(2)
        / (eb.powi(2) / (base.len() as f64 - 1.0) + en.powi(2) / (new.len() as f64 - 1.0));
    Some(Welch {
        base_mean: mb,
        new_mean: mn,
        se,
        t,
        df,
        p: two_sided_p(t, df),
    })
}

/// P(|T| ≥ |t|) for Student's t with `df` degrees of freedom.
pub fn two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    incomplete_beta(df / 2.0, 0.5, df / (df + t * t)).clamp(0.0, 1.0)
}

/// The t value with two-sided p = `p` (bisection: the p falls as |t| grows).
pub fn critical_t(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1e3f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if two_sided_p(mid, df) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// Lentz's method for the incomplete beta's continued fraction.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        for aa in [
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ] {
            d = 1.0 + aa * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + aa / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

fn decide(w: &Welch, floor: f64) -> Verdict {
    if w.p < ALPHA && (w.new_mean - w.base_mean).abs() >= floor {
        if w.new_mean > w.base_mean {
            Verdict::Slower
        } else {
            Verdict::Faster
        }
    } else {
        Verdict::WithinNoise
    }
}

/// A verdict on one quantity, with the test behind it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judgement {
    pub verdict: Verdict,
    /// 1 − p, rounded to 3 decimals; None with too few steps.
    pub confidence: Option<f64>,
    pub base_mean: f64,
    pub new_mean: f64,
    pub test: Option<Welch>,
}

/// `faster`/`slower` when Welch's p < [`ALPHA`] and the means differ by at least `floor`;
/// `within_noise` otherwise; `too_few_steps` under [`MIN_STEPS`] a side.
pub fn judge(base: &[f64], new: &[f64], floor: f64) -> Judgement {
    let (base_mean, new_mean) = (mean(base), mean(new));
    if base.len() < MIN_STEPS || new.len() < MIN_STEPS {
        return Judgement {
            verdict: Verdict::TooFewSteps,
            confidence: None,
            base_mean,
            new_mean,
            test: None,
        };
    }
    let w = welch(base, new).expect("at least MIN_STEPS samples a side");
    Judgement {
        verdict: decide(&w, floor),
        confidence: Some(((1.0 - w.p) * 1e3).round() / 1e3),
        base_mean,
        new_mean,
        test: Some(w),
    }
}

impl Judgement {
    /// The same test judged at another p (one adjusted for the other rows tested with it).
    pub fn at_p(&self, p: f64, floor: f64) -> Judgement {
        let Some(w) = self.test else {
            return *self;
        };
        let w = Welch { p, ..w };
        Judgement {
            verdict: decide(&w, floor),
            confidence: Some(((1.0 - p) * 1e3).round() / 1e3),
            test: Some(w),
            ..*self
        }
    }
}

/// Benjamini–Hochberg adjusted p-values (q-values) of tests run together: with hundreds of op
/// rows, a 5% level would call some of them by chance; their false discovery rate stays at 5%.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]).then(a.cmp(&b)));
    let mut q = vec![1.0; m];
    let mut running = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(p[i] * m as f64 / (rank + 1) as f64);
        q[i] = running.min(1.0);
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_match_students_table() {
        // Two-sided 5% points of Student's t.
        for (t, df) in [(2.228, 10.0), (2.776, 4.0), (1.960, 1e6), (12.706, 1.0)] {
            let p = two_sided_p(t, df);
            assert!((p - 0.05).abs() < 2e-4, "t {t} df {df}: p {p}");
        }
        assert!((two_sided_p(0.0, 7.0) - 1.0).abs() < 1e-12);
        assert!((critical_t(0.05, 10.0) - 2.228).abs() < 1e-3);
    }

    #[test]
    fn welch_matches_a_hand_computation() {
        let (a, b) = (
            [10.0, 12.0, 11.0, 13.0, 9.0],
            [14.0, 15.0, 13.0, 16.0, 17.0],
        );
        let w = welch(&a, &b).unwrap();
        // Means 11 and 15, variances 2.5 and 2.5: se = 1, t = 4, df = 8.
        assert!((w.t - 4.0).abs() < 1e-9 && (w.df - 8.0).abs() < 1e-9);
        assert!((w.p - 0.003_949).abs() < 1e-5, "{}", w.p);
    }

    #[test]
    fn benjamini_hochberg_matches_its_definition() {
        // m = 4: q(i) = min over j >= i of p(j) * m / j, in p order.
        let q = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.5]);
        let want = [0.04, 0.04 * 4.0 / 3.0, 0.04 * 4.0 / 3.0, 0.5];
        for (got, want) in q.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{q:?}");
        }
        let base = [100.0, 101.0, 99.0, 100.0, 100.0, 101.0];
        let slower: Vec<f64> = base.iter().map(|x| x + 10.0).collect();
        let j = judge(&base, &slower, 1.0);
        assert_eq!(j.at_p(0.2, 1.0).verdict, Verdict::WithinNoise);
        assert_eq!(j.at_p(0.2, 1.0).confidence, Some(0.8));
    }

    #[test]
    fn verdicts() {
        let base = [100.0, 101.0, 99.0, 100.0, 100.0, 101.0];
        assert_eq!(judge(&base, &base, 0.0).verdict, Verdict::WithinNoise);
        assert_eq!(judge(&base, &base, 0.0).confidence, Some(0.0));
        let slower: Vec<f64> = base.iter().map(|x| x + 10.0).collect();
        let j = judge(&base, &slower, 1.0);
        assert_eq!(j.verdict, Verdict::Slower);
        assert!(j.confidence.unwrap() > 0.999);
        // Significant but under the floor.
        assert_eq!(judge(&base, &slower, 20.0).verdict, Verdict::WithinNoise);
        let faster: Vec<f64> = base.iter().map(|x| x - 10.0).collect();
        assert_eq!(judge(&base, &faster, 1.0).verdict, Verdict::Faster);
        assert_eq!(
            judge(&base[..2], &faster, 1.0).verdict,
            Verdict::TooFewSteps
        );
        assert_eq!(judge(&base[..2], &faster, 1.0).confidence, None);
        // Three a side call a large, consistent change.
        assert_eq!(
            judge(&base[..3], &faster[..3], 1.0).verdict,
            Verdict::Faster
        );
        // Noise as large as the change: not called.
        let noisy = [80.0, 120.0, 95.0, 125.0, 90.0, 130.0];
        assert_eq!(judge(&base, &noisy, 1.0).verdict, Verdict::WithinNoise);
    }
}
