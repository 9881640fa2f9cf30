//! `connstorm scale`: each step's figures from its phase (rate, rate per core, scaling
//! efficiency, CPU per connection per side, the busiest CPU's softirq share, whether the rate
//! settled), the knee of each shape (the first step whose efficiency falls below the threshold)
//! and what limited it, from the counters, the CPU figures and the profile.
//!
//! Efficiency of a step of N cores is `rate_N / (N × rate_1)`: 1.0 when N cores do N times
//! what one does. When a shape's first step has N₀ > 1 cores, `rate_N / (N/N₀ × rate_N₀)`.

use crate::numfmt;
use crate::record::{PhaseRecord, ScaleKnee, ScaleRecord, ScaleStep, SideProfile};

/// Default efficiency threshold of the knee (`--efficiency`).
pub const DEFAULT_EFFICIENCY: f64 = 0.8;

/// A step's rate has settled when its measured second half is within this share of its first.
pub const SETTLE_TOLERANCE: f64 = 0.10;

/// Share of a side's CPU capacity (or a CPU's busy time), percent, from which it is saturated.
const SATURATED_PCT: f64 = 85.0;

/// Growth of CPU per connection from the base step that counts as "costs more per connection".
const CPU_GROWTH: f64 = 1.25;

/// Growth of a contention point's inclusive share (percentage points) that names it.
const CONTENTION_GROWTH_PTS: f64 = 5.0;

/// A softirq share of one CPU (percent of wall time) worth naming.
const SOFTIRQ_PCT: f64 = 50.0;

/// Fills every step's figures from its phase in `phases` (by name; a step whose phase is
/// missing keeps `None`s) and the knees of each shape.
pub fn scale_figures(scale: &mut ScaleRecord, phases: &[PhaseRecord]) {
    for s in &mut scale.steps {
        let phase = phases.iter().find(|p| p.name == s.phase);
        step_figures(s, phase);
    }
    let mut shapes: Vec<String> = Vec::new();
    for s in &scale.steps {
        if !shapes.contains(&s.shape) {
            shapes.push(s.shape.clone());
        }
    }
    scale.knees.clear();
    for shape in shapes {
        let idx: Vec<usize> = (0..scale.steps.len())
            .filter(|&i| scale.steps[i].shape == shape)
            .collect();
        let base = idx
            .iter()
            .copied()
            .find(|&i| scale.steps[i].achieved_per_sec.is_some());
        let Some(base) = base else { continue };
        let (base_rate, base_cores) = (
            scale.steps[base].achieved_per_sec.unwrap_or(0.0),
            scale.steps[base].cores,
        );
        for &i in &idx {
            let s = &mut scale.steps[i];
            s.efficiency = s
                .achieved_per_sec
                .filter(|_| base_rate > 0.0 && base_cores > 0 && i >= base)
                .map(|r| r / (s.cores as f64 / base_cores as f64 * base_rate));
        }
        let threshold = scale.efficiency_threshold;
        let knee = idx
            .iter()
            .copied()
            .filter(|&i| i > base)
            .find(|&i| scale.steps[i].efficiency.is_some_and(|e| e < threshold));
        if let Some(k) = knee {
            let last_good = idx
                .iter()
                .copied()
                .rfind(|&i| i > base && i < k)
                .map(|i| scale.steps[i].cores);
            let kp = phases.iter().find(|p| p.name == scale.steps[k].phase);
            let bp = phases.iter().find(|p| p.name == scale.steps[base].phase);
            let (limit, evidence) = limit(&scale.steps[k], kp, &scale.steps[base], bp);
            scale.knees.push(ScaleKnee {
                shape: shape.clone(),
                cores: scale.steps[k].cores,
                efficiency: scale.steps[k].efficiency.unwrap_or(0.0),
                last_good_cores: last_good,
                limit,
                evidence,
            });
        }
    }
}

