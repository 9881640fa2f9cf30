//! One pinned load worker: its event loop, its share of the schedule, its slots and histograms.
//!
//! # Waiting for the next intended start
//! mio's `Poll::poll` timeout is rounded up to whole milliseconds (epoll_wait(2) takes ms), which
//! would start attempts up to 1 ms late. The worker therefore registers a timerfd (timerfd_create(2),
//! CLOCK_MONOTONIC, armed with TFD_TIMER_ABSTIME at the exact next deadline; hrtimer-backed, no
//! timer slack) in its poll and blocks in epoll_wait without a timeout. When the next deadline is
//! less than `cfg.pacing.spin_ns` ([`SPIN_NS`] by default) away it polls with a zero timeout instead (a short busy wait: a timer
//! round trip costs about as much). Typical start accuracy is the wake-up latency, a few to tens of
//! µs; starts later than `late_threshold` are counted `late`. The timerfd is re-armed only when
//! the deadline moves earlier or the armed one has passed (one timerfd_settime per wait at most).

use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;

use common::threadcpu::ThreadCpu;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use socket2::{Domain, SockAddr};

use crate::clock::now_ns;
use crate::config::{LoadConfig, Pattern};
use crate::error::LoadError;
use crate::failures::Failures;
use crate::report::LoadWorkerReport;
use crate::schedule::Schedule;
use crate::slot::Slab;
use crate::stats::{Counters, Latency, Second, TargetCounters};

/// Below this distance to the next deadline the worker polls with a zero timeout instead of arming
/// its timerfd, ns: a short spin before a start that is due within a few µs, so it is not left
/// to a timer wake-up (whose latency is the generator's lag). The default of
/// [`crate::Pacing::spin_ns`] (`--spin`), recorded in `bench` records as the setting
/// `load.spin_ns`.
pub const SPIN_NS: u64 = 2_000;

const TIMER: Token = Token(usize::MAX);
const SEC: u64 = 1_000_000_000;
/// The longest a worker sleeps without looking at the stop flag, ns (50 ms): the bound on how
/// late an interrupt is seen, and so on how far past the stop the measured window can reach.
const STOP_CHECK_NS: u64 = 50_000_000;
/// Seed of the Poisson arrivals (runs repeat exactly).
const POISSON_SEED: u64 = 0x636f_6e6e_7374_6f72;

/// When a worker runs, in CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// Start of the run (warm-up starts here).
    pub start_ns: u64,
    /// Start of the measured part.
    pub measure_ns: u64,
    /// End of the run: no attempt starts at or after it.
    pub end_ns: u64,
}

impl Window {
    /// Where per-second rows begin (see [`row_origin_ns`]).
    pub(crate) fn origin_ns(&self) -> u64 {
        row_origin_ns(self.start_ns, self.measure_ns)
    }
}

/// Where per-second rows begin, CLOCK_MONOTONIC ns: the start of the measured part minus the
/// warm-up rounded up to whole seconds, so a row boundary falls on the start of the measured
/// part and no row mixes warm-up with measured time. Equal to `start_ns` when the warm-up is a
/// whole number of seconds (or none); before it otherwise (the first, warm-up row is partial).
pub(crate) fn row_origin_ns(start_ns: u64, measure_ns: u64) -> u64 {
    let warmup = measure_ns.saturating_sub(start_ns);
    measure_ns.saturating_sub(warmup.div_ceil(SEC) * SEC)
}

