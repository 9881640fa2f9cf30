//! The known contention points of connection setup, named from kernel symbols: the one table
//! ([`TABLE`]) and how a side's callchains are scored against it.
//!
//! A point's **self share** is the fraction of busy samples whose leaf frame is one of its
//! functions (the CPU was executing it); its **inclusive share** the fraction with any of its
//! functions anywhere in the kernel callchain, counted once per sample (time in it and in what
//! it called). Spin-lock waits also name their callers: the first frame above the lock
//! functions, i.e. the code that was taking the lock (sampling sees the waiter, not the holder;
//! the waiter's call site names the lock).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::stack::{Space, Stack};

/// A named contention point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentionKind {
    /// Choosing an ephemeral port and checking the 4-tuple is free at connect().
    PortSearch,
    /// The listener's SYN / accept queue (request sockets) and accept().
    AcceptQueue,
    /// Spinning on a contended (or taking an uncontended) spin lock.
    SpinlockWait,
    /// RPS/RFS flow steering.
    RfsRps,
    /// Slab allocation and freeing of sockets and their buffers.
    SocketAllocation,
    /// Netfilter connection tracking.
    Conntrack,
    /// TIME_WAIT sockets: creating, looking up, recycling and killing them.
    TimeWait,
}

/// One row of [`TABLE`].
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The point.
    pub kind: ContentionKind,
    /// Its name in words, as the report prints it.
    pub words: &'static str,
    /// Kernel function names: exact, or a prefix ending in `*`. Compared with the symbol
    /// without a compiler suffix (`.isra.0`, `.constprop.0`, `.cold`).
    pub functions: &'static [&'static str],
    /// Kernel source files that define them (Linux 6.x).
    pub source: &'static str,
}

/// The known contention points. Names checked against `/proc/kallsyms` of Linux 6.18; a name a
/// kernel inlines or lacks simply never matches.
pub static TABLE: &[Entry] = &[
    Entry {
        kind: ContentionKind::PortSearch,
        words: "ephemeral-port search",
        functions: &[
            "__inet_hash_connect",
            "inet_hash_connect",
            "inet6_hash_connect",
            "__inet_check_established",
            "__inet6_check_established",
            "inet_bhash2_*",
            "inet_bind_bucket_*",
            "inet_bind2_bucket_*",
        ],
        source: "net/ipv4/inet_hashtables.c, net/ipv6/inet6_hashtables.c",
    },
    Entry {
        kind: ContentionKind::AcceptQueue,
        words: "listener and accept queue",
        functions: &[
            "inet_csk_accept",
            "reqsk_queue_*",
            "inet_csk_reqsk_queue_*",
            "inet_csk_complete_hashdance",
            "inet_csk_wait_for_connect",
        ],
        source: "net/ipv4/inet_connection_sock.c, net/core/request_sock.c, \
                 include/net/request_sock.h",
    },
    Entry {
        kind: ContentionKind::SpinlockWait,
        words: "spin-lock waits",
        functions: &[
            "native_queued_spin_lock_slowpath",
            "queued_spin_lock_slowpath",
            "__pv_queued_spin_lock_slowpath",
            "pv_queued_spin_lock_slowpath",
            "_raw_spin_lock*",
        ],
        source: "kernel/locking/qspinlock.c, kernel/locking/qspinlock_paravirt.h (KVM guests), \
                 kernel/locking/spinlock.c",
    },
    Entry {
        kind: ContentionKind::RfsRps,
        words: "RFS/RPS flow steering",
        functions: &["rps_*", "sock_rps_*", "get_rps_cpu", "set_rps_cpu"],
        source: "net/core/dev.c, include/net/rps.h",
    },
    Entry {
        kind: ContentionKind::SocketAllocation,
        words: "socket allocation (slab)",
        functions: &[
            "kmem_cache_alloc*",
            "kmem_cache_free*",
            "__kmem_cache_*",
            "__slab_*",
            "___slab_alloc",
            "sk_alloc",
            "sk_prot_alloc",
            "__sk_destruct",
            "sk_free",
        ],
        source: "mm/slub.c, net/core/sock.c",
    },
    Entry {
        kind: ContentionKind::Conntrack,
        words: "conntrack",
        functions: &["nf_conntrack_*", "__nf_conntrack_*", "nf_ct_*", "__nf_ct_*"],
        source: "net/netfilter/nf_conntrack_core.c, net/netfilter/nf_conntrack_proto_tcp.c",
    },
    Entry {
        kind: ContentionKind::TimeWait,
        words: "TIME_WAIT handling",
        functions: &[
            "inet_twsk_*",
            "__inet_twsk_*",
            "tcp_time_wait",
            "tcp_timewait_state_process",
            "tcp_twsk_*",
            "tw_timer_handler",
        ],
        source: "net/ipv4/inet_timewait_sock.c, net/ipv4/tcp_minisocks.c",
    },
];

impl ContentionKind {
    /// The point's name in words (from [`TABLE`]).
    pub fn words(self) -> &'static str {
        TABLE
            .iter()
            .find(|e| e.kind == self)
            .map_or("?", |e| e.words)
    }
}

/// The contention point a kernel function belongs to, if any.
pub fn classify(function: &str) -> Option<ContentionKind> {
    let base = function.split('.').next().unwrap_or(function);
    TABLE
        .iter()
        .find(|e| {
            e.functions.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => base.starts_with(prefix),
                None => base == *p,
            })
        })
        .map(|e| e.kind)
}

/// A function (or a lock's caller) and its share of a side's busy samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedShare {
    /// Kernel function name.
    pub name: String,
    /// Samples with it (inclusive; for lock callers: samples where it called the lock).
    pub samples: u64,
    /// `samples / busy samples`, 0.0–1.0.
    pub share: f64,
}

