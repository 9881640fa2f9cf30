//! Kernel counters in a record: which ones matter, which ones mark drops, and what each means.
//!
//! Names are as the record stores them: `"Prefix.Name"` from `/proc/net/snmp` and
//! `/proc/net/netstat` (`"Tcp.ActiveOpens"`, `"TcpExt.ListenOverflows"`) and `"softnet.<field>"`
//! summed over CPUs from `/proc/net/softnet_stat`.

/// The counters the design names (docs/design.md): reports show them always, even at zero, in this
/// order.
pub const KEY_COUNTERS: [&str; 13] = [
    "TcpExt.ListenOverflows",
    "TcpExt.ListenDrops",
    "TcpExt.TCPReqQFullDrop",
    "TcpExt.TCPReqQFullDoCookies",
    "TcpExt.SyncookiesSent",
    "TcpExt.TCPSynRetrans",
    "TcpExt.TCPTimeWaitOverflow",
    "TcpExt.TCPBacklogDrop",
    "Tcp.ActiveOpens",
    "Tcp.PassiveOpens",
    "Tcp.AttemptFails",
    "Tcp.EstabResets",
    "softnet.dropped",
];

/// Whether a counter name denotes lost or retried handshakes (a different experiment): names
/// containing `Drop`, `Overflow`, `dropped`, `Retrans` or `ookies` (`SyncookiesSent`,
/// `TCPReqQFullDoCookies`).
pub fn is_drop_counter(name: &str) -> bool {
    ["Drop", "Overflow", "dropped", "Retrans", "ookies"]
        .iter()
        .any(|p| name.contains(p))
}

/// Whether a counter counts retransmissions (rather than drops).
pub fn is_retransmit_counter(name: &str) -> bool {
    name.contains("Retrans")
}

/// Short meanings, by full name. Retransmit meanings start with the retransmitted packet and
/// the word `retransmitted`, so [`describe_counter`] can insert the count after it.
const MEANINGS: &[(&str, &str)] = &[
    ("TcpExt.ListenOverflows", "accept queue full (listen backlog, capped by net.core.somaxconn): the final ACK of a handshake was dropped, the client retransmits it"),
    ("TcpExt.ListenDrops", "handshake packets dropped at a listener for any reason (includes every ListenOverflows and TCPReqQFullDrop)"),
    ("TcpExt.TCPReqQFullDrop", "SYN queue full without syncookies: SYN dropped (net.ipv4.tcp_max_syn_backlog, listen backlog)"),
    ("TcpExt.TCPReqQFullDoCookies", "SYN queue full: answered with a syncookie instead of queueing the SYN (net.ipv4.tcp_syncookies)"),
    ("TcpExt.SyncookiesSent", "SYN-ACKs sent as syncookies: the SYN queue overflowed, or net.ipv4.tcp_syncookies=2 sends them always (options like window scaling may be lost)"),
    ("TcpExt.SyncookiesFailed", "ACKs at a listener that did not validate as syncookies (a lost handshake only if our counts do not balance)"),
    ("TcpExt.TCPSynRetrans", "SYN or SYN-ACK retransmitted (a handshake packet was lost: ≥ 1 s on that handshake; or a SYN met an orphaned FIN_WAIT2 minisock of the same 4-tuple, left when a client RST raced the ACK of the server's FIN (TcpExt.TW counts such minisocks), which answers with an ACK, takes the client's RST and lets the SYN be resent after a few ms)"),
    ("TcpExt.TCPRetransFail", "retransmits the stack could not send (dropped on the way out, e.g. by netfilter or a full qdisc)"),
    ("TcpExt.EmbryonicRsts", "resets of handshakes not yet accepted (SYN_RECV requests), e.g. net.ipv4.tcp_abort_on_overflow=1 answering a final ACK at a full accept queue"),
    ("TcpExt.SyncookiesRecv", "ACKs that completed a handshake from a syncookie"),
    ("Tcp.RetransSegs", "segments retransmitted, SYN and SYN-ACK retransmits included (see TCPSynRetrans for the handshake ones)"),
    ("TcpExt.TCPTimeWaitOverflow", "net.ipv4.tcp_max_tw_buckets reached: a closing socket skipped TIME_WAIT"),
    ("TcpExt.TCPBacklogDrop", "socket backlog full while a thread held the socket lock: packet dropped"),
    ("TcpExt.TCPMinTTLDrop", "packet below the socket's minimum TTL (IP_MINTTL): dropped"),
    ("TcpExt.TCPDeferAcceptDrop", "final ACK without data on a TCP_DEFER_ACCEPT listener: dropped"),
    ("TcpExt.PFMemallocDrop", "packet in emergency memory (pfmemalloc) for a socket that may not use it: dropped"),
    ("TcpExt.TCPRcvQDrop", "receive queue over its memory limit: packet dropped"),
    ("TcpExt.TCPZeroWindowDrop", "packet arrived while the receive window was zero: dropped"),
    ("TcpExt.TCPOFODrop", "out-of-order packet over the receive memory limit: dropped"),
    ("Tcp.ActiveOpens", "connect() calls that sent a SYN (handshakes started on this side)"),
    ("Tcp.PassiveOpens", "handshakes completed by a listener (connections ready to accept)"),
    ("Tcp.AttemptFails", "handshakes that failed: SYN_SENT or SYN_RECV back to CLOSED (refused, reset, timed out)"),
    ("Tcp.EstabResets", "established connections reset (RST sent or received)"),
    ("nf_conntrack.drop", "new flows dropped because the namespace's conntrack table was full (net.netfilter.nf_conntrack_max)"),
    ("nf_conntrack.early_drop", "conntrack entries evicted to make room for new flows"),
    ("nf_conntrack.insert_failed", "conntrack insertions that lost a race"),
    ("softnet.dropped", "per-CPU input backlog full (net.core.netdev_max_backlog): packet dropped before the TCP stack saw it"),
    ("softnet.flow_limit_count", "RPS flow limit hit: packets of a heavy flow dropped from a full backlog (net.core.flow_limit_table_len)"),
    ("softnet.time_squeeze", "NAPI poll ran out of budget or time with work left (net.core.netdev_budget)"),
];

