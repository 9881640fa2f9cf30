//! What a server run is asked to do: [`ServerConfig`] and its choices.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Largest greeting accepted by [`Mode::Greet`], in bytes (1 MiB). Each worker preallocates one
/// buffer of this size at most.
pub const MAX_GREET_BYTES: u32 = 1 << 20;

/// Configuration of one server run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Address all workers listen on (one `SO_REUSEPORT` group). Port 0 = the kernel picks a free
    /// port; [`crate::Server::local_addr`] tells which.
    pub listen: SocketAddr,
    /// The CPUs the workers are pinned to. Must be non-empty, without duplicates, online and in
    /// the process's affinity mask. With `workers` 0, one worker per CPU, listeners created (and
    /// indexed in the reuseport group) in this order.
    pub cpus: Vec<usize>,
    /// How many workers (each with its own `SO_REUSEPORT` listener and event loop), placed
    /// round-robin on `cpus`: worker w on `cpus[w % cpus.len()]`, listeners in worker order
    /// ([`worker_cpus`]). 0 = one per CPU (the default). More than `cpus.len()` oversubscribes the
    /// CPUs (a test of correctness at many workers on few CPUs; rates then measure the sharing);
    /// fewer than `cpus.len()` or more than [`MAX_WORKERS`] is refused.
    pub workers: usize,
    /// Event engine to use.
    pub engine: EngineChoice,
    /// listen(2) backlog per listener: bounds the accept queue and the SYN queue; the kernel caps
    /// it at `net.core.somaxconn` (default 4096 since Linux 5.4). Values above `i32::MAX` are
    /// clamped.
    pub backlog: u32,
    /// What each worker does with an accepted connection.
    pub mode: Mode,
    /// Flow steering between the listeners of the group.
    pub steer: Steer,
    /// A TLS handshake on every connection (`--tls`, [`crate::tls`]); `None` = plain TCP. Both
    /// engines (io_uring: rustls over the ring's receive/send buffers); modes `close` and `http`.
    pub tls: Option<crate::tls::TlsServer>,
}

impl ServerConfig {
    /// A config with the documented defaults: one worker per CPU, engine `Auto`, backlog 65535,
    /// mode `Close`, steering `None`.
    pub fn new(listen: SocketAddr, cpus: Vec<usize>) -> Self {
        ServerConfig {
            listen,
            cpus,
            workers: 0,
            engine: EngineChoice::Auto,
            backlog: 65535,
            mode: Mode::Close,
            steer: Steer::None,
            tls: None,
        }
    }
}

/// The most workers one server starts (as many as `connstorm load` starts load workers).
pub const MAX_WORKERS: usize = 4096;

/// The CPU of each of `workers` workers placed round-robin on `cpus` (worker w on
/// `cpus[w % cpus.len()]`); `workers` 0 = one per CPU. Empty when `cpus` is.
pub fn worker_cpus(cpus: &[usize], workers: usize) -> Vec<usize> {
    if cpus.is_empty() {
        return Vec::new();
    }
    let n = if workers == 0 { cpus.len() } else { workers };
    (0..n).map(|w| cpus[w % cpus.len()]).collect()
}

/// Which event engine to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineChoice {
    /// io_uring when it works here (see [`crate::probe`]), else epoll with a reason
    /// ([`crate::Server::fallback_reason`]).
    Auto,
    /// io_uring multishot accept (Linux 5.19+); an error where it is unavailable.
    IoUring,
    /// epoll through mio, edge-triggered.
    Epoll,
}

impl FromStr for EngineChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(EngineChoice::Auto),
            "io-uring" | "io_uring" | "uring" => Ok(EngineChoice::IoUring),
            "epoll" | "mio" => Ok(EngineChoice::Epoll),
            _ => Err(format!(
                "unknown engine {s:?}: use `auto`, `io-uring` or `epoll`"
            )),
        }
    }
}

/// What a worker does with each accepted connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// close(2) at once: the server sends FIN first (the server side keeps the TIME_WAIT).
    Close,
    /// SO_LINGER {on, 0} then close(2): the server sends RST, no TIME_WAIT on either side.
    Rst,
    /// Write `bytes` bytes (0x2a each) then close: lets the client measure accept latency / time to
    /// first byte. At most [`MAX_GREET_BYTES`].
    Greet {
        /// Greeting size in bytes.
        bytes: u32,
    },
    /// Keep the connection open until the client closes it (or sends RST) or the server stops;
    /// bounded by RLIMIT_NOFILE (accepts then fail with EMFILE, counted and backed off).
    Hold,
    /// Read an HTTP request up to the end of its head (at most
    /// [`crate::http::MAX_REQUEST_HEAD_BYTES`]), write one fixed response
    /// ([`crate::http::response`]: `204`, or `200` with `body_bytes` bytes), close. A connection
    /// counts as served once the whole response is written. `body_bytes` at most
    /// [`MAX_GREET_BYTES`].
    Http {
        /// Response body size in bytes (0 = `204 No Content`).
        body_bytes: u32,
    },
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Close => f.write_str("close"),
            Mode::Rst => f.write_str("rst"),
            Mode::Greet { bytes } => write!(f, "greet:{bytes}"),
            Mode::Hold => f.write_str("hold"),
            Mode::Http { body_bytes: 0 } => f.write_str("http"),
            Mode::Http { body_bytes } => write!(f, "http:{body_bytes}"),
        }
    }
}