/// One named contention point of one side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentionPoint {
    /// Which point.
    pub kind: ContentionKind,
    /// Its name in words.
    pub what: String,
    /// Busy samples whose leaf is one of its functions.
    pub samples_self: u64,
    /// Busy samples with one of its functions in the kernel callchain (once per sample).
    pub samples_inclusive: u64,
    /// `samples_self / busy samples`, 0.0–1.0.
    pub self_share: f64,
    /// `samples_inclusive / busy samples`, 0.0–1.0.
    pub inclusive_share: f64,
    /// Spin-lock waits: the callers taking the lock (first frame above the lock functions);
    /// the others: the matched functions. Most samples first, [`FUNCTIONS_KEPT`] at most.
    pub functions: Vec<NamedShare>,
}

/// How many functions (or lock callers) a contention point keeps.
pub const FUNCTIONS_KEPT: usize = 5;

#[derive(Default)]
struct Tally<'a> {
    samples_self: u64,
    samples_inclusive: u64,
    functions: HashMap<&'a str, u64>,
}

/// Scores busy `stacks` (idle ones already left out) against [`TABLE`]; `busy` is their total
/// count. Points without samples are left out; the largest inclusive share comes first.
pub(crate) fn score<'a>(
    stacks: impl Iterator<Item = &'a Stack>,
    busy: u64,
) -> Vec<ContentionPoint> {
    let mut tallies: HashMap<ContentionKind, Tally<'a>> = HashMap::new();
    for s in stacks {
        let kernel: Vec<(&str, Option<ContentionKind>)> = s
            .frames
            .iter()
            .filter(|f| f.space == Space::Kernel)
            .map(|f| (f.name.as_str(), classify(&f.name)))
            .collect();
        if let Some(leaf) = s.frames.first().filter(|f| f.space == Space::Kernel) {
            if let Some(k) = classify(&leaf.name) {
                tallies.entry(k).or_default().samples_self += s.count;
            }
        }
        let mut seen_kinds: Vec<ContentionKind> = Vec::new();
        let mut seen_names: Vec<&str> = Vec::new();
        for (i, &(name, kind)) in kernel.iter().enumerate() {
            let Some(kind) = kind else { continue };
            let t = tallies.entry(kind).or_default();
            if !seen_kinds.contains(&kind) {
                seen_kinds.push(kind);
                t.samples_inclusive += s.count;
                if kind == ContentionKind::SpinlockWait {
                    // The caller: the first frame above this run of lock functions.
                    let caller = kernel[i..]
                        .iter()
                        .find(|(_, k)| *k != Some(ContentionKind::SpinlockWait))
                        .map_or("[no caller in the callchain]", |(n, _)| *n);
                    *t.functions.entry(caller).or_default() += s.count;
                }
            }
            if kind != ContentionKind::SpinlockWait && !seen_names.contains(&name) {
                seen_names.push(name);
                *t.functions.entry(name).or_default() += s.count;
            }
        }
    }
    let share = |n: u64| {
        if busy == 0 {
            0.0
        } else {
            n as f64 / busy as f64
        }
    };
    let mut points: Vec<ContentionPoint> = tallies
        .into_iter()
        .filter(|(_, t)| t.samples_inclusive > 0)
        .map(|(kind, t)| {
            let mut functions: Vec<NamedShare> = t
                .functions
                .into_iter()
                .map(|(name, samples)| NamedShare {
                    name: name.to_string(),
                    samples,
                    share: share(samples),
                })
                .collect();
            functions.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.name.cmp(&b.name)));
            functions.truncate(FUNCTIONS_KEPT);
            ContentionPoint {
                kind,
                what: kind.words().to_string(),
                samples_self: t.samples_self,
                samples_inclusive: t.samples_inclusive,
                self_share: share(t.samples_self),
                inclusive_share: share(t.samples_inclusive),
                functions,
            }
        })
        .collect();
    points.sort_by(|a, b| {
        b.samples_inclusive
            .cmp(&a.samples_inclusive)
            .then(a.kind.cmp(&b.kind))
    });
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_exactly_or_by_prefix_without_compiler_suffixes() {
        assert_eq!(
            classify("__inet_hash_connect"),
            Some(ContentionKind::PortSearch)
        );
        assert_eq!(
            classify("inet_bhash2_addr_any_conflict.isra.0"),
            Some(ContentionKind::PortSearch)
        );
        assert_eq!(
            classify("_raw_spin_lock_bh"),
            Some(ContentionKind::SpinlockWait)
        );
        assert_eq!(classify("nf_ct_delete"), Some(ContentionKind::Conntrack));
        assert_eq!(
            classify("___slab_alloc"),
            Some(ContentionKind::SocketAllocation)
        );
        assert_eq!(classify("inet_twsk_kill"), Some(ContentionKind::TimeWait));
        assert_eq!(classify("get_rps_cpu"), Some(ContentionKind::RfsRps));
        assert_eq!(
            classify("inet_csk_accept"),
            Some(ContentionKind::AcceptQueue)
        );
        // An exact name does not match a longer one, and unrelated names match nothing.
        assert_eq!(classify("__inet_hash_connect_x"), None);
        assert_eq!(classify("tcp_v4_connect"), None);
        assert_eq!(classify("_raw_spin_unlock_bh"), None);
    }

    #[test]
    fn every_kind_has_one_row_with_words() {
        for e in TABLE {
            assert_eq!(TABLE.iter().filter(|o| o.kind == e.kind).count(), 1);
            assert!(!e.words.is_empty() && !e.functions.is_empty() && !e.source.is_empty());
        }
        assert_eq!(TABLE.len(), 7);
    }
}
