//! Check → plan → apply → revert for sysctl presets.
//!
//! [`check`] compares a [`Preset`] with the host and gives one [`Row`] per key with a
//! [`Status`]. [`apply`] changes only the rows that need it: it first saves every value it will
//! change in a [`Snapshot`] (written atomically), then writes key by key and reads each back. If a
//! write or read-back fails, it restores the keys it already changed, in reverse order, and says
//! so in [`ApplyError::WriteFailed`]. [`revert`] restores a snapshot; keys already at the saved
//! value are left alone, so reverting twice is harmless.
//!
//! In *netns-only* mode (`--netns`, or when the process is not in the initial network
//! namespace), global keys are [`Status::Refused`]: they would change the whole host
//! (net/core/sysctl_net_core.c, net/ipv4/sysctl_net_ipv4.c: tables registered only for the
//! initial namespace).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::preset::{Entry, Op, Preset};
use crate::snapshot::{Saved, Snapshot, SnapshotError};
use crate::sysctl::{self, Key, Scope, SysctlError};

/// Reads and writes sysctls; the seam where tests inject failures.
pub trait SysctlIo {
    /// Reads a key (normalized).
    ///
    /// # Errors
    /// [`SysctlError`].
    fn read(&self, key: &Key) -> Result<String, SysctlError>;
    /// Writes a key.
    ///
    /// # Errors
    /// [`SysctlError`].
    fn write(&mut self, key: &Key, value: &str) -> Result<(), SysctlError>;
    /// Whether the key's file has a write bit.
    fn writable(&self, key: &Key) -> bool;
    /// The directory names in a `/proc/sys` directory given by its path components
    /// (`["net", "ipv4", "conf"]` → `["all", "default", "eth0", "lo"]`), sorted; empty when
    /// it cannot be read. Used to expand the `*` of [`crate::rules::SIDE_EFFECTS`].
    fn children(&self, dir: &[&str]) -> Vec<String>;
    /// For a key missing here: whether it exists in the initial network namespace (the
    /// host's), where the global `net.*` tables are registered. `None` when that namespace
    /// cannot be looked into; [`check`] then goes by [`Key::global_by_name`]. Default `None`.
    fn in_initial_netns(&self, key: &Key) -> Option<bool> {
        let _ = key;
        None
    }
}

/// The real `/proc/sys` under a root (`/` on a host; the calling thread's network namespace
/// decides which `net.*` values are seen).
#[derive(Debug, Clone)]
pub struct ProcSys {
    /// Root directory.
    pub root: PathBuf,
}

impl SysctlIo for ProcSys {
    fn read(&self, key: &Key) -> Result<String, SysctlError> {
        sysctl::read(&self.root, key)
    }
    fn write(&mut self, key: &Key, value: &str) -> Result<(), SysctlError> {
        sysctl::write(&self.root, key, value)
    }
    fn writable(&self, key: &Key) -> bool {
        sysctl::writable(&self.root, key)
    }
    fn children(&self, dir: &[&str]) -> Vec<String> {
        let mut p = self.root.join("proc/sys");
        p.extend(dir);
        let mut names: Vec<String> = std::fs::read_dir(&p)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
    /// Looks from a thread inside the initial namespace ([`crate::netns::in_initial`]) for a
    /// root of `/`; `None` for a fixture tree (it has no other namespace).
    fn in_initial_netns(&self, key: &Key) -> Option<bool> {
        if self.root != Path::new("/") {
            return None;
        }
        let path = key.path(&self.root);
        crate::netns::in_initial(move || path.exists())
    }
}

/// A key the kernel sets as a side effect of writing another ([`crate::rules::SIDE_EFFECTS`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideWrite {
    /// The key written.
    pub by: Key,
    /// The key the kernel also sets.
    pub key: Key,
    /// Its value before apply (read by the plan).
    pub from: String,
    /// Its value after the write.
    pub to: String,
    /// The kernel source stating it.
    pub source: &'static str,
}

impl SideWrite {
    /// True when the write changes this key (`from` differs from `to`).
    pub fn changes(&self) -> bool {
        self.from != self.to
    }
}

