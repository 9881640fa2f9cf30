//! A/B toggles for `connstorm ab`: a host setting with an A value and a B value, switched between
//! interleaved trials and restored to what it was before the first switch.
//!
//! - `sysctl:KEY=VA,VB` — a sysctl (validated like every preset key; see [`crate::sysctl`]).
//! - `sched-feature:NAME` — a scheduler feature in `/sys/kernel/debug/sched/features`
//!   (kernel/sched/debug.c since 5.13; before that `/sys/kernel/debug/sched_features`): A = enabled
//!   (`NAME` written), B = disabled (`NO_NAME` written). The file lists every feature, disabled ones
//!   with a `NO_` prefix. Needs debugfs mounted and root; some kernels or VMs answer EPERM.
//!
//! Every reader and writer takes the host root (default `/`) so tests run on fixture trees.

use std::path::{Path, PathBuf};

use crate::sysctl::{self, Key};

/// Where scheduler features live under the root.
pub const SCHED_FEATURES: &str = "sys/kernel/debug/sched/features";

/// A toggle that could not be parsed, read or set.
#[derive(Debug, thiserror::Error)]
pub enum ToggleError {
    /// The toggle text has the wrong shape.
    #[error("invalid toggle {text:?}: {why}; write `sysctl:KEY=VA,VB` (e.g. `sysctl:net.ipv4.tcp_timestamps=1,0`) or `sched-feature:NAME` (e.g. `sched-feature:TTWU_QUEUE`)")]
    Syntax {
        /// What was given.
        text: String,
        /// What is wrong.
        why: String,
    },
    /// A sysctl problem (bad key, missing, read-only, write refused).
    #[error(transparent)]
    Sysctl(#[from] sysctl::SysctlError),
    /// The key is not a valid sysctl name.
    #[error(transparent)]
    Key(#[from] sysctl::KeyError),
    /// The sched features file cannot be read or written.
    #[error("{op} {path}: {source}; scheduler features need debugfs mounted at /sys/kernel/debug and root (some VMs refuse even root)")]
    SchedFeatures {
        /// "read" or "write".
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A sysctl toggle's value the kernel would refuse (checked before any trial, with the
    /// rules `tune check` uses: the rules table `rejects`).
    #[error("sysctl {key}: the {side} value {value:?} is not one it takes: {why}")]
    Value {
        /// The key.
        key: Key,
        /// `A` or `B`.
        side: char,
        /// The value given.
        value: String,
        /// What the key takes, and its source.
        why: String,
        /// The key's value now.
        current: String,
    },
    /// The feature does not exist on this kernel.
    #[error("scheduler feature {name} is not in {path}; pick one the file lists")]
    UnknownFeature {
        /// The feature.
        name: String,
        /// The file.
        path: PathBuf,
    },
}

/// Which side of an A/B comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToggleSide {
    /// The first value.
    A,
    /// The second value.
    B,
}

impl ToggleSide {
    /// The other side.
    pub fn other(self) -> ToggleSide {
        match self {
            ToggleSide::A => ToggleSide::B,
            ToggleSide::B => ToggleSide::A,
        }
    }
}

/// One toggle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Toggle {
    /// A sysctl with its A and B values.
    Sysctl {
        /// The key.
        key: Key,
        /// Value for side A.
        a: String,
        /// Value for side B.
        b: String,
    },
    /// A scheduler feature: on for A, off for B.
    SchedFeature {
        /// Feature name without `NO_`.
        name: String,
    },
}

/// The value a toggle had before the first switch, to restore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToggleOriginal {
    /// A sysctl's value.
    Sysctl(String),
    /// Whether the feature was enabled.
    SchedFeature(bool),
}

impl Toggle {
    /// Parses `sysctl:KEY=VA,VB` or `sched-feature:NAME`.
    ///
    /// # Errors
    /// [`ToggleError::Syntax`] or a key error.
    pub fn parse(text: &str) -> Result<Toggle, ToggleError> {
        let syntax = |why: &str| ToggleError::Syntax {
            text: text.to_string(),
            why: why.to_string(),
        };
        if let Some(rest) = text.strip_prefix("sysctl:") {
            let (key, values) = rest
                .split_once('=')
                .ok_or_else(|| syntax("no `=` between key and values"))?;
            let (a, b) = values
                .split_once(',')
                .ok_or_else(|| syntax("give two values separated by `,`"))?;
            if a.trim().is_empty() || b.trim().is_empty() {
                return Err(syntax("a value is empty"));
            }
            Ok(Toggle::Sysctl {
                key: Key::parse(key.trim())?,
                a: a.trim().to_string(),
                b: b.trim().to_string(),
            })
        } else if let Some(name) = text.strip_prefix("sched-feature:") {
            let name = name.trim().trim_start_matches("NO_");
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            {
                return Err(syntax(
                    "feature names are upper-case letters, digits and `_`",
                ));
            }
            Ok(Toggle::SchedFeature {
                name: name.to_string(),
            })
        } else {
            Err(syntax("unknown toggle kind"))
        }
    }

