//! Revert: restores a snapshot's sysctls; keys already at the saved value are left alone, so
//! reverting twice is harmless.

use std::path::Path;

use serde::Serialize;

use super::apply::restore;
use crate::plan::{Saved, Snapshot};
use crate::sysctl::{Key, Scope, SysctlIo};

/// Why a revert was refused or incomplete.
#[derive(Debug, thiserror::Error)]
pub enum RevertError {
    /// Snapshot from another boot.
    #[error("snapshot was taken in boot {snapshot} but this is boot {current}: its values are stale (reboots reset sysctls); pass --force to restore them anyway")]
    OtherBoot {
        /// boot_id in the snapshot.
        snapshot: String,
        /// boot_id now.
        current: String,
    },
    /// Snapshot from another network namespace.
    #[error("snapshot belongs to network namespace {snapshot} but this process is in {current}; run revert in the same namespace (--netns), or pass --force")]
    OtherNetns {
        /// Namespace in the snapshot.
        snapshot: String,
        /// Namespace now.
        current: String,
    },
    /// Some values could not be restored.
    #[error("could not restore: {}", .0.iter().map(|(k, e)| format!("{k} ({e})")).collect::<Vec<_>>().join(", "))]
    Incomplete(Vec<(String, String)>),
}

/// What [`revert`] did: keys written back, and keys already at their saved value.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RevertReport {
    /// Restored (were different).
    pub restored: Vec<String>,
    /// Already at the saved value.
    pub unchanged: Vec<String>,
}

/// Restores the sysctls of a snapshot (IRQ entries are restored by `irq::revert`).
///
/// # Errors
/// [`RevertError`]: another boot or namespace (unless `force`), or values that could not be
/// written (the others are still restored).
pub fn revert(
    snap: &Snapshot,
    io: &mut dyn SysctlIo,
    root: &Path,
    force: bool,
) -> Result<RevertReport, RevertError> {
    let current = crate::plan::boot_id(root);
    if !force && snap.boot_id != current {
        return Err(RevertError::OtherBoot {
            snapshot: snap.boot_id.clone(),
            current,
        });
    }
    if let (false, Some(s), Some(c)) = (force, &snap.netns, crate::host::current_netns()) {
        if *s != c
            && snap
                .saved
                .iter()
                .any(|x| matches!(x, Saved::Sysctl { key, .. } if key.scope() == Scope::Netns))
        {
            return Err(RevertError::OtherNetns {
                snapshot: s.clone(),
                current: c,
            });
        }
    }
    let mut report = RevertReport::default();
    let mut failures = Vec::new();
    for s in snap.saved.iter().rev() {
        let Saved::Sysctl { key, value, .. } = s else {
            continue;
        };
        if io.read(key).is_ok_and(|v| v == *value) {
            report.unchanged.push(key.to_string());
            continue;
        }
        let (ok, failed) = restore(io, std::iter::once((key, value.as_str())));
        report.restored.extend(ok.iter().map(Key::to_string));
        failures.extend(failed.into_iter().map(|(k, e)| (k.to_string(), e)));
    }
    if failures.is_empty() {
        Ok(report)
    } else {
        Err(RevertError::Incomplete(failures))
    }
}
