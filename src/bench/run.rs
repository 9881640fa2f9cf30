//! One `connstorm bench` run (also an `ab` trial): the phases ([`::bench::run::phases`]) with
//! their progress on stderr, the paired kernel-floor baseline with `--baseline`
//! ([`::bench::run::Trial::baseline`], on the running server, before it stops), and the record
//! written.

use std::path::PathBuf;

pub use ::bench::run::{peak_concurrency, split_duration, Plan};

use super::harness::Setup;
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

/// Runs the benchmark and writes its record; returns the record, its path, and the error that
/// ended the run early, if any (the record is written even then).
///
/// # Errors
/// When the harness cannot start, the floor cannot be set up, or the record cannot be written.
pub fn execute(
    args: &Args,
    setup: Setup,
    stop: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<(results::RunRecord, PathBuf, anyhow::Result<()>)> {
    let plan = plan(args);
    let external = setup.target.is_some();
    let mut trial = ::bench::run::phases(
        &plan,
        setup,
        &super::record::BUILD,
        stop,
        &mut super::progress,
        &mut super::note,
    )?;
    trial.record.build = crate::version::build_info();
    if trial.baseline_due(&plan, external) {
        trial.baseline(
            args.setup.netns,
            args.setup.concurrency,
            args.baseline_options(),
            stop,
            &mut |line| crate::output::note(line),
        )?;
    }
    trial.write(&args.setup.out, stop)
}
