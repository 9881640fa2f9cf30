//! Integration tests of the load generator against small servers, in fresh network namespaces
//! (so the kernel's counters count only this test's connections).
//!
//! Every test that runs load takes [`testkit::exclusive`] first: they pin their workers to the
//! same CPUs, several saturate one (1M/s offered), and the others assert rates to ±1% and time
//! bounds, so they run one at a time (a few seconds in all); only the pure input check runs beside
//! them.

mod util;

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use loadgen::{CloseMode, Pattern};
use testkit::NetNs;
use util::{closed_port, deaf_listener, open, run, ServerMode, TestServer};

#[test]
fn attempts_successes_and_active_opens_agree_exactly() {
    let _x = testkit::exclusive();
    let (report, active_opens, accepted) = NetNs::run(|ns| {
        let server = TestServer::start(ServerMode::Close);
        let before = ns.counter("Tcp.ActiveOpens");
        let mut cfg = open(server.addr, 1000.0, Duration::from_millis(500));
        cfg.warmup = Duration::from_millis(200);
        cfg.cpus = testkit::allowed_cpus();
        let report = run(&cfg);
        let after = ns.counter("Tcp.ActiveOpens");
        // The accept thread may still be catching up with the queue.
        let deadline = Instant::now() + Duration::from_secs(2);
        while server.accepted.load(std::sync::atomic::Ordering::Relaxed) < report.total.successes
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        (
            report,
            after - before,
            server.accepted.load(std::sync::atomic::Ordering::Relaxed),
        )
    });
    assert!(report.total.attempts > 0);
    assert_eq!(
        report.total.attempts as i64, active_opens,
        "attempts vs Tcp.ActiveOpens delta"
    );
    assert_eq!(
        report.total.successes, report.total.attempts,
        "failures: {:?}",
        report.total.failures
    );
    assert!(report.achieved_per_sec <= report.offered_per_sec.unwrap());
    assert_eq!(
        accepted, report.total.successes,
        "server accepted every handshake"
    );
    assert!(
        report.total.attempts > report.attempts,
        "warm-up attempts are in total only"
    );
    assert_eq!(report.handshake.len(), report.successes);
    assert_eq!(report.service.len(), report.successes);
    assert!(!report.timeline.is_empty() && report.timeline[0].warmup);
    let per_sec: u64 = report.timeline.iter().map(|r| r.attempts).sum();
    assert_eq!(
        per_sec, report.total.attempts,
        "timeline adds up to the total"
    );
    assert_lines_add_up(&report);
}

/// Issue 35 item 4: every column of the per-second lines (`load` prints every row, drain
/// seconds included) adds up to the run's totals: none of the last completions, failures or
/// drops is in no line.
fn assert_lines_add_up(report: &loadgen::LoadReport) {
    let sum = |f: fn(&loadgen::TimelineRow) -> u64| report.timeline.iter().map(f).sum::<u64>();
    let t = &report.total;
    assert_eq!(sum(|r| r.attempts), t.attempts, "attempts");
    assert_eq!(sum(|r| r.successes), t.successes, "successes");
    assert_eq!(
        sum(|r| r.failures),
        t.failures.values().sum::<u64>(),
        "failures"
    );
    assert_eq!(sum(|r| r.late), t.late, "late");
    assert_eq!(sum(|r| r.dropped), t.dropped, "dropped");
}

#[test]
fn open_loop_starts_the_scheduled_number_of_attempts() {
    let _x = testkit::exclusive();
    let report = NetNs::run(|_| {
        let server = TestServer::start(ServerMode::Close);
        run(&open(server.addr, 2000.0, Duration::from_secs(2)))
    });
    // The schedule offers 2000/s × 2 s; every offered start is made or counted as dropped. A
    // start the worker reaches late (a busy CI host) is made late, not dropped, so drops stay a
    // small share even there (none on an idle host).
    let offered = report.offered as f64;
    assert!(
        (offered - 4000.0).abs() <= 40.0,
        "offered {offered}, want 4000 ± 1%"
    );
    assert_eq!(report.offered, report.attempts + report.dropped);
    assert!(
        report.dropped * 200 <= report.offered,
        "dropped {} of {} (> 0.5%)",
        report.dropped,
        report.offered
    );
    assert_eq!(report.offered_per_sec, Some(2000.0));
    let achieved = report.achieved_per_sec;
    assert!(
        (1970.0..=2020.0).contains(&achieved),
        "achieved {achieved}/s"
    );
}

/// The server keeps each connection 100 ms and the client waits for its FIN (`--close server`),
/// so two slots serve only ~20 attempts/s of the 200/s offered: attempts queue for a slot. Measured
/// from the intended start (handshake) that wait shows; measured from socket() (service) it does
/// not. A generator that measured from its actual start would hide the stall: coordinated omission.
/// Both engines (each reads until the FIN its own way).
#[test]
fn handshake_latency_from_intended_start_shows_the_stall_service_does_not() {
    let _x = testkit::exclusive();
    for engine in [loadgen::LoadEngine::Epoll, loadgen::LoadEngine::IoUring] {
        stall_round(engine);
    }
}

fn stall_round(engine: loadgen::LoadEngine) {
    let report = NetNs::run(move |_| {
        let server = TestServer::start(ServerMode::CloseAfter(Duration::from_millis(100)));
        let mut cfg = open(server.addr, 200.0, Duration::from_secs(1));
        cfg.close = CloseMode::Server;
        cfg.max_in_flight = 2;
        cfg.connect_timeout = Duration::from_secs(2);
        cfg.engine = engine;
        run(&cfg)
    });
    assert_eq!(
        report.engine.as_ref().unwrap().engine,
        if engine == loadgen::LoadEngine::Epoll {
            "epoll"
        } else {
            "io_uring"
        }
    );
    let hs_p50 = report.handshake.value_at_percentile(50.0);
    let svc_p99 = report.service.value_at_percentile(99.0);
    assert!(report.successes >= 10, "{report:?}");
    assert!(
        report.late > report.successes / 2,
        "most starts waited for a slot: late {}",
        report.late
    );
    assert!(
        hs_p50 > 150_000_000,
        "handshake p50 {hs_p50} ns shows the queueing (> 150 ms)"
    );
    assert!(
        svc_p99 < 50_000_000,
        "service p99 {svc_p99} ns stays a loopback handshake (< 50 ms)"
    );
    assert!(
        report.post_connect_failures.is_empty(),
        "{:?}",
        report.post_connect_failures
    );
}

#[test]
fn nothing_listening_counts_every_attempt_as_refused_and_runs_its_duration() {
    let _x = testkit::exclusive();
    let (report, elapsed) = NetNs::run(|_| {
        let cfg = open(closed_port(), 500.0, Duration::from_millis(600));
        let t = Instant::now();
        (run(&cfg), t.elapsed())
    });
    assert!(report.attempts >= 290, "{}", report.attempts);
    assert_eq!(report.successes, 0);
    assert_eq!(
        report.failures.get("ECONNREFUSED"),
        Some(&report.attempts),
        "{:?}",
        report.failures
    );
    assert!(elapsed >= Duration::from_millis(600), "ran {elapsed:?}");
    assert!(!report.interrupted);
    assert_lines_add_up(&report);
}

#[test]
fn tiny_port_range_with_fin_close_reports_port_exhaustion_and_keeps_going() {
    let _x = testkit::exclusive();
    let (report, elapsed) = NetNs::run(|ns| {
        ns.set_sysctl("net.ipv4.ip_local_port_range", "40000 40009");
        ns.set_sysctl("net.ipv4.tcp_tw_reuse", "0");
        let server = TestServer::start(ServerMode::Hold);
        let mut cfg = open(server.addr, 400.0, Duration::from_millis(700));
        cfg.close = CloseMode::Fin;
        let t = Instant::now();
        let r = run(&cfg);
        let budget = loadgen::ports::port_budget(
            loadgen::ports::read_port_range(std::path::Path::new("/proc")).unwrap(),
            &cfg.targets,
            &cfg.sources,
            cfg.close,
        );
        assert_eq!(budget.concurrent, 10);
        (r, t.elapsed())
    });
    assert!(
        report.successes <= 10,
        "only 10 ports: {}",
        report.successes
    );
    let exhausted = report.failures.get("EADDRNOTAVAIL").copied().unwrap_or(0);
    assert!(exhausted > report.attempts / 2, "{:?}", report.failures);
    assert!(loadgen::failures::explain("EADDRNOTAVAIL")
        .unwrap()
        .contains("port exhaustion"));
    assert!(
        elapsed >= Duration::from_millis(700),
        "ran its duration: {elapsed:?}"
    );
}

