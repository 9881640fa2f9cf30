//! Apply: writes the rows that need it, after saving every value it will change in a
//! [`Snapshot`] (written atomically); key by key, each read back.
//!
//! A write that fails is treated as systemd-sysctl treats it (src/sysctl/sysctl.c
//! `sysctl_write_or_warn`; the table is in docs/tuning.md): on a `-` line any failure is
//! ignored; ENOENT (the key is gone) is skipped with a warning and EPERM, EACCES and EROFS (the
//! kernel or a read-only mount refuses) with a note, and the rest applies — unless
//! [`ApplyOptions::strict`], which makes them errors as `systemd-sysctl --strict` does. Any other
//! failure (EINVAL, EIO, ...) stops the apply: unlike systemd-sysctl, which goes on writing the
//! other keys and exits non-zero, connstorm then restores the keys it already changed, in
//! reverse order, and says so in [`ApplyError::WriteFailed`], so a failed apply leaves the host
//! as it was. When the apply ends, the snapshot is rewritten to hold exactly the keys that
//! were written (and what the kernel changed because of them), so `tune revert` restores those
//! and nothing else; an apply that wrote nothing leaves no snapshot.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Prediction, Row};
use crate::plan::{Saved, Snapshot, SnapshotError};
use crate::sysctl::{Key, SysctlIo, WriteFailure};

/// How [`apply_with`] treats a write that fails when it is made.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApplyOptions {
    /// ENOENT, EPERM, EACCES and EROFS are errors too (not skips), except on `-` lines
    /// (`--strict`, as `systemd-sysctl --strict`).
    pub strict: bool,
}

/// What [`apply`] did.
#[derive(Debug, Clone, Serialize)]
pub struct ApplyReport {
    /// The snapshot file (None when nothing was changed).
    pub snapshot: Option<PathBuf>,
    /// Keys changed, with the old value and the value read back after the write.
    pub changed: Vec<(Key, String, String)>,
    /// Rows not applied and why (refused, optional missing, manual, a write that failed and was
    /// skipped).
    pub skipped: Vec<(Key, String)>,
    /// Keys the kernel set as side effects of the writes, with the value before and the value read
    /// back after ([`SideWrite`](super::SideWrite)); saved in the snapshot, restored by revert.
    pub side_effects: Vec<(Key, String, String)>,
    /// Writes the kernel took but stored differently (a value rounded or clamped by its
    /// handler): key and what happened.
    pub adjusted: Vec<(Key, String)>,
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
    /// A write failed midway; what was changed before it was restored.
    #[error("writing {key} failed: {cause}; {}", write_failed_tail(.restored, .restore_failures, .snapshot.as_deref()))]
    WriteFailed {
        /// The key that failed.
        key: Key,
        /// Why.
        cause: String,
        /// Keys this apply had changed and wrote back to their saved value (the failed key is
        /// not among them: its write changed nothing).
        restored: Vec<Key>,
        /// Keys that could not be restored (run `connstorm tune revert`).
        restore_failures: Vec<(Key, String)>,
        /// The snapshot file with the old values, kept only when some key could not be restored
        /// (otherwise it is removed, so it cannot shadow an earlier apply's snapshot for
        /// `tune revert`).
        snapshot: Option<PathBuf>,
    },
}

