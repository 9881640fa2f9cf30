//! Check: one [`Row`] per key of a preset against the host, with its [`Status`], the value
//! apply would write, and the kernel's side effects followed through the rows in apply's
//! order.
//!
//! In *netns-only* mode (`--netns`, or when the process is not in the initial network
//! namespace), global keys are [`Status::Refused`]: they would change the whole host
//! (net/core/sysctl_net_core.c, net/ipv4/sysctl_net_ipv4.c: tables registered only for the
//! initial namespace).

use std::collections::HashMap;

use serde::Serialize;

use super::side_effects::side_writes_over;
use super::SideWrite;
use crate::sysctl::rules::NetnsRuleKind;
use crate::sysctl::{Entry, Op, Preset};
use crate::sysctl::{Key, Scope, SysctlError, SysctlIo};

/// The state of one key against its recommendation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Already as recommended (for at-least/at-most: within the limit).
    Ok,
    /// Differs; apply will set it.
    Change,
    /// The recommendation is below the current value of a limit: apply refuses unless
    /// `--allow-decrease` was given (then the row is a [`Status::Change`] with a note).
    Lower,
    /// The key does not exist here (the note says why: legacy name, module not loaded, an
    /// interface this host does not have, ...): the write would fail ENOENT. Skipped with a
    /// warning, as systemd-sysctl does; blocks apply with `--strict`.
    Missing,
    /// Missing, but the entry is optional: reported, never applied.
    MissingOptional,
    /// The file is read-only here (a status key, a key only the initial network namespace may
    /// set, a read-only mount): the write would fail EACCES or EROFS. Skipped with a note, as
    /// systemd-sysctl does; blocks apply with `--strict`.
    ReadOnly,
    /// The kernel will refuse this value here with EPERM (a child network namespace and an
    /// algorithm outside its allowed list). Skipped with a note; blocks apply with `--strict`.
    Denied,
    /// The value names something the kernel does not have (a congestion control algorithm
    /// not loaded): the write would fail ENOENT. Skipped with a warning; blocks apply with
    /// `--strict`.
    Unavailable,
    /// The kernel will reject the value (EINVAL). Blocks apply.
    Rejected,
    /// A `-` line (ignore failure) that cannot be written here (missing, read-only, status key,
    /// rejected value): skipped with a note, as systemd-sysctl would.
    Skipped,
    /// Global key in netns-only mode: not written (it would change the whole host). Skipped;
    /// blocks apply with `--strict`.
    Refused,
    /// Reading failed.
    Unreadable(String),
    /// A `manual` entry differs: only right under the condition in its reason, so apply leaves
    /// it to the user.
    Manual,
}

impl Status {
    /// True when `check --strict` should fail on it.
    pub fn is_off(&self) -> bool {
        !matches!(self, Status::Ok | Status::Manual)
    }
    /// True when apply writes it.
    pub fn needs_write(&self) -> bool {
        matches!(self, Status::Change)
    }
    /// True when apply refuses the whole plan because of it in every mode (before changing
    /// anything): a value the kernel rejects (EINVAL), a lowered limit, an unreadable key.
    pub fn blocks(&self) -> bool {
        matches!(
            self,
            Status::Rejected | Status::Lower | Status::Unreadable(_)
        )
    }
    /// True when the write would fail in a way systemd-sysctl skips (ENOENT with a warning;
    /// EPERM, EACCES, EROFS with a note) and `--strict` turns into an error; also a global key
    /// in a child namespace, which is not written.
    pub fn fails_when_strict(&self) -> bool {
        matches!(
            self,
            Status::Missing
                | Status::ReadOnly
                | Status::Denied
                | Status::Unavailable
                | Status::Refused
        )
    }
    /// Short label for tables.
    pub fn label(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Change => "change",
            Status::Lower => "lower (refused)",
            Status::Missing => "missing",
            Status::MissingOptional => "missing (optional)",
            Status::ReadOnly => "read-only",
            Status::Denied => "denied (EPERM)",
            Status::Unavailable => "unavailable (ENOENT)",
            Status::Rejected => "rejected",
            Status::Skipped => "skipped (-)",
            Status::Refused => "refused (global)",
            Status::Unreadable(_) => "unreadable",
            Status::Manual => "manual (not applied)",
        }
    }
}

