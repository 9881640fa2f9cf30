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

/// The sockets that hold a port, and the namespace's ephemeral-port settings, as
/// [`port_in_use`] reads them.
#[derive(Debug, Clone, Default)]
pub struct PortHolders {
    /// Sockets with that local port on a conflicting address ([`crate::host::port_holders`]).
    pub sockets: Vec<crate::host::TcpSocket>,
    /// The process of each socket, when found (`pid`, `comm`), same order.
    pub owners: Vec<Option<(u32, String)>>,
    /// `net.ipv4.ip_local_port_range`.
    pub range: Option<(u32, u32)>,
    /// `net.ipv4.ip_local_reserved_ports` as inclusive ranges.
    pub reserved: Vec<(u32, u32)>,
}

impl PortHolders {
    /// Reads who holds `addr`'s port in the calling thread's network namespace (sock_diag, the
    /// owners from /proc/PID/fd) and the namespace's port settings through `io`.
    ///
    /// # Errors
    /// The sock_diag dump failed.
    pub fn read(addr: std::net::SocketAddr, io: &dyn SysctlIo) -> std::io::Result<PortHolders> {
        let sockets = crate::host::port_holders(addr)?;
        let owners = sockets
            .iter()
            .map(|s| crate::host::socket_owner(s.inode))
            .collect();
        let get = |k: &str| Key::parse(k).ok().and_then(|k| io.read(&k).ok());
        let range = get("net.ipv4.ip_local_port_range").and_then(|r| {
            let n: Vec<u32> = r.split(' ').filter_map(|x| x.parse().ok()).collect();
            match n[..] {
                [lo, hi] => Some((lo, hi)),
                _ => None,
            }
        });
        let reserved = get("net.ipv4.ip_local_reserved_ports")
            .map(|v| {
                v.split(',')
                    .filter_map(|p| {
                        let p = p.trim();
                        match p.split_once('-') {
                            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                            None => p.parse().ok().map(|n| (n, n)),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(PortHolders {
            sockets,
            owners,
            range,
            reserved,
        })
    }
}

/// Why binding `addr` failed with EADDRINUSE, from who holds the port (`h`): a listener (stop
/// it or pick another port), or — the case a bare "already in use" hides — a connection whose
/// local port it is, typically an outgoing one that connect(2) gave a port from the ephemeral
/// range; then the fix is `net.ipv4.ip_local_reserved_ports` (ip-sysctl.rst: reserved ports are
/// never picked automatically). One line; `None` when no holder was found.
pub fn port_in_use(addr: std::net::SocketAddr, h: &PortHolders) -> Option<String> {
    let port = u32::from(addr.port());
    let owner = |i: usize| {
        h.owners
            .get(i)
            .cloned()
            .flatten()
            .map(|(pid, comm)| format!(", pid {pid} {comm}"))
            .unwrap_or_default()
    };
    let pick = "pick another port (`--listen IP:0` picks a free one)";
    if let Some(i) = h
        .sockets
        .iter()
        .position(|s| s.state == crate::host::TcpState::Listen)
    {
        return Some(format!(
            "address {addr} is already in use by a listener ({}{}): stop it or {pick}",
            h.sockets[i].describe(),
            owner(i)
        ));
    }
    if h.sockets.is_empty() {
        return None;
    }
    let shown: Vec<String> = h
        .sockets
        .iter()
        .enumerate()
        .take(3)
        .map(|(i, s)| format!("{}{}", s.describe(), owner(i)))
        .collect();
    let more = if h.sockets.len() > shown.len() {
        format!(" and {} more", h.sockets.len() - shown.len())
    } else {
        String::new()
    };
    let reserved = h.reserved.iter().any(|&(a, b)| (a..=b).contains(&port));
    let in_range = h.range.filter(|&(lo, hi)| (lo..=hi).contains(&port));
    let why = match (in_range, reserved) {
        (Some((lo, hi)), false) => format!(
            "{port} is inside the ephemeral range (net.ipv4.ip_local_port_range = {lo} {hi}), so connect(2) may give it to any outgoing connection — reserve it for servers with net.ipv4.ip_local_reserved_ports = {port} (ports listed there are never picked automatically; Documentation/networking/ip-sysctl.rst), then wait for the connection to end, or {pick}"
        ),
        _ => format!("wait for the connection to end, or {pick}"),
    };
    Some(format!(
        "address {addr} is already in use, not by a listener: a connection holds local port {port} ({}{more}); {why}",
        shown.join("; ")
    ))
}

/// Ephemeral ports toward one destination still held by TIME_WAIT sockets from before a run
/// ([`time_wait_held`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimeWaitHeld {
    /// The destination.
    pub target: std::net::SocketAddr,
    /// Ports in the ephemeral range, per source address.
    pub ports: u64,
    /// Source addresses the run uses toward it (1 when the kernel picks).
    pub sources: u64,
    /// TIME_WAIT sockets toward it whose local port is in the range (from the run's sources, or
    /// from the one source with most when the kernel picks).
    pub held: u64,
    /// Of those, the ones connect(2) may take over now (`tcp_tw_reuse` allows it toward this
    /// destination, timestamps are on, and the socket is older than `tcp_tw_reuse_delay`).
    pub reusable: u64,
    /// Ports left for the run now: `ports × sources − (held − reusable)`.
    pub free: u64,
    /// When the last TIME_WAIT socket that cannot be reused ends, ms from now.
    pub last_ends_ms: u64,
    /// Why held ports cannot be reused (empty when they can).
    pub no_reuse: String,
}

/// For each of `targets`, how many of its ephemeral ports TIME_WAIT sockets in `sockets` hold
/// (the sockets of the client's namespace, e.g. from [`crate::host::tcp_sockets`]), and how
/// many of those connect(2) may reuse under `s` (net/ipv4/tcp_ipv4.c `tcp_twsk_unique`:
/// `tcp_tw_reuse` 1, or 2 toward loopback, with timestamps, once older than
/// `tcp_tw_reuse_delay`). A TIME_WAIT socket lasts 60 s ([`TIME_WAIT_SECS`]); its
/// `expires_ms` is the time left.
pub fn time_wait_held(
    sockets: &[crate::host::TcpSocket],
    targets: &[std::net::SocketAddr],
    sources: &[std::net::IpAddr],
    s: &PortSettings,
) -> Vec<TimeWaitHeld> {
    use std::collections::BTreeMap;
    let (lo, hi) = s.range;
    let ports = u64::from(hi.saturating_sub(lo)) + 1;
    let delay_ms = s.tw_reuse_delay_ms.unwrap_or(DEFAULT_REUSE_DELAY_MS);
    let mut seen = std::collections::BTreeSet::new();
    targets
        .iter()
        .filter(|t| seen.insert(**t))
        .map(|&target| {
            let loopback = target.ip().is_loopback();
            let no_reuse = match (s.tw_reuse.unwrap_or(0), s.timestamps.unwrap_or(1)) {
                (0, _) => "net.ipv4.tcp_tw_reuse = 0".to_string(),
                (_, 0) => "net.ipv4.tcp_timestamps = 0 (reuse needs timestamps)".to_string(),
                (2, _) if !loopback => {
                    "net.ipv4.tcp_tw_reuse = 2 reuses ports toward loopback only".to_string()
                }
                _ => String::new(),
            };
            let tw: Vec<&crate::host::TcpSocket> = sockets
                .iter()
                .filter(|x| {
                    x.state == crate::host::TcpState::TimeWait
                        && x.remote == target
                        && (lo..=hi).contains(&u32::from(x.local.port()))
                        && (sources.is_empty() || sources.contains(&x.local.ip()))
                })
                .collect();
            // Without --source the kernel picks one source: count the busiest one's ports.
            let mut by_src: BTreeMap<std::net::IpAddr, Vec<&crate::host::TcpSocket>> =
                BTreeMap::new();
            for x in tw {
                by_src.entry(x.local.ip()).or_default().push(x);
            }
            let counted: Vec<&crate::host::TcpSocket> = if sources.is_empty() {
                by_src
                    .into_values()
                    .max_by_key(Vec::len)
                    .unwrap_or_default()
            } else {
                by_src.into_values().flatten().collect()
            };
            let age_ms = |x: &crate::host::TcpSocket| {
                (TIME_WAIT_SECS as u64 * 1000).saturating_sub(u64::from(x.expires_ms))
            };
            let reusable = if no_reuse.is_empty() {
                counted.iter().filter(|x| age_ms(x) >= delay_ms).count() as u64
            } else {
                0
            };
            let held = counted.len() as u64;
            let nsrc = (sources.len() as u64).max(1);
            let last_ends_ms = counted
                .iter()
                .filter(|x| !no_reuse.is_empty() || age_ms(x) < delay_ms)
                .map(|x| u64::from(x.expires_ms))
                .max()
                .unwrap_or(0);
            let no_reuse = if no_reuse.is_empty() && reusable < held {
                format!("younger than net.ipv4.tcp_tw_reuse_delay ({delay_ms} ms)")
            } else {
                no_reuse
            };
            TimeWaitHeld {
                target,
                ports,
                sources: nsrc,
                held,
                reusable,
                free: (ports * nsrc).saturating_sub(held - reusable),
                last_ends_ms,
                no_reuse,
            }
        })
        .collect()
}

impl TimeWaitHeld {
    /// One line about the TIME_WAIT ports left toward this destination, `None` when none is
    /// held: how many of the range, whether they can be reused, and when they exhaust it what
    /// every connect(2) will get and how to fix it.
    pub fn describe(&self, range: (u32, u32)) -> Option<String> {
        if self.held == 0 {
            return None;
        }
        let (lo, hi) = range;
        let total = self.ports * self.sources;
        let of = if self.sources > 1 {
            format!(
                "{} ports ({} sources x [{lo}-{hi}])",
                common::numfmt::count(total),
                self.sources
            )
        } else {
            format!(
                "{} ephemeral ports [{lo}-{hi}]",
                common::numfmt::count(total)
            )
        };
        let reuse = if self.reusable == self.held {
            "; connect() may reuse all of them (tcp_tw_reuse)".to_string()
        } else if self.reusable > 0 {
            format!(
                "; connect() may reuse {} of them now, not the others ({})",
                common::numfmt::count(self.reusable),
                self.no_reuse
            )
        } else {
            format!("; none can be reused ({})", self.no_reuse)
        };
        let secs = self.last_ends_ms.div_ceil(1000);
        let end = if self.free == 0 {
            format!(
                ": they exhaust the range, so every connect() toward {} fails EADDRNOTAVAIL until they end (the last in {secs} s; TIME_WAIT lasts 60 s) — wait {secs} s, add --source addresses, widen net.ipv4.ip_local_port_range, or end earlier runs with --close rst or --close server (no client TIME_WAIT)",
                self.target
            )
        } else {
            format!(
                ": {} port(s) are left for this run",
                common::numfmt::count(self.free)
            )
        };
        Some(format!(
            "{} of the {of} toward {} are still in TIME_WAIT from before this run (sock_diag){reuse}{end}",
            common::numfmt::count(self.held),
            self.target
        ))
    }
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

    fn sock(
        local: &str,
        remote: &str,
        state: crate::host::TcpState,
        expires_ms: u32,
    ) -> crate::host::TcpSocket {
        crate::host::TcpSocket {
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
            state,
            expires_ms,
            uid: 0,
            inode: 0,
        }
    }

    /// The port is taken, but not by a listener: an outgoing connection holds the local port
    /// and it is inside the ephemeral range; the fix is ip_local_reserved_ports.
    #[test]
    fn the_port_is_taken_but_not_by_a_listener_names_the_connection_and_the_range() {
        use crate::host::TcpState::*;
        let addr: std::net::SocketAddr = "127.0.0.1:18080".parse().unwrap();
        let h = PortHolders {
            sockets: vec![sock("127.0.0.1:18080", "127.0.0.1:9000", Established, 0)],
            owners: vec![Some((4242, "curl".into()))],
            range: Some((2000, 65000)),
            reserved: Vec::new(),
        };
        let m = port_in_use(addr, &h).unwrap();
        assert!(m.starts_with("address 127.0.0.1:18080 is already in use, not by a listener: a connection holds local port 18080 (127.0.0.1:18080 -> 127.0.0.1:9000 ESTAB, pid 4242 curl); 18080 is inside the ephemeral range (net.ipv4.ip_local_port_range = 2000 65000)"), "{m}");
        assert!(
            m.contains("net.ipv4.ip_local_reserved_ports = 18080"),
            "{m}"
        );
        assert!(!m.contains("stop the other listener"), "{m}");
        // Reserved already, or outside the range: no range advice.
        let outside = PortHolders {
            range: Some((32768, 60999)),
            ..h.clone()
        };
        assert!(!port_in_use(addr, &outside)
            .unwrap()
            .contains("reserved_ports"));
        // A listener: stop it.
        let l = PortHolders {
            sockets: vec![sock("0.0.0.0:18080", "0.0.0.0:0", Listen, 0)],
            owners: vec![None],
            ..h.clone()
        };
        let m = port_in_use(addr, &l).unwrap();
        assert!(m.starts_with("address 127.0.0.1:18080 is already in use by a listener (0.0.0.0:18080 LISTEN): stop it"), "{m}");
        assert!(port_in_use(addr, &PortHolders::default()).is_none());
    }

    /// Ports still in TIME_WAIT from before the run: 500 TIME_WAIT sockets toward the target
    /// fill a 500-port range; with tcp_tw_reuse = 0 none is reusable and every connect() fails.
    #[test]
    fn ports_still_in_time_wait_from_before_the_run_are_counted_toward_the_target() {
        use crate::host::TcpState::*;
        let target: std::net::SocketAddr = "127.0.0.1:18080".parse().unwrap();
        let mut socks: Vec<crate::host::TcpSocket> = (40000..40500)
            .map(|p| {
                sock(
                    &format!("127.0.0.1:{p}"),
                    "127.0.0.1:18080",
                    TimeWait,
                    59_000 - (p - 40000),
                )
            })
            .collect();
        // Toward another destination, and outside the range: not counted.
        socks.push(sock("127.0.0.1:40001", "127.0.0.1:9", TimeWait, 1000));
        socks.push(sock("127.0.0.1:999", "127.0.0.1:18080", TimeWait, 1000));
        let s = PortSettings {
            range: (40000, 40499),
            tw_reuse: Some(0),
            timestamps: Some(1),
            tw_reuse_delay_ms: None,
        };
        let h = &time_wait_held(&socks, &[target], &[], &s)[0];
        assert_eq!((h.held, h.reusable, h.free, h.ports), (500, 0, 0, 500));
        assert_eq!(h.last_ends_ms, 59_000);
        let line = h.describe((40000, 40499)).unwrap();
        assert!(line.starts_with("500 of the 500 ephemeral ports [40000-40499] toward 127.0.0.1:18080 are still in TIME_WAIT from before this run (sock_diag); none can be reused (net.ipv4.tcp_tw_reuse = 0): they exhaust the range, so every connect() toward 127.0.0.1:18080 fails EADDRNOTAVAIL until they end (the last in 59 s"), "{line}");
        // With reuse toward loopback (2), the ones older than the delay are reusable.
        let reuse = PortSettings {
            tw_reuse: Some(2),
            ..s.clone()
        };
        let h = &time_wait_held(&socks, &[target], &[], &reuse)[0];
        assert_eq!(h.reusable, 500, "{h:?}");
        assert_eq!(h.free, 500);
        // Two sources: twice the ports, the held ones counted per source.
        let srcs = ["127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap()];
        let h = &time_wait_held(&socks, &[target], &srcs, &s)[0];
        assert_eq!((h.held, h.free), (500, 500));
        assert!(time_wait_held(&[], &[target], &[], &s)[0]
            .describe((40000, 40499))
            .is_none());
    }
}
