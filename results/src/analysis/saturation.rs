//! What limited a phase: for a closed-loop peak, a side's own CPU time, or CPUs both sides
//! share, or nothing (more attempts in flight would raise the rate) ([`saturation`]); for an
//! open-loop step, whether the load generator itself reached its limit ([`client_limits`]: its
//! CPUs near 100%, late starts, a schedule it could not keep), so that a figure the generator set
//! is never called the server's. Pure: records in, verdicts out.

use std::collections::BTreeMap;

use crate::record::{Pattern, PhaseRecord, RunRecord, SideCpu};

/// Share of CPU time from which a side, or a CPU, counts as saturated, percent.
pub const SATURATED_PCT: f64 = 85.0;

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

/// A side's CPU use over a phase: its threads' on-CPU time, less the load workers' spin before
/// due starts (waiting, not work: [`SideCpu::spin_ns`]), over wall time × its CPUs, percent,
/// at most 100 (a thread's CPU time read a little after the window's end, or tick-sampled
/// user/sys, can pass the wall time by a tick); 0 with no capacity.
pub fn side_busy_pct(c: &SideCpu) -> f64 {
    let cap = c.wall_ns as f64 * c.cpus as f64;
    if cap > 0.0 {
        let on_cpu = c.run_ns.unwrap_or(c.user_ns + c.sys_ns);
        (on_cpu.saturating_sub(c.spin_ns.unwrap_or(0)) as f64 / cap * 100.0).min(100.0)
    } else {
        0.0
    }
}

/// The load workers' spin before due starts ([`SideCpu::spin_ns`]) as a percentage of the
/// side's CPU capacity (wall time × its CPUs); 0 without a spin or capacity.
pub(crate) fn side_spin_pct(c: &SideCpu) -> f64 {
    let cap = c.wall_ns as f64 * c.cpus as f64;
    match c.spin_ns {
        Some(spin) if cap > 0.0 => (spin as f64 / cap * 100.0).min(100.0),
        _ => 0.0,
    }
}

/// Share of an open-loop phase's intended starts made late (after the late threshold, 1 ms by
/// default) above which the generator did not keep its schedule: 1% (the load generator's own
/// warning threshold). Beyond it a p99 is the generator's lag as much as the server's latency.
pub const LATE_LIMIT: f64 = 0.01;

