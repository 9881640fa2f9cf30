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
/// # Errors
/// [`ServerError::AddrInUse`], [`ServerError::PermissionDenied`],
/// [`ServerError::AddrNotAvailable`], or [`ServerError::Listener`] naming the failed call.
pub(crate) fn bind_group(
    addr: SocketAddr,
    count: usize,
    backlog: u32,
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
        let (socks, real) = bind_group("127.0.0.1:0".parse().unwrap(), 3, 16).unwrap();
        assert_eq!(socks.len(), 3);
        assert_ne!(real.port(), 0);
        for s in &socks {
            assert_eq!(s.local_addr().unwrap().as_socket().unwrap(), real);
        }
        // Our own group holds it now: a second group must not silently join.
        let err = bind_group(real, 1, 16).unwrap_err();
        assert!(matches!(err, ServerError::AddrInUse { .. }), "{err}");
    }
}
