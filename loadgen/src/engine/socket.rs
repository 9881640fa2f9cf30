//! Plain sockets, as both engines make them when they use socket(2) ([`Net`]): the family of
//! each target, SO_LINGER {1, 0} for `--close rst`, a source address of the target's family
//! (IP_BIND_ADDRESS_NO_PORT + bind(2), round-robin over the worker's share of the sources), the
//! worker's slice of the ephemeral range (IP_LOCAL_PORT_RANGE, [`crate::ports`]), and asking a
//! connecting socket where it stands ([`probe`]).

use std::os::fd::{AsFd, AsRawFd};

use std::time::Duration;

use nix::sys::socket::{setsockopt, sockopt};
use socket2::{Domain, SockAddr, Socket, Type};

use crate::config::{CloseMode, LoadConfig};
use crate::core::{verdict, Verdict};

/// The socket option `IP_LOCAL_PORT_RANGE` (include/uapi/linux/in.h, Linux 6.3; not in the
/// `libc` crate yet), re-exported as [`crate::ports::IP_LOCAL_PORT_RANGE`].
pub const IP_LOCAL_PORT_RANGE: i32 = 51;

/// What a plain socket of a run needs: its targets' families and addresses, the sources.
#[derive(Debug)]
pub(crate) struct Net {
    domains: Vec<Domain>,
    targets: Vec<SockAddr>,
    sources_v4: Vec<SockAddr>,
    sources_v6: Vec<SockAddr>,
    rst: bool,
    /// The worker's slice of the ephemeral range as the IP_LOCAL_PORT_RANGE value
    /// ([`crate::ports::range_value`]); `None` = the shared range.
    port_range: Option<u32>,
}

impl Net {
    /// The sockets of worker `worker` of `cfg`, connecting from `port_range` (its slice,
    /// [`crate::ports::range_value`]) when given.
    pub(crate) fn new(cfg: &LoadConfig, worker: usize, port_range: Option<u32>) -> Net {
        Net {
            domains: cfg
                .targets
                .iter()
                .map(|&t| Domain::for_address(t))
                .collect(),
            targets: cfg.targets.iter().map(|&t| SockAddr::from(t)).collect(),
            sources_v4: worker_sources(&sources(cfg, true), worker, cfg.workers()),
            sources_v6: worker_sources(&sources(cfg, false), worker, cfg.workers()),
            rst: cfg.close == CloseMode::Rst,
            port_range,
        }
    }

    /// The worker's slice as the IP_LOCAL_PORT_RANGE value (`None`: the shared range).
    pub(crate) fn port_range(&self) -> Option<u32> {
        self.port_range
    }

    /// Target `target`'s address.
    pub(crate) fn target(&self, target: usize) -> &SockAddr {
        &self.targets[target]
    }

    /// A stream socket for target `target` (non-blocking when `nonblocking`), its options set
    /// ([`Self::prepare`]); `rr` picks the source.
    ///
    /// # Errors
    /// socket(2), setsockopt(2) or bind(2) failed.
    pub(crate) fn socket(
        &self,
        target: usize,
        rr: usize,
        nonblocking: bool,
    ) -> std::io::Result<Socket> {
        let ty = if nonblocking {
            Type::STREAM.nonblocking()
        } else {
            Type::STREAM
        };
        let sock = Socket::new(self.domains[target], ty, None)?;
        self.prepare(&sock, target, rr)?;
        Ok(sock)
    }

    /// Socket options before connect: SO_LINGER 0 for RST close, the worker's port slice, a
    /// source address of the target's family (the `rr`-th of the worker's, round-robin; none of
    /// that family = the kernel chooses).
    fn prepare(&self, sock: &Socket, target: usize, rr: usize) -> std::io::Result<()> {
        if self.rst {
            sock.set_linger(Some(Duration::ZERO))?;
        }
        if let Some(v) = self.port_range {
            set_port_range(sock, v)?;
        }
        let sources = if self.domains[target] == Domain::IPV4 {
            &self.sources_v4
        } else {
            &self.sources_v6
        };
        if !sources.is_empty() {
            setsockopt(sock, sockopt::IpBindAddressNoPort, &true)?;
            sock.bind(&sources[rr % sources.len()])?;
        }
        Ok(())
    }
}

/// The config's sources of one family as socket addresses with port 0.
fn sources(cfg: &LoadConfig, v4: bool) -> Vec<SockAddr> {
    cfg.sources
        .iter()
        .filter(|ip| ip.is_ipv4() == v4)
        .map(|&ip| SockAddr::from(std::net::SocketAddr::new(ip, 0)))
        .collect()
}

