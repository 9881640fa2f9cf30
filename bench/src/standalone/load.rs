//! `connstorm load` on its own: what the binary derives from a finished run besides the
//! library's [`LoadReport`].
//!
//! - [`kernel_view`]: against a local target, the kernel's view of the run (acceptance
//!   reconciled with the client's handshakes, the listener's accept queue after a settle, the
//!   diagnosis), reclassifying the handshakes the server never accepted.
//! - [`late_start_warning`], [`port_budget_warning`]: warnings printed before and after a run.
//! - [`JsonReport`]: the report as `--format json` prints it.
//! - [`record`]: `load --out DIR`, the run as a record in the bench schema (role `load`), so
//!   `report`, `compare`, `plot` and `merge` read it. The record holds one phase, `"load"`: the
//!   load side's counts, histograms and per-second rows (built by the same conversion as
//!   `bench`, [`crate::convert::phase_record`]), the workers' CPU time, the kernel counter
//!   deltas of this process's network namespace over the whole run (warm-up included), and a
//!   cross-check of the generator's whole-run handshakes against that namespace's
//!   `Tcp.ActiveOpens`. With `--segment` it also holds the [`SegmentInfo`]: the segment, the
//!   planned and real start, and the clock's sync state.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use loadgen::segment::Segment;
use loadgen::{CloseMode, LoadConfig, LoadReport, Pattern};
use results::analysis::Acceptance;
use results::record::{self as rec, BuildInfo, Role, RunInfo, RunRecord, SegmentInfo};
use results::render::{AcceptQueueEnd, KernelView};
use tuning::host::ClockSync;

use crate::convert::{phase_record, PhaseStart};
use crate::record::Build;

/// What the kernel of the targets' namespace (this one: every target is loopback) says about the
/// run, from its counters `before` it and `now`: acceptance reconciled with the client's
/// handshakes (the never-accepted ones reclassified in `report`), the listener's accept queue
/// after the settle ([`crate::accept_queue::settle`]; `hurry`: a second signal ends it; what is
/// left of this run is reclassified too), and the diagnosis with this namespace's settings and
/// the listener's backlog. Call it on a thread in the targets' namespace.
pub fn kernel_view(
    cfg: &LoadConfig,
    report: &mut LoadReport,
    before: &tuning::counters::Snapshot,
    now: &tuning::counters::Snapshot,
    hurry: &dyn Fn() -> bool,
) -> KernelView {
    let delta = now.delta(before).to_map();
    let active = delta.get("Tcp.ActiveOpens").copied().unwrap_or(0);
    // Private: nothing but this run opens connections here (only `lo` in the namespace, and
    // no more SYNs sent than our attempts).
    let private = only_loopback_interface() && active <= report.total.attempts as i64;
    // TCP handshakes, whether or not an HTTP exchange after them succeeded.
    let handshakes = report.total.handshakes + report.total.completed_after_timeout;
    let acceptance = results::analysis::reconcile(handshakes, &delta, private);
    // With `--http` a connection the server never accepted already failed its exchange (reset
    // or no response): it is no success to move.
    let plain = cfg.http.is_none();
    if plain {
        report.reclassify_never_accepted(acceptance.never_accepted, cfg.warmup.is_zero());
    }
    // What is still in the listener's accept queue after the server was given a short time to
    // take it was never accepted: a failure class of its own.
    let settled = crate::accept_queue::settle(&cfg.targets, hurry);
    let accept_queue = settled.map(|s| {
        let ours = crate::accept_queue::this_runs(s.after.queued, acceptance.accepted);
        AcceptQueueEnd {
            at_end: s.at_end.queued,
            after_settle: s.after.queued,
            settle_ms: s.waited.as_millis() as u64,
            this_run: ours,
            never_accepted: if plain {
                report.reclassify_still_queued(ours)
            } else {
                0
            },
        }
    });
    // This thread is in the targets' namespace, so /proc/sys/net is theirs (see
    // tuning::counters::DEFAULT_SYS_DIR).
    let mut settings =
        tuning::counters::read_settings(Path::new(tuning::counters::DEFAULT_SYS_DIR));
    if let Some(s) = settled {
        settings.insert("listen_backlog".into(), s.after.backlog);
    }
    // This run's connections the server application never took, whatever class the client
    // counted them under (with `--http` their exchange failed: no answer came).
    let still_queued = accept_queue.map_or(0, |q| q.this_run);
    // The diagnosis reads the failure classes by the record's names (as `report` does).
    let failures = crate::convert::record_failures(&report.total.failures);
    let causes = results::analysis::diagnose(&results::analysis::Evidence {
        counters: &delta,
        settings: &settings,
        attempts: report.total.attempts,
        failures: &failures,
        client_handshakes: handshakes,
        server_accepts: Some(acceptance.accepted - still_queued),
        // Balanced when the count is exact and nothing was lost; unbalanced whenever something
        // was (even a lower bound); unknown when other connections may hide a loss.
        balanced: match acceptance.exactness {
            results::analysis::Exactness::Exact => Some(acceptance.never_accepted == 0),
            results::analysis::Exactness::LowerBound => {
                (acceptance.never_accepted > 0).then_some(false)
            }
        },
        late_handshakes: report.total.completed_after_timeout,
        still_queued,
    })
    .into_iter()
    .map(|c| c.line)
    .collect();
    KernelView {
        delta,
        acceptance,
        causes,
        accept_queue,
        settings,
    }
}

