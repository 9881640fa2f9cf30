//! `connstorm ab`: interleaved A/B benchmark trials for kernel-patch and sysctl validation.
//!
//! Trials run A, B, A, B, … (so slow drift — thermal, page cache, other tenants — hits both sides
//! alike). Before each trial the side's setup runs: `--a-setup`/`--b-setup` shell commands and/or
//! built-in toggles (`--toggle sysctl:KEY=VA,VB`, `--toggle sched-feature:NAME`). Toggles are
//! restored to the values they had before the first trial when the run ends — normally, on
//! failure, or on Ctrl-C (also when a third Ctrl-C, or a second one the run does not finish
//! after, forces the exit: the restore is a cleanup hook, [`crate::signals`]);
//! `--restore CMD` runs at the end for what setup commands changed. Every trial writes its own run
//! record; the comparison uses `results::compare` (the statistics rule in `--help`: Hodges–Lehmann
//! shift with its exact Mann–Whitney interval, at least 5 unflagged trials a side, a noise floor).
//!
//! Sides are named by `--label-a`/`--label-b` or what differs (toggle values, setup commands),
//! and each trial's label is `[LABEL-]<side name>#<trial>` so a later `connstorm compare` names
//! them the same way.
//!
//! Latency is compared at one load: every trial's latency phase, on both sides, runs at one
//! offered rate — `--rate`, or 80% of the lower peak of a probe pair (A's closed-loop peak, then
//! B's, each after its side's setup) run once before the trials (`latency_rate`) and printed.
//!
//! - [`args`]: the options ([`Args`]; each trial's benchmark is `bench`'s
//!   [`Args`](super::bench::Args)).
//! - [`sides`]: what distinguishes A from B, how a side is set and how the toggles are put back.
//! - [`run`] (here): the trials interleaved, each side's setup before each trial, the toggles
//!   restored on every way out (also when a forced exit skips unwinding: a cleanup hook), and
//!   the comparison ([`results::analysis::compare`]) printed.

pub mod args;
pub mod sides;

pub use args::Args;

use anyhow::{bail, Context};
use results::record::BuildInfo;
use results::render::CompareFormat as Format;
use tuning::plan::ToggleSide as Side;

use crate::record::Build;
use sides::{Restore, Sides};

/// Runs the restore on every way out of [`run`], printing what failed.
struct RestoreOnDrop(Restore);

impl Drop for RestoreOnDrop {
    fn drop(&mut self) {
        for e in self.0.run() {
            eprintln!("connstorm: ab: {e}");
        }
    }
}

