//! Reconciling the handshakes a client completed with the connections the server's kernel
//! created: a handshake the server never accepted is not a success.
//!
//! Why they differ (net/ipv4/tcp_minisocks.c `tcp_check_req`, tcp_ipv4.c `tcp_v4_syn_recv_sock`; RFC 9293 §3.5): connect(2) returns once the SYN-ACK arrived
//! and the client sent the final ACK. The server's kernel creates the connection (the child
//! socket, counted `Tcp.PassiveOpens` in `tcp_create_openreq_child`, net/ipv4/tcp_minisocks.c)
//! only when it processes that ACK, and it cannot when the accept queue is full: it counts
//! `TcpExt.ListenOverflows` and drops the ACK (or, with `net.ipv4.tcp_abort_on_overflow=1`,
//! answers RST: `TcpExt.EmbryonicRsts`). A handshake answered with a SYN cookie has no request
//! left on the server at all; its ACK is validated (`TcpExt.SyncookiesRecv`) and then meets the
//! same full queue. So `client handshakes − Δ Tcp.PassiveOpens` were never accepted.
//!
//! The figure is exact only when every passive open in the namespace belongs to this run (a
//! private network namespace with nothing else connecting); otherwise other connections add
//! passive opens and the shortfall is a lower bound.

use std::collections::BTreeMap;

use serde::Serialize;

/// How far the never-accepted count can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exactness {
    /// Every passive open in the namespace during the run was this run's: the count is exact.
    Exact,
    /// Other connections may have added passive opens: at least this many were never accepted.
    LowerBound,
}

/// One counter that names why handshakes were not accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AcceptanceCause {
    /// The counter, `"TcpExt.ListenOverflows"`.
    pub counter: String,
    /// Its rise during the run.
    pub delta: i64,
    /// What it means here, in words.
    pub words: &'static str,
}

/// The reconciliation of one run (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Acceptance {
    /// Handshakes the client completed (successes plus those seen after their timeout).
    pub client_handshakes: u64,
    /// Of those, connections the server's kernel created (Δ `Tcp.PassiveOpens`, at most
    /// `client_handshakes`).
    pub accepted: u64,
    /// `client_handshakes − accepted`: completed on the client, never accepted on the server.
    pub never_accepted: u64,
    /// Whether `never_accepted` is exact or a lower bound.
    pub exactness: Exactness,
    /// Passive opens beyond the client's handshakes (other connections in the namespace); 0 in
    /// a private namespace.
    pub other_passive_opens: u64,
    /// The counters that rose and name a cause, most specific first; empty when nothing was
    /// lost.
    pub causes: Vec<AcceptanceCause>,
}

/// Counters that explain a shortfall, in the order they are most specific, with their meaning
/// for a handshake the client completed.
const CAUSES: &[(&str, &str)] = &[
    (
        "TcpExt.EmbryonicRsts",
        "half-open connections reset on the server (with net.ipv4.tcp_abort_on_overflow=1 this is a full accept queue answering the final ACK with RST; otherwise an RST or unexpected segment met a request in SYN-RECV)",
    ),
    (
        "TcpExt.SyncookiesRecv",
        "handshakes completed by a SYN cookie (the SYN queue had overflowed, or tcp_syncookies=2); their ACK then needs room in the accept queue",
    ),
    (
        "TcpExt.SyncookiesFailed",
        "ACKs whose SYN cookie did not validate: the server dropped the handshake",
    ),
    (
        "TcpExt.ListenOverflows",
        "accept queue full (listen backlog, capped by net.core.somaxconn): the server dropped the final ACK, the client believes it is connected",
    ),
    (
        "TcpExt.TCPDeferAcceptDrop",
        "final ACK without data on a TCP_DEFER_ACCEPT listener: dropped",
    ),
    (
        "TcpExt.ListenDrops",
        "handshake packets dropped at a listener (a superset of ListenOverflows)",
    ),
];

/// Reconciles `client_handshakes` with the counter deltas of the server's namespace (`"Prefix.Name"`
/// → rise, as `tuning::counters::CounterDelta::to_map` gives them). `private`: nothing but this
/// run opens connections in that namespace (a private namespace, and the client's attempts equal
/// Δ `Tcp.ActiveOpens`).
///
/// A missing `Tcp.PassiveOpens` counts as 0 passive opens (all never accepted, a lower bound).
pub fn reconcile(
    client_handshakes: u64,
    delta: &BTreeMap<String, i64>,
    private: bool,
) -> Acceptance {
    let passive = delta.get("Tcp.PassiveOpens").copied().unwrap_or(0).max(0) as u64;
    let accepted = passive.min(client_handshakes);
    let other = passive.saturating_sub(client_handshakes);
    let exact = private && other == 0 && delta.contains_key("Tcp.PassiveOpens");
    let never_accepted = client_handshakes - accepted;
    let causes = if never_accepted == 0 {
        Vec::new()
    } else {
        CAUSES
            .iter()
            .filter_map(|&(counter, words)| {
                let d = delta.get(counter).copied().unwrap_or(0);
                (d > 0).then(|| AcceptanceCause {
                    counter: counter.to_string(),
                    delta: d,
                    words,
                })
            })
            .collect()
    };
    Acceptance {
        client_handshakes,
        accepted,
        never_accepted,
        exactness: if exact {
            Exactness::Exact
        } else {
            Exactness::LowerBound
        },
        other_passive_opens: other,
        causes,
    }
}