/// True when this network namespace has no interface but `lo` (/proc/thread-self/net/dev): then
/// no connection can come from outside it.
fn only_loopback_interface() -> bool {
    std::fs::read_to_string("/proc/thread-self/net/dev").is_ok_and(|t| only_lo(&t))
}

/// Whether a `/proc/net/dev` text names no interface but `lo`.
fn only_lo(dev: &str) -> bool {
    dev.lines()
        .skip(2)
        .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim().to_string()))
        .all(|n| n == "lo")
}

/// The warning when an open-loop run dropped starts that found a free slot (the generator was
/// behind, not the target) while its `--connect-timeout` is shorter than the late threshold
/// (`LoadConfig::late_threshold`, 1 ms): a start that cannot begin within the connect timeout of
/// its scheduled time is dropped, so with a timeout that short a lag the report would not even
/// call late drops starts, and the drops are the timeout's, not the server's.
pub fn short_timeout_warning(cfg: &LoadConfig, report: &LoadReport) -> Option<String> {
    let lag = report.generator_lag.as_ref()?;
    let behind = report.dropped.saturating_sub(report.dropped_in_flight_full);
    (behind > 0 && cfg.connect_timeout < cfg.late_threshold).then(|| {
        let p99 = if lag.hist.is_empty() {
            String::new()
        } else {
            format!(
                "; the starts that did begin lagged p99 {}",
                common::numfmt::ns(lag.hist.value_at_quantile(0.99) as f64)
            )
        };
        format!(
            "--connect-timeout {} is shorter than the late threshold ({}): a start that cannot begin within --connect-timeout of its scheduled time is dropped, so {} starts were dropped for a lag the report would not even call late{p99} — the drops are the timeout's, not the server's; allow a longer --connect-timeout",
            common::numfmt::ns(cfg.connect_timeout.as_nanos() as f64),
            common::numfmt::ns(cfg.late_threshold.as_nanos() as f64),
            common::numfmt::count(behind)
        )
    })
}

/// The warning when the schedule started more than [`results::analysis::SKEW_BOUND_MS`] after
/// `--start-at` (`planned`; `real`: when it started): the instant had passed when the workers
/// were ready.
pub fn late_start_warning(planned: Option<SystemTime>, real: SystemTime) -> Option<String> {
    let late = planned
        .and_then(|t| real.duration_since(t).ok())
        .filter(|l| l.as_millis() > u128::from(results::analysis::SKEW_BOUND_MS))?;
    Some(format!(
        "the schedule started {} ms after --start-at (the instant had passed when the workers were ready): give a start time further ahead",
        late.as_millis()
    ))
}

/// The warning when the rate or the concurrency of `cfg` needs more ephemeral ports than this
/// host offers ([`tuning::advice::port_shortfall`], with TIME_WAIT reuse taken into account from the
/// settings it depends on, read from `io`: tcp_tw_reuse, tcp_timestamps, tcp_tw_reuse_delay),
/// saying how to fix it; `None` when the ports suffice. `b` gives the run's (source, target)
/// triples.
///
/// # Errors
/// The settings cannot be read (the message; there is then no port-budget check).
pub fn port_budget_warning(
    cfg: &LoadConfig,
    b: &loadgen::ports::PortBudget,
    io: &tuning::sysctl::ProcSys,
) -> Result<Option<String>, String> {
    let settings = tuning::advice::PortSettings::read(io).map_err(|e| e.to_string())?;
    let all_local = cfg.targets.iter().all(|t| common::addr::is_local(t.ip()));
    let e =
        tuning::advice::port_budget(&settings, b.triples, all_local, cfg.close == CloseMode::Fin);
    let demand = match cfg.pattern {
        Pattern::Open { rate_per_sec, .. } => tuning::advice::PortDemand::Rate {
            per_sec: rate_per_sec,
        },
        Pattern::Closed { concurrency } => tuning::advice::PortDemand::InFlight {
            connections: u64::from(concurrency),
        },
    };
    Ok(tuning::advice::port_shortfall(&e, demand).map(|w| {
        let reuse = tuning::advice::port_reuse_remedy(&e)
            .map(|r| format!(", or {r}"))
            .unwrap_or_default();
        format!(
            "{w}; use more --source addresses (any 127.0.0.0/8 on loopback), more targets, \
             --close rst or --close server, a wider net.ipv4.ip_local_port_range{reuse}"
        )
    }))
}

