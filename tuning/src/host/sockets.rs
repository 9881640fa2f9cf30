//! The TCP sockets of the calling thread's network namespace, as the kernel lists them: which
//! ports services listen on, which socket holds a local port, and how many ports toward a
//! destination are still in TIME_WAIT.
//!
//! Read with sock_diag (netlink `NETLINK_SOCK_DIAG`, `SOCK_DIAG_BY_FAMILY` dump of
//! `inet_diag_req_v2` for `AF_INET` and `AF_INET6`, the interface `ss(8)` uses; sock_diag(7),
//! include/uapi/linux/inet_diag.h): one dump costs a few ms for tens of thousands of sockets,
//! where `/proc/net/tcp` formats every socket as text. The netlink socket belongs to the
//! namespace of the thread that opens it, so a thread moved with setns(2) (or a test's
//! `NetNs`) sees its own namespace. Fixture roots have no sockets to ask: [`parse_proc_net_tcp`]
//! reads the same facts from a `/proc/net/tcp` text.
//!
//! The owner of a socket (for "which program holds port 18080") comes from `/proc/PID/fd`:
//! the descriptor whose link reads `socket:[INODE]` (proc(5)), as `ss -p` finds it.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;

use serde::Serialize;

/// A TCP state as the kernel numbers it (include/net/tcp_states.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TcpState {
    /// 1.
    Established,
    /// 2.
    SynSent,
    /// 3.
    SynRecv,
    /// 4.
    FinWait1,
    /// 5.
    FinWait2,
    /// 6.
    TimeWait,
    /// 7.
    Close,
    /// 8.
    CloseWait,
    /// 9.
    LastAck,
    /// 10.
    Listen,
    /// 11.
    Closing,
    /// 12 (a request socket: a SYN answered, the handshake not finished).
    NewSynRecv,
}

impl TcpState {
    /// Every state, in the kernel's order.
    pub const ALL: [TcpState; 12] = [
        TcpState::Established,
        TcpState::SynSent,
        TcpState::SynRecv,
        TcpState::FinWait1,
        TcpState::FinWait2,
        TcpState::TimeWait,
        TcpState::Close,
        TcpState::CloseWait,
        TcpState::LastAck,
        TcpState::Listen,
        TcpState::Closing,
        TcpState::NewSynRecv,
    ];

    /// The kernel's number (`TCP_ESTABLISHED` = 1, ...).
    pub fn number(self) -> u8 {
        TcpState::ALL.iter().position(|s| *s == self).unwrap_or(0) as u8 + 1
    }

    /// The state of a kernel number, `None` for a number it does not use.
    pub fn from_number(n: u8) -> Option<TcpState> {
        TcpState::ALL.get(usize::from(n).checked_sub(1)?).copied()
    }

    /// The name `ss` prints (`ESTAB`, `TIME-WAIT`, `LISTEN`, ...).
    pub fn name(self) -> &'static str {
        match self {
            TcpState::Established => "ESTAB",
            TcpState::SynSent => "SYN-SENT",
            TcpState::SynRecv => "SYN-RECV",
            TcpState::FinWait1 => "FIN-WAIT-1",
            TcpState::FinWait2 => "FIN-WAIT-2",
            TcpState::TimeWait => "TIME-WAIT",
            TcpState::Close => "UNCONN",
            TcpState::CloseWait => "CLOSE-WAIT",
            TcpState::LastAck => "LAST-ACK",
            TcpState::Listen => "LISTEN",
            TcpState::Closing => "CLOSING",
            TcpState::NewSynRecv => "SYN-RECV",
        }
    }
}

/// One TCP socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TcpSocket {
    /// Local address and port.
    pub local: SocketAddr,
    /// Remote address and port (unspecified, port 0, for a listener).
    pub remote: SocketAddr,
    /// State.
    pub state: TcpState,
    /// Time left on the socket's timer, ms (for TIME_WAIT: until it is gone; 0 when none).
    pub expires_ms: u32,
    /// Owner uid (0 for TIME_WAIT sockets, which have none).
    pub uid: u32,
    /// Inode of the socket (0 for TIME_WAIT and request sockets): the link
    /// `/proc/PID/fd/N -> socket:[INODE]` of the process that holds it.
    pub inode: u32,
}

impl TcpSocket {
    /// `local -> remote STATE`, as a line names it.
    pub fn describe(&self) -> String {
        if self.state == TcpState::Listen {
            format!("{} {}", self.local, self.state.name())
        } else {
            format!("{} -> {} {}", self.local, self.remote, self.state.name())
        }
    }
}

const NLMSG_HDR: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
/// `struct inet_diag_msg`: family, state, timer, retrans (4), `inet_diag_sockid` (48),
/// expires, rqueue, wqueue, uid, inode (20).
const INET_DIAG_MSG: usize = 72;

