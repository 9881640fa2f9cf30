//! `connstorm tune`: check, apply, revert and export sysctl presets and sysctl.d files; import
//! shell scripts; IRQ plans; kernel audit; the doctor summary; the rule table. `args` holds the
//! clap definitions; [`run`](mod@run) composes the `tuning` crate's calls.

use self::run::{self as run_tune, Apply, ExportForm, Irq};

mod args;
pub mod run;
pub use args::*;

impl Source {
    fn options(&self) -> run_tune::Source {
        run_tune::Source {
            preset: self.preset.clone(),
            files: self.file.clone(),
            system: self.system,
        }
    }
}

/// Runs `connstorm tune ...`.
///
/// # Errors
/// Bad presets, names and files are [`common::error::BadInput`] (exit 2); host failures exit 1.
pub fn run(cmd: Command) -> anyhow::Result<i32> {
    match cmd {
        Command::Check(a) => run_tune::check(
            &a.source.options(),
            &a.root,
            a.format == crate::commands::Format::Json,
            a.strict,
            a.allow_decrease,
        ),
        Command::Apply(a) => run_tune::apply(&Apply {
            source: a.source.options(),
            netns: a.netns,
            change: a.yes && !a.dry_run,
            dry_run: a.dry_run,
            state_dir: a.state_dir,
            allow_decrease: a.allow_decrease,
        }),
        Command::Revert(a) => run_tune::revert(
            a.snapshot.as_deref(),
            &a.state_dir,
            a.netns.as_deref(),
            a.force,
        ),
        Command::Export(a) => run_tune::export(
            &a.source.options(),
            &a.root,
            match a.format {
                ExportFormat::SysctlD => ExportForm::SysctlD,
                ExportFormat::Tuned => ExportForm::Tuned,
                ExportFormat::Cmdline => ExportForm::Cmdline,
            },
        ),
        Command::Irq(a) => run_tune::irq(&Irq {
            dev: a.dev,
            plan: a.plan,
            cpus: a.cpus.unwrap_or_default(),
            change: a.apply && a.yes,
            apply: a.apply,
            state_dir: a.state_dir,
            root: a.root,
        }),
        Command::Kernel(a) => run_tune::kernel(a.profile, a.config.as_deref(), &a.root, a.strict),
        Command::Import(a) => run_tune::import(&a.file),
        Command::Presets => run_tune::presets(),
        Command::Rules => run_tune::rules(),
    }
}
