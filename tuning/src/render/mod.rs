//! Text renderers for `connstorm tune`: every line the tune subcommands print is made here,
//! as a `String`, so the binary only parses arguments and writes what these functions return.
//!
//! - [`table`]: the aligned table every tune listing uses; [`findings`]: severity/topic/message
//!   lines (doctor, IRQ plan, kernel audit);
//! - `plan` ([`check`], [`plan()`]): check and apply (the key table, what became of each
//!   sysctl.d line, warnings, contradictions, what `apply --yes` would do); `apply`
//!   ([`apply_command`], [`applied`], [`reverted`]): the apply and undo commands, the apply and
//!   revert reports;
//! - `host` ([`presets`], [`rules`], [`irq_plan`], [`kernel_audit`], [`import_notes`]): preset
//!   list, rule table, IRQ plan, kernel audit, import notes;
//! - `export` ([`export_sysctl_d`], [`export_tuned`], [`export_cmdline`]): presets as files
//!   other tools deploy;
//! - `placement` ([`placement()`], [`scale_plan`], [`machine_line`]): which CPUs serve, load
//!   and keep house, per node and SMT sibling set, and why; the steps of a scale plan.
//!
//! Counts go through [`common::numfmt`] (thousands separators); sysctl values are printed as
//! the kernel shows them (they are meant to be typed back), IRQ numbers and CPU lists as-is.

mod apply;
mod export;
mod host;
mod placement;
mod plan;

pub use apply::{
    applied, apply_command, apply_command_strict, not_applied, refusal, reverted, system_notes,
};
pub use export::{export_cmdline, export_sysctl_d, export_tuned};
pub use host::{import_notes, irq_applied, irq_plan, kernel_audit, presets, rules};
pub use placement::{machine_line, placement, scale_plan};
pub use plan::{check, check_json, plan, prediction};

use crate::host::Finding;

/// An aligned table: a header line, then one line per row. Every column is as wide as its widest
/// cell or header (in characters, not bytes), columns are two spaces apart, the last column
/// (free text) is not padded and trailing spaces are trimmed. Each line ends with `\n`. The one
/// renderer, [`common::table::text`], with every column left-aligned and no indent.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    common::table::text(headers, rows, &[], "")
}

/// One line per finding: severity padded to 5, topic to 9, then the message.
pub fn findings(f: &[Finding]) -> String {
    f.iter()
        .map(|x| {
            format!(
                "{:<5}  {:<9}  {}\n",
                x.severity.to_string(),
                x.topic,
                x.message
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Severity;

    #[test]
    fn table_pads_by_characters_and_leaves_the_last_column_unpadded() {
        let t = table(
            &["key", "current", "why"],
            &[
                vec!["a".into(), "1".into(), "x".into()],
                vec!["longer—key".into(), "".into(), "".into()],
            ],
        );
        assert_eq!(
            t,
            "key         current  why\na           1        x\nlonger—key\n"
        );
    }

    #[test]
    fn findings_are_one_aligned_line_each() {
        let f = [Finding::new(Severity::Warn, "irq", "IRQ 5 on CPU 2")];
        assert_eq!(findings(&f), "warn   irq        IRQ 5 on CPU 2\n");
    }
}