impl FromStr for Mode {
    type Err = String;
    /// Parses `close`, `rst`, `hold`, `greet` (1 byte), `greet:BYTES` (`greet:64`, `greet:4k`),
    /// `http` (a `204` response) or `http:BYTES` (a `200` with a BYTES body).
    fn from_str(s: &str) -> Result<Self, String> {
        let usage = "use `close`, `rst`, `hold`, `greet`, `greet:BYTES` (e.g. `greet:64`), `http` \
                     or `http:BYTES`";
        match s {
            "close" | "fin" => return Ok(Mode::Close),
            "rst" | "reset" => return Ok(Mode::Rst),
            "hold" => return Ok(Mode::Hold),
            "greet" => return Ok(Mode::Greet { bytes: 1 }),
            "http" => return Ok(Mode::Http { body_bytes: 0 }),
            _ => {}
        }
        if let Some(n) = s.strip_prefix("http:") {
            let body_bytes = n
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|&b| b <= MAX_GREET_BYTES)
                .ok_or_else(|| {
                    format!("invalid HTTP body size in {s:?}: give 0 to {MAX_GREET_BYTES} bytes")
                })?;
            return Ok(Mode::Http { body_bytes });
        }
        let Some(n) = s.strip_prefix("greet:") else {
            return Err(format!("unknown mode {s:?}: {usage}"));
        };
        let lower = n.trim().to_ascii_lowercase();
        let (digits, mult) = match lower.strip_suffix('k') {
            Some(d) => (d, 1024u64),
            None => (lower.as_str(), 1u64),
        };
        let bytes = digits
            .parse::<u64>()
            .ok()
            .and_then(|v| v.checked_mul(mult))
            .ok_or_else(|| format!("invalid greeting size in {s:?}: {usage}"))?;
        if bytes == 0 || bytes > u64::from(MAX_GREET_BYTES) {
            return Err(format!(
                "greeting size {bytes} in {s:?} is out of range: give 1 to {MAX_GREET_BYTES} bytes"
            ));
        }
        Ok(Mode::Greet {
            bytes: bytes as u32,
        })
    }
}

/// How new flows are spread over the listeners of the reuseport group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Steer {
    /// The kernel's 4-tuple hash (load-blind).
    None,
    /// The worker on CPU i takes the flows whose packets were processed on CPU i:
    /// SO_INCOMING_CPU on Linux 6.1+ (the fix "soreuseport: Fix socket selection for
    /// SO_INCOMING_CPU"), else a SO_ATTACH_REUSEPORT_CBPF program (Linux 4.5+). The report says
    /// which one ran ([`crate::SteeringUsed`]).
    Cpu,
    /// Force SO_INCOMING_CPU (setsockopt since Linux 4.4; ignored by reuseport groups on
    /// 4.6–6.0 kernels without the fix).
    IncomingCpu,
    /// Force the SO_ATTACH_REUSEPORT_CBPF program (SKF_AD_CPU → listener index).
    ReuseportCbpf,
}

impl FromStr for Steer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Steer::None),
            "cpu" => Ok(Steer::Cpu),
            "incoming-cpu" => Ok(Steer::IncomingCpu),
            "cbpf" => Ok(Steer::ReuseportCbpf),
            _ => Err(format!(
                "unknown steering {s:?}: use `none`, `cpu`, `incoming-cpu` or `cbpf`"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print_back() {
        for m in [
            Mode::Close,
            Mode::Rst,
            Mode::Hold,
            Mode::Greet { bytes: 64 },
            Mode::Http { body_bytes: 0 },
            Mode::Http { body_bytes: 512 },
        ] {
            assert_eq!(m.to_string().parse::<Mode>().unwrap(), m);
        }
        assert_eq!("greet".parse::<Mode>().unwrap(), Mode::Greet { bytes: 1 });
        assert_eq!(
            "greet:4k".parse::<Mode>().unwrap(),
            Mode::Greet { bytes: 4096 }
        );
        assert!("greet:0".parse::<Mode>().is_err());
        assert!("greet:2048k"
            .parse::<Mode>()
            .unwrap_err()
            .contains("out of range"));
        assert!("greet:x".parse::<Mode>().is_err());
        assert!("linger"
            .parse::<Mode>()
            .unwrap_err()
            .contains("unknown mode"));
    }

    #[test]
    fn workers_go_round_robin_on_the_cpus() {
        assert_eq!(worker_cpus(&[3, 5], 0), vec![3, 5]);
        assert_eq!(worker_cpus(&[3, 5], 2), vec![3, 5]);
        assert_eq!(worker_cpus(&[3, 5], 5), vec![3, 5, 3, 5, 3]);
        assert_eq!(worker_cpus(&[7], 3), vec![7, 7, 7]);
        assert!(worker_cpus(&[], 4).is_empty());
    }

    #[test]
    fn engines_and_steering_parse() {
        assert_eq!(
            "io-uring".parse::<EngineChoice>().unwrap(),
            EngineChoice::IoUring
        );
        assert_eq!(
            "epoll".parse::<EngineChoice>().unwrap(),
            EngineChoice::Epoll
        );
        assert!("kqueue"
            .parse::<EngineChoice>()
            .unwrap_err()
            .contains("unknown engine"));
        assert_eq!("cpu".parse::<Steer>().unwrap(), Steer::Cpu);
        assert!("rss".parse::<Steer>().is_err());
    }
}
