//! `connstorm load`: open connections to one or more servers at an intended rate (open loop)
//! or a fixed concurrency (closed loop) and report connections per minute and handshake
//! latency.
//!
//! - [`args`]: the options ([`Args`]) and their value parsers (targets resolved to every
//!   address, source ranges expanded); [`config`] turns them into a checked
//!   [`loadgen::LoadConfig`], refusing bad input before anything is created.
//! - [`run`] (here): the port-budget check, the `--start-at` wait, the run with its per-second
//!   lines, the kernel's view of it ([`kernel`], with the listener's [`accept_queue`] after a
//!   settle), the [`warnings`], the `--out` record ([`record`]) and the report (text, or
//!   [`json`]).
//!
//! Exit codes: 0 the run completed (some attempts may have failed: see the report); 1 a
//! run-time failure; 2 bad input, refused before anything is created; 3 the run completed but
//! no attempt of the whole run succeeded (every attempt failed, none could start, or none was
//! accepted by the server); 128+signo (130 SIGINT, 143 SIGTERM) interrupted by a signal, after
//! the report was printed.

pub mod accept_queue;
pub mod args;
pub mod config;
pub mod json;
pub mod kernel;
pub mod record;
pub mod warnings;

pub use args::Args;
pub use config::pacing;

use std::path::Path;
use std::time::SystemTime;

use anyhow::Context;
use loadgen::{LoadError, LoadReport, TimelineRow};
use results::record::BuildInfo;
use results::render::KernelSection;

use super::metrics;
use super::Format;
use crate::record::Build;
use warnings::{fd_cap_warning, late_start_warning, port_budget_warning, short_timeout_warning};

