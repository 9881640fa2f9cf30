//! The one table of what connstorm knows about individual sysctls, each rule with its source:
//! aliases, legacy names, status (read-only) keys, keys that need a module, values the kernel
//! rejects, values that make connection rate worse than the kernel default, and settings that
//! need another setting to have any effect. `connstorm tune rules` prints [`table`]; the planner
//! (`tuning::plan`) consults the lookups below.
//!
//! Sources are the kernel's own files (Documentation/networking/ip-sysctl.rst and
//! nf_conntrack-sysctl.rst, source files under net/ as of Linux 6.x) and the kernel commits that
//! removed keys, each named in the rule's `source`.

use serde::Serialize;

use crate::sysctl::Key;

/// Two names for one kernel value: writing either changes both.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Alias {
    /// The two keys.
    pub keys: [&'static str; 2],
    /// What a write does.
    pub note: &'static str,
    /// Where it is stated.
    pub source: &'static str,
}

/// Every alias pair connstorm knows.
pub(crate) const ALIASES: &[Alias] = &[
    Alias {
        keys: ["net.ipv4.ip_forward", "net.ipv4.conf.all.forwarding"],
        note: "one value: writing either also sets conf.default.forwarding and every interface's forwarding, and all.accept_redirects to the inverse",
        source: "net/ipv4/devinet.c devinet_sysctl_forward, inet_forward_change; Documentation/networking/ip-sysctl.rst ip_forward",
    },
    Alias {
        keys: ["net.nf_conntrack_max", "net.netfilter.nf_conntrack_max"],
        note: "one global value (writable only in the initial network namespace)",
        source: "net/netfilter/nf_conntrack_standalone.c; Documentation/networking/nf_conntrack-sysctl.rst",
    },
];

/// The alias pair `key` belongs to, and the other name.
pub(crate) fn alias_of(key: &Key) -> Option<(&'static Alias, &'static str)> {
    ALIASES.iter().find_map(|a| {
        if a.keys[0] == key.as_str() {
            Some((a, a.keys[1]))
        } else if a.keys[1] == key.as_str() {
            Some((a, a.keys[0]))
        } else {
            None
        }
    })
}

/// How a side-effect key's new value follows the written value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follows {
    /// The same number as written (`2` written → `2`).
    Same,
    /// Logical not: `0` when the written number is non-zero, else `1`.
    Not,
}

/// A key whose write handler also sets other keys, when the written value differs from the
/// current one (the handlers compare old and new and propagate only on a change).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SideEffect {
    /// The written key (its alias, if any, has the same effect: see [`side_effect_of`]).
    pub key: &'static str,
    /// The keys it also sets: `*` stands for every interface directory under the same
    /// `conf` directory (not `all`, not `default`), as the handler walks every net device.
    pub also: &'static [(&'static str, Follows)],
    /// Where it is stated.
    pub source: &'static str,
}

/// Every write with side effects connstorm knows (checked against the kernel by the test
/// `forwarding_and_disable_ipv6_side_effects_match_the_kernel` in a private namespace).
pub(crate) const SIDE_EFFECTS: &[SideEffect] = &[
    SideEffect {
        key: "net.ipv4.conf.all.forwarding",
        also: &[
            ("net.ipv4.conf.default.forwarding", Follows::Same),
            ("net.ipv4.conf.*.forwarding", Follows::Same),
            ("net.ipv4.conf.all.accept_redirects", Follows::Not),
        ],
        source: "net/ipv4/devinet.c devinet_sysctl_forward -> inet_forward_change (Linux 2.6+, unchanged in 6.x); Documentation/networking/ip-sysctl.rst conf/all/forwarding",
    },
    SideEffect {
        key: "net.ipv6.conf.all.forwarding",
        also: &[
            ("net.ipv6.conf.default.forwarding", Follows::Same),
            ("net.ipv6.conf.*.forwarding", Follows::Same),
        ],
        source: "net/ipv6/addrconf.c addrconf_fixup_forwarding -> addrconf_forward_change; Documentation/networking/ip-sysctl.rst conf/all/forwarding (IPv6)",
    },
    SideEffect {
        key: "net.ipv6.conf.all.disable_ipv6",
        also: &[
            ("net.ipv6.conf.default.disable_ipv6", Follows::Same),
            ("net.ipv6.conf.*.disable_ipv6", Follows::Same),
        ],
        source: "net/ipv6/addrconf.c addrconf_disable_ipv6 -> addrconf_disable_change; Documentation/networking/ip-sysctl.rst disable_ipv6",
    },
];

/// The side-effect rule of a write to `key` (or to its alias: `net.ipv4.ip_forward` is
/// `net.ipv4.conf.all.forwarding`).
pub(crate) fn side_effect_of(key: &Key) -> Option<&'static SideEffect> {
    let k = key.as_str();
    let canonical = match alias_of(key) {
        Some((_, other)) if SIDE_EFFECTS.iter().any(|s| s.key == other) => other,
        _ => k,
    };
    SIDE_EFFECTS.iter().find(|s| s.key == canonical)
}

