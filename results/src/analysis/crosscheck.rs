//! The cross-check of one phase: our counts against the kernel's counter deltas, as stored in
//! [`CrossCheck`].
//!
//! What is compared (Documentation/networking/snmp_counter.rst, "Tcp ActiveOpens / PassiveOpens"; net/ipv4/tcp_minisocks.c `tcp_check_req`):
//! - SYNs we sent (attempts minus those that failed before a SYN left, [`PRE_SYN_FAILURES`])
//!   against `Tcp.ActiveOpens`, which `tcp_connect` counts when a socket enters SYN-SENT;
//! - connections our server accepted against `Tcp.PassiveOpens`, which the server's kernel
//!   counts when it creates the child socket (`tcp_create_openreq_child`);
//! - handshakes the client completed against the server's accepts: fewer accepts are handshakes
//!   the server never accepted, counted in their own failure class, and the counts do not agree
//!   (a handshake the client counted and the server did not is not a balanced count, even when
//!   the kernel's counters say where it went); more accepts balance only with attempts
//!   abandoned at Ctrl-C.
//!
//! In two private namespaces (`exact`) every count must be equal. In the host namespace other
//! processes add to the kernel's counters: a kernel count above ours agrees when other traffic
//! explains it — other failed connects (`Tcp.AttemptFails` beyond ours) and passive opens our
//! server did not make — plus a tolerance of [`host_tolerance`]; a kernel count below ours never
//! agrees.

use std::collections::BTreeMap;

use crate::numfmt::count;
use crate::record::CrossCheck;

/// Failure classes (errno names) of attempts that failed before their SYN left, so the kernel's
/// `Tcp.ActiveOpens` did not count them: no socket (EMFILE, ENFILE, ENOBUFS), no local port
/// (EADDRNOTAVAIL, EADDRINUSE) or no route (ENETUNREACH: `tcp_v4_connect` returns it when
/// `ip_route_connect` fails, before `tcp_connect`, and counts `Ip.OutNoRoutes`; e.g. loopback
/// down in a fresh namespace. An ICMP net-unreachable answering a SYN that did leave gives the
/// same errno; on the loopback and namespace paths this tool measures that does not happen).
pub const PRE_SYN_FAILURES: [&str; 6] = [
    "EADDRNOTAVAIL",
    "EMFILE",
    "ENFILE",
    "ENOBUFS",
    "EADDRINUSE",
    "ENETUNREACH",
];

/// One phase's counts, ours and the kernel's, over the whole phase (warm-up included: the kernel
/// counts it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrossCheckCounts {
    /// Server and load ran in private namespaces: every count must be equal.
    pub exact: bool,
    /// Attempts the load generator started.
    pub attempts: u64,
    /// Attempts that failed before their SYN left ([`pre_syn_failures`]).
    pub pre_syn_failures: u64,
    /// Handshakes the load generator completed.
    pub successes: u64,
    /// Attempts abandoned at an interrupt (their handshake may have completed on the server).
    pub abandoned: u64,
    /// The load was interrupted (Ctrl-C, SIGTERM).
    pub interrupted: bool,
    /// Connections our server accepted; `None` when the server is not ours (`--target`).
    pub server_accepted: Option<u64>,
    /// Δ `Tcp.PassiveOpens` in the server's namespace; `None` when unreadable.
    pub passive_opens: Option<i64>,
    /// Δ `Tcp.ActiveOpens` in the load generator's namespace; `None` when unreadable.
    pub active_opens: Option<i64>,
    /// Δ `Tcp.AttemptFails` in the server's namespace (the host's without namespaces); `None`
    /// when unreadable.
    pub attempt_fails: Option<i64>,
}

/// Sum of the [`PRE_SYN_FAILURES`] classes in a failure map (class → count).
pub fn pre_syn_failures(failures: &BTreeMap<String, u64>) -> u64 {
    PRE_SYN_FAILURES
        .iter()
        .map(|n| failures.get(*n).copied().unwrap_or(0))
        .sum()
}

/// How far a kernel count may exceed ours in the host namespace beyond what other traffic
/// explains: 0.1% of ours, at least 20 (other processes' connects the counters above do not
/// name, e.g. a connect still in SYN-SENT at the phase's end).
pub(crate) fn host_tolerance(ours: u64) -> u64 {
    (ours / 1000).max(20)
}

