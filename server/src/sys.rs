//! The raw socket calls that socket2 0.6 and nix 0.30 do not wrap (getsockopt(TCP_INFO) has no
//! wrapper in either). All `unsafe` of the crate outside the io_uring engine lives here.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Length of a listening socket's accept queue (completed handshakes not yet accepted), from
/// getsockopt(TCP_INFO): for a socket in LISTEN state the kernel reports `sk_ack_backlog` in
/// `tcpi_unacked` (net/ipv4/tcp.c, tcp_get_info).
///
/// # Errors
/// The getsockopt errno.
pub(crate) fn accept_queue_len(fd: BorrowedFd<'_>) -> io::Result<u32> {
    // SAFETY: tcp_info is plain old data (integers only); all-zero is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` and `len` are valid for writes of the sizes given and live across the call;
    // the kernel writes at most `len` bytes of `info` and updates `len`. `fd` is borrowed, so
    // it stays open for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(info.tcpi_unacked)
    } else {
        Err(io::Error::last_os_error())
    }
}
