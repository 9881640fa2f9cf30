//! The sides of `connstorm ab`: what distinguishes A from B (built-in toggles,
//! [`tuning::plan::Toggle`], and setup shell commands), what each side is called, how a side is set
//! before its trial, and how the toggles are put back ([`Restore`]) when the run ends.
//!
//! The trials themselves are `bench` runs ([`crate::run`]); `super::run` interleaves them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use common::error::BadInput;
use tuning::plan::{Toggle, ToggleOriginal as Original, ToggleSide as Side};

/// What distinguishes A from B.
#[derive(Debug, Clone, Copy)]
pub struct Sides<'a> {
    /// Built-in toggles (A = the first value, B = the second).
    pub toggles: &'a [Toggle],
    /// Shell command (`sh -c`) run before every A trial.
    pub a_setup: Option<&'a str>,
    /// Shell command run before every B trial.
    pub b_setup: Option<&'a str>,
    /// `--label-a`, `--label-b`: the sides' names, instead of what differs.
    pub labels: (Option<&'a str>, Option<&'a str>),
}

impl Sides<'_> {
    /// Refuses sides nothing distinguishes; (with `netns`: every trial in fresh namespaces) a
    /// toggle of a per-namespace sysctl, which those namespaces never see; and (`child_netns`:
    /// this process runs in a network namespace other than the host's, e.g. `ip netns exec`) a
    /// toggle of a host-wide setting — a global sysctl such as `fs.file-max`, or a scheduler
    /// feature — which would change the whole host from a place that looks isolated, as `tune
    /// apply --netns` refuses global keys.
    ///
    /// # Errors
    /// Bad input saying what to give instead.
    pub fn check(&self, netns: bool, child_netns: bool) -> Result<(), BadInput> {
        if child_netns {
            for t in self.toggles {
                let (global, what) = match t {
                    Toggle::Sysctl { key, .. } => (
                        key.scope() == tuning::sysctl::Scope::Global,
                        format!("sysctl:{}", key.as_str()),
                    ),
                    Toggle::SchedFeature { name } => (true, format!("sched-feature:{name}")),
                };
                if global {
                    return Err(BadInput(format!(
                        "--toggle {what}: a host-wide setting, and this process runs in a child network namespace: changing it here would change the whole host; run `connstorm ab` from the host's namespace, or toggle a per-namespace sysctl (net.*)"
                    )));
                }
            }
        }
        if self.a_setup.is_none() && self.b_setup.is_none() && self.toggles.is_empty() {
            return Err(BadInput(
                "nothing distinguishes A from B: give --a-setup/--b-setup commands or a --toggle (e.g. --toggle sysctl:net.ipv4.tcp_timestamps=1,0)".into(),
            ));
        }
        if netns {
            for t in self.toggles {
                if let Toggle::Sysctl { key, .. } = t {
                    if key.scope() == tuning::sysctl::Scope::Netns {
                        return Err(BadInput(format!(
                            "--toggle {}: this sysctl is per network namespace, and --netns runs every trial in fresh namespaces that never see it; drop --netns, or change it with --a-setup/--b-setup inside the namespaces",
                            key.as_str()
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    fn setup(&self, side: Side) -> Option<&str> {
        if side == Side::A {
            self.a_setup
        } else {
            self.b_setup
        }
    }

    /// What a side is called: its `--label-a`/`--label-b`; else its toggle values and setup
    /// command, e.g. `net.ipv4.tcp_timestamps=1` or `setup: ethtool -K eth0 gro off`; `A`/`B`
    /// when nothing names it.
    pub fn name(&self, side: Side) -> String {
        let letter = if side == Side::A { "A" } else { "B" };
        let label = if side == Side::A {
            self.labels.0
        } else {
            self.labels.1
        };
        if let Some(l) = label.filter(|l| !l.is_empty()) {
            return l.to_string();
        }
        let raw = |side: Side| {
            let mut parts: Vec<String> = self.toggles.iter().map(|t| t.describe(side)).collect();
            if let Some(c) = self.setup(side) {
                parts.push(format!("setup: {c}"));
            }
            parts.join(", ")
        };
        let (mine, other) = (raw(side), raw(side.other()));
        if mine.is_empty() {
            letter.to_string()
        } else if mine == other {
            // An A/A run (the same setup on both sides, to see the noise): the sides must still
            // be told apart (both were named `setup: true`).
            format!("{letter} ({mine})")
        } else {
            mine
        }
    }

    /// A trial's label: `[LABEL-]<side name>#<trial>`, so a later `connstorm compare` names the
    /// sides the same way. A label that would pass [`results::record::MAX_LABEL_BYTES`] (a long
    /// setup command) is cut, and the cut one ends in `…[HASH]` (16 hex digits of the whole
    /// name) so that sides that differ only past the cut keep different names.
    pub fn trial_label(&self, label: &str, side: Side, trial: u32) -> String {
        let base = if label.is_empty() {
            String::new()
        } else {
            format!("{label}-")
        };
        let name = format!("{base}{}", self.name(side));
        let suffix = format!("#{trial}");
        let max = results::record::MAX_LABEL_BYTES;
        if name.len() + suffix.len() <= max {
            return name + &suffix;
        }
        let hash = {
            use std::hash::{Hash as _, Hasher as _};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            name.hash(&mut h);
            format!("…[{:016x}]", h.finish())
        };
        // Room for any trial number ("#" and the 10 digits of a u32), so a side's trials are
        // cut at the same place and share their name.
        let mut cut = max - 11 - hash.len();
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}{hash}{suffix}", &name[..cut])
    }

    /// Sets `side` under the host root `root`: every toggle to its value, then the side's setup
    /// command.
    ///
    /// # Errors
    /// The toggle that could not be set, or the setup command that failed (`A setup`, `B
    /// setup` in the context).
    pub fn set(&self, root: &Path, side: Side) -> anyhow::Result<()> {
        for t in self.toggles {
            t.set(root, side)
                .with_context(|| format!("set {}", t.describe(side)))?;
        }
        if let Some(cmd) = self.setup(side) {
            let name = if side == Side::A { "A" } else { "B" };
            shell(cmd).with_context(|| format!("{name} setup"))?;
        }
        Ok(())
    }
}

/// Puts the toggles back to the values they had before the first trial, newest first, then
/// runs the `--restore` command. It does nothing on drop: the caller runs [`Restore::run`] (and
/// prints what failed) on every way out.
#[derive(Debug)]
pub struct Restore {
    root: PathBuf,
    saved: Vec<(Toggle, Original)>,
    command: Option<String>,
}

impl Restore {
    /// Reads every toggle's original value under `root` before anything is changed, and
    /// checks that each toggle's A and B values can be set ([`Toggle::check`]), so a value the
    /// key does not take is refused before the first trial, not after it.
    ///
    /// # Errors
    /// Bad input when a toggle's current value cannot be read, its key is read-only, or a value
    /// is one the kernel would refuse (`--toggle: ...`, naming the key and the value).
    pub fn read(
        root: &Path,
        toggles: &[Toggle],
        command: Option<String>,
    ) -> Result<Restore, BadInput> {
        let mut saved = Vec::new();
        for t in toggles {
            let bad = |e: tuning::plan::ToggleError| BadInput(format!("--toggle: {e}"));
            let orig = t.read(root).map_err(bad)?;
            t.check(root, &orig).map_err(bad)?;
            saved.push((t.clone(), orig));
        }
        Ok(Restore {
            root: root.to_path_buf(),
            saved,
            command,
        })
    }

    /// The toggles with their original values (for the undo action of a forced exit).
    pub fn saved(&self) -> &[(Toggle, Original)] {
        &self.saved
    }

    /// Restores every toggle and runs the restore command, once (later calls do nothing);
    /// returns one line per failure.
    pub fn run(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        for (t, orig) in self.saved.drain(..).rev() {
            if let Err(e) = t.restore(&self.root, &orig) {
                errors.push(format!("could not restore {}: {e}", t.with_original(&orig)));
            }
        }
        if let Some(cmd) = self.command.take() {
            if let Err(e) = shell(&cmd) {
                errors.push(format!("--restore command failed: {e:#}"));
            }
        }
        errors
    }
}

/// Runs `cmd` with `sh -c`, its standard output sent to our standard error: stdout carries
/// only the comparison (`ab --format json` stayed parseable only with silent setups).
///
/// # Errors
/// When `sh` cannot start or the command exits non-zero (its status in the message).
pub fn shell(cmd: &str) -> anyhow::Result<()> {
    let status = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdout(std::io::stderr())
        .status()
        .with_context(|| format!("run `{cmd}`"))?;
    if !status.success() {
        bail!("`{cmd}` exited with {status}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_label_past_the_record_bound_is_cut_and_sides_stay_apart() {
        // Setup commands of 3,000 bytes that differ only at their ends.
        let long = "ethtool -K lo gro off; ".repeat(130);
        let (a, b) = (format!("{long}echo A"), format!("{long}echo B"));
        let s = Sides {
            toggles: &[],
            a_setup: Some(&a),
            b_setup: Some(&b),
            labels: (None, None),
        };
        let (la, lb) = (
            s.trial_label("run", Side::A, 12),
            s.trial_label("run", Side::B, 12),
        );
        let max = results::record::MAX_LABEL_BYTES;
        assert!(
            la.len() <= max && lb.len() <= max,
            "{} {}",
            la.len(),
            lb.len()
        );
        assert!(la.starts_with("run-setup: ethtool -K lo gro off;"), "{la}");
        assert!(la.ends_with("]#12") && la.contains("…["), "{la}");
        assert_ne!(la, lb);
        // The same side's trials share everything but the trial number.
        assert_eq!(
            s.trial_label("run", Side::A, 3).trim_end_matches("#3"),
            la.trim_end_matches("#12")
        );
        // Short ones are untouched.
        let short = Sides {
            toggles: &[],
            a_setup: Some("true"),
            b_setup: Some("false"),
            labels: (None, None),
        };
        assert_eq!(short.trial_label("x", Side::A, 1), "x-setup: true#1");
    }

    #[test]
    fn sides_are_named_by_what_differs() {
        let toggles = [Toggle::parse("sysctl:net.ipv4.tcp_timestamps=1,0").unwrap()];
        let s = Sides {
            toggles: &toggles,
            a_setup: None,
            b_setup: Some("true"),
            labels: (None, None),
        };
        assert_eq!(s.name(Side::A), "net.ipv4.tcp_timestamps=1");
        assert_eq!(s.name(Side::B), "net.ipv4.tcp_timestamps=0, setup: true");
        assert_eq!(
            s.trial_label("x", Side::A, 3),
            "x-net.ipv4.tcp_timestamps=1#3"
        );
        let bare = Sides {
            toggles: &[],
            a_setup: Some("a"),
            b_setup: None,
            labels: (None, None),
        };
        assert_eq!(bare.name(Side::B), "B");
        assert_eq!(bare.trial_label("", Side::B, 1), "B#1");
        // An A/A run: the same setup on both sides is still two names.
        let same = Sides {
            toggles: &[],
            a_setup: Some("true"),
            b_setup: Some("true"),
            labels: (None, None),
        };
        assert_eq!(same.name(Side::A), "A (setup: true)");
        // --label-a/--label-b name the sides (and their trials) instead.
        let named = Sides {
            labels: (Some("rx-usecs-0"), Some("rx-usecs-50")),
            ..same
        };
        assert_eq!(named.name(Side::B), "rx-usecs-50");
        assert_eq!(named.trial_label("run", Side::A, 2), "run-rx-usecs-0#2");
        assert_eq!(same.name(Side::B), "B (setup: true)");
        let none = Sides {
            toggles: &[],
            a_setup: None,
            b_setup: None,
            labels: (None, None),
        };
        assert!(none
            .check(false, false)
            .unwrap_err()
            .0
            .contains("nothing distinguishes"));
        assert!(s
            .check(true, false)
            .unwrap_err()
            .0
            .contains("per network namespace"));
        assert_eq!(s.check(false, false), Ok(()));
        // From a child network namespace a per-namespace key may be toggled, a host-wide one not.
        assert_eq!(s.check(false, true), Ok(()));
        let host_wide = [
            Toggle::parse("sysctl:fs.file-max=100000,200000").unwrap(),
            Toggle::parse("sched-feature:TTWU_QUEUE").unwrap(),
        ];
        for t in host_wide {
            let one = [t];
            let g = Sides {
                toggles: &one,
                a_setup: None,
                b_setup: None,
                labels: (None, None),
            };
            let e = g.check(false, true).unwrap_err().0;
            assert!(e.contains("host-wide setting"), "{e}");
            assert_eq!(
                g.check(false, false),
                Ok(()),
                "on the host it may be toggled"
            );
        }
    }

    #[test]
    fn a_failing_restore_command_is_reported_once() {
        let mut r = Restore::read(Path::new("/"), &[], Some("exit 3".into())).unwrap();
        let errors = r.run();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("--restore command failed: `exit 3` exited with"));
        assert!(r.run().is_empty(), "runs once");
    }
}
