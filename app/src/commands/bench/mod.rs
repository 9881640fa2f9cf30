//! `connstorm bench`: the benchmark most users run first. Server and load generator in one
//! process (or load only against `--target`), two phases — *peak* (closed loop, saturating) and
//! *latency* (open loop at 80% of the peak or `--rate`) — a summary, and a run record.
//!
//! - [`args`]: the options ([`Command`], [`Args`] and the [`SetupArgs`] that `sweep` and `ab`
//!   share); [`resolve`] checks them and turns them into a [`Setup`] and a [`Trial`].
//! - [`run`] (here): the phases ([`crate::run`]) with their progress on stderr, the paired
//!   kernel-floor baseline with `--baseline` ([`crate::run::Trial::baseline`], on the running
//!   server, before it stops), the record written and the [`summary`] printed; with
//!   `--metrics` the run's [`prometheus`] collector. `connstorm ab` runs [`execute`] once per
//!   trial; `sweep` starts its harness with [`start`] and shows its seconds with [`progress`].
//! - `dry_run`: `--dry-run`'s plan, printed after the same checks, with nothing started.

pub mod args;
mod dry_run;
pub mod neper;
mod overhead;
pub mod prometheus;
pub mod resolve;
pub mod summary;

pub use args::{Args, Command, SetupArgs};

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use anyhow::Context;
use loadgen::TimelineRow;
use results::record::BuildInfo;
use results::RunRecord;

use super::Format;
use crate::baseline::BaselineRun;
use crate::record::Build;
use crate::run::{Event, Plan};
use crate::setup::{PhaseSpec, Setup};

/// One `bench` run (or `ab` trial) beyond its setup.
#[derive(Debug, Clone)]
pub struct Trial {
    /// The phases.
    pub plan: Plan,
    /// The paired baseline's options (used when `plan.baseline`).
    pub baseline: BaselineRun,
    /// `--out DIR`: where the record is written.
    pub out: PathBuf,
    /// The binary's version and build, for the record.
    pub build: (Build, BuildInfo),
    /// `--profile-overhead PAIRS`: the paired on/off check of the profile's cost, run on the
    /// server after the phases (needs `plan.profile`).
    pub profile_overhead: Option<usize>,
}

/// The `/metrics` endpoint of a `bench` run and its metrics ([`prometheus`]).
pub type Live<'a> = (&'a common::metrics::Endpoint, &'a prometheus::BenchMetrics);

/// Shows one note of the composition on stderr, prefixed `connstorm: `.
pub fn note(line: &str) {
    crate::output::note(&format!("connstorm: {line}"));
}

/// Shows one per-second progress line of a phase on stderr ([`summary::progress_line`]).
pub fn progress(spec: &PhaseSpec, row: &TimelineRow) {
    if let Some(line) = summary::progress_line(spec, row) {
        crate::progress::second(&spec.name, &line);
    }
}

/// Starts a harness ([`crate::harness::Harness::start`]) and shows its notes on stderr.
///
/// # Errors
/// See [`crate::harness::Harness::start`].
pub fn start(setup: Setup) -> anyhow::Result<crate::harness::Harness> {
    let h = crate::harness::Harness::start(setup)?;
    for n in h.notes() {
        note(&n);
    }
    Ok(h)
}

