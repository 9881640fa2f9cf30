//! When a worker runs ([`Window`]) and its open-loop pacing ([`Pace`]): which intended start of its schedule is due now,
//! which are dropped instead (never started, counted by arithmetic in one step,
//! `Schedule::skip_before`, so a worker offered 1e9/s does O(1) work for them per turn), and
//! the grace after the window. Pure logic over explicit time and the slab's fullness.

use super::schedule::Schedule;
use super::tally::Tally;
use crate::config::{LoadConfig, Pattern};

const SEC: u64 = 1_000_000_000;

/// When a worker runs, in CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// Start of the run (warm-up starts here).
    pub start_ns: u64,
    /// Start of the measured part.
    pub measure_ns: u64,
    /// End of the run: no attempt starts at or after it.
    pub end_ns: u64,
}

impl Window {
    /// Where per-second rows begin (see [`row_origin_ns`]).
    pub(crate) fn origin_ns(&self) -> u64 {
        row_origin_ns(self.start_ns, self.measure_ns)
    }
}

/// Where per-second rows begin, CLOCK_MONOTONIC ns: the start of the measured part minus the
/// warm-up rounded up to whole seconds, so a row boundary falls on the start of the measured
/// part and no row mixes warm-up with measured time. Equal to `start_ns` when the warm-up is a
/// whole number of seconds (or none); before it otherwise (the first, warm-up row is partial).
pub(crate) fn row_origin_ns(start_ns: u64, measure_ns: u64) -> u64 {
    let warmup = measure_ns.saturating_sub(start_ns);
    measure_ns.saturating_sub(warmup.div_ceil(SEC) * SEC)
}

/// Open loop: a due start that finds a free slot but that the generator itself reaches more than
/// this after its intended time (it was starved of CPU, or is offered more than it can start) is
/// dropped, counted, never started. So the starts it does make stay within 100 ms of their
/// schedule and are counted in the phase and second they were due in, and a generator that cannot
/// keep up says so (dropped, with a warning) rather than shifting its work seconds later. A start
/// waiting for a free slot (the target is slow) waits up to `connect_timeout` instead: that wait is
/// the target's, and the latency from the intended start shows it (coordinated omission).
/// Also the grace after the end of the window for starts due before it.
pub const MAX_GENERATOR_LAG_NS: u64 = 100_000_000;

/// Seed of the Poisson arrivals (runs repeat exactly).
const POISSON_SEED: u64 = 0x636f_6e6e_7374_6f72;

/// One worker's open-loop schedule and what is dropped of it (nothing in a closed loop).
#[derive(Debug)]
pub(crate) struct Pace {
    schedule: Option<Schedule>,
    win: Window,
    timeout_ns: u64,
    /// When a start last found every in-flight slot busy (CLOCK_MONOTONIC ns; 0: never). Time
    /// a start spent waiting for a slot is the target's, not the generator's lag.
    last_full_ns: u64,
}

impl Pace {
    /// No schedule yet; `timeout_ns`: the connect timeout (the longest a start waits for a slot).
    pub(crate) fn new(timeout_ns: u64) -> Pace {
        Pace {
            schedule: None,
            win: Window {
                start_ns: 0,
                measure_ns: 0,
                end_ns: 0,
            },
            timeout_ns,
            last_full_ns: 0,
        }
    }

    /// Worker `index`'s share of `cfg`'s schedule over `win` (none in a closed loop).
    pub(crate) fn begin(&mut self, cfg: &LoadConfig, index: usize, win: Window) {
        self.win = win;
        self.schedule = match cfg.pattern {
            Pattern::Open {
                rate_per_sec,
                arrival,
            } => Some(Schedule::new(
                arrival,
                rate_per_sec,
                index,
                cfg.workers(),
                win.start_ns,
                win.end_ns,
                POISSON_SEED,
            )),
            Pattern::Closed { .. } => None,
        };
    }

    /// Whether an open-loop schedule runs.
    pub(crate) fn is_open(&self) -> bool {
        self.schedule.is_some()
    }

    /// The intended start to make at `now`, taken from the schedule (`full`: every in-flight
    /// slot is busy; `budget`: the turn may start one more), or `None` to wait for a free slot,
    /// the next turn or the next start (which will be late).
    ///
    /// A due start is dropped (counted in `tally`, never started) when every in-flight slot
    /// stayed busy for `connect_timeout` after its intended time, or when the generator itself
    /// reaches it more than [`MAX_GENERATOR_LAG_NS`] after both its intended time and the last
    /// moment every slot was busy (starved of CPU, or offered more than it can start; capped by
    /// `connect_timeout`).
    pub(crate) fn next(
        &mut self,
        now: u64,
        full: bool,
        budget: bool,
        tally: &mut Tally,
    ) -> Option<u64> {
        while let Some(t) = self.schedule.as_ref().and_then(|s| s.peek()) {
            if t > now {
                return None;
            }
            if full {
                self.last_full_ns = now;
            }
            if now - t > self.timeout_ns {
                // Everything due before now - timeout is dropped, in one step. Those starts
                // waited for a slot when every slot was busy at some moment after the last of
                // them fell due (the slots may have freed just now).
                let cutoff = now - self.timeout_ns;
                self.drop_before(cutoff, self.busy_since(cutoff, full), tally);
                continue;
            }
            // The generator's own lag: time past the intended start and past the last moment
            // every slot was busy (a start waiting for a slot is not lagging).
            let lag = self.max_lag_ns();
            if !full && now - t > lag && now.saturating_sub(self.last_full_ns) > lag {
                self.drop_before(now - lag, false, tally);
                continue;
            }
            if full || !budget {
                return None; // wait for a free slot / the next turn (the start will be late)
            }
            if let Some(s) = self.schedule.as_mut() {
                s.advance();
            }
            return Some(t);
        }
        None
    }

