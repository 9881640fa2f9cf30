//! [`run`]: start the workers together, merge their seconds into the timeline, merge their
//! results into the report.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::{Condvar, Mutex};

use crate::affinity::pin;
use crate::clock::now_ns;
use crate::config::{LoadConfig, Pattern};
use crate::core::{row_origin_ns, Counters, Second, TargetCounters};
use crate::error::LoadError;
use crate::failures::Failures;
use crate::latency::Latency;
use crate::report::{LoadReport, TargetReport, TimelineRow, Totals, WorkerSecond};
use crate::worker::{Launch, WorkerResult};

const SEC: u64 = 1_000_000_000;
/// Time between "every worker is ready" and the common start, ns: lets every worker reach its
/// loop before the first intended start.
const START_DELAY_NS: u64 = 5_000_000;

/// Runs a load and returns its report.
///
/// Workers start together at a common CLOCK_MONOTONIC instant, run `warmup + duration`, then
/// drain: no new attempt starts, and the attempts in flight end by their own deadlines (at most
/// one `connect_timeout` per phase), so that every attempt is either a success or a failure and
/// the totals match the kernel's counters exactly. `on_second` is called on the calling thread
/// with each second of the run (warm-up included) once every worker has reported it; seconds at
/// the end (drain, uneven worker ends) arrive after the workers end. When `stop` turns true the
/// workers stop within one loop turn (milliseconds even when overloaded: every turn does
/// bounded work and checks the flag), settle what is in flight (see `Totals::abandoned`) and
/// the report is marked `interrupted`. A run therefore ends by warm-up + duration + one
/// connect timeout (+ the read phase's timeout with `expect_bytes` or `--close server`), or
/// shortly after `stop`.
///
/// Never installs signal handlers or changes rlimits (see [`crate::rlimit`]).
///
/// # Errors
/// [`LoadError::Config`] for an invalid config; [`LoadError::Pin`], [`LoadError::EventLoop`],
/// [`LoadError::Spawn`] when a worker cannot be set up (then no attempt is made); and
/// [`LoadError::WorkerPanicked`].
pub fn run(
    cfg: &LoadConfig,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(&TimelineRow),
) -> Result<LoadReport, LoadError> {
    run_at(cfg, None, stop, on_second).map(|(report, _)| report)
}

/// [`run`] with the schedule (warm-up included) starting at the wall-clock instant `start_at`
/// instead of as soon as the workers are ready, so that generators on several hosts start
/// together (`load --start-at`); also returns when the schedule really started, on the wall
/// clock.
///
/// `start_at` is converted to CLOCK_MONOTONIC once, when every worker is ready (wall clock and
/// monotonic clock read back to back), so a wall-clock step after that does not move the
/// schedule. An instant that has passed by then (set-up took longer than the lead time) starts
/// the schedule at once, like `None`: the returned real start then says how late it was. Workers
/// wait for the start in their event loop; a `stop` during the wait is seen only at the start
/// (callers wait out long leads themselves, checking `stop`).
///
/// # Errors
/// As [`run`].
pub fn run_at(
    cfg: &LoadConfig,
    start_at: Option<std::time::SystemTime>,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(&TimelineRow),
) -> Result<(LoadReport, std::time::SystemTime), LoadError> {
    cfg.validate()?;
    let (slice_state, slices) = crate::ports::resolve(cfg, std::path::Path::new("/proc"));
    let (engine, engine_ran) = crate::engine::resolve(cfg, slices.is_some())?;
    let n = cfg.workers();
    let worker_cpus = cfg.worker_cpus();
    let (tx, rx) = mpsc::channel::<Second>();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), LoadError>>();
    // `Some(0)` = abort, `Some(t)` = start at t.
    let go: (Mutex<Option<u64>>, Condvar) = (Mutex::new(None), Condvar::new());
    let warmup_ns = dur_ns(cfg.warmup);
    let duration_ns = dur_ns(cfg.duration);

    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        let mut spawn_error = None;
        for (index, &cpu) in worker_cpus.iter().enumerate() {
            let slice = slices.as_ref().map(|s| s[index]);
            let launch = Launch {
                cfg,
                index,
                ready: ready_tx.clone(),
                go: &go,
                warmup_ns,
                duration_ns,
                stop,
                seconds: tx.clone(),
            };
            let spawned = std::thread::Builder::new()
                .name(format!("load-cpu{cpu}"))
                .spawn_scoped(scope, move || {
                    if let Err(e) = pin(cpu) {
                        let _ = launch.ready.send(Err(e));
                        return None;
                    }
                    crate::engine::with_engine(engine, cfg, index, slice, launch)
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(source) => {
                    spawn_error = Some(LoadError::Spawn { cpu, source });
                    break;
                }
            }
        }
        drop(tx);
        drop(ready_tx);
        let mut first_error = spawn_error;
        for _ in 0..handles.len() {
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(_) => break,
            }
        }
        let (wall_now, mono_now) = (std::time::SystemTime::now(), now_ns());
        let lead_ns = start_at
            .and_then(|t| t.duration_since(wall_now).ok())
            .map_or(0, dur_ns);
        let start_ns = if first_error.is_some() {
            0
        } else {
            mono_now + lead_ns.max(START_DELAY_NS)
        };
        let real_start =
            wall_now + std::time::Duration::from_nanos(start_ns.saturating_sub(mono_now));
        *go.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(start_ns);
        go.1.notify_all();

        let mut timeline = Vec::new();
        let mut merger = SecondMerger::new(
            &worker_cpus,
            start_ns,
            start_ns + warmup_ns,
            start_ns + warmup_ns + duration_ns,
        );
        for second in rx {
            merger.add(second, &mut |row| {
                on_second(&row);
                timeline.push(row);
            });
        }
        merger.finish(&mut |row| {
            on_second(&row);
            timeline.push(row);
        });

        let mut results = Vec::with_capacity(n);
        for (index, (h, &cpu)) in handles.into_iter().zip(&worker_cpus).enumerate() {
            match h.join() {
                Ok(Some(mut r)) => {
                    r.report.cpu = cpu;
                    r.report.port_slice = slices.as_ref().map(|s| s[index]);
                    results.push(r);
                }
                Ok(None) => {}
                Err(_) => {
                    first_error.get_or_insert(LoadError::WorkerPanicked { cpu });
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let direct = results.iter().all(|r| r.uring_direct != Some(false));
        let mut report = assemble(cfg, start_ns + warmup_ns, duration_ns, results, timeline);
        report.engine = Some(engine_ran.with_direct(direct));
        report.port_slices = Some(slice_state);
        Ok((report, real_start))
    })
}

