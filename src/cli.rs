//! The top-level command line, its help text (each command's examples, then the exit codes)
//! and the dispatch to each subcommand.

use clap::{Parser, Subcommand};

use app::commands;

/// The examples after `connstorm --help` and in the top man page.
const EXAMPLES: &str = "\
Examples:
  # Benchmark this host on loopback (15 s); the record goes under ./runs
  connstorm bench
  # The accept server on CPUs 0-3 until Ctrl-C, and from another host 50k connections/s at it
  connstorm server --listen 0.0.0.0:9000 --cpus 0-3
  connstorm load --target 192.0.2.10:9000 --rate 50k/s --duration 30s
  # How this host is set up for connection rate
  connstorm tune check";

/// Measure how fast a Linux host establishes new TCP connections (connections per minute and
/// handshake latency), and tune the host for it.
#[derive(Debug, Parser)]
#[command(
    name = "connstorm",
    version = crate::version::VERSION,
    long_version = crate::version::LONG_VERSION,
    about,
    long_about = None,
    after_help = EXAMPLES
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
    #[command(subcommand, after_help = commands::tune::EXAMPLES)]
    Tune(commands::tune::Command),
    /// Print reports for run records.
    Report(commands::report::Args),
    /// Compare two sets of run records (A vs B) with confidence intervals.
    Compare(commands::compare::Args),
    /// Run interleaved A/B benchmark trials with setup commands or toggles between them.
    Ab(commands::ab::Args),
    /// Step the offered rate to find the knee (highest rate meeting a latency SLO).
    Sweep(commands::sweep::Args),
    /// Measure the closed-loop peak at 1, 2, 4, … cores (server and load together, and a
    /// fixed server with the load growing): scaling efficiency, the knee and what limited it.
    Scale(commands::scale::Args),
    /// Plot run records to SVG or PNG.
    Plot(commands::plot::Args),
    /// Merge the run records of a multi-host run (load generators' segments, servers) into one.
    Merge(commands::merge::Args),
    /// Kubernetes manifests for a multi-host run (Indexed Job of generators, server).
    #[command(subcommand, after_help = commands::k8s::RENDER_EXAMPLES)]
    K8s(commands::k8s::Command),
    /// Print a shell completion script (bash, zsh or fish) to stdout.
    Completions(commands::completions::Args),
    /// Print the man page, or write man pages for every subcommand into a directory.
    Man(commands::man::Args),
}

/// The exit codes of every command, shown after each command's `--help` (and in docs/cli.md and
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

/// The command line definition with each command's examples and then [`EXIT_CODES`] after the
/// `-h` and `--help` of every command and subcommand, at any depth.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    fn add(c: clap::Command) -> clap::Command {
        // Each command's `after_help` is its examples, defined beside its options; where a
        // command has an `after_long_help` (`--help` shows it instead of `after_help`), that
        // follows the examples there.
        let examples = c.get_after_help().map(ToString::to_string);
        let then_codes = |more: Option<String>| {
            [examples.clone(), more, Some(EXIT_CODES.to_string())]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        let c = match c.get_after_long_help().map(ToString::to_string) {
            Some(long) => c.after_long_help(then_codes(Some(long))),
            None => c,
        };
        c.after_help(then_codes(None)).mut_subcommands(add)
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
        Command::Scale(a) => commands::scale::run(a, crate::version::build()),
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

    /// Every command's `-h` and `--help` show 2 to 4 examples, each a command line of that
    /// command that parses as the binary parses it (after main's `--` rewriting; a pipe or a
    /// redirection ends what is parsed), each line within 100 columns: examples cannot rot.
    #[test]
    fn every_command_shows_examples_that_parse() {
        use app::commands::examples;
        fn check(c: &mut clap::Command, path: &mut Vec<String>) {
            let name = path.join(" ");
            let typed = format!("{name} ");
            for help in [
                c.render_help().to_string(),
                c.render_long_help().to_string(),
            ] {
                let (found, _) = examples::split(&help);
                let lines: Vec<&String> = found.iter().flat_map(|e| &e.commands).collect();
                assert!(
                    (2..=4).contains(&lines.len()),
                    "{name}: {} examples in\n{help}",
                    lines.len()
                );
                assert!(
                    lines.iter().any(|l| l.starts_with(&typed) || **l == name),
                    "{name}: no example of `{name}` itself: {lines:?}"
                );
                for e in &found {
                    assert!(
                        !e.what.is_empty(),
                        "{name}: an example says not what it does"
                    );
                }
                for line in &lines {
                    let words = shlex::split(line)
                        .unwrap_or_else(|| panic!("{name}: `{line}` is not shell words"));
                    let words: Vec<String> = words
                        .into_iter()
                        .take_while(|w| !["|", ">", ">>", "&&", "||", ";"].contains(&w.as_str()))
                        .collect();
                    assert_eq!(words[0], "connstorm", "{name}: `{line}`");
                    let argv = app::commands::compare::b_side_separator(
                        words.iter().map(std::ffi::OsString::from),
                    );
                    if let Err(e) = Cli::try_parse_from(&argv) {
                        panic!("{name}: `{line}` does not parse: {e}");
                    }
                }
                for l in help.lines().skip_while(|l| *l != examples::HEADING) {
                    assert!(l.chars().count() <= 100, "{name}: over 100 columns: {l}");
                }
            }
            for sub in c.get_subcommands_mut().filter(|s| s.get_name() != "help") {
                path.push(sub.get_name().to_string());
                check(sub, path);
                path.pop();
            }
        }
        check(&mut command(), &mut vec!["connstorm".to_string()]);
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
