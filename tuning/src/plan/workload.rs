//! Values that hurt a connection-rate workload but need more than the value to judge (the rules
//! table `WORKLOAD_RULES`): the host's listening sockets, its memory, and the plan's other
//! lines. Each becomes a warning on its row, with the numbers, the reason and the source.
//!
//! - A port range that covers a port a service of this namespace listens on: an outgoing
//!   connection may take that port while the service is down (ip-sysctl.rst
//!   ip_local_port_range, ip_local_reserved_ports; bottlerocket-os/bottlerocket#1386).
//! - Keepalive settings that declare a silent peer dead in less than 100 s
//!   (`tcp_keepalive_time + tcp_keepalive_probes × tcp_keepalive_intvl`; ip-sysctl.rst, RFC 1122
//!   4.2.3.6 and the 100 s of tcp_retries2).
//! - A raised per-socket default buffer times the sockets the plan allows above the host's
//!   memory (admin-guide/sysctl/net.rst rmem_default/wmem_default, ip-sysctl.rst
//!   tcp_rmem/tcp_wmem).
//! - A key that sizes network namespaces created later, not this one (`tcp_child_ehash_entries`).

use common::numfmt::count;

use super::Row;
use crate::sysctl::rules::NetnsRuleKind;
use crate::sysctl::{Key, SysctlIo};

/// Adds the workload warnings to `rows` (see the module docs).
pub(super) fn warnings(rows: &mut [Row], io: &dyn SysctlIo) {
    port_range_over_listeners(rows, io);
    keepalive(rows, io);
    buffer_memory(rows, io);
    future_namespaces(rows, io);
}

/// The value `key` has once the plan is applied: the target of its row when the row writes it,
/// the row's current value otherwise, else the host's.
fn planned(rows: &[Row], io: &dyn SysctlIo, key: &str) -> Option<String> {
    match rows.iter().find(|r| r.entry.key.as_str() == key) {
        Some(r) if r.status.needs_write() => Some(r.target.clone()),
        Some(r) if r.current.is_some() => r.current.clone(),
        _ => Key::parse(key).ok().and_then(|k| io.read(&k).ok()),
    }
}

fn row_mut<'a>(rows: &'a mut [Row], key: &str) -> Option<&'a mut Row> {
    rows.iter_mut().find(|r| r.entry.key.as_str() == key)
}

/// Ports of an `ip_local_reserved_ports` value (`9000,18080-18090`).
fn port_list(v: &str) -> Vec<(u32, u32)> {
    v.split(',')
        .filter_map(|p| {
            let p = p.trim();
            match p.split_once('-') {
                Some((a, b)) => Some((a.trim().parse().ok()?, b.trim().parse().ok()?)),
                None => p.parse().ok().map(|n| (n, n)),
            }
        })
        .collect()
}

fn port_range_over_listeners(rows: &mut [Row], io: &dyn SysctlIo) {
    let key = "net.ipv4.ip_local_port_range";
    let Some(target) = rows
        .iter()
        .find(|r| r.entry.key.as_str() == key)
        .map(|r| r.target.clone())
    else {
        return;
    };
    let nums: Vec<u32> = target.split(' ').filter_map(|n| n.parse().ok()).collect();
    let [lo, hi] = nums[..] else { return };
    let Some(listening) = io.listening_ports() else {
        return;
    };
    let reserved = planned(rows, io, "net.ipv4.ip_local_reserved_ports")
        .map(|v| port_list(&v))
        .unwrap_or_default();
    let covered: Vec<u16> = listening
        .into_iter()
        .filter(|&p| (lo..=hi).contains(&u32::from(p)))
        .filter(|&p| {
            !reserved
                .iter()
                .any(|&(a, b)| (a..=b).contains(&u32::from(p)))
        })
        .collect();
    if covered.is_empty() {
        return;
    }
    let shown: Vec<String> = covered.iter().take(12).map(u16::to_string).collect();
    let more = if covered.len() > shown.len() {
        format!(" and {} more", count((covered.len() - shown.len()) as u64))
    } else {
        String::new()
    };
    let list = shown.join(",");
    if let Some(r) = row_mut(rows, key) {
        r.warnings.push(format!(
            "{lo}-{hi} covers port(s) {}{more} that services here listen on (this namespace's listening sockets): while such a service is down an outgoing connection can take its port, and the service then cannot bind it again (EADDRINUSE) — reserve them with net.ipv4.ip_local_reserved_ports = {list}, or start the range above them (Documentation/networking/ip-sysctl.rst ip_local_port_range, ip_local_reserved_ports; bottlerocket-os/bottlerocket#1386)",
            shown.join(", ")
        ));
    }
}

