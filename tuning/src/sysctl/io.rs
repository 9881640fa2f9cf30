//! The seam every sysctl read and write goes through ([`SysctlIo`]), and the real `/proc/sys`
//! under a root ([`ProcSys`]).

use std::path::{Path, PathBuf};

use super::key::{self, Key, SysctlError};

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
    /// it cannot be read. Used to expand the `*` of the rules table `SIDE_EFFECTS`.
    fn children(&self, dir: &[&str]) -> Vec<String>;
    /// For a key missing here: whether it exists in the initial network namespace (the
    /// host's), where the global `net.*` tables are registered. `None` when that namespace
    /// cannot be looked into; the planner's check then goes by
    /// [`Key::global_by_name`]. Default `None`.
    fn in_initial_netns(&self, key: &Key) -> Option<bool> {
        let _ = key;
        None
    }
    /// For a key read-only here: whether the initial network namespace's file has a write bit
    /// (`Some(true)`: only a child namespace is refused). `None` when that namespace cannot be
    /// looked into. Default `None`.
    fn writable_in_initial_netns(&self, key: &Key) -> Option<bool> {
        let _ = key;
        None
    }
    /// What a new, empty network namespace has of each key: `Some(writable)` when the file
    /// exists there, `None` when it does not; the outer `None` when no such namespace can be
    /// made. A `net.*` key that every new namespace gets is per namespace, whatever its name
    /// says (net/sysctl_net.c registers per-namespace tables for each namespace, global ones for
    /// the initial one alone). Default `None`.
    fn in_fresh_netns(&self, keys: &[Key]) -> Option<Vec<Option<bool>>> {
        let _ = keys;
        None
    }
    /// Whether the key's file is on a read-only mount (writes fail EROFS: a container's
    /// `/proc/sys`). Default `false`.
    fn read_only_mount(&self, key: &Key) -> bool {
        let _ = key;
        false
    }
    /// The TCP ports services of this network namespace listen on; `None` when they cannot be
    /// read. Default `None`.
    fn listening_ports(&self) -> Option<Vec<u16>> {
        None
    }
    /// The host's memory (`MemTotal` of `/proc/meminfo`), bytes; `None` when unreadable.
    /// Default `None`.
    fn mem_total_bytes(&self) -> Option<u64> {
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
        key::read(&self.root, key)
    }
    fn write(&mut self, key: &Key, value: &str) -> Result<(), SysctlError> {
        key::write(&self.root, key, value)
    }
    fn writable(&self, key: &Key) -> bool {
        key::writable(&self.root, key)
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
    /// Looks from a thread inside the initial namespace (entered with setns(2)) for a root of
    /// `/`; `None` for a fixture tree (it has no other namespace).
    fn in_initial_netns(&self, key: &Key) -> Option<bool> {
        if self.root != Path::new("/") {
            return None;
        }
        let path = key.path(&self.root);
        crate::host::run_in_initial_netns(move || path.exists())
    }
    /// Looks from a thread inside the initial namespace, as [`Self::in_initial_netns`].
    fn writable_in_initial_netns(&self, key: &Key) -> Option<bool> {
        if self.root != Path::new("/") {
            return None;
        }
        let (root, key) = (self.root.clone(), key.clone());
        crate::host::run_in_initial_netns(move || key::writable(&root, &key))
    }
    /// Looks from a thread in a namespace made for the look (unshare(2)), for a root of `/`;
    /// `None` for a fixture tree.
    fn in_fresh_netns(&self, keys: &[Key]) -> Option<Vec<Option<bool>>> {
        use std::os::unix::fs::PermissionsExt;
        if self.root != Path::new("/") {
            return None;
        }
        let paths: Vec<PathBuf> = keys.iter().map(|k| k.path(&self.root)).collect();
        crate::host::run_in_fresh_netns(move || {
            paths
                .iter()
                .map(|p| {
                    std::fs::metadata(p)
                        .ok()
                        .filter(|m| m.is_file())
                        .map(|m| m.permissions().mode() & 0o222 != 0)
                })
                .collect()
        })
    }
    fn read_only_mount(&self, key: &Key) -> bool {
        nix::sys::statvfs::statvfs(&key.path(&self.root))
            .is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY))
    }
    /// sock_diag of the calling thread's namespace for a root of `/`; `<root>/proc/net/tcp`
    /// and `tcp6` of a fixture tree.
    fn listening_ports(&self) -> Option<Vec<u16>> {
        if self.root == Path::new("/") {
            return crate::host::listening_ports()
                .ok()
                .map(|p| p.into_iter().collect());
        }
        let mut ports: Vec<u16> = ["proc/net/tcp", "proc/net/tcp6"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(self.root.join(f)).ok())
            .flat_map(|t| crate::host::parse_proc_net_tcp(&t))
            .filter(|s| s.state == crate::host::TcpState::Listen)
            .map(|s| s.local.port())
            .collect();
        if ports.is_empty() && !self.root.join("proc/net/tcp").exists() {
            return None;
        }
        ports.sort_unstable();
        ports.dedup();
        Some(ports)
    }
    fn mem_total_bytes(&self) -> Option<u64> {
        let text = std::fs::read_to_string(self.root.join("proc/meminfo")).ok()?;
        let kib: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib * 1024)
    }
}
