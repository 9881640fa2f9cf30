//! NUMA placement of memory, for tests that check where per-worker memory landed:
//! [`page_node`] (the node of the page at an address, get_mempolicy(2)) and [`cpu_node`] (a
//! CPU's node, from sysfs).

use std::os::raw::{c_int, c_ulong};

/// get_mempolicy(2) flag: return the node, not the policy (include/uapi/linux/mempolicy.h,
/// `MPOL_F_NODE (1<<0)`).
const MPOL_F_NODE: c_ulong = 1;
/// get_mempolicy(2) flag: about the page at `addr` (`MPOL_F_ADDR (1<<1)`).
const MPOL_F_ADDR: c_ulong = 1 << 1;

/// The NUMA node of the page at address `addr` in this process (an address, never read here): get_mempolicy(2) with `MPOL_F_NODE |
/// MPOL_F_ADDR` ("returns the node ID of the node on which the address addr is allocated").
/// Call it on a page the process has written: the kernel faults in a page that is not present
/// (for a never-written anonymous page, the shared zero page, whose node says nothing).
/// `None` when the call fails (ENOSYS: a kernel without NUMA support).
pub fn page_node(addr: usize) -> Option<usize> {
    let mut node: c_int = -1;
    // SAFETY: get_mempolicy(2) with MPOL_F_NODE|MPOL_F_ADDR writes one int through its first
    // argument, `&mut node`, a live local int; `nodemask` is null with `maxnode` 0, so no mask is
    // written; `addr` is passed as a number and the kernel only looks up which page this process
    // maps there (EFAULT, reported as `None`, if none).
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut node as *mut c_int,
            std::ptr::null_mut::<c_ulong>(),
            0 as c_ulong,
            addr as *const libc::c_void,
            MPOL_F_NODE | MPOL_F_ADDR,
        )
    };
    (r == 0 && node >= 0).then_some(node as usize)
}

/// The NUMA node of `cpu`: the `nodeN` entry of `/sys/devices/system/cpu/cpuC/`; `None` when
/// there is none (a kernel without NUMA).
pub fn cpu_node(cpu: usize) -> Option<usize> {
    std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}"))
        .ok()?
        .flatten()
        .find_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("node"))
                .and_then(|n| n.parse().ok())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What per-worker memory relies on (docs/engines.md, "Per-worker memory"): a buffer a
    /// thread pinned to one CPU allocates and writes is on that CPU's node, on every usable CPU
    /// (on a one-node host every CPU's node is 0; on a multi-node host this tells them apart).
    #[test]
    fn first_touch_on_a_pinned_thread_lands_on_its_cpus_node() {
        for cpu in crate::allowed_cpus() {
            let (first, last, want) = std::thread::spawn(move || {
                let mut set = nix::sched::CpuSet::new();
                set.set(cpu).unwrap();
                nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).unwrap();
                // 8 MiB: above malloc's mmap threshold, fresh pages, every one written here.
                let mut buf = vec![0u8; 8 << 20];
                for b in buf.iter_mut().step_by(4096) {
                    *b = 1;
                }
                let n = buf.len();
                let got = (
                    page_node(buf.as_ptr() as usize),
                    page_node(&buf[n - 1] as *const u8 as usize),
                );
                std::hint::black_box(&buf);
                (got.0, got.1, cpu_node(cpu))
            })
            .join()
            .unwrap();
            match (first, last, want) {
                (Some(a), Some(b), Some(w)) => {
                    assert_eq!(
                        (a, b),
                        (w, w),
                        "CPU {cpu}: pages on nodes {a}, {b}, CPU on node {w}"
                    )
                }
                other => eprintln!("CPU {cpu}: no NUMA information here ({other:?}): not checked"),
            }
        }
    }
}