impl Follows {
    /// The value the side-effect key takes when `written` is written (`None` when `written`
    /// is not a single integer: the handlers parse one int).
    pub(crate) fn value(self, written: &str) -> Option<String> {
        let n: i64 = written.trim().parse().ok()?;
        Some(match self {
            Follows::Same => n.to_string(),
            Follows::Not => i64::from(n == 0).to_string(),
        })
    }
}

/// A key that was renamed or removed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Legacy {
    /// The old key, or a prefix ending in `_` for a family (`net.ipv4.netfilter.ip_conntrack_`).
    pub old: &'static str,
    /// Its replacement (same suffix for a family), if there is one.
    pub new: Option<&'static str>,
    /// What happened and what to do instead.
    pub note: &'static str,
    /// Where it is stated.
    pub source: &'static str,
}

/// Renamed and removed keys.
pub(crate) const LEGACY: &[Legacy] = &[
    Legacy {
        old: "net.ipv4.netfilter.ip_conntrack_",
        new: Some("net.netfilter.nf_conntrack_"),
        note: "the ip_conntrack compat sysctls were removed in 4.9",
        source: "kernel commit adf0516845bc (Linux 4.9)",
    },
    Legacy {
        old: "net.netfilter.ip_conntrack_",
        new: Some("net.netfilter.nf_conntrack_"),
        note: "never a kernel name: it mixes the old net.ipv4.netfilter.ip_conntrack_* spelling (removed in 4.9) with the current net.netfilter.nf_conntrack_* one",
        source: "Documentation/networking/nf_conntrack-sysctl.rst; kernel commit adf0516845bc (Linux 4.9)",
    },
    Legacy {
        old: "net.ipv4.ip_conntrack_",
        new: Some("net.netfilter.nf_conntrack_"),
        note: "the name of the ip_conntrack module that nf_conntrack replaced (Linux 2.6)",
        source: "Documentation/networking/nf_conntrack-sysctl.rst (the current names)",
    },
    Legacy {
        old: "net.ipv4.tcp_tw_recycle",
        new: None,
        note: "removed in 4.12 (it broke clients behind NAT once 4.10 randomized timestamp offsets); for TIME_WAIT port reuse on the connecting side use net.ipv4.tcp_tw_reuse = 1 (needs tcp_timestamps), or close with RST / server-first",
        source: "kernel commit 4396e46187ca (Linux 4.12)",
    },
    Legacy {
        old: "net.ipv4.tcp_low_latency",
        new: None,
        note: "a legacy option with no effect any more; drop it",
        source: "Documentation/networking/ip-sysctl.rst tcp_low_latency; net/ipv4/sysctl_net_ipv4.c",
    },
];

/// The legacy rule for `key` and its replacement key (if any).
pub(crate) fn legacy(key: &Key) -> Option<(&'static Legacy, Option<String>)> {
    LEGACY.iter().find_map(|l| {
        let k = key.as_str();
        if l.old.ends_with('_') {
            let rest = k.strip_prefix(l.old)?;
            Some((l, l.new.map(|n| format!("{n}{rest}"))))
        } else {
            (k == l.old).then(|| (l, l.new.map(str::to_string)))
        }
    })
}

/// What the legacy rule of `key` says, as every message prints it: `NOTE[; use NEW] (SOURCE)`.
pub(crate) fn legacy_text(key: &Key) -> Option<String> {
    legacy(key).map(|(l, new)| {
        format!(
            "{}{} ({})",
            l.note,
            new.map(|n| format!("; use {n}")).unwrap_or_default(),
            l.source
        )
    })
}

/// What a status key is, as every message prints it: `it reports state and cannot be set
/// (SOURCE)`; `None` when `key` is not one.
pub(crate) fn status_text(key: &Key) -> Option<String> {
    status_key(key).map(|src| format!("it reports state and cannot be set ({src})"))
}

/// Keys that report state and cannot be set (mode 0444 in the kernel's tables).
pub(crate) const STATUS_KEYS: &[(&str, &str)] = &[
    (
        "net.netfilter.nf_conntrack_count",
        "Documentation/networking/nf_conntrack-sysctl.rst (read-only)",
    ),
    (
        "net.ipv4.tcp_available_congestion_control",
        "Documentation/networking/ip-sysctl.rst (read-only list)",
    ),
    (
        "fs.file-nr",
        "Documentation/admin-guide/sysctl/fs.rst (read-only)",
    ),
    (
        "fs.inode-nr",
        "Documentation/admin-guide/sysctl/fs.rst (read-only)",
    ),
    (
        "fs.inode-state",
        "Documentation/admin-guide/sysctl/fs.rst (read-only)",
    ),
    (
        "fs.dentry-state",
        "Documentation/admin-guide/sysctl/fs.rst (read-only)",
    ),
    (
        "fs.aio-nr",
        "Documentation/admin-guide/sysctl/fs.rst (read-only)",
    ),
    (
        "kernel.random.boot_id",
        "Documentation/admin-guide/sysctl/kernel.rst (random, read-only)",
    ),
    (
        "kernel.random.uuid",
        "Documentation/admin-guide/sysctl/kernel.rst (random, read-only)",
    ),
    (
        "kernel.random.entropy_avail",
        "Documentation/admin-guide/sysctl/kernel.rst (random, read-only)",
    ),
    (
        "kernel.osrelease",
        "Documentation/admin-guide/sysctl/kernel.rst (read-only)",
    ),
    (
        "kernel.version",
        "Documentation/admin-guide/sysctl/kernel.rst (read-only)",
    ),
];

