//! Settings that do nothing because of another setting (the rules table `NEEDS`), after the
//! plan.

use serde::Serialize;

use super::{Row, Status};
use crate::sysctl::Op;
use crate::sysctl::{Key, SysctlIo};

/// A contradiction between two settings of one plan (or of a plan and the host).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Contradiction {
    /// The key that does nothing.
    pub key: Key,
    /// Its value after the plan quoted with where it comes from (`V (file:line)`,
    /// `V (this host)`, or the line's own value and the host's when the line is not applied).
    pub value: String,
    /// The key it needs.
    pub needs: String,
    /// That key's value after the plan and where it comes from.
    pub needs_value: String,
    /// The whole message, with the reason and source.
    pub message: String,
}

/// Settings that do nothing because of another setting (the rules table `NEEDS`), after the
/// plan: a row's value is its target when apply writes it, else the host's current value.
/// Reported when the dependent key is in `rows`, or (for the rules table `Needs::host_side`
/// rules) when only the needed key is.
pub fn contradictions(rows: &[Row], io: &dyn SysctlIo) -> Vec<Contradiction> {
    let after = |k: &str| -> Option<(String, String)> {
        if let Some(r) = rows.iter().find(|r| r.entry.key.as_str() == k) {
            return after_plan(r);
        }
        let key = Key::parse(k).ok()?;
        io.read(&key).ok().map(|v| {
            let quoted = format!("{v} (this host)");
            (v, quoted)
        })
    };
    let first = |v: &str| v.split(' ').next().and_then(|n| n.parse::<i64>().ok());
    let mut out = Vec::new();
    for n in crate::sysctl::rules::NEEDS {
        let has = |k: &str| rows.iter().any(|r| r.entry.key.as_str() == k);
        let in_plan = has(n.key) || (n.host_side && has(n.needs));
        if !in_plan {
            continue;
        }
        let (Some((v, vfrom)), Some((w, wfrom))) = (after(n.key), after(n.needs)) else {
            continue;
        };
        let (Some(vn), Some(wn)) = (first(&v), first(&w)) else {
            continue;
        };
        if (n.active)(vn) && !(n.satisfied)(wn) {
            out.push(Contradiction {
                key: Key::parse(n.key).expect("rule keys are valid"),
                value: vfrom.clone(),
                needs: n.needs.to_string(),
                needs_value: wfrom.clone(),
                message: format!(
                    "{} = {vfrom} has no effect: it needs {} = {}, which is {wfrom}; {} ({})",
                    n.key, n.needs, n.needs_text, n.why, n.source
                ),
            });
        }
    }
    out
}

/// A row's value after the plan (its target when apply writes it, else the host's current
/// value) and that value quoted with where it comes from: `V (file:line)` when the plan sets V
/// as the line says; when the line's own value is not what the host ends with (rejected,
/// refused, read-only, skipped, manual; an at-least or at-most value the host is already
/// beyond; a multi-number limit merged field by field), the line's own value with its
/// `file:line` and the host's value separately — `F (file:line, not applied: rejected; this
/// host keeps V)` — so a value is never attributed to a line that does not hold it. `None`
/// when the row is not written and has no current value.
fn after_plan(r: &Row) -> Option<(String, String)> {
    let origin = if r.entry.origin.is_empty() {
        "the preset".to_string()
    } else {
        r.entry.origin.clone()
    };
    let written = r.status.needs_write() || r.status == Status::Lower;
    let v = if written {
        r.target.clone()
    } else {
        r.current.clone()?
    };
    let line = match r.entry.op {
        Op::Set => r.entry.value.clone(),
        Op::AtLeast => format!("at least {}", r.entry.value),
        Op::AtMost => format!("at most {}", r.entry.value),
    };
    let quoted = if v == r.entry.value {
        format!("{v} ({origin})")
    } else if written {
        format!("{line} ({origin}; apply writes {v}, merged field by field with the host's)")
    } else if r.status == Status::Ok {
        format!("{line} ({origin}; this host keeps {v})")
    } else {
        format!(
            "{line} ({origin}, not applied: {}; this host keeps {v})",
            r.status.label()
        )
    };
    Some((v, quoted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::check::tests::entry;
    use crate::plan::{check, CheckOptions, Status};
    use crate::sysctl::ProcSys;
    use crate::sysctl::{Entry, Op, Preset};

    /// Finding: a line whose value is not applied (here rejected) was quoted with the host's
    /// current value: "tcp_max_syn_backlog = 2048 (a.conf:20) has no effect".
    #[test]
    fn a_contradiction_quotes_the_line_value_not_the_current_one() {
        let d = tempfile::tempdir().unwrap();
        for (k, v) in [
            ("net.ipv4.tcp_max_syn_backlog", "2048"),
            ("net.ipv4.tcp_syncookies", "1"),
        ] {
            let p = Key::parse(k).unwrap().path(d.path());
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, v).unwrap();
        }
        let io = ProcSys {
            root: d.path().to_path_buf(),
        };
        let line = |value: &str| Entry {
            origin: "sd/a.conf:20".into(),
            ..entry("net.ipv4.tcp_max_syn_backlog", value, Op::Set)
        };
        let preset = |value: &str| Preset {
            name: "t".into(),
            description: String::new(),
            origin: "t".into(),
            sysctls: vec![line(value)],
            cmdline: Vec::new(),
            lines: Vec::new(),
        };
        let rejected = check(
            &preset("99999999999999999999"),
            &io,
            CheckOptions::default(),
        );
        assert_eq!(rejected[0].status, Status::Rejected);
        let c = contradictions(&rejected, &io);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(
            c[0].message.starts_with(
                "net.ipv4.tcp_max_syn_backlog = 99999999999999999999 (sd/a.conf:20, not applied: rejected; this host keeps 2048) has no effect"
            ),
            "{}",
            c[0].message
        );
        assert!(
            !c[0].message.contains("2048 (sd/a.conf:20)"),
            "{}",
            c[0].message
        );
        // A line that is applied is quoted as it is.
        let applied = check(&preset("4096"), &io, CheckOptions::default());
        let c = contradictions(&applied, &io);
        assert!(
            c[0].message
                .starts_with("net.ipv4.tcp_max_syn_backlog = 4096 (sd/a.conf:20) has no effect"),
            "{}",
            c[0].message
        );
        assert!(
            c[0].message.contains("which is 1 (this host)"),
            "{}",
            c[0].message
        );
    }
}