/// The keys that writing `value` over `current` to `key` also sets on this host, with their
/// current and resulting values — also those already at the resulting value, because a revert
/// writes `key` back and its handler propagates again, over every one of them, so the snapshot
/// must hold them all ([`SideWrite::changes`] tells the ones that change). Empty when the value
/// does not change (the handlers propagate only a change) or `key` has no side effects.
pub fn side_writes(key: &Key, current: &str, value: &str, io: &dyn SysctlIo) -> Vec<SideWrite> {
    side_writes_over(key, current, value, io, &|_| None)
}

/// [`side_writes`] where `earlier` gives a key's value after the plan's earlier writes (None:
/// the host's value), so `from` is the value just before this write.
fn side_writes_over(
    key: &Key,
    current: &str,
    value: &str,
    io: &dyn SysctlIo,
    earlier: &dyn Fn(&Key) -> Option<String>,
) -> Vec<SideWrite> {
    let Some(rule) = crate::rules::side_effect_of(key) else {
        return Vec::new();
    };
    let num = |v: &str| v.trim().parse::<i64>().ok();
    if num(current).is_some() && num(current) == num(value) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (pattern, follows) in rule.also {
        let Some(to) = follows.value(value) else {
            continue;
        };
        let keys: Vec<Key> = match pattern.split_once(".*.") {
            Some((dir, leaf)) => {
                let parts: Vec<&str> = dir.split('.').collect();
                io.children(&parts)
                    .into_iter()
                    .filter(|n| n != "all" && n != "default")
                    .filter_map(|n| {
                        let mut c = parts.clone();
                        c.push(&n);
                        c.push(leaf);
                        Key::from_components(&c).ok()
                    })
                    .collect()
            }
            None => Key::parse(pattern).into_iter().collect(),
        };
        for k in keys {
            let Some(from) = earlier(&k).or_else(|| io.read(&k).ok()) else {
                continue;
            };
            out.push(SideWrite {
                by: key.clone(),
                key: k,
                from,
                to: to.clone(),
                source: rule.source,
            });
        }
    }
    out
}

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
    /// The key does not exist here (the note says why: legacy name, module not loaded, global
    /// key in a child namespace, ...). Blocks apply.
    Missing,
    /// Missing, but the entry is optional: reported, never applied.
    MissingOptional,
    /// The file is read-only here, or it is a status key. Blocks apply.
    ReadOnly,
    /// The kernel will reject the value (EINVAL). Blocks apply.
    Rejected,
    /// A `-` line (ignore failure) that cannot be written here (missing, read-only, status key,
    /// rejected value): skipped with a note, as systemd-sysctl would.
    Skipped,
    /// Global key in netns-only mode: refused.
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
    /// True when apply refuses the whole plan because of it (before changing anything).
    pub fn blocks(&self) -> bool {
        matches!(
            self,
            Status::Missing
                | Status::ReadOnly
                | Status::Rejected
                | Status::Lower
                | Status::Unreadable(_)
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
    /// aliases, each with its reason and source ([`crate::rules`]).
    pub warnings: Vec<String>,
    /// The keys the kernel also sets when apply writes this row ([`side_writes`], including
    /// those already at the value); empty unless the row is written.
    pub side_effects: Vec<SideWrite>,
}

/// How [`check`] treats keys it cannot or should not write.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckOptions {
    /// Refuse global keys (`--netns`, or a child network namespace).
    pub netns_only: bool,
    /// Allow lowering a limit below its current value (`--allow-decrease`).
    pub allow_decrease: bool,
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

/// Why a missing key is missing: legacy name, module, not on this kernel.
fn missing_note(key: &Key) -> String {
    if let Some((l, new)) = crate::rules::legacy(key) {
        return match new {
            Some(n) => format!("legacy name: {}; use {n} ({})", l.note, l.source),
            None => format!("legacy: {} ({})", l.note, l.source),
        };
    }
    if let Some((m, src)) = crate::rules::module_for(key) {
        return format!(
            "exists only while module {m} is loaded: `modprobe {m}` (persist in /etc/modules-load.d/{m}.conf) ({src})"
        );
    }
    "not on this kernel (removed, renamed or not built); mark it optional or drop it".into()
}

/// Checks every entry of `preset` against the host through `io` (see [`CheckOptions`]).
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
    let mut rows: Vec<Row> = preset
        .sysctls
        .iter()
        .map(|e| {
            let scope = e.key.scope();
            let status_key = crate::rules::status_text(&e.key);
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
                    missing_note(&e.key),
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
                    if e.manual && status != Status::Ok {
                        status = Status::Manual;
                        note = "never applied: set it by hand when the reason holds".into();
                    } else if writes && netns_only && scope == Scope::Global {
                        status = Status::Refused;
                        note = "global key: changing it would affect the whole host, refused in --netns mode or a child network namespace".into();
                    } else if writes && (status_key.is_some() || !io.writable(&e.key)) {
                        status = Status::ReadOnly;
                        note = match &status_key {
                            Some(t) => format!("status key: {t}"),
                            None => "read-only here (a global key seen from a child namespace, or a constant)".into(),
                        };
                    } else if writes {
                        let target = target_value(e, Some(&cur));
                        if let Some(why) = crate::rules::rejects(&e.key, &target, Some(&cur), unpriv) {
                            status = Status::Rejected;
                            note = format!("the kernel will reject {target:?}: {why}");
                        }
                    }
                    (Some(cur), status, note)
                }
            };
            if e.optional && matches!(status, Status::ReadOnly | Status::Rejected | Status::Missing) {
                note = format!("{note}; skipped: the line's `-` prefix ignores this failure");
                status = Status::Skipped;
            }
            if status == Status::MissingOptional && e.optional && !e.origin.is_empty() {
                note = format!("{note}; skipped: the line's `-` prefix ignores a missing key");
            }
            let target = target_value(e, current.as_deref());
            let mut warnings: Vec<String> = crate::rules::harms(&e.key, &target)
                .into_iter()
                .map(|h| format!("{} {}: {} ({})", h.key, h.when, h.why, h.source))
                .collect();
            if current.is_some() {
                if let Some(t) = crate::rules::legacy_text(&e.key) {
                    warnings.push(format!("legacy key: {t}"));
                }
            }
            if let Some((a, other)) = crate::rules::alias_of(&e.key) {
                warnings.push(format!("alias of {other}: {} ({})", a.note, a.source));
            }
            Row { entry: e.clone(), scope, current, status, note, target, warnings, side_effects: Vec::new() }
        })
        .collect();
    side_effects(&mut rows, io);
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
            if let Some((_, other)) = crate::rules::alias_of(&r.entry.key) {
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

/// A contradiction between two settings of one plan (or of a plan and the host).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Contradiction {
    /// The key that does nothing.
    pub key: Key,
    /// Its value after the plan quoted with where it comes from (`V (file:line)`,
    /// `V (this host)`, or the line's own value and the host's when the line is not applied).
    pub value: String,
    /// The key it needs.
    pub needs: String,
    /// That key's value after the plan and where it comes from.
    pub needs_value: String,
    /// The whole message, with the reason and source.
    pub message: String,
}

