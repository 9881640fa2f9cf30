//! What a load run does ([`LoadConfig`]): targets, open or closed loop, durations, CPUs, close
//! mode, sources, and the plain option types of its parts (the HTTP request, the TLS options, the
//! engine asked for), each checked by [`LoadConfig::validate`] before any thread starts. The
//! bottom of the crate: it imports no other part of it but [`crate::error`].

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::LoadError;

mod engine;
mod http;
mod tls;

pub use engine::LoadEngine;
pub use http::{read_body, HttpRequest, MAX_HTTP_BODY};
pub use tls::{
    cipher_suites, group_name, kx_groups, offers_session, suite_name, Resume, TlsOptions,
    TlsVersion, Verify, SYSTEM_CA_BUNDLE,
};

/// The highest total rate a schedule accepts, connections per second: one intended start per
/// nanosecond, the resolution of the CLOCK_MONOTONIC time line the schedule is written in. Above
/// it consecutive intended starts would fall on the same nanosecond. (No machine starts
/// connections that fast; starts it cannot make are counted dropped, arithmetically — see
/// `Schedule::skip_before`.)
pub const MAX_RATE_PER_SEC: f64 = 1e9;

/// How long before its next deadline a worker wakes and then polls with a zero timeout, ns: a
/// short spin before each start, so the timer's wake-up latency (the generator's lag otherwise)
/// falls before the start. The default of [`Pacing::spin_ns`] (`--spin`), recorded in `bench`
/// records as the setting `load.spin_ns`. Small, because the load CPU may be shared: the rule is
/// that a longer spin is asked for (`--spin`), on a dedicated load CPU, where it costs only
/// the generator's own CPU (shown as CPU per connection).
pub const SPIN_NS: u64 = 2_000;

/// Longest spin `--spin auto` chooses, ns (100 µs): a wake-up slower than that is rare
/// enough (a host's own interruptions) that spinning through it would cost more CPU than it
/// saves lag.
pub const AUTO_SPIN_MAX_NS: u64 = common::units::AUTO_SPIN_MAX_NS;

/// At most this many attempts start per loop turn: starts that are due together are made in one
/// batch after one wait (no wait between them). An overloaded worker (more due starts than it
/// can make) still returns to its events, timeouts and per-second flush every few milliseconds.
/// The open-loop default of [`Pacing::start_batch`] (`--start-batch`), recorded in
/// `bench` records as the setting `load.start_batch`.
pub const START_BUDGET: usize = 64;

/// The shortest measured duration a run accepts (10 ms): a rate measured over less is mostly the
/// start-up of the workers, and a rate over 1 ns (one success = 1e9/s) says nothing.
pub const MIN_DURATION: Duration = Duration::from_millis(10);

/// Default open-loop in-flight bound per worker, see [`default_max_in_flight`].
pub const IN_FLIGHT_PER_WORKER: usize = 2048;

/// The default open-loop `max_in_flight` for `workers` workers at `rate_per_sec` with
/// `connect_timeout`: what the rate needs if every attempt took its whole timeout
/// (`rate × timeout`, rounded up), capped at [`IN_FLIGHT_PER_WORKER`] per worker, at least one
/// per worker. Callers also keep it below RLIMIT_NOFILE.
///
/// Why a cap: an attempt in flight costs more than its descriptor. With tens of thousands of
/// sockets open (most of them in the same port space) each new attempt costs several times the
/// system time of one made with few in flight, so a generator that falls behind and lets
/// attempts pile up gets slower still and does not recover. Normally a few per worker are in
/// flight (loopback handshakes take tens of µs); starts beyond the cap wait and are dropped after
/// `connect_timeout`, which the report counts and warns about.
pub fn default_max_in_flight(
    rate_per_sec: f64,
    connect_timeout: Duration,
    workers: usize,
) -> usize {
    let workers = workers.max(1);
    let need = (rate_per_sec.max(0.0) * connect_timeout.as_secs_f64()).ceil();
    let cap = IN_FLIGHT_PER_WORKER.saturating_mul(workers);
    let need = if need.is_finite() && need < cap as f64 {
        need as usize
    } else {
        cap
    };
    need.max(workers)
}