/// The report as `--format json` prints it.
#[derive(serde::Serialize)]
pub struct JsonReport<'a> {
    /// Connections per minute achieved in the measured window; `null` when nothing was measured
    /// (no success in it), never a made-up 0.
    pub cpm: Option<f64>,
    /// The ephemeral-port budget of the run's (source, target) triples, when readable.
    pub port_budget: Option<&'a loadgen::ports::PortBudget>,
    /// The same WARNING lines as the text report (e.g. the generator fell behind its schedule).
    pub warnings: &'a [String],
    /// Every target is a loopback address, so the kernel counters below are the server's too.
    pub targets_local: bool,
    /// Δ of every kernel TCP counter of this namespace over the run (only when `targets_local`).
    pub kernel_counters: Option<&'a BTreeMap<String, i64>>,
    /// Client handshakes vs the server's passive opens (only when `targets_local`; `null` means
    /// server-side acceptance is unknown from here).
    pub acceptance: Option<&'a Acceptance>,
    /// One line per cause found in the counters and the namespace's settings (only when
    /// `targets_local`), in the words `bench` uses.
    pub diagnosis: Option<&'a Vec<String>>,
    /// The listener's accept queue at the end (`ss` Recv-Q, only when `targets_local` and
    /// readable): when the load ended, after the settle, the settle's length, and this run's
    /// connections left there (the failure class `NEVER_ACCEPTED_QUEUED`).
    pub accept_queue: Option<&'a AcceptQueueEnd>,
    /// The load report itself, its fields at the top level.
    #[serde(flatten)]
    pub report: &'a LoadReport,
}

impl<'a> JsonReport<'a> {
    /// The JSON report of `report`, with the kernel's view when the targets are local.
    pub fn new(
        report: &'a LoadReport,
        budget: Option<&'a loadgen::ports::PortBudget>,
        warnings: &'a [String],
        local: bool,
        kernel: Option<&'a KernelView>,
    ) -> Self {
        JsonReport {
            cpm: (report.successes > 0).then(|| report.cpm()),
            port_budget: budget,
            warnings,
            targets_local: local,
            kernel_counters: kernel.map(|k| &k.delta),
            acceptance: kernel.map(|k| &k.acceptance),
            diagnosis: kernel.map(|k| &k.causes),
            accept_queue: kernel.and_then(|k| k.accept_queue.as_ref()),
            report,
        }
    }
}

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
        started_unix_ms: Some(super::unix_ms(starts.command)),
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
        unix_ms: super::unix_ms(measured_start),
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
        planned_start_unix_ms: starts.planned.map(super::unix_ms),
        real_start_unix_ms: super::unix_ms(starts.real),
        clock_sync: clock.state.clone(),
        clock_offset_ms: clock.offset_ms,
        clock_source: clock.source.clone(),
        whole_config: serde_json::to_value(whole).ok(),
    });
    r.warnings = warnings.to_vec();
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_lo_reads_the_interface_names_after_the_two_header_lines() {
        let head = "Inter-|   Receive\n face |bytes\n";
        assert!(only_lo(&format!("{head}    lo: 1 2 3\n")));
        assert!(!only_lo(&format!("{head}    lo: 1 2 3\n  eth0: 4 5 6\n")));
    }

    #[test]
    fn a_start_later_than_the_skew_bound_is_warned_about_and_one_within_it_is_not() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let bound = results::analysis::SKEW_BOUND_MS;
        assert_eq!(
            late_start_warning(Some(t), t + Duration::from_millis(bound)),
            None
        );
        let w = late_start_warning(Some(t), t + Duration::from_millis(bound + 1)).unwrap();
        assert!(
            w.starts_with(&format!(
                "the schedule started {} ms after --start-at",
                bound + 1
            )),
            "{w}"
        );
        assert_eq!(late_start_warning(None, t), None);
    }
}