/// One key checked against the host.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The preset entry.
    pub entry: Entry,
    /// Per-netns or global.
    pub scope: Scope,
    /// The current value, if readable.
    pub current: Option<String>,
    /// The comparison result.
    pub status: Status,
    /// The value apply writes: the recommended value, except for at-least/at-most entries with
    /// several numbers (tcp_rmem), where each number is the max (min) of current and
    /// recommended, so no field of a limit is lowered (raised).
    pub target: String,
    /// Why the status is what it is (empty when obvious).
    pub note: String,
    /// Values that make connection rate worse than the kernel default, legacy names and
    /// aliases, each with its reason and source (the rules table).
    pub warnings: Vec<String>,
    /// The keys the kernel also sets when apply writes this row
    /// ([`side_writes`](super::side_writes), including those already at the value); empty unless
    /// the row is written.
    pub side_effects: Vec<SideWrite>,
    /// Apply refuses the whole plan because of this row, before changing anything
    /// ([`Status::blocks`], or with [`CheckOptions::strict`] any write that would fail).
    pub fatal: bool,
}

/// How [`check`] treats keys it cannot or should not write.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckOptions {
    /// Refuse global keys (`--netns`, or a child network namespace).
    pub netns_only: bool,
    /// Allow lowering a limit below its current value (`--allow-decrease`).
    pub allow_decrease: bool,
    /// Every write that would fail is an error, not a skip, except on `-` lines
    /// (`--strict`, as `systemd-sysctl --strict`).
    pub strict: bool,
}

fn numbers(v: &str) -> Option<Vec<i64>> {
    v.split(' ').map(|n| n.parse().ok()).collect()
}

/// Compares `current` with an entry. Returns `(status, note)`.
fn compare(e: &Entry, current: &str) -> (Status, String) {
    let (cur, want) = (numbers(current), numbers(&e.value));
    match e.op {
        Op::Set if current == e.value => (Status::Ok, String::new()),
        Op::Set => match (cur, want) {
            (Some(c), Some(w))
                if c.len() == 1 && w.len() == 1 && w[0] < c[0] && is_limit(&e.key) =>
            {
                (
                    Status::Lower,
                    format!("would lower the limit from {current} to {}", e.value),
                )
            }
            _ => (Status::Change, String::new()),
        },
        Op::AtLeast | Op::AtMost => {
            let (Some(c), Some(w)) = (cur, want) else {
                return (
                    Status::Change,
                    format!("current value {current:?} is not numeric"),
                );
            };
            if c.len() != w.len() {
                return (
                    Status::Change,
                    format!("current has {} numbers, recommended {}", c.len(), w.len()),
                );
            }
            let fine = c
                .iter()
                .zip(&w)
                .all(|(c, w)| if e.op == Op::AtLeast { c >= w } else { c <= w });
            if !fine {
                (Status::Change, String::new())
            } else if current != e.value {
                (
                    Status::Ok,
                    format!(
                        "current {current} is beyond the recommended {}; kept",
                        e.value
                    ),
                )
            } else {
                (Status::Ok, String::new())
            }
        }
    }
}

/// The value to write for `e` given the current value (see [`Row::target`]).
pub(crate) fn target_value(e: &Entry, current: Option<&str>) -> String {
    let (Some(c), Some(w)) = (current.and_then(numbers), numbers(&e.value)) else {
        return e.value.clone();
    };
    if e.op == Op::Set || c.len() != w.len() {
        return e.value.clone();
    }
    let merged: Vec<String> = c
        .iter()
        .zip(&w)
        .map(|(c, w)| {
            if e.op == Op::AtLeast {
                c.max(w)
            } else {
                c.min(w)
            }
            .to_string()
        })
        .collect();
    merged.join(" ")
}

