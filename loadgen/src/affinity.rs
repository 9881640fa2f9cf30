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