/// How attempts arrive.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Pattern {
    /// Open loop: attempts start at intended times from a schedule, whatever the server does
    /// (the wrk2 method; no coordinated omission). The rate is split evenly across workers.
    Open {
        /// Offered rate for the whole run, connections per second (> 0, finite).
        rate_per_sec: f64,
        /// Spacing of the intended start times.
        arrival: Arrival,
    },
    /// Closed loop: `concurrency` attempts always in flight (split across workers); a new one starts
    /// as soon as one ends. The server's speed sets the rate.
    Closed {
        /// Attempts in flight for the whole run (>= 1, at least one per worker is used).
        concurrency: u32,
    },
}

impl Pattern {
    /// The offered rate, connections per second: `Some` for an open loop, `None` for a closed
    /// loop (whose rate the server's speed sets).
    pub fn offered_per_sec(&self) -> Option<f64> {
        match *self {
            Pattern::Open { rate_per_sec, .. } => Some(rate_per_sec),
            Pattern::Closed { .. } => None,
        }
    }
}

/// Spacing of intended start times in open loop.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Fixed spacing `1/rate`; worker `w` of `N` takes global slots `w, w+N, w+2N, ...`, so the
    /// merged schedule is evenly spaced (staggered phases, no bursts).
    #[default]
    #[cfg_attr(feature = "clap", value(help = "Evenly spaced."))]
    Uniform,
    /// Exponential gaps with mean `N/rate` per worker (a Poisson process; the merged stream of
    /// independent Poisson processes is Poisson at the total rate). Seeded per worker, so runs repeat.
    #[cfg_attr(feature = "clap", value(help = "Exponential gaps."))]
    Poisson,
}

/// How the client ends each connection once the handshake (and the optional read) is done.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CloseMode {
    /// `SO_LINGER {on, 0}` then close(2): the kernel sends RST, no TIME_WAIT anywhere (socket(7)).
    /// Not what well-behaved clients do, but it frees ports at once. The default.
    #[default]
    #[cfg_attr(feature = "clap", value(help = "SO_LINGER 0: RST, no TIME_WAIT."))]
    Rst,
    /// Client closes first (FIN): TIME_WAIT (60 s, TCP_TIMEWAIT_LEN) stays on the client, which
    /// limits each (source IP, destination IP, destination port) triple to about
    /// `ip_local_port_range size / 60 s` new connections per second.
    #[cfg_attr(
        feature = "clap",
        value(help = "Client FIN first: TIME_WAIT on the client.")
    )]
    Fin,
    /// Wait for the server's FIN (read(2) returns 0), then close: TIME_WAIT stays on the server.
    /// The attempt holds its in-flight slot until then (bounded by the connect timeout).
    #[cfg_attr(feature = "clap", value(help = "Wait for the server's FIN."))]
    Server,
}

impl CloseMode {
    /// The CLI / report name: `rst`, `fin` or `server`.
    pub fn name(self) -> &'static str {
        match self {
            CloseMode::Rst => "rst",
            CloseMode::Fin => "fin",
            CloseMode::Server => "server",
        }
    }
}

