//! The connect engines, siblings that each own their syscalls behind one interface
//! (`Engine`, with the core's `Io`): `epoll::Epoll` (mio, edge-triggered, a timerfd) and
//! `uring::Uring` (one io_uring per worker), and how a run picks one (`resolve`:
//! `--load-engine`, [`LoadEngine`]).
//!
//! Both engines serve one core (`crate::core::Core`): its schedule, slots, counters,
//! histograms and every accounting rule (`attempts = successes + failures + abandoned`, dropped
//! and late starts, generator lag, failure classes by errno) and the sans-I/O protocols
//! (`crate::http`, `crate::tls`). The worker's loop (`crate::worker`) is generic over the
//! engine (static dispatch) and never asks which one runs. Only how an attempt's syscalls are
//! made differs:
//!
//! | step | epoll | io_uring |
//! |---|---|---|
//! | socket | socket(2) | IORING_OP_SOCKET into the slot's direct descriptor (5.19) |
//! | SO_LINGER {1,0} (`--close rst`) | setsockopt(2) | IORING_OP_URING_CMD SOCKET_URING_OP_SETSOCKOPT (6.7) |
//! | connect | connect(2) → EINPROGRESS, epoll_ctl(ADD), epoll_wait | IORING_OP_CONNECT linked to IORING_OP_LINK_TIMEOUT (5.5) |
//! | connect timeout | the engine's deadline list, getsockopt(SO_ERROR) + getpeername(2) | the kernel's link timeout (-ECANCELED → `ETIMEDOUT`) |
//! | `--http` request | send(2) at write readiness | IORING_OP_SEND (MSG_WAITALL, 5.19 on SEND; IOSQE_CQE_SKIP_SUCCESS, counted at its RECV) linked to a LINK_TIMEOUT at the read deadline; over 16 KiB its own chain beside the RECV's, so an early answer (413) is read |
//! | `--http` response, `--expect-bytes`, `--close server` | read(2) until EAGAIN or the read budget at read readiness | IORING_OP_RECV into the slot's buffer, linked to a LINK_TIMEOUT at the read deadline |
//! | `--tls` | the slot's TLS client over send(2)/recv(2) at readiness | the same client: its output copied into the slot's buffer and sent as `--http` sends its request (SEND, MSG_WAITALL, skip-success, linked to a LINK_TIMEOUT → RECV → LINK_TIMEOUT), each RECV's bytes into its input; a failure's alert as one lone SEND (MSG_DONTWAIT) before the close |
//! | close | close(2) | IORING_OP_CLOSE on the direct descriptor with IOSQE_CQE_SKIP_SUCCESS (5.17) |
//!
//! so one io_uring attempt is one chain of SQEs submitted with the worker's next
//! io_uring_enter(2), which also reaps the completions.
//!
//! Where the kernel lacks direct descriptors or the uring setsockopt (and with `--source`, which
//! needs IP_BIND_ADDRESS_NO_PORT and bind(2) before connect), the io_uring engine makes the
//! socket with socket(2) and its options with setsockopt(2) (`socket::Net`, as the epoll engine
//! does), and still connects and closes through the ring; the report's feature label says which
//! ran ([`UringFeatures::label`]).
//!
//! # Bounded turns
//! Both engines do bounded work per turn of the worker's loop, reads included: at most
//! `EVENTS_PER_TURN` (1,024) readiness events or completions per wait, and at most
//! `READ_BUDGET_BYTES` (16 KiB) read from one connection per turn (the io_uring engine has one RECV of
//! 4 KiB in flight per connection; the epoll engine stops reading a connection there and serves it
//! again next turn). So the stop flag, the deadlines and the per-second rows are seen within
//! milliseconds whatever a target sends.

use serde::Serialize;

pub use crate::config::LoadEngine;
use crate::config::{CloseMode, LoadConfig};
use crate::core::{Core, Io};
use crate::error::LoadError;

