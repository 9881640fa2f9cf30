//! Every `connstorm` subcommand in one place each: its options (clap `Args` with their value
//! parsers and the `--help` examples), their checks, and its `run`, which returns the exit
//! code. A folder holds a command with more than one job (`load/`, `server/`, `bench/`,
//! `sweep/`, `ab/`, `tune/`, `k8s/`, `scale/`); a file, one with a single job (`report`, `compare`,
//! `plot`, `merge`, `completions`, `man`). The binary's top-level `Cli` names each command's
//! `Args` and calls its `run`.
//!
//! Shared here: [`Format`] (`--format text|json`), [`metrics`] (`--metrics` and its endpoint),
//! [`records`] (reading records and writing the record commands' output) and
//! [`write_report`]. Commands print (results on stdout, notes on stderr) only through
//! [`crate::output`], which never panics on a closed stream.

// In every command, printing never panics (a closed stdout or stderr must not lose a run before
// its record is written): `eprintln!` goes through `crate::output::note`, which ignores write
// errors, and `eprint!` ignores them too. Defined before the commands' modules, so it is theirs.
macro_rules! eprint {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($t)*);
    }};
}
macro_rules! eprintln {
    ($($t:tt)*) => { $crate::output::note(&format!($($t)*)) };
}

pub mod ab;
pub mod bench;
pub mod compare;
pub mod completions;
pub mod examples;
pub mod k8s;
pub mod load;
pub mod man;
pub mod merge;
pub mod metrics;
pub mod plot;
pub mod records;
pub mod report;
pub mod scale;
pub mod server;
pub mod sweep;
pub mod tls;
pub mod tune;

/// `--format` of `bench`, `sweep`, `server`, `load`, `ab` and `tune check`: what each command's
/// `--format` help says it prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable text.
    Text,
    /// JSON.
    Json,
}

/// Writes a command's final report to stdout with `write`: a reader that went away (`| head`)
/// is not an error (the run ended; its exit code still says how).
///
/// # Errors
/// Any other write error, with `what` as its context.
pub fn write_report(
    what: impl Into<String>,
    write: impl FnOnce(&mut std::io::StdoutLock<'_>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context(what.into()),
    }
}
