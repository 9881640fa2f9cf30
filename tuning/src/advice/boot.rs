//! The boot command line against the host it booted: every CPU list of `isolcpus=`,
//! `nohz_full=`, `rcu_nocbs=` and `irqaffinity=` checked against the CPUs this host has, and
//! each requested isolation compared with what is in effect — a line copied from another
//! machine names CPUs this one lacks, and the kernel then keeps none of it.
//!
//! Facts relied on (copied in docs/tuning.md, "The boot command line"):
//! - `/sys/devices/system/cpu/possible` lists the CPUs this kernel can ever bring up; a CPU list
//!   naming one beyond it is refused whole by the kernel's parser (`cpulist_parse` →
//!   `bitmap_parselist`: -ERANGE), and for `isolcpus=`/`nohz_full=` the kernel then logs
//!   "Housekeeping: nohz_full= or isolcpus= incorrect CPU range" and isolates nothing
//!   (kernel/sched/isolation.c `housekeeping_setup`);
//! - `/sys/devices/system/cpu/isolated` and `/sys/devices/system/cpu/nohz_full` list what is in
//!   effect (Documentation/ABI/testing/sysfs-devices-system-cpu); `isolated` shows the CPUs
//!   taken out of scheduler domains, i.e. `isolcpus=` with the `domain` flag (the default);
//! - `/proc/irq/default_smp_affinity` is the default affinity of new IRQs that `irqaffinity=`
//!   sets; the kernel adds the boot CPU to it (kernel/irq/irqdesc.c `irq_affinity_setup`).
//!   Documentation/admin-guide/kernel-parameters.txt for the parameters.

use std::path::Path;

use crate::cpulist;
use crate::host::Cmdline;
use crate::host::{Finding, Severity};

/// The CPUs a host has and the isolation in effect, as the kernel shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuState {
    /// `/sys/devices/system/cpu/possible` (the online list when that file is absent).
    pub possible: Vec<usize>,
    /// `/sys/devices/system/cpu/isolated` (`None`: unreadable).
    pub isolated: Option<Vec<usize>>,
    /// `/sys/devices/system/cpu/nohz_full` (`None`: absent, the kernel has no CONFIG_NO_HZ_FULL).
    pub nohz_full: Option<Vec<usize>>,
    /// `/proc/irq/default_smp_affinity` as CPUs (`None`: unreadable).
    pub irq_default_affinity: Option<Vec<usize>>,
}

/// A CPU list file; `(null)` (what older kernels print for an empty mask) and an empty line are
/// no CPUs.
fn list(path: &Path) -> Option<Vec<usize>> {
    let t = std::fs::read_to_string(path).ok()?;
    let t = t.trim();
    if t.is_empty() || t == "(null)" {
        return Some(Vec::new());
    }
    cpulist::parse(t).ok()
}

/// A hex CPU mask as `/proc/irq/*/smp_affinity` prints it (`ff,ffffffff`, 32-bit words, most
/// significant first).
fn mask(text: &str) -> Option<Vec<usize>> {
    let words: Vec<&str> = text.trim().split(',').collect();
    let mut cpus = Vec::new();
    for (i, w) in words.iter().rev().enumerate() {
        let v = u32::from_str_radix(w, 16).ok()?;
        cpus.extend((0..32).filter(|b| v & (1 << b) != 0).map(|b| i * 32 + b));
    }
    cpus.sort_unstable();
    Some(cpus)
}

impl CpuState {
    /// Reads the state under `root` (`/` on a live host).
    pub fn read(root: &Path) -> CpuState {
        let sys = root.join("sys/devices/system/cpu");
        CpuState {
            possible: list(&sys.join("possible"))
                .or_else(|| list(&sys.join("online")))
                .unwrap_or_default(),
            isolated: list(&sys.join("isolated")),
            nohz_full: list(&sys.join("nohz_full")),
            irq_default_affinity: std::fs::read_to_string(
                root.join("proc/irq/default_smp_affinity"),
            )
            .ok()
            .and_then(|t| mask(&t)),
        }
    }
}

fn minus(a: &[usize], b: &[usize]) -> Vec<usize> {
    a.iter().copied().filter(|c| !b.contains(c)).collect()
}

