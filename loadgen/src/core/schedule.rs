//! One worker's share of the open-loop schedule: its intended start times, in nanoseconds on the
//! CLOCK_MONOTONIC time line (see [`crate::clock`]).
//!
//! Pure logic with explicit time, so it is tested without sleeping.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::config::Arrival;

/// Intended start times of one worker, ascending, all before `end_ns`.
#[derive(Debug)]
pub(crate) struct Schedule {
    start_ns: u64,
    end_ns: u64,
    worker: u64,
    workers: u64,
    /// Global gap `1e9 / rate` in ns.
    gap_ns: f64,
    index: u64,
    next_ns: u64,
    poisson: Option<StdRng>,
}

impl Schedule {
    /// The schedule of worker `worker` of `workers` for a total rate of `rate_per_sec`, from
    /// `start_ns` (inclusive) to `end_ns` (exclusive).
    ///
    /// Uniform: worker `w` takes the global slots `w, w+N, w+2N, ...` of an evenly spaced schedule,
    /// so the workers' phases are staggered by `1/rate`. Poisson: exponential gaps with mean
    /// `N/rate`, seeded by `seed` and the worker index.
    ///
    /// # Panics
    /// If `workers` is 0, `worker >= workers`, or the rate is not positive and finite.
    pub(crate) fn new(
        arrival: Arrival,
        rate_per_sec: f64,
        worker: usize,
        workers: usize,
        start_ns: u64,
        end_ns: u64,
        seed: u64,
    ) -> Schedule {
        assert!(
            workers > 0 && worker < workers,
            "worker {worker} of {workers}"
        );
        assert!(
            rate_per_sec.is_finite() && rate_per_sec > 0.0,
            "rate {rate_per_sec}"
        );
        let mut s = Schedule {
            start_ns,
            end_ns,
            worker: worker as u64,
            workers: workers as u64,
            gap_ns: 1e9 / rate_per_sec,
            index: 0,
            next_ns: start_ns,
            poisson: match arrival {
                Arrival::Uniform => None,
                Arrival::Poisson => Some(StdRng::seed_from_u64(
                    seed ^ (worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                )),
            },
        };
        s.next_ns = s.compute(0, start_ns);
        s
    }

    fn compute(&mut self, index: u64, prev_ns: u64) -> u64 {
        match &mut self.poisson {
            None => {
                let slot = self
                    .worker
                    .saturating_add(index.saturating_mul(self.workers))
                    as f64;
                self.start_ns.saturating_add((slot * self.gap_ns) as u64)
            }
            Some(rng) => {
                // Inverse-CDF sampling of Exp(mean): -ln(U) * mean with U in (0, 1].
                let u: f64 = 1.0 - rng.gen::<f64>();
                let gap = -u.ln() * self.gap_ns * self.workers as f64;
                prev_ns.saturating_add(gap as u64)
            }
        }
    }

    /// The next intended start, or `None` when the schedule has ended.
    #[inline]
    pub(crate) fn peek(&self) -> Option<u64> {
        (self.next_ns < self.end_ns).then_some(self.next_ns)
    }

    /// Moves to the following intended start.
    #[inline]
    pub(crate) fn advance(&mut self) {
        self.index += 1;
        self.next_ns = self.compute(self.index, self.next_ns);
    }

    /// How many intended starts were passed so far (started, dropped or skipped).
    #[cfg(test)]
    pub(crate) fn taken(&self) -> u64 {
        self.index
    }

    /// Passes every intended start before `cutoff_ns` (and before the end) without starting it
    /// and returns how many that was, in O(1): a generator that fell behind counts its dropped
    /// starts by arithmetic, never one by one (at 1e9/s one by one would take longer than the
    /// run).
    ///
    /// Uniform: exact (the count of this worker's slots `w + kN` in `[next, cutoff)`). Poisson:
    /// the expected number of arrivals in that interval (`Δt / mean gap`, rounded, at least the
    /// one due), and the next arrival is drawn afresh from `cutoff` (exponential gaps are
    /// memoryless, so the schedule after the skip has the same law).
    pub(crate) fn skip_before(&mut self, cutoff_ns: u64) -> u64 {
        let cutoff = cutoff_ns.min(self.end_ns);
        if self.next_ns >= cutoff {
            return 0;
        }
        match self.poisson {
            None => {
                // Slot k (this worker's k-th) is due at start + (w + kN)·gap. Estimate the first
                // k due at or after the cutoff, then correct the float estimate by stepping.
                let offset = cutoff.saturating_sub(self.start_ns) as f64;
                let est = ((offset / self.gap_ns - self.worker as f64) / self.workers as f64)
                    .ceil()
                    .max(self.index as f64);
                let mut k = if est.is_finite() && est < u64::MAX as f64 / 2.0 {
                    est as u64
                } else {
                    u64::MAX / 2
                };
                while k > self.index && self.compute(k - 1, 0) >= cutoff {
                    k -= 1;
                }
                while self.compute(k, 0) < cutoff {
                    k += 1;
                }
                let n = k - self.index;
                self.index = k;
                self.next_ns = self.compute(k, 0);
                n
            }
            Some(_) => {
                let mean = self.gap_ns * self.workers as f64;
                let n = ((cutoff - self.next_ns) as f64 / mean).round().max(1.0);
                let n = if n < u64::MAX as f64 / 2.0 {
                    n as u64
                } else {
                    u64::MAX / 2
                };
                self.index = self.index.saturating_add(n);
                self.next_ns = self.compute(self.index, cutoff);
                n
            }
        }
    }

    /// Passes every intended start left before the end (see [`Self::skip_before`]); returns how
    /// many.
    #[cfg(test)]
    pub(crate) fn skip_rest(&mut self) -> u64 {
        self.skip_before(self.end_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MAX_RATE_PER_SEC;

    fn all(mut s: Schedule) -> Vec<u64> {
        let mut v = Vec::new();
        while let Some(t) = s.peek() {
            v.push(t);
            s.advance();
        }
        v
    }

    #[test]
    fn uniform_workers_interleave_into_an_even_schedule() {
        let sec = 1_000_000_000;
        let mut merged: Vec<u64> = (0..3)
            .flat_map(|w| {
                all(Schedule::new(
                    Arrival::Uniform,
                    1000.0,
                    w,
                    3,
                    sec,
                    2 * sec,
                    7,
                ))
            })
            .collect();
        merged.sort_unstable();
        assert_eq!(merged.len(), 1000);
        assert_eq!(merged[0], sec);
        assert!(
            merged.windows(2).all(|w| w[1] - w[0] == 1_000_000),
            "evenly spaced by 1 ms"
        );
    }

    /// Skipping by arithmetic agrees with walking the schedule one start at a time.
    #[test]
    fn uniform_skip_counts_exactly_what_walking_would() {
        let sec = 1_000_000_000u64;
        for (workers, rate) in [(1usize, 1000.0), (3, 1000.0), (2, 7.0), (4, 999_983.0)] {
            for w in 0..workers {
                for cutoff in [sec, sec + 1, sec + 123_456_789, 2 * sec - 1, 5 * sec] {
                    let mut walk =
                        Schedule::new(Arrival::Uniform, rate, w, workers, sec, 2 * sec, 1);
                    let mut walked = 0;
                    walk.advance(); // skipping starts from wherever the schedule is
                    while walk.peek().is_some_and(|t| t < cutoff) {
                        walk.advance();
                        walked += 1;
                    }
                    let mut skip =
                        Schedule::new(Arrival::Uniform, rate, w, workers, sec, 2 * sec, 1);
                    skip.advance();
                    assert_eq!(
                        skip.skip_before(cutoff),
                        walked,
                        "{workers} {rate} {w} {cutoff}"
                    );
                    assert_eq!(skip.peek(), walk.peek());
                    assert_eq!(skip.taken(), walk.taken());
                }
            }
        }
    }

    /// At the highest rate a 30-day schedule is still skipped in one step, with the exact count.
    #[test]
    fn skipping_a_huge_schedule_is_instant_and_exact() {
        let day = 86_400 * 1_000_000_000u64;
        let mut s = Schedule::new(Arrival::Uniform, MAX_RATE_PER_SEC, 0, 1, 0, 30 * day, 1);
        let t = std::time::Instant::now();
        assert_eq!(s.skip_before(day), 86_400 * 1_000_000_000);
        assert_eq!(s.peek(), Some(day));
        assert_eq!(s.skip_rest(), 29 * 86_400 * 1_000_000_000);
        assert_eq!(s.peek(), None);
        assert!(t.elapsed() < std::time::Duration::from_millis(50));
        let mut p = Schedule::new(Arrival::Poisson, 1e6, 0, 2, 0, day, 1);
        let n = p.skip_before(day / 2);
        // Expected 43_200 s × 5e5/s per worker, counted from the first arrival (a few µs in).
        assert!((21_599_999_000..=21_600_000_000).contains(&n), "{n}");
        assert!(p.peek().is_some_and(|t| t >= day / 2));
    }

    #[test]
    fn poisson_has_the_right_mean_and_is_reproducible() {
        let sec = 1_000_000_000u64;
        let a = all(Schedule::new(
            Arrival::Poisson,
            20_000.0,
            1,
            2,
            0,
            10 * sec,
            42,
        ));
        let b = all(Schedule::new(
            Arrival::Poisson,
            20_000.0,
            1,
            2,
            0,
            10 * sec,
            42,
        ));
        assert_eq!(a, b);
        // Expected 100_000 arrivals for this worker; sd = sqrt(100_000) ~ 316, allow 5 sd.
        assert!((a.len() as i64 - 100_000).abs() < 1600, "{}", a.len());
        let gaps: Vec<u64> = a.windows(2).map(|w| w[1] - w[0]).collect();
        let uneven = gaps.iter().filter(|&&g| g < 50_000).count();
        assert!(
            uneven > gaps.len() / 4,
            "exponential gaps are often short: {uneven}"
        );
    }
}