/// The bytes of one `SOCK_DIAG_BY_FAMILY` dump request for `family` and `states` (a bit per state
/// number).
fn request(family: u8, states: u32, seq: u32) -> Vec<u8> {
    // nlmsghdr + inet_diag_req_v2 (family, protocol, ext, pad, states, sockid of 48 bytes).
    let len = NLMSG_HDR + 56;
    let mut b = Vec::with_capacity(len);
    b.extend_from_slice(&(len as u32).to_ne_bytes());
    b.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    b.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.push(family);
    b.push(libc::IPPROTO_TCP as u8);
    b.push(0);
    b.push(0);
    b.extend_from_slice(&states.to_ne_bytes());
    b.resize(len, 0);
    b
}

/// Parses one `inet_diag_msg` (the payload of a `SOCK_DIAG_BY_FAMILY` answer).
fn parse_msg(p: &[u8]) -> Option<TcpSocket> {
    if p.len() < INET_DIAG_MSG {
        return None;
    }
    let family = p[0];
    let state = TcpState::from_number(p[1])?;
    let id = &p[4..52];
    let sport = u16::from_be_bytes([id[0], id[1]]);
    let dport = u16::from_be_bytes([id[2], id[3]]);
    let ip = |raw: &[u8]| -> Option<IpAddr> {
        if i32::from(family) == libc::AF_INET {
            Some(IpAddr::V4(Ipv4Addr::new(raw[0], raw[1], raw[2], raw[3])))
        } else if i32::from(family) == libc::AF_INET6 {
            let a: [u8; 16] = raw[..16].try_into().ok()?;
            Some(IpAddr::V6(Ipv6Addr::from(a)))
        } else {
            None
        }
    };
    let word = |at: usize| u32::from_ne_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]]);
    Some(TcpSocket {
        local: SocketAddr::new(ip(&id[4..20])?, sport),
        remote: SocketAddr::new(ip(&id[20..36])?, dport),
        state,
        expires_ms: word(52),
        uid: word(64),
        inode: word(68),
    })
}

/// The TCP sockets of the calling thread's network namespace in one of `states` (IPv4 and IPv6),
/// from a sock_diag dump.
///
/// # Errors
/// The netlink socket cannot be opened or the dump fails (the kernel's errno, e.g. when
/// `CONFIG_INET_DIAG` is off).
pub fn tcp_sockets(states: &[TcpState]) -> std::io::Result<Vec<TcpSocket>> {
    let mask = states
        .iter()
        .fold(0u32, |m, s| m | (1u32 << u32::from(s.number())));
    // A dump that never ends would hang the caller: 5 s is far more than any real dump takes.
    let fd = diag_socket(5)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    for (seq, family) in [(1u32, libc::AF_INET), (2, libc::AF_INET6)] {
        dump(&fd, &mut buf, family, mask, seq, |m| {
            out.extend(parse_msg(m))
        })?;
    }
    Ok(out)
}

/// A sock_diag netlink socket in the calling thread's network namespace whose receives give up
/// after `timeout_s` seconds (a dump that never ends must not hang its caller).
///
/// # Errors
/// The socket cannot be opened or the timeout set.
fn diag_socket(timeout_s: i64) -> std::io::Result<std::os::fd::OwnedFd> {
    use nix::sys::socket::{self, AddressFamily, SockFlag, SockProtocol};
    let fd = socket::socket(
        AddressFamily::Netlink,
        socket::SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkSockDiag,
    )?;
    socket::setsockopt(
        &fd,
        socket::sockopt::ReceiveTimeout,
        &nix::sys::time::TimeVal::new(timeout_s, 0),
    )?;
    Ok(fd)
}

/// One sock_diag dump on `fd`: sends the request for `family` and the TCP states in `mask` with
/// sequence number `seq`, then reads the replies into `buf` until NLMSG_DONE (or an NLMSG_ERROR
/// of 0), calling `each` with every `inet_diag_msg` (the payload after its netlink header).
///
/// # Errors
/// The send or a receive fails, or the kernel answers NLMSG_ERROR with an errno.
fn dump(
    fd: &std::os::fd::OwnedFd,
    buf: &mut [u8],
    family: i32,
    mask: u32,
    seq: u32,
    mut each: impl FnMut(&[u8]),
) -> std::io::Result<()> {
    use nix::sys::socket::{self, MsgFlags, NetlinkAddr};
    socket::sendto(
        fd.as_raw_fd(),
        &request(family as u8, mask, seq),
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )?;
    loop {
        let n = socket::recv(fd.as_raw_fd(), buf, MsgFlags::empty())?;
        if n == 0 {
            return Ok(());
        }
        let mut at = 0;
        while at + NLMSG_HDR <= n {
            let h = &buf[at..];
            let len = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
            let kind = u16::from_ne_bytes([h[4], h[5]]);
            if len < NLMSG_HDR || at + len > n {
                break;
            }
            match kind {
                NLMSG_DONE => return Ok(()),
                NLMSG_ERROR => {
                    let code = i32::from_ne_bytes([h[16], h[17], h[18], h[19]]);
                    if code == 0 {
                        return Ok(());
                    }
                    return Err(std::io::Error::from_raw_os_error(-code));
                }
                SOCK_DIAG_BY_FAMILY => each(&h[NLMSG_HDR..len]),
                _ => {}
            }
            // Messages are 4-byte aligned (NLMSG_ALIGN).
            at += (len + 3) & !3;
        }
    }
}