/// Puts the run's warnings about other work or steal time on a knee step's CPUs
/// (`"{phase}: other work used …"`, `"{phase}: the hypervisor took …"`, from
/// [`crate::analysis::cpu_contention`]) first among that knee's evidence, and makes the first
/// of them its limit: a knee measured while something else ran on its CPUs says how busy the
/// host was, not how connstorm's workers scale.
pub fn knee_disturbances(scale: &mut ScaleRecord, warnings: &[String]) {
    for k in &mut scale.knees {
        let Some(phase) = scale
            .steps
            .iter()
            .find(|s| s.shape == k.shape && s.cores == k.cores)
            .map(|s| s.phase.clone())
        else {
            continue;
        };
        let prefix = format!("{phase}: ");
        let found: Vec<String> = warnings
            .iter()
            .filter_map(|w| w.strip_prefix(&prefix))
            .filter(|w| w.starts_with("other work used") || w.starts_with("the hypervisor took"))
            .map(|w| format!("{w} (the knee may be the host's other work, not scaling: rerun on a quiet host)"))
            .collect();
        if let Some(first) = found.first() {
            k.limit = first.clone();
            k.evidence.retain(|e| !found.contains(e));
            k.evidence.splice(0..0, found);
        }
    }
}

/// One step's figures from its phase.
fn step_figures(s: &mut ScaleStep, phase: Option<&PhaseRecord>) {
    let Some(p) = phase else {
        *s = ScaleStep {
            achieved_per_sec: None,
            per_core_per_sec: None,
            efficiency: None,
            server_us_per_conn: None,
            load_us_per_conn: None,
            busiest_softirq_cpu: None,
            busiest_softirq_pct: None,
            busiest_cpu_pct: None,
            settled: None,
            ..s.clone()
        };
        return;
    };
    s.achieved_per_sec = p.achieved_per_sec;
    s.per_core_per_sec = p
        .achieved_per_sec
        .filter(|_| s.cores > 0)
        .map(|r| r / s.cores as f64);
    s.server_us_per_conn = p.cpu.server.as_ref().and_then(|c| c.us_per_conn());
    s.load_us_per_conn = p.cpu.load.us_per_conn();
    let mut cpus: Vec<usize> = s.server_cpus.iter().chain(&s.load_cpus).copied().collect();
    cpus.sort_unstable();
    cpus.dedup();
    let max_of = |m: &std::collections::BTreeMap<usize, f64>| {
        cpus.iter()
            .filter_map(|c| m.get(c).map(|v| (*c, *v)))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
    };
    let soft = max_of(&p.cpu_softirq_pct);
    s.busiest_softirq_cpu = soft.map(|x| x.0);
    s.busiest_softirq_pct = soft.map(|x| x.1);
    s.busiest_cpu_pct = max_of(&p.cpu_busy_pct).map(|x| x.1);
    s.settled = settled(p);
}

/// Whether the per-second rate of `p`'s whole measured seconds kept within
/// [`SETTLE_TOLERANCE`] from the first half to the second; `None` with fewer than two.
pub fn settled(p: &PhaseRecord) -> Option<bool> {
    let rows: Vec<f64> = p
        .timeline
        .iter()
        .filter(|r| !r.is_partial())
        .map(|r| r.per_sec(r.successes))
        .collect();
    if rows.len() < 2 {
        return None;
    }
    let half = rows.len() / 2;
    let first = rows[..half].iter().sum::<f64>() / half as f64;
    let second = rows[rows.len() - half..].iter().sum::<f64>() / half as f64;
    if first <= 0.0 {
        return Some(second <= 0.0);
    }
    Some(((second - first) / first).abs() <= SETTLE_TOLERANCE)
}

/// A side's CPU time over its capacity (wall time × its CPUs), percent.
fn side_pct(c: &crate::record::SideCpu) -> Option<f64> {
    let cap = c.wall_ns as f64 * c.cpus as f64;
    let used = c.run_ns.unwrap_or(c.user_ns + c.sys_ns) as f64;
    (cap > 0.0).then(|| used / cap * 100.0)
}

fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// What limited the knee step `k` (phase `kp`) against the base step `b` (phase `bp`): the
/// strongest evidence first, then all of it.
fn limit(
    k: &ScaleStep,
    kp: Option<&PhaseRecord>,
    b: &ScaleStep,
    bp: Option<&PhaseRecord>,
) -> (String, Vec<String>) {
    let Some(kp) = kp else {
        return ("the step did not run".into(), Vec::new());
    };
    // (priority, line): lower is stronger.
    let mut ev: Vec<(u8, String)> = Vec::new();
    let drops = kp.drops();
    if !drops.is_empty() {
        let list: Vec<String> = drops
            .iter()
            .map(|(n, v)| format!("{n} {}", numfmt::count(*v as u64)))
            .collect();
        ev.push((
            0,
            format!(
                "kernel drops: {} (the step is a different experiment)",
                list.join(", ")
            ),
        ));
    }
    if let Some((name, n)) = kp.failures.iter().max_by_key(|(_, v)| **v) {
        let share = *n as f64 / kp.attempts.max(1) as f64;
        if share >= 0.001 {
            let what = match name.as_str() {
                "EADDRNOTAVAIL" => " (ephemeral ports ran out)",
                "ETIMEDOUT" => " (handshakes timed out)",
                "ECONNREFUSED" | "ECONNRESET" => " (the listener refused or reset)",
                _ => "",
            };
            ev.push((
                1,
                format!(
                    "connect failures: {name} {} of {} attempts{what}",
                    numfmt::count(*n),
                    numfmt::count(kp.attempts)
                ),
            ));
        }
    }
    if let Some(kprof) = &kp.profile {
        let base = bp.and_then(|p| p.profile.as_ref());
        for side in &kprof.sides {
            let was = base.and_then(|b| b.sides.iter().find(|s| s.side == side.side));
            if let Some(line) = contention_line(side, was) {
                ev.push((2, line));
            }
        }
    }
    for (name, now, was) in [
        ("server", k.server_us_per_conn, b.server_us_per_conn),
        ("load", k.load_us_per_conn, b.load_us_per_conn),
    ] {
        if let (Some(n), Some(w)) = (now, was) {
            if w > 0.0 && n / w >= CPU_GROWTH {
                ev.push((
                    3,
                    format!(
                        "{name} CPU per connection {} → {} µs ({:.2}×): the same work costs more \
                         per connection as cores are added (contention), not a lack of CPU",
                        numfmt::value(w),
                        numfmt::value(n),
                        n / w
                    ),
                ));
            }
        }
    }
    let server_pct = kp.cpu.server.as_ref().and_then(side_pct);
    let load_pct = side_pct(&kp.cpu.load);
    if k.shape == "fixed-server" {
        if let Some(sp) = server_pct.filter(|p| *p >= SATURATED_PCT) {
            ev.push((
                4,
                format!(
                    "the fixed server's {} CPU(s) were {sp:.0}% busy: the server is the limit, \
                     not the load",
                    k.server_cpus.len()
                ),
            ));
        }
    }
    if let (Some(cpu), Some(p)) = (k.busiest_softirq_cpu, k.busiest_softirq_pct) {
        if p >= SOFTIRQ_PCT {
            ev.push((
                5,
                format!("softirq took {p:.0}% of CPU {cpu}: packet processing is its work"),
            ));
        }
    }
    let busiest = k.busiest_cpu_pct.unwrap_or(0.0);
    let sides_busy = server_pct.unwrap_or(0.0).max(load_pct.unwrap_or(0.0));
    if busiest < SATURATED_PCT && sides_busy < SATURATED_PCT {
        ev.push((
            6,
            format!(
                "CPUs not saturated (busiest {busiest:.0}% busy, server {}, load {}): too few \
                 attempts in flight for this many cores (raise --concurrency), or a limit outside \
                 these CPUs",
                server_pct.map_or_else(|| "n/a".into(), |p| format!("{p:.0}%")),
                load_pct.map_or_else(|| "n/a".into(), |p| format!("{p:.0}%"))
            ),
        ));
    } else if ev.iter().all(|(p, _)| *p > 3) {
        ev.push((
            7,
            format!(
                "every CPU busy ({busiest:.0}% the busiest) and no cost per connection grew by \
                 {CPU_GROWTH}× or more: the cores added do less each (SMT siblings, E-cores, \
                 another node) or the step was too short to tell; profile it (--profile-all)"
            ),
        ));
    }
    if k.settled == Some(false) {
        ev.push((
            8,
            "the rate had not settled in the step (second half more than 10% off the first): \
             lengthen --step-duration"
                .into(),
        ));
    }
    if let Some(c) = &kp.cross_check {
        if !c.agree {
            ev.push((9, format!("counts disagree with the kernel: {}", c.note)));
        }
    }
    ev.sort_by_key(|(p, _)| *p);
    let limit = ev.first().map_or_else(
        || "no cause found in the record".to_string(),
        |e| e.1.clone(),
    );
    (limit, ev.into_iter().map(|e| e.1).collect())
}

