//! `connstorm load`: open connections to one or more servers at an intended rate (open loop) or a
//! fixed concurrency (closed loop) and report connections per minute and handshake latency.
//!
//! Exit codes: 0 the run completed (some attempts may have failed: see the report); 1 a
//! run-time failure; 2 bad input, refused before anything is created (including a CPU this
//! process may not use, a rate above 1e9/s, a duration under 10 ms); 3 the run completed but no
//! attempt of the whole run succeeded: every attempt failed (e.g. nothing listens on the
//! target), none could start, or none was accepted by the server; 128+signo (130 SIGINT, 143
//! SIGTERM) interrupted by a signal, after the report was printed.

mod args;
mod config;
pub mod multihost;
mod record;

pub use args::Args;

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;
use loadgen::{LoadConfig, LoadError, LoadReport, Pattern, TimelineRow};
use results::acceptance::Acceptance;
use results::kernel_text::{KernelSection, KernelView};

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
            return Ok(128 + crate::signals::received().unwrap_or(libc::SIGINT));
        }
    }
    let (mut report, real_start) =
        loadgen::run_at(&cfg, planned, &stop, &mut on_second).map_err(|e| match e {
            LoadError::Config(_) | LoadError::Pin { .. } => bad_input(e.to_string()),
            e => anyhow::Error::new(e).context("running the load"),
        })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let kernel = match &before {
        Some(before) if local => kernel_view(&cfg, &mut report, before),
        _ => None,
    };
    let warnings: Vec<String> = report.schedule_warning().into_iter().collect();
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
                .map(|s| (s, clock.as_ref().unwrap_or(&unknown))),
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
                    accept_queue_unaccepted: kernel.as_ref().and_then(|k| k.accept_queue),
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
    Ok(exit_code(&report))
}

/// What the kernel of the targets' namespace (this one: every target is loopback) says about the
/// run, from the counters `before` it and now: acceptance reconciled with the client's handshakes
/// (the never-accepted ones reclassified in `report`), and the diagnosis with this namespace's
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
    if cfg.http.is_none() {
        report.reclassify_never_accepted(acceptance.never_accepted, cfg.warmup.is_zero());
    }
    // This thread is in the targets' namespace, so /proc/sys/net is theirs (see
    // tuning::counters::DEFAULT_SYS_DIR).
    let mut settings =
        tuning::counters::read_settings(Path::new(tuning::counters::DEFAULT_SYS_DIR));
    let listener = listener_queue(&cfg.targets);
    if let Some(l) = listener {
        settings.insert("listen_backlog".into(), l.backlog);
    }
    let causes = results::diagnosis::diagnose(&results::diagnosis::Evidence {
        counters: &delta,
        settings: &settings,
        attempts: report.total.attempts,
        failures: &report.total.failures,
        client_handshakes: handshakes,
        server_accepts: Some(acceptance.accepted),
        balanced: None,
    })
    .into_iter()
    .map(|c| c.line)
    .collect();
    Some(KernelView {
        delta,
        acceptance,
        causes,
        accept_queue: listener.map(|l| l.queued),
    })
}

/// The local listener(s) on the targets' port as `ss -Hltn` shows them (ss(8), inet_diag): for a
/// LISTEN socket Send-Q is its backlog (sk_max_ack_backlog) and Recv-Q the connections waiting
/// in its accept queue (sk_ack_backlog: created by the kernel, not yet accept()ed).
#[derive(Debug, Clone, Copy)]
struct ListenerQueue {
    /// The largest backlog when several SO_REUSEPORT listeners share the port.
    backlog: i64,
    /// Connections waiting in the accept queues, summed over those listeners.
    queued: u64,
}

/// The [`ListenerQueue`] of the local listener(s) on the targets' port (all targets share one
/// port), read now. `None` when the targets use several ports, `ss` is missing or shows no
/// listener.
fn listener_queue(targets: &[SocketAddr]) -> Option<ListenerQueue> {
    let port = targets.first()?.port();
    if targets.iter().any(|t| t.port() != port) {
        return None;
    }
    let out = std::process::Command::new("ss")
        .args(["-Hltn", &format!("sport = :{port}")])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let rows: Vec<(u64, i64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace().skip(1);
            Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect();
    Some(ListenerQueue {
        backlog: rows.iter().map(|r| r.1).max()?,
        queued: rows.iter().map(|r| r.0).sum(),
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
    /// Connections still in the listener's accept queue at the end (`ss` Recv-Q, only when
    /// `targets_local` and readable): created by the server's kernel, not accept()ed by the
    /// server application.
    accept_queue_unaccepted: Option<u64>,
    #[serde(flatten)]
    report: &'a LoadReport,
}
