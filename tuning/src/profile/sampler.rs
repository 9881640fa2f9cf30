//! The running profile: one cpu-clock sampling event per CPU, a collector thread that drains
//! their ring buffers, and the symbolization at stop.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use nix::sched::CpuSet;
use perf_event::data::Record as PerfRecord;
use perf_event::events::Software;
use perf_event::{Builder, SampleFlag, Sampler};

use super::aggregate::{aggregate, Frame, Stack, UNKNOWN_KERNEL, UNKNOWN_USER};
use super::callchain::{split_callchain, symbol_address};
use super::error::{open_hint, ring_hint};
use super::{
    check_access, symbols, Profile, ProfileConfig, ProfileError, DRAIN_INTERVAL, MAX_FREQUENCY_HZ,
};

/// `perf_event_header.misc` CPU mode bits (include/uapi/linux/perf_event.h).
const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
const PERF_RECORD_MISC_KERNEL: u16 = 1;

/// A distinct raw sample: who, in which mode, with which callchain.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RawKey {
    pid: u32,
    kernel_mode: bool,
    /// The callchain with its context markers; `[ip]` when the kernel gave none.
    chain: Box<[u64]>,
}

/// What the collector read from one CPU's ring.
#[derive(Debug, Default)]
struct CpuData {
    stacks: HashMap<RawKey, u64>,
    lost: u64,
    throttled: u64,
    unparsable: u64,
}

/// What the collector hands back at stop.
struct Collected {
    per_cpu: BTreeMap<usize, CpuData>,
    cpu_ns: u64,
    duration_ns: u64,
}

/// A profile being taken. Start with [`Profiler::start`], finish with [`Profiler::stop`];
/// dropping it without `stop` closes the events and discards the samples.
#[derive(Debug)]
pub struct Profiler {
    config: ProfileConfig,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Collected>>,
    collector_cpu: Option<usize>,
    notes: Vec<String>,
}