/// What a kernel counter counts, in a short phrase for people; `None` for counters connstorm
/// has no words for.
///
/// `name` is the record's full name (`"TcpExt.ListenOverflows"`, `"softnet.dropped"`); a bare
/// netstat/snmp name (`"ListenOverflows"`) is also accepted.
pub fn counter_meaning(name: &str) -> Option<&'static str> {
    MEANINGS
        .iter()
        .find(|(full, _)| {
            *full == name
                || (!name.contains('.') && full.rsplit_once('.').is_some_and(|(_, n)| n == name))
        })
        .map(|(_, m)| *m)
}

/// A counter's rise in words: retransmit counters with the count (`SYN or SYN-ACK retransmitted
/// 12 times (...)`), others their [`counter_meaning`] (the count is the reader's to print); a
/// counter without a meaning becomes `rose by N`.
pub fn describe_counter(name: &str, value: i64) -> String {
    let value = crate::numfmt::signed(value);
    match counter_meaning(name) {
        Some(m) if is_retransmit_counter(name) => match m.split_once("retransmitted") {
            Some((head, tail)) => format!("{head}retransmitted {value} times{tail}"),
            None => format!("{m}: {value}"),
        },
        Some(m) => m.to_string(),
        None if is_drop_counter(name) => {
            format!("rose by {value} (a drop, overflow or retransmit counter)")
        }
        None => format!("rose by {value}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_counter_has_a_meaning() {
        for k in KEY_COUNTERS {
            assert!(counter_meaning(k).is_some(), "{k}");
        }
        assert_eq!(
            counter_meaning("ListenOverflows"),
            counter_meaning("TcpExt.ListenOverflows")
        );
        assert_eq!(counter_meaning("TcpExt.NoSuchThing"), None);
    }

    #[test]
    fn retransmits_are_not_called_drops() {
        let s = describe_counter("TcpExt.TCPSynRetrans", 12);
        assert!(
            s.starts_with("SYN or SYN-ACK retransmitted 12 times (a handshake packet was lost: ≥ 1 s on that handshake; or a SYN met an orphaned FIN_WAIT2 minisock of the same 4-tuple"),
            "{s}"
        );
        assert!(!s.contains("accept queue"), "{s}");
        assert!(!s.contains("met a TIME_WAIT"), "{s}");
        let s = describe_counter("Tcp.RetransSegs", 4);
        assert!(s.contains("retransmitted 4 times"), "{s}");
        let s = describe_counter("TcpExt.TCPSynRetrans", 12_345);
        assert!(s.contains("retransmitted 12,345 times"), "{s}");
        assert_eq!(
            describe_counter("TcpExt.NoSuchDrop", 40_000),
            "rose by 40,000 (a drop, overflow or retransmit counter)"
        );
        let s = describe_counter("TcpExt.ListenOverflows", 3);
        assert!(s.starts_with("accept queue full"), "{s}");
        assert!(describe_counter("softnet.dropped", 1).contains("netdev_max_backlog"));
        assert!(describe_counter("TcpExt.TCPTimeWaitOverflow", 1).contains("tcp_max_tw_buckets"));
    }
}
