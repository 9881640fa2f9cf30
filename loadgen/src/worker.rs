//! One pinned load worker's loop ([`Worker`]): a core (`crate::core`: its schedule, slots,
//! tallies) and an engine (`crate::engine`, generic: epoll or io_uring, statically dispatched).
//!
//! # One turn
//! Check the stop flag; send the seconds that ended; drop the starts the worker never reached
//! (after the window); wait on the engine until the next thing due (the next second, the end
//! of the window, the next intended start when a slot is free; never longer than
//! [`STOP_CHECK_NS`]) and let it handle what happened; send the seconds that ended while it
//! waited, so each start lands in the second it was made in; let the engine end what passed its
//! deadline; start what is due. Every step is bounded (the engine's events and reads per turn,
//! `START_BUDGET` starts, the expiries per turn, and O(1) for any number of dropped starts:
//! `Schedule::skip_before`), so even a worker that cannot keep up gets back to its stop check
//! and its seconds within milliseconds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Condvar, Mutex};

use common::threadcpu::ThreadCpu;

use crate::affinity::set_timer_slack;
use crate::clock::now_ns;
use crate::config::{LoadConfig, Pattern};
use crate::core::{Core, Counters, Second, TargetCounters, Window};
use crate::engine::{Engine, WithEngine};
use crate::error::LoadError;
use crate::failures::Failures;
use crate::latency::Latency;
use crate::report::LoadWorkerReport;

const SEC: u64 = 1_000_000_000;
/// The longest a worker sleeps without looking at the stop flag, ns (50 ms): the bound on how
/// late an interrupt is seen, and so on how far past the stop the measured window can reach.
const STOP_CHECK_NS: u64 = 50_000_000;

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
    pub http: Option<crate::http::Exchanges>,
    /// The TLS side (`--tls` only).
    pub tls: Option<crate::tls::Sessions>,
    /// The accept-queue wait's client stamps (`LoadConfig::accept_stamps`, epoll only).
    pub stamps: Option<common::acceptwait::Stamps>,
}

/// A worker: its core and its engine. Built on its own thread after pinning.
pub(crate) struct Worker<'a, E: Engine> {
    core: Core<'a>,
    engine: E,
    /// This thread's timer slack as read back after `set_timer_slack`, ns.
    timer_slack_ns: Option<u64>,
    /// The spin it runs with, ns (`--spin`, or what `--spin auto` measured).
    spin_ns: u64,
    /// The CPU this thread was pinned to once its engine and core had made their per-worker
    /// memory ([`common::numa::pinned_cpu`]; `None`: not pinned to one CPU then).
    alloc_cpu: Option<usize>,
}