/// Compares one pair; pushes a note and clears `agree` when they disagree (see the module docs).
fn compare(
    exact: bool,
    what: &str,
    ours: u64,
    kernel: Option<i64>,
    explained: u64,
    advice: &str,
    notes: &mut Vec<String>,
    agree: &mut bool,
) {
    let Some(k) = kernel else {
        notes.push(format!("{what}: kernel counter unavailable"));
        return;
    };
    let k = k.max(0) as u64;
    let (ours_s, k_s) = (count(ours), count(k));
    if exact {
        if k != ours {
            *agree = false;
            notes.push(format!("{what}: ours {ours_s} != kernel {k_s}"));
        }
    } else if k < ours {
        *agree = false;
        notes.push(format!(
            "{what}: ours {ours_s} > kernel {k_s}: we counted something the kernel did not"
        ));
    } else if k - ours > explained + host_tolerance(ours) {
        *agree = false;
        notes.push(format!(
            "{what}: kernel {k_s} exceeds ours {ours_s} by {} — more than other processes' traffic explains ({}); {advice}",
            count(k - ours),
            count(explained)
        ));
    } else if k > ours {
        notes.push(format!(
            "{what}: kernel {k_s} = ours {ours_s} + {} from other processes in the host namespace",
            count(k - ours)
        ));
    }
}