fn keepalive(rows: &mut [Row], io: &dyn SysctlIo) {
    const KEYS: [&str; 3] = [
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_keepalive_intvl",
    ];
    // The warning goes on the plan's first keepalive line that is written.
    let Some(first) = rows
        .iter()
        .find(|r| KEYS.contains(&r.entry.key.as_str()) && r.status.needs_write())
        .map(|r| r.entry.key.to_string())
    else {
        return;
    };
    let num = |k: &str, default: i64| {
        planned(rows, io, k)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(default)
    };
    let (time, probes, intvl) = (num(KEYS[0], 7200), num(KEYS[1], 9), num(KEYS[2], 75));
    let dead = time + probes * intvl;
    if dead >= 100 {
        return;
    }
    let w = format!(
        "with this plan keepalive declares a silent peer dead after tcp_keepalive_time + tcp_keepalive_probes x tcp_keepalive_intvl = {time} + {probes} x {intvl} = {dead} s: a peer paused or loaded for that long loses its connections (ETIMEDOUT), and every idle connection with SO_KEEPALIVE sends a probe every {} s — far below the kernel's default 7200 + 9 x 75 = 7875 s and RFC 1122's 100 s before a connection is given up (Documentation/networking/ip-sysctl.rst tcp_keepalive_time, tcp_keepalive_intvl, tcp_retries2; RFC 1122 4.2.3.6)",
        time.min(intvl).max(1)
    );
    if let Some(r) = row_mut(rows, &first) {
        r.warnings.push(w);
    }
}

/// (key, which number of the value, the kernel's default, what the default applies to).
const BUFFERS: &[(&str, usize, i64, &str)] = &[
    (
        "net.core.rmem_default",
        0,
        212_992,
        "the receive buffer every socket but TCP starts with",
    ),
    (
        "net.core.wmem_default",
        0,
        212_992,
        "the send buffer every socket but TCP starts with",
    ),
    (
        "net.ipv4.tcp_rmem",
        1,
        131_072,
        "the receive buffer every TCP socket starts with",
    ),
    (
        "net.ipv4.tcp_wmem",
        1,
        16_384,
        "the send buffer every TCP socket starts with",
    ),
];

fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / f64::from(1u32 << 30))
}

fn buffer_memory(rows: &mut [Row], io: &dyn SysctlIo) {
    let Some(mem) = io.mem_total_bytes() else {
        return;
    };
    // The sockets the plan expects: its own fs.file-max, else this host's fs.nr_open (the
    // descriptors one process may hold).
    let from_plan = rows
        .iter()
        .find(|r| r.entry.key.as_str() == "fs.file-max")
        .map(|r| (r.target.clone(), "fs.file-max in this plan"));
    let Some((n, what)) = from_plan.or_else(|| {
        Key::parse("fs.nr_open")
            .ok()
            .and_then(|k| io.read(&k).ok())
            .map(|v| (v, "fs.nr_open, the descriptors one process may hold"))
    }) else {
        return;
    };
    let Ok(sockets) = n.parse::<u64>() else {
        return;
    };
    for &(key, at, default, what_for) in BUFFERS {
        let Some(r) = row_mut(rows, key) else {
            continue;
        };
        if !r.status.needs_write() && r.status != super::Status::Lower {
            continue;
        }
        let Some(per) = r
            .target
            .split(' ')
            .nth(at)
            .and_then(|v| v.parse::<i64>().ok())
        else {
            continue;
        };
        let total = per as f64 * sockets as f64;
        if per <= default || total <= mem as f64 {
            continue;
        }
        r.warnings.push(format!(
            "{} bytes per socket ({what_for}; the kernel's default is {}) x {} sockets ({what}) = {}, {:.0}x this host's {} of memory (MemTotal): {} sockets with full queues would take all of it — buffers fill only as data queues, but each socket may queue this much before its peer is stopped (Documentation/admin-guide/sysctl/net.rst rmem_default, wmem_default; Documentation/networking/ip-sysctl.rst tcp_rmem, tcp_wmem)",
            count(per as u64),
            count(default as u64),
            count(sockets),
            gib(total),
            total / mem as f64,
            gib(mem as f64),
            count(mem / per as u64)
        ));
    }
}

fn future_namespaces(rows: &mut [Row], io: &dyn SysctlIo) {
    for r in rows.iter_mut().filter(|r| r.status.needs_write()) {
        let Some(rule) = crate::sysctl::rules::netns_rule(&r.entry.key) else {
            continue;
        };
        let NetnsRuleKind::FutureNamespaces { own } = rule.kind else {
            continue;
        };
        let here = Key::parse(own)
            .ok()
            .and_then(|k| io.read(&k).ok())
            .map(|v| format!(" ({own} = {v} here)"))
            .unwrap_or_default();
        r.warnings.push(format!(
            "it sizes the network namespaces created after the write, not this one{here}: {} ({})",
            rule.fix, rule.source
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_port_lists_parse_ranges_and_single_ports() {
        assert_eq!(
            port_list("9000, 18080-18090"),
            [(9000, 9000), (18080, 18090)]
        );
        assert!(port_list("").is_empty());
    }
}
