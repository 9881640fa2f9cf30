//! A sampling kernel + user profile of a benchmark phase, split by side (issue 33, item 2).
//!
//! How it works, in the order the data flows:
//! 1. [`check_access`] reads `kernel.perf_event_paranoid`, `kernel.kptr_restrict`, this process's
//!    capabilities and the first line of `/proc/kallsyms` under a procfs root, and refuses up front
//!    with the setting to change ([`ProfileError`]).
//! 2. [`Profiler::start`] opens one `perf_event_open(2)` event per benchmark CPU (pid = -1,
//!    cpu = N: every task on that CPU) of the software event `PERF_COUNT_SW_CPU_CLOCK` (an hrtimer,
//!    so it works in VMs without a PMU), sampling the thread id and the kernel and user callchain
//!    every `1 / frequency_hz` seconds of CPU clock, into one mmap ring buffer per CPU
//!    (`perf-event2`). A collector thread on a housekeeping CPU drains the rings every
//!    [`DRAIN_INTERVAL`] and counts identical callchains (plain maps, no symbol work), plus the
//!    samples the kernel lost to a full ring (`PERF_RECORD_LOST`) and throttling.
//! 3. [`Profiler::stop`] disables the events, drains the rings one last time, symbolizes every
//!    distinct kernel address from `/proc/kallsyms` and our own process's user addresses from its
//!    ELF symbols (`blazesym`), and [`aggregate()`]s each side's callchains into top functions with
//!    self and inclusive shares and the named contention points of [`contention::TABLE`].
//! 4. [`Profile`] is plain serde data for the run record; [`render_text`] prints the top 10
//!    functions per side, the contention points and lost samples.
//!
//! Shares are fractions (0.0–1.0) of a side's **busy** samples: samples of the idle task in its
//! idle loop (halt/mwait/poll) are counted in [`SideProfile::idle_samples`] and left out, so a
//! half-idle CPU and a saturated one give comparable shares. Softirq work that runs on an idle CPU
//! (pid 0 but not in the idle loop) is busy time and stays in.
//!
//! Reading a cpu-clock profile: the sample is an hrtimer interrupt, so time spent with interrupts
//! disabled shows up where they are enabled again (`_raw_spin_unlock_irqrestore`,
//! `_raw_spin_unlock_irq`), as it does in `perf record -e cpu-clock`; a PMU event (`cycles`)
//! would sample inside, but VMs often have no PMU. Cross-checked against `perf record -a -C CPU
//! -e cpu-clock -g` + `perf report --no-children --sort sym` on the same connect loop: the same
//! top kernel functions with self shares within ~0.4 percentage point (see the examples).
//!
//! Kernel facts relied on (copied in `docs/kernel-profile.md`): perf_event_open(2);
//! `include/linux/perf_event.h` `perf_allow_cpu()` (a CPU-wide event needs
//! `perf_event_paranoid <= 0` or CAP_PERFMON (Linux 5.8) / CAP_SYS_ADMIN) and `perf_allow_kernel()`
//! (kernel samples need `<= 1`); `kernel/ksyms_common.c` `kallsyms_show_value()` (real addresses
//! in `/proc/kallsyms` when `kptr_restrict` is 0 and `perf_event_paranoid <= 1`, or
//! `kptr_restrict <= 1` with CAP_SYSLOG).

mod access;
pub mod aggregate;
mod callchain;
pub mod contention;
mod error;
mod render;
mod sampler;
mod stack;
mod symbols;

use serde::{Deserialize, Serialize};

pub use access::{check_access, Access};
pub use aggregate::{aggregate, Frame, Space, Stack};
pub use callchain::split_callchain;
pub use contention::{ContentionKind, ContentionPoint, NamedShare};
pub use error::ProfileError;
pub use render::{render_text, TOP_PRINTED};
pub use sampler::Profiler;

