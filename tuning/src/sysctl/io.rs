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
}
