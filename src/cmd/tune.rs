//! `connstorm tune`: check, apply, revert and export sysctl presets; IRQ plans; kernel audit;
//! the doctor summary. The logic lives in the `tuning` crate; this file parses and prints.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use tuning::finding::{Finding, Severity};
use tuning::plan::{self, ProcSys, Row};
use tuning::preset::{Op, Preset};
use tuning::snapshot::{Saved, Snapshot, DEFAULT_STATE_DIR};

use crate::cli::bad_input;

/// Presets shipped in the binary (the files in `presets/`).
const BUILTIN: &[(&str, &str)] = &[
    ("c1m-server", include_str!("../../presets/c1m-server.toml")),
    (
        "loadgen-client",
        include_str!("../../presets/loadgen-client.toml"),
    ),
    (
        "low-latency",
        include_str!("../../presets/low-latency.toml"),
    ),
    ("throughput", include_str!("../../presets/throughput.toml")),
];

/// Exit code of `check --strict` when something is off.
const EXIT_OFF: i32 = 4;

/// Where the recommendations come from.
#[derive(Debug, Clone, ClapArgs)]
pub struct Source {
    /// A built-in preset: c1m-server, loadgen-client, low-latency, throughput.
    #[arg(long, conflicts_with = "file")]
    pub preset: Option<String>,
    /// A preset file (`*.toml`) or a sysctl.conf / sysctl.d file (`key = value`).
    #[arg(long)]
    pub file: Option<PathBuf>,
}

/// `connstorm tune` subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check the host against a preset (table of key, current, recommended, status, reason), or
    /// without one print a doctor summary.
    Check {
        /// What to check against (none: doctor summary).
        #[command(flatten)]
        source: Source,
        /// Exit with code 4 when something is off.
        #[arg(long)]
        strict: bool,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: OutputFormat,
        /// Read /proc and /sys under this root (for fixture trees).
        #[arg(long, default_value = "/", hide = true)]
        root: PathBuf,
    },
    /// Print the plan for a preset; with --yes save a snapshot, apply, read back.
    Apply {
        /// What to apply.
        #[command(flatten)]
        source: Source,
        /// Print the plan only (same as leaving out --yes).
        #[arg(long)]
        dry_run: bool,
        /// Enter /var/run/netns/NAME first; global keys are refused.
        #[arg(long)]
        netns: Option<String>,
        /// Where snapshots are saved.
        #[arg(long, default_value = DEFAULT_STATE_DIR)]
        state_dir: PathBuf,
        /// Really change the host.
        #[arg(long)]
        yes: bool,
    },
    /// Restore a snapshot (default: the newest in --state-dir). Running it twice is harmless.
    Revert {
        /// Snapshot file.
        snapshot: Option<PathBuf>,
        /// Where snapshots are saved.
        #[arg(long, default_value = DEFAULT_STATE_DIR)]
        state_dir: PathBuf,
        /// Enter /var/run/netns/NAME first (revert where you applied).
        #[arg(long)]
        netns: Option<String>,
        /// Restore a snapshot from another boot or namespace anyway.
        #[arg(long)]
        force: bool,
    },
    /// Print a preset as a sysctl.d file, a tuned profile or a kernel command line.
    ///
    /// Limits (`at-least`) are never lowered: a sysctl.d file gets the larger of the preset's
    /// value and this host's current one, a tuned profile tuned's `>` (only if higher) prefix.
    /// Entries marked manual (e.g. kernel.sched_rt_runtime_us = -1) are written commented out.
    Export {
        /// What to export.
        #[command(flatten)]
        source: Source,
        /// Output form.
        #[arg(long = "as", value_enum)]
        format: ExportFormat,
        /// Read current values under this root (for fixture trees).
        #[arg(long, default_value = "/", hide = true)]
        root: PathBuf,
    },
    /// Plan (and with --apply --yes, apply) IRQ → CPU affinity for a device's queue IRQs.
    Irq {
        /// Network device, e.g. eth0.
        #[arg(long)]
        dev: String,
        /// Layout.
        #[arg(long, value_enum)]
        plan: IrqPlanArg,
        /// Worker CPUs for --plan per-queue (default: isolated CPUs of the NIC's node).
        #[arg(long, value_parser = crate::units::parse_cpus)]
        cpus: Option<Vec<usize>>,
        /// Apply the plan (needs --yes).
        #[arg(long)]
        apply: bool,
        /// Really change the host.
        #[arg(long)]
        yes: bool,
        /// Where snapshots are saved.
        #[arg(long, default_value = DEFAULT_STATE_DIR)]
        state_dir: PathBuf,
        /// Read /proc and /sys under this root (for fixture trees).
        #[arg(long, default_value = "/", hide = true)]
        root: PathBuf,
    },
    /// Audit the kernel config (and runtime state) for a profile.
    Kernel {
        /// What the host is for.
        #[arg(long, value_enum, default_value = "server")]
        profile: ProfileArg,
        /// Config file (default: /proc/config.gz, then /boot/config-$(uname -r)).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Exit with code 4 when something is off.
        #[arg(long)]
        strict: bool,
        /// Read /proc and /sys under this root (for fixture trees).
        #[arg(long, default_value = "/", hide = true)]
        root: PathBuf,
    },
}

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned table.
    Text,
    /// JSON on stdout.
    Json,
}

