//! IRQ → CPU plans for a device's queue IRQs, applied and reverted through [`Snapshot`]s.
//!
//! Plans (Documentation/networking/scaling.rst; Documentation/core-api/irq/irq-affinity.rst):
//! - [`IrqPlan::Housekeeping`]: every queue IRQ may run on any housekeeping (non-isolated) CPU;
//! - [`IrqPlan::Spread`]: queue i → one CPU of the NIC's NUMA node, round robin, one logical CPU
//!   per physical core first, housekeeping CPUs before isolated ones;
//! - [`IrqPlan::PerQueue`]: queue i → worker CPU i (RSS queue i serves the worker pinned on CPU i).
//!
//! Writes go to `<root>/proc/irq/N/smp_affinity_list` (Documentation/core-api/irq/irq-affinity.rst).
//! irqbalance rewrites affinities periodically and undoes a plan: the plan warns when it runs.

use std::path::Path;

use serde::Serialize;

use crate::cpulist;
use crate::host::{irq_affinity, irqbalance_pids, Finding, Nic, Severity, Topology};
use crate::plan::{Saved, Snapshot, SnapshotError};

/// Which layout to plan.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IrqPlan {
    /// All queue IRQs on the housekeeping CPUs.
    #[cfg_attr(feature = "clap", value(help = "All queue IRQs on housekeeping CPUs."))]
    Housekeeping,
    /// Spread over the NIC's NUMA node.
    #[cfg_attr(feature = "clap", value(help = "Spread over the NIC's NUMA node."))]
    Spread,
    /// Queue i → worker CPU i.
    #[cfg_attr(feature = "clap", value(help = "Queue i → worker CPU i."))]
    PerQueue,
}

impl std::fmt::Display for IrqPlan {
    /// The name the command line uses (`housekeeping`, `spread`, `per-queue`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IrqPlan::Housekeeping => "housekeeping",
            IrqPlan::Spread => "spread",
            IrqPlan::PerQueue => "per-queue",
        })
    }
}

/// One IRQ's move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IrqMove {
    /// IRQ number.
    pub irq: u32,
    /// Its name.
    pub name: String,
    /// Current `smp_affinity_list`.
    pub from: Option<Vec<usize>>,
    /// Planned CPUs.
    pub to: Vec<usize>,
}

