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
    /// otherwise. Cost at the default frequency (499 Hz): within the pairs' noise, under 3% of
    /// the peak (docs/kernel-profile.md).
    #[arg(long)]
    pub profile: bool,
    /// With --profile: samples per second per profiled CPU, 1..=50000 (a prime, 499, keeps the
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
            // A CPU repeats when workers outnumber CPUs (`--server-workers`): profile it once.
            cpus.dedup();
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

/// What the profile cost, one line: the record's paired check when it has one, else the cost
/// measured in docs/kernel-profile.md and how to measure it here.
pub fn overhead_summary(record: &results::RunRecord) -> String {
    match &record.profile_overhead {
        Some(o) => results::render::overhead_line(o),
        None => format!(
            "profile overhead: not measured in this run; at {} Hz it cost nothing above the \
             noise of paired slices (+2.4%, +3.2% conn/s) on a quiet 2-vCPU VM, and 997 Hz \
             cost -3.4% (docs/kernel-profile.md); measure it on this host with \
             --profile-overhead 6",
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
