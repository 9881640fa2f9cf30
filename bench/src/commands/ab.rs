//! `connstorm ab` once its options are parsed: interleaved A/B trials (A, B, A, B, …, so slow
//! drift hits both sides alike), each side's setup before each trial, the toggles restored on
//! every way out (also when a forced exit skips unwinding: a cleanup hook), and the comparison
//! ([`results::analysis::compare`]) printed.

use std::path::PathBuf;

use anyhow::{bail, Context};
use tuning::plan::{Toggle, ToggleSide as Side};

use super::bench::Trial;
use crate::ab::{Restore, Sides};
use crate::harness::Setup;

/// `connstorm ab`'s options, parsed.
#[derive(Debug, Clone)]
pub struct Ab {
    /// Trials per side.
    pub trials: u32,
    /// `--toggle`s (A = first value, B = second).
    pub toggles: Vec<Toggle>,
    /// Shell command run before every A trial.
    pub a_setup: Option<String>,
    /// Shell command run before every B trial.
    pub b_setup: Option<String>,
    /// Shell command run once at the end (also after a failure or Ctrl-C).
    pub restore: Option<String>,
    /// Host root for toggles.
    pub root: PathBuf,
    /// The benchmark each trial runs; its label is the prefix of each trial's.
    pub trial: Trial,
    /// `--netns` (toggles of global keys are refused there).
    pub netns: bool,
    /// The statistics rule's options.
    pub rule: results::analysis::CompareOptions,
    /// How the comparison is printed.
    pub format: results::render::CompareFormat,
}

/// Runs the restore on every way out of [`run`], printing what failed.
struct RestoreOnDrop(Restore);

impl Drop for RestoreOnDrop {
    fn drop(&mut self) {
        for e in self.0.run() {
            eprintln!("connstorm: ab: {e}");
        }
    }
}

/// Runs `connstorm ab`; `setup` resolves the trials' setup once the sides are checked.
///
/// # Errors
/// Bad options (exit 2), a failing setup command or toggle (after restoring), bench failures.
pub fn run(args: &Ab, setup: impl FnOnce() -> anyhow::Result<Setup>) -> anyhow::Result<i32> {
    let sides = Sides {
        toggles: &args.toggles,
        a_setup: args.a_setup.as_deref(),
        b_setup: args.b_setup.as_deref(),
    };
    // A fixture root (`--root`, tests) changes no host setting.
    let on_host = args.root == std::path::Path::new("/");
    sides.check(args.netns, on_host && !tuning::host::in_initial_netns())?;
    let setup = setup()?;
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
    let _progress = crate::progress::begin(
        "ab",
        crate::progress::bench_seconds(args.trial.plan.duration) * (2 * args.trials),
    );
    'trials: for i in 1..=args.trials {
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
            let mut trial = args.trial.clone();
            trial.plan.label = sides.trial_label(&args.trial.plan.label, side, i);
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
        let c =
            results::analysis::compare(&a_records, &b_records, (Some(&na), Some(&nb)), &args.rule);
        crate::output::out(&results::render::comparison(&c, args.format));
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
