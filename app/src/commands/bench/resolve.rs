//! From the options of `bench` (and the [`SetupArgs`] that `sweep` and `ab` share) to a checked
//! [`Setup`] and [`Trial`]: every option that needs no more than limits, the CPUs and the
//! `--out` directory is checked here, before a record, a namespace or a server exists.

use results::record::BuildInfo;

use super::args::{Args, SetupArgs};
use super::Trial;
use crate::baseline::BaselineRun;
use crate::record::Build;
use crate::run::Plan;
use crate::setup::{BenchTls, Setup};

impl Args {
    /// The paired baseline's options from `--baseline-pairs` and `--baseline-slice`.
    pub fn baseline_options(&self) -> crate::baseline::Options {
        crate::baseline::Options {
            pairs: self.baseline_pairs,
            slice: self.baseline_slice,
        }
    }
}

impl SetupArgs {
    /// Checks every option that needs no host state beyond limits and the `--out` directory,
    /// before anything is created ([`crate::limits::check_setup`]; `--backlog` is checked by
    /// its parser).
    ///
    /// # Errors
    /// Bad input (exit 2) naming the option, its limit and how to fix it.
    pub fn validate(&self) -> anyhow::Result<()> {
        crate::limits::check_setup(&crate::limits::SetupRequest {
            concurrency: self.concurrency,
            connect_timeout: self.connect_timeout,
            target: self.target.is_some(),
            netns: self.netns,
            out: &self.out,
        })
    }

    /// Validates ([`SetupArgs::validate`]), resolves the CPUs and builds the harness setup.
    ///
    /// # Errors
    /// Bad input for CPU lists, limits and option conflicts.
    pub fn resolve(&self) -> anyhow::Result<Setup> {
        self.validate()?;
        let picked = if self.whole_machine {
            crate::cpus::whole_machine()
        } else {
            crate::cpus::pick_cpus(
                self.server_cpus.as_deref(),
                self.load_cpus.as_deref(),
                self.target.is_some(),
            )?
        };
        for n in &picked.notes {
            super::note(n);
        }
        let (server_cpus, load_cpus) = (picked.server, picked.load);
        crate::limits::check_load_workers(
            self.load_workers.map(usize::from),
            load_cpus.len(),
            Some(u64::from(crate::run::peak_concurrency(
                self.concurrency,
                load_cpus.len(),
            ))),
            "--load-workers",
            "--concurrency",
        )?;
        let mode = crate::setup::protocol_mode(self.mode, self.tls, self.http)
            .map_err(crate::bad_input)?;
        let expect_bytes = match mode {
            server::Mode::Greet { bytes } => Some(bytes),
            _ => None,
        };
        let http = self.http || matches!(mode, server::Mode::Http { .. });
        let close = crate::setup::close_or_default(self.close, http);
        if self.target.is_none() {
            crate::setup::check_close_and_mode(close, &mode).map_err(crate::bad_input)?;
        }
        let tls = self.tls.then(|| bench_tls(self, http)).transpose()?;
        let server_workers = self.server_workers.map_or(0, usize::from);
        if server_workers != 0 && server_workers < server_cpus.len() {
            return Err(crate::bad_input(format!(
                "--server-workers: {server_workers} server workers on {} server CPUs leaves CPUs without a worker: give at least one worker per server CPU ({}), or fewer --server-cpus",
                server_cpus.len(),
                server_cpus.len()
            )));
        }
        // `--spin auto` measures a load CPU that does nothing else: where bench's own server
        // runs on the load CPUs too (`--whole-machine`, overlapping lists), a spin would take
        // the server's CPU and its wake-ups would be what it measured: the default there.
        let spin = match self.spin {
            crate::commands::load::args::Spin::Auto
                if spin_shares_the_server(self.target.is_some(), &server_cpus, &load_cpus) =>
            {
                crate::commands::load::args::Spin::Fixed(std::time::Duration::from_nanos(
                    loadgen::SPIN_NS,
                ))
            }
            s => s,
        };
        Ok(Setup {
            server_cpus,
            server_workers,
            load_cpus,
            engine: self.engine,
            mode,
            backlog: self.backlog,
            close,
            target: self.target.as_ref().map(|t| t.addr),
            netns: self.netns,
            rtt: self.rtt,
            connect_timeout: self.connect_timeout,
            expect_bytes,
            tls,
            http: self.http,
            load_engine: self.load_engine,
            accept_wait: self.accept_wait == crate::commands::server::args::OnOff::On,
            load_workers: self.load_workers.map_or(0, usize::from),
            port_slices: self.port_slices,
            pacing: crate::commands::load::pacing(spin, self.start_batch),
            whole_machine: self.whole_machine,
        })
    }
}

