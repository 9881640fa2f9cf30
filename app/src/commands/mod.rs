//! The commands between parsing and exit code: what `connstorm bench`, `load`, `server`,
//! `tune`, `ab`, `sweep` and the record commands do once their options are parsed. The binary
//! parses the command line into the option structs here and maps the result to an exit code;
//! these functions compose the libraries and print (results on stdout, notes on stderr) only
//! through [`crate::output`], which never panics on a closed stream.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::metrics::Endpoint;

// As in the binary: printing never panics (a closed stdout or stderr must not lose a run before
// its record is written), see `crate::output`.
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
pub mod load;
pub mod records;
pub mod server;
pub mod sweep;
pub mod tune;

/// The `--metrics ADDR` / `--metrics-linger` options of `server`, `load` and `bench`.
#[derive(Debug, Clone, Copy, Default)]
pub struct MetricsOptions {
    /// Where to serve `/metrics` (`None`: no endpoint).
    pub addr: Option<SocketAddr>,
    /// How long to keep serving the final values after the run (`None` or zero: not at all).
    pub linger: Option<Duration>,
}

/// Binds and starts the endpoint when an address is given, and says where on stderr
/// (`connstorm COMMAND: metrics on http://127.0.0.1:PORT/metrics`).
///
/// # Errors
/// Bad input (exit 2) when the address cannot be bound (in use, not local, privileged port);
/// a run-time error when the thread cannot start.
pub fn start_metrics(o: &MetricsOptions, command: &str) -> anyhow::Result<Option<Endpoint>> {
    let Some(addr) = o.addr else {
        return Ok(None);
    };
    let ep = Endpoint::start(addr).map_err(|e| {
        if e.is_bad_input() {
            crate::bad_input(e.to_string())
        } else {
            anyhow::Error::new(e)
        }
    })?;
    eprintln!(
        "connstorm {command}: metrics on http://{}/metrics",
        ep.local_addr()
    );
    Ok(Some(ep))
}

/// Ends the endpoint: after the linger (cut short by a SIGINT/SIGTERM that arrives during it;
/// one that ended the run before does not), stops its thread and joins it.
pub fn end_metrics(ep: Option<Endpoint>, o: &MetricsOptions) {
    let Some(mut ep) = ep else { return };
    if let Some(linger) = o.linger.filter(|d| !d.is_zero()) {
        let signals_before = crate::signals::count();
        let until = Instant::now() + linger;
        eprintln!(
            "connstorm: serving the final metrics for {} more (SIGINT/SIGTERM ends it)",
            humantime::format_duration(linger)
        );
        while Instant::now() < until && crate::signals::count() == signals_before {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    ep.stop();
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
