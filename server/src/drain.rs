//! Stopping without resetting a completed handshake.
//!
//! Closing a listener aborts the children still in its accept queue (inet_csk_listen_stop; with
//! `SO_REUSEPORT` they are only migrated to a sibling when `net.ipv4.tcp_migrate_req=1`, Linux
//! 5.14, Documentation/networking/ip-sysctl.rst), and shutdown(SHUT_RD) on a listener goes through
//! the same path. listen(fd, 0) does not stop SYNs either (a backlog of 0 still admits one).
//! So a stop works in four steps, per worker:
//!
//! 1. attach a classic BPF **socket filter** (SO_ATTACH_FILTER, socket(7)) to the listener that
//!    drops segments with SYN set and ACK clear. TCP runs a listener's filter in tcp_v4_rcv /
//!    tcp_v6_rcv (tcp_filter → sk_filter_trim_cap) with `skb->data` at the TCP header, after the
//!    reuseport group picked the listener; the final ACK of a handshake in SYN_RECV is filtered by
//!    the same listener (`req->rsk_listener`) and passes. A dropped SYN is retransmitted by the
//!    client after ~1 s and then refused (RST) because the listener is gone, so the client sees
//!    ECONNREFUSED or a timeout, never a reset of an established connection;
//! 2. keep accepting for [`DRAIN_GRACE`], so handshakes already in SYN_RECV (SYN-ACK sent) can
//!    complete and be accepted;
//! 3. accept until EAGAIN (at most [`FINAL_DRAIN_MAX`]: the filter bounds the queue, but if it
//!    could not be attached the load could refill it forever; what is left is counted);
//! 4. **seal**: replace the filter with one that drops every segment, so no ACK (the final ACK
//!    of a handshake in SYN_RECV, or an ACK that a SYN cookie would admit) can create a child
//!    any more; wait [`SEAL_SETTLE`] for segments already past the filter, accept until EAGAIN
//!    once more, and count what is still queued;
//! 5. close the listener.
//!
//! So every child the kernel creates (one `Tcp.PassiveOpens` each) is accepted or counted in
//! `left_in_queue`. A handshake whose final ACK arrives later than [`DRAIN_GRACE`] after step 1
//! (RTT above that, or a lost SYN-ACK) is never completed: the client's retransmitted ACK meets
//! a closed listener and is reset. Children inherit the filter they were cloned with
//! (sk_clone_lock copies `sk_filter`), the SYN-only one: an established socket never needs a
//! pure SYN.

use std::io;
use std::time::Duration;

use socket2::{SockFilter, Socket};

/// How long workers keep accepting after new SYNs are blocked: covers handshakes in SYN_RECV on
/// paths with an RTT up to ~200 ms. It is also the minimum time [`crate::Server::stop`] takes.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_millis(200);

/// Longest a worker spends in step 3. With the SYN filter in place the queue holds at most one
/// backlog of connections (a few ms to accept); the bound matters only when the filter could not
/// be attached (an error is counted then) and new connections keep arriving. What is still queued
/// when it runs out is counted in `WorkerReport::left_in_queue`.
pub(crate) const FINAL_DRAIN_MAX: Duration = Duration::from_millis(250);

const BPF_LD_B_ABS: u16 = 0x10 | 0x20; // BPF_LD (0) | BPF_B | BPF_ABS
const BPF_ALU_AND_K: u16 = 0x04 | 0x50; // BPF_ALU | BPF_AND | BPF_K
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K
/// TCP flags byte offset in the TCP header, and its SYN / ACK bits (RFC 9293).
const TCP_FLAGS_OFFSET: u32 = 13;
const TCP_SYN: u32 = 0x02;
const TCP_ACK: u32 = 0x10;

/// The SYN-dropping socket filter: `ldb [13]; and #(SYN|ACK); jeq #SYN, drop, keep`.
pub(crate) fn syn_drop_program() -> [SockFilter; 5] {
    [
        SockFilter::new(BPF_LD_B_ABS, 0, 0, TCP_FLAGS_OFFSET),
        SockFilter::new(BPF_ALU_AND_K, 0, 0, TCP_SYN | TCP_ACK),
        SockFilter::new(BPF_JMP_JEQ_K, 0, 1, TCP_SYN),
        SockFilter::new(BPF_RET_K, 0, 0, 0),
        SockFilter::new(BPF_RET_K, 0, 0, u32::MAX),
    ]
}

/// How long step 4 waits after sealing for segments that passed the old filter and are still
/// being turned into children (softirq work of microseconds).
pub(crate) const SEAL_SETTLE: Duration = Duration::from_millis(2);

/// The sealing socket filter: `ret #0` (drop every segment).
pub(crate) fn drop_all_program() -> [SockFilter; 1] {
    [SockFilter::new(BPF_RET_K, 0, 0, 0)]
}

/// Step 4 above: makes `listener` drop every segment from now on, then waits [`SEAL_SETTLE`].
///
/// # Errors
/// The errno of setsockopt(SO_ATTACH_FILTER).
pub(crate) fn seal(listener: &Socket) -> io::Result<()> {
    listener.attach_filter(&drop_all_program())?;
    std::thread::sleep(SEAL_SETTLE);
    Ok(())
}

/// Step 1 above: makes `listener` drop new SYNs from now on.
///
/// # Errors
/// The errno of setsockopt(SO_ATTACH_FILTER) (ENOMEM; EPERM if a filter was locked with
/// SO_LOCK_FILTER).
pub(crate) fn block_new_syns(listener: &Socket) -> io::Result<()> {
    listener.attach_filter(&syn_drop_program())
}

/// Completed handshakes waiting in `listener`'s accept queue (TCP_INFO `tcpi_unacked` of a
/// listening socket).
///
/// # Errors
/// The errno of getsockopt(TCP_INFO).
pub(crate) fn accept_queue_len(listener: &Socket) -> io::Result<u32> {
    use std::os::fd::AsFd;
    crate::sys::accept_queue_len(listener.as_fd())
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Protocol, Type};
    use std::net::{SocketAddr, TcpStream};

    fn listener() -> (Socket, SocketAddr) {
        let l = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        l.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        l.listen(16).unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap().as_socket().unwrap();
        (l, addr)
    }

    /// A sealed listener completes no handshake: the connect times out and nothing is queued,
    /// while a connection completed before the seal is still accepted.
    #[test]
    fn a_sealed_listener_creates_no_child() {
        let (l, addr) = listener();
        let before = TcpStream::connect(addr).unwrap();
        seal(&l).unwrap();
        let late = TcpStream::connect_timeout(&addr, Duration::from_millis(300));
        assert!(
            late.is_err(),
            "a handshake completed through a sealed listener"
        );
        assert_eq!(accept_queue_len(&l).unwrap(), 1);
        let (first, _) = l.accept().unwrap();
        assert_eq!(
            first.peer_addr().unwrap().as_socket(),
            Some(before.local_addr().unwrap())
        );
        assert_eq!(
            l.accept().unwrap_err().kind(),
            io::ErrorKind::WouldBlock,
            "only the connection from before the seal is queued"
        );
    }

    /// The SYN filter drops new SYNs only.
    #[test]
    fn blocked_syns_leave_queued_connections() {
        let (l, addr) = listener();
        let _before = TcpStream::connect(addr).unwrap();
        block_new_syns(&l).unwrap();
        assert!(TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_err());
        assert!(l.accept().is_ok());
    }
}
