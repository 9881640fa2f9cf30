//! Why io_uring cannot run here: one wording of an io_uring_setup(2) failure for the server's
//! accept engine and the load generator's connect engine (both fall back to epoll with it).

/// The one-line reason an io_uring_setup(2) error gives, for the "fell back to epoll" note.
///
/// - EPERM: `kernel.io_uring_disabled` is 2 (or 1 without privilege / kernel.io_uring_group,
///   Linux 6.6), or a seccomp policy denies io_uring (Docker 25+'s default profile); the
///   setting's current value is read from `/proc/sys/kernel/io_uring_disabled` (`absent` on
///   kernels before 6.6).
/// - ENOSYS: the kernel was built without CONFIG_IO_URING.
pub fn setup_failure(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(nix::libc::EPERM) => {
            let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "absent".into());
            format!(
                "io_uring_setup(2) failed with EPERM (kernel.io_uring_disabled={disabled}, or a seccomp policy such as a container's denies io_uring)"
            )
        }
        Some(nix::libc::ENOSYS) => {
            "io_uring_setup(2) failed with ENOSYS (kernel built without CONFIG_IO_URING)".into()
        }
        _ => format!("io_uring_setup(2) failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_errno_names_its_cause() {
        let eperm = setup_failure(&std::io::Error::from_raw_os_error(nix::libc::EPERM));
        assert!(
            eperm.contains("EPERM (kernel.io_uring_disabled="),
            "{eperm}"
        );
        let enosys = setup_failure(&std::io::Error::from_raw_os_error(nix::libc::ENOSYS));
        assert!(enosys.contains("CONFIG_IO_URING"), "{enosys}");
        let other = setup_failure(&std::io::Error::from_raw_os_error(nix::libc::ENOMEM));
        assert!(other.starts_with("io_uring_setup(2) failed: "), "{other}");
    }
}
