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
                    self.load_cpus.len(),
                )
                .min(fd_room()),
                loadgen::Pattern::Closed { .. } => fd_room(),
            },
            late_threshold: Duration::from_millis(1),
            // `--mode http`: one GET per connection, so the server answers and counts it served.
            http: matches!(self.mode, server::Mode::Http { .. })
                .then(loadgen::HttpRequest::default),
            tls: None,
            engine: self.load_engine,
        }
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
