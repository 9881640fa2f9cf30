//! The arguments of `connstorm tune` (clap definitions; [`super::run`](mod@super::run) runs
//! them).

// Doc comments of CLI options are the `--help` text, where `[sysctl]` or `greet[:BYTES]` mean
// what they say, not intra-doc links.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;

use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use tuning::advice::AuditProfile as Profile;
use tuning::plan::IrqPlan;
use tuning::plan::DEFAULT_STATE_DIR;

/// Where the recommendations come from: a built-in preset, files, or the host's sysctl.d
/// configuration (at most one of them is given; none means "no source").
#[derive(Debug, Clone, Default, ClapArgs)]
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

/// The examples after `connstorm tune --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # How this host is set up for connection rate (the doctor summary)
  connstorm tune check
  # What the c1m-server preset would change; then change it (a snapshot is saved first)
  connstorm tune apply --preset c1m-server
  connstorm tune apply --preset c1m-server --yes
  # Put back what the last apply changed
  connstorm tune revert";

/// The examples after `connstorm tune presets --help` and in its man page.
pub const PRESETS_EXAMPLES: &str = "\
Examples:
  # The built-in presets, one line each
  connstorm tune presets
  # Then this host against one of them
  connstorm tune check --preset throughput";

/// The examples after `connstorm tune rules --help` and in its man page.
pub const RULES_EXAMPLES: &str = "\
Examples:
  # Every rule with its source: aliases, kernel ranges, harmful values, settings that need another
  connstorm tune rules
  # The rules about one key
  connstorm tune rules | grep somaxconn";

/// `connstorm tune` subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check the host against a preset (table of key, current, recommended, status, reason), or
    /// without one print a doctor summary.
    Check(CheckArgs),
    /// Print the plan for a preset; with --yes save a snapshot, apply, read back.
    ///
    /// The plan says what --yes will do: which keys it writes, which it skips and why, and
    /// what makes it refuse. Lines are treated as systemd-sysctl treats them: a missing key
    /// (ENOENT) is skipped with a warning and a write the kernel refuses (EPERM, EACCES, EROFS:
    /// a status key, a value a child network namespace may not set, a read-only /proc/sys) with
    /// a note, and the rest applies; a value the kernel rejects (EINVAL) or a lowered limit
    /// without --allow-decrease refuses the whole plan. --strict makes every failure refuse,
    /// except on `-` lines. Without --yes a plan that --yes would refuse exits 2.
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
    #[command(alias = "list", after_help = PRESETS_EXAMPLES)]
    Presets,
    /// Turn a shell script's `echo V > /proc/sys/...` and `sysctl -w k=v` lines into a sysctl.d
    /// file (stdout); lines it does not understand (ulimit, modprobe, /sys writes, ...) are
    /// listed on stderr with what to do instead. Exits 3 when no line could be imported.
    Import(ImportArgs),
    /// Print the rule table: aliases, legacy names, status keys, module keys, kernel ranges,
    /// harmful values and settings that need another, each with its source.
    #[command(after_help = RULES_EXAMPLES)]
    Rules,
    /// Audit the kernel config (and runtime state) for a profile.
    Kernel(KernelArgs),
    /// Show which CPUs get server workers, load workers and housekeeping, per NUMA node and SMT
    /// sibling set, and why: for this host, or for another one's topology snapshot (--root).
    Placement(PlacementArgs),
    /// Copy the CPU topology files (sysfs, /proc/cpuinfo, the NICs' NUMA nodes) into a
    /// directory, for `tune placement --root DIR` and `scale --dry-run --root DIR` elsewhere.
    SnapshotTopology(SnapshotTopologyArgs),
}

/// The examples after `connstorm tune placement --help` and in its man page.
pub const PLACEMENT_EXAMPLES: &str = "\
Examples:
  # This host: where `--server-cpus auto --load-cpus auto` would put the workers, and why
  connstorm tune placement
  # A big machine's snapshot: 16 server and 32 load workers, the NIC on node 1
  connstorm tune placement --root ./big-host --server-workers 16 --load-workers 32 --nic-node 1";

