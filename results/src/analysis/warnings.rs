//! The warnings a run record carries, derived from the record itself so that `bench`, `sweep`
//! and `report` say the same thing in the same words: interruption, engine fallback, one line
//! per cause for the whole run ([`crate::diagnosis`]), other drop counters summed over the run,
//! and count mismatches with the kernel ([`all`]). The CPU contention warnings of a phase
//! ([`cpu_contention`]) are made here too, from `/proc/stat` figures the record does not keep,
//! and stored in the record.

use crate::record::RunRecord;

/// A non-zero drop or retransmit counter in words (meanings from `results::record`).
fn counter_warning(name: &str, delta: i64) -> String {
    let short = name.rsplit('.').next().unwrap_or(name);
    let what = crate::record::describe_counter(name, delta);
    if crate::record::is_retransmit_counter(name) {
        format!("{short}: {what}")
    } else {
        format!(
            "{short} +{}: {what} — drops make this a different experiment",
            crate::numfmt::signed(delta)
        )
    }
}

/// Warnings derived from the record itself (so old and new records read the same): interruption,
/// engine fallback, one line per cause for the whole run (the
/// [`diagnose`](crate::analysis::diagnose) causes of all phases together), other drop counters
/// summed over the run, server workers that shared the accepts unevenly
/// ([`uneven_spread`](crate::analysis::uneven_spread)), count mismatches.
pub fn derived_warnings(r: &RunRecord) -> Vec<String> {
    let mut w = Vec::new();
    if r.run.interrupted {
        w.push(
            "run interrupted by a signal (SIGINT/SIGTERM): numbers cover only what ran".to_string(),
        );
    }
    if let Some(why) = &r.run.engine_fallback_reason {
        w.push(format!("engine auto fell back to epoll: {why}"));
    }
    let causes: Vec<String> = crate::analysis::diagnosis::diagnose_phases(&r.phases)
        .into_iter()
        .map(|c| c.line)
        .collect();
    // A drop counter that no cause line names gets a line of its own.
    let named = |k: &str| {
        let bare = k.rsplit_once('.').map_or(k, |(_, b)| b);
        causes
            .iter()
            .any(|c| c.contains(k) || mentions_word(c, bare))
    };
    let mut other: std::collections::BTreeMap<&str, i64> = Default::default();
    for p in &r.phases {
        // SyncookiesFailed counts ACKs that were not valid cookies; when every handshake the
        // client completed was accepted (the cross-check agreed) none of them was a lost
        // handshake (late segments of connections already gone): no warning.
        let balanced = p.cross_check.as_ref().is_some_and(|c| c.agree);
        for (k, v) in p.drops() {
            if balanced && k == "TcpExt.SyncookiesFailed" {
                continue;
            }
            if !named(k) {
                *other.entry(k).or_insert(0) += v;
            }
        }
    }
    w.extend(causes);
    for (k, v) in other {
        w.push(counter_warning(k, v));
    }
    w.extend(r.phases.iter().filter_map(crate::analysis::uneven_spread));
    for p in &r.phases {
        if let Some(c) = &p.cross_check {
            if !c.agree {
                // The note says which counts: ours against the kernel's, or the client's
                // handshakes against the server's accepts (handshakes never accepted).
                w.push(format!("{}: our counts do not agree: {}", p.name, c.note));
            }
        }
    }
    w
}

