//! One `connstorm bench` run (also an `ab` trial): the peak phase, then the latency phase at
//! 80% of the peak (or `--rate`); the caller then runs the paired kernel-floor baseline with
//! `--baseline` on the still-running server ([`Trial::baseline`]), and writes the record
//! ([`Trial::write`], which stops the server first).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::harness::Harness;
use crate::setup::{PhaseSpec, Setup};

/// What one `bench` run asks for (`bench`'s own options, without where to run: that is the
/// [`Setup`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Total measured time of both phases (see [`split_duration`]).
    pub duration: Duration,
    /// Offered rate of the latency phase, connections/s; `None` = 80% of the measured peak.
    pub rate: Option<f64>,
    /// How `rate` was chosen when not by `--rate` (`ab`: 80% of the lower peak of a probe
    /// pair), kept in the record's `config.rate_from`; `None` otherwise.
    pub rate_from: Option<String>,
    /// Closed-loop concurrency of the peak phase; `None` = [`peak_concurrency`]'s default.
    pub concurrency: Option<u32>,
    /// Whether the caller will measure the kernel floor after the phases (`--baseline`).
    pub baseline: bool,
    /// Label stored in the record and its file name.
    pub label: String,
    /// `bench --profile`: the kernel profile of the peak phase's measured part (`None`: none).
    pub profile: Option<crate::profile::Settings>,
}

/// Closed-loop concurrency of a peak phase: `concurrency`, or 32 attempts in flight per load
/// CPU (at least one CPU).
pub fn peak_concurrency(concurrency: Option<u32>, load_cpus: usize) -> u32 {
    concurrency.unwrap_or(32 * load_cpus.max(1) as u32)
}

/// A run whose phases are done; its server runs until [`Trial::finish`] (or [`Trial::write`]);
/// its record is not written yet.
pub struct Trial {
    /// The record so far (phases, warnings, server accept errors).
    pub record: results::RunRecord,
    /// The error that ended the phases early, if any (the record is still written).
    pub result: anyhow::Result<()>,
    /// The peak phase's achieved rate, connections/s, when it ran to its end with a success.
    pub peak_rate: Option<f64>,
    /// The peak phase's measured time (the kernel floor runs as long).
    pub peak_duration: Duration,
    /// The server's and the load's CPUs (the kernel floor runs on the same).
    pub(crate) cpus: (Vec<usize>, Vec<usize>),
    started: Instant,
    harness: Option<Harness>,
}

impl std::fmt::Debug for Trial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trial")
            .field("command", &self.record.run.command)
            .field("result", &self.result)
            .field("peak_rate", &self.peak_rate)
            .field("server_running", &self.harness.is_some())
            .finish()
    }
}

impl Trial {
    /// Whether the kernel floor should run now: `--baseline` was asked, and the run was neither
    /// interrupted nor ended by an error. Against an external target (`external`) it cannot run
    /// (the floor needs our own server side): a warning goes into the record and the answer is
    /// `false`.
    pub fn baseline_due(&mut self, plan: &Plan, external: bool) -> bool {
        if !plan.baseline || self.record.run.interrupted || self.result.is_err() {
            return false;
        }
        if external {
            self.record.warnings.push(
                "--baseline ignored with --target (the floor needs our own server side)".into(),
            );
            return false;
        }
        true
    }

    /// The harness, server still running, for work between the phases and the stop (the paired
    /// baseline's connstorm slices); `None` after [`Trial::finish`].
    pub fn harness(&mut self) -> Option<&mut Harness> {
        self.harness.as_mut()
    }

    /// Stops the server (draining its queues, [`Harness::finish`]) and records its accept errors
    /// and whether `stop` was set. Idempotent.
    pub fn finish(&mut self, stop: &AtomicBool) {
        let Some(harness) = self.harness.take() else {
            return;
        };
        let server_report = harness.finish();
        self.record.run.interrupted |= stop.load(Ordering::Relaxed);
        if let Some(sr) = &server_report {
            for (k, v) in sr.errors() {
                self.record.warnings.push(format!(
                    "server accept errors: {k} × {}",
                    common::numfmt::count(v)
                ));
            }
        }
    }

    /// Stops the server if still running ([`Trial::finish`]), writes the record under `out`
    /// (atomically, [`results::RunRecord::write_atomic`]) with the run's wall time, and returns
    /// it, its path, and the error that ended the run early.
    ///
    /// # Errors
    /// When the record cannot be written.
    pub fn write(
        mut self,
        out: &Path,
        stop: &AtomicBool,
    ) -> anyhow::Result<(results::RunRecord, PathBuf, anyhow::Result<()>)> {
        self.finish(stop);
        self.record.run.wall_secs = self.started.elapsed().as_secs_f64();
        let path = self
            .record
            .write_atomic(out)
            .with_context(|| format!("write the run record under {}", out.display()))?;
        Ok((self.record, path, self.result))
    }
}

