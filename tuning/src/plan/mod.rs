//! Everything that changes the host, each change saved first and undone by a revert: sysctl
//! presets (check → plan → apply → revert), IRQ affinity plans, and the A/B toggles of
//! `connstorm ab`.
//!
//! [`check`] compares a [`Preset`](crate::sysctl::Preset) with the host and gives one [`Row`]
//! per key with a [`Status`], and says which rows make apply refuse ([`Row::fatal`]). [`apply`]
//! changes only the rows that need it: it first saves every value it will change in a
//! [`Snapshot`] (written atomically), then writes key by key and reads each back. A write that
//! fails is treated as systemd-sysctl treats it (ENOENT: a warning; EPERM, EACCES, EROFS: a
//! note; the rest applies; `--strict` makes them errors; a `-` line ignores any failure); any
//! other failure restores the keys it already changed, in reverse order, and says so in
//! [`ApplyError::WriteFailed`]. The snapshot ends holding exactly what was written. [`revert`]
//! restores a snapshot; keys already at the saved value are left alone, so reverting twice is
//! harmless.
//!
//! In *netns-only* mode (`--netns`, or when the process is not in the initial network
//! namespace), global keys are [`Status::Refused`]: they would change the whole host
//! (net/core/sysctl_net_core.c, net/ipv4/sysctl_net_ipv4.c: tables registered only for the
//! initial namespace).
//!
//! Every read and write goes through [`SysctlIo`](crate::sysctl::SysctlIo) (the seam where
//! tests inject failures). Files, in the order of the job: `check` ([`check`]: one [`Row`] per
//! key),
//! `side_effects` (the keys the kernel also sets when a key is written), `contradictions`
//! (settings that do nothing because of another), `prediction` ([`Prediction`]: what apply
//! will do; [`Checked`]: all of it for one source), `workload` (values that hurt a
//! connection-rate workload, judged with the host's listeners and memory and the plan's other
//! lines), `snapshot` ([`Snapshot`]: the saved values), `apply` and `revert`; `irq` ([`plan_irqs`], [`apply_irqs`], [`restore_irqs`]: IRQ
//! → CPU plans through the same snapshots) and `toggle` ([`Toggle`]: a setting switched between
//! the A and B sides of interleaved trials, then restored).

mod apply;
mod check;
mod contradictions;
mod irq;
mod prediction;
mod revert;
mod side_effects;
mod snapshot;
mod toggle;
mod workload;

pub use apply::{apply, apply_with, ApplyError, ApplyOptions, ApplyReport};
pub(crate) use check::target_value;
pub use check::{check, CheckOptions, Row, Status};
pub use contradictions::{contradictions, Contradiction};
pub use irq::{apply_irqs, plan_irqs, restore_irqs, IrqError, IrqMove, IrqPlan};
pub use prediction::{Checked, Prediction};
pub use revert::{revert, RevertError, RevertReport};
pub use side_effects::{side_writes, SideWrite};
pub use snapshot::{
    boot_id, Saved, Snapshot, SnapshotError, DEFAULT_STATE_DIR, MAX_SNAPSHOT_BYTES, SNAPSHOT_FORMAT,
};
pub use toggle::{Toggle, ToggleError, ToggleOriginal, ToggleSide, SCHED_FEATURES};
