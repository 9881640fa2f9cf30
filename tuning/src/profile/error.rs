//! Why a profile cannot be taken, each with how to fix it.

use std::path::PathBuf;

/// Errors of [`super::check_access`], [`super::Profiler::start`] and [`super::Profiler::stop`].
/// Each message names the setting or limit to change.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The kernel has no perf events (`/proc/sys/kernel/perf_event_paranoid` is missing:
    /// built without `CONFIG_PERF_EVENTS`). Fix: a kernel with CONFIG_PERF_EVENTS=y.
    #[error(
        "this kernel has no perf events ({path} is missing): a profile needs a kernel built with \
         CONFIG_PERF_EVENTS=y; run without --profile"
    )]
    NoPerfEvents {
        /// The file that is missing.
        path: PathBuf,
    },
    /// `kernel.perf_event_paranoid` forbids CPU-wide events and this process lacks CAP_PERFMON
    /// and CAP_SYS_ADMIN. Fix: `sysctl kernel.perf_event_paranoid=0`, or run as root / with
    /// CAP_PERFMON.
    #[error(
        "kernel.perf_event_paranoid is {paranoid} and this process has neither CAP_PERFMON nor \
         CAP_SYS_ADMIN: a profile samples every task on the benchmark CPUs (a CPU-wide event), \
         which needs perf_event_paranoid <= 0 (include/linux/perf_event.h perf_allow_cpu); run \
         `sysctl kernel.perf_event_paranoid=0`, or run connstorm as root or with CAP_PERFMON \
         (`setcap cap_perfmon+ep PATH-TO-CONNSTORM`, Linux 5.8+)"
    )]
    Paranoid {
        /// The value read.
        paranoid: i64,
    },
    /// `/proc/kallsyms` shows zero addresses to this process, so kernel frames cannot be named.
    /// Fix: `sysctl kernel.kptr_restrict=0` with perf_event_paranoid <= 1, or CAP_SYSLOG.
    #[error(
        "{path} shows kernel addresses as 0 to this process (kernel.kptr_restrict = {kptr_restrict}, \
         kernel.perf_event_paranoid = {paranoid}), so kernel frames cannot be named: run \
         `sysctl kernel.kptr_restrict=0` (addresses show with perf_event_paranoid <= 1) or \
         `sysctl kernel.kptr_restrict=1` and run connstorm as root or with CAP_SYSLOG \
         (kernel/ksyms_common.c kallsyms_show_value)"
    )]
    KallsymsHidden {
        /// The kallsyms file.
        path: PathBuf,
        /// `kernel.kptr_restrict` (-1 when unreadable).
        kptr_restrict: i64,
        /// `kernel.perf_event_paranoid`.
        paranoid: i64,
    },
    /// A procfs file could not be read or parsed.
    #[error("cannot read {path}: {detail} (is procfs mounted at the given root?)")]
    Proc {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// The config cannot be profiled.
    #[error("profile: {0}")]
    Config(String),
    /// perf_event_open(2) failed on a CPU.
    #[error("perf_event_open(cpu-clock, cpu {cpu}) failed: {source}; {hint}")]
    Open {
        /// The CPU.
        cpu: usize,
        /// The OS error.
        source: std::io::Error,
        /// How to fix it, chosen from the errno.
        hint: &'static str,
    },
    /// mmap of the ring buffer or enabling the event failed on a CPU.
    #[error("perf ring buffer of cpu {cpu} ({ring_kib} KiB): {source}; {hint}")]
    Ring {
        /// The CPU.
        cpu: usize,
        /// Ring size asked for.
        ring_kib: usize,
        /// The OS error.
        source: std::io::Error,
        /// How to fix it.
        hint: &'static str,
    },
    /// The collector thread could not be started or died.
    #[error("profile collector thread: {0} (a bug: report it with the run's output)")]
    Collector(String),
}

/// Advice for a perf_event_open(2) errno (errors section of the man page).
pub(crate) fn open_hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "not permitted: run `sysctl kernel.perf_event_paranoid=0`, or run as root or with \
             CAP_PERFMON (an LSM such as SELinux may also refuse perf_event_open)"
        }
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => {
            "this kernel cannot sample cpu-clock with callchains (CONFIG_PERF_EVENTS off, or a \
             seccomp filter refuses perf_event_open): run without --profile"
        }
        Some(libc::ENODEV) | Some(libc::EINVAL) => {
            "the CPU is offline or out of range: profile only online CPUs (see \
             /sys/devices/system/cpu/online)"
        }
        Some(libc::EMFILE) => "too many open files: raise `ulimit -n`",
        Some(libc::EBUSY) => "another tool holds the event exclusively: stop it and retry",
        _ => "see perf_event_open(2), ERRORS",
    }
}

/// Advice for an mmap / ioctl failure on the ring buffer.
pub(crate) fn ring_hint(e: &std::io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::ENOMEM) => {
            "the ring buffers exceed the locked-memory limit for perf: use a smaller ring, raise \
             `sysctl kernel.perf_event_mlock_kb`, or run with CAP_IPC_LOCK"
        }
        _ => "see perf_event_open(2), mmap layout",
    }
}