/// The source saying `key` is a status key, if it is one.
pub(crate) fn status_key(key: &Key) -> Option<&'static str> {
    STATUS_KEYS
        .iter()
        .find(|(k, _)| *k == key.as_str())
        .map(|(_, s)| *s)
}

/// What a child network namespace does with a key differently from the initial one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetnsRuleKind {
    /// Only values in another key's list may be written in a child (EPERM otherwise).
    AllowedList {
        /// The key holding the allowed values (space-separated).
        list: &'static str,
        /// The key holding every value the kernel has (space-separated).
        available: &'static str,
    },
    /// The file is read-only (mode 0444) in a child namespace: only the initial one may set it.
    ReadOnlyInChild,
    /// The value sizes network namespaces created after the write, not this one.
    FutureNamespaces {
        /// The read-only key that shows this namespace's own size.
        own: &'static str,
    },
}

/// A key that a child network namespace treats differently from the initial one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NetnsRule {
    /// The key.
    pub key: &'static str,
    /// What the kernel does.
    pub kind: NetnsRuleKind,
    /// What to do about it.
    pub fix: &'static str,
    /// Where it is stated.
    pub source: &'static str,
}

/// Every key connstorm knows a child network namespace treats differently. The kind is wider
/// than the table: any `net.*` file read-only in a child namespace and writable in the
/// initial one is read-only-in-child (the planner compares the two files' modes).
pub(crate) const NETNS_RULES: &[NetnsRule] = &[
    NetnsRule {
        key: "net.ipv4.tcp_congestion_control",
        kind: NetnsRuleKind::AllowedList {
            list: "net.ipv4.tcp_allowed_congestion_control",
            available: "net.ipv4.tcp_available_congestion_control",
        },
        fix: "run `sysctl -w net.ipv4.tcp_allowed_congestion_control=\"LIST ALGO\"` in the initial namespace (the list is read-only in a child), or make ALGO the initial namespace's default; or set it per socket with setsockopt(TCP_CONGESTION)",
        source: "net/ipv4/tcp_cong.c tcp_set_default_congestion_control (\"Only init netns can set default to a restricted algorithm\": EPERM)",
    },
    NetnsRule {
        key: "net.ipv4.tcp_allowed_congestion_control",
        kind: NetnsRuleKind::ReadOnlyInChild,
        fix: "set it in the initial network namespace",
        source: "net/ipv4/sysctl_net_ipv4.c ipv4_sysctl_init_net (mode 0444 outside init_net, kernel commit 97684f0970f6)",
    },
    NetnsRule {
        key: "net.netfilter.nf_conntrack_max",
        kind: NetnsRuleKind::ReadOnlyInChild,
        fix: "set it in the initial network namespace (it is one table for the whole host)",
        source: "net/netfilter/nf_conntrack_standalone.c nf_conntrack_standalone_init_sysctl (\"Don't allow non-init_net ns to alter global sysctls\")",
    },
    NetnsRule {
        key: "net.netfilter.nf_conntrack_buckets",
        kind: NetnsRuleKind::ReadOnlyInChild,
        fix: "set it in the initial network namespace",
        source: "Documentation/networking/nf_conntrack-sysctl.rst nf_conntrack_buckets (\"only writeable in the initial net namespace\")",
    },
    NetnsRule {
        key: "net.netfilter.nf_conntrack_expect_max",
        kind: NetnsRuleKind::ReadOnlyInChild,
        fix: "set it in the initial network namespace",
        source: "net/netfilter/nf_conntrack_standalone.c nf_conntrack_standalone_init_sysctl",
    },
    NetnsRule {
        key: "net.ipv4.tcp_child_ehash_entries",
        kind: NetnsRuleKind::FutureNamespaces {
            own: "net.ipv4.tcp_ehash_entries",
        },
        fix: "set it before creating the namespaces it is for (a container runtime's, `ip netns add`); this namespace's table keeps its size",
        source: "Documentation/networking/ip-sysctl.rst tcp_child_ehash_entries (Linux 6.1)",
    },
    NetnsRule {
        key: "net.ipv4.udp_child_hash_entries",
        kind: NetnsRuleKind::FutureNamespaces {
            own: "net.ipv4.udp_hash_entries",
        },
        fix: "set it before creating the namespaces it is for; this namespace's table keeps its size",
        source: "Documentation/networking/ip-sysctl.rst udp_child_hash_entries (Linux 6.2)",
    },
];

/// The child-namespace rule of `key`, if it has one.
pub(crate) fn netns_rule(key: &Key) -> Option<&'static NetnsRule> {
    NETNS_RULES.iter().find(|r| r.key == key.as_str())
}

