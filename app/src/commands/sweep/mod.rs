//! `connstorm sweep`: capacity planning. Probes the peak (closed loop), then steps the offered
//! rate in open loop from `--from` to `--to` of it, recording achieved rate, latency and errors
//! per step, and reports the knee: the highest rate that meets the SLO — as CPM,
//! connections/s and per server core. One run record holds every step as a phase (`step-1`,
//! …).
//!
//! - [`args`]: the options ([`Args`]; where and how to run is `bench`'s
//!   [`SetupArgs`](super::bench::SetupArgs)).
//! - [`run`] (here): the options checked, the harness started, the record written and the
//!   table printed; [`phases`]: the probe and the steps on the harness.

pub mod args;
pub mod phases;

pub use args::Args;

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::Context;
use results::analysis::{self as sweep, Criteria, Slo};
use results::record::BuildInfo;

use super::Format;
use crate::bad_input;
use crate::record::Build;
use crate::setup::PhaseSpec;
use phases::Steps;

/// Runs `connstorm sweep`; `build`: the binary's version and build, for the record.
///
/// # Errors
/// Bad options (exit 2), harness failures, record write failures.
pub fn run(args: Args, build: (Build, BuildInfo)) -> anyhow::Result<i32> {
    let slo = Slo::parse(&args.slo).map_err(|e| bad_input(e.to_string()))?;
    let from = sweep::parse_percent(&args.from).map_err(|e| bad_input(format!("--from: {e}")))?;
    let to = sweep::parse_percent(&args.to).map_err(|e| bad_input(format!("--to: {e}")))?;
    let max_errors = sweep::parse_percent(&args.max_errors)
        .map_err(|e| bad_input(format!("--max-errors: {e}")))?;
    if max_errors > 1.0 {
        return Err(bad_input(format!(
            "--max-errors {} is above 100%: give a share of attempts, e.g. `0.1%`",
            args.max_errors
        )));
    }
    let st = &Steps {
        from,
        to,
        count: args.steps as usize,
        duration: args.step_duration,
        warmup: args.warmup,
    };
    // Every step that the range alone decides is checked before anything runs; each step's
    // rate is checked right after the probe, before the first step runs.
    st.check()?;
    let setup = args.setup.resolve()?;
    let _ = server::rlimit::raise_nofile();
    let stop = crate::signals::stop_flag().context("install signal handlers")?;
    let server_cores = setup.server_cpus.len();
    let config = serde_json::json!({
        "from": st.from, "to": st.to, "steps": st.count, "slo": args.slo, "max_errors": max_errors,
        "step_secs": st.duration.as_secs_f64(), "probe_secs": args.probe_duration.as_secs_f64(),
        "warmup_secs": st.warmup.as_secs_f64(), "setup": setup,
    });
    let started = Instant::now();
    let _progress = crate::progress::begin(
        "sweep",
        args.probe_duration + st.warmup + (st.duration + st.warmup).mul_f64(st.count as f64),
    );
    let load_cpus = setup.load_cpus.len();
    let mut harness = super::bench::start(setup)?;
    let mut record =
        crate::record::new_record("sweep", &args.setup.label, config, &harness, &build.0);
    record.build = build.1;
    let probe = PhaseSpec {
        name: "peak".into(),
        pattern: loadgen::Pattern::Closed {
            concurrency: crate::run::peak_concurrency(args.setup.concurrency, load_cpus),
        },
        duration: args.probe_duration,
        warmup: st.warmup,
    };
    let outcome = phases::run(
        &mut harness,
        &mut record,
        &probe,
        st,
        &stop,
        &mut super::bench::progress,
    );
    drop(harness.finish());
    record.run.interrupted = crate::signals::stopped(&stop);
    record.run.wall_secs = started.elapsed().as_secs_f64();
    let path = record
        .write_atomic(&args.setup.out)
        .with_context(|| format!("write the run record under {}", args.setup.out.display()))?;
    let quantile = slo.quantile;
    let criteria = Criteria::new(slo, max_errors);
    let steps = sweep::steps_from_record(&record, quantile);
    let knee = sweep::knee(&steps, &criteria, server_cores);
    if args.format == Format::Json {
        crate::output::out(&format!("{}\n", record.to_json()));
        crate::output::note(&format!("record: {}", path.display()));
    } else {
        let mut out =
            results::render::sweep(&record, &steps, knee.as_ref(), &criteria, server_cores);
        let _ = writeln!(out, "record: {}", path.display());
        crate::output::out(&out);
    }
    outcome?;
    Ok(0)
}
