//! `connstorm tune` once its options are parsed: check, apply, revert, export, IRQ plans, the
//! kernel audit and import. The logic and the text live in the `tuning` crate
//! (`tuning::render`); this module composes the calls and returns the exit code.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use tuning::host::Severity;
use tuning::plan::Saved;
use tuning::plan::Snapshot;
use tuning::plan::{self, CheckOptions, Checked};
use tuning::render;
use tuning::sysctl::Preset;
use tuning::sysctl::ProcSys;

use super::args::{
    ApplyArgs, CheckArgs, ExportArgs, ExportFormat, ImportArgs, IrqArgs, KernelArgs, PlacementArgs,
    RevertArgs, SnapshotTopologyArgs, Source,
};
use crate::bad_input;
use crate::commands::Format;

/// Exit code of `check --strict` and `kernel --strict` when something is off.
const EXIT_OFF: i32 = 4;

impl Source {
    /// The source as `apply` arguments (for the command the plan names).
    fn args(&self) -> Vec<String> {
        match (&self.preset, self.system) {
            (Some(p), _) => vec!["--preset".into(), p.clone()],
            (None, true) => vec!["--system".into()],
            (None, false) => self
                .file
                .iter()
                .flat_map(|f| ["--file".into(), f.display().to_string()])
                .collect(),
        }
    }

