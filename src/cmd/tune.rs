//! `connstorm tune`: check, apply, revert and export sysctl presets and sysctl.d files; import
//! shell scripts; IRQ plans; kernel audit; the doctor summary; the rule table. The logic and
//! the text live in the `tuning` crate (`tuning::render`); `args` holds the clap definitions and
//! this file composes the calls.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use tuning::finding::Severity;
use tuning::plan::{self, CheckOptions, Checked, ProcSys};
use tuning::preset::Preset;
use tuning::render;
use tuning::snapshot::{Saved, Snapshot};

use crate::error::bad_input;

mod args;
pub use args::*;

/// Exit code of `check --strict` when something is off.
const EXIT_OFF: i32 = 4;

/// Runs `connstorm tune ...`.
///
/// # Errors
/// Bad presets, names and files are [`crate::error::BadInput`] (exit 2); host failures exit 1.
pub fn run(cmd: Command) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    match cmd {
        Command::Check(a) => check(&a, &mut out),
        Command::Apply(a) => apply(&a, &mut out),
        Command::Revert(a) => revert(&a, &mut out),
        Command::Export(a) => export(&a, &mut out),
        Command::Irq(a) => irq(&a, &mut out),
        Command::Kernel(a) => kernel(&a, &mut out),
        Command::Import(a) => import(&a.file, &mut out),
        Command::Presets => {
            let all = tuning::builtin::all().map_err(|e| bad_input(e.to_string()))?;
            out.write_all(render::host::presets(&all).as_bytes())?;
            Ok(0)
        }
        Command::Rules => {
            out.write_all(render::host::rules().as_bytes())?;
            Ok(0)
        }
    }
}

impl Source {
    /// Loads the source (`None` when none was named); sysctl.d globs expand over `<root>/proc/sys`.
    fn load(&self, root: &Path) -> anyhow::Result<Option<Preset>> {
        if let Some(name) = &self.preset {
            return tuning::builtin::named(name).map(Some).map_err(bad_input);
        }
        let mut files = self.file.clone();
        if self.system {
            let found = tuning::sysctld::system_files(root);
            eprint!("{}", render::apply::system_notes(&found));
            files = found
                .into_iter()
                .filter(|f| !f.masked)
                .map(|f| f.path)
                .collect();
            if files.is_empty() {
                let dirs = tuning::sysctld::DIRS.join(", ");
                return Err(bad_input(format!(
                    "no sysctl.d files under {} ({dirs}): nothing to check",
                    root.display()
                )));
            }
        }
        if files.is_empty() {
            return Ok(None);
        }
        Preset::load_all(&files, root)
            .map(Some)
            .map_err(|e| bad_input(e.to_string()))
    }

    fn require(&self, root: &Path) -> anyhow::Result<Preset> {
        self.load(root)?.ok_or_else(|| {
            bad_input("name a preset with --preset NAME, files with --file PATH, or --system")
        })
    }
}

fn check(a: &CheckArgs, out: &mut impl Write) -> anyhow::Result<i32> {
    let exit = |off: bool| if a.strict && off { EXIT_OFF } else { 0 };
    let json = a.format == OutputFormat::Json;
    let Some(preset) = a.source.load(&a.root)? else {
        let f = tuning::doctor::run(&a.root);
        if json {
            serde_json::to_writer_pretty(&mut *out, &f)?;
            writeln!(out)?;
        } else {
            write!(
                out,
                "connstorm doctor (host root {}: no preset or file given, so the host is checked)\n{}",
                a.root.display(),
                render::findings(&f)
            )?;
        }
        return Ok(exit(f.iter().any(|x| x.severity >= Severity::Warn)));
    };
    let io = ProcSys {
        root: a.root.clone(),
    };
    let netns_only = !tuning::snapshot::in_initial_netns();
    let allow_decrease = a.allow_decrease;
    let c = Checked::of(
        &preset,
        &io,
        CheckOptions {
            netns_only,
            allow_decrease,
        },
    );
    if json {
        serde_json::to_writer_pretty(&mut *out, &render::plan::check_json(&preset, &c))?;
        writeln!(out)?;
    } else {
        let command = render::apply::apply_command(&a.source.args(), None, allow_decrease);
        write!(out, "{}", render::plan::check(&preset, &c, &command))?;
    }
    Ok(exit(c.off()))
}

fn enter_netns(netns: Option<&str>) -> anyhow::Result<()> {
    let Some(name) = netns else { return Ok(()) };
    tuning::netns::enter(name).map_err(|e| match e {
        tuning::netns::NetnsError::BadName(_) | tuning::netns::NetnsError::Open { .. } => {
            bad_input(e.to_string())
        }
        other => anyhow::Error::new(other),
    })
}

