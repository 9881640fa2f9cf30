//! `bench --baseline`: the kernel floor ([`loadgen::floor`]) on the benchmark's CPUs, with the
//! kernel's `Tcp.ActiveOpens` read around it, stored as the record's [`Baseline`] and warnings.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use results::record::{Baseline, RunRecord};

/// Runs the floor on loopback for `duration` and stores it in `record`: the baseline (when the
/// peak phase measured `peak_rate`) and warnings for failed connects or fewer kernel
/// `Tcp.ActiveOpens` than connects counted.
///
/// # Errors
/// When the floor's listeners cannot be set up.
pub fn measure(
    record: &mut RunRecord,
    server_cpus: &[usize],
    load_cpus: &[usize],
    duration: Duration,
    peak_rate: Option<f64>,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    crate::output::note(&format!(
        "[baseline] kernel floor: blocking pair for {:.1} s",
        duration.as_secs_f64()
    ));
    let before = tuning::counters::Snapshot::read_current().ok();
    let f = loadgen::floor::run(
        std::net::Ipv4Addr::LOCALHOST.into(),
        server_cpus,
        load_cpus,
        duration,
        stop,
    )?;
    // The kernel's count of connects in the same time (the host namespace: other traffic may add).
    let active_opens = match (before, tuning::counters::Snapshot::read_current()) {
        (Some(b), Ok(a)) => a.delta(&b).get("Tcp.ActiveOpens"),
        _ => None,
    };
    if let Some(peak) = peak_rate {
        record.baseline = Some(Baseline {
            floor_per_sec: f.per_sec,
            ratio: if f.per_sec > 0.0 {
                peak / f.per_sec
            } else {
                0.0
            },
        });
    }
    record
        .warnings
        .extend(warnings(f.connections, f.failures, active_opens));
    Ok(())
}

/// The floor's warnings: the kernel counted fewer connects than the floor did (it never counts
/// fewer: each connect enters SYN-SENT, `Tcp.ActiveOpens`), or connects failed.
fn warnings(connections: u64, failures: u64, active_opens: Option<i64>) -> Vec<String> {
    let mut w = Vec::new();
    if let Some(k) = active_opens.filter(|&k| (k.max(0) as u64) < connections) {
        w.push(format!(
            "kernel floor: {connections} connects counted but the kernel's Tcp.ActiveOpens rose by only {k}"
        ));
    }
    if failures > 0 {
        w.push(format!("kernel floor: {failures} connect failures"));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewer_kernel_connects_and_failures_are_warned() {
        assert!(warnings(100, 0, Some(100)).is_empty());
        assert!(warnings(100, 0, Some(130)).is_empty(), "other traffic adds");
        assert!(warnings(100, 0, None).is_empty());
        assert_eq!(
            warnings(100, 2, Some(99)),
            [
                "kernel floor: 100 connects counted but the kernel's Tcp.ActiveOpens rose by only 99",
                "kernel floor: 2 connect failures"
            ]
        );
    }
}
