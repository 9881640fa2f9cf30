//! Kernel counters of the generators, counted once per network namespace.
//!
//! A load record's counters are its namespace's deltas (`/proc/net/snmp`, `netstat`), so
//! generators sharing a namespace (processes on one host, pods with `hostNetwork: true` on one
//! node) each hold the whole namespace's figure: summed, `Tcp.ActiveOpens` would count every
//! connection of the namespace once per generator. So the records are grouped by
//! [`NetnsIdentity::key`]; within a group each counter is the largest delta among its members
//! (counters only grow, so that is the delta over the widest window: every member read its
//! "before" before its schedule started at the common `--start-at`, and the last to finish read
//! its "after" when all had ended, so it covers the whole namespace's run); groups are summed.
//! The cross-check is made per namespace: its `Tcp.ActiveOpens` against the handshakes and
//! attempts of all its generators.
//!
//! Records without a namespace identity (older builds) cannot be grouped: with more than one
//! generator their counters are left out of the merge (unknown) rather than summed.
//!
//! [`NetnsIdentity::key`]: crate::record::NetnsIdentity::key

use std::collections::BTreeMap;

use crate::record::{CrossCheck, PhaseRecord};

use super::MergeInput;

/// The load records grouped by network namespace (indices into the loads), in first-seen
/// order; `Err` with the files that carry no namespace identity when there are several loads.
pub(super) fn groups(loads: &[&MergeInput]) -> Result<Vec<Vec<usize>>, Vec<String>> {
    let unknown: Vec<String> = loads
        .iter()
        .filter(|l| l.record.counters_netns.is_none())
        .map(|l| l.path.display().to_string())
        .collect();
    if !unknown.is_empty() && loads.len() > 1 {
        return Err(unknown);
    }
    let mut order: Vec<(String, u64)> = Vec::new();
    let mut by_key: BTreeMap<(String, u64), Vec<usize>> = BTreeMap::new();
    for (i, l) in loads.iter().enumerate() {
        // A lone record without identity is its own namespace.
        let key = l
            .record
            .counters_netns
            .as_ref()
            .map_or((String::new(), 0), |n| n.key());
        if !by_key.contains_key(&key) {
            order.push(key.clone());
        }
        by_key.entry(key).or_default().push(i);
    }
    Ok(order
        .into_iter()
        .map(|k| by_key.remove(&k).expect("key from order"))
        .collect())
}

/// The warning for records whose namespaces are unknown.
pub(super) fn unknown_warning(files: &[String]) -> String {
    format!(
        "{} record no network namespace (written by an older build): generators sharing one each hold its whole counter deltas, so the merged kernel counters and the generators' Tcp.ActiveOpens cross-check are unknown rather than summed",
        files.join(", ")
    )
}

/// The counters of one merged phase: per namespace the largest delta of each counter among its
/// generators, summed over namespaces. `parts[i]` is load `i`'s phase.
pub(super) fn counters(parts: &[&PhaseRecord], groups: &[Vec<usize>]) -> BTreeMap<String, i64> {
    let mut out: BTreeMap<String, i64> = BTreeMap::new();
    for g in groups {
        let mut ns: BTreeMap<&str, i64> = BTreeMap::new();
        for &i in g {
            for (k, &v) in &parts[i].counters {
                let e = ns.entry(k.as_str()).or_insert(v);
                *e = (*e).max(v);
            }
        }
        for (k, v) in ns {
            *out.entry(k.to_string()).or_insert(0) += v;
        }
    }
    out
}

/// The generators' cross-check of one merged phase, per namespace: that namespace's
/// `Tcp.ActiveOpens` (counted once, as [`counters`]) must lie between its generators'
/// whole-run handshakes and attempts (Tcp.ActiveOpens counts each connect(2) that sent a SYN:
/// tcp_connect, net/ipv4/tcp_output.c). `groups` `None`: the namespaces are unknown.
/// `None` when a generator has no cross-check.
pub(super) fn cross_check(
    parts: &[&PhaseRecord],
    groups: Option<&[Vec<usize>]>,
) -> Option<CrossCheck> {
    let checks: Vec<&CrossCheck> = parts
        .iter()
        .map(|p| p.cross_check.as_ref())
        .collect::<Option<_>>()?;
    let load_successes = checks.iter().map(|c| c.load_successes).sum();
    let load_attempts = checks.iter().map(|c| c.load_attempts).sum::<Option<u64>>();
    let Some(groups) = groups else {
        return Some(CrossCheck {
            server_accepted: None,
            load_successes,
            load_attempts,
            kernel_passive_opens: None,
            kernel_active_opens: None,
            agree: false,
            note: "generators' namespaces unknown (older records): their Tcp.ActiveOpens cannot be counted once per namespace".into(),
        });
    };
    let mut agree = true;
    let mut total_active = Some(0i64);
    let mut lines = Vec::new();
    for (n, g) in groups.iter().enumerate() {
        let successes: u64 = g.iter().map(|&i| checks[i].load_successes).sum();
        let attempts: Option<u64> = g.iter().map(|&i| checks[i].load_attempts).sum();
        let active = g
            .iter()
            .map(|&i| checks[i].kernel_active_opens)
            .collect::<Option<Vec<i64>>>()
            .and_then(|v| v.into_iter().max());
        let ok =
            active.is_some_and(|a| a >= successes as i64 && attempts.is_none_or(|t| a <= t as i64));
        agree &= ok;
        total_active = total_active.zip(active).map(|(t, a)| t + a);
        lines.push(format!(
            "namespace {} ({} generator{}): {} handshakes, {} attempts, Tcp.ActiveOpens {}: {}",
            n + 1,
            g.len(),
            if g.len() == 1 { "" } else { "s" },
            crate::numfmt::count(successes),
            attempts.map_or("unknown".into(), crate::numfmt::count),
            active.map_or("unreadable".into(), crate::numfmt::signed),
            if ok { "agree" } else { "DISAGREE" }
        ));
    }
    Some(CrossCheck {
        server_accepted: None,
        load_successes,
        load_attempts,
        kernel_passive_opens: None,
        kernel_active_opens: total_active,
        agree,
        note: format!(
            "per network namespace, whole run (warm-up included), Tcp.ActiveOpens counted once per namespace: {}",
            lines.join("; ")
        ),
    })
}
