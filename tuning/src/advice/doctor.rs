//! The one-screen "doctor": everything that matters for a connection-rate run, as findings.
//!
//! Covers isolation (isolated / nohz_full CPUs, the process's allowed CPUs), IRQs delivered to
//! isolated CPUs (`/proc/irq/N/effective_affinity_list`), irqbalance, accept-queue limits
//! (somaxconn, tcp_max_syn_backlog), the ephemeral port range, syncookies, capabilities probed in
//! this process (io_uring, SO_INCOMING_CPU, SO_REUSEPORT), settings that do nothing because of
//! another (the rules table `NEEDS`, e.g. tcp_tw_reuse without timestamps), RLIMIT_NOFILE and
//! fs.nr_open, and the kernel config findings of
//! [`audit_kernel_config`](super::audit_kernel_config) for the server profile.

use std::path::Path;

use super::kconfig::{audit_kernel_config, AuditProfile, AuditRuntime, KernelConfig};
use super::ports::{port_budget, PortSettings};
use crate::cpulist;
use crate::host::{irq_affinity, irq_names, irqbalance_pids, Finding, HostFacts, Severity};

fn num(h: &HostFacts, key: &str) -> Option<i64> {
    h.sysctls
        .get(key)
        .and_then(|v| v.split(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Runs every check under `root` and returns the findings, most severe first.
pub fn doctor(root: &Path) -> Vec<Finding> {
    let h = HostFacts::read(root);
    let mut f: Vec<Finding> = h.findings.clone();
    let isolated = h.isolated_cpus.clone().unwrap_or_default();
    let online = h.online_cpus.clone().unwrap_or_default();
    if isolated.is_empty() {
        f.push(Finding::new(
            Severity::Info,
            "isolation",
            format!(
                "no isolated CPUs (online {}): workers share CPUs with the rest of the host",
                cpulist::format(&online)
            ),
        ));
    } else {
        f.push(Finding::new(
            Severity::Info,
            "isolation",
            format!(
                "isolated CPUs {} (nohz_full {}) of online {}",
                cpulist::format(&isolated),
                cpulist::format(h.nohz_full_cpus.as_deref().unwrap_or(&[])),
                cpulist::format(&online)
            ),
        ));
        if let Some(a) = &h.allowed_cpus {
            if !isolated.iter().all(|c| a.contains(c)) {
                f.push(Finding::new(Severity::Warn, "isolation", format!(
                    "this process may run only on {}: not every isolated CPU is usable (cpuset/taskset)", cpulist::format(a))));
            }
        }
        let names = irq_names(root);
        let mut on_iso = Vec::new();
        for irq in names.keys() {
            let (aff, eff) = irq_affinity(root, *irq);
            if eff
                .or(aff)
                .is_some_and(|c| c.iter().any(|c| isolated.contains(c)))
            {
                on_iso.push(*irq);
            }
        }
        if !on_iso.is_empty() {
            f.push(Finding::new(Severity::Warn, "irq", format!(
                "{} IRQ(s) are delivered to isolated CPUs (e.g. {:?}); move them with `connstorm tune irq --plan housekeeping`",
                on_iso.len(), &on_iso[..on_iso.len().min(8)])));
        }
    }
    let pids = irqbalance_pids(root);
    if !pids.is_empty() {
        f.push(Finding::new(
            Severity::Info,
            "irq",
            format!("irqbalance is running (pid {pids:?}); it rewrites IRQ affinities"),
        ));
    }
    match num(&h, "net.core.somaxconn") {
        Some(v) if v < 4096 => f.push(Finding::new(Severity::Warn, "sysctl", format!("net.core.somaxconn = {v}: listen backlogs are capped to it; raise it (preset c1m-server)"))),
        Some(v) => f.push(Finding::new(Severity::Info, "sysctl", format!("net.core.somaxconn = {v} (caps every listen() backlog)"))),
        None => {}
    }
    if let Some(v) = num(&h, "net.ipv4.tcp_max_syn_backlog") {
        f.push(Finding::new(
            Severity::Info,
            "sysctl",
            format!("net.ipv4.tcp_max_syn_backlog = {v} (matters only with syncookies off)"),
        ));
    }
    match num(&h, "net.ipv4.tcp_syncookies") {
        Some(1) => {}
        Some(v) => f.push(Finding::new(Severity::Warn, "sysctl", format!("net.ipv4.tcp_syncookies = {v}: 0 drops SYNs on a full queue, 2 always sends cookies; 1 is the documented default"))),
        None => {}
    }
    let sysctls = crate::sysctl::ProcSys {
        root: root.to_path_buf(),
    };
    if let Ok(ps) = PortSettings::read(&sysctls) {
        let (lo, hi) = ps.range;
        let loopback = port_budget(&ps, 1, true, true);
        let remote = port_budget(&ps, 1, false, true);
        let sev = if loopback.ports < 28232 {
            Severity::Warn
        } else {
            Severity::Info
        };
        f.push(Finding::new(sev, "ports", format!(
            "ephemeral ports {lo}-{hi} ({}): with client-first close, per (src IP, dst IP, dst port) toward loopback {}; toward other hosts {}",
            loopback.ports, loopback.explain, remote.explain)));
    }
    if let Some(v) = num(&h, "kernel.io_uring_disabled") {
        f.push(Finding::new(
            Severity::Info,
            "io_uring",
            format!("kernel.io_uring_disabled = {v} (0 allowed, 1 only for kernel.io_uring_group, 2 off; 6.6+); the probe line says whether io_uring works in this process"),
        ));
    }
    f.extend(crate::host::probe_findings());
    let io = sysctls;
    for n in crate::sysctl::rules::NEEDS {
        let read = |k: &str| {
            crate::sysctl::Key::parse(k)
                .ok()
                .and_then(|k| crate::sysctl::SysctlIo::read(&io, &k).ok())
                .and_then(|v| v.split(' ').next().and_then(|x| x.parse::<i64>().ok()))
        };
        if let (Some(v), Some(w)) = (read(n.key), read(n.needs)) {
            if (n.active)(v) && !(n.satisfied)(w) && n.key != "net.ipv4.tcp_max_syn_backlog" {
                f.push(Finding::new(
                    Severity::Warn,
                    "sysctl",
                    format!(
                        "{} = {v} has no effect: it needs {} = {}, which is {w}; {} ({})",
                        n.key, n.needs, n.needs_text, n.why, n.source
                    ),
                ));
            }
        }
    }
    if let Some((soft, hard)) = h.nofile {
        let sev = if soft < 65536 {
            Severity::Warn
        } else {
            Severity::Info
        };
        f.push(Finding::new(sev, "limits", format!(
            "RLIMIT_NOFILE soft {} hard {}{}", common::numfmt::count(soft), common::numfmt::count(hard), if soft < 65536 { ": each connection holds a descriptor; raise it (ulimit -n, LimitNOFILE=) up to fs.nr_open" } else { "" })));
    }
    match KernelConfig::read_host(root) {
        Ok(cfg) => {
            let (rows, cross) =
                audit_kernel_config(&cfg, AuditProfile::Server, &AuditRuntime::read(root, false));
            for r in rows.into_iter().filter(|r| r.severity > Severity::Info) {
                f.push(Finding::new(
                    r.severity,
                    "kconfig",
                    format!(
                        "{} = {} (server profile: {}): {}",
                        r.item, r.current, r.recommended, r.why
                    ),
                ));
            }
            f.extend(cross);
        }
        Err(e) => {
            f.push(Finding::new(Severity::Info, "kconfig", e.to_string()));
            // The kernel audit checks the command line against the CPUs; without a config it
            // is checked here.
            if let Ok(c) = crate::host::Cmdline::read(root) {
                f.extend(super::cmdline_findings(&c, &super::CpuState::read(root)));
            }
        }
    }
    f.sort_by_key(|x| std::cmp::Reverse(x.severity));
    f
}
