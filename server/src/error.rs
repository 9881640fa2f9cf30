//! Why a server could not start.

use std::net::SocketAddr;

/// A failure of [`crate::Server::start`]. Nothing is left running when it is returned: worker
/// threads already started are stopped and joined, listeners are closed.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// `--tls` with a mode other than `close` and `http`.
    #[error("--tls works with --mode close or --mode http, not {mode}: pick one of those")]
    TlsMode {
        /// The mode asked for.
        mode: String,
    },
    /// `cpus` is empty.
    #[error("no CPU given: name at least one CPU to run a worker on, e.g. `0` or `0-3`")]
    NoCpus,
    /// The same CPU appears twice.
    #[error("CPU {cpu} is listed twice: give each CPU once (more workers than CPUs: `--server-workers N`)")]
    DuplicateCpu {
        /// The repeated CPU id.
        cpu: usize,
    },
    /// `workers` is below the number of CPUs (some would have no worker) or above
    /// [`crate::config::MAX_WORKERS`].
    #[error("{workers} server workers on {cpus} CPUs: give at least one worker per CPU ({cpus}) and at most {max}, or fewer CPUs", max = crate::config::MAX_WORKERS)]
    Workers {
        /// The workers asked for.
        workers: usize,
        /// The number of CPUs given.
        cpus: usize,
    },
    /// The CPU is offline, does not exist, or is outside this process's affinity mask
    /// (sched_getaffinity(2), /sys/devices/system/cpu/online).
    #[error(
        "CPU {cpu} is offline, absent or not allowed for this process (usable CPUs: {usable}): \
         pick CPUs from that list"
    )]
    CpuUnavailable {
        /// The CPU id asked for.
        cpu: usize,
        /// The usable CPUs as a cpulist, e.g. `0-1`.
        usable: String,
    },
    /// sched_setaffinity(2) failed for a worker.
    #[error("cannot pin the worker to CPU {cpu}: {errno}; check that the CPU is online and allowed (taskset/cpuset)")]
    Pin {
        /// The CPU id.
        cpu: usize,
        /// errno of sched_setaffinity(2).
        errno: nix::errno::Errno,
    },
    /// bind(2) failed with EADDRINUSE: another socket (not ours) holds the address: a listener,
    /// or a connection whose local port it is (the binary names which, from sock_diag).
    #[error("address {addr} is already in use by another socket (a listener, or a connection whose local port it is: `ss -tanp sport = :{port}` shows which): stop it or pick another port (`--listen {addr_ip}:0` picks a free one)", addr_ip = addr.ip(), port = addr.port())]
    AddrInUse {
        /// The address.
        addr: SocketAddr,
    },
    /// bind(2) failed with EACCES: ports below 1024 need CAP_NET_BIND_SERVICE (or
    /// net.ipv4.ip_unprivileged_port_start lowered).
    #[error("binding {addr} is not permitted: ports below 1024 need root or CAP_NET_BIND_SERVICE; use a port >= 1024")]
    PermissionDenied {
        /// The address.
        addr: SocketAddr,
    },
    /// bind(2) failed with EADDRNOTAVAIL: the IP is not assigned to this host (or namespace).
    #[error("address {addr} is not available on this host: listen on an IP it owns (e.g. 0.0.0.0 or 127.0.0.1)")]
    AddrNotAvailable {
        /// The address.
        addr: SocketAddr,
    },
    /// Another socket call on a listener failed (socket, setsockopt, bind, listen).
    #[error("{what} for listener {addr} failed: {source}")]
    Listener {
        /// The call, e.g. `"listen(2)"`, `"setsockopt(SO_REUSEPORT)"`.
        what: &'static str,
        /// The address.
        addr: SocketAddr,
        /// The OS error (errno).
        source: std::io::Error,
    },
    /// Installing CPU steering failed.
    #[error("installing {what} steering on {addr} failed: {source}; run with `--steer none`")]
    Steering {
        /// `"SO_INCOMING_CPU"` or `"SO_ATTACH_REUSEPORT_CBPF"`.
        what: &'static str,
        /// The address.
        addr: SocketAddr,
        /// The OS error (errno).
        source: std::io::Error,
    },
    /// `EngineChoice::IoUring` was forced but io_uring cannot run here.
    #[error("io_uring is unavailable: {reason}; use `--engine epoll` or `--engine auto`")]
    IoUringUnavailable {
        /// Why (EPERM from kernel.io_uring_disabled or seccomp, a kernel before 5.19, ...).
        reason: String,
    },
    /// A worker could not create its io_uring ring.
    #[error("worker on CPU {cpu}: io_uring_setup(2) failed: {source}; raise RLIMIT_MEMLOCK or use `--engine epoll`")]
    Ring {
        /// The worker's CPU.
        cpu: usize,
        /// The OS error (errno).
        source: std::io::Error,
    },
    /// A worker could not create its epoll instance or register its listener.
    #[error("worker on CPU {cpu}: epoll setup failed: {source}")]
    Poll {
        /// The worker's CPU.
        cpu: usize,
        /// The OS error (errno).
        source: std::io::Error,
    },
    /// The worker thread could not be spawned.
    #[error("cannot spawn the worker thread for CPU {cpu}: {source}")]
    Spawn {
        /// The worker's CPU.
        cpu: usize,
        /// The OS error.
        source: std::io::Error,
    },
}

impl ServerError {
    /// True when the cause is the caller's input or the host's state (bad CPU, address in use or
    /// not permitted, io_uring forced where unavailable) rather than a run-time fault; the CLI
    /// maps these to exit code 2.
    pub fn is_bad_input(&self) -> bool {
        !matches!(
            self,
            ServerError::Listener { .. }
                | ServerError::Ring { .. }
                | ServerError::Poll { .. }
                | ServerError::Spawn { .. }
        )
    }
}