/// What a worker hands back when it ends.
#[derive(Debug)]
pub(crate) struct WorkerResult {
    /// Whole run.
    pub total: Counters,
    /// Measured window only.
    pub measured: Counters,
    /// Measured post-handshake failures.
    pub post_connect: Failures,
    /// Measured handshake latency, ns.
    pub handshake: Latency,
    /// Measured service latency, ns.
    pub service: Latency,
    /// Measured first-byte latency, ns.
    pub first_byte: Latency,
    /// Measured generator lag (open loop), ns.
    pub lag: Latency,
    /// The worker's timer slack, ns.
    pub timer_slack_ns: Option<u64>,
    /// io_uring engine: whether its sockets were direct descriptors.
    pub uring_direct: Option<bool>,
    /// Whole-run counts per target, in `LoadConfig::targets` order.
    pub per_target: Vec<TargetCounters>,
    /// CPU and totals of this worker.
    pub report: LoadWorkerReport,
    /// The stop flag ended it.
    pub interrupted: bool,
    /// When its loop ended, ns; for an interrupted worker, when it saw the stop (before it
    /// settled what was in flight).
    pub ended_ns: u64,
    /// The HTTP side (`--http` only).
    pub http: Option<crate::http::HttpWorker>,
    /// The TLS side (`--tls` only).
    pub tls: Option<crate::tls::TlsWorker>,
}

/// A worker's state. Built on its own thread after pinning.
pub(crate) struct Worker<'a> {
    pub(crate) cfg: &'a LoadConfig,
    pub(crate) win: Window,
    pub(crate) poll: Poll,
    pub(crate) timer: TimerFd,
    pub(crate) armed_ns: u64,
    pub(crate) slab: Slab,
    pub(crate) schedule: Option<Schedule>,
    pub(crate) index: usize,
    pub(crate) domains: Vec<Domain>,
    pub(crate) targets: Vec<SockAddr>,
    pub(crate) sources_v4: Vec<SockAddr>,
    pub(crate) sources_v6: Vec<SockAddr>,
    pub(crate) per_target: Vec<TargetCounters>,
    pub(crate) rr: usize,
    pub(crate) needs_read: bool,
    pub(crate) timeout_ns: u64,
    pub(crate) late_ns: u64,
    /// When a start last found every in-flight slot busy (CLOCK_MONOTONIC ns; 0: never). Time
    /// a start spent waiting for a slot is the target's, not the generator's lag.
    pub(crate) last_full_ns: u64,
    pub(crate) total: Counters,
    pub(crate) measured: Counters,
    pub(crate) second: Counters,
    pub(crate) post_connect: Failures,
    pub(crate) handshake: Latency,
    pub(crate) service: Latency,
    pub(crate) first_byte: Latency,
    pub(crate) sec_handshake: Latency,
    pub(crate) high_ns: u64,
    /// The HTTP side (`--http`): requests, per-slot parsers, counters, histograms.
    pub(crate) http: Option<crate::http::HttpWorker>,
    /// The TLS side (`--tls`): this worker's client config (its resumption cache), per-slot
    /// connections, counters, the handshake histogram.
    pub(crate) tls: Option<crate::tls::TlsWorker>,
    /// Open loop, measured starts: actual start − scheduled start, ns (the generator's lag).
    pub(crate) lag: Latency,
    /// This thread's timer slack as read back after `set_timer_slack`, ns.
    pub(crate) timer_slack_ns: Option<u64>,
    /// The io_uring engine's ring (`None`: the epoll engine runs).
    pub(crate) uring: Option<crate::engine::uring::Ring>,
}

/// Timer slack asked for on every load worker (PR_SET_TIMERSLACK, prctl(2)), ns: the kernel
/// otherwise lets a thread's hrtimer/timerfd wake-ups run up to 50 µs late (the default slack,
/// `current->timer_slack_ns`, include/linux/sched.h) so it can group them, and that lateness is
/// the generator's lag in an open loop. 1 ns is the smallest value (0 restores the default).
pub const TIMER_SLACK_NS: u64 = 1;

