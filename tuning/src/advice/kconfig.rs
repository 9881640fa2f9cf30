//! Kernel configuration audit for scheduling latency and connection-rate work.
//!
//! Reads `<root>/proc/config.gz` (CONFIG_IKCONFIG_PROC) or `<root>/boot/config-<release>`, and
//! reports, per [`AuditProfile`], current vs recommended with the reason: CONFIG_HZ (and the tick
//! period), the preemption model (NONE / VOLUNTARY / FULL / LAZY / DYNAMIC / RT, plus the runtime
//! mode from `/sys/kernel/debug/sched/preempt`, 5.12+), FAIR_GROUP_SCHED / CGROUP_SCHED,
//! RT_GROUP_SCHED, SCHED_AUTOGROUP, NO_HZ_FULL, IRQ_TIME_ACCOUNTING, SCHED_CORE and
//! NUMA_BALANCING; then cross-checks the running state (command line, sysctls). Sources: each
//! option's help text in kernel/Kconfig.hz, kernel/Kconfig.preempt, init/Kconfig,
//! kernel/time/Kconfig; Documentation/timers/no_hz.rst; Documentation/scheduler/sched-rt-group.rst.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::host::Cmdline;
use crate::host::{Finding, Severity};

/// Largest kernel config read (`tune kernel --config`), bytes, packed and unpacked: 16 MiB (a
/// distribution `.config` is ~300 KiB).
pub const MAX_KCONFIG_BYTES: u64 = 16 << 20;

/// What the host is for; decides the recommendations.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditProfile {
    /// Real-time / isolated-CPU latency work (pinned SCHED_FIFO workers on nohz_full CPUs).
    #[cfg_attr(feature = "clap", value(help = "Real-time, isolated CPUs."))]
    Rt,
    /// A server measured for connection rate (throughput first, bounded latency).
    #[cfg_attr(feature = "clap", value(help = "Connection-rate server."))]
    Server,
    /// An interactive desktop.
    #[cfg_attr(feature = "clap", value(help = "Desktop."))]
    Desktop,
}

/// A kernel config could not be read.
#[derive(Debug, thiserror::Error)]
pub enum KconfigError {
    /// No config found.
    #[error("no kernel config at {tried}: enable CONFIG_IKCONFIG_PROC (modprobe configs) or install the config file, or pass --config FILE")]
    NotFound {
        /// Paths tried, comma-separated.
        tried: String,
    },
    /// Reading or decompressing failed.
    #[error("cannot read kernel config {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// A parsed kernel config: `CONFIG_X` → value (`y`, `m`, a number or a string without quotes;
/// `# CONFIG_X is not set` → `n`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct KernelConfig {
    /// Where it was read from.
    pub origin: String,
    /// The options.
    pub options: BTreeMap<String, String>,
}

impl KernelConfig {
    /// Parses config text. Lines that are neither assignments nor "is not set" comments are ignored.
    pub fn parse(text: &str, origin: &str) -> KernelConfig {
        let mut options = BTreeMap::new();
        for line in text.lines() {
            let l = line.trim();
            if let Some(name) = l
                .strip_prefix("# ")
                .and_then(|r| r.strip_suffix(" is not set"))
            {
                if name.starts_with("CONFIG_") {
                    options.insert(name.to_string(), "n".to_string());
                }
            } else if let Some((k, v)) = l.split_once('=') {
                if k.starts_with("CONFIG_") && !k.contains(' ') {
                    options.insert(k.to_string(), v.trim_matches('"').to_string());
                }
            }
        }
        KernelConfig {
            origin: origin.to_string(),
            options,
        }
    }

    /// Reads `path` (gzip when it ends in `.gz`): a regular file of at most
    /// [`MAX_KCONFIG_BYTES`], read and unpacked.
    ///
    /// # Errors
    /// [`KconfigError::Read`].
    pub fn read_file(path: &Path) -> Result<KernelConfig, KconfigError> {
        let err = |source| KconfigError::Read {
            path: path.to_path_buf(),
            source,
        };
        // Regular files only, bounded before and after gunzip: a FIFO hung the command,
        // `/dev/zero` filled memory.
        let raw = common::files::read_regular(path, MAX_KCONFIG_BYTES).map_err(err)?;
        let text = if path.extension().is_some_and(|e| e == "gz") {
            let mut s = String::new();
            flate2::read::GzDecoder::new(&raw[..])
                .take(MAX_KCONFIG_BYTES)
                .read_to_string(&mut s)
                .map_err(err)?;
            s
        } else {
            String::from_utf8_lossy(&raw).to_string()
        };
        Ok(KernelConfig::parse(&text, &path.display().to_string()))
    }

