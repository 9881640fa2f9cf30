//! The in-process benchmark harness: one server (unless `--target` names an external one), then
//! any number of load phases against it, each turned into a [`results::record::PhaseRecord`] with its kernel
//! counter deltas, per-side CPU time and a cross-check of our counts against the kernel's.
//! `bench`, `sweep` and `ab` are sequences of phases on this harness.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::Context;
use tuning::counters::Snapshot;

use tuning::host::NsPair;

use crate::taskcpu;

use crate::phase::PhaseOutcome;
use crate::setup::{load_error, server_error, PhaseSpec, Setup};

/// A running harness.
pub struct Harness {
    setup: Setup,
    server: Option<server::Server>,
    /// The `--netns` pair, and the hook that removes it if a second signal forces an exit
    /// (dropped after the pair).
    ns: Option<(NsPair, crate::cleanup::HookGuard)>,
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
                    tuning::host::PAIR_SERVER_IP
                } else {
                    IpAddr::V4(Ipv4Addr::LOCALHOST)
                };
                let mut cfg =
                    server::ServerConfig::new(SocketAddr::new(ip, 0), setup.server_cpus.clone());
                cfg.workers = setup.server_workers;
                cfg.engine = setup.engine;
                cfg.mode = setup.mode;
                cfg.backlog = setup.backlog;
                cfg.tls = setup.tls.as_ref().and_then(|t| t.server.clone());
                // No TCP_LINGER2 < 0 on this server: with it the kernel answers the
                // client's ACK of our FIN with an RST (tcp_rcv_state_process, FIN_WAIT1), which
                // the client then sees as a failure and the cross-check no longer balances.
                let started = match &ns {
                    Some((ns, _)) => ns.enter_server(|| server::Server::start(cfg))?,
                    None => server::Server::start(cfg),
                };
                let server = started.map_err(server_error)?;
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

    /// What the caller should tell the user about how the harness started: why `--engine auto`
    /// fell back to epoll (the server's [`server::Server::fallback_reason`]), if it did. One
    /// line each, without a program-name prefix.
    pub fn notes(&self) -> Vec<String> {
        self.server
            .as_ref()
            .and_then(|s| s.fallback_reason())
            .map(|why| format!("engine auto: using epoll because {why}"))
            .into_iter()
            .collect()
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

    /// Checks that `spec` would start: the load configuration [`Harness::run_phase`] builds for
    /// it, validated as `loadgen::run` validates it ([`loadgen::LoadConfig::validate`]), so a
    /// phase that would be refused can be refused before an earlier one runs.
    ///
    /// # Errors
    /// Bad input (exit 2) with the load generator's reason.
    pub fn check_phase(&self, spec: &PhaseSpec) -> anyhow::Result<()> {
        self.setup
            .load_config(self.target, spec)
            .validate()
            .map_err(load_error)
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
        self.run_phase_profiled(spec, stop, on_second, None)
    }

    /// [`Harness::run_phase`] with the kernel profile of `profile` (`--profile`) taken around
    /// the measured part: it starts when the warm-up ends and stops when the load returns, and
    /// goes into the phase's record ([`results::record::PhaseRecord::profile`]); a profile that
    /// could not start or stop leaves a warning, not an error (the phase's figures stand).
    ///
    /// # Errors
    /// As [`Harness::run_phase`].
    pub fn run_phase_profiled(
        &mut self,
        spec: &PhaseSpec,
        stop: &AtomicBool,
        on_second: &mut dyn FnMut(&loadgen::TimelineRow),
        profile: Option<tuning::profile::ProfileConfig>,
    ) -> anyhow::Result<PhaseOutcome> {
        let mut cfg = self.setup.load_config(self.target, spec);
        let stamping = self.start_stamping(&mut cfg, spec);
        let srv_before = self.counters_server()?;
        let load_before = self.counters_load()?;
        let accepted_before = self.server.as_ref().map(|s| s.stats());
        let stat_before = tuning::host::read_cpu_times();
        let softirqs_before = tuning::host::read_net_softirqs(Path::new("/")).ok();
        let t0 = Instant::now();
        let armed = profile.map(|c| crate::profile::Armed::arm(c, spec.warmup));
        let ran = match self.pair() {
            Some(ns) => ns.enter_load(|| loadgen::run(&cfg, stop, on_second))?,
            None => loadgen::run(&cfg, stop, on_second),
        };
        let profiled = armed.map(crate::profile::Armed::finish);
        let stamping = stamping.map(|(every, sampler)| (every, sampler.finish()));
        let report = ran.map_err(load_error)?;
        // Let the server take what is still in its accept queues before counting.
        let accepted_after = self.wait_for_accepts(
            accepted_before.as_ref(),
            &srv_before,
            report.total.successes,
        );
        let server_stamps = match (&stamping, self.server.as_ref()) {
            (Ok(_), Some(s)) => Some(s.take_stamps(STAMPS_WAIT)),
            _ => None,
        };
        let wall_ns = t0.elapsed().as_nanos() as u64;
        let stat_after = tuning::host::read_cpu_times();
        let softirqs_after = tuning::host::read_net_softirqs(Path::new("/")).ok();
        let srv_after = self.counters_server()?;
        let load_after = self.counters_load()?;

        let server_cpu = taskcpu::server(accepted_before.as_ref(), accepted_after.as_ref());
        let load_cpu = taskcpu::load(&report);
        let mut out = crate::phase::outcome(crate::phase::Measured {
            spec,
            setup: &self.setup,
            exact: self.ns.is_some(),
            started: self.started,
            t0,
            report,
            accepted: accepted_before.zip(accepted_after),
            server_cpu: self.server.as_ref().map(|_| server_cpu),
            load_cpu,
            stat: (stat_before, stat_after),
            softirqs: softirqs_before.zip(softirqs_after),
            wall_ns,
            srv_delta: srv_after.delta(&srv_before),
            load_delta: load_before.zip(load_after).map(|(b, a)| a.delta(&b)),
        });
        out.record.settings = self.settings();
        let client = out.report.accept_stamps.take();
        let (queue, wait) = match (stamping, server_stamps, client) {
            (Err(why), _, _) => (crate::acceptq::not_measured(why), None),
            (Ok(_), Some(s), _) if s.workers_missing > 0 => (
                crate::acceptq::not_measured(format!(
                    "{} server worker(s) did not hand their accept stamps over in time",
                    s.workers_missing
                )),
                None,
            ),
            (Ok(_), _, None) => (
                crate::acceptq::not_measured(
                    "the load engine that ran kept no stamps (--load-engine epoll measures it)",
                ),
                None,
            ),
            (Ok((every, depth)), s, Some(c)) => {
                let (q, h) = crate::acceptq::finish(crate::acceptq::Sides {
                    server: s.map(|s| s.stamps).unwrap_or_default(),
                    client: c.stamps,
                    window: (c.measured_from_ns, (out.record.measured_secs * 1e9) as u64),
                    every,
                    accept_rate_per_sec: out.record.achieved_per_sec.unwrap_or(0.0),
                    depth,
                    not_comparable: self.queue_not_comparable(),
                });
                (q, Some(h))
            }
        };
        out.record.accept_queue = Some(queue);
        out.record.histograms.accept_queue_wait = wait;
        match profiled {
            Some(Ok(Some(p))) => out.record.profile = Some(crate::profile::to_record(&p)),
            Some(Ok(None)) => out.warnings.push(format!(
                "{}: no profile: the phase ended before its measured part began",
                spec.name
            )),
            Some(Err(e)) => out.warnings.push(format!("{}: no profile: {e}", spec.name)),
            None => {}
        }
        // The load workers' timer slack (PR_SET_TIMERSLACK), ns: it bounds the generator's lag.
        if let Some(l) = out.report.generator_lag.as_ref() {
            let settings = &mut out.record.settings;
            if let Some(ns) = l.timer_slack_ns {
                let ns = i64::try_from(ns).unwrap_or(i64::MAX);
                settings.insert("load.timer_slack_ns".into(), ns);
            }
            // The other two ways the generator cuts its lag, as they ran: a zero-timeout poll
            // when a start is due within this many ns, and the due starts made in one batch.
            // The longest spin a worker ran with (`--spin auto` measures one per worker).
            let ran = out.report.workers.iter().map(|w| w.spin_ns).max();
            let spin = i64::try_from(ran.unwrap_or(l.pacing.spin_ns)).unwrap_or(i64::MAX);
            settings.insert("load.spin_ns".into(), spin);
            if l.pacing.spin_auto {
                settings.insert("load.spin_auto".into(), 1);
            }
            let batch = i64::try_from(l.pacing.start_batch).unwrap_or(i64::MAX);
            settings.insert("load.start_batch".into(), batch);
        }
        Ok(out)
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

    /// Asks both sides to stamp for the accept-queue wait ([`crate::acceptq`]): the server's
    /// workers now, the load generator through `cfg`; and starts sampling the accept-queue
    /// length. The 1-in-N rule and the sampler, or why the wait cannot be measured.
    fn start_stamping(
        &self,
        cfg: &mut loadgen::LoadConfig,
        spec: &PhaseSpec,
    ) -> Result<(u32, crate::acceptq::DepthSampler), String> {
        let Some(server) = self.server.as_ref() else {
            return Err("the server is external (--target): only bench's own server's accepts can be joined with the load's handshakes on one clock".into());
        };
        if !self.setup.accept_wait {
            return Err("--accept-wait off: nothing was stamped".into());
        }
        if let Some(why) = server.stamps_unavailable() {
            return Err(why.into());
        }
        if let Some(why) = loadgen::accept_stamps_unavailable(cfg) {
            return Err(why);
        }
        let planned = match spec.pattern {
            loadgen::Pattern::Open { rate_per_sec, .. } => {
                Some(rate_per_sec * (spec.duration + spec.warmup).as_secs_f64())
            }
            loadgen::Pattern::Closed { .. } => None,
        };
        let source = match self.pair() {
            Some(ns) => ns.enter_server(crate::acceptq::open_source).map_err(|e| {
                format!("cannot enter the server's namespace to sample its accept queue: {e}")
            })?,
            None => crate::acceptq::open_source(),
        };
        let (every, per_load, per_server) = crate::acceptq::plan(planned, cfg.workers());
        if !server.start_stamping(per_server, every, STAMPS_WAIT) {
            return Err("the server's workers did not start stamping accepts in time".into());
        }
        cfg.accept_stamps = Some(loadgen::AcceptStamps {
            per_worker: per_load,
            every,
        });
        Ok((
            every,
            crate::acceptq::DepthSampler::start(source, self.target.port()),
        ))
    }

    /// Why Little's law cannot be held against the listeners' accept-queue length with this
    /// server (`AcceptQueue::not_comparable`): the io_uring engine's multishot accept takes
    /// every queued connection off the listener each time the worker enters the ring (its task
    /// work, DEFER_TASKRUN) and the connection then waits in the completion queue until the
    /// worker handles its CQE, which is when it is stamped; the listener's length misses that
    /// part (a steady run read 0.1 waiting beside Little's law's 32.0).
    fn queue_not_comparable(&self) -> Option<String> {
        match self.server.as_ref()?.engine() {
            server::Engine::IoUring => Some("the io_uring server's multishot accept moves connections off the listener into its completion queue before the server handles them, so the wait goes on where the listener's length does not count it (--engine epoll compares them)".into()),
            _ => None,
        }
    }

    /// Waits until the server has taken every connection the kernel completed for it, so a
    /// phase's accepts are counted in that phase and not in the next one (or in none). In our
    /// own namespace the rule is exact: every child socket the kernel creates counts one
    /// `Tcp.PassiveOpens` (tcp_create_openreq_child, net/ipv4/tcp_minisocks.c), so the phase is
    /// settled when the server's accepts since `before` equal the namespace's PassiveOpens since
    /// `srv_before`, and stay equal for [`SETTLE`]. A FIN or ACK of a client that a SYN cookie
    /// admits late still creates a child in that time. In the host namespace other listeners
    /// count too; then it waits for `expected` accepts or 500 ms without one. At most
    /// [`ACCEPT_WAIT_MAX`] either way (a starved server's remainder is then counted as never
    /// accepted, and the cross-check shows it).
    fn wait_for_accepts(
        &self,
        before: Option<&server::LiveStats>,
        srv_before: &Snapshot,
        expected: u64,
    ) -> Option<server::LiveStats> {
        let server = self.server.as_ref()?;
        let base = before.map(|b| b.accepted()).unwrap_or(0);
        let deadline = Instant::now() + ACCEPT_WAIT_MAX;
        let (mut last_seen, mut changed_at) = ((u64::MAX, u64::MAX), Instant::now());
        let mut caught_up_at: Option<Instant> = None;
        loop {
            let now = server.stats();
            let accepted = now.accepted() - base;
            // With --tls a worker completes (and publishes) a handshake after its accept: a
            // change of either count restarts the settle, so a TLS accept published late is
            // not counted in the next phase.
            let seen = (accepted, now.tls_accepted);
            if seen != last_seen {
                (last_seen, changed_at) = (seen, Instant::now());
                caught_up_at = None;
            }
            let done = if self.ns.is_some() {
                let children = self
                    .counters_server()
                    .map(|c| c.delta(srv_before).passive_opens())
                    .unwrap_or(i64::MAX);
                if i64::try_from(accepted).unwrap_or(i64::MAX) >= children {
                    caught_up_at.get_or_insert_with(Instant::now).elapsed() >= SETTLE
                } else {
                    caught_up_at = None;
                    false
                }
            } else {
                accepted >= expected || changed_at.elapsed() > Duration::from_millis(500)
            };
            if done || Instant::now() > deadline {
                return Some(now);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// How long accepts must have caught up with the kernel's children, and the server's accept and
/// TLS accept counts stood still, before a phase is counted: twice the longest an idle worker
/// waits before it publishes its counters (50 ms, `server`'s `WAIT_MAX`).
const SETTLE: Duration = Duration::from_millis(100);

/// Longest wait for the server's workers to start or hand over their accept stamps (an idle
/// worker looks every 50 ms).
const STAMPS_WAIT: Duration = Duration::from_secs(2);

/// Longest wait for the server to take what its accept queues still hold after the load ended.
const ACCEPT_WAIT_MAX: Duration = Duration::from_secs(5);

/// Creates the `--netns` pair, tagged with our PID, after registering its removal for a forced
/// exit (a second Ctrl-C at any point of the setup must not leave a namespace behind). A
/// kernel without netem, or an rtt netem cannot take, is bad input (`--rtt`).
fn create_pair(rtt: Option<Duration>) -> anyhow::Result<(NsPair, crate::cleanup::HookGuard)> {
    let tag = std::process::id().to_string();
    let guard = {
        let tag = tag.clone();
        crate::cleanup::on_forced_exit(move || NsPair::remove(&tag))
    };
    match NsPair::create(&tag, rtt) {
        Ok(pair) => Ok((pair, guard)),
        Err(e @ (tuning::host::PairError::NetemMissing(_) | tuning::host::PairError::Rtt(_))) => {
            Err(crate::bad_input(e.to_string()))
        }
        Err(e) => Err(e.into()),
    }
}