    /// The setting with the value it is restored to: `net.ipv4.tcp_timestamps=1`,
    /// `sched feature TTWU_QUEUE on`.
    pub fn with_original(&self, orig: &ToggleOriginal) -> String {
        match (self, orig) {
            (Toggle::Sysctl { key, .. }, ToggleOriginal::Sysctl(v)) => {
                format!("{}={v}", key.as_str())
            }
            (Toggle::SchedFeature { name }, ToggleOriginal::SchedFeature(on)) => {
                format!("sched feature {name} {}", if *on { "on" } else { "off" })
            }
            (Toggle::Sysctl { key, .. }, _) => key.as_str().to_string(),
            (Toggle::SchedFeature { name }, _) => format!("sched feature {name}"),
        }
    }

    /// A short description: `net.ipv4.tcp_timestamps=1|0` or `sched TTWU_QUEUE on|off`.
    pub fn describe(&self, side: ToggleSide) -> String {
        match (self, side) {
            (Toggle::Sysctl { key, a, .. }, ToggleSide::A) => format!("{}={a}", key.as_str()),
            (Toggle::Sysctl { key, b, .. }, ToggleSide::B) => format!("{}={b}", key.as_str()),
            (Toggle::SchedFeature { name }, ToggleSide::A) => format!("sched feature {name} on"),
            (Toggle::SchedFeature { name }, ToggleSide::B) => format!("sched feature {name} off"),
        }
    }

    /// Reads the current state (to restore later).
    ///
    /// # Errors
    /// When the setting cannot be read or does not exist.
    pub fn read(&self, root: &Path) -> Result<ToggleOriginal, ToggleError> {
        match self {
            Toggle::Sysctl { key, .. } => Ok(ToggleOriginal::Sysctl(sysctl::read(root, key)?)),
            Toggle::SchedFeature { name } => {
                let path = root.join(SCHED_FEATURES);
                let text = std::fs::read_to_string(&path).map_err(|source| {
                    ToggleError::SchedFeatures {
                        op: "read",
                        path: path.clone(),
                        source,
                    }
                })?;
                let no = format!("NO_{name}");
                for f in text.split_whitespace() {
                    if f == name {
                        return Ok(ToggleOriginal::SchedFeature(true));
                    }
                    if f == no {
                        return Ok(ToggleOriginal::SchedFeature(false));
                    }
                }
                Err(ToggleError::UnknownFeature {
                    name: name.clone(),
                    path,
                })
            }
        }
    }

    /// Refuses, before anything is changed, a toggle whose values cannot be set: a read-only
    /// sysctl, or an A or B value the kernel would answer with EINVAL (the rules table `rejects`
    /// against `original`, the value now: a key holding numbers takes only numbers; the
    /// ranges the kernel enforces). Scheduler features take on and off alone: always `Ok`.
    ///
    /// # Errors
    /// [`ToggleError::Value`] naming the key, the side, the value and what the key takes, or
    /// [`sysctl::SysctlError::ReadOnly`].
    pub fn check(&self, root: &Path, original: &ToggleOriginal) -> Result<(), ToggleError> {
        let (Toggle::Sysctl { key, a, b }, ToggleOriginal::Sysctl(current)) = (self, original)
        else {
            return Ok(());
        };
        if !sysctl::writable(root, key) {
            return Err(sysctl::SysctlError::ReadOnly {
                key: key.clone(),
                path: key.path(root),
            }
            .into());
        }
        let unprivileged_port_start = Key::parse("net.ipv4.ip_unprivileged_port_start")
            .ok()
            .and_then(|k| sysctl::read(root, &k).ok())
            .and_then(|v| v.parse().ok());
        for (side, value) in [('A', a), ('B', b)] {
            let value = sysctl::normalize(value);
            if let Some(why) =
                crate::sysctl::rules::rejects(key, &value, Some(current), unprivileged_port_start)
            {
                return Err(ToggleError::Value {
                    key: key.clone(),
                    side,
                    value,
                    why,
                    current: current.clone(),
                });
            }
        }
        Ok(())
    }

    /// Sets side A or B.
    ///
    /// # Errors
    /// When the write fails.
    pub fn set(&self, root: &Path, side: ToggleSide) -> Result<(), ToggleError> {
        match self {
            Toggle::Sysctl { key, a, b } => {
                let v = if side == ToggleSide::A { a } else { b };
                Ok(sysctl::write(root, key, v)?)
            }
            Toggle::SchedFeature { .. } => self.set_feature(root, side == ToggleSide::A),
        }
    }

