//! Failed attempts counted by errno in a fixed array (no allocation or formatting on the hot
//! path; the table is [`common::errno::ErrnoCounts`]), turned into `"ECONNREFUSED" → count` maps
//! only at report time, and what each usual cause means.

/// Failure counts by errno: the workspace's one per-errno table ([`common::errno::ErrnoCounts`]:
/// values `1..160` in their own slot, anything else under [`common::errno::OUT_OF_RANGE`]),
/// named with [`common::errno::name`] (unknown values spelled `errno_<n>`).
pub type Failures = common::errno::ErrnoCounts;

/// What a failure cause means for a connection-rate run and how to fix it, for the causes that
/// have a usual explanation; `None` otherwise.
pub fn explain(name: &str) -> Option<&'static str> {
    Some(match name {
        "EADDRNOTAVAIL" => {
            "port exhaustion: no free ephemeral port for (source IP, destination IP, destination port). \
             Remedies: more --source addresses (any 127.0.0.0/8 on loopback), more targets/ports, \
             --close rst or --close server (no TIME_WAIT on the client), a wider \
             net.ipv4.ip_local_port_range, or net.ipv4.tcp_tw_reuse=1 with net.ipv4.tcp_timestamps=1 (reuse needs timestamps)"
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
        "ECONNRESET" | "EPIPE" => {
            "the server reset the connection after the handshake completed (a reset in SYN-SENT is ECONNREFUSED): \
             the server closes with SO_LINGER 0 (server --mode rst), closed a listener with queued connections, \
             or its accept queue was full with net.ipv4.tcp_abort_on_overflow=1 (then it never accepted the \
             connection: see the acceptance line where the server's counters are readable)"
        }
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
        assert_eq!(m[common::errno::OUT_OF_RANGE], 1);
        assert!(explain("EADDRNOTAVAIL")
            .unwrap()
            .contains("port exhaustion"));
    }
}
