//! The ephemeral-port budget of a client, from the settings it depends on.
//!
//! A connection needs a free local port per (source IP, destination IP, destination port)
//! triple from `net.ipv4.ip_local_port_range` (default 32768-60999 = 28,232 ports). When the
//! client closes first, the port then sits in TIME_WAIT for a fixed 60 s (TCP_TIMEWAIT_LEN,
//! include/net/tcp.h), so without reuse a triple sustains `ports / 60 s` new connections
//! (≈ 470/s). `net.ipv4.tcp_tw_reuse` lets connect() take a TIME_WAIT port once it is older than
//! `tcp_tw_reuse_delay` (ms, default 1000, Linux 6.14+; 1 s before) — value 1 for every
//! destination, 2 (the default) for loopback only — **but only when the TIME_WAIT entry saw TCP
//! timestamps** (net/ipv4/tcp_ipv4.c `tcp_twsk_unique`), so `tcp_timestamps = 0` turns reuse off
//! whatever `tcp_tw_reuse` says (Documentation/networking/ip-sysctl.rst tcp_tw_reuse).
//!
//! [`budget`] is pure: the caller reads [`PortSettings`] (e.g. with [`PortSettings::read`]) and
//! passes the number of triples and whether every destination is loopback.

use serde::Serialize;

use crate::sysctl::Key;
use crate::sysctl::SysctlIo;

/// TIME_WAIT length, seconds (TCP_TIMEWAIT_LEN).
pub const TIME_WAIT_SECS: f64 = 60.0;

/// Default `tcp_tw_reuse_delay`, ms (ip-sysctl.rst).
pub const DEFAULT_REUSE_DELAY_MS: u64 = 1000;

/// The settings a port budget depends on, as read from one network namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortSettings {
    /// `ip_local_port_range`, inclusive.
    pub range: (u32, u32),
    /// `tcp_tw_reuse` (0, 1, 2); `None` when unreadable (treated as 0).
    pub tw_reuse: Option<u8>,
    /// `tcp_timestamps` (0, 1, 2); `None` when unreadable (treated as on, the default).
    pub timestamps: Option<u8>,
    /// `tcp_tw_reuse_delay`, ms; `None` before 6.14 (then 1000 ms).
    pub tw_reuse_delay_ms: Option<u64>,
}

/// Reading the settings failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot estimate the port budget: {0}")]
pub struct PortSettingsError(String);

impl PortSettings {
    /// Reads the settings through `io` (the calling thread's network namespace on a host).
    ///
    /// # Errors
    /// [`PortSettingsError`] when `ip_local_port_range` is unreadable or not two ports; the other
    /// keys are optional.
    pub fn read(io: &dyn SysctlIo) -> Result<PortSettings, PortSettingsError> {
        let get = |k: &str| Key::parse(k).ok().and_then(|k| io.read(&k).ok());
        let range = get("net.ipv4.ip_local_port_range").ok_or_else(|| {
            PortSettingsError("net.ipv4.ip_local_port_range is not readable".into())
        })?;
        let nums: Vec<u32> = range.split(' ').filter_map(|n| n.parse().ok()).collect();
        let [lo, hi] = nums[..] else {
            return Err(PortSettingsError(format!(
                "net.ipv4.ip_local_port_range is {range:?}, not two ports"
            )));
        };
        Ok(PortSettings {
            range: (lo, hi),
            tw_reuse: get("net.ipv4.tcp_tw_reuse").and_then(|v| v.parse().ok()),
            timestamps: get("net.ipv4.tcp_timestamps").and_then(|v| v.parse().ok()),
            tw_reuse_delay_ms: get("net.ipv4.tcp_tw_reuse_delay").and_then(|v| v.parse().ok()),
        })
    }
}

/// Whether TIME_WAIT ports are reused, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reuse", rename_all = "kebab-case")]
pub enum PortReuse {
    /// connect() reuses a TIME_WAIT port after `delay_ms`.
    Yes {
        /// Minimum TIME_WAIT age before reuse, ms.
        delay_ms: u64,
        /// The settings that allow it.
        why: String,
    },
    /// No reuse: every port waits the full 60 s.
    No {
        /// Which setting prevents it.
        why: String,
    },
}

/// A port budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortEstimate {
    /// Ports in the range.
    pub ports: u64,
    /// (source IP, destination IP, destination port) triples.
    pub triples: u64,
    /// Connections that can hold a port at once: `ports × triples`.
    pub concurrent: u64,
    /// TIME_WAIT reuse.
    pub reuse: PortReuse,
    /// Sustainable new connections per second with client-side TIME_WAIT: `concurrent / 60 s`
    /// without reuse, `concurrent / delay` with it (an upper bound: reuse also needs a newer
    /// timestamp than the old connection's); `None` when the client leaves no TIME_WAIT.
    pub per_sec: Option<f64>,
    /// One line saying how the figure was reached, with the settings used.
    pub explain: String,
}

