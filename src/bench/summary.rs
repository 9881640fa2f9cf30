//! The ten-second summary `connstorm bench` prints, and the per-second progress lines.

use std::fmt::Write as _;

use results::histogram::{format_ns, LatencySummary};
use results::record::{PhaseRecord, RunRecord};

/// How far to trust the user/sys split of CPU time on this kernel (read once): with tick-based
/// accounting the split is sampled at each scheduler tick, and without
/// CONFIG_IRQ_TIME_ACCOUNTING softirq time (the loopback handshake itself) is charged to whatever
/// task it interrupted (Documentation/admin-guide/kernel-parameters.txt, "tsc"/"nohz"; kernel/sched/cputime.c).
pub fn accounting_note() -> Option<&'static str> {
    static NOTE: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *NOTE.get_or_init(|| {
        let cfg = tuning::kconfig::KernelConfig::read_host(std::path::Path::new("/")).ok()?;
        let precise = cfg.enabled("CONFIG_VIRT_CPU_ACCOUNTING_GEN") || cfg.enabled("CONFIG_VIRT_CPU_ACCOUNTING_NATIVE");
        let irq = cfg.enabled("CONFIG_IRQ_TIME_ACCOUNTING");
        match (precise, irq) {
            (true, true) => None,
            (false, false) => Some("this kernel samples user/sys at scheduler ticks and charges softirq time to the interrupted task: compare totals between runs on the same kernel config, not the split"),
            (false, true) => Some("this kernel samples user/sys at scheduler ticks: compare totals, not the split"),
            (true, false) => Some("this kernel charges softirq time to the interrupted task (no CONFIG_IRQ_TIME_ACCOUNTING)"),
        }
    })
}

/// Counters shown in every summary (DESIGN.md, "Kernel counters"); any non-zero drop gets a
/// warning line.
pub const SHOWN_COUNTERS: [(&str, &str); 8] = [
    ("TcpExt.ListenOverflows", "ListenOverflows"),
    ("TcpExt.ListenDrops", "ListenDrops"),
    ("TcpExt.TCPReqQFullDrop", "TCPReqQFullDrop"),
    ("TcpExt.TCPReqQFullDoCookies", "TCPReqQFullDoCookies"),
    ("TcpExt.SyncookiesSent", "SyncookiesSent"),
    ("TcpExt.TCPSynRetrans", "TCPSynRetrans"),
    ("TcpExt.TCPTimeWaitOverflow", "TCPTimeWaitOverflow"),
    ("softnet.dropped", "softnet dropped"),
];

/// Thousands separators: `1234567` → `1,234,567` (the tool's one formatter,
/// `results::numfmt`; negative values print as 0 as before).
pub fn group(n: f64) -> String {
    results::numfmt::fixed(n.max(0.0), 0)
}

fn latency_line(name: &str, encoded: Option<&str>) -> Option<String> {
    let h = results::histogram::decode(encoded?).ok()?;
    if h.is_empty() {
        return Some(format!("  {name:<10} (no samples)"));
    }
    let s = LatencySummary::of(&h);
    Some(format!(
        "  {name:<10} p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  ({} samples)",
        format_ns(s.p50_ns as f64),
        format_ns(s.p90_ns as f64),
        format_ns(s.p99_ns as f64),
        format_ns(s.p999_ns as f64),
        format_ns(s.max_ns as f64),
        group(s.count as f64)
    ))
}

fn pattern_text(p: &PhaseRecord) -> String {
    match p.pattern {
        results::record::Pattern::Closed { concurrency } => {
            format!("closed loop, {concurrency} in flight")
        }
        results::record::Pattern::Open { rate_per_sec, .. } => {
            format!("open loop, {}/s offered", group(rate_per_sec))
        }
    }
}

