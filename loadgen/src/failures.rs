//! Failed attempts counted by errno in a fixed array (no allocation or formatting on the hot
//! path); turned into `"ECONNREFUSED" → count` maps only at report time.

use std::collections::BTreeMap;

use nix::errno::Errno;

/// Errno values 1..SLOTS are counted in their own slot; anything else in slot 0 (`"EUNKNOWN"`).
/// Linux errnos end at 133 (EHWPOISON, include/uapi/asm-generic/errno.h).
const SLOTS: usize = 160;

/// Failure counts by errno.
#[derive(Debug, Clone)]
pub struct Failures {
    counts: [u64; SLOTS],
}

impl Default for Failures {
    fn default() -> Self {
        Failures { counts: [0; SLOTS] }
    }
}

impl Failures {
    /// Counts one failure with `errno` (a positive errno value).
    #[inline]
    pub fn count(&mut self, errno: i32) {
        let i = usize::try_from(errno)
            .ok()
            .filter(|&i| i < SLOTS)
            .unwrap_or(0);
        self.counts[i] += 1;
    }

    /// All failures.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Adds another set of counts.
    pub fn add(&mut self, other: &Failures) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
    }

    /// Non-zero counts keyed by errno name (`"ECONNREFUSED"`, ...).
    pub fn to_map(&self) -> BTreeMap<String, u64> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| {
                (
                    if i == 0 {
                        "EUNKNOWN".to_string()
                    } else {
                        errno_name(i as i32)
                    },
                    c,
                )
            })
            .collect()
    }
}

/// The symbolic name of an errno value, e.g. `111` → `"ECONNREFUSED"` (`"E<n>"` when unknown).
pub fn errno_name(errno: i32) -> String {
    match Errno::from_raw(errno) {
        Errno::UnknownErrno => format!("E{errno}"),
        e => format!("{e:?}"),
    }
}

/// What a failure cause means for a connection-rate run and how to fix it, for the causes that
/// have a usual explanation; `None` otherwise.
pub fn explain(name: &str) -> Option<&'static str> {
    Some(match name {
        "EADDRNOTAVAIL" => {
            "port exhaustion: no free ephemeral port for (source IP, destination IP, destination port). \
             Remedies: more --source addresses (any 127.0.0.0/8 on loopback), more targets/ports, \
             --close rst or --close server (no TIME_WAIT on the client), a wider \
             net.ipv4.ip_local_port_range, or net.ipv4.tcp_tw_reuse=1"
        }
        "ECONNREFUSED" => "nothing listens on the target (RST in answer to the SYN): check the address and that the server runs",
        "ETIMEDOUT" => {
            "no handshake within --connect-timeout (counted from socket()): SYNs dropped (full accept queue or SYN queue, \
             see TcpExt.ListenOverflows) or the server is unreachable, or the handshake completed only after \
             the timeout (see 'completed only after --connect-timeout'); raise the backlog/somaxconn or the timeout"
        }
        "NEVER_ACCEPTED" => {
            "the handshake completed on the client but the server's kernel never created the connection \
             (its accept queue was full: see the kernel counters and the acceptance line below); \
             raise the server's backlog / net.core.somaxconn or make it accept faster"
        }
        "ECANCELED" => "still waiting for its handshake when the run was interrupted (Ctrl-C / SIGTERM)",
        "ECONNRESET" => "the server reset the connection (e.g. it closed a listener with queued connections, or SO_LINGER 0)",
        "EMFILE" => "per-process descriptor limit hit: raise RLIMIT_NOFILE (ulimit -n) or lower --max-in-flight",
        "ENFILE" => "system-wide descriptor limit hit: raise fs.file-max or lower --max-in-flight",
        "ENOBUFS" | "ENOMEM" => "the kernel ran out of socket memory: check net.ipv4.tcp_mem and free memory",
        "EHOSTUNREACH" | "ENETUNREACH" => "no route to the target: check the address and routing",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_name_and_merges() {
        let mut a = Failures::default();
        a.count(libc::ECONNREFUSED);
        a.count(libc::ECONNREFUSED);
        a.count(99_999);
        let mut b = Failures::default();
        b.count(libc::EADDRNOTAVAIL);
        a.add(&b);
        assert_eq!(a.total(), 4);
        let m = a.to_map();
        assert_eq!(m["ECONNREFUSED"], 2);
        assert_eq!(m["EADDRNOTAVAIL"], 1);
        assert_eq!(m["EUNKNOWN"], 1);
        assert!(explain("EADDRNOTAVAIL")
            .unwrap()
            .contains("port exhaustion"));
    }
}
