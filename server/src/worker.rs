//! What a worker thread owns and what it shares: its [`Ctx`] (handed to its engine) and its
//! [`Slot`] in [`Shared`], where it publishes its counters and its own CPU time.
//!
//! Both engines and the thread set-up in [`crate::shard`] depend on this module; it depends on
//! neither, so the engines and the shard do not import each other.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::acceptwait::Stamps;
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
    /// Set before the worker says it is ready when its engine cannot read the peer of an
    /// accepted connection, so it cannot stamp accepts ([`Control`]): the io_uring engine on a
    /// kernel without IORING_OP_URING_CMD getsockopt (Linux 6.7).
    pub(crate) stamps_unsupported: AtomicBool,
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
    /// One control mailbox per worker.
    pub(crate) control: Vec<Control>,
}

impl Shared {
    /// Shared state for `workers` workers.
    pub(crate) fn new(workers: usize) -> Self {
        Shared {
            draining: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            slots: (0..workers).map(|_| Slot::default()).collect(),
            control: (0..workers).map(|_| Control::default()).collect(),
        }
    }
}

/// What the controller asks of one worker between phases, never per connection: start or stop
/// stamping accepts (the accept-queue wait, `bench`), or stall (a test hook). The controller
/// fills the [`Mailbox`] and moves `epoch` on; the worker compares `epoch` with the last one it
/// saw once per loop turn (one relaxed load of a line only the controller writes, as it reads
/// the stop flag), takes the mailbox's lock only when it moved, and acknowledges in `ack`. An
/// idle worker sees a request within [`WAIT_MAX`].
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct Control {
    /// Moved on by the controller after each change of the mailbox.
    pub(crate) epoch: AtomicU64,
    /// The last epoch the worker acted on.
    pub(crate) ack: AtomicU64,
    /// The request and what the worker hands back.
    pub(crate) mailbox: Mutex<Mailbox>,
}

/// A [`Control`]'s request and reply.
#[derive(Debug, Default)]
pub(crate) struct Mailbox {
    /// Start stamping accepts into a buffer of this many stamps keeping 1 key in this many
    /// (`Stamps::with_capacity`), which the worker allocates on its own pinned thread (so on its
    /// node) before it acknowledges; what was being stamped goes to `taken`.
    pub(crate) arm: Option<(usize, u32)>,
    /// Stop stamping: what was stamped goes to `taken`.
    pub(crate) disarm: bool,
    /// The stamps the worker handed back.
    pub(crate) taken: Option<Stamps>,
    /// Test hook: stall the event loop this long (no accept, no completion handled) once seen.
    pub(crate) stall: Option<Duration>,
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
    /// While the controller asks for it ([`Control`]): each accepted connection's key (its
    /// client's address and port) and when the engine saw it accepted (CLOCK_MONOTONIC), into a
    /// buffer this worker allocated when asked, on its pinned thread (no allocation per
    /// connection; a full buffer counts).
    pub(crate) stamps: Option<Stamps>,
    /// With steering: sample accepts' SO_INCOMING_CPU ([`Ctx::syn_cpu`]); false = the accept
    /// path pays nothing.
    pub(crate) syn_cpu_sample: bool,
    /// The last [`Control::epoch`] acted on.
    ctl_seen: u64,
    /// Test hook: the io_uring engine's next this many pushes of SQEs fail as if the SQ stayed
    /// full.
    #[cfg(test)]
    pub(crate) fail_pushes: usize,
    shared: Arc<Shared>,
    last_publish: Instant,
}

impl Ctx {
    /// Called right after `counts.accepted` counted the connection on `fd`: with steering, on
    /// a worker's 1st, 17th, 33rd, ... accept ([`crate::counts::SYN_CPU_SAMPLE_EVERY`]), reads
    /// the connection's SO_INCOMING_CPU (one getsockopt(2)) and counts whether it is this
    /// worker's CPU ([`crate::counts::SynCpuCounts`]). Without steering, one branch.
    #[inline]
    pub(crate) fn syn_cpu(&mut self, fd: std::os::fd::BorrowedFd<'_>) {
        if !self.syn_cpu_sample
            || !(self.counts.accepted - 1).is_multiple_of(crate::counts::SYN_CPU_SAMPLE_EVERY)
        {
            return;
        }
        let c = &mut self.counts.syn_cpu;
        c.sample_every = crate::counts::SYN_CPU_SAMPLE_EVERY;
        match socket2::SockRef::from(&fd).cpu_affinity() {
            Ok(cpu) => {
                c.sampled += 1;
                c.same_cpu += u64::from(cpu == self.cpu);
            }
            Err(_) => c.unread += 1,
        }
    }

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
            stamps: None,
            syn_cpu_sample: false,
            ctl_seen: 0,
            #[cfg(test)]
            fail_pushes: 0,
            shared,
            last_publish: Instant::now(),
        }
    }

    /// Publishes the counters if [`PUBLISH_EVERY`] has passed since the last time, and acts on
    /// the controller's request when there is a new one ([`Control`]). Called once per loop
    /// turn.
    #[inline]
    pub(crate) fn maybe_publish(&mut self, now: Instant) {
        if now.duration_since(self.last_publish) >= PUBLISH_EVERY {
            self.publish(now);
        }
        let epoch = self.shared.control[self.index]
            .epoch
            .load(Ordering::Acquire);
        if epoch != self.ctl_seen {
            self.take_control(epoch);
        }
    }

    /// Acts on the mailbox as of `epoch`: hands back what was stamped, starts stamping into a
    /// new buffer it allocates here (on this pinned thread: its node's memory), acknowledges,
    /// then stalls when asked to.
    #[cold]
    fn take_control(&mut self, epoch: u64) {
        let shared = Arc::clone(&self.shared);
        let c = &shared.control[self.index];
        let (arm, stall) = {
            let mut m = c.mailbox.lock().unwrap_or_else(|p| p.into_inner());
            if m.disarm || m.arm.is_some() {
                if let Some(done) = self.stamps.take() {
                    m.taken = Some(done);
                }
                m.disarm = false;
            }
            (m.arm.take(), m.stall.take())
        };
        if let Some((capacity, every)) = arm {
            self.stamps = Some(Stamps::with_capacity(capacity, every));
        }
        self.ctl_seen = epoch;
        c.ack.store(epoch, Ordering::Release);
        if let Some(d) = stall {
            std::thread::sleep(d);
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

    /// This worker's slot (what it publishes).
    pub(crate) fn shared_slot(&self) -> &Slot {
        &self.shared.slots[self.index]
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

/// Now on CLOCK_MONOTONIC, ns (the load generator's clock: a stamp of one side is compared
/// with the other's).
#[inline]
pub(crate) fn now_ns() -> u64 {
    // CLOCK_MONOTONIC always exists on Linux; clock_gettime cannot fail for it.
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("clock_gettime(CLOCK_MONOTONIC)");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// What a worker says once it is set up: `Ok(ring setup flags)` (None for epoll) or the error.
pub(crate) type Ready = Result<Option<&'static str>, ServerError>;