/// Runs `connstorm load`; `build`: the binary's version and build, for the record. Returns
/// the exit code (see the module docs).
///
/// # Errors
/// Bad input (exit 2): an inconsistent configuration, a segment with no share, a start time in
/// the past, an unusable `--out` or `--metrics`, a CPU the workers cannot pin to. Others (exit
/// 1): the workers cannot start, the record or stdout cannot be written.
pub fn run(args: Args, build: (Build, BuildInfo)) -> anyhow::Result<i32> {
    let command_start = SystemTime::now();
    // Refused before anything is created when this process may not profile.
    let profile = args.profile.check()?;
    crate::limits::check_connect_timeout(args.connect_timeout)?;
    let nofile = loadgen::rlimit::raise_nofile_limit().context("raising the open-file limit")?;
    let whole = config::config(&args, nofile)?;
    let fd_capped_in_flight = config::fd_capped_in_flight(&args, nofile);
    let json = args.format == Format::Json;
    let cfg = match args.segment {
        Some(seg) => seg.apply(whole.clone(), args.max_in_flight.is_some())?,
        None => whole.clone(),
    };
    let planned = args
        .start_at
        .map(|at| loadgen::start::planned_start(at, command_start))
        .transpose()?;
    if let Some(dir) = &args.out {
        crate::record::check_writable_dir(dir)?;
    }
    // Bound before any attempt: an address in use is bad input before anything starts.
    let endpoint = metrics::start(&args.metrics, "load")?;
    let metrics = endpoint.as_ref().map(|ep| {
        let m = loadgen::metrics::LoadMetrics::new();
        m.begin(cfg.pattern, cfg.close);
        ep.register(Box::new(std::sync::Arc::clone(&m)));
        m
    });
    let clock = (args.segment.is_some() || planned.is_some()).then(tuning::host::read_clock);
    if let Some(w) = clock
        .as_ref()
        .and_then(|s| tuning::host::clock_warning(s, results::analysis::SKEW_BOUND_MS as f64))
    {
        eprintln!("connstorm load: warning: {w}");
    }
    let budget = loadgen::ports::read_port_range(Path::new("/proc"))
        .map(|r| loadgen::ports::port_budget(r, &cfg.targets, &cfg.sources, cfg.close));
    match &budget {
        Ok(b) => {
            let io = tuning::sysctl::ProcSys { root: "/".into() };
            match port_budget_warning(&cfg, b, &io) {
                Ok(Some(w)) => eprintln!("connstorm load: warning: {w}"),
                Ok(None) => {}
                Err(e) => eprintln!("connstorm load: warning: {e}; no port-budget check"),
            }
        }
        Err(e) => eprintln!(
            "connstorm load: warning: cannot read ip_local_port_range ({e}); no port-budget check"
        ),
    }
    // Ports still in TIME_WAIT toward the targets from an earlier run count against this one.
    let time_wait_before =
        match warnings::time_wait_warnings(&cfg, &tuning::sysctl::ProcSys { root: "/".into() }) {
            Ok((lines, held)) => {
                for w in &lines {
                    eprintln!("connstorm load: warning: {w}");
                }
                Some((lines, held))
            }
            Err(e) => {
                eprintln!("connstorm load: warning: {e}; no TIME_WAIT check");
                None
            }
        };
    eprintln!(
        "connstorm load: {}; {}",
        common::wire::describe(cfg.close.name(), cfg.http.is_some(), cfg.tls.is_some()),
        loadgen::render::plan_line(&cfg)
    );
    if let Some(cap) = fd_capped_in_flight {
        eprintln!("connstorm load: warning: {}", fd_cap_warning(cap));
    }
    let stop = crate::signals::stop_flag().context("installing the SIGINT/SIGTERM handler")?;
    let bar = crate::progress::begin("load", cfg.warmup + cfg.duration);
    let offered = cfg.pattern.offered_per_sec();
    let mut on_second = |row: &TimelineRow| {
        if let Some(m) = &metrics {
            m.observe(row);
        }
        crate::progress::second_line(&loadgen::render::second_line(row, offered));
    };
    // The kernel's counters of the targets' namespace: readable from here only when every target
    // is a loopback address (then it is this process's own namespace).
    let local = cfg.targets.iter().all(|t| common::addr::is_local(t.ip()));
    let before = (local || args.out.is_some()).then(read_counters).flatten();
    let mut never_started = None;
    if let Some(t) = planned {
        eprintln!(
            "connstorm load: schedule starts at {} (in {:.3} s)",
            humantime::format_rfc3339_millis(t),
            t.duration_since(SystemTime::now())
                .unwrap_or_default()
                .as_secs_f64()
        );
        // Workers are set up in the last 200 ms; the wait before is interruptible.
        if !loadgen::start::wait_until(t, std::time::Duration::from_millis(200), &stop) {
            never_started = Some(t);
        }
    }
    // The profile starts when the measured part begins: after --start-at and the warm-up.
    let armed = profile.filter(|_| never_started.is_none()).map(|p| {
        let until_start = planned
            .and_then(|t| t.duration_since(SystemTime::now()).ok())
            .unwrap_or_default();
        crate::profile::Armed::arm(p.config(&[("load", &cfg.cpus)]), until_start + cfg.warmup)
    });
    let (mut report, real_start) = match never_started {
        // Interrupted while waiting for --start-at: nothing ran, and the report and record say so.
        Some(_) => (loadgen::never_started(&cfg), SystemTime::now()),
        None => loadgen::run_at(&cfg, planned, &stop, &mut on_second).map_err(|e| match e {
            LoadError::Config(_) | LoadError::Pin { .. } => crate::bad_input(e.to_string()),
            e => anyhow::Error::new(e).context("running the load"),
        })?,
    };
    let profiled = armed.map(crate::profile::Armed::finish);
    drop(bar);
    if let Some(m) = &metrics {
        m.finish();
    }
    let kernel = match &before {
        Some(before) if local => read_counters().map(|now| {
            kernel::kernel_view(
                &cfg,
                &mut report,
                (before, &now),
                time_wait_before.as_ref().map(|(_, held)| *held),
                &crate::signals::hurry,
            )
        }),
        _ => None,
    };
    // A signal after the schedule ended (during the accept-queue settle) still interrupted the
    // run: the settle may have been cut short, and the exit code and record say so.
    if crate::signals::stopped(&stop) {
        report.interrupted = true;
    }
    // With a connect timeout below the late threshold the drops are the timeout's: that warning
    // replaces the generic one (which would advise a lower rate or more CPUs).
    // When the descriptor limit set the in-flight bound, the drops are named by it first, and
    // the schedule warning does not advise a --max-in-flight the limit would refuse.
    let fd_cap = fd_capped_in_flight
        .filter(|_| report.dropped_in_flight_full > 0)
        .map(fd_cap_warning);
    let mut warnings: Vec<String> = fd_cap
        .into_iter()
        .chain(
            short_timeout_warning(&cfg, &report)
                .or_else(|| report.schedule_warning_with(fd_capped_in_flight.is_none())),
        )
        .collect();
    // The most attempts in flight at once: a slot's second handshake is the first that can
    // resume.
    let slots = (0..cfg.workers()).map(|w| cfg.slots_for(w) as u64).sum();
    if let Some(w) = report
        .tls
        .as_ref()
        .and_then(|t| t.resumption_warning(slots))
    {
        warnings.push(w);
    }
    // Issue 36 item 4: the crypto floor of the run's first full handshake (its group, its
    // server's key type), measured in-process on the first load CPU after the run (200 ms).
    if !crate::signals::stopped(&stop) {
        if let Some(Some(Err(e))) = report
            .tls
            .as_mut()
            .map(|t| t.measure_floor(cfg.cpus.first().copied()))
        {
            warnings.push(format!("no crypto floor: {e}"));
        }
    }
    // The TIME_WAIT ports that were short before the run stay in its warnings (report,
    // record).
    warnings.extend(
        time_wait_before
            .iter()
            .flat_map(|(lines, _)| lines.iter().cloned()),
    );
    let profiled = match profiled {
        Some(Ok(Some(p))) => Some(crate::profile::to_record(&p)),
        Some(Ok(None)) => {
            warnings.push("no profile: the run ended before its measured part began".into());
            None
        }
        Some(Err(e)) => {
            warnings.push(format!("no profile: {e}"));
            None
        }
        None => None,
    };
    if let Some(t) = never_started {
        warnings.push(loadgen::start::never_started_warning(t, SystemTime::now()));
    } else if let Some(w) = late_start_warning(planned, real_start) {
        warnings.push(w);
    }
    let mut written = None;
    if let Some(dir) = &args.out {
        let counters = match (&kernel, &before) {
            (Some(k), _) => k.delta.clone(),
            (None, b) => crate::record::delta_since(b.as_ref()),
        };
        let unknown = tuning::host::ClockSync::default();
        let mut record = record::record(
            &cfg,
            &report,
            record::Starts {
                command: command_start,
                planned,
                real: real_start,
            },
            args.segment
                .map(|s| (s, clock.as_ref().unwrap_or(&unknown), &whole)),
            (counters, kernel.as_ref().map(|k| k.acceptance.accepted)),
            &warnings,
            (&build.0, build.1.clone()),
        );
        // The settings the live diagnosis read (targets in this namespace), so that `report`
        // of the record names the same causes (it said "SYN queue overflowed … unknown"
        // where the run had said "syncookies always on").
        if let (Some(k), Some(p)) = (&kernel, record.phases.first_mut()) {
            p.settings = k.settings.clone();
        }
        if let Some(p) = record.phases.first_mut() {
            p.profile = profiled.clone();
        }
        record.crypto_floor = crate::convert::crypto_floor(&report);
        let path = record
            .write_atomic(dir)
            .context("writing the load record (--out)")?;
        eprintln!("connstorm load: record written to {}", path.display());
        written = Some(path);
    }
    // The record, when written, keeps the figures the lost output would have shown.
    let lost = match &written {
        Some(p) => format!(
            "writing the report to stdout failed (the run itself ended; its figures are in the record {}: `connstorm report` prints them)",
            p.display()
        ),
        None => "writing the report to stdout failed (the run itself ended; its figures are lost with the output: give --out DIR to keep a record)".to_string(),
    };
    super::write_report(lost, |out| {
        use std::io::Write as _;
        if json {
            let json = serde_json::to_string_pretty(&json::JsonReport::new(
                &report,
                budget.as_ref().ok(),
                &warnings,
                local,
                kernel.as_ref(),
            ))?;
            writeln!(out, "{json}")?;
            for w in &warnings {
                eprintln!("connstorm load: WARNING: {w}");
            }
            Ok(())
        } else {
            let summary = loadgen::render::Summary {
                report: &report,
                warnings: &warnings,
            };
            let kernel = KernelSection {
                view: kernel.as_ref(),
                local,
                successes: report.total.successes,
            };
            write!(out, "{summary}{kernel}")?;
            writeln!(out, "accept-queue wait: not measured: {LOAD_ALONE}")
        }
    })?;
    if let Some(p) = &profiled {
        let text = results::render::profile_text("the load", p);
        if json {
            eprint!("{text}");
        } else {
            crate::output::out(&text);
        }
        eprintln!(
            "connstorm load: {}",
            crate::profile::overhead_summary(&Default::default())
        );
    }
    metrics::end(endpoint, &args.metrics);
    Ok(exit_code(&report))
}

