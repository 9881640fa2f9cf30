//! Execution segments: one load generator's share of a run split over `N` generators (hosts,
//! pods), like k6's execution segments.
//!
//! A [`Segment`] `i/N` is 0-based (`0 <= i < N`), as Kubernetes' `JOB_COMPLETION_INDEX` is, so
//! an Indexed Job passes its index unchanged. Shares are whole numbers that sum exactly to the
//! whole: `total / N` each, and the remainder `total % N` goes one apiece to the first segments
//! (segment `i` gets one more when `i < total % N`). Applied to:
//! - an open-loop rate ([`Segment::share_rate`]): whole connections per second split so, a
//!   fractional rate split evenly;
//! - a closed-loop concurrency ([`Segment::share_count`]);
//! - a list of source addresses ([`Segment::share_range`]): contiguous, disjoint slices.

use std::ops::Range;
use std::str::FromStr;

use common::error::BadInput;

use crate::config::{LoadConfig, Pattern};

/// Largest `N` accepted: far more generators than any run needs, small enough that every share
/// of a sensible rate stays above zero.
pub const MAX_SEGMENTS: u32 = 10_000;

/// One generator's segment `index/count` of a run (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// This generator's index, `0..count`.
    pub index: u32,
    /// Generators sharing the run, `1..=MAX_SEGMENTS`.
    pub count: u32,
}

/// Why a segment or a share cannot be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    /// The text is not `i/N` with `0 <= i < N <= MAX_SEGMENTS`.
    #[error("invalid segment {0:?}: write i/N with 0 <= i < N <= {max}, 0-based (e.g. 0/4 … 3/4; Kubernetes' JOB_COMPLETION_INDEX is already 0-based)", max = MAX_SEGMENTS)]
    Syntax(String),
    /// The share of this segment would be empty.
    #[error("segment {index}/{count} gets no {what} ({total} split {count} ways): give at least {count}, or fewer segments")]
    Empty {
        /// Index.
        index: u32,
        /// N.
        count: u32,
        /// What was split: `"connections in flight"`, `"source addresses"`, `"rate"`.
        what: &'static str,
        /// The whole.
        total: String,
    },
}

impl FromStr for Segment {
    type Err = SegmentError;

    fn from_str(s: &str) -> Result<Segment, SegmentError> {
        let bad = || SegmentError::Syntax(s.to_string());
        let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > MAX_SEGMENTS || index >= count {
            return Err(bad());
        }
        Ok(Segment { index, count })
    }
}

impl std::fmt::Display for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Segment {
    /// The whole run: segment 0/1.
    pub const WHOLE: Segment = Segment { index: 0, count: 1 };

    /// This segment's share of `total` whole things: `total / N`, plus one when
    /// `index < total % N`. The shares of all `N` segments sum to `total` exactly.
    pub fn share_count(self, total: u64) -> u64 {
        let n = u64::from(self.count);
        total / n + u64::from(u64::from(self.index) < total % n)
    }

    /// This segment's slice of `len` items: contiguous, of [`Segment::share_count`] items, the
    /// slices of all `N` segments disjoint and covering `0..len` in index order.
    pub fn share_range(self, len: usize) -> Range<usize> {
        let n = self.count as usize;
        let i = self.index as usize;
        let start = i * (len / n) + i.min(len % n);
        start..start + self.share_count(len as u64) as usize
    }

    /// This segment's share of an open-loop rate (per second): a whole-number rate (up to 2^53)
    /// is split as [`Segment::share_count`] splits counts, so the shares sum exactly; a
    /// fractional rate is split evenly (`rate / N`).
    pub fn share_rate(self, rate_per_sec: f64) -> f64 {
        if rate_per_sec.fract() == 0.0 && (0.0..9.007_199_254_740_992e15).contains(&rate_per_sec) {
            self.share_count(rate_per_sec as u64) as f64
        } else {
            rate_per_sec / f64::from(self.count)
        }
    }

    /// Narrows `cfg` to this segment's share: the open-loop rate, the closed-loop concurrency
    /// and the source addresses (a contiguous, disjoint slice). The default in-flight bound
    /// (`max_in_flight_given` false) follows the smaller rate
    /// ([`crate::default_max_in_flight`]).
    ///
    /// # Errors
    /// Bad input when the share is empty (a rate, concurrency or source list smaller than `N`),
    /// or the narrowed configuration does not validate ([`LoadConfig::validate`]).
    pub fn apply(
        self,
        mut cfg: LoadConfig,
        max_in_flight_given: bool,
    ) -> Result<LoadConfig, BadInput> {
        let bad = |e: SegmentError| BadInput(format!("--segment: {e}"));
        cfg.pattern = match cfg.pattern {
            Pattern::Open {
                rate_per_sec,
                arrival,
            } => {
                let rate = self.nonzero_rate(rate_per_sec).map_err(bad)?;
                if !max_in_flight_given {
                    let d = crate::default_max_in_flight(rate, cfg.connect_timeout, cfg.workers());
                    cfg.max_in_flight = cfg.max_in_flight.min(d);
                }
                Pattern::Open {
                    rate_per_sec: rate,
                    arrival,
                }
            }
            Pattern::Closed { concurrency } => Pattern::Closed {
                concurrency: self
                    .nonzero_count(u64::from(concurrency), "connections in flight")
                    .map_err(bad)? as u32,
            },
        };
        cfg.sources = self
            .nonempty_slice(&cfg.sources, "source addresses")
            .map_err(bad)?;
        cfg.validate().map_err(|e| BadInput(e.to_string()))?;
        Ok(cfg)
    }

