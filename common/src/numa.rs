//! Where a worker's memory lands (NUMA first touch): [`pinned_cpu`], the one CPU the calling
//! thread is pinned to, read by each server and load worker right after it allocated its
//! per-worker memory (rings, buffers, slot tables, histograms, stamp buffers) and kept in its
//! report (`alloc_cpu`), so a test (and a reader) can check that the memory was made on the
//! pinned thread.
//!
//! Linux places an anonymous page on the NUMA node of the CPU that first touches it (the default
//! local policy, Documentation/admin-guide/mm/numa_memory_policy.rst, "MPOL_DEFAULT"/"local
//! allocation"); a buffer allocated and written by a thread pinned to one CPU is on that CPU's
//! node (unless a cpuset or `numactl --membind` restricts the nodes). docs/engines.md
//! "Per-worker memory" lists what each worker allocates where.

use nix::sched::{sched_getaffinity, sched_getcpu, CpuSet};
use nix::unistd::Pid;

/// The CPU the calling thread runs on when its affinity is exactly that one CPU (it is pinned);
/// `None` when it may run on several CPUs (not pinned) or either read fails.
/// Two system calls (sched_getaffinity(2), getcpu(2)): call it once at set-up, never per
/// connection.
pub fn pinned_cpu() -> Option<usize> {
    let set = sched_getaffinity(Pid::from_raw(0)).ok()?;
    let mut only = None;
    for c in 0..CpuSet::count() {
        if set.is_set(c).unwrap_or(false) {
            if only.is_some() {
                return None;
            }
            only = Some(c);
        }
    }
    let now = sched_getcpu().ok()?;
    only.filter(|&c| c == now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sched::sched_setaffinity;

    /// A thread pinned to one CPU reads that CPU; one allowed on two CPUs reads none.
    #[test]
    fn pinned_cpu_is_the_one_cpu_of_a_pinned_thread_and_none_otherwise() {
        let cpus = crate::cpulist::usable();
        for &cpu in &cpus {
            let got = std::thread::spawn(move || {
                let mut set = CpuSet::new();
                set.set(cpu).unwrap();
                sched_setaffinity(Pid::from_raw(0), &set).unwrap();
                pinned_cpu()
            })
            .join()
            .unwrap();
            assert_eq!(got, Some(cpu));
        }
        if cpus.len() >= 2 {
            let (a, b) = (cpus[0], cpus[1]);
            let got = std::thread::spawn(move || {
                let mut set = CpuSet::new();
                set.set(a).unwrap();
                set.set(b).unwrap();
                sched_setaffinity(Pid::from_raw(0), &set).unwrap();
                pinned_cpu()
            })
            .join()
            .unwrap();
            assert_eq!(got, None, "allowed on {cpus:?}: not pinned");
        } else {
            eprintln!("the unpinned case needs two usable CPUs, this process has {cpus:?}");
        }
    }
}