/// One finding per difference between the command line `c` and the host `s` (see the module
/// docs): CPUs a list names that the host does not have, then, per parameter whose effect can
/// be read, the CPUs asked for but not in effect and those in effect but not asked for.
pub fn cmdline_findings(c: &Cmdline, s: &CpuState) -> Vec<Finding> {
    let mut f = Vec::new();
    if s.possible.is_empty() {
        return f;
    }
    let host = cpulist::format(&s.possible);
    let isol = c.isolcpus.as_ref().map(|i| i.cpus.clone());
    let lists: [(&str, Option<&Vec<usize>>, &str); 4] = [
        (
            "isolcpus",
            isol.as_ref(),
            "the kernel refuses the whole list (\"Housekeeping: nohz_full= or isolcpus= incorrect CPU range\", kernel/sched/isolation.c housekeeping_setup) and isolates nothing",
        ),
        (
            "nohz_full",
            c.nohz_full.as_ref(),
            "the kernel refuses the whole list (\"Housekeeping: nohz_full= or isolcpus= incorrect CPU range\", kernel/sched/isolation.c housekeeping_setup) and no CPU runs tickless",
        ),
        (
            "rcu_nocbs",
            c.rcu_nocbs.as_ref(),
            "the kernel's CPU-list parser refuses a list naming a CPU beyond the possible ones (bitmap_parselist: -ERANGE), so no callbacks are offloaded as asked",
        ),
        (
            "irqaffinity",
            c.irqaffinity.as_ref(),
            "the kernel's CPU-list parser refuses a list naming a CPU beyond the possible ones (bitmap_parselist: -ERANGE), so new IRQs keep the default affinity",
        ),
    ];
    let mut refused = Vec::new();
    for (name, cpus, what) in lists {
        let Some(cpus) = cpus else { continue };
        let beyond = minus(cpus, &s.possible);
        if !beyond.is_empty() {
            refused.push(name);
            f.push(Finding::new(
                Severity::Error,
                "cmdline",
                format!(
                    "{name}={} names CPU(s) {} that this host does not have (possible CPUs {host}, /sys/devices/system/cpu/possible): the line was written for another machine; {what} — rewrite it for CPUs {host}",
                    cpulist::format(cpus),
                    cpulist::format(&beyond)
                ),
            ));
        }
    }
    let mut compare = |name: &str, asked: &[usize], file: &str, now: &[usize], note: &str| {
        let missing = minus(asked, now);
        let extra = minus(now, asked);
        let why = if refused.contains(&name) {
            " (the kernel refused the list: see above)"
        } else {
            note
        };
        if !missing.is_empty() {
            f.push(Finding::new(
                Severity::Warn,
                "cmdline",
                format!(
                    "{name}= asks for CPU(s) {} but {file} does not list them: not in effect{why}",
                    cpulist::format(&missing)
                ),
            ));
        }
        if !extra.is_empty() {
            f.push(Finding::new(
                Severity::Warn,
                "cmdline",
                format!(
                    "{file} lists CPU(s) {} that {name}= does not ask for (set another way, or a line changed since boot)",
                    cpulist::format(&extra)
                ),
            ));
        }
    };
    if let (Some(i), Some(now)) = (&c.isolcpus, &s.isolated) {
        if i.flags.iter().any(|fl| fl == "domain") {
            compare(
                "isolcpus",
                &i.cpus,
                "/sys/devices/system/cpu/isolated",
                now,
                "",
            );
        }
    }
    if let (Some(n), Some(now)) = (&c.nohz_full, &s.nohz_full) {
        compare("nohz_full", n, "/sys/devices/system/cpu/nohz_full", now, "");
    }
    if let (Some(a), Some(now)) = (&c.irqaffinity, &s.irq_default_affinity) {
        // The kernel adds the boot CPU (0 on the usual boot) to the list.
        let mut asked = a.clone();
        if !refused.contains(&"irqaffinity") && !asked.contains(&0) && now.contains(&0) {
            asked.push(0);
        }
        asked.sort_unstable();
        compare(
            "irqaffinity",
            &asked,
            "/proc/irq/default_smp_affinity",
            now,
            " (the default affinity was changed since boot, e.g. by irqbalance or a write to the file)",
        );
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_masks_read_as_the_kernel_prints_them() {
        assert_eq!(mask("3\n").unwrap(), [0, 1]);
        assert_eq!(mask("00000001,00000004").unwrap(), [2, 32]);
        assert!(mask("xyz").is_none());
    }

    /// The boot command line against the host: a line written for a 192-CPU machine on a
    /// 2-CPU host gives one line per list that names CPUs the host lacks, and one per
    /// isolation asked for but not in effect.
    #[test]
    fn the_boot_command_line_against_the_host_names_each_difference() {
        let c = Cmdline::parse(
            "isolcpus=managed_irq,domain,1,3-191 nohz_full=1,3-191 rcu_nocbs=1,3-191 irqaffinity=0,2",
        );
        let s = CpuState {
            possible: vec![0, 1],
            isolated: Some(Vec::new()),
            nohz_full: Some(Vec::new()),
            irq_default_affinity: Some(vec![0, 1]),
        };
        let f = cmdline_findings(&c, &s);
        let m: Vec<&str> = f.iter().map(|x| x.message.as_str()).collect();
        for (p, beyond) in [
            ("isolcpus=1,3-191", "3-191"),
            ("nohz_full=1,3-191", "3-191"),
            ("rcu_nocbs=1,3-191", "3-191"),
            ("irqaffinity=0,2", "2"),
        ] {
            assert!(
                m.iter().any(|l| l.starts_with(&format!(
                    "{p} names CPU(s) {beyond} that this host does not have (possible CPUs 0-1"
                ))),
                "{p}: {m:#?}"
            );
        }
        assert!(m.iter().any(|l| l.starts_with(
            "isolcpus= asks for CPU(s) 1,3-191 but /sys/devices/system/cpu/isolated does not list them: not in effect (the kernel refused the list"
        )), "{m:#?}");
        assert!(
            m.iter()
                .any(|l| l.starts_with("nohz_full= asks for CPU(s) 1,3-191")),
            "{m:#?}"
        );
        assert!(
            m.iter().any(|l| l.starts_with(
                "/proc/irq/default_smp_affinity lists CPU(s) 1 that irqaffinity= does not ask for"
            )),
            "{m:#?}"
        );
        assert_eq!(f.len(), 8, "{m:#?}");
        // The same line on the machine it was written for: nothing to say.
        let right = CpuState {
            possible: (0..192).collect(),
            isolated: Some([1].into_iter().chain(3..192).collect()),
            nohz_full: Some([1].into_iter().chain(3..192).collect()),
            irq_default_affinity: Some(vec![0, 2]),
        };
        assert!(cmdline_findings(&c, &right).is_empty());
    }
}
