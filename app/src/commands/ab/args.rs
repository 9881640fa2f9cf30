//! The options of `connstorm ab`: the trials, the sides' setup commands and toggles, the
//! statistics rule, and the benchmark each trial runs (`bench`'s options).

use std::path::PathBuf;

use tuning::plan::Toggle;

use results::render::CompareFormat as Format;

use crate::commands::bench;
use crate::commands::compare::{RuleArgs, ShowArgs};

/// The examples after `connstorm ab --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # A sysctl toggled between the sides (A = 1, B = 0), 10 trials each, restored at the end
  connstorm ab --toggle sysctl:net.ipv4.tcp_timestamps=1,0
  # A scheduler feature (A on, B off), 6 trials a side of 5 s each
  connstorm ab --toggle sched-feature:TTWU_QUEUE --trials 6 --duration 5s
  # Your own commands before each side's trials (their output goes to stderr)
  connstorm ab --a-setup 'ethtool -C eth0 rx-usecs 0' --b-setup 'ethtool -C eth0 rx-usecs 50'
  # Latency phases at 20k conn/s (default: 80% of a first pair's lower peak); sides named
  connstorm ab --toggle sysctl:net.ipv4.tcp_timestamps=1,0 --rate 20k/s --label-a ts --label-b no-ts";

/// Options of `connstorm ab`.
///
/// `--format text|json` (as in every command) is the comparison printed on stdout;
/// `--compare-format markdown` prints it as Markdown.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = EXAMPLES, after_long_help = crate::commands::compare::RULE_HELP)]
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
    /// Side names and table width.
    #[command(flatten)]
    pub show: ShowArgs,
    /// The benchmark each trial runs (`connstorm bench` options).
    #[command(flatten)]
    pub bench: bench::Args,
}

fn parse_toggle(s: &str) -> Result<Toggle, String> {
    Toggle::parse(s).map_err(|e| e.to_string())
}
