//! `connstorm tune`: check, apply, revert and export sysctl presets and sysctl.d files; import
//! shell scripts; IRQ plans; kernel audit; the doctor summary; the rule table; the CPU
//! placement and topology snapshots of other hosts.
//!
//! - [`args`]: the options of every `tune` subcommand ([`Command`]).
//! - [`run`](mod@run): what each subcommand does once parsed: it reads its source
//!   ([`Source`]), composes the `tuning` crate's calls and returns the exit code; the text is
//!   `tuning::render`'s.

pub mod args;
pub mod run;

pub use args::*;

/// Runs `connstorm tune ...`.
///
/// # Errors
/// Bad presets, names and files are [`common::error::BadInput`] (exit 2); host failures exit 1.
pub fn run(cmd: Command) -> anyhow::Result<i32> {
    match cmd {
        Command::Check(a) => run::check(&a),
        Command::Apply(a) => run::apply(&a),
        Command::Revert(a) => run::revert(&a),
        Command::Export(a) => run::export(&a),
        Command::Irq(a) => run::irq(&a),
        Command::Kernel(a) => run::kernel(&a),
        Command::Placement(a) => run::placement(&a),
        Command::SnapshotTopology(a) => run::snapshot_topology(&a),
        Command::Import(a) => run::import(&a),
        Command::Presets => run::presets(),
        Command::Rules => run::rules(),
    }
}