/// Arguments of `connstorm tune placement`.
#[derive(Debug, ClapArgs)]
#[command(after_help = PLACEMENT_EXAMPLES)]
pub struct PlacementArgs {
    /// Server workers (default: a third of the worker CPUs, at least one).
    #[arg(long, value_name = "N")]
    pub server_workers: Option<usize>,
    /// Load workers (default: the worker CPUs the server leaves).
    #[arg(long, value_name = "N")]
    pub load_workers: Option<usize>,
    /// Physical cores set aside for housekeeping when no CPU is isolated.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub housekeeping_cores: usize,
    /// Let both SMT siblings of a core run workers (after every core has one).
    #[arg(long)]
    pub smt: bool,
    /// NUMA node of the NIC: its CPUs are preferred.
    #[arg(long, value_name = "NODE", conflicts_with = "dev")]
    pub nic_node: Option<usize>,
    /// Network device whose NUMA node is preferred (read under --root).
    #[arg(long, value_name = "DEV")]
    pub dev: Option<String>,
    /// Read the topology under this root: `/` for this host, or a directory written by
    /// `connstorm tune snapshot-topology` on another.
    #[arg(long, default_value = "/", value_name = "DIR")]
    pub root: PathBuf,
    /// Output on stdout: `text` or `json` (the placement and every CPU's role).
    #[arg(long, value_enum, default_value = "text")]
    pub format: crate::commands::Format,
}

/// The examples after `connstorm tune snapshot-topology --help` and in its man page.
pub const SNAPSHOT_TOPOLOGY_EXAMPLES: &str = "\
Examples:
  # On the big machine: its CPU topology into ./big-host (copy it here afterwards)
  connstorm tune snapshot-topology --out big-host
  # Here: that machine's placement and scale plan
  connstorm tune placement --root big-host";

/// Arguments of `connstorm tune snapshot-topology`.
#[derive(Debug, ClapArgs)]
#[command(after_help = SNAPSHOT_TOPOLOGY_EXAMPLES)]
pub struct SnapshotTopologyArgs {
    /// A new (or empty) directory for the copy.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Read the host under this root (for fixture trees).
    #[arg(long, default_value = "/", hide = true)]
    pub root: PathBuf,
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

/// The examples after `connstorm tune check --help` and in its man page.
pub const CHECK_EXAMPLES: &str = "\
Examples:
  # The doctor summary of this host
  connstorm tune check
  # This host against a preset; exit 4 when something is off (for scripts)
  connstorm tune check --preset c1m-server --strict
  # Against the host's own sysctl.d configuration, as JSON
  connstorm tune check --system --format json";

/// Arguments of `connstorm tune check`.
#[derive(Debug, ClapArgs)]
#[command(after_help = CHECK_EXAMPLES)]
pub struct CheckArgs {
    /// What to check against (none: doctor summary).
    #[command(flatten)]
    pub source: Source,
    /// Exit with code 4 when something is off.
    #[arg(long)]
    pub strict: bool,
    /// Output on stdout: `text` (aligned table) or `json`.
    #[arg(long, value_enum, default_value = "text")]
    pub format: crate::commands::Format,
    /// Read /proc and /sys (and, with --system, the sysctl.d directories) under this root.
    #[arg(long, default_value = "/")]
    pub root: PathBuf,
    /// Treat lowering a limit as allowed (as `apply --allow-decrease` would).
    #[arg(long)]
    pub allow_decrease: bool,
}

/// The examples after `connstorm tune apply --help` and in its man page.
pub const APPLY_EXAMPLES: &str = "\
Examples:
  # The plan only: what --yes would write, skip and refuse
  connstorm tune apply --preset c1m-server
  # Apply it: a snapshot, the writes, and a read-back of each
  connstorm tune apply --preset c1m-server --yes
  # Your sysctl.d file, inside the network namespace `bench` (global keys are refused)
  connstorm tune apply --file 90-tuning.conf --netns bench --yes";

/// Arguments of `connstorm tune apply`.
#[derive(Debug, ClapArgs)]
#[command(after_help = APPLY_EXAMPLES)]
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
    /// Make every write that would fail an error, as `systemd-sysctl --strict`: a missing key
    /// (ENOENT) and a refused write (EPERM, EACCES, EROFS) refuse the plan instead of being
    /// skipped; lines with a `-` prefix are still skipped.
    #[arg(long)]
    pub strict: bool,
}

