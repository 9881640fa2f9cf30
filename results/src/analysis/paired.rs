//! The paired baseline (`bench --baseline`): slices of the kernel floor and of connstorm's peak
//! alternated on the same CPUs in ABBA order, each pair's ratio (connstorm ÷ floor), their
//! median and a distribution-free confidence interval for that median.
//!
//! Why pairs: consecutive runs on a shared VM differ by ±30%, far more than the effect measured.
//! Drift (a neighbour's load, frequency, cache state) hits both arms of a pair nearly alike, so a
//! ratio inside a pair cancels most of it; ABBA order (floor first in even pairs, connstorm
//! first in odd ones) cancels a linear trend inside each two pairs.
//!
//! The interval is the order-statistic (binomial, "sign test") interval for a median: with the
//! n ratios sorted, `[x₍ₖ₎, x₍ₙ₊₁₋ₖ₎]` covers the population median with probability
//! `1 − 2·P(B ≤ k−1)`, `B ~ Binomial(n, ½)`, for any continuous distribution; k is the largest
//! rank whose coverage still reaches the level asked. Source: W. J. Conover, *Practical
//! Nonparametric Statistics*, 3rd ed. (Wiley 1999), §3.2 (confidence interval for a quantile);
//! also H. A. David & H. N. Nagaraja, *Order Statistics*, 3rd ed. (2003), §7.1. For 95%: n ≤ 5
//! gives none (the widest, `[min, max]`, covers only `1 − 2/2ⁿ`, 93.75% at n = 5); n = 6..8 give
//! `[min, max]` (96.9% at 6); n = 9 gives `[x₍₂₎, x₍₈₎]` (96.1%); n = 12 `[x₍₃₎, x₍₁₀₎]` (96.1%).

use crate::record::{Arm, MedianInterval, Paired, Slice};

/// The slice order of `pairs` pairs, ABBA: pair 0 floor then connstorm, pair 1 connstorm then
/// floor, and so on. Returns (pair index, arm) in run order; `2 × pairs` entries.
pub fn abba_order(pairs: usize) -> Vec<(usize, Arm)> {
    (0..pairs)
        .flat_map(|i| {
            let (a, b) = if i % 2 == 0 {
                (Arm::Floor, Arm::Connstorm)
            } else {
                (Arm::Connstorm, Arm::Floor)
            };
            [(i, a), (i, b)]
        })
        .collect()
}

/// `P(B ≤ j)` for `B ~ Binomial(n, ½)`, exact in f64 for n up to a few hundred.
fn binomial_half_cdf(n: usize, j: usize) -> f64 {
    let mut c = 1.0f64; // C(n, 0)
    let mut sum = 0.0;
    for i in 0..=j.min(n) {
        if i > 0 {
            c = c * (n + 1 - i) as f64 / i as f64;
        }
        sum += c;
    }
    sum / 2f64.powi(n as i32)
}

/// The order-statistic confidence interval for the median of `samples` at `confidence` (e.g.
/// 0.95). `None` when no rank reaches the level (n ≤ 5 at 95%), when `confidence` is outside
/// (0, 1), or when a sample is not finite.
pub(crate) fn median_interval(samples: &[f64], confidence: f64) -> Option<MedianInterval> {
    if !(confidence > 0.0 && confidence < 1.0) || samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = samples.len();
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut best = None;
    for k in 1..=n / 2 {
        let coverage = 1.0 - 2.0 * binomial_half_cdf(n, k - 1);
        if coverage + 1e-12 < confidence {
            break;
        }
        best = Some(MedianInterval {
            low: sorted[k - 1],
            high: sorted[n - k],
            k,
            coverage,
        });
    }
    best
}

/// The fewest samples for which [`median_interval`] gives an interval at `confidence` (6 at 95%).
pub(crate) fn min_samples(confidence: f64) -> usize {
    (1..=64)
        .find(|&n| 1.0 - 2.0 * binomial_half_cdf(n, 0) + 1e-12 >= confidence)
        .unwrap_or(usize::MAX)
}

/// The interval method, as recorded.
pub(crate) const METHOD: &str = "order-statistic (binomial sign-test) interval for the median: [x(k), x(n+1-k)], coverage 1-2*P(Bin(n,1/2)<=k-1); Conover, Practical Nonparametric Statistics, 3rd ed., s.3.2";

impl Paired {
    /// Pairs up `slices` (each pair needs both arms) and computes ratios, their median and the
    /// interval at `confidence`.
    pub fn from_slices(
        slices: Vec<Slice>,
        confidence: f64,
        slice_secs: f64,
        warmup_secs: f64,
        shape: &str,
    ) -> Paired {
        let pairs = slices.iter().map(|s| s.pair + 1).max().unwrap_or(0);
        let mut ratios = Vec::new();
        for p in 0..pairs {
            let arm = |a| {
                slices
                    .iter()
                    .find(|s| s.pair == p && s.arm == Some(a))
                    .map(|s| s.per_sec)
            };
            if let (Some(f), Some(c)) = (arm(Arm::Floor), arm(Arm::Connstorm)) {
                if f > 0.0 {
                    ratios.push(c / f);
                }
            }
        }
        Paired {
            median_ratio: if ratios.is_empty() {
                0.0
            } else {
                crate::analysis::stats::median(&ratios)
            },
            interval: median_interval(&ratios, confidence),
            ratios,
            slices,
            confidence,
            method: METHOD.into(),
            slice_secs,
            warmup_secs,
            shape: shape.into(),
        }
    }