#[test]
fn closed_loop_keeps_concurrency_and_sources_spread_over_addresses() {
    let _x = testkit::exclusive();
    // One load CPU, so the accept thread keeps up (an overloaded accept queue drops SYNs, and the
    // 1 s SYN retransmission would then hit the connect timeout).
    let (report, peers) = NetNs::run(|_| {
        let server = TestServer::start(ServerMode::Close);
        let mut cfg = open(server.addr, 1.0, Duration::from_millis(300));
        cfg.pattern = Pattern::Closed { concurrency: 4 };
        cfg.sources = (2..=5)
            .map(|i| format!("127.0.0.{i}").parse().unwrap())
            .collect();
        cfg.connect_timeout = Duration::from_secs(3);
        let r = run(&cfg);
        let peers = server.peers.lock().unwrap().clone();
        (r, peers)
    });
    let want: std::collections::BTreeSet<std::net::IpAddr> = (2..=5)
        .map(|i| format!("127.0.0.{i}").parse().unwrap())
        .collect();
    assert_eq!(peers, want, "attempts come from every --source address");
    assert!(report.successes > 50, "{report:?}");
    assert_eq!(report.failures_total(), 0, "{:?}", report.failures);
    assert_eq!(report.offered_per_sec, None);
    assert_eq!(report.late + report.dropped, 0);
}

#[test]
fn greeting_server_gives_first_byte_latency() {
    let _x = testkit::exclusive();
    for engine in [loadgen::LoadEngine::Epoll, loadgen::LoadEngine::IoUring] {
        greeting_round(engine);
    }
}

fn greeting_round(engine: loadgen::LoadEngine) {
    let report = NetNs::run(move |_| {
        let server = TestServer::start(ServerMode::Greet(5));
        let mut cfg = open(server.addr, 200.0, Duration::from_millis(300));
        cfg.expect_bytes = Some(5);
        cfg.engine = engine;
        run(&cfg)
    });
    let fb = report.first_byte.as_ref().expect("first-byte histogram");
    assert!(report.successes > 0, "{engine:?}");
    assert_eq!(
        fb.len(),
        report.successes,
        "post: {:?}",
        report.post_connect_failures
    );
    assert!(fb.value_at_percentile(50.0) >= report.handshake.value_at_percentile(50.0) / 2);
}

