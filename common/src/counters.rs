//! The kernel's TCP counters of one network namespace, and per-run deltas.
//!
//! Sources (definitions in Documentation/networking/snmp_counter.rst and include/uapi/linux/snmp.h):
//! - `<net_dir>/snmp` and `<net_dir>/netstat`: pairs of lines `Prefix: Name1 Name2 ...` /
//!   `Prefix: v1 v2 ...`; every counter becomes `"Prefix.Name"` (`"Tcp.ActiveOpens"`,
//!   `"TcpExt.ListenOverflows"`).
//! - `<net_dir>/softnet_stat`: one row of hex columns per CPU (column 1 packets processed, 2 dropped
//!   because the per-CPU backlog exceeded net.core.netdev_max_backlog, 3 time_squeeze, 10 RPS IPIs
//!   received, 11 flow-limit hits); summed over CPUs as `"softnet.processed"`, `"softnet.dropped"`,
//!   `"softnet.time_squeeze"`, `"softnet.received_rps"`, `"softnet.flow_limit_count"`.
//!   softnet_stat is global (not per namespace) on every kernel.
//! - `<net_dir>/sockstat`: gauges (`TCP: inuse orphan tw alloc mem`), kept apart from the counters
//!   as `"sockstat.TCP.tw"` etc.
//!
//! All but softnet_stat are per network namespace. Namespaces are per thread and `/proc/net`
//! follows the *main* thread, so read `/proc/thread-self/net` ([`DEFAULT_NET_DIR`]).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The calling thread's network namespace's `/proc` net directory.
pub const DEFAULT_NET_DIR: &str = "/proc/thread-self/net";

/// `Tcp.ActiveOpens`: SYNs sent (client attempts).
pub const ACTIVE_OPENS: &str = "Tcp.ActiveOpens";
/// `Tcp.PassiveOpens`: SYNs received and answered (server side).
pub const PASSIVE_OPENS: &str = "Tcp.PassiveOpens";
/// `Tcp.AttemptFails`: failed handshakes (SYN-SENT/SYN-RCVD → CLOSED, SYN-RCVD → LISTEN).
pub const ATTEMPT_FAILS: &str = "Tcp.AttemptFails";
/// `Tcp.EstabResets`: RSTs on established / CLOSE-WAIT connections.
pub const ESTAB_RESETS: &str = "Tcp.EstabResets";
/// `TcpExt.ListenOverflows`: accept queue full when a SYN or final ACK arrived.
pub const LISTEN_OVERFLOWS: &str = "TcpExt.ListenOverflows";
/// `TcpExt.ListenDrops`: every drop at a listener (≥ ListenOverflows).
pub const LISTEN_DROPS: &str = "TcpExt.ListenDrops";
/// `TcpExt.TCPReqQFullDrop`: SYN queue full and syncookies off, SYN dropped.
pub const REQ_Q_FULL_DROP: &str = "TcpExt.TCPReqQFullDrop";
/// `TcpExt.TCPReqQFullDoCookies`: SYN queue full, a syncookie was sent instead.
pub const REQ_Q_FULL_DO_COOKIES: &str = "TcpExt.TCPReqQFullDoCookies";
/// `TcpExt.SyncookiesSent`: syncookies sent.
pub const SYNCOOKIES_SENT: &str = "TcpExt.SyncookiesSent";
/// `TcpExt.TCPSynRetrans`: SYN and SYN-ACK retransmits (hidden drops, 1 s latency modes).
pub const SYN_RETRANS: &str = "TcpExt.TCPSynRetrans";
/// `TcpExt.TCPTimeWaitOverflow`: net.ipv4.tcp_max_tw_buckets exceeded, TIME_WAIT not created.
pub const TIME_WAIT_OVERFLOW: &str = "TcpExt.TCPTimeWaitOverflow";
/// `TcpExt.TCPBacklogDrop`: socket backlog full while the socket was owned by user space.
pub const BACKLOG_DROP: &str = "TcpExt.TCPBacklogDrop";
/// `softnet.dropped`: packets dropped because a per-CPU input backlog exceeded netdev_max_backlog.
pub const SOFTNET_DROPPED: &str = "softnet.dropped";
/// `softnet.flow_limit_count`: packets dropped by RPS flow limits.
pub const SOFTNET_FLOW_LIMIT: &str = "softnet.flow_limit_count";

