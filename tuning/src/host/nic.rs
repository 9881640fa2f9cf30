//! A network device's placement facts: NUMA node, queue IRQs and their affinity, RPS/XPS masks,
//! and whether irqbalance runs.
//!
//! Files (Documentation/networking/scaling.rst, Documentation/core-api/irq/irq-affinity.rst):
//! `<root>/sys/class/net/DEV/device/{numa_node,local_cpulist,msi_irqs/}` (for virtio NICs the
//! PCI function is the parent: `device/../msi_irqs`), `<root>/proc/interrupts` (IRQ names),
//! `<root>/proc/irq/N/{smp_affinity_list,effective_affinity_list}` (effective: 4.15+),
//! `<root>/sys/class/net/DEV/queues/{rx-N/rps_cpus,tx-N/xps_cpus}` (hex masks) and
//! `<root>/proc/PID/comm` to find irqbalance.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cpulist;

/// A device could not be read.
#[derive(Debug, thiserror::Error)]
pub enum NicError {
    /// No such device.
    #[error("no network device {dev} ({path} does not exist); list devices with `ip link`")]
    NoDevice {
        /// The name given.
        dev: String,
        /// The path looked for.
        path: PathBuf,
    },
    /// The name could escape /sys/class/net.
    #[error("invalid device name {0:?}: a device name has no `/`, is not `.`/`..` and is at most 15 bytes (IFNAMSIZ)")]
    BadName(String),
}

/// One IRQ of a device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueIrq {
    /// IRQ number.
    pub irq: u32,
    /// Its name in /proc/interrupts (e.g. `virtio2-input.0`, `eth0-TxRx-3`).
    pub name: String,
    /// `smp_affinity_list` (the requested CPUs).
    pub affinity: Option<Vec<usize>>,
    /// `effective_affinity_list` (where it is delivered).
    pub effective: Option<Vec<usize>>,
}

/// Facts about a network device.
#[derive(Debug, Clone, Serialize)]
pub struct Nic {
    /// Device name.
    pub dev: String,
    /// NUMA node of the device (`None` when -1 or absent: no NUMA affinity).
    pub numa_node: Option<usize>,
    /// CPUs local to the device (`device/local_cpulist`).
    pub local_cpus: Option<Vec<usize>>,
    /// Queue IRQs (configuration/async vectors left out), in IRQ order.
    pub queue_irqs: Vec<QueueIrq>,
    /// `rx-N` → rps_cpus hex mask.
    pub rps: BTreeMap<String, String>,
    /// `tx-N` → xps_cpus hex mask.
    pub xps: BTreeMap<String, String>,
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// IRQ number → name from `/proc/interrupts` (the last column).
pub(crate) fn irq_names(root: &Path) -> BTreeMap<u32, String> {
    let text = std::fs::read_to_string(root.join("proc/interrupts")).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (n, rest) = l.trim_start().split_once(':')?;
            let irq: u32 = n.trim().parse().ok()?;
            Some((
                irq,
                rest.split_whitespace().last().unwrap_or("").to_string(),
            ))
        })
        .collect()
}

/// Reads an IRQ's requested and effective affinity.
pub(crate) fn irq_affinity(root: &Path, irq: u32) -> (Option<Vec<usize>>, Option<Vec<usize>>) {
    let dir = root.join(format!("proc/irq/{irq}"));
    let list = |f: &str| read_trim(&dir.join(f)).and_then(|s| cpulist::parse(&s).ok());
    (list("smp_affinity_list"), list("effective_affinity_list"))
}

fn is_queue_name(name: &str) -> bool {
    !["config", "async", "misc", "fw", "event", "ctrl"]
        .iter()
        .any(|s| name.ends_with(s))
}

impl Nic {
    /// Reads device `dev` under `root`.
    ///
    /// # Errors
    /// [`NicError`] for a bad name or a missing device.
    pub fn read(root: &Path, dev: &str) -> Result<Nic, NicError> {
        if dev.is_empty() || dev.len() > 15 || dev.contains('/') || dev == "." || dev == ".." {
            return Err(NicError::BadName(dev.to_string()));
        }
        let base = root.join("sys/class/net").join(dev);
        if !base.exists() {
            return Err(NicError::NoDevice {
                dev: dev.to_string(),
                path: base,
            });
        }
        let device = base.join("device");
        let numa_node = read_trim(&device.join("numa_node"))
            .and_then(|s| s.parse::<i64>().ok())
            .and_then(|n| usize::try_from(n).ok());
        let local_cpus =
            read_trim(&device.join("local_cpulist")).and_then(|s| cpulist::parse(&s).ok());
        let names = irq_names(root);
        let mut irqs: Vec<u32> = Vec::new();
        for dir in [device.join("msi_irqs"), device.join("../msi_irqs")] {
            if let Ok(rd) = std::fs::read_dir(&dir) {
                irqs = rd
                    .flatten()
                    .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
                    .collect();
                break;
            }
        }
        if irqs.is_empty() {
            let prefix = format!("{dev}-");
            irqs = names
                .iter()
                .filter(|(_, n)| *n == dev || n.starts_with(&prefix))
                .map(|(i, _)| *i)
                .collect();
        }
        irqs.sort_unstable();
        let queue_irqs = irqs
            .into_iter()
            .map(|irq| (irq, names.get(&irq).cloned().unwrap_or_default()))
            .filter(|(_, n)| is_queue_name(n))
            .map(|(irq, name)| {
                let (affinity, effective) = irq_affinity(root, irq);
                QueueIrq {
                    irq,
                    name,
                    affinity,
                    effective,
                }
            })
            .collect();
        let mut rps = BTreeMap::new();
        let mut xps = BTreeMap::new();
        if let Ok(rd) = std::fs::read_dir(base.join("queues")) {
            for e in rd.flatten() {
                let q = e.file_name().to_string_lossy().to_string();
                if let Some(v) = read_trim(&e.path().join("rps_cpus")) {
                    rps.insert(q.clone(), v);
                }
                if let Some(v) = read_trim(&e.path().join("xps_cpus")) {
                    xps.insert(q, v);
                }
            }
        }
        Ok(Nic {
            dev: dev.to_string(),
            numa_node,
            local_cpus,
            queue_irqs,
            rps,
            xps,
        })
    }
}

/// PIDs whose `comm` is `irqbalance` under `<root>/proc`.
pub(crate) fn irqbalance_pids(root: &Path) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir(root.join("proc")) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = rd
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .parse::<u32>()
                .ok()
                .map(|pid| (pid, e.path()))
        })
        .filter(|(_, p)| read_trim(&p.join("comm")).is_some_and(|c| c == "irqbalance"))
        .map(|(pid, _)| pid)
        .collect();
    pids.sort_unstable();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_names_that_escape_sysfs() {
        for bad in ["", "..", "a/b", "x234567890123456"] {
            assert!(
                matches!(Nic::read(Path::new("/"), bad), Err(NicError::BadName(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            Nic::read(Path::new("/"), "nosuchdev0"),
            Err(NicError::NoDevice { .. })
        ));
    }

    #[test]
    fn reads_loopback_without_irqs() {
        let lo = Nic::read(Path::new("/"), "lo").unwrap();
        assert!(lo.queue_irqs.is_empty());
    }
}
