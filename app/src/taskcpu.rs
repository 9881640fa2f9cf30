//! CPU time of each side of a phase, from the libraries' APIs: every server worker publishes its
//! own thread CPU time in its stats slot ([`server::LiveStats::cpu_per_worker`], read before and
//! after the phase), and every load worker reports what it used over its run
//! ([`loadgen::LoadWorkerReport`] `cpu_run_ns` / `cpu_user_ns` / `cpu_sys_ns`). Both are read by
//! the thread itself (CLOCK_THREAD_CPUTIME_ID for the exact on-CPU time, getrusage(2)
//! RUSAGE_THREAD for the user/system split), so no thread name has to match between crates.

use server::{LiveStats, ThreadCpu};

/// User, system and exact on-CPU time of one side, ns ([`ThreadCpu`]: `run_ns` is the
/// scheduler's sum_exec_runtime; `user_ns`/`sys_ns` are tick samples on kernels without
/// CONFIG_VIRT_CPU_ACCOUNTING_GEN).
pub type Cpu = ThreadCpu;

/// CPU the server workers used between two readings of the same server's [`LiveStats`]; zero
/// without a server (or a reading). Idle workers publish every 50 ms, so the figure is at most
/// that stale, and as fresh as the accepted counts it was published with.
pub fn server(before: Option<&LiveStats>, after: Option<&LiveStats>) -> Cpu {
    match (before, after) {
        (Some(b), Some(a)) => a.cpu_since(b),
        _ => Cpu::default(),
    }
}

/// CPU the load workers used over their run (they live for one phase and report it at exit).
pub fn load(report: &loadgen::LoadReport) -> Cpu {
    report
        .workers
        .iter()
        .map(|w| Cpu {
            run_ns: w.cpu_run_ns,
            user_ns: w.cpu_user_ns,
            sys_ns: w.cpu_sys_ns,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(cpu: &[(u64, u64, u64)]) -> LiveStats {
        LiveStats {
            accepted_per_worker: vec![0; cpu.len()],
            errors_total: 0,
            cpu_per_worker: cpu
                .iter()
                .map(|&(run_ns, user_ns, sys_ns)| Cpu {
                    run_ns,
                    user_ns,
                    sys_ns,
                })
                .collect(),
            ..LiveStats::default()
        }
    }

    #[test]
    fn server_cpu_is_the_sum_of_each_workers_growth() {
        let before = stats(&[(100, 60, 40), (1_000, 500, 500)]);
        let after = stats(&[(350, 160, 190), (1_900, 800, 1_100)]);
        assert_eq!(
            server(Some(&before), Some(&after)),
            Cpu {
                run_ns: 250 + 900,
                user_ns: 100 + 300,
                sys_ns: 150 + 600
            }
        );
        assert_eq!(server(None, Some(&after)), Cpu::default());
    }
}