/// A side's contention at the knee: the named point whose inclusive share grew most since the
/// base step (when that was profiled), or its largest point; `None` when nothing is large
/// enough to name.
fn contention_line(now: &SideProfile, was: Option<&SideProfile>) -> Option<String> {
    let callers = |c: &crate::record::ContentionPoint| {
        let lead = if c.kind == "spinlock_wait" {
            "taken in"
        } else {
            "in"
        };
        let names: Vec<String> = c
            .functions
            .iter()
            .take(3)
            .map(|f| format!("{} {}", f.name, pct(f.share)))
            .collect();
        if names.is_empty() {
            String::new()
        } else {
            format!(", {lead} {}", names.join(", "))
        }
    };
    match was {
        Some(was) => {
            let grown = now
                .contention
                .iter()
                .map(|c| {
                    let before = was
                        .contention
                        .iter()
                        .find(|w| w.kind == c.kind)
                        .map_or(0.0, |w| w.inclusive_share);
                    (c, before, c.inclusive_share - before)
                })
                .max_by(|a, b| a.2.total_cmp(&b.2))?;
            (grown.2 * 100.0 >= CONTENTION_GROWTH_PTS).then(|| {
                format!(
                    "{} side: {} grew from {} to {} of busy time{}",
                    now.side,
                    grown.0.what,
                    pct(grown.1),
                    pct(grown.0.inclusive_share),
                    callers(grown.0)
                )
            })
        }
        None => {
            let top = now.contention.first()?;
            (top.inclusive_share * 100.0 >= 2.0 * CONTENTION_GROWTH_PTS).then(|| {
                format!(
                    "{} side: {} {} of busy time{}",
                    now.side,
                    top.what,
                    pct(top.inclusive_share),
                    callers(top)
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{CpuUsage, SideCpu, TimelineRow};

    fn phase(name: &str, rate: f64, server_us: f64, load_us: f64) -> PhaseRecord {
        let conns = (rate * 5.0) as u64;
        let mut p = PhaseRecord {
            name: name.into(),
            successes: conns,
            attempts: conns,
            measured_secs: 5.0,
            cpu: CpuUsage {
                server: Some(
                    SideCpu::new(0, 0, 5_000_000_000, 1, conns)
                        .with_run_ns((server_us * 1e3 * conns as f64) as u64, conns),
                ),
                load: SideCpu::new(0, 0, 5_000_000_000, 1, conns)
                    .with_run_ns((load_us * 1e3 * conns as f64) as u64, conns),
            },
            timeline: (1..=4)
                .map(|t| TimelineRow {
                    t_secs: t as f64,
                    successes: rate as u64,
                    attempts: rate as u64,
                    ..TimelineRow::default()
                })
                .collect(),
            ..PhaseRecord::default()
        };
        p.set_rates();
        p
    }

    fn step(shape: &str, cores: usize) -> ScaleStep {
        ScaleStep {
            shape: shape.into(),
            cores,
            phase: format!("{shape}-{cores}"),
            server_cpus: (0..cores).collect(),
            load_cpus: (100..100 + cores).collect(),
            ..ScaleStep::default()
        }
    }

    /// Efficiency is rate_N / (N × rate_1), per shape; the knee is the first step below the
    /// threshold, and rising CPU per connection is named as what limited it.
    #[test]
    fn efficiency_and_the_knee_per_shape() {
        let mut s = ScaleRecord {
            efficiency_threshold: 0.8,
            steps: vec![
                step("together", 1),
                step("together", 2),
                step("together", 4),
                step("fixed-server", 1),
                step("fixed-server", 2),
            ],
            ..ScaleRecord::default()
        };
        let phases = vec![
            phase("together-1", 100_000.0, 5.0, 8.0),
            phase("together-2", 190_000.0, 5.2, 8.3),
            phase("together-4", 240_000.0, 9.0, 8.4),
            phase("fixed-server-1", 50_000.0, 5.0, 8.0),
            phase("fixed-server-2", 100_000.0, 5.0, 8.0),
        ];
        scale_figures(&mut s, &phases);
        let eff: Vec<Option<f64>> = s.steps.iter().map(|x| x.efficiency).collect();
        assert_eq!(eff[0], Some(1.0));
        assert!((eff[1].unwrap() - 0.95).abs() < 1e-9);
        assert!((eff[2].unwrap() - 0.6).abs() < 1e-9);
        assert_eq!(eff[4], Some(1.0));
        assert_eq!(s.steps[2].per_core_per_sec, Some(60_000.0));
        assert_eq!(s.steps[2].settled, Some(true));
        assert_eq!(s.knees.len(), 1, "{:?}", s.knees);
        let k = &s.knees[0];
        assert_eq!(
            (k.shape.as_str(), k.cores, k.last_good_cores),
            ("together", 4, Some(2))
        );
        assert!(
            k.limit
                .starts_with("server CPU per connection 5.00 → 9.00 µs (1.80×)"),
            "{}",
            k.limit
        );
    }

    /// Other work on a knee step's CPUs is that knee's limit, before everything else; a
    /// warning of another phase is not.
    #[test]
    fn other_work_on_the_knee_steps_cpus_is_named_first() {
        let mut s = ScaleRecord {
            efficiency_threshold: 0.8,
            steps: vec![step("together", 1), step("together", 2)],
            ..ScaleRecord::default()
        };
        let phases = vec![
            phase("together-1", 100_000.0, 5.0, 8.0),
            phase("together-2", 100_000.0, 5.0, 8.0),
        ];
        scale_figures(&mut s, &phases);
        let before = s.knees[0].limit.clone();
        knee_disturbances(
            &mut s,
            &["together-1: other work used 30% of the benchmark CPUs [0]".to_string()],
        );
        assert_eq!(s.knees[0].limit, before, "another phase's warning");
        knee_disturbances(
            &mut s,
            &[
                "together-2: other work used 80% of the benchmark CPUs [0-1] (busy 100%)".into(),
                "together-2: the hypervisor took 12% of the benchmark CPUs (steal time)".into(),
            ],
        );
        let k = &s.knees[0];
        assert!(
            k.limit
                .starts_with("other work used 80% of the benchmark CPUs [0-1]"),
            "{}",
            k.limit
        );
        assert!(
            k.evidence[1].starts_with("the hypervisor took 12%"),
            "{:?}",
            k.evidence
        );
        assert!(k.evidence.contains(&before), "{:?}", k.evidence);
    }

    #[test]
    fn a_rate_that_climbs_through_the_step_has_not_settled() {
        let mut p = phase("x", 1000.0, 1.0, 1.0);
        for (i, r) in p.timeline.iter_mut().enumerate() {
            r.successes = 1000 + 200 * i as u64;
        }
        assert_eq!(settled(&p), Some(false));
        p.timeline.truncate(1);
        assert_eq!(settled(&p), None);
    }
}