/// A load run. See the field docs for units and defaults (the CLI's defaults are given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadConfig {
    /// Servers to connect to; attempts go round-robin over them. Non-empty. IPv4 and IPv6
    /// addresses may be mixed (each attempt's socket is of its target's family).
    pub targets: Vec<SocketAddr>,
    /// Open loop (rate) or closed loop (concurrency).
    pub pattern: Pattern,
    /// The measured part of the run (after the warm-up). Non-zero.
    pub duration: Duration,
    /// Run before the measured part, excluded from the measured numbers but counted in
    /// `LoadReport::total`. May be zero. CLI default 2 s.
    pub warmup: Duration,
    /// The CPUs of the workers (sched_setaffinity(2)), one pinned worker thread each unless
    /// `workers` asks for more. Non-empty, no duplicates.
    pub cpus: Vec<usize>,
    /// How many workers: 0 (the default) = one per CPU of `cpus`; more = that many, spread over
    /// `cpus` round-robin (worker `w` on `cpus[w % cpus.len()]`: oversubscribed, several
    /// workers share a CPU, for contention tests on few CPUs). At most [`MAX_WORKERS`], at least
    /// `cpus.len()`.
    #[serde(default)]
    pub workers: usize,
    /// Whether each worker connects from its own slice of the ephemeral range
    /// (`IP_LOCAL_PORT_RANGE`, Linux 6.3; [`crate::ports::slices`]). Default on; a kernel without
    /// the option falls back to the shared range, and the report says so.
    #[serde(default)]
    pub port_slices: PortSlices,
    /// How connections end.
    pub close: CloseMode,
    /// Source addresses, bound with IP_BIND_ADDRESS_NO_PORT (Linux 4.2, ip(7)), split across
    /// the workers ([`crate::ports::slices`]: disjoint per worker when there are at least as
    /// many of a family as workers, else one each, shared) and used round-robin by each.
    /// Empty = let the kernel choose (no bind(2) call). Sources are matched per family: an
    /// attempt to an IPv4 target uses the IPv4 sources (the kernel chooses when there are none
    /// of its family), likewise IPv6. A source whose family no target has is refused.
    pub sources: Vec<IpAddr>,
    /// How long one attempt may wait for its handshake, counted from its socket(2) call; past it
    /// the attempt is closed and counted `ETIMEDOUT`. With `expect_bytes` or [`CloseMode::Server`]
    /// the read phase gets the same budget again. It also bounds the drain after the run (see
    /// [`crate::run`]) and sets the histograms' range. Non-zero; CLI default 3 s.
    pub connect_timeout: Duration,
    /// Read this many bytes after the handshake and record first-byte latency (intended start →
    /// N bytes read): for servers that greet (write right after accept). `None` = read nothing.
    pub expect_bytes: Option<u32>,
    /// Open loop: at most this many attempts in flight for the whole run (split evenly across
    /// workers, at least one each). Each costs a file descriptor, so keep it below RLIMIT_NOFILE;
    /// the CLI's default is [`default_max_in_flight`]. A due attempt that finds no free slot
    /// waits (counted `late` when it starts later than `late_threshold`) and is dropped (counted
    /// `dropped`, never started) once its intended start is older than `connect_timeout`; so is
    /// any due start with a free slot the generator itself reaches more than
    /// [`crate::MAX_GENERATOR_LAG_NS`] late. Ignored in closed loop.
    pub max_in_flight: usize,
    /// An open-loop attempt that starts more than this after its intended time is counted `late`
    /// (its latency is still measured from the intended time). CLI default 1 ms.
    pub late_threshold: Duration,
    /// Send one HTTP/1.1 request per connection after the handshake and read the response
    /// ([`crate::http`]); `None` = plain TCP. Excludes `expect_bytes`. With it the read phase
    /// (request + response) gets the connect timeout again, as `expect_bytes` does.
    #[serde(default)]
    pub http: Option<HttpRequest>,
    /// A TLS handshake on every connection after the TCP handshake (`--tls`, [`crate::tls`]);
    /// `None` = no TLS. With `http` the request goes over it. Excludes `expect_bytes`.
    pub tls: Option<TlsOptions>,
    /// The connect engine (`--load-engine`, [`crate::engine`]); CLI default `auto`.
    #[serde(default)]
    pub engine: LoadEngine,
    /// How the generator paces its starts (`--spin`, `--start-batch`); default [`Pacing::default`].
    #[serde(default)]
    pub pacing: Pacing,
    /// Stamp each connection's handshake completion with its local address and port
    /// (`bench`'s accept-queue wait, [`AcceptStamps`]); `None` = no stamps (the default).
    #[serde(default)]
    pub accept_stamps: Option<AcceptStamps>,
}

/// What the generator records for `bench`'s accept-queue wait: per connection whose handshake
/// completed (warm-up included: [`crate::ClientStamps`]), its key (local address and port, [`common::acceptwait::conn_key`]) and
/// when the worker saw the completion (CLOCK_MONOTONIC), into one buffer per worker allocated
/// before the run (a full buffer counts what it could not keep). Costs a getsockname(2) per
/// completed connection; the epoll engine only (io_uring's direct descriptors have no local
/// name to read: [`crate::LoadReport::accept_stamps`] is then `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcceptStamps {
    /// Stamps each worker can keep.
    pub per_worker: usize,
    /// Keep 1 key in this many ([`common::acceptwait::keeps`]; the server keeps the same).
    pub every: u32,
}

