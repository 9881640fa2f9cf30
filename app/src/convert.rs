//! Turns the libraries' reports into run-record parts (this crate is the only one that knows
//! both sides, per docs/design.md's dependency rule).

use std::collections::BTreeMap;

use results::record::{self as rec, PhaseRecord};

/// When a phase's measured part began (see [`PhaseRecord::start_offset_ms`]).
#[derive(Debug, Clone, Copy)]
pub struct PhaseStart {
    /// Monotonic ms after the run started.
    pub offset_ms: f64,
    /// Wall clock, ms since the epoch (run start's wall clock + `offset_ms`).
    pub unix_ms: u64,
    /// The load generator's window, s from the start of its warm-up: (warm-up, warm-up +
    /// duration). Every row of the measured part is kept, a partial one with its real length
    /// (the record's per-second figures scale it); warm-up rows and drain seconds after the end
    /// (no length) are not.
    pub window: (f64, f64),
}

/// The record's crypto floor of a `--tls` run whose floor was measured
/// ([`loadgen::tls::TlsReport::measure_floor`]): the floor and the client's CPU per handshake
/// (the load workers' on-CPU time over the run's TLS handshakes, warm-up included). `None`
/// without a measured floor.
pub fn crypto_floor(report: &loadgen::LoadReport) -> Option<rec::CryptoFloor> {
    let t = report.tls.as_ref()?;
    let f = t.floor.as_ref()?;
    let cpu: u64 = report.workers.iter().map(|w| w.cpu_run_ns).sum();
    let per = t.cpu_per_handshake_ns(cpu);
    Some(rec::CryptoFloor {
        group: f.group.clone(),
        signature: f.signature.clone(),
        verifications: f.verifications,
        kx_ns: f.kx_ns,
        verify_ns: f.verify_ns,
        floor_ns: f.floor_ns,
        per_sec: f.per_sec,
        cpu: f.cpu,
        client_cpu_per_handshake_ns: per.map(|(ns, _)| ns),
        all_full: per.is_some_and(|(_, full)| full),
    })
}

