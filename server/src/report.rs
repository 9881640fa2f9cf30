//! What a run reports: live totals ([`LiveStats`]) and the final [`ServerReport`].

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;

use common::threadcpu::ThreadCpu;
use serde::{Deserialize, Serialize};

use crate::config::Mode;

/// The event engine that actually ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// io_uring with multishot accept (Linux 5.19+).
    IoUring,
    /// epoll through mio, edge-triggered.
    Epoll,
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::IoUring => "io_uring",
            Engine::Epoll => "epoll",
        })
    }
}

/// The steering mechanism that was installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SteeringUsed {
    /// None: the kernel's 4-tuple hash picks the listener.
    None,
    /// SO_INCOMING_CPU on every listener (reuseport groups honour it since Linux 6.1).
    IncomingCpu,
    /// SO_ATTACH_REUSEPORT_CBPF: SKF_AD_CPU mapped to the listener index (Linux 4.5+).
    ReuseportCbpf,
}

impl fmt::Display for SteeringUsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SteeringUsed::None => "none",
            SteeringUsed::IncomingCpu => "so_incoming_cpu",
            SteeringUsed::ReuseportCbpf => "reuseport_cbpf",
        })
    }
}

/// Totals so far, as last published by the workers (at most ~10 ms old while a worker is busy,
/// up to one wait period (50 ms) when idle).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveStats {
    /// Connections accepted per worker, in worker order (`Server::cpus`).
    pub accepted_per_worker: Vec<u64>,
    /// Errors of all workers (accept, send and close failures).
    pub errors_total: u64,
    /// Each worker thread's CPU time since it started, in worker order (`Server::cpus`), read by the
    /// worker itself ([`ThreadCpu::now`]: CLOCK_THREAD_CPUTIME_ID and getrusage(2)
    /// RUSAGE_THREAD) when it published: as fresh as the counts above. Softirq work the kernel
    /// does while the worker runs is charged to it; work in io_uring's io-wq threads
    /// (`iou-wrk-*`, used only for requests that would block) is not.
    pub cpu_per_worker: Vec<ThreadCpu>,
    /// `--tls`: TLS handshakes completed (TLS accepts), all workers; 0 without TLS.
    #[serde(default)]
    pub tls_accepted: u64,
    /// `--tls`: of them, resumed.
    #[serde(default)]
    pub tls_resumed: u64,
}

impl LiveStats {
    /// Sum of [`LiveStats::accepted_per_worker`].
    pub fn accepted(&self) -> u64 {
        self.accepted_per_worker.iter().sum()
    }

    /// CPU time all workers used between `before` (an earlier reading of the same server) and
    /// `self`, ns per field. Idle workers publish every 50 ms, so a reading taken ≥ 50 ms after
    /// the last connection includes the work on every connection before it.
    pub fn cpu_since(&self, before: &LiveStats) -> ThreadCpu {
        self.cpu_per_worker
            .iter()
            .enumerate()
            .map(|(i, now)| {
                now.since(
                    before
                        .cpu_per_worker
                        .get(i)
                        .unwrap_or(&ThreadCpu::default()),
                )
            })
            .sum()
    }
}

/// The final report of one worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerReport {
    /// CPU the worker was pinned to.
    pub cpu: usize,
    /// Connections accepted (including those accepted while draining at stop).
    pub accepted: u64,
    /// Connections whose whole greeting (`greet`) or HTTP response (`http`) was written; 0 in
    /// the other modes and in reports from builds before it was recorded.
    #[serde(default)]
    pub served: u64,
    /// `--mode http`: connections whose head was not an HTTP/1.x request (e.g.
    /// `garbage\r\n\r\n`), closed without an answer; not counted in `served` or `errors`. 0
    /// in reports from builds before it was recorded.
    #[serde(default)]
    pub bad_requests: u64,
    /// Failures by errno name (`"EMFILE"`, `"ECONNABORTED"`, ...): accept, and the greeting send
    /// and close of accepted connections.
    pub errors: BTreeMap<String, u64>,
    /// How many times accepting paused for the EMFILE/ENFILE back-off (~10 ms each).
    pub emfile_backoffs: u64,
    /// On-CPU time of the worker thread, ns, exact (CLOCK_THREAD_CPUTIME_ID). 0 in reports
    /// from builds before it was recorded.
    #[serde(default)]
    pub cpu_run_ns: u64,
    /// User CPU time of the worker thread, ns (getrusage(2) RUSAGE_THREAD).
    pub cpu_user_ns: u64,
    /// System CPU time of the worker thread, ns (getrusage(2) RUSAGE_THREAD).
    pub cpu_sys_ns: u64,
    /// Connections still queued when the listener closed that could not be accepted (EMFILE while
    /// draining); the kernel resets those. Zero in a clean stop.
    pub left_in_queue: u64,
    /// `--tls`: TLS handshakes completed (TLS accepts). 0 without TLS and in older reports.
    #[serde(default)]
    pub tls_accepted: u64,
    /// `--tls`: of them, resumed (a ticket or a session ID).
    #[serde(default)]
    pub tls_resumed: u64,
    /// `--tls`: accepted connections whose TLS handshake failed.
    #[serde(default)]
    pub tls_failed: u64,
    /// `--tls`: the failed handshakes by class (`alert CertificateUnknown received`, `EOF`,
    /// errno names).
    #[serde(default)]
    pub tls_failures: BTreeMap<String, u64>,
    /// With steering (`--steer`): of this worker's sampled accepts, how many were processed on
    /// its CPU ([`common::syncpu::SynCpuShare`]); `None` without steering (nothing is read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syn_cpu: Option<common::syncpu::SynCpuShare>,
    /// The CPU the worker thread was pinned to when its engine had made its per-worker memory
    /// (ring, connection table, buffers: read once set-up ended, [`common::numa::pinned_cpu`]);
    /// `None` when it was not pinned to one CPU then or never got that far. Equal to
    /// [`WorkerReport::cpu`]: the memory was first touched on its CPU, so it is on that CPU's
    /// NUMA node (docs/engines.md, "Per-worker memory").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_cpu: Option<usize>,
}