#[test]
fn stop_flag_ends_the_run_early_with_a_full_report() {
    let _x = testkit::exclusive();
    let (report, elapsed) = NetNs::run(|_| {
        let server = TestServer::start(ServerMode::Close);
        let cfg = open(server.addr, 500.0, Duration::from_secs(30));
        let stop = AtomicBool::new(false);
        let t = Instant::now();
        let mut seconds = 0;
        let r = loadgen::run(&cfg, &stop, &mut |_row| {
            seconds += 1;
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        (r, t.elapsed())
    });
    assert!(report.interrupted);
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert!(
        report.attempts > 0 && report.measured_secs < 5.0,
        "{}",
        report.measured_secs
    );
}

#[test]
fn unusable_cpu_is_an_error_before_any_attempt() {
    let cfg = {
        let mut c = open(closed_port(), 100.0, Duration::from_millis(100));
        c.cpus = vec![8000];
        c
    };
    let err = loadgen::run(&cfg, &AtomicBool::new(false), &mut |_| {}).unwrap_err();
    assert!(
        matches!(err, loadgen::LoadError::Pin { cpu: 8000, .. }),
        "{err}"
    );
}

#[test]
fn closed_loop_against_nothing_ends_at_its_duration() {
    let _x = testkit::exclusive();
    let (report, elapsed) = NetNs::run(|_| {
        let mut cfg = open(closed_port(), 1.0, Duration::from_millis(300));
        cfg.pattern = Pattern::Closed { concurrency: 2 };
        let t = Instant::now();
        (run(&cfg), t.elapsed())
    });
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert!(report.attempts > 0);
    assert_eq!(
        report.failures.get("ECONNREFUSED"),
        Some(&report.attempts),
        "{:?}",
        report.failures
    );
}

/// A listener that never accepts, with a backlog of 1: once its accept queue is full the kernel
/// drops further SYNs (TcpExt.ListenOverflows) and the client would retransmit only after 1 s, so
/// every later attempt ends at our connect timeout as ETIMEDOUT, and the run still ends on time.
#[test]
fn full_accept_queue_gives_etimedout_at_the_connect_timeout() {
    let _x = testkit::exclusive();
    let (report, elapsed, overflows) = NetNs::run(|ns| {
        let (_l, addr) = deaf_listener(1);
        let mut cfg = open(addr, 50.0, Duration::from_millis(400));
        cfg.connect_timeout = Duration::from_millis(200);
        let t = Instant::now();
        let r = run(&cfg);
        (r, t.elapsed(), ns.counter("TcpExt.ListenOverflows"))
    });
    let timed_out = report.failures.get("ETIMEDOUT").copied().unwrap_or(0);
    assert!(report.successes <= 2, "the queue holds 2: {report:?}");
    assert_eq!(
        timed_out + report.successes,
        report.attempts,
        "{:?}",
        report.failures
    );
    assert!(timed_out >= 15, "{:?}", report.failures);
    assert!(overflows > 0, "the kernel dropped SYNs");
    assert!(
        elapsed < Duration::from_millis(400 + 200 + 800),
        "drain bounded by the timeout: {elapsed:?}"
    );
}

/// A target too slow for the offered rate (a listener that never accepts, backlog 1) holds every
/// in-flight slot until the connect timeout: every dropped start is a full-slots drop, and the
/// warning blames the target, not the generator.
#[test]
fn a_target_holding_every_slot_is_blamed_not_the_generator() {
    let _x = testkit::exclusive();
    let report = NetNs::run(|_| {
        let (_l, addr) = deaf_listener(1);
        let mut cfg = open(addr, 500.0, Duration::from_millis(600));
        cfg.connect_timeout = Duration::from_millis(200);
        cfg.max_in_flight = 4;
        run(&cfg)
    });
    assert!(report.dropped > 0, "{report:?}");
    assert_eq!(report.dropped_in_flight_full, report.dropped, "{report:?}");
    assert_eq!(report.offered, report.attempts + report.dropped);
    let w = report.schedule_warning().expect("a warning");
    assert!(
        w.contains("the target is slower than the offered rate, not the generator")
            && !w.contains("fell behind"),
        "{w}"
    );
}

/// The same target at an interrupt: the starts still waiting for a slot when the stop comes
/// (within the generator's lag bound) waited for the target, not for the generator, so they are
/// full-slot drops too and the warning still blames the target, on both engines.
#[test]
fn an_interrupt_while_the_target_holds_every_slot_still_blames_the_target() {
    let _x = testkit::exclusive();
    for engine in [loadgen::LoadEngine::Epoll, loadgen::LoadEngine::IoUring] {
        let report = NetNs::run(move |_| {
            let (_l, addr) = deaf_listener(1);
            let mut cfg = open(addr, 500.0, Duration::from_secs(10));
            cfg.connect_timeout = Duration::from_secs(5);
            cfg.max_in_flight = 4;
            cfg.engine = engine;
            let stop = std::sync::Arc::new(AtomicBool::new(false));
            let s = stop.clone();
            let stopper = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(700));
                s.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            let r = loadgen::run(&cfg, &stop, &mut |_| {}).unwrap();
            stopper.join().unwrap();
            r
        });
        assert!(report.interrupted, "{engine:?}");
        // The stop is seen within 50 ms although nothing else was due before the next second.
        assert!(
            report.measured_secs < 0.8,
            "{engine:?}: measured {} s",
            report.measured_secs
        );
        assert!(report.dropped > 0, "{engine:?}: {report:?}");
        assert_eq!(
            report.dropped_in_flight_full, report.dropped,
            "{engine:?}: {report:?}"
        );
        assert_eq!(report.offered, report.attempts + report.dropped);
        let w = report.schedule_warning().expect("a warning");
        assert!(
            w.contains("the target is slower than the offered rate, not the generator")
                && !w.contains("fell behind"),
            "{engine:?}: {w}"
        );
    }
}

/// Values outside the connect timeout: with a 20 µs connect timeout nearly every handshake is
/// seen after its timeout (loopback completes it in tens of µs, the worker looks later). Such an
/// attempt is ETIMEDOUT, never a success — but the kernel did complete it, so it is counted in
/// `completed_after_timeout`, and the books still balance against the kernel: successes +
/// completed late = PassiveOpens, and the remaining ETIMEDOUT are exactly the handshakes the
/// kernel did not complete (ActiveOpens − PassiveOpens).
#[test]
fn a_handshake_seen_after_its_timeout_is_etimedout_and_still_balances_with_the_kernel() {
    let _x = testkit::exclusive();
    let (report, active, passive) = NetNs::run(|ns| {
        let server = TestServer::start(ServerMode::Close);
        let (a0, p0) = (
            ns.counter("Tcp.ActiveOpens"),
            ns.counter("Tcp.PassiveOpens"),
        );
        // Closed loop: an open-loop start more than the 20 µs timeout late is dropped, never
        // started (attempt.rs `start_due`), and a worker on a busy host wakes that late often:
        // the test would measure its wake-ups instead of late handshakes.
        let mut cfg = open(server.addr, 2000.0, Duration::from_millis(300));
        cfg.pattern = loadgen::Pattern::Closed { concurrency: 2 };
        cfg.connect_timeout = Duration::from_micros(20);
        let r = run(&cfg);
        std::thread::sleep(Duration::from_millis(50));
        (
            r,
            ns.counter("Tcp.ActiveOpens") - a0,
            ns.counter("Tcp.PassiveOpens") - p0,
        )
    });
    let t = &report.total;
    let timed_out = t.failures.get("ETIMEDOUT").copied().unwrap_or(0) as i64;
    let failed: u64 = t.failures.values().sum();
    let late = t.completed_after_timeout as i64;
    assert_eq!(t.attempts as i64, active, "attempts vs ActiveOpens");
    assert_eq!(t.successes + failed, t.attempts, "{:?}", t.failures);
    assert_eq!(
        t.successes as i64 + late,
        passive,
        "handshakes vs PassiveOpens; failures {:?}",
        t.failures
    );
    assert_eq!(
        timed_out - late,
        active - passive,
        "the other ETIMEDOUT are exactly the handshakes the kernel did not complete"
    );
    // Handshakes seen after the 20 µs (how many depends on the host's speed: 15% of 21,516 on
    // a quiet one, most of them on a busy one) are what this test is about: some must occur.
    assert!(
        late > 0,
        "no handshake completed after its timeout: {:?}",
        report.total
    );
    // A success is never longer than its timeout from its socket(2) call.
    assert!(
        report.service.is_empty() || report.service.max() <= 20_000 + 20,
        "service max {}",
        report.service.max()
    );
}

/// A worker that cannot keep its schedule (1M/s offered to one worker; every attempt is refused
/// at once, so no in-flight bound stops it) still sends each second on time, accounts for every
/// scheduled start (offered = attempts + dropped) and says it fell behind.
#[test]
fn an_overloaded_worker_still_reports_each_second_and_says_it_fell_behind() {
    let _x = testkit::exclusive();
    let (report, arrivals) = NetNs::run(|_| {
        let mut cfg = open(closed_port(), 1_000_000.0, Duration::from_secs(2));
        cfg.connect_timeout = Duration::from_millis(100);
        let t0 = Instant::now();
        let mut arrivals = Vec::new();
        let r = loadgen::run(&cfg, &AtomicBool::new(false), &mut |row| {
            arrivals.push((row.t_secs, t0.elapsed()));
        })
        .unwrap();
        (r, arrivals)
    });
    for &(t, at) in &arrivals {
        if t < 2 {
            let due = Duration::from_secs(t + 1) + Duration::from_millis(600);
            assert!(at < due, "second {t} arrived at {at:?}: {arrivals:?}");
        }
    }
    assert!(arrivals.iter().any(|&(t, _)| t == 0), "{arrivals:?}");
    assert_eq!(report.offered, report.attempts + report.dropped);
    assert!(
        (report.offered as f64 - 2e6).abs() < 2e4,
        "every scheduled start is counted: {}",
        report.offered
    );
    assert!(report.dropped > 0 && report.attempts > 0, "{report:?}");
    assert_eq!(
        report.failures.get("ECONNREFUSED"),
        Some(&report.attempts),
        "{:?}",
        report.failures
    );
    assert!(report.achieved_per_sec <= report.offered_per_sec.unwrap());
    let w = report.schedule_warning().expect("a warning");
    assert!(w.contains("fell behind its schedule"), "{w}");
}

/// A generator offered far more than it can start, with a warm-up: the starts it makes stay
/// within [`loadgen::MAX_GENERATOR_LAG_NS`] of their schedule, so they land in the phase and
/// second they were made in (issue 9: the measured part once showed 0 started while thousands
/// were made, all attributed to the warm-up by their intended start 3 s earlier).
#[test]
fn an_overloaded_generator_keeps_its_starts_in_their_phase() {
    let _x = testkit::exclusive();
    let report = NetNs::run(|_| {
        let server = TestServer::start(ServerMode::Close);
        let mut cfg = open(server.addr, 1_000_000.0, Duration::from_secs(1));
        cfg.warmup = Duration::from_millis(500);
        cfg.connect_timeout = Duration::from_secs(3);
        cfg.max_in_flight = 256;
        run(&cfg)
    });
    let made = report.total.attempts as f64;
    // The measured second is 2/3 of the run: its share of the starts made is near that on an
    // idle host (0.6–0.75 here) and stays well above what a lag of the connect timeout gave
    // (0.01: every start made in the measured second was due in the warm-up) on a starved one.
    let share = report.attempts as f64 / made;
    assert!(
        (0.25..=0.9).contains(&share),
        "measured {} of {made} starts made (share {share:.2})",
        report.attempts
    );
    assert_eq!(report.offered, report.attempts + report.dropped);
    let lag_ms = (loadgen::MAX_GENERATOR_LAG_NS / 1_000_000) as f64;
    let p50_ms = report.handshake.value_at_percentile(50.0) as f64 / 1e6;
    assert!(
        p50_ms < lag_ms + 50.0,
        "a made start is at most {lag_ms} ms late: p50 {p50_ms} ms"
    );
    // A drop is counted when the generator gives up on it, at most the lag after its due time:
    // a row holds its own length of offered starts plus at most one lag's worth (10% slack).
    let lag_s = lag_ms / 1e3;
    for row in report.timeline.iter().filter(|r| !r.is_drain()) {
        let offered = row.per_sec(row.offered).unwrap();
        let most = 1e6 * (row.length_secs + lag_s) / row.length_secs * 1.1;
        assert!(
            offered < most,
            "second {} ({} s) offered {offered}/s of 1e6/s (at most {most}/s): drops counted near their due time",
            row.t_secs,
            row.length_secs
        );
    }
}

/// Overload never ends (issue 9): 1e9/s offered to one worker for 30 days against a closed port.
/// The stop flag ends it within a second, every start due before the stop is accounted
/// (offered = attempts + dropped, the drops counted by arithmetic), and every started attempt is
/// a success or a failure, equal to the kernel's Tcp.ActiveOpens.
#[test]
fn stop_under_sustained_overload_returns_with_every_start_accounted() {
    let _x = testkit::exclusive();
    let (report, stopped_after, returned_after, active) = NetNs::run(|ns| {
        let mut cfg = open(
            closed_port(),
            loadgen::MAX_RATE_PER_SEC,
            Duration::from_secs(30 * 86_400),
        );
        cfg.connect_timeout = Duration::from_millis(100);
        let a0 = ns.counter("Tcp.ActiveOpens");
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let t = Instant::now();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(700));
            s.store(true, std::sync::atomic::Ordering::Relaxed);
            t.elapsed()
        });
        let r = loadgen::run(&cfg, &stop, &mut |_| {}).unwrap();
        let returned = t.elapsed();
        let stopped = stopper.join().unwrap();
        (r, stopped, returned, ns.counter("Tcp.ActiveOpens") - a0)
    });
    assert!(report.interrupted);
    assert!(
        returned_after < stopped_after + Duration::from_secs(1),
        "stop at {stopped_after:?}, returned at {returned_after:?}"
    );
    let t = &report.total;
    assert_eq!(report.offered, report.attempts + report.dropped);
    // About 0.7 s × 1e9/s were due; allow for start-up and the noisy machine.
    assert!(
        (5e8..2e9).contains(&(report.offered as f64)),
        "offered {}",
        report.offered
    );
    assert_eq!(t.attempts as i64, active, "attempts vs Tcp.ActiveOpens");
    assert_eq!(
        t.successes + t.failures.values().sum::<u64>(),
        t.attempts,
        "{:?}",
        t.failures
    );
}

