//! One phase's measurements turned into its record part: the server's accepts, per-side CPU
//! time, kernel counter deltas, per-CPU NET_RX/NET_TX softirqs and ksoftirqd time, the accept
//! spread over the server workers, the cross-check ([`results::analysis::cross_check`]), CPU contention
//! warnings ([`results::analysis::cpu_contention`]) and handshakes the server never accepted
//! moved out of the successes.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

use results::record as rec;
use tuning::counters::CounterDelta;

use crate::convert;
use crate::setup::{PhaseSpec, Setup};
use crate::taskcpu;

/// What the harness measured around one load run.
pub struct Measured<'a> {
    /// The phase.
    pub spec: &'a PhaseSpec,
    /// The harness's setup (CPUs).
    pub setup: &'a Setup,
    /// Server and load ran in the private `--netns` pair (the cross-check must be exact).
    pub exact: bool,
    /// When the run started: monotonic origin of phase offsets and its wall-clock twin.
    pub started: (Instant, SystemTime),
    /// When this phase's load (warm-up first) started.
    pub t0: Instant,
    /// The load generator's report.
    pub report: loadgen::LoadReport,
    /// Our server's live stats before and after (`None` with `--target`).
    pub accepted: Option<(server::LiveStats, server::LiveStats)>,
    /// Our server's worker CPU time over the phase (`None` with `--target`).
    pub server_cpu: Option<taskcpu::Cpu>,
    /// The load workers' CPU time.
    pub load_cpu: taskcpu::Cpu,
    /// `/proc/stat` before and after.
    pub stat: (tuning::host::CpuTimes, tuning::host::CpuTimes),
    /// `/proc/softirqs` and the `ksoftirqd/N` threads before and after (`None` when either
    /// could not be read: the record then has no softirq figures).
    pub softirqs: Option<(
        tuning::host::NetSoftirqSample,
        tuning::host::NetSoftirqSample,
    )>,
    /// Wall time of the phase, ns.
    pub wall_ns: u64,
    /// Counter deltas of the server's namespace (the host's without `--netns`).
    pub srv_delta: CounterDelta,
    /// Counter deltas of the load namespace (`--netns` only).
    pub load_delta: Option<CounterDelta>,
}

/// What one phase produced.
#[derive(Debug)]
pub struct PhaseOutcome {
    /// The phase as recorded (its `settings` are the harness's to fill).
    pub record: rec::PhaseRecord,
    /// The load generator's own report.
    pub report: loadgen::LoadReport,
    /// Warnings the record cannot show by itself (CPU contention, a generator behind schedule).
    pub warnings: Vec<String>,
}