    /// Reads `<root>/proc/config.gz`, else `<root>/boot/config-<release>` (release from
    /// `<root>/proc/sys/kernel/osrelease`).
    ///
    /// # Errors
    /// [`KconfigError::NotFound`] listing the paths tried; [`KconfigError::Read`].
    pub fn read_host(root: &Path) -> Result<KernelConfig, KconfigError> {
        let gz = root.join("proc/config.gz");
        if gz.exists() {
            return KernelConfig::read_file(&gz);
        }
        let release =
            std::fs::read_to_string(root.join("proc/sys/kernel/osrelease")).unwrap_or_default();
        let boot = root.join(format!("boot/config-{}", release.trim()));
        if boot.exists() {
            return KernelConfig::read_file(&boot);
        }
        Err(KconfigError::NotFound {
            tried: format!("{}, {}", gz.display(), boot.display()),
        })
    }

    /// True when `CONFIG_<name>` is `y` or `m`.
    pub fn enabled(&self, name: &str) -> bool {
        matches!(
            self.options
                .get(&format!("CONFIG_{name}"))
                .map(String::as_str),
            Some("y" | "m")
        )
    }

    /// CONFIG_HZ, if set.
    pub fn hz(&self) -> Option<u32> {
        self.options.get("CONFIG_HZ").and_then(|v| v.parse().ok())
    }

    /// The build-time preemption model: `"RT"`, `"FULL"`, `"LAZY"`, `"VOLUNTARY"`, `"NONE"`
    /// (default of a DYNAMIC kernel when DYNAMIC), or `None` when no model option is present.
    pub fn preempt_model(&self) -> Option<&'static str> {
        [
            ("PREEMPT_RT", "RT"),
            ("PREEMPT", "FULL"),
            ("PREEMPT_LAZY", "LAZY"),
            ("PREEMPT_VOLUNTARY", "VOLUNTARY"),
            ("PREEMPT_NONE", "NONE"),
        ]
        .into_iter()
        .find(|(opt, _)| self.enabled(opt))
        .map(|(_, m)| m)
    }
}

/// One audited item.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRow {
    /// What (`"CONFIG_HZ"`, `"preemption"`, ...).
    pub item: String,
    /// What the host has.
    pub current: String,
    /// What the profile wants.
    pub recommended: String,
    /// `Info` = fine or context, `Warn` = differs, `Error` = contradicts the running setup.
    pub severity: Severity,
    /// Why it matters.
    pub why: String,
}

/// Runtime state used by the cross-checks.
#[derive(Debug, Clone)]
pub struct AuditRuntime {
    /// The parsed command line.
    pub cmdline: Option<Cmdline>,
    /// `kernel.sched_rt_runtime_us`.
    pub sched_rt_runtime_us: Option<i64>,
    /// `kernel.numa_balancing`.
    pub numa_balancing: Option<i64>,
    /// Content of `/sys/kernel/debug/sched/preempt` (e.g. `none (voluntary) full`), or the error.
    pub preempt_runtime: Result<String, String>,
    /// Whether RT (SCHED_FIFO) workers are planned.
    pub rt_planned: bool,
    /// The CPUs the host has and the isolation in effect, to check the command line's CPU
    /// lists against ([`super::cmdline_findings`]); `None`: not checked.
    pub cpus: Option<super::CpuState>,
}

impl AuditRuntime {
    /// Reads the runtime state under `root`. Unreadable debugfs (ENOENT when not mounted, EPERM
    /// under lockdown) is kept as the error text — a finding, not a failure.
    pub fn read(root: &Path, rt_planned: bool) -> AuditRuntime {
        let num = |k: &str| {
            std::fs::read_to_string(root.join("proc/sys/kernel").join(k))
                .ok()
                .and_then(|s| s.trim().parse().ok())
        };
        let dbg = root.join("sys/kernel/debug/sched/preempt");
        AuditRuntime {
            cmdline: Cmdline::read(root).ok(),
            sched_rt_runtime_us: num("sched_rt_runtime_us"),
            numa_balancing: num("numa_balancing"),
            preempt_runtime: std::fs::read_to_string(&dbg)
                .map(|s| s.trim().to_string())
                .map_err(|e| format!("{}: {e}", dbg.display())),
            rt_planned,
            cpus: Some(super::CpuState::read(root)),
        }
    }
}

fn row(item: &str, current: String, recommended: &str, ok: bool, why: &str) -> AuditRow {
    AuditRow {
        item: item.to_string(),
        current,
        recommended: recommended.to_string(),
        severity: if ok { Severity::Info } else { Severity::Warn },
        why: why.to_string(),
    }
}

fn yn(b: bool) -> String {
    if b {
        "y".into()
    } else {
        "n".into()
    }
}

