//! Text of `tune presets`, `tune rules`, `tune irq`, `tune kernel` and the stderr notes of
//! `tune import`.

use std::path::Path;

use common::numfmt::count;

use crate::advice::AuditRow;
use crate::host::{Finding, Severity};
use crate::plan::IrqMove;
use crate::sysctl::Preset;
use crate::sysctl::{ImportLine, ImportOutcome};

/// One line per preset: the name padded to the longest, its description and its sysctl count.
pub fn presets(all: &[Preset]) -> String {
    let width = all.iter().map(|p| p.name.len()).max().unwrap_or(0);
    all.iter()
        .map(|p| {
            format!(
                "{:<width$}  {} ({} sysctl(s))\n",
                p.name,
                p.description,
                count(p.sysctls.len() as u64)
            )
        })
        .collect()
}

/// The rule table (the rules table `table`): kind, key, rule, source.
pub fn rules() -> String {
    let rows: Vec<Vec<String>> = crate::sysctl::rules::table()
        .into_iter()
        .map(|r| vec![r.kind.to_string(), r.key, r.rule, r.source.to_string()])
        .collect();
    super::table(&["kind", "key", "rule", "source"], &rows)
}

/// An IRQ plan: `IRQ plan PLAN for DEV (NUMA node N|none):`, one row per IRQ (number, name,
/// current CPUs or `-`, planned CPUs, as cpulists), then the warnings.
pub fn irq_plan(
    plan: &str,
    dev: &str,
    numa_node: Option<usize>,
    moves: &[IrqMove],
    warnings: &[Finding],
) -> String {
    let mut out = format!(
        "IRQ plan {plan} for {dev} (NUMA node {}):\n",
        numa_node.map_or("none".to_string(), |n| n.to_string())
    );
    out.push_str(&format!(
        "{:>5}  {:<24}  {:<12}  to\n",
        "irq", "name", "now"
    ));
    for m in moves {
        out.push_str(&format!(
            "{:>5}  {:<24}  {:<12}  {}\n",
            m.irq,
            m.name,
            m.from.as_deref().map_or("-".into(), crate::cpulist::format),
            crate::cpulist::format(&m.to)
        ));
    }
    out.push_str(&super::findings(warnings));
    out
}

/// After an applied IRQ plan: the count, the snapshot and the command that undoes it.
pub fn irq_applied(moved: usize, snapshot: &Path) -> String {
    format!(
        "{} IRQ(s) moved; snapshot {} (undo: {})\n",
        count(moved as u64),
        snapshot.display(),
        super::apply::undo_command(snapshot, None)
    )
}

/// The kernel audit: `kernel config ORIGIN for profile P:`, a table (item, current,
/// recommended, `ok`/`off`, why), then the findings.
pub fn kernel_audit(origin: &str, profile: &str, rows: &[AuditRow], f: &[Finding]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.item.clone(),
                r.current.clone(),
                r.recommended.clone(),
                if r.severity == Severity::Info {
                    "ok"
                } else {
                    "off"
                }
                .to_string(),
                r.why.clone(),
            ]
        })
        .collect();
    let mut out = format!("kernel config {origin} for profile {profile}:\n");
    out.push_str(&super::table(
        &["item", "current", "recommended", "status", "why"],
        &cells,
    ));
    out.push_str(&super::findings(f));
    out
}

