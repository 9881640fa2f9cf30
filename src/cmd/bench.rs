//! `connstorm bench`: the benchmark most users run first. Server and load generator in one
//! process (or load only against `--target`), two phases — *peak* (closed loop, saturating) and
//! *latency* (open loop at 80% of the peak or `--rate`) — a summary, and a run record.

use ::app::baseline::BaselineRun;
use ::app::commands::bench::Trial;
use ::app::run::Plan;
use ::app::setup::Setup;

mod args;
pub use args::{Args, Command, Format, SetupArgs};

impl Args {
    /// The paired baseline's options from `--baseline-pairs` and `--baseline-slice`.
    pub fn baseline_options(&self) -> ::app::baseline::Options {
        ::app::baseline::Options {
            pairs: self.baseline_pairs,
            slice: self.baseline_slice,
        }
    }
}

impl SetupArgs {
    /// Checks every option that needs no host state beyond limits and the `--out` directory,
    /// before anything is created ([`::app::limits::check_setup`]; `--backlog` is checked by
    /// its parser).
    ///
    /// # Errors
    /// Bad input (exit 2) naming the option, its limit and how to fix it.
    pub fn validate(&self) -> anyhow::Result<()> {
        ::app::limits::check_setup(&::app::limits::SetupRequest {
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
            ::app::cpus::whole_machine()
        } else {
            ::app::cpus::pick_cpus(
                self.server_cpus.as_deref(),
                self.load_cpus.as_deref(),
                self.target.is_some(),
            )?
        };
        for n in &picked.notes {
            ::app::commands::bench::note(n);
        }
        let (server_cpus, load_cpus) = (picked.server, picked.load);
        let mode = ::app::setup::protocol_mode(self.mode, self.tls, self.http)
            .map_err(crate::error::bad_input)?;
        let expect_bytes = match mode {
            server::Mode::Greet { bytes } => Some(bytes),
            _ => None,
        };
        let tls = self
            .tls
            .then(|| {
                ::app::setup::BenchTls::new(
                    self.cert.as_deref(),
                    self.key.as_deref(),
                    self.target.is_some(),
                    self.tls_resume,
                )
            })
            .transpose()
            .map_err(crate::error::bad_input)?;
        Ok(Setup {
            server_cpus,
            load_cpus,
            engine: self.engine,
            mode,
            backlog: self.backlog,
            close: self.close,
            target: self.target,
            netns: self.netns,
            rtt: self.rtt,
            connect_timeout: self.connect_timeout,
            expect_bytes,
            tls,
            http: self.http,
            load_engine: self.load_engine,
            pacing: ::app::commands::load::pacing(self.spin, self.start_batch),
            whole_machine: self.whole_machine,
        })
    }
}

impl Args {
    /// The run's plan, baseline and record directory.
    pub fn trial(&self) -> Trial {
        Trial {
            plan: Plan {
                duration: self.duration,
                rate: self.rate,
                concurrency: self.setup.concurrency,
                baseline: self.baseline,
                label: self.setup.label.clone(),
            },
            baseline: BaselineRun {
                netns: self.setup.netns,
                concurrency: self.setup.concurrency,
                opts: self.baseline_options(),
            },
            out: self.setup.out.clone(),
            build: crate::version::build(),
        }
    }
}

/// Runs `connstorm bench`.
///
/// # Errors
/// Bad options (exit 2), server/load/namespace failures, record write failures.
pub fn run(cmd: Command) -> anyhow::Result<i32> {
    let args = cmd.args;
    // Every input is checked before a record, a namespace or a server exists.
    validate(&args)?;
    let setup = args.setup.resolve()?;
    let json = args.format == Format::Json;
    ::app::commands::bench::run(&args.trial(), setup, json, &cmd.metrics)
}

/// Checks `bench`'s own options (duration, rate; [`::app::limits::check_plan`]);
/// [`SetupArgs::resolve`] checks the shared ones.
///
/// # Errors
/// Bad input (exit 2) naming the option, its limit and how to fix it.
pub fn validate(args: &Args) -> anyhow::Result<()> {
    ::app::limits::check_plan(&args.trial().plan)?;
    if args.baseline {
        args.baseline_options()
            .validate()
            .map_err(crate::error::bad_input)?;
    }
    Ok(())
}