/// Settings that do nothing because of another setting ([`crate::rules::NEEDS`]), after the
/// plan: a row's value is its target when apply writes it, else the host's current value.
/// Reported when the dependent key is in `rows`, or (for [`crate::rules::Needs::host_side`]
/// rules) when only the needed key is.
pub fn contradictions(rows: &[Row], io: &dyn SysctlIo) -> Vec<Contradiction> {
    let after = |k: &str| -> Option<(String, String)> {
        if let Some(r) = rows.iter().find(|r| r.entry.key.as_str() == k) {
            return after_plan(r);
        }
        let key = Key::parse(k).ok()?;
        io.read(&key).ok().map(|v| {
            let quoted = format!("{v} (this host)");
            (v, quoted)
        })
    };
    let first = |v: &str| v.split(' ').next().and_then(|n| n.parse::<i64>().ok());
    let mut out = Vec::new();
    for n in crate::rules::NEEDS {
        let has = |k: &str| rows.iter().any(|r| r.entry.key.as_str() == k);
        let in_plan = has(n.key) || (n.host_side && has(n.needs));
        if !in_plan {
            continue;
        }
        let (Some((v, vfrom)), Some((w, wfrom))) = (after(n.key), after(n.needs)) else {
            continue;
        };
        let (Some(vn), Some(wn)) = (first(&v), first(&w)) else {
            continue;
        };
        if (n.active)(vn) && !(n.satisfied)(wn) {
            out.push(Contradiction {
                key: Key::parse(n.key).expect("rule keys are valid"),
                value: vfrom.clone(),
                needs: n.needs.to_string(),
                needs_value: wfrom.clone(),
                message: format!(
                    "{} = {vfrom} has no effect: it needs {} = {}, which is {wfrom}; {} ({})",
                    n.key, n.needs, n.needs_text, n.why, n.source
                ),
            });
        }
    }
    out
}