impl Profiler {
    /// Checks access ([`check_access`] on `config.proc_root`), opens one cpu-clock sampling event
    /// with kernel and user callchains on each CPU of `config` (perf_event_open(2), pid = -1,
    /// cpu = N; every task on that CPU), maps its ring buffer, enables it, and starts the
    /// collector thread on a housekeeping CPU. Sampling runs from return until [`Self::stop`].
    ///
    /// Cost while it runs: one timer interrupt plus a callchain walk per sample on each profiled
    /// CPU (see [`super::DEFAULT_FREQUENCY_HZ`] for the measured overhead), and a drain every
    /// [`DRAIN_INTERVAL`] on the collector CPU.
    ///
    /// # Errors
    /// [`ProfileError::Config`] (no CPU, a frequency outside 1..=[`MAX_FREQUENCY_HZ`], a zero
    /// ring, a collector CPU this process may not use), the access errors of [`check_access`],
    /// [`ProfileError::Open`] / [`ProfileError::Ring`] per CPU, [`ProfileError::Collector`].
    /// Nothing stays open on error.
    pub fn start(config: &ProfileConfig) -> Result<Profiler, ProfileError> {
        let cpus = config.all_cpus();
        if cpus.is_empty() {
            return Err(ProfileError::Config(
                "no CPU to profile: give each side its CPUs".into(),
            ));
        }
        if config.frequency_hz == 0 || config.frequency_hz > MAX_FREQUENCY_HZ {
            return Err(ProfileError::Config(format!(
                "sampling frequency {} Hz is outside 1..={MAX_FREQUENCY_HZ} Hz",
                config.frequency_hz
            )));
        }
        if config.ring_kib == 0 || config.ring_kib > 1 << 20 {
            return Err(ProfileError::Config(format!(
                "ring buffer of {} KiB per CPU is outside 1..=1048576 KiB",
                config.ring_kib
            )));
        }
        check_access(&config.proc_root)?;
        let mut notes = Vec::new();
        let allowed = allowed_cpus();
        let collector_cpu = match config.collector_cpu {
            Some(c) if !allowed.contains(&c) => {
                return Err(ProfileError::Config(format!(
                    "collector CPU {c} is not in this process's allowed CPUs {allowed:?}: \
                     pick a housekeeping CPU it may run on"
                )))
            }
            Some(c) => {
                if cpus.contains(&c) {
                    notes.push(format!(
                        "the collector runs on profiled CPU {c}: its draining is in the profile"
                    ));
                }
                Some(c)
            }
            None => {
                let free = allowed.iter().copied().find(|c| !cpus.contains(c));
                if free.is_none() {
                    notes.push(
                        "every CPU this process may use is profiled: the collector runs \
                         unpinned and its draining is in the profile"
                            .into(),
                    );
                }
                free
            }
        };
        let period_ns = 1_000_000_000 / config.frequency_hz;
        let mut samplers = Vec::with_capacity(cpus.len());
        for &cpu in &cpus {
            samplers.push((cpu, open(cpu, period_ns, config.ring_kib)?));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("profile-collector".into())
            .spawn(move || collect(samplers, collector_cpu, &flag, &ready_tx))
            .map_err(|e| ProfileError::Collector(format!("spawn: {e}")))?;
        // The collector pins itself and enables the events; wait for it so that sampling covers
        // everything after `start` returns.
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(ProfileError::Collector("exited before enabling".into()));
            }
        }
        Ok(Profiler {
            config: config.clone(),
            stop,
            thread: Some(thread),
            collector_cpu,
            notes,
        })
    }

    /// Stops sampling, drains the rings, symbolizes and aggregates: one [`super::SideProfile`]
    /// per side. Symbolization runs here, after the phase, on the calling thread (tens of ms).
    ///
    /// # Errors
    /// [`ProfileError::Collector`] when the collector thread panicked (a bug).
    pub fn stop(mut self) -> Result<Profile, ProfileError> {
        let collected = self.finish()?;
        let started = Instant::now();
        let mut notes = std::mem::take(&mut self.notes);
        let proc = self.config.proc_root.clone();
        let own_pid = std::process::id();

        // Every distinct address once.
        let mut kernel_addrs: HashSet<u64> = HashSet::new();
        let mut user_addrs: HashSet<u64> = HashSet::new();
        let mut foreign: HashSet<u32> = HashSet::new();
        for d in collected.per_cpu.values() {
            for key in d.stacks.keys() {
                let (k, u) = split_callchain(&key.chain, key.kernel_mode);
                kernel_addrs.extend(k.iter().enumerate().map(|(i, &a)| symbol_address(i, a)));
                if key.pid == own_pid {
                    user_addrs.extend(u.iter().enumerate().map(|(i, &a)| symbol_address(i, a)));
                } else if !u.is_empty() {
                    foreign.insert(key.pid);
                }
            }
        }
        let kernel_addrs: Vec<u64> = kernel_addrs.into_iter().collect();
        let user_addrs: Vec<u64> = user_addrs.into_iter().collect();
        let kernel =
            symbols::kernel_names(&proc.join("kallsyms"), &kernel_addrs).unwrap_or_else(|e| {
                notes.push(e);
                HashMap::new()
            });
        let user = symbols::own_user_names(&user_addrs).unwrap_or_else(|e| {
            notes.push(e);
            HashMap::new()
        });
        let comm: HashMap<u32, String> = foreign
            .into_iter()
            .map(|pid| (pid, symbols::foreign_user_name(&proc, pid)))
            .collect();
        let stack_of = |key: &RawKey, count: u64| -> Stack {
            let (k, u) = split_callchain(&key.chain, key.kernel_mode);
            let mut frames: Vec<Frame> = k
                .iter()
                .enumerate()
                .map(|(i, &a)| {
                    let name = kernel.get(&symbol_address(i, a));
                    Frame::kernel(name.map_or(UNKNOWN_KERNEL, String::as_str))
                })
                .collect();
            if key.pid == own_pid {
                frames.extend(u.iter().enumerate().map(|(i, &a)| {
                    let name = user.get(&symbol_address(i, a));
                    Frame::user(name.map_or(UNKNOWN_USER, String::as_str))
                }));
            } else if let Some(c) = comm.get(&key.pid) {
                frames.push(Frame::user(c));
            }
            Stack {
                pid: key.pid,
                frames,
                count,
            }
        };

        let mut sides = Vec::with_capacity(self.config.sides.len());
        for side in &self.config.sides {
            let mut merged: HashMap<&RawKey, u64> = HashMap::new();
            let (mut lost, mut throttled, mut unparsable) = (0, 0, 0);
            for cpu in &side.cpus {
                let Some(d) = collected.per_cpu.get(cpu) else {
                    continue;
                };
                for (k, n) in &d.stacks {
                    *merged.entry(k).or_default() += n;
                }
                lost += d.lost;
                throttled += d.throttled;
                unparsable += d.unparsable;
            }
            let stacks: Vec<Stack> = merged.into_iter().map(|(k, n)| stack_of(k, n)).collect();
            let mut p = aggregate(side, &stacks);
            p.lost_samples = lost;
            p.throttled = throttled;
            if unparsable > 0 {
                notes.push(format!(
                    "{}: {unparsable} ring records could not be parsed and were skipped",
                    side.side
                ));
            }
            sides.push(p);
        }
        Ok(Profile {
            event: "cpu-clock".into(),
            frequency_hz: self.config.frequency_hz,
            duration_ns: collected.duration_ns,
            collector_cpu: self.collector_cpu,
            collector_cpu_ns: collected.cpu_ns,
            symbolize_ns: started.elapsed().as_nanos() as u64,
            sides,
            notes,
        })
    }

    /// Tells the collector to stop and waits for its data.
    fn finish(&mut self) -> Result<Collected, ProfileError> {
        self.stop.store(true, Ordering::Release);
        let thread = self
            .thread
            .take()
            .ok_or_else(|| ProfileError::Collector("already stopped".into()))?;
        thread
            .join()
            .map_err(|_| ProfileError::Collector("panicked".into()))
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.finish();
        }
    }
}

