//! The kernel command line (`/proc/cmdline`) and the CPU-isolation parameters on it.
//!
//! Parameter meanings: Documentation/admin-guide/kernel-parameters.txt (isolcpus=, nohz_full=,
//! rcu_nocbs=, irqaffinity=, skew_tick=, preempt= (CONFIG_PREEMPT_DYNAMIC, 5.12+), idle=,
//! intel_idle.max_cstate=, processor.max_cstate=). Everything after a lone `--` goes to init and is
//! ignored.

use serde::{Deserialize, Serialize};

use crate::cpulist;

/// `isolcpus=[flag,...,]<cpu-list>` parsed. Flags: `nohz`, `domain` (the default when no flag is
/// given), `managed_irq` (Documentation/admin-guide/kernel-parameters.txt).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IsolCpus {
    /// Flags given before the list (`domain` when none was given).
    pub flags: Vec<String>,
    /// The isolated CPUs.
    pub cpus: Vec<usize>,
}

/// The parameters of `/proc/cmdline` that matter for CPU isolation and latency.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cmdline {
    /// The whole line, trimmed.
    pub raw: String,
    /// `isolcpus=`.
    pub isolcpus: Option<IsolCpus>,
    /// `nohz_full=` CPUs.
    pub nohz_full: Option<Vec<usize>>,
    /// `rcu_nocbs=` CPUs (empty when given without a list, meaning "all" on 6.x with
    /// CONFIG_RCU_NOCB_CPU_DEFAULT_ALL semantics).
    pub rcu_nocbs: Option<Vec<usize>>,
    /// `irqaffinity=` CPUs (the default affinity of new IRQs).
    pub irqaffinity: Option<Vec<usize>>,
    /// `skew_tick=` value.
    pub skew_tick: Option<String>,
    /// `preempt=` value (none|voluntary|full|lazy).
    pub preempt: Option<String>,
    /// `idle=` value (poll|halt|nomwait).
    pub idle: Option<String>,
    /// `intel_idle.max_cstate=`.
    pub intel_idle_max_cstate: Option<u32>,
    /// `processor.max_cstate=`.
    pub processor_max_cstate: Option<u32>,
    /// Parameters of interest whose value could not be parsed: `(param, value, error)`.
    pub malformed: Vec<(String, String, String)>,
}

impl Cmdline {
    /// Parses a command line. Never fails: unparsable values land in [`Cmdline::malformed`].
    pub fn parse(line: &str) -> Cmdline {
        let raw = line.trim().to_string();
        let mut c = Cmdline {
            raw: raw.clone(),
            ..Cmdline::default()
        };
        for word in raw.split_whitespace() {
            if word == "--" {
                break;
            }
            let (k, v) = word.split_once('=').unwrap_or((word, ""));
            let mut list = |v: &str| match cpulist::parse(v) {
                Ok(l) => Some(l),
                Err(e) => {
                    c.malformed
                        .push((k.to_string(), v.to_string(), e.to_string()));
                    None
                }
            };
            match k {
                "isolcpus" => {
                    let mut flags = Vec::new();
                    let mut rest = v;
                    // Flags are words before the list: `isolcpus=nohz,domain,managed_irq,2-5`.
                    while let Some((head, tail)) = rest.split_once(',') {
                        if head
                            .chars()
                            .next()
                            .is_some_and(|ch| ch.is_ascii_alphabetic())
                        {
                            flags.push(head.to_string());
                            rest = tail;
                        } else {
                            break;
                        }
                    }
                    if flags.is_empty() {
                        flags.push("domain".to_string());
                    }
                    if let Some(cpus) = list(rest) {
                        c.isolcpus = Some(IsolCpus { flags, cpus });
                    }
                }
                "nohz_full" => c.nohz_full = list(v),
                "rcu_nocbs" => c.rcu_nocbs = list(v),
                "irqaffinity" => c.irqaffinity = list(v),
                "skew_tick" => c.skew_tick = Some(v.to_string()),
                "preempt" => c.preempt = Some(v.to_string()),
                "idle" => c.idle = Some(v.to_string()),
                "intel_idle.max_cstate" | "processor.max_cstate" => match v.parse::<u32>() {
                    Ok(n) if k.starts_with("intel") => c.intel_idle_max_cstate = Some(n),
                    Ok(n) => c.processor_max_cstate = Some(n),
                    Err(e) => c
                        .malformed
                        .push((k.to_string(), v.to_string(), e.to_string())),
                },
                _ => {}
            }
        }
        c
    }

    /// Reads and parses `<root>/proc/cmdline`.
    ///
    /// # Errors
    /// The I/O error of the read.
    pub fn read(root: &std::path::Path) -> std::io::Result<Cmdline> {
        Ok(Cmdline::parse(&std::fs::read_to_string(
            root.join("proc/cmdline"),
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_isolation_parameters_with_flags() {
        let c = Cmdline::parse(
            "BOOT_IMAGE=/vmlinuz isolcpus=managed_irq,domain,1,3-5 nohz_full=1,3-5 rcu_nocbs=1,3-5 \
             irqaffinity=0,2 skew_tick=1 preempt=full idle=poll intel_idle.max_cstate=1 \
             processor.max_cstate=0 -- isolcpus=9",
        );
        let iso = c.isolcpus.unwrap();
        assert_eq!(iso.flags, ["managed_irq", "domain"]);
        assert_eq!(iso.cpus, [1, 3, 4, 5]);
        assert_eq!(c.nohz_full.unwrap(), [1, 3, 4, 5]);
        assert_eq!(c.irqaffinity.unwrap(), [0, 2]);
        assert_eq!(c.preempt.as_deref(), Some("full"));
        assert_eq!(c.idle.as_deref(), Some("poll"));
        assert_eq!(c.intel_idle_max_cstate, Some(1));
        assert_eq!(c.processor_max_cstate, Some(0));
        assert!(c.malformed.is_empty());
    }

    #[test]
    fn plain_isolcpus_defaults_to_domain_and_bad_values_are_reported() {
        let c = Cmdline::parse("isolcpus=2-3 nohz_full=x intel_idle.max_cstate=deep");
        assert_eq!(c.isolcpus.unwrap().flags, ["domain"]);
        assert_eq!(c.nohz_full, None);
        assert_eq!(c.malformed.len(), 2);
        assert_eq!(c.malformed[0].0, "nohz_full");
        assert_eq!(Cmdline::parse("quiet").isolcpus, None);
    }
}
