//! `bench --netns`: two fresh network namespaces, one for the server and one for the load
//! generator, joined by a veth pair, optionally with netem delay (`--rtt`), and torn down when the
//! [`NsPair`] is dropped — the closest thing to two hosts on one machine. Counters read in each
//! namespace see only the benchmark's traffic, so the cross-check must agree exactly.
//!
//! Addresses come from 198.18.0.0/15, the range RFC 2544 reserves for benchmarking, and exist only
//! inside the two namespaces. Needs root (CAP_SYS_ADMIN) and iproute2 (`ip`, `tc`); netem needs the
//! `sch_netem` qdisc (CONFIG_NET_SCH_NETEM). Namespaces are per thread (setns(2)); threads spawned
//! while the caller is inside a namespace stay in it, which is how the server's and the load
//! generator's workers land in theirs.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsFd;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context};

/// Server-side address inside the pair.
pub const SERVER_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(198, 18, 0, 1));

/// Two namespaces joined by veth; removed on drop.
#[derive(Debug)]
pub struct NsPair {
    /// Name of the server's namespace (under /run/netns).
    pub server: String,
    /// Name of the load generator's namespace.
    pub load: String,
    server_fd: File,
    load_fd: File,
    _forced_exit: crate::signals::HookGuard,
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    run("ip", args)
}

fn run(cmd: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .with_context(|| format!("cannot run `{cmd}`: install iproute2"))?;
    if !out.status.success() {
        bail!(
            "`{cmd} {}` failed: {} (bench --netns needs root and iproute2)",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl NsPair {
    /// Creates the pair; `rtt` adds netem delay of rtt/2 on each side's veth.
    ///
    /// # Errors
    /// When a namespace, the veth pair or the qdisc cannot be made; what was made is removed.
    pub fn create(rtt: Option<Duration>) -> anyhow::Result<NsPair> {
        let pid = std::process::id();
        let server = format!("connstorm-{pid}-srv");
        let load = format!("connstorm-{pid}-load");
        // Registered before the first namespace exists: a second Ctrl-C at any point of the
        // setup must not leave one behind.
        let forced_exit = {
            let (s, l) = (server.clone(), load.clone());
            crate::signals::on_forced_exit(move || {
                let _ = ip(&["netns", "del", &s]);
                let _ = ip(&["netns", "del", &l]);
            })
        };
        ip(&["netns", "add", &server])?;
        if let Err(e) = ip(&["netns", "add", &load]) {
            let _ = ip(&["netns", "del", &server]);
            return Err(e);
        }
        // From here on, dropping the half-built pair removes both namespaces (and the veth in them).
        let open = |n: &str| {
            File::open(format!("/run/netns/{n}")).with_context(|| format!("open /run/netns/{n}"))
        };
        let pair = match (open(&server), open(&load)) {
            (Ok(server_fd), Ok(load_fd)) => NsPair {
                server: server.clone(),
                load: load.clone(),
                server_fd,
                load_fd,
                _forced_exit: forced_exit,
            },
            (Err(e), _) | (_, Err(e)) => {
                let _ = ip(&["netns", "del", &server]);
                let _ = ip(&["netns", "del", &load]);
                return Err(e);
            }
        };
        let (vs, vl) = (format!("cs{pid}s"), format!("cs{pid}l"));
        let (vs, vl) = (truncate15(&vs), truncate15(&vl));
        ip(&[
            "link", "add", &vs, "netns", &server, "type", "veth", "peer", "name", &vl, "netns",
            &load,
        ])?;
        for (ns, dev, addr) in [
            (&server, &vs, "198.18.0.1/30"),
            (&load, &vl, "198.18.0.2/30"),
        ] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            if let Some(rtt) = rtt {
                let half = format!("{}us", (rtt.as_micros() / 2).max(1));
                let out = Command::new("ip")
                    .args([
                        "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "netem",
                        "delay", &half, "limit", "100000",
                    ])
                    .output()
                    .context("cannot run `tc`: install iproute2")?;
                if !out.status.success() {
                    return Err(crate::error::bad_input(format!(
                        "--rtt needs the netem qdisc, which this kernel refused ({}): build or load sch_netem (CONFIG_NET_SCH_NETEM), or run without --rtt",
                        String::from_utf8_lossy(&out.stderr).trim()
                    )));
                }
            }
        }
        // The accept queue of a fresh namespace is capped at somaxconn 4096; these are our own
        // namespaces, so raise it to the listen() backlog the server asks for.
        pair.enter_server(|| std::fs::write("/proc/sys/net/core/somaxconn", "65535"))?
            .context("raise net.core.somaxconn in the server namespace")?;
        Ok(pair)
    }

    /// Runs `f` with the calling thread inside the server namespace, then returns to the original.
    ///
    /// # Errors
    /// If setns(2) fails.
    pub fn enter_server<T>(&self, f: impl FnOnce() -> T) -> anyhow::Result<T> {
        in_ns(&self.server_fd, f)
    }

    /// Runs `f` with the calling thread inside the load namespace, then returns to the original.
    ///
    /// # Errors
    /// If setns(2) fails.
    pub fn enter_load<T>(&self, f: impl FnOnce() -> T) -> anyhow::Result<T> {
        in_ns(&self.load_fd, f)
    }
}

fn truncate15(s: &str) -> String {
    s.chars().take(15).collect()
}

fn in_ns<T>(target: &File, f: impl FnOnce() -> T) -> anyhow::Result<T> {
    let home = File::open("/proc/thread-self/ns/net").context("open /proc/thread-self/ns/net")?;
    nix::sched::setns(target.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
        .context("setns into the benchmark namespace")?;
    let out = f();
    nix::sched::setns(home.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
        .context("setns back to the original namespace")?;
    Ok(out)
}

impl Drop for NsPair {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.server]);
        let _ = ip(&["netns", "del", &self.load]);
    }
}