/// Builds a phase record from a load report and the harness's measurements.
pub fn phase_record(
    name: &str,
    start: PhaseStart,
    report: &loadgen::LoadReport,
    server: Option<rec::ServerSide>,
    cpu: rec::CpuUsage,
    counters: BTreeMap<String, i64>,
    cross_check: rec::CrossCheck,
) -> PhaseRecord {
    let (warmup_secs, end_secs) = start.window;
    // loadgen's rows start so that one begins with the measured part: at row ceil(warm-up).
    let first_measured = (warmup_secs - 1e-9).ceil().max(0.0);
    let (achieved_per_sec, cpm) = PhaseRecord::rates(report.successes, report.measured_secs);
    let resuming = report
        .tls
        .as_ref()
        .filter(|t| t.options.resume != loadgen::tls::Resume::Off);
    let mut record = PhaseRecord {
        name: name.to_string(),
        pattern: pattern(report.pattern),
        offered_per_sec: report.offered_per_sec,
        achieved_per_sec,
        cpm,
        measured_secs: report.measured_secs,
        start_unix_ms: Some(start.unix_ms),
        start_offset_ms: Some(start.offset_ms),
        attempts: report.attempts,
        successes: report.successes,
        failures: record_failures(&report.failures),
        late: report.late,
        dropped: report.dropped,
        abandoned: report.abandoned,
        histograms: rec::Histograms {
            generator_lag: report
                .generator_lag
                .as_ref()
                .map(|l| results::record::encode_histogram(&l.hist)),
            http_response: report
                .http
                .as_ref()
                .map(|h| results::record::encode_histogram(&h.response)),
            http_first_byte: report
                .http
                .as_ref()
                .map(|h| results::record::encode_histogram(&h.first_byte)),
            tls_handshake: report
                .tls
                .as_ref()
                .map(|t| results::record::encode_histogram(&t.handshake)),
            // Full and resumed apart only where resumption was asked for (without it every
            // handshake is full: the split would repeat `tls_handshake`).
            tls_full: resuming.map(|t| results::record::encode_histogram(&t.full_handshake)),
            tls_resumed: resuming.map(|t| results::record::encode_histogram(&t.resumed_handshake)),
            ..rec::Histograms::encode(
                &report.handshake,
                &report.service,
                report.first_byte.as_ref(),
            )
        },
        timeline: report
            .timeline
            .iter()
            .filter(|r| {
                !r.warmup
                    && r.length_secs > 0.0
                    && r.t_secs as f64 - first_measured < end_secs - warmup_secs - 1e-6
            })
            .map(|r| timeline_row(r, first_measured))
            .collect(),
        server,
        load_workers: report
            .workers
            .iter()
            .map(|w| rec::LoadWorker {
                cpu: w.cpu,
                // The measured part, as the phase's totals (issue 33: the whole run was kept
                // here, so the rows did not add up to the totals).
                attempts: w.measured_attempts,
                successes: w.measured_successes,
                cpu_run_ns: Some(w.cpu_run_ns),
                run_attempts: Some(w.attempts),
                run_successes: Some(w.successes),
            })
            .collect(),
        cpu,
        counters,
        cross_check: Some(cross_check),
        http: report.http.as_ref().map(|h| rec::HttpCounts {
            request: h.request.clone(),
            requests: h.requests,
            responses: h.responses,
            status_classes: h.status_classes.clone(),
            non_2xx_codes: h.non_2xx_codes.clone(),
            parse_errors: h.parse_errors.clone(),
            early_responses: h.early_responses,
            bytes_sent: h.bytes_sent,
            bytes_received: h.bytes_received,
            body_bytes: h.body_bytes,
        }),
        tls: report.tls.as_ref().map(|t| rec::TlsCounts {
            handshakes: t.handshakes,
            full: t.full,
            resumed: t.resumed,
            tls13: t.tls13,
            tls12: t.tls12,
            alpn_agreed: t.alpn_agreed,
            cipher_suites: t.cipher_suites.clone(),
            groups: t.groups.clone(),
            failures: rec::TlsCounts::failures_of(&report.failures),
        }),
        ..PhaseRecord::default()
    };
    // No success in the measured window: no rate, and no CPU per connection (the CPU figures
    // would divide by the warm-up's connections).
    record.forget_unmeasured();
    record
}

/// The load report's failure table in the record's class names: loadgen's never-accepted
/// classes ([`loadgen::NEVER_ACCEPTED`], [`loadgen::NEVER_ACCEPTED_QUEUED`]) become the record's
/// ([`results::record::NEVER_ACCEPTED`], [`results::record::NEVER_ACCEPTED_QUEUED`]), which
/// `report` reads as handshakes with a histogram sample; errno names stay.
pub fn record_failures(failures: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (name, &n) in failures {
        let name = match name.as_str() {
            loadgen::NEVER_ACCEPTED => results::record::NEVER_ACCEPTED,
            loadgen::NEVER_ACCEPTED_QUEUED => results::record::NEVER_ACCEPTED_QUEUED,
            other => other,
        };
        *out.entry(name.to_string()).or_insert(0) += n;
    }
    out
}

/// The measured part's share of `n` whole-phase events (warm-up included), in proportion to the
/// measured part's share of client handshakes; at most the measured handshakes. The kernel and
/// the server count the whole phase, so this split is apportioned, not observed.
pub fn measured_share(n: u64, report: &loadgen::LoadReport) -> u64 {
    if report.total.successes == 0 {
        return 0;
    }
    let share = report.successes as f64 / report.total.successes as f64;
    ((n as f64 * share).round() as u64).min(report.successes)
}

