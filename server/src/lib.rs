//! `connstorm-server`: a per-core TCP accept server built to measure how fast a host accepts new
//! connections.
//!
//! # Moving parts
//! - [`ServerConfig`] ([`config`]) says where to listen, which CPUs to use, which event engine,
//!   what to do with each accepted connection ([`Mode`]) and how to steer flows ([`Steer`]).
//! - `listener` creates one `SO_REUSEPORT` listener per CPU, in CPU order, on the calling thread
//!   (so bind errors come back before any thread runs), and applies CPU steering (`steer`).
//! - `shard` runs one worker thread per CPU, pinned with sched_setaffinity(2), owning its
//!   listener and its event loop: `engine::uring` (io_uring multishot accept, one ring per
//!   worker) or `engine::epoll` (mio, edge-triggered). [`probe`] decides which one
//!   `EngineChoice::Auto` gets.
//! - `--tls`: [`tls`] builds the one `rustls::ServerConfig` the workers share; each connection's
//!   TLS is one state machine over byte buffers (`tls::conn`, no socket inside) that both
//!   engines drive, so they only move bytes and count alike.
//! - Per-connection state lives in a table indexed by fd (`fd_table`), empty at start and grown
//!   on demand.
//! - Each turn of a worker's event loop handles at most `engine::TURN_BUDGET` (256) accepts or
//!   completions and remembers what is left, so no amount of load keeps a worker from its stop
//!   flag or its counters.
//! - Workers count into plain integers (`counts`) and publish them, with their own thread CPU time
//!   ([`ThreadCpu`]), to their own cache line (`worker::Slot`) every few milliseconds;
//!   [`Server::stats`] reads those ([`LiveStats`]), so a caller gets the server's CPU time from
//!   this API, not from thread names in `/proc`. [`metrics`] serves the same slots to
//!   Prometheus ([`StatsReader`], read from the endpoint's thread).
//! - [`Server::stop`] ends the run without resetting any completed handshake (`drain`): every
//!   listener gets a classic BPF socket filter that drops new SYNs, the workers keep accepting for
//!   `DRAIN_GRACE` (200 ms), accept what is left until EAGAIN (at most `FINAL_DRAIN_MAX`, 250 ms),
//!   close the listener and return their
//!   [`WorkerReport`]s, merged into a [`ServerReport`].
//!
//! # Data flow
//! `ServerConfig` → [`Server::start`] (validate CPUs, probe engine, bind listeners, spawn pinned
//! workers, wait until each is ready) → workers loop: accept → mode action (close / RST / greet /
//! hold) → counters → [`Server::stop`] → [`ServerReport`].
//!
//! The library does **not** change RLIMIT_NOFILE by itself (that is process-wide state): callers
//! that want the whole hard limit call [`rlimit::raise_nofile`] first, as `connstorm server` does.

// The public API is what the binary uses (issue 12); the workspace allows unreachable_pub, this
// library does not (set here rather than in Cargo.toml so it does not reach the test crates).
#![warn(unreachable_pub)]

pub mod config;
mod counts;
mod drain;
mod engine;
pub mod error;
mod fd_table;
pub mod http;
mod listener;
pub mod metrics;
pub mod render;
pub mod report;
pub mod rlimit;
mod server;
mod shard;
mod steer;
mod sys;
pub mod tls;
mod worker;

pub use common::threadcpu::ThreadCpu;
pub use config::{EngineChoice, Mode, ServerConfig, Steer};
pub use engine::probe;
pub use error::ServerError;
pub use report::{Engine, LiveStats, ServerReport, SteeringUsed, WorkerReport};
pub use server::{Server, StatsReader};