/// The counters whose non-zero delta makes a run "a different experiment" (docs/design.md).
pub const DROP_COUNTERS: &[&str] = &[
    LISTEN_OVERFLOWS,
    LISTEN_DROPS,
    REQ_Q_FULL_DROP,
    REQ_Q_FULL_DO_COOKIES,
    SYNCOOKIES_SENT,
    TIME_WAIT_OVERFLOW,
    BACKLOG_DROP,
    SOFTNET_DROPPED,
    SOFTNET_FLOW_LIMIT,
];

/// The counters of one namespace at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Monotonic counters: `"Tcp.*"`, `"TcpExt.*"`, `"Ip.*"`, ... and `"softnet.*"` (summed).
    pub counters: BTreeMap<String, i64>,
    /// Gauges from sockstat, e.g. `"sockstat.TCP.tw"` (TIME_WAIT sockets), `"sockstat.TCP.inuse"`.
    pub gauges: BTreeMap<String, i64>,
    /// softnet_stat per CPU row: `[processed, dropped, time_squeeze]`, in file order.
    pub softnet_per_cpu: Vec<[i64; 3]>,
}

impl Snapshot {
    /// Reads snmp, netstat, softnet_stat and sockstat from `net_dir` (e.g. [`DEFAULT_NET_DIR`] or a
    /// fixture directory).
    ///
    /// # Errors
    /// `io::Error` with the path in the message when snmp or netstat cannot be read, or
    /// `InvalidData` naming file and line when a file is malformed. softnet_stat and sockstat are
    /// optional (absent in some containers): missing means no `softnet.*` / gauges.
    pub fn read(net_dir: &Path) -> io::Result<Snapshot> {
        let mut snap = Snapshot::default();
        for file in ["snmp", "netstat"] {
            let path = net_dir.join(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("read {}: {e}", path.display())))?;
            parse_pairs(&text, &path, &mut snap.counters)?;
        }
        let softnet = net_dir.join("softnet_stat");
        match std::fs::read_to_string(&softnet) {
            Ok(text) => snap.parse_softnet(&text, &softnet)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("read {}: {e}", softnet.display()),
                ))
            }
        }
        let conntrack = net_dir.join("stat/nf_conntrack");
        match std::fs::read_to_string(&conntrack) {
            Ok(text) => parse_conntrack_stat(&text, &mut snap.counters),
            // Absent until the nf_conntrack module is loaded.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("read {}: {e}", conntrack.display()),
                ))
            }
        }
        let sockstat = net_dir.join("sockstat");
        match std::fs::read_to_string(&sockstat) {
            Ok(text) => parse_sockstat(&text, &mut snap.gauges),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("read {}: {e}", sockstat.display()),
                ))
            }
        }
        Ok(snap)
    }

    /// Reads the calling thread's namespace ([`DEFAULT_NET_DIR`]).
    ///
    /// # Errors
    /// As [`Snapshot::read`].
    pub fn read_current() -> io::Result<Snapshot> {
        Snapshot::read(Path::new(DEFAULT_NET_DIR))
    }

    /// One counter's value, if this kernel has it.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.counters.get(name).copied()
    }

    /// `self - before` for every counter present in both (counters that exist only on one side are
    /// left out). Gauges are carried as their value at `self` under `"sockstat.*"` in
    /// [`CounterDelta::gauges`].
    pub fn delta(&self, before: &Snapshot) -> CounterDelta {
        let values = self
            .counters
            .iter()
            .filter_map(|(k, v)| {
                before
                    .counters
                    .get(k)
                    .map(|b| (k.clone(), v.wrapping_sub(*b)))
            })
            .collect();
        CounterDelta {
            values,
            gauges: self.gauges.clone(),
        }
    }

    fn parse_softnet(&mut self, text: &str, path: &Path) -> io::Result<()> {
        let mut sums = [0i64; 5];
        for (i, line) in text.lines().enumerate() {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.is_empty() {
                continue;
            }
            let hex = |idx: usize| -> io::Result<i64> {
                match cols.get(idx) {
                    None => Ok(0),
                    Some(c) => i64::from_str_radix(c, 16).map_err(|_| {
                        bad_data(
                            path,
                            i + 1,
                            &format!("column {} {c:?} is not hexadecimal", idx + 1),
                        )
                    }),
                }
            };
            let row = [hex(0)?, hex(1)?, hex(2)?];
            for (s, v) in sums
                .iter_mut()
                .zip([row[0], row[1], row[2], hex(9)?, hex(10)?])
            {
                *s += v;
            }
            self.softnet_per_cpu.push(row);
        }
        for (name, v) in [
            "processed",
            "dropped",
            "time_squeeze",
            "received_rps",
            "flow_limit_count",
        ]
        .iter()
        .zip(sums)
        {
            self.counters.insert(format!("softnet.{name}"), v);
        }
        Ok(())
    }
}