/// The port budget for `triples` triples under `s`. `all_loopback`: every destination is
/// loopback (127/8, ::1), where `tcp_tw_reuse = 2` applies. `client_time_wait`: the client
/// closes first (`--close fin`), so its ports go through TIME_WAIT.
pub fn port_budget(
    s: &PortSettings,
    triples: u64,
    all_loopback: bool,
    client_time_wait: bool,
) -> PortEstimate {
    let ports = u64::from(s.range.1.saturating_sub(s.range.0)) + 1;
    let triples = triples.max(1);
    let concurrent = ports * triples;
    let delay_ms = s.tw_reuse_delay_ms.unwrap_or(DEFAULT_REUSE_DELAY_MS).max(1);
    let reuse = match (s.tw_reuse.unwrap_or(0), s.timestamps.unwrap_or(1)) {
        (0, _) => PortReuse::No {
            why: "net.ipv4.tcp_tw_reuse = 0".into(),
        },
        (r @ (1 | 2), 0) => PortReuse::No {
            why: format!(
                "net.ipv4.tcp_tw_reuse = {r} but net.ipv4.tcp_timestamps = 0: reuse needs timestamps (tcp_ipv4.c tcp_twsk_unique), so no port is reused"
            ),
        },
        (2, _) if !all_loopback => PortReuse::No {
            why: "net.ipv4.tcp_tw_reuse = 2 reuses ports toward loopback only, and a destination is not loopback".into(),
        },
        (r @ (1 | 2), _) => PortReuse::Yes {
            delay_ms,
            why: format!(
                "net.ipv4.tcp_tw_reuse = {r}, tcp_timestamps = {}, reuse after {delay_ms} ms (tcp_tw_reuse_delay{})",
                s.timestamps
                    .map_or_else(|| "unreadable (assumed on, the default)".to_string(), |t| t.to_string()),
                if s.tw_reuse_delay_ms.is_none() { ", default" } else { "" }
            ),
        },
        (r, _) => PortReuse::No {
            why: format!("net.ipv4.tcp_tw_reuse = {r} is not a value the kernel knows"),
        },
    };
    let hold_secs = match &reuse {
        PortReuse::Yes { delay_ms, .. } => *delay_ms as f64 / 1000.0,
        PortReuse::No { .. } => TIME_WAIT_SECS,
    };
    let per_sec = client_time_wait.then(|| concurrent as f64 / hold_secs);
    let explain = match (&reuse, per_sec) {
        (_, None) => format!(
            "{ports} ports [{}-{}] x {triples} triple(s) = {concurrent} connections at once; no client TIME_WAIT",
            s.range.0, s.range.1
        ),
        (PortReuse::No { why }, Some(r)) => format!(
            "about {r:.0}/s = {ports} ports [{}-{}] x {triples} triple(s) / 60 s TIME_WAIT (no reuse: {why})",
            s.range.0, s.range.1
        ),
        (PortReuse::Yes { why, .. }, Some(r)) => format!(
            "at most about {r:.0}/s = {ports} ports [{}-{}] x {triples} triple(s) / {hold_secs} s ({why})",
            s.range.0, s.range.1
        ),
    };
    PortEstimate {
        ports,
        triples,
        concurrent,
        reuse,
        per_sec,
        explain,
    }
}

/// What a load run asks of the ephemeral ports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PortDemand {
    /// Open loop: new connections per second.
    Rate {
        /// Offered rate, connections/s.
        per_sec: f64,
    },
    /// Closed loop: connections held at once.
    InFlight {
        /// Connections in flight.
        connections: u64,
    },
}

/// Why `demand` will run out of ephemeral ports under the budget `e` (from [`port_budget`]), or
/// `None` when it fits: an offered rate above [`PortEstimate::per_sec`] (only with client
/// TIME_WAIT; with reuse the bound is the reuse delay's, an upper bound), or more connections in
/// flight than [`PortEstimate::concurrent`]. Either way connect(2) fails with EADDRNOTAVAIL (no
/// free port for the triple, inet_hash_connect, net/ipv4/inet_hashtables.c). One line, without a
/// program prefix or the caller's options to fix it.
pub fn port_shortfall(e: &PortEstimate, demand: PortDemand) -> Option<String> {
    match demand {
        PortDemand::Rate { per_sec: rate } => {
            e.per_sec.filter(|&b| rate > b)?;
            Some(match &e.reuse {
                PortReuse::Yes { .. } => format!(
                    "offered rate {}/s exceeds the ephemeral-port budget even with TIME_WAIT reuse ({}): expect EADDRNOTAVAIL (port exhaustion)",
                    common::numfmt::exact(rate),
                    e.explain
                ),
                PortReuse::No { .. } => format!(
                    "offered rate {}/s exceeds the ephemeral-port budget of {}: expect EADDRNOTAVAIL (port exhaustion)",
                    common::numfmt::exact(rate),
                    e.explain
                ),
            })
        }
        PortDemand::InFlight { connections } => (connections > e.concurrent).then(|| {
            format!(
                "{} connections in flight need more ports than the {} available ({} ports x {} triple(s)): expect EADDRNOTAVAIL (port exhaustion)",
                common::numfmt::count(connections),
                common::numfmt::count(e.concurrent),
                common::numfmt::count(e.ports),
                e.triples
            )
        }),
    }
}

