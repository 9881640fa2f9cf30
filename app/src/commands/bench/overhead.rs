//! `bench --profile-overhead PAIRS`: the profile's cost, measured as paired closed-loop slices
//! without and with it on the trial's server (the profile itself is [`crate::profile`]).

use std::time::Duration;

use crate::profile::Settings;

/// Measured time of one slice of the overhead check.
pub(crate) const OVERHEAD_SLICE: Duration = Duration::from_secs(2);

/// Warm-up before each slice of the overhead check.
pub(crate) const OVERHEAD_WARMUP: Duration = Duration::from_millis(500);

/// `bench --profile-overhead PAIRS`: closed-loop slices without and with the profile
/// alternated on the trial's still-running server in ABBA order (pair 0 off first, pair 1 on
/// first, …), each [`OVERHEAD_SLICE`] after [`OVERHEAD_WARMUP`]; every slice is shown as it ends
/// and the record gets the pairs, their median ratios and the interval
/// ([`results::analysis::profile_overhead`]). An interrupt ends it early, keeping whole pairs.
///
/// # Errors
/// When the server stopped or a slice fails.
pub(crate) fn overhead(
    trial: &mut crate::run::Trial,
    settings: Settings,
    pairs: usize,
    concurrency: Option<u32>,
    stop: &std::sync::atomic::AtomicBool,
    on_note: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    use std::sync::atomic::Ordering;
    let (server_cpus, load_cpus) = trial.cpus.clone();
    let config = settings.config(&[("server", &server_cpus), ("load", &load_cpus)]);
    let spec = crate::setup::PhaseSpec {
        name: "profile-overhead".into(),
        pattern: loadgen::Pattern::Closed {
            concurrency: crate::run::peak_concurrency(concurrency, load_cpus.len()),
        },
        duration: OVERHEAD_SLICE,
        warmup: OVERHEAD_WARMUP,
    };
    on_note(&format!(
        "[profile overhead] {pairs} pairs of {} s closed-loop slices, off/on in ABBA order, at {} \
         Hz",
        OVERHEAD_SLICE.as_secs(),
        settings.frequency_hz
    ));
    // (rate/s, CPU µs per connection of both sides) of a slice.
    let figures = |p: &results::record::PhaseRecord| {
        let us = match (
            p.cpu.server.as_ref().and_then(|c| c.us_per_conn()),
            p.cpu.load.us_per_conn(),
        ) {
            (Some(s), Some(l)) => Some(s + l),
            (None, l) => l,
            _ => None,
        };
        (p.achieved_per_sec.unwrap_or(0.0), us)
    };
    let mut done = Vec::new();
    'pairs: for i in 0..pairs {
        let on_first = i % 2 == 1;
        let mut pair = results::record::OverheadPair {
            on_first,
            ..Default::default()
        };
        for on in [on_first, !on_first] {
            if stop.load(Ordering::Relaxed) {
                break 'pairs;
            }
            let Some(h) = trial.harness() else {
                anyhow::bail!("the server stopped before the profile overhead check");
            };
            let out = h.run_phase_profiled(&spec, stop, &mut |_| {}, on.then(|| config.clone()))?;
            if stop.load(Ordering::Relaxed) {
                break 'pairs;
            }
            let (rate, us) = figures(&out.record);
            if on {
                (pair.on_per_sec, pair.on_us_per_conn) = (rate, us);
            } else {
                (pair.off_per_sec, pair.off_us_per_conn) = (rate, us);
            }
            on_note(&format!(
                "[profile overhead] pair {}/{pairs} {}: {} conn/s, {} µs CPU per connection",
                i + 1,
                if on { "on " } else { "off" },
                common::numfmt::fixed(rate, 0),
                us.map_or_else(|| "n/a".into(), |u| common::numfmt::fixed(u, 2))
            ));
        }
        done.push(pair);
    }
    if done.len() < pairs {
        trial.record.warnings.push(format!(
            "profile overhead check interrupted: {} of {pairs} pairs",
            done.len()
        ));
    }
    trial.record.profile_overhead = Some(results::analysis::profile_overhead(
        done,
        settings.frequency_hz,
        OVERHEAD_SLICE.as_secs_f64(),
        crate::baseline::CONFIDENCE,
    ));
    Ok(())
}
