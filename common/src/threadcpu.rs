//! CPU time of the calling thread, read by the thread itself: the way each server and load
//! worker publishes what it cost, without anyone matching thread names in `/proc`; and the
//! absolute sleep ([`sleep_until_ns`]) the threads that measure timing sleep with.

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;
use nix::time::{clock_gettime, ClockId};
use serde::{Deserialize, Serialize};

/// CPU time of one thread (or a sum over threads), in nanoseconds. Default: all zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadCpu {
    /// On-CPU time, exact: clock_gettime(2) CLOCK_THREAD_CPUTIME_ID, the scheduler's
    /// `sum_exec_runtime` (kernel/sched/cputime.c, thread_group_cputime / task_sched_runtime).
    pub run_ns: u64,
    /// User-mode time, getrusage(2) RUSAGE_THREAD (Linux 2.6.26). Without
    /// CONFIG_VIRT_CPU_ACCOUNTING_GEN it is the run time split by tick samples (cputime_adjust).
    pub user_ns: u64,
    /// Kernel-mode time (syscalls and the softirq work charged to the thread), same source.
    pub sys_ns: u64,
}

/// The calling thread's on-CPU time so far, ns ([`ThreadCpu::run_ns`] alone: one syscall,
/// clock_gettime(2) CLOCK_THREAD_CPUTIME_ID, not served by the vDSO); 0 if the reading fails
/// (it does not for the calling thread on Linux).
pub fn run_ns_now() -> u64 {
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|ts| {
            (ts.tv_sec() as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(ts.tv_nsec() as u64)
        })
        .unwrap_or(0)
}

/// Sleeps until `t_ns` on CLOCK_MONOTONIC (clock_nanosleep(2) TIMER_ABSTIME: an hrtimer, and an
/// absolute time, so a grid of sleeps does not drift). A signal (EINTR) ends it early.
pub fn sleep_until_ns(t_ns: u64) {
    let ts = nix::sys::time::TimeSpec::new(
        (t_ns / 1_000_000_000) as nix::libc::time_t,
        (t_ns % 1_000_000_000) as nix::libc::c_long,
    );
    let _ = nix::time::clock_nanosleep(
        ClockId::CLOCK_MONOTONIC,
        nix::time::ClockNanosleepFlags::TIMER_ABSTIME,
        &ts,
    );
}

impl ThreadCpu {
    /// The calling thread's CPU time so far: two syscalls (~0.2–1 µs together), so read it every
    /// few milliseconds, not per connection. A reading that fails (neither call fails for the
    /// calling thread on Linux) is 0.
    pub fn now() -> ThreadCpu {
        let run_ns = run_ns_now();
        let (user_ns, sys_ns) = match getrusage(UsageWho::RUSAGE_THREAD) {
            Ok(r) => (timeval_ns(r.user_time()), timeval_ns(r.system_time())),
            Err(_) => (0, 0),
        };
        ThreadCpu {
            run_ns,
            user_ns,
            sys_ns,
        }
    }

    /// What was used between `earlier` and `self` (each field saturates at 0).
    pub fn since(&self, earlier: &ThreadCpu) -> ThreadCpu {
        ThreadCpu {
            run_ns: self.run_ns.saturating_sub(earlier.run_ns),
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
        }
    }

    /// User plus system time, ns.
    pub fn user_sys_ns(&self) -> u64 {
        self.user_ns.saturating_add(self.sys_ns)
    }
}

impl std::ops::Add for ThreadCpu {
    type Output = ThreadCpu;
    fn add(self, o: ThreadCpu) -> ThreadCpu {
        ThreadCpu {
            run_ns: self.run_ns.saturating_add(o.run_ns),
            user_ns: self.user_ns.saturating_add(o.user_ns),
            sys_ns: self.sys_ns.saturating_add(o.sys_ns),
        }
    }
}

impl std::iter::Sum for ThreadCpu {
    fn sum<I: Iterator<Item = ThreadCpu>>(iter: I) -> ThreadCpu {
        iter.fold(ThreadCpu::default(), |a, b| a + b)
    }
}

/// A `struct timeval` (getrusage(2)) in ns; negative fields (never returned by the kernel for a
/// duration) count as 0.
pub fn timeval_ns(t: TimeVal) -> u64 {
    u64::try_from(t.tv_sec())
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(t.tv_usec()).unwrap_or(0).saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn process_cpu_ns() -> u64 {
        let t = clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).unwrap();
        t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
    }

    #[test]
    fn a_spinning_thread_sees_its_own_time_grow() {
        // Spin until the thread has had 200 ms of CPU (a busy machine may give it a fraction of
        // the wall time), bounded by a wall-clock deadline.
        const TARGET_NS: u64 = 200_000_000;
        let t = std::thread::spawn(|| {
            let process0 = process_cpu_ns();
            let before = ThreadCpu::now();
            let start = Instant::now();
            let mut x = 0u64;
            while ThreadCpu::now().since(&before).run_ns < TARGET_NS
                && start.elapsed() < Duration::from_secs(30)
            {
                for _ in 0..10_000 {
                    x = x.wrapping_add(std::hint::black_box(1));
                }
            }
            std::hint::black_box(x);
            let used = ThreadCpu::now().since(&before);
            (used, start.elapsed(), process_cpu_ns() - process0)
        });
        let (used, wall, process) = t.join().unwrap();
        assert!(used.run_ns >= TARGET_NS, "{used:?} after {wall:?}");
        // A thread's on-CPU time fits in the wall time it ran and in its process's CPU time (the
        // kernel's sum over all threads, read through another clock).
        assert!(
            used.run_ns <= wall.as_nanos() as u64 + 1_000_000,
            "{used:?} {wall:?}"
        );
        assert!(used.run_ns <= process, "{used:?} process {process} ns");
        // The user/system split adds up to about the exact figure (cputime_adjust scales the
        // tick samples to it; getrusage has µs resolution).
        assert!(
            used.user_sys_ns() >= used.run_ns / 2 && used.user_sys_ns() <= used.run_ns + 20_000_000,
            "{used:?}"
        );
    }

    #[test]
    fn sums_and_differences_are_per_field_and_saturate() {
        let a = ThreadCpu {
            run_ns: 10,
            user_ns: 7,
            sys_ns: 3,
        };
        let b = ThreadCpu {
            run_ns: 4,
            user_ns: 9,
            sys_ns: 1,
        };
        assert_eq!(
            [a, b].into_iter().sum::<ThreadCpu>(),
            ThreadCpu {
                run_ns: 14,
                user_ns: 16,
                sys_ns: 4
            }
        );
        assert_eq!(
            a.since(&b),
            ThreadCpu {
                run_ns: 6,
                user_ns: 0,
                sys_ns: 2
            }
        );
        assert_eq!(timeval_ns(TimeVal::new(2, 500_000)), 2_500_000_000);
    }
}
