//! CPU steering for the reuseport group: make the listener of the worker on CPU i receive the
//! flows whose packets the kernel processed on CPU i (RSS queue → IRQ CPU → listener → worker).

use std::fs;
use std::net::SocketAddr;
use std::os::fd::AsFd;

use socket2::Socket;

use crate::config::Steer;
use crate::error::ServerError;
use crate::report::SteeringUsed;

/// SKF_AD_OFF + SKF_AD_CPU (include/uapi/linux/filter.h): the ancillary load of the current CPU.
const SKF_AD_CPU_LOAD: u32 = (-0x1000i32 + 36) as u32;
const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
const BPF_RET_K: u16 = 0x06;
/// BPF_MAXINSNS (include/uapi/linux/bpf_common.h).
const BPF_MAXINSNS: usize = 4096;

/// Installs `steer` on `listeners` (one per worker, whose CPU is the same index of `cpus`, in
/// group order) and says what was used.
///
/// Several workers on one CPU (more workers than CPUs): SO_INCOMING_CPU marks each of their
/// listeners with that CPU, and the kernel's selection (reuseport_select_sock_by_hash,
/// net/core/sock_reuseport.c, Linux 6.1+) walks the group from the flow's hash index to the first
/// listener of the packet's CPU, so the flows of a CPU still spread over its workers. The CBPF
/// program returns one index per CPU, so the other workers of a CPU would accept nothing: refused.
///
/// [`Steer::Cpu`] picks SO_INCOMING_CPU when the running kernel is 6.1 or later (reuseport groups
/// ignored it on 4.6–6.0 until "soreuseport: Fix socket selection for SO_INCOMING_CPU"; stable
/// backports cannot be detected, so older kernels get the CBPF program).
///
/// # Errors
/// [`ServerError::Steering`] with the setsockopt errno.
pub(crate) fn install(
    listeners: &[Socket],
    cpus: &[usize],
    steer: Steer,
    addr: SocketAddr,
) -> Result<SteeringUsed, ServerError> {
    let used = match steer {
        Steer::None => return Ok(SteeringUsed::None),
        Steer::IncomingCpu => SteeringUsed::IncomingCpu,
        Steer::ReuseportCbpf => SteeringUsed::ReuseportCbpf,
        Steer::Cpu => {
            let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            if kernel_at_least(&release, (6, 1)) {
                SteeringUsed::IncomingCpu
            } else {
                SteeringUsed::ReuseportCbpf
            }
        }
    };
    match used {
        SteeringUsed::IncomingCpu => {
            for (sock, &cpu) in listeners.iter().zip(cpus) {
                sock.set_cpu_affinity(cpu)
                    .map_err(|source| ServerError::Steering {
                        what: "SO_INCOMING_CPU",
                        addr,
                        source,
                    })?;
            }
        }
        SteeringUsed::ReuseportCbpf => {
            let mut distinct = cpus.to_vec();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.len() < cpus.len() {
                return Err(ServerError::Steering {
                    what: "SO_ATTACH_REUSEPORT_CBPF",
                    addr,
                    source: std::io::Error::other(format!(
                        "the program sends each CPU's flows to one listener, so with {} workers on {} CPUs the other workers of a CPU would accept nothing (give one worker per CPU, or `--steer incoming-cpu` on Linux 6.1+)",
                        cpus.len(),
                        distinct.len()
                    )),
                });
            }
            let prog = cpu_index_program(cpus);
            if prog.len() > BPF_MAXINSNS {
                return Err(ServerError::Steering {
                    what: "SO_ATTACH_REUSEPORT_CBPF",
                    addr,
                    source: std::io::Error::other(format!(
                        "{} CPUs need a program longer than BPF_MAXINSNS ({BPF_MAXINSNS})",
                        cpus.len()
                    )),
                });
            }
            if let Some(first) = listeners.first() {
                attach_reuseport_cbpf(first, &prog).map_err(|source| ServerError::Steering {
                    what: "SO_ATTACH_REUSEPORT_CBPF",
                    addr,
                    source,
                })?;
            }
        }
        SteeringUsed::None => {}
    }
    Ok(used)
}

/// Attaches a classic BPF program to the reuseport group of `sock` with
/// setsockopt(SO_ATTACH_REUSEPORT_CBPF) (Linux 4.5+, socket(7)), through nix's
/// `sockopt::AttachReusePortCbpf`; the program's return value is the index of the listener that
/// gets the flow (out of range → the kernel's hash decides). The kernel copies the program during
/// the call (sk_reuseport_attach_filter), so `prog` need only outlive it.
///
/// # Errors
/// The setsockopt errno (EINVAL for a malformed program, ENOMEM); InvalidInput for a program of
/// more than 65535 instructions.
fn attach_reuseport_cbpf(sock: &Socket, prog: &[libc::sock_filter]) -> std::io::Result<()> {
    let len = u16::try_from(prog.len()).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "BPF program too long")
    })?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr().cast_mut(),
    };
    nix::sys::socket::setsockopt(
        &sock.as_fd(),
        nix::sys::socket::sockopt::AttachReusePortCbpf,
        &fprog,
    )
    .map_err(std::io::Error::from)
}

/// The reuseport CBPF program: load the CPU number (SKF_AD_CPU), return the index of that CPU in
/// `cpus` (= the listener's index in the group, since listeners join in `cpus` order), or
/// `u32::MAX` for a CPU without a worker, which makes the kernel fall back to the 4-tuple hash
/// (net/core/sock_reuseport.c, run_bpf_filter: index >= num_socks → NULL). `2 + 2 * cpus.len()`
/// instructions.
pub(crate) fn cpu_index_program(cpus: &[usize]) -> Vec<libc::sock_filter> {
    let ins = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let mut prog = Vec::with_capacity(2 + 2 * cpus.len());
    prog.push(ins(BPF_LD_W_ABS, 0, 0, SKF_AD_CPU_LOAD));
    for (i, &cpu) in cpus.iter().enumerate() {
        prog.push(ins(BPF_JMP_JEQ_K, 0, 1, cpu as u32));
        prog.push(ins(BPF_RET_K, 0, 0, i as u32));
    }
    prog.push(ins(BPF_RET_K, 0, 0, u32::MAX));
    prog
}

/// True when the kernel release string (`6.18.44-foo`) is at least `min` (major, minor).
pub(crate) fn kernel_at_least(release: &str, min: (u32, u32)) -> bool {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    match (major, minor) {
        (Some(a), Some(b)) => (a, b) >= min,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_compare() {
        assert!(kernel_at_least("6.18.44-fc-v657", (6, 1)));
        assert!(kernel_at_least("6.1.0", (6, 1)));
        assert!(!kernel_at_least("6.0.19", (6, 1)));
        assert!(!kernel_at_least("5.19.0-rc1", (6, 1)));
        assert!(kernel_at_least("10.0", (6, 1)));
        assert!(!kernel_at_least("garbage", (6, 1)));
    }

    #[test]
    fn program_maps_cpus_to_group_indices() {
        let p = cpu_index_program(&[4, 9]);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0].k, SKF_AD_CPU_LOAD);
        assert_eq!((p[1].k, p[2].k), (4, 0));
        assert_eq!((p[3].k, p[4].k), (9, 1));
        assert_eq!(p[5].k, u32::MAX);
    }
}
