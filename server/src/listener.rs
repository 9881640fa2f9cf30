//! The listeners: one `SO_REUSEPORT` socket per worker, bound to the same address, created in CPU
//! order on the caller's thread so that bind errors surface before any worker starts.

use std::io;
use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::error::ServerError;

/// Binds `count` listeners to `addr` in one reuseport group and returns them with the real
/// address (port 0 resolved).
///
/// First an ordinary (non-`SO_REUSEPORT`) socket is bound to `addr` and closed again: this both
/// resolves port 0 and fails with EADDRINUSE when anyone, including another reuseport group of the
/// same user (which would otherwise silently share our traffic), already holds the address.
/// Listeners are non-blocking and close-on-exec.
///
/// With `linger_rst` (server `--mode rst`) each listener gets `SO_LINGER {on, 0}` once, here, and
/// every socket accepted from it inherits it, so a plain close(2) sends RST with no setsockopt
/// per connection: the kernel creates the child by copying the listener
/// (`sk_clone_lock` → `sock_copy`, net/core/sock.c), which copies `sk_flags` (`SOCK_LINGER`) and
/// `sk_lingertime`, and `__tcp_close` (net/ipv4/tcp.c) then sends RST for a zero linger time.
///
/// # Errors
/// [`ServerError::AddrInUse`], [`ServerError::PermissionDenied`],
/// [`ServerError::AddrNotAvailable`], or [`ServerError::Listener`] naming the failed call.
pub(crate) fn bind_group(
    addr: SocketAddr,
    count: usize,
    backlog: u32,
    linger_rst: bool,
) -> Result<(Vec<Socket>, SocketAddr), ServerError> {
    let probe = TcpListener::bind(addr).map_err(|e| bind_error(addr, e))?;
    let real = probe.local_addr().map_err(|source| ServerError::Listener {
        what: "getsockname(2)",
        addr,
        source,
    })?;
    drop(probe);
    let backlog = i32::try_from(backlog).unwrap_or(i32::MAX);
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let fail = |what: &'static str| {
            move |source| ServerError::Listener {
                what,
                addr: real,
                source,
            }
        };
        let sock = Socket::new(
            Domain::for_address(real),
            Type::STREAM.cloexec(),
            Some(Protocol::TCP),
        )
        .map_err(fail("socket(2)"))?;
        sock.set_reuse_address(true)
            .map_err(fail("setsockopt(SO_REUSEADDR)"))?;
        sock.set_reuse_port(true)
            .map_err(fail("setsockopt(SO_REUSEPORT)"))?;
        sock.set_nonblocking(true)
            .map_err(fail("fcntl(O_NONBLOCK)"))?;
        if linger_rst {
            sock.set_linger(Some(std::time::Duration::ZERO))
                .map_err(fail("setsockopt(SO_LINGER)"))?;
        }
        sock.bind(&SockAddr::from(real))
            .map_err(|e| bind_error(real, e))?;
        sock.listen(backlog).map_err(fail("listen(2)"))?;
        out.push(sock);
    }
    Ok((out, real))
}

fn bind_error(addr: SocketAddr, e: io::Error) -> ServerError {
    match e.raw_os_error() {
        Some(libc::EADDRINUSE) => ServerError::AddrInUse { addr },
        Some(libc::EACCES) | Some(libc::EPERM) => ServerError::PermissionDenied { addr },
        Some(libc::EADDRNOTAVAIL) => ServerError::AddrNotAvailable { addr },
        _ => ServerError::Listener {
            what: "bind(2)",
            addr,
            source: e,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_shares_one_port_and_refuses_a_taken_one() {
        let (socks, real) = bind_group("127.0.0.1:0".parse().unwrap(), 3, 16, false).unwrap();
        assert_eq!(socks.len(), 3);
        assert_ne!(real.port(), 0);
        for s in &socks {
            assert_eq!(s.local_addr().unwrap().as_socket().unwrap(), real);
        }
        // Our own group holds it now: a second group must not silently join.
        let err = bind_group(real, 1, 16, false).unwrap_err();
        assert!(matches!(err, ServerError::AddrInUse { .. }), "{err}");
    }

    /// `--mode rst` sets SO_LINGER {on, 0} on the listeners only; a socket accepted from one
    /// reads back the same linger (inherited at the child's creation), and one accepted from a
    /// plain listener reads back none.
    #[test]
    fn accepted_sockets_inherit_the_listeners_zero_linger() {
        for rst in [true, false] {
            let (socks, real) = bind_group("127.0.0.1:0".parse().unwrap(), 1, 16, rst).unwrap();
            let l = &socks[0];
            let want = rst.then_some(std::time::Duration::ZERO);
            assert_eq!(l.linger().unwrap(), want, "listener");
            let client = std::net::TcpStream::connect(real).unwrap();
            l.set_nonblocking(false).unwrap();
            let (accepted, _) = l.accept().unwrap();
            assert_eq!(accepted.linger().unwrap(), want, "accepted, rst={rst}");
            drop(accepted);
            // The close of the accepted socket is an RST exactly when it inherited the linger.
            client
                .set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .unwrap();
            let got = std::io::Read::read(&mut &client, &mut [0u8; 1]);
            match got {
                Err(e) if rst => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}"),
                Ok(0) if !rst => {}
                other => panic!("rst={rst}: {other:?}"),
            }
        }
    }
}