pub(crate) mod epoll;
pub(crate) mod socket;
pub(crate) mod uring;

/// Most readiness events (epoll) or completions (io_uring) one wait of a worker handles; what is
/// left is handled by the next turn, after the stop check, the per-second flush and the starts.
pub(crate) const EVENTS_PER_TURN: usize = 1024;

/// Most bytes one connection reads per turn, on either engine (an io_uring RECV reads at most
/// 4 KiB; the epoll engine reads until EAGAIN or this much, then serves the connection again
/// next turn without waiting).
pub(crate) const READ_BUDGET_BYTES: usize = 16 * 1024;

/// A connect engine: what the worker's loop asks of it, besides the core's [`Io`] (start an
/// attempt, begin its read phase, close it). Implemented by [`epoll::Epoll`] and
/// [`uring::Uring`]; the worker is generic over it.
pub(crate) trait Engine: Io {
    /// Waits for events until `until_ns` (CLOCK_MONOTONIC; no sleep when it is within
    /// `cfg.pacing.spin_ns` of `now`, or when work is left from the last turn) and handles at
    /// most [`EVENTS_PER_TURN`] of them, reporting to `core`.
    fn wait(&mut self, core: &mut Core<'_>, until_ns: u64, now: u64);
    /// Ends the attempts in flight whose deadline passed by `now` (an engine whose kernel ends
    /// them, by link timeouts, has nothing to do).
    fn expire(&mut self, core: &mut Core<'_>, now: u64);
    /// The stop, seen at `now`: settles every attempt in flight (a completed handshake is a
    /// success, a failed one a failure, an undecided one abandoned), bounded in time.
    fn stop(&mut self, core: &mut Core<'_>, now: u64);
    /// Submits what is still queued (the last closes); called once, after the loop.
    fn flush(&mut self);
    /// io_uring: whether its sockets were direct descriptors (`None` for epoll).
    fn direct(&self) -> Option<bool>;
    /// Sets the spin before each due start, ns (`--spin auto`'s measured value, set once at the
    /// worker's start).
    fn set_spin_ns(&mut self, ns: u64);
    /// On-CPU time (CLOCK_THREAD_CPUTIME_ID) of the spin passes that found nothing to do (no
    /// request to submit, no event or completion): the part of the worker's CPU that is waiting
    /// for a due start, not work, ns.
    fn spun_ns(&self) -> u64;
    /// The accept-queue wait's client stamps it recorded (`LoadConfig::accept_stamps`), taken
    /// out; `None` when it records none (not asked, or an engine that cannot).
    fn take_stamps(&mut self) -> Option<common::acceptwait::Stamps> {
        None
    }
}

/// What runs on an engine once it is made (a worker's life, `crate::worker::Launch`), generic
/// over the engine: the worker's loop is compiled once per engine, with no dispatch per call.
pub(crate) trait WithEngine {
    /// What the run returns.
    type Out;
    /// Runs on `engine` (or reports why it could not be made).
    fn with<E: Engine>(self, engine: Result<E, LoadError>) -> Self::Out;
}

/// Makes worker `index`'s engine as [`resolve`] decided (on the worker's pinned thread, so its
/// memory is allocated node-local) and hands it to `job`: the one place that names the engines.
/// `slice` is the worker's part of the ephemeral range ([`crate::ports::resolve`]; `None`: the
/// shared range).
pub(crate) fn with_engine<J: WithEngine>(
    resolved: Resolved,
    cfg: &LoadConfig,
    index: usize,
    slice: Option<(u16, u16)>,
    job: J,
) -> J::Out {
    let (cpu, slots) = (cfg.worker_cpu(index), cfg.slots_for(index));
    let net = socket::Net::new(cfg, index, slice.map(crate::ports::range_value));
    match resolved {
        Resolved::Epoll => job.with(epoll::Epoll::new(cfg, slots, cpu, net)),
        Resolved::Uring(f) => job.with(uring::Uring::new(
            cfg,
            &f,
            slots,
            cpu,
            cfg.timeout_ns(),
            net,
        )),
    }
}

/// The engine `auto` picks when both can run: io_uring. On this project's 2-vCPU VM (Linux
/// 6.18, loopback, quiet host, 2026-12-03) `bench --baseline` reached 1.32 × and 1.27 × the
/// kernel floor with io_uring against 1.24 × and 1.15 × with epoll (6 ABBA pairs each), with
/// 0.13 against 5.1 syscalls per attempt. (It stayed epoll until a wait of the io_uring engine
/// ran only part of the completions the kernel had ready: since Linux 6.13 an io_uring_enter(2)
/// on a DEFER_TASKRUN ring runs at most max(20, min_complete) deferred task-work items per pass,
/// `IO_LOCAL_TW_DEFAULT_MAX`, so a worker that could not keep its schedule filled its in-flight
/// slots with connections the kernel had already finished, and its drops were blamed on the
/// target. A wait that must not block now asks for every in-flight completion.)
pub const AUTO_PREFERS: LoadEngine = LoadEngine::IoUring;

/// The engine `auto` picks for `--tls` when both can run: epoll, because io_uring did not win on
/// the load's CPU per TLS handshake. Measured 2026-12-07 (this project's 2-vCPU VM, Linux 6.18,
/// busy: other sessions' builds used ~87% of both CPUs), `bench --tls --load-engine
/// epoll|io-uring --server-cpus 0 --load-cpus 1`, release, two ABBA sets of 4 pairs, load
/// on-CPU µs per full TLS 1.3 handshake, io_uring / epoll: closed-loop peak 0.975 (6 s runs;
/// pairs 0.973–0.994) and 0.988 (3 s; 0.975–1.018), open loop at 80% of the peak 1.016
/// (0.967–1.052) and 1.099 (0.972–1.145): about 240 µs per handshake either way, a 1–2% gain
/// at the peak and a loss in the open loop (docs/performance/2026-12-07-tls-uring.md).
pub const AUTO_PREFERS_TLS: LoadEngine = LoadEngine::Epoll;

/// The engine `auto` picks for `--http` (without `--tls`) when both can run: io_uring, because
/// it used less of the load's CPU per HTTP response on the wire HTTP clients use (`--close
/// server`, the server closes after the response). Measured 2026-12-07 (this project's 2-vCPU
/// VM, Linux 6.18, busy: other sessions' builds on both CPUs), `connstorm server --mode http
/// --cpus 0` and `load --http --concurrency 64 --duration 3s --warmup 0s --cpus 1
/// --load-engine epoll|io-uring` in a fresh network namespace per run, release, the load
/// process's task-clock over its responses, five ABBA sets: io_uring / epoll median 0.90 (10
/// pairs, 0.81–0.98). Per response io_uring makes 0.25 io_uring_enter(2) calls, 10 SQEs and 3
/// CQEs (the CONNECT, the response's RECV, the FIN's RECV) where epoll makes 7.15 syscalls
/// (docs/performance/2026-12-07-http-uring.md).
pub const AUTO_PREFERS_HTTP: LoadEngine = LoadEngine::IoUring;

/// The engine `auto` prefers for `cfg` ([`AUTO_PREFERS`]; [`AUTO_PREFERS_TLS`] with `--tls`,
/// [`AUTO_PREFERS_HTTP`] with `--http` alone) and what it used less of, for the report's
/// reason.
fn auto_prefers(cfg: &LoadConfig) -> (LoadEngine, &'static str) {
    if cfg.tls.is_some() {
        (AUTO_PREFERS_TLS, "CPU per TLS handshake")
    } else if cfg.http.is_some() {
        (AUTO_PREFERS_HTTP, "CPU per HTTP response")
    } else {
        (AUTO_PREFERS, "CPU per connection")
    }
}

/// What the io_uring engine found in the kernel (probed once per run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct UringFeatures {
    /// IORING_OP_SOCKET into a registered (sparse) file table slot: a direct descriptor, no
    /// entry in the process's fd table (5.19).
    pub direct_socket: bool,
    /// IORING_OP_URING_CMD SOCKET_URING_OP_SETSOCKOPT works (6.7).
    pub uring_setsockopt: bool,
    /// IOSQE_CQE_SKIP_SUCCESS (IORING_FEAT_CQE_SKIP, 5.17).
    pub skip_success: bool,
    /// IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN (6.1).
    pub defer_taskrun: bool,
}

impl UringFeatures {
    /// One label naming how each step of an attempt ran, e.g.
    /// `socket=direct,setsockopt=uring_cmd,connect+link_timeout,reuse=disconnect,close=skip_success,defer_taskrun`
    /// for `cfg` (the setsockopt and reuse parts only with `--close rst`, reuse only on direct
    /// sockets: `engine::uring::driver` docs, "Reuse"; with `--source` the socket is a plain one).
    pub fn label(&self, cfg: &LoadConfig, sliced: bool) -> String {
        let direct = self.uses_direct(cfg, sliced);
        let mut parts = vec![if direct {
            "socket=direct"
        } else {
            "socket=socket(2)"
        }];
        if cfg.close == CloseMode::Rst {
            parts.push(if direct {
                "setsockopt=uring_cmd"
            } else {
                "setsockopt=setsockopt(2)"
            });
        }
        if sliced {
            parts.push(if direct {
                "port_range=uring_cmd"
            } else {
                "port_range=setsockopt(2)"
            });
        }
        parts.push("connect+link_timeout");
        if cfg.tls.is_some() {
            parts.push(if cfg.http.is_some() {
                "tls+http=send+recv+link_timeout"
            } else {
                "tls=send+recv+link_timeout"
            });
        } else if cfg.http.is_some() {
            parts.push("http=send+recv+link_timeout");
        } else if cfg.expect_bytes.is_some() || cfg.close == CloseMode::Server {
            parts.push("read=recv+link_timeout");
        }
        if direct && cfg.close == CloseMode::Rst {
            // The socket is kept after an attempt: disconnected by connect(AF_UNSPEC) (RST).
            parts.push("reuse=disconnect");
        }
        parts.push(if self.skip_success {
            "close=skip_success"
        } else {
            "close"
        });
        if self.defer_taskrun {
            parts.push("defer_taskrun");
        }
        parts.join(",")
    }

    /// Whether the sockets of `cfg` are direct descriptors: the kernel has them, and the options
    /// before connect can be set through the ring (SO_LINGER and, when `sliced`, the port slice
    /// need the uring setsockopt; a `--source` needs IP_BIND_ADDRESS_NO_PORT and bind(2), made
    /// on a plain socket).
    pub(crate) fn uses_direct(&self, cfg: &LoadConfig, sliced: bool) -> bool {
        self.direct_socket
            && cfg.sources.is_empty()
            && ((cfg.close != CloseMode::Rst && !sliced) || self.uring_setsockopt)
    }
}

/// The engine that ran and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EngineRan {
    /// `io_uring` or `epoll`.
    pub engine: &'static str,
    /// How `auto` chose (or why it fell back to epoll); `None` when the engine was asked for.
    pub reason: Option<String>,
    /// io_uring only: how each step ran ([`UringFeatures::label`]).
    pub features: Option<String>,
}

impl EngineRan {
    /// The same, saying `socket=socket(2)` when a worker could not register its direct
    /// descriptors (`all_direct` false).
    pub(crate) fn with_direct(mut self, all_direct: bool) -> EngineRan {
        if !all_direct {
            self.features = self.features.map(|f| {
                f.replace("socket=direct", "socket=socket(2)")
                    .replace("setsockopt=uring_cmd", "setsockopt=setsockopt(2)")
                    .replace("port_range=uring_cmd", "port_range=setsockopt(2)")
                    .replace(",reuse=disconnect", "")
            });
        }
        self
    }