/// The last second of a window that is not a whole number of seconds is marked with its real
/// length, so that per-second rates can be scaled instead of diving towards zero.
#[test]
fn a_partial_last_second_carries_its_length() {
    let _x = testkit::exclusive();
    let report = NetNs::run(|_| {
        let server = TestServer::start(ServerMode::Close);
        run(&open(server.addr, 400.0, Duration::from_millis(1500)))
    });
    let rows: Vec<(u64, f64, u64)> = report
        .timeline
        .iter()
        .map(|r| (r.t_secs, r.length_secs, r.offered))
        .collect();
    assert_eq!(rows[0].1, 1.0, "{rows:?}");
    assert_eq!(rows[1].1, 0.5, "{rows:?}");
    let scaled = report.timeline[1]
        .per_sec(report.timeline[1].offered)
        .unwrap();
    assert!((scaled - 400.0).abs() <= 4.0, "{rows:?}");
    assert!(
        report.timeline.iter().skip(2).all(|r| r.is_drain()),
        "{rows:?}"
    );
}

/// The open-loop report carries the generator's own lag: one value per measured start (its
/// count equals the measured attempts, warm-up excluded), never above the handshake latency's
/// largest value (a handshake counts from the same scheduled start, so it includes the lag), and
/// the timer slack the workers ran with. A closed loop has no schedule, hence no lag.
#[test]
fn generator_lag_counts_every_measured_start_and_records_the_timer_slack() {
    let _x = testkit::exclusive();
    let (open_report, closed_report) = NetNs::run(|_| {
        let server = TestServer::start(ServerMode::Close);
        let mut cfg = open(server.addr, 1000.0, Duration::from_secs(1));
        cfg.warmup = Duration::from_millis(300);
        let o = run(&cfg);
        cfg.pattern = loadgen::Pattern::Closed { concurrency: 4 };
        (o, run(&cfg))
    });
    let lag = open_report
        .generator_lag
        .as_ref()
        .expect("open loop has a lag histogram");
    assert!(open_report.attempts > 0);
    assert_eq!(lag.hist.len(), open_report.attempts);
    assert!(
        open_report.total.attempts > open_report.attempts,
        "warm-up starts are not in it"
    );
    assert_eq!(lag.timer_slack_ns, Some(loadgen::TIMER_SLACK_NS));
    assert_eq!(lag.pacing, loadgen::Pacing::default());
    // Every start succeeded here, and each handshake = its start's lag + its service time, so
    // the slowest handshake is at least the largest lag (within a histogram bucket).
    assert_eq!(open_report.successes, open_report.attempts);
    assert!(
        open_report.handshake.max() >= lag.hist.lowest_equivalent(lag.hist.max()),
        "handshake max {} < lag max {}",
        open_report.handshake.max(),
        lag.hist.max()
    );
    assert!(closed_report.generator_lag.is_none());
}

/// `--spin 0 --start-batch 1` (both ways of cutting the generator's lag off, for measuring
/// them) run on both engines: every start still made and succeeding, and the report says which
/// pacing ran.
#[test]
fn pacing_switched_off_still_keeps_the_schedule_and_is_reported() {
    let _x = testkit::exclusive();
    for engine in [loadgen::LoadEngine::Epoll, loadgen::LoadEngine::IoUring] {
        let r = NetNs::run(move |_| {
            let server = TestServer::start(ServerMode::Close);
            let mut cfg = open(server.addr, 2000.0, Duration::from_millis(500));
            cfg.engine = engine;
            cfg.pacing = loadgen::Pacing {
                spin_ns: 0,
                start_batch: 1,
                spin_auto: false,
            };
            run(&cfg)
        });
        let lag = r.generator_lag.as_ref().expect("open loop");
        assert_eq!(
            lag.pacing,
            loadgen::Pacing {
                spin_ns: 0,
                start_batch: 1,
                spin_auto: false,
            },
            "{engine:?}"
        );
        // No spin: no pass is a spin pass.
        for w in &r.workers {
            assert_eq!((w.spin_ns, w.spun_ns), (0, 0), "{engine:?}");
        }
        // 2,000/s for 0.5 s: 1,000 scheduled (±1 at the window's edges), every one made.
        assert!(r.offered.abs_diff(1000) <= 1, "{engine:?}: {}", r.offered);
        assert_eq!(r.attempts, r.offered, "{engine:?}");
        assert_eq!(r.successes, r.attempts, "{engine:?}");
        assert_eq!(r.dropped, 0, "{engine:?}");
    }
}

/// A long spin (`--spin 200us`: each wait ends 200 µs before the next start, the loop polls the
/// rest) on both engines, both waits (the timerfd and io_uring's absolute timeout) exercised:
/// the schedule is kept exactly (every start made once, counted once, each lag recorded), the
/// report says which pacing ran. Not a timing target.
#[test]
fn a_long_spin_keeps_the_schedule_exact_on_both_engines() {
    let _x = testkit::exclusive();
    for engine in [loadgen::LoadEngine::Epoll, loadgen::LoadEngine::IoUring] {
        let pacing = loadgen::Pacing {
            spin_ns: 200_000,
            start_batch: 64,
            spin_auto: false,
        };
        let r = NetNs::run(move |_| {
            let server = TestServer::start(ServerMode::Close);
            let mut cfg = open(server.addr, 2000.0, Duration::from_millis(500));
            cfg.engine = engine;
            cfg.pacing = pacing;
            run(&cfg)
        });
        let lag = r.generator_lag.as_ref().expect("open loop");
        assert_eq!(lag.pacing, pacing, "{engine:?}");
        // 2,000/s for 0.5 s: 1,000 scheduled (±1 at the window's edges), every one made.
        assert!(r.offered.abs_diff(1000) <= 1, "{engine:?}: {}", r.offered);
        assert_eq!(
            r.attempts, r.offered,
            "{engine:?}: {} dropped (the generator fell behind by 100 ms: CPU contention?)",
            r.dropped
        );
        assert_eq!(r.successes, r.attempts, "{engine:?}");
        assert_eq!(r.dropped, 0, "{engine:?}");
        assert_eq!(lag.hist.len(), r.attempts, "{engine:?}");
        // The spin is counted apart: each of ~1,000 starts 500 µs apart is preceded by up to
        // 200 µs of passes with nothing to do (less the work that lands in them), and that
        // time is part of the worker's wall time.
        let spun: u64 = r.workers.iter().map(|w| w.spun_ns).sum();
        let wall: u64 = r.workers.iter().map(|w| w.wall_ns).sum();
        assert!(r.workers.iter().all(|w| w.spin_ns == 200_000), "{engine:?}");
        // On-CPU time of the idle passes: part of the worker's own on-CPU time.
        assert!(
            r.workers.iter().all(|w| w.spun_ns <= w.cpu_run_ns),
            "{engine:?}"
        );
        assert!(
            spun >= r.attempts * 50_000 && spun <= wall,
            "{engine:?}: spun {spun} ns over {} starts, wall {wall} ns",
            r.attempts
        );
    }
}

