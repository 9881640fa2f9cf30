//! Entering a named network namespace (`ip netns add NAME` creates `/var/run/netns/NAME`), see
//! ip-netns(8) and setns(2).
//!
//! setns applies to the calling thread only: call [`enter_netns`] before spawning threads, and read
//! sysctls and counters from that thread (`/proc/sys/net` and `/proc/thread-self/net` follow it).

use std::path::{Path, PathBuf};

/// Directory of named namespaces (ip-netns(8)).
pub const NETNS_DIR: &str = "/var/run/netns";

/// A namespace could not be entered.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// The name could escape the directory.
    #[error("invalid network namespace name {0:?}: use a plain name as in `ip netns list`")]
    BadName(String),
    /// Opening the namespace file failed.
    #[error("cannot open {path}: {source} (create it with `ip netns add NAME`)")]
    Open {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// setns(2) failed.
    #[error("setns({path}) failed: {errno} (needs CAP_SYS_ADMIN; run as root)")]
    Setns {
        /// The file.
        path: PathBuf,
        /// The errno.
        errno: nix::errno::Errno,
    },
}

/// Moves the calling thread into network namespace `name`.
///
/// # Errors
/// [`NetnsError`].
pub fn enter_netns(name: &str) -> Result<(), NetnsError> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." || name.len() > 255 {
        return Err(NetnsError::BadName(name.to_string()));
    }
    let path = PathBuf::from(NETNS_DIR).join(name);
    let f = std::fs::File::open(&path).map_err(|source| NetnsError::Open {
        path: path.clone(),
        source,
    })?;
    nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|errno| NetnsError::Setns { path, errno })
}

/// Which network namespace the calling thread is in, on which boot of which host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetnsId {
    /// Inode of the namespace (`readlink /proc/thread-self/ns/net` = `net:[4026531840]`): unique
    /// among the live namespaces of one boot (nsfs, namespaces(7)).
    pub inode: u64,
    /// The boot id (`/proc/sys/kernel/random/boot_id`, random per boot, the same in every
    /// namespace and container of the host); `None` when unreadable.
    pub boot_id: Option<String>,
}

/// The calling thread's network namespace as seen under `proc_root` (`/proc` on a live host):
/// the inode of `<proc_root>/thread-self/ns/net` and `<proc_root>/sys/kernel/random/boot_id`.
/// `None` when the link cannot be read or is not `net:[N]`. Read from the thread that reads the
/// namespace's counters (setns(2) moves one thread).
pub fn netns_identity(proc_root: &std::path::Path) -> Option<NetnsId> {
    let link = std::fs::read_link(proc_root.join("thread-self/ns/net")).ok()?;
    let inode = link
        .to_str()?
        .strip_prefix("net:[")?
        .strip_suffix(']')?
        .parse()
        .ok()?;
    let boot_id = std::fs::read_to_string(proc_root.join("sys/kernel/random/boot_id"))
        .ok()
        .map(|b| b.trim().to_string())
        .filter(|b| !b.is_empty());
    Some(NetnsId { inode, boot_id })
}

/// The calling thread's network namespace identity (`net:[4026531840]`), `None` if unreadable.
pub(crate) fn current_netns() -> Option<String> {
    std::fs::read_link("/proc/thread-self/ns/net")
        .ok()
        .map(|p| p.to_string_lossy().to_string())
}

/// True when the calling thread is in the initial (host) network namespace.
///
/// Two signals, either of which says "child": the thread's namespace differs from PID 1's
/// (`/proc/1/ns/net` is often unreadable, EACCES, in sandboxes), or
/// `/proc/sys/net/core/netdev_max_backlog` is absent — global net.core sysctls are registered
/// only for the initial namespace (net/core/sysctl_net_core.c, `net_core_table`).
pub fn in_initial_netns() -> bool {
    if let (Some(me), Ok(init)) = (current_netns(), std::fs::read_link("/proc/1/ns/net")) {
        if me != init.to_string_lossy() {
            return false;
        }
    }
    Path::new("/proc/sys/net/core/netdev_max_backlog").exists()
}

