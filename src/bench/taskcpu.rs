//! CPU time of this process's threads, grouped by thread-name prefix (`accept-cpu*` = server
//! workers, `load-cpu*` = load workers), from `/proc/self/task/<tid>/stat` fields 14 and 15
//! (utime, stime in clock ticks, proc(5)). Sampled at phase boundaries, so the per-phase CPU of
//! each side is exact to a clock tick (10 ms at USER_HZ=100) without the workers doing anything.
//! Threads that ended between two samples are not seen; workers live for the whole phase.

use std::collections::BTreeMap;

/// User and system CPU time of one group of threads, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cpu {
    /// User-mode time.
    pub user_ns: u64,
    /// Kernel-mode time (syscalls and the softirq work the kernel charged to these threads).
    pub sys_ns: u64,
    /// On-CPU time, exact (first field of `/proc/<pid>/task/<tid>/schedstat`: the scheduler's
    /// sum_exec_runtime in ns; needs CONFIG_SCHED_INFO, else 0). user/sys above are tick samples
    /// on kernels without CONFIG_VIRT_CPU_ACCOUNTING_GEN.
    pub run_ns: u64,
}

/// Per-thread CPU times at one instant, keyed by tid.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    threads: BTreeMap<u32, (String, Cpu)>,
}

fn ticks_to_ns(ticks: u64) -> u64 {
    ticks.saturating_mul(super::procstat::tick_ns())
}

/// Reads every thread of this process. Unreadable threads (ended meanwhile) are skipped.
pub fn sample() -> Sample {
    let mut threads = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Sample { threads };
    };
    for entry in dir.flatten() {
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // comm is in parentheses and may contain spaces; fields after the last ')' are positional.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_string();
        let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // rest[0] is field 3 (state); utime is field 14, stime field 15.
        let (Some(u), Some(s)) = (rest.get(11), rest.get(12)) else {
            continue;
        };
        let (Ok(u), Ok(s)) = (u.parse::<u64>(), s.parse::<u64>()) else {
            continue;
        };
        let run_ns = std::fs::read_to_string(entry.path().join("schedstat"))
            .ok()
            .and_then(|t| {
                t.split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
            })
            .unwrap_or(0);
        threads.insert(
            tid,
            (
                name,
                Cpu {
                    user_ns: ticks_to_ns(u),
                    sys_ns: ticks_to_ns(s),
                    run_ns,
                },
            ),
        );
    }
    Sample { threads }
}

/// CPU used between `before` and `after` by threads whose name starts with `prefix`.
pub fn delta(before: &Sample, after: &Sample, prefix: &str) -> Cpu {
    let mut out = Cpu::default();
    for (tid, (name, cpu)) in &after.threads {
        if !name.starts_with(prefix) {
            continue;
        }
        let base = before.threads.get(tid).map(|(_, c)| *c).unwrap_or_default();
        out.user_ns += cpu.user_ns.saturating_sub(base.user_ns);
        out.sys_ns += cpu.sys_ns.saturating_sub(base.sys_ns);
        out.run_ns += cpu.run_ns.saturating_sub(base.run_ns);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_named_thread_is_counted_under_its_prefix() {
        let before = sample();
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::Builder::new()
            .name("load-cpu-test".into())
            .spawn(move || {
                let t = std::time::Instant::now();
                let mut x = 0u64;
                while t.elapsed() < std::time::Duration::from_millis(300) {
                    x = x.wrapping_add(std::hint::black_box(1));
                }
                let after = sample();
                tx.send(after).unwrap();
                rx_keepalive(x);
            })
            .unwrap();
        let after = rx.recv().unwrap();
        h.join().unwrap();
        let cpu = delta(&before, &after, "load-cpu");
        assert!(cpu.user_ns + cpu.sys_ns >= 100_000_000, "{cpu:?}");
        // The exact figure (schedstat) sees at least the 300 ms the thread spun, minus slack for
        // a preempted VM.
        assert!(cpu.run_ns >= 200_000_000, "{cpu:?}");
        assert_eq!(delta(&before, &after, "no-such-prefix"), Cpu::default());
    }

    fn rx_keepalive(_: u64) {}
}