fn bad_data(path: &Path, line: usize, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{}:{line}: {what} (expected the kernel's `Prefix: names` / `Prefix: values` format)",
            path.display()
        ),
    )
}

/// Parses the snmp/netstat header/value line pairs.
fn parse_pairs(text: &str, path: &Path, out: &mut BTreeMap<String, i64>) -> io::Result<()> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if !lines.len().is_multiple_of(2) {
        return Err(bad_data(
            path,
            lines.len(),
            "odd number of lines: a header without its values",
        ));
    }
    for (i, pair) in lines.chunks(2).enumerate() {
        let line_no = i * 2 + 1;
        let (p1, names) = pair[0]
            .split_once(':')
            .ok_or_else(|| bad_data(path, line_no, "no `Prefix:`"))?;
        let (p2, values) = pair[1]
            .split_once(':')
            .ok_or_else(|| bad_data(path, line_no + 1, "no `Prefix:`"))?;
        if p1 != p2 {
            return Err(bad_data(
                path,
                line_no + 1,
                &format!("prefix {p2:?} does not match header {p1:?}"),
            ));
        }
        let names: Vec<&str> = names.split_whitespace().collect();
        let values: Vec<&str> = values.split_whitespace().collect();
        if names.len() != values.len() {
            return Err(bad_data(
                path,
                line_no + 1,
                &format!("{} names but {} values", names.len(), values.len()),
            ));
        }
        for (n, v) in names.iter().zip(values) {
            let v: i64 = v.parse().map_err(|_| {
                bad_data(
                    path,
                    line_no + 1,
                    &format!("value {v:?} of {p1}.{n} is not an integer"),
                )
            })?;
            out.insert(format!("{p1}.{n}"), v);
        }
    }
    Ok(())
}

/// Columns of `<net_dir>/stat/nf_conntrack` kept as counters (`"nf_conntrack.drop"`, ...),
/// summed over the per-CPU rows: `drop` = new flows dropped because the table was full,
/// `early_drop` = entries evicted to make room, `insert_failed` = lost insertion races
/// (src net/netfilter/nf_conntrack_standalone.c `ct_cpu_seq_show`; Documentation/networking/nf_conntrack-sysctl.rst). The file is per
/// network namespace.
pub const CONNTRACK_STAT_COLUMNS: [&str; 3] = ["drop", "early_drop", "insert_failed"];

/// Parses `/proc/net/stat/nf_conntrack`: a header line of column names, then one row of hex
/// values per CPU. Unknown or malformed rows are skipped (the stat is informational).
fn parse_conntrack_stat(text: &str, out: &mut BTreeMap<String, i64>) {
    let mut lines = text.lines();
    let Some(header) = lines.next() else { return };
    let names: Vec<&str> = header.split_whitespace().collect();
    for row in lines {
        let vals: Vec<i64> = row
            .split_whitespace()
            .filter_map(|v| i64::from_str_radix(v, 16).ok())
            .collect();
        if vals.len() != names.len() {
            continue;
        }
        for (name, v) in names.iter().zip(vals) {
            if CONNTRACK_STAT_COLUMNS.contains(name) {
                *out.entry(format!("nf_conntrack.{name}")).or_insert(0) += v;
            }
        }
    }
}

/// The sysctls that explain how a namespace treats handshakes under load, read by
/// [`read_settings`] and used by the diagnosis in `results::analysis`.
pub const DIAGNOSIS_SYSCTLS: [&str; 7] = [
    "net.ipv4.tcp_syncookies",
    "net.ipv4.tcp_abort_on_overflow",
    "net.core.somaxconn",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_max_tw_buckets",
    "net.netfilter.nf_conntrack_count",
    "net.netfilter.nf_conntrack_max",
];

/// The calling thread's sysctl tree. `/proc/sys/net/*` resolves to the network namespace of the
/// task that *opens* the file (`current->nsproxy->net_ns`, src net/sysctl_net.c
/// `net_ctl_header_lookup`), i.e. of the calling thread — unlike `/proc/net`, which follows the
/// main thread. So read it from a thread inside the namespace (as `bench` does for its server
/// namespace).
pub const DEFAULT_SYS_DIR: &str = "/proc/sys";

