//! Apply: writes the rows that need it, after saving every value it will change in a
//! [`Snapshot`] (written atomically); key by key, each read back. If a write or read-back fails,
//! it restores the keys it already changed, in reverse order, and says so in
//! [`ApplyError::WriteFailed`].

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Prediction, Row};
use crate::plan::{Saved, Snapshot, SnapshotError};
use crate::sysctl::{Key, SysctlIo};

/// What [`apply`] did.
#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    /// The snapshot file (None when nothing needed changing).
    pub snapshot: Option<PathBuf>,
    /// Keys changed, with old and new values.
    pub changed: Vec<(Key, String, String)>,
    /// Rows not applied and why (refused, optional missing, manual).
    pub skipped: Vec<(Key, String)>,
    /// Keys the kernel set as side effects of the writes, with the value before and the value read
    /// back after ([`SideWrite`](super::SideWrite)); saved in the snapshot, restored by revert.
    pub side_effects: Vec<(Key, String, String)>,
}

/// Why [`apply`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// Keys that must be applied cannot be (missing, read-only, unreadable); nothing was changed.
    #[error("nothing changed: {} key(s) cannot be applied: {}; fix or remove each as its reason says (a `-` prefix in sysctl.d files, or `optional = true`, turns a missing, read-only or rejected key into a skip; a lowered limit needs --allow-decrease)", .keys.len(), .keys.iter().map(|(k, why)| format!("{k} ({why})")).collect::<Vec<_>>().join("; "))]
    Blocked {
        /// Key and why.
        keys: Vec<(Key, String)>,
    },
    /// The snapshot could not be saved; nothing was changed.
    #[error("nothing changed: could not save the snapshot: {0}")]
    Snapshot(#[from] SnapshotError),
    /// A write or read-back failed midway; what was changed before it was restored.
    #[error("writing {key} failed: {cause}; restored {} key(s) already changed{}", .restored.len(), match .snapshot { None => "; nothing is left changed (snapshot removed)".to_string(), Some(s) => format!(", but could NOT restore: {}; run `connstorm tune revert {}`", .restore_failures.iter().map(|(k, e)| format!("{k} ({e})")).collect::<Vec<_>>().join(", "), s.display()) })]
    WriteFailed {
        /// The key that failed.
        key: Key,
        /// Why.
        cause: String,
        /// Keys restored to their saved value.
        restored: Vec<Key>,
        /// Keys that could not be restored (run `connstorm tune revert`).
        restore_failures: Vec<(Key, String)>,
        /// The snapshot file with the old values, kept only when some key could not be restored
        /// (otherwise it is removed, so it cannot shadow an earlier apply's snapshot for
        /// `tune revert`).
        snapshot: Option<PathBuf>,
    },
}

/// Applies the rows that need a write. `root` is used for the boot id; `state_dir` receives the
/// snapshot; `what` labels it.
///
/// # Errors
/// [`ApplyError`]; on every error the host holds the values it had before the call (except the
/// keys listed in `restore_failures`).
pub fn apply(
    rows: &[Row],
    io: &mut dyn SysctlIo,
    root: &Path,
    state_dir: &Path,
    what: &str,
) -> Result<ApplyReport, ApplyError> {
    let prediction = Prediction::of(rows);
    if !prediction.refusals.is_empty() {
        return Err(ApplyError::Blocked {
            keys: prediction.refusals,
        });
    }
    let mut skipped = prediction.skips;
    let todo: Vec<&Row> = rows.iter().filter(|r| r.status.needs_write()).collect();
    if todo.is_empty() {
        return Ok(ApplyReport {
            snapshot: None,
            changed: Vec::new(),
            skipped,
            side_effects: Vec::new(),
        });
    }
    let mut snap = Snapshot::new(root, what);
    for r in &todo {
        for w in &r.side_effects {
            snap.saved.push(Saved::Sysctl {
                key: w.key.clone(),
                value: w.from.clone(),
                by: Some(w.by.clone()),
            });
        }
        let value = r.current.clone().unwrap_or_default();
        snap.saved.push(Saved::Sysctl {
            key: r.entry.key.clone(),
            value,
            by: None,
        });
    }
    let snapshot = snap.write_atomic(state_dir)?;
    let mut changed: Vec<(Key, String, String)> = Vec::new();
    // What a failure must restore, in change order: side effects before the key that caused
    // them, so the reverse walk restores the written key first (its handler propagates).
    let mut undo: Vec<(Key, String)> = Vec::new();
    let mut side_effects: Vec<(Key, String, String)> = Vec::new();
    for r in &todo {
        let key = &r.entry.key;
        let old = r.current.clone().unwrap_or_default();
        let result = io
            .write(key, &r.target)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                let back = io.read(key).map_err(|e| e.to_string())?;
                if back == r.target {
                    Ok(())
                } else {
                    Err(format!(
                        "read back {back:?} after writing {:?} (the kernel adjusted it)",
                        r.target
                    ))
                }
            });
        if let (Err(cause), true) = (&result, r.entry.optional) {
            // A `-` line: systemd-sysctl ignores the failure; so does apply, once the key is
            // back at its old value.
            let (_, failed) = restore(io, std::iter::once((key, old.as_str())));
            if failed.is_empty() {
                skipped.push((
                    key.clone(),
                    format!("write failed and was ignored (`-` line): {cause}"),
                ));
                continue;
            }
        }
        // Record before checking so a half-applied key is restored too.
        for w in &r.side_effects {
            undo.push((w.key.clone(), w.from.clone()));
        }
        undo.push((key.clone(), old.clone()));
        changed.push((key.clone(), old, r.target.clone()));
        if let Err(cause) = result {
            let (restored, restore_failures) =
                restore(io, undo.iter().rev().map(|(k, old)| (k, old.as_str())));
            let snapshot = if restore_failures.is_empty() {
                // Nothing is left changed: this snapshot must not become the one `tune revert`
                // picks by default instead of an earlier, successful apply's.
                let _ = std::fs::remove_file(&snapshot);
                None
            } else {
                Some(snapshot)
            };
            return Err(ApplyError::WriteFailed {
                key: key.clone(),
                cause,
                restored,
                restore_failures,
                snapshot,
            });
        }
        for w in &r.side_effects {
            let now = io
                .read(&w.key)
                .unwrap_or_else(|e| format!("unreadable: {e}"));
            if now != w.from {
                side_effects.push((w.key.clone(), w.from.clone(), now));
            }
        }
    }
    Ok(ApplyReport {
        snapshot: Some(snapshot),
        changed,
        skipped,
        side_effects,
    })
}

/// Writes saved values back where they differ. Returns (restored, failures).
pub(super) fn restore<'a>(
    io: &mut dyn SysctlIo,
    items: impl Iterator<Item = (&'a Key, &'a str)>,
) -> (Vec<Key>, Vec<(Key, String)>) {
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (key, old) in items {
        if io.read(key).is_ok_and(|v| v == old) {
            ok.push(key.clone());
            continue;
        }
        match io.write(key, old).and_then(|()| io.read(key)) {
            Ok(v) if v == old => ok.push(key.clone()),
            Ok(v) => failed.push((key.clone(), format!("reads {v:?}, expected {old:?}"))),
            Err(e) => failed.push((key.clone(), e.to_string())),
        }
    }
    (ok, failed)
}