/// The accept-queue length of a port's listeners, read again and again from one sock_diag
/// socket ([`ListenQueue::open`]): the `idiag_rqueue` of a LISTEN socket is its
/// `sk_ack_backlog`, the connections waiting in its accept queue (`inet_diag_get_info` →
/// `tcp_diag_get_info`, net/ipv4/tcp_diag.c), summed over the port's SO_REUSEPORT group and
/// both families. A dump of LISTEN sockets only walks the listening hash, not the established
/// one (`inet_diag_dump_icsk` stops after it when no other state is asked), so it costs µs,
/// where a read of `/proc/net/tcp` walks every established bucket of the host (1.9 ms median,
/// 20 ms at worst, on the 2-vCPU VM with a 262,144-bucket table).
#[derive(Debug)]
pub struct ListenQueue {
    fd: std::os::fd::OwnedFd,
    buf: Vec<u8>,
    seq: u32,
}

impl ListenQueue {
    /// Opens the netlink socket in the calling thread's network namespace (it stays there).
    ///
    /// # Errors
    /// The netlink socket cannot be opened (e.g. `CONFIG_INET_DIAG` off).
    pub fn open() -> std::io::Result<ListenQueue> {
        let fd = diag_socket(1)?;
        let mut q = ListenQueue {
            fd,
            buf: vec![0u8; 64 << 10],
            seq: 0,
        };
        // One read up front, so a kernel without inet_diag fails here, not in every sample.
        q.length(0)?;
        Ok(q)
    }

    /// The summed accept-queue length of the LISTEN sockets of `port` (0 when none listens).
    ///
    /// # Errors
    /// The dump fails (the kernel's errno).
    pub fn length(&mut self, port: u16) -> std::io::Result<u64> {
        let mask = 1u32 << u32::from(TcpState::Listen.number());
        let mut sum = 0u64;
        for family in [libc::AF_INET, libc::AF_INET6] {
            self.seq = self.seq.wrapping_add(1);
            dump(&self.fd, &mut self.buf, family, mask, self.seq, |m| {
                if let Some((p, q)) = listen_rqueue(m) {
                    if p == port {
                        sum += u64::from(q);
                    }
                }
            })?;
        }
        Ok(sum)
    }
}

/// The local port and `idiag_rqueue` of an `inet_diag_msg` of a LISTEN socket; `None` for
/// another state or a short message.
fn listen_rqueue(p: &[u8]) -> Option<(u16, u32)> {
    if p.len() < INET_DIAG_MSG || TcpState::from_number(p[1])? != TcpState::Listen {
        return None;
    }
    let port = u16::from_be_bytes([p[4], p[5]]);
    Some((port, u32::from_ne_bytes([p[56], p[57], p[58], p[59]])))
}

/// Parses `/proc/net/tcp` or `/proc/net/tcp6` text (proc(5): `sl local_address rem_address st
/// tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode`; addresses are hex words in host
/// byte order, ports hex). Lines that do not parse are left out.
pub fn parse_proc_net_tcp(text: &str) -> Vec<TcpSocket> {
    fn addr(s: &str) -> Option<SocketAddr> {
        let (ip, port) = s.split_once(':')?;
        let port = u16::from_str_radix(port, 16).ok()?;
        let words: Vec<u32> = (0..ip.len() / 8)
            .map(|i| u32::from_str_radix(&ip[i * 8..i * 8 + 8], 16))
            .collect::<Result<_, _>>()
            .ok()?;
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let ip = match bytes.len() {
            4 => IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3])),
            16 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&bytes[..]).ok()?)),
            _ => return None,
        };
        Some(SocketAddr::new(ip, port))
    }
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let state = TcpState::from_number(u8::from_str_radix(f.get(3)?, 16).ok()?)?;
            let when = f.get(5)?.split_once(':').map_or("0", |(_, w)| w);
            Some(TcpSocket {
                local: addr(f.get(1)?)?,
                remote: addr(f.get(2)?)?,
                state,
                // jiffies left on the timer; USER_HZ is 100 on Linux.
                expires_ms: u32::from_str_radix(when, 16)
                    .unwrap_or(0)
                    .saturating_mul(10),
                uid: f.get(7)?.parse().ok()?,
                inode: f.get(9)?.parse().ok()?,
            })
        })
        .collect()
}

