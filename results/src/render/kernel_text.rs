//! The kernel section of a load report: the counter deltas of the targets' network namespace
//! with their meaning, the acceptance reconciliation ([`crate::acceptance`]) and the diagnosis
//! lines ([`crate::diagnosis`]), as text — or, when the counters are not readable from where the
//! client runs, why server-side acceptance is unknown and how to learn it.
//!
//! Plain data in, text out: the binary reads the counters (tuning) and the client's counts
//! (loadgen) and hands them here.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::analysis::{client_view_note, Acceptance, Exactness};
use crate::numfmt;
use crate::record::{describe_counter, is_drop_counter, KEY_COUNTERS};

/// What the kernel of the targets' namespace says about one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelView {
    /// Δ of every kernel TCP counter over the run, `"Prefix.Name"` → rise (may be negative when
    /// a counter was reset).
    pub delta: BTreeMap<String, i64>,
    /// Client handshakes reconciled with the server's passive opens.
    pub acceptance: Acceptance,
    /// One line per cause, from [`crate::analysis::diagnose`] (the words `bench` prints).
    pub causes: Vec<String>,
    /// The listener's accept queue at the end of the run, after the server was given time to
    /// take what it held ([`AcceptQueueEnd`]). `None` when the queue could not be read (no
    /// `ss`, several target ports, no listener seen).
    pub accept_queue: Option<AcceptQueueEnd>,
    /// The targets' namespace settings the diagnosis read (sysctls by name and
    /// `"listen_backlog"`, as [`crate::record::PhaseRecord::settings`]): kept in the `--out`
    /// record, so that `report` diagnoses as the run did.
    pub settings: BTreeMap<String, i64>,
}

/// The listener's accept queue at the end of a `load` run against a local target: `ss -Hltn`
/// Recv-Q of the LISTEN socket(s) on the target port, summed (sk_ack_backlog via inet_diag,
/// ss(8)): connections the server's kernel created that the server application has not
/// accept()ed. Read when the load ended and again after a bounded settle (the caller's rule),
/// so that a server merely behind by a few milliseconds loses nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AcceptQueueEnd {
    /// Connections queued when the load ended.
    pub at_end: u64,
    /// Connections still queued after the settle.
    pub after_settle: u64,
    /// How long the settle waited, ms.
    pub settle_ms: u64,
    /// This run's connections among `after_settle`: at most the handshakes the server's kernel
    /// created in the run (the queue is FIFO, so what is left is the newest); the rest were
    /// queued before the run.
    pub this_run: u64,
    /// Those of `this_run` counted as the failure class "never accepted: in the listener's
    /// accept queue at the end": the ones the client had counted as successes. The others had
    /// already failed on the client under another class (with `--http` their exchange got no
    /// answer; a handshake seen only after the connect timeout is `ETIMEDOUT`), not counted twice.
    pub never_accepted: u64,
}

/// The kernel section as text (its `Display`): every key counter and every other drop counter or
/// acceptance cause that rose, each with what its rise means; the acceptance line; the
/// NEVER_ACCEPTED causes with the client-view note; the diagnosis. Without a [`KernelView`]:
/// one line saying server-side acceptance is unknown from here, why (`local`: every target is
/// loopback, so the counters were unreadable; else a target is remote), and how to know.
pub struct KernelSection<'a> {
    /// The counters and what they say, when readable.
    pub view: Option<&'a KernelView>,
    /// Every target is a loopback address (the counters would be the server's).
    pub local: bool,
    /// The client's successes after reclassification (handshakes − never accepted), for the
    /// NEVER_ACCEPTED line.
    pub successes: u64,
}