    /// Loads the source (`None` when none was named); sysctl.d globs expand over `<root>/proc/sys`.
    fn load(&self, root: &Path) -> anyhow::Result<Option<Preset>> {
        if let Some(name) = &self.preset {
            return tuning::sysctl::named_preset(name)
                .map(Some)
                .map_err(bad_input);
        }
        let mut files = self.file.clone();
        if self.system {
            let found = tuning::sysctl::system_files(root);
            eprint!("{}", render::system_notes(&found));
            files = found
                .into_iter()
                .filter(|f| !f.masked)
                .map(|f| f.path)
                .collect();
            if files.is_empty() {
                let dirs = tuning::sysctl::SYSCTL_D_DIRS.join(", ");
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

/// Writes `text` to stdout.
fn out(text: &str) -> anyhow::Result<()> {
    // With context: a full stdout said only "No space left on device (os error 28)".
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())
        .and_then(|()| o.flush())
        .context("cannot write to stdout")
}

/// `tune presets`.
///
/// # Errors
/// Bad input when a built-in preset does not parse; an I/O error writing stdout.
pub fn presets() -> anyhow::Result<i32> {
    let all = tuning::sysctl::builtin_presets().map_err(|e| bad_input(e.to_string()))?;
    out(&render::presets(&all))?;
    Ok(0)
}

/// `tune rules`.
///
/// # Errors
/// An I/O error writing stdout.
pub fn rules() -> anyhow::Result<i32> {
    out(&render::rules())?;
    Ok(0)
}

/// `tune check`: the host against the source read under `--root`, or the doctor summary
/// without one; exit 4 with `--strict` when something is off.
///
/// # Errors
/// Bad input for a source that cannot be read; an I/O error writing stdout.
pub fn check(a: &CheckArgs) -> anyhow::Result<i32> {
    let (source, root, strict) = (&a.source, a.root.as_path(), a.strict);
    let (json, allow_decrease) = (a.format == Format::Json, a.allow_decrease);
    let exit = |off: bool| if strict && off { EXIT_OFF } else { 0 };
    let Some(preset) = source.load(root)? else {
        let f = tuning::advice::doctor(root);
        out(&if json {
            format!("{}\n", serde_json::to_string_pretty(&f)?)
        } else {
            format!(
                "connstorm doctor (host root {}: no preset or file given, so the host is checked)\n{}",
                root.display(),
                render::findings(&f)
            )
        })?;
        return Ok(exit(f.iter().any(|x| x.severity >= Severity::Warn)));
    };
    let io = ProcSys { root: root.into() };
    let c = checked(
        &preset,
        &io,
        CheckOptions {
            netns_only: !tuning::host::in_initial_netns(),
            allow_decrease,
            strict: false,
        },
    );
    out(&if json {
        let v = render::check_json(&preset, &c);
        format!("{}\n", serde_json::to_string_pretty(&v)?)
    } else {
        let command = render::apply_command(&source.args(), None, allow_decrease);
        render::check(&preset, &c, &command)
    })?;
    Ok(exit(c.off()))
}

/// `preset` checked against the host `io` reads, as `check` and `apply` both need it.
fn checked(preset: &Preset, io: &ProcSys, opts: CheckOptions) -> Checked {
    Checked::of(preset, io, opts)
}

fn enter_netns(netns: Option<&str>) -> anyhow::Result<()> {
    let Some(name) = netns else { return Ok(()) };
    tuning::host::enter_netns(name).map_err(|e| match e {
        tuning::host::NetnsError::BadName(_) | tuning::host::NetnsError::Open { .. } => {
            bad_input(e.to_string())
        }
        other => anyhow::Error::new(other),
    })
}

/// `tune apply`: the plan, and with `--yes` (without `--dry-run`) a snapshot, the writes and
/// their read-back.
///
/// # Errors
/// Bad input for a source that cannot be read, a namespace that cannot be entered, a plan
/// that would be refused, a `--state-dir` where no snapshot can be written (with `--yes`,
/// before anything is printed or changed); a failed apply (after the snapshot restores what
/// was written).
pub fn apply(a: &ApplyArgs) -> anyhow::Result<i32> {
    // Really change the host.
    let change = a.yes && !a.dry_run;
    if change {
        // Refused only once the plan was printed, exit 1, the OS error said three times.
        common::files::check_output_dir("--state-dir", &a.state_dir, "snapshots")?;
    }
    // Files are checked for syntax first (bad input before anything else), then read again
    // inside the namespace: globs expand over the keys that exist there (its interfaces).
    a.source.require(Path::new("/"))?;
    let netns = a.netns.as_deref();
    enter_netns(netns)?;
    let preset = a.source.require(Path::new("/"))?;
    let netns_only = netns.is_some() || !tuning::host::in_initial_netns();
    let mut io = ProcSys { root: "/".into() };
    let allow_decrease = a.allow_decrease;
    let opts = CheckOptions {
        netns_only,
        allow_decrease,
        strict: a.strict,
    };
    let c = checked(&preset, &io, opts);
    let command = render::apply_command_strict(&a.source.args(), netns, allow_decrease, a.strict);
    out(&render::plan(&preset, &c, netns_only, &command))?;
    if !change {
        out(&render::not_applied(&c.prediction, a.dry_run))?;
        return match render::refusal(&c.prediction) {
            Some(e) => Err(bad_input(e)),
            None => Ok(0),
        };
    }
    let reason = format!("apply {}", preset.title());
    let report = plan::apply_with(
        &c.rows,
        &mut io,
        Path::new("/"),
        &a.state_dir,
        &reason,
        plan::ApplyOptions { strict: a.strict },
    )
    .map_err(|e| match e {
        plan::ApplyError::Blocked { .. } => bad_input(e.to_string()),
        // Its message holds its causes: as a chain they were printed again after it.
        e => anyhow::anyhow!("apply: {e}"),
    })?;
    out(&render::applied(&report, netns))?;
    Ok(0)
}

/// `tune revert`: restores the snapshot (default: the newest in `--state-dir`), in `--netns`
/// when given; `--force` restores one from another boot or namespace.
///
/// # Errors
/// Bad input for a missing or foreign snapshot; an incomplete restore.
pub fn revert(a: &RevertArgs) -> anyhow::Result<i32> {
    enter_netns(a.netns.as_deref())?;
    let path = match &a.snapshot {
        Some(p) => p.clone(),
        None => Snapshot::latest(&a.state_dir).map_err(|e| bad_input(e.to_string()))?,
    };
    let snap = Snapshot::read(&path).map_err(|e| bad_input(e.to_string()))?;
    let mut io = ProcSys { root: "/".into() };
    let rep = plan::revert(&snap, &mut io, Path::new("/"), a.force).map_err(|e| match e {
        plan::RevertError::Incomplete(_) => anyhow::Error::new(e),
        other => bad_input(other.to_string()),
    })?;
    let irq_failed = tuning::plan::restore_irqs(Path::new("/"), &snap.saved);
    let irqs = snap
        .saved
        .iter()
        .filter(|s| matches!(s, Saved::IrqAffinity { .. }))
        .count();
    out(&render::reverted(&path, &rep, irqs))?;
    if !irq_failed.is_empty() {
        anyhow::bail!("could not restore the affinity of IRQs {irq_failed:?}");
    }
    Ok(0)
}

/// `tune import`: a shell script's sysctl writes as a sysctl.d file on stdout, what could not
/// be imported on stderr; exit 3 when no line was imported.
///
/// # Errors
/// Bad input for a file that cannot be read as text.
pub fn import(a: &ImportArgs) -> anyhow::Result<i32> {
    let file = a.file.as_path();
    let text = tuning::sysctl::read_text(file).map_err(|e| bad_input(e.to_string()))?;
    let origin = file.display().to_string();
    let lines = tuning::sysctl::import_script(&text);
    out(&tuning::sysctl::imported_sysctl_d(&lines, &origin))?;
    let (notes, imported) = render::import_notes(&lines, &origin);
    eprint!("{notes}");
    Ok(if imported == 0 { 3 } else { 0 })
}

/// `tune export`: the source as a sysctl.d file, a tuned profile or a kernel command line
/// (`--as`; current values read under `--root`).
///
/// # Errors
/// Bad input for a source that cannot be read.
pub fn export(a: &ExportArgs) -> anyhow::Result<i32> {
    let p = a.source.require(&a.root)?;
    let io = ProcSys {
        root: a.root.clone(),
    };
    out(&match a.format {
        ExportFormat::SysctlD => tuning::render::export_sysctl_d(&p, &io),
        ExportFormat::Tuned => tuning::render::export_tuned(&p, &io),
        ExportFormat::Cmdline => {
            if p.cmdline.is_empty() {
                eprintln!(
                    "connstorm: {} has no kernel command-line parameters",
                    p.title()
                );
            }
            format!("{}\n", tuning::render::export_cmdline(&p))
        }
    })?;
    Ok(0)
}

/// `tune irq`: the plan, and with `--apply --yes` a snapshot and the affinity writes.
///
/// # Errors
/// Bad input for an unknown device or an impossible plan, and (with `--apply --yes`) a
/// `--state-dir` where no snapshot can be written; a failed write.
pub fn irq(a: &IrqArgs) -> anyhow::Result<i32> {
    // Worker CPUs for the per-queue plan (none: the isolated CPUs of the NIC's node).
    let cpus = a.cpus.as_deref().unwrap_or_default();
    if a.apply && a.yes {
        common::files::check_output_dir("--state-dir", &a.state_dir, "snapshots")?;
    }
    let nic = tuning::host::Nic::read(&a.root, &a.dev).map_err(|e| bad_input(e.to_string()))?;
    let topo = tuning::host::Topology::read(&a.root).context("read CPU topology")?;
    let (moves, warnings) = tuning::plan::plan_irqs(&a.root, &nic, &topo, a.plan, cpus)
        .map_err(|e| bad_input(e.to_string()))?;
    let name = a.plan.to_string();
    out(&render::irq_plan(
        &name,
        &a.dev,
        nic.numa_node,
        &moves,
        &warnings,
    ))?;
    if !(a.apply && a.yes) {
        let how = if a.apply {
            "pass --yes to apply"
        } else {
            "pass --apply --yes to apply"
        };
        out(&format!("nothing changed ({how})\n"))?;
        return Ok(0);
    }
    let reason = format!("irq {} {name}", a.dev);
    // Its message holds its causes: as a chain they were printed again after it.
    let snap = tuning::plan::apply_irqs(&a.root, &moves, &a.state_dir, &reason)
        .map_err(|e| anyhow::anyhow!("apply IRQ plan: {e}"))?;
    out(&render::irq_applied(moves.len(), &snap))?;
    Ok(0)
}

/// `tune kernel`: the kernel config (`--config`, else the host's) audited for `--profile`;
/// exit 4 with `--strict` when something is off.
///
/// # Errors
/// Bad input for a config file that cannot be read; the host's config cannot be found.
pub fn kernel(a: &KernelArgs) -> anyhow::Result<i32> {
    use tuning::advice::{AuditRuntime as Runtime, KernelConfig};
    let (profile, root, strict) = (a.profile, a.root.as_path(), a.strict);
    let cfg = match a.config.as_deref() {
        Some(p) => KernelConfig::read_file(p).map_err(|e| bad_input(e.to_string()))?,
        None => KernelConfig::read_host(root)?,
    };
    let (rows, findings) =
        tuning::advice::audit_kernel_config(&cfg, profile, &Runtime::read(root, false));
    let name = serde_json::to_value(profile)?
        .as_str()
        .unwrap_or_default()
        .to_string();
    out(&render::kernel_audit(&cfg.origin, &name, &rows, &findings))?;
    let off = rows.iter().any(|r| r.severity > Severity::Info)
        || findings.iter().any(|f| f.severity > Severity::Info);
    Ok(if strict && off { EXIT_OFF } else { 0 })
}

/// The CPUs a placement under `root` may use: this process's affinity mask on the running host
/// (`/`), the snapshot's `Cpus_allowed_list` under another root (every online CPU when it has
/// none).
fn placement_allowed(root: &Path, topo: &tuning::host::Topology) -> Vec<usize> {
    if root == Path::new("/") {
        common::cpulist::usable()
    } else {
        tuning::host::allowed_cpus(root).unwrap_or_else(|_| topo.online.clone())
    }
}

/// `tune placement`: the planner's choice for this host or a snapshot, per node and SMT sibling
/// set, and why.
///
/// # Errors
/// Bad input: an unreadable topology, an unknown `--dev`, a placement that does not fit (naming
/// what it had, wanted and the options that change it).
pub fn placement(a: &PlacementArgs) -> anyhow::Result<i32> {
    use tuning::advice::{cpu_roles, place_cpus, worker_cpus, PlacementRequest};
    let topo = tuning::host::Topology::read(&a.root).map_err(|e| bad_input(e.to_string()))?;
    let nic_node = match (&a.dev, a.nic_node) {
        (Some(dev), _) => {
            tuning::host::Nic::read(&a.root, dev)
                .map_err(|e| bad_input(format!("--dev: {e}")))?
                .numa_node
        }
        (None, n) => n,
    };
    if let Some(n) = nic_node.filter(|n| !topo.nodes.iter().any(|x| x.id == *n)) {
        let nodes: Vec<String> = topo.nodes.iter().map(|x| x.id.to_string()).collect();
        return Err(bad_input(format!(
            "--nic-node {n}: this topology has nodes {}: give one of them",
            nodes.join(", ")
        )));
    }
    let mut req = PlacementRequest {
        server_workers: 0,
        load_workers: 0,
        housekeeping_cores: a.housekeeping_cores,
        nic_node,
        smt: a.smt,
        allowed: Some(placement_allowed(&a.root, &topo)),
    };
    let mut workers = worker_cpus(&topo, &req).len();
    // Isolated CPUs count only where a worker could run on them (online, in the allowed set), as
    // the planner counts them: an isolated list of offline CPUs, or of CPUs outside this
    // process's cpuset, is nothing isolated (it refused a 2-CPU host that `scale` plans).
    let isolated_usable = topo
        .isolated
        .iter()
        .any(|c| topo.online.contains(c) && req.allowed.as_ref().is_none_or(|a| a.contains(c)));
    // The defaults fit every host: where the housekeeping core leaves fewer than one server and
    // one load CPU and nothing is isolated, no core is set aside (as `scale` plans it).
    let mut note = None;
    if a.server_workers.is_none()
        && a.load_workers.is_none()
        && workers < 2
        && !isolated_usable
        && req.housekeeping_cores > 0
    {
        note = Some(format!(
            "{} usable CPU(s) and nothing isolated: 0 housekeeping core(s) set aside instead of \
             {}, so that a server and a load worker fit (IRQs and system work share the worker \
             CPUs)",
            req.allowed.as_ref().map_or(0, Vec::len),
            req.housekeeping_cores
        ));
        req.housekeeping_cores = 0;
        workers = worker_cpus(&topo, &req).len();
    }
    req.server_workers = a.server_workers.unwrap_or((workers / 3).max(1));
    req.load_workers = a
        .load_workers
        .unwrap_or_else(|| workers.saturating_sub(req.server_workers).max(1));
    // One side at 0 is a real host: load only (`bench --target HOST:PORT --load-cpus auto`
    // places its load workers exactly so, and multi-host runs put `connstorm load` on client
    // hosts) or server only (`connstorm server` for load from elsewhere). Both at 0 place
    // nothing.
    let mut side_note: Option<String> = None;
    match (req.server_workers, req.load_workers) {
        (0, 0) => {
            return Err(bad_input(
                "--server-workers 0 and --load-workers 0: nothing to place; give at least one \
                 worker (--server-workers 0 alone plans a load-only host, --load-workers 0 \
                 alone a server-only one)",
            ))
        }
        (0, _) => {
            side_note = Some(
                "--server-workers 0: a load-only host (as `bench --target HOST:PORT \
                 --load-cpus auto` places it, or `connstorm load --cpus LIST` against a \
                 server elsewhere)"
                    .into(),
            )
        }
        (_, 0) if a.load_workers.is_some() => {
            side_note = Some(
                "--load-workers 0: a server-only host (`connstorm server --cpus LIST` for \
                 load from elsewhere)"
                    .into(),
            )
        }
        _ => {}
    }
    let mut p = place_cpus(&topo, &req).map_err(|e| {
        let mut fix = vec!["fewer --server-workers or --load-workers".to_string()];
        if topo.smt_active() && !a.smt {
            fix.push("--smt".into());
        }
        if !isolated_usable && a.housekeeping_cores > 0 {
            fix.push("--housekeeping-cores 0".into());
        }
        bad_input(format!("placement: {e}; give {}", fix.join(", or ")))
    })?;
    p.notes.extend(note);
    p.notes.extend(side_note);
    let roles = cpu_roles(&topo, &req, &p);
    out(&if a.format == Format::Json {
        let v = serde_json::json!({ "placement": p, "cpus": roles });
        format!("{}\n", serde_json::to_string_pretty(&v)?)
    } else {
        render::placement(&topo, &req, &p, &roles)
    })?;
    Ok(0)
}

/// `tune snapshot-topology`: the topology files copied under `--out`.
///
/// # Errors
/// Bad input: an unreadable source topology, an `--out` in use or not writable.
pub fn snapshot_topology(a: &SnapshotTopologyArgs) -> anyhow::Result<i32> {
    common::files::check_output_dir("--out", &a.out, "the topology copy")?;
    let s =
        tuning::host::snapshot_topology(&a.root, &a.out).map_err(|e| bad_input(e.to_string()))?;
    out(&format!(
        "wrote {} files for {} CPUs on {} NUMA node(s) under {}: read them elsewhere with \
         `connstorm tune placement --root {}` or `connstorm scale --dry-run --root {}`\n",
        s.files.len(),
        s.cpus,
        s.nodes,
        a.out.display(),
        a.out.display(),
        a.out.display()
    ))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan's printed `connstorm tune apply …` names the source as it was given, so it can
    /// be run as printed.
    #[test]
    fn the_source_is_named_as_the_command_line_gave_it() {
        let preset = Source {
            preset: Some("gateway".into()),
            ..Source::default()
        };
        assert_eq!(preset.args(), ["--preset", "gateway"]);
        let system = Source {
            system: true,
            ..Source::default()
        };
        assert_eq!(system.args(), ["--system"]);
        let files = Source {
            file: vec!["a.conf".into(), "dir/b.conf".into()],
            ..Source::default()
        };
        assert_eq!(files.args(), ["--file", "a.conf", "--file", "dir/b.conf"]);
        assert!(Source::default().args().is_empty());
    }

    /// No source at all is the doctor's case for `check` (`None`), and bad input naming the
    /// three ways to give one for `apply` and `export`.
    #[test]
    fn no_source_is_none_for_check_and_bad_input_for_apply() {
        let none = Source::default();
        assert!(none.load(Path::new("/")).unwrap().is_none());
        let e = none.require(Path::new("/")).unwrap_err();
        assert!(e.downcast_ref::<common::error::BadInput>().is_some());
        assert!(e.to_string().contains("--preset NAME"), "{e}");
        let unknown = Source {
            preset: Some("no-such-preset".into()),
            ..Source::default()
        };
        let e = unknown.load(Path::new("/")).unwrap_err();
        assert!(e.downcast_ref::<common::error::BadInput>().is_some(), "{e}");
    }
}
