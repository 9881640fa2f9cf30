//! `tune check` and the plan of `tune apply`: the key table, what became of each sysctl.d line,
//! warnings, contradictions and the sentence saying what `apply --yes` would do (the command
//! itself comes from [`super::apply::apply_command`]).

use std::collections::HashMap;

use common::numfmt::count;

use crate::plan::{Checked, Contradiction, Prediction, Row, SideWrite, Status};
use crate::sysctl::Key;
use crate::sysctl::{Fate, LineNote};
use crate::sysctl::{Op, Preset};

fn op_sign(op: Op) -> &'static str {
    match op {
        Op::Set => "",
        Op::AtLeast => ">=",
        Op::AtMost => "<=",
    }
}

/// The key table: key, scope, current (`-` when unreadable), recommended (with `>=`/`<=` for
/// limits), status. For sysctl.d sources a `from` column names the `file:line` (and the lines it
/// replaced) and the last column is the row's note; for presets the last column is the reason,
/// prefixed by the note when there is one.
pub(crate) fn rows(rows: &[Row]) -> String {
    let with_origin = rows.iter().any(|r| !r.entry.origin.is_empty());
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let why = if with_origin {
                r.note.clone()
            } else if r.note.is_empty() {
                r.entry.reason.clone()
            } else {
                format!("{} — {}", r.note, r.entry.reason)
            };
            let mut c = vec![
                r.entry.key.as_str().to_string(),
                r.scope.to_string(),
                r.current.as_deref().unwrap_or("-").to_string(),
                format!("{}{}", op_sign(r.entry.op), r.entry.value),
                r.status.label().to_string(),
            ];
            if with_origin {
                let mut from = r.entry.origin.clone();
                if !r.entry.overrides.is_empty() {
                    from.push_str(&format!(" (over {})", r.entry.overrides.join(", ")));
                }
                c.push(from);
            }
            c.push(why);
            c
        })
        .collect();
    let mut headers = vec!["key", "scope", "current", "recommended", "status"];
    if with_origin {
        headers.push("from");
    }
    headers.push(if with_origin { "note" } else { "reason" });
    super::table(&headers, &cells)
}

/// What a line that names `key` really does, from the key's row: `None` when apply sets it (or
/// it is already so), else why it is not set (missing on this kernel, a value the kernel will
/// reject with the kernel's error, read-only, refused, lowered, manual).
fn not_set(key: &Key, rows: &RowIndex) -> Option<String> {
    let r = *rows.get(key)?;
    let note = if r.note.is_empty() {
        String::new()
    } else {
        format!(" ({})", r.note)
    };
    Some(match &r.status {
        Status::Ok | Status::Change => return None,
        Status::MissingOptional => format!("{key} is missing on this kernel: skipped{note}"),
        Status::Missing if r.fatal => {
            format!("{key} is missing on this kernel: apply refuses the whole plan{note}")
        }
        Status::Missing => format!("{key} is missing on this kernel: skipped{note}"),
        Status::Rejected => format!("{key} not set: rejected{note}"),
        Status::Skipped => format!("{key} not set: skipped{note}"),
        other if r.fatal => format!(
            "{key} not set: {}, apply refuses the whole plan{note}",
            other.label()
        ),
        other => format!("{key} not set: {}{note}", other.label()),
    })
}

/// The rows of a check by key ([`index`]), so that describing every line stays linear.
pub(crate) type RowIndex<'a> = HashMap<&'a Key, &'a Row>;

/// [`RowIndex`] of `rows`.
pub(crate) fn index(rows: &[Row]) -> RowIndex<'_> {
    rows.iter().map(|r| (&r.entry.key, r)).collect()
}