impl<'a, E: Engine> Worker<'a, E> {
    /// Worker `index` of `cfg` on `engine` (on its pinned thread: sets its timer slack).
    ///
    /// # Errors
    /// [`LoadError::Config`] when the TLS client configuration cannot be made.
    fn new(
        cfg: &'a LoadConfig,
        index: usize,
        engine: E,
        stop: &AtomicBool,
    ) -> Result<Worker<'a, E>, LoadError> {
        // The engine (its ring or poll, slot tables, receive buffers, stamp buffer) was made on
        // this thread after `crate::affinity::pin`, and so is the core (its slots, schedule,
        // histograms): first touch puts them on this CPU's node (docs/engines.md, "Per-worker
        // memory").
        let core = Core::new(cfg, index)?;
        let timer_slack_ns = set_timer_slack();
        let mut engine = engine;
        // `--spin auto`: this CPU's wake-up latency, measured now (after the timer slack is
        // set, before the common start). A closed loop starts without waiting: no spin. A CPU
        // shared with other load workers keeps the default (`Pacing::spin_auto`).
        let spin_ns = if cfg.pacing.spin_auto
            && matches!(cfg.pattern, Pattern::Open { .. })
            && cfg.workers_on_cpu_of(index) == 1
        {
            let ns = crate::affinity::auto_spin(stop);
            engine.set_spin_ns(ns);
            ns
        } else {
            cfg.pacing.spin_ns
        };
        Ok(Worker {
            core,
            engine,
            timer_slack_ns,
            spin_ns,
            alloc_cpu: common::numa::pinned_cpu(),
        })
    }

    /// Runs the loop from the start of `win` until the end of the window and the drain, or
    /// until `stop` turns true. Sends one [`Second`] per second of the run to `tx`.
    fn run(mut self, win: Window, stop: &AtomicBool, tx: &Sender<Second>) -> WorkerResult {
        self.core.begin(win);
        let cpu0 = ThreadCpu::now();
        let wall0 = now_ns();
        let mut next_tick = win.origin_ns() + SEC;
        let mut interrupted = false;
        let mut rest_dropped = false;
        loop {
            let now = now_ns();
            if stop.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            self.flush_seconds(now, &mut next_tick, tx);
            let draining = now >= win.end_ns;
            if !rest_dropped && now >= win.end_ns.saturating_add(self.core.max_lag_ns()) {
                // Intended starts the worker never reached (it was behind) are dropped, counted.
                self.core.drop_rest();
                rest_dropped = true;
            }
            if draining && self.core.in_flight() == 0 && !self.core.starts_pending() {
                break;
            }
            // Never asleep longer than STOP_CHECK_NS: a stop (Ctrl-C) is seen within it even
            // when every slot is held and nothing else is due before the next second.
            let target = self
                .core
                .next_wake(next_tick, draining)
                .min(now.saturating_add(STOP_CHECK_NS));
            self.engine.wait(&mut self.core, target, now);
            let now = now_ns();
            // A second that ended while waiting is sent before this turn's starts are counted,
            // so each start lands in the second it was made in.
            self.flush_seconds(now, &mut next_tick, tx);
            self.engine.expire(&mut self.core, now);
            if now < win.end_ns || (!rest_dropped && self.core.starts_pending()) {
                // The open-loop schedule holds only starts before the end of the window; after
                // the end those still due are made late, within the grace. A closed loop starts
                // nothing after the end.
                self.core.start_due(now, &mut self.engine);
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
            let full = self
                .core
                .slots_busy_since(now.saturating_sub(self.core.max_lag_ns()));
            self.core.drop_before(now.saturating_add(1), full);
            self.engine.stop(&mut self.core, now);
        }
        self.engine.flush();
        let ended = stop_seen_ns.unwrap_or_else(now_ns);
        let last = self
            .core
            .second(next_tick, if interrupted { ended } else { next_tick });
        // The receiver lives until every worker has ended; a send error cannot happen.
        let _ = tx.send(last);
        let used = ThreadCpu::now().since(&cpu0);
        let uring_direct = self.engine.direct();
        let stamps = self.engine.take_stamps();
        let total = self.core.total().clone();
        let (tally, http, tls) = self.core.into_parts();
        WorkerResult {
            report: LoadWorkerReport {
                cpu: 0,
                attempts: total.attempts,
                successes: total.successes,
                failures: total.failures.total(),
                measured_attempts: tally.measured.attempts,
                measured_successes: tally.measured.successes,
                measured_failures: tally.measured.failures_map().values().sum(),
                cpu_user_ns: used.user_ns,
                cpu_sys_ns: used.sys_ns,
                cpu_run_ns: used.run_ns,
                wall_ns: ended.saturating_sub(wall0),
                port_slice: None,
                alloc_cpu: self.alloc_cpu,
                spin_ns: self.spin_ns,
                spun_ns: self.engine.spun_ns(),
            },
            total: tally.total,
            measured: tally.measured,
            post_connect: tally.post_connect,
            handshake: tally.handshake,
            service: tally.service,
            first_byte: tally.first_byte,
            lag: tally.lag,
            timer_slack_ns: self.timer_slack_ns,
            uring_direct,
            per_target: tally.per_target,
            interrupted,
            ended_ns: ended,
            http,
            tls,
            stamps,
        }
    }

    /// Sends every second that ended by `now` (the one ending at `*next_tick` first).
    fn flush_seconds(&mut self, now: u64, next_tick: &mut u64, tx: &Sender<Second>) {
        while now >= *next_tick {
            // The receiver lives until every worker has ended; a send error cannot happen.
            let _ = tx.send(self.core.second(*next_tick, *next_tick));
            *next_tick += SEC;
        }
    }
}

/// One worker's life on its (pinned) thread, for whichever engine the run resolved
/// (`crate::engine::with_engine` makes the engine and hands it here): set up, say it is ready,
/// wait for the common start, run.
pub(crate) struct Launch<'a, 's> {
    pub cfg: &'a LoadConfig,
    pub index: usize,
    /// Told `Ok` once the worker is set up, or why it could not be.
    pub ready: Sender<Result<(), LoadError>>,
    /// The common start (CLOCK_MONOTONIC ns; 0: abort), set once every worker is ready.
    pub go: &'s (Mutex<Option<u64>>, Condvar),
    pub warmup_ns: u64,
    pub duration_ns: u64,
    pub stop: &'s AtomicBool,
    pub seconds: Sender<Second>,
}

impl WithEngine for Launch<'_, '_> {
    type Out = Option<WorkerResult>;

    fn with<E: Engine>(self, engine: Result<E, LoadError>) -> Option<WorkerResult> {
        let worker = engine.and_then(|e| Worker::new(self.cfg, self.index, e, self.stop));
        let worker = match worker {
            Ok(w) => {
                let _ = self.ready.send(Ok(()));
                w
            }
            Err(e) => {
                let _ = self.ready.send(Err(e));
                return None;
            }
        };
        let start_ns = wait_go(self.go)?;
        let win = Window {
            start_ns,
            measure_ns: start_ns + self.warmup_ns,
            end_ns: start_ns + self.warmup_ns + self.duration_ns,
        };
        Some(worker.run(win, self.stop, &self.seconds))
    }
}

fn wait_go(go: &(Mutex<Option<u64>>, Condvar)) -> Option<u64> {
    let mut g = go.0.lock().unwrap_or_else(|p| p.into_inner());
    while g.is_none() {
        g = go.1.wait(g).unwrap_or_else(|p| p.into_inner());
    }
    g.filter(|&t| t != 0)
}