/// Keys whose value is a capacity limit (lowering them can break a running host).
fn is_limit(key: &Key) -> bool {
    let k = key.as_str();
    [
        "max",
        "backlog",
        "somaxconn",
        "nr_open",
        "buckets",
        "entries",
        "_mem",
    ]
    .iter()
    .any(|p| k.contains(p))
}

/// Whether a key missing here is a global key this network namespace does not show: only
/// `/proc/sys/net` depends on the network namespace (net/sysctl_net.c), and there a global key
/// exists in the initial namespace but not in a child ([`SysctlIo::in_initial_netns`]); when
/// the initial namespace cannot be looked into, the keys the kernel registers for it alone
/// ([`Key::global_by_name`]). A key that exists nowhere is missing, not global.
fn hidden_global(key: &Key, io: &dyn SysctlIo) -> bool {
    key.as_str().starts_with("net.")
        && io
            .in_initial_netns(key)
            .unwrap_or_else(|| key.global_by_name())
}

/// Why a missing key is missing: legacy name (and whether its replacement is here), an
/// interface this host does not have, a module, not on this kernel.
fn missing_note(key: &Key, io: &dyn SysctlIo) -> String {
    if let Some((l, new)) = crate::sysctl::rules::legacy(key) {
        return match new {
            Some(n) => {
                let here = match Key::parse(&n).map(|k| io.read(&k)) {
                    Ok(Ok(v)) => format!(" ({n} is {v} here)"),
                    Ok(Err(_)) => match crate::sysctl::rules::module_for(key).or_else(|| {
                        Key::parse(&n)
                            .ok()
                            .and_then(|k| crate::sysctl::rules::module_for(&k))
                    }) {
                        Some((m, _)) => format!(" ({n} exists while module {m} is loaded)"),
                        None => String::new(),
                    },
                    Err(_) => String::new(),
                };
                format!("legacy name: {}; use {n}{here} ({})", l.note, l.source)
            }
            None => format!("legacy: {} ({})", l.note, l.source),
        };
    }
    if let Some((parent, name)) = key.interface() {
        let dirs: Vec<&str> = parent.iter().map(String::as_str).collect();
        let present = io.children(&dirs);
        if !present.is_empty() && !present.contains(&name) {
            return format!(
                "no interface {name} here (not in /proc/sys/{}): the line applies once the interface exists — systemd runs systemd-sysctl for each new interface (udev rule 99-systemd.rules, --prefix=/{}/{name}); drop the line or prefix it with `-` where the interface is not always there",
                parent.join("/"),
                parent.join("/")
            );
        }
    }
    if let Some((m, src)) = crate::sysctl::rules::module_for(key) {
        return format!(
            "exists only while module {m} is loaded: `modprobe {m}` (persist in /etc/modules-load.d/{m}.conf) ({src})"
        );
    }
    "not on this kernel (removed, renamed or not built); mark it optional or drop it".into()
}

/// Why a key without a write bit here cannot be set: a status key (the rules table), read-only
/// in a child network namespace only, or a read-only file.
fn read_only_note(key: &Key, io: &dyn SysctlIo, netns_only: bool) -> String {
    if let Some(t) = crate::sysctl::rules::status_text(key) {
        return format!("status key: {t}: drop the line or prefix it with `-`");
    }
    if netns_only
        && key.as_str().starts_with("net.")
        && io.writable_in_initial_netns(key) == Some(true)
    {
        let why = crate::sysctl::rules::netns_rule(key)
            .filter(|r| r.kind == NetnsRuleKind::ReadOnlyInChild)
            .map(|r| format!("{} ({})", r.fix, r.source))
            .unwrap_or_else(|| "set it in the initial network namespace".into());
        return format!(
            "read-only in this child network namespace, writable in the initial one: {why}"
        );
    }
    "read-only file (the kernel's table gives it no write permission): a status value that cannot be set; drop the line or prefix it with `-`".into()
}

