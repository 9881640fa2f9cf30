//! The in-process benchmark harness: one server (unless `--target` names an external one), then
//! any number of load phases against it, each turned into a [`PhaseRecord`] with its kernel
//! counter deltas, per-side CPU time and a cross-check of our counts against the kernel's.
//! `bench`, `sweep` and `ab` are sequences of phases on this harness.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::Context;
use results::record::{self as rec, PhaseRecord};
use tuning::counters::Snapshot;

use tuning::netns::NsPair;
use tuning::procstat;

use super::taskcpu;

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
}

fn debug_str<T: std::fmt::Debug, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:?}").to_lowercase())
}

fn display_str<T: std::fmt::Display, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
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

/// What one phase produced.
#[derive(Debug)]
pub struct PhaseOutcome {
    /// The phase as recorded.
    pub record: PhaseRecord,
    /// The load generator's own report.
    pub report: loadgen::LoadReport,
    /// Warnings the record cannot show by itself (CPU contention, a generator behind schedule).
    pub warnings: Vec<String>,
}

/// A running harness.
pub struct Harness {
    setup: Setup,
    server: Option<server::Server>,
    /// The `--netns` pair, and the hook that removes it if a second signal forces an exit
    /// (dropped after the pair).
    ns: Option<(NsPair, crate::signals::HookGuard)>,
    target: SocketAddr,
    /// When the run started: the origin of every phase's start offset (monotonic) and its
    /// wall-clock twin, read together.
    started: (Instant, std::time::SystemTime),
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("target", &self.target)
            .field("netns", &self.ns)
            .finish()
    }
}

impl Harness {
    /// Creates the namespaces (with `--netns`) and starts the in-process server (without
    /// `--target`).
    ///
    /// # Errors
    /// Server start errors (bad CPU, address in use, io_uring forced but missing) and namespace
    /// setup errors.
    pub fn start(setup: Setup) -> anyhow::Result<Harness> {
        let started = (Instant::now(), std::time::SystemTime::now());
        let ns = if setup.netns {
            Some(create_pair(setup.rtt)?)
        } else {
            None
        };
        let (server, target) = match setup.target {
            Some(t) => (None, t),
            None => {
                let ip = if ns.is_some() {
                    tuning::netns::PAIR_SERVER_IP
                } else {
                    IpAddr::V4(Ipv4Addr::LOCALHOST)
                };
                let mut cfg =
                    server::ServerConfig::new(SocketAddr::new(ip, 0), setup.server_cpus.clone());
                cfg.engine = setup.engine;
                cfg.mode = setup.mode;
                cfg.backlog = setup.backlog;
                // No TCP_LINGER2 < 0 on this server: with it the kernel answers the
                // client's ACK of our FIN with an RST (tcp_rcv_state_process, FIN_WAIT1), which
                // the client then sees as a failure and the cross-check no longer balances.
                let started = match &ns {
                    Some((ns, _)) => ns.enter_server(|| server::Server::start(cfg))?,
                    None => server::Server::start(cfg),
                };
                let server = started.map_err(server_error)?;
                if let Some(why) = server.fallback_reason() {
                    crate::output::note(&format!(
                        "connstorm: engine auto: using epoll because {why}"
                    ));
                }
                let target = server.local_addr();
                (Some(server), target)
            }
        };
        Ok(Harness {
            setup,
            server,
            ns,
            target,
            started,
        })
    }

    /// When the run started (wall clock), read with the monotonic origin of phase offsets.
    pub fn started_wall(&self) -> std::time::SystemTime {
        self.started.1
    }

    /// The in-process server, if any.
    pub fn server(&self) -> Option<&server::Server> {
        self.server.as_ref()
    }

    /// The setup.
    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    fn counters_server(&self) -> anyhow::Result<Snapshot> {
        match self.pair() {
            Some(ns) => ns
                .enter_server(Snapshot::read_current)?
                .context("read server-namespace counters"),
            None => Snapshot::read_current().context("read TCP counters"),
        }
    }

