//! The few raw socket calls that socket2/nix do not wrap. All `unsafe` of the crate outside the
//! io_uring engine lives here.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Attaches a classic BPF program to the reuseport group of `fd` with
/// setsockopt(SO_ATTACH_REUSEPORT_CBPF) (Linux 4.5+, socket(7)); the program's return value is the
/// index of the listener that gets the flow (out of range → the kernel's hash decides).
///
/// # Errors
/// The setsockopt errno (EINVAL for a malformed program, ENOMEM).
pub(crate) fn attach_reuseport_cbpf(
    fd: BorrowedFd<'_>,
    prog: &[libc::sock_filter],
) -> io::Result<()> {
    let len = u16::try_from(prog.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "BPF program too long"))?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: `fprog` points to `prog`, which outlives the call; the kernel copies the program
    // during setsockopt and keeps no pointer to our memory. optlen is the size of sock_fprog.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_REUSEPORT_CBPF,
            (&raw const fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Length of a listening socket's accept queue (completed handshakes not yet accepted), from
/// getsockopt(TCP_INFO): for a socket in LISTEN state the kernel reports `sk_ack_backlog` in
/// `tcpi_unacked` (net/ipv4/tcp.c, tcp_get_info).
///
/// # Errors
/// The getsockopt errno.
pub(crate) fn accept_queue_len(fd: BorrowedFd<'_>) -> io::Result<u32> {
    // SAFETY: tcp_info is plain old data; all-zero is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` and `len` are valid for writes of the sizes given; the kernel writes at most
    // `len` bytes and updates `len`.
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