/// Moves `n` handshakes the server never accepted from the phase's successes to the failure
/// class [`results::record::NEVER_ACCEPTED`], and recomputes the rates from the successes
/// (none, and no CPU per connection, when no success is left).
pub fn count_never_accepted(p: &mut PhaseRecord, n: u64) {
    if n == 0 {
        return;
    }
    let n = n.min(p.successes);
    p.successes -= n;
    // One load worker: its row moves them too (with several, whose they were is unknown; the
    // record's LoadWorker says so).
    if let [w] = p.load_workers.as_mut_slice() {
        w.successes -= n.min(w.successes);
    }
    *p.failures
        .entry(results::record::NEVER_ACCEPTED.to_string())
        .or_insert(0) += n;
    p.set_rates();
    p.forget_unmeasured();
}

/// The record's form of a load pattern.
pub fn pattern(p: loadgen::Pattern) -> rec::Pattern {
    match p {
        loadgen::Pattern::Open {
            rate_per_sec,
            arrival,
        } => rec::Pattern::Open {
            rate_per_sec,
            arrival: match arrival {
                loadgen::Arrival::Uniform => rec::Arrival::Uniform,
                loadgen::Arrival::Poisson => rec::Arrival::Poisson,
            },
        },
        loadgen::Pattern::Closed { concurrency } => rec::Pattern::Closed { concurrency },
    }
}