/// `--spin auto` on both engines: each open-loop worker measures its CPU's wake-up latency at
/// its start and runs with a spin within the bounds, reported per worker with the time it
/// spent spinning; the schedule is kept exactly. A closed loop measures nothing (no spin).
#[test]
fn an_auto_spin_is_measured_per_worker_and_reported() {
    let _x = testkit::exclusive();
    for engine in [loadgen::LoadEngine::Epoll, loadgen::LoadEngine::IoUring] {
        let pacing = loadgen::Pacing {
            spin_auto: true,
            ..loadgen::Pacing::default()
        };
        let (open_r, closed_r) = NetNs::run(move |_| {
            let server = TestServer::start(ServerMode::Close);
            let mut cfg = open(server.addr, 2000.0, Duration::from_millis(500));
            cfg.engine = engine;
            cfg.pacing = pacing;
            let o = run(&cfg);
            cfg.pattern = loadgen::Pattern::Closed { concurrency: 2 };
            (o, run(&cfg))
        });
        let lag = open_r.generator_lag.as_ref().expect("open loop");
        assert_eq!(lag.pacing, pacing, "{engine:?}");
        assert!(
            open_r.offered.abs_diff(1000) <= 1,
            "{engine:?}: {}",
            open_r.offered
        );
        assert_eq!(open_r.successes, open_r.offered, "{engine:?}");
        for w in &open_r.workers {
            assert!(
                (loadgen::SPIN_NS..=loadgen::AUTO_SPIN_MAX_NS).contains(&w.spin_ns),
                "{engine:?}: {}",
                w.spin_ns
            );
            assert!(w.spun_ns <= w.cpu_run_ns, "{engine:?}");
        }
        for w in &closed_r.workers {
            // The configured spin, untouched: a closed loop never measured one.
            assert_eq!(w.spin_ns, loadgen::SPIN_NS, "{engine:?}");
        }
        // Two workers on one CPU: neither measures (each would spin on the other's CPU time
        // and measure the other's wake-ups), both keep the default, and the report says so.
        let shared = NetNs::run(move |_| {
            let server = TestServer::start(ServerMode::Close);
            let mut cfg = open(server.addr, 1000.0, Duration::from_millis(300));
            cfg.engine = engine;
            cfg.pacing = pacing;
            cfg.workers = 2;
            run(&cfg)
        });
        assert_eq!(shared.workers.len(), 2, "{engine:?}");
        assert!(
            shared.workers.iter().all(|w| w.spin_ns == loadgen::SPIN_NS),
            "{engine:?}"
        );
        let text = loadgen::render::Summary {
            report: &shared,
            warnings: &[],
        }
        .to_string();
        assert!(
            text.contains("wakes 2.0 µs (--spin auto: every load CPU holds several workers, so none was measured; the default)"),
            "{engine:?}: {text}"
        );
    }
}

// The io_uring connect engine (`--load-engine io-uring`): the same accounting as epoll, each
// count checked against the kernel's in a private namespace.

/// Runs `cfg` on the io_uring engine in a fresh namespace against a closing server: returns the
/// report, Δ ActiveOpens and the server's accepts.
fn uring_against_closing_server(
    change: impl FnOnce(&mut loadgen::LoadConfig) + Send + 'static,
) -> Option<(loadgen::LoadReport, i64, u64)> {
    NetNs::run(|ns| {
        let server = TestServer::start(ServerMode::Close);
        let mut cfg = util::on_uring(open(server.addr, 1000.0, Duration::from_millis(500)))?;
        cfg.warmup = Duration::from_millis(200);
        cfg.cpus = testkit::allowed_cpus();
        change(&mut cfg);
        let before = ns.counter("Tcp.ActiveOpens");
        let report = run(&cfg);
        let after = ns.counter("Tcp.ActiveOpens");
        let deadline = Instant::now() + Duration::from_secs(2);
        let accepted = || server.accepted.load(std::sync::atomic::Ordering::Relaxed);
        while accepted() < report.total.successes && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        Some((report, after - before, accepted()))
    })
}

fn assert_books_balance(report: &loadgen::LoadReport, active_opens: i64, accepted: u64) {
    let e = report.engine.as_ref().expect("engine recorded");
    assert_eq!(e.engine, "io_uring", "{e:?}");
    assert!(report.total.attempts > 0);
    assert_eq!(
        report.total.attempts as i64, active_opens,
        "attempts vs ΔActiveOpens"
    );
    assert_eq!(
        report.total.successes, report.total.attempts,
        "failures: {:?}",
        report.total.failures
    );
    assert_eq!(accepted, report.total.successes, "server accepts");
    assert_eq!(report.handshake.len(), report.successes);
    let per_sec: u64 = report.timeline.iter().map(|r| r.attempts).sum();
    assert_eq!(per_sec, report.total.attempts, "timeline adds up");
    assert_lines_add_up(report);
}

#[test]
fn uring_open_loop_attempts_successes_active_opens_and_accepts_agree_exactly() {
    let _x = testkit::exclusive();
    let Some((report, active, accepted)) = uring_against_closing_server(|_| {}) else {
        return;
    };
    assert_books_balance(&report, active, accepted);
    let f = report.engine.as_ref().unwrap().features.clone().unwrap();
    // Linux 6.7+ (this project's hosts run 6.18): direct sockets and the uring setsockopt.
    assert!(
        f.contains("socket=direct") && f.contains("setsockopt=uring_cmd"),
        "{f}"
    );
    // --close rst (the default) keeps each socket for the slot's next attempt.
    assert!(f.contains("reuse=disconnect"), "{f}");
    let lag = report.generator_lag.as_ref().expect("open loop lag");
    assert_eq!(
        lag.hist.len(),
        report.attempts,
        "one lag value per measured start"
    );
    assert_eq!(report.offered, report.attempts + report.dropped);
}

#[test]
fn uring_closed_loop_attempts_successes_active_opens_and_accepts_agree_exactly() {
    let _x = testkit::exclusive();
    let Some((report, active, accepted)) = uring_against_closing_server(|c| {
        c.pattern = Pattern::Closed { concurrency: 4 };
        c.close = CloseMode::Fin;
    }) else {
        return;
    };
    assert_books_balance(&report, active, accepted);
    let f = report.engine.as_ref().unwrap().features.clone().unwrap();
    assert!(
        f.contains("socket=direct") && !f.contains("setsockopt") && !f.contains("reuse"),
        "{f}"
    );
    assert!(report.generator_lag.is_none());
}

#[test]
fn uring_nothing_listening_counts_every_attempt_as_refused() {
    let _x = testkit::exclusive();
    let Some((report, active)) = NetNs::run(|ns| {
        let cfg = util::on_uring(open(closed_port(), 500.0, Duration::from_millis(400)))?;
        let a0 = ns.counter("Tcp.ActiveOpens");
        let r = run(&cfg);
        Some((r, ns.counter("Tcp.ActiveOpens") - a0))
    }) else {
        return;
    };
    assert!(report.attempts >= 190, "{}", report.attempts);
    assert_eq!(report.successes, 0);
    assert_eq!(
        report.failures.get("ECONNREFUSED"),
        Some(&report.attempts),
        "{:?}",
        report.failures
    );
    assert_eq!(report.total.attempts as i64, active);
}

/// A 20 µs connect timeout through IORING_OP_LINK_TIMEOUT: every cancelled connect is asked
/// where it stands, so the books balance with the kernel exactly as with epoll: successes +
/// completed late = PassiveOpens, and the other ETIMEDOUT = ActiveOpens − PassiveOpens.
#[test]
fn uring_a_tiny_connect_timeout_is_etimedout_and_balances_with_the_kernel() {
    let _x = testkit::exclusive();
    let Some((report, active, passive)) = NetNs::run(|ns| {
        let server = TestServer::start(ServerMode::Close);
        // Closed loop, as in the epoll test above: an open-loop start later than the 20 µs
        // timeout is dropped, which on a busy host measures the worker's wake-ups.
        let mut cfg = util::on_uring(open(server.addr, 2000.0, Duration::from_millis(300)))?;
        cfg.pattern = loadgen::Pattern::Closed { concurrency: 2 };
        cfg.connect_timeout = Duration::from_micros(20);
        let (a0, p0) = (
            ns.counter("Tcp.ActiveOpens"),
            ns.counter("Tcp.PassiveOpens"),
        );
        let r = run(&cfg);
        std::thread::sleep(Duration::from_millis(50));
        Some((
            r,
            ns.counter("Tcp.ActiveOpens") - a0,
            ns.counter("Tcp.PassiveOpens") - p0,
        ))
    }) else {
        return;
    };
    let t = &report.total;
    let timed_out = t.failures.get("ETIMEDOUT").copied().unwrap_or(0) as i64;
    let failed: u64 = t.failures.values().sum();
    let late = t.completed_after_timeout as i64;
    assert_eq!(t.attempts as i64, active, "attempts vs ActiveOpens");
    assert_eq!(t.successes + failed, t.attempts, "{:?}", t.failures);
    assert!(timed_out > 0, "{:?}", t.failures);
    assert_eq!(
        t.successes as i64 + late,
        passive,
        "handshakes vs PassiveOpens; failures {:?}",
        t.failures
    );
    assert_eq!(timed_out - late, active - passive);
}