    /// One line: `io_uring (socket=direct,…)` or `epoll`, then how `auto` chose, e.g.
    /// `epoll — auto: epoll (it used less CPU per TLS handshake than io_uring …)`.
    pub fn line(&self) -> String {
        let mut s = self.engine.to_string();
        if let Some(f) = &self.features {
            s.push_str(&format!(" ({f})"));
        }
        if let Some(r) = &self.reason {
            s.push_str(&format!(" — {r}"));
        }
        s
    }
}

/// What [`resolve`] decided, for the workers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Resolved {
    Epoll,
    Uring(UringFeatures),
}

/// Whether the io_uring connect engine can run on this kernel, and with which features (the
/// probe `resolve` runs; see `uring::probe` for what it needs).
///
/// # Errors
/// Why not, in one line (io_uring disabled, a missing opcode with the kernel version it needs).
pub fn probe_io_uring() -> Result<UringFeatures, String> {
    uring::probe()
}

/// Why the engine `cfg` would run cannot stamp handshakes for `bench`'s accept-queue wait
/// ([`crate::AcceptStamps`]), or `None` when it can (epoll) or the config would be refused
/// anyway. io_uring cannot: its sockets are direct descriptors, or plain ones it never reads a
/// name of, and Linux 6.18 has no getsockname through the ring (SOCKET_URING_OP_GETSOCKOPT
/// answers SOL_SOCKET options only, and no option names the local port), so a connection's
/// port, the key both sides join on, is unknown to it. Asked before anything is stamped, so
/// neither side stamps for nothing.
pub fn accept_stamps_unavailable(cfg: &LoadConfig) -> Option<String> {
    match resolve(cfg, false) {
        Ok((Resolved::Uring(_), _)) => Some(format!(
            "the io_uring load engine{} cannot read a connection's local port (its sockets are direct descriptors; Linux 6.18 has no getsockname through the ring): --load-engine epoll measures it",
            if cfg.engine == LoadEngine::Auto { " (auto's choice)" } else { "" }
        )),
        _ => None,
    }
}