/// The report of a run interrupted before its schedule started (while waiting for a
/// `start_at`): nothing attempted, nothing measured (0 s), `interrupted` set; the offered rate is
/// the configuration's. No worker is started.
pub fn never_started(cfg: &LoadConfig) -> LoadReport {
    let mut r = assemble(cfg, 0, 0, Vec::new(), Vec::new());
    r.interrupted = true;
    r
}

fn dur_ns(d: std::time::Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX / 4)) as u64
}

/// Merges the workers' results.
fn assemble(
    cfg: &LoadConfig,
    measure_ns: u64,
    duration_ns: u64,
    results: Vec<WorkerResult>,
    timeline: Vec<TimelineRow>,
) -> LoadReport {
    let mut total = Counters::default();
    let mut measured = Counters::default();
    let mut post = Failures::default();
    let mut handshake: Option<Latency> = None;
    let mut service: Option<Latency> = None;
    let mut first_byte: Option<Latency> = None;
    let mut lag: Option<Latency> = None;
    let mut timer_slack_ns = None;
    let mut http: Option<crate::http::Exchanges> = None;
    let mut tls: Option<crate::tls::Sessions> = None;
    let mut stamps: Option<common::acceptwait::Stamps> = None;
    let mut per_target = vec![TargetCounters::default(); cfg.targets.len()];
    let interrupted = results.iter().any(|r| r.interrupted);
    let ended = results
        .iter()
        .map(|r| r.ended_ns)
        .max()
        .unwrap_or(measure_ns);
    let mut workers = Vec::with_capacity(results.len());
    for r in results {
        total.add(&r.total);
        measured.add(&r.measured);
        post.add(&r.post_connect);
        merge(&mut handshake, r.handshake);
        merge(&mut service, r.service);
        merge(&mut first_byte, r.first_byte);
        merge(&mut lag, r.lag);
        // The largest slack any worker ran with (all ask for the same).
        timer_slack_ns = timer_slack_ns.max(r.timer_slack_ns);
        match (&mut http, r.http) {
            (Some(acc), Some(h)) => acc.add(&h),
            (acc @ None, h) => *acc = h,
            (Some(_), None) => {}
        }
        match (&mut tls, r.tls) {
            (Some(acc), Some(t)) => acc.add(&t),
            (acc @ None, t) => *acc = t,
            (Some(_), None) => {}
        }
        match (&mut stamps, r.stamps) {
            (Some(acc), Some(s)) => acc.append(s),
            (acc @ None, s) => *acc = s,
            (Some(_), None) => {}
        }
        for (acc, t) in per_target.iter_mut().zip(&r.per_target) {
            acc.add(t);
        }
        workers.push(r.report);
    }
    let measured_ns = if interrupted {
        ended
            .min(measure_ns + duration_ns)
            .saturating_sub(measure_ns)
    } else {
        duration_ns
    };
    let measured_secs = measured_ns as f64 / 1e9;
    let empty = || Latency::new(2);
    let handshake = handshake.unwrap_or_else(empty);
    let service = service.unwrap_or_else(empty);
    let first_byte = cfg.expect_bytes.map(|_| first_byte.unwrap_or_else(empty));
    let generator_lag = matches!(cfg.pattern, Pattern::Open { .. }).then(|| {
        let l = lag.unwrap_or_else(empty);
        crate::report::GeneratorLag {
            overflow: l.overflow(),
            hist: l.hist,
            timer_slack_ns,
            pacing: cfg.pacing,
        }
    });
    LoadReport {
        close: cfg.close,
        pattern: cfg.pattern,
        measured_secs,
        offered_per_sec: match cfg.pattern {
            Pattern::Open { rate_per_sec, .. } => Some(rate_per_sec),
            Pattern::Closed { .. } => None,
        },
        achieved_per_sec: if measured_secs > 0.0 {
            measured.successes as f64 / measured_secs
        } else {
            0.0
        },
        offered: measured.offered,
        attempts: measured.attempts,
        successes: measured.successes,
        failures: measured.failures_map(),
        post_connect_failures: post.to_map(),
        completed_after_timeout: measured.completed_late,
        late: measured.late,
        dropped: measured.dropped,
        dropped_in_flight_full: measured.dropped_full,
        abandoned: measured.abandoned,
        total: Totals {
            attempts: total.attempts,
            successes: total.successes,
            failures: total.failures_map(),
            handshakes: total.handshakes,
            late: total.late,
            dropped: total.dropped,
            abandoned: total.abandoned,
            completed_after_timeout: total.completed_late,
        },
        handshake_overflow: handshake.overflow(),
        service_overflow: service.overflow(),
        first_byte_overflow: first_byte.as_ref().map(Latency::overflow),
        handshake: handshake.hist,
        service: service.hist,
        first_byte: first_byte.map(|l| l.hist),
        generator_lag,
        per_target: cfg
            .targets
            .iter()
            .zip(per_target)
            .map(|(&target, c)| TargetReport {
                target,
                attempts: c.attempts,
                successes: c.successes,
                failures: c.failures_map(),
                abandoned: c.abandoned,
            })
            .collect(),
        timeline,
        workers,
        workers_successes_never_accepted: 0,
        workers_measured_successes_never_accepted: 0,
        interrupted,
        http: cfg
            .http
            .as_ref()
            .zip(http)
            .map(|(req, h)| crate::http::HttpReport::of(req, h)),
        tls: cfg
            .tls
            .as_ref()
            .zip(tls)
            .map(|(o, t)| crate::tls::TlsReport::of(o, t)),
        engine: None,
        accept_stamps: stamps.map(|stamps| crate::report::ClientStamps {
            stamps,
            measured_from_ns: measure_ns,
        }),
        port_slices: None,
    }
}

