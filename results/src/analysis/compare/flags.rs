//! Which trials are flagged: a flag means "this trial's numbers are suspect", so a comparison
//! leaves the trial out of its verdict (unless `--include-flagged`).
//!
//! # The retransmit rule (also in docs/methodology.md and `compare --help`)
//! A phase's SYN retransmits (`TcpExt.TCPSynRetrans`) flag the trial as `retransmits` unless
//! all of these hold:
//! 1. they are *explained* the way [`crate::diagnosis`] attributes them: no drop counter that
//!    loses SYNs rose (`ListenOverflows`, `TCPReqQFullDrop`, `nf_conntrack.drop`,
//!    `softnet.dropped`), no attempt timed out (`ETIMEDOUT`), and the namespace created at least
//!    as many FIN_WAIT2/TIME_WAIT minisocks (`TcpExt.TW`) as SYNs were retransmitted — the
//!    retried SYN met an orphaned FIN_WAIT2 minisock of the same 4-tuple, which answers with an
//!    ACK; the client's RST clears it and the SYN is resent within milliseconds
//!    (net/ipv4/tcp_minisocks.c `tcp_timewait_state_process`, net/ipv4/tcp_input.c
//!    `tcp_rcv_synsent_state_process`, Linux 5.6); no connection is lost;
//! 2. they are at most [`MAX_SYN_RETRANS_SHARE`] (0.1%) of the handshakes started over the
//!    same span (`Tcp.ActiveOpens`, else the phase's attempts);
//! 3. no handshake of the phase took the initial SYN retransmission timeout: the service
//!    latency histogram (`socket()` → connected, free of generator lag) tops out below
//!    [`SYN_RTO_NS`] (1 s, `TCP_TIMEOUT_INIT` in include/net/tcp.h; RFC 6298 §2.1).
//!
//! Other retransmit counters (`TCPRetransFail`, ...) always flag.

use crate::record::{is_retransmit_counter, Latency, PhaseRecord, Role, RunRecord};

/// SYN retransmits above this share of the handshakes started flag a trial even when explained.
pub(crate) const MAX_SYN_RETRANS_SHARE: f64 = 0.001;

/// The initial SYN retransmission timeout, ns: a handshake this long waited for a lost SYN or
/// SYN-ACK (`TCP_TIMEOUT_INIT` = 1 s, include/net/tcp.h; RFC 6298 §2.1).
pub(crate) const SYN_RTO_NS: u64 = 1_000_000_000;

/// The handshake SYN retransmit counter.
const SYN_RETRANS: &str = "TcpExt.TCPSynRetrans";

/// Counters whose rise loses SYNs (and so explains a retransmitted SYN by a drop).
const SYN_LOSING_DROPS: [&str; 4] = [
    "TcpExt.ListenOverflows",
    "TcpExt.TCPReqQFullDrop",
    "nf_conntrack.drop",
    "softnet.dropped",
];

/// Whether a phase's retransmit counters make its numbers suspect (the module's rule): `false`
/// when no retransmit counter rose, or only explained SYN retransmits, few and fast.
pub(crate) fn suspect_retransmits(p: &PhaseRecord) -> bool {
    let c = |k: &str| p.counters.get(k).copied().unwrap_or(0);
    let other = p
        .drops()
        .iter()
        .any(|(k, _)| is_retransmit_counter(k) && *k != SYN_RETRANS);
    if other {
        return true;
    }
    let syn = c(SYN_RETRANS);
    if syn <= 0 {
        return false;
    }
    let explained = SYN_LOSING_DROPS.iter().all(|k| c(k) <= 0)
        && p.failures.get("ETIMEDOUT").copied().unwrap_or(0) == 0
        && c("TcpExt.TW") >= syn;
    let started = c("Tcp.ActiveOpens").max(p.attempts as i64).max(1);
    let few = syn as f64 / started as f64 <= MAX_SYN_RETRANS_SHARE;
    // An undecodable histogram is the report's to refuse; here it proves no slow handshake.
    let fast = match p.histograms.decode(Latency::Service) {
        Ok(Some(h)) => h.is_empty() || h.max() < SYN_RTO_NS,
        _ => true,
    };
    !(explained && few && fast)
}

/// One finished `ab` trial in a line: its peak (`peak 41,000 conn/s`, `n/a` without a peak
/// phase), the record's `path`, and its [`trial_flags`] when there are any
/// (` (flagged: contention, steal)`).
pub fn trial_line(rec: &RunRecord, path: &std::path::Path) -> String {
    let flags = trial_flags(rec);
    format!(
        "peak {}, record {}{}",
        rec.phase("peak").map_or_else(
            || crate::numfmt::NA.to_string(),
            |p| format!("{} conn/s", crate::numfmt::fixed_opt(p.achieved_per_sec, 0))
        ),
        path.display(),
        if flags.is_empty() {
            String::new()
        } else {
            format!(" (flagged: {})", flags.join(", "))
        }
    )
}

