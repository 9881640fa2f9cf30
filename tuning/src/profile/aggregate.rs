//! Symbolized callchains → one side's top functions and contention points (pure logic).

use std::collections::HashMap;

use super::contention;
pub use super::stack::{Frame, Space, Stack};
use super::{FunctionShare, SideCpus, SideProfile, TOP_KEPT};

/// Name of a kernel frame no kallsyms symbol covers.
pub const UNKNOWN_KERNEL: &str = "[unknown kernel]";
/// Name of a user frame of our process no ELF symbol covers.
pub const UNKNOWN_USER: &str = "[unknown user]";

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