/// Runs the benchmark and writes its record; returns the record, its path, and the error that
/// ended the run early, if any (the record is written even then). `live` (with `--metrics`)
/// sees every phase and row.
///
/// # Errors
/// When the harness cannot start, the floor cannot be set up, or the record cannot be written.
pub fn execute(
    t: &Trial,
    setup: Setup,
    stop: &AtomicBool,
    live: Option<Live<'_>>,
) -> anyhow::Result<(RunRecord, PathBuf, anyhow::Result<()>)> {
    let external = setup.target.is_some();
    let close = setup.close;
    let mut on_second = |spec: &PhaseSpec, row: &TimelineRow| {
        if let Some((_, m)) = live {
            m.observe(row);
        }
        progress(spec, row);
    };
    let mut on_event = |e: Event<'_>| {
        let Some((ep, m)) = live else { return };
        match e {
            Event::Started(h) => m.started(h, ep),
            Event::PhaseBegins(spec) => m.phase(spec, close),
            Event::PhaseEnded(_) => m.phase_done(),
        }
    };
    let mut trial = crate::run::phases(
        &t.plan,
        setup,
        &t.build.0,
        stop,
        &mut on_second,
        &mut note,
        &mut on_event,
    )?;
    trial.record.build = t.build.1.clone();
    if trial.baseline_due(&t.plan, external) {
        trial.baseline(
            t.baseline,
            stop,
            &mut |line| crate::output::note(line),
            &mut |row| {
                if let Some((_, m)) = live {
                    m.observe(row);
                }
            },
            &mut on_event,
        )?;
    }
    if let (Some(pairs), Some(settings)) = (t.profile_overhead, t.plan.profile) {
        if !trial.record.run.interrupted && trial.result.is_ok() {
            overhead::overhead(
                &mut trial,
                settings,
                pairs,
                t.plan.concurrency,
                stop,
                &mut note,
            )?;
        }
    }
    let written = trial.write(&t.out, stop);
    if let Some((_, m)) = live {
        m.finish();
    }
    written
}

/// Runs `connstorm bench` and returns the exit code: `3` when no phase completed a connection
/// (nothing was measured), else `0`; `build`: the binary's version and build, for the record.
///
/// # Errors
/// Bad options (exit 2), server, load or namespace failures, an unusable `--metrics`, record
/// write failures.
pub fn run(cmd: Command, build: (Build, BuildInfo)) -> anyhow::Result<i32> {
    let mut args = cmd.args;
    // Every input is checked before a record, a namespace or a server exists.
    let like = cmd.like.as_deref().map(neper::parse).transpose()?;
    if let Some(l) = &like {
        args.setup.concurrency = Some(l.flows);
        args.setup.close = Some(loadgen::CloseMode::Fin);
        args.setup.mode = Some(server::Mode::Hold);
        args.duration = l.duration();
    }
    let profile = cmd.profile.check()?;
    resolve::validate(&args)?;
    let mut setup = args.setup.resolve()?;
    if let Some(l) = &like {
        let threads = l.threads as usize;
        if setup.load_cpus.len() > threads {
            setup.load_cpus.truncate(threads);
        }
        note(&l.describe(setup.load_workers.max(setup.load_cpus.len())));
    }
    let json = args.format == Format::Json;
    let mut trial = args.trial(build);
    trial.plan.profile = profile;
    trial.profile_overhead = cmd.profile_overhead.map(|n| n as usize);
    let t = &trial;
    let metrics = &cmd.metrics;
    if cmd.dry_run {
        crate::output::out(&dry_run::plan_text(&setup, t, metrics.metrics));
        return Ok(0);
    }
    let endpoint = super::metrics::start(metrics, "bench")?;
    let bench_metrics = endpoint.as_ref().map(prometheus::BenchMetrics::new);
    let _ = server::rlimit::raise_nofile();
    let stop = crate::signals::stop_flag().context("install signal handlers")?;
    let progress = crate::progress::begin("bench", crate::run::planned_seconds(t.plan.duration));
    let live = endpoint.as_ref().zip(bench_metrics.as_ref());
    let (record, path, result) = execute(t, setup, &stop, live)?;
    drop(progress);
    if json {
        crate::output::out(&format!("{}\n", record.to_json()));
        crate::output::note(&format!("record: {}", path.display()));
    } else {
        crate::output::out(&summary::render(&record, Some(&path)));
    }
    if profile.is_some() {
        // With --format json the record on stdout holds the profile; the text goes to stderr.
        let show = |text: &str| {
            if json {
                crate::output::note(text.trim_end());
            } else {
                crate::output::out(text);
            }
        };
        for p in &record.phases {
            if let Some(prof) = &p.profile {
                show(&results::render::profile_text(&p.name, prof));
            }
        }
        show(&format!("{}\n", crate::profile::overhead_summary(&record)));
    }
    super::metrics::end(endpoint, metrics);
    result?;
    Ok(exit_code(&record))
}

/// `3` when no phase completed a connection (nothing was measured), else `0`.
pub fn exit_code(record: &RunRecord) -> i32 {
    if record.phases.iter().all(|p| p.successes == 0) {
        3
    } else {
        0
    }
}