/// Decides the engine of `cfg` before any worker starts (probing io_uring once when it may run).
///
/// # Errors
/// [`LoadError::Config`] when `io-uring` was asked for and the kernel does not have it (the
/// message names why and says to use `--load-engine epoll`).
pub(crate) fn resolve(cfg: &LoadConfig, sliced: bool) -> Result<(Resolved, EngineRan), LoadError> {
    let epoll = |reason: Option<String>| {
        (
            Resolved::Epoll,
            EngineRan {
                engine: "epoll",
                reason,
                features: None,
            },
        )
    };
    let (prefers, less) = auto_prefers(cfg);
    match cfg.engine {
        LoadEngine::Epoll => return Ok(epoll(None)),
        LoadEngine::IoUring => {}
        LoadEngine::Auto if prefers == LoadEngine::Epoll => {
            return Ok(epoll(Some(format!(
                "auto: epoll (it used less {less} than io_uring in this project's measurements)"
            ))));
        }
        LoadEngine::Auto => {}
    }
    match uring::probe() {
        Ok(f) => Ok((
            Resolved::Uring(f),
            EngineRan {
                engine: "io_uring",
                reason: (cfg.engine == LoadEngine::Auto).then(|| {
                    format!(
                        "auto: io_uring (it used less {less} than epoll in this project's measurements)"
                    )
                }),
                features: Some(f.label(cfg, sliced)),
            },
        )),
        Err(why) if cfg.engine == LoadEngine::IoUring => Err(LoadError::Config(format!(
            "--load-engine io-uring cannot run here: {why}; use --load-engine epoll (or auto)"
        ))),
        Err(why) => Ok(epoll(Some(format!("auto: fell back to epoll: {why}")))),
    }
}
