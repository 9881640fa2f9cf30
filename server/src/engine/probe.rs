//! Can io_uring multishot accept run here?

use io_uring::{opcode, IoUring, Probe};

/// `Ok(())` when io_uring works and the kernel has multishot accept (5.19), else why not.
///
/// - io_uring_setup(2) fails with EPERM when `kernel.io_uring_disabled` is 2 (or 1 without
///   privilege / kernel.io_uring_group, Linux 6.6) or a seccomp policy denies it (Docker 25+
///   default profile), with ENOSYS on kernels built without CONFIG_IO_URING.
/// - Multishot accept (IORING_ACCEPT_MULTISHOT, 5.19) cannot be probed directly (same opcode as
///   accept); IORING_OP_SOCKET arrived in the same release, so its support is the proxy (as the
///   io-uring crate's own tests do).
///
/// # Errors
/// A one-line reason suitable for the "fell back to epoll" message.
pub fn io_uring() -> Result<(), String> {
    let ring = IoUring::new(2).map_err(|e| common::uring::setup_failure(&e))?;
    let mut probe = Probe::new();
    if let Err(e) = ring.submitter().register_probe(&mut probe) {
        return Err(format!(
            "IORING_REGISTER_PROBE failed ({e}): kernel older than 5.6, no multishot accept"
        ));
    }
    if !probe.is_supported(opcode::Socket::CODE) || !probe.is_supported(opcode::AcceptMulti::CODE) {
        return Err("kernel lacks multishot accept (needs Linux 5.19 or later)".into());
    }
    Ok(())
}
