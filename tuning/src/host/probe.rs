//! Capabilities probed in this process, not inferred from a sysctl: whether io_uring can be set
//! up here (seccomp filters and `kernel.io_uring_disabled` both show up as a failed setup), which
//! opcodes the kernel supports, and the socket options the server relies on.
//!
//! io_uring: `io_uring_setup(2)` through the `io-uring` crate's safe `IoUring::new`, then
//! `IORING_REGISTER_PROBE` (5.6+). IORING_OP_ACCEPT is 5.5; IORING_OP_SOCKET is 5.19, the release
//! that also brought multishot accept, so a supported SOCKET opcode is read as "multishot accept
//! available" (an inference from release history: io_uring_enter(2) and
//! io_uring_prep_socket(3) give 5.19 for both).
//! SO_INCOMING_CPU (3.19; honoured by reuseport groups since 6.1) and SO_REUSEPORT (3.9) are set
//! on a fresh TCP socket and read back (socket(7)).

use serde::Serialize;

use crate::host::{Finding, Severity};

/// One probed capability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Capability {
    /// Name (`io_uring`, `io_uring multishot accept`, `SO_INCOMING_CPU`, `SO_REUSEPORT`).
    pub name: &'static str,
    /// Whether it works in this process.
    pub available: bool,
    /// What was tried and what happened (errno name on failure).
    pub detail: String,
}

fn errno_text(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => format!("{} ({e})", nix::errno::Errno::from_raw(n)),
        None => e.to_string(),
    }
}

/// Probes io_uring setup and opcodes.
pub(crate) fn probe_io_uring() -> Vec<Capability> {
    match io_uring::IoUring::new(2) {
        Err(e) => {
            let why = match e.raw_os_error() {
                // The cause this process's state establishes (sysctl, seccomp, LSM).
                Some(libc::EPERM) => common::uring::eperm_cause(&common::uring::UringState::read()),
                Some(libc::ENOSYS) => {
                    "the kernel has no io_uring (CONFIG_IO_URING off, or before 5.1)".into()
                }
                _ => "setup failed".into(),
            };
            vec![Capability {
                name: "io_uring",
                available: false,
                detail: format!(
                    "io_uring_setup: {}: {why}; the server falls back to epoll",
                    errno_text(&e)
                ),
            }]
        }
        Ok(ring) => {
            let mut probe = io_uring::Probe::new();
            let probed = ring.submitter().register_probe(&mut probe);
            let mut v = vec![Capability {
                name: "io_uring",
                available: true,
                detail: "io_uring_setup succeeded in this process".into(),
            }];
            match probed {
                Ok(()) => {
                    let accept = probe.is_supported(io_uring::opcode::Accept::CODE);
                    let socket = probe.is_supported(io_uring::opcode::Socket::CODE);
                    v.push(Capability {
                        name: "io_uring multishot accept",
                        available: accept && socket,
                        detail: format!(
                            "IORING_OP_ACCEPT {}, IORING_OP_SOCKET {} (both 5.19 features ride together: multishot accept {})",
                            if accept { "supported" } else { "missing" },
                            if socket { "supported" } else { "missing" },
                            if accept && socket { "available" } else { "needs Linux 5.19" }
                        ),
                    });
                }
                Err(e) => v.push(Capability {
                    name: "io_uring multishot accept",
                    available: false,
                    detail: format!(
                        "IORING_REGISTER_PROBE failed: {} (before 5.6)",
                        errno_text(&e)
                    ),
                }),
            }
            v
        }
    }
}

/// Probes SO_INCOMING_CPU and SO_REUSEPORT on a fresh TCP socket (never bound).
pub(crate) fn probe_socket_options() -> Vec<Capability> {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = match Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)) {
        Ok(s) => s,
        Err(e) => {
            return vec![Capability {
                name: "TCP socket",
                available: false,
                detail: format!("socket(AF_INET, SOCK_STREAM): {}", errno_text(&e)),
            }]
        }
    };
    let incoming = sock.set_cpu_affinity(0).and_then(|()| sock.cpu_affinity());
    let reuse = sock.set_reuse_port(true).and_then(|()| sock.reuse_port());
    vec![
        Capability {
            name: "SO_INCOMING_CPU",
            available: incoming.is_ok(),
            detail: match incoming {
                Ok(c) => format!("setsockopt/getsockopt work (read back CPU {c}); reuseport groups honour it since 6.1"),
                Err(e) => format!("setsockopt: {}", errno_text(&e)),
            },
        },
        Capability {
            name: "SO_REUSEPORT",
            available: matches!(reuse, Ok(true)),
            detail: match reuse {
                Ok(b) => format!("set and read back {b}"),
                Err(e) => format!("setsockopt: {}", errno_text(&e)),
            },
        },
    ]
}

/// Every probe, as findings for the doctor (warn when something the server uses is missing).
pub(crate) fn probe_findings() -> Vec<Finding> {
    probe_io_uring()
        .into_iter()
        .chain(probe_socket_options())
        .map(|c| {
            Finding::new(
                if c.available {
                    Severity::Info
                } else {
                    Severity::Warn
                },
                "probe",
                format!(
                    "{}: {} — {}",
                    c.name,
                    if c.available {
                        "available"
                    } else {
                        "NOT available"
                    },
                    c.detail
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_options_agree_with_a_direct_getsockopt() {
        let caps = probe_socket_options();
        let reuse = caps.iter().find(|c| c.name == "SO_REUSEPORT").unwrap();
        // SO_REUSEPORT exists on every kernel this tool supports (3.9+).
        assert!(reuse.available, "{reuse:?}");
        let inc = caps.iter().find(|c| c.name == "SO_INCOMING_CPU").unwrap();
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        assert_eq!(inc.available, s.set_cpu_affinity(0).is_ok());
    }

    #[test]
    fn io_uring_probe_agrees_with_a_second_setup() {
        let caps = probe_io_uring();
        assert_eq!(
            caps[0].available,
            io_uring::IoUring::new(2).is_ok(),
            "{caps:?}"
        );
    }
}
