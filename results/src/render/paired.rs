//! The paired baseline in one line, for the bench summary and `bench --baseline`.

use crate::analysis::min_samples;
use crate::record::Paired;

/// One line for the bench summary: pairs, the median ratio and its interval (or why none), e.g.
/// `paired baseline: 6 pairs (ABBA, 2 s slices + 0.5 s warm-up, split): connstorm = 1.08 × floor
/// (median), 95% CI 0.91–1.25 × (order statistics k = 1, coverage 96.9%)`.
pub fn paired_line(p: &Paired) -> String {
    let ci = match &p.interval {
        Some(i) => format!(
            "{:.0}% CI {:.2}–{:.2} × (order statistics k = {}, coverage {:.1}%)",
            p.confidence * 100.0,
            i.low,
            i.high,
            i.k,
            i.coverage * 100.0
        ),
        None => format!(
            "no {:.0}% CI: it needs at least {} pairs with a floor",
            p.confidence * 100.0,
            min_samples(p.confidence)
        ),
    };
    format!(
        "paired baseline: {} pairs (ABBA, {} s slices + {} s warm-up, {}): connstorm = {:.2} × floor (median), {ci}",
        p.ratios.len(),
        p.slice_secs,
        p.warmup_secs,
        p.shape,
        p.median_ratio
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::abba_order;
    use crate::record::{Arm, Slice};

    fn slice(pair: usize, arm: Arm, per_sec: f64) -> Slice {
        Slice {
            pair,
            arm: Some(arm),
            per_sec,
            ..Slice::default()
        }
    }

    /// The record section round-trips through JSON.
    #[test]
    fn paired_round_trips_through_json() {
        let p = Paired::from_slices(
            abba_order(6)
                .into_iter()
                .map(|(i, a)| slice(i, a, 1.0 + i as f64))
                .collect(),
            0.95,
            2.0,
            0.5,
            "whole-machine",
        );
        assert!(
            paired_line(&p).contains("6 pairs (ABBA, 2 s slices + 0.5 s warm-up, whole-machine)"),
            "{}",
            paired_line(&p)
        );
        let s = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Paired>(&s).unwrap(), p);
    }
}