/// Reads [`DIAGNOSIS_SYSCTLS`] under `sys_dir` (e.g. [`DEFAULT_SYS_DIR`] or a fixture tree),
/// as `"net.ipv4.tcp_syncookies" → 1`. Missing keys (nf_conntrack not loaded, an old kernel) and
/// unreadable or non-numeric values are left out: a diagnosis then says less, never something
/// false. `nf_conntrack_max` is one global limit compared with each namespace's own
/// `nf_conntrack_count` (Documentation/networking/nf_conntrack-sysctl.rst;
/// net/netfilter/nf_conntrack_core.c `__nf_conntrack_alloc`).
pub fn read_settings(sys_dir: &Path) -> BTreeMap<String, i64> {
    DIAGNOSIS_SYSCTLS
        .iter()
        .filter_map(|key| {
            let path = sys_dir.join(key.replace('.', "/"));
            let text = std::fs::read_to_string(path).ok()?;
            let v = text.split_whitespace().next()?.parse::<i64>().ok()?;
            Some((key.to_string(), v))
        })
        .collect()
}

/// Parses sockstat (`TCP: inuse 1 orphan 0 tw 0 alloc 1 mem 199`); malformed parts are ignored
/// (gauges are informational).
fn parse_sockstat(text: &str, out: &mut BTreeMap<String, i64>) {
    for line in text.lines() {
        let Some((proto, rest)) = line.split_once(':') else {
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        for kv in words.chunks(2) {
            if let [k, v] = kv {
                if let Ok(v) = v.parse::<i64>() {
                    out.insert(format!("sockstat.{proto}.{k}"), v);
                }
            }
        }
    }
}

/// Counter changes between two [`Snapshot`]s (`after.delta(&before)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterDelta {
    values: BTreeMap<String, i64>,
    gauges: BTreeMap<String, i64>,
}