/// What [`phases`] tells its caller as the run goes, besides rows and notes.
#[derive(Debug)]
pub enum Event<'a> {
    /// The harness is up (its server, if any, runs).
    Started(&'a Harness),
    /// A phase begins.
    PhaseBegins(&'a PhaseSpec),
    /// The phase ended (its load run returned).
    PhaseEnded(&'a PhaseSpec),
}

/// Runs the phases of one `bench` run on a fresh harness: the peak (closed loop), then — unless
/// stopped or the peak completed nothing — the latency phase (open loop at `plan.rate` or 80% of
/// the peak). `build` names the binary for the record ([`crate::record::Build`]). `on_second`
/// sees each phase's per-second rows, `on_note` the harness's notes (one line each), `on_event`
/// the start of the harness and of each phase ([`Event`]).
///
/// # Errors
/// When the harness cannot start; a phase's error ends the phases and is kept in
/// [`Trial::result`].
pub fn phases(
    plan: &Plan,
    setup: Setup,
    build: &crate::record::Build,
    stop: &AtomicBool,
    on_second: &mut dyn FnMut(&PhaseSpec, &loadgen::TimelineRow),
    on_note: &mut dyn FnMut(&str),
    on_event: &mut dyn FnMut(Event<'_>),
) -> anyhow::Result<Trial> {
    let cpus = (setup.server_cpus.clone(), setup.load_cpus.clone());
    let load_cpus = setup.load_cpus.len();
    let (peak_d, lat_d, warmup) = split_duration(plan.duration);
    let config = serde_json::json!({
        "duration_secs": plan.duration.as_secs_f64(),
        "peak_secs": peak_d.as_secs_f64(),
        "latency_secs": lat_d.as_secs_f64(),
        "warmup_secs": warmup.as_secs_f64(),
        "rate_per_sec": plan.rate,
        "rate_from": plan.rate_from,
        "concurrency": plan.concurrency,
        "baseline": plan.baseline,
        "setup": setup,
    });
    let started = Instant::now();
    let mut harness = Harness::start(setup)?;
    for note in harness.notes() {
        on_note(&note);
    }
    on_event(Event::Started(&harness));
    let mut record = crate::record::new_record("bench", &plan.label, config, &harness, build);
    let mut phases = vec![PhaseSpec {
        name: "peak".into(),
        pattern: loadgen::Pattern::Closed {
            concurrency: peak_concurrency(plan.concurrency, load_cpus),
        },
        duration: peak_d,
        warmup,
    }];
    let mut result = Ok(());
    let mut peak_rate = None;
    while let Some(spec) = phases.pop() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        on_event(Event::PhaseBegins(&spec));
        let mut progress = |row: &loadgen::TimelineRow| on_second(&spec, row);
        // The peak (closed loop, saturated) is where CPU per connection is the kernel's cost:
        // the phase `--profile` samples.
        let profile = plan
            .profile
            .filter(|_| spec.name == "peak")
            .map(|p| p.config(&[("server", &cpus.0), ("load", &cpus.1)]));
        let ran = harness.run_phase_profiled(&spec, stop, &mut progress, profile);
        on_event(Event::PhaseEnded(&spec));
        match ran {
            Ok(out) => {
                let (phase, mut report) = (out.record, out.report);
                record.warnings.extend(out.warnings);
                // Issue 36 item 4: with --tls --baseline, the crypto floor of the peak's first
                // full handshake on the first load CPU, after the peak, beside its client CPU.
                if plan.baseline && spec.name == "peak" && !stop.load(Ordering::Relaxed) {
                    if let Some(Some(Err(e))) = report
                        .tls
                        .as_mut()
                        .map(|t| t.measure_floor(cpus.1.first().copied()))
                    {
                        record.warnings.push(format!("no crypto floor: {e}"));
                    }
                    record.crypto_floor = crate::convert::crypto_floor(&report);
                }
                if spec.name == "peak" && !report.interrupted {
                    peak_rate = phase.achieved_per_sec;
                    let rate = plan
                        .rate
                        .unwrap_or(phase.achieved_per_sec.unwrap_or(0.0) * 0.8);
                    if rate > 0.0 {
                        phases.push(PhaseSpec {
                            name: "latency".into(),
                            pattern: loadgen::Pattern::Open {
                                rate_per_sec: rate,
                                arrival: loadgen::Arrival::Uniform,
                            },
                            duration: lat_d,
                            warmup,
                        });
                    } else {
                        record.warnings.push(
                            "peak phase completed no connection: latency phase skipped".into(),
                        );
                    }
                }
                record.run.interrupted |= report.interrupted;
                if let Some(e) = &report.engine {
                    record.run.note_load_engine(e.engine, e.line());
                }
                // How the load workers got their ephemeral ports (a fallback says why), once.
                if spec.name == "peak" {
                    if let Some(ports) = &report.port_slices {
                        on_note(&format!("ports: {}", ports.line()));
                    }
                }
                record.phases.push(phase);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    record.run.interrupted |= stop.load(Ordering::Relaxed);
    Ok(Trial {
        record,
        result,
        peak_rate,
        peak_duration: peak_d,
        cpus,
        started,
        harness: Some(harness),
    })
}

/// Splits the total duration into (peak, latency) measured times and the per-phase warm-up.
pub fn split_duration(total: Duration) -> (Duration, Duration, Duration) {
    if total >= Duration::from_secs(3) {
        // Whole seconds, so every per-second timeline row covers a full second.
        let whole = total.as_secs();
        let peak = ((whole as f64 * 0.4).round() as u64).max(1);
        let latency = total - Duration::from_secs(peak);
        return (Duration::from_secs(peak), latency, Duration::from_secs(1));
    }
    let warmup = total / 10;
    let peak = total.mul_f64(0.4);
    (peak, total - peak, warmup)
}

/// Planned seconds of one `bench` run (for the progress bar): warm-up and measurement of its
/// peak and latency phases.
pub fn planned_seconds(duration: Duration) -> Duration {
    let (peak, latency, warmup) = split_duration(duration);
    peak + latency + warmup * 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_split_adds_up() {
        let (p, l, w) = split_duration(Duration::from_secs(15));
        assert_eq!(p + l, Duration::from_secs(15));
        assert_eq!(w, Duration::from_secs(1));
        let (p, l, w) = split_duration(Duration::from_secs(5));
        assert_eq!(
            (p, l, w),
            (
                Duration::from_secs(2),
                Duration::from_secs(3),
                Duration::from_secs(1)
            )
        );
        let (p, l, w) = split_duration(Duration::from_secs(2));
        assert_eq!(p + l, Duration::from_secs(2));
        assert_eq!(w, Duration::from_millis(200));
    }

    #[test]
    fn bench_plan_counts_both_phases_and_their_warmups() {
        assert_eq!(
            planned_seconds(Duration::from_secs(15)),
            Duration::from_secs(17)
        );
        assert_eq!(
            planned_seconds(Duration::from_secs(2)),
            Duration::from_millis(2400)
        );
    }

    fn trial(interrupted: bool, result: anyhow::Result<()>) -> Trial {
        let mut record = results::RunRecord::new("t", serde_json::Value::Null);
        record.run.interrupted = interrupted;
        Trial {
            record,
            result,
            peak_rate: Some(1_000.0),
            peak_duration: Duration::from_secs(2),
            cpus: (vec![0], vec![0]),
            started: Instant::now(),
            harness: None,
        }
    }

    #[test]
    fn the_floor_runs_only_after_a_whole_run_on_our_own_server() {
        let mut plan = Plan {
            duration: Duration::from_secs(5),
            rate: None,
            rate_from: None,
            concurrency: None,
            baseline: true,
            label: String::new(),
            profile: None,
        };
        assert!(trial(false, Ok(())).baseline_due(&plan, false));
        assert!(
            !trial(true, Ok(())).baseline_due(&plan, false),
            "interrupted"
        );
        let mut failed = trial(false, Err(anyhow::anyhow!("phase failed")));
        assert!(!failed.baseline_due(&plan, false), "ended by an error");
        let mut external = trial(false, Ok(()));
        assert!(!external.baseline_due(&plan, true));
        assert_eq!(
            external.record.warnings,
            ["--baseline ignored with --target (the floor needs our own server side)"]
        );
        plan.baseline = false;
        let mut not_asked = trial(false, Ok(()));
        assert!(!not_asked.baseline_due(&plan, true));
        assert!(
            not_asked.record.warnings.is_empty(),
            "no warning when not asked"
        );
    }

    #[test]
    fn peak_concurrency_defaults_to_32_per_load_cpu() {
        assert_eq!(peak_concurrency(None, 3), 96);
        assert_eq!(peak_concurrency(None, 0), 32);
        assert_eq!(peak_concurrency(Some(5), 3), 5);
    }
}