impl fmt::Display for KernelSection<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(k) = self.view else {
            let why = if self.local {
                "the kernel's counters could not be read"
            } else {
                "a target is not a loopback address, so its kernel's counters are not readable here"
            };
            return writeln!(
                out,
                "  server side: unknown from here ({why}): \
                 a completed handshake is counted a success though the server may never have accepted it. To know: run \
                 `connstorm server` there (it reports accepts and its kernel counters), or use --close server or \
                 --expect-bytes with a greeting server, so the client sees the server's answer"
            );
        };
        writeln!(
            out,
            "  kernel counters (Δ over the run, this network namespace, which is the targets' since every target is loopback):"
        )?;
        let mut shown: Vec<&str> = KEY_COUNTERS.to_vec();
        for (name, v) in &k.delta {
            if *v != 0
                && !shown.contains(&name.as_str())
                && (is_drop_counter(name) || k.acceptance.causes.iter().any(|c| &c.counter == name))
            {
                shown.push(name);
            }
        }
        for name in shown {
            let v = k.delta.get(name).copied().unwrap_or(0);
            let what = if v != 0 {
                format!(" — {}", describe_counter(name, v))
            } else {
                String::new()
            };
            writeln!(out, "    {name:<28} {:>10}{what}", numfmt::signed(v))?;
        }
        let a = &k.acceptance;
        if a.client_handshakes == 0 {
            writeln!(
                out,
                "  acceptance: no handshake completed on the client: nothing for the server to accept"
            )?;
        } else {
            writeln!(out, "  acceptance: {}", a.summary())?;
        }
        let queued = k.accept_queue.map_or(0, |q| q.never_accepted);
        let created = k.delta.get("Tcp.PassiveOpens").copied().unwrap_or(0);
        match k.accept_queue {
            // Nothing to accept: no claim about what the application did.
            Some(q) if q.after_settle == 0 && q.at_end == 0 && created <= 0 => writeln!(
                out,
                "  accept queue at the end: empty (ss Recv-Q 0); the server's kernel created no connection (Δ Tcp.PassiveOpens 0), so there was nothing to accept"
            )?,
            Some(q) if q.after_settle == 0 => {
                let taken = if q.at_end > 0 {
                    format!(
                        "; {} were still queued when the load ended and were taken within {} ms",
                        numfmt::count(q.at_end),
                        q.settle_ms
                    )
                } else {
                    String::new()
                };
                writeln!(
                    out,
                    "  accept queue at the end: empty (ss Recv-Q 0): the server application accept()ed every connection its kernel created{taken}"
                )?
            }
            Some(q) => {
                let before = q.after_settle.saturating_sub(q.this_run);
                let counted = match q.never_accepted {
                    0 => String::new(),
                    n => format!(
                        ", {}counted as failures NEVER_ACCEPTED_QUEUED (never accepted: in the listener's accept queue at the end), not successes",
                        if n == q.this_run { String::new() } else { format!("{} ", numfmt::count(n)) }
                    ),
                };
                let failed = q.this_run.saturating_sub(q.never_accepted);
                let failed = match (failed, counted.is_empty()) {
                    (0, _) => String::new(),
                    (_, true) => ", each already a failure on the client (counted under its class above, not twice)".to_string(),
                    (n, false) => format!(
                        "; {} others already failures on the client (counted under their class above, not twice)",
                        numfmt::count(n)
                    ),
                };
                writeln!(
                    out,
                    "  accept queue at the end: {} connections still wait in the listener's accept queue (ss Recv-Q, {} ms after the load ended, when {} waited): created by the server's kernel, never accept()ed by the server application (stopped, hung or too slow?); {} of them from this run{counted}{failed}{}",
                    numfmt::count(q.after_settle),
                    q.settle_ms,
                    numfmt::count(q.at_end),
                    numfmt::count(q.this_run),
                    if before > 0 {
                        format!(" (the other {} were queued before the run)", numfmt::count(before))
                    } else {
                        String::new()
                    }
                )?
            }
            None if a.client_handshakes > 0 => writeln!(
                out,
                "  accept queue at the end: not readable here (ss missing or no listener seen on the target port): how many the server application accept()ed is unknown"
            )?,
            None => {}
        }
        if a.never_accepted > 0 {
            writeln!(
                out,
                "    counted as failures NEVER_ACCEPTED (successes = handshakes − never accepted{} = {}{}); causes:",
                if queued > 0 { " − still queued" } else { "" },
                numfmt::count(self.successes),
                if a.exactness == Exactness::LowerBound {
                    ", an upper bound"
                } else {
                    ""
                }
            )?;
            for c in &a.causes {
                writeln!(
                    out,
                    "      {} +{}: {}",
                    c.counter,
                    numfmt::signed(c.delta),
                    c.words
                )?;
            }
        }
        if a.never_accepted + queued > 0 {
            writeln!(
                out,
                "    note: {}; so are the per-worker counts",
                client_view_note(a.never_accepted + queued)
            )?;
        }
        if !k.causes.is_empty() {
            writeln!(
                out,
                "  diagnosis (from the counters and this namespace's settings):"
            )?;
            for c in &k.causes {
                writeln!(out, "    {c}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::reconcile;

    fn text(view: Option<&KernelView>, local: bool, successes: u64) -> String {
        KernelSection {
            view,
            local,
            successes,
        }
        .to_string()
    }

    /// A target that is not loopback: server-side acceptance is said to be unknown, with how to
    /// learn it.
    #[test]
    fn remote_targets_say_acceptance_is_unknown_and_how_to_know() {
        let t = text(None, false, 10);
        assert!(
            t.starts_with("  server side: unknown from here (a target is not a loopback address"),
            "{t}"
        );
        assert!(t.contains("run `connstorm server` there"), "{t}");
        assert!(t.contains("--close server"), "{t}");
        let t = text(None, true, 10);
        assert!(
            t.contains("(the kernel's counters could not be read)"),
            "{t}"
        );
    }

    /// 10,000 handshakes, 8,868 passive opens in a private namespace: the shortfall is shown
    /// with its causes, the rise of every key and drop counter with its meaning, and the
    /// diagnosis lines as given.
    #[test]
    fn a_shortfall_shows_counters_causes_and_diagnosis() {
        let delta: BTreeMap<String, i64> = [
            ("Tcp.ActiveOpens", 10_000),
            ("Tcp.PassiveOpens", 8_868),
            ("TcpExt.ListenOverflows", 2_400),
            ("TcpExt.SyncookiesRecv", 1_132),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let view = KernelView {
            settings: BTreeMap::new(),
            acceptance: reconcile(10_000, &delta, true),
            delta,
            causes: vec!["accept queue overflow: listen backlog 8, ...".into()],
            accept_queue: Some(AcceptQueueEnd {
                at_end: 3,
                after_settle: 0,
                settle_ms: 12,
                this_run: 0,
                never_accepted: 0,
            }),
        };
        let t = text(Some(&view), true, 8_868);
        assert!(
            t.contains("    Tcp.PassiveOpens                  8,868 — "),
            "{t}"
        );
        assert!(
            t.contains("    TcpExt.ListenOverflows            2,400 — "),
            "{t}"
        );
        assert!(
            t.contains("  acceptance: 1,132 of 10,000 handshakes completed on the client were never accepted"),
            "{t}"
        );
        assert!(
            t.contains("counted as failures NEVER_ACCEPTED (successes = handshakes − never accepted = 8,868); causes:\n"),
            "{t}"
        );
        assert!(t.contains("      TcpExt.SyncookiesRecv +1,132: "), "{t}");
        assert!(t.contains("    note: the handshake percentiles"), "{t}");
        assert!(
            t.ends_with(
                "  diagnosis (from the counters and this namespace's settings):\n    accept queue overflow: listen backlog 8, ...\n"
            ),
            "{t}"
        );
    }

    #[test]
    fn no_handshake_says_nothing_was_there_to_accept() {
        let delta = BTreeMap::from([("Tcp.PassiveOpens".to_string(), 0)]);
        let view = KernelView {
            settings: BTreeMap::new(),
            acceptance: reconcile(0, &delta, true),
            delta,
            causes: vec![],
            accept_queue: None,
        };
        let t = text(Some(&view), true, 0);
        assert!(
            t.contains("  acceptance: no handshake completed on the client: nothing for the server to accept\n"),
            "{t}"
        );
        assert!(!t.contains("NEVER_ACCEPTED"), "{t}");
        assert!(!t.contains("diagnosis"), "{t}");
    }

    /// A server whose kernel completes handshakes its application never accepts (stopped): the
    /// acceptance line says the kernel created them, not that the server accepted them, and the
    /// accept queue read after the settle says how many still wait there and that they are
    /// failures, not successes.
    #[test]
    fn kernel_completed_handshakes_are_not_called_accepted_and_the_queue_is_shown() {
        let delta = BTreeMap::from([
            ("Tcp.ActiveOpens".to_string(), 20),
            ("Tcp.PassiveOpens".to_string(), 20),
        ]);
        let view = KernelView {
            settings: BTreeMap::new(),
            acceptance: reconcile(20, &delta, true),
            delta,
            causes: vec![],
            accept_queue: Some(AcceptQueueEnd {
                at_end: 25,
                after_settle: 25,
                settle_ms: 100,
                this_run: 20,
                never_accepted: 20,
            }),
        };
        let t = text(Some(&view), true, 0);
        assert!(
            t.contains("  acceptance: all 20 handshakes completed on the client were completed by the server's kernel too (Δ Tcp.PassiveOpens 20: it created each connection; whether the server application accept()ed them is not in the kernel's counters;"),
            "{t}"
        );
        assert!(!t.contains("accepted by the server's kernel"), "{t}");
        assert!(
            t.contains("  accept queue at the end: 25 connections still wait in the listener's accept queue (ss Recv-Q, 100 ms after the load ended, when 25 waited): created by the server's kernel, never accept()ed by the server application (stopped, hung or too slow?); 20 of them from this run, counted as failures NEVER_ACCEPTED_QUEUED (never accepted: in the listener's accept queue at the end), not successes (the other 5 were queued before the run)\n"),
            "{t}"
        );
        assert!(t.contains("    note: the handshake percentiles and per-second lines are the client's: they include the 20 handshakes"), "{t}");
        assert!(!t.contains("counted as failures NEVER_ACCEPTED ("), "{t}");
    }

    /// Nothing to measure (every SYN dropped by a firewall): the empty queue claims nothing
    /// about an application that had nothing to accept.
    #[test]
    fn an_empty_queue_of_a_kernel_that_created_nothing_claims_no_accept() {
        let delta = BTreeMap::from([
            ("Tcp.ActiveOpens".to_string(), 40),
            ("Tcp.PassiveOpens".to_string(), 0),
        ]);
        let view = KernelView {
            settings: BTreeMap::new(),
            acceptance: reconcile(0, &delta, true),
            delta,
            causes: vec![],
            accept_queue: Some(AcceptQueueEnd {
                at_end: 0,
                after_settle: 0,
                settle_ms: 0,
                this_run: 0,
                never_accepted: 0,
            }),
        };
        let t = text(Some(&view), true, 0);
        assert!(
            t.contains("  accept queue at the end: empty (ss Recv-Q 0); the server's kernel created no connection (Δ Tcp.PassiveOpens 0), so there was nothing to accept\n"),
            "{t}"
        );
        assert!(!t.contains("accept()ed every connection"), "{t}");
    }

    /// A server that was a few milliseconds behind when the load ended: the queue it emptied in
    /// the settle is said to be empty, and how much it took meanwhile.
    #[test]
    fn a_queue_emptied_in_the_settle_is_shown_empty_with_what_it_held() {
        let delta = BTreeMap::from([("Tcp.PassiveOpens".to_string(), 20)]);
        let view = KernelView {
            settings: BTreeMap::new(),
            acceptance: reconcile(20, &delta, true),
            delta,
            causes: vec![],
            accept_queue: Some(AcceptQueueEnd {
                at_end: 4,
                after_settle: 0,
                settle_ms: 20,
                this_run: 0,
                never_accepted: 0,
            }),
        };
        let t = text(Some(&view), true, 20);
        assert!(
            t.contains("  accept queue at the end: empty (ss Recv-Q 0): the server application accept()ed every connection its kernel created; 4 were still queued when the load ended and were taken within 20 ms\n"),
            "{t}"
        );
        assert!(!t.contains("note:"), "{t}");
    }
}