/// Two ways the generator cuts its own lag (actual − scheduled start), each switchable so it can
/// be measured on and off (`connstorm load --spin 0 --start-batch 1` turns both off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pacing {
    /// How long before its next deadline a worker wakes and then polls with a zero timeout, ns:
    /// a bounded spin before each start, so it is not left to a timer wake-up. 0 = wake at the
    /// deadline. Default [`SPIN_NS`] (2 µs); at most 1 ms.
    pub spin_ns: u64,
    /// At most this many due starts are made one after another after one wait (a batch), before
    /// the worker looks at its completions again. 1..=4096; default [`START_BUDGET`] (64).
    pub start_batch: usize,
    /// `--spin auto`: each open-loop worker measures its own CPU's timer wake-up latency at its
    /// start (1,000 absolute clock_nanosleep(2) wake-ups 20 µs ahead: the 99.9th percentile of
    /// how late they came, plus 1 µs) and spins that long before each due start (at least
    /// [`SPIN_NS`], at most [`AUTO_SPIN_MAX_NS`]); `spin_ns` is then unused. A worker whose CPU
    /// holds other load workers ([`LoadConfig::workers_on_cpu_of`] > 1) measures nothing and
    /// spins [`SPIN_NS`]: its spin would take the CPU from the others, and their wake-ups would
    /// be what it measured. For a load CPU
    /// that does nothing else (`bench`'s default): a spin shorter than the wake-up latency
    /// leaves the rest of it as lag. Absent in reports from older builds (false).
    #[serde(default)]
    pub spin_auto: bool,
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing {
            spin_ns: SPIN_NS,
            start_batch: START_BUDGET,
            spin_auto: false,
        }
    }
}

/// Most workers one run starts ([`LoadConfig::workers`]): 4,096 threads, each with its own
/// ring or poll, slots and histograms (about 1 MiB each with the default histograms).
pub const MAX_WORKERS: usize = 4096;

/// `--port-slices`: whether each load worker connects from its own slice of the ephemeral
/// range ([`crate::ports::slices`]).
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PortSlices {
    /// Each worker its own slice (IP_LOCAL_PORT_RANGE on every socket, Linux 6.3); a kernel
    /// without it falls back to the shared range with a note. The default.
    #[default]
    #[cfg_attr(
        feature = "clap",
        value(help = "Each worker its own slice (Linux 6.3).")
    )]
    On,
    /// Every worker draws from the whole range, as a plain client does.
    #[cfg_attr(feature = "clap", value(help = "Workers share the whole range."))]
    Off,
}

impl PortSlices {
    /// The CLI name: `on` or `off`.
    pub fn name(self) -> &'static str {
        match self {
            PortSlices::On => "on",
            PortSlices::Off => "off",
        }
    }
}

/// Highest [`Pacing::spin_ns`], ns (1 ms: a longer spin only burns the worker's CPU).
pub const MAX_SPIN_NS: u64 = 1_000_000;
/// Highest [`Pacing::start_batch`].
pub const MAX_START_BATCH: usize = 4096;

impl LoadConfig {
    /// Whether an attempt reads from its connection after the handshake (`--expect-bytes`,
    /// `--close server`, `--http`, `--tls`), so its slot has a read phase.
    pub(crate) fn reads_after_handshake(&self) -> bool {
        self.expect_bytes.is_some()
            || self.close == CloseMode::Server
            || self.http.is_some()
            || self.tls.is_some()
    }

