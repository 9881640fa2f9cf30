//! Per-CPU network softirqs: the NET_RX and NET_TX rows of `/proc/softirqs` (proc(5): one column
//! per possible CPU, counts since boot) and the CPU time of each `ksoftirqd/N` thread (utime +
//! stime of `/proc/<pid>/stat`, USER_HZ ticks), read from a root path so fixtures can stand in.
//! Two samples around a phase give its [`NetSoftirqSample::delta`].

use std::collections::BTreeMap;
use std::path::Path;

/// NET_RX, NET_TX and `ksoftirqd/N` CPU time of one CPU at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuNetSoftirqs {
    /// NET_RX softirqs run on this CPU since boot.
    pub net_rx: u64,
    /// NET_TX softirqs run on this CPU since boot.
    pub net_tx: u64,
    /// CPU time of its `ksoftirqd/N` thread since boot, ns; `None` when not found.
    pub ksoftirqd_ns: Option<u64>,
}

/// Every CPU at one instant, keyed by CPU number.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetSoftirqSample(pub BTreeMap<usize, CpuNetSoftirqs>);

/// Why `/proc/softirqs` could not be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SoftirqsError {
    /// The file has no `CPU0 CPU1 …` header line.
    #[error("{path}: no CPU header line (want `CPU0 CPU1 ...` first, as proc(5) describes)")]
    NoHeader {
        /// The file.
        path: String,
    },
    /// A NET_RX or NET_TX row is missing or holds a value that is not a count.
    #[error("{path}: the {row} row is missing or not one count per CPU column")]
    BadRow {
        /// The file.
        path: String,
        /// `NET_RX` or `NET_TX`.
        row: &'static str,
    },
}

/// Parses `/proc/softirqs` text (`path` names it in errors): the NET_RX and NET_TX count of
/// each CPU column. Offline CPUs keep their column; a row shorter than the header (older
/// kernels print only online CPUs' columns) gives the CPUs it has.
///
/// # Errors
/// [`SoftirqsError`] when the header or a row is malformed.
pub fn parse_softirqs(
    text: &str,
    path: &str,
) -> Result<BTreeMap<usize, (u64, u64)>, SoftirqsError> {
    let header = text
        .lines()
        .next()
        .ok_or_else(|| SoftirqsError::NoHeader { path: path.into() })?;
    let cpus: Vec<usize> = header
        .split_whitespace()
        .map(|c| c.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect::<Option<_>>()
        .filter(|v: &Vec<usize>| !v.is_empty())
        .ok_or_else(|| SoftirqsError::NoHeader { path: path.into() })?;
    let row = |name: &'static str| -> Result<Vec<u64>, SoftirqsError> {
        let bad = || SoftirqsError::BadRow {
            path: path.into(),
            row: name,
        };
        let line = text
            .lines()
            .skip(1)
            .find(|l| {
                l.trim_start()
                    .strip_prefix(name)
                    .is_some_and(|r| r.starts_with(':'))
            })
            .ok_or_else(bad)?;
        let values = line.split_once(':').ok_or_else(bad)?.1;
        let v: Vec<u64> = values
            .split_whitespace()
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()
            .ok_or_else(bad)?;
        if v.len() > cpus.len() {
            return Err(bad());
        }
        Ok(v)
    };
    let (rx, tx) = (row("NET_RX")?, row("NET_TX")?);
    Ok(cpus
        .iter()
        .enumerate()
        .filter_map(|(i, &cpu)| Some((cpu, (*rx.get(i)?, *tx.get(i)?))))
        .collect())
}

/// The CPU and CPU time, ns, of a `ksoftirqd/N` thread from its `/proc/<pid>/stat` line;
/// `None` for any other thread or a malformed line. `tick_ns`: one USER_HZ tick.
pub fn parse_ksoftirqd_stat(stat: &str, tick_ns: u64) -> Option<(usize, u64)> {
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so split at the last ')'.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?;
    let cpu: usize = comm.strip_prefix("ksoftirqd/")?.parse().ok()?;
    let rest: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime) of proc(5) are 12th and 13th after the comm.
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((cpu, (utime + stime) * tick_ns))
}