    /// Median of one arm's rates (conn/s), 0 without a slice of it.
    pub fn median_per_sec(&self, arm: Arm) -> f64 {
        let v: Vec<f64> = self
            .slices
            .iter()
            .filter(|s| s.arm == Some(arm))
            .map(|s| s.per_sec)
            .collect();
        if v.is_empty() {
            0.0
        } else {
            crate::analysis::stats::median(&v)
        }
    }

    /// Median of one arm's CPU per connection on one side (µs), `None` without a figure.
    pub fn median_us_per_conn(&self, arm: Arm, server_side: bool) -> Option<f64> {
        let v: Vec<f64> = self
            .slices
            .iter()
            .filter(|s| s.arm == Some(arm))
            .filter_map(|s| {
                if server_side {
                    s.server_us_per_conn
                } else {
                    s.load_us_per_conn
                }
            })
            .collect();
        (!v.is_empty()).then(|| crate::analysis::stats::median(&v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abba_alternates_which_arm_runs_first() {
        use Arm::*;
        assert_eq!(
            abba_order(3),
            [
                (0, Floor),
                (0, Connstorm),
                (1, Connstorm),
                (1, Floor),
                (2, Floor),
                (2, Connstorm)
            ]
        );
        assert!(abba_order(0).is_empty());
    }

    /// Binomial(n, ½) tail sums against hand counts: C(6,0)=1, C(6,1)=6, C(9,1)=9 over 2ⁿ.
    #[test]
    fn binomial_tails_match_hand_counts() {
        assert!((binomial_half_cdf(6, 0) - 1.0 / 64.0).abs() < 1e-15);
        assert!((binomial_half_cdf(6, 1) - 7.0 / 64.0).abs() < 1e-15);
        assert!((binomial_half_cdf(9, 1) - 10.0 / 512.0).abs() < 1e-15);
        assert!((binomial_half_cdf(4, 4) - 1.0).abs() < 1e-15);
    }

    /// n = 6 at 95%: k = 1, the interval is [min, max] with coverage 1 − 2/64 = 96.875%.
    #[test]
    fn six_pairs_give_min_to_max_at_96_9_percent() {
        let r = [1.3, 0.9, 1.1, 1.05, 1.2, 0.95];
        let ci = median_interval(&r, 0.95).unwrap();
        assert_eq!((ci.k, ci.low, ci.high), (1, 0.9, 1.3));
        assert!((ci.coverage - 0.96875).abs() < 1e-12, "{ci:?}");
    }

    /// n = 9: k = 2 (P(B ≤ 1) = 10/512, coverage 96.09%); k = 3 would cover only 82%.
    #[test]
    fn nine_samples_drop_one_at_each_end() {
        let r = [9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0];
        let ci = median_interval(&r, 0.95).unwrap();
        assert_eq!((ci.k, ci.low, ci.high), (2, 2.0, 8.0));
        assert!((ci.coverage - (1.0 - 20.0 / 512.0)).abs() < 1e-12);
        // At 80% the rank moves in: k = 3 covers 1 − 2·46/512 = 82.0%.
        let ci = median_interval(&r, 0.80).unwrap();
        assert_eq!((ci.k, ci.low, ci.high), (3, 3.0, 7.0));
    }

    #[test]
    fn too_few_or_bad_samples_give_no_interval() {
        assert_eq!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95), None);
        assert!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.90).is_some());
        assert_eq!(median_interval(&[], 0.95), None);
        assert_eq!(median_interval(&[1.0; 6], 1.0), None);
        assert_eq!(
            median_interval(&[1.0, 2.0, f64::NAN, 4.0, 5.0, 6.0], 0.95),
            None
        );
        assert_eq!(min_samples(0.95), 6);
        assert_eq!(min_samples(0.99), 8);
    }

    fn slice(pair: usize, arm: Arm, per_sec: f64) -> Slice {
        Slice {
            pair,
            arm: Some(arm),
            per_sec,
            ..Slice::default()
        }
    }

    /// Ratios are formed inside each pair, in either order, and their median and interval follow.
    #[test]
    fn ratios_pair_up_within_pairs() {
        let mut slices = Vec::new();
        let floor = [100.0, 200.0, 100.0, 100.0, 50.0, 100.0];
        let tool = [110.0, 180.0, 120.0, 100.0, 60.0, 130.0];
        for (i, a) in abba_order(6) {
            let v = if a == Arm::Floor { floor[i] } else { tool[i] };
            slices.push(slice(i, a, v));
        }
        // A floor slice that completed nothing cannot make a ratio.
        slices.push(slice(6, Arm::Floor, 0.0));
        slices.push(slice(6, Arm::Connstorm, 10.0));
        let p = Paired::from_slices(slices, 0.95, 2.0, 0.5, "split");
        assert_eq!(p.ratios, [1.1, 0.9, 1.2, 1.0, 1.2, 1.3]);
        assert!((p.median_ratio - 1.15).abs() < 1e-12);
        let ci = p.interval.unwrap();
        assert_eq!((ci.low, ci.high), (0.9, 1.3));
        assert_eq!(p.median_per_sec(Arm::Floor), 100.0);
        assert_eq!(p.median_us_per_conn(Arm::Floor, true), None);
    }
}