/// Whether a child network namespace refuses the value `target` of `key` (the rules table
/// `NETNS_RULES`, allowed lists): the status and why, read through `io`.
fn netns_value_rule(
    key: &Key,
    target: &str,
    io: &dyn SysctlIo,
    child: bool,
) -> Option<(Status, String)> {
    let rule = crate::sysctl::rules::netns_rule(key)?;
    let NetnsRuleKind::AllowedList { list, available } = rule.kind else {
        return None;
    };
    let get = |k: &str| Key::parse(k).ok().and_then(|k| io.read(&k).ok());
    let has = |l: &Option<String>| {
        l.as_deref()
            .is_some_and(|l| l.split(' ').any(|a| a == target))
    };
    let (allowed, avail) = (get(list), get(available));
    if avail.is_some() && !has(&avail) {
        return Some((
            Status::Unavailable,
            format!(
                "the kernel has no `{target}` ({available} = {}): the write fails ENOENT unless root can load module tcp_{target} (net/ipv4/tcp_cong.c tcp_ca_find_autoload); `modprobe tcp_{target}` first",
                avail.unwrap_or_default()
            ),
        ));
    }
    if child && allowed.is_some() && !has(&allowed) {
        let fix = rule
            .fix
            .replace(
                "LIST ALGO",
                &format!("{} {target}", allowed.clone().unwrap_or_default()),
            )
            .replace("ALGO", target);
        return Some((
            Status::Denied,
            format!(
                "`{target}` is not in this namespace's {list} ({}): only the initial network namespace may pick a restricted algorithm, so the write fails EPERM ({}); to allow it, {fix}",
                allowed.unwrap_or_default(),
                rule.source
            ),
        ));
    }
    None
}

/// The scope the kernel gives each `net.*` key whose name alone says "global": a key that a new,
/// empty network namespace has with a write bit is per namespace there (`bridge-nf-call-iptables`
/// once br_netfilter is loaded); one it has read-only or not at all stays global.
fn probed_scopes(preset: &Preset, io: &dyn SysctlIo) -> HashMap<Key, Scope> {
    let keys: Vec<Key> = preset
        .sysctls
        .iter()
        .map(|e| e.key.clone())
        .filter(|k| k.as_str().starts_with("net.") && k.scope() == Scope::Global)
        .collect();
    if keys.is_empty() {
        return HashMap::new();
    }
    let Some(seen) = io.in_fresh_netns(&keys) else {
        return HashMap::new();
    };
    keys.into_iter()
        .zip(seen)
        .filter_map(|(k, s)| Some((k, if s? { Scope::Netns } else { Scope::Global })))
        .collect()
}

