//! Where a connect whose answer the engine did not see stands ([`Verdict`]): decided from what
//! the kernel says about its socket, without asking it here (the engines ask:
//! `crate::engine::socket::probe` on a plain socket, a second connect on an io_uring direct
//! descriptor).

/// Where a connect whose deadline has passed (or that a stop cut) really is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The handshake completed (getpeername(2) succeeds, no pending error): a success.
    Connected,
    /// The connect failed with this errno (SO_ERROR, e.g. ECONNREFUSED).
    Failed(i32),
    /// Still in SYN-SENT: a real timeout.
    Pending,
    /// The handshake completed, then the peer reset the connection (SO_ERROR `ECONNRESET`, or
    /// `EPIPE` after the server's FIN) before the worker looked: a success whose connection
    /// failed after the handshake. tcp_reset() (net/ipv4/tcp_input.c) reports a reset met in
    /// SYN-SENT as `ECONNREFUSED` and only one met after the handshake (ESTABLISHED and later)
    /// as `ECONNRESET` (`EPIPE` in CLOSE-WAIT).
    ResetAfterHandshake(i32),
}

/// Decides from `SO_ERROR` (0 = none) and getpeername(2)'s result (`Ok` or its errno): a pending
/// error is a failure; no error and a peer is a completed handshake; `ENOTCONN` (inet_getname()
/// returns it for SYN-SENT and CLOSE) is a connect still waiting; any other getpeername error is a
/// failure with that errno; `ECONNRESET` / `EPIPE` is a reset after a completed handshake
/// ([`Verdict::ResetAfterHandshake`]).
pub(crate) fn verdict(so_error: i32, peer: Result<(), i32>) -> Verdict {
    match (so_error, peer) {
        (0, Ok(())) => Verdict::Connected,
        (0, Err(libc::ENOTCONN)) => Verdict::Pending,
        (0, Err(e)) => Verdict::Failed(e),
        (e @ (libc::ECONNRESET | libc::EPIPE), _) => Verdict::ResetAfterHandshake(e),
        (e, _) => Verdict::Failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_connect_without_error_and_without_peer_is_a_timeout() {
        assert_eq!(verdict(0, Ok(())), Verdict::Connected);
        assert_eq!(verdict(0, Err(libc::ENOTCONN)), Verdict::Pending);
        assert_eq!(
            verdict(libc::ECONNREFUSED, Err(libc::ENOTCONN)),
            Verdict::Failed(libc::ECONNREFUSED)
        );
        assert_eq!(
            verdict(libc::ECONNRESET, Ok(())),
            Verdict::ResetAfterHandshake(libc::ECONNRESET)
        );
        assert_eq!(
            verdict(libc::EPIPE, Err(libc::ENOTCONN)),
            Verdict::ResetAfterHandshake(libc::EPIPE)
        );
        assert_eq!(verdict(0, Err(libc::EBADF)), Verdict::Failed(libc::EBADF));
    }
}
