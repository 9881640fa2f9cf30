//! The arguments of `connstorm tune` (clap definitions only; see `super` for what runs).

use std::path::PathBuf;

use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use tuning::advice::AuditProfile as Profile;
use tuning::plan::IrqPlan;
use tuning::plan::DEFAULT_STATE_DIR;

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
    Check(CheckArgs),
    /// Print the plan for a preset; with --yes save a snapshot, apply, read back.
    ///
    /// The plan says what --yes will do: which keys it writes, which it skips and why, and
    /// what makes it refuse (a missing or read-only key, a value the kernel rejects, a lowered
    /// limit without --allow-decrease, a global key in a child network namespace). Without
    /// --yes a plan that --yes would refuse exits 2.
    Apply(ApplyArgs),
    /// Restore a snapshot (default: the newest in --state-dir). Running it twice is harmless.
    Revert(RevertArgs),
    /// Print a preset as a sysctl.d file, a tuned profile or a kernel command line.
    ///
    /// Limits (`at-least`) are never lowered: a sysctl.d file gets the larger of the preset's
    /// value and this host's current one, a tuned profile tuned's `>` (only if higher) prefix.
    /// Entries marked manual (e.g. kernel.sched_rt_runtime_us = -1) are written commented out.
    Export(ExportArgs),
    /// Plan (and with --apply --yes, apply) IRQ → CPU affinity for a device's queue IRQs.
    Irq(IrqArgs),
    /// List the built-in presets, one line each.
    #[command(alias = "list")]
    Presets,
    /// Turn a shell script's `echo V > /proc/sys/...` and `sysctl -w k=v` lines into a sysctl.d
    /// file (stdout); lines it does not understand (ulimit, modprobe, /sys writes, ...) are
    /// listed on stderr with what to do instead. Exits 3 when no line could be imported.
    Import(ImportArgs),
    /// Print the rule table: aliases, legacy names, status keys, module keys, kernel ranges,
    /// harmful values and settings that need another, each with its source.
    Rules,
    /// Audit the kernel config (and runtime state) for a profile.
    Kernel(KernelArgs),
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

/// Arguments of `connstorm tune check`.
#[derive(Debug, ClapArgs)]
pub struct CheckArgs {
    /// What to check against (none: doctor summary).
    #[command(flatten)]
    pub source: Source,
    /// Exit with code 4 when something is off.
    #[arg(long)]
    pub strict: bool,
    /// Output on stdout: `text` (aligned table) or `json`.
    #[arg(long, value_enum, default_value = "text")]
    pub format: crate::cli::Format,
    /// Read /proc and /sys (and, with --system, the sysctl.d directories) under this root.
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Treat lowering a limit as allowed (as `apply --allow-decrease` would).
    #[arg(long)]
    pub allow_decrease: bool,
}

/// Arguments of `connstorm tune apply`.
#[derive(Debug, ClapArgs)]
pub struct ApplyArgs {
    /// What to apply.
    #[command(flatten)]
    pub source: Source,
    /// Print the plan only (same as leaving out --yes).
    #[arg(long)]
    pub dry_run: bool,
    /// Enter /var/run/netns/NAME first; global keys are refused.
    #[arg(long)]
    pub netns: Option<String>,
    /// Where snapshots are saved.
    #[arg(long, default_value = DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// Really change the host.
    #[arg(long)]
    pub yes: bool,
    /// Allow lowering a limit (somaxconn, tcp_max_syn_backlog, ...) below its current value.
    #[arg(long)]
    pub allow_decrease: bool,
}

/// Arguments of `connstorm tune revert`.
#[derive(Debug, ClapArgs)]
pub struct RevertArgs {
    /// Snapshot file.
    pub snapshot: Option<PathBuf>,
    /// Where snapshots are saved.
    #[arg(long, default_value = DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// Enter /var/run/netns/NAME first (revert where you applied).
    #[arg(long)]
    pub netns: Option<String>,
    /// Restore a snapshot from another boot or namespace anyway.
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `connstorm tune export`.
#[derive(Debug, ClapArgs)]
pub struct ExportArgs {
    /// What to export.
    #[command(flatten)]
    pub source: Source,
    /// Output form.
    #[arg(long = "as", value_enum)]
    pub format: ExportFormat,
    /// Read current values under this root (for fixture trees).
    #[arg(long, default_value = "/", hide = true)]
    pub root: PathBuf,
}

/// Arguments of `connstorm tune irq`.
#[derive(Debug, ClapArgs)]
pub struct IrqArgs {
    /// Network device, e.g. eth0.
    #[arg(long)]
    pub dev: String,
    /// Layout.
    #[arg(long, value_enum)]
    pub plan: IrqPlan,
    /// Worker CPUs for --plan per-queue (default: isolated CPUs of the NIC's node).
    #[arg(long, value_parser = crate::units::parse_cpus)]
    pub cpus: Option<Vec<usize>>,
    /// Apply the plan (needs --yes).
    #[arg(long)]
    pub apply: bool,
    /// Really change the host.
    #[arg(long)]
    pub yes: bool,
    /// Where snapshots are saved.
    #[arg(long, default_value = DEFAULT_STATE_DIR)]
    pub state_dir: PathBuf,
    /// Read /proc and /sys under this root (for fixture trees).
    #[arg(long, default_value = "/", hide = true)]
    pub root: PathBuf,
}

/// Arguments of `connstorm tune kernel`.
#[derive(Debug, ClapArgs)]
pub struct KernelArgs {
    /// What the host is for.
    #[arg(long, value_enum, default_value = "server")]
    pub profile: Profile,
    /// Config file (default: /proc/config.gz, then /boot/config-$(uname -r)).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Exit with code 4 when something is off.
    #[arg(long)]
    pub strict: bool,
    /// Read /proc and /sys under this root (for fixture trees).
    #[arg(long, default_value = "/", hide = true)]
    pub root: PathBuf,
}

/// Arguments of `connstorm tune import`.
#[derive(Debug, ClapArgs)]
pub struct ImportArgs {
    /// The script.
    pub file: PathBuf,
}
