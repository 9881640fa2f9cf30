//! `connstorm`: the command line around the `app` crate. It parses (the top-level [`cli::Cli`];
//! each command's options live with its checks and its run in `app::commands`), dispatches
//! ([`cli::dispatch`]) and turns the outcome into the exit code; the logic lives in the
//! libraries.
//!
//! Exit codes, the same for every command (also in docs/cli.md and after every `--help`,
//! [`cli::EXIT_CODES`]):
//! - `0` ok;
//! - `1` run-time failure: an I/O error, a kernel refusal at run time, a failed apply;
//! - `2` bad input: the command line, a preset or record file, or a host state the command cannot
//!   work with (e.g. an offline CPU), refused before anything is created or changed; the message
//!   says what and how to fix it;
//! - `3` nothing succeeded or nothing was measured (zero successful connections);
//! - `4` `connstorm tune check --strict` found something off;
//! - `128+N` interrupted by signal N (130 SIGINT, 143 SIGTERM) after the report and record were
//!   written; `server` exits 0 after one signal (a signal is how it ends) and 128+N after two. A
//!   second signal skips what is still waited for and writes at once, with the same code
//!   ([`signals`]).

use std::io::Write;

use clap::FromArgMatches;

mod cli;
mod version;

/// Stdout that never panics (and the first error writing it, for the exit code) and the signal
/// handling of every command ([`app::output`], [`app::signals`]).
use app::{output, signals};
use common::error::BadInput;

fn main() {
    let args = app::commands::compare::b_side_separator(std::env::args_os());
    let matches = match cli::command().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => exit_on_parse(e),
    };
    let cli = match cli::Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // One signal is how a server run ends: its report is the result, exit 0. Two quick ones say
    // the run was cut short: 128+N, as for every command.
    let signal_is_normal_end = matches!(cli.command, cli::Command::Server(_));
    let code = match cli::dispatch(cli) {
        // A command that ran to its end after a stop signal (report and record written) says
        // so; errors keep their own code.
        Ok(code) => match signals::received() {
            Some(sig)
                if (code == 0 || code == 3) && (!signal_is_normal_end || signals::hurry()) =>
            {
                128 + sig
            }
            _ => code,
        },
        Err(err) => {
            if is_broken_pipe(&err) {
                0
            } else {
                let code = if err.downcast_ref::<BadInput>().is_some()
                    || err.chain().any(|c| c.downcast_ref::<BadInput>().is_some())
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
    let code = match output::stdout_error() {
        Some(e) if code == 0 => {
            let _ = writeln!(
                std::io::stderr(),
                "connstorm: error: writing the output to stdout failed: {e} (the run ended normally; any record or file it names was written)"
            );
            1
        }
        _ => code,
    };
    std::process::exit(code);
}

/// `--help` and `--version` print to stdout and exit 0, or 1 when stdout cannot take them
/// (`> /dev/full`; a closed pipe is not an error); every other parse error is clap's (exit 2).
fn exit_on_parse(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit();
    }
    let text = e.render().to_string();
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            let _ = writeln!(
                std::io::stderr(),
                "connstorm: error: writing to stdout failed: {err}"
            );
            std::process::exit(1);
        }
        _ => std::process::exit(0),
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
