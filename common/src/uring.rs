//! Why io_uring cannot run here: one wording of an io_uring_setup(2) failure for the server's
//! accept engine and the load generator's connect engine (both fall back to epoll with it).
//!
//! EPERM has several causes and the message names the one this process's state establishes
//! ([`eperm_cause`]), in the kernel's order (io_uring/io_uring.c `io_uring_allowed`, Linux
//! 6.6+): `kernel.io_uring_disabled = 2` refuses everyone; `1` refuses a process without
//! CAP_SYS_ADMIN outside `kernel.io_uring_group`; then a Linux security module may refuse
//! (`security_uring_allowed`). A seccomp filter (`Seccomp: 2` in /proc/PID/status, proc(5))
//! refuses before the kernel's own checks run: Docker 25+'s default profile denies the io_uring
//! calls with EPERM.

/// What the EPERM of io_uring_setup(2) comes from, given this process's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UringState {
    /// `kernel.io_uring_disabled` (`None`: absent, a kernel before 6.6).
    pub disabled: Option<u32>,
    /// `kernel.io_uring_group` (`None`: absent or -1, no group).
    pub group: Option<u32>,
    /// The `Seccomp:` mode of this thread (0 off, 1 strict, 2 filter; `None`: unreadable).
    pub seccomp: Option<u32>,
    /// Whether this thread has CAP_SYS_ADMIN in its effective set.
    pub cap_sys_admin: bool,
    /// Whether this process is in `kernel.io_uring_group`.
    pub in_group: bool,
}

impl UringState {
    /// Reads the state of the calling thread: `/proc/sys/kernel/io_uring_{disabled,group}`,
    /// `Seccomp:` and `CapEff:` of `/proc/thread-self/status`, and the process's groups.
    pub fn read() -> UringState {
        let num = |f: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
                .ok()
                .and_then(|s| s.trim().parse::<i64>().ok())
        };
        let status = std::fs::read_to_string("/proc/thread-self/status")
            .or_else(|_| std::fs::read_to_string("/proc/self/status"))
            .unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
        };
        let group = num("io_uring_group")
            .filter(|&g| g >= 0)
            .and_then(|g| u32::try_from(g).ok());
        let cap_eff = field("CapEff:").and_then(|v| u64::from_str_radix(v, 16).ok());
        let in_group = group.is_some_and(|g| {
            nix::unistd::getegid().as_raw() == g
                || nix::unistd::getgroups().is_ok_and(|gs| gs.iter().any(|x| x.as_raw() == g))
        });
        UringState {
            disabled: num("io_uring_disabled").and_then(|v| u32::try_from(v).ok()),
            group,
            seccomp: field("Seccomp:").and_then(|v| v.parse().ok()),
            // CAP_SYS_ADMIN is capability 21 (include/uapi/linux/capability.h).
            cap_sys_admin: cap_eff.is_some_and(|c| c & (1 << 21) != 0),
            in_group,
        }
    }
}

/// The cause of io_uring_setup(2)'s EPERM that `s` establishes, with what to do; one clause for
/// the "fell back to epoll" line.
pub fn eperm_cause(s: &UringState) -> String {
    let disabled = s.disabled.map_or("absent".to_string(), |d| d.to_string());
    match s.disabled {
        Some(2) => "kernel.io_uring_disabled = 2 turns io_uring off for every process: set it to 0 (or to 1 with kernel.io_uring_group naming this process's group)".into(),
        Some(1) if !s.cap_sys_admin && !s.in_group => format!(
            "kernel.io_uring_disabled = 1 allows io_uring only to CAP_SYS_ADMIN and to members of kernel.io_uring_group ({}), and this process is neither: run it with that group or set kernel.io_uring_disabled = 0",
            s.group.map_or("not set".to_string(), |g| format!("gid {g}"))
        ),
        _ if s.seccomp == Some(2) => format!(
            "a seccomp filter on this process denies io_uring_setup (Seccomp: 2 in /proc/self/status; {}): container runtimes' default profiles do (Docker 25+): run with a profile that allows io_uring_setup, io_uring_enter and io_uring_register",
            match s.disabled {
                Some(d) => format!("kernel.io_uring_disabled = {d} allows it"),
                None => "this kernel has no kernel.io_uring_disabled".into(),
            }
        ),
        _ => format!(
            "neither kernel.io_uring_disabled ({disabled}) nor a seccomp filter (Seccomp: {}) forbids io_uring here, so a Linux security module refused it (SELinux, AppArmor or a BPF LSM: security_uring_allowed)",
            s.seccomp.map_or("unknown".to_string(), |m| m.to_string())
        ),
    }
}

/// The one-line reason an io_uring_setup(2) error gives, for the "fell back to epoll" note.
///
/// - EPERM: the cause this process's state establishes ([`eperm_cause`] of
///   [`UringState::read`]).
/// - ENOSYS: the kernel was built without CONFIG_IO_URING.
pub fn setup_failure(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(nix::libc::EPERM) => format!(
            "io_uring_setup(2) failed with EPERM: {}",
            eperm_cause(&UringState::read())
        ),
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
            eperm.starts_with("io_uring_setup(2) failed with EPERM: "),
            "{eperm}"
        );
        let enosys = setup_failure(&std::io::Error::from_raw_os_error(nix::libc::ENOSYS));
        assert!(enosys.contains("CONFIG_IO_URING"), "{enosys}");
        let other = setup_failure(&std::io::Error::from_raw_os_error(nix::libc::ENOMEM));
        assert!(other.starts_with("io_uring_setup(2) failed: "), "{other}");
    }

    /// Explanations that blame the wrong thing: with `io_uring_disabled = 0` and a seccomp
    /// filter the message named the sysctl first; it names the filter, and each other state
    /// its own cause.
    #[test]
    fn explanations_that_blame_the_wrong_thing_eperm_names_the_cause_the_state_shows() {
        let base = UringState {
            disabled: Some(0),
            group: None,
            seccomp: Some(2),
            cap_sys_admin: true,
            in_group: false,
        };
        let c = eperm_cause(&base);
        assert!(
            c.starts_with("a seccomp filter on this process denies io_uring_setup (Seccomp: 2"),
            "{c}"
        );
        assert!(c.contains("kernel.io_uring_disabled = 0 allows it"), "{c}");
        let off = eperm_cause(&UringState {
            disabled: Some(2),
            ..base
        });
        assert!(off.starts_with("kernel.io_uring_disabled = 2"), "{off}");
        let grp = eperm_cause(&UringState {
            disabled: Some(1),
            group: Some(1234),
            cap_sys_admin: false,
            seccomp: Some(0),
            ..base
        });
        assert!(grp.contains("kernel.io_uring_group (gid 1234)"), "{grp}");
        // disabled = 1 does not stop a CAP_SYS_ADMIN process: the filter is the cause.
        let admin = eperm_cause(&UringState {
            disabled: Some(1),
            ..base
        });
        assert!(admin.starts_with("a seccomp filter"), "{admin}");
        let lsm = eperm_cause(&UringState {
            seccomp: Some(0),
            ..base
        });
        assert!(lsm.contains("Linux security module"), "{lsm}");
        // Kernels before 6.6 have no io_uring_disabled.
        let old = eperm_cause(&UringState {
            disabled: None,
            ..base
        });
        assert!(
            old.contains("this kernel has no kernel.io_uring_disabled"),
            "{old}"
        );
    }
}
