//! Saved host values: what `tune apply` and `tune irq --apply` found before their first write,
//! so `tune revert` can restore it exactly.
//!
//! A snapshot is a JSON file in a state directory (default [`DEFAULT_STATE_DIR`]), written
//! atomically: a temporary file created with `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600, written,
//! fsync'd, renamed into place (rename(2) is atomic within a directory) and the directory fsync'd.
//! A reader therefore sees either no file or a complete one. Symlinks are refused for the
//! directory and for snapshot files. The file records `kernel.random.boot_id` (values from
//! another boot are stale) and the network namespace (`/proc/thread-self/ns/net`, e.g.
//! `net:[4026531840]`) the values belong to.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::host::current_netns;
use crate::sysctl::Key;

/// Default state directory.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/connstorm";

/// Snapshot file format version.
pub const SNAPSHOT_FORMAT: u32 = 1;

/// One saved value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Saved {
    /// A sysctl and its value before the change.
    Sysctl {
        /// The key.
        key: Key,
        /// Its value (normalized).
        value: String,
        /// When the kernel changed it as a side effect of writing another key
        /// (the rules table `SIDE_EFFECTS`): that key. Saved before the key written, so a revert
        /// (newest first) restores the written key, whose handler propagates again, and then
        /// this one. Absent in snapshots of earlier versions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<Key>,
    },
    /// An IRQ's `/proc/irq/N/smp_affinity_list` before the change.
    IrqAffinity {
        /// IRQ number.
        irq: u32,
        /// The CPU list.
        cpus: String,
    },
}

/// Largest snapshot file `tune revert` reads, bytes (16 MiB; a snapshot holds a few KiB).
pub const MAX_SNAPSHOT_BYTES: u64 = 16 << 20;

/// Values saved before a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// [`SNAPSHOT_FORMAT`].
    pub format: u32,
    /// Seconds since the Unix epoch when it was taken.
    pub created_unix_secs: u64,
    /// `kernel.random.boot_id` at the time.
    pub boot_id: String,
    /// Network namespace identity (`net:[inode]`), if readable.
    pub netns: Option<String>,
    /// What made it (`"apply preset c1m-server"`, `"irq eth0 housekeeping"`).
    pub what: String,
    /// The values, in the order they were changed.
    pub saved: Vec<Saved>,
}

