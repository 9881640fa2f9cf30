//! `connstorm load` against a local target: the listener's accept queue at the end of the run.
//!
//! A handshake the server's kernel completed sits in the listener's accept queue until the server
//! application calls accept(2) (`inet_csk_accept`, net/ipv4/inet_connection_sock.c); a
//! connection still there when the run is over was never accepted, so it is not a success
//! (docs/edges.md: "a handshake the server never accepted is not a success"). A healthy server is at
//! most a few milliseconds behind when the load stops, so the queue is read when the run ends
//! and then polled for a bounded *settle* ([`SETTLE`]): until it is empty, or has not shrunk for
//! [`SettleRule::stall`], or [`SettleRule::max`] has passed. What is left is counted, by the
//! caller, as the failure class "never accepted: in the listener's accept queue at the end"
//! ([`loadgen::LoadReport::reclassify_still_queued`], [`this_runs`]).
//!
//! The queue is read with `ss -Hltn 'sport = :PORT'` (iproute2, ss(8)): for a LISTEN socket
//! Recv-Q is the number of connections in its accept queue (`sk_ack_backlog`, inet_diag's
//! `idiag_rqueue`) and Send-Q its backlog (`sk_max_ack_backlog`). Only a target in this process's
//! network namespace (loopback) can be read.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The local listener(s) on the targets' port, as `ss -Hltn` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerQueue {
    /// The listen backlog (Send-Q), connections; the largest when several SO_REUSEPORT
    /// listeners share the port.
    pub backlog: i64,
    /// Connections waiting in the accept queue(s) (Recv-Q), summed over those listeners.
    pub queued: u64,
}

/// Reads the [`ListenerQueue`] of the local listener(s) on the targets' port (every target must
/// use the same port) now, with `ss`. `None` when the targets use several ports, `ss` is missing
/// or fails, or it shows no listener on that port. Costs one `ss` process (a netlink dump of
/// the LISTEN sockets only, a few ms).
pub fn read(targets: &[SocketAddr]) -> Option<ListenerQueue> {
    let port = targets.first()?.port();
    if targets.iter().any(|t| t.port() != port) {
        return None;
    }
    let out = std::process::Command::new("ss")
        .args(["-Hltn", &format!("sport = :{port}")])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    parse_ss(&String::from_utf8_lossy(&out.stdout))
}

/// Parses `ss -Hltn` lines (`State Recv-Q Send-Q Local Peer`): Recv-Q summed, Send-Q's maximum.
/// `None` when no line parses.
fn parse_ss(text: &str) -> Option<ListenerQueue> {
    let rows: Vec<(u64, i64)> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace().skip(1);
            Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect();
    Some(ListenerQueue {
        backlog: rows.iter().map(|r| r.1).max()?,
        queued: rows.iter().map(|r| r.0).sum(),
    })
}

/// How long the server is given to take what its accept queue holds when the load ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettleRule {
    /// Time between two reads of the queue.
    pub poll: Duration,
    /// The settle ends when the queue has not shrunk for this long: the server is not taking
    /// connections (stopped, hung, gone, or never accepts).
    pub stall: Duration,
    /// The settle never lasts longer than this, however the queue moves.
    pub max: Duration,
}

/// The settle `load` uses: read every 20 ms; end when the queue is empty, after 100 ms without
/// it shrinking, or after 500 ms in all.
///
/// Why these numbers: a server that is accepting takes a queued connection in its next
/// event-loop turn once it runs; on a busy host a runnable thread waits for the CPU a few
/// scheduler slices at most (EEVDF's base slice is 0.75 ms × (1 + log2 CPUs), kernel/sched/fair.c
/// `sysctl_sched_base_slice`; CFS's latency target was 6–24 ms), so 100 ms without a single
/// accept means the application is not accepting, not that it is slow. 500 ms bounds what a
/// slow but progressing server is given (a full default queue of 4,096 drained at ≥ 8,200
/// accepts/s), and keeps the end of every `load` run prompt. 20 ms between reads keeps the
/// cost of `ss` (one process each) small against that.
pub const SETTLE: SettleRule = SettleRule {
    poll: Duration::from_millis(20),
    stall: Duration::from_millis(100),
    max: Duration::from_millis(500),
};

/// The queue when the load ended, after the settle, and how long the settle took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    /// Read when the load ended.
    pub at_end: ListenerQueue,
    /// Read when the settle ended (the last successful read).
    pub after: ListenerQueue,
    /// How long the settle waited.
    pub waited: Duration,
}

/// Runs the settle `rule` with the given reader and clock: `read` gives the queue now,
/// `elapsed` the time since the settle began, `sleep` waits; `hurry` (a second Ctrl-C) ends it
/// at once. Pure apart from what it is given, so it is tested with a fake clock. `None` when the
/// first read fails (the queue is unknown); a later failed read ends the settle with the last
/// value read.
pub fn settle_with(
    rule: SettleRule,
    read: &mut dyn FnMut() -> Option<ListenerQueue>,
    elapsed: &mut dyn FnMut() -> Duration,
    sleep: &mut dyn FnMut(Duration),
    hurry: &dyn Fn() -> bool,
) -> Option<Settled> {
    let at_end = read()?;
    let mut after = at_end;
    let mut lowest = at_end.queued;
    let mut progress_at = elapsed();
    loop {
        let now = elapsed();
        if after.queued == 0
            || hurry()
            || now >= rule.max
            || now.saturating_sub(progress_at) >= rule.stall
        {
            break;
        }
        sleep(rule.poll.min(rule.max - now));
        match read() {
            Some(q) => {
                if q.queued < lowest {
                    lowest = q.queued;
                    progress_at = elapsed();
                }
                after = q;
            }
            None => break,
        }
    }
    Some(Settled {
        at_end,
        after,
        waited: elapsed(),
    })
}

