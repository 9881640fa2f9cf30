//! The records of the standalone commands, in the bench schema, so `report`, `compare`, `plot`
//! and `merge` read them: [`load_record`] for `load --out DIR` (role `load`) and
//! [`server_record`] for `server --out DIR` (role `server`).
//!
//! A load record holds one phase, `"load"`: the load side's counts, histograms and per-second
//! rows (built by the same conversion as `bench`, [`crate::convert::phase_record`]), the
//! workers' CPU time, the kernel counter deltas of this process's network namespace over the
//! whole run (warm-up included), and a cross-check of the generator's whole-run handshakes
//! against that namespace's `Tcp.ActiveOpens`. With `--segment` it also holds the
//! [`SegmentInfo`]: the segment, the planned and real start, and the clock's sync state.
//!
//! A server record holds one phase, `"server"`: accepts per worker and accept errors
//! ([`rec::ServerSide`]), the workers' CPU time, the kernel counter deltas of the server's
//! network namespace from the moment every listener listened to the end (the stop drain
//! included), and a cross-check of the accepts against that namespace's `Tcp.PassiveOpens` (a
//! connection counts there when its handshake completes and the child socket is created:
//! tcp_create_openreq_child → TCP_MIB_PASSIVEOPENS, net/ipv4/tcp_minisocks.c). No handshake
//! latency: the server does not see when a connection was meant to start.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use loadgen::segment::Segment;
use loadgen::{LoadConfig, LoadReport};
use results::record::{self as rec, Role, RunInfo, RunRecord, SegmentInfo};
use server::ServerReport;
use tuning::clock::ClockSync;

use crate::convert::{phase_record, PhaseStart};
use crate::record::{host_info, Build};

/// When the run and its schedule started.
#[derive(Debug, Clone, Copy)]
pub struct Starts {
    /// The command started (before set-up).
    pub command: SystemTime,
    /// `--start-at` as planned, if given.
    pub planned: Option<SystemTime>,
    /// The schedule (warm-up included) really started.
    pub real: SystemTime,
}

