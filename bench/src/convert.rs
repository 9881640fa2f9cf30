//! Turns the libraries' reports into run-record parts (the binary is the only place that knows
//! both sides, per DESIGN.md's dependency rule).

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
    PhaseRecord {
        name: name.to_string(),
        pattern: pattern(report.pattern),
        offered_per_sec: report.offered_per_sec,
        achieved_per_sec: report.achieved_per_sec,
        cpm: report.cpm(),
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
                .map(|l| results::histogram::encode(&l.hist)),
            http_response: report
                .http
                .as_ref()
                .map(|h| results::histogram::encode(&h.response)),
            http_first_byte: report
                .http
                .as_ref()
                .map(|h| results::histogram::encode(&h.first_byte)),
            tls_handshake: report
                .tls
                .as_ref()
                .map(|t| results::histogram::encode(&t.handshake)),
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
                attempts: w.attempts,
                successes: w.successes,
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
            failures: rec::TlsCounts::failures_of(&report.failures),
        }),
        ..PhaseRecord::default()
    }
}

/// The load report's failure table in the record's class names: loadgen's never-accepted
/// classes ([`loadgen::NEVER_ACCEPTED`], [`loadgen::NEVER_ACCEPTED_QUEUED`]) become the record's
/// ([`results::diagnosis::NEVER_ACCEPTED`], [`results::diagnosis::NEVER_ACCEPTED_QUEUED`]), which
/// `report` reads as handshakes with a histogram sample; errno names stay.
pub fn record_failures(failures: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (name, &n) in failures {
        let name = match name.as_str() {
            loadgen::NEVER_ACCEPTED => results::diagnosis::NEVER_ACCEPTED,
            loadgen::NEVER_ACCEPTED_QUEUED => results::diagnosis::NEVER_ACCEPTED_QUEUED,
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
/// class [`results::diagnosis::NEVER_ACCEPTED`], and recomputes the rates from the successes.
pub fn count_never_accepted(p: &mut PhaseRecord, n: u64) {
    if n == 0 {
        return;
    }
    let n = n.min(p.successes);
    p.successes -= n;
    *p.failures
        .entry(results::diagnosis::NEVER_ACCEPTED.to_string())
        .or_insert(0) += n;
    if p.measured_secs > 0.0 {
        p.achieved_per_sec = p.successes as f64 / p.measured_secs;
        p.cpm = p.achieved_per_sec * 60.0;
    }
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
            .map(|h| results::histogram::encode(&h.decode())),
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
                (results::diagnosis::NEVER_ACCEPTED.to_string(), 3),
                (results::diagnosis::NEVER_ACCEPTED_QUEUED.to_string(), 20),
                ("ETIMEDOUT".to_string(), 1),
            ])
        );
        assert_eq!(results::diagnosis::never_accepted_total(&r), 23);
    }
}
