//! `connstorm tune`: check, apply, revert and export sysctl presets and sysctl.d files; import
//! shell scripts; IRQ plans; kernel audit; the doctor summary; the rule table. The logic lives in
//! the `tuning` crate; this file parses and prints.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use tuning::finding::{Finding, Severity};
use tuning::plan::{self, CheckOptions, Prediction, ProcSys, Row};
use tuning::preset::{Op, Preset};
use tuning::snapshot::{Saved, Snapshot, DEFAULT_STATE_DIR};

use crate::error::bad_input;

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
    /// A built-in preset (list them with `connstorm tune presets`).
    #[arg(long, conflicts_with_all = ["file", "system"])]
    pub preset: Option<String>,
    /// A preset file (`*.toml`), or sysctl.conf / sysctl.d files with the full sysctl.d(5)
    /// syntax (globs, `-` prefixes, `/` separators). Repeat for several files: they are read in
    /// the order given and a later line for the same key wins.
    #[arg(long)]
    pub file: Vec<PathBuf>,
    /// The host's sysctl.d configuration as systemd-sysctl reads it: /etc, /run,
    /// /usr/local/lib and /usr/lib `sysctl.d/*.conf` (for one file name /etc beats /run beats
    /// /usr; then sorted by name, later wins).
    #[arg(long, conflicts_with = "file")]
    pub system: bool,
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
        /// Read /proc and /sys (and, with --system, the sysctl.d directories) under this root.
        #[arg(long, default_value = "/")]
        root: PathBuf,
        /// Treat lowering a limit as allowed (as `apply --allow-decrease` would).
        #[arg(long)]
        allow_decrease: bool,
    },
    /// Print the plan for a preset; with --yes save a snapshot, apply, read back.
    ///
    /// The plan says what --yes will do: which keys it writes, which it skips and why, and
    /// what makes it refuse (a missing or read-only key, a value the kernel rejects, a lowered
    /// limit without --allow-decrease, a global key in a child network namespace). Without
    /// --yes a plan that --yes would refuse exits 2.
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
        /// Allow lowering a limit (somaxconn, tcp_max_syn_backlog, ...) below its current value.
        #[arg(long)]
        allow_decrease: bool,
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
    /// List the built-in presets, one line each.
    #[command(alias = "list")]
    Presets,
    /// Turn a shell script's `echo V > /proc/sys/...` and `sysctl -w k=v` lines into a sysctl.d
    /// file (stdout); lines it does not understand (ulimit, modprobe, /sys writes, ...) are
    /// listed on stderr with what to do instead. Exits 3 when no line could be imported.
    Import {
        /// The script.
        file: PathBuf,
    },
    /// Print the rule table: aliases, legacy names, status keys, module keys, kernel ranges,
    /// harmful values and settings that need another, each with its source.
    Rules,
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
/// Bad presets, names and files are [`crate::error::BadInput`] (exit 2); host failures exit 1.
pub fn run(cmd: Command) -> anyhow::Result<i32> {
    match cmd {
        Command::Check {
            source,
            strict,
            format,
            root,
            allow_decrease,
        } => check(&source, strict, format, &root, allow_decrease),
        Command::Apply {
            source,
            dry_run,
            netns,
            state_dir,
            yes,
            allow_decrease,
        } => apply(
            &source,
            dry_run,
            netns.as_deref(),
            &state_dir,
            yes,
            allow_decrease,
        ),
        Command::Presets => presets(),
        Command::Import { file } => import(&file),
        Command::Rules => rules(),
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

fn builtin(name: &str) -> anyhow::Result<Preset> {
    let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
        return Err(bad_input(format!(
            "unknown preset {name:?}: choose one of {} (`connstorm tune presets`), or pass --file",
            names.join(", ")
        )));
    };
    Preset::parse_toml(text, &format!("builtin:{name}")).map_err(|e| bad_input(e.to_string()))
}

/// Loads the source; sysctl.d globs expand over `<root>/proc/sys`.
fn load(source: &Source, root: &Path) -> anyhow::Result<Option<Preset>> {
    if let Some(name) = &source.preset {
        return builtin(name).map(Some);
    }
    let files: Vec<PathBuf> = if source.system {
        let found = tuning::sysctld::system_files(root);
        for f in &found {
            for sh in &f.shadowed {
                eprintln!(
                    "connstorm tune: {} is shadowed by {} (same name, more important directory)",
                    sh.display(),
                    f.path.display()
                );
            }
            if f.masked {
                eprintln!(
                    "connstorm tune: {} is masked (a symlink to /dev/null): not read",
                    f.path.display()
                );
            }
        }
        let files: Vec<PathBuf> = found
            .into_iter()
            .filter(|f| !f.masked)
            .map(|f| f.path)
            .collect();
        if files.is_empty() {
            return Err(bad_input(format!(
                "no sysctl.d files under {} ({}): nothing to check",
                root.display(),
                tuning::sysctld::DIRS.join(", ")
            )));
        }
        files
    } else {
        source.file.clone()
    };
    if files.is_empty() {
        return Ok(None);
    }
    Preset::load_all(&files, root)
        .map(Some)
        .map_err(|e| bad_input(e.to_string()))
}

fn require(source: &Source, root: &Path) -> anyhow::Result<Preset> {
    load(source, root)?.ok_or_else(|| {
        bad_input("name a preset with --preset NAME, files with --file PATH, or --system")
    })
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
    print_table(out, &headers, &cells)
}

/// Everything after the table: what became of each line of a sysctl.d file, warnings,
/// contradictions.
fn print_details(
    out: &mut impl Write,
    preset: &Preset,
    rows: &[Row],
    contradictions: &[plan::Contradiction],
) -> std::io::Result<()> {
    let lines: Vec<_> = preset
        .lines
        .iter()
        .filter(|l| {
            !matches!(
                l.fate,
                tuning::sysctld::Fate::Blank | tuning::sysctld::Fate::Comment
            )
        })
        .collect();
    if !lines.is_empty() {
        writeln!(out, "lines:")?;
        for l in lines {
            writeln!(out, "  {}  {}  -> {}", l.origin, l.text, l.describe())?;
        }
    }
    for r in rows {
        for w in &r.warnings {
            writeln!(out, "warning: {}: {w}", r.entry.key)?;
        }
    }
    for c in contradictions {
        writeln!(out, "contradiction: {}", c.message)?;
    }
    Ok(())
}

/// One paragraph saying exactly what `apply --yes` does with these rows.
fn print_prediction(out: &mut impl Write, p: &Prediction) -> std::io::Result<()> {
    let list = |v: &[(tuning::sysctl::Key, String)], sep: &str| {
        v.iter()
            .map(|(k, x)| format!("{k}{sep}{x}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    if !p.refusals.is_empty() {
        writeln!(
            out,
            "with --yes: REFUSED, nothing would change — {}",
            list(&p.refusals, ": ")
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "with --yes: writes {} key(s){}{}",
        p.writes.len(),
        if p.writes.is_empty() {
            String::new()
        } else {
            format!(" ({})", list(&p.writes, " = "))
        },
        if p.skips.is_empty() {
            String::new()
        } else {
            format!(
                "; leaves {} alone ({})",
                p.skips.len(),
                list(&p.skips, ": ")
            )
        }
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

fn check(
    source: &Source,
    strict: bool,
    format: OutputFormat,
    root: &Path,
    allow_decrease: bool,
) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    let Some(preset) = load(source, root)? else {
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
    let io = ProcSys {
        root: root.to_path_buf(),
    };
    let rows = plan::check(
        &preset,
        &io,
        CheckOptions {
            netns_only: netns_only(),
            allow_decrease,
        },
    );
    let contradictions = plan::contradictions(&rows, &io);
    let prediction = Prediction::of(&rows);
    let off = rows.iter().filter(|r| r.status.is_off()).count() + contradictions.len();
    if format == OutputFormat::Json {
        let v = serde_json::json!({
            "preset": preset.name,
            "origin": preset.origin,
            "rows": rows,
            "lines": preset.lines,
            "contradictions": contradictions,
            "prediction": prediction,
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(if strict && off > 0 { EXIT_OFF } else { 0 });
    }
    writeln!(
        out,
        "preset {} ({}): {}",
        preset.name, preset.origin, preset.description
    )?;
    print_rows(&mut out, &rows)?;
    print_details(&mut out, &preset, &rows, &contradictions)?;
    print_prediction(&mut out, &prediction)?;
    writeln!(
        out,
        "{} of {} key(s) off{}",
        off - contradictions.len(),
        rows.len(),
        if contradictions.is_empty() {
            String::new()
        } else {
            format!(", {} contradiction(s)", contradictions.len())
        }
    )?;
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

/// The command that undoes an apply, as it must be typed: the same namespace and snapshot.
fn undo_command(snapshot: &Path, netns: Option<&str>) -> String {
    let mut c = String::from("connstorm tune revert");
    if let Some(n) = netns {
        c.push_str(&format!(" --netns {n}"));
    }
    c.push_str(&format!(" {}", snapshot.display()));
    c
}

fn apply(
    source: &Source,
    dry_run: bool,
    netns: Option<&str>,
    state_dir: &Path,
    yes: bool,
    allow_decrease: bool,
) -> anyhow::Result<i32> {
    let preset = require(source, Path::new("/"))?;
    enter_netns(netns)?;
    let only_netns = netns.is_some() || netns_only();
    let mut io = ProcSys {
        root: PathBuf::from("/"),
    };
    let rows = plan::check(
        &preset,
        &io,
        CheckOptions {
            netns_only: only_netns,
            allow_decrease,
        },
    );
    let contradictions = plan::contradictions(&rows, &io);
    let prediction = Prediction::of(&rows);
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
    print_details(&mut out, &preset, &rows, &contradictions)?;
    print_prediction(&mut out, &prediction)?;
    if dry_run || !yes {
        writeln!(
            out,
            "{} change(s) planned; nothing changed ({})",
            prediction.writes.len(),
            if dry_run {
                "--dry-run"
            } else {
                "pass --yes to apply"
            }
        )?;
        out.flush()?;
        if !prediction.refusals.is_empty() {
            return Err(bad_input(format!(
                "--yes would refuse this plan and change nothing: {}",
                prediction
                    .refusals
                    .iter()
                    .map(|(k, why)| format!("{k} ({why})"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )));
        }
        return Ok(0);
    }
    let report = match plan::apply(
        &rows,
        &mut io,
        Path::new("/"),
        state_dir,
        &format!("apply preset {}", preset.name),
    ) {
        Ok(r) => r,
        Err(e @ plan::ApplyError::Blocked { .. }) => return Err(bad_input(e.to_string())),
        Err(e) => return Err(anyhow::Error::new(e).context("apply")),
    };
    for (k, old, new) in &report.changed {
        writeln!(out, "set {k}: {old} -> {new}")?;
    }
    for (k, why) in &report.skipped {
        writeln!(out, "skipped {k}: {why}")?;
    }
    match &report.snapshot {
        Some(p) => writeln!(
            out,
            "{} change(s) applied and read back; snapshot {} (undo: {})",
            report.changed.len(),
            p.display(),
            undo_command(p, netns)
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

fn presets() -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    let all: Vec<Preset> = BUILTIN
        .iter()
        .map(|(n, _)| builtin(n))
        .collect::<anyhow::Result<_>>()?;
    let width = all.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in &all {
        writeln!(
            out,
            "{:<width$}  {} ({} sysctl(s))",
            p.name,
            p.description,
            p.sysctls.len()
        )?;
    }
    Ok(0)
}

fn import(file: &Path) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", file.display())))?;
    let origin = file.display().to_string();
    let lines = tuning::import::import(&text);
    let body = tuning::import::to_sysctl_d(&lines, &origin);
    std::io::stdout().lock().write_all(body.as_bytes())?;
    let mut imported = 0;
    for l in &lines {
        for o in &l.outcomes {
            match o {
                tuning::import::Outcome::Sysctl { .. } => imported += 1,
                tuning::import::Outcome::NotUnderstood { advice } => eprintln!(
                    "connstorm tune import: {origin}:{} not imported: {}\n  -> {advice}",
                    l.line, l.text
                ),
                tuning::import::Outcome::Skipped { .. } => {}
            }
        }
    }
    eprintln!("connstorm tune import: {imported} sysctl write(s) imported from {origin}");
    Ok(if imported == 0 { 3 } else { 0 })
}

fn rules() -> anyhow::Result<i32> {
    let rows: Vec<Vec<String>> = tuning::rules::table()
        .into_iter()
        .map(|r| vec![r.kind.to_string(), r.key, r.rule, r.source.to_string()])
        .collect();
    print_table(
        &mut std::io::stdout().lock(),
        &["kind", "key", "rule", "source"],
        &rows,
    )?;
    Ok(0)
}

fn export(source: &Source, format: ExportFormat, root: &Path) -> anyhow::Result<i32> {
    let p = require(source, root)?;
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
    let plan_name = plan_arg
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string());
    writeln!(
        out,
        "IRQ plan {plan_name} for {dev} (NUMA node {}):",
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
    let snap = tuning::irq::apply(root, &moves, state_dir, &format!("irq {dev} {plan_name}"))
        .context("apply IRQ plan")?;
    writeln!(
        out,
        "{} IRQ(s) moved; snapshot {} (undo: {})",
        moves.len(),
        snap.display(),
        undo_command(&snap, None)
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
    let profile_name = profile
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string());
    writeln!(
        out,
        "kernel config {} for profile {profile_name}:",
        cfg.origin
    )?;
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
