//! [`Server`]: start, watch and stop a run.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::acceptwait::Stamps;

use crate::config::{EngineChoice, Mode, ServerConfig, MAX_GREET_BYTES};
use crate::error::ServerError;
use crate::report::{Engine, LiveStats, ServerReport, SteeringUsed, WorkerReport};
use crate::shard::{self, WorkerSpec};
use crate::worker::{Mailbox, Shared};

/// A running server: pinned workers (one per CPU, or [`ServerConfig::workers`] round-robin on the
/// CPUs), each with its own `SO_REUSEPORT` listener and event loop.
///
/// Dropping it without [`Server::stop`] stops it the same way and discards the report.
#[derive(Debug)]
pub struct Server {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<WorkerReport>>,
    cpus: Vec<usize>,
    local_addr: SocketAddr,
    engine: Engine,
    fallback_reason: Option<String>,
    ring_setup: Option<String>,
    steering: SteeringUsed,
    mode: Mode,
    backlog: u32,
    started: Instant,
}

impl Server {
    /// Starts the server and returns once every listener listens and every worker is pinned and
    /// waiting in its event loop.
    ///
    /// Steps: validate `cpus` (non-empty, no duplicates, online and in this process's affinity
    /// mask) and `workers` (0, or from `cpus.len()` to [`crate::config::MAX_WORKERS`]); place
    /// the workers round-robin on the CPUs ([`crate::config::worker_cpus`]); pick the engine (`Auto`: [`crate::probe::io_uring`], else epoll with
    /// [`Server::fallback_reason`]); bind the listeners in worker order (`listener`);
    /// install steering (`steer`); spawn the workers. Does not touch RLIMIT_NOFILE (see
    /// [`crate::rlimit::raise_nofile`]).
    ///
    /// # Errors
    /// A [`ServerError`] saying what and how to fix; threads already started are stopped and
    /// joined and listeners closed before it returns.
    pub fn start(cfg: ServerConfig) -> Result<Server, ServerError> {
        validate_cpus(&cfg.cpus)?;
        validate_workers(cfg.workers, cfg.cpus.len())?;
        let cpus = crate::config::worker_cpus(&cfg.cpus, cfg.workers);
        if let Mode::Greet { bytes } = cfg.mode {
            assert!(
                (1..=MAX_GREET_BYTES).contains(&bytes),
                "Mode::Greet bytes must be 1..={MAX_GREET_BYTES} (Mode::from_str checks this)"
            );
        }
        if cfg.tls.is_some() && !matches!(cfg.mode, Mode::Close | Mode::Http { .. }) {
            return Err(ServerError::TlsMode {
                mode: cfg.mode.to_string(),
            });
        }
        let (engine, fallback_reason) = match cfg.engine {
            EngineChoice::Epoll => (Engine::Epoll, None),
            EngineChoice::IoUring => match crate::engine::probe::io_uring() {
                Ok(()) => (Engine::IoUring, None),
                Err(reason) => return Err(ServerError::IoUringUnavailable { reason }),
            },
            EngineChoice::Auto => match crate::engine::probe::io_uring() {
                Ok(()) => (Engine::IoUring, None),
                Err(reason) => (Engine::Epoll, Some(reason)),
            },
        };
        let (listeners, local_addr) = crate::listener::bind_group(
            cfg.listen,
            cpus.len(),
            cfg.backlog,
            cfg.mode == Mode::Rst,
        )?;
        let steering = crate::steer::install(&listeners, &cpus, cfg.steer, local_addr)?;
        let shared = Arc::new(Shared::new(cpus.len()));
        let started = Instant::now();
        let mut server = Server {
            shared: Arc::clone(&shared),
            handles: Vec::with_capacity(cpus.len()),
            cpus: cpus.clone(),
            local_addr,
            engine,
            fallback_reason,
            ring_setup: None,
            steering,
            mode: cfg.mode,
            backlog: cfg.backlog,
            started,
        };
        let (tx, rx) = mpsc::channel();
        let mut failure = None;
        for (index, (listener, &cpu)) in listeners.into_iter().zip(&cpus).enumerate() {
            let spec = WorkerSpec {
                cpu,
                index,
                listener,
                mode: cfg.mode,
                engine,
                tls: cfg.tls.as_ref().map(|t| Arc::clone(&t.config)),
                syn_cpu: steering != SteeringUsed::None,
            };
            match shard::spawn(spec, Arc::clone(&shared), tx.clone()) {
                Ok(h) => server.handles.push(h),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        drop(tx);
        for _ in 0..server.handles.len() {
            match rx.recv() {
                Ok((_, Ok(flags))) => server.ring_setup = flags.map(str::to_string),
                Ok((_, Err(e))) => {
                    failure.get_or_insert(e);
                }
                Err(_) => break, // a worker died before reporting; its join reports it
            }
        }
        if let Some(e) = failure {
            shared.abort.store(true, Ordering::Relaxed);
            drop(server); // stops and joins the workers that did start
            return Err(e);
        }
        server.started = Instant::now();
        Ok(server)
    }

    /// The address the listeners are bound to, with the real port.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The engine that runs.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Why `EngineChoice::Auto` fell back to epoll, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// The io_uring setup flags the rings got (`"single_issuer+defer_taskrun"`, ...); `None` for
    /// epoll.
    pub fn ring_setup(&self) -> Option<&str> {
        self.ring_setup.as_deref()
    }

    /// The steering that was installed.
    pub fn steering(&self) -> SteeringUsed {
        self.steering
    }

    /// The CPU of each worker, in worker order (a CPU repeats when workers outnumber CPUs).
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// Totals and CPU times published by the workers so far (cheap: relaxed loads, no syscall).
    pub fn stats(&self) -> LiveStats {
        self.stats_reader().read()
    }

    /// A handle that reads the same published stats from any thread, for as long as it lives
    /// (after [`Server::stop`] it keeps the final values: each worker publishes once more as it
    /// exits).
    pub fn stats_reader(&self) -> StatsReader {
        StatsReader {
            shared: Arc::clone(&self.shared),
            cpus: self.cpus.clone(),
        }
    }

    /// Why the workers cannot stamp accepts ([`Server::start_stamping`]), if they cannot: the
    /// io_uring engine reads each connection's peer with IORING_OP_URING_CMD getsockopt
    /// (SO_PEERNAME), which needs Linux 6.7.
    pub fn stamps_unavailable(&self) -> Option<&'static str> {
        self.shared
            .slots
            .iter()
            .any(|s| s.stamps_unsupported.load(Ordering::Relaxed))
            .then_some(
                "the io_uring engine reads each accepted connection's client address with IORING_OP_URING_CMD getsockopt(SO_PEERNAME), which this kernel lacks (Linux 6.7); --engine epoll can",
            )
    }

    /// Starts stamping accepts: every worker records, per connection it accepts, the client's
    /// address and port ([`common::acceptwait::conn_key`]) and when its engine saw the accept
    /// (CLOCK_MONOTONIC), keeping 1 key in `every` ([`common::acceptwait::keeps`]), into a
    /// buffer of `capacity` stamps each worker allocates once, on its own pinned thread before
    /// it acknowledges (its node's memory; a full buffer counts what it could not keep). Replaces stamps not yet taken. Cost per connection: a clock read and a store;
    /// the io_uring engine also reads the peer through the ring (one getsockopt SQE and CQE).
    /// Waits up to `wait` for every worker to start (an idle worker looks once per 50 ms);
    /// true when all did.
    pub fn start_stamping(&self, capacity: usize, every: u32, wait: Duration) -> bool {
        request(&self.shared, wait, |m| {
            m.arm = Some((capacity, every));
        })
    }

    /// Stops stamping and returns every worker's stamps, merged: what each stamped since
    /// [`Server::start_stamping`]. Waits up to `wait` for the workers to hand them over; a
    /// worker that did not is counted in [`AcceptStamps::workers_missing`] (its stamps are
    /// lost for this phase).
    pub fn take_stamps(&self, wait: Duration) -> AcceptStamps {
        let answered = request(&self.shared, wait, |m| m.disarm = true);
        let mut stamps = Stamps::default();
        let mut missing = 0;
        for c in &self.shared.control {
            let taken = c
                .mailbox
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .taken
                .take();
            match taken {
                Some(s) => stamps.append(s),
                None => missing += 1,
            }
        }
        AcceptStamps {
            stamps,
            workers_missing: if answered { 0 } else { missing },
        }
    }

    /// A handle that stalls the workers' event loops (a test hook: see [`Staller`]).
    pub fn staller(&self) -> Staller {
        Staller {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Stops the server without resetting completed handshakes (see the `drain` module): blocks
    /// new SYNs, keeps accepting for `DRAIN_GRACE`, accepts until EAGAIN, closes the listeners
    /// and held connections, joins the workers, and returns the report. Takes at least
    /// `DRAIN_GRACE` (200 ms) and, however much load keeps arriving, at most about `DRAIN_GRACE` +
    /// `FINAL_DRAIN_MAX` (250 ms) + a few loop turns (~0.5 s; measured ~0.2–0.35 s under
    /// overload), plus up to 2 s while greetings still being written finish.
    ///
    /// # Panics
    /// Re-raises a worker thread's panic.
    pub fn stop(mut self) -> ServerReport {
        let workers = self.join_all();
        ServerReport {
            engine: self.engine,
            steering: self.steering,
            fallback_reason: self.fallback_reason.take(),
            ring_setup: self.ring_setup.take(),
            mode: self.mode,
            listen: self.local_addr,
            backlog: self.backlog,
            workers,
            wall_time_ns: u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            interrupted: false,
        }
    }

    fn join_all(&mut self) -> Vec<WorkerReport> {
        self.shared.draining.store(true, Ordering::Relaxed);
        let mut out = Vec::with_capacity(self.handles.len());
        for h in self.handles.drain(..) {
            match h.join() {
                Ok(r) => out.push(r),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        out
    }
}

/// The stamps of every worker, taken by [`Server::take_stamps`].
#[derive(Debug, Default)]
pub struct AcceptStamps {
    /// Every worker's stamps and counts, merged.
    pub stamps: Stamps,
    /// Workers that had not handed theirs over in time (0 normally).
    pub workers_missing: usize,
}

/// Stalls the workers' event loops for a known time ([`Server::staller`]): a test hook that
/// makes connections wait in the accept queues, so the accept-queue wait can be checked against
/// a known pause. Each worker stalls from the moment it sees the request (within 50 ms when
/// idle, at its next loop turn when busy) for the whole time asked: it accepts nothing and
/// handles no completion meanwhile (the kernel keeps completing handshakes into the accept
/// queue).
#[derive(Debug, Clone)]
pub struct Staller {
    shared: Arc<Shared>,
}

impl Staller {
    /// Asks every worker to stall for `d` and returns once every worker has begun (it
    /// acknowledges the request just before it sleeps), or after 1 s; true when all began.
    pub fn stall(&self, d: Duration) -> bool {
        request(&self.shared, Duration::from_secs(1), |m| m.stall = Some(d))
    }
}

/// Puts a request in every worker's mailbox, moves its epoch on, and waits up to `wait` for
/// every worker to acknowledge; true when all did.
fn request(shared: &Shared, wait: Duration, f: impl Fn(&mut Mailbox)) -> bool {
    let mut epochs = Vec::with_capacity(shared.control.len());
    for c in &shared.control {
        let mut m = c.mailbox.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut m);
        // Moved on while the lock is held: the worker that sees the new epoch reads this request.
        epochs.push(c.epoch.fetch_add(1, Ordering::AcqRel) + 1);
    }
    let until = Instant::now() + wait;
    loop {
        let all = shared
            .control
            .iter()
            .zip(&epochs)
            .all(|(c, &e)| c.ack.load(Ordering::Acquire) >= e);
        if all {
            return true;
        }
        if Instant::now() >= until || shared.draining.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Reads the stats the workers publish to their slots ([`Server::stats_reader`]): relaxed loads
/// of each worker's own cache line, at most [`crate::LiveStats`]' staleness old (10 ms while a
/// worker is busy, 50 ms when idle). Reading never touches a worker.
#[derive(Debug, Clone)]
pub struct StatsReader {
    shared: Arc<Shared>,
    cpus: Vec<usize>,
}

impl StatsReader {
    /// Totals and CPU times published so far ([`Server::stats`]).
    pub fn read(&self) -> LiveStats {
        let slots = &self.shared.slots;
        LiveStats {
            accepted_per_worker: slots
                .iter()
                .map(|s| s.accepted.load(Ordering::Relaxed))
                .collect(),
            errors_total: self.errors_per_worker().iter().sum(),
            cpu_per_worker: slots.iter().map(|s| s.cpu()).collect(),
            tls_accepted: slots
                .iter()
                .map(|s| s.tls_accepted.load(Ordering::Relaxed))
                .sum(),
            tls_resumed: slots
                .iter()
                .map(|s| s.tls_resumed.load(Ordering::Relaxed))
                .sum(),
        }
    }

    /// Errors (accept, send, close) published so far per worker, in CPU-list order.
    pub fn errors_per_worker(&self) -> Vec<u64> {
        self.shared
            .slots
            .iter()
            .map(|s| s.errors.load(Ordering::Relaxed))
            .collect()
    }

    /// The CPU of each worker, in worker order (a CPU repeats when workers outnumber CPUs).
    pub fn cpus(&self) -> &[usize] {
        &self.cpus
    }

    /// True once the server was asked to stop (it is draining, or done).
    pub fn stopping(&self) -> bool {
        self.shared.draining.load(Ordering::Relaxed)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.handles.is_empty() {
            self.shared.draining.store(true, Ordering::Relaxed);
            for h in self.handles.drain(..) {
                let _ = h.join();
            }
        }
    }
}

/// Checks `workers` (0 = one per CPU) against the `cpus` CPUs: at least one worker per CPU, at
/// most [`crate::config::MAX_WORKERS`].
fn validate_workers(workers: usize, cpus: usize) -> Result<(), ServerError> {
    if workers != 0 && (workers < cpus || workers > crate::config::MAX_WORKERS) {
        return Err(ServerError::Workers { workers, cpus });
    }
    Ok(())
}

/// Checks that `cpus` is non-empty, has no duplicates, and that each CPU is online and allowed.
fn validate_cpus(cpus: &[usize]) -> Result<(), ServerError> {
    if cpus.is_empty() {
        return Err(ServerError::NoCpus);
    }
    let mut seen = std::collections::BTreeSet::new();
    for &c in cpus {
        if !seen.insert(c) {
            return Err(ServerError::DuplicateCpu { cpu: c });
        }
    }
    let usable = common::cpulist::usable();
    for &c in cpus {
        if !usable.contains(&c) {
            return Err(ServerError::CpuUnavailable {
                cpu: c,
                usable: common::cpulist::format(&usable),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_cpu_lists_are_refused_before_anything_starts() {
        assert!(matches!(validate_cpus(&[]), Err(ServerError::NoCpus)));
        assert!(matches!(
            validate_cpus(&[0, 0]),
            Err(ServerError::DuplicateCpu { cpu: 0 })
        ));
        let err = validate_cpus(&[4095]).unwrap_err();
        assert!(
            matches!(err, ServerError::CpuUnavailable { cpu: 4095, .. }),
            "{err}"
        );
        assert!(err.is_bad_input());
        assert!(validate_workers(0, 2).is_ok());
        assert!(validate_workers(16, 2).is_ok());
        let err = validate_workers(1, 2).unwrap_err();
        assert!(
            matches!(
                err,
                ServerError::Workers {
                    workers: 1,
                    cpus: 2
                }
            ),
            "{err}"
        );
        assert!(err.is_bad_input());
        assert!(validate_workers(crate::config::MAX_WORKERS + 1, 2).is_err());
    }
}
