//! Per-worker counters: plain integers on the hot path, errors in the fixed per-errno table of
//! [`common::errno`], turned into names only at report time.

use std::collections::BTreeMap;

use common::errno::ErrnoCounts;

/// A worker's counters. No allocation, no atomics.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counts {
    /// Connections accepted.
    pub(crate) accepted: u64,
    /// Connections whose whole greeting (`greet`) or response (`http`) was written.
    pub(crate) served: u64,
    /// `Mode::Http`: connections whose head was not an HTTP/1.x request, closed unanswered.
    pub(crate) bad_requests: u64,
    /// EMFILE/ENFILE back-offs entered.
    pub(crate) emfile_backoffs: u64,
    /// Queued connections that could not be accepted before the listener closed.
    pub(crate) left_in_queue: u64,
    /// `--tls`: handshakes completed, resumed, failed.
    pub(crate) tls: crate::tls::TlsCounts,
    /// With steering: the sampled accepts' SO_INCOMING_CPU ([`crate::worker::Ctx::syn_cpu`]).
    pub(crate) syn_cpu: common::syncpu::SynCpuShare,
    errors: ErrnoCounts,
}

/// With steering (`--steer`), 1 accepted connection in this many per worker (its 1st, 17th,
/// 33rd, ... accept) has its SO_INCOMING_CPU read ([`crate::worker::Ctx::syn_cpu`]): a
/// getsockopt(2) costs well under 1 µs, and 1/16 of it per connection is lost in the noise of a
/// 5–30 µs connection. Without steering nothing is read.
pub(crate) const SYN_CPU_SAMPLE_EVERY: u64 = 16;

impl Counts {
    /// Counts one failure with a positive errno value.
    #[inline]
    pub(crate) fn error(&mut self, errno: i32) {
        self.errors.count(errno);
    }

    /// All failures so far.
    #[inline]
    pub(crate) fn errors_total(&self) -> u64 {
        self.errors.total()
    }

    /// How many times `errno` was counted.
    #[cfg(test)]
    pub(crate) fn error_count(&self, errno: i32) -> u64 {
        self.errors.get(errno)
    }

    /// The failures by errno name (`"EMFILE"`; [`common::errno::name`] spells unknown ones).
    pub(crate) fn error_names(&self) -> BTreeMap<String, u64> {
        self.errors.to_map()
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
        c.error(159);
        assert_eq!(c.errors_total(), 4);
        assert_eq!(c.error_count(libc::EMFILE), 2);
        let names = c.error_names();
        assert_eq!(names.get("EMFILE"), Some(&2));
        assert_eq!(names.get("ECONNABORTED"), Some(&1));
        assert_eq!(names.get("errno_159"), Some(&1));
        assert_eq!(names.len(), 3);
    }
}