/// The sysctl change that would let TIME_WAIT ports be reused under `e`, read from the
/// settings the estimate rests on (never `tcp_tw_reuse` alone when timestamps are off, since
/// reuse needs them: tcp_ipv4.c `tcp_twsk_unique`); `None` when ports are already reused.
pub fn port_reuse_remedy(e: &PortEstimate) -> Option<&'static str> {
    let PortReuse::No { why } = &e.reuse else {
        return None;
    };
    Some(if why.contains("tcp_timestamps = 0") {
        "net.ipv4.tcp_timestamps=1 (tcp_tw_reuse needs timestamps to reuse a TIME_WAIT port)"
    } else {
        "net.ipv4.tcp_tw_reuse=1 (with net.ipv4.tcp_timestamps on)"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(tw: u8, ts: u8) -> PortSettings {
        PortSettings {
            range: (32768, 60999),
            tw_reuse: Some(tw),
            timestamps: Some(ts),
            tw_reuse_delay_ms: None,
        }
    }

    #[test]
    fn reuse_without_timestamps_gives_the_60_second_budget() {
        let e = port_budget(&s(1, 0), 1, true, true);
        assert!(matches!(e.reuse, PortReuse::No { ref why } if why.contains("tcp_timestamps = 0")));
        let r = e.per_sec.unwrap();
        assert!((470.0..471.0).contains(&r), "{r}");
        let e = port_budget(&s(1, 1), 1, true, true);
        assert!(matches!(e.reuse, PortReuse::Yes { delay_ms: 1000, .. }));
        assert_eq!(e.per_sec, Some(28232.0));
    }

    #[test]
    fn the_remedy_never_promises_reuse_without_timestamps() {
        let r = port_reuse_remedy(&port_budget(&s(1, 0), 1, true, true)).unwrap();
        assert!(r.starts_with("net.ipv4.tcp_timestamps=1"), "{r}");
        let r = port_reuse_remedy(&port_budget(&s(0, 1), 1, true, true)).unwrap();
        assert!(r.starts_with("net.ipv4.tcp_tw_reuse=1"), "{r}");
        assert_eq!(
            port_reuse_remedy(&port_budget(&s(1, 1), 1, true, true)),
            None
        );
    }

    #[test]
    fn loopback_only_reuse_and_no_time_wait() {
        assert!(matches!(
            port_budget(&s(2, 1), 1, false, true).reuse,
            PortReuse::No { .. }
        ));
        assert!(matches!(
            port_budget(&s(2, 1), 1, true, true).reuse,
            PortReuse::Yes { .. }
        ));
        assert!(matches!(
            port_budget(&s(0, 1), 1, true, true).reuse,
            PortReuse::No { .. }
        ));
        let e = port_budget(&s(0, 1), 20, true, false);
        assert_eq!(e.per_sec, None);
        assert_eq!(e.concurrent, 28232 * 20);
        let mut d = s(1, 1);
        d.tw_reuse_delay_ms = Some(5000);
        assert_eq!(port_budget(&d, 1, true, true).per_sec, Some(28232.0 / 5.0));
    }

    #[test]
    fn shortfall_names_the_bound_that_a_demand_exceeds() {
        // No reuse: 28,232 ports / 60 s = about 470/s for one triple.
        let no_reuse = port_budget(&s(0, 1), 1, true, true);
        assert_eq!(
            port_shortfall(&no_reuse, PortDemand::Rate { per_sec: 470.0 }),
            None
        );
        let w = port_shortfall(&no_reuse, PortDemand::Rate { per_sec: 471.0 }).unwrap();
        assert!(w.starts_with("offered rate 471/s exceeds the ephemeral-port budget of about 471/s = 28232 ports [32768-60999]"), "{w}");
        assert!(w.contains("no reuse: net.ipv4.tcp_tw_reuse = 0"), "{w}");
        // PortReuse after 1 s: the bound is 28,232/s.
        let reuse = port_budget(&s(1, 1), 1, true, true);
        assert_eq!(
            port_shortfall(&reuse, PortDemand::Rate { per_sec: 28_000.0 }),
            None
        );
        let w = port_shortfall(&reuse, PortDemand::Rate { per_sec: 30_000.0 }).unwrap();
        assert!(
            w.contains("even with TIME_WAIT reuse (at most about 28232/s"),
            "{w}"
        );
        // No client TIME_WAIT: no rate bound at all.
        let rst = port_budget(&s(0, 1), 1, true, false);
        assert_eq!(
            port_shortfall(&rst, PortDemand::Rate { per_sec: 1e7 }),
            None
        );
        // In flight: 2 triples hold 56,464 at once.
        let two = port_budget(&s(0, 1), 2, true, false);
        assert_eq!(
            port_shortfall(
                &two,
                PortDemand::InFlight {
                    connections: 56_464
                }
            ),
            None
        );
        let w = port_shortfall(
            &two,
            PortDemand::InFlight {
                connections: 56_465,
            },
        )
        .unwrap();
        assert_eq!(w, "56,465 connections in flight need more ports than the 56,464 available (28,232 ports x 2 triple(s)): expect EADDRNOTAVAIL (port exhaustion)");
    }
}