/// Key prefixes whose table exists only while a module is loaded: (prefix, module, source).
pub(crate) const MODULE_KEYS: &[(&str, &str, &str)] = &[
    (
        "net.netfilter.nf_conntrack_",
        "nf_conntrack",
        "net/netfilter/nf_conntrack_standalone.c registers the table on module load",
    ),
    (
        "net.nf_conntrack_max",
        "nf_conntrack",
        "net/netfilter/nf_conntrack_standalone.c",
    ),
    (
        "net.bridge.bridge-nf-",
        "br_netfilter",
        "net/bridge/br_netfilter_hooks.c",
    ),
    ("net.ipv4.vs.", "ip_vs", "net/netfilter/ipvs/ip_vs_ctl.c"),
    ("net.sctp.", "sctp", "net/sctp/sysctl.c"),
];

/// The module that provides `key`, if it is one of [`MODULE_KEYS`]: (module, source).
pub(crate) fn module_for(key: &Key) -> Option<(&'static str, &'static str)> {
    MODULE_KEYS
        .iter()
        .find(|(p, _, _)| key.as_str().starts_with(p))
        .map(|(_, m, s)| (*m, *s))
}

/// Inclusive bounds of a single-number key the kernel enforces on write (EINVAL outside).
pub(crate) const RANGES: &[(&str, i64, i64, &str)] = &[
    (
        "net.ipv4.tcp_tw_reuse",
        0,
        2,
        "net/ipv4/sysctl_net_ipv4.c (proc_dou8vec_minmax, extra2 = 2)",
    ),
    (
        "net.ipv4.tcp_tw_reuse_delay",
        1,
        60000,
        "Documentation/networking/ip-sysctl.rst tcp_tw_reuse_delay",
    ),
    (
        "net.core.somaxconn",
        0,
        i32::MAX as i64,
        "net/core/sysctl_net_core.c (proc_dointvec_minmax, extra1 = 0)",
    ),
];

/// Why the kernel will refuse writing `value` to `key` (EINVAL), if it will.
///
/// `current` is the key's value now (to know whether it is numeric), `unprivileged_port_start`
/// is `net.ipv4.ip_unprivileged_port_start` of the same namespace (default 1024).
pub(crate) fn rejects(
    key: &Key,
    value: &str,
    current: Option<&str>,
    unprivileged_port_start: Option<i64>,
) -> Option<String> {
    let nums: Option<Vec<i64>> = value.split(' ').map(|n| n.parse().ok()).collect();
    let cur_numeric = current.is_some_and(|c| c.split(' ').all(|n| n.parse::<i64>().is_ok()));
    if cur_numeric && nums.is_none() {
        return Some(format!(
            "the kernel parses numbers here (now {:?}); {value:?} gets EINVAL",
            current.unwrap_or_default()
        ));
    }
    let nums = nums?;
    if let Some((_, lo, hi, src)) = RANGES.iter().find(|(k, ..)| *k == key.as_str()) {
        if let [v] = nums[..] {
            if v < *lo || v > *hi {
                return Some(format!(
                    "{v} is outside {lo}..={hi}: the kernel answers EINVAL ({src})"
                ));
            }
        }
    }
    if key.as_str() == "net.ipv4.ip_local_port_range" {
        let src = "net/ipv4/sysctl_net_ipv4.c ipv4_local_port_range";
        let [lo, hi] = nums[..] else {
            return Some(format!("write two ports `LOW HIGH` ({src})"));
        };
        if !(1..=65535).contains(&lo) || !(1..=65535).contains(&hi) {
            return Some(format!("ports must be within 1..=65535: EINVAL ({src})"));
        }
        if hi < lo {
            return Some(format!("high {hi} is below low {lo}: EINVAL ({src})"));
        }
        let start = unprivileged_port_start.unwrap_or(1024);
        if lo < start {
            return Some(format!(
                "low {lo} is below net.ipv4.ip_unprivileged_port_start ({start}): EINVAL ({src}); start at {start} or lower ip_unprivileged_port_start first"
            ));
        }
    }
    None
}

/// A value that makes connection rate worse than the kernel default.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Harm {
    /// The key.
    pub key: &'static str,
    /// When it applies (text for the table).
    pub when: &'static str,
    /// The test on the value's numbers.
    pub test: fn(&[i64]) -> bool,
    /// Why it hurts.
    pub why: &'static str,
    /// Where it is stated.
    pub source: &'static str,
}

