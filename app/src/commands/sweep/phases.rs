//! `connstorm sweep`'s phases on one harness: the peak probe (closed loop), then one open-loop
//! step per offered rate ([`results::analysis::step_rates`] of the probed peak), each phase's
//! record part and warnings pushed into the run record as it ends.
//!
//! Every step is checked before any runs: what the range alone decides before the probe
//! ([`Steps::check`]), each step's rate once the peak is known (`Steps::phases`) — so a
//! refusal never comes after some steps ran, and a sweep that stops early says so in its
//! record's warnings.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use results::RunRecord;

use crate::harness::Harness;
use crate::limits::MAX_RATE_PER_SEC;
use crate::phase::PhaseOutcome;
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

/// `12.5%`, `1e9%`: a share as the options write it.
fn percent(share: f64) -> String {
    results::numfmt::exact(share * 100.0) + "%"
}

impl Steps {
    /// The share of the peak each step offers, lowest first (the range as
    /// [`results::analysis::step_rates`] spaces it).
    fn shares(&self) -> Result<Vec<f64>, results::analysis::SweepError> {
        results::analysis::step_rates(1.0, self.from, self.to, self.count)
    }

    /// Refuses, before anything runs, a range no probed peak can run every step of: the range
    /// itself ([`results::analysis::step_rates`]), and a highest share over the lowest wider than
    /// the rates a step may offer — at least one start in the step (`1 / duration`, the load
    /// generator's rule) and at most [`MAX_RATE_PER_SEC`] — span.
    ///
    /// # Errors
    /// Bad input (exit 2) naming the options and what fits.
    pub fn check(&self) -> anyhow::Result<()> {
        let shares = self.shares().map_err(|e| crate::bad_input(e.to_string()))?;
        let (lo, hi) = (shares[0], shares[shares.len() - 1]);
        let span = MAX_RATE_PER_SEC * self.duration.as_secs_f64();
        if hi / lo > span {
            return Err(crate::bad_input(format!(
                "--from {} to --to {} spans {}×, but every step must offer at least one start in its --step-duration {:?} and at most {}/s, a span of {}×: no probed peak fits every step; narrow the range (a lower --to or a higher --from) or lengthen --step-duration",
                percent(self.from),
                percent(self.to),
                results::numfmt::exact(hi / lo),
                self.duration,
                results::numfmt::exact(MAX_RATE_PER_SEC),
                results::numfmt::exact(span),
            )));
        }
        Ok(())
    }

    /// Every step's phase for a probed `peak_per_sec`, each checked before any runs: its rate
    /// at most [`MAX_RATE_PER_SEC`] (as `bench --rate`) and its load configuration valid
    /// ([`Harness::check_phase`]).
    ///
    /// # Errors
    /// [`results::analysis::SweepError`] text when the peak makes no rates (a peak of 0); bad
    /// input (exit 2) naming the first step that would be refused, its share and its rate.
    fn phases(&self, peak_per_sec: f64, harness: &Harness) -> Result<Vec<PhaseSpec>, Refusal> {
        let rates = results::analysis::step_rates(peak_per_sec, self.from, self.to, self.count)
            .map_err(|e| Refusal::NoRates(e.to_string()))?;
        let shares = self.shares().map_err(|e| Refusal::NoRates(e.to_string()))?;
        let mut out = Vec::with_capacity(rates.len());
        for (i, (rate, share)) in rates.into_iter().zip(shares).enumerate() {
            let step = format!(
                "step {} of {} ({} of the probed peak {}/s)",
                i + 1,
                self.count,
                percent(share),
                results::numfmt::value(peak_per_sec)
            );
            if rate > MAX_RATE_PER_SEC {
                return Err(Refusal::Step(crate::bad_input(format!(
                    "{step} would offer {}/s, above the highest rate sweep offers ({}/s, as bench --rate): give a lower --to",
                    results::numfmt::value(rate),
                    results::numfmt::exact(MAX_RATE_PER_SEC)
                ))));
            }
            let spec = PhaseSpec {
                name: format!("step-{}", i + 1),
                pattern: loadgen::Pattern::Open {
                    rate_per_sec: rate,
                    arrival: loadgen::Arrival::Uniform,
                },
                duration: self.duration,
                warmup: self.warmup,
            };
            harness
                .check_phase(&spec)
                .map_err(|e| Refusal::Step(e.context(step)))?;
            out.push(spec);
        }
        Ok(out)
    }
}