/// The end of [`ApplyError::WriteFailed`]'s message: what was restored, or that nothing had been
/// changed, or what could not be restored and how to finish.
fn write_failed_tail(
    restored: &[Key],
    failures: &[(Key, String)],
    snapshot: Option<&Path>,
) -> String {
    let done = if restored.is_empty() && failures.is_empty() {
        "nothing was changed (no earlier write of this apply to undo)".to_string()
    } else {
        format!(
            "restored the {} key(s) this apply had changed ({})",
            restored.len(),
            restored
                .iter()
                .map(Key::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    match snapshot {
        None => format!("{done}; nothing is left changed (snapshot removed)"),
        Some(s) => format!(
            "{done}, but could NOT restore: {}; run `connstorm tune revert {}`",
            failures
                .iter()
                .map(|(k, e)| format!("{k} ({e})"))
                .collect::<Vec<_>>()
                .join(", "),
            s.display()
        ),
    }
}

/// Applies the rows that need a write with the default [`ApplyOptions`] (see
/// [`apply_with`]).
///
/// # Errors
/// As [`apply_with`].
pub fn apply(
    rows: &[Row],
    io: &mut dyn SysctlIo,
    root: &Path,
    state_dir: &Path,
    what: &str,
) -> Result<ApplyReport, ApplyError> {
    apply_with(rows, io, root, state_dir, what, ApplyOptions::default())
}

/// Applies the rows that need a write. `root` is used for the boot id; `state_dir` receives the
/// snapshot; `what` labels it; `opts` says how a failing write is treated (the module docs).
///
/// # Errors
/// [`ApplyError`]; on every error the host holds the values it had before the call (except the
/// keys listed in `restore_failures`).
pub fn apply_with(
    rows: &[Row],
    io: &mut dyn SysctlIo,
    root: &Path,
    state_dir: &Path,
    what: &str,
    opts: ApplyOptions,
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
            adjusted: Vec::new(),
        });
    }
    // Everything the writes may change, saved before the first one (a crash midway leaves a
    // snapshot that covers it); rewritten below to what was really written.
    let saved_of = |rows: &[&Row]| {
        let mut saved = Vec::new();
        for r in rows {
            for w in &r.side_effects {
                saved.push(Saved::Sysctl {
                    key: w.key.clone(),
                    value: w.from.clone(),
                    by: Some(w.by.clone()),
                });
            }
            saved.push(Saved::Sysctl {
                key: r.entry.key.clone(),
                value: r.current.clone().unwrap_or_default(),
                by: None,
            });
        }
        saved
    };
    let mut snap = Snapshot::new(root, what);
    snap.saved = saved_of(&todo);
    let snapshot = snap.write_atomic(state_dir)?;
    let mut changed: Vec<(Key, String, String)> = Vec::new();
    let mut written: Vec<&Row> = Vec::new();
    let mut adjusted: Vec<(Key, String)> = Vec::new();
    // What a failure must restore, in change order: side effects before the key that caused
    // them, so the reverse walk restores the written key first (its handler propagates).
    let mut undo: Vec<(Key, String)> = Vec::new();
    let mut side_effects: Vec<(Key, String, String)> = Vec::new();
    for r in &todo {
        let key = &r.entry.key;
        let old = r.current.clone().unwrap_or_default();
        if let Err(e) = io.write(key, &r.target) {
            // A sysctl write that fails changes nothing (one write(2) of the whole value).
            let cause = e.to_string();
            let skip = if r.entry.optional {
                Some(format!("write failed and was ignored (`-` line): {cause}"))
            } else {
                match (e.failure(), opts.strict) {
                    (WriteFailure::Missing, false) => Some(format!(
                        "warning: the key is gone (ENOENT), skipped and the rest applied, as systemd-sysctl does: {cause}"
                    )),
                    (WriteFailure::Refused, false) => Some(format!(
                        "the kernel refused the write (EPERM, EACCES or EROFS), skipped and the rest applied, as systemd-sysctl does: {cause}"
                    )),
                    _ => None,
                }
            };
            if let Some(why) = skip {
                skipped.push((key.clone(), why));
                continue;
            }
            let (restored, restore_failures) =
                restore(io, undo.iter().rev().map(|(k, old)| (k, old.as_str())));
            return Err(failed(key, cause, restored, restore_failures, snapshot));
        }
        for w in &r.side_effects {
            undo.push((w.key.clone(), w.from.clone()));
        }
        undo.push((key.clone(), old.clone()));
        let back = match io.read(key) {
            Ok(v) => v,
            Err(e) => {
                // Written but unreadable: restore everything, this key included.
                let (restored, restore_failures) =
                    restore(io, undo.iter().rev().map(|(k, old)| (k, old.as_str())));
                return Err(failed(
                    key,
                    format!("reading it back failed: {e}"),
                    restored,
                    restore_failures,
                    snapshot,
                ));
            }
        };
        if back != r.target {
            adjusted.push((
                key.clone(),
                format!(
                    "wrote {:?}, the kernel stores {back:?} (its handler rounds or clamps the value)",
                    r.target
                ),
            ));
        }
        changed.push((key.clone(), old, back));
        written.push(r);
        for w in &r.side_effects {
            let now = io
                .read(&w.key)
                .unwrap_or_else(|e| format!("unreadable: {e}"));
            if now != w.from {
                side_effects.push((w.key.clone(), w.from.clone(), now));
            }
        }
    }
    // The snapshot holds exactly what was written.
    let snapshot = if written.is_empty() {
        let _ = std::fs::remove_file(&snapshot);
        None
    } else {
        if written.len() != todo.len() {
            snap.saved = saved_of(&written);
            // If the rewrite fails the first snapshot stays: a superset, whose extra keys are
            // at their saved values, so `tune revert` still restores exactly the host's state.
            let _ = snap.rewrite_atomic(&snapshot);
        }
        Some(snapshot)
    };
    Ok(ApplyReport {
        snapshot,
        changed,
        skipped,
        side_effects,
        adjusted,
    })
}

/// The error of a write that failed midway, after `restore`: the snapshot is removed when
/// nothing is left changed (it must not become the one `tune revert` picks by default instead
/// of an earlier, successful apply's).
fn failed(
    key: &Key,
    cause: String,
    restored: Vec<Key>,
    restore_failures: Vec<(Key, String)>,
    snapshot: PathBuf,
) -> ApplyError {
    let snapshot = if restore_failures.is_empty() {
        let _ = std::fs::remove_file(&snapshot);
        None
    } else {
        Some(snapshot)
    };
    ApplyError::WriteFailed {
        key: key.clone(),
        cause,
        restored,
        restore_failures,
        snapshot,
    }
}

/// Writes saved values back where they differ. Returns (restored, failures): the keys written
/// back (a key already at its saved value is in neither list) and those that could not be.
pub(super) fn restore<'a>(
    io: &mut dyn SysctlIo,
    items: impl Iterator<Item = (&'a Key, &'a str)>,
) -> (Vec<Key>, Vec<(Key, String)>) {
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for (key, old) in items {
        if io.read(key).is_ok_and(|v| v == old) {
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
