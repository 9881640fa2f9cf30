//! Turns the libraries' reports into run-record parts (the binary is the only place that knows
//! both sides, per DESIGN.md's dependency rule).

use std::collections::BTreeMap;

use results::record::{self as rec, PhaseRecord};

/// Builds a phase record from a load report and the harness's measurements.
pub fn phase_record(
    name: &str,
    report: &loadgen::LoadReport,
    server: Option<rec::ServerSide>,
    cpu: rec::CpuUsage,
    counters: BTreeMap<String, i64>,
    cross_check: rec::CrossCheck,
) -> PhaseRecord {
    PhaseRecord {
        name: name.to_string(),
        pattern: pattern(report.pattern),
        offered_per_sec: report.offered_per_sec,
        achieved_per_sec: report.achieved_per_sec,
        cpm: report.cpm(),
        measured_secs: report.measured_secs,
        attempts: report.attempts,
        successes: report.successes,
        failures: report.failures.clone(),
        late: report.late,
        dropped: report.dropped,
        histograms: rec::Histograms::encode(
            &report.handshake,
            &report.service,
            report.first_byte.as_ref(),
        ),
        timeline: report
            .timeline
            .iter()
            .filter(|r| !r.warmup)
            .map(timeline_row)
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

fn timeline_row(r: &loadgen::TimelineRow) -> rec::TimelineRow {
    rec::TimelineRow {
        t_secs: r.t_secs as f64,
        attempts: r.attempts,
        successes: r.successes,
        failures: r.failures_by_cause.clone(),
        p50_ns: r.p50_ns,
        p99_ns: r.p99_ns,
    }
}
