//! The top-level command line, its help text (exit codes) and the dispatch to each subcommand.

use clap::{Parser, Subcommand};

use app::commands;

/// Measure how fast a Linux host establishes new TCP connections (connections per minute and
/// handshake latency), and tune the host for it.
#[derive(Debug, Parser)]
#[command(
    name = "connstorm",
    version = crate::version::VERSION,
    long_version = crate::version::LONG_VERSION,
    about,
    long_about = None
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark this host on loopback (server and load in one process), or an external server
    /// with --target; writes a run record.
    Bench(commands::bench::Command),
    /// Run the per-core accept server.
    Server(commands::server::Args),
    /// Run the load generator against one or more servers.
    Load(commands::load::Args),
    /// Read, check and change the host: sysctl presets, IRQ affinity, kernel config audit.
    #[command(subcommand)]
    Tune(commands::tune::Command),
    /// Print reports for run records.
    Report(commands::report::Args),
    /// Compare two sets of run records (A vs B) with confidence intervals.
    Compare(commands::compare::Args),
    /// Run interleaved A/B benchmark trials with setup commands or toggles between them.
    Ab(commands::ab::Args),
    /// Step the offered rate to find the knee (highest rate meeting a latency SLO).
    Sweep(commands::sweep::Args),
    /// Plot run records to SVG or PNG.
    Plot(commands::plot::Args),
    /// Merge the run records of a multi-host run (load generators' segments, servers) into one.
    Merge(commands::merge::Args),
    /// Kubernetes manifests for a multi-host run (Indexed Job of generators, server).
    #[command(subcommand)]
    K8s(commands::k8s::Command),
    /// Print a shell completion script (bash, zsh or fish) to stdout.
    Completions(commands::completions::Args),
    /// Print the man page, or write man pages for every subcommand into a directory.
    Man(commands::man::Args),
}

/// The exit codes of every command, shown after each command's `--help` (and in README.md and
/// `src/main.rs`).
pub const EXIT_CODES: &str = "\
Exit codes (every command):
  0        ok
  1        run-time failure (I/O, a kernel refusal at run time, a failed apply)
  2        bad input (command line, files, host state), refused before anything changes
  3        nothing succeeded or nothing was measured (zero successful connections)
  4        `tune check --strict` found something off
  128+N    interrupted by signal N (130 SIGINT, 143 SIGTERM) after the report and record were
           written; a second signal stops waiting and writes them at once, same code
           (`server` ends by a signal as a rule: 0 after one, 128+N after two)";

/// The command line definition with [`EXIT_CODES`] after the `--help` of every command and
/// subcommand, at any depth.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    fn add(c: clap::Command) -> clap::Command {
        // `--help` shows `after_long_help` instead of `after_help` where a command has one.
        let c = match c.get_after_long_help().map(ToString::to_string) {
            Some(long) => c.after_long_help(format!("{long}\n\n{EXIT_CODES}")),
            None => c,
        };
        c.after_help(EXIT_CODES).mut_subcommands(add)
    }
    add(Cli::command())
}

/// Runs the chosen subcommand and returns the process exit code.
///
/// # Errors
/// Whatever the subcommand returns; [`common::error::BadInput`] in the chain means exit code 2.
pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Bench(a) => commands::bench::run(a, crate::version::build()),
        Command::Server(a) => commands::server::run(a, crate::version::build()),
        Command::Load(a) => commands::load::run(a, crate::version::build()),
        Command::Tune(c) => commands::tune::run(c),
        Command::Report(a) => commands::report::run(a),
        Command::Compare(a) => commands::compare::run(a),
        Command::Ab(a) => commands::ab::run(a, crate::version::build()),
        Command::Sweep(a) => commands::sweep::run(a, crate::version::build()),
        Command::Plot(a) => commands::plot::run(a),
        Command::Merge(a) => commands::merge::run(a),
        Command::K8s(c) => commands::k8s::run(c),
        Command::Completions(a) => commands::completions::run(a, command()),
        Command::Man(a) => commands::man::run(a, command()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        command().debug_assert();
    }

    #[test]
    fn every_subcommand_help_ends_with_the_exit_codes() {
        fn check(c: &mut clap::Command, path: &str) {
            let help = c.render_long_help().to_string();
            assert!(help.contains("128+N"), "{path} --help lacks the exit codes");
            // clap's own `help` subcommand only prints other commands' help.
            for sub in c.get_subcommands_mut().filter(|s| s.get_name() != "help") {
                let name = format!("{path} {}", sub.get_name());
                check(sub, &name);
            }
        }
        check(&mut command(), "connstorm");
    }
}
