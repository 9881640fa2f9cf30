//! What `connstorm merge` prints of the merged record.

use crate::record::PhaseRecord;

/// What `connstorm merge` says of a merged phase, in the numbers' one format ([`crate::numfmt`],
/// as the bench summary): `phase load: 24,000 successes in 3.000 s: 480,000 CPM = 8,000 conn/s`,
/// or that nothing was measured.
pub fn merged_phase_line(p: &PhaseRecord) -> String {
    match (p.cpm, p.achieved_per_sec) {
        (Some(cpm), Some(per_sec)) => format!(
            "phase {}: {} successes in {} s: {} CPM = {} conn/s",
            p.name,
            crate::numfmt::count(p.successes),
            crate::numfmt::fixed(p.measured_secs, 3),
            crate::numfmt::fixed(cpm, 0),
            crate::numfmt::fixed(per_sec, 0)
        ),
        _ => format!(
            "phase {}: nothing measured — no connection succeeded in {} s",
            p.name,
            crate::numfmt::fixed(p.measured_secs, 3)
        ),
    }
}