/// Default sampling frequency per profiled CPU, in Hz (samples per second of CPU clock).
///
/// 499 Hz, chosen from `connstorm bench --duration 3s --server-cpus 0 --load-cpus 1 --profile
/// --profile-frequency F --profile-overhead 6` on the 2-vCPU Linux 6.18 VM with nothing else
/// running (2026-12-07, docs/performance/2026-12-07-quiet.md): at 997 Hz, the earlier default,
/// the paired cost to the peak was −5.8%, −3.4% and −2.9% in three runs (median −3.4%: over the
/// 3% issue 33 allows), with both sides' CPUs sampled, user stacks included; at 499 Hz +2.4% and
/// +3.2% (no cost above the pairs' noise). The first, narrower measurement (a pinned blocking
/// connect + accept loop under `chrt -f 10`, `target/release/examples/profile_overhead`) gave
/// 997 Hz −1.7% and 249 Hz 0–1.7%; the whole `bench` costs more per sample (two profiled CPUs,
/// the kernel's timer interrupt and callchain walk at ~20–30 µs a sample in this VM). At 499 Hz
/// a 10 s phase gives ~5,000 samples per CPU: a 1% share is ±0.14 percentage point. 499, a
/// prime, so the sampling timer never runs in lockstep with the scheduler tick (`CONFIG_HZ`
/// 100/250/1000) and hides what the tick does.
pub const DEFAULT_FREQUENCY_HZ: u64 = 499;

/// Highest accepted sampling frequency, in Hz: the kernel's cpu-clock event never fires more
/// often than every 10 µs (`perf_swevent_set_period()`, kernel/events/core.c), and each sample
/// with a callchain costs a few µs of the CPU it profiles.
pub const MAX_FREQUENCY_HZ: u64 = 50_000;

/// Default ring buffer size per profiled CPU, in KiB (data area; one more page holds the
/// header). A sample with a 127-frame callchain is ~1 KiB, so at [`DEFAULT_FREQUENCY_HZ`] the
/// ring holds more than 250 ms of the worst case while the collector drains it every
/// [`DRAIN_INTERVAL`]. Unprivileged users with CAP_PERFMON are limited to
/// `kernel.perf_event_mlock_kb` (516 KiB by default) per CPU.
pub const DEFAULT_RING_KIB: usize = 256;

/// How often the collector thread drains the ring buffers.
pub const DRAIN_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

/// How many functions per side the profile keeps by self and by inclusive samples (the union of
/// both top lists); the text shows the top 10 by self.
pub const TOP_KEPT: usize = 40;

/// The CPUs of one side of the benchmark, e.g. `("server", [2, 3])`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideCpus {
    /// Name shown in the report and the record: `server`, `load`, ...
    pub side: String,
    /// CPUs whose every task is sampled. A CPU listed in two sides is sampled once and its
    /// samples count for both.
    pub cpus: Vec<usize>,
}

/// What to profile and how often.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileConfig {
    /// The sides and their CPUs; at least one CPU in all.
    pub sides: Vec<SideCpus>,
    /// Samples per second per CPU, 1..=[`MAX_FREQUENCY_HZ`]; default [`DEFAULT_FREQUENCY_HZ`].
    /// Cost: a few µs of the profiled CPU per sample (measured figure at the default).
    pub frequency_hz: u64,
    /// Ring buffer data size per CPU in KiB, rounded up to a power of two pages; default
    /// [`DEFAULT_RING_KIB`]. Larger: fewer lost samples if the collector is starved; counts
    /// against `kernel.perf_event_mlock_kb` for non-root users.
    pub ring_kib: usize,
    /// Housekeeping CPU for the collector thread. `None`: the first CPU this process may run on
    /// that is not profiled (the collector runs unpinned if every allowed CPU is profiled).
    pub collector_cpu: Option<usize>,
    /// procfs root, `/proc` on a real host: the access check, `kallsyms` and comm names come
    /// from here.
    pub proc_root: std::path::PathBuf,
}