/// `--as` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// A file for /etc/sysctl.d/.
    SysctlD,
    /// A tuned profile (tuned.conf with [sysctl] and [bootloader]).
    Tuned,
    /// The kernel command-line parameters to add.
    Cmdline,
}

/// `--plan` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum IrqPlanArg {
    /// All queue IRQs on housekeeping CPUs.
    Housekeeping,
    /// Spread over the NIC's NUMA node.
    Spread,
    /// Queue i → worker CPU i.
    PerQueue,
}

/// `--profile` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ProfileArg {
    /// Real-time, isolated CPUs.
    Rt,
    /// Connection-rate server.
    Server,
    /// Desktop.
    Desktop,
}

/// Runs `connstorm tune ...`.
///
/// # Errors
/// Bad presets, names and files are [`crate::cli::BadInput`] (exit 2); host failures exit 1.
pub fn run(cmd: Command) -> anyhow::Result<i32> {
    match cmd {
        Command::Check {
            source,
            strict,
            format,
            root,
        } => check(&source, strict, format, &root),
        Command::Apply {
            source,
            dry_run,
            netns,
            state_dir,
            yes,
        } => apply(&source, dry_run, netns.as_deref(), &state_dir, yes),
        Command::Revert {
            snapshot,
            state_dir,
            netns,
            force,
        } => revert(snapshot, &state_dir, netns.as_deref(), force),
        Command::Export {
            source,
            format,
            root,
        } => export(&source, format, &root),
        Command::Irq {
            dev,
            plan,
            cpus,
            apply,
            yes,
            state_dir,
            root,
        } => irq(&dev, plan, cpus, apply, yes, &state_dir, &root),
        Command::Kernel {
            profile,
            config,
            strict,
            root,
        } => kernel(profile, config, strict, &root),
    }
}

fn load(source: &Source) -> anyhow::Result<Option<Preset>> {
    if let Some(name) = &source.preset {
        let Some((_, text)) = BUILTIN.iter().find(|(n, _)| n == name) else {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            return Err(bad_input(format!(
                "unknown preset {name:?}: choose one of {}, or pass --file",
                names.join(", ")
            )));
        };
        return Preset::parse_toml(text, &format!("builtin:{name}"))
            .map(Some)
            .map_err(|e| bad_input(e.to_string()));
    }
    if let Some(path) = &source.file {
        return Preset::load(path)
            .map(Some)
            .map_err(|e| bad_input(e.to_string()));
    }
    Ok(None)
}

fn require(source: &Source) -> anyhow::Result<Preset> {
    load(source)?
        .ok_or_else(|| bad_input("name a preset with --preset NAME or a file with --file PATH"))
}

fn op_sign(op: Op) -> &'static str {
    match op {
        Op::Set => "",
        Op::AtLeast => ">=",
        Op::AtMost => "<=",
    }
}

/// Writes an aligned table: every column as wide as its widest cell or header, two spaces
/// apart, the last column (free text) unpadded. Widths count characters, not bytes.
fn print_table(
    out: &mut impl Write,
    headers: &[&str],
    rows: &[Vec<String>],
) -> std::io::Result<()> {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let last = cells.len().saturating_sub(1);
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i == last {
                    c.clone()
                } else {
                    let fill = widths[i].saturating_sub(c.chars().count());
                    format!("{c}{}", " ".repeat(fill))
                }
            })
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let header: Vec<String> = headers.iter().map(|h| (*h).to_string()).collect();
    writeln!(out, "{}", line(&header))?;
    for r in rows {
        writeln!(out, "{}", line(r))?;
    }
    Ok(())
}

fn print_rows(out: &mut impl Write, rows: &[Row]) -> std::io::Result<()> {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let why = if r.note.is_empty() {
                r.entry.reason.clone()
            } else {
                format!("{} — {}", r.note, r.entry.reason)
            };
            vec![
                r.entry.key.as_str().to_string(),
                r.scope.to_string(),
                r.current.as_deref().unwrap_or("-").to_string(),
                format!("{}{}", op_sign(r.entry.op), r.entry.value),
                r.status.label().to_string(),
                why,
            ]
        })
        .collect();
    print_table(
        out,
        &["key", "scope", "current", "recommended", "status", "reason"],
        &cells,
    )
}

