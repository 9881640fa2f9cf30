//! The Prometheus metrics of a `bench` run: its phase (`connstorm_bench_phase`: `starting`,
//! `peak`, `latency`, `baseline`, `done`), the load generator's sums over every phase
//! ([`loadgen::metrics::LoadMetrics`]) and, once the harness runs its server, the server's
//! ([`server::metrics::ServerMetrics`]). The caller owns the endpoint and feeds events.

use std::sync::{Arc, Mutex};

use common::metrics::{Endpoint, StateMetric};
use loadgen::metrics::LoadMetrics;
use server::metrics::ServerMetrics;

use crate::harness::Harness;
use crate::setup::PhaseSpec;

/// The states of `connstorm_bench_phase`.
pub const PHASES: [&str; 5] = ["starting", "peak", "latency", "baseline", "done"];

/// The metrics of one `bench` run (see the module docs).
#[derive(Debug)]
pub struct BenchMetrics {
    phase: Arc<StateMetric>,
    load: Arc<LoadMetrics>,
    server: Mutex<Option<Arc<ServerMetrics>>>,
}

impl BenchMetrics {
    /// The run's metrics, registered with `ep` (the server's once it runs: [`Self::started`]).
    pub fn new(ep: &Endpoint) -> BenchMetrics {
        let m = BenchMetrics {
            phase: StateMetric::new(
                "bench_phase",
                "The bench run's phase: 1 for the current one (peak: closed loop, latency: open loop, baseline: the paired kernel floor).",
                &PHASES,
            ),
            load: LoadMetrics::new(),
            server: Mutex::new(None),
        };
        ep.register(Box::new(Arc::clone(&m.phase)));
        ep.register(Box::new(Arc::clone(&m.load)));
        m
    }

    /// The harness is up: its in-process server's metrics join (none with `--target`).
    pub fn started(&self, harness: &Harness, ep: &Endpoint) {
        if let Some(s) = harness.server() {
            let m = ServerMetrics::new(s);
            ep.register(Box::new(Arc::clone(&m)));
            *self.server.lock().unwrap_or_else(|p| p.into_inner()) = Some(m);
        }
    }

    /// A load phase begins (its name is the bench phase unless it is a sweep step or the like,
    /// which keeps the phase as it is).
    pub fn phase(&self, spec: &PhaseSpec, close: loadgen::CloseMode) {
        if PHASES.contains(&spec.name.as_str()) {
            self.phase.set(&spec.name);
        }
        self.load.begin(spec.pattern, close);
    }

    /// One per-second row of the running phase.
    pub fn observe(&self, row: &loadgen::TimelineRow) {
        self.load.observe(row);
    }

    /// A phase ended (load phase `done` until the next one begins).
    pub fn phase_done(&self) {
        self.load.finish();
    }

    /// The run ended and its server stopped: every phase `done`.
    pub fn finish(&self) {
        self.phase.set("done");
        self.load.finish();
        if let Some(s) = &*self.server.lock().unwrap_or_else(|p| p.into_inner()) {
            s.finish();
        }
    }
}
