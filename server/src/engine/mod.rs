//! The event engines, siblings behind one entry point each (`run(ctx, ready)`):
//! [`uring`] (io_uring multishot accept) and [`epoll`] (mio). [`probe`] says whether io_uring
//! can run here. Shared here: how accept errors are handled.

pub(crate) mod epoll;
pub mod probe;
pub(crate) mod uring;

use std::time::Duration;

/// Most accepts (epoll) or completions (io_uring) a worker handles in one turn of its event loop
/// before it publishes its counters and looks at the stop flag; work left over is taken up on the
/// next turn without waiting for a new event. At the ~5–10 µs a connection costs, that is 1–3 ms
/// per turn, so [`crate::LiveStats`] stay fresh and [`crate::Server::stop`] is seen within a few
/// ms even when connections arrive faster than the worker can accept them (issue 9: an
/// unbounded "accept until EAGAIN" never ends under sustained overload).
pub(crate) const TURN_BUDGET: usize = 256;

/// Pause before accepting again after EMFILE/ENFILE (or ENOBUFS/ENOMEM, or an unexpected error):
/// the connection stays queued, so retrying at once would spin (libuv#690, wai#928); ~10 ms is the
/// figure from nanomsg/eventcore discussions (reported in nanomsg and eventcore design discussions; not a kernel guarantee).
pub(crate) const BACKOFF: Duration = Duration::from_millis(10);

/// What to do after a failed accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AcceptFailure {
    /// Out of descriptors or memory: count, back off [`BACKOFF`], then accept again. The bool says
    /// whether it is EMFILE/ENFILE (counted in `emfile_backoffs`).
    Backoff(bool),
    /// The connection died before it was accepted, or one of the network errors accept(2) says to
    /// treat like EAGAIN: count and accept again at once.
    Transient,
}

/// Classifies an accept errno (accept(2) "Error handling"; ECONNABORTED for a connection reset
/// while queued). Anything unexpected backs off rather than retrying at once, so no error can make
/// a worker spin.
pub(crate) fn classify(errno: i32) -> AcceptFailure {
    match errno {
        libc::EMFILE | libc::ENFILE => AcceptFailure::Backoff(true),
        libc::ECONNABORTED
        | libc::EINTR
        | libc::EPROTO
        | libc::EPERM
        | libc::ENETDOWN
        | libc::ENOPROTOOPT
        | libc::EHOSTDOWN
        | libc::ENONET
        | libc::EHOSTUNREACH
        | libc::EOPNOTSUPP
        | libc::ENETUNREACH => AcceptFailure::Transient,
        _ => AcceptFailure::Backoff(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_exhaustion_backs_off_and_aborts_retry() {
        assert_eq!(classify(libc::EMFILE), AcceptFailure::Backoff(true));
        assert_eq!(classify(libc::ENFILE), AcceptFailure::Backoff(true));
        assert_eq!(classify(libc::ENOBUFS), AcceptFailure::Backoff(false));
        assert_eq!(classify(libc::ECONNABORTED), AcceptFailure::Transient);
        assert_eq!(classify(libc::EINVAL), AcceptFailure::Backoff(false));
    }
}