/// Worker `worker`'s share of `all` (one family's sources), of `workers` workers: every
/// `workers`-th source from its index when there are at least as many sources as workers
/// (disjoint shares), else the one source `worker % len` (shared by several workers, each
/// worker still on one). Empty stays empty.
pub(crate) fn worker_sources(all: &[SockAddr], worker: usize, workers: usize) -> Vec<SockAddr> {
    if all.is_empty() {
        return Vec::new();
    }
    if all.len() >= workers {
        all.iter()
            .skip(worker)
            .step_by(workers.max(1))
            .cloned()
            .collect()
    } else {
        vec![all[worker % all.len()].clone()]
    }
}

/// setsockopt(IPPROTO_IP, IP_LOCAL_PORT_RANGE, `value`) on `sock` (ip(7), Linux 6.3; works on
/// IPv6 sockets too: the IPv6 layer passes SOL_IP options to the IPv4 one).
///
/// # Errors
/// ENOPROTOOPT on a kernel without the option, EINVAL for a lower bound not below the upper.
#[allow(unsafe_code)]
pub(crate) fn set_port_range(sock: &impl AsFd, value: u32) -> std::io::Result<()> {
    let fd = sock.as_fd().as_raw_fd();
    // SAFETY: `fd` is a live descriptor borrowed for the call; the kernel reads exactly
    // size_of::<u32>() bytes from `&value`, a local that outlives the call, and keeps no pointer.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_IP,
            IP_LOCAL_PORT_RANGE,
            (&raw const value).cast(),
            std::mem::size_of::<u32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether the kernel takes IP_LOCAL_PORT_RANGE `value` on a scratch TCP socket of the family
/// (`v6`): the check [`crate::ports::resolve`] runs once per run.
///
/// # Errors
/// socket(2) or the setsockopt's error (ENOPROTOOPT: the kernel lacks the option).
pub(crate) fn probe_port_range(v6: bool, value: u32) -> std::io::Result<()> {
    let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
    let s = Socket::new(domain, Type::STREAM, None)?;
    set_port_range(&s, value)
}

/// Asks the kernel where a connecting socket is: getsockopt(SO_ERROR), then getpeername(2). Two
/// syscalls, only for attempts whose deadline has passed (or that a stop cut).
pub(crate) fn probe(sock: &Socket) -> Verdict {
    let so_error = match sock.take_error() {
        Ok(None) => 0,
        Ok(Some(e)) => errno(&e),
        Err(e) => errno(&e),
    };
    if so_error != 0 {
        return verdict(so_error, Ok(()));
    }
    verdict(0, sock.peer_addr().map(|_| ()).map_err(|e| errno(&e)))
}

/// The errno of an I/O error (0 when it has none).
pub(crate) fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn connecting(to: &SocketAddr) -> Socket {
        let s = Socket::new(Domain::IPV4, Type::STREAM.nonblocking(), None).unwrap();
        match s.connect(&SockAddr::from(*to)) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => panic!("connect: {e}"),
        }
        s
    }

    /// Real sockets, never looked at through epoll: a completed handshake, a refused one, and
    /// connects whose SYN the kernel dropped (full accept queue) are told apart by [`probe`].
    #[test]
    fn probe_tells_completed_refused_and_syn_sent_apart() {
        let (verdicts, refused) = testkit::NetNs::run(|_| {
            let l = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
            l.bind(&SockAddr::from(SocketAddr::from(([127, 0, 0, 1], 0))))
                .unwrap();
            // Backlog 0, never accepting: the first connection fills the accept queue and the
            // kernel drops later SYNs (retransmitted only after 1 s), so those stay in SYN-SENT.
            l.listen(0).unwrap();
            let addr = l.local_addr().unwrap().as_socket().unwrap();
            let socks: Vec<Socket> = (0..4).map(|_| connecting(&addr)).collect();
            let closed = {
                let c = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                c.local_addr().unwrap()
            };
            let r = connecting(&closed);
            std::thread::sleep(std::time::Duration::from_millis(100));
            let v: Vec<Verdict> = socks.iter().map(probe).collect();
            (v, probe(&r))
        });
        let connected = verdicts
            .iter()
            .filter(|&&v| v == Verdict::Connected)
            .count();
        let pending = verdicts.iter().filter(|&&v| v == Verdict::Pending).count();
        assert!(connected >= 1, "{verdicts:?}");
        assert!(pending >= 1, "{verdicts:?}");
        assert_eq!(connected + pending, verdicts.len(), "{verdicts:?}");
        assert_eq!(refused, Verdict::Failed(libc::ECONNREFUSED));
    }
}