/// `--close rst` through the uring setsockopt leaves no TIME_WAIT on the client; the same run
/// with `--close fin` leaves one per connection (so the check can fail).
#[test]
fn uring_close_rst_leaves_no_time_wait_and_fin_does() {
    let _x = testkit::exclusive();
    let Some((rst, fin)) = NetNs::run(|_| {
        // The server closes 100 ms after accepting: after the client's FIN with --close fin
        // (the client then holds TIME_WAIT), after the client's RST with --close rst.
        let server = TestServer::start(ServerMode::CloseAfter(Duration::from_millis(100)));
        let port = server.addr.port();
        let mut cfg = util::on_uring(open(server.addr, 500.0, Duration::from_millis(300)))?;
        let r = run(&cfg);
        std::thread::sleep(Duration::from_millis(300));
        let rst = (r.total.successes, util::time_wait_sockets(port));
        cfg.close = CloseMode::Fin;
        let r = run(&cfg);
        std::thread::sleep(Duration::from_millis(300));
        let fin = (r.total.successes, util::time_wait_sockets(port));
        Some((rst, fin))
    }) else {
        return;
    };
    assert!(rst.0 > 100, "{rst:?}");
    assert_eq!(rst.1, 0, "TIME_WAIT after --close rst");
    assert_eq!(
        fin.1 as u64, fin.0,
        "one TIME_WAIT per --close fin connection"
    );
}

/// `--close rst` on direct sockets keeps each socket and ends its connection with
/// connect(AF_UNSPEC) (engine::uring docs, "Reuse"). Against a server that holds every
/// connection open, each connection still ends with exactly one RST from the client (ΔTcp.OutRsts
/// = successes), both ends leave ESTABLISHED by reset (ΔTcp.EstabResets = 2 × successes), the
/// server accepts each as a new connection, and ΔActiveOpens = attempts.
#[test]
fn uring_reused_sockets_send_one_rst_per_connection_and_balance_with_the_kernel() {
    let _x = testkit::exclusive();
    let names = [
        "Tcp.ActiveOpens",
        "Tcp.PassiveOpens",
        "Tcp.OutRsts",
        "Tcp.EstabResets",
    ];
    let Some((report, delta, accepted)) = NetNs::run(move |ns| {
        // Open loop at 2,000/s: the server holds what it accepts (800 descriptors), and each
        // connection ends long before the next start, so a few slots' sockets serve them all.
        let server = TestServer::start(ServerMode::Hold);
        let cfg = util::on_uring(open(server.addr, 2000.0, Duration::from_millis(400)))?;
        let before: Vec<i64> = names.iter().map(|n| ns.counter(n)).collect();
        let r = run(&cfg);
        let deadline = Instant::now() + Duration::from_secs(2);
        let accepted = || server.accepted.load(std::sync::atomic::Ordering::Relaxed);
        while accepted() < r.total.successes && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let delta: Vec<i64> = names
            .iter()
            .zip(&before)
            .map(|(n, b)| ns.counter(n) - b)
            .collect();
        Some((r, delta, accepted()))
    }) else {
        return;
    };
    let f = report.engine.as_ref().unwrap().features.clone().unwrap();
    assert!(f.contains("reuse=disconnect"), "{f}");
    let t = &report.total;
    assert!(t.successes > 100, "{t:?}");
    assert_eq!(t.successes, t.attempts, "{:?}", t.failures);
    assert_eq!(delta[0], t.attempts as i64, "ΔActiveOpens vs attempts");
    assert_eq!(delta[1], t.successes as i64, "ΔPassiveOpens vs successes");
    assert_eq!(accepted, t.successes, "server accepts");
    assert_eq!(
        delta[2], t.successes as i64,
        "ΔOutRsts: one RST per connection"
    );
    assert_eq!(delta[3], 2 * t.successes as i64, "ΔEstabResets: both ends");
}

/// A reused socket whose connect failed serves the slot's next attempt, and a slot whose next
/// target is of the other family gets a new socket: targets 127.0.0.1 (a server) and ::1 (a
/// closed port) alternate, 3 slots, so every slot switches families. Each target's books are
/// exact: the IPv4 one all successes, the IPv6 one all ECONNREFUSED.
#[test]
fn uring_reuse_across_refusals_and_address_families_keeps_every_target_exact() {
    let _x = testkit::exclusive();
    let Some((report, active, accepted)) = NetNs::run(|ns| {
        let server = TestServer::start(ServerMode::Close);
        let v6 = std::net::TcpListener::bind("[::1]:0")
            .expect("bind [::1]:0 (IPv6 on this namespace's loopback)")
            .local_addr()
            .unwrap();
        let mut cfg = util::on_uring(open(server.addr, 1000.0, Duration::from_millis(400)))?;
        cfg.targets.push(v6);
        cfg.pattern = Pattern::Closed { concurrency: 3 };
        let a0 = ns.counter("Tcp.ActiveOpens");
        let r = run(&cfg);
        let deadline = Instant::now() + Duration::from_secs(2);
        let accepted = || server.accepted.load(std::sync::atomic::Ordering::Relaxed);
        while accepted() < r.total.successes && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        Some((r, ns.counter("Tcp.ActiveOpens") - a0, accepted()))
    }) else {
        return;
    };
    let f = report.engine.as_ref().unwrap().features.clone().unwrap();
    assert!(f.contains("reuse=disconnect"), "{f}");
    let (v4, v6) = (&report.per_target[0], &report.per_target[1]);
    assert!(v4.attempts > 50 && v6.attempts > 50, "{v4:?} {v6:?}");
    assert_eq!(v4.successes, v4.attempts, "{v4:?}");
    assert!(v4.failures.is_empty(), "{v4:?}");
    assert_eq!(v6.successes, 0, "{v6:?}");
    assert_eq!(
        v6.failures.get("ECONNREFUSED"),
        Some(&v6.attempts),
        "{v6:?}"
    );
    assert_eq!(
        report.total.attempts as i64, active,
        "attempts vs ΔActiveOpens"
    );
    assert_eq!(accepted, report.total.successes, "server accepts");
}

/// A stop while connects wait in SYN-SENT (a listener that never accepts, backlog 0): they are
/// cancelled and abandoned, and attempts = successes + failures + abandoned = ΔActiveOpens.
#[test]
fn uring_a_stop_abandons_what_is_in_flight_and_every_attempt_is_accounted() {
    let _x = testkit::exclusive();
    let Some((report, active, elapsed)) = NetNs::run(|ns| {
        let l = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        l.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        l.listen(0).unwrap();
        let addr = l.local_addr().unwrap().as_socket().unwrap();
        let cfg = util::on_uring(open(addr, 200.0, Duration::from_secs(30)))?;
        let a0 = ns.counter("Tcp.ActiveOpens");
        let stop = AtomicBool::new(false);
        let t = Instant::now();
        let r = loadgen::run(&cfg, &stop, &mut |_| {
            stop.store(true, std::sync::atomic::Ordering::Relaxed)
        })
        .unwrap();
        Some((r, ns.counter("Tcp.ActiveOpens") - a0, t.elapsed()))
    }) else {
        return;
    };
    let t = &report.total;
    let failed: u64 = t.failures.values().sum();
    assert!(report.interrupted);
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert!(t.abandoned > 100, "{report:?}");
    assert_eq!(t.successes + failed + t.abandoned, t.attempts, "{t:?}");
    assert_eq!(t.attempts as i64, active, "attempts vs ActiveOpens");
}

