//! A copy of the files [`super::Topology::read`], [`super::allowed_cpus`] and
//! [`super::Nic::read`] read, taken on one host (`connstorm tune snapshot-topology --out DIR` on
//! the big machine) so that another reads it as a root (`--root DIR`): `tune placement` and
//! `scale --dry-run` then show that machine's placement here.
//!
//! Copied as plain files (sysfs symlinks followed): `sys/devices/system/cpu/{online,possible,
//! present,offline,isolated,nohz_full}`, each online CPU's `topology/{core_id,
//! physical_package_id,die_id,cluster_id,thread_siblings_list,core_cpus_list}`,
//! `sys/devices/system/node/nodeN/{cpulist,distance}`, `sys/devices/{cpu_core,cpu_atom}/cpus`
//! (hybrid parts), `proc/{cpuinfo,cmdline}`, `proc/self/status` cut to its `Name` and
//! `Cpus_allowed_list` lines, and per network device with a bus device
//! `sys/class/net/DEV/device/{numa_node,local_cpulist}`; plus `SNAPSHOT.txt` saying where and
//! when it was taken. Files a kernel does not have are left out, as the readers expect.

use std::path::{Path, PathBuf};

use super::topology::{Topology, TopologyError};

/// Why a snapshot could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The topology of the source does not read (no sysfs under it).
    #[error("{0}")]
    Source(#[from] TopologyError),
    /// `--out` exists and is not an empty directory.
    #[error(
        "{}: exists and is not an empty directory; give a new directory (nothing is overwritten)",
        .0.display()
    )]
    OutNotEmpty(PathBuf),
    /// A file could not be written.
    #[error("cannot write {}: {source}; give a writable --out directory", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// What was copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotSummary {
    /// Files written under the output directory (relative paths), in the order written.
    pub files: Vec<String>,
    /// Online CPUs of the source.
    pub cpus: usize,
    /// NUMA nodes of the source.
    pub nodes: usize,
}

/// Copies the topology files under `src` (`/` on a real host) into `out` (created; refused when
/// it exists and is not empty).
///
/// # Errors
/// [`SnapshotError`]: the source's topology does not read, `out` is in use, a write fails.
pub fn snapshot_topology(src: &Path, out: &Path) -> Result<SnapshotSummary, SnapshotError> {
    let topo = Topology::read(src)?;
    if out.exists() {
        let empty = std::fs::read_dir(out)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !empty {
            return Err(SnapshotError::OutNotEmpty(out.to_path_buf()));
        }
    }
    let mut files = Vec::new();
    let mut copy = |rel: &str| -> Result<(), SnapshotError> {
        let Ok(bytes) = std::fs::read(src.join(rel)) else {
            return Ok(());
        };
        write(out, rel, &bytes)?;
        files.push(rel.to_string());
        Ok(())
    };
    let cpu = "sys/devices/system/cpu";
    for f in [
        "online",
        "possible",
        "present",
        "offline",
        "isolated",
        "nohz_full",
    ] {
        copy(&format!("{cpu}/{f}"))?;
    }
    for c in &topo.online {
        for f in [
            "core_id",
            "physical_package_id",
            "die_id",
            "cluster_id",
            "thread_siblings_list",
            "core_cpus_list",
        ] {
            copy(&format!("{cpu}/cpu{c}/topology/{f}"))?;
        }
    }
    let node_dir = src.join("sys/devices/system/node");
    let mut nodes: Vec<String> = std::fs::read_dir(&node_dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| {
                    n.strip_prefix("node")
                        .is_some_and(|x| x.parse::<usize>().is_ok())
                })
                .collect()
        })
        .unwrap_or_default();
    nodes.sort();
    for n in &nodes {
        copy(&format!("sys/devices/system/node/{n}/cpulist"))?;
        copy(&format!("sys/devices/system/node/{n}/distance"))?;
    }
    copy("sys/devices/cpu_core/cpus")?;
    copy("sys/devices/cpu_atom/cpus")?;
    copy("proc/cpuinfo")?;
    copy("proc/cmdline")?;
    let mut devs: Vec<String> = std::fs::read_dir(src.join("sys/class/net"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    devs.sort();
    for d in &devs {
        copy(&format!("sys/class/net/{d}/device/numa_node"))?;
        copy(&format!("sys/class/net/{d}/device/local_cpulist"))?;
    }
    let status = std::fs::read_to_string(src.join("proc/self/status")).unwrap_or_default();
    let kept: String = status
        .lines()
        .filter(|l| l.starts_with("Name:") || l.starts_with("Cpus_allowed_list:"))
        .map(|l| format!("{l}\n"))
        .collect();
    if !kept.is_empty() {
        write(out, "proc/self/status", kept.as_bytes())?;
        files.push("proc/self/status".into());
    }
    let read = |rel: &str| {
        std::fs::read_to_string(src.join(rel))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into())
    };
    let about = format!(
        "connstorm topology snapshot\nhost: {}\nkernel: {}\ntaken: {} (seconds since the Unix \
         epoch)\nsource root: {}\nRead it with `connstorm tune placement --root DIR` or \
         `connstorm scale --dry-run --root DIR`.\n",
        read("proc/sys/kernel/hostname"),
        read("proc/sys/kernel/osrelease"),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        src.display()
    );
    write(out, "SNAPSHOT.txt", about.as_bytes())?;
    files.push("SNAPSHOT.txt".into());
    Ok(SnapshotSummary {
        files,
        cpus: topo.online.len(),
        nodes: topo.nodes.len(),
    })
}

fn write(out: &Path, rel: &str, bytes: &[u8]) -> Result<(), SnapshotError> {
    let path = out.join(rel);
    let err = |source| SnapshotError::Write {
        path: path.clone(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    std::fs::write(&path, bytes).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This host's topology, copied and read back, is the same topology.
    #[test]
    fn this_hosts_snapshot_reads_back_the_same() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("snap");
        let s = snapshot_topology(Path::new("/"), &out).unwrap();
        assert!(s.files.iter().any(|f| f == "sys/devices/system/cpu/online"));
        assert_eq!(
            Topology::read(&out).unwrap(),
            Topology::read(Path::new("/")).unwrap()
        );
        assert_eq!(
            super::super::allowed_cpus(&out).unwrap(),
            super::super::allowed_cpus(Path::new("/")).unwrap()
        );
        // A second snapshot into the same directory is refused, nothing overwritten.
        let e = snapshot_topology(Path::new("/"), &out).unwrap_err();
        assert!(e.to_string().contains("not an empty directory"), "{e}");
    }
}
