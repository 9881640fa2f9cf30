//! The ephemeral-port budget of a run, estimated before it starts.
//!
//! A client connection needs a free local port for its (source IP, destination IP, destination
//! port) triple, taken from `net.ipv4.ip_local_port_range` (ip-sysctl.rst; default 32768-60999 =
//! 28,232 ports). With [`CloseMode::Fin`] every port then stays in TIME_WAIT for 60 s
//! (TCP_TIMEWAIT_LEN, not tunable; `tcp_fin_timeout` does not change it), so the sustainable rate
//! is about `ports × triples / 60 s` (≈ 470/s for one triple at the default range) unless
//! `tcp_tw_reuse` lets connect(2) reuse TIME_WAIT ports (Linux 4.x+, needs TCP timestamps;
//! default 2 = loopback only, after `tcp_tw_reuse_delay`, 1 s by default).
//!
//! # Port slices (`--port-slices`, [`PortSlices`])
//! Left alone, every load worker's connect(2) searches the one global range for a free port
//! (`__inet_hash_connect`), so at many workers they probe the same ports and contend on the
//! same hash buckets; Linux 6.15's connect() series removed much of that cost in the kernel, and
//! 6.1–6.14 are much slower under port pressure (`docs/ephemeral-ports.md`). With
//! [`PortSlices::On`] each worker instead gets its own disjoint slice of the range ([`slices`])
//! and sets it on every socket with `IP_LOCAL_PORT_RANGE` (ip(7), Linux 6.3: the high 16 bits
//! the upper bound, the low 16 bits the lower bound, inclusive), so no two workers ever search
//! the same port. A kernel without the option (ENOPROTOOPT) falls back to the shared range and
//! the report says so ([`SliceState`]).

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use serde::Serialize;

use crate::config::{CloseMode, LoadConfig, PortSlices};

/// TIME_WAIT length on Linux, seconds (include/net/tcp.h TCP_TIMEWAIT_LEN).
pub const TIME_WAIT_SECS: f64 = 60.0;

/// The port budget of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortBudget {
    /// `ip_local_port_range` low and high (inclusive).
    pub range: (u16, u16),
    /// Ports in the range.
    pub ports: u64,
    /// Distinct (source IP, destination IP, destination port) triples; no `--source` counts as one
    /// source (the kernel's choice).
    pub triples: u64,
    /// Connections that can hold a port at once: `ports × triples`.
    pub concurrent: u64,
    /// Sustainable new connections per second with client-side TIME_WAIT (`concurrent / 60`);
    /// `None` when the close mode leaves no TIME_WAIT on the client.
    pub per_sec: Option<f64>,
}

/// Reads `ip_local_port_range` of the calling thread's network namespace under `proc_root`
/// (normally `/proc`): `<proc_root>/sys/net/ipv4/ip_local_port_range`, two numbers.
///
/// # Errors
/// The read error, or `InvalidData` when the file does not hold two port numbers.
pub fn read_port_range(proc_root: &Path) -> std::io::Result<(u16, u16)> {
    let path = proc_root.join("sys/net/ipv4/ip_local_port_range");
    let text = std::fs::read_to_string(&path)?;
    let mut it = text.split_whitespace().map(str::parse::<u16>);
    match (it.next(), it.next()) {
        (Some(Ok(lo)), Some(Ok(hi))) if lo <= hi => Ok((lo, hi)),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} does not hold `LOW HIGH` port numbers: {text:?}",
                path.display()
            ),
        )),
    }
}

/// The budget for these targets, sources and close mode under a port range.
pub fn port_budget(
    range: (u16, u16),
    targets: &[SocketAddr],
    sources: &[IpAddr],
    close: CloseMode,
) -> PortBudget {
    let ports = u64::from(range.1.saturating_sub(range.0)) + 1;
    let dests: BTreeSet<SocketAddr> = targets.iter().copied().collect();
    let srcs = sources.iter().collect::<BTreeSet<_>>().len().max(1) as u64;
    let triples = dests.len() as u64 * srcs;
    let concurrent = ports * triples;
    PortBudget {
        range,
        ports,
        triples,
        concurrent,
        per_sec: (close == CloseMode::Fin).then(|| concurrent as f64 / TIME_WAIT_SECS),
    }
}

/// The socket option `IP_LOCAL_PORT_RANGE`, defined beside the calls that set it.
pub use crate::engine::socket::IP_LOCAL_PORT_RANGE;

/// Fewest ports a worker's slice holds: the kernel refuses a lower bound not below the upper
/// (EINVAL), and one port would serialize the worker on it.
pub const MIN_SLICE_PORTS: u64 = 2;

/// The `IP_LOCAL_PORT_RANGE` value of the inclusive slice `(lo, hi)`: `hi << 16 | lo`.
pub fn range_value((lo, hi): (u16, u16)) -> u32 {
    u32::from(hi) << 16 | u32::from(lo)
}

