//! What a worker thread owns and what it shares: its [`Ctx`] (handed to its engine) and its
//! [`Slot`] in [`Shared`], where it publishes its counters and its own CPU time.
//!
//! Both engines and the thread set-up in [`crate::shard`] depend on this module; it depends on
//! neither, so the engines and the shard do not import each other.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::threadcpu::ThreadCpu;
use socket2::Socket;

use crate::config::Mode;
use crate::counts::Counts;
use crate::error::ServerError;

/// How often a busy worker copies its counters and CPU time to its [`Slot`].
pub(crate) const PUBLISH_EVERY: Duration = Duration::from_millis(10);

/// The longest a worker sleeps in its event loop before it looks at the stop flag and publishes
/// its counters: bounds the stop latency and the staleness of [`crate::LiveStats`] when idle.
pub(crate) const WAIT_MAX: Duration = Duration::from_millis(50);

/// What a worker publishes: its own cache line, written every [`PUBLISH_EVERY`] at most.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct Slot {
    /// Connections accepted so far.
    pub(crate) accepted: AtomicU64,
    /// Errors so far.
    pub(crate) errors: AtomicU64,
    /// `--tls`: TLS handshakes completed so far.
    pub(crate) tls_accepted: AtomicU64,
    /// `--tls`: of them, resumed.
    pub(crate) tls_resumed: AtomicU64,
    /// The worker thread's on-CPU time so far, ns (CLOCK_THREAD_CPUTIME_ID).
    pub(crate) cpu_run_ns: AtomicU64,
    /// Its user time so far, ns (getrusage(2) RUSAGE_THREAD).
    pub(crate) cpu_user_ns: AtomicU64,
    /// Its system time so far, ns (getrusage(2) RUSAGE_THREAD).
    pub(crate) cpu_sys_ns: AtomicU64,
}

impl Slot {
    /// The CPU time last published.
    pub(crate) fn cpu(&self) -> ThreadCpu {
        ThreadCpu {
            run_ns: self.cpu_run_ns.load(Ordering::Relaxed),
            user_ns: self.cpu_user_ns.load(Ordering::Relaxed),
            sys_ns: self.cpu_sys_ns.load(Ordering::Relaxed),
        }
    }
}

/// State shared by the controller and all workers of one server.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Set by [`crate::Server::stop`]: block new SYNs, drain, close, exit.
    pub(crate) draining: AtomicBool,
    /// Set when start-up failed: drain without the grace period.
    pub(crate) abort: AtomicBool,
    /// One slot per worker.
    pub(crate) slots: Vec<Slot>,
}

impl Shared {
    /// Shared state for `workers` workers.
    pub(crate) fn new(workers: usize) -> Self {
        Shared {
            draining: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            slots: (0..workers).map(|_| Slot::default()).collect(),
        }
    }
}

/// A worker's own state, handed to its engine.
#[derive(Debug)]
pub(crate) struct Ctx {
    /// CPU the worker is pinned to.
    pub(crate) cpu: usize,
    /// Index of the worker (= of its listener in the reuseport group).
    pub(crate) index: usize,
    /// The listener; the engine takes it and closes it at the end of the drain.
    pub(crate) listener: Option<Socket>,
    /// What to do with each connection.
    pub(crate) mode: Mode,
    /// The greeting (`Mode::Greet`), preallocated; empty otherwise.
    pub(crate) greet: Box<[u8]>,
    /// Counters.
    pub(crate) counts: Counts,
    /// The shared TLS config (`--tls`); `None` = plain TCP.
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
    /// Entries of the engine's per-connection table indexed by fd ([`crate::fd_table`]) when
    /// the engine returned: it grows with the connections open at once, from 0.
    pub(crate) fd_table_len: usize,
    /// Test hook: the io_uring engine's next this many pushes of SQEs fail as if the SQ stayed
    /// full.
    #[cfg(test)]
    pub(crate) fail_pushes: usize,
    shared: Arc<Shared>,
    last_publish: Instant,
}

impl Ctx {
    /// A worker's state before its event loop starts.
    pub(crate) fn new(
        cpu: usize,
        index: usize,
        listener: Socket,
        mode: Mode,
        shared: Arc<Shared>,
    ) -> Self {
        let greet = match mode {
            Mode::Greet { bytes } => vec![b'*'; bytes as usize].into_boxed_slice(),
            Mode::Http { body_bytes } => crate::http::response(body_bytes).into_boxed_slice(),
            _ => Box::default(),
        };
        Ctx {
            cpu,
            index,
            listener: Some(listener),
            mode,
            greet,
            counts: Counts::default(),
            tls: None,
            fd_table_len: 0,
            #[cfg(test)]
            fail_pushes: 0,
            shared,
            last_publish: Instant::now(),
        }
    }

    /// Publishes the counters if [`PUBLISH_EVERY`] has passed since the last time.
    #[inline]
    pub(crate) fn maybe_publish(&mut self, now: Instant) {
        if now.duration_since(self.last_publish) >= PUBLISH_EVERY {
            self.publish(now);
        }
    }

    /// Publishes the counters and the thread's CPU time now ([`ThreadCpu::now`]: two syscalls,
    /// at most once per [`PUBLISH_EVERY`] on a busy worker) and returns that CPU time.
    pub(crate) fn publish(&mut self, now: Instant) -> ThreadCpu {
        let slot = &self.shared.slots[self.index];
        let cpu = ThreadCpu::now();
        slot.accepted.store(self.counts.accepted, Ordering::Relaxed);
        slot.errors
            .store(self.counts.errors_total(), Ordering::Relaxed);
        slot.tls_accepted
            .store(self.counts.tls.accepted, Ordering::Relaxed);
        slot.tls_resumed
            .store(self.counts.tls.resumed, Ordering::Relaxed);
        slot.cpu_run_ns.store(cpu.run_ns, Ordering::Relaxed);
        slot.cpu_user_ns.store(cpu.user_ns, Ordering::Relaxed);
        slot.cpu_sys_ns.store(cpu.sys_ns, Ordering::Relaxed);
        self.last_publish = now;
        cpu
    }

    /// True once the server is stopping.
    #[inline]
    pub(crate) fn draining(&self) -> bool {
        self.shared.draining.load(Ordering::Relaxed)
    }

    /// How long to keep accepting after new SYNs are blocked (zero when start-up failed).
    pub(crate) fn grace(&self) -> Duration {
        if self.shared.abort.load(Ordering::Relaxed) {
            Duration::ZERO
        } else {
            crate::drain::DRAIN_GRACE
        }
    }
}

/// What a worker says once it is set up: `Ok(ring setup flags)` (None for epoll) or the error.
pub(crate) type Ready = Result<Option<&'static str>, ServerError>;
