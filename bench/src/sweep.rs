//! `connstorm sweep`'s phases on one harness: the peak probe (closed loop), then one open-loop
//! step per offered rate ([`results::sweep::step_rates`] of the probed peak), each phase's
//! record part and warnings pushed into the run record as it ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use results::RunRecord;

use crate::harness::Harness;
use crate::setup::PhaseSpec;

/// The steps of a sweep: `steps` offered rates from `from` to `to` of the probed peak (shares,
/// `0.1` = 10%), each measured for `duration` after `warmup`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Steps {
    /// Lowest offered rate, share of the peak.
    pub from: f64,
    /// Highest offered rate, share of the peak.
    pub to: f64,
    /// Number of steps, evenly spaced.
    pub count: usize,
    /// Measured time of each step.
    pub duration: Duration,
    /// Warm-up before each step.
    pub warmup: Duration,
}

/// Runs `probe`, then the steps at the rates of [`Steps`] (phases `step-1`, …), on `harness`,
/// pushing every phase and its warnings into `record`. A set `stop` ends the sweep before the
/// next step; rates that cannot be made of the probed peak (e.g. a peak of 0) leave a warning
/// `no steps run: …` unless stopped. `on_second` gets each phase's per-second rows.
///
/// # Errors
/// The first phase that fails; the phases before it stay in `record`.
pub fn run(
    harness: &mut Harness,
    record: &mut RunRecord,
    probe: &PhaseSpec,
    steps: &Steps,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(&PhaseSpec, &loadgen::TimelineRow),
) -> anyhow::Result<()> {
    let out = harness.run_phase(probe, stop, &mut |row| on_second(probe, row))?;
    let peak = out.record.achieved_per_sec;
    record.phases.push(out.record);
    record.warnings.extend(out.warnings);
    let Some(peak) = peak else {
        if !stop.load(Ordering::Relaxed) {
            record.warnings.push(
                "no steps run: the peak probe measured nothing (no connection succeeded), so there is no rate to sweep".into(),
            );
        }
        return Ok(());
    };
    let rates = match results::sweep::step_rates(peak, steps.from, steps.to, steps.count) {
        Ok(rates) => rates,
        Err(e) => {
            if !stop.load(Ordering::Relaxed) {
                record.warnings.push(format!("no steps run: {e}"));
            }
            return Ok(());
        }
    };
    for (i, rate) in rates.into_iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let spec = PhaseSpec {
            name: format!("step-{}", i + 1),
            pattern: loadgen::Pattern::Open {
                rate_per_sec: rate,
                arrival: loadgen::Arrival::Uniform,
            },
            duration: steps.duration,
            warmup: steps.warmup,
        };
        let out = harness.run_phase(&spec, stop, &mut |row| on_second(&spec, row))?;
        record.phases.push(out.record);
        record.warnings.extend(out.warnings);
    }
    Ok(())
}
