//! `connstorm`: the command-line shell around the `server`, `loadgen`, `tuning` and `results`
//! crates. It parses, dispatches and prints; the logic lives in the libraries.
//!
//! Exit codes (also in README.md):
//! - `0` success;
//! - `1` the run failed (an I/O error, a failed check, a kernel refusal at run time);
//! - `2` bad input: the command line, a preset or record file, or a host state the command cannot
//!   work with (e.g. an offline CPU); the message says what and how to fix it;
//! - `3` `connstorm load`: the run completed but no attempt succeeded (all failed or none could start);
//! - `4` `connstorm tune check --strict`: something is off.

// Doc comments of CLI options are the `--help` text, where `[sysctl]` or `greet[:BYTES]` mean
// what they say, not intra-doc links.
#![allow(rustdoc::broken_intra_doc_links)]

use std::io::Write;

use clap::Parser;

mod bench;
mod cli;
mod cmd;
mod signals;
mod units;

fn main() {
    let cli = cli::Cli::parse_from(cmd::compare::b_side_separator(std::env::args_os()));
    let code = match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                0
            } else {
                let code = if err.downcast_ref::<cli::BadInput>().is_some()
                    || err
                        .chain()
                        .any(|c| c.downcast_ref::<cli::BadInput>().is_some())
                {
                    2
                } else {
                    1
                };
                let _ = writeln!(std::io::stderr(), "connstorm: error: {err:#}");
                code
            }
        }
    };
    std::process::exit(code);
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