/// The ports TCP listeners of the calling thread's network namespace listen on, ascending.
///
/// # Errors
/// As [`tcp_sockets`].
pub fn listening_ports() -> std::io::Result<BTreeSet<u16>> {
    Ok(tcp_sockets(&[TcpState::Listen])?
        .iter()
        .map(|s| s.local.port())
        .collect())
}

/// The process holding the socket with `inode`: `(pid, comm)` of the first process under
/// `/proc` with a descriptor linking to `socket:[INODE]`; `None` when none is found (the
/// process is in another PID namespace, or this one may not read its descriptors).
pub fn socket_owner(inode: u32) -> Option<(u32, String)> {
    if inode == 0 {
        return None;
    }
    let want = format!("socket:[{inode}]");
    let pids = std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok());
    for pid in pids {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == want.as_str()));
        if holds {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|c| c.trim().to_string())
                .unwrap_or_default();
            return Some((pid, comm));
        }
    }
    None
}

/// The sockets that hold local port `port` on an address that conflicts with binding `addr`
/// (the same address, or either side a wildcard), listeners and connections alike.
///
/// # Errors
/// As [`tcp_sockets`].
pub fn port_holders(addr: SocketAddr) -> std::io::Result<Vec<TcpSocket>> {
    let all = tcp_sockets(&TcpState::ALL)?;
    Ok(all
        .into_iter()
        .filter(|s| {
            s.local.port() == addr.port()
                && (s.local.ip() == addr.ip()
                    || s.local.ip().is_unspecified()
                    || addr.ip().is_unspecified())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_their_kernel_numbers() {
        for s in TcpState::ALL {
            assert_eq!(TcpState::from_number(s.number()), Some(s));
        }
        assert_eq!(TcpState::TimeWait.number(), 6);
        assert_eq!(TcpState::Listen.number(), 10);
        assert_eq!(TcpState::from_number(0), None);
        assert_eq!(TcpState::from_number(13), None);
    }

    #[test]
    fn proc_net_tcp_lines_parse_as_the_kernel_prints_them() {
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0\n   1: 0100007F:9C40 0100007F:46A0 06 00000000:00000000 03:00000D2A 00000000     0        0 0 3 0000000000000000\n";
        let s = parse_proc_net_tcp(v4);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].local, "127.0.0.1:9000".parse().unwrap());
        assert_eq!(s[0].state, TcpState::Listen);
        assert_eq!(s[0].inode, 12345);
        assert_eq!(s[1].remote, "127.0.0.1:18080".parse().unwrap());
        assert_eq!(s[1].state, TcpState::TimeWait);
        assert_eq!(s[1].expires_ms, 0xD2A * 10);
        let v6 = "  sl  local_address                         remote_address                        st\n   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1\n";
        let s = parse_proc_net_tcp(v6);
        assert_eq!(s[0].local, "[::1]:8080".parse().unwrap());
        assert!(parse_proc_net_tcp("garbage\nmore garbage here\n").is_empty());
    }

    /// Three connections completed into a listener that accepts none: its accept queue holds
    /// three, as sock_diag reads it; after one accept, two.
    #[test]
    fn the_listen_queue_is_the_connections_not_yet_accepted() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mut q = match ListenQueue::open() {
            Ok(q) => q,
            Err(e) => {
                eprintln!("skipping: no sock_diag here: {e}");
                return;
            }
        };
        assert_eq!(q.length(port).unwrap(), 0);
        let clients: Vec<_> = (0..3)
            .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        // Loopback completes the handshakes before connect returns, but the server side's
        // child reaches the queue in softirq: wait up to 1 s for it.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while q.length(port).unwrap() < 3 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(q.length(port).unwrap(), 3);
        let _one = l.accept().unwrap();
        assert_eq!(q.length(port).unwrap(), 2);
        drop(clients);
    }

    #[test]
    fn requests_carry_the_family_and_the_state_mask() {
        let r = request(libc::AF_INET6 as u8, 1 << 6, 7);
        assert_eq!(r.len(), 72);
        assert_eq!(u32::from_ne_bytes([r[0], r[1], r[2], r[3]]), 72);
        assert_eq!(r[16], libc::AF_INET6 as u8);
        assert_eq!(r[17], libc::IPPROTO_TCP as u8);
        assert_eq!(u32::from_ne_bytes([r[20], r[21], r[22], r[23]]), 1 << 6);
    }
}
