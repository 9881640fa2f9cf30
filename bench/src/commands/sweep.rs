//! `connstorm sweep` once its options are parsed: the peak probe, one open-loop step per offered
//! rate, the record written, and the table with the knee (the highest rate that meets the SLO)
//! as CPM, connections/s and per server core.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use results::analysis::{self as sweep, Criteria, Slo};
use results::record::BuildInfo;

use crate::harness::{PhaseSpec, Setup};
use crate::record::Build;
use crate::sweep::Steps;

/// `connstorm sweep`'s options, parsed.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The steps (checked by [`Steps::check`] before anything runs).
    pub steps: Steps,
    /// The SLO as given (`p99<1ms`), and parsed.
    pub slo: (String, Slo),
    /// Largest share of failed attempts a step may have and still count.
    pub max_errors: f64,
    /// Measured time of the peak probe.
    pub probe_duration: Duration,
    /// Closed-loop concurrency of the probe (`--concurrency`; `None`: 32 per load CPU).
    pub concurrency: Option<u32>,
    /// Record label.
    pub label: String,
    /// `--out DIR`.
    pub out: PathBuf,
    /// `--format json` (else the table).
    pub json: bool,
    /// The binary's version and build, for the record.
    pub build: (Build, BuildInfo),
}

/// Runs `connstorm sweep` on `setup` (resolved after the steps were checked).
///
/// # Errors
/// Bad options (exit 2), harness failures, record write failures.
pub fn run(s: &Sweep, setup: impl FnOnce() -> anyhow::Result<Setup>) -> anyhow::Result<i32> {
    // Every step that the range alone decides is checked before anything runs; each step's
    // rate is checked right after the probe, before the first step runs.
    s.steps.check()?;
    let setup = setup()?;
    let _ = server::rlimit::raise_nofile();
    let stop = crate::signals::stop_flag().context("install signal handlers")?;
    let server_cores = setup.server_cpus.len();
    let st = &s.steps;
    let config = serde_json::json!({
        "from": st.from, "to": st.to, "steps": st.count, "slo": s.slo.0, "max_errors": s.max_errors,
        "step_secs": st.duration.as_secs_f64(), "probe_secs": s.probe_duration.as_secs_f64(),
        "warmup_secs": st.warmup.as_secs_f64(), "setup": setup,
    });
    let started = Instant::now();
    let _progress = crate::progress::begin(
        "sweep",
        s.probe_duration + st.warmup + (st.duration + st.warmup).mul_f64(st.count as f64),
    );
    let load_cpus = setup.load_cpus.len();
    let mut harness = super::bench::start(setup)?;
    let mut record = crate::record::new_record("sweep", &s.label, config, &harness, &s.build.0);
    record.build = s.build.1.clone();
    let probe = PhaseSpec {
        name: "peak".into(),
        pattern: loadgen::Pattern::Closed {
            concurrency: crate::run::peak_concurrency(s.concurrency, load_cpus),
        },
        duration: s.probe_duration,
        warmup: st.warmup,
    };
    let outcome = crate::sweep::run(
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
        .write_atomic(&s.out)
        .with_context(|| format!("write the run record under {}", s.out.display()))?;
    let criteria = Criteria::new(s.slo.1.clone(), s.max_errors);
    let steps = sweep::steps_from_record(&record, s.slo.1.quantile);
    let knee = sweep::knee(&steps, &criteria, server_cores);
    if s.json {
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
