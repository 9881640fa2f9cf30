//! The kernel profile of a phase as stored ([`KernelProfile`]): the serde form of the `tuning`
//! crate's `tuning::profile::Profile`, field for field (this crate knows only the record, so
//! it keeps its own types; the binary converts, and a test there checks that every field
//! survives), and the paired on/off check of what the profile cost ([`ProfileOverhead`]).

use serde::{Deserialize, Serialize};

use super::MedianInterval;

/// The profile of one phase: samples of every task on the benchmark CPUs, split by side.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct KernelProfile {
    /// The event sampled: `cpu-clock` (PERF_COUNT_SW_CPU_CLOCK).
    pub event: String,
    /// Samples per second per CPU asked for, Hz.
    pub frequency_hz: u64,
    /// Wall time from the events' enable to their disable, ns.
    pub duration_ns: u64,
    /// CPU the collector thread was pinned to (`None`: unpinned).
    pub collector_cpu: Option<usize>,
    /// CPU time the collector used draining the rings, ns.
    pub collector_cpu_ns: u64,
    /// Wall time spent symbolizing and aggregating after the phase, ns.
    pub symbolize_ns: u64,
    /// One entry per side (`server`, `load`).
    pub sides: Vec<SideProfile>,
    /// What made the profile less than complete; empty when nothing did.
    pub notes: Vec<String>,
}

/// One side's profile.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SideProfile {
    /// `server` or `load`.
    pub side: String,
    /// The CPUs sampled.
    pub cpus: Vec<usize>,
    /// Samples read, idle included.
    pub samples: u64,
    /// Samples of the idle task in its idle loop (left out of every share).
    pub idle_samples: u64,
    /// Samples the kernel dropped on a full ring buffer.
    pub lost_samples: u64,
    /// Times the kernel throttled sampling.
    pub throttled: u64,
    /// Kernel frames no kallsyms symbol covered.
    pub unresolved_kernel_frames: u64,
    /// Kernel frames in all.
    pub kernel_frames: u64,
    /// Top functions by self and by inclusive samples, most self samples first.
    pub functions: Vec<FunctionShare>,
    /// Named contention points with at least one sample, largest inclusive share first.
    pub contention: Vec<ContentionPoint>,
}

impl SideProfile {
    /// Samples that count for shares: `samples − idle_samples`.
    pub fn busy_samples(&self) -> u64 {
        self.samples.saturating_sub(self.idle_samples)
    }
}

/// One function's share of a side's busy samples.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FunctionShare {
    /// Symbol name (kernel from `/proc/kallsyms`, user demangled, `COMM [other process]`,
    /// `[unknown kernel]`, `[unknown user]`).
    pub name: String,
    /// `kernel` or `user`.
    pub space: String,
    /// Samples whose leaf is this function.
    pub samples_self: u64,
    /// Samples with this function anywhere in the callchain (once per sample).
    pub samples_inclusive: u64,
    /// `samples_self / busy samples`, 0.0–1.0.
    pub self_share: f64,
    /// `samples_inclusive / busy samples`, 0.0–1.0.
    pub inclusive_share: f64,
}

/// A named contention point of one side.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ContentionPoint {
    /// `port_search`, `accept_queue`, `spinlock_wait`, `rfs_rps`, `socket_allocation`,
    /// `conntrack`, `time_wait`.
    pub kind: String,
    /// Its name in words (`ephemeral-port search`).
    pub what: String,
    /// Busy samples whose leaf is one of its functions.
    pub samples_self: u64,
    /// Busy samples with one of its functions in the kernel callchain.
    pub samples_inclusive: u64,
    /// `samples_self / busy samples`.
    pub self_share: f64,
    /// `samples_inclusive / busy samples`.
    pub inclusive_share: f64,
    /// Spin-lock waits: the callers taking the lock; the others: the matched functions.
    pub functions: Vec<NamedShare>,
}

/// A function (or a lock's caller) and its share.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NamedShare {
    /// Kernel function name.
    pub name: String,
    /// Samples with it.
    pub samples: u64,
    /// `samples / busy samples`.
    pub share: f64,
}

/// What the profile cost the peak: closed-loop slices without and with it alternated on the same
/// CPUs in ABBA order, each pair giving one ratio (profiled ÷ not profiled), their median and
/// its order-statistic interval (as `baseline.paired`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProfileOverhead {
    /// Sampling frequency of the profiled slices, Hz.
    pub frequency_hz: u64,
    /// Measured seconds of each slice (after its warm-up).
    pub slice_secs: f64,
    /// Each pair, in run order.
    pub pairs: Vec<OverheadPair>,
    /// Median of the pairs' `rate_ratio`; `None` without a pair.
    pub median_rate_ratio: Option<f64>,
    /// Interval for that median at [`ProfileOverhead::confidence`]; `None` with too few pairs.
    pub interval: Option<MedianInterval>,
    /// Median of the pairs' `cpu_ratio` (CPU µs per connection, both sides, on ÷ off).
    pub median_cpu_ratio: Option<f64>,
    /// Confidence level of the interval (`0.95`).
    pub confidence: f64,
}

/// One off/on pair of the overhead check.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OverheadPair {
    /// The profiled slice ran first in this pair (ABBA: odd pairs).
    pub on_first: bool,
    /// Connections/s without the profile.
    pub off_per_sec: f64,
    /// Connections/s with it.
    pub on_per_sec: f64,
    /// `on_per_sec / off_per_sec`; `None` when the off slice measured nothing.
    pub rate_ratio: Option<f64>,
    /// CPU µs per connection of both sides together without the profile.
    pub off_us_per_conn: Option<f64>,
    /// The same with it.
    pub on_us_per_conn: Option<f64>,
    /// `on_us_per_conn / off_us_per_conn`.
    pub cpu_ratio: Option<f64>,
}
