//! The summary `connstorm bench` prints (and `sweep` per step): one text rendering of a
//! [`RunRecord`] — the peak and latency headlines with what limited the peak ([`saturation`]),
//! each phase's rates, latencies, failures, CPU per connection and cross-check, the kernel
//! counters summed over phases, and the record's warnings ([`crate::analysis::warnings`], the same
//! lines `connstorm report` prints).

use std::fmt::Write as _;

use super::format_ns;
use crate::analysis::{saturation, side_busy_pct, LatencySummary, Saturation};
use crate::record::{PhaseRecord, RunRecord};

/// Counters shown in every summary (docs/design.md, "Kernel counters"); any non-zero drop gets a
/// warning line.
pub(crate) const SHOWN_COUNTERS: [(&str, &str); 8] = [
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
/// `crate::numfmt`; negative values print as 0 as before).
fn group(n: f64) -> String {
    crate::numfmt::fixed(n.max(0.0), 0)
}

/// A rate that may not exist (no success measured): [`group`], or `n/a`.
fn rate(v: Option<f64>) -> String {
    v.map_or_else(|| crate::numfmt::NA.to_string(), group)
}

/// `, N abandoned at the interrupt` when an interrupt left attempts waiting for their handshake
/// (neither successes nor failures), else nothing.
fn abandoned_part(abandoned: u64) -> String {
    if abandoned == 0 {
        String::new()
    } else {
        format!(", {} abandoned at the interrupt", group(abandoned as f64))
    }
}

fn latency_line(name: &str, encoded: Option<&str>) -> Option<String> {
    let h = crate::record::decode_histogram(encoded?).ok()?;
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

/// The accept-queue wait's lines of a phase that measured it: its latency line, then Little's
/// law beside the sampled accept-queue length, and what the join left out.
fn accept_queue(out: &mut String, q: &crate::record::AcceptQueue, encoded: Option<&str>) {
    if let Some(line) = latency_line("accept wait", encoded) {
        let sampled = if q.sample_every > 1 {
            format!(
                " (1 in {} connections stamped)",
                group(f64::from(q.sample_every))
            )
        } else {
            String::new()
        };
        let _ = writeln!(out, "{line}{sampled}");
    }
    let depth = match q.sampled_depth {
        Some(d) => format!(
            "sampled accept-queue length mean {d:.1}, max {} ({} samples, every {})",
            group(q.sampled_depth_max as f64),
            group(q.depth_samples as f64),
            format_ns(q.depth_every_us as f64 * 1e3)
        ),
        None => "the accept-queue length could not be sampled".to_string(),
    };
    let _ = writeln!(
        out,
        "  accept queue: Little's law {}/s × mean wait {} = {:.1} waiting; {depth}",
        group(q.accept_rate_per_sec),
        format_ns(q.mean_wait_ns),
        q.littles_law_depth
    );
    let check = match q.littles_law_check() {
        crate::record::LittleCheck::Agree => format!(
            "Little's law and the sampled length agree within {:.0}%",
            crate::record::LITTLE_TOLERANCE * 100.0
        ),
        crate::record::LittleCheck::Differ(rel) => format!(
            "Little's law is {:+.0}% off the sampled length (more than {:.0}% apart)",
            rel * 100.0,
            crate::record::LITTLE_TOLERANCE * 100.0
        ),
        crate::record::LittleCheck::NotCompared(why) => {
            format!("Little's law not held against the sampled length: {why}")
        }
    };
    let sampler = if q.depth_samples_expected > 0 && !q.depth_sampler_realtime {
        " (the sampler could not run real-time: its samples lean to the times the benchmark CPUs were free)"
    } else {
        ""
    };
    let _ = writeln!(out, "  accept queue check: {check}{sampler}");
    let mut left = Vec::new();
    if q.accepted_first > 0 {
        left.push(format!(
            "{} accepted before the client saw its handshake complete (wait 0)",
            group(q.accepted_first as f64)
        ));
    }
    if q.unmatched_client + q.unmatched_server > 0 {
        left.push(format!(
            "{} client and {} server stamps joined nothing",
            group(q.unmatched_client as f64),
            group(q.unmatched_server as f64)
        ));
    }
    if q.stamps_full > 0 {
        left.push(format!(
            "{} stamps lost to full buffers",
            group(q.stamps_full as f64)
        ));
    }
    if !left.is_empty() {
        let _ = writeln!(out, "  accept wait: {}", left.join("; "));
    }
}

fn pattern_text(p: &PhaseRecord) -> String {
    match p.pattern {
        crate::record::Pattern::Closed { concurrency } => {
            format!("closed loop, {} in flight", group(f64::from(concurrency)))
        }
        crate::record::Pattern::Open { rate_per_sec, .. } => {
            format!(
                "open loop, {}/s offered",
                crate::numfmt::exact(rate_per_sec)
            )
        }
    }
}

/// One phase: rate, achieved vs offered, latencies, failures, CPU per connection, cross-check.
/// A phase with no success says "nothing measured" and prints no rate, per-connection figure or
/// "ok" cross-check. `accounting`: how far to trust this kernel's user/sys split, printed under
/// the CPU line (the binary reads the kernel config; `None` prints nothing).
pub(crate) fn phase(out: &mut String, p: &PhaseRecord, accounting: Option<&str>) {
    let measured = p.successes > 0;
    if measured {
        let _ = writeln!(
            out,
            "{} ({}, {:.1} s measured): {} CPM = {} conn/s",
            p.name,
            pattern_text(p),
            p.measured_secs,
            rate(p.cpm),
            rate(p.achieved_per_sec)
        );
    } else if p.measured_secs <= 0.0 {
        let _ = writeln!(
            out,
            "{} ({}): nothing measured — the phase ended (interrupted) before its measured part began",
            p.name,
            pattern_text(p),
        );
    } else {
        let _ = writeln!(
            out,
            "{} ({}, {:.1} s measured): nothing measured — no connection succeeded",
            p.name,
            pattern_text(p),
            p.measured_secs
        );
    }
    if let Some(offered) = p.offered_per_sec {
        let achieved = match p.achieved_per_sec {
            Some(a) if offered > 0.0 => format!(
                "achieved {}/s of {}/s offered ({:.2}%)",
                group(a),
                crate::numfmt::exact(offered),
                a / offered * 100.0
            ),
            Some(a) => format!("achieved {}/s of 0/s offered", group(a)),
            None => format!(
                "achieved nothing of {}/s offered",
                crate::numfmt::exact(offered)
            ),
        };
        let _ = writeln!(
            out,
            "  {achieved}, late starts {}, dropped starts {}",
            group(p.late as f64),
            group(p.dropped as f64)
        );
    }
    for (name, enc) in [
        ("handshake", Some(p.histograms.handshake.as_str())),
        ("service", Some(p.histograms.service.as_str())),
        ("first byte", p.histograms.first_byte.as_deref()),
        ("tls", p.histograms.tls_handshake.as_deref()),
        ("tls full", p.histograms.tls_full.as_deref()),
        ("tls resumed", p.histograms.tls_resumed.as_deref()),
        ("http resp", p.histograms.http_response.as_deref()),
    ] {
        if let Some(line) = latency_line(name, enc) {
            let _ = writeln!(out, "{line}");
        }
    }
    if let Some(t) = &p.tls {
        let _ = writeln!(
            out,
            "  {}",
            super::report::tls_line(t, p.measured_secs, p.server.as_ref())
        );
    }
    if let Some(h) = &p.http {
        let classes: Vec<String> = h
            .status_classes
            .iter()
            .map(|(c, n)| format!("{c} {}", group(*n as f64)))
            .collect();
        let _ = writeln!(
            out,
            "  http: {} responses ({}/s), status {}",
            group(h.responses as f64),
            if p.measured_secs > 0.0 {
                group(h.responses as f64 / p.measured_secs)
            } else {
                "-".into()
            },
            if classes.is_empty() {
                "none".to_string()
            } else {
                classes.join(", ")
            }
        );
    }
    // The generator's own lag, so the handshake line above can be read net of it.
    if let Some(line) = latency_line("generator lag", p.histograms.generator_lag.as_deref()) {
        let _ = writeln!(out, "{line}");
        // At the drop rule the figure is the rule's bound, not a lag measured: said beside it.
        let artefact = crate::record::decode_histogram(
            p.histograms.generator_lag.as_deref().unwrap_or_default(),
        )
        .ok()
        .and_then(|h| crate::analysis::generator_lag_artefact(&LatencySummary::of(&h)));
        if let Some(a) = artefact {
            let _ = writeln!(out, "             ({a})");
        }
        if let Some(spin) = p.settings.get("load.spin_ns").filter(|&&v| v >= 0) {
            let cpus: Vec<usize> = p.load_workers.iter().map(|w| w.cpu).collect();
            let shared = cpus
                .iter()
                .any(|c| cpus.iter().filter(|o| *o == c).count() > 1);
            let capped = *spin >= common::units::AUTO_SPIN_MAX_NS as i64;
            let how = match (p.settings.get("load.spin_auto") == Some(&1), shared) {
                (true, false) if capped => {
                    "--spin auto: its cap; the load CPU's timer wake-up p99.9 measured at the start was at or above it"
                }
                (true, false) => {
                    "--spin auto: the load CPU's timer wake-up p99.9, measured at the start"
                }
                (true, true) => {
                    "--spin auto: measured only on load CPUs with one worker; where workers share a CPU, the default"
                }
                (false, _) => "--spin",
            };
            let _ = writeln!(
                out,
                "             (spin before each due start: {}, {how})",
                crate::numfmt::ns(*spin as f64)
            );
        }
    }
    if let Some(q) = p.accept_queue.as_ref().filter(|q| q.not_measured.is_none()) {
        accept_queue(out, q, p.histograms.accept_queue_wait.as_deref());
    }
    if let n @ 1.. = crate::record::never_accepted_total(&p.failures) {
        let _ = writeln!(out, "  note: {}", crate::analysis::client_view_note(n));
    }
    if p.attempts == 0 {
        let _ = writeln!(
            out,
            "  attempts: none started in the measured window (attempts count by when they start; kernel ActiveOpens {} incl. warm-up): every slot was held by attempts started before it, and any handshake the per-second lines show in the window is one of those",
            p.cross_check
                .as_ref()
                .and_then(|c| c.kernel_active_opens)
                .map(|v| group(v as f64))
                .unwrap_or_else(|| "unknown".into())
        );
    } else if p.failures.is_empty() {
        let _ = writeln!(
            out,
            "  failures: none ({} attempts{})",
            group(p.attempts as f64),
            abandoned_part(p.abandoned)
        );
    } else {
        let list: Vec<String> = p
            .failures
            .iter()
            .map(|(k, v)| format!("{k} {}", group(*v as f64)))
            .collect();
        let _ = writeln!(
            out,
            "  failures: {} of {} attempts{}: {}",
            group(p.failed() as f64),
            group(p.attempts as f64),
            abandoned_part(p.abandoned),
            list.join(", ")
        );
    }
    let us =
        |v: Option<f64>| v.map_or_else(|| crate::numfmt::NA.to_string(), |v| format!("{v:.1}"));
    let side = |name: &str, c: &crate::record::SideCpu| {
        let split = format!(
            "user {} + sys {} by tick samples",
            us(c.us_per_conn_user),
            us(c.us_per_conn_sys)
        );
        // The spin is named when it shows at this precision (a few ns per connection would
        // read "+ 0.0 µs"; they are in the total either way).
        match (c.us_per_conn_run, c.us_per_conn_spin.filter(|&s| s >= 0.05)) {
            (Some(_), Some(spin)) => format!(
                "{name} {} µs on CPU + {spin:.1} µs spinning before due starts (--spin; {split}, the spin included)",
                us(c.us_per_conn())
            ),
            (Some(run), None) => format!("{name} {run:.1} µs on CPU ({split})"),
            (None, _) => format!(
                "{name} {} µs (user {}, sys {})",
                us(c.us_per_conn()),
                us(c.us_per_conn_user),
                us(c.us_per_conn_sys)
            ),
        }
    };
    if measured {
        let mut cpu = format!("  CPU per connection: {}", side("load", &p.cpu.load));
        if let Some(s) = &p.cpu.server {
            let _ = write!(cpu, "; {}", side("server", s));
        }
        let _ = writeln!(out, "{cpu}");
        if let Some(note) = accounting {
            let _ = writeln!(out, "    ({note})");
        }
    }
    if let Some(s) = crate::analysis::accept_spread(p) {
        let _ = writeln!(out, "  {}", crate::analysis::spread_line(&s));
    }
    if let Some(line) = crate::analysis::softirq_line(&p.net_softirqs) {
        let _ = writeln!(out, "  {line}");
    }
    if let Some(c) = &p.cross_check {
        let mark = match (c.agree, measured) {
            (false, _) => "MISMATCH",
            (true, true) => "ok",
            (true, false) => "nothing to check",
        };
        // Nothing completed on either side: no count is "equal" to anything.
        let note = if c.agree && c.load_successes == 0 && c.server_accepted.unwrap_or(0) == 0 {
            "no handshake completed, so there was nothing to compare".to_string()
        } else {
            c.note.clone()
        };
        let _ = writeln!(
            out,
            "  cross-check [{mark}] (incl. warm-up): server accepts {}, load handshakes {}, kernel PassiveOpens {}, ActiveOpens {} — {}",
            c.server_accepted.map(|v| group(v as f64)).unwrap_or_else(|| "-".into()),
            group(c.load_successes as f64),
            c.kernel_passive_opens.map(|v| group(v as f64)).unwrap_or_else(|| "-".into()),
            c.kernel_active_opens.map(|v| group(v as f64)).unwrap_or_else(|| "-".into()),
            note
        );
    }
}

/// The line of kernel counter deltas ([`SHOWN_COUNTERS`]) summed over phases (the warnings name
/// the drops among them).
pub(crate) fn counters(out: &mut String, r: &RunRecord) {
    let sum = |key: &str| -> i64 {
        r.phases
            .iter()
            .map(|p| p.counters.get(key).copied().unwrap_or(0))
            .sum()
    };
    let shown: Vec<String> = SHOWN_COUNTERS
        .iter()
        .map(|(k, label)| format!("{label} {}", crate::numfmt::signed(sum(k))))
        .collect();
    let _ = writeln!(out, "kernel counters (all phases): {}", shown.join(", "));
}

/// The whole summary of `r`, ending with `record: PATH` when `record_path` is given.
/// `accounting`: how far to trust this kernel's user/sys split, printed under each phase's CPU
/// line (the binary reads the kernel config; `None` prints nothing).
pub fn bench_summary(
    r: &RunRecord,
    record_path: Option<&std::path::Path>,
    accounting: Option<&str>,
) -> String {
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
    let wire = r.wire().map(|w| format!("{w}; ")).unwrap_or_default();
    let _ = writeln!(
        out,
        "connstorm bench: {wire}engine {} (steering {}), server CPUs [{}], load CPUs [{}], client close {}, server mode {}, {where_}{}",
        run.engine,
        run.steering,
        common::cpulist::format(&run.server_cpus),
        common::cpulist::format(&run.load_cpus),
        run.close_mode,
        run.server_mode,
        common::tls::unverified_marker(run.tls.as_ref().is_none_or(|t| t.verified))
    );
    if let Some(d) = &run.load_engine_detail {
        let _ = writeln!(out, "load engine: {d}");
    }
    // Said once, not per phase, and never as a zero.
    if let Some(why) = r
        .phases
        .iter()
        .find_map(|p| p.accept_queue.as_ref()?.not_measured.as_deref())
    {
        let _ = writeln!(out, "accept-queue wait: not measured: {why}");
    }
    if let Some(t) = &run.tls {
        let _ = writeln!(out, "{}", t.line());
    }
    if run.placement.as_deref() == Some("whole-machine") {
        let _ = writeln!(
            out,
            "placement: whole machine: one server worker and one load worker on each of CPUs [{}] (softirq work stays on the CPU that raised it)",
            common::cpulist::format(&run.load_cpus)
        );
    }
    for line in headlines(r) {
        let _ = writeln!(out, "{line}");
    }
    for p in &r.phases {
        phase(&mut out, p, accounting);
    }
    counters(&mut out, r);
    if let Some(b) = &r.baseline {
        let what = if b.paired.is_some() {
            "connstorm = {:.2} × floor (median of the paired slices)"
        } else {
            "connstorm peak = {:.2} × floor"
        };
        let _ = writeln!(
            out,
            "baseline: kernel floor (blocking socket/connect/close vs accept/close on the same CPUs) {} conn/s; {}",
            group(b.floor_per_sec),
            what.replace("{:.2}", &format!("{:.2}", b.ratio))
        );
        if let Some(p) = &b.paired {
            out.push_str(&super::paired_line(p));
            out.push('\n');
        }
    }
    if let Some(f) = &r.crypto_floor {
        let _ = writeln!(out, "{}", f.line());
    }
    for w in crate::analysis::warnings(r) {
        let _ = writeln!(out, "warning: {w}");
    }
    if let Some(p) = record_path {
        let _ = writeln!(out, "record: {}", p.display());
    }
    out
}

/// What may have limited a phase's peak besides its CPUs: the kernel's drops and retransmits
/// (with their figures, [`drop_limit`]), other named causes (resets, refusals) and other work
/// on (or steal time of) the benchmark CPUs.
struct Limits {
    drops: Option<String>,
    causes: bool,
    contention: bool,
}

/// The drops and retransmits of a phase as the limit of its rate, with the figures that prove
/// it: the drop counters that rose ([`PhaseRecord::drops`]: `TCPSynRetrans`, `ListenOverflows`,
/// …) and the first handshake percentile (p50, p90, p99) at or above 1 s, the first SYN
/// retransmit timeout (`TCP_TIMEOUT_INIT`): that share of the connections waited a retransmit.
/// `None` when no drop counter rose, or too few to hold (below).
fn drop_limit(p: &PhaseRecord) -> Option<String> {
    let drops = p.drops();
    if drops.is_empty() {
        return None;
    }
    // Retransmits first: they are what a connection waits on.
    let mut named: Vec<String> = drops
        .iter()
        .filter(|(k, _)| k.contains("Retrans"))
        .chain(drops.iter().filter(|(k, _)| !k.contains("Retrans")))
        .map(|(k, v)| {
            let short = k.rsplit('.').next().unwrap_or(k);
            format!("{short} {}", crate::numfmt::signed(*v))
        })
        .collect();
    let waited = crate::record::decode_histogram(&p.histograms.handshake)
        .ok()
        .filter(|h| !h.is_empty())
        .and_then(|h| {
            [50.0, 90.0, 99.0]
                .into_iter()
                .map(|q| (q, h.value_at_quantile(q / 100.0)))
                .find(|(_, v)| *v >= 1_000_000_000)
        });
    // A stray retransmit does not set a rate: the drops hold when at least 1% of the
    // handshakes waited a retransmit (a percentile at or above 1 s) or the drop counters reach
    // 1% of the attempts.
    let dropped: i64 = drops.iter().map(|(_, v)| (*v).max(0)).sum();
    if waited.is_none() && (dropped as f64) < p.attempts as f64 / 100.0 {
        return None;
    }
    let what = match waited {
        Some((q, v)) => {
            named.insert(0, format!("handshake p{q:.0} {}", format_ns(v as f64)));
            "1 s SYN retransmits set the rate"
        }
        None => "the kernel's drops and retransmits limit the peak",
    };
    Some(format!("{what} ({})", named.join(", ")))
}

/// Whether the record carries a contention or steal warning of `phase`
/// ([`crate::analysis::cpu_contention`]'s wording).
fn contended(r: &RunRecord, phase: &str) -> bool {
    let other = format!("{phase}: other work used");
    let steal = format!("{phase}: the hypervisor took");
    r.warnings
        .iter()
        .any(|w| w.starts_with(&other) || w.starts_with(&steal))
}

/// The headlines of a `bench` record: `PEAK: … CPM = … conn/s (what limited it)` and
/// `LATENCY at …/s offered (… achieved): …`, as the summary and the HTML page's verdict show
/// them.
pub(crate) fn headlines(r: &RunRecord) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(peak) = r.phase("peak") {
        if peak.successes == 0 {
            out.push(format!(
                "PEAK: nothing measured — 0 of {} attempts succeeded (see failures and warnings)",
                group(peak.attempts as f64)
            ));
        } else {
            out.push(format!(
                "PEAK: {} CPM = {} conn/s{}",
                rate(peak.cpm),
                rate(peak.achieved_per_sec),
                peak_limit(r, peak)
            ));
        }
    }
    if let Some(lat) = r.phase("latency") {
        if let Some(h) = crate::record::decode_histogram(&lat.histograms.handshake)
            .ok()
            .filter(|h| !h.is_empty())
        {
            let s = LatencySummary::of(&h);
            // With --http/--tls the response (and the TLS handshake) come first: the TCP
            // handshake alone led a `bench --tls --http` headline.
            let of = |which| {
                lat.histograms
                    .decode(which)
                    .ok()
                    .flatten()
                    .filter(|h| !h.is_empty())
                    .map(|h| LatencySummary::of(&h))
            };
            let mut before = String::new();
            if let Some(r) = of(crate::record::Latency::HttpResponse) {
                before.push_str(&format!(
                    "response p50 {}, p99 {}, max {}; ",
                    format_ns(r.p50_ns as f64),
                    format_ns(r.p99_ns as f64),
                    format_ns(r.max_ns as f64)
                ));
            }
            let full = of(crate::record::Latency::TlsFull);
            let resumed = of(crate::record::Latency::TlsResumed);
            match (full, resumed) {
                // With resumption, full and resumed apart: one mixed distribution (15 full +
                // 585 resumed) has percentiles of neither.
                (Some(f), Some(r)) => before.push_str(&format!(
                    "TLS handshake full p50 {}, p99 {} ({} full), resumed p50 {}, p99 {} ({} resumed); ",
                    format_ns(f.p50_ns as f64),
                    format_ns(f.p99_ns as f64),
                    group(f.count as f64),
                    format_ns(r.p50_ns as f64),
                    format_ns(r.p99_ns as f64),
                    group(r.count as f64)
                )),
                _ => {
                    if let Some(t) = of(crate::record::Latency::TlsHandshake) {
                        before.push_str(&format!(
                            "TLS handshake p50 {}, p99 {}; ",
                            format_ns(t.p50_ns as f64),
                            format_ns(t.p99_ns as f64)
                        ));
                    }
                }
            }
            let tcp = if before.is_empty() { "" } else { "TCP " };
            out.push(format!(
                "LATENCY at {}/s offered ({} conn/s achieved): {before}{tcp}handshake p50 {}, p99 {}, max {}",
                crate::numfmt::exact(
                    lat.offered_per_sec
                        .or(lat.achieved_per_sec)
                        .unwrap_or(f64::NAN)
                ),
                rate(lat.achieved_per_sec),
                format_ns(s.p50_ns as f64),
                format_ns(s.p99_ns as f64),
                format_ns(s.max_ns as f64)
            ));
        }
    }
    out
}

/// What limited a closed-loop phase `p` of `r`, as the `PEAK` headline says it after the rate:
/// ` (CPU busy: load 98%, server 50% — the load side limits the peak)`.
pub(crate) fn peak_limit(r: &RunRecord, p: &PhaseRecord) -> String {
    bottleneck(
        p,
        &r.run.server_cpus,
        &r.run.load_cpus,
        Limits {
            drops: drop_limit(p),
            causes: !crate::analysis::diagnose_phases(std::slice::from_ref(p)).is_empty(),
            contention: contended(r, &p.name),
        },
    )
}

fn bottleneck(
    p: &PhaseRecord,
    server_cpus: &[usize],
    load_cpus: &[usize],
    limits: Limits,
) -> String {
    let load = side_busy_pct(&p.cpu.load);
    let server = p.cpu.server.as_ref().map(side_busy_pct);
    // The limits in rank order, the first that holds named: drops and retransmits (a dropped
    // SYN waits 1 s, whatever the CPUs could do), then CPU saturation, then other work on the
    // benchmark CPUs, then the other named causes (issue 35: with --backlog 1 the headline
    // blamed other work while 1 s SYN retransmits, p90 1.028 s, set the rate).
    if let Some(drops) = &limits.drops {
        return match server {
            Some(server) => {
                format!(" ({drops} — CPU busy: load {load:.0}%, server {server:.0}%)")
            }
            None => format!(" ({drops} — load CPUs {load:.0}% busy)"),
        };
    }
    let v = saturation(load, server, server_cpus, load_cpus, &p.cpu_busy_pct);
    match (server, v) {
        (None, _) => format!(" (load CPUs {load:.0}% busy)"),
        (Some(server), Saturation::Shared { busy }) => format!(
            " (CPUs [{}] shared by both sides, {} busy: the CPUs limit the peak — load {load:.0}%, server {server:.0}% of their time)",
            common::cpulist::format(&busy.iter().map(|b| b.0).collect::<Vec<_>>()),
            busy.iter().map(|b| format!("{:.0}%", b.1)).collect::<Vec<_>>().join(", ")
        ),
        (Some(server), Saturation::Neither) if limits.contention => format!(
            " (CPU busy: load {load:.0}%, server {server:.0}% — neither side saturated: other work on the benchmark CPUs (see the warnings below) limits the peak; run on a quiet host or other CPUs)"
        ),
        (Some(server), Saturation::Neither) if limits.causes => format!(
            " (CPU busy: load {load:.0}%, server {server:.0}% — neither side saturated: the causes in the warnings below limit the peak)"
        ),
        (Some(server), Saturation::Neither) => format!(
            " (CPU busy: load {load:.0}%, server {server:.0}% — neither side saturated: raise --concurrency)"
        ),
        (Some(server), Saturation::Side(limit)) => format!(
            " (CPU busy: load {load:.0}%, server {server:.0}% — the {limit} side limits the peak)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interrupted phase's attempts add up: the ones still waiting are named abandoned, so
    /// the failure line does not leave them unaccounted for.
    #[test]
    fn abandoned_attempts_are_named_in_the_failure_line() {
        let mut r = RunRecord::example();
        r.phases[1].abandoned = 1_200;
        r.phases[1].attempts = 7_203;
        let mut out = String::new();
        phase(&mut out, &r.phases[1], None);
        assert!(
            out.contains(
                "  failures: 3 of 7,203 attempts, 1,200 abandoned at the interrupt: ECONNREFUSED 3"
            ),
            "{out}"
        );
        r.phases[1].failures.clear();
        let mut out = String::new();
        phase(&mut out, &r.phases[1], None);
        assert!(
            out.contains("  failures: none (7,203 attempts, 1,200 abandoned at the interrupt)"),
            "{out}"
        );
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group(0.0), "0");
        assert_eq!(group(999.0), "999");
        assert_eq!(group(1000.0), "1,000");
        assert_eq!(group(1234567.4), "1,234,567");
    }

    /// Issue 36 item 1: the bench headline starts with the wire, HTTP over TLS with the
    /// server's close here.
    #[test]
    fn the_headline_names_the_wire() {
        let mut r = RunRecord::example();
        r.run.close_mode = "server".into();
        for p in &mut r.phases {
            p.http = Some(Default::default());
            p.tls = Some(Default::default());
        }
        let text = bench_summary(&r, None, None);
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with(
                "connstorm bench: wire: HTTP/1.1 over TLS, server closes after the response (like wrk -H 'Connection: close'); engine epoll"
            ),
            "{first}"
        );
    }

    #[test]
    fn example_record_renders_every_figure() {
        let r = RunRecord::example();
        let text = bench_summary(
            &r,
            Some(std::path::Path::new("runs/x.json")),
            Some("tick note"),
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "connstorm bench: wire: TCP, client RST after the handshake (SO_LINGER 0, no TIME_WAIT); engine epoll (steering none), server CPUs [0], load CPUs [1], client close rst, server mode close, two network namespaces over veth"
        );
        assert!(
            lines[1].starts_with("PEAK: 120,000 CPM = 2,000 conn/s (CPU busy: load 9"),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].ends_with("server 62% — the load side limits the peak)"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2]
                .starts_with("LATENCY at 1,600/s offered (1,600 conn/s achieved): handshake p50 "),
            "{}",
            lines[2]
        );
        for want in [
            "peak (closed loop, 64 in flight, 3.0 s measured): 120,000 CPM = 2,000 conn/s",
            "latency (open loop, 1,600/s offered, 3.0 s measured): 96,000 CPM = 1,600 conn/s",
            "  achieved 1,600/s of 1,600/s offered (100.00%), late starts 0, dropped starts 0",
            "  failures: 3 of 6,003 attempts: ECONNREFUSED 3",
            "  cross-check [ok] (incl. warm-up): server accepts 6,000, load handshakes 6,000, kernel PassiveOpens 6,000, ActiveOpens 6,003 — exact: separate network namespaces",
            "kernel counters (all phases): ListenOverflows 0, ListenDrops 0, TCPReqQFullDrop 0, TCPReqQFullDoCookies 0, SyncookiesSent 0, TCPSynRetrans 0, TCPTimeWaitOverflow 0, softnet dropped 0",
            "warning: engine auto fell back to epoll: io_uring disabled (example)",
            "record: runs/x.json",
        ] {
            assert!(lines.contains(&want), "missing {want:?} in\n{text}");
        }
        assert_eq!(
            lines.iter().filter(|l| **l == "    (tick note)").count(),
            2,
            "{text}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("  CPU per connection: load ")),
            "{text}"
        );
        let quiet = bench_summary(&r, None, None);
        assert!(
            !quiet.contains("tick note") && !quiet.contains("record:"),
            "{quiet}"
        );
    }

    /// Issue 35 item 2: with `--tls-resume`, 15 full and 585 resumed handshakes were one
    /// distribution; the LATENCY headline and the phase's lines give each kind its own.
    #[test]
    fn full_and_resumed_tls_handshakes_are_reported_apart() {
        let mut r = RunRecord::example();
        let mut full = crate::record::new_latency_histogram();
        full.record_n(1_500_000, 15).unwrap();
        let mut resumed = crate::record::new_latency_histogram();
        resumed.record_n(200_000, 585).unwrap();
        let mut both = full.clone();
        both.add(&resumed).unwrap();
        let lat = &mut r.phases[1].histograms;
        lat.tls_handshake = Some(crate::record::encode_histogram(&both));
        lat.tls_full = Some(crate::record::encode_histogram(&full));
        lat.tls_resumed = Some(crate::record::encode_histogram(&resumed));
        let text = bench_summary(&r, None, None);
        let line = text.lines().find(|l| l.starts_with("LATENCY")).unwrap();
        assert!(
            line.contains("TLS handshake full p50 1.50 ms, p99 1.50 ms (15 full), resumed p50 200.1 µs, p99 200.1 µs (585 resumed); TCP handshake"),
            "{line}"
        );
        assert!(
            text.contains("  tls full   p50 1.50 ms")
                && text.contains("(15 samples)")
                && text.contains("  tls resumed p50 200.1 µs")
                && text.contains("(585 samples)"),
            "{text}"
        );
    }

    /// A peak below saturation on both sides while other work used the benchmark CPUs: the
    /// headline names the contention, not a low --concurrency.
    /// `bench --tls --http`: the LATENCY headline leads with the response and the TLS
    /// handshake (it gave only the TCP handshake).
    #[test]
    fn the_latency_headline_of_an_http_tls_run_leads_with_the_response() {
        let mut r = RunRecord::example();
        let mut h = crate::record::new_latency_histogram();
        h.record(2_000_000).unwrap();
        let mut t = crate::record::new_latency_histogram();
        t.record(500_000).unwrap();
        let lat = &mut r.phases[1].histograms;
        lat.http_response = Some(crate::record::encode_histogram(&h));
        lat.tls_handshake = Some(crate::record::encode_histogram(&t));
        let text = bench_summary(&r, None, None);
        let line = text.lines().find(|l| l.starts_with("LATENCY")).unwrap();
        assert!(
            line.contains("achieved): response p50 2.00 ms, p99 2.00 ms, max 2.00 ms; TLS handshake p50 500.2 µs, p99 500.2 µs; TCP handshake p50 "),
            "{line}"
        );
    }

    #[test]
    fn an_unsaturated_peak_on_contended_cpus_blames_the_contention_not_the_concurrency() {
        let mut r = RunRecord::example();
        let load = &mut r.phases[0].cpu.load;
        load.run_ns = Some(load.wall_ns * load.cpus as u64 * 7 / 10);
        let headline = |r: &RunRecord| {
            let text = bench_summary(r, None, None);
            text.lines().nth(1).unwrap_or_default().to_string()
        };
        assert!(!headline(&r).contains("other work"), "{}", headline(&r));
        r.warnings.push("peak: other work used 45% of the benchmark CPUs [0-1] (busy 100%, connstorm itself 55%): the numbers include that contention; stop other load or choose other CPUs".into());
        let h = headline(&r);
        assert!(
            h.contains("neither side saturated: other work on the benchmark CPUs (see the warnings below) limits the peak"),
            "{h}"
        );
        assert!(!h.contains("raise --concurrency"), "{h}");
    }

    /// Issue 35 item 5: `--backlog 1` with `tcp_abort_on_overflow=1`, neither side saturated,
    /// other work warned of: 1 s SYN retransmits (p90 1.028 s, TCPSynRetrans 96) set the rate,
    /// and the headline names them, not the other work. Drops outrank CPU saturation too.
    #[test]
    fn the_headline_names_drops_and_retransmits_before_cpu_and_other_work() {
        let mut r = RunRecord::example();
        let p = &mut r.phases[0];
        p.cpu.load.run_ns = Some(p.cpu.load.wall_ns * p.cpu.load.cpus as u64 * 7 / 10);
        let mut h = crate::record::new_latency_histogram();
        h.record_n(60_000, 85).unwrap();
        h.record_n(1_028_000_000, 15).unwrap();
        p.histograms.handshake = crate::record::encode_histogram(&h);
        p.counters.insert("TcpExt.TCPSynRetrans".into(), 96);
        p.counters.insert("TcpExt.ListenOverflows".into(), 96);
        r.warnings.push("peak: other work used 45% of the benchmark CPUs [0-1] (busy 100%, connstorm itself 55%): the numbers include that contention; stop other load or choose other CPUs".into());
        let headline = |r: &RunRecord| {
            let text = bench_summary(r, None, None);
            text.lines().nth(1).unwrap_or_default().to_string()
        };
        let h1 = headline(&r);
        assert!(
            h1.contains("(1 s SYN retransmits set the rate (handshake p90 1.028 s, TCPSynRetrans 96, ListenOverflows 96) — CPU busy: load 70%"),
            "{h1}"
        );
        assert!(!h1.contains("other work"), "{h1}");
        assert!(!h1.contains("neither side saturated"), "{h1}");
        // Saturated CPUs do not outrank the drops either.
        r.phases[0].cpu.load.run_ns = Some(r.phases[0].cpu.load.wall_ns);
        let h2 = headline(&r);
        assert!(h2.contains("1 s SYN retransmits set the rate"), "{h2}");
        assert!(!h2.contains("side limits the peak"), "{h2}");
        // Drops without a 1 s wait are named as drops, with their counters.
        let mut quick = crate::record::new_latency_histogram();
        quick.record_n(60_000, 100).unwrap();
        r.phases[0].histograms.handshake = crate::record::encode_histogram(&quick);
        let h3 = headline(&r);
        assert!(
            h3.contains("the kernel's drops and retransmits limit the peak (TCPSynRetrans 96, ListenOverflows 96)"),
            "{h3}"
        );
        // A stray retransmit (1 in 6,003 attempts, no handshake near 1 s) does not hold: the
        // saturated side is named.
        r.phases[0]
            .counters
            .insert("TcpExt.TCPSynRetrans".into(), 1);
        r.phases[0]
            .counters
            .insert("TcpExt.ListenOverflows".into(), 0);
        let h4 = headline(&r);
        assert!(h4.contains("the load side limits the peak"), "{h4}");
    }

    #[test]
    fn a_phase_with_no_success_says_nothing_measured() {
        let mut r = RunRecord::example();
        r.phases.truncate(1);
        let p = &mut r.phases[0];
        p.successes = 0;
        p.failures = [("ECONNREFUSED".to_string(), 6_003)].into();
        let text = bench_summary(&r, None, Some("tick note"));
        assert!(
            text.contains("PEAK: nothing measured — 0 of 6,003 attempts succeeded"),
            "{text}"
        );
        assert!(text.contains("peak (closed loop, 64 in flight, 3.0 s measured): nothing measured — no connection succeeded"), "{text}");
        assert!(
            text.contains("  cross-check [nothing to check] (incl. warm-up)"),
            "{text}"
        );
        // Zero on every side is no agreement: the note says so rather than "equal to".
        let p = &mut r.phases[0];
        if let Some(c) = p.cross_check.as_mut() {
            c.load_successes = 0;
            c.server_accepted = None;
            c.note = "equal to this network namespace's counters".into();
        }
        let text = bench_summary(&r, None, Some("tick note"));
        assert!(
            text.contains("— no handshake completed, so there was nothing to compare\n"),
            "{text}"
        );
        assert!(!text.contains("equal to this network"), "{text}");
        assert!(
            !text.contains("CPU per connection") && !text.contains("tick note"),
            "{text}"
        );
        assert!(!text.contains("LATENCY"), "{text}");
    }

    /// The load side's spin before due starts is printed apart from its work, and the spin it
    /// ran with under the lag line; a spin too small to show at 0.1 µs is not named.
    #[test]
    fn the_spin_is_printed_apart_from_the_work() {
        let mut r = RunRecord::example();
        let p = &mut r.phases[1];
        // 1,000 connections, 60 ms on CPU of which 45 ms spinning: 15 µs of work + 45 µs.
        p.cpu.load = crate::record::SideCpu::new(0, 60_000_000, 100_000_000, 1, 1_000)
            .with_run_ns(60_000_000, 1_000)
            .with_spin_ns(45_000_000, 1_000);
        let mut lag = crate::record::new_latency_histogram();
        lag.record(200).unwrap();
        p.histograms.generator_lag = Some(crate::record::encode_histogram(&lag));
        p.settings.insert("load.spin_ns".into(), 47_000);
        p.settings.insert("load.spin_auto".into(), 1);
        let text = bench_summary(&r, None, None);
        assert!(
            text.contains("  CPU per connection: load 15.0 µs on CPU + 45.0 µs spinning before due starts (--spin; user 0.0 + sys 60.0 by tick samples, the spin included)"),
            "{text}"
        );
        assert!(
            text.contains("(spin before each due start: 47.0 µs, --spin auto: the load CPU's timer wake-up p99.9, measured at the start)"),
            "{text}"
        );
        // Two load workers on one CPU: auto measured nothing there, and the line says so.
        let mut two = r.clone();
        two.phases[1].load_workers = vec![
            crate::record::LoadWorker {
                cpu: 1,
                ..Default::default()
            };
            2
        ];
        let text2 = bench_summary(&two, None, None);
        assert!(
            text2.contains("--spin auto: measured only on load CPUs with one worker; where workers share a CPU, the default)"),
            "{text2}"
        );
        // At the cap, the line does not call it the measured p99.9.
        let mut capped = r.clone();
        capped.phases[1]
            .settings
            .insert("load.spin_ns".into(), 100_000);
        let text3 = bench_summary(&capped, None, None);
        assert!(
            text3.contains("(spin before each due start: 100.0 µs, --spin auto: its cap; the load CPU's timer wake-up p99.9 measured at the start was at or above it)"),
            "{text3}"
        );
        // Waiting is not load: 15% busy, not 60%.
        assert!(
            (crate::analysis::side_busy_pct(&r.phases[1].cpu.load) - 15.0).abs() < 1e-9,
            "{}",
            crate::analysis::side_busy_pct(&r.phases[1].cpu.load)
        );
        // 20 ns of spin per connection: the plain line, the total as it is.
        r.phases[1].cpu.load = crate::record::SideCpu::new(0, 60_000_000, 100_000_000, 1, 1_000)
            .with_run_ns(60_000_000, 1_000)
            .with_spin_ns(20_000, 1_000);
        let text = bench_summary(&r, None, None);
        assert!(!text.contains("spinning"), "{text}");
        assert!(
            text.contains("  CPU per connection: load 60.0 µs on CPU ("),
            "{text}"
        );
    }

    #[test]
    fn a_failed_cross_check_is_marked_and_warned_once() {
        let mut r = RunRecord::example();
        let c = r.phases[0].cross_check.as_mut().unwrap();
        c.agree = false;
        c.note = "server accepts vs Tcp.PassiveOpens: ours 6000 != kernel 6001".into();
        let text = bench_summary(&r, None, None);
        assert!(
            text.contains("  cross-check [MISMATCH] (incl. warm-up)"),
            "{text}"
        );
        assert_eq!(
            text.matches("warning: peak: our counts do not agree: server accepts vs Tcp.PassiveOpens: ours 6000 != kernel 6001").count(),
            1,
            "{text}"
        );
    }

    /// A measured accept-queue wait prints its histogram line and Little's law beside the
    /// sampled length; an unmeasured one says why once for the run, never a zero.
    #[test]
    fn the_accept_queue_wait_is_printed_with_littles_law_or_said_unmeasured_once() {
        let mut r = RunRecord::example();
        let mut h = crate::record::new_latency_histogram();
        for v in [1_000u64, 2_000, 400_000_000] {
            h.record(v).unwrap();
        }
        let p = &mut r.phases[1];
        p.histograms.accept_queue_wait = Some(crate::record::encode_histogram(&h));
        p.accept_queue = Some(crate::record::AcceptQueue {
            sample_every: 4,
            joined: 3,
            mean_wait_ns: 133_334_333.0,
            accept_rate_per_sec: 2_000.0,
            littles_law_depth: 266.7,
            sampled_depth: Some(250.0),
            sampled_depth_max: 800,
            depth_samples: 300,
            depth_every_us: 5_000,
            unmatched_client: 2,
            ..Default::default()
        });
        let text = bench_summary(&r, None, None);
        assert!(
            text.contains("  accept wait p50 2.0 µs")
                && text.contains("(3 samples) (1 in 4 connections stamped)"),
            "{text}"
        );
        assert!(
            text.contains("  accept queue: Little's law 2,000/s × mean wait 133.33 ms = 266.7 waiting; sampled accept-queue length mean 250.0, max 800 (300 samples, every 5.00 ms)"),
            "{text}"
        );
        assert!(
            text.contains(
                "  accept queue check: Little's law and the sampled length agree within 20%\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("2 client and 0 server stamps joined nothing"),
            "{text}"
        );
        assert!(!text.contains("not measured"), "{text}");
        for p in &mut r.phases {
            p.histograms.accept_queue_wait = None;
            p.accept_queue = Some(crate::record::AcceptQueue {
                not_measured: Some("the server is external".into()),
                ..Default::default()
            });
        }
        let text = bench_summary(&r, None, None);
        assert_eq!(
            text.matches("accept-queue wait: not measured: the server is external")
                .count(),
            1,
            "{text}"
        );
        assert!(
            !text.contains("accept wait") && !text.contains("Little"),
            "{text}"
        );
    }
}
