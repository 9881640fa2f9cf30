//! What a harness is given: its [`Setup`] (fixed for its life) and each phase's [`PhaseSpec`];
//! the load side's descriptor budget next to the in-process server; and how server and load
//! errors map to exit codes.

use std::net::SocketAddr;
use std::time::Duration;

/// Everything fixed for the life of a harness.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Setup {
    /// CPUs of the server workers (ignored with `target`).
    pub server_cpus: Vec<usize>,
    /// Server workers (`bench --server-workers`): 0 = one per server CPU; more = that many,
    /// spread over the server CPUs round-robin ([`server::ServerConfig::workers`]).
    pub server_workers: usize,
    /// CPUs of the load workers.
    pub load_cpus: Vec<usize>,
    /// Server engine choice.
    #[serde(serialize_with = "debug_str")]
    pub engine: server::EngineChoice,
    /// What the server does with each connection.
    #[serde(serialize_with = "display_str")]
    pub mode: server::Mode,
    /// Listener backlog (capped by net.core.somaxconn).
    pub backlog: u32,
    /// How the client closes.
    pub close: loadgen::CloseMode,
    /// External server to load instead of an in-process one.
    pub target: Option<SocketAddr>,
    /// Run in two fresh namespaces joined by veth.
    pub netns: bool,
    /// netem RTT between the namespaces.
    pub rtt: Option<Duration>,
    /// Per-attempt connect timeout.
    pub connect_timeout: Duration,
    /// Bytes the client reads after connect (server greet mode).
    pub expect_bytes: Option<u32>,
    /// `bench --whole-machine`: every CPU this process may use runs one server worker and one
    /// load worker (recorded as the placement `whole-machine`).
    pub whole_machine: bool,
    /// The load side's connect engine (`--load-engine`).
    #[serde(serialize_with = "debug_str")]
    pub load_engine: loadgen::LoadEngine,
    /// Measure the accept-queue wait where it can be (`--accept-wait on`, the default).
    pub accept_wait: bool,
    /// Load workers (`--load-workers`): 0 = one per load CPU; more = that many, spread over the
    /// load CPUs round-robin ([`loadgen::LoadConfig::workers`]).
    pub load_workers: usize,
    /// Whether each load worker connects from its own slice of the ephemeral range
    /// (`--port-slices`, [`loadgen::PortSlices`]).
    pub port_slices: loadgen::PortSlices,
    /// The open-loop generator's pacing (`--spin`, `--start-batch`).
    #[serde(skip)]
    pub pacing: loadgen::Pacing,
    /// `--tls`: a TLS handshake on every connection (`None`: plain TCP).
    pub tls: Option<BenchTls>,
    /// `--http`: one HTTP/1.1 request per connection (also with `--mode http`).
    pub http: bool,
}

/// `bench --tls`: the in-process server's TLS config and what the load offers.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchTls {
    /// The in-process server's certificate and config (self-signed at start unless
    /// `--cert`/`--key`); `None` with `--target`.
    #[serde(skip)]
    pub server: Option<server::tls::TlsServer>,
    /// The load generator's TLS options (it trusts the server's certificate).
    pub load: loadgen::tls::TlsOptions,
}

fn debug_str<T: std::fmt::Debug, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:?}").to_lowercase())
}

fn display_str<T: std::fmt::Display, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