/// Every harmful-value rule.
pub(crate) const HARMS: &[Harm] = &[
    Harm {
        key: "net.ipv6.conf.*.disable_ipv6",
        when: "= 1",
        test: |v| v.first().is_some_and(|&x| x != 0),
        why: "disabling IPv6 removes every IPv6 address and route of the interface(s), static ones included (conf.all: of every interface); writing 0 again (tune revert) brings back only link-local and autoconfigured addresses — re-add static ones (`ip -6 addr add`) or restart the network configuration",
        source: "net/ipv6/addrconf.c dev_disable_change -> addrconf_ifdown; Documentation/networking/ip-sysctl.rst disable_ipv6",
    },
    Harm {
        key: "net.core.somaxconn",
        when: "< 4096",
        test: |v| v.first().is_some_and(|&x| x < 4096),
        why: "every listen() backlog is capped to it: below the default 4096 (since 5.4) the accept queue overflows sooner (ListenOverflows)",
        source: "Documentation/networking/ip-sysctl.rst somaxconn (default 4096 since Linux 5.4)",
    },
    Harm {
        key: "net.ipv4.tcp_max_syn_backlog",
        when: "< 128",
        test: |v| v.first().is_some_and(|&x| x < 128),
        why: "below the kernel's minimum default of 128 the SYN queue of every listener is tiny (with syncookies off, SYNs are dropped: TCPReqQFullDrop)",
        source: "Documentation/networking/ip-sysctl.rst tcp_max_syn_backlog",
    },
    Harm {
        key: "net.ipv4.tcp_syncookies",
        when: "= 0",
        test: |v| v == [0],
        why: "a full SYN queue then drops SYNs (TCPReqQFullDrop) instead of answering with cookies; the default is 1",
        source: "Documentation/networking/ip-sysctl.rst tcp_syncookies; net/ipv4/tcp_input.c tcp_conn_request",
    },
    Harm {
        key: "net.ipv4.tcp_syncookies",
        when: "= 2",
        test: |v| v == [2],
        why: "cookies for every SYN, full queue or not: TCP options can be lost; meant for testing",
        source: "Documentation/networking/ip-sysctl.rst tcp_syncookies",
    },
    Harm {
        key: "net.ipv4.tcp_abort_on_overflow",
        when: "= 1",
        test: |v| v == [1],
        why: "clients get RST when the accept queue is full instead of a retried handshake; the docs advise it only when the application truly cannot keep up",
        source: "Documentation/networking/ip-sysctl.rst tcp_abort_on_overflow",
    },
    Harm {
        key: "net.ipv4.tcp_sack",
        when: "= 0",
        test: |v| v == [0],
        why: "loss recovery without selective acknowledgments retransmits more; the default is 1",
        source: "Documentation/networking/ip-sysctl.rst tcp_sack",
    },
    Harm {
        key: "net.ipv4.tcp_dsack",
        when: "= 0",
        test: |v| v == [0],
        why: "without duplicate SACKs the sender cannot tell a needless retransmission from a lost segment, so it keeps congestion-window reductions it would otherwise undo (RFC 2883, RFC 3708); the default is 1",
        source: "Documentation/networking/ip-sysctl.rst tcp_dsack (default 1)",
    },
    Harm {
        key: "net.ipv4.tcp_timestamps",
        when: "= 0",
        test: |v| v == [0],
        why: "no PAWS and no TIME_WAIT reuse for outgoing connections (tcp_tw_reuse needs timestamps)",
        source: "net/ipv4/tcp_ipv4.c tcp_twsk_unique",
    },
    Harm {
        key: "net.ipv4.tcp_tw_reuse",
        when: "= 0",
        test: |v| v == [0],
        why: "connect() can no longer reuse TIME_WAIT ports, not even on loopback (default 2): client-first close is limited to ports / 60 s",
        source: "Documentation/networking/ip-sysctl.rst tcp_tw_reuse",
    },
    Harm {
        key: "net.ipv4.tcp_max_tw_buckets",
        when: "< 16384",
        test: |v| v.first().is_some_and(|&x| x < 16384),
        why: "over it sockets close without TIME_WAIT (TCPTimeWaitOverflow); the docs say not to lower this limit artificially (threshold 16384 is connstorm's)",
        source: "Documentation/networking/ip-sysctl.rst tcp_max_tw_buckets",
    },
    Harm {
        key: "net.ipv4.ip_local_port_range",
        when: "< 28232 ports",
        test: |v| matches!(v, [lo, hi] if hi - lo + 1 < 28232),
        why: "fewer ephemeral ports than the default 32768-60999: fewer concurrent client connections and fewer connections/s with client-first close",
        source: "Documentation/networking/ip-sysctl.rst ip_local_port_range",
    },
    Harm {
        key: "net.core.netdev_max_backlog",
        when: "< 1000",
        test: |v| v.first().is_some_and(|&x| x < 1000),
        why: "a per-CPU input queue below the default 1000 drops packets in bursts (softnet_stat drops)",
        source: "Documentation/admin-guide/sysctl/net.rst netdev_max_backlog",
    },
    Harm {
        key: "net.netfilter.nf_conntrack_tcp_timeout_time_wait",
        when: "< 60 s",
        test: |v| v.first().is_some_and(|&x| x < 60),
        why: "conntrack forgets a closed connection before TCP does: the endpoint keeps TIME_WAIT for 60 s (TCP_TIMEWAIT_LEN, include/net/tcp.h), so a retransmitted FIN or last ACK matches no entry (INVALID: dropped by rulesets that drop INVALID) and a new connection on the same 4-tuple is tracked as if the old one never existed; the default is 120 s",
        source: "Documentation/networking/nf_conntrack-sysctl.rst nf_conntrack_tcp_timeout_time_wait (default 120)",
    },
    Harm {
        key: "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
        when: "< 6 s (a tenth of the default)",
        test: |v| v.first().is_some_and(|&x| x < 6),
        why: "CLOSE_WAIT lasts until the application closes its end; once the entry has expired the application's FIN and the peer's last ACK match no entry (INVALID), so the close is dropped by rulesets that drop INVALID and the peer retransmits; the default is 60 s",
        source: "Documentation/networking/nf_conntrack-sysctl.rst nf_conntrack_tcp_timeout_close_wait (default 60)",
    },
    Harm {
        key: "net.netfilter.nf_conntrack_tcp_timeout_fin_wait",
        when: "< 12 s (a tenth of the default)",
        test: |v| v.first().is_some_and(|&x| x < 12),
        why: "a half-closed connection loses its entry before the peer answers the FIN; its last segments match no entry (INVALID); the default is 120 s",
        source: "Documentation/networking/nf_conntrack-sysctl.rst nf_conntrack_tcp_timeout_fin_wait (default 120)",
    },
    Harm {
        key: "net.netfilter.nf_conntrack_tcp_timeout_established",
        when: "< 43200 s (a tenth of the default)",
        test: |v| v.first().is_some_and(|&x| x < 43200),
        why: "an idle established connection (no keepalive, a long poll, a pooled backend connection) loses its entry after this many seconds; its next segment matches no entry (INVALID: dropped by rulesets that drop INVALID, and a NAT mapping is gone); the default is 432000 s (5 days)",
        source: "Documentation/networking/nf_conntrack-sysctl.rst nf_conntrack_tcp_timeout_established (default 432000)",
    },
    Harm {
        key: "net.netfilter.nf_conntrack_tcp_timeout_syn_sent",
        when: "< 12 s (a tenth of the default)",
        test: |v| v.first().is_some_and(|&x| x < 12),
        why: "a handshake whose SYN is retransmitted (after 1 s, 3 s, 7 s, ...) loses its entry before the SYN-ACK comes; the default is 120 s",
        source: "Documentation/networking/nf_conntrack-sysctl.rst nf_conntrack_tcp_timeout_syn_sent (default 120)",
    },
    Harm {
        key: "net.netfilter.nf_conntrack_tcp_timeout_syn_recv",
        when: "< 6 s (a tenth of the default)",
        test: |v| v.first().is_some_and(|&x| x < 6),
        why: "a handshake whose SYN-ACK or final ACK is retransmitted loses its entry before it completes; the default is 60 s",
        source: "Documentation/networking/nf_conntrack-sysctl.rst nf_conntrack_tcp_timeout_syn_recv (default 60)",
    },
    Harm {
        key: "net.netfilter.nf_conntrack_tcp_timeout_last_ack",
        when: "< 3 s (a tenth of the default)",
        test: |v| v.first().is_some_and(|&x| x < 3),
        why: "the final ACK of a close that needed a retransmission matches no entry (INVALID); the default is 30 s",
        source: "Documentation/networking/nf_conntrack-sysctl.rst nf_conntrack_tcp_timeout_last_ack (default 30)",
    },
    Harm {
        key: "net.netfilter.nf_conntrack_generic_timeout",
        when: "< 60 s (a tenth of the default)",
        test: |v| v.first().is_some_and(|&x| x < 60),
        why: "flows of protocols conntrack has no tracker for lose their entry after this many idle seconds; the default is 600 s",
        source: "Documentation/networking/nf_conntrack-sysctl.rst nf_conntrack_generic_timeout (default 600)",
    },
];