/// The offered rate of every trial's latency phase, per second, and how it was chosen (`None`:
/// `--rate`): `plan.rate`, else 80% of the lower closed-loop peak of a probe pair — side A's
/// setup and a peak phase as long as a trial's, then side B's — run on fresh harnesses before
/// the first trial. The rate is printed on stderr either way.
///
/// # Errors
/// A side's setup that fails, a harness that cannot start, a probe that completed no
/// connection (nothing to take 80% of: give `--rate`), or an interrupted probe.
fn latency_rate(
    plan: &crate::run::Plan,
    sides: &Sides<'_>,
    root: &std::path::Path,
    setup: &crate::setup::Setup,
    stop: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<(f64, Option<String>)> {
    if let Some(rate) = plan.rate {
        eprintln!(
            "[ab] every trial's latency phase, on both sides, runs at {}/s offered (--rate)",
            results::numfmt::exact(rate)
        );
        return Ok((rate, None));
    }
    let (duration, _, warmup) = crate::run::split_duration(plan.duration);
    let mut peaks = Vec::new();
    for side in [Side::A, Side::B] {
        let name = if side == Side::A { "A" } else { "B" };
        sides.set(root, side)?;
        eprintln!("[ab] probe pair: side {name}'s peak, for the latency phases' one offered rate");
        let spec = crate::setup::PhaseSpec {
            name: "peak".into(),
            pattern: loadgen::Pattern::Closed {
                concurrency: crate::run::peak_concurrency(plan.concurrency, setup.load_cpus.len()),
            },
            duration,
            warmup,
        };
        let mut harness = super::bench::start(setup.clone())?;
        let out = harness.run_phase(&spec, stop, &mut |row| super::bench::progress(&spec, row));
        drop(harness.finish());
        if crate::signals::stopped(stop) {
            bail!("interrupted during the probe pair, before the first trial");
        }
        let peak = out?.record.achieved_per_sec.with_context(|| {
            format!(
                "the probe of side {name} completed no connection: there is no peak to run the latency phases at 80% of; give --rate"
            )
        })?;
        peaks.push(peak);
    }
    let rate = 0.8 * peaks[0].min(peaks[1]);
    let from = format!(
        "80% of the lower peak of a probe pair run before the trials (A {}/s, B {}/s)",
        results::numfmt::fixed(peaks[0], 0),
        results::numfmt::fixed(peaks[1], 0)
    );
    eprintln!(
        "[ab] every trial's latency phase, on both sides, runs at {}/s offered: {from}; --rate sets it",
        results::numfmt::fixed(rate, 0)
    );
    Ok((rate, Some(from)))
}

/// Runs `connstorm ab`; `build`: the binary's version and build, for the records. The trials'
/// setup is resolved once the sides are checked.
///
/// # Errors
/// Bad options (exit 2), a failing setup command or toggle (after restoring), bench failures.
pub fn run(args: Args, build: (Build, BuildInfo)) -> anyhow::Result<i32> {
    args.show.check()?;
    // The benchmark each trial runs; its label is the prefix of each trial's.
    let base = args.bench.trial(build);
    let rule = args.rule.options();
    let format = args.compare_format.unwrap_or(match args.bench.format {
        crate::commands::Format::Text => Format::Text,
        crate::commands::Format::Json => Format::Json,
    });
    let sides = Sides {
        toggles: &args.toggles,
        a_setup: args.a_setup.as_deref(),
        b_setup: args.b_setup.as_deref(),
        labels: (args.show.label_a.as_deref(), args.show.label_b.as_deref()),
    };
    // A fixture root (`--root`, tests) changes no host setting.
    let on_host = args.root == std::path::Path::new("/");
    sides.check(
        args.bench.setup.netns,
        on_host && !tuning::host::in_initial_netns(),
    )?;
    let setup = args.bench.setup.resolve()?;
    let _ = server::rlimit::raise_nofile();
    let stop = crate::signals::stop_flag().context("install signal handlers")?;
    // Read every original value before changing anything.
    let mut restore = RestoreOnDrop(Restore::read(
        &args.root,
        &args.toggles,
        args.restore.clone(),
    )?);
    // A second Ctrl-C exits without unwinding: restore the toggles then too.
    let _forced_exit = {
        let (root, saved) = (args.root.clone(), restore.0.saved().to_vec());
        crate::signals::on_forced_exit(move || {
            for (t, orig) in saved.iter().rev() {
                match t.restore(&root, orig) {
                    Ok(()) => eprintln!("connstorm: ab: restored {}", t.with_original(orig)),
                    Err(e) => eprintln!(
                        "connstorm: ab: could not restore {}: {e}",
                        t.with_original(orig)
                    ),
                }
            }
        })
    };
    let mut a_records = Vec::new();
    let mut b_records = Vec::new();
    let mut outcome: anyhow::Result<()> = Ok(());
    let mut written: Vec<String> = Vec::new();
    let (peak, _, warmup) = crate::run::split_duration(base.plan.duration);
    let probes = if base.plan.rate.is_some() {
        std::time::Duration::ZERO
    } else {
        (peak + warmup) * 2
    };
    let _progress = crate::progress::begin(
        "ab",
        crate::run::planned_seconds(base.plan.duration) * (2 * args.trials) + probes,
    );
    let mut base = base;
    match latency_rate(&base.plan, &sides, &args.root, &setup, &stop) {
        Ok((rate, from)) => {
            base.plan.rate = Some(rate);
            base.plan.rate_from = from;
        }
        Err(e) => outcome = Err(e),
    }
    'trials: for i in 1..=args.trials {
        if outcome.is_err() {
            break;
        }
        for side in [Side::A, Side::B] {
            if crate::signals::stopped(&stop) {
                break 'trials;
            }
            let name = if side == Side::A { "A" } else { "B" };
            if let Err(e) = sides.set(&args.root, side) {
                outcome = Err(e);
                break 'trials;
            }
            eprintln!("[ab] trial {i}/{} side {name}", args.trials);
            crate::progress::trial("ab", i, args.trials, name);
            let mut trial = base.clone();
            trial.plan.label = sides.trial_label(&base.plan.label, side, i);
            match super::bench::execute(&trial, setup.clone(), &stop, None) {
                Ok((record, path, result)) => {
                    written.push(path.display().to_string());
                    eprintln!(
                        "[ab] {name}{i}: {}",
                        results::analysis::trial_line(&record, &path)
                    );
                    if !record.run.interrupted {
                        if side == Side::A {
                            a_records.push(record)
                        } else {
                            b_records.push(record)
                        }
                    }
                    if let Err(e) = result {
                        outcome = Err(e);
                        break 'trials;
                    }
                }
                Err(e) => {
                    outcome = Err(e);
                    break 'trials;
                }
            }
        }
    }
    let errors = restore.0.run();
    for e in &errors {
        eprintln!("connstorm: ab: {e}");
    }
    if !args.toggles.is_empty() && errors.is_empty() {
        eprintln!("[ab] toggles restored to their original values");
    }
    // A comparison needs both sides: with one side empty (e.g. B's setup failed) there is
    // nothing to print but the error.
    if (a_records.is_empty() || b_records.is_empty()) && crate::signals::stopped(&stop) {
        eprintln!(
            "[ab] interrupted: {} complete trial(s) of A, {} of B — no comparison (it needs both sides); {}",
            a_records.len(),
            b_records.len(),
            if written.is_empty() {
                "no trial record was written".to_string()
            } else {
                format!(
                    "compare the records written so far later: connstorm compare {}",
                    written.join(" ")
                )
            }
        );
    }
    if !a_records.is_empty() && !b_records.is_empty() {
        let (na, nb) = (sides.name(Side::A), sides.name(Side::B));
        let c = results::analysis::compare(&a_records, &b_records, (Some(&na), Some(&nb)), &rule);
        crate::output::out(&results::render::comparison_with(
            &c,
            format,
            args.show.width(),
        ));
    }
    outcome?;
    if !errors.is_empty() {
        bail!(
            "the run finished but {} setting(s) could not be restored (see above)",
            errors.len()
        );
    }
    Ok(0)
}
