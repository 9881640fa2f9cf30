//! One worker's share of the open-loop schedule: its intended start times, in nanoseconds on the
//! CLOCK_MONOTONIC time line (see [`crate::clock`]).
//!
//! Pure logic with explicit time, so it is tested without sleeping.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::config::Arrival;

/// Intended start times of one worker, ascending, all before `end_ns`.
#[derive(Debug)]
pub struct Schedule {
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
    pub fn new(
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
                let slot = (self.worker + index * self.workers) as f64;
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
    pub fn peek(&self) -> Option<u64> {
        (self.next_ns < self.end_ns).then_some(self.next_ns)
    }

    /// Moves to the following intended start.
    #[inline]
    pub fn advance(&mut self) {
        self.index += 1;
        self.next_ns = self.compute(self.index, self.next_ns);
    }

    /// How many intended starts were passed so far (started, dropped or skipped).
    pub fn taken(&self) -> u64 {
        self.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