/// Splits `range` (inclusive) into `workers` disjoint, contiguous slices in worker order, each
/// `ports / workers` ports, the last one taking the remainder.
///
/// # Errors
/// When a slice would hold fewer than [`MIN_SLICE_PORTS`] ports (the message says how many the
/// range has and how many it needs), or `workers` is 0.
pub fn slices(range: (u16, u16), workers: usize) -> Result<Vec<(u16, u16)>, String> {
    let ports = u64::from(range.1.saturating_sub(range.0)) + 1;
    let n = workers as u64;
    if n == 0 || ports / n < MIN_SLICE_PORTS {
        return Err(format!(
            "the ephemeral range {}-{} has {ports} ports, too few for {workers} workers' slices of at least {MIN_SLICE_PORTS} each",
            range.0, range.1
        ));
    }
    let per = ports / n;
    Ok((0..n)
        .map(|w| {
            let lo = u64::from(range.0) + w * per;
            let hi = if w + 1 == n {
                u64::from(range.1)
            } else {
                lo + per - 1
            };
            (lo as u16, hi as u16)
        })
        .collect())
}

/// How the workers of a run got their ports (in [`crate::LoadReport::port_slices`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SliceState {
    /// What was asked (`--port-slices`).
    pub asked: PortSlices,
    /// Whether each worker connected from its own slice (`IP_LOCAL_PORT_RANGE` on every socket).
    pub applied: bool,
    /// The global `ip_local_port_range` the slices were cut from (`None` when it was not read).
    pub range: Option<(u16, u16)>,
    /// Workers of the run.
    pub workers: usize,
    /// Why the workers share the range although slices were asked for (the fallback), or why
    /// none was needed; `None` when applied or turned off.
    pub note: Option<String>,
}

impl SliceState {
    /// One line for the text report, e.g. `each of 32 workers its own slice of 32768-60999
    /// (882 ports each, IP_LOCAL_PORT_RANGE)`.
    pub fn line(&self) -> String {
        let range = self.range.map_or_else(
            || "the ephemeral range".to_string(),
            |(lo, hi)| format!("{lo}-{hi}"),
        );
        if self.applied {
            let ports = self.range.map_or(0, |(lo, hi)| u64::from(hi - lo) + 1);
            return format!(
                "each of {} workers its own slice of {range} ({} ports each, IP_LOCAL_PORT_RANGE)",
                self.workers,
                ports / self.workers.max(1) as u64
            );
        }
        match &self.note {
            Some(n) => format!("{} worker(s) share {range}: {n}", self.workers),
            None => format!(
                "{} worker(s) share {range} (--port-slices off)",
                self.workers
            ),
        }
    }
}