/// The harmful-value rules that need more than the value (the host's listeners and memory, the
/// plan's other lines): (key, rule, source). The planner applies them (`plan::workload`).
pub(crate) const WORKLOAD_RULES: &[(&str, &str, &str)] = &[
    (
        "net.ipv4.ip_local_port_range",
        "a range that covers a port a service of this namespace listens on (read from its listening sockets) lets an outgoing connection take that port while the service is down, so it cannot bind again (EADDRINUSE); reserve the ports with net.ipv4.ip_local_reserved_ports or move the range",
        "Documentation/networking/ip-sysctl.rst ip_local_port_range, ip_local_reserved_ports; bottlerocket-os/bottlerocket#1386",
    ),
    (
        "net.ipv4.tcp_keepalive_time + tcp_keepalive_probes x tcp_keepalive_intvl",
        "< 100 s: a peer silent for that long (a paused process, a loaded server) is declared dead and the connection reset, far below the 2 h idle time keepalive defaults to (time 7200 s, 9 probes every 75 s) and RFC 1122's 100 s before a connection is given up",
        "Documentation/networking/ip-sysctl.rst tcp_keepalive_time, tcp_keepalive_intvl, tcp_retries2; RFC 1122 4.2.3.6",
    ),
    (
        "net.core.rmem_default, wmem_default, tcp_rmem/tcp_wmem (middle)",
        "a per-socket default buffer times the sockets the plan allows (fs.file-max) above this host's memory (MemTotal): full queues of that many sockets cannot be backed; rmem_default/wmem_default apply to every socket but TCP, which starts from tcp_rmem/tcp_wmem's middle value",
        "Documentation/admin-guide/sysctl/net.rst rmem_default, wmem_default; Documentation/networking/ip-sysctl.rst tcp_rmem, tcp_wmem",
    ),
];

/// The harmful-value rules `value` of `key` triggers.
pub(crate) fn harms(key: &Key, value: &str) -> Vec<&'static Harm> {
    let Some(nums) = value
        .split(' ')
        .map(|n| n.parse().ok())
        .collect::<Option<Vec<i64>>>()
    else {
        return Vec::new();
    };
    HARMS
        .iter()
        .filter(|h| pattern_matches(h.key, key.as_str()) && (h.test)(&nums))
        .collect()
}