impl Acceptance {
    /// One line for people: `"1,132 of 10,000 handshakes were never accepted by the server (exact:
    /// ...)"`, or that all were accepted (counts with separators, [`crate::numfmt::count`]).
    pub fn summary(&self) -> String {
        let how = match self.exactness {
            Exactness::Exact => "exact: nothing else accepts connections in this network namespace",
            Exactness::LowerBound => {
                "a lower bound: other connections in this network namespace may add to Tcp.PassiveOpens"
            }
        };
        if self.never_accepted == 0 {
            format!(
                "all {} handshakes completed on the client were completed by the server's kernel too (Δ Tcp.PassiveOpens {}: it created each connection; whether the server application accept()ed them is not in the kernel's counters; {how})",
                crate::numfmt::count(self.client_handshakes),
                crate::numfmt::count(self.accepted + self.other_passive_opens)
            )
        } else {
            format!(
                "{} of {} handshakes completed on the client were never accepted by the server's kernel (Δ Tcp.PassiveOpens {}; {how})",
                crate::numfmt::count(self.never_accepted),
                crate::numfmt::count(self.client_handshakes),
                crate::numfmt::count(self.accepted + self.other_passive_opens)
            )
        }
    }
}

/// The note beside handshake percentiles and per-second lines when `never_accepted` (> 0)
/// handshakes completed on the client but the server never accepted them: those figures are
/// the client's view and include them (which handshakes were not accepted cannot be told from
/// the kernel's counters), while successes, rates and CPU per connection exclude them.
pub fn client_view_note(never_accepted: u64) -> String {
    format!(
        "the handshake percentiles and per-second lines are the client's: they include the {} handshakes the server never accepted (which ones cannot be told from the kernel's counters); successes, rates and CPU per connection do not",
        crate::numfmt::count(never_accepted)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
    }

    /// The case: a stopped server with backlog 8; 10000 client handshakes, 8868 passive
    /// opens, cookies and overflows named.
    #[test]
    fn shortfall_is_never_accepted_and_named_from_the_counters() {
        let d = delta(&[
            ("Tcp.PassiveOpens", 8868),
            ("TcpExt.ListenOverflows", 2400),
            ("TcpExt.SyncookiesRecv", 1132),
            ("TcpExt.ListenDrops", 2400),
            ("TcpExt.SyncookiesSent", 1200),
        ]);
        let a = reconcile(10_000, &d, true);
        assert_eq!((a.accepted, a.never_accepted), (8868, 1132));
        assert_eq!(a.exactness, Exactness::Exact);
        let names: Vec<&str> = a.causes.iter().map(|c| c.counter.as_str()).collect();
        assert_eq!(
            names,
            [
                "TcpExt.SyncookiesRecv",
                "TcpExt.ListenOverflows",
                "TcpExt.ListenDrops"
            ]
        );
        assert!(
            a.summary().starts_with("1,132 of 10,000 handshakes"),
            "{}",
            a.summary()
        );
        assert!(a.summary().contains("exact"), "{}", a.summary());
    }

    #[test]
    fn abort_on_overflow_is_named_first() {
        let d = delta(&[
            ("Tcp.PassiveOpens", 743),
            ("TcpExt.EmbryonicRsts", 51),
            ("TcpExt.ListenOverflows", 51),
        ]);
        let a = reconcile(794, &d, true);
        assert_eq!(a.never_accepted, 51);
        assert_eq!(a.causes[0].counter, "TcpExt.EmbryonicRsts");
        assert!(a.causes[0].words.contains("tcp_abort_on_overflow"));
    }

    #[test]
    fn everything_accepted_has_no_causes_even_with_drops() {
        let d = delta(&[("Tcp.PassiveOpens", 500), ("TcpExt.ListenOverflows", 3)]);
        let a = reconcile(500, &d, true);
        assert_eq!((a.accepted, a.never_accepted), (500, 0));
        assert!(a.causes.is_empty());
        assert!(a.summary().starts_with("all 500 handshakes"));
    }

    /// Outside a private namespace (or with other passive opens) the count is only a lower
    /// bound; passive opens above the handshakes are other connections, not ours.
    #[test]
    fn shared_namespace_gives_a_lower_bound() {
        let d = delta(&[("Tcp.PassiveOpens", 90)]);
        let a = reconcile(100, &d, false);
        assert_eq!((a.never_accepted, a.exactness), (10, Exactness::LowerBound));
        let d = delta(&[("Tcp.PassiveOpens", 130)]);
        let a = reconcile(100, &d, true);
        assert_eq!(
            (
                a.accepted,
                a.never_accepted,
                a.other_passive_opens,
                a.exactness
            ),
            (100, 0, 30, Exactness::LowerBound)
        );
        let a = reconcile(100, &BTreeMap::new(), true);
        assert_eq!(
            (a.never_accepted, a.exactness),
            (100, Exactness::LowerBound)
        );
        assert!(a.summary().contains("lower bound"));
    }
}
