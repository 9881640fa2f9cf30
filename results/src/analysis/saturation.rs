//! What limited a closed-loop peak: a side's own CPU time, or CPUs both sides share, or
//! nothing (more attempts in flight would raise the rate). Pure: CPU shares in, a verdict out.

use std::collections::BTreeMap;

/// Share of CPU time from which a side, or a CPU, counts as saturated, percent.
pub(crate) const SATURATED_PCT: f64 = 85.0;

/// What limited a closed-loop phase.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Saturation {
    /// One side's own CPU time reached [`SATURATED_PCT`] of its CPUs: `"load"` or `"server"`.
    Side(&'static str),
    /// The sides share CPUs and every benchmark CPU was at least [`SATURATED_PCT`] busy:
    /// `(cpu, busy %)` of each.
    Shared {
        /// Each CPU and its busy share, percent.
        busy: Vec<(usize, f64)>,
    },
    /// Nothing saturated: more attempts in flight would raise the rate.
    Neither,
}

/// Judges saturation from the sides' own CPU shares (`load_pct`, `server_pct`: their threads' CPU
/// time over wall time × their CPU count) or, when server and load CPUs overlap, from each CPU's
/// busy share (`busy_pct`, from /proc/stat): two sides each using half of the same two CPUs
/// show 50% apiece although the CPUs are full. Pure.
pub(crate) fn saturation(
    load_pct: f64,
    server_pct: Option<f64>,
    server_cpus: &[usize],
    load_cpus: &[usize],
    busy_pct: &BTreeMap<usize, f64>,
) -> Saturation {
    let Some(server_pct) = server_pct else {
        return if load_pct >= SATURATED_PCT {
            Saturation::Side("load")
        } else {
            Saturation::Neither
        };
    };
    let shared = server_cpus.iter().any(|c| load_cpus.contains(c));
    if shared && !busy_pct.is_empty() {
        let mut cpus: Vec<usize> = server_cpus.iter().chain(load_cpus).copied().collect();
        cpus.sort_unstable();
        cpus.dedup();
        let busy: Vec<(usize, f64)> = cpus
            .iter()
            .map(|c| (*c, busy_pct.get(c).copied().unwrap_or(0.0)))
            .collect();
        return if busy.iter().all(|b| b.1 >= SATURATED_PCT) {
            Saturation::Shared { busy }
        } else {
            Saturation::Neither
        };
    }
    if load_pct.max(server_pct) < SATURATED_PCT {
        Saturation::Neither
    } else if load_pct >= server_pct {
        Saturation::Side("load")
    } else {
        Saturation::Side("server")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_cpus_are_judged_per_cpu() {
        let busy = BTreeMap::from([(0, 97.0), (1, 96.0)]);
        // Issue 9: load 67%, server 30% of the same two CPUs, both 97% busy.
        assert_eq!(
            saturation(67.0, Some(30.0), &[0, 1], &[0, 1], &busy),
            Saturation::Shared {
                busy: vec![(0, 97.0), (1, 96.0)]
            }
        );
        let idle = BTreeMap::from([(0, 97.0), (1, 40.0)]);
        assert_eq!(
            saturation(67.0, Some(30.0), &[0, 1], &[0, 1], &idle),
            Saturation::Neither
        );
        // Separate CPUs: each side's own share decides.
        assert_eq!(
            saturation(95.0, Some(30.0), &[0], &[1], &busy),
            Saturation::Side("load")
        );
        assert_eq!(
            saturation(50.0, Some(90.0), &[0], &[1], &busy),
            Saturation::Side("server")
        );
        assert_eq!(
            saturation(50.0, Some(60.0), &[0], &[1], &busy),
            Saturation::Neither
        );
    }
}