/// The stderr of `tune import`: each line not understood (`ORIGIN:LINE not imported: TEXT` and
/// the advice), then how many sysctl writes were imported. Returns the text and that count.
pub fn import_notes(lines: &[ImportLine], origin: &str) -> (String, usize) {
    let mut out = String::new();
    let mut imported = 0;
    for l in lines {
        for o in &l.outcomes {
            match o {
                ImportOutcome::Sysctl { key, .. } => {
                    imported += 1;
                    if let Some(t) = crate::sysctl::rules::status_text(key) {
                        out.push_str(&format!(
                            "connstorm tune import: {origin}:{} imports {key}, a status key: {t}; drop the line\n",
                            l.line
                        ));
                    }
                    if let Some(t) = crate::sysctl::rules::legacy_text(key) {
                        out.push_str(&format!(
                            "connstorm tune import: {origin}:{} imports {key}, a legacy key: {t}\n",
                            l.line
                        ));
                    }
                }
                ImportOutcome::NotUnderstood { advice } => out.push_str(&format!(
                    "connstorm tune import: {origin}:{} not imported: {}\n  -> {advice}\n",
                    l.line, l.text
                )),
                ImportOutcome::Skipped { .. } => {}
            }
        }
    }
    out.push_str(&format!(
        "connstorm tune import: {} sysctl write(s) imported from {origin}\n",
        count(imported as u64)
    ));
    (out, imported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_notes_name_status_and_legacy_keys() {
        let lines = crate::sysctl::import_script(
            "echo 0 > /proc/sys/net/ipv4/tcp_tw_recycle\necho 5 > /proc/sys/net/netfilter/nf_conntrack_count\n",
        );
        let (text, n) = import_notes(&lines, "t.sh");
        assert_eq!(n, 2);
        assert!(
            text.contains("t.sh:1 imports net.ipv4.tcp_tw_recycle, a legacy key: removed in 4.12"),
            "{text}"
        );
        assert!(
            text.contains("t.sh:2 imports net.netfilter.nf_conntrack_count, a status key"),
            "{text}"
        );
    }

    #[test]
    fn presets_are_one_aligned_line_each() {
        let all: Vec<Preset> = crate::sysctl::BUILTIN_PRESETS
            .iter()
            .map(|n| crate::sysctl::builtin_preset(n).unwrap().unwrap())
            .collect();
        let t = presets(&all);
        assert_eq!(t.lines().count(), all.len(), "{t}");
        let c1m = all.iter().find(|p| p.name == "c1m-server").unwrap();
        let width = all.iter().map(|p| p.name.len()).max().unwrap();
        assert!(
            t.contains(&format!(
                "{:<width$}  {} ({} sysctl(s))\n",
                "c1m-server",
                c1m.description,
                c1m.sysctls.len()
            )),
            "{t}"
        );
    }

    #[test]
    fn rules_cite_sources_in_this_world_not_private_notes() {
        let t = rules();
        assert!(t.starts_with("kind"), "{t}");
        assert!(t.contains("Documentation/networking/ip-sysctl.rst"), "{t}");
        // Private note files of the authors are no source a reader can open.
        for private in [["FACTS", "-2"], ["KERNEL", "-NOTES"]] {
            assert!(!t.contains(&private.concat()), "{t}");
        }
    }

    #[test]
    fn irq_plan_prints_cpulists_and_dashes() {
        let moves = [IrqMove {
            irq: 41,
            name: "eth0-rx-0".into(),
            from: None,
            to: vec![2, 3, 4],
        }];
        let t = irq_plan("spread", "eth0", Some(0), &moves, &[]);
        assert_eq!(
            t,
            "IRQ plan spread for eth0 (NUMA node 0):\n  irq  name                      now           to\n   41  eth0-rx-0                 -             2-4\n"
        );
    }

    #[test]
    fn kernel_audit_marks_off_rows() {
        let rows = [AuditRow {
            item: "CONFIG_HZ".into(),
            current: "250".into(),
            recommended: "1000".into(),
            severity: Severity::Warn,
            why: "tick 4.0 ms".into(),
        }];
        let t = kernel_audit("/boot/config", "server", &rows, &[]);
        assert!(
            t.starts_with("kernel config /boot/config for profile server:\n"),
            "{t}"
        );
        assert!(
            t.contains("CONFIG_HZ  250      1000         off     tick 4.0 ms\n"),
            "{t}"
        );
    }

    #[test]
    fn import_notes_list_what_was_not_understood_and_count_writes() {
        let lines =
            crate::sysctl::import_script("sysctl -w net.core.somaxconn=8192\nulimit -n 1048576\n");
        let (t, n) = import_notes(&lines, "s.sh");
        assert_eq!(n, 1);
        assert!(
            t.contains("s.sh:2 not imported: ulimit -n 1048576\n  -> "),
            "{t}"
        );
        assert!(
            t.ends_with("connstorm tune import: 1 sysctl write(s) imported from s.sh\n"),
            "{t}"
        );
    }
}