/// The warnings that flag a trial, as short kinds: `contention`, `steal`, `generator behind`,
/// `drops`, `retransmits` (by the module's rule), `cross-check mismatch`, `interrupted`,
/// `nothing measured` (a phase without a success: no rate, no CPU per connection, nothing to
/// compare), or `warning` for any other warning in the record. Empty when the trial is clean.
pub fn trial_flags(rec: &RunRecord) -> Vec<String> {
    let mut flags: Vec<&str> = Vec::new();
    // Retransmits are judged from the counters when the record has them; a stored warning about
    // them (older builds stored one) is that same fact.
    let counted = rec
        .phases
        .iter()
        .any(|p| p.counters.keys().any(|k| is_retransmit_counter(k)));
    for w in &rec.warnings {
        let l = w.to_ascii_lowercase();
        let kind = if l.contains("other work used") || l.contains("contention") {
            "contention"
        } else if l.contains("steal") {
            "steal"
        } else if l.contains("fell behind") || has_word(&l, "late") {
            "generator behind"
        } else if l.contains("retrans") {
            if counted {
                continue;
            }
            "retransmits"
        } else if l.contains("drop") || l.contains("overflow") {
            "drops"
        } else if l.contains("mismatch") || l.contains("cross-check") {
            "cross-check mismatch"
        } else {
            "warning"
        };
        flags.push(kind);
    }
    for p in &rec.phases {
        if p.drops().iter().any(|(k, _)| !is_retransmit_counter(k)) || p.dropped > 0 {
            flags.push("drops");
        }
        if suspect_retransmits(p) {
            flags.push("retransmits");
        }
        if p.cross_check.as_ref().is_some_and(|c| !c.agree) {
            flags.push("cross-check mismatch");
        }
        // A server record's phase counts accepts, not successes.
        if rec.role != Role::Server && !p.measured() {
            flags.push("nothing measured");
        }
    }
    if rec.run.interrupted {
        flags.push("interrupted");
    }
    flags.sort_unstable();
    flags.dedup();
    flags.into_iter().map(str::to_string).collect()
}

