//! Errors that stop a load run before or while its workers start. Failures of single connection
//! attempts are never errors: they are counted by errno in the report.

use nix::errno::Errno;

/// Why [`crate::run`] (or a helper) could not run the load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The config is inconsistent; the message names the field and how to fix it.
    #[error("invalid load config: {0}")]
    Config(String),
    /// sched_setaffinity(2) refused the CPU: it is offline, outside this process's cpuset, or
    /// above the machine's CPU count.
    #[error("cannot pin the load worker to CPU {cpu}: {errno} ({}); pick CPUs from /sys/devices/system/cpu/online that this process may use (see `taskset -p $$`)", errno.desc())]
    Pin {
        /// The CPU asked for.
        cpu: usize,
        /// The kernel's answer (usually EINVAL).
        errno: Errno,
    },
    /// epoll_create1(2) or timerfd_create(2) failed for a worker, usually EMFILE/ENFILE or ENOMEM.
    #[error("cannot set up the event loop of the load worker on CPU {cpu} ({what}): {source}; raise RLIMIT_NOFILE (ulimit -n) or free memory")]
    EventLoop {
        /// The worker's CPU.
        cpu: usize,
        /// Which call failed: `epoll_create1` or `timerfd_create`.
        what: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The worker thread could not be spawned (clone(2): EAGAIN when RLIMIT_NPROC or
    /// threads-max is reached, or ENOMEM).
    #[error("cannot start the load worker thread for CPU {cpu}: {source}; check RLIMIT_NPROC and kernel.threads-max")]
    Spawn {
        /// The worker's CPU.
        cpu: usize,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A worker thread panicked (a bug in connstorm: please report it with the message above).
    #[error("the load worker on CPU {cpu} panicked (a connstorm bug; the panic message was printed above)")]
    WorkerPanicked {
        /// The worker's CPU.
        cpu: usize,
    },
    /// getrlimit(2)/setrlimit(2) on RLIMIT_NOFILE failed.
    #[error("cannot raise RLIMIT_NOFILE: {errno} ({}); raise it with `ulimit -n` before starting", errno.desc())]
    Rlimit {
        /// The kernel's answer.
        errno: Errno,
    },
}
