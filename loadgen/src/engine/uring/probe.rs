//! Whether the io_uring connect engine can run here, and with which features ([`probe`]), and
//! how a worker's ring is built ([`build`]).

use io_uring::{opcode, IoUring, Probe};

use super::{Cqe, Ring, K_SOCKOPT};
use crate::engine::UringFeatures;

/// Builds a ring, with SINGLE_ISSUER + DEFER_TASKRUN (6.1) where the kernel has them; returns
/// whether it has them.
pub(super) fn build(sq: u32, cq: u32) -> std::io::Result<(IoUring, bool)> {
    match IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(cq)
        .build(sq)
    {
        Ok(r) => Ok((r, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            Ok((IoUring::builder().setup_cqsize(cq).build(sq)?, false))
        }
        Err(e) => Err(e),
    }
}

/// Can the io_uring connect engine run here, and with which features?
///
/// Needs io_uring itself (io_uring_setup(2) fails with EPERM when `kernel.io_uring_disabled` is 2,
/// or 1 without privilege, Linux 6.6, or under a seccomp policy such as Docker's default; ENOSYS
/// without CONFIG_IO_URING), IORING_OP_SOCKET (5.19, the newest op the engine needs; CONNECT,
/// LINK_TIMEOUT, CLOSE, ASYNC_CANCEL are older) and IORING_FEAT_EXT_ARG (5.11). Then probes
/// direct descriptors (a sparse registered file table, 5.19) and the socket commands
/// SOCKET_URING_OP_SETSOCKOPT (6.7) by running it on a scratch socket.
///
/// # Errors
/// A one-line reason for the "fell back to epoll" note.
pub(crate) fn probe() -> Result<UringFeatures, String> {
    let (ring, defer_taskrun) = build(8, 16).map_err(|e| common::uring::setup_failure(&e))?;
    let mut p = Probe::new();
    ring.submitter()
        .register_probe(&mut p)
        .map_err(|e| format!("IORING_REGISTER_PROBE failed ({e}): kernel older than 5.6"))?;
    for (code, name) in [
        (opcode::Socket::CODE, "IORING_OP_SOCKET (Linux 5.19)"),
        (opcode::Connect::CODE, "IORING_OP_CONNECT (Linux 5.5)"),
        (
            opcode::LinkTimeout::CODE,
            "IORING_OP_LINK_TIMEOUT (Linux 5.5)",
        ),
        (opcode::Close::CODE, "IORING_OP_CLOSE (Linux 5.6)"),
    ] {
        if !p.is_supported(code) {
            return Err(format!("the kernel lacks {name}"));
        }
    }
    if !ring.params().is_feature_ext_arg() {
        return Err("the kernel lacks IORING_FEAT_EXT_ARG (Linux 5.11)".into());
    }
    let skip_success = ring.params().is_feature_skip_cqe_on_success();
    let direct_socket = ring.submitter().register_files_sparse(1).is_ok();
    let uring_setsockopt = p.is_supported(opcode::SetSockOpt::CODE) && sockcmds_work(ring);
    Ok(UringFeatures {
        direct_socket,
        uring_setsockopt,
        skip_success,
        defer_taskrun,
    })
}

/// Runs SETSOCKOPT SO_LINGER through `ring` on a scratch socket: true when it succeeds (kernels
/// before 6.7 answer EOPNOTSUPP or EINVAL).
fn sockcmds_work(ring: IoUring) -> bool {
    let Ok(s) = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None) else {
        return false;
    };
    let mut ring = Ring::bare(ring);
    if !ring.push_linger(std::os::fd::AsRawFd::as_raw_fd(&s)) {
        return false;
    }
    // Its CQE, or nothing: the ring's drop then keeps the value it points to.
    let now = crate::clock::now_ns();
    ring.wait(now + 1_000_000_000, now, 0, 1);
    let mut got = [Cqe::default(); 4];
    let n = ring.reap(&mut got);
    got[..n].iter().any(|c| c.kind == K_SOCKOPT && c.res == 0)
}