/// Audits `cfg` for `profile` and cross-checks `rt`. Returns the table rows and the runtime
/// findings.
pub fn audit_kernel_config(
    cfg: &KernelConfig,
    profile: AuditProfile,
    rt: &AuditRuntime,
) -> (Vec<AuditRow>, Vec<Finding>) {
    use AuditProfile::*;
    let mut rows = Vec::new();
    let hz = cfg.hz();
    let cur_hz = hz.map_or("unset".to_string(), |h| {
        format!("{h} (tick {:.1} ms)", 1000.0 / f64::from(h))
    });
    let (want_hz, hz_ok) = match profile {
        Rt | Desktop => ("1000", hz == Some(1000)),
        Server => ("250 or 1000", matches!(hz, Some(250 | 300 | 1000))),
    };
    rows.push(row(
        "CONFIG_HZ",
        cur_hz,
        want_hz,
        hz_ok,
        "tick rate: timer granularity and scheduler tick cost (kernel/Kconfig.hz)",
    ));

    let model = cfg.preempt_model().unwrap_or("unknown");
    let dynamic = cfg.enabled("PREEMPT_DYNAMIC");
    let runtime_mode = rt.preempt_runtime.as_ref().ok().and_then(|s| {
        s.split_whitespace()
            .find(|w| w.starts_with('('))
            .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_uppercase())
    });
    let effective = runtime_mode.clone().or_else(|| {
        rt.cmdline
            .as_ref()
            .and_then(|c| c.preempt.clone())
            .map(|p| p.to_uppercase())
    });
    let eff = effective.as_deref().unwrap_or(model);
    let cur = format!(
        "{model}{}{}",
        if dynamic { " +DYNAMIC" } else { "" },
        effective
            .as_ref()
            .map_or(String::new(), |e| format!(", runtime {e}"))
    );
    let (want, ok) = match profile {
        Rt => ("RT", model == "RT"),
        Server => (
            "NONE or VOLUNTARY (or DYNAMIC set to one)",
            matches!(eff, "NONE" | "VOLUNTARY"),
        ),
        Desktop => (
            "FULL or LAZY (or DYNAMIC)",
            matches!(eff, "FULL" | "LAZY") || dynamic,
        ),
    };
    rows.push(row(
        "preemption",
        cur,
        want,
        ok,
        "when a running task can be preempted: latency vs throughput (kernel/Kconfig.preempt)",
    ));

    let group = cfg.enabled("FAIR_GROUP_SCHED") && cfg.enabled("CGROUP_SCHED");
    rows.push(row(
        "CONFIG_FAIR_GROUP_SCHED/CGROUP_SCHED",
        yn(group),
        if profile == Rt {
            "n or a flat hierarchy"
        } else {
            "any"
        },
        profile != Rt || !group,
        "group scheduling walks the cgroup hierarchy on every enqueue/wakeup (init/Kconfig)",
    ));
    let rtg = cfg.enabled("RT_GROUP_SCHED");
    rows.push(row("CONFIG_RT_GROUP_SCHED", yn(rtg), "n", !rtg || profile == Desktop,
        "RT tasks in non-root cgroups need an rt_runtime budget, else sched_setscheduler fails with EPERM; throttling per group (sched-rt-group.rst)"));
    let ag = cfg.enabled("SCHED_AUTOGROUP");
    rows.push(row("CONFIG_SCHED_AUTOGROUP", yn(ag), if profile == Desktop { "y" } else { "n (or kernel.sched_autogroup_enabled=0)" }, (profile == Desktop) == ag,
        "groups tasks by session: fairness between terminals, not between worker threads (init/Kconfig)"));
    let nohz = cfg.enabled("NO_HZ_FULL");
    rows.push(row(
        "CONFIG_NO_HZ_FULL",
        yn(nohz),
        if profile == Rt { "y" } else { "any" },
        profile != Rt || nohz,
        "stops the tick on isolated CPUs running one task (Documentation/timers/no_hz.rst)",
    ));
    let irqt = cfg.enabled("IRQ_TIME_ACCOUNTING");
    rows.push(row("CONFIG_IRQ_TIME_ACCOUNTING", yn(irqt), "y", irqt,
        "without it softirq/hardirq time is charged to the interrupted task: CPU per connection is misattributed (init/Kconfig)"));
    let core = cfg.enabled("SCHED_CORE");
    rows.push(row("CONFIG_SCHED_CORE", yn(core), if profile == Rt { "n" } else { "any" }, profile != Rt || !core,
        "core scheduling adds cross-sibling synchronisation on every schedule() (Documentation/admin-guide/hw-vuln/core-scheduling.rst)"));
    let nb = cfg.enabled("NUMA_BALANCING");
    rows.push(row("CONFIG_NUMA_BALANCING", yn(nb), if profile == Desktop { "any" } else { "n, or kernel.numa_balancing=0" },
        profile == Desktop || !nb || rt.numa_balancing == Some(0),
        "hinting faults unmap pages periodically and migrate tasks/memory (Documentation/admin-guide/sysctl/kernel.rst)"));

    (rows, cross_check(cfg, profile, rt))
}

