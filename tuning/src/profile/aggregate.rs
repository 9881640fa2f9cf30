//! Symbolized callchains → one side's top functions and contention points (pure logic).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::contention;
use super::{FunctionShare, SideCpus, SideProfile, TOP_KEPT};

/// Name of a kernel frame no kallsyms symbol covers.
pub const UNKNOWN_KERNEL: &str = "[unknown kernel]";
/// Name of a user frame of our process no ELF symbol covers.
pub const UNKNOWN_USER: &str = "[unknown user]";

/// Kernel or user code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Space {
    /// Kernel code (symbol from `/proc/kallsyms`).
    Kernel,
    /// User code.
    User,
}

/// One symbolized frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Function name (see [`FunctionShare::name`]).
    pub name: String,
    /// Kernel or user.
    pub space: Space,
}

impl Frame {
    /// A kernel frame.
    pub fn kernel(name: &str) -> Self {
        Self {
            name: name.to_string(),
            space: Space::Kernel,
        }
    }

    /// A user frame.
    pub fn user(name: &str) -> Self {
        Self {
            name: name.to_string(),
            space: Space::User,
        }
    }
}

/// A distinct callchain and how many samples had it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    /// Process id of the sampled task (0: the idle task / swapper).
    pub pid: u32,
    /// Frames leaf first: the kernel part, then the user part.
    pub frames: Vec<Frame>,
    /// Samples with exactly this callchain.
    pub count: u64,
}

impl Stack {
    /// The idle task in its idle loop: pid 0 with a halt/mwait/poll leaf (`default_idle`,
    /// `pv_native_safe_halt`, `intel_idle`, `mwait_idle_with_hints`, `cpuidle_enter_state`,
    /// `poll_idle`, ...: kernel/sched/idle.c, arch/x86/kernel/process.c, drivers/idle/). pid 0
    /// running softirqs or interrupts is busy.
    pub fn is_idle(&self) -> bool {
        self.pid == 0
            && self.frames.first().is_some_and(|f| {
                let n = f.name.split('.').next().unwrap_or("");
                f.space == Space::Kernel
                    && (n.contains("idle") || n.ends_with("safe_halt") || n.starts_with("mwait"))
            })
    }
}

/// Aggregates one side's symbolized stacks: samples, idle samples, the top functions by self
/// and inclusive samples ([`TOP_KEPT`] at most, most self samples first) and the contention
/// points. `lost_samples` and `throttled` are left 0 for the caller to fill.
///
/// Shares are fractions of busy (non-idle) samples; self shares sum to at most 1.0 (each busy
/// sample has one leaf), inclusive shares each lie in 0.0–1.0.
pub fn aggregate(side: &SideCpus, stacks: &[Stack]) -> SideProfile {
    let samples: u64 = stacks.iter().map(|s| s.count).sum();
    let idle_samples: u64 = stacks.iter().filter(|s| s.is_idle()).map(|s| s.count).sum();
    let busy = samples - idle_samples;
    let share = |n: u64| {
        if busy == 0 {
            0.0
        } else {
            n as f64 / busy as f64
        }
    };
    let mut kernel_frames = 0;
    let mut unresolved_kernel_frames = 0;
    let mut by_fn: HashMap<(&str, Space), (u64, u64)> = HashMap::new();
    for s in stacks.iter().filter(|s| !s.is_idle()) {
        for f in &s.frames {
            if f.space == Space::Kernel {
                kernel_frames += s.count;
                if f.name == UNKNOWN_KERNEL {
                    unresolved_kernel_frames += s.count;
                }
            }
        }
        if let Some(leaf) = s.frames.first() {
            by_fn.entry((&leaf.name, leaf.space)).or_default().0 += s.count;
        }
        let mut seen: Vec<(&str, Space)> = Vec::with_capacity(s.frames.len());
        for f in &s.frames {
            let key = (f.name.as_str(), f.space);
            if !seen.contains(&key) {
                seen.push(key);
                by_fn.entry(key).or_default().1 += s.count;
            }
        }
    }
    let mut all: Vec<FunctionShare> = by_fn
        .into_iter()
        .map(|((name, space), (s, i))| FunctionShare {
            name: name.to_string(),
            space,
            samples_self: s,
            samples_inclusive: i,
            self_share: share(s),
            inclusive_share: share(i),
        })
        .collect();
    all.sort_by(|a, b| {
        b.samples_inclusive
            .cmp(&a.samples_inclusive)
            .then(a.name.cmp(&b.name))
    });
    let top_inclusive: Vec<String> = all.iter().take(TOP_KEPT).map(|f| f.name.clone()).collect();
    all.sort_by(|a, b| {
        b.samples_self
            .cmp(&a.samples_self)
            .then(b.samples_inclusive.cmp(&a.samples_inclusive))
            .then(a.name.cmp(&b.name))
    });
    let mut functions: Vec<FunctionShare> = Vec::new();
    for (rank, f) in all.into_iter().enumerate() {
        if (rank < TOP_KEPT && f.samples_self > 0) || top_inclusive.contains(&f.name) {
            functions.push(f);
        }
    }
    let contention = contention::score(stacks.iter().filter(|s| !s.is_idle()), busy);
    SideProfile {
        side: side.side.clone(),
        cpus: side.cpus.clone(),
        samples,
        idle_samples,
        lost_samples: 0,
        throttled: 0,
        unresolved_kernel_frames,
        kernel_frames,
        functions,
        contention,
    }
}
