//! The top-level command line and the error type that maps to exit code 2.

use clap::{Parser, Subcommand};

use crate::cmd;

/// Measure how fast a Linux host establishes new TCP connections (connections per minute and
/// handshake latency), and tune the host for it.
#[derive(Debug, Parser)]
#[command(name = "connstorm", version = crate::cmd::VERSION, about, long_about = None)]
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
    Bench(cmd::bench::Args),
    /// Run the per-core accept server.
    Server(cmd::server::Args),
    /// Run the load generator against one or more servers.
    Load(cmd::load::Args),
    /// Read, check and change the host: sysctl presets, IRQ affinity, kernel config audit.
    #[command(subcommand)]
    Tune(cmd::tune::Command),
    /// Print reports for run records.
    Report(cmd::report::Args),
    /// Compare two sets of run records (A vs B) with confidence intervals.
    Compare(cmd::compare::Args),
    /// Run interleaved A/B benchmark trials with setup commands or toggles between them.
    Ab(cmd::ab::Args),
    /// Step the offered rate to find the knee (highest rate meeting a latency SLO).
    Sweep(cmd::sweep::Args),
    /// Plot run records to SVG or PNG.
    Plot(cmd::plot::Args),
}

/// An error in what the user gave us (command line, file, host state): exit code 2.
///
/// Wrap with `anyhow::Error::new(BadInput(msg))` or [`bad_input`]; the message must say what is
/// wrong and how to fix it.
#[derive(Debug)]
pub struct BadInput(pub String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Builds a bad-input error (exit code 2) from a message.
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
