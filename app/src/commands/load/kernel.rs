//! `connstorm load` against a local target: what the kernel of the targets' namespace says about
//! the run. Acceptance is reconciled with the client's handshakes, the listener's accept queue
//! is read after a settle ([`super::accept_queue`]), the handshakes the server never accepted
//! are reclassified in the report, and the causes are diagnosed from the counters and this
//! namespace's settings.

use std::path::Path;

use loadgen::{LoadConfig, LoadReport};
use results::render::AcceptQueueEnd;
use results::render::KernelView;

/// What the kernel of the targets' namespace (this one: every target is loopback) says about the
/// run, from its counters `before` it and `now`: acceptance reconciled with the client's
/// handshakes (the never-accepted ones reclassified in `report`), the listener's accept queue
/// after the settle ([`super::accept_queue::settle`]; `hurry`: a second signal ends it; what is
/// left of this run is reclassified too), and the diagnosis with this namespace's settings and
/// the listener's backlog. `time_wait_before`: the ports toward the targets that TIME_WAIT
/// sockets from before the run held and the run could not reuse (the pre-flight's count; the
/// diagnosis names them when ports ran out). Call it on a thread in the targets' namespace.
pub fn kernel_view(
    cfg: &LoadConfig,
    report: &mut LoadReport,
    (before, now): (&tuning::counters::Snapshot, &tuning::counters::Snapshot),
    time_wait_before: Option<u64>,
    hurry: &dyn Fn() -> bool,
) -> KernelView {
    let delta = now.delta(before).to_map();
    let active = delta.get("Tcp.ActiveOpens").copied().unwrap_or(0);
    // Private: nothing but this run opens connections here (only `lo` in the namespace, and
    // no more SYNs sent than our attempts).
    let private = only_loopback_interface() && active <= report.total.attempts as i64;
    // TCP handshakes, whether or not an HTTP exchange after them succeeded.
    let handshakes = report.total.handshakes + report.total.completed_after_timeout;
    let acceptance = results::analysis::reconcile(handshakes, &delta, private);
    // With `--http` a connection the server never accepted already failed its exchange (reset
    // or no response): it is no success to move.
    let plain = cfg.http.is_none();
    if plain {
        report.reclassify_never_accepted(acceptance.never_accepted, cfg.warmup.is_zero());
    }
    // What is still in the listener's accept queue after the server was given a short time to
    // take it was never accepted: a failure class of its own.
    let settled = super::accept_queue::settle(&cfg.targets, hurry);
    let accept_queue = settled.map(|s| {
        let ours = super::accept_queue::this_runs(s.after.queued, acceptance.accepted);
        AcceptQueueEnd {
            at_end: s.at_end.queued,
            after_settle: s.after.queued,
            settle_ms: s.waited.as_millis() as u64,
            this_run: ours,
            never_accepted: if plain {
                report.reclassify_still_queued(ours)
            } else {
                0
            },
        }
    });
    // This thread is in the targets' namespace, so /proc/sys/net is theirs (see
    // tuning::counters::DEFAULT_SYS_DIR).
    let mut settings =
        tuning::counters::read_settings(Path::new(tuning::counters::DEFAULT_SYS_DIR));
    if let Some(s) = settled {
        settings.insert("listen_backlog".into(), s.after.backlog);
    }
    if let Some(held) = time_wait_before.filter(|&h| h > 0) {
        settings.insert("time_wait_before_run".into(), held as i64);
    }
    // This run's connections the server application never took, whatever class the client
    // counted them under (with `--http` their exchange failed: no answer came).
    let still_queued = accept_queue.map_or(0, |q| q.this_run);
    // The diagnosis reads the failure classes by the record's names (as `report` does).
    let failures = crate::convert::record_failures(&report.total.failures);
    let causes = results::analysis::diagnose(&results::analysis::Evidence {
        counters: &delta,
        settings: &settings,
        attempts: report.total.attempts,
        failures: &failures,
        client_handshakes: handshakes,
        server_accepts: Some(acceptance.accepted - still_queued),
        // Balanced when the count is exact and nothing was lost; unbalanced whenever something
        // was (even a lower bound); unknown when other connections may hide a loss.
        balanced: match acceptance.exactness {
            results::analysis::Exactness::Exact => Some(acceptance.never_accepted == 0),
            results::analysis::Exactness::LowerBound => {
                (acceptance.never_accepted > 0).then_some(false)
            }
        },
        late_handshakes: report.total.completed_after_timeout,
        still_queued,
    })
    .into_iter()
    .map(|c| c.line)
    .collect();
    KernelView {
        delta,
        acceptance,
        causes,
        accept_queue,
        settings,
    }
}

/// True when this network namespace has no interface but `lo` (/proc/thread-self/net/dev): then
/// no connection can come from outside it.
fn only_loopback_interface() -> bool {
    std::fs::read_to_string("/proc/thread-self/net/dev").is_ok_and(|t| only_lo(&t))
}

/// Whether a `/proc/net/dev` text names no interface but `lo`.
fn only_lo(dev: &str) -> bool {
    dev.lines()
        .skip(2)
        .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim().to_string()))
        .all(|n| n == "lo")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lo_reads_the_interface_names_after_the_two_header_lines() {
        let head = "Inter-|   Receive\n face |bytes\n";
        assert!(only_lo(&format!("{head}    lo: 1 2 3\n")));
        assert!(!only_lo(&format!("{head}    lo: 1 2 3\n  eth0: 4 5 6\n")));
    }
}