/// Checks every entry of `preset` against the host through `io` (see [`CheckOptions`]).
///
/// What a row whose write would fail does to the plan follows systemd-sysctl
/// (src/sysctl/sysctl.c `sysctl_write_or_warn`): a missing key (ENOENT) is skipped with a
/// warning, a write the kernel or a read-only mount refuses (EPERM, EACCES, EROFS) is skipped
/// with a note, and the rest applies; a value the kernel rejects (EINVAL) makes apply refuse the
/// whole plan before changing anything. With [`CheckOptions::strict`] every one of them refuses
/// the plan, as `systemd-sysctl --strict` fails, except on lines with the `-` prefix, which are
/// skipped whatever the failure. [`Row::fatal`] says which rows refuse.
pub fn check(preset: &Preset, io: &dyn SysctlIo, opts: CheckOptions) -> Vec<Row> {
    let netns_only = opts.netns_only;
    let unpriv = |preset: &Preset| {
        preset
            .sysctls
            .iter()
            .find(|e| e.key.as_str() == "net.ipv4.ip_unprivileged_port_start")
            .map(|e| e.value.clone())
            .or_else(|| {
                Key::parse("net.ipv4.ip_unprivileged_port_start")
                    .ok()
                    .and_then(|k| io.read(&k).ok())
            })
            .and_then(|v| v.parse::<i64>().ok())
    };
    let unpriv = unpriv(preset);
    let probed = probed_scopes(preset, io);
    let mut rows: Vec<Row> = preset
        .sysctls
        .iter()
        .map(|e| {
            let scope = probed.get(&e.key).copied().unwrap_or_else(|| e.key.scope());
            let status_key = crate::sysctl::rules::status_text(&e.key);
            let (current, mut status, mut note) = match io.read(&e.key) {
                Err(SysctlError::Missing { .. }) if e.manual => {
                    (None, Status::MissingOptional, "not on this kernel; optional".to_string())
                }
                Err(SysctlError::Missing { .. }) if netns_only && hidden_global(&e.key, io) => (
                    None,
                    if e.optional { Status::Skipped } else { Status::Refused },
                    "global key: not visible in this network namespace (the initial one has it)".into(),
                ),
                Err(SysctlError::Missing { .. }) => (
                    None,
                    if e.optional { Status::MissingOptional } else { Status::Missing },
                    missing_note(&e.key, io),
                ),
                Err(err) => (None, Status::Unreadable(err.to_string()), err.to_string()),
                Ok(cur) => {
                    let (mut status, mut note) = compare(e, &cur);
                    if status == Status::Lower && opts.allow_decrease {
                        status = Status::Change;
                        note = format!("{note} (allowed by --allow-decrease)");
                    } else if status == Status::Lower {
                        note = format!("{note}: pass --allow-decrease to lower a limit");
                    }
                    let writes = status.needs_write() || status == Status::Lower;
                    let target = target_value(e, Some(&cur));
                    // What the kernel would answer comes first, the same in every mode: a status
                    // key is one whatever namespace asks.
                    if e.manual && status != Status::Ok {
                        status = Status::Manual;
                        note = "never applied: set it by hand when the reason holds".into();
                    } else if writes
                        && (status_key.is_some()
                            || (!e.key.as_str().starts_with("net.") && !io.writable(&e.key)))
                    {
                        // Outside net.* a file's mode is the same in every namespace: read-only
                        // is read-only everywhere.
                        status = Status::ReadOnly;
                        note = read_only_note(&e.key, io, netns_only);
                    } else if writes && netns_only && scope == Scope::Global {
                        status = Status::Refused;
                        note = "global key: changing it would affect the whole host, refused in --netns mode or a child network namespace".into();
                    } else if writes && !io.writable(&e.key) {
                        status = Status::ReadOnly;
                        note = read_only_note(&e.key, io, netns_only);
                    } else if writes && io.read_only_mount(&e.key) {
                        status = Status::ReadOnly;
                        note = "the file system under it is mounted read-only here (a container's /proc/sys, a private mount namespace): the write fails EROFS".into();
                    } else if writes {
                        if let Some(why) = crate::sysctl::rules::rejects(&e.key, &target, Some(&cur), unpriv) {
                            status = Status::Rejected;
                            note = format!("the kernel will reject {target:?}: {why}");
                        } else if let Some((s, why)) = netns_value_rule(&e.key, &target, io, netns_only) {
                            status = s;
                            note = why;
                        }
                    }
                    (Some(cur), status, note)
                }
            };
            if e.optional
                && matches!(
                    status,
                    Status::ReadOnly
                        | Status::Rejected
                        | Status::Missing
                        | Status::Denied
                        | Status::Unavailable
                        | Status::Refused
                )
            {
                note = format!("{note}; skipped: the line's `-` prefix ignores this failure");
                status = Status::Skipped;
            }
            if status == Status::MissingOptional && e.optional && !e.origin.is_empty() {
                note = format!("{note}; skipped: the line's `-` prefix ignores a missing key");
            }
            let fatal = status.blocks() || (opts.strict && status.fails_when_strict());
            if status.fails_when_strict() {
                note = if opts.strict {
                    format!("{note}; --strict makes this an error (a `-` prefix on the line skips it instead)")
                } else if matches!(status, Status::Missing | Status::Unavailable) {
                    format!("{note}; skipped with a warning, the rest applies (as systemd-sysctl does; --strict refuses)")
                } else if status == Status::Refused {
                    format!("{note}; skipped, the rest applies (--strict refuses)")
                } else {
                    format!("{note}; skipped, the rest applies (systemd-sysctl ignores EPERM, EACCES and EROFS too; --strict refuses)")
                };
            }
            let target = target_value(e, current.as_deref());
            let mut warnings: Vec<String> = crate::sysctl::rules::harms(&e.key, &target)
                .into_iter()
                .map(|h| format!("{} {}: {} ({})", h.key, h.when, h.why, h.source))
                .collect();
            if let Some((_, Some(new))) = crate::sysctl::rules::legacy(&e.key) {
                if let Ok(k) = Key::parse(&new) {
                    warnings.extend(crate::sysctl::rules::harms(&k, &target).into_iter().map(|h| {
                        format!("as {new}: {} {}: {} ({})", h.key, h.when, h.why, h.source)
                    }));
                }
            }
            if current.is_some() {
                if let Some(t) = crate::sysctl::rules::legacy_text(&e.key) {
                    warnings.push(format!("legacy key: {t}"));
                }
            }
            if let Some((a, other)) = crate::sysctl::rules::alias_of(&e.key) {
                warnings.push(format!("alias of {other}: {} ({})", a.note, a.source));
            }
            Row { entry: e.clone(), scope, current, status, note, target, warnings, side_effects: Vec::new(), fatal }
        })
        .collect();
    side_effects(&mut rows, io);
    super::workload::warnings(&mut rows, io);
    rows
}