/// A file that exists only in the initial network namespace: net/core/sysctl_net_core.c
/// registers `net_core_table` (netdev_max_backlog, rmem_max, ...) for `init_net` alone, so a
/// namespace where it exists is the initial one.
pub const INITIAL_MARKER: &str = "/proc/sys/net/core/netdev_max_backlog";

/// A handle on the initial network namespace, looked for once per process: the calling
/// thread's own when [`INITIAL_MARKER`] exists in it, else the first namespace of a process
/// under `/proc` (PID 1 first) that this process may open and in which the marker exists.
/// `None` when there is none to open (`/proc/1/ns/net` is often EACCES in sandboxes) or
/// setns(2) is refused (needs CAP_SYS_ADMIN).
fn initial_handle() -> Option<&'static std::fs::File> {
    use std::os::unix::fs::MetadataExt;
    static INITIAL: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    INITIAL
        .get_or_init(|| {
            let own = std::fs::File::open("/proc/thread-self/ns/net").ok()?;
            if std::path::Path::new(INITIAL_MARKER).exists() {
                return Some(own);
            }
            // The search moves a thread of its own from namespace to namespace.
            std::thread::scope(|s| {
                s.spawn(|| {
                    let mut tried = std::collections::BTreeSet::new();
                    tried.insert(own.metadata().ok()?.ino());
                    let others = std::fs::read_dir("/proc").ok()?.filter_map(|e| {
                        let name = e.ok()?.file_name().into_string().ok()?;
                        (name != "1" && name.bytes().all(|b| b.is_ascii_digit())).then_some(name)
                    });
                    for pid in std::iter::once("1".to_string()).chain(others) {
                        let Ok(file) = std::fs::File::open(format!("/proc/{pid}/ns/net")) else {
                            continue;
                        };
                        let Some(ino) = file.metadata().ok().map(|m| m.ino()) else {
                            continue;
                        };
                        if !tried.insert(ino) {
                            continue;
                        }
                        if nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).is_ok()
                            && std::path::Path::new(INITIAL_MARKER).exists()
                        {
                            return Some(file);
                        }
                    }
                    None
                })
                .join()
                .ok()
                .flatten()
            })
        })
        .as_ref()
}

/// Runs `f` on a new thread inside the initial network namespace (see `initial_handle`'s
/// search) and returns its result, leaving the calling thread where it is: what
/// `/proc/sys/net` holds on the host, seen from a child namespace (`/proc/sys/net` follows the
/// reading thread's namespace, net/sysctl_net.c `net_ctl_header_lookup`). `None` when the
/// initial namespace cannot be entered (no process in it this process may open, or setns(2)
/// refused: needs CAP_SYS_ADMIN).
pub(crate) fn run_in_initial_netns<T: Send>(f: impl FnOnce() -> T + Send) -> Option<T> {
    let handle = initial_handle()?;
    std::thread::scope(|s| {
        s.spawn(|| {
            nix::sched::setns(handle, nix::sched::CloneFlags::CLONE_NEWNET).ok()?;
            Some(f())
        })
        .join()
        .ok()
        .flatten()
    })
}

/// Runs `f` on a new thread inside a new, empty network namespace (unshare(2)
/// `CLONE_NEWNET`; freed by the kernel when the thread ends) and returns its result, leaving
/// the calling thread where it is: what the kernel gives every namespace of its own — the
/// per-namespace sysctl tables are registered for each new namespace, the global ones for the
/// initial namespace alone (net/sysctl_net.c). `None` when the namespace cannot be made (needs
/// CAP_SYS_ADMIN).
pub(crate) fn run_in_fresh_netns<T: Send>(f: impl FnOnce() -> T + Send) -> Option<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).ok()?;
            Some(f())
        })
        .join()
        .ok()
        .flatten()
    })
}

/// Server-side address inside an [`NsPair`] (RFC 2544's benchmarking range 198.18.0.0/15; it
/// exists only inside the two namespaces).
pub const PAIR_SERVER_IP: std::net::IpAddr =
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(198, 18, 0, 1));

/// Load-side address inside an [`NsPair`].
pub const PAIR_LOAD_IP: std::net::IpAddr =
    std::net::IpAddr::V4(std::net::Ipv4Addr::new(198, 18, 0, 2));

