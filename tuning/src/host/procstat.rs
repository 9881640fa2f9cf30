//! Per-CPU busy time from `/proc/stat` (proc(5): `cpuN user nice system idle iowait irq softirq
//! steal ...` in USER_HZ ticks), to tell how much of the benchmark's CPUs *other* work used during
//! a phase: busy time on those CPUs minus connstorm's own threads' CPU time. A benchmark that shares
//! its CPUs measures the sharing too, and says so.

use std::collections::BTreeMap;

/// Busy and steal time of one CPU, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// user + nice + system + irq + softirq (everything but idle, iowait and steal).
    pub busy_ns: u64,
    /// Time the hypervisor ran something else while this vCPU wanted to run.
    pub steal_ns: u64,
    /// Of `busy_ns`, time in softirq (the `softirq` column: NET_RX/NET_TX and the rest). Kernels
    /// without CONFIG_IRQ_TIME_ACCOUNTING charge softirq work done in a task's context (loopback
    /// delivery under `local_bh_enable`) to that task's system time instead, so this is a floor.
    pub softirq_ns: u64,
}

/// All CPUs at one instant.
pub type CpuTimes = BTreeMap<usize, CpuTime>;

/// Reads `/proc/stat`; an unreadable file gives an empty sample (the check is then skipped).
pub fn read_cpu_times() -> CpuTimes {
    std::fs::read_to_string("/proc/stat")
        .map(|t| parse_cpu_times(&t))
        .unwrap_or_default()
}

/// Length of one USER_HZ clock tick in ns (sysconf(_SC_CLK_TCK), read once; the unit of
/// /proc/stat and of utime/stime in `/proc/<pid>/task/<tid>/stat`).
pub(crate) fn tick_ns() -> u64 {
    static TICK: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICK.get_or_init(|| {
        let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .unwrap_or(100) as u64;
        1_000_000_000 / hz.max(1)
    })
}

/// Parses `/proc/stat` text.
pub(crate) fn parse_cpu_times(text: &str) -> CpuTimes {
    let tick = tick_ns();
    let mut out = CpuTimes::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(name) = f.next() else { continue };
        let Some(cpu) = name
            .strip_prefix("cpu")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let v: Vec<u64> = f.map(|x| x.parse().unwrap_or(0)).collect();
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        let busy = at(0) + at(1) + at(2) + at(5) + at(6);
        out.insert(
            cpu,
            CpuTime {
                busy_ns: busy * tick,
                steal_ns: at(7) * tick,
                softirq_ns: at(6) * tick,
            },
        );
    }
    out
}

/// Busy and steal time of `cpus` between two samples.
pub fn cpu_time_delta(before: &CpuTimes, after: &CpuTimes, cpus: &[usize]) -> CpuTime {
    let mut d = CpuTime::default();
    for c in cpus {
        if let (Some(b), Some(a)) = (before.get(c), after.get(c)) {
            d.busy_ns += a.busy_ns.saturating_sub(b.busy_ns);
            d.steal_ns += a.steal_ns.saturating_sub(b.steal_ns);
            d.softirq_ns += a.softirq_ns.saturating_sub(b.softirq_ns);
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_per_cpu_lines_only() {
        let t = "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 1 2 3 100 5 6 7 8 0 0\ncpu1 0 0 0 50 0 0 0 0\nintr 5\n";
        let s = parse_cpu_times(t);
        assert_eq!(s.len(), 2);
        let tick = tick_ns();
        assert_eq!(
            s[&0],
            CpuTime {
                busy_ns: (1 + 2 + 3 + 6 + 7) * tick,
                steal_ns: 8 * tick,
                softirq_ns: 7 * tick,
            }
        );
        let mut later = s.clone();
        later.get_mut(&0).unwrap().busy_ns += 5 * tick;
        assert_eq!(cpu_time_delta(&s, &later, &[0, 1]).busy_ns, 5 * tick);
        assert_eq!(cpu_time_delta(&s, &later, &[7]), CpuTime::default());
    }
}