    /// [`Segment::share_count`] refusing an empty share.
    ///
    /// # Errors
    /// [`SegmentError::Empty`] when `total < N` leaves this segment nothing.
    pub fn nonzero_count(self, total: u64, what: &'static str) -> Result<u64, SegmentError> {
        match self.share_count(total) {
            0 => Err(self.empty(what, total.to_string())),
            s => Ok(s),
        }
    }

    /// [`Segment::share_rate`] refusing a zero share.
    ///
    /// # Errors
    /// [`SegmentError::Empty`] when the rate is below one per second per segment (a whole rate
    /// `< N`).
    pub fn nonzero_rate(self, rate_per_sec: f64) -> Result<f64, SegmentError> {
        let r = self.share_rate(rate_per_sec);
        if r > 0.0 {
            Ok(r)
        } else {
            Err(self.empty("rate", format!("{rate_per_sec}/s")))
        }
    }

    /// [`Segment::share_range`] of `items`, refusing an empty slice of a non-empty list.
    ///
    /// # Errors
    /// [`SegmentError::Empty`] when `items` has fewer than `N` entries.
    pub fn nonempty_slice<T: Clone>(
        self,
        items: &[T],
        what: &'static str,
    ) -> Result<Vec<T>, SegmentError> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let r = self.share_range(items.len());
        if r.is_empty() {
            return Err(self.empty(what, items.len().to_string()));
        }
        Ok(items[r].to_vec())
    }

    fn empty(self, what: &'static str, total: String) -> SegmentError {
        SegmentError::Empty {
            index: self.index,
            count: self.count,
            what,
            total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(n: u32) -> impl Iterator<Item = Segment> {
        (0..n).map(move |index| Segment { index, count: n })
    }

    #[test]
    fn counts_split_exactly_with_the_remainder_to_the_first_segments() {
        for n in [1, 2, 3, 4, 7, 64] {
            for total in [0, 1, 3, 4, 5, 1_000, 1_003, 99_999] {
                let shares: Vec<u64> = all(n).map(|s| s.share_count(total)).collect();
                assert_eq!(shares.iter().sum::<u64>(), total, "{total} over {n}");
                let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
                assert!(hi - lo <= 1, "{shares:?}");
                // Deterministic: the larger shares come first.
                assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
            }
        }
        assert_eq!(
            all(4).map(|s| s.share_count(1_003)).collect::<Vec<_>>(),
            vec![251, 251, 251, 250]
        );
    }

    #[test]
    fn ranges_are_disjoint_and_cover_the_list_in_order() {
        for n in [1, 3, 4, 10] {
            for len in [0usize, 1, 4, 9, 250] {
                let mut next = 0;
                for s in all(n) {
                    let r = s.share_range(len);
                    assert_eq!(r.start, next, "{len} over {n}: gap or overlap at {s}");
                    assert_eq!(r.len() as u64, s.share_count(len as u64));
                    next = r.end;
                }
                assert_eq!(next, len);
            }
        }
        let seg = Segment { index: 1, count: 4 };
        assert_eq!(
            seg.nonempty_slice(&[10, 11, 12, 13, 14], "x").unwrap(),
            vec![12]
        );
    }

    #[test]
    fn rates_split_to_the_whole() {
        let whole: f64 = all(4).map(|s| s.share_rate(20_003.0)).sum();
        assert_eq!(whole, 20_003.0);
        assert_eq!(Segment { index: 3, count: 4 }.share_rate(20_003.0), 5_000.0);
        let frac: f64 = all(3).map(|s| s.share_rate(10.5)).sum();
        assert!((frac - 10.5).abs() < 1e-12);
    }

    #[test]
    fn bad_segments_and_empty_shares_are_refused() {
        assert_eq!(
            "2/4".parse::<Segment>().unwrap(),
            Segment { index: 2, count: 4 }
        );
        for bad in ["4/4", "1/0", "-1/4", "1", "a/b", "1/4/2", "0/10001"] {
            let e = bad.parse::<Segment>().unwrap_err();
            assert!(e.to_string().contains("0-based"), "{bad}: {e}");
        }
        let s = Segment { index: 3, count: 4 };
        let e = s.nonzero_count(3, "connections in flight").unwrap_err();
        assert!(
            e.to_string()
                .contains("segment 3/4 gets no connections in flight"),
            "{e}"
        );
        assert!(s.nonzero_rate(3.0).is_err());
        assert!(s.nonempty_slice(&[1, 2, 3], "source addresses").is_err());
        assert_eq!(
            s.nonempty_slice::<u8>(&[], "source addresses").unwrap(),
            Vec::<u8>::new()
        );
        assert_eq!(s.nonzero_count(4, "x").unwrap(), 1);
    }
}