/// What the kernel of this namespace saw over a load run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelView {
    /// Δ of this namespace's kernel counters over the run (empty when unreadable).
    pub counters: BTreeMap<String, i64>,
    /// The handshakes the target's kernel completed (Δ `Tcp.PassiveOpens`) when the targets are
    /// in this namespace (loopback); `None` otherwise.
    pub completed: Option<u64>,
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Builds the load record; `build` names the binary.
///
/// `kernel`: what this namespace's kernel counted ([`KernelView`]). Whether the server
/// application accept()ed the handshakes its kernel completed cannot be seen from here, so the
/// record's `server_accepted` stays unknown (`None`).
pub fn load_record(
    cfg: &LoadConfig,
    report: &LoadReport,
    starts: Starts,
    segment: Option<(Segment, &ClockSync)>,
    kernel: KernelView,
    warnings: &[String],
    build: &Build,
) -> RunRecord {
    let KernelView {
        counters,
        completed: kernel_completed,
    } = kernel;
    let label = match segment {
        Some((s, _)) => format!("load-{}of{}", s.index, s.count),
        None => "load".to_string(),
    };
    let mut config = serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null);
    if let (Some((s, _)), Some(obj)) = (segment, config.as_object_mut()) {
        obj.insert("segment".into(), s.to_string().into());
    }
    let mut r = RunRecord::new(label, config);
    r.role = Role::Load;
    let wall = SystemTime::now()
        .duration_since(starts.command)
        .unwrap_or_default();
    r.run = RunInfo {
        command: "load".into(),
        engine: String::new(),
        engine_fallback_reason: None,
        steering: "none".into(),
        server_cpus: Vec::new(),
        load_cpus: cfg.cpus.clone(),
        close_mode: cfg.close.name().to_string(),
        server_mode: "external".into(),
        netns: false,
        rtt_ns: None,
        target: Some(
            cfg.targets
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
        ),
        connstorm_version: build.version.to_string(),
        git_commit: build.git_commit.to_string(),
        interrupted: report.interrupted,
        started_at: results::timestamp::rfc3339_utc(starts.command),
        started_unix_ms: Some(unix_ms(starts.command)),
        wall_secs: wall.as_secs_f64(),
    };
    r.host = host_info();
    let warmup = cfg.warmup.as_secs_f64();
    let measured_start = starts.real + cfg.warmup;
    let start = PhaseStart {
        offset_ms: measured_start
            .duration_since(starts.command)
            .unwrap_or_default()
            .as_secs_f64()
            * 1e3,
        unix_ms: unix_ms(measured_start),
        window: (warmup, warmup + cfg.duration.as_secs_f64()),
    };
    let workers = &report.workers;
    let successes = report.successes;
    let load_cpu = rec::SideCpu::new(
        workers.iter().map(|w| w.cpu_user_ns).sum(),
        workers.iter().map(|w| w.cpu_sys_ns).sum(),
        workers.iter().map(|w| w.wall_ns).max().unwrap_or(0),
        workers.len(),
        successes,
    )
    .with_run_ns(workers.iter().map(|w| w.cpu_run_ns).sum(), successes);
    let active = counters.get(tuning::counters::ACTIVE_OPENS).copied();
    let total = &report.total;
    // Tcp.ActiveOpens counts every connect(2) that sent a SYN (tcp_v4_connect → TCP_MIB_ACTIVEOPENS
    // in tcp_connect, net/ipv4/tcp_output.c): at least the handshakes that completed, at most
    // the attempts (an attempt refused before its SYN, e.g. EADDRNOTAVAIL, sends none).
    let agree = active.is_some_and(|a| a >= total.successes as i64 && a <= total.attempts as i64);
    let cross_check = rec::CrossCheck {
        server_accepted: None,
        load_successes: total.successes,
        kernel_passive_opens: kernel_completed.and_then(|k| i64::try_from(k).ok()),
        kernel_active_opens: active,
        agree,
        note: format!(
            "whole run (warm-up included): {} attempts, {} handshakes; this namespace's Tcp.ActiveOpens {} (between the two when only this generator connects from here)",
            total.attempts,
            total.successes,
            active.map_or("unreadable".to_string(), |a| a.to_string())
        ),
    };
    r.phases.push(phase_record(
        "load",
        start,
        report,
        None,
        rec::CpuUsage {
            server: None,
            load: load_cpu,
        },
        counters,
        cross_check,
    ));
    r.segment = segment.map(|(s, clock)| SegmentInfo {
        index: s.index,
        count: s.count,
        planned_start_unix_ms: starts.planned.map(unix_ms),
        real_start_unix_ms: unix_ms(starts.real),
        clock_sync: clock.state.clone(),
        clock_offset_ms: clock.offset_ms,
        clock_source: clock.source.clone(),
    });
    r.warnings = warnings.to_vec();
    r
}

/// Builds the server record; `started`: when the listeners listened; `counters`: Δ of the
/// namespace's counters over the run (empty when unreadable); `build` names the binary.
pub fn server_record(
    report: &ServerReport,
    started: SystemTime,
    counters: BTreeMap<String, i64>,
    build: &Build,
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
    let start_ms = unix_ms(started);
    let accepted = report.accepted();
    r.run = RunInfo {
        command: "server".into(),
        engine: report.engine.to_string(),
        engine_fallback_reason: report.fallback_reason.clone(),
        steering: report.steering.to_string(),
        server_cpus: report.workers.iter().map(|w| w.cpu).collect(),
        load_cpus: Vec::new(),
        close_mode: String::new(),
        server_mode: report.mode.to_string(),
        netns: false,
        rtt_ns: None,
        target: None,
        connstorm_version: build.version.to_string(),
        git_commit: build.git_commit.to_string(),
        // A signal is how a server without --duration is meant to end (see `connstorm server`'s
        // exit codes): its counts are whole, not cut short.
        interrupted: false,
        started_at: results::timestamp::rfc3339_utc(started),
        started_unix_ms: Some(start_ms),
        wall_secs: report.wall_time_secs(),
    };
    r.host = host_info();
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
    let empty = results::histogram::new_latency_histogram();
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
                })
                .collect(),
            accept_errors: report.errors(),
        }),
        cpu: rec::CpuUsage {
            server: Some(cpu),
            load: rec::SideCpu::default(),
        },
        counters,
        cross_check: Some(rec::CrossCheck {
            server_accepted: Some(accepted),
            load_successes: 0,
            kernel_passive_opens: passive,
            kernel_active_opens: None,
            agree: passive == Some(accepted as i64),
            note: format!(
                "whole run: {accepted} accepted; this namespace's Tcp.PassiveOpens {} (equal when only this server listens here)",
                passive.map_or("unreadable".to_string(), |p| p.to_string())
            ),
        }),
        ..rec::PhaseRecord::default()
    });
    r
}
