//! One `connstorm bench` run (also an `ab` trial): the phases ([`::bench::run::phases`]) with
//! their progress on stderr, the paired kernel-floor baseline with `--baseline`
//! ([`::bench::run::Trial::baseline`], on the running server, before it stops), and the record
//! written.

use std::path::PathBuf;

pub use ::bench::run::{peak_concurrency, Plan};

use super::harness::{PhaseSpec, Setup};
use crate::cmd::bench::Args;

/// The composition's plan of a `bench` run from its options.
pub fn plan(args: &Args) -> Plan {
    Plan {
        duration: args.duration,
        rate: args.rate,
        concurrency: args.setup.concurrency,
        baseline: args.baseline,
        label: args.setup.label.clone(),
    }
}

/// The `/metrics` endpoint of a `bench` run and its metrics ([`::bench::metrics`]).
pub type Live<'a> = (
    &'a common::metrics::Endpoint,
    &'a ::bench::metrics::BenchMetrics,
);

/// Runs the benchmark and writes its record; returns the record, its path, and the error that
/// ended the run early, if any (the record is written even then). `live` (with `--metrics`)
/// sees every phase and row.
///
/// # Errors
/// When the harness cannot start, the floor cannot be set up, or the record cannot be written.
pub fn execute(
    args: &Args,
    setup: Setup,
    stop: &std::sync::atomic::AtomicBool,
    live: Option<Live<'_>>,
) -> anyhow::Result<(results::RunRecord, PathBuf, anyhow::Result<()>)> {
    use ::bench::run::Event;
    let plan = plan(args);
    let external = setup.target.is_some();
    let close = setup.close;
    let mut on_second = |spec: &PhaseSpec, row: &loadgen::TimelineRow| {
        if let Some((_, m)) = live {
            m.observe(row);
        }
        super::progress(spec, row);
    };
    let mut on_event = |e: Event<'_>| {
        let Some((ep, m)) = live else { return };
        match e {
            Event::Started(h) => m.started(h, ep),
            Event::PhaseBegins(spec) => m.phase(spec, close),
            Event::PhaseEnded(_) => m.phase_done(),
        }
    };
    let mut trial = ::bench::run::phases(
        &plan,
        setup,
        &super::record::BUILD,
        stop,
        &mut on_second,
        &mut super::note,
        &mut on_event,
    )?;
    trial.record.build = crate::version::build_info();
    if trial.baseline_due(&plan, external) {
        trial.baseline(
            ::bench::baseline::BaselineRun {
                netns: args.setup.netns,
                concurrency: args.setup.concurrency,
                opts: args.baseline_options(),
            },
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
    let written = trial.write(&args.setup.out, stop);
    if let Some((_, m)) = live {
        m.finish();
    }
    written
}
