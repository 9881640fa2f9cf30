//! One `connstorm bench` run (also an `ab` trial): the peak phase, then the latency phase at
//! 80% of the peak (or `--rate`), the kernel floor with `--baseline`, and the record written.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::harness::{Harness, PhaseSpec, Setup};
use super::summary;
use crate::cmd::bench::Args;

/// Runs the benchmark and writes its record; returns the record, its path, and the error that
/// ended the run early, if any (the record is written even then).
///
/// # Errors
/// When the harness cannot start or the record cannot be written.
pub fn execute(
    args: &Args,
    setup: Setup,
    stop: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<(results::RunRecord, PathBuf, anyhow::Result<()>)> {
    let (server_cpus, load_cpus) = (setup.server_cpus.clone(), setup.load_cpus.clone());
    let (peak_d, lat_d, warmup) = split_duration(args.duration);
    let config = serde_json::json!({
        "duration_secs": args.duration.as_secs_f64(),
        "peak_secs": peak_d.as_secs_f64(),
        "latency_secs": lat_d.as_secs_f64(),
        "warmup_secs": warmup.as_secs_f64(),
        "rate_per_sec": args.rate,
        "concurrency": args.setup.concurrency,
        "baseline": args.baseline,
        "setup": setup,
    });
    let started = Instant::now();
    let mut harness = Harness::start(setup)?;
    let mut record = crate::bench::record::new_record("bench", &args.setup.label, config, &harness);
    let concurrency = args.setup.peak_concurrency(load_cpus.len());
    let mut phases = vec![PhaseSpec {
        name: "peak".into(),
        pattern: loadgen::Pattern::Closed { concurrency },
        duration: peak_d,
        warmup,
    }];
    let mut result = Ok(());
    let mut peak_rate = None;
    while let Some(spec) = phases.pop() {
        if crate::signals::stopped(stop) {
            break;
        }
        let progress_spec = spec.clone();
        let mut progress = |row: &loadgen::TimelineRow| {
            if let Some(line) = summary::progress_line(&progress_spec, row) {
                crate::progress::second(&progress_spec.name, &line);
            }
        };
        match harness.run_phase(&spec, stop, &mut progress) {
            Ok(out) => {
                let (phase, report) = (out.record, out.report);
                record.warnings.extend(out.warnings);
                if spec.name == "peak" && !report.interrupted {
                    peak_rate = Some(phase.achieved_per_sec);
                    let rate = args.rate.unwrap_or(phase.achieved_per_sec * 0.8);
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
                record.phases.push(phase);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let server_report = harness.finish();
    record.run.interrupted |= crate::signals::stopped(stop);
    if let Some(sr) = &server_report {
        for (k, v) in sr.errors() {
            record
                .warnings
                .push(format!("server accept errors: {k} × {v}"));
        }
    }
    if args.baseline && !record.run.interrupted && result.is_ok() {
        if args.setup.target.is_some() {
            record.warnings.push(
                "--baseline ignored with --target (the floor needs our own server side)".into(),
            );
        } else {
            super::baseline::measure(
                &mut record,
                &server_cpus,
                &load_cpus,
                peak_d,
                peak_rate,
                stop,
            )?;
        }
    }
    record.run.wall_secs = started.elapsed().as_secs_f64();
    let path = record
        .write_atomic(&args.setup.out)
        .with_context(|| format!("write the run record under {}", args.setup.out.display()))?;
    Ok((record, path, result))
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
}
