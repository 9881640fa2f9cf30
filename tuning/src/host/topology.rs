//! CPU topology from sysfs: online CPUs, SMT siblings, cores, packages, NUMA nodes, isolated and
//! nohz_full CPUs, hybrid (P/E) core types, and the process's allowed CPUs.
//!
//! Files (Documentation/admin-guide/cputopology.rst, Documentation/ABI/testing/sysfs-devices-system-cpu):
//! `<root>/sys/devices/system/cpu/{online,isolated,nohz_full}`,
//! `cpuN/topology/{core_id,physical_package_id,thread_siblings_list}`,
//! `<root>/sys/devices/system/node/nodeN/cpulist`, and on Intel hybrid parts (5.13+)
//! `<root>/sys/devices/cpu_core/cpus` (P-cores) and `<root>/sys/devices/cpu_atom/cpus` (E-cores).
//! The allowed CPUs come from `Cpus_allowed_list` in `<root>/proc/self/status` (proc(5)).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cpulist::{self, CpuListError};

/// Why the topology could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// A required sysfs file is unreadable.
    #[error(
        "cannot read {path}: {source} (is sysfs mounted at <root>/sys? pass the right --root)"
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error (errno).
        source: std::io::Error,
    },
    /// A cpulist file holds garbage.
    #[error("{path}: {source}")]
    List {
        /// The file.
        path: PathBuf,
        /// The parse error.
        source: CpuListError,
    },
    /// The files parse but cannot describe one machine: an empty `online` list, or SMT sibling
    /// lists that disagree. Usually a snapshot copied in part or edited by hand: take it again
    /// with `connstorm tune snapshot-topology`.
    #[error("{path}: {what} (a topology snapshot must be copied whole: take it again with `connstorm tune snapshot-topology`, or pass the right --root)")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
}

/// What kind of core a CPU is on a hybrid part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CoreKind {
    /// Not a hybrid part (or unknown).
    Uniform,
    /// Intel P-core (`/sys/devices/cpu_core/cpus`).
    Performance,
    /// Intel E-core (`/sys/devices/cpu_atom/cpus`).
    Efficiency,
}

/// One online logical CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    /// Logical CPU id.
    pub id: usize,
    /// `topology/core_id` (unique only within a package).
    pub core_id: Option<u32>,
    /// `topology/physical_package_id` (socket).
    pub package_id: Option<u32>,
    /// NUMA node holding this CPU.
    pub node: usize,
    /// SMT siblings including itself (`thread_siblings_list`), ascending.
    pub siblings: Vec<usize>,
    /// Hybrid core type.
    pub kind: CoreKind,
}

/// A NUMA node and its CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaNode {
    /// Node id.
    pub id: usize,
    /// CPUs of the node (`nodeN/cpulist`), ascending.
    pub cpus: Vec<usize>,
}

/// The CPU topology of a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// Online CPUs.
    pub online: Vec<usize>,
    /// CPUs isolated from load balancing (`isolcpus=`; empty when none).
    pub isolated: Vec<usize>,
    /// Full-dynticks CPUs (`nohz_full=`; empty when none or the file is absent).
    pub nohz_full: Vec<usize>,
    /// Per online CPU, ascending by id.
    pub cpus: Vec<Cpu>,
    /// NUMA nodes with CPUs. Without `/sys/devices/system/node` one node 0 holds every online CPU.
    pub nodes: Vec<NumaNode>,
}

/// Most bytes read from one topology file (a cpulist of 8192 CPUs is well under it).
const MAX_TOPOLOGY_FILE_BYTES: u64 = 1 << 20;

/// Reads a topology file: a regular file (sysfs and procfs files are), at most
/// [`MAX_TOPOLOGY_FILE_BYTES`]. A FIFO in a copied `--root` tree blocked `tune placement
/// --root` and `scale --dry-run --root` forever in open(); it is refused instead.
fn read_trim(path: &Path) -> Result<String, TopologyError> {
    use std::io::Read as _;
    let err = |source| TopologyError::Read {
        path: path.to_path_buf(),
        source,
    };
    if !std::fs::metadata(path).map_err(err)?.is_file() {
        return Err(err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, device or directory)",
        )));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_TOPOLOGY_FILE_BYTES).read_to_string(&mut text))
        .map_err(err)?;
    Ok(text.trim().to_string())
}

