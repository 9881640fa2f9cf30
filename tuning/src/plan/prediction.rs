//! What `apply --yes` will do with the checked rows ([`Prediction`]), and one source checked
//! against the host with all the plan shows ([`Checked`]).

use serde::Serialize;

use super::{check, contradictions, CheckOptions, Contradiction, Row, SideWrite, Status};
use crate::sysctl::Preset;
use crate::sysctl::{Key, SysctlIo};

/// What `apply --yes` will do with a set of rows: the same function decides for the dry run
/// and for the real apply, so the plan predicts apply.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Prediction {
    /// Keys apply writes, with the value.
    pub writes: Vec<(Key, String)>,
    /// Keys apply leaves alone, with why.
    pub skips: Vec<(Key, String)>,
    /// Keys that make apply refuse everything, with why (nothing is changed then).
    pub refusals: Vec<(Key, String)>,
    /// Keys the kernel changes because of the writes (the [`Row::side_effects`] that
    /// [`SideWrite::changes`]); the snapshot saves them and revert restores them.
    pub side_effects: Vec<SideWrite>,
}

impl Prediction {
    /// The prediction for `rows`.
    pub fn of(rows: &[Row]) -> Prediction {
        let mut p = Prediction::default();
        for r in rows {
            let k = r.entry.key.clone();
            if r.fatal {
                p.refusals
                    .push((k, format!("{}: {}", r.status.label(), r.note)));
            } else if r.status.needs_write() {
                p.writes.push((k, r.target.clone()));
                p.side_effects
                    .extend(r.side_effects.iter().filter(|w| w.changes()).cloned());
            } else if r.status != Status::Ok {
                p.skips
                    .push((k, format!("{}: {}", r.status.label(), r.note)));
            }
        }
        p
    }
}

/// A source checked against the host: what `tune check` and the plan of `tune apply` show.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// One row per key ([`check`]).
    pub rows: Vec<Row>,
    /// Settings that do nothing because of another ([`contradictions`]).
    pub contradictions: Vec<Contradiction>,
    /// What `apply --yes` will do with the rows ([`Prediction::of`]).
    pub prediction: Prediction,
}

impl Checked {
    /// Checks `preset` through `io` with `opts`, then its contradictions and the prediction.
    pub fn of(preset: &Preset, io: &dyn SysctlIo, opts: CheckOptions) -> Checked {
        let rows = check(preset, io, opts);
        let contradictions = contradictions(&rows, io);
        let prediction = Prediction::of(&rows);
        Checked {
            rows,
            contradictions,
            prediction,
        }
    }

    /// True when `check --strict` fails: a row is off or a setting contradicts another.
    pub fn off(&self) -> bool {
        self.rows.iter().any(|r| r.status.is_off()) || !self.contradictions.is_empty()
    }
}