/// Whether the load CPUs also run bench's own server (none with an external `--target`): then
/// `--spin auto` keeps the default spin.
pub(crate) fn spin_shares_the_server(
    external: bool,
    server_cpus: &[usize],
    load_cpus: &[usize],
) -> bool {
    !external && load_cpus.iter().any(|c| server_cpus.contains(c))
}

impl Args {
    /// The run's phases.
    pub fn plan(&self) -> Plan {
        Plan {
            duration: self.duration,
            rate: self.rate,
            rate_from: None,
            concurrency: self.setup.concurrency,
            baseline: self.baseline,
            label: self.setup.label.clone(),
            profile: None,
        }
    }

    /// The run's plan, baseline and record directory; `build`: the binary's version and build,
    /// for the record.
    pub fn trial(&self, build: (Build, BuildInfo)) -> Trial {
        Trial {
            plan: self.plan(),
            baseline: BaselineRun {
                netns: self.setup.netns,
                concurrency: self.setup.concurrency,
                opts: self.baseline_options(),
            },
            out: self.setup.out.clone(),
            build,
            profile_overhead: None,
        }
    }
}

/// Checks `bench`'s own options (duration, rate; [`crate::limits::check_plan`]);
/// [`SetupArgs::resolve`] checks the shared ones.
///
/// # Errors
/// Bad input (exit 2) naming the option, its limit and how to fix it.
pub fn validate(args: &Args) -> anyhow::Result<()> {
    crate::limits::check_plan(&args.plan())?;
    if args.baseline {
        args.baseline_options()
            .validate()
            .map_err(crate::bad_input)?;
    }
    Ok(())
}

/// TLS for `bench` from its options (with bench's options, not in `setup`, which bench's
/// options import): the in-process server's config from `--cert`/`--key`
/// (a self-signed certificate for localhost, 127.0.0.1 and ::1 when neither is given), and
/// the load's options built as `load` builds them
/// ([`crate::commands::tls::TlsClientArgs::options`]). The server name defaults to
/// `localhost` with the own server and to the target's host with `--target`; without `--ca`
/// the load trusts the own server's certificate (`--target`: the system's CA bundle, as
/// `load`). With the own server the certificate is checked once here, so a name or chain the
/// load would refuse on every connection is bad input now, and so is `--insecure`: the
/// certificate is known, so it is checked.
/// `http`: the connections carry HTTP (ALPN `http/1.1` by default).
///
/// # Errors
/// Bad input (exit 2): an unusable certificate/key pair or half of one, what
/// [`crate::commands::tls::TlsClientArgs::options`] refuses, `--insecure` without `--target`,
/// a certificate the load's check refuses, a certificate the offered groups cannot use.
pub(crate) fn bench_tls(a: &SetupArgs, http: bool) -> anyhow::Result<BenchTls> {
    use crate::commands::tls::DefaultTrust;
    let c = &a.tls_client;
    if let Some(t) = &a.target {
        let name = t.name.clone().unwrap_or_else(|| t.addr.ip().to_string());
        let load = c.options(name, http, DefaultTrust::System)?;
        return Ok(BenchTls { server: None, load });
    }
    let s = server::tls::server_config(a.cert.as_deref(), a.key.as_deref(), true)
        .map_err(|e| crate::bad_input(e.to_string()))?;
    let load = c.options("localhost".into(), http, DefaultTrust::Pem(&s.cert_pem))?;
    if c.insecure {
        // Accepted, it checked nothing and marked the run TLS UNVERIFIED, though bench knows
        // the certificate its own server presents and can always check it.
        return Err(crate::bad_input(
            "--insecure is for --target: bench checks its own server's certificate, which it knows; drop --insecure (with a --cert of another name, give --sni with a name of it or --ca with the CA that issued it)",
        ));
    }
    load.check_certificate(&s.cert_pem)
        .map_err(crate::bad_input)?;
    load.check_server_chain(&s.cert_pem).map_err(|e| {
        crate::bad_input(format!(
            "the load's check refuses the server's certificate{}: {e}: give --sni with a name of the certificate, or --ca with the CA that issued it",
            a.cert
                .as_ref()
                .map(|p| format!(" (--cert {})", p.display()))
                .unwrap_or_default()
        ))
    })?;
    Ok(BenchTls {
        server: Some(s),
        load,
    })
}