/// A plan could not be made or applied.
#[derive(Debug, thiserror::Error)]
pub enum IrqError {
    /// The device has no queue IRQs.
    #[error("{dev} has no queue IRQs (virtual device, or MSI-X not in use): nothing to place")]
    NoIrqs {
        /// Device.
        dev: String,
    },
    /// No CPU fits the plan.
    #[error("no CPU for plan {plan}: {why}")]
    NoCpus {
        /// The plan.
        plan: IrqPlan,
        /// Why.
        why: String,
    },
    /// The snapshot could not be saved; nothing changed.
    #[error("nothing changed: could not save the snapshot: {0}")]
    Snapshot(#[from] SnapshotError),
    /// A write failed; earlier writes were restored.
    #[error("writing /proc/irq/{irq}/smp_affinity_list failed: {cause}; restored {restored} IRQ(s){}", if .unrestored.is_empty() { String::new() } else { format!(", could NOT restore IRQs {:?} (run `connstorm tune revert`)", .unrestored) })]
    Write {
        /// The IRQ.
        irq: u32,
        /// Why (errno text; EIO/EINVAL for managed IRQs whose affinity the kernel owns).
        cause: String,
        /// Number restored.
        restored: usize,
        /// IRQs that could not be restored.
        unrestored: Vec<u32>,
    },
}

/// Plans `plan` for `nic`. `workers` is used by [`IrqPlan::PerQueue`] (empty = the isolated
/// CPUs of the NIC's node, else the node's CPUs). Returns the moves and warnings (irqbalance
/// running, IRQs landing on isolated CPUs).
///
/// # Errors
/// [`IrqError::NoIrqs`], [`IrqError::NoCpus`].
pub fn plan_irqs(
    root: &Path,
    nic: &Nic,
    topo: &Topology,
    plan: IrqPlan,
    workers: &[usize],
) -> Result<(Vec<IrqMove>, Vec<Finding>), IrqError> {
    if nic.queue_irqs.is_empty() {
        return Err(IrqError::NoIrqs {
            dev: nic.dev.clone(),
        });
    }
    let node_cpus: Vec<usize> = match nic
        .numa_node
        .and_then(|n| topo.nodes.iter().find(|x| x.id == n))
    {
        Some(n) => n.cpus.clone(),
        None => topo.online.clone(),
    };
    let housekeeping = topo.housekeeping();
    let targets: Vec<Vec<usize>> = match plan {
        IrqPlan::Housekeeping => {
            if housekeeping.is_empty() {
                return Err(IrqError::NoCpus {
                    plan,
                    why: "every online CPU is isolated".into(),
                });
            }
            vec![housekeeping.clone(); nic.queue_irqs.len()]
        }
        IrqPlan::Spread => {
            // One CPU per physical core first (first sibling), housekeeping before isolated.
            let mut order: Vec<usize> = node_cpus
                .iter()
                .copied()
                .filter(|c| topo.cpu(*c).is_none_or(|x| x.siblings.first() == Some(c)))
                .collect();
            let rest: Vec<usize> = node_cpus
                .iter()
                .copied()
                .filter(|c| !order.contains(c))
                .collect();
            order.extend(rest);
            order.sort_by_key(|c| topo.isolated.contains(c));
            (0..nic.queue_irqs.len())
                .map(|i| vec![order[i % order.len()]])
                .collect()
        }
        IrqPlan::PerQueue => {
            let w: Vec<usize> = if !workers.is_empty() {
                workers.to_vec()
            } else {
                let iso: Vec<usize> = node_cpus
                    .iter()
                    .copied()
                    .filter(|c| topo.isolated.contains(c))
                    .collect();
                if iso.is_empty() {
                    node_cpus.clone()
                } else {
                    iso
                }
            };
            if w.is_empty() {
                return Err(IrqError::NoCpus {
                    plan,
                    why: "no worker CPUs".into(),
                });
            }
            (0..nic.queue_irqs.len())
                .map(|i| vec![w[i % w.len()]])
                .collect()
        }
    };
    let moves: Vec<IrqMove> = nic
        .queue_irqs
        .iter()
        .zip(targets)
        .map(|(q, to)| IrqMove {
            irq: q.irq,
            name: q.name.clone(),
            from: q.affinity.clone(),
            to,
        })
        .collect();
    let mut warnings = Vec::new();
    let pids = irqbalance_pids(root);
    if !pids.is_empty() {
        warnings.push(Finding::new(Severity::Warn, "irq", format!(
            "irqbalance is running (pid {pids:?}) and will rewrite these affinities; stop it (systemctl stop irqbalance) or ban the IRQs (IRQBALANCE_BANNED_CPUS / --banirq)")));
    }
    for m in &moves {
        let on_iso: Vec<usize> =
            m.to.iter()
                .copied()
                .filter(|c| topo.isolated.contains(c))
                .collect();
        if !on_iso.is_empty() {
            warnings.push(Finding::new(Severity::Warn, "irq", format!(
                "IRQ {} ({}) lands on isolated CPU(s) {}: interrupts and softirq work will run there", m.irq, m.name, cpulist::format(&on_iso))));
        }
    }
    Ok((moves, warnings))
}

fn write_affinity(root: &Path, irq: u32, cpus: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let p = root.join(format!("proc/irq/{irq}/smp_affinity_list"));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(p)?;
    std::io::Write::write_all(&mut f, cpus.as_bytes())
}

fn read_affinity(root: &Path, irq: u32) -> Option<String> {
    irq_affinity(root, irq).0.map(|c| cpulist::format(&c))
}

/// Applies `moves` under `root`: saves a snapshot in `state_dir`, writes each affinity, reads it
/// back, restores on failure. Returns the snapshot path.
///
/// # Errors
/// [`IrqError::Snapshot`] (nothing changed), [`IrqError::Write`] (earlier writes restored).
pub fn apply_irqs(
    root: &Path,
    moves: &[IrqMove],
    state_dir: &Path,
    what: &str,
) -> Result<std::path::PathBuf, IrqError> {
    let mut snap = Snapshot::new(root, what);
    for m in moves {
        snap.saved.push(Saved::IrqAffinity {
            irq: m.irq,
            cpus: read_affinity(root, m.irq).unwrap_or_default(),
        });
    }
    let path = snap.write_atomic(state_dir)?;
    for (i, m) in moves.iter().enumerate() {
        let want = cpulist::format(&m.to);
        let res = write_affinity(root, m.irq, &want)
            .map_err(|e| e.to_string())
            .and_then(|()| match read_affinity(root, m.irq) {
                Some(v) if v == want => Ok(()),
                other => Err(format!("read back {other:?} after writing {want:?}")),
            });
        if let Err(cause) = res {
            let failed = restore_irqs(root, &snap.saved[..=i]);
            return Err(IrqError::Write {
                irq: m.irq,
                cause,
                restored: i + 1 - failed.len(),
                unrestored: failed,
            });
        }
    }
    Ok(path)
}

/// Restores the IRQ entries of `saved` where they differ; returns the IRQs that failed.
pub fn restore_irqs(root: &Path, saved: &[Saved]) -> Vec<u32> {
    let mut failed = Vec::new();
    for s in saved.iter().rev() {
        let Saved::IrqAffinity { irq, cpus } = s else {
            continue;
        };
        if read_affinity(root, *irq).as_deref() == Some(cpus.as_str()) {
            continue;
        }
        if write_affinity(root, *irq, cpus).is_err()
            || read_affinity(root, *irq).as_deref() != Some(cpus.as_str())
        {
            failed.push(*irq);
        }
    }
    failed
}
