//! What a kernel profile cost the peak ([`profile_overhead`]): the pairs of an off/on check
//! (ABBA order, the same CPUs) turned into per-pair ratios, their medians and the
//! order-statistic interval of the rate ratio (as the paired baseline's,
//! `results::record::Paired`).

use crate::record::{OverheadPair, ProfileOverhead};

/// Builds the stored check from its `pairs` (run order), the profiled slices' `frequency_hz`
/// and `slice_secs`, at `confidence` (0.95).
pub fn profile_overhead(
    mut pairs: Vec<OverheadPair>,
    frequency_hz: u64,
    slice_secs: f64,
    confidence: f64,
) -> ProfileOverhead {
    for p in &mut pairs {
        p.rate_ratio = (p.off_per_sec > 0.0).then(|| p.on_per_sec / p.off_per_sec);
        p.cpu_ratio = match (p.off_us_per_conn, p.on_us_per_conn) {
            (Some(off), Some(on)) if off > 0.0 => Some(on / off),
            _ => None,
        };
    }
    let rates: Vec<f64> = pairs.iter().filter_map(|p| p.rate_ratio).collect();
    let cpus: Vec<f64> = pairs.iter().filter_map(|p| p.cpu_ratio).collect();
    ProfileOverhead {
        frequency_hz,
        slice_secs,
        median_rate_ratio: (!rates.is_empty()).then(|| super::median(&rates)),
        interval: super::paired::median_interval(&rates, confidence),
        median_cpu_ratio: (!cpus.is_empty()).then(|| super::median(&cpus)),
        pairs,
        confidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_medians_and_an_interval_from_six_pairs() {
        let pairs: Vec<OverheadPair> = [0.98, 0.97, 0.99, 1.0, 0.96, 0.98]
            .iter()
            .enumerate()
            .map(|(i, r)| OverheadPair {
                on_first: i % 2 == 1,
                off_per_sec: 100_000.0,
                on_per_sec: 100_000.0 * r,
                off_us_per_conn: Some(10.0),
                on_us_per_conn: Some(10.0 / r),
                ..OverheadPair::default()
            })
            .collect();
        let o = profile_overhead(pairs, 997, 2.0, 0.95);
        assert!((o.median_rate_ratio.unwrap() - 0.98).abs() < 1e-9);
        let i = o.interval.unwrap();
        assert_eq!((i.low, i.high), (0.96, 1.0));
        assert!(o.median_cpu_ratio.unwrap() > 1.0);
        let none = profile_overhead(Vec::new(), 997, 2.0, 0.95);
        assert_eq!((none.median_rate_ratio, none.interval), (None, None));
    }
}