/// Why the load generator, not the server, may have set an open-loop phase's figures: empty
/// when it kept up. Each entry names the cause with its number:
/// - `load CPU 98%`: the load workers' own CPU time reached [`SATURATED_PCT`] of their CPUs;
/// - `load CPUs [1] 97% busy, shared with the server` / `load CPUs [1] 100% busy (the load's
///   own share 32%: other work)`: the load CPUs (from /proc/stat) were at least
///   [`SATURATED_PCT`] busy — the generator got no more;
/// - `12.3% of starts late, generator lag p99 3.21 ms`: more than [`LATE_LIMIT`] of the
///   starts were made behind schedule;
/// - `the generator fell behind its schedule`: the phase's schedule warning said so (starts
///   dropped because the generator, not a slow server, could not make them).
///
/// Closed-loop phases get none (their rate is whatever the loop reached; `saturation` judges
/// them).
pub fn client_limits(rec: &RunRecord, p: &PhaseRecord) -> Vec<String> {
    let mut why = Vec::new();
    if !matches!(p.pattern, Pattern::Open { .. }) {
        return why;
    }
    let own = side_busy_pct(&p.cpu.load);
    if own >= SATURATED_PCT {
        why.push(format!("load CPU {own:.0}%"));
    } else {
        let load_cpus = &rec.run.load_cpus;
        let busy: Vec<f64> = load_cpus
            .iter()
            .filter_map(|c| p.cpu_busy_pct.get(c).copied())
            .collect();
        if !busy.is_empty() {
            // /proc/stat counts the load's spin before due starts as busy: it is the load's own
            // waiting, not other work, and left out like its share of `own`.
            let spin = side_spin_pct(&p.cpu.load);
            let mean = (busy.iter().sum::<f64>() / busy.len() as f64 - spin).max(0.0);
            if mean >= SATURATED_PCT {
                let shared = load_cpus.iter().any(|c| rec.run.server_cpus.contains(c));
                why.push(format!(
                    "load CPUs [{}] {mean:.0}% busy{}",
                    common::cpulist::format(load_cpus),
                    if shared {
                        ", shared with the server".to_string()
                    } else {
                        format!(" (the load's own share {own:.0}%: other work)")
                    }
                ));
            }
        }
    }
    let intended = p.attempts + p.dropped;
    if intended > 0 && p.late as f64 / intended as f64 > LATE_LIMIT {
        let lag = p
            .histograms
            .generator_lag
            .as_deref()
            .and_then(|h| crate::record::decode_histogram(h).ok())
            .filter(|h| !h.is_empty())
            .map(|h| {
                format!(
                    ", generator lag p99 {}",
                    crate::numfmt::ns(h.value_at_quantile(0.99) as f64)
                )
            })
            .unwrap_or_default();
        why.push(format!(
            "{} of starts late{lag}",
            crate::numfmt::pct(p.late as f64 / intended as f64)
        ));
    }
    let behind = format!("{}: the generator fell behind", p.name);
    let saturated = format!("{}: ", p.name);
    if rec.warnings.iter().any(|w| {
        w.starts_with(&behind) || (w.starts_with(&saturated) && w.contains("was saturated too"))
    }) {
        why.push("the generator fell behind its schedule".into());
    }
    why
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

#[cfg(test)]
mod client {
    use super::*;

    /// A sweep step of the example record with the load side `load_pct` busy and `late` of
    /// 10,000 starts late.
    fn step(load_pct: u64, late: u64) -> (RunRecord, PhaseRecord) {
        let mut rec = RunRecord::example();
        rec.run.server_cpus = vec![0];
        rec.run.load_cpus = vec![1];
        let mut p = rec.phases[1].clone();
        p.name = "step-6".into();
        p.attempts = 10_000;
        p.dropped = 0;
        p.late = late;
        p.cpu.load =
            SideCpu::new(0, 0, 1_000_000_000, 1, 10_000).with_run_ns(load_pct * 10_000_000, 10_000);
        p.cpu_busy_pct = BTreeMap::from([(0, 50.0), (1, load_pct as f64)]);
        p.histograms.generator_lag = None;
        rec.warnings.clear();
        (rec, p)
    }

    /// Issue 37: a sweep step at 98.3% load CPU (server 49.8%) was the knee. Its generator is
    /// named as the limit; a step with CPU to spare and its schedule kept is not.
    #[test]
    fn a_saturated_or_late_generator_limits_the_step() {
        let (rec, p) = step(98, 0);
        assert_eq!(client_limits(&rec, &p), ["load CPU 98%"]);
        let (rec, p) = step(40, 370);
        assert_eq!(client_limits(&rec, &p), ["3.7% of starts late"]);
        let (rec, p) = step(40, 100);
        assert!(
            client_limits(&rec, &p).is_empty(),
            "1% late is not above 1%"
        );
        // The load's CPU shared with the server and full: the generator got no more.
        let (mut rec, mut p) = step(60, 0);
        rec.run.server_cpus = vec![0, 1];
        p.cpu_busy_pct.insert(1, 97.0);
        assert_eq!(
            client_limits(&rec, &p),
            ["load CPUs [1] 97% busy, shared with the server"]
        );
        // The schedule warning of this step (not another's) counts.
        let (mut rec, p) = step(40, 0);
        rec.warnings
            .push("step-5: the generator fell behind its schedule: …".into());
        assert!(client_limits(&rec, &p).is_empty());
        rec.warnings
            .push("step-6: the generator fell behind its schedule: …".into());
        assert_eq!(
            client_limits(&rec, &p),
            ["the generator fell behind its schedule"]
        );
        // A closed loop is judged by `saturation`, not here.
        let (rec, _) = step(98, 0);
        assert!(client_limits(&rec, &rec.phases[0]).is_empty());
    }

    /// A sweep step at 66% on CPU, 39% of it the spin before due starts (`--spin auto`), on a
    /// load CPU /proc/stat saw 95% busy: the spin is the load's own waiting, so 27% work and
    /// 39% spin leave 29% of other work, not saturation; with 90% of other work it is.
    #[test]
    fn the_generators_own_spin_is_not_other_work() {
        let (rec, mut p) = step(66, 0);
        p.cpu.load = p.cpu.load.with_spin_ns(390_000_000, 10_000);
        p.cpu_busy_pct.insert(1, 95.0);
        assert_eq!(side_spin_pct(&p.cpu.load), 39.0);
        assert!(
            client_limits(&rec, &p).is_empty(),
            "{:?}",
            client_limits(&rec, &p)
        );
        p.cpu_busy_pct.insert(1, 100.0);
        p.cpu.load = SideCpu::new(0, 0, 1_000_000_000, 1, 10_000)
            .with_run_ns(100_000_000, 10_000)
            .with_spin_ns(50_000_000, 10_000);
        assert_eq!(
            client_limits(&rec, &p),
            ["load CPUs [1] 95% busy (the load's own share 5%: other work)"]
        );
    }
}