/// A snapshot could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// A path is a symlink.
    #[error("{path} is a symlink; connstorm never writes or reads snapshots through symlinks — use a real directory for --state-dir")]
    Symlink {
        /// The path.
        path: PathBuf,
    },
    /// An I/O step failed.
    #[error("{op} {path}: {source} (check that --state-dir is writable by this user)")]
    Io {
        /// What was done (`"create directory"`, `"write"`, `"fsync"`, `"rename"`, `"read"`).
        op: &'static str,
        /// On what.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a snapshot.
    #[error("{path} is not a connstorm snapshot: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// No snapshot in the state directory.
    #[error("no snapshot in {dir}: nothing to revert (apply writes one before its first change)")]
    None {
        /// The state directory.
        dir: PathBuf,
    },
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError {
    let path = path.to_path_buf();
    move |source| SnapshotError::Io { op, path, source }
}

/// Reads `kernel.random.boot_id` under `root`, empty when unreadable.
pub fn boot_id(root: &Path) -> String {
    std::fs::read_to_string(root.join("proc/sys/kernel/random/boot_id"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn ensure_dir(dir: &Path) -> Result<(), SnapshotError> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => Err(SnapshotError::Symlink {
            path: dir.to_path_buf(),
        }),
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(SnapshotError::Io {
            op: "use as directory",
            path: dir.to_path_buf(),
            source: std::io::Error::from_raw_os_error(libc::ENOTDIR),
        }),
        Err(_) => {
            std::fs::create_dir_all(dir).map_err(io("create directory", dir))?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(io("chmod 0700", dir))
        }
    }
}

impl Snapshot {
    /// A new, empty snapshot for this boot and namespace.
    pub fn new(root: &Path, what: &str) -> Snapshot {
        Snapshot {
            format: SNAPSHOT_FORMAT,
            created_unix_secs: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            boot_id: boot_id(root),
            netns: current_netns(),
            what: what.to_string(),
            saved: Vec::new(),
        }
    }

    /// Writes the snapshot atomically into `dir` (created 0700 when missing) as
    /// `snapshot-<secs>-<nanos>.json`, mode 0600, and returns the file's path.
    ///
    /// # Errors
    /// [`SnapshotError::Symlink`] when `dir` is a symlink, [`SnapshotError::Io`] naming the step.
    /// On error no snapshot file is left behind (the temporary file is removed).
    pub fn write_atomic(&self, dir: &Path) -> Result<PathBuf, SnapshotError> {
        ensure_dir(dir)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let name = format!(
            "snapshot-{:012}-{:09}.json",
            now.as_secs(),
            now.subsec_nanos()
        );
        let fin = dir.join(&name);
        self.write_to(dir, &fin)?;
        Ok(fin)
    }

    /// Replaces the snapshot file at `path` (written by [`Snapshot::write_atomic`]) with this
    /// one, atomically: a reader sees the old file or the new one, never a part.
    ///
    /// # Errors
    /// As [`Snapshot::write_atomic`].
    pub fn rewrite_atomic(&self, path: &Path) -> Result<(), SnapshotError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        ensure_dir(dir)?;
        self.write_to(dir, path)
    }

    /// Writes `self` to a temporary file in `dir` and renames it to `fin`.
    fn write_to(&self, dir: &Path, fin: &Path) -> Result<(), SnapshotError> {
        let name = fin
            .file_name()
            .map_or_else(|| "snapshot".into(), |n| n.to_string_lossy().into_owned());
        let fin = fin.to_path_buf();
        let tmp = dir.join(format!(".{name}.tmp"));
        let json = serde_json::to_vec_pretty(self).map_err(|e| SnapshotError::Format {
            path: fin.clone(),
            message: e.to_string(),
        })?;
        let result = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)
                .map_err(io("create", &tmp))?;
            f.write_all(&json).map_err(io("write", &tmp))?;
            f.sync_all().map_err(io("fsync", &tmp))?;
            std::fs::rename(&tmp, &fin).map_err(io("rename", &fin))?;
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io("fsync", dir))
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }

    /// Reads a snapshot file (never through a symlink).
    ///
    /// # Errors
    /// [`SnapshotError`].
    pub fn read(path: &Path) -> Result<Snapshot, SnapshotError> {
        let m = std::fs::symlink_metadata(path).map_err(io("read", path))?;
        if m.file_type().is_symlink() {
            return Err(SnapshotError::Symlink {
                path: path.to_path_buf(),
            });
        }
        // Bounded, regular files only (a FIFO hung, `/dev/zero` filled memory); a snapshot is a
        // few KiB.
        let bytes =
            common::files::read_regular(path, MAX_SNAPSHOT_BYTES).map_err(io("read", path))?;
        let s: Snapshot = serde_json::from_slice(&bytes).map_err(|e| SnapshotError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        if s.format != SNAPSHOT_FORMAT {
            return Err(SnapshotError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "format {} is not {SNAPSHOT_FORMAT}; use the connstorm version that wrote it",
                    s.format
                ),
            });
        }
        Ok(s)
    }

    /// The newest snapshot file in `dir` (by name, which sorts by creation time).
    ///
    /// # Errors
    /// [`SnapshotError::None`] when there is none; I/O errors.
    pub fn latest(dir: &Path) -> Result<PathBuf, SnapshotError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SnapshotError::None {
                    dir: dir.to_path_buf(),
                })
            }
            Err(e) => {
                return Err(SnapshotError::Io {
                    op: "read directory",
                    path: dir.to_path_buf(),
                    source: e,
                })
            }
        };
        entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("snapshot-") && n.ends_with(".json"))
            })
            .max()
            .ok_or_else(|| SnapshotError::None {
                dir: dir.to_path_buf(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Snapshot {
        let mut s = Snapshot::new(Path::new("/"), "test");
        s.saved.push(Saved::Sysctl {
            key: Key::parse("net.core.somaxconn").unwrap(),
            value: "4096".into(),
            by: None,
        });
        s.saved.push(Saved::IrqAffinity {
            irq: 36,
            cpus: "0-1".into(),
        });
        s
    }

    #[test]
    fn writes_atomically_with_mode_0600_and_reads_back() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("state");
        let s = sample();
        let p = s.write_atomic(&dir).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(Snapshot::read(&p).unwrap(), s);
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let p2 = s.write_atomic(&dir).unwrap();
        assert_eq!(Snapshot::latest(&dir).unwrap(), p2);
        assert!(!boot_id(Path::new("/")).is_empty());
    }

    #[test]
    fn refuses_symlinks_and_garbage() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(
            sample().write_atomic(&link),
            Err(SnapshotError::Symlink { .. })
        ));
        assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
        let p = sample().write_atomic(&real).unwrap();
        let flink = d.path().join("flink.json");
        std::os::unix::fs::symlink(&p, &flink).unwrap();
        assert!(matches!(
            Snapshot::read(&flink),
            Err(SnapshotError::Symlink { .. })
        ));
        let half = real.join("snapshot-half.json");
        let full = std::fs::read(&p).unwrap();
        std::fs::write(&half, &full[..full.len() / 2]).unwrap();
        assert!(matches!(
            Snapshot::read(&half),
            Err(SnapshotError::Format { .. })
        ));
        assert!(matches!(
            Snapshot::latest(&d.path().join("none")),
            Err(SnapshotError::None { .. })
        ));
    }

    #[test]
    fn failed_write_leaves_no_file() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("ro");
        std::fs::create_dir(&dir).unwrap();
        // A regular file where the directory should be: every step fails before a file appears.
        let file = d.path().join("plainfile");
        std::fs::write(&file, "x").unwrap();
        assert!(sample().write_atomic(&file).is_err());
        assert_eq!(std::fs::read(&file).unwrap(), b"x");
    }
}