/// The cross-check of one phase (see the module docs). Pure.
pub fn cross_check(c: &CrossCheckCounts) -> CrossCheck {
    let syns_sent = c.attempts.saturating_sub(c.pre_syn_failures);
    let successes = c.successes;
    let mut notes = Vec::new();
    let mut agree = true;
    // Other processes' traffic in the host namespace: what the kernel counted beyond us is
    // explained when it matches connects that failed (AttemptFails) or were accepted by someone
    // else (PassiveOpens beyond our server's accepts).
    let our_failed_after_syn = syns_sent.saturating_sub(successes);
    let other_fails =
        (c.attempt_fails.unwrap_or(0).max(0) as u64).saturating_sub(our_failed_after_syn);
    let other_passive = match (c.passive_opens, c.server_accepted) {
        (Some(p), Some(a)) => (p.max(0) as u64).saturating_sub(a),
        _ => 0,
    };
    compare(
        c.exact,
        "connects started vs Tcp.ActiveOpens",
        syns_sent,
        c.active_opens,
        other_fails + other_passive,
        // With an external target (`--target`) our server is not in the run: a target on this
        // host in this namespace (a proxy's upstream connects) counts in Tcp.ActiveOpens too,
        // and --netns, which puts our own server beside the load, does not apply.
        if c.server_accepted.is_some() {
            "rerun with --netns for an exact check"
        } else {
            "a target in this network namespace counts its own outgoing connects here too (a \
             proxy's upstream connects): run the target in another namespace or host for an \
             exact check"
        },
        &mut notes,
        &mut agree,
    );
    if let Some(acc) = c.server_accepted {
        compare(
            c.exact,
            "server accepts vs Tcp.PassiveOpens",
            acc,
            c.passive_opens,
            other_passive,
            "rerun with --netns for an exact check",
            &mut notes,
            &mut agree,
        );
        if acc < successes {
            // The server is ours and drains its queues before we count: a handshake the client
            // completed but the server never accepted (reset after the handshake, or final ACK
            // dropped at a full accept queue) is a failure, and the two counts disagree.
            agree = false;
            notes.push(format!(
                "{} of {} handshakes completed on the client were never accepted by the server: counted as failures \"{}\", not successes",
                count(successes - acc),
                count(successes),
                crate::record::NEVER_ACCEPTED
            ));
        } else if acc != successes {
            if c.interrupted && acc - successes <= c.abandoned {
                // Ctrl-C abandoned attempts whose handshake the server side had completed.
                notes.push(format!(
                    "interrupted: {} of the {} attempts abandoned at Ctrl-C had completed their handshake on the server side",
                    count(acc - successes),
                    count(c.abandoned)
                ));
            } else {
                // Each handshake the client completed must have been accepted (we drain the
                // queue).
                agree = false;
                notes.push(format!(
                    "server accepted {} but the load completed only {} handshakes",
                    count(acc),
                    count(successes)
                ));
            }
        }
    }
    let note = if notes.is_empty() {
        if c.exact {
            "exact: server accepts = load handshakes = PassiveOpens; SYNs sent = ActiveOpens (private namespaces)".to_string()
        } else {
            "equal to this network namespace's counters, which other traffic could share (none showed during the phase)".to_string()
        }
    } else {
        notes.join("; ")
    };
    CrossCheck {
        server_accepted: c.server_accepted,
        load_successes: successes,
        kernel_passive_opens: c.server_accepted.and(c.passive_opens),
        kernel_active_opens: c.active_opens,
        agree,
        note,
        load_attempts: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A balanced phase with our own server: 1000 attempts, 990 handshakes accepted, 10 refused
    /// after their SYN left.
    fn balanced(exact: bool) -> CrossCheckCounts {
        CrossCheckCounts {
            exact,
            attempts: 1000,
            pre_syn_failures: 0,
            successes: 990,
            abandoned: 0,
            interrupted: false,
            server_accepted: Some(990),
            passive_opens: Some(990),
            active_opens: Some(1000),
            attempt_fails: Some(10),
        }
    }

    #[test]
    fn exact_balance_agrees_and_says_so() {
        let x = cross_check(&balanced(true));
        assert!(x.agree, "{}", x.note);
        assert!(x.note.starts_with("exact: server accepts"), "{}", x.note);
        assert_eq!(x.server_accepted, Some(990));
        assert_eq!(x.kernel_passive_opens, Some(990));
        assert_eq!(x.kernel_active_opens, Some(1000));
        assert_eq!(x.load_successes, 990);
        let host = cross_check(&balanced(false));
        assert!(host.agree);
        assert!(
            host.note
                .starts_with("equal to this network namespace's counters"),
            "{}",
            host.note
        );
    }

    #[test]
    fn exact_mismatch_by_one_disagrees() {
        let mut c = balanced(true);
        c.active_opens = Some(1001);
        let x = cross_check(&c);
        assert!(!x.agree);
        assert_eq!(
            x.note,
            "connects started vs Tcp.ActiveOpens: ours 1,000 != kernel 1,001"
        );
    }

    #[test]
    fn pre_syn_failures_are_not_syns() {
        let failures = BTreeMap::from([
            ("EADDRNOTAVAIL".to_string(), 7),
            ("EMFILE".to_string(), 3),
            ("ECONNREFUSED".to_string(), 5),
        ]);
        assert_eq!(pre_syn_failures(&failures), 10);
        let mut c = balanced(true);
        c.attempts = 1010;
        c.pre_syn_failures = 10;
        assert!(cross_check(&c).agree, "{}", cross_check(&c).note);
        c.pre_syn_failures = 0;
        assert!(!cross_check(&c).agree);
    }

    /// The host drops or delays, kind "no route" (a fresh namespace with loopback down): connect(2)
    /// fails with ENETUNREACH before any SYN, the kernel's ActiveOpens stays 0, and the check
    /// agrees instead of saying "we counted something the kernel did not".
    #[test]
    fn no_route_failures_left_no_syn_and_the_check_agrees() {
        let failures = BTreeMap::from([("ENETUNREACH".to_string(), 867_584)]);
        assert_eq!(pre_syn_failures(&failures), 867_584);
        let c = CrossCheckCounts {
            exact: true,
            attempts: 867_584,
            pre_syn_failures: pre_syn_failures(&failures),
            successes: 0,
            server_accepted: Some(0),
            passive_opens: Some(0),
            active_opens: Some(0),
            attempt_fails: Some(0),
            ..CrossCheckCounts::default()
        };
        let r = cross_check(&c);
        assert!(r.agree, "{}", r.note);
        assert!(!r.note.contains("did not"), "{}", r.note);
    }

    /// A cross-check that found handshakes the server never accepted does not agree (it said
    /// `agree: true` beside "23 of 80 ... never accepted"), in either namespace kind.
    #[test]
    fn never_accepted_handshakes_are_a_failure_class_and_a_disagreement() {
        for exact in [true, false] {
            let mut c = balanced(exact);
            c.server_accepted = Some(943);
            c.passive_opens = Some(943);
            let x = cross_check(&c);
            assert!(!x.agree, "{exact}: {}", x.note);
            assert_eq!(x.never_accepted(), 47);
        }
        let mut c = balanced(true);
        c.server_accepted = Some(943);
        c.passive_opens = Some(943);
        let x = cross_check(&c);
        assert!(!x.agree, "{}", x.note);
        assert_eq!(
            x.note,
            "47 of 990 handshakes completed on the client were never accepted by the server: counted as failures \"never accepted\", not successes"
        );
    }

    #[test]
    fn more_accepts_than_handshakes_balance_only_with_abandoned_attempts() {
        let mut c = balanced(true);
        c.server_accepted = Some(995);
        c.passive_opens = Some(995);
        let x = cross_check(&c);
        assert!(!x.agree);
        assert_eq!(
            x.note,
            "server accepted 995 but the load completed only 990 handshakes"
        );
        c.interrupted = true;
        c.abandoned = 5;
        let x = cross_check(&c);
        assert!(x.agree, "{}", x.note);
        assert_eq!(
            x.note,
            "interrupted: 5 of the 5 attempts abandoned at Ctrl-C had completed their handshake on the server side"
        );
        c.abandoned = 4;
        assert!(!cross_check(&c).agree, "one more than abandoned");
    }

    #[test]
    fn host_namespace_kernel_below_ours_disagrees() {
        let mut c = balanced(false);
        c.passive_opens = Some(989);
        let x = cross_check(&c);
        assert!(!x.agree);
        assert_eq!(
            x.note,
            "server accepts vs Tcp.PassiveOpens: ours 990 > kernel 989: we counted something the kernel did not"
        );
    }

    /// With `--target` our server is not in the run, so `--netns` (which puts it beside the
    /// load) is not the advice: a gateway in this namespace counts its upstream connects in
    /// Tcp.ActiveOpens too (seen: nginx proxying to a server on the same host, twice ours).
    #[test]
    fn an_external_target_is_not_told_to_rerun_with_netns() {
        let mut c = balanced(false);
        c.server_accepted = None;
        c.passive_opens = None;
        c.active_opens = Some(2000);
        let x = cross_check(&c);
        assert!(!x.agree);
        assert!(!x.note.contains("--netns"), "{}", x.note);
        assert!(
            x.note.contains("kernel 2,000 exceeds ours 1,000 by 1,000")
                && x.note.contains("proxy's upstream connects")
                && x.note
                    .contains("run the target in another namespace or host"),
            "{}",
            x.note
        );
    }

    #[test]
    fn host_namespace_tolerance_accepts_up_to_its_edge_and_refuses_one_more() {
        assert_eq!(host_tolerance(990), 20);
        assert_eq!(host_tolerance(50_000), 50);
        // ActiveOpens: 1000 ours, nothing explained (AttemptFails equals our own failures).
        let mut c = balanced(false);
        c.active_opens = Some(1000 + 20);
        let x = cross_check(&c);
        assert!(x.agree, "{}", x.note);
        assert_eq!(
            x.note,
            "connects started vs Tcp.ActiveOpens: kernel 1,020 = ours 1,000 + 20 from other processes in the host namespace"
        );
        c.active_opens = Some(1000 + 21);
        let x = cross_check(&c);
        assert!(!x.agree);
        assert_eq!(
            x.note,
            "connects started vs Tcp.ActiveOpens: kernel 1,021 exceeds ours 1,000 by 21 — more than other processes' traffic explains (0); rerun with --netns for an exact check"
        );
        // Other processes' failed connects widen the tolerance by exactly their number.
        c.attempt_fails = Some(10 + 1);
        assert!(cross_check(&c).agree, "{}", cross_check(&c).note);
        // The tolerance scales with our count: 0.1% of 50 000.
        let big = CrossCheckCounts {
            attempts: 50_000,
            successes: 50_000,
            server_accepted: Some(50_000),
            passive_opens: Some(50_000),
            active_opens: Some(50_050),
            attempt_fails: Some(0),
            ..balanced(false)
        };
        assert!(cross_check(&big).agree, "{}", cross_check(&big).note);
        let over = CrossCheckCounts {
            active_opens: Some(50_051),
            ..big
        };
        assert!(!cross_check(&over).agree);
    }

    #[test]
    fn host_namespace_other_passive_opens_explain_both_counters() {
        // 100 connections accepted by another server on the host: PassiveOpens and ActiveOpens
        // (loopback clients) both rise by 100 beyond ours, far above the tolerance of 20.
        let mut c = balanced(false);
        c.server_accepted = Some(990);
        c.passive_opens = Some(1090);
        c.active_opens = Some(1100);
        let x = cross_check(&c);
        assert!(x.agree, "{}", x.note);
        assert!(
            x.note.contains("ours 990 + 100 from other processes"),
            "{}",
            x.note
        );
        // Without our server (external target) PassiveOpens explains nothing and is not stored.
        c.server_accepted = None;
        let x = cross_check(&c);
        assert!(!x.agree, "{}", x.note);
        assert_eq!(x.kernel_passive_opens, None);
        assert_eq!(x.server_accepted, None);
    }

    #[test]
    fn a_missing_counter_is_named_and_does_not_fail() {
        let mut c = balanced(true);
        c.active_opens = None;
        let x = cross_check(&c);
        assert!(x.agree);
        assert_eq!(
            x.note,
            "connects started vs Tcp.ActiveOpens: kernel counter unavailable"
        );
    }
}