/// One phase: rate, achieved vs offered, latencies, failures, CPU per connection, cross-check.
pub fn phase(out: &mut String, p: &PhaseRecord) {
    let _ = writeln!(
        out,
        "{} ({}, {:.1} s measured): {} CPM = {} conn/s",
        p.name,
        pattern_text(p),
        p.measured_secs,
        group(p.cpm),
        group(p.achieved_per_sec)
    );
    if let Some(offered) = p.offered_per_sec {
        let pct = if offered > 0.0 {
            p.achieved_per_sec / offered * 100.0
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "  achieved {}/s of {}/s offered ({pct:.2}%), late starts {}, dropped starts {}",
            group(p.achieved_per_sec),
            group(offered),
            group(p.late as f64),
            group(p.dropped as f64)
        );
    }
    for (name, enc) in [
        ("handshake", Some(p.histograms.handshake.as_str())),
        ("service", Some(p.histograms.service.as_str())),
        ("first byte", p.histograms.first_byte.as_deref()),
    ] {
        if let Some(line) = latency_line(name, enc) {
            let _ = writeln!(out, "{line}");
        }
    }
    if p.failures.is_empty() {
        let _ = writeln!(
            out,
            "  failures: none ({} attempts)",
            group(p.attempts as f64)
        );
    } else {
        let list: Vec<String> = p
            .failures
            .iter()
            .map(|(k, v)| format!("{k} {}", group(*v as f64)))
            .collect();
        let _ = writeln!(
            out,
            "  failures: {} of {} attempts: {}",
            group(p.failed() as f64),
            group(p.attempts as f64),
            list.join(", ")
        );
    }
    let us =
        |v: Option<f64>| v.map_or_else(|| results::numfmt::NA.to_string(), |v| format!("{v:.1}"));
    let side = |name: &str, c: &results::record::SideCpu| match c.us_per_conn_run {
        Some(run) => format!(
            "{name} {run:.1} µs on CPU (user {} + sys {} by tick samples)",
            us(c.us_per_conn_user),
            us(c.us_per_conn_sys)
        ),
        None => format!(
            "{name} {} µs (user {}, sys {})",
            us(c.us_per_conn()),
            us(c.us_per_conn_user),
            us(c.us_per_conn_sys)
        ),
    };
    let mut cpu = format!("  CPU per connection: {}", side("load", &p.cpu.load));
    if let Some(s) = &p.cpu.server {
        let _ = write!(cpu, "; {}", side("server", s));
    }
    let _ = writeln!(out, "{cpu}");
    if let Some(note) = accounting_note() {
        let _ = writeln!(out, "    ({note})");
    }
    if let Some(c) = &p.cross_check {
        let mark = if c.agree { "ok" } else { "MISMATCH" };
        let _ = writeln!(
            out,
            "  cross-check [{mark}] (incl. warm-up): server accepts {}, load handshakes {}, kernel PassiveOpens {}, ActiveOpens {} — {}",
            c.server_accepted.map(|v| group(v as f64)).unwrap_or_else(|| "-".into()),
            group(c.load_successes as f64),
            c.kernel_passive_opens.map(|v| group(v as f64)).unwrap_or_else(|| "-".into()),
            c.kernel_active_opens.map(|v| group(v as f64)).unwrap_or_else(|| "-".into()),
            c.note
        );
    }
}

/// Kernel counter deltas summed over phases, with warnings for non-zero drops.
pub fn counters(out: &mut String, r: &RunRecord) {
    let sum = |key: &str| -> i64 {
        r.phases
            .iter()
            .map(|p| p.counters.get(key).copied().unwrap_or(0))
            .sum()
    };
    let shown: Vec<String> = SHOWN_COUNTERS
        .iter()
        .map(|(k, label)| format!("{label} {}", sum(k)))
        .collect();
    let _ = writeln!(out, "kernel counters (all phases): {}", shown.join(", "));
}

/// A non-zero drop or retransmit counter in words (meanings from `results::record`).
fn counter_warning(name: &str, delta: i64) -> String {
    let short = name.rsplit('.').next().unwrap_or(name);
    let what = results::record::describe_counter(name, delta);
    if results::record::is_retransmit_counter(name) {
        format!("{short}: {what}")
    } else {
        format!("{short} +{delta}: {what} — drops make this a different experiment")
    }
}

/// Warnings derived from the record itself (so old and new records read the same): interruption,
/// engine fallback, kernel drops and retransmits, count mismatches, failures.
pub fn derived_warnings(r: &RunRecord) -> Vec<String> {
    let mut w = Vec::new();
    if r.run.interrupted {
        w.push("run interrupted (Ctrl-C): numbers cover only what ran".to_string());
    }
    if let Some(why) = &r.run.engine_fallback_reason {
        w.push(format!("engine auto fell back to epoll: {why}"));
    }
    for p in &r.phases {
        for (k, v) in p.drops() {
            w.push(format!("{}: {}", p.name, counter_warning(k, v)));
        }
        if let Some(c) = &p.cross_check {
            if !c.agree {
                w.push(format!(
                    "{}: our counts disagree with the kernel's: {}",
                    p.name, c.note
                ));
            }
        }
        if p.failed() > 0 {
            w.push(format!(
                "{}: {} failed attempts",
                p.name,
                group(p.failed() as f64)
            ));
        }
    }
    w
}