fn apply(a: &ApplyArgs, out: &mut impl Write) -> anyhow::Result<i32> {
    // Files are checked for syntax first (bad input before anything else), then read again
    // inside the namespace: globs expand over the keys that exist there (its interfaces).
    a.source.require(Path::new("/"))?;
    let netns = a.netns.as_deref();
    enter_netns(netns)?;
    let preset = a.source.require(Path::new("/"))?;
    let netns_only = netns.is_some() || !tuning::snapshot::in_initial_netns();
    let mut io = ProcSys {
        root: PathBuf::from("/"),
    };
    let allow_decrease = a.allow_decrease;
    let c = Checked::of(
        &preset,
        &io,
        CheckOptions {
            netns_only,
            allow_decrease,
        },
    );
    let command = render::apply::apply_command(&a.source.args(), netns, allow_decrease);
    write!(
        out,
        "{}",
        render::plan::plan(&preset, &c, netns_only, &command)
    )?;
    if a.dry_run || !a.yes {
        write!(
            out,
            "{}",
            render::apply::not_applied(&c.prediction, a.dry_run)
        )?;
        out.flush()?;
        return match render::apply::refusal(&c.prediction) {
            Some(e) => Err(bad_input(e)),
            None => Ok(0),
        };
    }
    let reason = format!("apply {}", preset.title());
    let report = plan::apply(&c.rows, &mut io, Path::new("/"), &a.state_dir, &reason).map_err(
        |e| match e {
            plan::ApplyError::Blocked { .. } => bad_input(e.to_string()),
            e => anyhow::Error::new(e).context("apply"),
        },
    )?;
    write!(out, "{}", render::apply::applied(&report, netns))?;
    Ok(0)
}

fn revert(a: &RevertArgs, out: &mut impl Write) -> anyhow::Result<i32> {
    enter_netns(a.netns.as_deref())?;
    let path = match &a.snapshot {
        Some(p) => p.clone(),
        None => Snapshot::latest(&a.state_dir).map_err(|e| bad_input(e.to_string()))?,
    };
    let snap = Snapshot::read(&path).map_err(|e| bad_input(e.to_string()))?;
    let mut io = ProcSys {
        root: PathBuf::from("/"),
    };
    let rep = plan::revert(&snap, &mut io, Path::new("/"), a.force).map_err(|e| match e {
        plan::RevertError::Incomplete(_) => anyhow::Error::new(e),
        other => bad_input(other.to_string()),
    })?;
    let irq_failed = tuning::irq::restore(Path::new("/"), &snap.saved);
    let irqs = snap
        .saved
        .iter()
        .filter(|s| matches!(s, Saved::IrqAffinity { .. }))
        .count();
    write!(out, "{}", render::apply::reverted(&path, &rep, irqs))?;
    if !irq_failed.is_empty() {
        anyhow::bail!("could not restore the affinity of IRQs {irq_failed:?}");
    }
    Ok(0)
}

fn import(file: &Path, out: &mut impl Write) -> anyhow::Result<i32> {
    let text = tuning::preset::read_text(file).map_err(|e| bad_input(e.to_string()))?;
    let origin = file.display().to_string();
    let lines = tuning::import::import(&text);
    out.write_all(tuning::import::to_sysctl_d(&lines, &origin).as_bytes())?;
    let (notes, imported) = render::host::import_notes(&lines, &origin);
    eprint!("{notes}");
    Ok(if imported == 0 { 3 } else { 0 })
}

fn export(a: &ExportArgs, out: &mut impl Write) -> anyhow::Result<i32> {
    let p = a.source.require(&a.root)?;
    let io = ProcSys {
        root: a.root.clone(),
    };
    let text = match a.format {
        ExportFormat::SysctlD => tuning::export::sysctl_d(&p, &io),
        ExportFormat::Tuned => tuning::export::tuned(&p, &io),
        ExportFormat::Cmdline => {
            if p.cmdline.is_empty() {
                eprintln!(
                    "connstorm: {} has no kernel command-line parameters",
                    p.title()
                );
            }
            format!("{}\n", tuning::export::cmdline(&p))
        }
    };
    out.write_all(text.as_bytes())?;
    Ok(0)
}

fn irq(a: &IrqArgs, out: &mut impl Write) -> anyhow::Result<i32> {
    let nic = tuning::nic::Nic::read(&a.root, &a.dev).map_err(|e| bad_input(e.to_string()))?;
    let topo = tuning::topology::Topology::read(&a.root).context("read CPU topology")?;
    let cpus = a.cpus.as_deref().unwrap_or(&[]);
    let (moves, warnings) = tuning::irq::plan(&a.root, &nic, &topo, a.plan.into(), cpus)
        .map_err(|e| bad_input(e.to_string()))?;
    let name = a.plan.name();
    write!(
        out,
        "{}",
        render::host::irq_plan(&name, &a.dev, nic.numa_node, &moves, &warnings)
    )?;
    if !a.apply || !a.yes {
        let how = if a.apply {
            "pass --yes to apply"
        } else {
            "pass --apply --yes to apply"
        };
        writeln!(out, "nothing changed ({how})")?;
        return Ok(0);
    }
    let reason = format!("irq {} {name}", a.dev);
    let snap =
        tuning::irq::apply(&a.root, &moves, &a.state_dir, &reason).context("apply IRQ plan")?;
    write!(out, "{}", render::host::irq_applied(moves.len(), &snap))?;
    Ok(0)
}

fn kernel(a: &KernelArgs, out: &mut impl Write) -> anyhow::Result<i32> {
    use tuning::kconfig::{self, KernelConfig, Runtime};
    let cfg = match &a.config {
        Some(p) => KernelConfig::read_file(p).map_err(|e| bad_input(e.to_string()))?,
        None => KernelConfig::read_host(&a.root)?,
    };
    let (rows, findings) = kconfig::audit(&cfg, a.profile.into(), &Runtime::read(&a.root, false));
    let name = a.profile.name();
    write!(
        out,
        "{}",
        render::host::kernel_audit(&cfg.origin, &name, &rows, &findings)
    )?;
    let off = rows.iter().any(|r| r.severity > Severity::Info)
        || findings.iter().any(|f| f.severity > Severity::Info);
    Ok(if a.strict && off { EXIT_OFF } else { 0 })
}