/// CPUs the process (its main thread) may run on, ascending.
fn allowed_cpus() -> Vec<usize> {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::this()) {
        Ok(set) => (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Opens the sampling event of `cpu` and maps its ring (disabled until the collector enables it).
fn open(cpu: usize, period_ns: u64, ring_kib: usize) -> Result<Sampler, ProfileError> {
    let counter = Builder::new(Software::CPU_CLOCK)
        .any_pid()
        .one_cpu(cpu)
        .include_kernel()
        .exclude_hv(true)
        .sample_period(period_ns)
        .sample(SampleFlag::IP | SampleFlag::TID | SampleFlag::CALLCHAIN)
        .build()
        .map_err(|source| ProfileError::Open {
            cpu,
            hint: open_hint(&source),
            source,
        })?;
    counter
        .sampled(ring_kib * 1024)
        .map_err(|source| ProfileError::Ring {
            cpu,
            ring_kib,
            hint: ring_hint(&source),
            source,
        })
}

/// The collector thread: pin, enable, drain every [`DRAIN_INTERVAL`] until `stop`, disable,
/// drain the rest.
fn collect(
    mut samplers: Vec<(usize, Sampler)>,
    cpu: Option<usize>,
    stop: &AtomicBool,
    ready: &std::sync::mpsc::Sender<Result<(), ProfileError>>,
) -> Collected {
    let mut per_cpu: BTreeMap<usize, CpuData> = BTreeMap::new();
    let empty = |per_cpu| Collected {
        per_cpu,
        cpu_ns: 0,
        duration_ns: 0,
    };
    if let Some(c) = cpu {
        let mut set = CpuSet::new();
        if let Err(e) = set
            .set(c)
            .and_then(|()| nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set))
        {
            let _ = ready.send(Err(ProfileError::Config(format!(
                "cannot pin the collector to CPU {c}: {e}"
            ))));
            return empty(per_cpu);
        }
    }
    for (c, s) in &mut samplers {
        if let Err(source) = s.enable() {
            let _ = ready.send(Err(ProfileError::Ring {
                cpu: *c,
                ring_kib: 0,
                hint: ring_hint(&source),
                source,
            }));
            return empty(per_cpu);
        }
    }
    let enabled = Instant::now();
    let _ = ready.send(Ok(()));
    while !stop.load(Ordering::Acquire) {
        for (c, s) in &mut samplers {
            drain(s, per_cpu.entry(*c).or_default());
        }
        std::thread::sleep(DRAIN_INTERVAL);
    }
    for (_, s) in &mut samplers {
        let _ = s.disable();
    }
    let duration_ns = enabled.elapsed().as_nanos() as u64;
    for (c, s) in &mut samplers {
        drain(s, per_cpu.entry(*c).or_default());
    }
    let cpu_ns = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0);
    Collected {
        per_cpu,
        cpu_ns,
        duration_ns,
    }
}

/// Reads every record in `s`'s ring.
fn drain(s: &mut Sampler, d: &mut CpuData) {
    while let Some(rec) = s.next_record() {
        let kernel_mode = rec.misc() & PERF_RECORD_MISC_CPUMODE_MASK == PERF_RECORD_MISC_KERNEL;
        match rec.parse_record() {
            Ok(PerfRecord::Sample(sample)) => {
                let chain: Box<[u64]> = match sample.callchain() {
                    Some(c) if !c.is_empty() => c.into(),
                    _ => sample.ip().into_iter().collect(),
                };
                let key = RawKey {
                    pid: sample.pid().unwrap_or(0),
                    kernel_mode,
                    chain,
                };
                *d.stacks.entry(key).or_default() += 1;
            }
            Ok(PerfRecord::Lost(l)) => d.lost += l.lost,
            Ok(PerfRecord::Throttle(_)) => d.throttled += 1,
            Ok(_) => {}
            Err(_) => d.unparsable += 1,
        }
    }
}
