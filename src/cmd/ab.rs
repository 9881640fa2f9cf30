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
//! Sides are named by what differs (toggle values, setup commands), and each trial's label is
//! `[LABEL-]<side name>#<trial>` so a later `connstorm compare` names them the same way.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use tuning::toggle::{Original, Side, Toggle};

use super::compare::{FormatArg, RuleArgs};
use crate::cmd::bench;
use crate::error::bad_input;

/// What a side is: its toggle values and setup command, e.g.
/// `net.ipv4.tcp_timestamps=1` or `setup: ethtool -K eth0 gro off`; `A`/`B` when nothing names it.
pub fn side_name(args: &Args, side: Side) -> String {
    let mut parts: Vec<String> = args.toggles.iter().map(|t| t.describe(side)).collect();
    let cmd = if side == Side::A {
        &args.a_setup
    } else {
        &args.b_setup
    };
    if let Some(c) = cmd {
        parts.push(format!("setup: {c}"));
    }
    if parts.is_empty() {
        (if side == Side::A { "A" } else { "B" }).to_string()
    } else {
        parts.join(", ")
    }
}

/// Options of `connstorm ab`.
///
/// `--format text|json` (as in every command) is the comparison printed on stdout;
/// `--compare-format markdown` prints it as Markdown.
#[derive(Debug, Clone, clap::Args)]
#[command(after_long_help = super::compare::RULE_HELP)]
pub struct Args {
    /// Trials per side (A and B each run this many times, interleaved).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub trials: u32,
    /// Shell command (sh -c) run before every A trial.
    #[arg(long)]
    pub a_setup: Option<String>,
    /// Shell command (sh -c) run before every B trial.
    #[arg(long)]
    pub b_setup: Option<String>,
    /// Shell command run once at the end (also after a failure or Ctrl-C).
    #[arg(long)]
    pub restore: Option<String>,
    /// Built-in toggle: `sysctl:KEY=VA,VB` or `sched-feature:NAME` (A = on, B = off); repeatable.
    #[arg(long = "toggle", value_parser = parse_toggle)]
    pub toggles: Vec<Toggle>,
    /// Host root for toggles (tests point it at fixture trees).
    #[arg(long, default_value = "/", hide = true)]
    pub root: PathBuf,
    /// Comparison format on stdout, overriding `--format` (the only way to get Markdown).
    #[arg(long = "compare-format", value_enum)]
    pub compare_format: Option<FormatArg>,
    /// The statistics rule's options.
    #[command(flatten)]
    pub rule: RuleArgs,
    /// The benchmark each trial runs (`connstorm bench` options).
    #[command(flatten)]
    pub bench: bench::Args,
}

fn parse_toggle(s: &str) -> Result<Toggle, String> {
    Toggle::parse(s).map_err(|e| e.to_string())
}

/// Puts the toggles back; reports every failure.
struct Restore<'a> {
    root: &'a Path,
    saved: Vec<(Toggle, Original)>,
    command: Option<String>,
}

impl Restore<'_> {
    fn run(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        for (t, orig) in self.saved.drain(..).rev() {
            if let Err(e) = t.restore(self.root, &orig) {
                errors.push(format!("could not restore {}: {e}", t.with_original(&orig)));
            }
        }
        if let Some(cmd) = self.command.take() {
            if let Err(e) = shell(&cmd) {
                errors.push(format!("--restore command failed: {e:#}"));
            }
        }
        errors
    }
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        for e in self.run() {
            eprintln!("connstorm: ab: {e}");
        }
    }
}

fn shell(cmd: &str) -> anyhow::Result<()> {
    let status = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .status()
        .with_context(|| format!("run `{cmd}`"))?;
    if !status.success() {
        bail!("`{cmd}` exited with {status}");
    }
    Ok(())
}