#[test]
fn uring_tiny_port_range_with_fin_close_reports_port_exhaustion() {
    let _x = testkit::exclusive();
    let Some(report) = NetNs::run(|ns| {
        ns.set_sysctl("net.ipv4.ip_local_port_range", "40000 40009");
        ns.set_sysctl("net.ipv4.tcp_tw_reuse", "0");
        let server = TestServer::start(ServerMode::Hold);
        let mut cfg = util::on_uring(open(server.addr, 400.0, Duration::from_millis(500)))?;
        cfg.close = CloseMode::Fin;
        Some(run(&cfg))
    }) else {
        return;
    };
    assert!(
        report.successes <= 10,
        "only 10 ports: {}",
        report.successes
    );
    let exhausted = report.failures.get("EADDRNOTAVAIL").copied().unwrap_or(0);
    assert!(exhausted > report.attempts / 2, "{:?}", report.failures);
    assert_eq!(
        report.successes + report.failures_total(),
        report.attempts,
        "{:?}",
        report.failures
    );
}

/// `--load-engine io-uring --tls` is valid (it was refused before the io_uring engine drove
/// TLS); `auto` picks the engine this project measured cheaper per TLS handshake for `--tls`
/// and per HTTP response for `--http` (io_uring), per connection otherwise, and says which
/// and why.
#[test]
fn auto_picks_the_engine_measured_for_tls_and_for_plain_tcp() {
    let mut cfg = open(closed_port(), 100.0, Duration::from_millis(100));
    cfg.tls = Some(loadgen::tls::TlsOptions {
        version: loadgen::tls::TlsVersion::Auto,
        server_name: "localhost".into(),
        alpn: Vec::new(),
        resume: loadgen::tls::Resume::Off,
        verify: loadgen::tls::Verify::Insecure,
        ciphers: Vec::new(),
        groups: Vec::new(),
        resume_share_pct: 100,
    });
    // io_uring runs --tls (it used to be refused).
    cfg.engine = loadgen::LoadEngine::IoUring;
    cfg.validate()
        .expect("--load-engine io-uring --tls is valid");
    let _x = testkit::exclusive();
    let engine = |e: loadgen::LoadEngine| match e {
        loadgen::LoadEngine::IoUring => "io_uring",
        _ => "epoll",
    };
    // --tls: auto takes the engine measured for TLS (loadgen::engine::AUTO_PREFERS_TLS).
    cfg.engine = loadgen::LoadEngine::Auto;
    let e = NetNs::run(move |_| run(&cfg)).engine.unwrap();
    let want = engine(loadgen::engine::AUTO_PREFERS_TLS);
    assert_eq!(e.engine, want, "{e:?}");
    let reason = e.reason.unwrap();
    assert!(reason.starts_with(&format!("auto: {want}")), "{reason}");
    assert!(reason.contains("per TLS handshake"), "{reason}");
    // Plain TCP: auto takes the preferred engine (loadgen::engine::AUTO_PREFERS) and says so.
    let mut plain = open(closed_port(), 100.0, Duration::from_millis(100));
    plain.engine = loadgen::LoadEngine::Auto;
    let e = NetNs::run(move |_| run(&plain)).engine.unwrap();
    let want = engine(loadgen::engine::AUTO_PREFERS);
    assert_eq!(e.engine, want, "{e:?}");
    let reason = e.reason.unwrap();
    assert!(reason.starts_with(&format!("auto: {want}")), "{reason}");
    assert!(reason.contains("per connection"), "{reason}");
    // --http (no TLS): auto takes the engine measured per HTTP response
    // (loadgen::engine::AUTO_PREFERS_HTTP: io_uring; like the plain case, this assumes the
    // kernel runs it).
    let mut http = open(closed_port(), 100.0, Duration::from_millis(100));
    http.engine = loadgen::LoadEngine::Auto;
    http.http = Some(loadgen::HttpRequest::default());
    let e = NetNs::run(move |_| run(&http)).engine.unwrap();
    let want = engine(loadgen::engine::AUTO_PREFERS_HTTP);
    assert_eq!(e.engine, want, "{e:?}");
    let reason = e.reason.unwrap();
    assert!(reason.starts_with(&format!("auto: {want}")), "{reason}");
    assert!(reason.contains("per HTTP response"), "{reason}");
}

/// Regression (issue 32, the read budget): a target that streams without end, faster than a
/// worker reads, once kept an epoll worker reading one connection (its read loops ran until
/// EAGAIN, which never came), past its stop check, its deadlines and its per-second rows. Now
/// each connection reads at most the read budget per turn on both engines: every read phase
/// ends at its deadline (`ETIMEDOUT`), a row comes every second, and the run ends on time — for
/// `--close server`, a huge `--expect-bytes` and `--http` (a close-delimited body without end).
#[test]
fn a_target_streaming_without_end_cannot_hold_a_worker() {
    let _x = testkit::exclusive();
    for engine in [loadgen::LoadEngine::Epoll, loadgen::LoadEngine::IoUring] {
        for case in ["close-server", "expect-bytes", "http"] {
            streaming_round(engine, case);
        }
    }
}

fn streaming_round(engine: loadgen::LoadEngine, case: &'static str) {
    let (report, elapsed, gaps) = NetNs::run(move |_| {
        let head: &'static [u8] = if case == "http" {
            b"HTTP/1.1 200 OK\r\nServer: endless\r\n\r\n"
        } else {
            b""
        };
        let server = TestServer::start(ServerMode::Stream(head));
        let mut cfg = open(server.addr, 4.0, Duration::from_secs(2));
        cfg.connect_timeout = Duration::from_secs(1);
        cfg.engine = engine;
        match case {
            "close-server" => cfg.close = CloseMode::Server,
            "expect-bytes" => cfg.expect_bytes = Some(u32::MAX),
            _ => cfg.http = Some(loadgen::HttpRequest::default()),
        }
        let stop = AtomicBool::new(false);
        let t0 = Instant::now();
        let mut last = t0;
        let mut gaps = Vec::new();
        let r = loadgen::run(&cfg, &stop, &mut |_row| {
            gaps.push(last.elapsed());
            last = Instant::now();
        })
        .expect("load run");
        (r, t0.elapsed(), gaps)
    });
    let what = format!("{engine:?} {case}");
    // 2 s of starts, then the last read phase's 1 s deadline (and its connect), with slack for
    // this shared machine; a held worker would take the stream's 15 s.
    assert!(elapsed < Duration::from_secs(6), "{what}: {elapsed:?}");
    assert!(gaps.len() >= 2, "{what}: {gaps:?}");
    assert!(
        gaps.iter().all(|g| *g < Duration::from_millis(2500)),
        "{what}: a second's row came late: {gaps:?}"
    );
    let t = &report.total;
    assert!(t.attempts >= 4, "{what}: {t:?}");
    let failures: u64 = t.failures.values().sum();
    assert_eq!(
        t.attempts,
        t.successes + failures + t.abandoned,
        "{what}: {t:?}"
    );
    if case == "http" {
        // No response ever completes: each attempt fails in the read phase's timeout.
        assert_eq!(
            t.failures.get("HTTP ETIMEDOUT"),
            Some(&t.attempts),
            "{what}: {t:?}"
        );
    } else {
        // Each attempt succeeded at its handshake; its read ended at the deadline.
        assert_eq!(t.successes, t.attempts, "{what}: {t:?}");
        assert_eq!(
            report.post_connect_failures.get("ETIMEDOUT").copied(),
            Some(report.successes),
            "{what}: {:?}",
            report.post_connect_failures
        );
    }
}

// Many workers on few CPUs (issue 33): oversubscribed runs keep exact counts, and each worker
// connects from its own slice of the ephemeral range.