/// A loadgen second `[t, t+1)` (counted from loadgen's row origin, where row `first_measured`
/// begins the measured part) as a record row, whose `t_secs` is the row's end after the
/// measured part began and `length_secs` its real length.
fn timeline_row(r: &loadgen::TimelineRow, first_measured: f64) -> rec::TimelineRow {
    rec::TimelineRow {
        t_secs: r.t_secs as f64 - first_measured + r.length_secs,
        length_secs: r.length_secs,
        dropped: r.dropped,
        late: r.late,
        handshake: r
            .handshake
            .as_ref()
            .map(|h| results::record::encode_histogram(&h.decode())),
        attempts: r.attempts,
        successes: r.successes,
        failures: r.failures_by_cause.clone(),
        p50_ns: r.p50_ns,
        p99_ns: r.p99_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The drop rule `results` labels generator-lag figures by is the one the generator applies.
    #[test]
    fn the_lag_drop_rule_of_results_is_the_generators() {
        assert_eq!(
            results::analysis::GENERATOR_LAG_DROP_NS,
            loadgen::MAX_GENERATOR_LAG_NS
        );
    }

    /// A closed-loop load report whose 0.8 s measured window had no success, after a warm-up
    /// with `warmup_successes` handshakes (as `bench --backlog 1 --duration 2s` in a fresh
    /// namespace).
    fn nothing_in_the_window(warmup_successes: u64) -> loadgen::LoadReport {
        let cfg = loadgen::LoadConfig {
            targets: vec!["127.0.0.1:9".parse().unwrap()],
            pattern: loadgen::Pattern::Closed { concurrency: 32 },
            duration: Duration::from_millis(800),
            warmup: Duration::from_millis(200),
            cpus: vec![0],
            workers: 0,
            port_slices: loadgen::PortSlices::On,
            close: loadgen::CloseMode::Rst,
            sources: Vec::new(),
            connect_timeout: Duration::from_secs(3),
            expect_bytes: None,
            max_in_flight: 32,
            late_threshold: Duration::from_millis(1),
            http: None,
            tls: None,
            engine: Default::default(),
            pacing: Default::default(),
            accept_stamps: None,
        };
        let mut r = loadgen::never_started(&cfg);
        r.interrupted = false;
        r.measured_secs = 0.8;
        r.achieved_per_sec = 0.0;
        r.total.attempts = warmup_successes + 32;
        r.total.successes = warmup_successes;
        r
    }

    fn start() -> PhaseStart {
        PhaseStart {
            offset_ms: 200.0,
            unix_ms: 1_795_990_503_200,
            window: (0.2, 1.0),
        }
    }

    /// A window without a success stored `cpm: 0.0`, `achieved_per_sec: 0.0` and CPU per
    /// connection of the warm-up's accepts (41.6/31.8/71.3 µs): no rate and no CPU per
    /// connection exist there (`null`), as `load --format json` says (`cpm: null`).
    #[test]
    fn nothing_measured_a_window_without_a_success_has_no_rate_and_no_cpu_per_connection() {
        let report = nothing_in_the_window(80);
        // The harness divides the phase's CPU time by its 57 accepted connections.
        let side = rec::SideCpu::new(2_371_200, 1_812_600, 1_500_000_000, 1, 57)
            .with_run_ns(4_064_100, 57);
        assert!(side.us_per_conn().is_some(), "the warm-up's figure");
        let cpu = rec::CpuUsage {
            server: Some(side),
            load: side,
        };
        let check = results::analysis::cross_check(&results::analysis::CrossCheckCounts {
            exact: true,
            attempts: 112,
            successes: 80,
            server_accepted: Some(57),
            passive_opens: Some(57),
            active_opens: Some(112),
            attempt_fails: Some(32),
            ..Default::default()
        });
        let p = phase_record("peak", start(), &report, None, cpu, BTreeMap::new(), check);
        assert_eq!(p.successes, 0);
        assert_eq!((p.achieved_per_sec, p.cpm), (None, None));
        for s in [p.cpu.server.unwrap(), p.cpu.load] {
            assert_eq!(
                (s.us_per_conn_user, s.us_per_conn_sys, s.us_per_conn_run),
                (None, None, None)
            );
            // The CPU time itself was measured and stays.
            assert_eq!(s.run_ns, Some(4_064_100));
        }
        let c = p.cross_check.as_ref().unwrap();
        assert!(!c.agree, "23 of 80 never accepted: {}", c.note);
        assert!(p.inconsistency().is_none(), "{:?}", p.inconsistency());
        let json: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert!(
            json["cpm"].is_null() && json["achieved_per_sec"].is_null(),
            "{json}"
        );
    }

    /// Moving never-accepted handshakes out of the successes can leave none: then the phase
    /// measured nothing either.
    #[test]
    fn nothing_measured_after_the_never_accepted_are_moved_out() {
        let mut p = PhaseRecord {
            successes: 5,
            attempts: 5,
            measured_secs: 1.0,
            cpu: rec::CpuUsage {
                server: None,
                load: rec::SideCpu::new(1_000, 1_000, 1_000_000, 1, 5),
            },
            ..PhaseRecord::default()
        };
        p.set_rates();
        count_never_accepted(&mut p, 2);
        assert_eq!(p.achieved_per_sec, Some(3.0));
        assert_eq!(p.cpm, Some(180.0));
        count_never_accepted(&mut p, 3);
        assert_eq!((p.successes, p.achieved_per_sec, p.cpm), (0, None, None));
        assert_eq!(p.cpu.load.us_per_conn(), None);
        assert_eq!(p.failures[results::record::NEVER_ACCEPTED], 5);
    }

    /// A load record names its never-accepted handshakes as `report` reads them (so the
    /// histogram check counts them), whatever loadgen calls them.
    #[test]
    fn never_accepted_classes_take_the_record_names() {
        let f = BTreeMap::from([
            (loadgen::NEVER_ACCEPTED.to_string(), 3),
            (loadgen::NEVER_ACCEPTED_QUEUED.to_string(), 20),
            ("ETIMEDOUT".to_string(), 1),
        ]);
        let r = record_failures(&f);
        assert_eq!(
            r,
            BTreeMap::from([
                (results::record::NEVER_ACCEPTED.to_string(), 3),
                (results::record::NEVER_ACCEPTED_QUEUED.to_string(), 20),
                ("ETIMEDOUT".to_string(), 1),
            ])
        );
        assert_eq!(results::record::never_accepted_total(&r), 23);
    }
}