/// Why no step runs after the probe.
enum Refusal {
    /// The peak makes no rates (e.g. 0 connections/s): a warning, not an error.
    NoRates(String),
    /// A step would be refused.
    Step(anyhow::Error),
}

/// Runs `probe` (unless `probed` holds its outcome already: the placement's probe on the same
/// harness), then the steps at the rates of [`Steps`] (phases `step-1`, …), on `harness`,
/// pushing every phase and its warnings into `record`. Every step is checked right after the
/// probe, before the first runs (`Steps::phases`). A set `stop` ends the sweep before the next
/// step; rates that cannot be made of the probed peak (e.g. a peak of 0) leave a warning `no
/// steps run: …` unless stopped. `on_second` gets each phase's per-second rows.
///
/// # Errors
/// A step that would be refused (bad input, exit 2), or the first phase that fails. Either way
/// the phases before it stay in `record` and a warning `sweep incomplete: …` says how many of
/// the steps ran, so the record does not look like a whole sweep.
pub fn run(
    harness: &mut Harness,
    record: &mut RunRecord,
    (probe, probed): (&PhaseSpec, Option<anyhow::Result<PhaseOutcome>>),
    steps: &Steps,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(&PhaseSpec, &loadgen::TimelineRow),
) -> anyhow::Result<()> {
    let mut ran = 0;
    let outcome = run_steps(
        harness,
        record,
        (probe, probed),
        steps,
        stop,
        on_second,
        &mut ran,
    );
    if let Err(e) = &outcome {
        record.warnings.push(format!(
            "sweep incomplete: {ran} of {} step(s) ran: {e:#}",
            steps.count
        ));
    }
    outcome
}

fn run_steps(
    harness: &mut Harness,
    record: &mut RunRecord,
    (probe, probed): (&PhaseSpec, Option<anyhow::Result<PhaseOutcome>>),
    steps: &Steps,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(&PhaseSpec, &loadgen::TimelineRow),
    ran: &mut usize,
) -> anyhow::Result<()> {
    let out = match probed {
        Some(out) => out?,
        None => harness.run_phase(probe, stop, &mut |row| on_second(probe, row))?,
    };
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
    let specs = match steps.phases(peak, harness) {
        Ok(specs) => specs,
        Err(Refusal::NoRates(e)) => {
            if !stop.load(Ordering::Relaxed) {
                record.warnings.push(format!("no steps run: {e}"));
            }
            return Ok(());
        }
        Err(Refusal::Step(e)) => return Err(e),
    };
    for spec in &specs {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let out = harness.run_phase(spec, stop, &mut |row| on_second(spec, row))?;
        record.phases.push(out.record);
        record.warnings.extend(out.warnings);
        *ran += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(from: f64, to: f64, count: usize) -> Steps {
        Steps {
            from,
            to,
            count,
            duration: Duration::from_secs(3),
            warmup: Duration::from_secs(1),
        }
    }

    /// Finding: `--from 10% --to 1000000000%` ran the probe and step 1 before a step's rate
    /// was refused. A range no peak fits is refused before anything runs.
    #[test]
    fn a_sweep_range_no_peak_fits_is_refused_before_the_probe() {
        let e = steps(0.1, 1e7, 10).check().unwrap_err();
        assert!(e.downcast_ref::<common::error::BadInput>().is_some());
        let t = e.to_string();
        assert!(
            t.starts_with("--from 10% to --to 1,000,000,000% spans 100,000,000×"),
            "{t}"
        );
        assert!(t.contains("a span of 30,000,000×"), "{t}");
        assert!(steps(0.1, 1.5, 10).check().is_ok());
        // One step runs at --to only: no span to fit.
        assert!(steps(0.1, 1e7, 1).check().is_ok());
        assert!(steps(0.9, 0.1, 10).check().is_err());
    }
}