/// The final report of a server run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerReport {
    /// Engine that ran.
    pub engine: Engine,
    /// Steering that was installed.
    pub steering: SteeringUsed,
    /// Why `auto` fell back to epoll, if it did.
    pub fallback_reason: Option<String>,
    /// io_uring setup flags the rings got (`"single_issuer+defer_taskrun"`, `"coop_taskrun"`,
    /// `"none"`); `None` for epoll.
    pub ring_setup: Option<String>,
    /// Mode of the run.
    pub mode: Mode,
    /// Address the listeners were bound to (real port).
    pub listen: SocketAddr,
    /// listen(2) backlog asked for per listener (the kernel caps it at net.core.somaxconn).
    pub backlog: u32,
    /// One report per worker, in CPU-list order.
    pub workers: Vec<WorkerReport>,
    /// From the moment all listeners listened to the moment the last worker exited (includes the
    /// stop drain), ns.
    pub wall_time_ns: u64,
    /// True when the run was ended by a signal rather than by its planned duration (set by the
    /// caller; [`crate::Server::stop`] leaves it false).
    pub interrupted: bool,
}

impl ServerReport {
    /// With steering: the workers' [`WorkerReport::syn_cpu`] added up; `None` without.
    pub fn syn_cpu(&self) -> Option<common::syncpu::SynCpuShare> {
        let mut all: Option<common::syncpu::SynCpuShare> = None;
        for s in self.workers.iter().filter_map(|w| w.syn_cpu.as_ref()) {
            all.get_or_insert_with(Default::default).add(s);
        }
        all
    }

    /// Connections accepted by all workers.
    pub fn accepted(&self) -> u64 {
        self.workers.iter().map(|w| w.accepted).sum()
    }

    /// Connections served by all workers (whole greeting or HTTP response written).
    pub fn served(&self) -> u64 {
        self.workers.iter().map(|w| w.served).sum()
    }

    /// `--tls`: TLS handshakes completed, all workers.
    pub fn tls_accepted(&self) -> u64 {
        self.workers.iter().map(|w| w.tls_accepted).sum()
    }

    /// `--tls`: resumed handshakes, all workers.
    pub fn tls_resumed(&self) -> u64 {
        self.workers.iter().map(|w| w.tls_resumed).sum()
    }

    /// `--tls`: failed handshakes, all workers.
    pub fn tls_failed(&self) -> u64 {
        self.workers.iter().map(|w| w.tls_failed).sum()
    }

    /// `--mode http`: connections closed unanswered because their head was not HTTP, all workers.
    pub fn bad_requests(&self) -> u64 {
        self.workers.iter().map(|w| w.bad_requests).sum()
    }

    /// `--tls`: failed handshakes of all workers by class (`alert UnknownCA received`, `EOF`,
    /// errno names).
    pub fn tls_failures(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for w in &self.workers {
            for (k, v) in &w.tls_failures {
                *all.entry(k.clone()).or_insert(0) += v;
            }
        }
        all
    }

    /// Errors of all workers by errno name.
    pub fn errors(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for w in &self.workers {
            for (k, v) in &w.errors {
                *all.entry(k.clone()).or_insert(0) += v;
            }
        }
        all
    }

    /// Wall time in seconds.
    pub fn wall_time_secs(&self) -> f64 {
        self.wall_time_ns as f64 / 1e9
    }
}