fn read_list(path: &Path) -> Result<Vec<usize>, TopologyError> {
    let text = read_trim(path)?;
    cpulist::parse(&text).map_err(|source| TopologyError::List {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a cpulist file that may be absent (absent = empty).
fn read_list_opt(path: &Path) -> Result<Vec<usize>, TopologyError> {
    if path.exists() {
        read_list(path)
    } else {
        Ok(Vec::new())
    }
}

impl Topology {
    /// Reads the topology under `root` (`/` for the running host).
    ///
    /// # Errors
    /// [`TopologyError`] when `cpu/online` is unreadable or a cpulist is malformed. Missing
    /// per-CPU topology files leave `core_id`/`package_id` as `None` (some VMs).
    pub fn read(root: &Path) -> Result<Topology, TopologyError> {
        let sys = root.join("sys/devices/system/cpu");
        let online = read_list(&sys.join("online"))?;
        if online.is_empty() {
            return Err(TopologyError::Malformed {
                path: sys.join("online"),
                what: "lists no CPU, yet the CPU that read it was online".into(),
            });
        }
        let isolated = read_list_opt(&sys.join("isolated"))?;
        let nohz_full = read_list_opt(&sys.join("nohz_full"))?;
        let pcores = read_list_opt(&root.join("sys/devices/cpu_core/cpus"))?;
        let ecores = read_list_opt(&root.join("sys/devices/cpu_atom/cpus"))?;

        let mut nodes = Vec::new();
        let node_dir = root.join("sys/devices/system/node");
        if let Ok(entries) = std::fs::read_dir(&node_dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                let Some(id) = name
                    .strip_prefix("node")
                    .and_then(|n| n.parse::<usize>().ok())
                else {
                    continue;
                };
                let cpus = read_list(&e.path().join("cpulist"))?;
                if !cpus.is_empty() {
                    nodes.push(NumaNode { id, cpus });
                }
            }
        }
        nodes.sort_by_key(|n| n.id);
        if nodes.is_empty() {
            nodes.push(NumaNode {
                id: 0,
                cpus: online.clone(),
            });
        }

        let mut cpus = Vec::with_capacity(online.len());
        // CPUs whose sibling list was read (not defaulted to themselves).
        let mut read_siblings = Vec::new();
        for &id in &online {
            let t = sys.join(format!("cpu{id}/topology"));
            let num = |f: &str| {
                read_trim(&t.join(f))
                    .ok()
                    .and_then(|s| s.parse::<u32>().ok())
            };
            let siblings = match read_list(&t.join("thread_siblings_list")) {
                Ok(s) if !s.is_empty() => {
                    read_siblings.push(id);
                    s
                }
                _ => vec![id],
            };
            let kind = if pcores.contains(&id) {
                CoreKind::Performance
            } else if ecores.contains(&id) {
                CoreKind::Efficiency
            } else {
                CoreKind::Uniform
            };
            let node = nodes
                .iter()
                .find(|n| n.cpus.contains(&id))
                .map_or(0, |n| n.id);
            cpus.push(Cpu {
                id,
                core_id: num("core_id"),
                package_id: num("physical_package_id"),
                node,
                siblings,
                kind,
            });
        }
        check_siblings(&sys, &cpus, &read_siblings)?;
        Ok(Topology {
            online,
            isolated,
            nohz_full,
            cpus,
            nodes,
        })
    }

    /// The CPU with this id, if online.
    pub fn cpu(&self, id: usize) -> Option<&Cpu> {
        self.cpus.iter().find(|c| c.id == id)
    }

    /// Number of packages (sockets) among online CPUs (1 when unknown).
    pub fn packages(&self) -> usize {
        let mut p: Vec<u32> = self.cpus.iter().filter_map(|c| c.package_id).collect();
        p.sort_unstable();
        p.dedup();
        p.len().max(1)
    }

    /// Number of physical cores: distinct SMT sibling groups among online CPUs.
    pub fn cores(&self) -> usize {
        let mut groups: Vec<&Vec<usize>> = self.cpus.iter().map(|c| &c.siblings).collect();
        groups.sort();
        groups.dedup();
        groups.len()
    }

    /// True when some core runs more than one online logical CPU.
    pub fn smt_active(&self) -> bool {
        self.cpus.iter().any(|c| {
            c.siblings
                .iter()
                .filter(|s| self.online.contains(s))
                .count()
                > 1
        })
    }

    /// True when the part has P- and E-cores.
    pub fn hybrid(&self) -> bool {
        self.cpus.iter().any(|c| c.kind != CoreKind::Uniform)
    }

    /// Online CPUs not in [`Topology::isolated`]: the housekeeping CPUs.
    pub fn housekeeping(&self) -> Vec<usize> {
        self.online
            .iter()
            .copied()
            .filter(|c| !self.isolated.contains(c))
            .collect()
    }
}

/// CPUs the process may run on, from `Cpus_allowed_list` in `<root>/proc/self/status`.
///
/// # Errors
/// [`TopologyError`] when the file is unreadable or the line is missing/malformed.
pub fn allowed_cpus(root: &Path) -> Result<Vec<usize>, TopologyError> {
    let path = root.join("proc/self/status");
    let text = read_trim(&path)?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or_else(|| TopologyError::List {
            path: path.clone(),
            source: CpuListError::Empty,
        })?;
    cpulist::parse(line).map_err(|source| TopologyError::List { path, source })
}

/// SMT sibling lists that were read (`read`: their CPUs) must describe one partition of the
/// CPUs into cores: each lists its own CPU, and every online sibling it names lists the same
/// set. The placement groups CPUs by these lists; lists that disagree (a snapshot mixed from two
/// hosts, or edited) would put two workers on one core while the plan says otherwise.
fn check_siblings(sys: &Path, cpus: &[Cpu], read: &[usize]) -> Result<(), TopologyError> {
    let file = |id: usize| sys.join(format!("cpu{id}/topology/thread_siblings_list"));
    for c in cpus.iter().filter(|c| read.contains(&c.id)) {
        if !c.siblings.contains(&c.id) {
            return Err(TopologyError::Malformed {
                path: file(c.id),
                what: format!(
                    "lists {} without CPU {} itself",
                    cpulist::format(&c.siblings),
                    c.id
                ),
            });
        }
        for &s in &c.siblings {
            let Some(other) = cpus.iter().find(|o| o.id == s && read.contains(&o.id)) else {
                continue;
            };
            if other.siblings != c.siblings {
                return Err(TopologyError::Malformed {
                    path: file(c.id),
                    what: format!(
                        "lists SMT siblings {} but {} lists {}: sibling lists must agree",
                        cpulist::format(&c.siblings),
                        file(s).display(),
                        cpulist::format(&other.siblings)
                    ),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_host() {
        let t = Topology::read(Path::new("/")).unwrap();
        assert!(!t.online.is_empty());
        assert_eq!(t.cpus.len(), t.online.len());
        assert!(t.cores() >= 1 && t.cores() <= t.online.len());
        let allowed = allowed_cpus(Path::new("/")).unwrap();
        assert!(allowed.iter().all(|c| t.online.contains(c)));
    }

    #[test]
    fn missing_online_file_is_an_error_naming_the_path() {
        let d = tempfile::tempdir().unwrap();
        let e = Topology::read(d.path()).unwrap_err();
        assert!(
            e.to_string().contains("sys/devices/system/cpu/online"),
            "{e}"
        );
    }

    /// An empty `online` list and sibling lists that disagree are refused naming the file;
    /// a sibling that lists itself and agrees with its partner passes.
    #[test]
    fn malformed_online_and_sibling_lists_are_refused_naming_the_file() {
        let d = tempfile::tempdir().unwrap();
        let cpu = d.path().join("sys/devices/system/cpu");
        let put = |rel: &str, text: &str| {
            let p = cpu.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put("online", "");
        let e = Topology::read(d.path()).unwrap_err().to_string();
        assert!(e.contains("cpu/online: lists no CPU"), "{e}");
        put("online", "0-3\n");
        for c in 0..4 {
            put(
                &format!("cpu{c}/topology/thread_siblings_list"),
                &format!("{}-{}\n", c / 2 * 2, c / 2 * 2 + 1),
            );
        }
        let t = Topology::read(d.path()).unwrap();
        assert_eq!(t.cpus[3].siblings, [2, 3]);
        put("cpu3/topology/thread_siblings_list", "2\n");
        let e = Topology::read(d.path()).unwrap_err().to_string();
        assert!(
            e.contains("cpu2/topology/thread_siblings_list: lists SMT siblings 2-3 but")
                && e.contains(
                    "cpu3/topology/thread_siblings_list lists 2: sibling lists must agree"
                ),
            "{e}"
        );
        put("cpu3/topology/thread_siblings_list", "2-3\n");
        put("cpu0/topology/thread_siblings_list", "1\n");
        let e = Topology::read(d.path()).unwrap_err().to_string();
        assert!(
            e.contains("cpu0/topology/thread_siblings_list: lists 1 without CPU 0 itself"),
            "{e}"
        );
    }

    /// Files people bring: a FIFO where a snapshot has `cpu/online` is refused naming the
    /// path (the read blocked forever).
    #[test]
    fn files_people_bring_a_fifo_in_a_snapshot_is_refused_not_waited_on() {
        let d = tempfile::tempdir().unwrap();
        let cpu = d.path().join("sys/devices/system/cpu");
        std::fs::create_dir_all(&cpu).unwrap();
        nix::unistd::mkfifo(&cpu.join("online"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = Topology::read(d.path()).unwrap_err().to_string();
        assert!(e.contains("sys/devices/system/cpu/online"), "{e}");
        assert!(e.contains("not a regular file"), "{e}");
    }
}