/// Sets [`TIMER_SLACK_NS`] on the calling thread and reads it back (`None` when prctl fails:
/// the default slack then stays, and the report says so).
fn set_timer_slack() -> Option<u64> {
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

impl<'a> Worker<'a> {
    /// Sets up worker `index` (already pinned): poll, timerfd, slots, histograms. Its window is
    /// set by [`Worker::begin`].
    ///
    /// # Errors
    /// [`LoadError::EventLoop`] when epoll or the timerfd cannot be created or registered.
    pub(crate) fn new(
        cfg: &'a LoadConfig,
        index: usize,
        engine: crate::engine::Resolved,
    ) -> Result<Worker<'a>, LoadError> {
        let win = Window {
            start_ns: 0,
            measure_ns: 0,
            end_ns: 0,
        };
        let cpu = cfg.cpus[index];
        let poll = Poll::new().map_err(|source| LoadError::EventLoop {
            cpu,
            what: "epoll_create1",
            source,
        })?;
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .map_err(|e| LoadError::EventLoop {
            cpu,
            what: "timerfd_create",
            source: e.into(),
        })?;
        let tfd: RawFd = timer.as_fd_raw();
        poll.registry()
            .register(&mut SourceFd(&tfd), TIMER, Interest::READABLE)
            .map_err(|source| LoadError::EventLoop {
                cpu,
                what: "epoll_ctl(timerfd)",
                source,
            })?;
        let timeout_ns = cfg.connect_timeout.as_nanos().min(u128::from(u64::MAX / 4)) as u64;
        // Handshake latency counts from the intended start: up to the drop limit (one timeout) of
        // waiting plus one timeout of handshake; first byte adds the read phase.
        let high_ns = timeout_ns.saturating_mul(3).saturating_add(SEC);
        let uring = match engine {
            crate::engine::Resolved::Uring(f) => Some(crate::engine::uring::Ring::new(
                cfg,
                &f,
                cfg.slots_for(index),
                cpu,
                timeout_ns,
            )?),
            crate::engine::Resolved::Epoll => None,
        };
        Ok(Worker {
            uring,
            cfg,
            win,
            poll,
            timer,
            armed_ns: 0,
            slab: Slab::new(cfg.slots_for(index)),
            schedule: None,
            index,
            domains: cfg
                .targets
                .iter()
                .map(|&t| Domain::for_address(t))
                .collect(),
            targets: cfg.targets.iter().map(|&t| SockAddr::from(t)).collect(),
            sources_v4: sources(cfg, true),
            sources_v6: sources(cfg, false),
            per_target: vec![TargetCounters::default(); cfg.targets.len()],
            rr: index,
            needs_read: cfg.reads_after_handshake(),
            timeout_ns,
            late_ns: cfg.late_threshold.as_nanos().min(u128::from(u64::MAX)) as u64,
            last_full_ns: 0,
            total: Counters::default(),
            measured: Counters::default(),
            second: Counters::default(),
            post_connect: Failures::default(),
            handshake: Latency::new(high_ns),
            service: Latency::new(high_ns),
            first_byte: Latency::new(high_ns),
            sec_handshake: Latency::new(high_ns),
            high_ns,
            lag: Latency::new(high_ns),
            timer_slack_ns: set_timer_slack(),
            http: cfg.http.as_ref().map(|r| {
                crate::http::HttpWorker::new(r, &cfg.targets, cfg.slots_for(index), high_ns)
            }),
            tls: cfg
                .tls
                .as_ref()
                .map(|o| crate::tls::TlsWorker::new(o, cfg.slots_for(index), high_ns))
                .transpose()
                .map_err(LoadError::Config)?,
        })
    }

    /// Sets the run's window (common to all workers) and this worker's share of the schedule.
    pub(crate) fn begin(&mut self, win: Window) {
        self.win = win;
        self.schedule = match self.cfg.pattern {
            Pattern::Open {
                rate_per_sec,
                arrival,
            } => Some(Schedule::new(
                arrival,
                rate_per_sec,
                self.index,
                self.cfg.workers(),
                win.start_ns,
                win.end_ns,
                POISSON_SEED,
            )),
            Pattern::Closed { .. } => None,
        };
    }

    /// Runs the loop until the end of the window and the drain, or until `stop` turns true.
    /// Sends one [`Second`] per second of the run to `tx`.
    pub(crate) fn run(mut self, stop: &AtomicBool, tx: &Sender<Second>) -> WorkerResult {
        let cpu0 = ThreadCpu::now();
        let wall0 = now_ns();
        let mut events = Events::with_capacity(1024);
        let mut next_tick = self.win.origin_ns() + SEC;
        let mut interrupted = false;
        let mut rest_dropped = false;
        // Every turn checks the stop flag and does bounded work: at most the events capacity,
        // START_BUDGET starts, EXPIRE_BUDGET expiries, and O(1) for any number of dropped
        // starts (counted by arithmetic, Schedule::skip_before).
        // One turn: flush finished seconds; wait (timerfd / zero timeout) and handle readiness
        // events; then expire deadlines; then start due attempts. Events come before timeouts, so
        // a completion that is already reported is never taken for a timeout, and every step is
        // bounded (START_BUDGET, EXPIRE_BUDGET, the events capacity), so even a worker that cannot
        // keep up gets back here, and sends each second, within milliseconds.
        loop {
            let now = now_ns();
            if stop.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            while now >= next_tick {
                self.flush_second(next_tick, next_tick, tx);
                next_tick += SEC;
            }
            let draining = now >= self.win.end_ns;
            if !rest_dropped && now >= self.win.end_ns.saturating_add(self.max_lag_ns()) {
                // Intended starts the worker never reached (it was behind) are dropped, counted.
                self.drop_rest();
                rest_dropped = true;
            }
            if draining && self.slab.in_flight() == 0 && !self.starts_pending() {
                break;
            }
            // Never asleep longer than STOP_CHECK_NS: a stop (Ctrl-C) is seen within it even
            // when every slot is held and nothing else is due before the next second.
            let target = self
                .next_wake(next_tick, draining)
                .min(now.saturating_add(STOP_CHECK_NS));
            if self.uring.is_some() {
                self.uring_wait(target, now);
                let now = now_ns();
                while now >= next_tick {
                    self.flush_second(next_tick, next_tick, tx);
                    next_tick += SEC;
                }
                if now < self.win.end_ns || (!rest_dropped && self.starts_pending()) {
                    self.start_due(now);
                }
                continue;
            }
            let timeout = if target <= now + self.cfg.pacing.spin_ns {
                Some(std::time::Duration::ZERO)
            } else {
                self.arm(target, now);
                None
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                // epoll_wait only fails with EINTR, or EBADF/EFAULT/EINVAL (bugs).
                panic!("epoll_wait failed: {e}");
            }
            let t = now_ns();
            for ev in events.iter() {
                if ev.token() == TIMER {
                    self.armed_ns = 0;
                } else {
                    self.on_event(ev.token().0, ev, t);
                }
            }
            let now = now_ns();
            // A second that ended while waiting is sent before this turn's starts are counted,
            // so each start lands in the second it was made in.
            while now >= next_tick {
                self.flush_second(next_tick, next_tick, tx);
                next_tick += SEC;
            }
            self.expire(now);
            if now < self.win.end_ns || (!rest_dropped && self.starts_pending()) {
                // The open-loop schedule holds only starts before the end of the window; after
                // the end those still due are made late, within the grace. A closed loop starts
                // nothing after the end.
                self.start_due(now);
            }
        }
        // An interrupted run's measured time ends when the stop was seen, not when the attempts
        // in flight have been settled (the io_uring stop waits up to 1 s for its cancels).
        let mut stop_seen_ns = None;
        if interrupted {
            // Starts that fell due before the stop and were never made are dropped (so offered
            // = attempts + dropped still holds); those not yet due were never offered. Those
            // still waiting for a slot (every slot busy now or within the lag bound: a start
            // due longer ago without a busy slot was dropped as lag already) waited for the
            // target, not for the generator: full-slot drops, as `drop_rest` counts them.
            let now = now_ns();
            stop_seen_ns = Some(now);
            let full = self.slots_busy_since(now.saturating_sub(self.max_lag_ns()));
            self.drop_before(now.saturating_add(1), full);
            self.abandon_all(now);
        }
        if let Some(r) = self.uring.as_mut() {
            r.flush();
        }
        let ended = stop_seen_ns.unwrap_or_else(now_ns);
        self.flush_second(next_tick, if interrupted { ended } else { next_tick }, tx);
        let used = ThreadCpu::now().since(&cpu0);
        WorkerResult {
            report: LoadWorkerReport {
                cpu: 0,
                attempts: self.total.attempts,
                successes: self.total.successes,
                failures: self.total.failures.total(),
                cpu_user_ns: used.user_ns,
                cpu_sys_ns: used.sys_ns,
                cpu_run_ns: used.run_ns,
                wall_ns: ended.saturating_sub(wall0),
            },
            total: self.total,
            measured: self.measured,
            post_connect: self.post_connect,
            handshake: self.handshake,
            service: self.service,
            first_byte: self.first_byte,
            lag: self.lag,
            timer_slack_ns: self.timer_slack_ns,
            uring_direct: self.uring.as_ref().map(|r| r.direct()),
            per_target: self.per_target,
            interrupted,
            ended_ns: ended,
            http: self.http,
            tls: self.tls,
        }
    }

    /// The earliest of: the next second tick, the end of the window, the next intended start (when
    /// a slot is free), the start of a closed loop, the oldest in-flight deadline.
    fn next_wake(&mut self, next_tick: u64, draining: bool) -> u64 {
        let mut target = next_tick;
        if draining {
            if self.starts_pending() {
                let grace_end = self.win.end_ns.saturating_add(self.max_lag_ns());
                target = target.min(grace_end);
                if !self.slab.is_full() {
                    target = target.min(self.win.end_ns);
                }
            }
        } else {
            target = target.min(self.win.end_ns);
            match &self.schedule {
                Some(s) if !self.slab.is_full() => {
                    if let Some(t) = s.peek() {
                        target = target.min(t);
                    }
                }
                // Closed loop: a free slot means start now (or at the start of the run).
                None if !self.slab.is_full() => target = target.min(self.win.start_ns),
                _ => {}
            }
        }
        // The io_uring engine's connects end by the kernel's link timeout.
        if let (Some(i), None) = (self.slab.oldest(), &self.uring) {
            target = target.min(self.slab.get(i).deadline_ns);
        }
        target
    }

    /// Whether the open-loop schedule still holds intended starts (all before the end).
    fn starts_pending(&self) -> bool {
        self.schedule.as_ref().is_some_and(|s| s.peek().is_some())
    }

    /// Arms the timerfd at `target` unless an armed, still pending expiry is already at or before it.
    fn arm(&mut self, target: u64, now: u64) {
        if self.armed_ns != 0 && self.armed_ns > now && self.armed_ns <= target {
            return;
        }
        let ts = TimeSpec::new((target / SEC) as i64, (target % SEC) as i64);
        // timerfd_settime only fails for a bad fd or a bad timespec; neither can happen here.
        self.timer
            .set(
                Expiration::OneShot(ts),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            )
            .expect("timerfd_settime");
        self.armed_ns = target;
    }

    /// Sends the second ending at `tick_end`; its counts reach up to `until_ns` (`tick_end`, or
    /// the stop time when a signal ended the run within the second).
    fn flush_second(&mut self, tick_end: u64, until_ns: u64, tx: &Sender<Second>) {
        let t_secs = (tick_end - SEC).saturating_sub(self.win.origin_ns()) / SEC;
        let counters = std::mem::take(&mut self.second);
        let fresh = Latency::new(self.high_ns);
        let handshake = std::mem::replace(&mut self.sec_handshake, fresh);
        // The receiver lives until every worker has ended; a send error cannot happen.
        let _ = tx.send(Second {
            worker: self.index,
            t_secs,
            counters,
            handshake,
            until_ns,
        });
    }
}

/// The config's sources of one family as socket addresses with port 0.
fn sources(cfg: &LoadConfig, v4: bool) -> Vec<SockAddr> {
    cfg.sources
        .iter()
        .filter(|ip| ip.is_ipv4() == v4)
        .map(|&ip| SockAddr::from(std::net::SocketAddr::new(ip, 0)))
        .collect()
}

trait RawTimer {
    fn as_fd_raw(&self) -> RawFd;
}

impl RawTimer for TimerFd {
    fn as_fd_raw(&self) -> RawFd {
        std::os::fd::AsFd::as_fd(self).as_raw_fd()
    }
}