/// True when `key` is `pattern`, where a `*` component of the pattern matches any one
/// component (`all`, `default` or an interface name).
fn pattern_matches(pattern: &str, key: &str) -> bool {
    match pattern.split_once(".*.") {
        Some((head, tail)) => key
            .strip_prefix(head)
            .and_then(|r| r.strip_prefix('.'))
            .and_then(|r| r.strip_suffix(tail))
            .and_then(|r| r.strip_suffix('.'))
            .is_some_and(|mid| !mid.is_empty() && !mid.contains('.')),
        None => pattern == key,
    }
}

/// A setting that does nothing unless another one has a certain value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Needs {
    /// The key whose value depends on another.
    pub key: &'static str,
    /// The values of `key` the rule is about (text for the table).
    pub when: &'static str,
    /// Test on `key`'s first number.
    pub active: fn(i64) -> bool,
    /// The other key.
    pub needs: &'static str,
    /// Test on the other key's first number: true when it satisfies the need.
    pub satisfied: fn(i64) -> bool,
    /// What the other key must be (text).
    pub needs_text: &'static str,
    /// What happens otherwise.
    pub why: &'static str,
    /// Where it is stated.
    pub source: &'static str,
    /// Also report when a plan changes only the needed key and `key` keeps the host's value
    /// (true where the host default of `key` is already active, as tcp_tw_reuse = 2 is).
    pub host_side: bool,
}

/// Every dependency rule.
pub(crate) const NEEDS: &[Needs] = &[
    Needs {
        key: "net.ipv4.tcp_tw_reuse",
        when: "1 or 2",
        active: |v| v == 1 || v == 2,
        needs: "net.ipv4.tcp_timestamps",
        satisfied: |v| v != 0,
        needs_text: "1 or 2",
        why: "TIME_WAIT reuse needs the TIME_WAIT entry to have seen timestamps, so with tcp_timestamps = 0 no port is ever reused (connect() fails with EADDRNOTAVAIL once the range is in TIME_WAIT)",
        source: "net/ipv4/tcp_ipv4.c tcp_twsk_unique; Documentation/networking/ip-sysctl.rst tcp_tw_reuse",
        host_side: true,
    },
    Needs {
        key: "net.ipv4.tcp_tw_reuse_delay",
        when: "any",
        active: |_| true,
        needs: "net.ipv4.tcp_tw_reuse",
        satisfied: |v| v != 0,
        needs_text: "1 or 2",
        why: "the delay applies only to TIME_WAIT reuse, which is off",
        source: "Documentation/networking/ip-sysctl.rst tcp_tw_reuse_delay",
        host_side: false,
    },
    Needs {
        key: "net.ipv4.tcp_max_syn_backlog",
        when: "any",
        active: |_| true,
        needs: "net.ipv4.tcp_syncookies",
        satisfied: |v| v == 0,
        needs_text: "0",
        why: "with SYN cookies on, a full SYN queue is answered with cookies, so this limit drops nothing; the listen() backlog (capped by somaxconn) bounds the SYN queue",
        source: "Documentation/networking/ip-sysctl.rst tcp_max_syn_backlog, tcp_syncookies; net/ipv4/tcp_input.c tcp_conn_request; include/net/inet_connection_sock.h inet_csk_reqsk_queue_is_full",
        host_side: false,
    },
];

/// One row of the printed rule table.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RuleRow {
    /// `alias`, `legacy`, `status`, `module`, `range`, `harmful`, `needs`, `side effect`.
    pub kind: &'static str,
    /// The key (or prefix).
    pub key: String,
    /// The rule.
    pub rule: String,
    /// Where it is stated.
    pub source: &'static str,
}