/// Why `load` alone never measures the accept-queue wait (said once in its text report, never
/// as a zero).
pub const LOAD_ALONE: &str = "load alone cannot see when the server accepts each connection (it needs the server's accept time on the load's clock); bench measures it with its own server";

fn read_counters() -> Option<tuning::counters::Snapshot> {
    crate::record::counters(&mut |w| eprintln!("connstorm load: warning: {w}"))
}

/// The exit code table (docs/cli.md): 128+signo when a signal interrupted the run (the report was
/// printed first); 3 when no attempt of the whole run succeeded (all failed, none could start,
/// or none was accepted by the server) or nothing was measured; else 0.
fn exit_code(report: &LoadReport) -> i32 {
    if report.interrupted {
        return 128 + crate::signals::received().unwrap_or(nix::libc::SIGINT);
    }
    if report.total.successes == 0 || report.attempts + report.dropped == 0 {
        3
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgen::{LoadConfig, Pattern};
    use std::time::Duration;

    fn report(attempts: u64, successes: u64, interrupted: bool) -> LoadReport {
        let cfg = LoadConfig {
            targets: vec!["127.0.0.1:9".parse().unwrap()],
            pattern: Pattern::Closed { concurrency: 1 },
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            cpus: vec![0],
            workers: 0,
            port_slices: loadgen::PortSlices::On,
            close: loadgen::CloseMode::Rst,
            sources: Vec::new(),
            connect_timeout: Duration::from_secs(1),
            expect_bytes: None,
            max_in_flight: 1,
            late_threshold: Duration::from_millis(1),
            http: None,
            tls: None,
            engine: Default::default(),
            pacing: Default::default(),
            accept_stamps: None,
        };
        let mut r = loadgen::never_started(&cfg);
        r.interrupted = interrupted;
        r.attempts = attempts;
        r.total.attempts = attempts;
        r.total.successes = successes;
        r
    }

    /// The exit code table of `load`: 3 when nothing of the whole run succeeded (all failed,
    /// or nothing was attempted), 0 with one success, 128+signo when interrupted whatever the
    /// counts (no signal was received in this test process, so SIGINT's 130).
    #[test]
    fn exit_code_says_nothing_succeeded_and_interrupted_apart() {
        assert_eq!(exit_code(&report(0, 0, false)), 3);
        assert_eq!(exit_code(&report(500, 0, false)), 3);
        assert_eq!(exit_code(&report(500, 1, false)), 0);
        assert_eq!(exit_code(&report(500, 500, true)), 130);
        assert_eq!(exit_code(&report(0, 0, true)), 130);
    }
}