impl ProfileConfig {
    /// A config with the defaults for `sides`: [`DEFAULT_FREQUENCY_HZ`], [`DEFAULT_RING_KIB`],
    /// the collector on any non-profiled CPU, `/proc`.
    pub fn new(sides: Vec<SideCpus>) -> Self {
        Self {
            sides,
            frequency_hz: DEFAULT_FREQUENCY_HZ,
            ring_kib: DEFAULT_RING_KIB,
            collector_cpu: None,
            proc_root: "/proc".into(),
        }
    }

    /// Every profiled CPU once, ascending.
    pub fn all_cpus(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.sides.iter().flat_map(|s| s.cpus.clone()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// The profile of one phase: one [`SideProfile`] per side, in config order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The event sampled: `cpu-clock` (PERF_COUNT_SW_CPU_CLOCK).
    pub event: String,
    /// Samples per second per CPU that were asked for.
    pub frequency_hz: u64,
    /// Wall time from the events' enable to their disable, in ns.
    pub duration_ns: u64,
    /// CPU the collector thread was pinned to (`None`: unpinned).
    pub collector_cpu: Option<usize>,
    /// CPU time the collector thread used draining the rings, in ns (not on the profiled CPUs
    /// when it ran on a housekeeping CPU).
    pub collector_cpu_ns: u64,
    /// Wall time spent symbolizing and aggregating at stop, in ns (after the phase).
    pub symbolize_ns: u64,
    /// One entry per side.
    pub sides: Vec<SideProfile>,
    /// What made the profile less than complete (unpinned collector, symbols that could not be
    /// read, unparsable records); empty when nothing did.
    pub notes: Vec<String>,
}

/// The profile of one side's CPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideProfile {
    /// Side name (`server`, `load`, ...).
    pub side: String,
    /// The CPUs sampled.
    pub cpus: Vec<usize>,
    /// Samples taken and read, idle included.
    pub samples: u64,
    /// Samples of the idle task in its idle loop; shares leave them out.
    pub idle_samples: u64,
    /// Samples the kernel dropped because a ring buffer was full (sum of `PERF_RECORD_LOST`).
    pub lost_samples: u64,
    /// Times the kernel throttled sampling (`PERF_RECORD_THROTTLE`, interrupts took too long:
    /// `kernel.perf_cpu_time_max_percent`).
    pub throttled: u64,
    /// Kernel frames (instances in callchains) whose address no kallsyms symbol covers.
    pub unresolved_kernel_frames: u64,
    /// Kernel frames in all.
    pub kernel_frames: u64,
    /// Top functions: the top [`TOP_KEPT`] by self samples and the top [`TOP_KEPT`] by inclusive
    /// samples (union), most self samples first.
    pub functions: Vec<FunctionShare>,
    /// Named contention points with at least one sample, largest inclusive share first.
    pub contention: Vec<ContentionPoint>,
}

impl SideProfile {
    /// Samples that count for shares: `samples - idle_samples`.
    pub fn busy_samples(&self) -> u64 {
        self.samples - self.idle_samples
    }
}

/// One function's share of a side's busy samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionShare {
    /// Symbol name: a kernel symbol as in `/proc/kallsyms` (`__inet_hash_connect`), a demangled
    /// user symbol of our process (libraries included), `COMM [other process]` for all of another
    /// process's user code (one frame), or `[unknown kernel]` / `[unknown user]` (no symbol
    /// covers the address; for user code also garbage frames of code built without frame
    /// pointers, whose callchains the kernel cannot walk).
    pub name: String,
    /// Kernel or user code.
    pub space: Space,
    /// Samples whose leaf frame is this function.
    pub samples_self: u64,
    /// Samples with this function anywhere in the callchain (once per sample).
    pub samples_inclusive: u64,
    /// `samples_self / busy samples`, 0.0–1.0.
    pub self_share: f64,
    /// `samples_inclusive / busy samples`, 0.0–1.0.
    pub inclusive_share: f64,
}