/// One sentence for a sysctl.d line: which keys it really sets and which it names but does not
/// set, with why (see [`crate::sysctl::Fate`] for the other fates).
pub(crate) fn line_fate(l: &LineNote, rows: &RowIndex) -> String {
    let Fate::Effective { keys, left } = &l.fate else {
        return l.describe();
    };
    let (set, unset): (Vec<&Key>, Vec<&Key>) =
        keys.iter().partition(|k| not_set(k, rows).is_none());
    let mut parts = Vec::new();
    if keys.len() == 1 && left.is_empty() {
        match not_set(&keys[0], rows) {
            None => parts.push(format!("sets {}", keys[0])),
            Some(why) => parts.push(why),
        }
    } else {
        parts.push(format!(
            "glob sets {} key(s){}",
            count(set.len() as u64),
            if set.is_empty() {
                String::new()
            } else {
                format!(
                    ": {}",
                    set.iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        ));
        parts.extend(unset.iter().filter_map(|k| not_set(k, rows)));
        if !left.is_empty() {
            parts.push(format!("leaves {}", left.join(", ")));
        }
    }
    parts.join("; ")
}

/// Everything after the table: `lines:` (each non-blank, non-comment sysctl.d line with its
/// `file:line` and [`line_fate`]), `warning: KEY: ...` per row warning, `contradiction: ...`.
pub(crate) fn details(preset: &Preset, rows: &[Row], contradictions: &[Contradiction]) -> String {
    let mut out = String::new();
    let lines: Vec<&LineNote> = preset
        .lines
        .iter()
        .filter(|l| !matches!(l.fate, Fate::Blank | Fate::Comment))
        .collect();
    if !lines.is_empty() {
        let by_key = index(rows);
        out.push_str("lines:\n");
        for l in lines {
            out.push_str(&format!(
                "  {}  {}  -> {}\n",
                l.origin,
                l.text,
                line_fate(l, &by_key)
            ));
        }
    }
    for r in rows {
        for w in &r.warnings {
            out.push_str(&format!("warning: {}: {w}\n", r.entry.key));
        }
    }
    for c in contradictions {
        out.push_str(&format!("contradiction: {}\n", c.message));
    }
    out
}

/// One line saying exactly what `command` (see [`super::apply::apply_command`]) would do with these rows:
/// refuse and change nothing (with every refusal), or set N key(s) (each `key = value`) and
/// leave M alone (each with why).
pub fn prediction(p: &Prediction, command: &str) -> String {
    let list = |v: &[(Key, String)], sep: &str| {
        v.iter()
            .map(|(k, x)| format!("{k}{sep}{x}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    if !p.refusals.is_empty() {
        let skips = if p.skips.is_empty() {
            String::new()
        } else {
            format!(
                "; once they are fixed it would still leave {} alone ({})",
                count(p.skips.len() as u64),
                list(&p.skips, ": ")
            )
        };
        return format!(
            "`{command}` would refuse the whole plan and change nothing: {}{skips}\n",
            list(&p.refusals, ": ")
        );
    }
    let sets = if p.writes.is_empty() {
        "would change nothing".to_string()
    } else {
        format!(
            "would set {} key(s) ({})",
            count(p.writes.len() as u64),
            list(&p.writes, " = ")
        )
    };
    let skips = if p.skips.is_empty() {
        String::new()
    } else {
        format!(
            " and leave {} alone ({})",
            count(p.skips.len() as u64),
            list(&p.skips, ": ")
        )
    };
    let mut out = format!("`{command}` {sets}{skips}\n");
    out.push_str(&side_effects(&p.side_effects));
    out
}

/// One line per key the kernel also sets because of a write (`  also sets KEY: OLD -> NEW
/// (kernel side effect of KEY = V (file:line); source)`), empty when there are none.
pub(crate) fn side_effects(writes: &[SideWrite]) -> String {
    writes
        .iter()
        .map(|w| {
            format!(
                "  also sets {}: {} -> {} (kernel side effect of writing {}; saved in the snapshot and restored by revert; {})\n",
                w.key, w.from, w.to, w.by, w.source
            )
        })
        .collect()
}

/// The closing line of `tune check`: `N of M key(s) off[, K contradiction(s)]`.
pub(crate) fn off_summary(rows: &[Row], contradictions: &[Contradiction]) -> String {
    let off = rows.iter().filter(|r| r.status.is_off()).count();
    format!(
        "{} of {} key(s) off{}\n",
        count(off as u64),
        count(rows.len() as u64),
        if contradictions.is_empty() {
            String::new()
        } else {
            format!(", {} contradiction(s)", count(contradictions.len() as u64))
        }
    )
}

/// The whole text of `tune check` against a source: header ([`Preset::title`], and the
/// description of a preset), the key table, the details (what became of each sysctl.d line,
/// warnings, contradictions), [`prediction`] for `command`, and what is off.
pub fn check(preset: &Preset, c: &Checked, command: &str) -> String {
    let mut out = if preset.is_sysctl_d() {
        format!("{}:\n", preset.title())
    } else {
        format!("{}: {}\n", preset.title(), preset.description)
    };
    out.push_str(&rows(&c.rows));
    out.push_str(&details(preset, &c.rows, &c.contradictions));
    out.push_str(&prediction(&c.prediction, command));
    out.push_str(&off_summary(&c.rows, &c.contradictions));
    out
}

/// `tune check --format json`: the source's name and origin, the rows, every sysctl.d line
/// with its fate, the contradictions and the prediction.
pub fn check_json(preset: &Preset, c: &Checked) -> serde_json::Value {
    serde_json::json!({
        "preset": preset.name,
        "origin": preset.origin,
        "rows": c.rows,
        "lines": preset.lines,
        "contradictions": c.contradictions,
        "prediction": c.prediction,
    })
}

/// The plan `tune apply` prints before doing anything: `plan for TITLE[ in a child network
/// namespace (global keys are refused there)]:`, the key table, the details, [`prediction`]
/// for `command`.
pub fn plan(preset: &Preset, c: &Checked, netns_only: bool, command: &str) -> String {
    let mut out = format!(
        "plan for {}{}:\n",
        preset.title(),
        if netns_only {
            " in a child network namespace (global keys are refused there)"
        } else {
            ""
        }
    );
    out.push_str(&rows(&c.rows));
    out.push_str(&details(preset, &c.rows, &c.contradictions));
    out.push_str(&prediction(&c.prediction, command));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::CheckOptions;
    use crate::render::apply::{apply_command, refusal};
    use crate::sysctl::ProcSys;

    /// A fixture /proc/sys with somaxconn 4096 and the default port range, and the rows of
    /// `conf` (a sysctl.d file) checked against it.
    fn checked(conf: &str) -> (tempfile::TempDir, Preset, Vec<Row>) {
        checked_with(conf, CheckOptions::default())
    }

    fn checked_with(conf: &str, opts: CheckOptions) -> (tempfile::TempDir, Preset, Vec<Row>) {
        let d = tempfile::tempdir().unwrap();
        for (k, v) in [
            ("net/core/somaxconn", "4096"),
            ("net/ipv4/ip_local_port_range", "32768\t60999"),
            ("net/ipv4/tcp_fin_timeout", "60"),
        ] {
            let p = d.path().join("proc/sys").join(k);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, format!("{v}\n")).unwrap();
        }
        let file = crate::sysctl::SourceFile {
            name: "t.conf".into(),
            text: conf.into(),
        };
        let preset = Preset::from_sysctl_d(&[file], d.path()).unwrap();
        let io = ProcSys {
            root: d.path().to_path_buf(),
        };
        let rows = crate::plan::check(&preset, &io, opts);
        (d, preset, rows)
    }

    #[test]
    fn lines_say_what_really_happens_to_missing_and_rejected_keys() {
        let (_d, p, rows) = checked(
            "net.core.somaxconn = 8192\n-net.ipv4.tcp_no_such_key = 1\nnet.ipv4.ip_local_port_range = 5000 4000\n",
        );
        let t = details(&p, &rows, &[]);
        assert!(
            t.contains("t.conf:1  net.core.somaxconn = 8192  -> sets net.core.somaxconn\n"),
            "{t}"
        );
        assert!(
            t.contains("-> net.ipv4.tcp_no_such_key is missing on this kernel: skipped ("),
            "{t}"
        );
        assert!(
            t.contains("-> net.ipv4.ip_local_port_range not set: rejected (the kernel will reject \"5000 4000\": high 4000 is below low 5000: EINVAL"),
            "{t}"
        );
        assert!(!t.contains("sets net.ipv4.tcp_no_such_key"), "{t}");
        assert!(!t.contains("sets net.ipv4.ip_local_port_range"), "{t}");
    }

    const STRICT: CheckOptions = CheckOptions {
        netns_only: false,
        allow_decrease: false,
        strict: true,
    };

    #[test]
    fn a_missing_key_without_dash_says_apply_refuses() {
        let (_d, p, rows) = checked_with("net.ipv4.tcp_no_such_key = 1\n", STRICT);
        let t = details(&p, &rows, &[]);
        assert!(
            t.contains("-> net.ipv4.tcp_no_such_key is missing on this kernel: apply refuses the whole plan"),
            "{t}"
        );
        // Without --strict it is skipped with a warning and the rest applies (systemd-sysctl).
        let (_d, p, rows) = checked("net.ipv4.tcp_no_such_key = 1\nnet.core.somaxconn = 8192\n");
        let t = details(&p, &rows, &[]);
        assert!(
            t.contains("-> net.ipv4.tcp_no_such_key is missing on this kernel: skipped (not on this kernel")
                && t.contains("skipped with a warning, the rest applies (as systemd-sysctl does; --strict refuses)"),
            "{t}"
        );
    }

    #[test]
    fn sysctl_d_files_are_named_as_files_not_presets() {
        let (d, p, _rows) = checked("net.core.somaxconn = 8192\n");
        let io = ProcSys {
            root: d.path().to_path_buf(),
        };
        let c = Checked::of(&p, &io, CheckOptions::default());
        let cmd = apply_command(&["--file".into(), "t.conf".into()], None, false);
        let t = check(&p, &c, &cmd);
        assert!(t.starts_with("sysctl.d file t.conf:\n"), "{t}");
        assert!(!t.contains("preset"), "{t}");
        let t = plan(&p, &c, true, &cmd);
        assert!(
            t.starts_with("plan for sysctl.d file t.conf in a child network namespace"),
            "{t}"
        );
    }

    #[test]
    fn prediction_names_the_apply_command_and_what_it_would_set() {
        let (_d, _p, rows) = checked("net.core.somaxconn = 8192\nnet.ipv4.tcp_fin_timeout = 60\n");
        let cmd = apply_command(&["--file".into(), "my file.conf".into()], Some("ns1"), true);
        assert_eq!(
            cmd,
            "connstorm tune apply --file 'my file.conf' --netns ns1 --allow-decrease --yes"
        );
        let t = prediction(&Prediction::of(&rows), &cmd);
        assert_eq!(
            t,
            format!("`{cmd}` would set 1 key(s) (net.core.somaxconn = 8192)\n")
        );
        let (_d, _p, rows) = checked_with("net.ipv4.tcp_no_such_key = 1\n", STRICT);
        let p = Prediction::of(&rows);
        let t = prediction(&p, "connstorm tune apply --system --yes");
        assert!(
            t.starts_with("`connstorm tune apply --system --yes` would refuse the whole plan and change nothing: net.ipv4.tcp_no_such_key: missing: "),
            "{t}"
        );
        let err = refusal(&p).unwrap();
        assert!(
            err.starts_with("--yes would refuse this plan and change nothing: net.ipv4.tcp_no_such_key (missing: "),
            "{err}"
        );
        let (_d, _p, rows) = checked("net.core.somaxconn = 4096\n");
        assert!(refusal(&Prediction::of(&rows)).is_none());
    }
}
