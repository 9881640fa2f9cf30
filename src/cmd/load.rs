//! `connstorm load`: open connections to one or more servers at an intended rate (open loop) or a
//! fixed concurrency (closed loop) and report connections per minute and handshake latency.
//!
//! Exit codes: 0 the run completed (some attempts may have failed: see the report); 1 a
//! run-time failure; 2 bad input, refused before anything is created (including a CPU this
//! process may not use, a rate above 1e9/s, a duration under 10 ms, a `--metrics` address in
//! use); 3 the run completed but no
//! attempt of the whole run succeeded: every attempt failed (e.g. nothing listens on the
//! target), none could start, or none was accepted by the server; 128+signo (130 SIGINT, 143
//! SIGTERM) interrupted by a signal, after the report was printed.

mod args;
mod config;
pub mod multihost;

pub use args::Args;

use std::io::Write;
use std::path::Path;

use ::bench::standalone::load as standalone;
use anyhow::Context;
use loadgen::{LoadError, LoadReport, Pattern, TimelineRow};
use results::kernel_text::KernelSection;

use crate::error::bad_input;
use args::Format;
use common::addr::is_local;
use config::config;

/// Runs `connstorm load`.
///
/// # Errors
/// Bad input (exit 2): an inconsistent configuration or an unusable CPU. Others (exit 1): the
/// workers cannot start, or stdout cannot be written.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let command_start = std::time::SystemTime::now();
    let nofile = loadgen::rlimit::raise_nofile_limit().context("raising the open-file limit")?;
    let mut cfg = config(&args, nofile)?;
    let whole = cfg.clone();
    if let Some(seg) = args.segment {
        cfg = multihost::apply_segment(cfg, seg, args.max_in_flight.is_some())?;
    }
    let planned = args
        .start_at
        .map(|at| multihost::planned_start(at, command_start))
        .transpose()?;
    if let Some(dir) = &args.out {
        crate::bench::record::check_writable_dir(dir)?;
    }
    // Bound before any attempt: an address in use is bad input before anything starts.
    let endpoint = crate::cmd::metrics::start(&args.metrics, "load")?;
    let metrics = endpoint.as_ref().map(|ep| {
        let m = loadgen::metrics::LoadMetrics::new();
        m.begin(cfg.pattern, cfg.close);
        ep.register(Box::new(std::sync::Arc::clone(&m)));
        m
    });
    let clock = (args.segment.is_some() || planned.is_some()).then(multihost::read_clock_sync);
    if let Some(w) = clock.as_ref().and_then(multihost::clock_warning) {
        eprintln!("connstorm load: warning: {w}");
    }
    let budget = loadgen::ports::read_port_range(Path::new("/proc"))
        .map(|r| loadgen::ports::port_budget(r, &cfg.targets, &cfg.sources, cfg.close));
    match &budget {
        Ok(b) => {
            let io = tuning::plan::ProcSys { root: "/".into() };
            match standalone::port_budget_warning(&cfg, b, &io) {
                Ok(Some(w)) => eprintln!("connstorm load: warning: {w}"),
                Ok(None) => {}
                Err(e) => eprintln!("connstorm load: warning: {e}; no port-budget check"),
            }
        }
        Err(e) => eprintln!(
            "connstorm load: warning: cannot read ip_local_port_range ({e}); no port-budget check"
        ),
    }
    eprintln!("connstorm load: {}", loadgen::render::plan_line(&cfg));
    let stop = crate::signals::stop_flag().context("installing the SIGINT/SIGTERM handler")?;
    let bar = crate::progress::begin("load", cfg.warmup + cfg.duration);
    let open_loop = matches!(cfg.pattern, Pattern::Open { .. });
    let mut on_second = |row: &TimelineRow| {
        if let Some(m) = &metrics {
            m.observe(row);
        }
        crate::progress::second_line(&loadgen::render::second_line(row, open_loop));
    };
    // The kernel's counters of the targets' namespace: readable from here only when every target
    // is a loopback address (then it is this process's own namespace).
    let local = cfg.targets.iter().all(|t| is_local(t.ip()));
    let before = (local || args.out.is_some()).then(read_counters).flatten();
    let mut never_started = None;
    if let Some(t) = planned {
        eprintln!(
            "connstorm load: schedule starts at {} (in {:.3} s)",
            humantime::format_rfc3339_millis(t),
            t.duration_since(std::time::SystemTime::now())
                .unwrap_or_default()
                .as_secs_f64()
        );
        // Workers are set up in the last 200 ms; the wait before is interruptible.
        if !multihost::wait_until(t, std::time::Duration::from_millis(200), &stop) {
            never_started = Some(t);
        }
    }
    let (mut report, real_start) = match never_started {
        // Interrupted while waiting for --start-at: nothing ran, and the report and record say so.
        Some(_) => (loadgen::never_started(&cfg), std::time::SystemTime::now()),
        None => loadgen::run_at(&cfg, planned, &stop, &mut on_second).map_err(|e| match e {
            LoadError::Config(_) | LoadError::Pin { .. } => bad_input(e.to_string()),
            e => anyhow::Error::new(e).context("running the load"),
        })?,
    };
    drop(bar);
    if let Some(m) = &metrics {
        m.finish();
    }
    let kernel = match &before {
        Some(before) if local => read_counters().map(|now| {
            standalone::kernel_view(&cfg, &mut report, before, &now, &crate::signals::hurry)
        }),
        _ => None,
    };
    // A signal after the schedule ended (during the accept-queue settle) still interrupted the
    // run: the settle may have been cut short, and the exit code and record say so.
    if crate::signals::stopped(&stop) {
        report.interrupted = true;
    }
    let mut warnings: Vec<String> = report.schedule_warning().into_iter().collect();
    if let Some(t) = never_started {
        warnings.push(multihost::never_started_warning(
            t,
            std::time::SystemTime::now(),
        ));
    } else if let Some(w) = standalone::late_start_warning(planned, real_start) {
        warnings.push(w);
    }
    if let Some(dir) = &args.out {
        let counters = match (&kernel, &before) {
            (Some(k), _) => k.delta.clone(),
            (None, b) => ::bench::standalone::delta_since(b.as_ref()),
        };
        let unknown = multihost::ClockSync::default();
        let record = standalone::record(
            &cfg,
            &report,
            standalone::Starts {
                command: command_start,
                planned,
                real: real_start,
            },
            args.segment
                .map(|s| (s, clock.as_ref().unwrap_or(&unknown), &whole)),
            (counters, kernel.as_ref().map(|k| k.acceptance.accepted)),
            &warnings,
            (&crate::bench::record::BUILD, crate::version::build_info()),
        );
        let path = record
            .write_atomic(dir)
            .context("writing the load record (--out)")?;
        eprintln!("connstorm load: record written to {}", path.display());
    }
    let mut out = std::io::stdout().lock();
    let written = (|| -> std::io::Result<()> {
        match args.format {
            Format::Json => {
                let json = serde_json::to_string_pretty(&standalone::JsonReport::new(
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
            }
            Format::Text => {
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
            }
        }
        out.flush()
    })();
    match written {
        // The reader went away (`| head`): the run's own exit code still says what happened.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.context(
            "writing the report to stdout failed (the run itself ended; its figures are lost with the output)",
        )?,
    }
    crate::cmd::metrics::end(endpoint, &args.metrics);
    Ok(exit_code(&report))
}

fn read_counters() -> Option<tuning::counters::Snapshot> {
    ::bench::standalone::counters(&mut |w| eprintln!("connstorm load: warning: {w}"))
}

/// The exit code table (README): 128+signo when a signal interrupted the run (the report was
/// printed first); 3 when no attempt of the whole run succeeded (all failed, none could start,
/// or none was accepted by the server) or nothing was measured; else 0.
fn exit_code(report: &LoadReport) -> i32 {
    if report.interrupted {
        return 128 + crate::signals::received().unwrap_or(libc::SIGINT);
    }
    if report.total.successes == 0 || report.attempts + report.dropped == 0 {
        3
    } else {
        0
    }
}