/// Reads `<root>/proc/softirqs` and the `ksoftirqd/N` threads under `<root>/proc`: the children
/// of kthreadd (`/proc/2/task/2/children`), or where that file is missing every numeric
/// directory's `stat`; once per sample, never per connection.
///
/// # Errors
/// [`SoftirqsError`] when `/proc/softirqs` is missing or malformed (an unreadable file is
/// reported as having no header).
pub fn read_net_softirqs(root: &Path) -> Result<NetSoftirqSample, SoftirqsError> {
    let proc_dir = root.join("proc");
    let path = proc_dir.join("softirqs");
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|_| SoftirqsError::NoHeader {
        path: shown.clone(),
    })?;
    let counts = parse_softirqs(&text, &shown)?;
    let tick = super::procstat::tick_ns();
    let mut ksoftirqd = BTreeMap::new();
    // ksoftirqd threads are children of kthreadd (PID 2): its children list (CONFIG_PROC_CHILDREN)
    // names a few hundred kernel threads, where a scan of /proc reads every process of the host.
    let pids: Vec<String> = match std::fs::read_to_string(proc_dir.join("2/task/2/children")) {
        Ok(children) => children.split_whitespace().map(str::to_string).collect(),
        Err(_) => std::fs::read_dir(&proc_dir)
            .map(|dir| {
                dir.flatten()
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                    .collect()
            })
            .unwrap_or_default(),
    };
    for pid in pids {
        if let Ok(stat) = std::fs::read_to_string(proc_dir.join(&pid).join("stat")) {
            if let Some((cpu, ns)) = parse_ksoftirqd_stat(&stat, tick) {
                ksoftirqd.insert(cpu, ns);
            }
        }
    }
    Ok(NetSoftirqSample(
        counts
            .into_iter()
            .map(|(cpu, (net_rx, net_tx))| {
                (
                    cpu,
                    CpuNetSoftirqs {
                        net_rx,
                        net_tx,
                        ksoftirqd_ns: ksoftirqd.get(&cpu).copied(),
                    },
                )
            })
            .collect(),
    ))
}

