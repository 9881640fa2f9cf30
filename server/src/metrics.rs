//! The server's Prometheus metrics: a [`ServerMetrics`] collector that reads, at scrape time,
//! what the workers already publish to their stats slots ([`crate::StatsReader`]) — never a
//! worker's own state, so scraping adds nothing to the accept loop. Values are at most 10 ms
//! old while a worker is busy and 50 ms when it is idle.
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `connstorm_server_accepted_total` | counter | `worker`, `cpu` | connections accepted |
//! | `connstorm_server_errors_total` | counter | `worker`, `cpu` | accept, send and close failures |
//! | `connstorm_server_cpu_seconds_total` | counter | `worker`, `cpu`, `mode` (`user`, `system`) | the worker thread's CPU time (getrusage(2) RUSAGE_THREAD) |
//! | `connstorm_server_phase` | gauge | `phase` (`serving`, `drain`, `done`) | 1 for the server's phase |
//! | `connstorm_server_engine_info` | info | `engine`, `ring_setup`, `steering`, `fallback`, `kernel` | what ran |

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::metrics::encode::{self, worker_labels, Labels};
use common::metrics::prometheus_client::collector::Collector;
use common::metrics::prometheus_client::encoding::DescriptorEncoder;

use crate::{Server, StatsReader};

/// The states of `connstorm_server_phase`.
pub const PHASES: [&str; 3] = ["serving", "drain", "done"];

/// The collector of one server's metrics (see the module docs). Register it with
/// [`common::metrics::Endpoint::register`] as `Box::new(Arc::clone(&m))`.
#[derive(Debug)]
pub struct ServerMetrics {
    reader: StatsReader,
    info: Labels,
    done: AtomicBool,
}

impl ServerMetrics {
    /// The collector of `server`'s metrics.
    pub fn new(server: &Server) -> Arc<ServerMetrics> {
        let info = vec![
            ("engine", server.engine().to_string()),
            (
                "ring_setup",
                server.ring_setup().unwrap_or("none").to_string(),
            ),
            ("steering", server.steering().to_string()),
            (
                "fallback",
                server.fallback_reason().unwrap_or("").to_string(),
            ),
            ("kernel", encode::kernel_release()),
        ];
        Arc::new(ServerMetrics {
            reader: server.stats_reader(),
            info,
            done: AtomicBool::new(false),
        })
    }

    /// Marks the run done (phase `done`): call after [`Server::stop`] returned. The counts stay
    /// readable: they are the final ones (every worker publishes as it exits).
    pub fn finish(&self) {
        self.done.store(true, Ordering::Relaxed);
    }

    fn phase(&self) -> &'static str {
        if self.done.load(Ordering::Relaxed) {
            "done"
        } else if self.reader.stopping() {
            "drain"
        } else {
            "serving"
        }
    }
}

impl Collector for ServerMetrics {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> fmt::Result {
        let live = self.reader.read();
        let errors = self.reader.errors_per_worker();
        let cpus = self.reader.cpus();
        let labels = |i: usize| worker_labels(i, cpus.get(i).copied().unwrap_or(0));
        encode::counters(
            &mut enc,
            "server_accepted",
            "Connections accepted by each server worker (accept(2) or io_uring multishot accept).",
            None,
            live.accepted_per_worker
                .iter()
                .enumerate()
                .map(|(i, &v)| (labels(i), v)),
        )?;
        encode::counters(
            &mut enc,
            "server_errors",
            "Accept, send and close failures of each server worker.",
            None,
            errors.iter().enumerate().map(|(i, &v)| (labels(i), v)),
        )?;
        encode::counters_secs(
            &mut enc,
            "server_cpu",
            "CPU time of each server worker thread by mode (getrusage RUSAGE_THREAD).",
            live.cpu_per_worker.iter().enumerate().flat_map(|(i, c)| {
                let mut user = labels(i);
                user.push(("mode", "user".into()));
                let mut sys = labels(i);
                sys.push(("mode", "system".into()));
                [(user, c.user_ns as f64 / 1e9), (sys, c.sys_ns as f64 / 1e9)]
            }),
        )?;
        encode::state(
            &mut enc,
            "server_phase",
            "The server's phase: 1 for the current one (serving, drain after a stop, done).",
            "phase",
            &PHASES,
            self.phase(),
        )?;
        encode::info(
            &mut enc,
            "server_engine",
            "What ran: the event engine, io_uring ring setup, steering, why auto fell back, kernel release.",
            &self.info,
        )
    }
}
