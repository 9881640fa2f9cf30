//! `load --out DIR`: the run as a record in the bench schema (role `load`), so `report`,
//! `compare`, `plot` and `merge` read it. The record holds one phase, `"load"`: the load side's
//! counts, histograms and per-second rows (built by the same conversion as `bench`,
//! [`crate::convert::phase_record`]), the workers' CPU time, the kernel counter deltas of this
//! process's network namespace over the whole run (warm-up included), and a cross-check of the
//! generator's whole-run handshakes against that namespace's `Tcp.ActiveOpens`. With
//! `--segment` it also holds the [`SegmentInfo`]: the segment, the planned and real start, and
//! the clock's sync state.

use std::collections::BTreeMap;
use std::time::SystemTime;

use loadgen::segment::Segment;
use loadgen::{LoadConfig, LoadReport};
use results::record::{self as rec, BuildInfo, Role, RunInfo, RunRecord, SegmentInfo};
use tuning::host::ClockSync;

use crate::convert::{phase_record, PhaseStart};
use crate::record::Build;

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

/// Builds the load record.
///
/// `segment`: the segment, the clock's sync state and the whole run's configuration before it
/// was narrowed to the segment (`cfg`); `counters`: Δ of this namespace's kernel counters over
/// the run (empty when unreadable), with `kernel_completed`: the handshakes the target's kernel
/// completed (Δ `Tcp.PassiveOpens`) when
/// the targets are in this namespace (loopback). Whether the server application accept()ed them
/// cannot be seen from here, so the record's `server_accepted` stays unknown (`None`);
/// `build`: the binary's version and commit, and its record `build` section.
pub fn record(
    cfg: &LoadConfig,
    report: &LoadReport,
    starts: Starts,
    segment: Option<(Segment, &ClockSync, &LoadConfig)>,
    (counters, kernel_completed): (BTreeMap<String, i64>, Option<u64>),
    warnings: &[String],
    build: (&Build, BuildInfo),
) -> RunRecord {
    let label = match segment {
        Some((s, _, _)) => format!("load-{}of{}", s.index, s.count),
        None => "load".to_string(),
    };
    let mut config = serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null);
    if let (Some((s, _, _)), Some(obj)) = (segment, config.as_object_mut()) {
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
        engine_detail: None,
        steering: "none".into(),
        server_cpus: Vec::new(),
        load_cpus: cfg.cpus.clone(),
        close_mode: cfg.close.name().to_string(),
        server_mode: "external".into(),
        netns: false,
        load_engine: report.engine.as_ref().map(|e| e.engine.to_string()),
        load_engine_detail: report.engine.as_ref().map(|e| e.line()),
        placement: None,
        tls: cfg.tls.as_ref().map(crate::commands::tls::setup_of),
        rtt_ns: None,
        target: Some(
            cfg.targets
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
        ),
        connstorm_version: build.0.version.to_string(),
        git_commit: build.0.git_commit.to_string(),
        interrupted: report.interrupted,
        started_at: results::record::rfc3339_utc(starts.command),
        started_unix_ms: Some(crate::record::unix_ms(starts.command)),
        wall_secs: wall.as_secs_f64(),
    };
    r.host = crate::record::host_info();
    // This thread read the counters (`load` runs its workers on others).
    r.counters_netns = crate::record::counters_netns(r.host.hostname.clone());
    r.build = build.1;
    let warmup = cfg.warmup.as_secs_f64();
    let measured_start = starts.real + cfg.warmup;
    let start = PhaseStart {
        offset_ms: measured_start
            .duration_since(starts.command)
            .unwrap_or_default()
            .as_secs_f64()
            * 1e3,
        unix_ms: crate::record::unix_ms(measured_start),
        window: (warmup, warmup + cfg.duration.as_secs_f64()),
    };
    let workers = &report.workers;
    // The workers' CPU times cover the whole run, warm-up included, so they are divided by
    // the whole run's handshakes (as bench's peak phase does), not by the measured part's.
    let successes = report.total.successes;
    let load_cpu = rec::SideCpu::new(
        workers.iter().map(|w| w.cpu_user_ns).sum(),
        workers.iter().map(|w| w.cpu_sys_ns).sum(),
        workers.iter().map(|w| w.wall_ns).max().unwrap_or(0),
        workers.len(),
        successes,
    )
    .with_run_ns(workers.iter().map(|w| w.cpu_run_ns).sum(), successes)
    .with_spin_ns(workers.iter().map(|w| w.spun_ns).sum(), successes);
    let active = counters.get(tuning::counters::ACTIVE_OPENS).copied();
    let total = &report.total;
    // Tcp.ActiveOpens counts every connect(2) that sent a SYN (tcp_v4_connect → TCP_MIB_ACTIVEOPENS
    // in tcp_connect, net/ipv4/tcp_output.c): at least the handshakes that completed, at most
    // the attempts (an attempt refused before its SYN, e.g. EADDRNOTAVAIL, sends none).
    let agree = active.is_some_and(|a| a >= total.successes as i64 && a <= total.attempts as i64);
    let cross_check = rec::CrossCheck {
        server_accepted: None,
        load_successes: total.successes,
        load_attempts: Some(total.attempts),
        kernel_passive_opens: kernel_completed.and_then(|k| i64::try_from(k).ok()),
        kernel_active_opens: active,
        agree,
        note: format!(
            "whole run (warm-up included): {} attempts, {} handshakes; this namespace's Tcp.ActiveOpens {} (between the two when only this generator connects from here)",
            common::numfmt::count(total.attempts),
            common::numfmt::count(total.successes),
            active.map_or("unreadable".to_string(), common::numfmt::signed)
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
    r.segment = segment.map(|(s, clock, whole)| SegmentInfo {
        index: s.index,
        count: s.count,
        planned_start_unix_ms: starts.planned.map(crate::record::unix_ms),
        real_start_unix_ms: crate::record::unix_ms(starts.real),
        clock_sync: clock.state.clone(),
        clock_offset_ms: clock.offset_ms,
        clock_source: clock.source.clone(),
        whole_config: serde_json::to_value(whole).ok(),
    });
    r.warnings = warnings.to_vec();
    r
}
