//! Time readings of the hot path (a worker's own CPU time comes from
//! [`common::threadcpu::ThreadCpu`]).
//!
//! Times are `u64` nanoseconds of CLOCK_MONOTONIC (clock_gettime(2)), read through the vDSO (no
//! syscall, ~20-30 ns); the same clock as `std::time::Instant` and as the worker's timerfd, so
//! intended start times can be handed to timerfd_settime(2) with TFD_TIMER_ABSTIME unchanged.

use nix::time::{clock_gettime, ClockId};

/// Now on CLOCK_MONOTONIC, in ns.
#[inline]
pub(crate) fn now_ns() -> u64 {
    // CLOCK_MONOTONIC always exists on Linux; clock_gettime cannot fail for it.
    let ts = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("clock_gettime(CLOCK_MONOTONIC)");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}