    fn set_feature(&self, root: &Path, on: bool) -> Result<(), ToggleError> {
        let Toggle::SchedFeature { name } = self else {
            return Ok(());
        };
        let path = root.join(SCHED_FEATURES);
        let word = if on {
            name.clone()
        } else {
            format!("NO_{name}")
        };
        std::fs::write(&path, word).map_err(|source| ToggleError::SchedFeatures {
            op: "write",
            path,
            source,
        })
    }

    /// Puts back what [`Toggle::read`] returned.
    ///
    /// # Errors
    /// When the write fails.
    pub fn restore(&self, root: &Path, original: &ToggleOriginal) -> Result<(), ToggleError> {
        match (self, original) {
            (Toggle::Sysctl { key, .. }, ToggleOriginal::Sysctl(v)) => {
                Ok(sysctl::write(root, key, v)?)
            }
            (Toggle::SchedFeature { .. }, ToggleOriginal::SchedFeature(on)) => {
                self.set_feature(root, *on)
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_kinds_and_refuses_garbage() {
        let t = Toggle::parse("sysctl:net.ipv4.tcp_timestamps=1,0").unwrap();
        assert_eq!(t.describe(ToggleSide::B), "net.ipv4.tcp_timestamps=0");
        let t = Toggle::parse("sched-feature:NO_TTWU_QUEUE").unwrap();
        assert_eq!(
            t,
            Toggle::SchedFeature {
                name: "TTWU_QUEUE".into()
            }
        );
        for bad in [
            "sysctl:net.ipv4.x",
            "sysctl:net.ipv4.x=1",
            "sysctl:../etc/passwd=1,2",
            "sched-feature:bad name",
            "knob:x",
        ] {
            assert!(Toggle::parse(bad).is_err(), "{bad}");
        }
    }

    /// Finding: `--toggle sysctl:net.ipv4.tcp_timestamps=1,banana` ran trial A1 before the
    /// kernel refused "banana"; a value the key does not take is refused before anything runs.
    #[test]
    fn a_toggle_value_the_key_does_not_take_is_refused_before_any_trial() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::parse("net.ipv4.tcp_timestamps").unwrap();
        let path = key.path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "1\n").unwrap();
        let t = Toggle::parse("sysctl:net.ipv4.tcp_timestamps=1,banana").unwrap();
        let orig = t.read(dir.path()).unwrap();
        let e = t.check(dir.path(), &orig).unwrap_err();
        assert!(matches!(e, ToggleError::Value { side: 'B', .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "sysctl net.ipv4.tcp_timestamps: the B value \"banana\" is not one it takes: the kernel parses numbers here (now \"1\"); \"banana\" gets EINVAL"
        );
        let range = Toggle::parse("sysctl:net.ipv4.tcp_tw_reuse=7,1").unwrap();
        let p = Key::parse("net.ipv4.tcp_tw_reuse")
            .unwrap()
            .path(dir.path());
        std::fs::write(&p, "2").unwrap();
        let e = range.check(dir.path(), &range.read(dir.path()).unwrap());
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("A value \"7\" is not one it takes: 7 is outside 0..=2"),);
        let fine = Toggle::parse("sysctl:net.ipv4.tcp_timestamps=0,1").unwrap();
        assert!(fine.check(dir.path(), &orig).is_ok());
        // A write that fails anyway names the key and the value (here: the file is a
        // directory, EISDIR).
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let e = t.set(dir.path(), ToggleSide::B).unwrap_err().to_string();
        assert!(
            e.starts_with("write \"banana\" to sysctl net.ipv4.tcp_timestamps ("),
            "{e}"
        );
    }

    #[test]
    fn sched_feature_round_trip_on_a_fixture() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SCHED_FEATURES);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "GENTLE_FAIR_SLEEPERS NO_TTWU_QUEUE HRTICK\n").unwrap();
        let t = Toggle::parse("sched-feature:TTWU_QUEUE").unwrap();
        assert_eq!(
            t.read(dir.path()).unwrap(),
            ToggleOriginal::SchedFeature(false)
        );
        t.set(dir.path(), ToggleSide::A).unwrap();
        // A real kernel parses the word and updates the list; the fixture just keeps the last write.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "TTWU_QUEUE");
        t.restore(dir.path(), &ToggleOriginal::SchedFeature(false))
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "NO_TTWU_QUEUE");
        let missing = Toggle::parse("sched-feature:NOPE").unwrap();
        std::fs::write(&path, "HRTICK").unwrap();
        assert!(matches!(
            missing.read(dir.path()),
            Err(ToggleError::UnknownFeature { .. })
        ));
    }
}