/// A row's value after the plan (its target when apply writes it, else the host's current
/// value) and that value quoted with where it comes from: `V (file:line)` when the plan sets V
/// as the line says; when the line's own value is not what the host ends with (rejected,
/// refused, read-only, skipped, manual; an at-least or at-most value the host is already
/// beyond; a multi-number limit merged field by field), the line's own value with its
/// `file:line` and the host's value separately — `F (file:line, not applied: rejected; this
/// host keeps V)` — so a value is never attributed to a line that does not hold it. `None`
/// when the row is not written and has no current value.
fn after_plan(r: &Row) -> Option<(String, String)> {
    let origin = if r.entry.origin.is_empty() {
        "the preset".to_string()
    } else {
        r.entry.origin.clone()
    };
    let written = r.status.needs_write() || r.status == Status::Lower;
    let v = if written {
        r.target.clone()
    } else {
        r.current.clone()?
    };
    let line = match r.entry.op {
        Op::Set => r.entry.value.clone(),
        Op::AtLeast => format!("at least {}", r.entry.value),
        Op::AtMost => format!("at most {}", r.entry.value),
    };
    let quoted = if v == r.entry.value {
        format!("{v} ({origin})")
    } else if written {
        format!("{line} ({origin}; apply writes {v}, merged field by field with the host's)")
    } else if r.status == Status::Ok {
        format!("{line} ({origin}; this host keeps {v})")
    } else {
        format!(
            "{line} ({origin}, not applied: {}; this host keeps {v})",
            r.status.label()
        )
    };
    Some((v, quoted))
}

/// What `apply --yes` will do with a set of rows: the same function decides for the dry run
/// and for the real apply, so the plan predicts apply.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Prediction {
    /// Keys apply writes, with the value.
    pub writes: Vec<(Key, String)>,
    /// Keys apply leaves alone, with why.
    pub skips: Vec<(Key, String)>,
    /// Keys that make apply refuse everything, with why (nothing is changed then).
    pub refusals: Vec<(Key, String)>,
    /// Keys the kernel changes because of the writes (the [`Row::side_effects`] that
    /// [`SideWrite::changes`]); the snapshot saves them and revert restores them.
    pub side_effects: Vec<SideWrite>,
}

impl Prediction {
    /// The prediction for `rows`.
    pub fn of(rows: &[Row]) -> Prediction {
        let mut p = Prediction::default();
        for r in rows {
            let k = r.entry.key.clone();
            if r.status.blocks() {
                p.refusals
                    .push((k, format!("{}: {}", r.status.label(), r.note)));
            } else if r.status.needs_write() {
                p.writes.push((k, r.target.clone()));
                p.side_effects
                    .extend(r.side_effects.iter().filter(|w| w.changes()).cloned());
            } else if r.status != Status::Ok {
                p.skips
                    .push((k, format!("{}: {}", r.status.label(), r.note)));
            }
        }
        p
    }
}

/// A source checked against the host: what `tune check` and the plan of `tune apply` show.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// One row per key ([`check`]).
    pub rows: Vec<Row>,
    /// Settings that do nothing because of another ([`contradictions`]).
    pub contradictions: Vec<Contradiction>,
    /// What `apply --yes` will do with the rows ([`Prediction::of`]).
    pub prediction: Prediction,
}

impl Checked {
    /// Checks `preset` through `io` with `opts`, then its contradictions and the prediction.
    pub fn of(preset: &Preset, io: &dyn SysctlIo, opts: CheckOptions) -> Checked {
        let rows = check(preset, io, opts);
        let contradictions = contradictions(&rows, io);
        let prediction = Prediction::of(&rows);
        Checked {
            rows,
            contradictions,
            prediction,
        }
    }