/// [`derived_warnings`] followed by the stored ones that do not repeat a derived one.
///
/// A stored warning repeats a derived one when it is the same text, names a counter that a
/// phase's drop counters include (records from older builds stored their own drop warnings),
/// speaks of the interruption of an interrupted run, or quotes the note of a failed cross-check.
pub fn warnings(r: &RunRecord) -> Vec<String> {
    let mut out = derived_warnings(r);
    let counters: Vec<&str> = r
        .phases
        .iter()
        .flat_map(|p| p.drops().into_iter().map(|(k, _)| k))
        .collect();
    let notes: Vec<&str> = r
        .phases
        .iter()
        .filter_map(|p| p.cross_check.as_ref())
        .filter(|x| !x.agree && !x.note.is_empty())
        .map(|x| x.note.as_str())
        .collect();
    // A bare counter name counts only when it is a kernel MIB name (CamelCase, `ListenOverflows`):
    // softnet's `dropped` is also a plain word, and a schedule warning ("12 scheduled starts
    // dropped") named no counter — matching it hid that warning from every report.
    let repeats = |w: &str| {
        counters.iter().any(|c| {
            w.contains(c)
                || c.rsplit_once('.').is_some_and(|(_, bare)| {
                    bare.chars().any(|ch| ch.is_ascii_uppercase()) && mentions_word(w, bare)
                })
        }) || (r.run.interrupted && w.contains("interrupted"))
            || notes.iter().any(|n| w.contains(n))
    };
    for w in &r.warnings {
        if !repeats(w) && !out.contains(w) {
            out.push(w.clone());
        }
    }
    out
}

/// Whether `word` occurs in `text` as a whole word (not inside a longer name).
fn mentions_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Other work on the benchmark's CPUs above this share of their time (percent) gets a warning.
pub const FOREIGN_CPU_PCT: f64 = 10.0;

/// Steal time above this share of the benchmark's CPU time (percent) gets a warning.
pub const STEAL_PCT: f64 = 5.0;

/// CPU time on the benchmark's CPUs during one phase: `/proc/stat` busy and steal time of those
/// CPUs (proc(5)) and connstorm's own threads' CPU time, all in ns over `wall_ns`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuContention {
    /// The CPUs server and load ran on (each once).
    pub cpus: Vec<usize>,
    /// Wall time of the phase, ns.
    pub wall_ns: u64,
    /// Busy time of `cpus` (user + nice + system + irq + softirq), ns.
    pub busy_ns: u64,
    /// Steal time of `cpus` (the hypervisor ran something else), ns.
    pub steal_ns: u64,
    /// CPU time of connstorm's own server and load threads, ns.
    pub ours_ns: u64,
}

impl CpuContention {
    /// `ns` as a percentage of the CPUs' capacity (`wall_ns × cpus`); 0 with no capacity.
    pub fn share(&self, ns: u64) -> f64 {
        let capacity = self.wall_ns as f64 * self.cpus.len() as f64;
        if capacity > 0.0 {
            ns as f64 / capacity * 100.0
        } else {
            0.0
        }
    }

    /// Busy time that was not connstorm's, ns.
    pub fn foreign_ns(&self) -> u64 {
        self.busy_ns.saturating_sub(self.ours_ns)
    }
}

