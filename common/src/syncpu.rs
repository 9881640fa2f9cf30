//! [`SynCpuShare`]: with CPU steering (`server --steer cpu`), the share of accepted connections
//! accepted on the CPU that processed their packets.

use serde::{Deserialize, Serialize};

/// Of the accepted connections a server sampled (1 in [`SynCpuShare::sample_every`] per worker,
/// its 1st accept included), how many had SO_INCOMING_CPU equal to the accepting worker's CPU.
///
/// SO_INCOMING_CPU of an accepted socket is the CPU that processed its latest packet before the
/// accept: the handshake's final ACK, which RSS/RPS hash (the same 4-tuple) to the CPU of its
/// SYN; on loopback, the client's CPU. A share near 1 means steering sent each flow to the
/// worker on its packets' CPU; near 0, every flow crossed CPUs between softirq and accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SynCpuShare {
    /// Accepted connections whose CPU was read (the share's denominator).
    pub sampled: u64,
    /// Of them, processed on the accepting worker's CPU (the numerator).
    pub same_cpu: u64,
    /// Sampled connections whose getsockopt(SO_INCOMING_CPU) failed (in neither count).
    pub unread: u64,
    /// One accepted connection in this many was sampled, per worker.
    pub sample_every: u64,
}

impl SynCpuShare {
    /// `same_cpu ÷ sampled`, in [0, 1]; `None` before any sample.
    pub fn share(&self) -> Option<f64> {
        (self.sampled > 0).then(|| self.same_cpu.min(self.sampled) as f64 / self.sampled as f64)
    }

    /// Sampled connections processed on another CPU than the accepting worker's.
    pub fn other_cpu(&self) -> u64 {
        self.sampled.saturating_sub(self.same_cpu)
    }

    /// Adds another worker's (or server's) counts; the sampling rate is kept when both agree,
    /// else the larger.
    pub fn add(&mut self, other: &SynCpuShare) {
        self.sampled += other.sampled;
        self.same_cpu += other.same_cpu;
        self.unread += other.unread;
        self.sample_every = self.sample_every.max(other.sample_every);
    }

    /// The samples a worker takes from `accepted` connections: its 1st, (1 + every)th, ...
    /// accept, so ⌈accepted ÷ every⌉ (every 0 = none).
    pub fn samples_of(accepted: u64, every: u64) -> u64 {
        if every == 0 {
            0
        } else {
            accepted.div_ceil(every)
        }
    }

    /// One line for reports: `accepted on their packets' CPU: 93.8% (15 of 16 sampled, 1 in 16)`.
    pub fn line(&self) -> String {
        let n = crate::numfmt::count;
        let share = match self.share() {
            Some(s) => format!("{:.1}%", s * 100.0),
            None => "n/a".to_string(),
        };
        let unread = if self.unread > 0 {
            format!(", {} unreadable", n(self.unread))
        } else {
            String::new()
        };
        format!(
            "accepted on the CPU that processed their packets (SO_INCOMING_CPU): {share} ({} of {} sampled connections, 1 in {}{unread})",
            n(self.same_cpu),
            n(self.sampled),
            self.sample_every
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_same_over_sampled_and_adds_up() {
        let none = SynCpuShare::default();
        assert_eq!(none.share(), None);
        let mut a = SynCpuShare {
            sampled: 16,
            same_cpu: 15,
            unread: 0,
            sample_every: 16,
        };
        assert_eq!(a.share(), Some(15.0 / 16.0));
        assert_eq!(a.same_cpu + a.other_cpu(), a.sampled);
        let b = SynCpuShare {
            sampled: 4,
            same_cpu: 0,
            unread: 1,
            sample_every: 16,
        };
        assert_eq!(b.share(), Some(0.0));
        a.add(&b);
        assert_eq!(
            (a.sampled, a.same_cpu, a.unread, a.other_cpu()),
            (20, 15, 1, 5)
        );
        assert_eq!(a.share(), Some(0.75));
        assert!(
            a.line()
                .contains("75.0% (15 of 20 sampled connections, 1 in 16, 1 unreadable)"),
            "{}",
            a.line()
        );
        // All on the worker's CPU: exactly 1.
        let all = SynCpuShare {
            sampled: 3,
            same_cpu: 3,
            unread: 0,
            sample_every: 1,
        };
        assert_eq!(all.share(), Some(1.0));
    }

    #[test]
    fn a_worker_samples_its_first_accept_and_every_nth_after() {
        assert_eq!(SynCpuShare::samples_of(0, 16), 0);
        assert_eq!(SynCpuShare::samples_of(1, 16), 1);
        assert_eq!(SynCpuShare::samples_of(16, 16), 1);
        assert_eq!(SynCpuShare::samples_of(17, 16), 2);
        assert_eq!(SynCpuShare::samples_of(5, 0), 0);
    }
}