fn cross_check(cfg: &KernelConfig, profile: AuditProfile, rt: &AuditRuntime) -> Vec<Finding> {
    let mut f = Vec::new();
    let c = rt.cmdline.clone().unwrap_or_default();
    if let Some(n) = &c.nohz_full {
        if !cfg.enabled("NO_HZ_FULL") {
            f.push(Finding::new(Severity::Error, "kconfig", format!(
                "nohz_full={} is on the command line but CONFIG_NO_HZ_FULL is not built: the parameter is ignored; use a kernel built with it",
                crate::cpulist::format(n))));
        }
        if c.isolcpus.is_none() {
            f.push(Finding::new(Severity::Warn, "isolation",
                "nohz_full without isolcpus: the scheduler still load-balances onto those CPUs, so the tick comes back; add isolcpus= (or a cpuset isolated partition)"));
        }
    }
    if let Some(cpus) = &rt.cpus {
        f.extend(super::cmdline_findings(&c, cpus));
    }
    let boot_isolated = c.isolcpus.as_ref().is_some_and(|i| i.cpus.contains(&0))
        || c.nohz_full.as_ref().is_some_and(|n| n.contains(&0));
    if boot_isolated {
        f.push(Finding::new(Severity::Warn, "isolation",
            "the boot CPU 0 is isolated or nohz_full: it keeps timekeeping and housekeeping work (Documentation/timers/no_hz.rst); leave CPU 0 for housekeeping"));
    }
    if (rt.rt_planned || profile == AuditProfile::Rt)
        && rt.sched_rt_runtime_us.is_some_and(|v| v != -1)
    {
        f.push(Finding::new(Severity::Warn, "sched", format!(
            "kernel.sched_rt_runtime_us = {} while RT threads are planned: RT tasks are throttled for {} us every period; set -1 (preset low-latency) on isolated CPUs",
            rt.sched_rt_runtime_us.unwrap_or_default(), 1_000_000 - rt.sched_rt_runtime_us.unwrap_or_default())));
    }
    if profile != AuditProfile::Desktop && rt.numa_balancing.is_some_and(|v| v != 0) {
        f.push(Finding::new(Severity::Warn, "sched",
            "kernel.numa_balancing is on at runtime: periodic hinting faults and migrations add latency; set it to 0 (preset low-latency)"));
    }
    if let Err(e) = &rt.preempt_runtime {
        if cfg.enabled("PREEMPT_DYNAMIC") {
            f.push(Finding::new(Severity::Info, "kconfig", format!(
                "runtime preemption mode unknown ({e}); debugfs may be unmounted or locked down (EPERM even for root); preempt= on the command line: {}",
                c.preempt.as_deref().unwrap_or("not given"))));
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_set_unset_and_strings() {
        let c = KernelConfig::parse("CONFIG_HZ=250\n# CONFIG_NO_HZ_FULL is not set\nCONFIG_LOCALVERSION=\"-x\"\nCONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\ngarbage\n", "t");
        assert_eq!(c.hz(), Some(250));
        assert!(!c.enabled("NO_HZ_FULL"));
        assert_eq!(c.options["CONFIG_NO_HZ_FULL"], "n");
        assert_eq!(c.options["CONFIG_LOCALVERSION"], "-x");
        assert_eq!(c.preempt_model(), Some("NONE"));
    }

    #[test]
    fn read_host_prefers_proc_config_gz_then_boot_config_of_the_release() {
        use std::io::Write;
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc/sys/kernel")).unwrap();
        std::fs::create_dir_all(d.path().join("boot")).unwrap();
        std::fs::write(d.path().join("proc/sys/kernel/osrelease"), "6.1.0-t\n").unwrap();
        std::fs::write(d.path().join("boot/config-6.1.0-t"), "CONFIG_HZ=250\n").unwrap();
        let c = KernelConfig::read_host(d.path()).unwrap();
        assert_eq!(c.hz(), Some(250));
        assert!(c.origin.ends_with("boot/config-6.1.0-t"), "{}", c.origin);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"CONFIG_HZ=1000\n").unwrap();
        std::fs::write(d.path().join("proc/config.gz"), gz.finish().unwrap()).unwrap();
        let c = KernelConfig::read_host(d.path()).unwrap();
        assert_eq!(c.hz(), Some(1000));
        assert!(c.origin.ends_with("proc/config.gz"), "{}", c.origin);
    }

    #[test]
    fn read_host_without_a_config_names_the_paths_and_the_option() {
        let d = tempfile::tempdir().unwrap();
        let e = KernelConfig::read_host(d.path()).unwrap_err().to_string();
        assert!(
            e.contains("proc/config.gz") && e.contains("boot/config-"),
            "{e}"
        );
        assert!(e.contains("--config"), "{e}");
    }
}
