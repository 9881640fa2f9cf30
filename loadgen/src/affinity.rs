//! What a load thread sets on itself before it runs: its CPU (sched_setaffinity(2), [`pin`])
//! and its timer slack ([`set_timer_slack`]).

use crate::error::LoadError;

/// Timer slack asked for on every load worker (PR_SET_TIMERSLACK, prctl(2)), ns: the kernel
/// otherwise lets a thread's hrtimer/timerfd wake-ups run up to 50 µs late (the default slack,
/// `current->timer_slack_ns`, include/linux/sched.h) so it can group them, and that lateness is
/// the generator's lag in an open loop. 1 ns is the smallest value (0 restores the default).
pub const TIMER_SLACK_NS: u64 = 1;

/// Sets [`TIMER_SLACK_NS`] on the calling thread and reads it back (`None` when prctl fails:
/// the default slack then stays, and the report says so).
pub(crate) fn set_timer_slack() -> Option<u64> {
    nix::sys::prctl::set_timerslack(TIMER_SLACK_NS as libc::c_ulong).ok()?;
    nix::sys::prctl::get_timerslack()
        .ok()
        .and_then(|v| u64::try_from(v).ok())
}

/// Pins the calling thread to `cpu` (sched_setaffinity(2) on the calling thread).
///
/// # Errors
/// [`LoadError::Pin`] when the CPU is not usable.
pub(crate) fn pin(cpu: usize) -> Result<(), LoadError> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu)
        .map_err(|errno| LoadError::Pin { cpu, errno })?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .map_err(|errno| LoadError::Pin { cpu, errno })
}

/// Timer wake-ups `--spin auto` measures at a worker's start ([`auto_spin`]).
pub(crate) const AUTO_SPIN_SAMPLES: usize = 1000;
/// How far ahead each measured wake-up is set, ns (20 µs: shorter than any gap between starts
/// that leaves a worker time to sleep, so the CPU's idle state is the one it reaches then).
const AUTO_SPIN_SLEEP_NS: u64 = 20_000;

/// `--spin auto` on the calling (pinned, timer-slack-set) thread: sleeps [`AUTO_SPIN_SAMPLES`]
/// times until an absolute CLOCK_MONOTONIC time [`AUTO_SPIN_SLEEP_NS`] ahead
/// (clock_nanosleep(2) TIMER_ABSTIME: an hrtimer, as the engines' waits are) and returns the
/// spin that covers its wake-up latency ([`spin_for_overshoots`]). About 35 ms per worker, before
/// the common start; a stop (Ctrl-C) seen between two sleeps ends it at once with what it has.
pub(crate) fn auto_spin(stop: &std::sync::atomic::AtomicBool) -> u64 {
    let mut late = Vec::with_capacity(AUTO_SPIN_SAMPLES);
    for _ in 0..AUTO_SPIN_SAMPLES {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let target = crate::clock::now_ns() + AUTO_SPIN_SLEEP_NS;
        // EINTR (a signal) ends a sleep early: that sample is then 0, which only lowers the
        // percentile by one sample in a thousand.
        common::threadcpu::sleep_until_ns(target);
        late.push(crate::clock::now_ns().saturating_sub(target));
    }
    spin_for_overshoots(&mut late)
}

/// The spin that covers 999 in 1,000 of these wake-up overshoots (ns past each timer's
/// expiry): their 99.9th percentile (the 999th of 1,000 sorted) plus 1 µs for the spin pass's
/// own length, within [`crate::SPIN_NS`]..=[`crate::AUTO_SPIN_MAX_NS`]; `SPIN_NS` with no sample.
pub(crate) fn spin_for_overshoots(late: &mut [u64]) -> u64 {
    if late.is_empty() {
        return crate::SPIN_NS;
    }
    late.sort_unstable();
    let i = (late.len() * 999 / 1000)
        .saturating_sub(1)
        .min(late.len() - 1);
    (late[i] + 1_000).clamp(crate::SPIN_NS, crate::AUTO_SPIN_MAX_NS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 999th of 1,000 sorted overshoots plus 1 µs, whatever their order; bounded both ways.
    #[test]
    fn the_auto_spin_covers_the_999th_wake_up_in_1000_within_its_bounds() {
        // 1..=1000 µs late, shuffled: the 999th is 999 µs -> above the cap.
        let mut v: Vec<u64> = (1..=1000u64).rev().map(|u| u * 1_000).collect();
        assert_eq!(spin_for_overshoots(&mut v), crate::AUTO_SPIN_MAX_NS);
        // 995 wake-ups 10 µs late, 5 at 5 ms (a host's interruptions): the 999th is 5 ms.
        let mut v = vec![10_000u64; 995];
        v.extend([5_000_000; 5]);
        assert_eq!(spin_for_overshoots(&mut v), crate::AUTO_SPIN_MAX_NS);
        // 999 at 10 µs and one at 5 ms: the 999th is 10 µs -> 11 µs.
        let mut v = vec![10_000u64; 999];
        v.push(5_000_000);
        assert_eq!(spin_for_overshoots(&mut v), 11_000);
        // 20..=40 µs spread: the 999th of 1,000 evenly spread values.
        let mut v: Vec<u64> = (0..1000u64).map(|k| 20_000 + k * 20).collect();
        assert_eq!(spin_for_overshoots(&mut v), 20_000 + 998 * 20 + 1_000);
        // A wake-up on time everywhere: the floor, not 1 µs.
        let mut v = vec![0u64; 1000];
        assert_eq!(spin_for_overshoots(&mut v), 1_000.max(crate::SPIN_NS));
        assert_eq!(spin_for_overshoots(&mut []), crate::SPIN_NS);
    }

    /// On this thread (timer slack set as a worker's is), the calibration sleeps really and
    /// returns a spin within its bounds, no shorter than the median wake-up it measured.
    #[test]
    fn auto_spin_measures_real_wake_ups() {
        let _ = set_timer_slack();
        let t0 = crate::clock::now_ns();
        let s = auto_spin(&std::sync::atomic::AtomicBool::new(false));
        let took = crate::clock::now_ns() - t0;
        assert!(
            (crate::SPIN_NS..=crate::AUTO_SPIN_MAX_NS).contains(&s),
            "{s}"
        );
        // 1,000 sleeps of 20 µs each cannot end sooner than 20 ms.
        assert!(
            took >= AUTO_SPIN_SAMPLES as u64 * AUTO_SPIN_SLEEP_NS,
            "{took}"
        );
        // A stop already seen: no sleep at all, and the floor.
        let t0 = crate::clock::now_ns();
        let s = auto_spin(&std::sync::atomic::AtomicBool::new(true));
        assert_eq!(s, crate::SPIN_NS);
        assert!(crate::clock::now_ns() - t0 < AUTO_SPIN_SLEEP_NS * 50);
    }
}