/// What went wrong making or using an [`NsPair`]. Messages carry their cause (no `source()`
/// chain), so `{err:#}` prints it once.
#[derive(Debug, thiserror::Error)]
pub enum PairError {
    /// A tool of iproute2 could not be started.
    #[error("cannot run `{cmd}`: install iproute2: {error}")]
    Spawn {
        /// `ip` or `tc`.
        cmd: String,
        /// Why it could not start.
        error: std::io::Error,
    },
    /// An `ip` command failed.
    #[error("`{command}` failed: {stderr} (bench --netns needs root and iproute2)")]
    Failed {
        /// The command line.
        command: String,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// The kernel has no netem qdisc (tc said so: a configuration problem of the host, met
    /// through the caller's `--rtt`).
    #[error("--rtt needs the netem qdisc, which this kernel does not have ({0}): build or load sch_netem (CONFIG_NET_SCH_NETEM, `modprobe sch_netem`), or run without --rtt")]
    NetemMissing(String),
    /// `tc qdisc add ... netem` failed for another reason (its standard error says which).
    #[error("`{command}` failed: {stderr}")]
    Netem {
        /// The command line.
        command: String,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// The round-trip time is beyond what netem takes ([`check_rtt`]).
    #[error("{0}")]
    Rtt(String),
    /// A namespace file or the thread's own namespace could not be opened.
    #[error("open {path}: {error}")]
    Open {
        /// The file.
        path: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// setns(2) failed.
    #[error("{what}: {errno}")]
    Setns {
        /// Into the pair or back home.
        what: &'static str,
        /// The errno.
        errno: nix::errno::Errno,
    },
    /// The server namespace's `net.core.somaxconn` could not be raised.
    #[error("raise net.core.somaxconn in the server namespace: {0}")]
    Somaxconn(std::io::Error),
}

/// Longest delay one netem qdisc takes: tc hands the delay to the kernel in the 32-bit
/// `latency` field of `struct tc_netem_qopt` (include/uapi/linux/pkt_sched.h), counted in
/// psched ticks of 64 ns (include/net/pkt_sched.h, `PSCHED_SHIFT` 6; /proc/net/psched), and
/// refuses a longer one ("Illegal N time (too large)": iproute2 tc/q_netem.c `get_ticks` →
/// tc/tc_core.c `tc_core_time2big`): 2^32 × 64 ns = 274.877906944 s, in the whole microseconds
/// [`NsPair::create`] passes.
pub const MAX_NETEM_DELAY: std::time::Duration = std::time::Duration::from_micros(274_877_906);

/// Longest round-trip time an [`NsPair`] adds: [`MAX_NETEM_DELAY`] on each side's veth
/// (rtt/2 each), 549.755812 s.
pub const MAX_RTT: std::time::Duration = std::time::Duration::from_micros(2 * 274_877_906);

/// Refuses a round-trip time netem cannot add ([`MAX_RTT`]); checked when the option is parsed,
/// before anything is made. iproute2's own parser keeps microseconds in 32 bits, so a delay of
/// 2^32 µs or more would wrap around to a small one rather than fail.
///
/// # Errors
/// A message naming `--rtt`, the allowed range and why.
pub fn check_rtt(rtt: std::time::Duration) -> Result<(), String> {
    if rtt > MAX_RTT {
        return Err(format!(
            "--rtt {} is outside 0s..={}: netem delays each side by rtt/2 and takes at most {} (a 32-bit count of 64 ns psched ticks in struct tc_netem_qopt)",
            humantime_us(rtt),
            humantime_us(MAX_RTT),
            humantime_us(MAX_NETEM_DELAY)
        ));
    }
    Ok(())
}

/// `549.755812s`, `10ms`: seconds with up to six decimals, or whole milliseconds/µs.
fn humantime_us(d: std::time::Duration) -> String {
    let us = d.as_micros();
    if us >= 1_000_000 {
        let s = format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
        format!("{}s", s.trim_end_matches('0').trim_end_matches('.'))
    } else if us.is_multiple_of(1000) {
        format!("{}ms", us / 1000)
    } else {
        format!("{us}us")
    }
}

/// Whether tc's standard error says the kernel has no netem qdisc: "Specified qdisc kind is
/// unknown" (the extack of net/sched/sch_api.c `qdisc_create` when no module provides the
/// kind, ENOENT) or, from kernels without extack, ENOENT's "No such file or directory".
/// Anything else (a refused parameter, a missing device, EPERM) is not a missing module.
pub(crate) fn netem_missing(stderr: &str) -> bool {
    stderr.contains("Specified qdisc kind is unknown")
        || stderr.contains("No such file or directory")
}

/// Two fresh network namespaces, one for a server and one for a load generator, joined by a
/// veth pair (`PAIR_SERVER_IP`/30 and `PAIR_LOAD_IP`/30), optionally with netem delay; both are
/// removed when the pair is dropped. The closest thing to two hosts on one machine: counters
/// read in each namespace see only the pair's traffic.
///
/// Needs root (CAP_SYS_ADMIN) and iproute2 (`ip`, `tc`); netem needs the `sch_netem` qdisc
/// (CONFIG_NET_SCH_NETEM). Namespaces are per thread (setns(2)): threads spawned while the
/// caller is inside one ([`NsPair::enter_server`], [`NsPair::enter_load`]) stay in it.
#[derive(Debug)]
pub struct NsPair {
    /// Name of the server's namespace (under `/run/netns`).
    pub server: String,
    /// Name of the load generator's namespace.
    pub load: String,
    server_fd: std::fs::File,
    load_fd: std::fs::File,
}

fn run_tool(cmd: &str, args: &[&str]) -> Result<std::process::Output, PairError> {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .map_err(|error| PairError::Spawn {
            cmd: cmd.to_string(),
            error,
        })
}

fn ip(args: &[&str]) -> Result<(), PairError> {
    let out = run_tool("ip", args)?;
    if !out.status.success() {
        return Err(PairError::Failed {
            command: format!("ip {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

impl NsPair {
    /// The namespace names a pair tagged `tag` gets: `connstorm-TAG-srv`, `connstorm-TAG-load`
    /// (callers pass their PID, so concurrent runs do not collide).
    pub fn names(tag: &str) -> (String, String) {
        (
            format!("connstorm-{tag}-srv"),
            format!("connstorm-{tag}-load"),
        )
    }

    /// Removes both namespaces of the pair tagged `tag` (and the veth inside them), ignoring
    /// errors: for a cleanup hook that runs when the process is forced to exit.
    pub fn remove(tag: &str) {
        let (server, load) = Self::names(tag);
        let _ = ip(&["netns", "del", &server]);
        let _ = ip(&["netns", "del", &load]);
    }

    /// Creates the pair tagged `tag` ([`NsPair::names`]); `rtt` adds netem delay of rtt/2 on
    /// each side's veth. Raises `net.core.somaxconn` in the server namespace to 65535 (a fresh
    /// namespace starts at 4096, capping any listen backlog).
    ///
    /// # Errors
    /// [`PairError`] when a namespace, the veth pair or the qdisc cannot be made; what was made
    /// is removed.
    pub fn create(tag: &str, rtt: Option<std::time::Duration>) -> Result<NsPair, PairError> {
        if let Some(rtt) = rtt {
            check_rtt(rtt).map_err(PairError::Rtt)?;
        }
        let (server, load) = Self::names(tag);
        ip(&["netns", "add", &server])?;
        if let Err(e) = ip(&["netns", "add", &load]) {
            let _ = ip(&["netns", "del", &server]);
            return Err(e);
        }
        // From here on, dropping the half-built pair removes both namespaces (and the veth).
        let open = |n: &str| {
            let path = format!("/run/netns/{n}");
            std::fs::File::open(&path).map_err(|error| PairError::Open { path, error })
        };
        let pair = match (open(&server), open(&load)) {
            (Ok(server_fd), Ok(load_fd)) => NsPair {
                server: server.clone(),
                load: load.clone(),
                server_fd,
                load_fd,
            },
            (Err(e), _) | (_, Err(e)) => {
                Self::remove(tag);
                return Err(e);
            }
        };
        let (vs, vl) = veth_names(tag);
        ip(&[
            "link", "add", &vs, "netns", &server, "type", "veth", "peer", "name", &vl, "netns",
            &load,
        ])?;
        for (ns, dev, addr) in [
            (&server, &vs, format!("{PAIR_SERVER_IP}/30")),
            (&load, &vl, format!("{PAIR_LOAD_IP}/30")),
        ] {
            ip(&["-n", ns, "addr", "add", &addr, "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            if let Some(rtt) = rtt {
                let half = format!("{}us", (rtt.as_micros() / 2).max(1));
                let args = [
                    "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "netem",
                    "delay", &half, "limit", "100000",
                ];
                let out = run_tool("ip", &args)?;
                if !out.status.success() {
                    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
                    return Err(if netem_missing(&stderr) {
                        PairError::NetemMissing(stderr)
                    } else {
                        PairError::Netem {
                            command: format!("ip {}", args.join(" ")),
                            stderr,
                        }
                    });
                }
            }
        }
        // Our own namespace: raise the accept-queue cap to the backlog a server may ask for.
        pair.enter_server(|| std::fs::write("/proc/sys/net/core/somaxconn", "65535"))?
            .map_err(PairError::Somaxconn)?;
        Ok(pair)
    }

    /// Runs `f` with the calling thread inside the server namespace, then returns to the
    /// original one.
    ///
    /// # Errors
    /// [`PairError::Open`] or [`PairError::Setns`] if setns(2) fails either way.
    pub fn enter_server<T>(&self, f: impl FnOnce() -> T) -> Result<T, PairError> {
        in_ns(&self.server_fd, f)
    }

    /// Runs `f` with the calling thread inside the load namespace, then returns to the original
    /// one.
    ///
    /// # Errors
    /// As [`NsPair::enter_server`].
    pub fn enter_load<T>(&self, f: impl FnOnce() -> T) -> Result<T, PairError> {
        in_ns(&self.load_fd, f)
    }
}

/// The veth names of the pair tagged `tag`: `csTAGs` and `csTAGl`, the tag cut to 12
/// characters so each name fits the 15 an interface name may have (IFNAMSIZ − 1).
fn veth_names(tag: &str) -> (String, String) {
    let tag: String = tag.chars().take(12).collect();
    (format!("cs{tag}s"), format!("cs{tag}l"))
}

fn in_ns<T>(target: &std::fs::File, f: impl FnOnce() -> T) -> Result<T, PairError> {
    let path = "/proc/thread-self/ns/net";
    let home = std::fs::File::open(path).map_err(|error| PairError::Open {
        path: path.to_string(),
        error,
    })?;
    nix::sched::setns(target, nix::sched::CloneFlags::CLONE_NEWNET).map_err(|errno| {
        PairError::Setns {
            what: "setns into the benchmark namespace",
            errno,
        }
    })?;
    let out = f();
    nix::sched::setns(&home, nix::sched::CloneFlags::CLONE_NEWNET).map_err(|errno| {
        PairError::Setns {
            what: "setns back to the original namespace",
            errno,
        }
    })?;
    Ok(out)
}

impl Drop for NsPair {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.server]);
        let _ = ip(&["netns", "del", &self.load]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_reads_the_namespace_inode_and_the_boot_id() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("thread-self/ns")).unwrap();
        std::fs::create_dir_all(root.path().join("sys/kernel/random")).unwrap();
        std::os::unix::fs::symlink("net:[4026532417]", root.path().join("thread-self/ns/net"))
            .unwrap();
        std::fs::write(root.path().join("sys/kernel/random/boot_id"), "5e1f\n").unwrap();
        assert_eq!(
            netns_identity(root.path()),
            Some(NetnsId {
                inode: 4_026_532_417,
                boot_id: Some("5e1f".into())
            })
        );
        std::fs::remove_file(root.path().join("sys/kernel/random/boot_id")).unwrap();
        assert_eq!(netns_identity(root.path()).unwrap().boot_id, None);
        std::fs::remove_file(root.path().join("thread-self/ns/net")).unwrap();
        std::os::unix::fs::symlink("mnt:[1]", root.path().join("thread-self/ns/net")).unwrap();
        assert_eq!(netns_identity(root.path()), None);
        // The live host: this thread's namespace has an inode.
        assert!(netns_identity(std::path::Path::new("/proc")).is_some_and(|i| i.inode > 0));
    }

    /// Finding: `--rtt 10d` reached tc, whose "Illegal 2503270400 time (too large)" was
    /// blamed on a missing sch_netem. The range is checked first; only a missing qdisc kind
    /// blames the module.
    #[test]
    fn an_rtt_netem_cannot_take_is_refused_and_only_a_missing_qdisc_blames_sch_netem() {
        use std::time::Duration;
        assert_eq!(check_rtt(MAX_RTT), Ok(()));
        assert_eq!(check_rtt(Duration::ZERO), Ok(()));
        assert_eq!(MAX_RTT, Duration::from_micros(549_755_812));
        let e = check_rtt(Duration::from_secs(10 * 86_400)).unwrap_err();
        assert_eq!(
            e,
            "--rtt 864000s is outside 0s..=549.755812s: netem delays each side by rtt/2 and takes at most 274.877906s (a 32-bit count of 64 ns psched ticks in struct tc_netem_qopt)"
        );
        assert!(check_rtt(MAX_RTT + Duration::from_micros(1)).is_err());
        assert!(matches!(
            NsPair::create("rtt-check", Some(Duration::from_secs(600))),
            Err(PairError::Rtt(_))
        ));
        assert!(netem_missing("Error: Specified qdisc kind is unknown."));
        assert!(netem_missing(
            "RTNETLINK answers: No such file or directory"
        ));
        assert!(!netem_missing(
            "Illegal 2503270400 time (too large)\nIllegal \"latency\""
        ));
        assert!(!netem_missing("RTNETLINK answers: Operation not permitted"));
        let generic = PairError::Netem {
            command: "ip netns exec x tc qdisc add dev v root netem".into(),
            stderr: "RTNETLINK answers: Invalid argument".into(),
        };
        assert!(!generic.to_string().contains("sch_netem"), "{generic}");
        assert!(PairError::NetemMissing("x".into())
            .to_string()
            .contains("sch_netem"));
    }

    #[test]
    fn pair_names_follow_the_tag_and_veth_names_fit_ifnamsiz() {
        assert_eq!(
            NsPair::names("4242"),
            (
                "connstorm-4242-srv".to_string(),
                "connstorm-4242-load".to_string()
            )
        );
        assert_eq!(
            veth_names("4242"),
            ("cs4242s".to_string(), "cs4242l".to_string())
        );
        let (s, l) = veth_names("4194304-pair-test");
        assert_eq!((s.len(), l.len()), (15, 15));
        assert_ne!(s, l, "a long tag must not cut away the side letter");
    }

    /// Creates a real pair (root and iproute2, as `.ci/run` provides), checks each side sees
    /// its own address and the raised somaxconn, connects across the veth, and checks that
    /// dropping the pair removes both namespaces.
    #[test]
    fn pair_joins_two_namespaces_and_is_removed_on_drop() {
        let tag = format!("{}p", std::process::id());
        let pair = NsPair::create(&tag, None).expect("create the pair (root and iproute2)");
        let (server, load) = NsPair::names(&tag);
        assert!(std::path::Path::new(&format!("/run/netns/{server}")).exists());
        let somaxconn = pair
            .enter_server(|| std::fs::read_to_string("/proc/sys/net/core/somaxconn"))
            .unwrap()
            .unwrap();
        assert_eq!(somaxconn.trim(), "65535");
        let listener = pair
            .enter_server(|| std::net::TcpListener::bind((PAIR_SERVER_IP, 0)))
            .unwrap()
            .unwrap();
        let to = listener.local_addr().unwrap();
        let client = pair
            .enter_load(|| {
                std::net::TcpStream::connect_timeout(&to, std::time::Duration::from_secs(5))
            })
            .unwrap()
            .unwrap();
        assert_eq!(client.local_addr().unwrap().ip(), PAIR_LOAD_IP);
        let (_, peer) = listener.accept().unwrap();
        assert_eq!(peer.ip(), PAIR_LOAD_IP);
        // The calling thread is back home: the pair's address is not bound here.
        assert!(std::net::TcpListener::bind((PAIR_SERVER_IP, 0)).is_err());
        drop((client, listener));
        drop(pair);
        assert!(!std::path::Path::new(&format!("/run/netns/{server}")).exists());
        assert!(!std::path::Path::new(&format!("/run/netns/{load}")).exists());
    }
}