fn print_findings(out: &mut impl Write, f: &[Finding]) -> std::io::Result<()> {
    for x in f {
        writeln!(
            out,
            "{:<5}  {:<9}  {}",
            x.severity.to_string(),
            x.topic,
            x.message
        )?;
    }
    Ok(())
}

fn netns_only() -> bool {
    !tuning::snapshot::in_initial_netns()
}

fn check(source: &Source, strict: bool, format: OutputFormat, root: &Path) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    let Some(preset) = load(source)? else {
        let f = tuning::doctor::run(root);
        let off = f.iter().any(|x| x.severity >= Severity::Warn);
        if format == OutputFormat::Json {
            serde_json::to_writer_pretty(&mut out, &f)?;
            writeln!(out)?;
            return Ok(if strict && off { EXIT_OFF } else { 0 });
        }
        writeln!(out, "connstorm doctor ({})", root.display())?;
        print_findings(&mut out, &f)?;
        return Ok(if strict && off { EXIT_OFF } else { 0 });
    };
    let rows = plan::check(
        &preset,
        &ProcSys {
            root: root.to_path_buf(),
        },
        netns_only(),
    );
    let off = rows.iter().filter(|r| r.status.is_off()).count();
    if format == OutputFormat::Json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
        return Ok(if strict && off > 0 { EXIT_OFF } else { 0 });
    }
    writeln!(
        out,
        "preset {} ({}): {}",
        preset.name, preset.origin, preset.description
    )?;
    print_rows(&mut out, &rows)?;
    writeln!(out, "{off} of {} key(s) off", rows.len())?;
    Ok(if strict && off > 0 { EXIT_OFF } else { 0 })
}

fn enter_netns(netns: Option<&str>) -> anyhow::Result<()> {
    if let Some(name) = netns {
        tuning::netns::enter(name).map_err(|e| match e {
            tuning::netns::NetnsError::BadName(_) | tuning::netns::NetnsError::Open { .. } => {
                bad_input(e.to_string())
            }
            other => anyhow::Error::new(other),
        })?;
    }
    Ok(())
}

fn apply(
    source: &Source,
    dry_run: bool,
    netns: Option<&str>,
    state_dir: &Path,
    yes: bool,
) -> anyhow::Result<i32> {
    let preset = require(source)?;
    enter_netns(netns)?;
    let only_netns = netns.is_some() || netns_only();
    let mut io = ProcSys {
        root: PathBuf::from("/"),
    };
    let rows = plan::check(&preset, &io, only_netns);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "plan for preset {} ({}){}:",
        preset.name,
        preset.origin,
        if only_netns {
            " in a child network namespace: global keys refused"
        } else {
            ""
        }
    )?;
    print_rows(&mut out, &rows)?;
    let todo = rows.iter().filter(|r| r.status.needs_write()).count();
    if dry_run || !yes {
        writeln!(
            out,
            "{todo} change(s) planned; nothing changed ({})",
            if dry_run {
                "--dry-run"
            } else {
                "pass --yes to apply"
            }
        )?;
        return Ok(0);
    }
    let report = plan::apply(
        &rows,
        &mut io,
        Path::new("/"),
        state_dir,
        &format!("apply preset {}", preset.name),
    )
    .context("apply")?;
    for (k, old, new) in &report.changed {
        writeln!(out, "set {k}: {old} -> {new}")?;
    }
    for (k, why) in &report.skipped {
        writeln!(out, "skipped {k}: {why}")?;
    }
    match &report.snapshot {
        Some(p) => writeln!(
            out,
            "{} change(s) applied and read back; snapshot {} (undo: connstorm tune revert {})",
            report.changed.len(),
            p.display(),
            p.display()
        )?,
        None => writeln!(out, "nothing to change")?,
    }
    Ok(0)
}

fn revert(
    snapshot: Option<PathBuf>,
    state_dir: &Path,
    netns: Option<&str>,
    force: bool,
) -> anyhow::Result<i32> {
    enter_netns(netns)?;
    let path = match snapshot {
        Some(p) => p,
        None => Snapshot::latest(state_dir).map_err(|e| bad_input(e.to_string()))?,
    };
    let snap = Snapshot::read(&path).map_err(|e| bad_input(e.to_string()))?;
    let mut io = ProcSys {
        root: PathBuf::from("/"),
    };
    let rep = plan::revert(&snap, &mut io, Path::new("/"), force).map_err(|e| match e {
        plan::RevertError::Incomplete(_) => anyhow::Error::new(e),
        other => bad_input(other.to_string()),
    })?;
    let irq_failed = tuning::irq::restore(Path::new("/"), &snap.saved);
    let irqs = snap
        .saved
        .iter()
        .filter(|s| matches!(s, Saved::IrqAffinity { .. }))
        .count();
    let mut out = std::io::stdout().lock();
    for k in &rep.restored {
        writeln!(out, "restored {k}")?;
    }
    writeln!(
        out,
        "{}: {} restored, {} already at the saved value{}",
        path.display(),
        rep.restored.len(),
        rep.unchanged.len(),
        if irqs > 0 {
            format!(", {irqs} IRQ affinit(ies) checked")
        } else {
            String::new()
        }
    )?;
    if !irq_failed.is_empty() {
        anyhow::bail!("could not restore the affinity of IRQs {irq_failed:?}");
    }
    Ok(0)
}

