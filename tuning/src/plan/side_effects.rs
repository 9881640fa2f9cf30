//! The keys the kernel sets as a side effect of writing another (the rules table `SIDE_EFFECTS`):
//! what a snapshot must save and a revert restores beside the key written.

use serde::Serialize;

use crate::sysctl::{Key, SysctlIo};

/// A key the kernel sets as a side effect of writing another (the rules table `SIDE_EFFECTS`).
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
pub(super) fn side_writes_over(
    key: &Key,
    current: &str,
    value: &str,
    io: &dyn SysctlIo,
    earlier: &dyn Fn(&Key) -> Option<String>,
) -> Vec<SideWrite> {
    let Some(rule) = crate::sysctl::rules::side_effect_of(key) else {
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
