//! The ephemeral-port budget of a run, estimated before it starts.
//!
//! A client connection needs a free local port for its (source IP, destination IP, destination
//! port) triple, taken from `net.ipv4.ip_local_port_range` (ip-sysctl.rst; default 32768-60999 =
//! 28,232 ports). With [`CloseMode::Fin`] every port then stays in TIME_WAIT for 60 s
//! (TCP_TIMEWAIT_LEN, not tunable; `tcp_fin_timeout` does not change it), so the sustainable rate
//! is about `ports × triples / 60 s` (≈ 470/s for one triple at the default range) unless
//! `tcp_tw_reuse` lets connect(2) reuse TIME_WAIT ports (Linux 4.x+, needs TCP timestamps;
//! default 2 = loopback only, after `tcp_tw_reuse_delay`, 1 s by default).

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use serde::Serialize;

use crate::config::CloseMode;

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

#[cfg(test)]
mod tests {
    use super::*;

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
