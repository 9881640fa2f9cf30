//! Entering a named network namespace (`ip netns add NAME` creates `/var/run/netns/NAME`), see
//! ip-netns(8) and setns(2).
//!
//! setns applies to the calling thread only: call [`enter`] before spawning threads, and read
//! sysctls and counters from that thread (`/proc/sys/net` and `/proc/thread-self/net` follow it).

use std::path::PathBuf;

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
pub fn enter(name: &str) -> Result<(), NetnsError> {
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
pub fn identity(proc_root: &std::path::Path) -> Option<NetnsId> {
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
    /// The kernel refused the netem qdisc (a configuration problem: the caller's `--rtt`).
    #[error("--rtt needs the netem qdisc, which this kernel refused ({0}): build or load sch_netem (CONFIG_NET_SCH_NETEM), or run without --rtt")]
    Netem(String),
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
                let out = run_tool(
                    "ip",
                    &[
                        "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "netem",
                        "delay", &half, "limit", "100000",
                    ],
                )?;
                if !out.status.success() {
                    return Err(PairError::Netem(
                        String::from_utf8_lossy(&out.stderr).trim().to_string(),
                    ));
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
            identity(root.path()),
            Some(NetnsId {
                inode: 4_026_532_417,
                boot_id: Some("5e1f".into())
            })
        );
        std::fs::remove_file(root.path().join("sys/kernel/random/boot_id")).unwrap();
        assert_eq!(identity(root.path()).unwrap().boot_id, None);
        std::fs::remove_file(root.path().join("thread-self/ns/net")).unwrap();
        std::os::unix::fs::symlink("mnt:[1]", root.path().join("thread-self/ns/net")).unwrap();
        assert_eq!(identity(root.path()), None);
        // The live host: this thread's namespace has an inode.
        assert!(identity(std::path::Path::new("/proc")).is_some_and(|i| i.inode > 0));
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