/// Runs `connstorm ab`.
///
/// # Errors
/// Bad options (exit 2), a failing setup command or toggle (after restoring), bench failures.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if args.a_setup.is_none() && args.b_setup.is_none() && args.toggles.is_empty() {
        return Err(bad_input(
            "nothing distinguishes A from B: give --a-setup/--b-setup commands or a --toggle (e.g. --toggle sysctl:net.ipv4.tcp_timestamps=1,0)",
        ));
    }
    if args.bench.setup.netns {
        for t in &args.toggles {
            if let Toggle::Sysctl { key, .. } = t {
                if key.scope() == tuning::sysctl::Scope::Netns {
                    return Err(bad_input(format!(
                        "--toggle {}: this sysctl is per network namespace, and --netns runs every trial in fresh namespaces that never see it; drop --netns, or change it with --a-setup/--b-setup inside the namespaces",
                        key.as_str()
                    )));
                }
            }
        }
    }
    let setup = args.bench.setup.resolve()?;
    let _ = server::rlimit::raise_nofile();
    let stop = crate::signals::stop_flag().context("install signal handlers")?;
    // Read every original value before changing anything.
    let mut saved = Vec::new();
    for t in &args.toggles {
        let orig = t
            .read(&args.root)
            .map_err(|e| bad_input(format!("toggle: {e}")))?;
        saved.push((t.clone(), orig));
    }
    // A second Ctrl-C exits without unwinding: restore the toggles then too.
    let _forced_exit = {
        let (root, saved) = (args.root.clone(), saved.clone());
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
    let mut restore = Restore {
        root: &args.root,
        saved,
        command: args.restore.clone(),
    };
    let mut a_records = Vec::new();
    let mut b_records = Vec::new();
    let mut outcome: anyhow::Result<()> = Ok(());
    let _progress = crate::progress::begin(
        "ab",
        crate::progress::bench_seconds(args.bench.duration) * (2 * args.trials),
    );
    'trials: for i in 1..=args.trials {
        for side in [Side::A, Side::B] {
            if crate::signals::stopped(&stop) {
                break 'trials;
            }
            let name = if side == Side::A { "A" } else { "B" };
            let step = (|| -> anyhow::Result<()> {
                for t in &args.toggles {
                    t.set(&args.root, side)
                        .with_context(|| format!("set {}", t.describe(side)))?;
                }
                let cmd = if side == Side::A {
                    &args.a_setup
                } else {
                    &args.b_setup
                };
                if let Some(cmd) = cmd {
                    shell(cmd).with_context(|| format!("{name} setup"))?;
                }
                Ok(())
            })();
            if let Err(e) = step {
                outcome = Err(e);
                break 'trials;
            }
            eprintln!("[ab] trial {i}/{} side {name}", args.trials);
            crate::progress::trial("ab", i, args.trials, name);
            let mut trial = args.bench.clone();
            let base = if trial.setup.label.is_empty() {
                String::new()
            } else {
                format!("{}-", trial.setup.label)
            };
            trial.setup.label = format!("{base}{}#{i}", side_name(&args, side));
            match crate::bench::run::execute(&trial, setup.clone(), &stop, None) {
                Ok((record, path, result)) => {
                    let flags = results::compare::trial_flags(&record);
                    eprintln!(
                        "[ab] {name}{i}: peak {}, record {}{}",
                        record.phase("peak").map_or_else(
                            || results::numfmt::NA.to_string(),
                            |p| format!("{} conn/s", results::numfmt::fixed(p.achieved_per_sec, 0))
                        ),
                        path.display(),
                        if flags.is_empty() {
                            String::new()
                        } else {
                            format!(" (flagged: {})", flags.join(", "))
                        }
                    );
                    let interrupted = record.run.interrupted;
                    if !interrupted {
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
    let errors = restore.run();
    for e in &errors {
        eprintln!("connstorm: ab: {e}");
    }
    if !args.toggles.is_empty() && errors.is_empty() {
        eprintln!("[ab] toggles restored to their original values");
    }
    // A comparison needs both sides: with one side empty (e.g. B's setup failed) there is
    // nothing to print but the error.
    if !a_records.is_empty() && !b_records.is_empty() {
        let (na, nb) = (side_name(&args, Side::A), side_name(&args, Side::B));
        let c = results::compare::compare(
            &a_records,
            &b_records,
            (Some(&na), Some(&nb)),
            &args.rule.options(),
        );
        let fmt = args.compare_format.unwrap_or(match args.bench.format {
            bench::Format::Text => FormatArg::Text,
            bench::Format::Json => FormatArg::Json,
        });
        print!("{}", results::compare::render(&c, fmt.into()));
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