/// Builds the phase's record part from what was measured.
pub fn outcome(m: Measured<'_>) -> PhaseOutcome {
    let spec = m.spec;
    let wall_ns = m.wall_ns;
    let load_cpu = &m.load_cpu;
    let mut counters = m.srv_delta.to_map();
    if let Some(ld) = &m.load_delta {
        for (k, v) in ld.to_map() {
            *counters.entry(k).or_insert(0) += v;
        }
    }

    // One row per server worker: more than one per CPU with --server-workers.
    let worker_cpus = server::config::worker_cpus(&m.setup.server_cpus, m.setup.server_workers);
    let server_side = m.accepted.as_ref().map(|(b, a)| rec::ServerSide {
        workers: worker_cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| rec::WorkerAccepts {
                cpu,
                accepted: a.accepted_per_worker.get(i).copied().unwrap_or(0)
                    - b.accepted_per_worker.get(i).copied().unwrap_or(0),
                // The server's live counters keep no per-worker CPU time.
                cpu_run_ns: None,
            })
            .collect(),
        accept_errors: {
            let n = a.errors_total.saturating_sub(b.errors_total);
            if n > 0 {
                [("all".to_string(), n)].into()
            } else {
                Default::default()
            }
        },
        // Handshakes completed in the phase (warm-up included, like the accepts).
        tls_accepted: m
            .setup
            .tls
            .is_some()
            .then(|| a.tls_accepted.saturating_sub(b.tls_accepted)),
        tls_resumed: m
            .setup
            .tls
            .is_some()
            .then(|| a.tls_resumed.saturating_sub(b.tls_resumed)),
        ..rec::ServerSide::default()
    });
    let server_side = server_side.map(|mut s| {
        s.spread = s.compute_spread();
        s
    });
    // A success is a connection the server accepted: with our own server, handshakes it never
    // accepted are not counted (cross-check span: warm-up included).
    let accepted_total = server_side.as_ref().map(|s| s.accepted());
    let connections = accepted_total
        .unwrap_or(m.report.total.successes)
        .min(m.report.total.successes);
    let cpu = rec::CpuUsage {
        server: m.server_cpu.as_ref().map(|server_cpu| {
            rec::SideCpu::new(
                server_cpu.user_ns,
                server_cpu.sys_ns,
                wall_ns,
                m.setup.server_cpus.len(),
                connections,
            )
            .with_run_ns(server_cpu.run_ns, connections)
        }),
        load: rec::SideCpu::new(
            load_cpu.user_ns,
            load_cpu.sys_ns,
            wall_ns,
            m.setup.load_cpus.len(),
            connections,
        )
        .with_run_ns(load_cpu.run_ns, connections)
        .with_spin_ns(
            m.report.workers.iter().map(|w| w.spun_ns).sum(),
            connections,
        ),
    };
    let cross_check = results::analysis::cross_check(&results::analysis::CrossCheckCounts {
        exact: m.exact,
        attempts: m.report.total.attempts,
        pre_syn_failures: results::analysis::pre_syn_failures(&m.report.total.failures),
        successes: m.report.total.successes,
        abandoned: m.report.total.abandoned,
        interrupted: m.report.interrupted,
        server_accepted: accepted_total,
        passive_opens: m.srv_delta.get("Tcp.PassiveOpens"),
        active_opens: m
            .load_delta
            .as_ref()
            .unwrap_or(&m.srv_delta)
            .get("Tcp.ActiveOpens"),
        attempt_fails: m.srv_delta.get("Tcp.AttemptFails"),
    });
    let mut ours = load_cpu.run_ns.max(load_cpu.user_ns + load_cpu.sys_ns);
    let mut bench_cpus = m.setup.load_cpus.clone();
    if let Some(server_cpu) = &m.server_cpu {
        ours += server_cpu
            .run_ns
            .max(server_cpu.user_ns + server_cpu.sys_ns);
        bench_cpus.extend(&m.setup.server_cpus);
    }
    bench_cpus.sort_unstable();
    bench_cpus.dedup();
    let bench_cpus_sorted = bench_cpus.clone();
    let busy = tuning::host::cpu_time_delta(&m.stat.0, &m.stat.1, &bench_cpus);
    let cpu_busy_pct: BTreeMap<usize, f64> = bench_cpus
        .iter()
        .map(|&c| {
            let b = tuning::host::cpu_time_delta(&m.stat.0, &m.stat.1, &[c]);
            (
                c,
                (b.busy_ns as f64 / wall_ns.max(1) as f64 * 100.0).min(100.0),
            )
        })
        .collect();
    let cpu_softirq_pct: BTreeMap<usize, f64> = bench_cpus
        .iter()
        .map(|&c| {
            let b = tuning::host::cpu_time_delta(&m.stat.0, &m.stat.1, &[c]);
            (
                c,
                (b.softirq_ns as f64 / wall_ns.max(1) as f64 * 100.0).min(100.0),
            )
        })
        .collect();
    let mut warnings = results::analysis::cpu_contention(
        &spec.name,
        &results::analysis::CpuContention {
            cpus: bench_cpus,
            wall_ns,
            busy_ns: busy.busy_ns,
            steal_ns: busy.steal_ns,
            ours_ns: ours,
        },
    );
    if let Some(w) = m.report.schedule_warning_with(false) {
        warnings.push(format!("{}: {w}", spec.name));
    }
    // The measured part began a warm-up after the load started (t0).
    let offset = (m.t0 + spec.warmup).saturating_duration_since(m.started.0);
    let start = convert::PhaseStart {
        offset_ms: offset.as_secs_f64() * 1e3,
        unix_ms: (m.started.1 + offset)
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        window: (
            spec.warmup.as_secs_f64(),
            (spec.warmup + spec.duration).as_secs_f64(),
        ),
    };
    let never_accepted = match accepted_total {
        Some(acc) if acc < m.report.total.successes => {
            convert::measured_share(m.report.total.successes - acc, &m.report)
        }
        _ => 0,
    };
    let mut record = convert::phase_record(
        &spec.name,
        start,
        &m.report,
        server_side,
        cpu,
        counters,
        cross_check,
    );
    convert::count_never_accepted(&mut record, never_accepted);
    record.cpu_busy_pct = cpu_busy_pct;
    record.cpu_softirq_pct = cpu_softirq_pct;
    if let Some((before, after)) = &m.softirqs {
        record.net_softirqs = before
            .delta(after, &bench_cpus_sorted)
            .into_iter()
            .map(|(cpu, d)| {
                (
                    cpu,
                    rec::NetSoftirqs {
                        net_rx: d.net_rx,
                        net_tx: d.net_tx,
                        ksoftirqd_ns: d.ksoftirqd_ns,
                    },
                )
            })
            .collect();
    }
    PhaseOutcome {
        record,
        report: m.report,
        warnings,
    }
}
