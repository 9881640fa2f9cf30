//! `connstorm sweep`: capacity planning. Probes the peak (closed loop), then steps the offered rate
//! in open loop from `--from` to `--to` of it, recording achieved rate, latency and errors per
//! step, and reports the knee: the highest rate that meets the SLO — as CPM, connections/s and per
//! server core. One run record holds every step as a phase (`step-1`, …).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::ValueEnum;
use results::sweep::{self, Criteria, Slo};

use crate::bench::harness::PhaseSpec;
use crate::cmd::bench::SetupArgs;
use crate::error::bad_input;
use crate::units;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table and the knee.
    Text,
    /// The run record as JSON.
    Json,
}

/// Options of `connstorm sweep`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Lowest offered rate, as a share of the probed peak.
    #[arg(long, default_value = "10%", allow_hyphen_values = true)]
    pub from: String,
    /// Highest offered rate, as a share of the probed peak.
    #[arg(long, default_value = "150%", allow_hyphen_values = true)]
    pub to: String,
    /// Number of steps from --from to --to (evenly spaced), 1 to 1000.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub steps: u64,
    /// Latency SLO on the handshake latency, e.g. `p99<1ms`, `p99.9<=500us`.
    #[arg(long, default_value = "p99<1ms")]
    pub slo: String,
    /// Largest share of failed attempts a step may have and still count.
    #[arg(long, default_value = "0.1%")]
    pub max_errors: String,
    /// Measured time of each step.
    #[arg(long, default_value = "3s", value_parser = units::parse_positive_duration)]
    pub step_duration: Duration,
    /// Measured time of the peak probe.
    #[arg(long, default_value = "3s", value_parser = units::parse_positive_duration)]
    pub probe_duration: Duration,
    /// Warm-up before the probe and each step (whole seconds keep the per-second timeline
    /// aligned with the measured window).
    #[arg(long, default_value = "1s", value_parser = units::parse_duration)]
    pub warmup: Duration,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Where and how to run.
    #[command(flatten)]
    pub setup: SetupArgs,
}

/// Runs `connstorm sweep`.
///
/// # Errors
/// Bad options (exit 2), harness failures, record write failures.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let slo = Slo::parse(&args.slo).map_err(|e| bad_input(e.to_string()))?;
    let from = sweep::parse_percent(&args.from).map_err(|e| bad_input(format!("--from: {e}")))?;
    let to = sweep::parse_percent(&args.to).map_err(|e| bad_input(format!("--to: {e}")))?;
    let max_err = sweep::parse_percent(&args.max_errors)
        .map_err(|e| bad_input(format!("--max-errors: {e}")))?;
    if max_err > 1.0 {
        return Err(bad_input(format!(
            "--max-errors {} is above 100%: give a share of attempts, e.g. `0.1%`",
            args.max_errors
        )));
    }
    // Every step that the range alone decides is checked before anything runs; each step's
    // rate is checked right after the probe, before the first step runs.
    let steps = ::bench::sweep::Steps {
        from,
        to,
        count: args.steps as usize,
        duration: args.step_duration,
        warmup: args.warmup,
    };
    steps.check()?;
    let setup = args.setup.resolve()?;
    let _ = server::rlimit::raise_nofile();
    let stop = crate::signals::stop_flag().context("install signal handlers")?;
    let server_cores = setup.server_cpus.len();
    let config = serde_json::json!({
        "from": from, "to": to, "steps": args.steps, "slo": args.slo, "max_errors": max_err,
        "step_secs": args.step_duration.as_secs_f64(), "probe_secs": args.probe_duration.as_secs_f64(),
        "warmup_secs": args.warmup.as_secs_f64(), "setup": setup,
    });
    let started = Instant::now();
    let _progress = crate::progress::begin(
        "sweep",
        args.probe_duration
            + args.warmup
            + (args.step_duration + args.warmup).mul_f64(args.steps as f64),
    );
    let load_cpus = setup.load_cpus.len();
    let mut harness = crate::bench::start(setup)?;
    let mut record = crate::bench::record::new_record("sweep", &args.setup.label, config, &harness);
    let probe = PhaseSpec {
        name: "peak".into(),
        pattern: loadgen::Pattern::Closed {
            concurrency: args.setup.peak_concurrency(load_cpus),
        },
        duration: args.probe_duration,
        warmup: args.warmup,
    };
    let outcome = ::bench::sweep::run(
        &mut harness,
        &mut record,
        &probe,
        &steps,
        &stop,
        &mut crate::bench::progress,
    );
    drop(harness.finish());
    record.run.interrupted = crate::signals::stopped(&stop);
    record.run.wall_secs = started.elapsed().as_secs_f64();
    let path = record
        .write_atomic(&args.setup.out)
        .with_context(|| format!("write the run record under {}", args.setup.out.display()))?;
    let criteria = Criteria::new(slo.clone(), max_err);
    let steps = sweep::steps_from_record(&record, slo.quantile);
    let knee = sweep::knee(&steps, &criteria, server_cores);
    match args.format {
        Format::Json => {
            println!("{}", record.to_json());
            eprintln!("record: {}", path.display());
        }
        Format::Text => {
            let mut out = sweep::text(&record, &steps, knee.as_ref(), &criteria, server_cores);
            let _ = writeln!(out, "record: {}", path.display());
            print!("{out}");
        }
    }
    outcome?;
    Ok(0)
}