/// [`settle_with`] the [`SETTLE`] rule on the real clock, reading the targets' listener with
/// [`read`].
pub fn settle(targets: &[SocketAddr], hurry: &dyn Fn() -> bool) -> Option<Settled> {
    let start = Instant::now();
    settle_with(
        SETTLE,
        &mut || read(targets),
        &mut || start.elapsed(),
        &mut std::thread::sleep,
        hurry,
    )
}

/// This run's connections among `queued` left in the accept queue after the settle, given the
/// handshakes the server's kernel created during the run (`kernel_created`: Δ `Tcp.PassiveOpens`,
/// at most the client's handshakes, `results::acceptance::Acceptance::accepted`). The accept
/// queue is FIFO (the server accepts from its head, `reqsk_queue_remove`,
/// include/net/request_sock.h), so whatever the server accepted came first from the connections
/// queued before the run, and what is left is the newest: `min(queued, kernel_created)` of them
/// are this run's.
pub fn this_runs(queued: u64, kernel_created: u64) -> u64 {
    queued.min(kernel_created)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Drives [`settle_with`] over a scripted sequence of queue lengths on a fake clock (each
    /// sleep advances it); returns the settle and how many reads it made.
    fn run(script: &[u64], hurry_after: Option<usize>) -> (Option<Settled>, usize) {
        let now = Cell::new(Duration::ZERO);
        let reads = Cell::new(0usize);
        let mut read = || {
            let i = reads.get();
            reads.set(i + 1);
            script
                .get(i.min(script.len() - 1))
                .map(|&queued| ListenerQueue {
                    backlog: 128,
                    queued,
                })
        };
        let s = settle_with(
            SETTLE,
            &mut read,
            &mut || now.get(),
            &mut |d| now.set(now.get() + d),
            &|| hurry_after.is_some_and(|n| reads.get() > n),
        );
        (s, reads.get())
    }

    #[test]
    fn an_empty_queue_is_read_once() {
        let (s, reads) = run(&[0], None);
        let s = s.unwrap();
        assert_eq!(
            (s.at_end.queued, s.after.queued, s.waited, reads),
            (0, 0, Duration::ZERO, 1)
        );
    }

    /// A server a few polls behind: the settle waits until it has taken everything.
    #[test]
    fn a_draining_queue_is_waited_for_until_empty() {
        let (s, reads) = run(&[40, 30, 10, 0], None);
        let s = s.unwrap();
        assert_eq!((s.at_end.queued, s.after.queued, reads), (40, 0, 4));
        assert_eq!(s.waited, SETTLE.poll * 3);
    }

    /// A listener that never accepts: the settle ends after `stall` without progress.
    #[test]
    fn a_queue_that_never_shrinks_ends_the_settle_after_the_stall() {
        let (s, _) = run(&[20], None);
        let s = s.unwrap();
        assert_eq!((s.at_end.queued, s.after.queued), (20, 20));
        assert_eq!(s.waited, SETTLE.stall);
    }

    /// A server that keeps accepting slowly is given at most `max`.
    #[test]
    fn a_slowly_draining_queue_is_given_at_most_max() {
        let script: Vec<u64> = (0..100).map(|i| 1_000 - i).collect();
        let (s, reads) = run(&script, None);
        let s = s.unwrap();
        assert_eq!(s.waited, SETTLE.max);
        assert_eq!(
            reads as u32,
            1 + SETTLE.max.as_millis() as u32 / SETTLE.poll.as_millis() as u32
        );
        assert_eq!(s.after.queued, 1_000 - (reads as u64 - 1));
    }

    /// A second Ctrl-C: no more waiting.
    #[test]
    fn hurry_ends_the_settle_at_once() {
        let (s, reads) = run(&[50, 49, 48, 47], Some(0));
        assert_eq!((s.unwrap().after.queued, reads), (50, 1));
    }

    #[test]
    fn an_unreadable_queue_is_unknown() {
        let mut read = || -> Option<ListenerQueue> { None };
        let s = settle_with(
            SETTLE,
            &mut read,
            &mut || Duration::ZERO,
            &mut |_| {},
            &|| false,
        );
        assert_eq!(s, None);
    }

    #[test]
    fn ss_lines_sum_the_queues_and_keep_the_largest_backlog() {
        let text = "LISTEN 3      128          127.0.0.1:9000      0.0.0.0:*\nLISTEN 4      4096          127.0.0.1:9000      0.0.0.0:*\n";
        assert_eq!(
            parse_ss(text),
            Some(ListenerQueue {
                backlog: 4096,
                queued: 7
            })
        );
        assert_eq!(parse_ss(""), None);
    }

    /// FIFO: connections queued before the run are taken first, so what is left is this run's,
    /// up to what the kernel created in it.
    #[test]
    fn only_this_runs_connections_count() {
        assert_eq!(this_runs(20, 20), 20);
        assert_eq!(this_runs(40, 20), 20);
        assert_eq!(this_runs(5, 20), 5);
        assert_eq!(this_runs(0, 20), 0);
    }
}