    /// Settings of the server's namespace ([`tuning::counters::read_settings`], read from a
    /// thread inside it: `/proc/sys/net` follows the opening thread's namespace) plus the listen
    /// backlog asked for. With `--target` the server is not ours: only the load namespace's
    /// conntrack state is kept (conntrack drops there also lose SYNs).
    fn settings(&self) -> BTreeMap<String, i64> {
        let read = || tuning::counters::read_settings(Path::new(tuning::counters::DEFAULT_SYS_DIR));
        let mut s = match self.pair() {
            Some(ns) => ns.enter_server(read).unwrap_or_default(),
            None => read(),
        };
        if self.server.is_some() {
            s.insert("listen_backlog".into(), i64::from(self.setup.backlog));
        } else {
            s.retain(|k, _| k.starts_with("net.netfilter."));
        }
        s
    }

    fn counters_load(&self) -> anyhow::Result<Option<Snapshot>> {
        match self.pair() {
            Some(ns) => Ok(Some(
                ns.enter_load(Snapshot::read_current)?
                    .context("read load-namespace counters")?,
            )),
            None => Ok(None),
        }
    }

    /// Runs one load phase and returns its record part. `on_second` sees the loadgen's
    /// per-second rows (for progress lines).
    ///
    /// # Errors
    /// Load configuration errors and counter read errors.
    pub fn run_phase(
        &mut self,
        spec: &PhaseSpec,
        stop: &AtomicBool,
        on_second: &mut dyn FnMut(&loadgen::TimelineRow),
    ) -> anyhow::Result<PhaseOutcome> {
        let cfg = loadgen::LoadConfig {
            targets: vec![self.target],
            pattern: spec.pattern,
            duration: spec.duration,
            warmup: spec.warmup,
            cpus: self.setup.load_cpus.clone(),
            close: self.setup.close,
            sources: Vec::new(),
            connect_timeout: self.setup.connect_timeout,
            expect_bytes: self.setup.expect_bytes,
            // The load generator's own bound (rate × timeout, capped per worker), within what the
            // fd limit leaves next to the in-process server.
            max_in_flight: match spec.pattern {
                loadgen::Pattern::Open { rate_per_sec, .. } => loadgen::default_max_in_flight(
                    rate_per_sec,
                    self.setup.connect_timeout,
                    self.setup.load_cpus.len(),
                )
                .min(fd_room()),
                loadgen::Pattern::Closed { .. } => fd_room(),
            },
            late_threshold: Duration::from_millis(1),
        };
        let srv_before = self.counters_server()?;
        let load_before = self.counters_load()?;
        let accepted_before = self.server.as_ref().map(|s| s.stats());
        let cpu_before = taskcpu::sample();
        let stat_before = procstat::sample();
        let t0 = Instant::now();
        let report = match self.pair() {
            Some(ns) => ns.enter_load(|| loadgen::run(&cfg, stop, on_second))?,
            None => loadgen::run(&cfg, stop, on_second),
        }
        .map_err(load_error)?;
        // Let the server take what is still in its accept queues before counting.
        let accepted_after = self
            .server
            .as_ref()
            .map(|s| wait_for_accepts(s, accepted_before.as_ref(), report.total.successes));
        let wall_ns = t0.elapsed().as_nanos() as u64;
        let cpu_after = taskcpu::sample();
        let stat_after = procstat::sample();
        let srv_after = self.counters_server()?;
        let load_after = self.counters_load()?;

        let srv_delta = srv_after.delta(&srv_before);
        let load_delta = match (&load_before, &load_after) {
            (Some(b), Some(a)) => Some(a.delta(b)),
            _ => None,
        };
        let mut counters = srv_delta.to_map();
        if let Some(ld) = &load_delta {
            for (k, v) in ld.to_map() {
                *counters.entry(k).or_insert(0) += v;
            }
        }

        let server_side = match (&accepted_before, &accepted_after) {
            (Some(b), Some(a)) => Some(rec::ServerSide {
                workers: self
                    .setup
                    .server_cpus
                    .iter()
                    .enumerate()
                    .map(|(i, &cpu)| rec::WorkerAccepts {
                        cpu,
                        accepted: a.accepted_per_worker.get(i).copied().unwrap_or(0)
                            - b.accepted_per_worker.get(i).copied().unwrap_or(0),
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
            }),
            _ => None,
        };
        // A success is a connection the server accepted: with our own server, handshakes it never
        // accepted are not counted (cross-check span: warm-up included).
        let accepted_total = server_side.as_ref().map(|s| s.accepted());
        let connections = accepted_total
            .unwrap_or(report.total.successes)
            .min(report.total.successes);
        let server_cpu = taskcpu::delta(&cpu_before, &cpu_after, "accept-cpu");
        // Load workers end with the phase, so their CPU time comes from their own
        // getrusage(RUSAGE_THREAD) at exit, not from a /proc sample.
        let load_cpu = taskcpu::Cpu {
            user_ns: report.workers.iter().map(|w| w.cpu_user_ns).sum(),
            sys_ns: report.workers.iter().map(|w| w.cpu_sys_ns).sum(),
            run_ns: report.workers.iter().map(|w| w.cpu_run_ns).sum(),
        };
        let cpu = rec::CpuUsage {
            server: self.server.as_ref().map(|_| {
                rec::SideCpu::new(
                    server_cpu.user_ns,
                    server_cpu.sys_ns,
                    wall_ns,
                    self.setup.server_cpus.len(),
                    connections,
                )
                .with_run_ns(server_cpu.run_ns, connections)
            }),
            load: rec::SideCpu::new(
                load_cpu.user_ns,
                load_cpu.sys_ns,
                wall_ns,
                self.setup.load_cpus.len(),
                connections,
            )
            .with_run_ns(load_cpu.run_ns, connections),
        };
        let cross_check = results::crosscheck::check(&results::crosscheck::Counts {
            exact: self.ns.is_some(),
            attempts: report.total.attempts,
            pre_syn_failures: results::crosscheck::pre_syn_failures(&report.total.failures),
            successes: report.total.successes,
            abandoned: report.total.abandoned,
            interrupted: report.interrupted,
            server_accepted: accepted_total,
            passive_opens: srv_delta.get("Tcp.PassiveOpens"),
            active_opens: load_delta.as_ref().unwrap_or(&srv_delta).get("Tcp.ActiveOpens"),
            attempt_fails: srv_delta.get("Tcp.AttemptFails"),
        });
        let mut ours = load_cpu.run_ns.max(load_cpu.user_ns + load_cpu.sys_ns);
        let mut bench_cpus = self.setup.load_cpus.clone();
        if self.server.is_some() {
            ours += server_cpu
                .run_ns
                .max(server_cpu.user_ns + server_cpu.sys_ns);
            bench_cpus.extend(&self.setup.server_cpus);
        }
        bench_cpus.sort_unstable();
        bench_cpus.dedup();
        let busy = procstat::delta(&stat_before, &stat_after, &bench_cpus);
        let cpu_busy_pct: BTreeMap<usize, f64> = bench_cpus
            .iter()
            .map(|&c| {
                let b = procstat::delta(&stat_before, &stat_after, &[c]);
                (
                    c,
                    (b.busy_ns as f64 / wall_ns.max(1) as f64 * 100.0).min(100.0),
                )
            })
            .collect();
        let mut warnings = results::warnings::cpu_contention(
            &spec.name,
            &results::warnings::CpuContention {
                cpus: bench_cpus,
                wall_ns,
                busy_ns: busy.busy_ns,
                steal_ns: busy.steal_ns,
                ours_ns: ours,
            },
        );
        if let Some(w) = report.schedule_warning() {
            warnings.push(format!("{}: {w}", spec.name));
        }
        // The measured part began a warm-up after the load started (t0).
        let offset = (t0 + spec.warmup).saturating_duration_since(self.started.0);
        let start = super::convert::PhaseStart {
            offset_ms: offset.as_secs_f64() * 1e3,
            unix_ms: (self.started.1 + offset)
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            window: (
                spec.warmup.as_secs_f64(),
                (spec.warmup + spec.duration).as_secs_f64(),
            ),
        };
        let never_accepted = match accepted_total {
            Some(acc) if acc < report.total.successes => {
                super::convert::measured_share(report.total.successes - acc, &report)
            }
            _ => 0,
        };
        let mut record = super::convert::phase_record(
            &spec.name,
            start,
            &report,
            server_side,
            cpu,
            counters,
            cross_check,
        );
        super::convert::count_never_accepted(&mut record, never_accepted);
        record.settings = self.settings();
        record.cpu_busy_pct = cpu_busy_pct;
        Ok(PhaseOutcome {
            record,
            report,
            warnings,
        })
    }

    /// Stops the server (draining its queues) and tears the namespaces down.
    pub fn finish(mut self) -> Option<server::ServerReport> {
        let report = self.server.take().map(|s| s.stop());
        drop(self.ns.take());
        report
    }
}

impl Harness {
    fn pair(&self) -> Option<&NsPair> {
        self.ns.as_ref().map(|(ns, _)| ns)
    }
}

/// Creates the `--netns` pair, tagged with our PID, after registering its removal for a forced
/// exit (a second Ctrl-C at any point of the setup must not leave a namespace behind). The
/// kernel's refusal of netem is bad input (`--rtt`).
fn create_pair(
    rtt: Option<Duration>,
) -> anyhow::Result<(NsPair, crate::signals::HookGuard)> {
    let tag = std::process::id().to_string();
    let guard = {
        let tag = tag.clone();
        crate::signals::on_forced_exit(move || NsPair::remove(&tag))
    };
    match NsPair::create(&tag, rtt) {
        Ok(pair) => Ok((pair, guard)),
        Err(e @ tuning::netns::PairError::Netem(_)) => Err(crate::error::bad_input(e.to_string())),
        Err(e) => Err(e.into()),
    }
}

/// [`fd_room`] as it will be once `bench` has raised its soft fd limit to the hard one
/// (server::rlimit::raise_nofile), without raising it: for checks before anything changes.
pub fn fd_room_after_raise() -> usize {
    let hard = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map(|(_, h)| h)
        .unwrap_or(1024);
    ((hard / 2).clamp(64, 16_384)) as usize
}

/// Descriptors the load side may hold: half the soft fd limit, leaving room for the server's.
fn fd_room() -> usize {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map(|(s, _)| s)
        .unwrap_or(1024);
    ((soft / 2).clamp(64, 16_384)) as usize
}

fn wait_for_accepts(
    server: &server::Server,
    before: Option<&server::LiveStats>,
    expected: u64,
) -> server::LiveStats {
    let base = before.map(|b| b.accepted()).unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut last = server.stats();
    let mut last_change = Instant::now();
    loop {
        let now = server.stats();
        if now.accepted() - base >= expected || Instant::now() > deadline {
            return now;
        }
        if now.accepted() != last.accepted() {
            last_change = Instant::now();
        }
        if last_change.elapsed() > Duration::from_millis(500) {
            return now;
        }
        last = now;
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Maps server start errors: configuration problems are bad input (exit 2).
pub fn server_error(e: server::ServerError) -> anyhow::Error {
    if e.is_bad_input() {
        crate::error::bad_input(e.to_string())
    } else {
        anyhow::Error::new(e).context("server")
    }
}

/// Maps load errors: configuration problems are bad input (exit 2).
pub fn load_error(e: loadgen::LoadError) -> anyhow::Error {
    match e {
        loadgen::LoadError::Config(m) => crate::error::bad_input(m),
        other => anyhow::Error::new(other).context("load generator"),
    }
}
