//! A symbolized callchain: its frames (kernel or user) and how many samples had it, the data
//! that aggregation and the contention table both read (neither imports the other for it).

use serde::{Deserialize, Serialize};

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
    /// Function name (see [`FunctionShare::name`](super::FunctionShare::name)).
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