/// Derived warnings followed by the ones stored in the record.
pub fn warnings(r: &RunRecord) -> Vec<String> {
    let mut w = derived_warnings(r);
    w.extend(r.warnings.iter().cloned());
    w
}

/// The whole summary.
pub fn render(r: &RunRecord, record_path: Option<&std::path::Path>) -> String {
    let mut out = String::new();
    let run = &r.run;
    let where_ = match (&run.target, run.netns) {
        (Some(t), _) => format!("external target {t}"),
        (None, true) => format!(
            "two network namespaces over veth{}",
            run.rtt_ns
                .map(|n| format!(", RTT {}", format_ns(n as f64)))
                .unwrap_or_default()
        ),
        (None, false) => "loopback".to_string(),
    };
    let _ = writeln!(
        out,
        "connstorm bench: engine {} (steering {}), server CPUs [{}], load CPUs [{}], client close {}, server mode {}, {where_}",
        run.engine,
        run.steering,
        tuning::cpulist::format(&run.server_cpus),
        tuning::cpulist::format(&run.load_cpus),
        run.close_mode,
        run.server_mode
    );
    if let Some(peak) = r.phase("peak") {
        let _ = writeln!(
            out,
            "PEAK: {} CPM = {} conn/s{}",
            group(peak.cpm),
            group(peak.achieved_per_sec),
            bottleneck(peak)
        );
    }
    if let Some(lat) = r.phase("latency") {
        if let Some(h) = results::histogram::decode(&lat.histograms.handshake)
            .ok()
            .filter(|h| !h.is_empty())
        {
            let s = LatencySummary::of(&h);
            let _ = writeln!(
                out,
                "LATENCY at {}/s offered ({} conn/s achieved): handshake p50 {}, p99 {}, max {}",
                group(lat.offered_per_sec.unwrap_or(lat.achieved_per_sec)),
                group(lat.achieved_per_sec),
                format_ns(s.p50_ns as f64),
                format_ns(s.p99_ns as f64),
                format_ns(s.max_ns as f64)
            );
        }
    }
    for p in &r.phases {
        phase(&mut out, p);
    }
    counters(&mut out, r);
    if let Some(b) = &r.baseline {
        let _ = writeln!(
            out,
            "baseline: kernel floor (blocking socket/connect/close vs accept/close on the same CPUs) {} conn/s; connstorm peak = {:.2} × floor",
            group(b.floor_per_sec),
            b.ratio
        );
    }
    for w in warnings(r) {
        let _ = writeln!(out, "warning: {w}");
    }
    if let Some(p) = record_path {
        let _ = writeln!(out, "record: {}", p.display());
    }
    out
}

/// Which side was busier during a closed-loop phase: the one near 100% limits the rate.
fn bottleneck(p: &PhaseRecord) -> String {
    let util = |c: &results::record::SideCpu| {
        let cap = c.wall_ns as f64 * c.cpus as f64;
        if cap > 0.0 {
            c.run_ns.unwrap_or(c.user_ns + c.sys_ns) as f64 / cap * 100.0
        } else {
            0.0
        }
    };
    let load = util(&p.cpu.load);
    match &p.cpu.server {
        Some(s) => {
            let server = util(s);
            if load.max(server) < 85.0 {
                format!(" (CPU busy: load {load:.0}%, server {server:.0}% — neither side saturated: raise --concurrency)")
            } else {
                let limit = if load >= server {
                    "load side"
                } else {
                    "server side"
                };
                format!(" (CPU busy: load {load:.0}%, server {server:.0}% — the {limit} limits the peak)")
            }
        }
        None => format!(" (load CPUs {load:.0}% busy)"),
    }
}

/// A progress line for one second of a phase.
pub fn progress_line(phase: &str, row: &loadgen::TimelineRow) -> String {
    format!(
        "[{phase}{}] {:>3}s  offered {:>8}/s  achieved {:>8}/s  errors {:>6}  handshake p50 {}  p99 {}",
        if row.warmup { " warm-up" } else { "" },
        row.t_secs,
        group(row.offered as f64),
        group(row.successes as f64),
        group(row.failures as f64),
        format_ns(row.p50_ns as f64),
        format_ns(row.p99_ns as f64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group(0.0), "0");
        assert_eq!(group(999.0), "999");
        assert_eq!(group(1000.0), "1,000");
        assert_eq!(group(1234567.4), "1,234,567");
    }
}