impl CounterDelta {
    /// The change of one counter (`"Tcp.ActiveOpens"`, `"softnet.dropped"`, ...), `None` when the
    /// kernel does not have it.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.values.get(name).copied()
    }

    fn or0(&self, name: &str) -> i64 {
        self.get(name).unwrap_or(0)
    }

    /// Δ `Tcp.ActiveOpens` (0 if absent).
    pub fn active_opens(&self) -> i64 {
        self.or0(ACTIVE_OPENS)
    }
    /// Δ `Tcp.PassiveOpens` (0 if absent).
    pub fn passive_opens(&self) -> i64 {
        self.or0(PASSIVE_OPENS)
    }
    /// Δ `Tcp.AttemptFails` (0 if absent).
    pub fn attempt_fails(&self) -> i64 {
        self.or0(ATTEMPT_FAILS)
    }
    /// Δ `Tcp.EstabResets` (0 if absent).
    pub fn estab_resets(&self) -> i64 {
        self.or0(ESTAB_RESETS)
    }
    /// Δ `TcpExt.ListenOverflows` (0 if absent).
    pub fn listen_overflows(&self) -> i64 {
        self.or0(LISTEN_OVERFLOWS)
    }
    /// Δ `TcpExt.ListenDrops` (0 if absent).
    pub fn listen_drops(&self) -> i64 {
        self.or0(LISTEN_DROPS)
    }
    /// Δ `TcpExt.TCPReqQFullDrop` (0 if absent).
    pub fn req_q_full_drop(&self) -> i64 {
        self.or0(REQ_Q_FULL_DROP)
    }
    /// Δ `TcpExt.TCPReqQFullDoCookies` (0 if absent).
    pub fn req_q_full_do_cookies(&self) -> i64 {
        self.or0(REQ_Q_FULL_DO_COOKIES)
    }
    /// Δ `TcpExt.SyncookiesSent` (0 if absent).
    pub fn syncookies_sent(&self) -> i64 {
        self.or0(SYNCOOKIES_SENT)
    }
    /// Δ `TcpExt.TCPSynRetrans` (0 if absent).
    pub fn syn_retrans(&self) -> i64 {
        self.or0(SYN_RETRANS)
    }
    /// Δ `TcpExt.TCPTimeWaitOverflow` (0 if absent).
    pub fn time_wait_overflow(&self) -> i64 {
        self.or0(TIME_WAIT_OVERFLOW)
    }
    /// Δ `softnet.dropped`, summed over CPUs (0 if softnet_stat was not readable).
    pub fn softnet_dropped(&self) -> i64 {
        self.or0(SOFTNET_DROPPED)
    }

    /// The non-zero changes among [`DROP_COUNTERS`], in that order. Non-empty means the run left
    /// the normal connection path (docs/design.md: "a run with drops is a different experiment").
    pub fn drops(&self) -> Vec<(String, i64)> {
        DROP_COUNTERS
            .iter()
            .filter_map(|n| self.get(n).filter(|v| *v != 0).map(|v| (n.to_string(), v)))
            .collect()
    }

    /// Every counter change, keyed by name (sockstat gauges are not included; see
    /// [`CounterDelta::gauges`]).
    pub fn to_map(&self) -> BTreeMap<String, i64> {
        self.values.clone()
    }

    /// sockstat gauges at the end of the interval (`"sockstat.TCP.tw"`, ...).
    pub fn gauges(&self) -> &BTreeMap<String, i64> {
        &self.gauges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conntrack_stat_columns_are_summed_over_cpus() {
        let text = "entries  clashres found new invalid ignore delete chainlength insert insert_failed drop early_drop icmp_error  expect_new expect_create expect_delete search_restart\n\
00000020  00000000 00000000 00000000 00000003 00000000 00000000 00000000 00000000 00000001 0000000a 00000002 00000000  00000000 00000000 00000000 00000000\n\
00000020  00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000016 00000000 00000000  00000000 00000000 00000000 00000000\n";
        let mut m = BTreeMap::new();
        parse_conntrack_stat(text, &mut m);
        assert_eq!(m.get("nf_conntrack.drop"), Some(&(0x0a + 0x16)));
        assert_eq!(m.get("nf_conntrack.early_drop"), Some(&2));
        assert_eq!(m.get("nf_conntrack.insert_failed"), Some(&1));
        assert_eq!(m.get("nf_conntrack.entries"), None);
    }

    #[test]
    fn settings_come_from_the_given_tree_and_skip_missing_keys() {
        let dir = tempfile::tempdir().unwrap();
        let put = |k: &str, v: &str| {
            let p = dir.path().join(k.replace('.', "/"));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        };
        put("net.ipv4.tcp_syncookies", "2\n");
        put("net.core.somaxconn", "4096\n");
        put("net.ipv4.tcp_abort_on_overflow", "junk\n");
        let s = read_settings(dir.path());
        assert_eq!(s.get("net.ipv4.tcp_syncookies"), Some(&2));
        assert_eq!(s.get("net.core.somaxconn"), Some(&4096));
        assert_eq!(s.len(), 2, "{s:?}");
    }

    fn write_net(dir: &Path, active: i64, overflows: i64, softnet_drop: u32) {
        std::fs::write(
            dir.join("snmp"),
            format!("Ip: Forwarding DefaultTTL\nIp: 1 64\nTcp: RtoAlgorithm MaxConn ActiveOpens PassiveOpens\nTcp: 1 -1 {active} 7\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("netstat"),
            format!("TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 0 {overflows} {overflows}\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("softnet_stat"),
            format!("0000000a {softnet_drop:08x} 00000001 0 0 0 0 0 0 00000002 00000000\n00000014 00000000 00000000\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("sockstat"),
            "sockets: used 13\nTCP: inuse 1 orphan 0 tw 5 alloc 1 mem 199\n",
        )
        .unwrap();
    }

    #[test]
    fn reads_fixture_and_computes_delta_and_drops() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        write_net(a.path(), 10, 0, 0);
        write_net(b.path(), 25, 3, 0x11);
        let before = Snapshot::read(a.path()).unwrap();
        let after = Snapshot::read(b.path()).unwrap();
        assert_eq!(before.get("Tcp.MaxConn"), Some(-1));
        assert_eq!(after.get("softnet.processed"), Some(30));
        assert_eq!(after.gauges.get("sockstat.TCP.tw"), Some(&5));
        let d = after.delta(&before);
        assert_eq!(d.active_opens(), 15);
        assert_eq!(d.passive_opens(), 0);
        assert_eq!(d.listen_overflows(), 3);
        assert_eq!(d.softnet_dropped(), 0x11);
        assert_eq!(
            d.drops(),
            vec![
                (LISTEN_OVERFLOWS.to_string(), 3),
                (LISTEN_DROPS.to_string(), 3),
                (SOFTNET_DROPPED.to_string(), 0x11)
            ]
        );
        assert_eq!(d.to_map().get("Ip.DefaultTTL"), Some(&0));
        assert_eq!(d.get("TcpExt.NoSuchCounter"), None);
    }

    #[test]
    fn malformed_files_name_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        write_net(d.path(), 1, 0, 0);
        std::fs::write(d.path().join("netstat"), "TcpExt: A B\nTcpExt: 1\n").unwrap();
        let e = Snapshot::read(d.path()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("netstat:2"), "{e}");
        std::fs::write(d.path().join("netstat"), "TcpExt: A\nTcpExt: x\n").unwrap();
        assert!(Snapshot::read(d.path())
            .unwrap_err()
            .to_string()
            .contains("not an integer"));
        std::fs::remove_file(d.path().join("snmp")).unwrap();
        assert_eq!(
            Snapshot::read(d.path()).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