/// Every rule above as rows, in one table.
pub(crate) fn table() -> Vec<RuleRow> {
    let mut t = Vec::new();
    for a in ALIASES {
        t.push(RuleRow {
            kind: "alias",
            key: format!("{} = {}", a.keys[0], a.keys[1]),
            rule: format!("{}; in one plan the later line wins", a.note),
            source: a.source,
        });
    }
    for e in SIDE_EFFECTS {
        t.push(RuleRow {
            kind: "side effect",
            key: e.key.to_string(),
            rule: format!(
                "a write that changes the value also sets {} (plan, snapshot and revert include them)",
                e.also
                    .iter()
                    .map(|(k, f)| match f {
                        Follows::Same => format!("{k} to the same value"),
                        Follows::Not => format!("{k} to its logical not"),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            source: e.source,
        });
    }
    for l in LEGACY {
        t.push(RuleRow {
            kind: "legacy",
            key: format!("{}{}", l.old, if l.old.ends_with('_') { "*" } else { "" }),
            rule: match l.new {
                Some(n) => format!(
                    "{}; use {n}{}",
                    l.note,
                    if l.old.ends_with('_') { "*" } else { "" }
                ),
                None => l.note.to_string(),
            },
            source: l.source,
        });
    }
    for (k, s) in STATUS_KEYS {
        t.push(RuleRow {
            kind: "status",
            key: (*k).to_string(),
            rule: "reports state; cannot be set (skipped with a note when the line has `-`, refused otherwise)".into(),
            source: s,
        });
    }
    for r in NETNS_RULES {
        t.push(RuleRow {
            kind: "namespace",
            key: r.key.to_string(),
            rule: match r.kind {
                NetnsRuleKind::AllowedList { list, .. } => format!(
                    "a child network namespace may set it only to a value listed in {list} (EPERM otherwise; the plan says so before writing): {}",
                    r.fix
                ),
                NetnsRuleKind::ReadOnlyInChild => format!(
                    "read-only in a child network namespace, writable in the initial one: {}",
                    r.fix
                ),
                NetnsRuleKind::FutureNamespaces { own } => format!(
                    "sizes the network namespaces created after the write, not this one ({own} shows this one's): {}",
                    r.fix
                ),
            },
            source: r.source,
        });
    }
    for (p, m, s) in MODULE_KEYS {
        t.push(RuleRow {
            kind: "module",
            key: format!("{p}*"),
            rule: format!(
                "exists only while module {m} is loaded (modprobe {m}; /etc/modules-load.d/)"
            ),
            source: s,
        });
    }
    for (k, lo, hi, s) in RANGES {
        t.push(RuleRow {
            kind: "range",
            key: (*k).to_string(),
            rule: format!("the kernel rejects values outside {lo}..={hi} (EINVAL)"),
            source: s,
        });
    }
    t.push(RuleRow {
        kind: "range",
        key: "net.ipv4.ip_local_port_range".into(),
        rule: "the kernel rejects high < low, ports outside 1..=65535, and low < ip_unprivileged_port_start (EINVAL)".into(),
        source: "net/ipv4/sysctl_net_ipv4.c ipv4_local_port_range",
    });
    for h in HARMS {
        t.push(RuleRow {
            kind: "harmful",
            key: format!("{} {}", h.key, h.when),
            rule: h.why.to_string(),
            source: h.source,
        });
    }
    for w in WORKLOAD_RULES {
        t.push(RuleRow {
            kind: "harmful",
            key: w.0.to_string(),
            rule: w.1.to_string(),
            source: w.2,
        });
    }
    for n in NEEDS {
        t.push(RuleRow {
            kind: "needs",
            key: format!("{} {}", n.key, n.when),
            rule: format!("needs {} = {}: {}", n.needs, n.needs_text, n.why),
            source: n.source,
        });
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> Key {
        Key::parse(s).unwrap()
    }

    #[test]
    fn legacy_names_point_to_their_replacements() {
        let (l, new) = legacy(&k("net.ipv4.netfilter.ip_conntrack_max")).unwrap();
        assert_eq!(new.as_deref(), Some("net.netfilter.nf_conntrack_max"));
        assert!(l.note.contains("4.9"));
        let (l, new) = legacy(&k("net.ipv4.tcp_tw_recycle")).unwrap();
        assert!(new.is_none() && l.note.contains("4.12"));
        assert!(legacy(&k("net.ipv4.tcp_tw_reuse")).is_none());
    }

    #[test]
    fn kernel_rejections_are_predicted() {
        let r = |key: &str, v: &str, cur: &str| rejects(&k(key), v, Some(cur), Some(1024));
        assert!(r("net.ipv4.tcp_tw_reuse", "3", "2").is_some());
        assert!(r("net.ipv4.tcp_tw_reuse", "1", "2").is_none());
        assert!(
            r("net.ipv4.ip_local_port_range", "1000 65535", "32768 60999")
                .unwrap()
                .contains("ip_unprivileged_port_start")
        );
        assert!(r("net.ipv4.ip_local_port_range", "30000 20000", "32768 60999").is_some());
        assert!(r("net.ipv4.ip_local_port_range", "1024 65535", "32768 60999").is_none());
        assert!(r("net.core.somaxconn", "lots", "4096").is_some());
        assert!(r("net.core.somaxconn", "-1", "4096").is_some());
        assert!(r("net.ipv4.tcp_congestion_control", "bbr", "cubic").is_none());
    }

    #[test]
    fn harmful_values_and_the_table_cover_each_rule() {
        assert_eq!(harms(&k("net.core.somaxconn"), "128").len(), 1);
        assert!(harms(&k("net.core.somaxconn"), "65535").is_empty());
        assert_eq!(
            harms(&k("net.ipv4.ip_local_port_range"), "40000 40999").len(),
            1
        );
        for key in [
            "net.ipv6.conf.all.disable_ipv6",
            "net.ipv6.conf.eth0/200.disable_ipv6",
        ] {
            let h = harms(&k(key), "1");
            assert_eq!(h.len(), 1, "{key}");
            assert!(h[0].why.contains("removes every IPv6 address"));
        }
        assert!(harms(&k("net.ipv6.conf.all.disable_ipv6"), "0").is_empty());
        assert!(harms(&k("net.ipv6.conf.disable_ipv6"), "1").is_empty());
        assert!(harms(&k("net.ipv6.conf.a.b.disable_ipv6"), "1").is_empty());
        let t = table();
        for kind in [
            "alias",
            "legacy",
            "status",
            "module",
            "range",
            "harmful",
            "needs",
            "side effect",
        ] {
            assert!(t.iter().any(|r| r.kind == kind), "{kind}");
        }
        assert!(t.iter().all(|r| !r.source.is_empty()));
    }
}
