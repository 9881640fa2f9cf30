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
    let ring = match IoUring::new(2) {
        Ok(r) => r,
        Err(e) => {
            let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "absent".into());
            return Err(match e.raw_os_error() {
                Some(libc::EPERM) => format!(
                    "io_uring_setup(2) failed with EPERM (kernel.io_uring_disabled={disabled}, or a seccomp policy such as a container's denies io_uring)"
                ),
                Some(libc::ENOSYS) => "io_uring_setup(2) failed with ENOSYS (kernel built without CONFIG_IO_URING)".into(),
                _ => format!("io_uring_setup(2) failed: {e}"),
            });
        }
    };
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