/// Follows the kernel's side effects through the rows in apply's order: a written row gets
/// its [`Row::side_effects`], and a later row whose key an earlier write changes is compared
/// with the value that write leaves (so `conf.all.forwarding = 1` then `conf.eth0.forwarding =
/// 0` plans a write of eth0 although eth0 reads 0 now).
fn side_effects(rows: &mut [Row], io: &dyn SysctlIo) {
    // Each key the plan's writes so far have set: its value then, and which line set it.
    let mut after: HashMap<Key, (String, String)> = HashMap::new();
    for i in 0..rows.len() {
        let r = &mut rows[i];
        if let Some((to, by)) = after.get(&r.entry.key) {
            if matches!(r.status, Status::Ok | Status::Change) {
                let (status, _) = compare(&r.entry, to);
                let target = target_value(&r.entry, Some(to));
                if status == Status::Change {
                    let was = r.status.clone();
                    r.status = Status::Change;
                    r.target = target;
                    r.note = format!(
                        "{by} sets it to {to} first; apply writes it {}",
                        if was == Status::Ok {
                            "back"
                        } else {
                            "after that"
                        }
                    );
                } else if r.status == Status::Change {
                    r.status = Status::Ok;
                    r.note = format!("{by} already sets it to {to}");
                }
            }
        }
        if r.status.needs_write() {
            let earlier = |k: &Key| after.get(k).map(|(v, _)| v.clone());
            let current = earlier(&r.entry.key)
                .or_else(|| r.current.clone())
                .unwrap_or_default();
            let by = if r.entry.origin.is_empty() {
                format!("{} = {}", r.entry.key, r.target)
            } else {
                format!("{} = {} ({})", r.entry.key, r.target, r.entry.origin)
            };
            r.side_effects = side_writes_over(&r.entry.key, &current, &r.target, io, &earlier);
            // What this write sets, in the kernel's order: the side effects, the alias (the
            // same kernel value under another name), the key itself.
            let mut now: Vec<(Key, String)> = r
                .side_effects
                .iter()
                .filter(|w| w.changes())
                .map(|w| (w.key.clone(), w.to.clone()))
                .collect();
            if let Some((_, other)) = crate::sysctl::rules::alias_of(&r.entry.key) {
                if let Ok(k) = Key::parse(other) {
                    now.push((k, r.target.clone()));
                }
            }
            now.push((r.entry.key.clone(), r.target.clone()));
            // Earlier rows whose written value this write changes: the host ends with this
            // write's value, whatever the earlier line said (systemd-sysctl writes in the same
            // order, so it ends the same way).
            let overwritten: Vec<(usize, String)> = rows[..i]
                .iter()
                .enumerate()
                .filter(|(_, e)| e.status.needs_write())
                .filter_map(|(j, e)| {
                    now.iter()
                        .find(|(k, v)| *k == e.entry.key && *v != e.target)
                        .map(|(_, v)| (j, v.clone()))
                })
                .collect();
            for (j, v) in overwritten {
                let w = format!(
                    "overwritten later: {by} sets it to {v} (kernel side effect or alias), so the host ends with {v}, not {}",
                    rows[j].target
                );
                rows[j].warnings.push(w);
            }
            for (k, v) in now {
                after.insert(k, (v, by.clone()));
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::plan::{apply, ApplyError, Prediction};
    use crate::sysctl;
    use crate::sysctl::ProcSys;

    pub(in crate::plan) fn entry(key: &str, value: &str, op: Op) -> Entry {
        Entry {
            key: Key::parse(key).unwrap(),
            value: value.into(),
            op,
            optional: false,
            manual: false,
            reason: "r".into(),
            source: "s".into(),
            line: 1,
            origin: String::new(),
            overrides: Vec::new(),
        }
    }

    #[test]
    fn limits_are_never_lowered_field_by_field() {
        let e = entry("net.ipv4.tcp_rmem", "4096 262144 16777216", Op::AtLeast);
        assert_eq!(compare(&e, "4096 131072 33554432").0, Status::Change);
        assert_eq!(
            target_value(&e, Some("4096 131072 33554432")),
            "4096 262144 33554432"
        );
        assert_eq!(compare(&e, "8192 262144 16777216").0, Status::Ok);
        let m = entry("net.ipv4.tcp_fin_timeout", "15", Op::AtMost);
        assert_eq!(compare(&m, "60").0, Status::Change);
        assert_eq!(target_value(&m, Some("60")), "15");
        assert_eq!(compare(&m, "10").0, Status::Ok);
        let s = entry("net.core.somaxconn", "128", Op::Set);
        assert_eq!(compare(&s, "4096").0, Status::Lower);
        assert_eq!(target_value(&s, Some("4096")), "128");
        assert_eq!(
            compare(&entry("net.ipv4.tcp_syncookies", "0", Op::Set), "1").0,
            Status::Change
        );
    }

    #[test]
    fn check_on_a_fixture_reports_missing_read_only_and_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let put = |k: &str, v: &str, mode: u32| {
            let p = Key::parse(k).unwrap().path(d.path());
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, v).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        put("net.core.somaxconn", "4096\n", 0o644);
        put("net.core.rmem_max", "212992\n", 0o444);
        put("fs.nr_open", "1048576\n", 0o644);
        let preset = Preset {
            name: "t".into(),
            description: String::new(),
            origin: "t".into(),
            sysctls: vec![
                entry("net.core.somaxconn", "65535", Op::AtLeast),
                entry("net.core.rmem_max", "16777216", Op::AtLeast),
                entry("fs.nr_open", "2000000", Op::AtLeast),
                entry("net.ipv4.tcp_tw_recycle", "1", Op::Set),
            ],
            cmdline: Vec::new(),
            lines: Vec::new(),
        };
        let io = ProcSys {
            root: d.path().to_path_buf(),
        };
        let labels = |rows: Vec<Row>| rows.iter().map(|r| r.status.label()).collect::<Vec<_>>();
        assert_eq!(
            labels(check(&preset, &io, CheckOptions::default())),
            ["change", "read-only", "change", "missing"]
        );
        assert_eq!(
            labels(check(
                &preset,
                &io,
                CheckOptions {
                    netns_only: true,
                    ..CheckOptions::default()
                }
            )),
            ["change", "refused (global)", "refused (global)", "missing"]
        );
        // A missing and a read-only key are skipped as systemd-sysctl skips them; with
        // --strict they refuse the whole plan.
        let skips = Prediction::of(&check(&preset, &io, CheckOptions::default()));
        assert!(skips.refusals.is_empty(), "{skips:?}");
        assert_eq!(skips.skips.len(), 2, "{skips:?}");
        let mut w = io.clone();
        let state = d.path().join("state");
        let strict = CheckOptions {
            strict: true,
            ..CheckOptions::default()
        };
        let err = apply(&check(&preset, &io, strict), &mut w, d.path(), &state, "t").unwrap_err();
        assert!(
            matches!(err, ApplyError::Blocked { ref keys } if keys.len() == 2),
            "{err}"
        );
        assert!(!state.exists(), "a blocked apply writes no snapshot");
        assert_eq!(
            sysctl::read(d.path(), &Key::parse("net.core.somaxconn").unwrap()).unwrap(),
            "4096"
        );
    }

    /// A child network namespace as `check` sees it: the fixture tree is this namespace, and
    /// `initial` lists the keys the initial one has (`None`: it cannot be looked into).
    struct Child {
        here: ProcSys,
        initial: Option<Vec<&'static str>>,
    }

    impl SysctlIo for Child {
        fn read(&self, key: &Key) -> Result<String, SysctlError> {
            self.here.read(key)
        }
        fn write(&mut self, key: &Key, value: &str) -> Result<(), SysctlError> {
            self.here.write(key, value)
        }
        fn writable(&self, key: &Key) -> bool {
            self.here.writable(key)
        }
        fn children(&self, dir: &[&str]) -> Vec<String> {
            self.here.children(dir)
        }
        fn in_initial_netns(&self, key: &Key) -> Option<bool> {
            self.initial
                .as_ref()
                .map(|keys| keys.contains(&key.as_str()))
        }
    }

    /// Finding: in a child namespace every missing key was "refused (global)", also keys that
    /// exist nowhere; only a key the initial namespace has (or, when it cannot be looked into,
    /// one the kernel registers for it alone) is global there.
    #[test]
    fn a_key_missing_everywhere_is_missing_in_a_child_namespace_too() {
        let d = tempfile::tempdir().unwrap();
        let preset = Preset {
            name: "t".into(),
            description: String::new(),
            origin: "t".into(),
            sysctls: vec![
                entry("net.does.not.exist", "5", Op::Set),
                entry("kernel.this_is_bogus", "1", Op::Set),
                entry("net.core.netdev_max_backlog", "5000", Op::Set),
                entry("net.core.no_such_key", "1", Op::Set),
            ],
            cmdline: Vec::new(),
            lines: Vec::new(),
        };
        let child = |initial| Child {
            here: ProcSys {
                root: d.path().to_path_buf(),
            },
            initial,
        };
        let opts = CheckOptions {
            netns_only: true,
            ..CheckOptions::default()
        };
        let labels = |io: &Child| {
            check(&preset, io, opts)
                .iter()
                .map(|r| r.status.label())
                .collect::<Vec<_>>()
        };
        let seen = child(Some(vec!["net.core.netdev_max_backlog"]));
        assert_eq!(
            labels(&seen),
            ["missing", "missing", "refused (global)", "missing"]
        );
        let rows = check(&preset, &seen, opts);
        assert!(
            rows[0].note.starts_with("not on this kernel"),
            "{}",
            rows[0].note
        );
        assert!(
            rows[2].note.contains("the initial one has it"),
            "{}",
            rows[2].note
        );
        // The initial namespace out of reach: the kernel's own global tables only.
        assert_eq!(
            labels(&child(None)),
            ["missing", "missing", "refused (global)", "refused (global)"]
        );
        // On the host (not netns-only) every one of them is missing.
        let host = check(&preset, &child(None), CheckOptions::default());
        assert!(host.iter().all(|r| r.status == Status::Missing), "{host:?}");
    }
}