/// The examples after `connstorm tune revert --help` and in its man page.
pub const REVERT_EXAMPLES: &str = "\
Examples:
  # Restore the newest snapshot (of tune apply or tune irq --apply)
  connstorm tune revert
  # The newest one, inside the network namespace it was applied in
  connstorm tune revert --netns bench
  # One snapshot file, even one taken before a reboot
  connstorm tune revert /var/lib/connstorm/snapshot-001764572400-000000000.json --force";

/// Arguments of `connstorm tune revert`.
#[derive(Debug, ClapArgs)]
#[command(after_help = REVERT_EXAMPLES)]
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

/// The examples after `connstorm tune export --help` and in its man page.
pub const EXPORT_EXAMPLES: &str = "\
Examples:
  # A preset as a file for /etc/sysctl.d/ (limits never lowered below this host's values)
  connstorm tune export --preset c1m-server --as sysctl-d > 90-connstorm.conf
  # As a tuned profile, and the kernel command line it needs
  connstorm tune export --preset low-latency --as tuned > tuned.conf
  connstorm tune export --preset low-latency --as cmdline";

/// Arguments of `connstorm tune export`.
#[derive(Debug, ClapArgs)]
#[command(after_help = EXPORT_EXAMPLES)]
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

/// The examples after `connstorm tune irq --help` and in its man page.
pub const IRQ_EXAMPLES: &str = "\
Examples:
  # The plan: eth0's queue IRQs on the housekeeping CPUs
  connstorm tune irq --dev eth0 --plan housekeeping
  # Queue i on worker CPU i of 2-9, applied (a snapshot is saved first)
  connstorm tune irq --dev eth0 --plan per-queue --cpus 2-9 --apply --yes";

/// A parsed `--cpus` list: an alias, so clap takes the parser's whole `Vec` as one value (with
/// `Option<Vec<usize>>` it expects one CPU per value, and reading the option panicked).
pub type CpuList = Vec<usize>;

/// Arguments of `connstorm tune irq`.
#[derive(Debug, ClapArgs)]
#[command(after_help = IRQ_EXAMPLES)]
pub struct IrqArgs {
    /// Network device, e.g. eth0.
    #[arg(long)]
    pub dev: String,
    /// Layout.
    #[arg(long, value_enum)]
    pub plan: IrqPlan,
    /// Worker CPUs for --plan per-queue (default: isolated CPUs of the NIC's node).
    #[arg(long, value_parser = common::units::parse_cpus)]
    pub cpus: Option<CpuList>,
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

/// The examples after `connstorm tune kernel --help` and in its man page.
pub const KERNEL_EXAMPLES: &str = "\
Examples:
  # The running kernel's config and state, audited for a connection-rate server
  connstorm tune kernel
  # A config file before booting it, for an isolated-CPU real-time host; exit 4 when off
  connstorm tune kernel --config /boot/config-6.18.0 --profile rt --strict";

/// Arguments of `connstorm tune kernel`.
#[derive(Debug, ClapArgs)]
#[command(after_help = KERNEL_EXAMPLES)]
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

/// The examples after `connstorm tune import --help` and in its man page.
pub const IMPORT_EXAMPLES: &str = "\
Examples:
  # A tuning script's sysctl writes as a sysctl.d file (what it cannot import: on stderr)
  connstorm tune import tune-host.sh > 90-tune-host.conf
  # Then this host against that file
  connstorm tune check --file 90-tune-host.conf";

/// Arguments of `connstorm tune import`.
#[derive(Debug, ClapArgs)]
#[command(after_help = IMPORT_EXAMPLES)]
pub struct ImportArgs {
    /// The script.
    pub file: PathBuf,
}