    /// Checks the config before any thread starts.
    ///
    /// # Errors
    /// [`LoadError::Config`] naming the field and how to fix it.
    pub fn validate(&self) -> Result<(), LoadError> {
        let bad = |msg: String| Err(LoadError::Config(msg));
        if self.pacing.spin_ns > MAX_SPIN_NS {
            return bad(format!(
                "--spin {} is above 1 ms: a longer spin only burns the worker's CPU; give 0s to 1ms (default 2us)",
                common::numfmt::ns(self.pacing.spin_ns as f64)
            ));
        }
        if self.pacing.start_batch == 0 || self.pacing.start_batch > MAX_START_BATCH {
            return bad(format!(
                "--start-batch {} is outside 1..={MAX_START_BATCH}: give how many due starts to make after one wait (default {})",
                self.pacing.start_batch,
                START_BUDGET
            ));
        }
        if self.targets.is_empty() {
            return bad("no target: give at least one HOST:PORT to connect to".into());
        }
        if self.cpus.is_empty() {
            return bad("no CPU: give at least one CPU for a worker, e.g. `0`".into());
        }
        let mut cpus = self.cpus.clone();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.len() != self.cpus.len() {
            return bad(format!(
                "CPU list {:?} repeats a CPU: name each CPU once",
                self.cpus
            ));
        }
        if self.workers != 0 && self.workers < self.cpus.len() {
            return bad(format!(
                "{} workers on {} CPUs leaves CPUs without a worker: give at least one worker per CPU, or fewer CPUs",
                self.workers,
                self.cpus.len()
            ));
        }
        if self.workers > MAX_WORKERS {
            return bad(format!(
                "{} workers is above the most one run starts, {MAX_WORKERS}: give fewer",
                self.workers
            ));
        }
        match self.pattern {
            Pattern::Open { rate_per_sec, .. } => {
                if !rate_per_sec.is_finite() || rate_per_sec <= 0.0 {
                    return bad(format!(
                        "rate {rate_per_sec} must be a positive number of connections per second"
                    ));
                }
                if rate_per_sec > MAX_RATE_PER_SEC {
                    return bad(format!(
                        "rate {rate_per_sec:e}/s is above the highest rate connstorm schedules, \
                         {:e}/s (one start per nanosecond, the schedule's time resolution): give at most \
                         `1000M/s` (starts the machine cannot make are counted as dropped)",
                        MAX_RATE_PER_SEC
                    ));
                }
                if self.max_in_flight == 0 {
                    return bad("max_in_flight is 0: allow at least one attempt in flight".into());
                }
            }
            Pattern::Closed { concurrency } => {
                if concurrency == 0 {
                    return bad("concurrency is 0: keep at least one attempt in flight".into());
                }
            }
        }
        if self.duration < MIN_DURATION {
            return bad(format!(
                "duration {:?} is shorter than {MIN_DURATION:?}: a rate measured over less is \
                 start-up noise; give e.g. 10 s",
                self.duration
            ));
        }
        // Fewer than one start due in the measured part measures nothing.
        if let Pattern::Open { rate_per_sec, .. } = self.pattern {
            let due = rate_per_sec * self.duration.as_secs_f64();
            if due < 1.0 {
                return bad(format!(
                    "rate {rate_per_sec}/s over a {:?} measured duration schedules {due:.3} starts, \
                     fewer than one: raise --rate or --duration",
                    self.duration
                ));
            }
        }
        if self.connect_timeout.is_zero() {
            return bad("connect timeout is zero: give a positive timeout, e.g. 3 s".into());
        }
        if self.expect_bytes == Some(0) {
            return bad("expect_bytes is 0: give at least 1 byte, or none".into());
        }
        if let Some(s) = self
            .sources
            .iter()
            .find(|s| !self.targets.iter().any(|t| t.is_ipv4() == s.is_ipv4()))
        {
            let (fam, other) = if s.is_ipv4() {
                ("IPv4", "IPv6")
            } else {
                ("IPv6", "IPv4")
            };
            return bad(format!(
                "source {s} is {fam} but every target is {other}: give {other} sources, or \
                 drop --source to let the kernel choose"
            ));
        }
        if let Some(h) = &self.http {
            if self.expect_bytes.is_some() {
                return bad(
                    "--http and --expect-bytes both read the response: give one of them".into(),
                );
            }
            h.validate().map_err(LoadError::Config)?;
        }
        if let Some(t) = &self.tls {
            if self.expect_bytes.is_some() {
                return bad(
                    "--tls and --expect-bytes cannot be used together: --expect-bytes reads a                      plaintext greeting; use --tls --http for a request over TLS"
                        .into(),
                );
            }
            t.client_config().map_err(LoadError::Config)?;
        }
        if self.targets.len() > u32::MAX as usize {
            return bad("too many targets: give fewer than 2^32".into());
        }
        Ok(())
    }

    /// [`Self::connect_timeout`] in ns (at most `u64::MAX / 4`, so deadlines never overflow).
    pub(crate) fn timeout_ns(&self) -> u64 {
        self.connect_timeout
            .as_nanos()
            .min(u128::from(u64::MAX / 4)) as u64
    }

    /// Number of workers: [`Self::workers`] when set, else one per CPU.
    pub fn workers(&self) -> usize {
        if self.workers == 0 {
            self.cpus.len()
        } else {
            self.workers
        }
    }

    /// The CPU of worker `w` (of [`Self::workers`]): `cpus[w % cpus.len()]`.
    ///
    /// # Panics
    /// When `cpus` is empty ([`Self::validate`] refuses that).
    pub fn worker_cpu(&self, w: usize) -> usize {
        self.cpus[w % self.cpus.len()]
    }

