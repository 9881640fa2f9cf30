//! `server --out DIR`: the server's run as a record in the bench schema (role `server`), for
//! `report` and for `merge`, which cross-checks it against the load generators' records.
//!
//! One phase, `"server"`: accepts per worker and accept errors ([`rec::ServerSide`]), the
//! workers' CPU time, the kernel counter deltas of the server's network namespace from the moment
//! every listener listened to the end (the stop drain included), and a cross-check of the
//! accepts against that namespace's `Tcp.PassiveOpens` (a connection counts there when its
//! handshake completes and the child socket is created: tcp_create_openreq_child →
//! TCP_MIB_PASSIVEOPENS, net/ipv4/tcp_minisocks.c). No handshake latency: the server does not
//! see when a connection was meant to start.

use std::collections::BTreeMap;
use std::time::SystemTime;

use results::record::{self as rec, BuildInfo, Role, RunInfo, RunRecord};
use server::ServerReport;

use crate::record::Build;

/// Builds the server record; `started`: when the listeners listened; `counters`: Δ of the
/// namespace's counters over the run (empty when unreadable), read on the calling thread;
/// `interrupted`: the run was cut short (two quick signals: one signal is how a server without
/// `--duration` is meant to end, and its counts are whole); `tls`: with `--tls`, whether it
/// offered resumption (`--tls-resume`); `build`/`info`: the binary.
pub fn record(
    report: &ServerReport,
    started: SystemTime,
    counters: BTreeMap<String, i64>,
    interrupted: bool,
    tls: Option<bool>,
    build: &Build,
    info: BuildInfo,
) -> RunRecord {
    let mut r = RunRecord::new(
        "server",
        serde_json::json!({
            "listen": report.listen.to_string(),
            "backlog": report.backlog,
            "mode": report.mode.to_string(),
        }),
    );
    r.role = Role::Server;
    let start_ms = crate::record::unix_ms(started);
    let accepted = report.accepted();
    r.run = RunInfo {
        command: "server".into(),
        engine: report.engine.to_string(),
        engine_fallback_reason: report.fallback_reason.clone(),
        engine_detail: report.ring_setup.clone(),
        steering: report.steering.to_string(),
        server_cpus: report.workers.iter().map(|w| w.cpu).collect(),
        load_cpus: Vec::new(),
        close_mode: String::new(),
        server_mode: report.mode.to_string(),
        netns: false,
        load_engine: None,
        load_engine_detail: None,
        placement: None,
        tls: None,
        rtt_ns: None,
        target: None,
        connstorm_version: build.version.to_string(),
        git_commit: build.git_commit.to_string(),
        interrupted,
        started_at: results::record::rfc3339_utc(started),
        started_unix_ms: Some(start_ms),
        wall_secs: report.wall_time_secs(),
    };
    r.host = crate::record::host_info();
    // The caller read the counters on this thread (the workers run on others).
    r.counters_netns = crate::record::counters_netns(r.host.hostname.clone());
    r.build = info;
    let passive = counters.get(tuning::counters::PASSIVE_OPENS).copied();
    let w = &report.workers;
    let cpu = rec::SideCpu::new(
        w.iter().map(|w| w.cpu_user_ns).sum(),
        w.iter().map(|w| w.cpu_sys_ns).sum(),
        report.wall_time_ns,
        w.len(),
        accepted,
    )
    .with_run_ns(w.iter().map(|w| w.cpu_run_ns).sum(), accepted);
    let empty = results::record::new_latency_histogram();
    r.phases.push(rec::PhaseRecord {
        name: "server".into(),
        measured_secs: report.wall_time_secs(),
        start_unix_ms: Some(start_ms),
        start_offset_ms: Some(0.0),
        histograms: rec::Histograms::encode(&empty, &empty, None),
        server: Some(rec::ServerSide {
            workers: w
                .iter()
                .map(|w| rec::WorkerAccepts {
                    cpu: w.cpu,
                    accepted: w.accepted,
                    cpu_run_ns: Some(w.cpu_run_ns),
                })
                .collect(),
            accept_errors: report.errors(),
            emfile_backoffs: Some(w.iter().map(|w| w.emfile_backoffs).sum()),
            left_in_queue: Some(w.iter().map(|w| w.left_in_queue).sum()),
            tls_accepted: tls.map(|_| report.tls_accepted()),
            tls_resumed: tls.map(|_| report.tls_resumed()),
            // The failed handshakes by class (the record kept none: "0 handshakes completed"
            // beside 6,492 failed ones the run had printed).
            tls_failures: report.tls_failures(),
            tls_resumption: tls,
            counters: Default::default(),
            spread: rec::AcceptSpread::of(&w.iter().map(|w| w.accepted).collect::<Vec<_>>()),
            syn_cpu: report.syn_cpu(),
        }),
        cpu: rec::CpuUsage {
            server: Some(cpu),
            load: rec::SideCpu::default(),
        },
        counters,
        cross_check: Some(cross_check(accepted, passive)),
        ..rec::PhaseRecord::default()
    });
    r
}

/// The whole run's accepts against this namespace's Δ `Tcp.PassiveOpens` (`None`: unreadable):
/// they agree when equal.
fn cross_check(accepted: u64, passive: Option<i64>) -> rec::CrossCheck {
    rec::CrossCheck {
        server_accepted: Some(accepted),
        load_successes: 0,
        load_attempts: None,
        kernel_passive_opens: passive,
        kernel_active_opens: None,
        agree: passive == Some(accepted as i64),
        note: format!(
            "whole run: {} accepted; this namespace's Tcp.PassiveOpens {} (equal when only this server listens here)",
            common::numfmt::count(accepted),
            passive.map_or("unreadable".to_string(), common::numfmt::signed)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_agree_with_passive_opens_only_when_equal_and_unreadable_is_named() {
        assert!(cross_check(7, Some(7)).agree);
        assert!(
            cross_check(40_000, Some(40_000)).note.starts_with(
                "whole run: 40,000 accepted; this namespace's Tcp.PassiveOpens 40,000 "
            ),
            "numbers in the one format"
        );
        assert!(!cross_check(7, Some(8)).agree);
        let c = cross_check(7, None);
        assert!(!c.agree);
        assert_eq!(
            c.note,
            "whole run: 7 accepted; this namespace's Tcp.PassiveOpens unreadable (equal when only this server listens here)"
        );
    }
}
