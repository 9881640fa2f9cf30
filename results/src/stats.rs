//! Statistics on small trial sets: median, spread, and a bootstrap confidence interval for the
//! relative change of the median between two sets.
//!
//! Method: percentile bootstrap. Each side is resampled with replacement
//! ([`BOOTSTRAP_RESAMPLES`] times, seeded with [`BOOTSTRAP_SEED`] so output is reproducible);
//! for each resample the relative change `median(B*) / median(A*) - 1` is computed; the
//! interval is the (α/2, 1-α/2) quantiles of those changes. It makes no assumption about the
//! distribution of trial results, which for connection rates is often skewed by a slow trial.

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde::{Deserialize, Serialize};

/// Bootstrap resamples per interval: 10,000 (about 1 ms for 10 + 10 trials).
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;
/// Seed of the bootstrap's random numbers: fixed, so the same trials give the same interval.
pub const BOOTSTRAP_SEED: u64 = 0x00c0_ffee;
/// Fewest trials per side for an interval; with fewer, there is none.
pub const MIN_TRIALS: usize = 2;

/// Median of the samples (mean of the two middle ones for an even count); `NaN` when empty.
pub fn median(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    median_sorted(&v)
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Count, median, minimum and maximum of one side's samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Number of samples.
    pub n: usize,
    /// Median (`NaN` when `n` is 0).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
}

impl Spread {
    /// The spread of some samples.
    pub fn of(samples: &[f64]) -> Spread {
        Spread {
            n: samples.len(),
            median: median(samples),
            min: samples.iter().copied().fold(f64::NAN, f64::min),
            max: samples.iter().copied().fold(f64::NAN, f64::max),
        }
    }
}

/// A confidence interval for the relative change of the median, B vs A (`0.05` = +5%).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// Confidence level, e.g. 0.95.
    pub confidence: f64,
}

impl Interval {
    /// The interval excludes zero: the change is statistically significant at its level.
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }
}

/// Relative change of the median, `median(b) / median(a) - 1`; `NaN` if `median(a)` is 0 or
/// either side is empty.
pub fn relative_change(a: &[f64], b: &[f64]) -> f64 {
    let ma = median(a);
    if ma == 0.0 {
        f64::NAN
    } else {
        median(b) / ma - 1.0
    }
}

/// Percentile-bootstrap interval (see the module docs) for the relative change of the median
/// from `a` to `b`, at `confidence` (e.g. 0.95).
///
/// `None` when a side has fewer than [`MIN_TRIALS`] samples, a sample is not finite, or A's
/// median can be 0 in a resample (relative change undefined).
pub fn bootstrap_relative_change(a: &[f64], b: &[f64], confidence: f64) -> Option<Interval> {
    if a.len() < MIN_TRIALS || b.len() < MIN_TRIALS {
        return None;
    }
    if a.iter().chain(b).any(|x| !x.is_finite()) || a.contains(&0.0) {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(BOOTSTRAP_SEED);
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    let mut changes = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        resample(&mut rng, a, &mut ra);
        resample(&mut rng, b, &mut rb);
        changes.push(median_sorted(&rb) / median_sorted(&ra) - 1.0);
    }
    changes.sort_by(f64::total_cmp);
    let alpha = (1.0 - confidence).clamp(0.0, 1.0);
    let at = |q: f64| {
        let i = (q * (changes.len() - 1) as f64).round() as usize;
        changes[i.min(changes.len() - 1)]
    };
    Some(Interval {
        low: at(alpha / 2.0),
        high: at(1.0 - alpha / 2.0),
        confidence,
    })
}

/// Fills `out` with a sorted resample (with replacement) of `from`.
fn resample(rng: &mut StdRng, from: &[f64], out: &mut [f64]) {
    for x in out.iter_mut() {
        *x = from[rng.gen_range(0..from.len())];
    }
    out.sort_by(f64::total_cmp);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        let s = Spread::of(&[5.0, 1.0, 9.0]);
        assert_eq!((s.n, s.min, s.median, s.max), (3, 1.0, 5.0, 9.0));
    }

    #[test]
    fn interval_is_reproducible_and_brackets_the_point_estimate() {
        let a = [100.0, 102.0, 98.0, 101.0, 99.0];
        let b = [110.0, 111.0, 108.0, 112.0, 109.0];
        let i1 = bootstrap_relative_change(&a, &b, 0.95).unwrap();
        let i2 = bootstrap_relative_change(&a, &b, 0.95).unwrap();
        assert_eq!(i1, i2);
        let point = relative_change(&a, &b);
        assert!(i1.low <= point && point <= i1.high, "{i1:?} vs {point}");
        assert!(i1.excludes_zero());
    }

    #[test]
    fn no_interval_from_too_few_trials_or_zero_baseline() {
        assert!(bootstrap_relative_change(&[1.0], &[1.0, 2.0], 0.95).is_none());
        assert!(bootstrap_relative_change(&[0.0, 0.0], &[1.0, 2.0], 0.95).is_none());
        assert!(bootstrap_relative_change(&[1.0, f64::NAN], &[1.0, 2.0], 0.95).is_none());
    }
}
