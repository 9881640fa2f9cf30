//! Errno values by name, and a fixed table that counts failures by errno on a hot path (no
//! allocation, no formatting) and turns them into `"ECONNREFUSED" → count` maps at report time.
//! The server's accept errors and the load generator's connect failures are both counted and
//! named here, so one errno has one spelling in every report.

use std::collections::BTreeMap;

use nix::errno::Errno;

/// Errno values `1..SLOTS` are counted in their own slot. Linux errnos end at 133 (EHWPOISON,
/// include/uapi/asm-generic/errno.h), so the table has room to spare.
const SLOTS: usize = 160;

/// Name under which [`ErrnoCounts`] reports values outside `1..160` (0, negative, or larger than
/// any Linux errno): they share one slot and their value is not kept.
pub const OUT_OF_RANGE: &str = "errno_other";

/// The symbolic name of an errno value: `name(24) == "EMFILE"`, `name(111) == "ECONNREFUSED"`.
/// A value the C library has no name for is spelled `errno_<n>` (`name(159) == "errno_159"`),
/// the one spelling for unknown values in every connstorm report.
pub fn name(errno: i32) -> String {
    match Errno::from_raw(errno) {
        Errno::UnknownErrno => format!("errno_{errno}"),
        e => format!("{e:?}"),
    }
}

/// Failure counts by errno: a fixed array indexed by the errno value plus a running total.
/// `count` is two increments, cheap enough for an accept or connect loop.
#[derive(Debug, Clone)]
pub struct ErrnoCounts {
    counts: [u64; SLOTS],
    total: u64,
}

impl Default for ErrnoCounts {
    fn default() -> Self {
        ErrnoCounts {
            counts: [0; SLOTS],
            total: 0,
        }
    }
}

impl ErrnoCounts {
    /// Counts one failure with the positive errno value `errno`; values outside `1..160` share
    /// one slot, reported as [`OUT_OF_RANGE`].
    #[inline]
    pub fn count(&mut self, errno: i32) {
        let i = usize::try_from(errno)
            .ok()
            .filter(|&i| i < SLOTS)
            .unwrap_or(0);
        self.counts[i] += 1;
        self.total += 1;
    }

    /// All failures counted.
    #[inline]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// How many times `errno` was counted (0 for a value outside `1..160`).
    pub fn get(&self, errno: i32) -> u64 {
        usize::try_from(errno)
            .ok()
            .filter(|&i| i > 0)
            .and_then(|i| self.counts.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Adds another table's counts to this one.
    pub fn add(&mut self, other: &ErrnoCounts) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.total += other.total;
    }

    /// The non-zero counts keyed by [`name`] (values outside `1..160` under [`OUT_OF_RANGE`]).
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        self.counts
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(i, &c)| {
                let key = if i == 0 {
                    OUT_OF_RANGE.to_string()
                } else {
                    name(i as i32)
                };
                (key, c)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_have_their_c_name_and_unknown_ones_one_spelling() {
        assert_eq!(name(nix::libc::EMFILE), "EMFILE");
        assert_eq!(name(nix::libc::ECONNREFUSED), "ECONNREFUSED");
        assert_eq!(name(159), "errno_159");
        assert_eq!(name(-3), "errno_-3");
    }

    #[test]
    fn counts_by_name_merge_and_keep_their_total() {
        let mut a = ErrnoCounts::default();
        a.count(nix::libc::ECONNREFUSED);
        a.count(nix::libc::ECONNREFUSED);
        a.count(99_999);
        a.count(0);
        let mut b = ErrnoCounts::default();
        b.count(nix::libc::EADDRNOTAVAIL);
        b.count(159);
        a.add(&b);
        assert_eq!(a.total(), 6);
        assert_eq!(a.get(nix::libc::ECONNREFUSED), 2);
        assert_eq!(a.get(0), 0, "slot 0 is not errno 0");
        let m = a.to_map();
        assert_eq!(m["ECONNREFUSED"], 2);
        assert_eq!(m["EADDRNOTAVAIL"], 1);
        assert_eq!(m["errno_159"], 1);
        assert_eq!(m[OUT_OF_RANGE], 2);
        assert_eq!(m.values().sum::<u64>(), a.total());
    }
}
