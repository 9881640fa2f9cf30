//! The text of `connstorm scale` (and its section in `report`): one row per step (cores, the
//! CPUs, conn/s, per core, efficiency, CPU µs per connection per side, the busiest CPU's
//! softirq share, whether the rate settled), each shape's knee and what limited it; and a
//! phase's kernel profile as stored (top functions per side, the named contention points).

use super::table::{self, Block, Table};
use crate::numfmt;
use crate::record::{KernelProfile, ProfileOverhead, ScaleRecord};

/// How many functions per side a profile prints.
pub const PROFILE_TOP: usize = 10;

fn cpus(v: &[usize]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        common::cpulist::format(v)
    }
}

/// The blocks of a scale record: the plan's notes, the step table, the knees.
pub(crate) fn scale_blocks(s: &ScaleRecord) -> Vec<Block> {
    let mut out = vec![Block::Heading(
        2,
        format!(
            "scale: {} steps, pairs {}, knee below {} efficiency",
            s.steps.len(),
            s.pairs,
            numfmt::fixed(s.efficiency_threshold, 2)
        ),
    )];
    out.push(Block::Line(format!(
        "housekeeping CPUs {}; SMT siblings {}",
        cpus(&s.housekeeping),
        if s.smt { "used" } else { "unused" }
    )));
    for n in &s.notes {
        out.push(Block::Line(n.clone()));
    }
    let mut t = Table::new([
        "shape",
        "cores",
        "server CPUs",
        "load CPUs",
        "conn/s",
        "conn/s per core",
        "efficiency",
        "server µs/conn",
        "load µs/conn",
        "softirq max",
        "settled",
    ]);
    let opt = |v: Option<f64>, digits: usize| numfmt::fixed_opt(v, digits);
    for st in &s.steps {
        t.row([
            st.shape.clone(),
            st.cores.to_string(),
            cpus(&st.server_cpus),
            cpus(&st.load_cpus),
            opt(st.achieved_per_sec, 0),
            opt(st.per_core_per_sec, 0),
            opt(st.efficiency, 2),
            opt(st.server_us_per_conn, 2),
            opt(st.load_us_per_conn, 2),
            match (st.busiest_softirq_pct, st.busiest_softirq_cpu) {
                (Some(p), Some(c)) => format!("{p:.1}% (CPU {c})"),
                _ => numfmt::NA.to_string(),
            },
            match st.settled {
                Some(true) => "yes".into(),
                Some(false) => "no".into(),
                None => numfmt::NA.to_string(),
            },
        ]);
    }
    out.push(Block::Table(t));
    for st in s.steps.iter().filter(|st| !st.notes.is_empty()) {
        out.push(Block::Line(format!(
            "{} {} core(s): {}",
            st.shape,
            st.cores,
            st.notes.join("; ")
        )));
    }
    let mut shapes: Vec<&str> = s.steps.iter().map(|x| x.shape.as_str()).collect();
    shapes.dedup();
    for shape in shapes {
        match s.knees.iter().find(|k| k.shape == shape) {
            Some(k) => {
                out.push(Block::Line(format!(
                    "knee ({shape}): efficiency {} at {} core(s), below {}{}; limited by: {}",
                    numfmt::fixed(k.efficiency, 2),
                    k.cores,
                    numfmt::fixed(s.efficiency_threshold, 2),
                    match k.last_good_cores {
                        Some(c) => format!(" (last step above it: {c} core(s))"),
                        None => String::new(),
                    },
                    k.limit
                )));
                for e in k.evidence.iter().skip(1) {
                    out.push(Block::Line(format!("  also: {e}")));
                }
            }
            // One step (the others interrupted, or a shape cut short) has efficiency 1 by
            // definition: "none — every step kept …" was a verdict without power.
            None if s
                .steps
                .iter()
                .filter(|x| x.shape == shape && x.efficiency.is_some())
                .count()
                < 2 =>
            {
                out.push(Block::Line(format!(
                    "knee ({shape}): unknown — fewer than two steps measured (efficiency compares a \
                     step with the first one): run it again with at least two steps"
                )));
            }
            None => {
                let last = s.steps.iter().rfind(|x| x.shape == shape);
                out.push(Block::Line(format!(
                    "knee ({shape}): none — every step kept an efficiency of at least {}{}",
                    numfmt::fixed(s.efficiency_threshold, 2),
                    match last.and_then(|l| l.efficiency.map(|e| (l.cores, e))) {
                        Some((c, e)) => format!(" ({} at {c} core(s))", numfmt::fixed(e, 2)),
                        None => String::new(),
                    }
                )));
            }
        }
    }
    out
}

/// The scale section as text (what `connstorm scale` prints before the record's path).
pub fn scale_text(s: &ScaleRecord) -> String {
    table::to_text(&scale_blocks(s))
}