    /// True when `check --strict` fails: a row is off or a setting contradicts another.
    pub fn off(&self) -> bool {
        self.rows.iter().any(|r| r.status.is_off()) || !self.contradictions.is_empty()
    }
}

/// What [`apply`] did.
#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    /// The snapshot file (None when nothing needed changing).
    pub snapshot: Option<PathBuf>,
    /// Keys changed, with old and new values.
    pub changed: Vec<(Key, String, String)>,
    /// Rows not applied and why (refused, optional missing, manual).
    pub skipped: Vec<(Key, String)>,
    /// Keys the kernel set as side effects of the writes, with the value before and the value
    /// read back after ([`SideWrite`]); saved in the snapshot, restored by revert.
    pub side_effects: Vec<(Key, String, String)>,
}

/// Why [`apply`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Keys that must be applied cannot be (missing, read-only, unreadable); nothing was changed.
    #[error("nothing changed: {} key(s) cannot be applied: {}; fix or remove each as its reason says (a `-` prefix in sysctl.d files, or `optional = true`, turns a missing, read-only or rejected key into a skip; a lowered limit needs --allow-decrease)", .keys.len(), .keys.iter().map(|(k, why)| format!("{k} ({why})")).collect::<Vec<_>>().join("; "))]
    Blocked {
        /// Key and why.
        keys: Vec<(Key, String)>,
    },
    /// The snapshot could not be saved; nothing was changed.
    #[error("nothing changed: could not save the snapshot: {0}")]
    Snapshot(#[from] SnapshotError),
    /// A write or read-back failed midway; what was changed before it was restored.
    #[error("writing {key} failed: {cause}; restored {} key(s) already changed{}", .restored.len(), match .snapshot { None => "; nothing is left changed (snapshot removed)".to_string(), Some(s) => format!(", but could NOT restore: {}; run `connstorm tune revert {}`", .restore_failures.iter().map(|(k, e)| format!("{k} ({e})")).collect::<Vec<_>>().join(", "), s.display()) })]
    WriteFailed {
        /// The key that failed.
        key: Key,
        /// Why.
        cause: String,
        /// Keys restored to their saved value.
        restored: Vec<Key>,
        /// Keys that could not be restored (run `connstorm tune revert`).
        restore_failures: Vec<(Key, String)>,
        /// The snapshot file with the old values, kept only when some key could not be restored
        /// (otherwise it is removed, so it cannot shadow an earlier apply's snapshot for
        /// `tune revert`).
        snapshot: Option<PathBuf>,
    },
}