    /// A full slab freed a slot at `now`: the starts still waiting waited for a slot until this
    /// moment (the loop may have slept while every slot was busy).
    pub(crate) fn freed(&mut self, now: u64) {
        self.last_full_ns = now;
    }

    /// How late the generator may reach a due start that has a free slot:
    /// [`MAX_GENERATOR_LAG_NS`], at most the connect timeout.
    pub(crate) fn max_lag_ns(&self) -> u64 {
        MAX_GENERATOR_LAG_NS.min(self.timeout_ns)
    }

    /// Counts every intended start the schedule still holds as dropped: the window has ended and
    /// the worker never got to them — because every in-flight slot was busy (`full` now, or
    /// within the generator's lag bound before `now`: those starts were waiting for a slot,
    /// counted as full-slot drops) or because it was behind. Keeps `offered = attempts +
    /// dropped`. O(1).
    pub(crate) fn drop_rest(&mut self, now: u64, full: bool, tally: &mut Tally) {
        let since = now.saturating_sub(self.max_lag_ns());
        self.drop_before(u64::MAX, self.busy_since(since, full), tally);
    }

    /// Every in-flight slot is busy now (`full`), or was at some moment at or after `t_ns`: a
    /// start due before then that was not made waited for a slot (a full-slot drop), not for
    /// the generator.
    pub(crate) fn busy_since(&self, t_ns: u64, full: bool) -> bool {
        full || (self.last_full_ns > 0 && self.last_full_ns >= t_ns)
    }

    /// Drops every intended start before `cutoff_ns` (all when `u64::MAX`), counting them in
    /// `tally` by arithmetic; `full`: because every in-flight slot was busy. Those before the
    /// measured window count as warm-up.
    pub(crate) fn drop_before(&mut self, cutoff_ns: u64, full: bool, tally: &mut Tally) {
        let Some(s) = self.schedule.as_mut() else {
            return;
        };
        let warm = s.skip_before(cutoff_ns.min(self.win.measure_ns));
        let measured = s.skip_before(cutoff_ns);
        tally.dropped(warm, full, false);
        tally.dropped(measured, full, true);
    }

    /// Whether the open-loop schedule still holds intended starts (all before the end).
    pub(crate) fn pending(&self) -> bool {
        self.schedule.as_ref().is_some_and(|s| s.peek().is_some())
    }

    /// The earliest of: `next_tick`, the end of the window, the next intended start (when a
    /// slot is free: not `full`); once `draining` (after the window), the end of the grace for
    /// starts still due.
    pub(crate) fn next_wake(&self, next_tick: u64, draining: bool, full: bool) -> u64 {
        let mut target = next_tick;
        if draining {
            if self.pending() {
                let grace_end = self.win.end_ns.saturating_add(self.max_lag_ns());
                target = target.min(grace_end);
                if !full {
                    target = target.min(self.win.end_ns);
                }
            }
        } else {
            target = target.min(self.win.end_ns);
            if let Some(t) = self
                .schedule
                .as_ref()
                .and_then(|s| s.peek())
                .filter(|_| !full)
            {
                target = target.min(t);
            }
        }
        target
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Arrival, CloseMode};

    fn open(rate: f64) -> LoadConfig {
        crate::config::for_test(
            "127.0.0.1:9".parse().unwrap(),
            Pattern::Open {
                rate_per_sec: rate,
                arrival: Arrival::Uniform,
            },
            CloseMode::Rst,
        )
    }

    /// With explicit time: due starts come one by one while slots are free; a generator far
    /// behind drops what it cannot reach in one step (offered = started + dropped), and after
    /// the window the rest is dropped as full-slot drops while every slot is busy.
    #[test]
    fn due_starts_come_in_order_and_what_is_missed_is_dropped_by_arithmetic() {
        let cfg = open(1000.0);
        let mut pace = Pace::new(SEC);
        let win = Window {
            start_ns: 10 * SEC,
            measure_ns: 10 * SEC,
            end_ns: 11 * SEC,
        };
        pace.begin(&cfg, 0, win);
        let mut tally = Tally::new(1, 4 * SEC);
        assert_eq!(pace.next(10 * SEC - 1, false, true, &mut tally), None);
        assert_eq!(pace.next(10 * SEC, false, true, &mut tally), Some(10 * SEC));
        assert_eq!(
            pace.next(10 * SEC, false, true, &mut tally),
            None,
            "not due yet"
        );
        assert_eq!(
            pace.next(10 * SEC + 1_000_000, true, true, &mut tally),
            None,
            "full"
        );
        assert_eq!(
            pace.next(10 * SEC + 1_000_000, false, false, &mut tally),
            None,
            "budget"
        );
        // 500 ms behind with a free slot: what is older than the lag bound is dropped.
        let next = pace
            .next(10 * SEC + SEC / 2, false, true, &mut tally)
            .unwrap();
        assert!(next >= 10 * SEC + SEC / 2 - MAX_GENERATOR_LAG_NS, "{next}");
        assert!(tally.measured.dropped > 300, "{:?}", tally.measured);
        assert_eq!(tally.measured.dropped_full, 0);
        // The window ends with every slot busy: the rest are full-slot drops.
        pace.drop_rest(11 * SEC, true, &mut tally);
        assert!(!pace.pending());
        // 1,000 starts in the window: 2 made (the core counts those), the rest dropped.
        assert_eq!(tally.measured.dropped, 998);
        assert_eq!(tally.measured.offered, 998);
        assert!(tally.measured.dropped_full > 0);
        assert_eq!(pace.next_wake(20 * SEC, true, false), 20 * SEC);
    }
}