/// The blocks of a phase's kernel profile: per side the top [`PROFILE_TOP`] functions by self
/// share, the contention points, lost samples; then the notes.
pub(crate) fn profile_blocks(phase: &str, p: &KernelProfile) -> Vec<Block> {
    let mut out = vec![Block::Line(format!(
        "profile of {phase}: {} at {} Hz per CPU for {} s ({}, {} ms of its CPU)",
        p.event,
        p.frequency_hz,
        numfmt::fixed(p.duration_ns as f64 / 1e9, 2),
        match p.collector_cpu {
            Some(c) => format!("collector on CPU {c}"),
            None => "collector unpinned".into(),
        },
        numfmt::fixed(p.collector_cpu_ns as f64 / 1e6, 1)
    ))];
    for s in &p.sides {
        let idle = if s.samples == 0 {
            0.0
        } else {
            s.idle_samples as f64 / s.samples as f64 * 100.0
        };
        out.push(Block::Line(format!(
            "{} (CPUs {}): {} samples, {} busy, {:.1}% idle",
            s.side,
            cpus(&s.cpus),
            numfmt::count(s.samples),
            numfmt::count(s.busy_samples()),
            idle
        )));
        if s.busy_samples() > 0 {
            // The name first: a table's first column is the left-aligned one.
            let mut t = Table::new(["function", "self", "incl"]);
            for f in s.functions.iter().take(PROFILE_TOP) {
                t.row([
                    format!(
                        "{} {}",
                        if f.space == "kernel" { "[k]" } else { "[u]" },
                        f.name
                    ),
                    format!("{:.1}%", f.self_share * 100.0),
                    format!("{:.1}%", f.inclusive_share * 100.0),
                ]);
            }
            out.push(Block::Table(t));
        }
        if s.contention.is_empty() {
            out.push(Block::Line(
                "  contention: none of the known points was sampled".into(),
            ));
        }
        for c in &s.contention {
            let lead = if c.kind == "spinlock_wait" {
                "taken in"
            } else {
                "in"
            };
            let list: Vec<String> = c
                .functions
                .iter()
                .map(|f| format!("{} {:.1}%", f.name, f.share * 100.0))
                .collect();
            out.push(Block::Line(format!(
                "  contention: {} {:.1}% of busy time (self {:.1}%), {lead} {}",
                c.what,
                c.inclusive_share * 100.0,
                c.self_share * 100.0,
                list.join(", ")
            )));
        }
        if s.lost_samples > 0 || s.throttled > 0 {
            out.push(Block::Warning(format!(
                "profile {}: {} samples lost, throttled {} times",
                s.side,
                numfmt::count(s.lost_samples),
                s.throttled
            )));
        }
    }
    for n in &p.notes {
        out.push(Block::Line(format!("  note: {n}")));
    }
    out
}

/// A phase's profile as text (what `bench --profile` and friends print).
pub fn profile_text(phase: &str, p: &KernelProfile) -> String {
    table::to_text(&profile_blocks(phase, p))
}

/// The paired on/off cost of the profile, one line: the median change of conn/s with its
/// interval and of CPU per connection, at the frequency.
pub fn overhead_line(o: &ProfileOverhead) -> String {
    let change = |r: f64| format!("{:+.1}%", (r - 1.0) * 100.0);
    let rate = match o.median_rate_ratio {
        Some(r) => change(r),
        None => numfmt::NA.to_string(),
    };
    let interval = match &o.interval {
        Some(i) => format!(
            " ({}% interval {} to {})",
            numfmt::fixed(o.confidence * 100.0, 0),
            change(i.low),
            change(i.high)
        ),
        None => format!(
            " (no {}% interval: {} pairs, 6 needed)",
            numfmt::fixed(o.confidence * 100.0, 0),
            o.pairs.len()
        ),
    };
    format!(
        "profile overhead at {} Hz, {} paired off/on slices of {} s (ABBA): conn/s {rate}{interval}, \
         CPU µs per connection {}",
        o.frequency_hz,
        o.pairs.len(),
        numfmt::fixed(o.slice_secs, 1),
        o.median_cpu_ratio.map_or_else(|| numfmt::NA.to_string(), change)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ScaleStep;

    fn step(shape: &str, cores: usize, efficiency: Option<f64>) -> ScaleStep {
        ScaleStep {
            shape: shape.into(),
            cores,
            phase: format!("{shape}-{cores}"),
            efficiency,
            ..ScaleStep::default()
        }
    }

    /// Statistics (no verdict without power): a scale interrupted after its first step has one
    /// step of efficiency 1.00 by definition; it printed "knee (together): none — every step
    /// kept an efficiency of at least 0.80". It is unknown; two steps give the verdict.
    #[test]
    fn statistics_one_step_gives_no_knee_verdict() {
        let mut s = ScaleRecord {
            efficiency_threshold: 0.8,
            steps: vec![step("together", 1, Some(1.0))],
            ..ScaleRecord::default()
        };
        let t = scale_text(&s);
        assert!(
            t.contains("knee (together): unknown — fewer than two steps"),
            "{t}"
        );
        assert!(!t.contains("every step kept"), "{t}");
        s.steps.push(step("together", 2, Some(0.95)));
        let t = scale_text(&s);
        assert!(
            t.contains("knee (together): none — every step kept an efficiency of at least 0.80"),
            "{t}"
        );
    }
}