fn merge(into: &mut Option<Latency>, h: Latency) {
    match into {
        // Same bounds on every worker: add cannot fail.
        Some(acc) => acc.add(&h),
        None => *into = Some(h),
    }
}

/// One second being collected: how many workers sent it, their merged counts and handshakes,
/// the latest `until_ns`, and each worker's counts.
type Pending = (usize, Counters, Latency, u64, Vec<WorkerSecond>);

/// Collects the workers' seconds and emits each second, in order, once all workers sent it.
struct SecondMerger {
    workers: usize,
    cpus: Vec<usize>,
    start_ns: u64,
    /// Where rows begin ([`row_origin_ns`]): row `t` is
    /// `[origin_ns + t s, origin_ns + (t+1) s)` within the run.
    origin_ns: u64,
    measure_ns: u64,
    end_ns: u64,
    pending: BTreeMap<u64, Pending>,
}

impl SecondMerger {
    fn new(cpus: &[usize], start_ns: u64, measure_ns: u64, end_ns: u64) -> SecondMerger {
        SecondMerger {
            workers: cpus.len(),
            cpus: cpus.to_vec(),
            start_ns,
            origin_ns: row_origin_ns(start_ns, measure_ns),
            measure_ns,
            end_ns,
            pending: BTreeMap::new(),
        }
    }

