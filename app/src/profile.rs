//! `--profile` of `bench`, `scale`, `load` and `server`: the kernel profile of
//! [`tuning::profile`] wired around the measured part of a phase.
//!
//! - [`ProfileArgs`]: the options; [`ProfileArgs::check`] runs the access check before anything
//!   else (bad input, exit 2, naming the setting to change: `kernel.perf_event_paranoid`,
//!   `kernel.kptr_restrict`, CAP_PERFMON).
//! - [`Settings::config`]: the sides (`server`, `load`) and their CPUs, the collector on a
//!   housekeeping CPU when one is free (an online CPU that is not isolated, not profiled, and
//!   allowed), else on any allowed CPU that is not profiled, else unpinned (the profile says so).
//! - [`Armed`]: a profile armed to start when a phase's warm-up ends (a thread sleeps until
//!   then, cancelled if the phase ends first) and stopped when the load returns; the samples
//!   are symbolized after the phase, not during it.
//! - [`to_record`]: the profile in the record's form ([`results::record::KernelProfile`]: the
//!   same serde shape, field for field).

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tuning::profile::{Profile, ProfileConfig, Profiler, SideCpus};

/// The `--profile` options.
#[derive(Debug, Clone, Default, clap::Args)]
#[group(skip)]
pub struct ProfileArgs {
    /// Sample kernel and user stacks on the benchmark CPUs during the measured part
    /// (perf_event_open cpu-clock; kernel names from /proc/kallsyms), store the top functions
    /// per side and the named contention points (ephemeral-port search, accept queue, spin-lock
    /// waits, …) in the record and print the top 10 per side. Needs
    /// kernel.perf_event_paranoid <= 0 or CAP_PERFMON (root has it); refused up front
    /// otherwise. Cost at the default frequency: about 2% of the peak (docs/kernel-profile.md).
    #[arg(long)]
    pub profile: bool,
    /// With --profile: samples per second per profiled CPU, 1..=50000 (a prime, 997, keeps the
    /// sampling out of step with the scheduler tick).
    #[arg(long, value_name = "HZ", default_value_t = tuning::profile::DEFAULT_FREQUENCY_HZ,
          value_parser = clap::value_parser!(u64).range(1..=tuning::profile::MAX_FREQUENCY_HZ),
          requires = "profile")]
    pub profile_frequency: u64,
}

/// A checked `--profile`: how often to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Settings {
    /// Samples per second per CPU.
    pub frequency_hz: u64,
}

impl ProfileArgs {
    /// `None` without `--profile`; with it, the access check ([`tuning::profile::check_access`]
    /// on `/proc`) done now, before anything runs.
    ///
    /// # Errors
    /// Bad input (exit 2) with the setting to change when this process may not profile.
    pub fn check(&self) -> anyhow::Result<Option<Settings>> {
        if !self.profile {
            return Ok(None);
        }
        tuning::profile::check_access(std::path::Path::new("/proc"))
            .map_err(|e| crate::bad_input(format!("--profile: {e}")))?;
        Ok(Some(Settings {
            frequency_hz: self.profile_frequency,
        }))
    }
}

impl Settings {
    /// The profile's configuration for `sides` (`("server", cpus)`, `("load", cpus)`; a side
    /// without CPUs is left out), with the collector on a housekeeping CPU when one is free.
    /// Sides on the same CPUs (`--whole-machine`, `scale --pairs shared`) are one side,
    /// `server+load`: a CPU's samples cannot be told apart by side, so they are counted once.
    pub fn config(&self, sides: &[(&str, &[usize])]) -> ProfileConfig {
        let mut merged: Vec<SideCpus> = Vec::new();
        for (side, cpus) in sides.iter().filter(|(_, cpus)| !cpus.is_empty()) {
            let mut cpus = cpus.to_vec();
            cpus.sort_unstable();
            match merged.iter_mut().find(|s| s.cpus == cpus) {
                Some(s) => s.side = format!("{}+{side}", s.side),
                None => merged.push(SideCpus {
                    side: (*side).to_string(),
                    cpus,
                }),
            }
        }
        let sides = merged;
        let mut c = ProfileConfig::new(sides);
        c.frequency_hz = self.frequency_hz;
        c.collector_cpu = housekeeping_cpu(&c.all_cpus());
        c
    }
}

/// An allowed CPU that is not isolated and not profiled (a housekeeping CPU), if any; `None`
/// leaves the choice to the profiler (any allowed CPU not profiled, else unpinned).
fn housekeeping_cpu(profiled: &[usize]) -> Option<usize> {
    let topo = tuning::host::Topology::read(std::path::Path::new("/")).ok()?;
    let allowed = common::cpulist::usable();
    topo.housekeeping()
        .into_iter()
        .find(|c| allowed.contains(c) && !profiled.contains(c))
}

/// A profile armed to start after a delay (the phase's warm-up) on its own thread.
#[derive(Debug)]
pub struct Armed {
    cancel: mpsc::Sender<()>,
    thread: JoinHandle<Option<Result<Profiler, String>>>,
}

