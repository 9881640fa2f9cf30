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
mod record;

pub use args::Args;

use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::Context;
use loadgen::{LoadConfig, LoadError, LoadReport, Pattern, TimelineRow};
use results::acceptance::Acceptance;
use results::kernel_text::{AcceptQueueEnd, KernelSection, KernelView};

use crate::error::bad_input;
use args::Format;
use config::{config, is_local, warn_port_budget};

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
        Ok(b) => warn_port_budget(&cfg, b),
        Err(e) => eprintln!(
            "connstorm load: warning: cannot read ip_local_port_range ({e}); no port-budget check"
        ),
    }
    eprintln!("connstorm load: {}", loadgen::render::plan_line(&cfg));
    let stop = crate::signals::stop_flag().context("installing the SIGINT/SIGTERM handler")?;
    let total_secs = (cfg.warmup + cfg.duration).as_secs_f64().ceil() as u64;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(total_secs);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len}s {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let open_loop = matches!(cfg.pattern, Pattern::Open { .. });
    let mut on_second = |row: &TimelineRow| {
        if let Some(m) = &metrics {
            m.observe(row);
        }
        let line = loadgen::render::second_line(row, open_loop);
        match &bar {
            Some(b) => {
                b.println(&line);
                b.set_position((row.t_secs + 1).min(total_secs));
            }
            None => eprintln!("{line}"),
        }
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
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(m) = &metrics {
        m.finish();
    }
    let kernel = match &before {
        Some(before) if local => kernel_view(&cfg, &mut report, before),
        _ => None,
    };
    let mut warnings: Vec<String> = report.schedule_warning().into_iter().collect();
    if let Some(t) = never_started {
        warnings.push(multihost::never_started_warning(
            t,
            std::time::SystemTime::now(),
        ));
    } else if let Some(late) = planned
        .and_then(|t| real_start.duration_since(t).ok())
        .filter(|l| l.as_millis() > u128::from(results::merge::SKEW_BOUND_MS))
    {
        warnings.push(format!(
            "the schedule started {} ms after --start-at (the instant had passed when the workers were ready): give a start time further ahead",
            late.as_millis()
        ));
    }
    if let Some(dir) = &args.out {
        let counters = match (&kernel, &before) {
            (Some(k), _) => k.delta.clone(),
            (None, Some(b)) => {
                read_counters().map_or_else(Default::default, |now| now.delta(b).to_map())
            }
            (None, None) => Default::default(),
        };
        let unknown = multihost::ClockSync::default();
        let record = record::load_record(
            &cfg,
            &report,
            record::Starts {
                command: command_start,
                planned,
                real: real_start,
            },
            args.segment
                .map(|s| (s, clock.as_ref().unwrap_or(&unknown), &whole)),
            counters,
            kernel.as_ref().map(|k| k.acceptance.accepted),
            &warnings,
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
                let json = serde_json::to_string_pretty(&JsonReport {
                    cpm: (report.successes > 0).then(|| report.cpm()),
                    port_budget: budget.as_ref().ok(),
                    warnings: &warnings,
                    targets_local: local,
                    kernel_counters: kernel.as_ref().map(|k| &k.delta),
                    acceptance: kernel.as_ref().map(|k| &k.acceptance),
                    diagnosis: kernel.as_ref().map(|k| &k.causes),
                    accept_queue: kernel.as_ref().and_then(|k| k.accept_queue.as_ref()),
                    report: &report,
                })?;
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

/// What the kernel of the targets' namespace (this one: every target is loopback) says about the
/// run, from the counters `before` it and now: acceptance reconciled with the client's handshakes
/// (the never-accepted ones reclassified in `report`), the listener's accept queue after the
/// settle (what is left of this run's reclassified too), and the diagnosis with this namespace's
/// settings and the listener's backlog. `None` when the counters cannot be read now.
fn kernel_view(
    cfg: &LoadConfig,
    report: &mut LoadReport,
    before: &tuning::counters::Snapshot,
) -> Option<KernelView> {
    let delta = read_counters()?.delta(before).to_map();
    let active = delta.get("Tcp.ActiveOpens").copied().unwrap_or(0);
    // Private: nothing but this run opens connections here (only `lo` in the namespace, and
    // no more SYNs sent than our attempts).
    let private = only_loopback_interface() && active <= report.total.attempts as i64;
    // TCP handshakes, whether or not an HTTP exchange after them succeeded.
    let handshakes = report.total.handshakes + report.total.completed_after_timeout;
    let acceptance = results::acceptance::reconcile(handshakes, &delta, private);
    // With `--http` a connection the server never accepted already failed its exchange (reset
    // or no response): it is no success to move.
    let plain = cfg.http.is_none();
    if plain {
        report.reclassify_never_accepted(acceptance.never_accepted, cfg.warmup.is_zero());
    }
    // What is still in the listener's accept queue after the server was given a short time to
    // take it was never accepted: a failure class of its own (bench::accept_queue).
    let settled = ::bench::accept_queue::settle(&cfg.targets, &crate::signals::hurry);
    let accept_queue = settled.map(|s| {
        let ours = ::bench::accept_queue::this_runs(s.after.queued, acceptance.accepted);
        AcceptQueueEnd {
            at_end: s.at_end.queued,
            after_settle: s.after.queued,
            settle_ms: s.waited.as_millis() as u64,
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
    let still_queued = accept_queue.map_or(0, |q| q.never_accepted);
    let causes = results::diagnosis::diagnose(&results::diagnosis::Evidence {
        counters: &delta,
        settings: &settings,
        attempts: report.total.attempts,
        failures: &report.total.failures,
        client_handshakes: handshakes,
        server_accepts: Some(acceptance.accepted - still_queued),
        balanced: None,
    })
    .into_iter()
    .map(|c| c.line)
    .collect();
    Some(KernelView {
        delta,
        acceptance,
        causes,
        accept_queue,
    })
}

fn read_counters() -> Option<tuning::counters::Snapshot> {
    match tuning::counters::Snapshot::read(Path::new(tuning::counters::DEFAULT_NET_DIR)) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("connstorm load: warning: cannot read the kernel's TCP counters ({e}); server-side acceptance unknown");
            None
        }
    }
}

/// True when this network namespace has no interface but `lo` (/proc/thread-self/net/dev): then
/// no connection can come from outside it.
fn only_loopback_interface() -> bool {
    std::fs::read_to_string("/proc/thread-self/net/dev").is_ok_and(|t| {
        t.lines()
            .skip(2)
            .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim().to_string()))
            .all(|n| n == "lo")
    })
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

/// The report as `--format json` prints it.
#[derive(serde::Serialize)]
struct JsonReport<'a> {
    /// Connections per minute achieved in the measured window; `null` when nothing was measured
    /// (no success in it), never a made-up 0.
    cpm: Option<f64>,
    port_budget: Option<&'a loadgen::ports::PortBudget>,
    /// The same WARNING lines as the text report (e.g. the generator fell behind its schedule).
    warnings: &'a [String],
    /// Every target is a loopback address, so the kernel counters below are the server's too.
    targets_local: bool,
    /// Δ of every kernel TCP counter of this namespace over the run (only when `targets_local`).
    kernel_counters: Option<&'a std::collections::BTreeMap<String, i64>>,
    /// Client handshakes vs the server's passive opens (only when `targets_local`; `null` means
    /// server-side acceptance is unknown from here).
    acceptance: Option<&'a Acceptance>,
    /// One line per cause found in the counters and the namespace's settings (only when
    /// `targets_local`), in the words `bench` uses.
    diagnosis: Option<&'a Vec<String>>,
    /// The listener's accept queue at the end (`ss` Recv-Q, only when `targets_local` and
    /// readable): when the load ended, after the settle, the settle's length, and this run's
    /// connections left there (the failure class `NEVER_ACCEPTED_QUEUED`).
    accept_queue: Option<&'a AcceptQueueEnd>,
    #[serde(flatten)]
    report: &'a LoadReport,
}