/// Applies the rows that need a write. `root` is used for the boot id; `state_dir` receives the
/// snapshot; `what` labels it.
///
/// # Errors
/// [`ApplyError`]; on every error the host holds the values it had before the call (except the
/// keys listed in `restore_failures`).
pub fn apply(
    rows: &[Row],
    io: &mut dyn SysctlIo,
    root: &Path,
    state_dir: &Path,
    what: &str,
) -> Result<ApplyReport, ApplyError> {
    let prediction = Prediction::of(rows);
    if !prediction.refusals.is_empty() {
        return Err(ApplyError::Blocked {
            keys: prediction.refusals,
        });
    }
    let mut skipped = prediction.skips;
    let todo: Vec<&Row> = rows.iter().filter(|r| r.status.needs_write()).collect();
    if todo.is_empty() {
        return Ok(ApplyReport {
            snapshot: None,
            changed: Vec::new(),
            skipped,
            side_effects: Vec::new(),
        });
    }
    let mut snap = Snapshot::new(root, what);
    for r in &todo {
        for w in &r.side_effects {
            snap.saved.push(Saved::Sysctl {
                key: w.key.clone(),
                value: w.from.clone(),
                by: Some(w.by.clone()),
            });
        }
        let value = r.current.clone().unwrap_or_default();
        snap.saved.push(Saved::Sysctl {
            key: r.entry.key.clone(),
            value,
            by: None,
        });
    }
    let snapshot = snap.write_atomic(state_dir)?;
    let mut changed: Vec<(Key, String, String)> = Vec::new();
    // What a failure must restore, in change order: side effects before the key that caused
    // them, so the reverse walk restores the written key first (its handler propagates).
    let mut undo: Vec<(Key, String)> = Vec::new();
    let mut side_effects: Vec<(Key, String, String)> = Vec::new();
    for r in &todo {
        let key = &r.entry.key;
        let old = r.current.clone().unwrap_or_default();
        let result = io
            .write(key, &r.target)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                let back = io.read(key).map_err(|e| e.to_string())?;
                if back == r.target {
                    Ok(())
                } else {
                    Err(format!(
                        "read back {back:?} after writing {:?} (the kernel adjusted it)",
                        r.target
                    ))
                }
            });
        if let (Err(cause), true) = (&result, r.entry.optional) {
            // A `-` line: systemd-sysctl ignores the failure; so does apply, once the key is
            // back at its old value.
            let (_, failed) = restore(io, std::iter::once((key, old.as_str())));
            if failed.is_empty() {
                skipped.push((
                    key.clone(),
                    format!("write failed and was ignored (`-` line): {cause}"),
                ));
                continue;
            }
        }
        // Record before checking so a half-applied key is restored too.
        for w in &r.side_effects {
            undo.push((w.key.clone(), w.from.clone()));
        }
        undo.push((key.clone(), old.clone()));
        changed.push((key.clone(), old, r.target.clone()));
        if let Err(cause) = result {
            let (restored, restore_failures) =
                restore(io, undo.iter().rev().map(|(k, old)| (k, old.as_str())));
            let snapshot = if restore_failures.is_empty() {
                // Nothing is left changed: this snapshot must not become the one `tune revert`
                // picks by default instead of an earlier, successful apply's.
                let _ = std::fs::remove_file(&snapshot);
                None
            } else {
                Some(snapshot)
            };
            return Err(ApplyError::WriteFailed {
                key: key.clone(),
                cause,
                restored,
                restore_failures,
                snapshot,
            });
        }
        for w in &r.side_effects {
            let now = io
                .read(&w.key)
                .unwrap_or_else(|e| format!("unreadable: {e}"));
            if now != w.from {
                side_effects.push((w.key.clone(), w.from.clone(), now));
            }
        }
    }
    Ok(ApplyReport {
        snapshot: Some(snapshot),
        changed,
        skipped,
        side_effects,
    })
}

/// Writes saved values back where they differ. Returns (restored, failures).
fn restore<'a>(
    io: &mut dyn SysctlIo,
    items: impl Iterator<Item = (&'a Key, &'a str)>,
) -> (Vec<Key>, Vec<(Key, String)>) {
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (key, old) in items {
        if io.read(key).is_ok_and(|v| v == old) {
            ok.push(key.clone());
            continue;
        }
        match io.write(key, old).and_then(|()| io.read(key)) {
            Ok(v) if v == old => ok.push(key.clone()),
            Ok(v) => failed.push((key.clone(), format!("reads {v:?}, expected {old:?}"))),
            Err(e) => failed.push((key.clone(), e.to_string())),
        }
    }
    (ok, failed)
}

/// Why a revert was refused or incomplete.
#[derive(Debug, thiserror::Error)]
pub enum RevertError {
    /// Snapshot from another boot.
    #[error("snapshot was taken in boot {snapshot} but this is boot {current}: its values are stale (reboots reset sysctls); pass --force to restore them anyway")]
    OtherBoot {
        /// boot_id in the snapshot.
        snapshot: String,
        /// boot_id now.
        current: String,
    },
    /// Snapshot from another network namespace.
    #[error("snapshot belongs to network namespace {snapshot} but this process is in {current}; run revert in the same namespace (--netns), or pass --force")]
    OtherNetns {
        /// Namespace in the snapshot.
        snapshot: String,
        /// Namespace now.
        current: String,
    },
    /// Some values could not be restored.
    #[error("could not restore: {}", .0.iter().map(|(k, e)| format!("{k} ({e})")).collect::<Vec<_>>().join(", "))]
    Incomplete(Vec<(String, String)>),
}

/// What [`revert`] did: keys written back, and keys already at their saved value.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RevertReport {
    /// Restored (were different).
    pub restored: Vec<String>,
    /// Already at the saved value.
    pub unchanged: Vec<String>,
}