    /// How many workers share worker `w`'s CPU, itself included (round-robin: the first
    /// `workers % cpus.len()` CPUs hold one more).
    ///
    /// # Panics
    /// When `cpus` is empty ([`Self::validate`] refuses that).
    pub fn workers_on_cpu_of(&self, w: usize) -> usize {
        let (n, len) = (self.workers(), self.cpus.len());
        n / len + usize::from(w % len < n % len)
    }

    /// The CPU of every worker, in worker order (a CPU repeats when workers share it).
    pub fn worker_cpus(&self) -> Vec<usize> {
        (0..self.workers()).map(|w| self.worker_cpu(w)).collect()
    }

    /// The in-flight bound of worker `w` (of [`Self::workers`]): `max_in_flight` or the closed-loop
    /// concurrency split as evenly as possible, at least 1.
    pub fn slots_for(&self, w: usize) -> usize {
        let n = self.workers().max(1);
        let total = match self.pattern {
            Pattern::Open { .. } => self.max_in_flight,
            Pattern::Closed { concurrency } => concurrency as usize,
        };
        (total / n + usize::from(w < total % n)).max(1)
    }
}

/// A config for unit tests: `target`, `pattern`, `close`, 1 s (no warm-up) on CPU 0, a 1 s
/// connect timeout, one slot in open loop, the epoll engine.
#[cfg(test)]
pub(crate) fn for_test(target: SocketAddr, pattern: Pattern, close: CloseMode) -> LoadConfig {
    LoadConfig {
        targets: vec![target],
        pattern,
        duration: Duration::from_secs(1),
        warmup: Duration::ZERO,
        cpus: vec![0],
        workers: 0,
        port_slices: PortSlices::On,
        close,
        sources: vec![],
        connect_timeout: Duration::from_secs(1),
        expect_bytes: None,
        max_in_flight: 1,
        late_threshold: Duration::from_millis(1),
        http: None,
        tls: None,
        engine: LoadEngine::Epoll,
        pacing: Pacing::default(),
        accept_stamps: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> LoadConfig {
        LoadConfig {
            targets: vec!["127.0.0.1:9".parse().unwrap()],
            pattern: Pattern::Open {
                rate_per_sec: 100.0,
                arrival: Arrival::Uniform,
            },
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            cpus: vec![0, 1, 2],
            workers: 0,
            port_slices: PortSlices::On,
            close: CloseMode::Rst,
            sources: vec![],
            connect_timeout: Duration::from_secs(1),
            expect_bytes: None,
            max_in_flight: 10,
            late_threshold: Duration::from_millis(1),
            http: None,
            tls: None,
            engine: LoadEngine::Auto,
            pacing: Pacing::default(),
            accept_stamps: None,
        }
    }

    /// `bench` asks before it stamps: the epoll engine can stamp; io_uring (asked for, or
    /// auto's choice where it runs) says why not, naming the engine that can.
    #[test]
    fn only_the_epoll_engine_can_stamp_accepts() {
        let mut c = cfg();
        c.engine = LoadEngine::Epoll;
        assert_eq!(crate::accept_stamps_unavailable(&c), None);
        if let Err(why) = crate::engine::probe_io_uring() {
            eprintln!("skipping the io_uring half: {why}");
            return;
        }
        for e in [LoadEngine::IoUring, LoadEngine::Auto] {
            c.engine = e;
            let why = crate::accept_stamps_unavailable(&c).unwrap_or_default();
            assert!(
                why.starts_with("the io_uring load engine") && why.contains("--load-engine epoll"),
                "{e:?}: {why}"
            );
        }
    }

    #[test]
    fn default_in_flight_follows_rate_times_timeout_but_is_capped() {
        let t = Duration::from_secs(3);
        assert_eq!(default_max_in_flight(100.0, t, 1), 300);
        assert_eq!(default_max_in_flight(20_000.0, t, 1), IN_FLIGHT_PER_WORKER);
        assert_eq!(
            default_max_in_flight(20_000.0, t, 4),
            4 * IN_FLIGHT_PER_WORKER
        );
        assert_eq!(default_max_in_flight(0.1, Duration::from_millis(1), 3), 3);
        assert_eq!(
            default_max_in_flight(f64::INFINITY, t, 2),
            2 * IN_FLIGHT_PER_WORKER
        );
    }

    #[test]
    fn slots_split_evenly_with_remainder_first() {
        let c = cfg();
        assert_eq!(
            (0..3).map(|w| c.slots_for(w)).collect::<Vec<_>>(),
            [4, 3, 3]
        );
        let c = LoadConfig {
            pattern: Pattern::Closed { concurrency: 2 },
            ..cfg()
        };
        assert_eq!(
            (0..3).map(|w| c.slots_for(w)).collect::<Vec<_>>(),
            [1, 1, 1]
        );
    }

    /// Round-robin: 5 workers on 2 CPUs put 3 on the first and 2 on the second; one worker
    /// per CPU is alone.
    #[test]
    fn workers_on_a_cpu_count_round_robin() {
        let c = LoadConfig {
            cpus: vec![4, 7],
            workers: 5,
            ..cfg()
        };
        let on: Vec<_> = (0..5)
            .map(|w| (c.worker_cpu(w), c.workers_on_cpu_of(w)))
            .collect();
        assert_eq!(on, [(4, 3), (7, 2), (4, 3), (7, 2), (4, 3)]);
        let c = LoadConfig {
            cpus: vec![0, 1, 2],
            workers: 0,
            ..cfg()
        };
        assert!((0..3).all(|w| c.workers_on_cpu_of(w) == 1));
    }

    /// A spin past 1 ms was named in ns (`--spin 1500000 ns`), not in the unit it was given in.
    #[test]
    fn a_spin_too_long_is_named_in_a_readable_unit() {
        let e = LoadConfig {
            pacing: Pacing {
                spin_ns: 1_500_000,
                ..Pacing::default()
            },
            ..cfg()
        }
        .validate()
        .unwrap_err();
        assert!(
            e.to_string().contains("--spin 1.50 ms is above 1 ms"),
            "{e}"
        );
    }

    #[test]
    fn validation_names_the_problem() {
        assert!(cfg().validate().is_ok());
        let e = LoadConfig {
            cpus: vec![1, 1],
            ..cfg()
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("repeats"), "{e}");
        let e = LoadConfig {
            sources: vec!["::1".parse().unwrap()],
            ..cfg()
        }
        .validate()
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("source ::1 is IPv6 but every target is IPv4"),
            "{e}"
        );
        // Mixed families are fine, and so is a source of one of them.
        assert!(LoadConfig {
            targets: vec!["127.0.0.1:9".parse().unwrap(), "[::1]:9".parse().unwrap()],
            sources: vec!["::1".parse().unwrap()],
            ..cfg()
        }
        .validate()
        .is_ok());
        for (rate, ok) in [
            (1e9, true),
            (1e9 + 1.0, false),
            (1e12, false),
            (18446744073709551616.0, false),
        ] {
            let p = Pattern::Open {
                rate_per_sec: rate,
                arrival: Arrival::Uniform,
            };
            let r = LoadConfig {
                pattern: p,
                ..cfg()
            }
            .validate();
            assert_eq!(r.is_ok(), ok, "{rate}: {r:?}");
            if let Err(e) = r {
                assert!(e.to_string().contains("1000M/s"), "{e}");
            }
        }
        // A rate so low that no start falls in the measured part (1e-7/s over the test's
        // duration) measures nothing: refused, naming both knobs.
        let e = LoadConfig {
            pattern: Pattern::Open {
                rate_per_sec: 1e-7,
                arrival: Arrival::Uniform,
            },
            ..cfg()
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("fewer than one"), "{e}");
        for (d, ok) in [
            (Duration::from_nanos(1), false),
            (Duration::ZERO, false),
            (MIN_DURATION, true),
        ] {
            let r = LoadConfig {
                duration: d,
                ..cfg()
            }
            .validate();
            assert_eq!(r.is_ok(), ok, "{d:?}");
        }
        let e = LoadConfig {
            pattern: Pattern::Closed { concurrency: 0 },
            ..cfg()
        }
        .validate();
        assert!(e.is_err());
        let nan = Pattern::Open {
            rate_per_sec: f64::NAN,
            arrival: Arrival::Poisson,
        };
        assert!(LoadConfig {
            pattern: nan,
            ..cfg()
        }
        .validate()
        .is_err());
        assert!(LoadConfig {
            targets: vec![],
            ..cfg()
        }
        .validate()
        .is_err());
    }
}
