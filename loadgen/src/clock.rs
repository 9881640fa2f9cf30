//! Time and CPU-time readings of the hot path.
//!
//! Times are `u64` nanoseconds of CLOCK_MONOTONIC (clock_gettime(2)), read through the vDSO (no
//! syscall, ~20-30 ns); the same clock as `std::time::Instant` and as the worker's timerfd, so
//! intended start times can be handed to timerfd_settime(2) with TFD_TIMER_ABSTIME unchanged.

use nix::sys::resource::{getrusage, UsageWho};
use nix::time::{clock_gettime, ClockId};

/// Now on CLOCK_MONOTONIC, in ns.
#[inline]
pub fn now_ns() -> u64 {
    // CLOCK_MONOTONIC always exists on Linux; clock_gettime cannot fail for it.
    let ts = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("clock_gettime(CLOCK_MONOTONIC)");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// On-CPU time of the calling thread so far, in ns, exact (clock_gettime(2)
/// CLOCK_THREAD_CPUTIME_ID: the scheduler's sum_exec_runtime, not tick samples). Zero when the
/// call fails (it does not for the calling thread).
pub fn thread_run_ns() -> u64 {
    match nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID) {
        Ok(ts) => ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64,
        Err(_) => 0,
    }
}

/// User and system CPU time of the calling thread so far, in ns (getrusage(2) RUSAGE_THREAD,
/// Linux 2.6.26). Zero when the call fails (it does not for the calling thread).
pub fn thread_cpu_ns() -> (u64, u64) {
    match getrusage(UsageWho::RUSAGE_THREAD) {
        Ok(r) => {
            let ns = |tv: nix::sys::time::TimeVal| {
                tv.tv_sec() as u64 * 1_000_000_000 + tv.tv_usec() as u64 * 1000
            };
            (ns(r.user_time()), ns(r.system_time()))
        }
        Err(_) => (0, 0),
    }
}
