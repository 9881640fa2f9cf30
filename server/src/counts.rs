//! Per-worker counters: plain integers on the hot path, errors in a fixed array indexed by errno,
//! turned into names only at report time.

use std::collections::BTreeMap;

use nix::errno::Errno;

/// Size of the errno table; Linux errno values are below 134 (EHWPOISON = 133).
const ERRNO_SLOTS: usize = 160;

/// A worker's counters. No allocation, no atomics.
#[derive(Debug, Clone)]
pub struct Counts {
    /// Connections accepted.
    pub accepted: u64,
    /// EMFILE/ENFILE back-offs entered.
    pub emfile_backoffs: u64,
    /// Queued connections that could not be accepted before the listener closed.
    pub left_in_queue: u64,
    errors: [u64; ERRNO_SLOTS],
    errors_total: u64,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            accepted: 0,
            emfile_backoffs: 0,
            left_in_queue: 0,
            errors: [0; ERRNO_SLOTS],
            errors_total: 0,
        }
    }
}

impl Counts {
    /// Counts one failure with a positive errno value (out-of-range values share the last slot).
    #[inline]
    pub fn error(&mut self, errno: i32) {
        let i = usize::try_from(errno).unwrap_or(0).min(ERRNO_SLOTS - 1);
        self.errors[i] += 1;
        self.errors_total += 1;
    }

    /// All failures so far.
    pub fn errors_total(&self) -> u64 {
        self.errors_total
    }

    /// How many times `errno` was counted.
    pub fn error_count(&self, errno: i32) -> u64 {
        usize::try_from(errno)
            .ok()
            .and_then(|i| self.errors.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// The failures by errno name (`"EMFILE"`; unknown values as `"errno_N"`).
    pub fn error_names(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for (i, &n) in self.errors.iter().enumerate() {
            if n > 0 {
                m.insert(errno_name(i as i32), n);
            }
        }
        m
    }
}

/// The symbolic name of an errno value, e.g. `errno_name(24) == "EMFILE"`.
pub fn errno_name(errno: i32) -> String {
    match Errno::from_raw(errno) {
        Errno::UnknownErrno => format!("errno_{errno}"),
        e => format!("{e:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_counted_by_name() {
        let mut c = Counts::default();
        c.error(libc::EMFILE);
        c.error(libc::EMFILE);
        c.error(libc::ECONNABORTED);
        assert_eq!(c.errors_total(), 3);
        assert_eq!(c.error_count(libc::EMFILE), 2);
        let names = c.error_names();
        assert_eq!(names.get("EMFILE"), Some(&2));
        assert_eq!(names.get("ECONNABORTED"), Some(&1));
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn unknown_errno_has_a_numeric_name() {
        assert_eq!(errno_name(159), "errno_159");
        assert_eq!(errno_name(libc::ENFILE), "ENFILE");
    }
}