/// Decides the port slices of `cfg` before its workers start: reads the range of the calling
/// thread's network namespace under `proc_root` and, with [`PortSlices::On`] and two or more
/// workers, checks that the kernel takes `IP_LOCAL_PORT_RANGE` on a scratch socket. Returns the
/// state for the report and each worker's slice (`None`: the workers share the range). Never
/// fails: what it cannot do is the fallback, named in [`SliceState::note`].
pub fn resolve(cfg: &LoadConfig, proc_root: &Path) -> (SliceState, Option<Vec<(u16, u16)>>) {
    let workers = cfg.workers();
    let range = read_port_range(proc_root).ok();
    let mut state = SliceState {
        asked: cfg.port_slices,
        applied: false,
        range,
        workers,
        note: None,
    };
    if cfg.port_slices == PortSlices::Off {
        return (state, None);
    }
    if workers < 2 {
        state.note = Some("one worker: no slice needed".into());
        return (state, None);
    }
    let Some(range) = range else {
        state.note = Some(format!(
            "fallback: {} is unreadable, so no slices could be cut",
            proc_root.join("sys/net/ipv4/ip_local_port_range").display()
        ));
        return (state, None);
    };
    let cut = match slices(range, workers) {
        Ok(c) => c,
        Err(e) => {
            state.note = Some(format!(
                "fallback: {e}; widen net.ipv4.ip_local_port_range or run fewer workers"
            ));
            return (state, None);
        }
    };
    let v6 = cfg
        .targets
        .first()
        .is_some_and(std::net::SocketAddr::is_ipv6);
    if let Err(e) = crate::engine::socket::probe_port_range(v6, range_value(cut[0])) {
        state.note = Some(if e.raw_os_error() == Some(libc::ENOPROTOOPT) {
            "fallback: this kernel lacks IP_LOCAL_PORT_RANGE (Linux 6.3), so every worker searches the whole range (the contention 6.15's connect() series eased in the kernel)".to_string()
        } else {
            format!("fallback: setsockopt(IP_LOCAL_PORT_RANGE) failed on a scratch socket: {e}")
        });
        return (state, None);
    }
    state.applied = true;
    (state, Some(cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_disjoint_cover_the_range_and_refuse_too_few_ports() {
        let s = slices((32768, 60999), 32).unwrap();
        assert_eq!(s.len(), 32);
        assert_eq!(s[0], (32768, 32768 + 881));
        assert_eq!(s[31].1, 60999);
        for w in s.windows(2) {
            assert_eq!(w[0].1 + 1, w[1].0, "{w:?}");
        }
        assert!(s.iter().all(|&(lo, hi)| hi - lo + 1 >= 882));
        assert_eq!(
            slices((40000, 40003), 2).unwrap(),
            [(40000, 40001), (40002, 40003)]
        );
        let e = slices((40000, 40004), 3).unwrap_err();
        assert!(e.contains("5 ports") && e.contains("3 workers"), "{e}");
        assert!(slices((1, 2), 0).is_err());
        assert_eq!(range_value((40000, 40001)), 40001 << 16 | 40000);
    }

    #[test]
    fn default_range_gives_about_470_per_second_per_triple() {
        let t: Vec<SocketAddr> = vec!["127.0.0.1:9000".parse().unwrap()];
        let b = port_budget((32768, 60999), &t, &[], CloseMode::Fin);
        assert_eq!(b.ports, 28232);
        assert_eq!(b.triples, 1);
        let r = b.per_sec.unwrap();
        assert!((470.0..471.0).contains(&r), "{r}");
        let srcs: Vec<IpAddr> = (2..=11)
            .map(|i| format!("127.0.0.{i}").parse().unwrap())
            .collect();
        let t2: Vec<SocketAddr> = vec![t[0], "127.0.0.1:9001".parse().unwrap(), t[0]];
        let b = port_budget((32768, 60999), &t2, &srcs, CloseMode::Fin);
        assert_eq!(b.triples, 20);
        assert!(port_budget((32768, 60999), &t, &[], CloseMode::Rst)
            .per_sec
            .is_none());
    }

    /// The fallbacks of `resolve`, each named in the report's line: slices off, one worker, a
    /// range too narrow for the workers; and slices applied where the kernel has the option.
    #[test]
    fn resolve_names_each_fallback_and_applies_slices_where_it_can() {
        let dir = std::env::temp_dir().join(format!("loadgen-slices-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sys/net/ipv4")).unwrap();
        let range = |r: &str| {
            std::fs::write(dir.join("sys/net/ipv4/ip_local_port_range"), r).unwrap();
        };
        let mut cfg = crate::config::for_test(
            "127.0.0.1:9".parse().unwrap(),
            crate::Pattern::Closed { concurrency: 4 },
            CloseMode::Rst,
        );
        range("40000 40003\n");
        cfg.port_slices = PortSlices::Off;
        cfg.workers = 2;
        let (s, cut) = resolve(&cfg, &dir);
        assert!(!s.applied && cut.is_none() && s.note.is_none(), "{s:?}");
        assert_eq!(
            s.line(),
            "2 worker(s) share 40000-40003 (--port-slices off)"
        );
        cfg.port_slices = PortSlices::On;
        cfg.workers = 0;
        let (s, cut) = resolve(&cfg, &dir);
        assert!(
            cut.is_none() && s.line().contains("one worker: no slice needed"),
            "{s:?}"
        );
        cfg.workers = 3;
        let (s, cut) = resolve(&cfg, &dir);
        assert!(cut.is_none(), "{s:?}");
        assert!(
            s.line().contains(
                "fallback: the ephemeral range 40000-40003 has 4 ports, too few for 3 workers"
            ),
            "{}",
            s.line()
        );
        cfg.workers = 2;
        let (s, cut) = resolve(&cfg, &dir);
        if s.applied {
            assert_eq!(cut.unwrap(), [(40000, 40001), (40002, 40003)]);
            assert!(s
                .line()
                .starts_with("each of 2 workers its own slice of 40000-40003 (2 ports each"));
        } else {
            // A kernel before 6.3: the fallback says so.
            println!("no IP_LOCAL_PORT_RANGE here: {}", s.line());
            assert!(s.line().contains("IP_LOCAL_PORT_RANGE"), "{}", s.line());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_the_range_file_from_a_fixture_root() {
        let dir = std::env::temp_dir().join(format!("loadgen-ports-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sys/net/ipv4")).unwrap();
        std::fs::write(
            dir.join("sys/net/ipv4/ip_local_port_range"),
            "40000\t40009\n",
        )
        .unwrap();
        assert_eq!(read_port_range(&dir).unwrap(), (40000, 40009));
        std::fs::write(dir.join("sys/net/ipv4/ip_local_port_range"), "x").unwrap();
        assert!(read_port_range(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
