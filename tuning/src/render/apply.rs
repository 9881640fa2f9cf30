//! The commands and reports around applying: the `tune apply ... --yes` command a plan names,
//! the undo command, what apply and revert did, the refusal error, notes on `--system` files.

use std::path::Path;

use common::numfmt::count;

use crate::plan::{ApplyReport, Prediction, RevertReport};
use crate::sysctl::SystemFile;

/// `w` as one shell word: as-is when it holds only safe characters, else single-quoted.
fn shell_word(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// The `connstorm tune apply ... --yes` command that carries out a plan, as it must be typed:
/// `source` are the source arguments (`["--preset", "c1m-server"]`, `["--file", "a.conf"]`,
/// `["--system"]`), words with shell specials single-quoted.
pub fn apply_command(source: &[String], netns: Option<&str>, allow_decrease: bool) -> String {
    apply_command_strict(source, netns, allow_decrease, false)
}

/// [`apply_command`] with `--strict` when `strict` (every failing write an error).
pub fn apply_command_strict(
    source: &[String],
    netns: Option<&str>,
    allow_decrease: bool,
    strict: bool,
) -> String {
    let mut words: Vec<String> = vec!["connstorm".into(), "tune".into(), "apply".into()];
    words.extend(source.iter().map(|w| shell_word(w)));
    if let Some(n) = netns {
        words.push("--netns".into());
        words.push(shell_word(n));
    }
    if allow_decrease {
        words.push("--allow-decrease".into());
    }
    if strict {
        words.push("--strict".into());
    }
    words.push("--yes".into());
    words.join(" ")
}

/// The error of a plan that `--yes` would refuse (`None` when it would not): every refused key
/// with why.
pub fn refusal(p: &Prediction) -> Option<String> {
    if p.refusals.is_empty() {
        return None;
    }
    let why: Vec<String> = p
        .refusals
        .iter()
        .map(|(k, why)| format!("{k} ({why})"))
        .collect();
    Some(format!(
        "--yes would refuse this plan and change nothing: {}",
        why.join("; ")
    ))
}

/// The last line of a plan that was not applied: `N change(s) planned; nothing changed (...)`,
/// or, when `--yes` would refuse the plan, that nothing changed and the refusal above must be
/// fixed first (no change is "planned" then).
pub fn not_applied(p: &Prediction, dry_run: bool) -> String {
    if !p.refusals.is_empty() {
        return format!(
            "nothing changed: --yes would refuse this plan because of {} line(s) above; fix them first\n",
            count(p.refusals.len() as u64)
        );
    }
    format!(
        "{} change(s) planned; nothing changed ({})\n",
        count(p.writes.len() as u64),
        if dry_run {
            "--dry-run"
        } else {
            "pass --yes to apply"
        }
    )
}

/// The command that undoes an apply, as it must be typed: the same namespace and snapshot.
pub(crate) fn undo_command(snapshot: &Path, netns: Option<&str>) -> String {
    let mut c = String::from("connstorm tune revert");
    if let Some(n) = netns {
        c.push_str(&format!(" --netns {}", shell_word(n)));
    }
    c.push_str(&format!(" {}", shell_word(&snapshot.display().to_string())));
    c
}

/// What `apply --yes` did: `set KEY: OLD -> NEW` per change, `skipped KEY: why`, then the count
/// with the snapshot and the command that undoes it (`connstorm tune revert …`), or
/// `nothing to change`.
pub fn applied(report: &ApplyReport, netns: Option<&str>) -> String {
    let mut out = String::new();
    for (k, old, new) in &report.changed {
        out.push_str(&format!("set {k}: {old} -> {new}\n"));
    }
    for (k, old, now) in &report.side_effects {
        out.push_str(&format!(
            "kernel also set {k}: {old} -> {now} (side effect; saved in the snapshot)\n"
        ));
    }
    for (k, what) in &report.adjusted {
        out.push_str(&format!("adjusted {k}: {what}\n"));
    }
    for (k, why) in &report.skipped {
        out.push_str(&format!("skipped {k}: {why}\n"));
    }
    match &report.snapshot {
        Some(p) => out.push_str(&format!(
            "{} change(s) applied and read back; snapshot {} (undo: {})\n",
            count(report.changed.len() as u64),
            p.display(),
            undo_command(p, netns)
        )),
        None if report.skipped.is_empty() => out.push_str("nothing to change\n"),
        None => out.push_str(
            "nothing was changed: every line is already set or was skipped (above); no snapshot\n",
        ),
    }
    out
}

/// What `revert` did: `restored KEY` per key, then `SNAPSHOT: N restored, M already at the saved
/// value[, K IRQ affinit(ies) checked]`.
pub fn reverted(snapshot: &Path, rep: &RevertReport, irqs: usize) -> String {
    let mut out: String = rep
        .restored
        .iter()
        .map(|k| format!("restored {k}\n"))
        .collect();
    out.push_str(&format!(
        "{}: {} restored, {} already at the saved value{}\n",
        snapshot.display(),
        count(rep.restored.len() as u64),
        count(rep.unchanged.len() as u64),
        if irqs > 0 {
            format!(", {} IRQ affinit(ies) checked", count(irqs as u64))
        } else {
            String::new()
        }
    ));
    out
}

/// Notes about `--system` files that are not read: shadowed copies and masked names, one line
/// each (for stderr).
pub fn system_notes(found: &[SystemFile]) -> String {
    let mut out = String::new();
    for f in found {
        for sh in &f.shadowed {
            out.push_str(&format!(
                "connstorm tune: sysctl.d file {} is shadowed by {} (same name, more important directory)\n",
                sh.display(),
                f.path.display()
            ));
        }
        if f.masked {
            out.push_str(&format!(
                "connstorm tune: sysctl.d file {} is masked (a symlink to /dev/null): not read\n",
                f.path.display()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_use_thousands_separators() {
        let rep = RevertReport {
            restored: vec!["net.core.somaxconn".into()],
            unchanged: (0..1200).map(|i| format!("k{i}")).collect(),
        };
        let t = reverted(Path::new("/s/1.json"), &rep, 2);
        assert!(t.starts_with("restored net.core.somaxconn\n"), "{t}");
        assert!(
            t.ends_with("/s/1.json: 1 restored, 1,200 already at the saved value, 2 IRQ affinit(ies) checked\n"),
            "{t}"
        );
    }

    #[test]
    fn the_undo_command_keeps_the_namespace() {
        assert_eq!(
            undo_command(Path::new("/var/lib/connstorm/s.json"), Some("t1")),
            "connstorm tune revert --netns t1 /var/lib/connstorm/s.json"
        );
    }
}