impl Setup {
    /// The record's placement: `whole-machine`, `overlap` (the CPU sets share CPUs) or `split`.
    pub fn placement(&self) -> &'static str {
        if self.whole_machine {
            "whole-machine"
        } else if self.server_cpus.iter().any(|c| self.load_cpus.contains(c)) {
            "overlap"
        } else {
            "split"
        }
    }

    /// The load generator's configuration for one phase against `target`.
    pub fn load_config(&self, target: SocketAddr, spec: &PhaseSpec) -> loadgen::LoadConfig {
        loadgen::LoadConfig {
            targets: vec![target],
            pattern: spec.pattern,
            duration: spec.duration,
            warmup: spec.warmup,
            cpus: self.load_cpus.clone(),
            workers: self.load_workers,
            port_slices: self.port_slices,
            close: self.close,
            sources: Vec::new(),
            connect_timeout: self.connect_timeout,
            expect_bytes: self.expect_bytes,
            // The load generator's own bound (rate × timeout, capped per worker), within what the
            // fd limit leaves next to the in-process server.
            max_in_flight: match spec.pattern {
                loadgen::Pattern::Open { rate_per_sec, .. } => loadgen::default_max_in_flight(
                    rate_per_sec,
                    self.connect_timeout,
                    self.load_workers.max(self.load_cpus.len()),
                )
                .min(fd_room()),
                loadgen::Pattern::Closed { .. } => fd_room(),
            },
            late_threshold: Duration::from_millis(1),
            // `--mode http`: one GET per connection, so the server answers and counts it served.
            http: (self.http || matches!(self.mode, server::Mode::Http { .. }))
                .then(loadgen::HttpRequest::default),
            tls: self.tls.as_ref().map(|t| t.load.clone()),
            engine: self.load_engine,
            pacing: self.pacing,
            // The harness asks for them when the server is its own (`Harness::run_phase`).
            accept_stamps: None,
        }
    }
}

/// The close mode of a run: `close` as given (`--close`), or when none was given `server` with
/// an HTTP request per connection (`--http`, or `--mode http` in `bench`, `sweep`, `ab` and
/// `scale`) — the server closes after the response, what an HTTP client sending `Connection:
/// close` sees (wrk, h2load) — else `rst` (SO_LINGER 0: no TIME_WAIT, ports free at once). RST
/// after a response is another wire (`--close rst`), named so in every report's first line
/// ([`common::wire::describe`]; issue 36).
pub fn close_or_default(close: Option<loadgen::CloseMode>, http: bool) -> loadgen::CloseMode {
    close.unwrap_or(if http {
        loadgen::CloseMode::Server
    } else {
        loadgen::CloseMode::Rst
    })
}

/// Refuses a client close mode and an in-process server mode that wait on each other: `--close
/// server` waits for the server's FIN, `--mode hold` keeps every connection open until the
/// client closes it, so every attempt would hang until the connect timeout (a run of timeouts,
/// "nothing measured", instead of a refusal).
///
/// # Errors
/// One line naming both options and what to give instead.
pub fn check_close_and_mode(close: loadgen::CloseMode, mode: &server::Mode) -> Result<(), String> {
    match (close, mode) {
        (loadgen::CloseMode::Server, server::Mode::Hold) => Err(
            "--close server waits for the server to close, and --mode hold keeps every connection open until the client closes it: each attempt would hang until the connect timeout; give --close rst or --close fin with --mode hold, or another --mode (close, greet:N, http) with --close server"
                .to_string(),
        ),
        _ => Ok(()),
    }
}

/// The server mode `bench` runs: `mode` as given (`--mode`), or when none was given `http` (a
/// `204` per request) with `--http`, `close` with `--tls` alone (TLS serves `close` and `http`
/// only: close_notify, then close), else `rst`.
///
/// # Errors
/// A message for exit 2 when the given `mode` cannot carry the protocol: with `--http` any mode
/// but `http` (an explicit `--mode rst` is refused rather than silently replaced), with `--tls`
/// alone any mode but `close` and `http`.
pub fn protocol_mode(
    mode: Option<server::Mode>,
    tls: bool,
    http: bool,
) -> Result<server::Mode, String> {
    use server::Mode;
    match (mode, tls, http) {
        (None, _, true) => Ok(Mode::Http { body_bytes: 0 }),
        (None, true, false) => Ok(Mode::Close),
        (None, false, false) => Ok(Mode::Rst),
        (Some(m @ Mode::Http { .. }), _, _) => Ok(m),
        (Some(m), _, true) => Err(format!(
            "--http needs the server to answer HTTP, not --mode {m}: drop --mode (or give --mode http)"
        )),
        (Some(Mode::Close), true, false) => Ok(Mode::Close),
        (Some(m), true, false) => Err(format!(
            "--tls serves --mode close or --mode http, not {m}: drop --mode or pick one of those"
        )),
        (Some(m), false, false) => Ok(m),
    }
}