/// Warnings of phase `phase` about CPU contention: other work above [`FOREIGN_CPU_PCT`] of the
/// benchmark's CPUs, steal time above [`STEAL_PCT`]. Stored in the record (it keeps no
/// `/proc/stat` figures to derive them from). Pure.
pub fn cpu_contention(phase: &str, c: &CpuContention) -> Vec<String> {
    let mut w = Vec::new();
    let foreign = c.share(c.foreign_ns());
    if foreign > FOREIGN_CPU_PCT {
        w.push(format!(
            "{phase}: other work used {foreign:.0}% of the benchmark CPUs [{}] (busy {:.0}%, connstorm itself {:.0}%): the numbers include that contention; stop other load or choose other CPUs",
            common::cpulist::format(&c.cpus),
            c.share(c.busy_ns),
            c.share(c.ours_ns)
        ));
    }
    let steal = c.share(c.steal_ns);
    if steal > STEAL_PCT {
        w.push(format!(
            "{phase}: the hypervisor took {steal:.0}% of the benchmark CPUs (steal time): the numbers include that"
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_cpus(busy_pct: u64, ours_pct: u64, steal_pct: u64) -> CpuContention {
        // Two CPUs for one second: capacity 2e9 ns, so 1% is 2e7 ns.
        CpuContention {
            cpus: vec![2, 3],
            wall_ns: 1_000_000_000,
            busy_ns: busy_pct * 20_000_000,
            steal_ns: steal_pct * 20_000_000,
            ours_ns: ours_pct * 20_000_000,
        }
    }

    #[test]
    fn foreign_work_above_ten_percent_is_named_with_its_cpus() {
        let w = cpu_contention("peak", &two_cpus(90, 70, 0));
        assert_eq!(
            w,
            ["peak: other work used 20% of the benchmark CPUs [2-3] (busy 90%, connstorm itself 70%): the numbers include that contention; stop other load or choose other CPUs"]
        );
        assert!(
            cpu_contention("peak", &two_cpus(80, 70, 0)).is_empty(),
            "10% is not above 10%"
        );
        // connstorm's own time above the busy time (tick sampling) is no foreign work.
        assert!(cpu_contention("peak", &two_cpus(50, 60, 0)).is_empty());
    }

    #[test]
    fn steal_above_five_percent_is_named() {
        let w = cpu_contention("latency", &two_cpus(50, 50, 6));
        assert_eq!(
            w,
            ["latency: the hypervisor took 6% of the benchmark CPUs (steal time): the numbers include that"]
        );
        assert!(cpu_contention("latency", &two_cpus(50, 50, 5)).is_empty());
    }

    #[test]
    fn no_capacity_means_no_warning() {
        let c = CpuContention {
            wall_ns: 0,
            ..two_cpus(90, 0, 90)
        };
        assert_eq!(c.share(c.busy_ns), 0.0);
        assert!(cpu_contention("peak", &c).is_empty());
    }
}

#[cfg(test)]
mod stored {
    use super::*;

    /// A stored schedule warning ("… scheduled starts dropped …") in a run whose softnet
    /// counter `softnet.dropped` rose is shown: the plain word is no counter name. A stored
    /// warning naming a MIB counter the derived ones already name is still not repeated.
    #[test]
    fn a_schedule_warning_beside_softnet_drops_is_shown() {
        let mut r = RunRecord::example();
        r.phases.truncate(1);
        r.phases[0].counters.insert("softnet.dropped".into(), 589);
        r.phases[0]
            .counters
            .insert("TcpExt.ListenOverflows".into(), 2_048);
        let drop = "latency: 69,006 of 316,516 scheduled starts dropped: each was due while every in-flight slot was held";
        let old = "peak: TcpExt.ListenOverflows rose: the accept queue overflowed (stored by an old build)";
        r.warnings = vec![drop.to_string(), old.to_string()];
        let w = warnings(&r);
        assert!(w.iter().any(|l| l == drop), "{w:?}");
        assert!(!w.iter().any(|l| l == old), "{w:?}");
    }
}

#[cfg(test)]
mod syncookies_failed {
    use super::*;

    /// A record whose peak phase saw `failed` SyncookiesFailed, with its cross-check `agree`.
    fn with_failed_cookies(failed: i64, agree: bool) -> RunRecord {
        let mut r = RunRecord::example();
        r.phases.truncate(1);
        let p = &mut r.phases[0];
        p.counters.insert("TcpExt.SyncookiesFailed".into(), failed);
        if let Some(c) = p.cross_check.as_mut() {
            c.agree = agree;
        }
        r
    }

    #[test]
    fn failed_cookie_acks_of_a_balanced_run_are_no_lost_handshakes() {
        let says_failed = |w: &[String]| w.iter().any(|l| l.contains("SyncookiesFailed"));
        let balanced = derived_warnings(&with_failed_cookies(578, true));
        assert!(!says_failed(&balanced), "{balanced:?}");
        let unbalanced = derived_warnings(&with_failed_cookies(578, false));
        assert!(says_failed(&unbalanced), "{unbalanced:?}");
    }
}
