//! One shard = one pinned worker thread that owns its listener, its event loop and its counters.
//!
//! The thread pins itself (sched_setaffinity(2)), sets up its engine, says "ready" (or why not)
//! on a channel, runs until [`Shared::draining`] turns true, drains (see [`crate::drain`]), and
//! returns its [`WorkerReport`] with its own CPU time (getrusage(2) RUSAGE_THREAD).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::resource::{getrusage, UsageWho};
use nix::unistd::Pid;
use socket2::Socket;

use crate::config::Mode;
use crate::counts::Counts;
use crate::error::ServerError;
use crate::report::{Engine, WorkerReport};

/// How often a busy worker copies its counters to its [`Slot`].
pub const PUBLISH_EVERY: Duration = Duration::from_millis(10);

/// The longest a worker sleeps in its event loop before it looks at the stop flag and publishes
/// its counters: bounds the stop latency and the staleness of [`crate::LiveStats`] when idle.
pub const WAIT_MAX: Duration = Duration::from_millis(50);

/// What a worker publishes: its own cache line, written every [`PUBLISH_EVERY`] at most.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct Slot {
    /// Connections accepted so far.
    pub accepted: AtomicU64,
    /// Errors so far.
    pub errors: AtomicU64,
}

/// State shared by the controller and all workers of one server.
#[derive(Debug)]
pub struct Shared {
    /// Set by [`crate::Server::stop`]: block new SYNs, drain, close, exit.
    pub draining: AtomicBool,
    /// Set when start-up failed: drain without the grace period.
    pub abort: AtomicBool,
    /// One slot per worker.
    pub slots: Vec<Slot>,
}

impl Shared {
    /// Shared state for `workers` workers.
    pub fn new(workers: usize) -> Self {
        Shared {
            draining: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            slots: (0..workers).map(|_| Slot::default()).collect(),
        }
    }
}

/// A worker's own state, handed to its engine.
#[derive(Debug)]
pub struct Ctx {
    /// CPU the worker is pinned to.
    pub cpu: usize,
    /// Index of the worker (= of its listener in the reuseport group).
    pub index: usize,
    /// The listener; the engine takes it and closes it at the end of the drain.
    pub listener: Option<Socket>,
    /// What to do with each connection.
    pub mode: Mode,
    /// The greeting (`Mode::Greet`), preallocated; empty otherwise.
    pub greet: Box<[u8]>,
    /// Counters.
    pub counts: Counts,
    shared: Arc<Shared>,
    last_publish: Instant,
}

impl Ctx {
    /// Publishes the counters if [`PUBLISH_EVERY`] has passed since the last time.
    #[inline]
    pub fn maybe_publish(&mut self, now: Instant) {
        if now.duration_since(self.last_publish) >= PUBLISH_EVERY {
            self.publish(now);
        }
    }

    /// Publishes the counters now.
    pub fn publish(&mut self, now: Instant) {
        let slot = &self.shared.slots[self.index];
        slot.accepted.store(self.counts.accepted, Ordering::Relaxed);
        slot.errors
            .store(self.counts.errors_total(), Ordering::Relaxed);
        self.last_publish = now;
    }

    /// True once the server is stopping.
    #[inline]
    pub fn draining(&self) -> bool {
        self.shared.draining.load(Ordering::Relaxed)
    }

    /// How long to keep accepting after new SYNs are blocked (zero when start-up failed).
    pub fn grace(&self) -> Duration {
        if self.shared.abort.load(Ordering::Relaxed) {
            Duration::ZERO
        } else {
            crate::drain::DRAIN_GRACE
        }
    }
}

/// What a worker says once it is set up: `Ok(ring setup flags)` (None for epoll) or the error.
pub type Ready = Result<Option<&'static str>, ServerError>;

/// Everything a worker thread needs to start.
#[derive(Debug)]
pub struct WorkerSpec {
    /// CPU to pin to.
    pub cpu: usize,
    /// Index in the group.
    pub index: usize,
    /// Its listener.
    pub listener: Socket,
    /// Mode.
    pub mode: Mode,
    /// Engine to run.
    pub engine: Engine,
}

/// Spawns a worker thread; it reports readiness on `ready` as `(index, Ready)`.
///
/// # Errors
/// [`ServerError::Spawn`] when the thread cannot be created.
pub fn spawn(
    spec: WorkerSpec,
    shared: Arc<Shared>,
    ready: Sender<(usize, Ready)>,
) -> Result<std::thread::JoinHandle<WorkerReport>, ServerError> {
    let cpu = spec.cpu;
    std::thread::Builder::new()
        .name(format!("accept-cpu{cpu}"))
        .spawn(move || run(spec, shared, ready))
        .map_err(|source| ServerError::Spawn { cpu, source })
}

fn run(spec: WorkerSpec, shared: Arc<Shared>, ready: Sender<(usize, Ready)>) -> WorkerReport {
    let WorkerSpec {
        cpu,
        index,
        listener,
        mode,
        engine,
    } = spec;
    let greet = match mode {
        Mode::Greet { bytes } => vec![b'*'; bytes as usize].into_boxed_slice(),
        _ => Box::default(),
    };
    let mut ctx = Ctx {
        cpu,
        index,
        listener: Some(listener),
        mode,
        greet,
        counts: Counts::default(),
        shared,
        last_publish: Instant::now(),
    };
    let mut set = CpuSet::new();
    let pinned = set
        .set(cpu)
        .and_then(|()| sched_setaffinity(Pid::from_raw(0), &set));
    if let Err(errno) = pinned {
        let _ = ready.send((index, Err(ServerError::Pin { cpu, errno })));
    } else {
        let report_ready = |r: Ready| {
            let _ = ready.send((index, r));
        };
        match engine {
            Engine::IoUring => crate::engine::uring::run(&mut ctx, report_ready),
            Engine::Epoll => crate::engine::epoll::run(&mut ctx, report_ready),
        }
    }
    drop(ctx.listener.take());
    ctx.publish(Instant::now());
    let (user, sys) = match getrusage(UsageWho::RUSAGE_THREAD) {
        Ok(u) => (timeval_ns(u.user_time()), timeval_ns(u.system_time())),
        Err(_) => (0, 0),
    };
    WorkerReport {
        cpu,
        accepted: ctx.counts.accepted,
        errors: ctx.counts.error_names(),
        emfile_backoffs: ctx.counts.emfile_backoffs,
        cpu_user_ns: user,
        cpu_sys_ns: sys,
        left_in_queue: ctx.counts.left_in_queue,
    }
}

fn timeval_ns(t: nix::sys::time::TimeVal) -> u64 {
    (t.tv_sec() as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_usec() as u64 * 1000)
}