    fn add(&mut self, s: Second, emit: &mut dyn FnMut(TimelineRow)) {
        let complete = {
            let cpus = &self.cpus;
            let e = self.pending.entry(s.t_secs).or_insert_with(|| {
                let per_worker = cpus
                    .iter()
                    .map(|&cpu| WorkerSecond {
                        cpu,
                        ..WorkerSecond::default()
                    })
                    .collect();
                (0, Counters::default(), s.handshake.clone(), 0, per_worker)
            });
            if e.0 > 0 {
                e.2.add(&s.handshake);
            }
            e.0 += 1;
            e.1.add(&s.counters);
            e.3 = e.3.max(s.until_ns);
            if let Some(w) = e.4.get_mut(s.worker) {
                let c = &s.counters;
                w.attempts += c.attempts;
                w.successes += c.successes;
                w.failures += c.failures.total();
                w.abandoned += c.abandoned;
                w.dropped += c.dropped;
            }
            e.0 == self.workers
        };
        if complete {
            // Seconds complete in order (each worker sends its seconds in order).
            while let Some((&t, _)) = self.pending.first_key_value() {
                if self.pending[&t].0 < self.workers {
                    break;
                }
                let (_, c, h, until, w) = self.pending.remove(&t).expect("present");
                self.emit(t, &c, &h, until, w, emit);
            }
        }
    }

    fn finish(&mut self, emit: &mut dyn FnMut(TimelineRow)) {
        for (t, (_, c, h, until, w)) in std::mem::take(&mut self.pending) {
            self.emit(t, &c, &h, until, w, emit);
        }
    }

    /// Emits a row, except a drain second after the end in which nothing happened.
    /// `until`: the latest time any worker's counts for this second reach (see [`Second`]).
    fn emit(
        &self,
        t: u64,
        c: &Counters,
        h: &Latency,
        until: u64,
        workers: Vec<WorkerSecond>,
        emit: &mut dyn FnMut(TimelineRow),
    ) {
        let idle = c.attempts + c.successes + c.failures_total() + c.dropped + c.abandoned == 0;
        if idle && self.origin_ns + t * SEC >= self.end_ns {
            return;
        }
        emit(self.row(t, c, h, until, workers));
    }

    fn row(
        &self,
        t: u64,
        c: &Counters,
        l: &Latency,
        until: u64,
        workers: Vec<WorkerSecond>,
    ) -> TimelineRow {
        let h = &l.hist;
        let q = |p: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_percentile(p)
            }
        };
        let second_start = self.origin_ns.saturating_add(t.saturating_mul(SEC));
        // The first row starts with the run (a warm-up that is not whole seconds makes it
        // partial); a row ends at the end of the window, or earlier when a signal stopped the run
        // in it.
        let row_start = second_start.max(self.start_ns);
        let length_secs = self
            .end_ns
            .min(until.max(row_start))
            .min(second_start + SEC)
            .saturating_sub(row_start) as f64
            / 1e9;
        TimelineRow {
            t_secs: t,
            warmup: second_start < self.measure_ns,
            offered: c.offered,
            attempts: c.attempts,
            successes: c.successes,
            failures: c.failures_total(),
            failures_by_cause: c.failures_map(),
            late: c.late,
            dropped: c.dropped,
            p50_ns: q(50.0),
            p99_ns: q(99.0),
            max_ns: l.max_ns,
            length_secs,
            handshake: Some(crate::report::SecondHistogram::of(h)),
            workers,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t_secs: u64, until_ns: u64) -> Second {
        Second {
            worker: 0,
            t_secs,
            counters: Counters::default(),
            handshake: Latency::new(SEC),
            until_ns,
        }
    }

    /// A 0.2 s warm-up and a 0.8 s measured part: the measured part is one row of its own,
    /// partial, not a warm-up row it shares with the warm-up.
    #[test]
    fn rows_begin_with_the_measured_part() {
        let (start, measure, end) = (10 * SEC, 10 * SEC + SEC / 5, 11 * SEC);
        assert_eq!(row_origin_ns(start, measure), 9 * SEC + SEC / 5);
        assert_eq!(row_origin_ns(start, start + SEC), start);
        assert_eq!(row_origin_ns(start, start), start);
        let mut m = SecondMerger::new(&[0], start, measure, end);
        let mut rows = Vec::new();
        m.add(second(0, measure), &mut |r| rows.push(r));
        m.add(second(1, measure + SEC), &mut |r| rows.push(r));
        m.finish(&mut |r| rows.push(r));
        let got: Vec<(u64, bool, f64)> = rows
            .iter()
            .map(|r| (r.t_secs, r.warmup, (r.length_secs * 1e3).round() / 1e3))
            .collect();
        assert_eq!(got, [(0, true, 0.2), (1, false, 0.8)]);
        assert!(rows.iter().all(TimelineRow::is_partial));
    }
}
