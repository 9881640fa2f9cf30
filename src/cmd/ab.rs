//! `connstorm ab`: interleaved A/B benchmark trials for kernel-patch and sysctl validation.
//!
//! Trials run A, B, A, B, … (so slow drift — thermal, page cache, other tenants — hits both sides
//! alike). Before each trial the side's setup runs: `--a-setup`/`--b-setup` shell commands and/or
//! built-in toggles (`--toggle sysctl:KEY=VA,VB`, `--toggle sched-feature:NAME`). Toggles are
//! restored to the values they had before the first trial when the run ends — normally, on
//! failure, or on Ctrl-C (also when a third Ctrl-C, or a second one the run does not finish
//! after, forces the exit: the restore is a cleanup hook, [`::bench::signals`]);
//! `--restore CMD` runs at the end for what setup commands changed. Every trial writes its own run
//! record; the comparison uses `results::compare` (the statistics rule in `--help`: Hodges–Lehmann
//! shift with its exact Mann–Whitney interval, at least 5 unflagged trials a side, a noise floor).
//!
//! Sides are named by what differs (toggle values, setup commands), and each trial's label is
//! `[LABEL-]<side name>#<trial>` so a later `connstorm compare` names them the same way.

use std::path::PathBuf;

use tuning::plan::Toggle;

use super::compare::RuleArgs;
use crate::cmd::bench;
use results::render::CompareFormat as Format;

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
    /// Shell command (sh -c) run before every A trial; its output goes to stderr (stdout carries
    /// only the comparison).
    #[arg(long)]
    pub a_setup: Option<String>,
    /// Shell command (sh -c) run before every B trial; output to stderr, as --a-setup.
    #[arg(long)]
    pub b_setup: Option<String>,
    /// Shell command run once at the end (also after a failure or Ctrl-C); output to stderr.
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
    pub compare_format: Option<Format>,
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

/// Runs `connstorm ab` ([`::bench::commands::ab::run`]).
///
/// # Errors
/// Bad options (exit 2), a failing setup command or toggle (after restoring), bench failures.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let ab = ::bench::commands::ab::Ab {
        trials: args.trials,
        toggles: args.toggles.clone(),
        a_setup: args.a_setup.clone(),
        b_setup: args.b_setup.clone(),
        restore: args.restore.clone(),
        root: args.root.clone(),
        trial: args.bench.trial(),
        netns: args.bench.setup.netns,
        rule: args.rule.options(),
        format: args.compare_format.unwrap_or(match args.bench.format {
            crate::cli::Format::Text => Format::Text,
            crate::cli::Format::Json => Format::Json,
        }),
    };
    ::bench::commands::ab::run(&ab, || args.bench.setup.resolve())
}
