//! A small, deterministic, synthetic record for tests, docs and golden files.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

use super::{encode_histogram, new_latency_histogram};
use super::{
    Arrival, CpuUsage, CrossCheck, Histograms, HostInfo, LoadWorker, NumaNode, Pattern,
    PhaseRecord, RunInfo, RunRecord, ServerSide, SideCpu, TimelineRow, WorkerAccepts,
};

/// Latency samples (ns): `base_ns` plus an exponential tail of mean `tail_ns`, and one sample
/// in a thousand 1–3 ms late.
fn latencies(rng: &mut StdRng, n: u64, base_ns: f64, tail_ns: f64) -> Histogram<u64> {
    let mut h = new_latency_histogram();
    for _ in 0..n {
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        let mut v = base_ns - u.ln() * tail_ns;
        if rng.gen_ratio(1, 1_000) {
            v += rng.gen_range(1e6..3e6);
        }
        h.saturating_record(v as u64);
    }
    h
}

fn phase(
    rng: &mut StdRng,
    name: &str,
    pattern: Pattern,
    successes_per_sec: u64,
    secs: u64,
    start_offset_ms: f64,
) -> PhaseRecord {
    let successes = successes_per_sec * secs;
    let refused = secs; // one ECONNREFUSED a second
    let seconds: Vec<Histogram<u64>> = (0..secs)
        .map(|_| latencies(rng, successes_per_sec, 30_000.0, 15_000.0))
        .collect();
    let mut handshake = new_latency_histogram();
    for h in &seconds {
        handshake.add(h).expect("same bounds");
    }
    let service = latencies(rng, successes, 20_000.0, 10_000.0);
    let timeline = seconds
        .iter()
        .enumerate()
        .map(|(t, h)| TimelineRow {
            t_secs: (t + 1) as f64,
            length_secs: 1.0,
            attempts: successes_per_sec + 1,
            successes: successes_per_sec,
            failures: BTreeMap::from([("ECONNREFUSED".to_string(), 1)]),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            dropped: 0,
            late: 0,
            handshake: Some(encode_histogram(h)),
        })
        .collect();
    let offered = match pattern {
        Pattern::Open { rate_per_sec, .. } => Some(rate_per_sec),
        Pattern::Closed { .. } => None,
    };
    let wall_ns = secs * 1_000_000_000;
    PhaseRecord {
        name: name.to_string(),
        pattern,
        offered_per_sec: offered,
        achieved_per_sec: Some(successes as f64 / secs as f64),
        cpm: Some(successes as f64 * 60.0 / secs as f64),
        measured_secs: secs as f64,
        start_unix_ms: Some(EXAMPLE_START_UNIX_MS + start_offset_ms as u64),
        start_offset_ms: Some(start_offset_ms),
        attempts: successes + refused,
        successes,
        failures: BTreeMap::from([("ECONNREFUSED".to_string(), refused)]),
        late: 0,
        dropped: 0,
        histograms: Histograms::encode(&handshake, &service, None),
        timeline,
        server: Some(ServerSide {
            workers: vec![WorkerAccepts {
                cpu: 0,
                accepted: successes,
                cpu_run_ns: None,
            }],
            accept_errors: BTreeMap::new(),
            ..ServerSide::default()
        }),
        load_workers: vec![LoadWorker {
            cpu: 1,
            attempts: successes + refused,
            successes,
            cpu_run_ns: None,
            ..LoadWorker::default()
        }],
        cpu: CpuUsage {
            server: Some(SideCpu::new(
                wall_ns / 50,
                wall_ns * 6 / 10,
                wall_ns,
                1,
                successes,
            )),
            load: SideCpu::new(wall_ns / 40, wall_ns * 9 / 10, wall_ns, 1, successes),
        },
        counters: BTreeMap::from([
            ("Tcp.ActiveOpens".to_string(), (successes + refused) as i64),
            ("Tcp.PassiveOpens".to_string(), successes as i64),
            ("TcpExt.ListenOverflows".to_string(), 0),
            ("softnet.dropped".to_string(), 0),
        ]),
        cross_check: Some(CrossCheck {
            server_accepted: Some(successes),
            load_successes: successes,
            kernel_passive_opens: Some(successes as i64),
            kernel_active_opens: Some((successes + refused) as i64),
            agree: true,
            note: "exact: separate network namespaces".to_string(),
            load_attempts: None,
        }),
        ..PhaseRecord::default()
    }
}

/// Start of the example run, ms since the epoch: 2026-11-29T22:15:03.250Z.
pub const EXAMPLE_START_UNIX_MS: u64 = 1_795_990_503_250;

impl RunRecord {
    /// A small, deterministic, synthetic record: a `peak` phase (closed loop, 2,000/s for 3 s)
    /// and a `latency` phase (open loop at 1,600/s for 3 s), label `example`, started
    /// `2026-11-29T22:15:03.250Z`; the measured parts begin 0.3 s and 3.9 s after the start, and
    /// every timeline row carries its second's handshake histogram. For tests and examples; the numbers mean nothing.
    pub fn example() -> RunRecord {
        let mut rng = StdRng::seed_from_u64(0x5eed);
        let peak = phase(
            &mut rng,
            "peak",
            Pattern::Closed { concurrency: 64 },
            2_000,
            3,
            300.0,
        );
        let latency = phase(
            &mut rng,
            "latency",
            Pattern::Open {
                rate_per_sec: 1_600.0,
                arrival: Arrival::Poisson,
            },
            1_600,
            3,
            3_900.0,
        );
        RunRecord {
            label: "example".to_string(),
            config: serde_json::json!({ "duration": "6s", "engine": "auto", "close": "rst" }),
            run: RunInfo {
                command: "bench".to_string(),
                engine: "epoll".to_string(),
                engine_fallback_reason: Some("io_uring disabled (example)".to_string()),
                engine_detail: None,
                steering: "none".to_string(),
                server_cpus: vec![0],
                load_cpus: vec![1],
                close_mode: "rst".to_string(),
                server_mode: "close".to_string(),
                netns: true,
                load_engine: None,
                load_engine_detail: None,
                placement: None,
                tls: None,
                rtt_ns: None,
                target: None,
                connstorm_version: "0.1.0".to_string(),
                git_commit: "0000000".to_string(),
                interrupted: false,
                started_at: "2026-11-29T22:15:03Z".to_string(),
                started_unix_ms: Some(EXAMPLE_START_UNIX_MS),
                wall_secs: 7.5,
            },
            host: HostInfo {
                hostname: Some("example".to_string()),
                kernel_release: Some("6.12.0-example".to_string()),
                cmdline: Some("isolcpus=1".to_string()),
                cpu_model: Some("Example CPU".to_string()),
                online_cpus: vec![0, 1],
                isolated_cpus: vec![1],
                numa_nodes: vec![NumaNode {
                    id: 0,
                    cpus: vec![0, 1],
                }],
                sysctls: BTreeMap::from([("net.core.somaxconn".to_string(), "4096".to_string())]),
            },
            phases: vec![peak, latency],
            ..RunRecord::default()
        }
    }
}