fn export(source: &Source, format: ExportFormat, root: &Path) -> anyhow::Result<i32> {
    let p = require(source)?;
    let io = ProcSys {
        root: root.to_path_buf(),
    };
    let text = match format {
        ExportFormat::SysctlD => tuning::export::sysctl_d(&p, &io),
        ExportFormat::Tuned => tuning::export::tuned(&p, &io),
        ExportFormat::Cmdline => {
            if p.cmdline.is_empty() {
                eprintln!(
                    "connstorm: preset {} has no kernel command-line parameters",
                    p.name
                );
            }
            format!("{}\n", tuning::export::cmdline(&p))
        }
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(0)
}

fn irq(
    dev: &str,
    plan_arg: IrqPlanArg,
    cpus: Option<Vec<usize>>,
    apply: bool,
    yes: bool,
    state_dir: &Path,
    root: &Path,
) -> anyhow::Result<i32> {
    use tuning::irq::IrqPlan;
    let nic = tuning::nic::Nic::read(root, dev).map_err(|e| bad_input(e.to_string()))?;
    let topo = tuning::topology::Topology::read(root).context("read CPU topology")?;
    let which = match plan_arg {
        IrqPlanArg::Housekeeping => IrqPlan::Housekeeping,
        IrqPlanArg::Spread => IrqPlan::Spread,
        IrqPlanArg::PerQueue => IrqPlan::PerQueue,
    };
    let (moves, warnings) =
        tuning::irq::plan(root, &nic, &topo, which, cpus.as_deref().unwrap_or(&[]))
            .map_err(|e| bad_input(e.to_string()))?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "IRQ plan {which:?} for {dev} (NUMA node {}):",
        nic.numa_node.map_or("none".to_string(), |n| n.to_string())
    )?;
    writeln!(out, "{:>5}  {:<24}  {:<12}  to", "irq", "name", "now")?;
    for m in &moves {
        writeln!(
            out,
            "{:>5}  {:<24}  {:<12}  {}",
            m.irq,
            m.name,
            m.from
                .as_deref()
                .map_or("-".into(), tuning::cpulist::format),
            tuning::cpulist::format(&m.to)
        )?;
    }
    print_findings(&mut out, &warnings)?;
    if !apply || !yes {
        writeln!(
            out,
            "nothing changed ({})",
            if apply {
                "pass --yes to apply"
            } else {
                "pass --apply --yes to apply"
            }
        )?;
        return Ok(0);
    }
    let snap = tuning::irq::apply(root, &moves, state_dir, &format!("irq {dev} {which:?}"))
        .context("apply IRQ plan")?;
    writeln!(
        out,
        "{} IRQ(s) moved; snapshot {} (undo: connstorm tune revert {})",
        moves.len(),
        snap.display(),
        snap.display()
    )?;
    Ok(0)
}

fn kernel(
    profile: ProfileArg,
    config: Option<PathBuf>,
    strict: bool,
    root: &Path,
) -> anyhow::Result<i32> {
    use tuning::kconfig::{self, KernelConfig, Profile, Runtime};
    let cfg = match &config {
        Some(p) => KernelConfig::read_file(p).map_err(|e| bad_input(e.to_string()))?,
        None => KernelConfig::read_host(root)?,
    };
    let prof = match profile {
        ProfileArg::Rt => Profile::Rt,
        ProfileArg::Server => Profile::Server,
        ProfileArg::Desktop => Profile::Desktop,
    };
    let (rows, findings) = kconfig::audit(&cfg, prof, &Runtime::read(root, false));
    let mut out = std::io::stdout().lock();
    writeln!(out, "kernel config {} for profile {prof:?}:", cfg.origin)?;
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
    print_table(
        &mut out,
        &["item", "current", "recommended", "status", "why"],
        &cells,
    )?;
    print_findings(&mut out, &findings)?;
    let off = rows.iter().any(|r| r.severity > Severity::Info)
        || findings.iter().any(|f| f.severity > Severity::Info);
    Ok(if strict && off { EXIT_OFF } else { 0 })
}