/// Whether `word` occurs in `text` as a whole word (`late`, not `latency`).
fn has_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric())
        .any(|w| w == word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::compare::{compare, CompareOptions, Verdict};
    use crate::record::new_latency_histogram;

    #[test]
    fn trial_line_names_peak_record_and_flags() {
        let mut r = RunRecord::new("x", serde_json::Value::Null);
        let path = std::path::Path::new("runs/x.json");
        assert_eq!(trial_line(&r, path), "peak n/a, record runs/x.json");
        r.warnings.push("steal time 3% on the load CPUs".into());
        assert_eq!(
            trial_line(&r, path),
            "peak n/a, record runs/x.json (flagged: steal)"
        );
    }
    use crate::record::Histograms;

    /// The example record (no warning, no drop) labelled `label`, its peak phase at `rate`,
    /// with `counters` set in every phase.
    fn record(label: &str, rate: f64, counters: &[(&str, i64)]) -> RunRecord {
        let mut r = RunRecord::example();
        r.label = label.to_string();
        r.warnings.clear();
        for p in &mut r.phases {
            for (k, v) in counters {
                p.counters.insert(k.to_string(), *v);
            }
        }
        r.phases[0].achieved_per_sec = Some(rate);
        r
    }

    /// A default bench run's counters on loopback: `retrans` SYN retransmits in `opens`
    /// handshakes, explained by orphaned FIN_WAIT2 minisocks (TcpExt.TW well above).
    fn loopback(opens: i64, retrans: i64) -> Vec<(&'static str, i64)> {
        vec![
            ("Tcp.ActiveOpens", opens),
            ("TcpExt.TCPSynRetrans", retrans),
            ("TcpExt.TW", opens / 2),
        ]
    }

    #[test]
    fn ten_explained_syn_retransmits_in_fifty_thousand_do_not_flag() {
        let r = record("A", 20_000.0, &loopback(50_000, 10));
        assert!(!suspect_retransmits(&r.phases[0]));
        assert_eq!(trial_flags(&r), Vec::<String>::new());
    }

    #[test]
    fn one_percent_syn_retransmits_flag_even_when_explained() {
        let r = record("A", 20_000.0, &loopback(50_000, 500));
        assert_eq!(trial_flags(&r), ["retransmits"]);
        // Just above 0.1% flags; at 0.1% does not.
        assert!(suspect_retransmits(
            &record("A", 1.0, &loopback(50_000, 51)).phases[0]
        ));
        assert!(!suspect_retransmits(
            &record("A", 1.0, &loopback(50_000, 50)).phases[0]
        ));
    }

    #[test]
    fn unexplained_or_slow_retransmits_flag() {
        // No minisock to explain them (TcpExt.TW 0): a lost packet or the peer's state.
        let mut c = loopback(50_000, 10);
        c[2].1 = 0;
        assert_eq!(trial_flags(&record("A", 1.0, &c)), ["retransmits"]);
        // A drop that loses SYNs rose alongside: both flags.
        let mut c = loopback(50_000, 10);
        c.push(("TcpExt.ListenOverflows", 3));
        assert_eq!(trial_flags(&record("A", 1.0, &c)), ["drops", "retransmits"]);
        // A handshake took the 1 s SYN RTO.
        let mut r = record("A", 1.0, &loopback(50_000, 10));
        let mut h = new_latency_histogram();
        h.record(30_000).unwrap();
        h.record(SYN_RTO_NS + 2_000_000).unwrap();
        r.phases[1].histograms = Histograms::encode(&h, &h, None);
        assert_eq!(trial_flags(&r), ["retransmits"]);
        // Another retransmit counter always flags.
        let mut c = loopback(50_000, 0);
        c.push(("TcpExt.TCPRetransFail", 1));
        assert_eq!(trial_flags(&record("A", 1.0, &c)), ["retransmits"]);
    }

    /// Host-wide softnet drops (every namespace's traffic) beside a run that agreed with the
    /// kernel, failed nothing and retransmitted nothing are other traffic's: no `drops` flag, no
    /// warning. With a retransmit (or a failure) they may be the run's: flagged and warned.
    #[test]
    fn softnet_drops_the_run_shows_no_sign_of_do_not_flag_it() {
        let quiet = [
            ("softnet.dropped", 626),
            ("TcpExt.TCPSynRetrans", 0),
            ("Tcp.RetransSegs", 0),
        ];
        let r = record("A", 1_000.0, &quiet);
        assert!(r
            .phases
            .iter()
            .all(|p| p.cross_check.as_ref().unwrap().agree));
        assert!(trial_flags(&r).is_empty(), "{:?}", trial_flags(&r));
        assert!(
            !crate::analysis::warnings(&r)
                .iter()
                .any(|w| w.contains("softnet")),
            "{:?}",
            crate::analysis::warnings(&r)
        );
        let lossy = [
            ("softnet.dropped", 626),
            ("TcpExt.TCPSynRetrans", 3),
            ("Tcp.RetransSegs", 3),
        ];
        let r = record("A", 1_000.0, &lossy);
        assert!(
            trial_flags(&r).contains(&"drops".to_string()),
            "{:?}",
            trial_flags(&r)
        );
        assert!(crate::analysis::warnings(&r)
            .iter()
            .any(|w| w.contains("softnet dropped 1,252")));
        // Retransmit counters unknown (an older record): not shown to be elsewhere.
        let r = record("A", 1_000.0, &[("softnet.dropped", 626)]);
        assert!(trial_flags(&r).contains(&"drops".to_string()));
    }

    #[test]
    fn a_latency_phase_name_is_not_a_late_generator() {
        let mut r = record("A", 1.0, &[]);
        r.warnings
            .push("latency: server accept errors: EMFILE × 3".into());
        assert_eq!(trial_flags(&r), ["warning"]);
        r.warnings
            .push("latency: 2.0% of starts were late (behind schedule)".into());
        assert_eq!(trial_flags(&r), ["generator behind", "warning"]);
    }

    #[test]
    fn ab_over_unflagged_default_like_records_gives_a_verdict() {
        let side = |label: &str, center: f64| -> Vec<RunRecord> {
            (0..10)
                .map(|i| {
                    // Every trial has a few explained SYN retransmits, as default loopback
                    // bench runs do.
                    let rate = center * (1.0 + (i as f64 - 4.5) * 0.002);
                    record(
                        &format!("{label}#{}", i + 1),
                        rate,
                        &loopback(50_000, 3 + i),
                    )
                })
                .collect()
        };
        let c = compare(
            &side("A", 20_000.0),
            &side("B", 22_000.0),
            (None, None),
            &CompareOptions::default(),
        );
        assert_eq!((c.a.used(), c.b.used()), (10, 10));
        assert_eq!((c.a.flagged(), c.b.flagged()), (0, 0));
        let rate = c
            .metrics
            .iter()
            .find(|m| m.name == "connections/s")
            .unwrap();
        assert_eq!(rate.verdict, Verdict::Better, "{rate:?}");
        assert_eq!(rate.a.n, 10);
    }
}
