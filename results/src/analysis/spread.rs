//! Per-core truth a phase's totals hide: how evenly the server workers shared the accepts
//! ([`uneven_spread`], from [`AcceptSpread`]) and the NET_RX/NET_TX softirqs and `ksoftirqd`
//! time of each benchmark CPU ([`softirq_line`]).

use crate::record::{AcceptSpread, NetSoftirqs, PhaseRecord};
use std::collections::BTreeMap;

/// An accept spread is uneven when the busiest worker took more than this many times the mean.
///
/// Why 1.5: with a fair hash each worker's count is binomial, its standard deviation about
/// √mean, so at [`UNEVEN_MIN_MEAN`] accepts per worker the CV is at most 0.1 and the busiest of
/// N workers sits near mean × (1 + 0.1 × √(2 ln N)): 1.35 × for 480 workers. Above 1.5 × the
/// cause is not the hash's noise but the flows (few source ports or long-lived connections) or
/// the steering.
pub const UNEVEN_MAX_OVER_MEAN: f64 = 1.5;

/// Fewest accepts per worker (the mean) for [`uneven_spread`] to judge: below it, hash noise
/// alone can exceed [`UNEVEN_MAX_OVER_MEAN`].
pub const UNEVEN_MIN_MEAN: f64 = 100.0;

/// The spread of a phase's server workers: the stored one, or for records written before it was
/// kept, the one its worker rows imply.
pub fn accept_spread(p: &PhaseRecord) -> Option<AcceptSpread> {
    let s = p.server.as_ref()?;
    s.spread.or_else(|| s.compute_spread())
}

/// The warning for a phase whose accepts fell unevenly on its server workers: two or more
/// workers, at least [`UNEVEN_MIN_MEAN`] accepts each on average, and the busiest one above
/// [`UNEVEN_MAX_OVER_MEAN`] × the mean. `None` otherwise.
pub fn uneven_spread(p: &PhaseRecord) -> Option<String> {
    let spread = accept_spread(p)?;
    let server = p.server.as_ref()?;
    if spread.workers < 2
        || spread.mean < UNEVEN_MIN_MEAN
        || spread.max_over_mean <= UNEVEN_MAX_OVER_MEAN
    {
        return None;
    }
    let busiest = server.workers.iter().max_by_key(|w| w.accepted)?;
    Some(format!(
        "{}: accepts fell unevenly on the {} server workers: the one on CPU {} took {} accepts, {:.2} × the mean of {} (CV {:.2}; warned above {UNEVEN_MAX_OVER_MEAN} × with ≥ {UNEVEN_MIN_MEAN:.0} accepts per worker) — SO_REUSEPORT picks a worker by a hash of each connection's addresses and ports, so few or long-lived flows land unevenly; more flows in flight (--concurrency) or more source ports even it out, and that CPU's figures are the busiest worker's, not the average",
        p.name,
        spread.workers,
        busiest.cpu,
        crate::numfmt::count(busiest.accepted),
        spread.max_over_mean,
        crate::numfmt::fixed(spread.mean, 0),
        spread.cv,
    ))
}

/// The spread in one line: `accept spread over 4 server workers: max ÷ mean 1.08, CV 0.05`.
pub fn spread_line(s: &AcceptSpread) -> String {
    format!(
        "accept spread over {} server workers: max ÷ mean {:.2}, CV {:.2} (mean {} accepts per worker)",
        s.workers,
        s.max_over_mean,
        s.cv,
        crate::numfmt::fixed(s.mean, 0)
    )
}

/// The softirqs of a phase's CPUs in one line:
/// `softirqs per CPU (NET_RX / NET_TX / ksoftirqd CPU): cpu0 12,345 / 2 / 0.010 s; …`.
/// `None` when none was recorded.
pub fn softirq_line(per_cpu: &BTreeMap<usize, NetSoftirqs>) -> Option<String> {
    if per_cpu.is_empty() {
        return None;
    }
    let cells: Vec<String> = per_cpu
        .iter()
        .map(|(cpu, s)| {
            format!(
                "cpu{cpu} {} / {} / {}",
                crate::numfmt::count(s.net_rx),
                crate::numfmt::count(s.net_tx),
                s.ksoftirqd_ns.map_or_else(
                    || "n/a".to_string(),
                    |ns| format!("{:.3} s", ns as f64 / 1e9)
                )
            )
        })
        .collect();
    Some(format!(
        "softirqs per CPU (NET_RX / NET_TX / ksoftirqd CPU, warm-up included): {}",
        cells.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ServerSide, WorkerAccepts};

    fn phase(counts: &[u64]) -> PhaseRecord {
        let mut p = crate::record::RunRecord::example().phases[0].clone();
        p.name = "peak".into();
        p.server = Some(ServerSide {
            workers: counts
                .iter()
                .enumerate()
                .map(|(i, &accepted)| WorkerAccepts {
                    cpu: i,
                    accepted,
                    cpu_run_ns: None,
                })
                .collect(),
            ..ServerSide::default()
        });
        p
    }

    #[test]
    fn the_spread_of_known_counts() {
        // 100, 100, 100, 300: mean 150, max ÷ mean 2, σ = √((3 × 50² + 150²) / 4) = 86.6.
        let s = AcceptSpread::of(&[100, 100, 100, 300]).unwrap();
        assert_eq!(s.workers, 4);
        assert_eq!(s.mean, 150.0);
        assert_eq!(s.max_over_mean, 2.0);
        assert!((s.cv - 86.602_540_378 / 150.0).abs() < 1e-9, "{s:?}");
        let even = AcceptSpread::of(&[7, 7, 7]).unwrap();
        assert_eq!((even.max_over_mean, even.cv), (1.0, 0.0));
        assert_eq!(AcceptSpread::of(&[5]), None, "one worker spreads nothing");
        assert_eq!(AcceptSpread::of(&[0, 0]), None, "no accept, no mean");
        assert_eq!(AcceptSpread::of(&[]), None);
    }

    #[test]
    fn an_uneven_spread_warns_only_with_enough_accepts_and_workers() {
        let w = uneven_spread(&phase(&[100, 100, 100, 300])).expect("2 × the mean");
        assert!(w.starts_with("peak: accepts fell unevenly on the 4 server workers: the one on CPU 3 took 300 accepts, 2.00 × the mean of 150"), "{w}");
        // 1.5 × exactly is not above the threshold.
        assert_eq!(uneven_spread(&phase(&[150, 150, 300])), None);
        // Too few accepts per worker: hash noise.
        assert_eq!(uneven_spread(&phase(&[10, 10, 10, 30])), None);
        assert_eq!(uneven_spread(&phase(&[1_000])), None, "one worker");
        // A stored spread is what is judged.
        let mut p = phase(&[500, 500]);
        assert_eq!(uneven_spread(&p), None);
        p.server.as_mut().unwrap().spread = AcceptSpread::of(&[100, 900]);
        assert!(uneven_spread(&p).is_some());
    }

    #[test]
    fn the_softirq_line_names_each_cpu() {
        let mut m = BTreeMap::new();
        assert_eq!(softirq_line(&m), None);
        m.insert(
            0,
            NetSoftirqs {
                net_rx: 12_345,
                net_tx: 2,
                ksoftirqd_ns: Some(10_000_000),
            },
        );
        m.insert(3, NetSoftirqs::default());
        assert_eq!(
            softirq_line(&m).unwrap(),
            "softirqs per CPU (NET_RX / NET_TX / ksoftirqd CPU, warm-up included): cpu0 12,345 / 2 / 0.010 s; cpu3 0 / 0 / n/a"
        );
    }
}