/// One load run on the harness.
#[derive(Debug, Clone)]
pub struct PhaseSpec {
    /// Phase name in the record ("peak", "latency", "step-3", ...).
    pub name: String,
    /// Open or closed loop.
    pub pattern: loadgen::Pattern,
    /// Measured time.
    pub duration: Duration,
    /// Warm-up before the measured time (excluded from rates and latencies, included in the
    /// cross-check because the kernel counts it).
    pub warmup: Duration,
}

/// [`fd_room`] as it will be once `bench` has raised its soft fd limit to the hard one
/// (server::rlimit::raise_nofile), without raising it: for checks before anything changes.
pub fn fd_room_after_raise() -> usize {
    room_of(|(_, hard)| hard)
}

/// Descriptors the load side may hold: half the soft fd limit, leaving room for the server's.
pub fn fd_room() -> usize {
    room_of(|(soft, _)| soft)
}

/// Half of one of RLIMIT_NOFILE's (soft, hard) limits, within 64..=16,384 (1024 if unreadable).
fn room_of(pick: fn((u64, u64)) -> u64) -> usize {
    let limit = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map(pick)
        .unwrap_or(1024);
    ((limit / 2).clamp(64, 16_384)) as usize
}

/// Maps server start errors: configuration problems are bad input (exit 2).
pub fn server_error(e: server::ServerError) -> anyhow::Error {
    if e.is_bad_input() {
        crate::bad_input(e.to_string())
    } else {
        anyhow::Error::new(e).context("server")
    }
}

/// Maps load errors: configuration problems are bad input (exit 2).
pub fn load_error(e: loadgen::LoadError) -> anyhow::Error {
    match e {
        loadgen::LoadError::Config(m) => crate::bad_input(m),
        other => anyhow::Error::new(other).context("load generator"),
    }
}

#[cfg(test)]
impl Setup {
    /// The setup the harness's tests start from: connstorm's own server on CPU `server_cpu`
    /// with `engine` (mode close, backlog 4,096), the epoll load on `load_cpu` closing with
    /// FIN, on loopback, accept-queue wait measured, no TLS or HTTP; a test changes what it
    /// needs with `Setup { field, ..Setup::for_test(..) }`.
    pub(crate) fn for_test(
        server_cpu: usize,
        load_cpu: usize,
        engine: server::EngineChoice,
    ) -> Setup {
        Setup {
            server_cpus: vec![server_cpu],
            server_workers: 0,
            load_cpus: vec![load_cpu],
            engine,
            mode: server::Mode::Close,
            backlog: 4096,
            close: loadgen::CloseMode::Fin,
            target: None,
            netns: false,
            rtt: None,
            connect_timeout: Duration::from_secs(3),
            expect_bytes: None,
            whole_machine: false,
            load_engine: loadgen::LoadEngine::Epoll,
            accept_wait: true,
            load_workers: 0,
            port_slices: loadgen::PortSlices::On,
            pacing: loadgen::Pacing::default(),
            tls: None,
            http: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 36 item 1: with a request per connection the default close is the server's (the
    /// wire of HTTP clients sending `Connection: close`); without one it stays RST; a given
    /// `--close` always wins.
    #[test]
    fn the_default_close_is_the_servers_with_http_and_rst_without() {
        use loadgen::CloseMode::{Fin, Rst, Server};
        assert_eq!(close_or_default(None, true), Server);
        assert_eq!(close_or_default(None, false), Rst);
        assert_eq!(close_or_default(Some(Rst), true), Rst);
        assert_eq!(close_or_default(Some(Fin), false), Fin);
    }
}
