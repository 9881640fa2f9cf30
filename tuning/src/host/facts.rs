//! [`HostFacts`]: what a run record says about the host (kernel, command line, CPUs, NUMA, the
//! accept-rate sysctls, limits). Read from a root path so tests use fixture trees.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::topology::{self, NumaNode, Topology};
use super::{Cmdline, Finding, Severity};

/// The sysctls that bound the connection rate, recorded with every run
/// (Documentation/networking/ip-sysctl.rst: somaxconn, tcp_max_syn_backlog, tcp_syncookies,
/// ip_local_port_range, tcp_tw_reuse; net/core/sysctl_net_core.c for the global net.core keys).
pub const ACCEPT_RATE_SYSCTLS: &[&str] = &[
    "net.core.somaxconn",
    "net.core.netdev_max_backlog",
    "net.core.busy_poll",
    "net.core.busy_read",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.tcp_abort_on_overflow",
    "net.ipv4.tcp_migrate_req",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_tw_reuse",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_max_tw_buckets",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_syn_retries",
    "net.ipv4.tcp_synack_retries",
    "fs.file-max",
    "fs.nr_open",
    "kernel.io_uring_disabled",
    "kernel.numa_balancing",
    "kernel.sched_rt_runtime_us",
];

/// Facts about a host. Never fails as a whole: an unreadable part is `None` (or empty) and adds a
/// [`Finding`] with topic `"read"`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// `kernel.osrelease`, e.g. `"6.18.0"`.
    pub kernel_release: Option<String>,
    /// `kernel.random.boot_id`: changes every boot.
    pub boot_id: Option<String>,
    /// `kernel.hostname`.
    pub hostname: Option<String>,
    /// `/proc/cmdline`, parsed.
    pub cmdline: Option<Cmdline>,
    /// First `model name` (x86) or `Model` / `CPU part` line of /proc/cpuinfo.
    pub cpu_model: Option<String>,
    /// Online CPUs.
    pub online_cpus: Option<Vec<usize>>,
    /// CPUs isolated by `isolcpus=` (empty when none).
    pub isolated_cpus: Option<Vec<usize>>,
    /// `nohz_full` CPUs (empty when none).
    pub nohz_full_cpus: Option<Vec<usize>>,
    /// CPUs this process may run on.
    pub allowed_cpus: Option<Vec<usize>>,
    /// NUMA nodes with their CPUs.
    pub numa_nodes: Option<Vec<NumaNode>>,
    /// Physical cores among online CPUs.
    pub cores: Option<usize>,
    /// Packages (sockets).
    pub packages: Option<usize>,
    /// SMT active (a core runs more than one online CPU).
    pub smt_active: Option<bool>,
    /// [`ACCEPT_RATE_SYSCTLS`] that exist here, key → value (whitespace collapsed to one space).
    pub sysctls: BTreeMap<String, String>,
    /// RLIMIT_NOFILE of this process as `(soft, hard)`; `None` = unlimited or unreadable.
    pub nofile: Option<(u64, u64)>,
    /// What could not be read, and other observations.
    pub findings: Vec<Finding>,
}

fn read_trim(path: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(path).map(|s| s.trim().to_string())
}

impl HostFacts {
    /// Reads everything under `root` (`/` for this host).
    pub fn read(root: &Path) -> HostFacts {
        let mut f = HostFacts::default();
        let missing = |what: &str, e: &dyn std::fmt::Display, findings: &mut Vec<Finding>| {
            findings.push(Finding::new(Severity::Info, "read", format!("{what}: {e}")));
        };
        let mut findings = Vec::new();
        let proc_sys = root.join("proc/sys/kernel");
        for (field, file) in [
            (&mut f.kernel_release, "osrelease"),
            (&mut f.boot_id, "random/boot_id"),
            (&mut f.hostname, "hostname"),
        ] {
            match read_trim(&proc_sys.join(file)) {
                Ok(v) => *field = Some(v),
                Err(e) => missing(&format!("kernel/{file}"), &e, &mut findings),
            }
        }
        match Cmdline::read(root) {
            Ok(c) => {
                for (k, v, e) in &c.malformed {
                    findings.push(Finding::new(
                        Severity::Warn,
                        "cmdline",
                        format!("{k}={v} is not understood: {e}"),
                    ));
                }
                f.cmdline = Some(c);
            }
            Err(e) => missing("/proc/cmdline", &e, &mut findings),
        }
        match read_trim(&root.join("proc/cpuinfo")) {
            Ok(text) => {
                f.cpu_model = text.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    matches!(k.trim(), "model name" | "Model" | "cpu model")
                        .then(|| v.trim().to_string())
                });
            }
            Err(e) => missing("/proc/cpuinfo", &e, &mut findings),
        }
        match Topology::read(root) {
            Ok(t) => {
                f.cores = Some(t.cores());
                f.packages = Some(t.packages());
                f.smt_active = Some(t.smt_active());
                f.online_cpus = Some(t.online);
                f.isolated_cpus = Some(t.isolated);
                f.nohz_full_cpus = Some(t.nohz_full);
                f.numa_nodes = Some(t.nodes);
            }
            Err(e) => missing("CPU topology", &e, &mut findings),
        }
        match topology::allowed_cpus(root) {
            Ok(a) => f.allowed_cpus = Some(a),
            Err(e) => missing("allowed CPUs", &e, &mut findings),
        }
        for key in ACCEPT_RATE_SYSCTLS {
            let path = root.join("proc/sys").join(key.replace('.', "/"));
            if let Ok(v) = std::fs::read_to_string(&path) {
                f.sysctls.insert(
                    key.to_string(),
                    v.split_whitespace().collect::<Vec<_>>().join(" "),
                );
            }
        }
        match read_nofile(root) {
            Ok(n) => f.nofile = n,
            Err(e) => missing("/proc/self/limits", &e, &mut findings),
        }
        f.findings = findings;
        f
    }
}

/// Parses `Max open files  <soft> <hard> files` from `<root>/proc/self/limits`.
///
/// # Errors
/// Read errors, or `InvalidData` when the line is missing.
pub(crate) fn read_nofile(root: &Path) -> std::io::Result<Option<(u64, u64)>> {
    let text = std::fs::read_to_string(root.join("proc/self/limits"))?;
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "no `Max open files` line in /proc/self/limits",
            )
        })?;
    let nums: Vec<&str> = line["Max open files".len()..].split_whitespace().collect();
    match (
        nums.first().and_then(|s| s.parse().ok()),
        nums.get(1).and_then(|s| s.parse().ok()),
    ) {
        (Some(s), Some(h)) => Ok(Some((s, h))),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_host_without_failing() {
        let h = HostFacts::read(Path::new("/"));
        assert!(h.kernel_release.is_some());
        assert!(h.online_cpus.as_ref().is_some_and(|c| !c.is_empty()));
        assert!(h.sysctls.contains_key("net.core.somaxconn"));
        let (soft, hard) = h.nofile.unwrap();
        assert!(soft <= hard);
    }

    #[test]
    fn empty_root_gives_findings_not_a_panic() {
        let d = tempfile::tempdir().unwrap();
        let h = HostFacts::read(d.path());
        assert!(h.kernel_release.is_none() && h.online_cpus.is_none());
        assert!(h
            .findings
            .iter()
            .any(|f| f.topic == "read" && f.message.contains("osrelease")));
        assert!(h.sysctls.is_empty());
    }
}