/// 32 load workers on this machine's CPUs (oversubscribed: 2 vCPUs here), each with its own
/// source address (so `ss` tells whose a socket is) and its own port slice, an open loop bounded
/// in count, `--close fin` against
/// a server that closes 150 ms after accepting (the client's FIN comes first, so every
/// connection leaves a client-side socket `ss` sees): attempts = ΔTcp.ActiveOpens, successes =
/// server accepts = ΔTcp.PassiveOpens = client-side sockets, the per-worker counts sum to the
/// totals, and every client socket's port lies inside the slice of the worker its source names.
fn many_workers_round(engine: loadgen::LoadEngine) {
    const WORKERS: usize = 32;
    let (report, active, passive, accepted, socks, cpus) = NetNs::run(move |ns| {
        ns.set_sysctl("net.ipv4.ip_local_port_range", "32768 60999");
        ns.set_sysctl("net.ipv4.tcp_tw_reuse", "0");
        let server = TestServer::start(ServerMode::CloseAfter(Duration::from_millis(150)));
        // An open loop bounded in count (4,000/s for 500 ms: about 2,000 connections, some 62
        // per worker): each client socket stays in TIME_WAIT, so a closed loop's count grows
        // with the machine's speed until a worker's 882-port slice runs out (EADDRNOTAVAIL
        // before any SYN, which ActiveOpens does not count) — the test then measured the
        // machine, not the counts.
        let mut cfg = open(server.addr, 4000.0, Duration::from_millis(500));
        cfg.engine = engine;
        cfg.close = CloseMode::Fin;
        cfg.cpus = testkit::allowed_cpus();
        cfg.workers = WORKERS;
        cfg.sources = (0..WORKERS)
            .map(|w| format!("127.0.0.{}", 2 + w).parse().unwrap())
            .collect();
        let (a0, p0) = (
            ns.counter("Tcp.ActiveOpens"),
            ns.counter("Tcp.PassiveOpens"),
        );
        let r = run(&cfg);
        let deadline = Instant::now() + Duration::from_secs(2);
        let accepted = || server.accepted.load(std::sync::atomic::Ordering::Relaxed);
        while accepted() < r.total.successes && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let socks = util::client_sockets(server.addr.port());
        (
            r,
            ns.counter("Tcp.ActiveOpens") - a0,
            ns.counter("Tcp.PassiveOpens") - p0,
            accepted(),
            socks,
            cfg.cpus.clone(),
        )
    });
    let what = format!("{engine:?}");
    let t = &report.total;
    println!(
        "{what}: {} workers, {} attempts, {} successes, {} client sockets; {}",
        report.workers.len(),
        t.attempts,
        t.successes,
        socks.len(),
        report.port_slices.as_ref().unwrap().line()
    );
    assert!(t.successes > 0, "{what}: {t:?}");
    assert_eq!(
        t.attempts as i64, active,
        "{what}: attempts vs ΔActiveOpens"
    );
    assert_eq!(t.successes, t.attempts, "{what}: failures {:?}", t.failures);
    assert_eq!(accepted, t.successes, "{what}: server accepts");
    assert_eq!(passive, t.successes as i64, "{what}: ΔPassiveOpens");
    assert_eq!(
        socks.len() as u64,
        t.successes,
        "{what}: client-side sockets"
    );
    assert_eq!(report.workers.len(), WORKERS, "{what}");
    let sum =
        |f: fn(&loadgen::LoadWorkerReport) -> u64| -> u64 { report.workers.iter().map(f).sum() };
    assert_eq!(
        sum(|w| w.attempts),
        t.attempts,
        "{what}: per-worker attempts"
    );
    assert_eq!(
        sum(|w| w.successes),
        t.successes,
        "{what}: per-worker successes"
    );
    let per_sec: u64 = report.timeline.iter().map(|r| r.attempts).sum();
    assert_eq!(per_sec, t.attempts, "{what}: timeline adds up");
    for (w, wr) in report.workers.iter().enumerate() {
        assert_eq!(wr.cpu, cpus[w % cpus.len()], "{what}: worker {w}'s CPU");
    }
    let state = report.port_slices.as_ref().expect("port slices reported");
    assert!(state.applied, "{what}: {state:?}");
    let slices: Vec<(u16, u16)> = report
        .workers
        .iter()
        .map(|w| w.port_slice.expect("each worker its slice"))
        .collect();
    for pair in slices.windows(2) {
        assert!(pair[0].1 < pair[1].0, "{what}: slices overlap: {pair:?}");
    }
    for (ip, port) in &socks {
        let std::net::IpAddr::V4(v4) = ip else {
            panic!("{what}: unexpected source {ip}")
        };
        let w = usize::from(v4.octets()[3]) - 2;
        let (lo, hi) = slices[w];
        assert!(
            (lo..=hi).contains(port),
            "{what}: worker {w} (source {ip}) connected from port {port}, outside its slice {lo}-{hi}"
        );
    }
    let mut seen: Vec<usize> = socks
        .iter()
        .map(|(ip, _)| match ip {
            std::net::IpAddr::V4(v4) => usize::from(v4.octets()[3]) - 2,
            std::net::IpAddr::V6(_) => usize::MAX,
        })
        .collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), WORKERS, "{what}: every worker connected");
}

#[test]
fn oversubscribed_workers_keep_exact_counts_and_their_port_slices_epoll() {
    let _x = testkit::exclusive();
    many_workers_round(loadgen::LoadEngine::Epoll);
}

#[test]
fn oversubscribed_workers_keep_exact_counts_and_their_port_slices_uring() {
    let _x = testkit::exclusive();
    if util::on_uring(open(closed_port(), 1.0, Duration::from_millis(10))).is_none() {
        return;
    }
    many_workers_round(loadgen::LoadEngine::IoUring);
}

/// The io_uring engine's direct sockets set the slice through the ring (URING_CMD SETSOCKOPT):
/// two workers on one CPU, a 20-port range cut in two slices of 10, `--close fin` against a
/// server that closes 150 ms after accepting, and no TIME_WAIT reuse, so every success holds its
/// port to the end of the test. Each worker then completes at most 10 handshakes, each holding a
/// port of its own slice (`ss` finds as many client sockets in the slice as the worker's
/// successes), and fails the rest with EADDRNOTAVAIL: without slices a worker could take more
/// than 10 of the 20 ports, or ports of the other's half.
#[test]
fn uring_direct_sockets_connect_from_their_own_slice() {
    let _x = testkit::exclusive();
    let r = NetNs::run(|ns| {
        ns.set_sysctl("net.ipv4.ip_local_port_range", "40000 40019");
        ns.set_sysctl("net.ipv4.tcp_tw_reuse", "0");
        let server = TestServer::start(ServerMode::CloseAfter(Duration::from_millis(150)));
        let mut cfg = util::on_uring(open(server.addr, 1.0, Duration::from_millis(300)))?;
        cfg.pattern = Pattern::Closed { concurrency: 4 };
        cfg.close = CloseMode::Fin;
        cfg.cpus = vec![testkit::allowed_cpus()[0]];
        cfg.workers = 2;
        let r = run(&cfg);
        let ports = util::client_sockets(server.addr.port());
        Some((r, ports))
    });
    let Some((r, ports)) = r else { return };
    let features = r
        .engine
        .as_ref()
        .and_then(|e| e.features.clone())
        .unwrap_or_default();
    println!(
        "features {features}; worker successes {:?}; {:?}",
        r.workers.iter().map(|w| w.successes).collect::<Vec<_>>(),
        r.total.failures
    );
    assert!(
        features.contains("socket=direct") && features.contains("port_range=uring_cmd"),
        "{features}"
    );
    assert_eq!(
        r.workers.iter().map(|w| w.port_slice).collect::<Vec<_>>(),
        [Some((40000, 40009)), Some((40010, 40019))]
    );
    assert!(
        r.total.failures.keys().all(|k| k == "EADDRNOTAVAIL"),
        "{:?}",
        r.total.failures
    );
    let used: Vec<u16> = ports.iter().map(|&(_, p)| p).collect();
    println!("client ports {used:?}");
    assert_eq!(
        used.len() as u64,
        r.total.successes,
        "a client socket per success"
    );
    for w in &r.workers {
        let (lo, hi) = w.port_slice.unwrap();
        let inside = used.iter().filter(|p| (lo..=hi).contains(*p)).count() as u64;
        assert!(
            (1..=10).contains(&w.successes) && inside == w.successes,
            "each worker's successes hold ports of its own slice, at most its 10: {inside} ports in {lo}-{hi}, {:?}",
            r.workers
        );
    }
}