impl NetSoftirqSample {
    /// What `cpus` ran between `self` (before) and `after`: counts and ksoftirqd time subtracted
    /// (saturating: a counter cannot go back); a CPU missing from either sample is left out,
    /// and a ksoftirqd time missing from either is `None`.
    pub fn delta(
        &self,
        after: &NetSoftirqSample,
        cpus: &[usize],
    ) -> BTreeMap<usize, CpuNetSoftirqs> {
        cpus.iter()
            .filter_map(|c| {
                let (b, a) = (self.0.get(c)?, after.0.get(c)?);
                Some((
                    *c,
                    CpuNetSoftirqs {
                        net_rx: a.net_rx.saturating_sub(b.net_rx),
                        net_tx: a.net_tx.saturating_sub(b.net_tx),
                        ksoftirqd_ns: a
                            .ksoftirqd_ns
                            .zip(b.ksoftirqd_ns)
                            .map(|(a, b)| a.saturating_sub(b)),
                    },
                ))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "                    CPU0       CPU1       CPU2\n          HI:          0          0          0\n       TIMER:    1246601    1094959        100\n      NET_TX:       2474       2586          7\n      NET_RX:   79711826  267637126         50\n       BLOCK:          0    1058915          0\n";
    const AFTER: &str = "                    CPU0       CPU1       CPU2\n          HI:          0          0          0\n       TIMER:    1246700    1094999        100\n      NET_TX:       2480       2586          7\n      NET_RX:   79721826  267637226         50\n       BLOCK:          0    1058915          0\n";

    #[test]
    fn softirq_rows_parse_per_cpu_column() {
        let m = parse_softirqs(BEFORE, "x").unwrap();
        assert_eq!(m[&0], (79_711_826, 2_474));
        assert_eq!(m[&1], (267_637_126, 2_586));
        assert_eq!(m[&2], (50, 7));
        assert_eq!(
            parse_softirqs("HI: 0\n", "f"),
            Err(SoftirqsError::NoHeader { path: "f".into() })
        );
        assert_eq!(
            parse_softirqs("CPU0\nNET_TX: 1\n", "f"),
            Err(SoftirqsError::BadRow {
                path: "f".into(),
                row: "NET_RX"
            })
        );
        assert!(parse_softirqs("CPU0\nNET_TX: 1\nNET_RX: x\n", "f").is_err());
        assert!(parse_softirqs("CPU0\nNET_TX: 1 2\nNET_RX: 1\n", "f").is_err());
    }

    #[test]
    fn ksoftirqd_stat_gives_its_cpu_and_time() {
        let line = "14 (ksoftirqd/0) S 2 0 0 0 -1 69238848 0 0 0 0 3 5155 0 0 20 0 1 0 25 0 0";
        assert_eq!(parse_ksoftirqd_stat(line, 10), Some((0, 5_158 * 10)));
        assert_eq!(
            parse_ksoftirqd_stat("9 (kworker/0:1) S 2 0 0 0 -1 0 0 0 0 0 3 5", 10),
            None
        );
        assert_eq!(parse_ksoftirqd_stat("14 (ksoftirqd/0) S 2", 10), None);
    }

    /// A fixture `/proc` before and after: the phase's CPUs get their deltas, ksoftirqd time
    /// included where its thread exists.
    #[test]
    fn softirq_deltas_from_fixture_files() {
        let dir = tempfile::tempdir().unwrap();
        let proc_dir = dir.path().join("proc");
        std::fs::create_dir_all(proc_dir.join("14")).unwrap();
        std::fs::create_dir_all(proc_dir.join("self")).unwrap();
        let write_stat = |ticks: u64| {
            std::fs::write(
                proc_dir.join("14/stat"),
                format!(
                    "14 (ksoftirqd/0) S 2 0 0 0 -1 69238848 0 0 0 0 1 {ticks} 0 0 20 0 1 0 25\n"
                ),
            )
            .unwrap();
        };
        std::fs::write(proc_dir.join("softirqs"), BEFORE).unwrap();
        write_stat(100);
        let before = read_net_softirqs(dir.path()).unwrap();
        std::fs::write(proc_dir.join("softirqs"), AFTER).unwrap();
        write_stat(150);
        let after = read_net_softirqs(dir.path()).unwrap();
        let d = before.delta(&after, &[0, 1, 7]);
        let tick = crate::host::procstat::tick_ns();
        assert_eq!(
            d[&0],
            CpuNetSoftirqs {
                net_rx: 10_000,
                net_tx: 6,
                ksoftirqd_ns: Some(50 * tick)
            }
        );
        assert_eq!(
            d[&1],
            CpuNetSoftirqs {
                net_rx: 100,
                net_tx: 0,
                ksoftirqd_ns: None
            }
        );
        assert!(!d.contains_key(&7), "a CPU not in the file is left out");
        // With kthreadd's children list, only its children are read: a thread elsewhere that
        // calls itself ksoftirqd/1 is not one.
        std::fs::create_dir_all(proc_dir.join("2/task/2")).unwrap();
        std::fs::create_dir_all(proc_dir.join("99")).unwrap();
        std::fs::write(
            proc_dir.join("99/stat"),
            "99 (ksoftirqd/1) S 1 0 0 0 -1 0 0 0 0 0 7 7 0 0 20 0 1 0 25\n",
        )
        .unwrap();
        std::fs::write(proc_dir.join("2/task/2/children"), "3 14 ").unwrap();
        let s = read_net_softirqs(dir.path()).unwrap();
        assert_eq!(s.0[&0].ksoftirqd_ns, Some((1 + 150) * tick));
        assert_eq!(s.0[&1].ksoftirqd_ns, None, "pid 99 is no kernel thread");
        std::fs::remove_file(proc_dir.join("softirqs")).unwrap();
        assert!(read_net_softirqs(dir.path()).is_err());
    }

    #[test]
    fn this_host_has_a_ksoftirqd_per_online_cpu() {
        let comm = std::fs::read_to_string("/proc/2/comm").unwrap_or_default();
        if comm.trim() != "kthreadd" {
            eprintln!(
                "skipping: PID 2 is {comm:?}, not kthreadd (a PID namespace hides kernel threads)"
            );
            return;
        }
        let s = read_net_softirqs(Path::new("/")).unwrap();
        let online = crate::host::Topology::read(Path::new("/")).unwrap().online;
        for c in online {
            assert!(
                s.0.get(&c).is_some_and(|x| x.ksoftirqd_ns.is_some()),
                "CPU {c}: {s:?}"
            );
        }
    }
}