impl Armed {
    /// Starts `config`'s profile `after` from now, unless [`Armed::finish`] comes first.
    pub fn arm(config: ProfileConfig, after: Duration) -> Armed {
        let (cancel, cancelled) = mpsc::channel::<()>();
        let at = Instant::now() + after;
        let thread = std::thread::spawn(move || {
            let wait = at.saturating_duration_since(Instant::now());
            match cancelled.recv_timeout(wait) {
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    Some(Profiler::start(&config).map_err(|e| e.to_string()))
                }
                // Cancelled (or the phase's side went away) before the measured part began.
                _ => None,
            }
        });
        Armed { cancel, thread }
    }

    /// Stops the profile (or cancels it if it had not started) and returns it: `Ok(None)` when
    /// the phase ended before its measured part began; `Err` with the reason when it could not
    /// be started or stopped (the phase's figures stand; the record's warnings say why).
    pub fn finish(self) -> Result<Option<Profile>, String> {
        let _ = self.cancel.send(());
        match self.thread.join() {
            Ok(None) => Ok(None),
            Ok(Some(Ok(p))) => p.stop().map(Some).map_err(|e| e.to_string()),
            Ok(Some(Err(e))) => Err(e),
            Err(_) => Err("the profile's starter thread panicked".into()),
        }
    }
}

/// The profile in the record's form: the same serde shape, field for field.
///
/// # Panics
/// Never for a profile of this build (the two types are kept in step and a test converts one
/// with every field set).
pub fn to_record(p: &Profile) -> results::record::KernelProfile {
    let v = serde_json::to_value(p).expect("a profile is plain data");
    serde_json::from_value(v).expect("results::record::KernelProfile has the profile's shape")
}

/// Measured time of one slice of the overhead check.
pub const OVERHEAD_SLICE: Duration = Duration::from_secs(2);

/// Warm-up before each slice of the overhead check.
pub const OVERHEAD_WARMUP: Duration = Duration::from_millis(500);

/// `bench --profile-overhead PAIRS`: closed-loop slices without and with the profile
/// alternated on the trial's still-running server in ABBA order (pair 0 off first, pair 1 on
/// first, …), each [`OVERHEAD_SLICE`] after [`OVERHEAD_WARMUP`]; every slice is shown as it ends
/// and the record gets the pairs, their median ratios and the interval
/// ([`results::analysis::profile_overhead`]). An interrupt ends it early, keeping whole pairs.
///
/// # Errors
/// When the server stopped or a slice fails.
pub fn overhead(
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

/// What the profile cost, one line: the record's paired check when it has one, else the cost
/// measured in docs/kernel-profile.md and how to measure it here.
pub fn overhead_summary(record: &results::RunRecord) -> String {
    match &record.profile_overhead {
        Some(o) => results::render::overhead_line(o),
        None => format!(
            "profile overhead: not measured in this run; at {} Hz it cost -0.9% to -2.9% of \
             conn/s (median -1.7%) and +0.8% to +3.0% CPU per connection on a 2-vCPU VM \
             (docs/kernel-profile.md); measure it on this host with --profile-overhead 6",
            tuning::profile::DEFAULT_FREQUENCY_HZ
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tuning::profile::{aggregate, Frame, Stack};

    /// Server and load on the same CPUs are one side; on different CPUs, two; a side without
    /// CPUs (an external target's server) is left out.
    #[test]
    fn sides_on_the_same_cpus_are_profiled_once() {
        let s = Settings { frequency_hz: 99 };
        let names = |c: &ProfileConfig| -> Vec<(String, Vec<usize>)> {
            c.sides
                .iter()
                .map(|x| (x.side.clone(), x.cpus.clone()))
                .collect()
        };
        let c = s.config(&[("server", &[1, 0]), ("load", &[0, 1])]);
        assert_eq!(names(&c), [("server+load".to_string(), vec![0, 1])]);
        assert_eq!(c.frequency_hz, 99);
        let c = s.config(&[("server", &[0]), ("load", &[1])]);
        assert_eq!(
            names(&c),
            [
                ("server".to_string(), vec![0]),
                ("load".to_string(), vec![1])
            ]
        );
        let c = s.config(&[("server", &[]), ("load", &[1])]);
        assert_eq!(names(&c), [("load".to_string(), vec![1])]);
    }

    /// Every field of a tuning profile (sides, functions, contention points with their lock
    /// callers) survives the conversion to the record and back.
    #[test]
    fn a_profile_converts_to_the_record_and_back_unchanged() {
        let side = SideCpus {
            side: "load".into(),
            cpus: vec![1],
        };
        let stacks = vec![
            Stack {
                pid: 7,
                frames: vec![
                    Frame::kernel("native_queued_spin_lock_slowpath"),
                    Frame::kernel("_raw_spin_lock_bh"),
                    Frame::kernel("__inet_hash_connect"),
                    Frame::user("main"),
                ],
                count: 30,
            },
            Stack {
                pid: 0,
                frames: vec![Frame::kernel("default_idle")],
                count: 10,
            },
        ];
        let mut s = aggregate(&side, &stacks);
        s.lost_samples = 2;
        s.throttled = 1;
        let p = Profile {
            event: "cpu-clock".into(),
            frequency_hz: 997,
            duration_ns: 5,
            collector_cpu: Some(0),
            collector_cpu_ns: 3,
            symbolize_ns: 4,
            sides: vec![s],
            notes: vec!["n".into()],
        };
        let r = to_record(&p);
        assert_eq!(r.sides[0].contention[0].kind, "port_search");
        assert_eq!(r.sides[0].functions[0].space, "kernel");
        assert_eq!(r.sides[0].busy_samples(), 30);
        let back: Profile = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back, p);
    }
}