/// Restores the sysctls of a snapshot (IRQ entries are restored by `irq::revert`).
///
/// # Errors
/// [`RevertError`]: another boot or namespace (unless `force`), or values that could not be
/// written (the others are still restored).
pub fn revert(
    snap: &Snapshot,
    io: &mut dyn SysctlIo,
    root: &Path,
    force: bool,
) -> Result<RevertReport, RevertError> {
    let current = crate::snapshot::boot_id(root);
    if !force && snap.boot_id != current {
        return Err(RevertError::OtherBoot {
            snapshot: snap.boot_id.clone(),
            current,
        });
    }
    if let (false, Some(s), Some(c)) = (force, &snap.netns, crate::snapshot::current_netns()) {
        if *s != c
            && snap
                .saved
                .iter()
                .any(|x| matches!(x, Saved::Sysctl { key, .. } if key.scope() == Scope::Netns))
        {
            return Err(RevertError::OtherNetns {
                snapshot: s.clone(),
                current: c,
            });
        }
    }
    let mut report = RevertReport::default();
    let mut failures = Vec::new();
    for s in snap.saved.iter().rev() {
        let Saved::Sysctl { key, value, .. } = s else {
            continue;
        };
        if io.read(key).is_ok_and(|v| v == *value) {
            report.unchanged.push(key.to_string());
            continue;
        }
        let (ok, failed) = restore(io, std::iter::once((key, value.as_str())));
        report.restored.extend(ok.iter().map(Key::to_string));
        failures.extend(failed.into_iter().map(|(k, e)| (k.to_string(), e)));
    }
    if failures.is_empty() {
        Ok(report)
    } else {
        Err(RevertError::Incomplete(failures))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, value: &str, op: Op) -> Entry {
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
                    allow_decrease: false
                }
            )),
            ["change", "refused (global)", "refused (global)", "missing"]
        );
        let mut w = io.clone();
        let state = d.path().join("state");
        let err = apply(
            &check(&preset, &io, CheckOptions::default()),
            &mut w,
            d.path(),
            &state,
            "t",
        )
        .unwrap_err();
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
            allow_decrease: false,
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

    /// Finding: a line whose value is not applied (here rejected) was quoted with the host's
    /// current value: "tcp_max_syn_backlog = 2048 (a.conf:20) has no effect".
    #[test]
    fn a_contradiction_quotes_the_line_value_not_the_current_one() {
        let d = tempfile::tempdir().unwrap();
        for (k, v) in [
            ("net.ipv4.tcp_max_syn_backlog", "2048"),
            ("net.ipv4.tcp_syncookies", "1"),
        ] {
            let p = Key::parse(k).unwrap().path(d.path());
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, v).unwrap();
        }
        let io = ProcSys {
            root: d.path().to_path_buf(),
        };
        let line = |value: &str| Entry {
            origin: "sd/a.conf:20".into(),
            ..entry("net.ipv4.tcp_max_syn_backlog", value, Op::Set)
        };
        let preset = |value: &str| Preset {
            name: "t".into(),
            description: String::new(),
            origin: "t".into(),
            sysctls: vec![line(value)],
            cmdline: Vec::new(),
            lines: Vec::new(),
        };
        let rejected = check(
            &preset("99999999999999999999"),
            &io,
            CheckOptions::default(),
        );
        assert_eq!(rejected[0].status, Status::Rejected);
        let c = contradictions(&rejected, &io);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(
            c[0].message.starts_with(
                "net.ipv4.tcp_max_syn_backlog = 99999999999999999999 (sd/a.conf:20, not applied: rejected; this host keeps 2048) has no effect"
            ),
            "{}",
            c[0].message
        );
        assert!(
            !c[0].message.contains("2048 (sd/a.conf:20)"),
            "{}",
            c[0].message
        );
        // A line that is applied is quoted as it is.
        let applied = check(&preset("4096"), &io, CheckOptions::default());
        let c = contradictions(&applied, &io);
        assert!(
            c[0].message
                .starts_with("net.ipv4.tcp_max_syn_backlog = 4096 (sd/a.conf:20) has no effect"),
            "{}",
            c[0].message
        );
        assert!(
            c[0].message.contains("which is 1 (this host)"),
            "{}",
            c[0].message
        );
    }
}
