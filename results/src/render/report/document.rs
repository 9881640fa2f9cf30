//! The report as a document (headings, lines, tables), shared by text and Markdown output.

use std::collections::BTreeMap;

use super::{Counters, PhaseReport, RecordReport};
use crate::numfmt::{count, fixed, signed, NA};
use crate::record::{is_drop_counter, SideCpu, KEY_COUNTERS};
use crate::render::format_ns;
use crate::render::table::{Block, Table};

/// Formats a CPU list compactly: `0-3,8,10-11`.
pub(crate) fn cpulist(cpus: &[usize]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(",")
    }
}

fn errno_list(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {}", count(*v)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn host_blocks(r: &RecordReport, out: &mut Vec<Block>) {
    let run = &r.run;
    let mut what = r
        .wire
        .as_ref()
        .map(|w| format!("{}{w}; ", common::wire::PREFIX))
        .unwrap_or_default();
    what += &format!(
        "engine {}{}, steering {}, close {}, server mode {}, server CPUs {}, load CPUs {}",
        or_dash(&run.engine),
        run.engine_fallback_reason
            .as_ref()
            .map(|w| format!(" (fallback: {w})"))
            .unwrap_or_default(),
        or_dash(&run.steering),
        or_dash(&run.close_mode),
        or_dash(&run.server_mode),
        cpulist(&run.server_cpus),
        cpulist(&run.load_cpus),
    );
    if let Some(e) = &run.load_engine {
        // `engine` above is the server's accept engine (`-` in a load-only record).
        what.push_str(&format!(", load engine {e}"));
    }
    if run.netns {
        what.push_str(", separate network namespaces");
    }
    if let Some(rtt) = run.rtt_ns {
        what.push_str(&format!(", added RTT {}", format_ns(rtt as f64)));
    }
    if let Some(t) = &run.target {
        what.push_str(&format!(", target {t}"));
    }
    out.push(Block::Line(what));
    if let Some(t) = &run.tls {
        out.push(Block::Line(t.line()));
    }
    out.push(Block::Line(format!(
        "connstorm {} ({}), started {}, wall {:.1} s{}",
        or_dash(&run.connstorm_version),
        or_dash(&run.git_commit),
        or_dash(&run.started_at),
        run.wall_secs,
        if run.interrupted { ", INTERRUPTED" } else { "" }
    )));
    let h = &r.host;
    let numa: Vec<String> = h
        .numa_nodes
        .iter()
        .map(|n| format!("{}:{}", n.id, cpulist(&n.cpus)))
        .collect();
    out.push(Block::Line(format!(
        "host {}: kernel {}, CPU {}, online CPUs {}, isolated CPUs {}, NUMA {}",
        h.hostname.as_deref().unwrap_or("?"),
        h.kernel_release.as_deref().unwrap_or("?"),
        h.cpu_model.as_deref().unwrap_or("?"),
        cpulist(&h.online_cpus),
        cpulist(&h.isolated_cpus),
        if numa.is_empty() {
            "-".into()
        } else {
            numa.join(" ")
        },
    )));
    if let Some(c) = &h.cmdline {
        out.push(Block::Line(format!("cmdline: {c}")));
    }
    if !h.sysctls.is_empty() {
        let s: Vec<String> = h.sysctls.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push(Block::Line(format!("sysctls: {}", s.join(" "))));
    }
    if let Some(b) = &r.baseline {
        out.push(Block::Line(format!(
            "kernel floor (blocking pair): {} conn/s; connstorm peak = {:.2} × floor",
            fixed(b.floor_per_sec, 0),
            b.ratio
        )));
    }
    if let Some(f) = &r.crypto_floor {
        out.push(Block::Line(f.line()));
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}

fn latency_blocks(p: &PhaseReport, out: &mut Vec<Block>) {
    if p.latency.is_empty() {
        return;
    }
    let mut t = Table::new([
        "latency", "p50", "p90", "p99", "p99.9", "p99.99", "max", "mean", "stddev", "samples",
    ]);
    for l in &p.latency {
        let s = &l.summary;
        let mut row = vec![l.which.to_string()];
        row.extend(s.percentiles().iter().map(|(_, v)| format_ns(*v as f64)));
        row.extend([
            format_ns(s.max_ns as f64),
            format_ns(s.mean_ns),
            format_ns(s.stddev_ns),
            count(s.count),
        ]);
        t.row(row);
    }
    out.push(Block::Table(t));
    if let Some(g) = &p.generator_lag {
        // As `bench` prints it: the latencies above include this lag (they count from each
        // attempt's scheduled start).
        // Beside it, what keeping it small costs: the load side's CPU per connection, its work
        // and the spin before the starts (`--spin`) apart.
        let cost = p.cpu.load.us_per_conn().map_or_else(String::new, |us| {
            match p.cpu.load.us_per_conn_spin.filter(|&s| s >= 0.005) {
                Some(spin) => format!(
                    "; load CPU {} per connection of work + {} spinning before due starts",
                    format_ns(us * 1e3),
                    format_ns(spin * 1e3)
                ),
                None => format!("; load CPU {} per connection", format_ns(us * 1e3)),
            }
        });
        out.push(Block::Line(format!(
            "generator lag (actual − scheduled start, included in the latencies above): p50 {}, p90 {}, p99 {}, p99.9 {}, max {} ({} starts){cost}",
            format_ns(g.p50_ns as f64),
            format_ns(g.p90_ns as f64),
            format_ns(g.p99_ns as f64),
            format_ns(g.p999_ns as f64),
            format_ns(g.max_ns as f64),
            count(g.count)
        )));
        if let Some(a) = crate::analysis::generator_lag_artefact(g) {
            out.push(Block::Line(format!("generator lag: {a}")));
        }
    }
    if let n @ 1.. = crate::record::never_accepted_total(&p.failures) {
        out.push(Block::Line(crate::analysis::client_view_note(n)));
    }
    let first = &p.latency[0];
    let mut headers = vec!["latency bucket".to_string()];
    headers.extend(p.latency.iter().map(|l| format!("{} share", l.which)));
    let mut b = Table::new(headers);
    for (i, bucket) in first.buckets.iter().enumerate() {
        let range = match bucket.hi_ns {
            Some(hi) if bucket.lo_ns == 0 => format!("< {}", format_ns(hi as f64)),
            Some(hi) => format!(
                "{} – {}",
                format_ns(bucket.lo_ns as f64),
                format_ns(hi as f64)
            ),
            None => format!(">= {}", format_ns(bucket.lo_ns as f64)),
        };
        let mut row = vec![range];
        row.extend(
            p.latency
                .iter()
                .map(|l| format!("{:.3}%", l.buckets[i].share * 100.0)),
        );
        b.row(row);
    }
    out.push(Block::Table(b));
}

fn cpu_row(t: &mut Table, side: &str, c: &SideCpu) {
    t.row([
        side.to_string(),
        c.us_per_conn_user.map_or(NA.into(), |v| fixed(v, 2)),
        c.us_per_conn_sys.map_or(NA.into(), |v| fixed(v, 2)),
        // All of the side's CPU time, the load's spin before due starts included (as user and
        // sys are): the line under the table takes the spin apart.
        c.us_per_conn().map_or(NA.into(), |v| {
            fixed(v + c.us_per_conn_spin.unwrap_or(0.0), 2)
        }),
        c.sys_pct().map_or(NA.into(), |v| format!("{v:.1}%")),
    ]);
}

/// The load side's spin before due starts, apart from its work, when it shows at 0.01 µs per
/// connection.
fn spin_line(c: &SideCpu) -> Option<String> {
    let spin = c.us_per_conn_spin.filter(|&s| s >= 0.005)?;
    Some(format!(
        "load: {} µs per connection of that total was spin before due starts (`--spin`): waiting for the schedule, not work ({} µs)",
        fixed(spin, 2),
        c.us_per_conn().map_or(NA.into(), |v| fixed(v, 2))
    ))
}

fn phase_blocks(p: &PhaseReport, counters: Counters, out: &mut Vec<Block>) {
    out.push(Block::Heading(
        2,
        format!(
            "phase {}: {}, {:.1} s measured",
            p.name,
            super::describe_pattern(&p.pattern),
            p.measured_secs
        ),
    ));
    let offered = match (p.offered_per_sec, p.achieved_ratio) {
        (Some(o), Some(r)) => format!(
            "offered {} conn/s, achieved {:.2}% of offered",
            fixed(o, 1),
            r * 100.0
        ),
        _ => "closed loop (no offered rate)".to_string(),
    };
    // docs/output.md "Nothing measured": a phase without a success prints no rate, no latency or
    // per-connection figure and no "agree" cross-check (as the bench summary does).
    let measured = p.successes > 0;
    if measured {
        out.push(Block::Line(format!(
            "rate: {} CPM = {} conn/s; {offered}",
            crate::numfmt::fixed_opt(p.cpm, 0),
            crate::numfmt::fixed_opt(p.achieved_per_sec, 1)
        )));
    } else if p.measured_secs <= 0.0 {
        out.push(Block::Warning(
            "nothing measured — the phase ended (interrupted) before its measured part began"
                .to_string(),
        ));
    } else {
        out.push(Block::Warning(
            "nothing measured — no connection succeeded".to_string(),
        ));
    }
    let failed: u64 = p.failures.values().sum();
    let abandoned = if p.abandoned > 0 {
        format!(", abandoned at the interrupt {}", count(p.abandoned))
    } else {
        String::new()
    };
    out.push(Block::Line(format!(
        "attempts {}, successes {}, failed {} ({}){abandoned}, late {}, dropped {}",
        count(p.attempts),
        count(p.successes),
        count(failed),
        errno_list(&p.failures),
        count(p.late),
        count(p.dropped)
    )));
    if !measured {
        counter_blocks(p, counters, out);
        return;
    }
    if let Some(h) = &p.http {
        let classes: Vec<String> = h
            .status_classes
            .iter()
            .map(|(c, n)| format!("{c} {}", count(*n)))
            .collect();
        let codes: Vec<String> = h
            .non_2xx_codes
            .iter()
            .map(|(c, n)| format!("{c}: {}", count(*n)))
            .collect();
        let parse: Vec<String> = h
            .parse_errors
            .iter()
            .map(|(c, n)| format!("{c} {}", count(*n)))
            .collect();
        out.push(Block::Line(format!(
            "http ({}): {} requests, {} responses{}; status {}{}; parse errors {}; bytes {} written to the socket, {} received ({} body)",
            h.request,
            count(h.requests),
            count(h.responses),
            if h.early_responses > 0 {
                format!(" ({} before their request was written completely)", count(h.early_responses))
            } else {
                String::new()
            },
            if classes.is_empty() { "none".to_string() } else { classes.join(", ") },
            if codes.is_empty() { String::new() } else { format!(" (non-2xx: {})", codes.join(", ")) },
            if parse.is_empty() { "none".to_string() } else { parse.join(", ") },
            count(h.bytes_sent),
            count(h.bytes_received),
            count(h.body_bytes)
        )));
    }
    if let Some(t) = &p.tls {
        out.push(Block::Line(tls_line(t, p.measured_secs, p.server.as_ref())));
    }
    latency_blocks(p, out);
    let mut cpu = Table::new(["CPU µs per conn", "user", "sys", "total", "sys%"]);
    if let Some(s) = &p.cpu.server {
        cpu_row(&mut cpu, "server", s);
    }
    cpu_row(&mut cpu, "load", &p.cpu.load);
    if p.cpu.server.is_some() {
        // The figure `compare` calls "sys %".
        cpu.row([
            "both sides".to_string(),
            String::new(),
            String::new(),
            String::new(),
            p.cpu.sys_pct().map_or(NA.into(), |v| format!("{v:.1}%")),
        ]);
    }
    out.push(Block::Table(cpu));
    if let Some(line) = spin_line(&p.cpu.load) {
        out.push(Block::Line(line));
    }
    out.push(Block::Line(
        "sys%: system CPU time as a share of CPU capacity (wall time × the CPUs the side ran on); \"both sides\" is what `compare` calls \"sys %\" (it reads the peak phase's)"
            .to_string(),
    ));
    if let Some(s) = &p.server {
        let total = s.accepted().max(1) as f64;
        let shares: Vec<String> = s
            .workers
            .iter()
            .map(|w| format!("cpu{} {:.1}%", w.cpu, w.accepted as f64 / total * 100.0))
            .collect();
        out.push(Block::Line(format!(
            "server accepted {} ({}); accept errors: {}",
            count(s.accepted()),
            shares.join(", "),
            errno_list(&s.accept_errors)
        )));
    }
    if let Some(s) = p
        .server
        .as_ref()
        .and_then(|s| s.spread.or_else(|| s.compute_spread()))
    {
        out.push(Block::Line(crate::analysis::spread_line(&s)));
    }
    syn_cpu_block(p.server.as_ref(), out);
    if let Some(line) = crate::analysis::softirq_line(&p.net_softirqs) {
        out.push(Block::Line(line));
    }
    if let Some(t) = worker_table(p) {
        out.push(Block::Table(t));
    }
    counter_blocks(p, counters, out);
    if let Some(x) = &p.cross_check {
        let opt = |v: Option<i64>| v.map_or("-".to_string(), crate::numfmt::signed);
        let line = format!(
            "cross-check (incl. warm-up): server accepted {}, load successes {}, kernel PassiveOpens {}, ActiveOpens {}: {}{}",
            x.server_accepted.map_or("-".to_string(), count),
            count(x.load_successes),
            opt(x.kernel_passive_opens),
            opt(x.kernel_active_opens),
            if x.agree { "agree" } else { "DISAGREE" },
            if x.note.is_empty() { String::new() } else { format!(" ({})", x.note) }
        );
        out.push(if x.agree {
            Block::Line(line)
        } else {
            Block::Warning(line)
        });
    }
    if let Some(prof) = &p.profile {
        out.extend(crate::render::scale::profile_blocks(&p.name, prof));
    }
}

/// `--steer cpu` (and the other steerings): the share of the sampled accepted connections that
/// were accepted on the CPU that processed their packets, as `connstorm server` prints it
/// ([`common::syncpu::SynCpuShare::line`]); nothing when the record has no share (no steering,
/// older records).
fn syn_cpu_block(s: Option<&crate::record::ServerSide>, out: &mut Vec<Block>) {
    if let Some(share) = s.and_then(|s| s.syn_cpu.as_ref()) {
        out.push(Block::Line(share.line()));
    }
}

/// Per worker of both sides (server accepts, load handshakes completed in the measured part),
/// each one's share of its side, and its exact on-CPU time with the µs per connection it cost
/// (server: per accept; load: per attempt, whole run: [`crate::record::LoadWorker::cpu_span_attempts`]); `n/a` where the record kept no per-worker CPU (bench phases' server
/// workers, older records). `None` without workers.
fn worker_table(p: &PhaseReport) -> Option<Table> {
    let server = p.server.as_ref().map_or(&[][..], |s| &s.workers[..]);
    if server.is_empty() && p.load_workers.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "worker",
        "CPU",
        "accepts / connects",
        "share",
        "on CPU s",
        "CPU µs per conn",
    ]);
    let cpu = |run: Option<u64>, n: u64| match run {
        Some(ns) => (
            format!("{:.3}", ns as f64 / 1e9),
            if n == 0 {
                NA.to_string()
            } else {
                format!("{:.2}", ns as f64 / 1e3 / n as f64)
            },
        ),
        None => (NA.to_string(), NA.to_string()),
    };
    let total: u64 = server.iter().map(|w| w.accepted).sum();
    for (i, w) in server.iter().enumerate() {
        let (s, per) = cpu(w.cpu_run_ns, w.accepted);
        t.row([
            format!("server {i}"),
            w.cpu.to_string(),
            count(w.accepted),
            format!("{:.1}%", w.accepted as f64 / total.max(1) as f64 * 100.0),
            s,
            per,
        ]);
    }
    let total: u64 = p.load_workers.iter().map(|w| w.successes).sum();
    for (i, w) in p.load_workers.iter().enumerate() {
        let (s, per) = cpu(w.cpu_run_ns, w.cpu_span_attempts());
        t.row([
            format!("load {i}"),
            w.cpu.to_string(),
            count(w.successes),
            format!("{:.1}%", w.successes as f64 / total.max(1) as f64 * 100.0),
            s,
            per,
        ]);
    }
    Some(t)
}

/// The phase of a `server --out` record: what the accept server did (as `connstorm server`
/// prints it), not a load phase: accepts in all and per worker, the accept rate over the
/// server's wall time (listeners open to the end of the stop drain), accept errors, EMFILE
/// back-offs, the server's CPU per connection, its namespace's counters and its cross-check
/// against `Tcp.PassiveOpens`. With no accept: no rate, no per-connection figure, no "agree".
fn server_phase_blocks(
    p: &PhaseReport,
    s: &crate::record::ServerSide,
    counters: Counters,
    out: &mut Vec<Block>,
) {
    let accepted = s.accepted();
    out.push(Block::Heading(
        2,
        format!(
            "phase {}: accept server, {} workers, {:.3} s (listeners open to the end of the stop drain)",
            p.name,
            s.workers.len(),
            p.measured_secs
        ),
    ));
    let opt = |v: Option<u64>| v.map_or("unknown".to_string(), count);
    let tail = format!(
        "accept errors: {}; EMFILE/ENFILE back-offs {}; left in the accept queues at stop {}",
        errno_list(&s.accept_errors),
        opt(s.emfile_backoffs),
        opt(s.left_in_queue)
    );
    if accepted == 0 || p.measured_secs <= 0.0 {
        out.push(Block::Warning(
            "nothing accepted — no connection reached the server's accept()".to_string(),
        ));
        out.push(Block::Line(tail));
        counter_blocks(p, counters, out);
        return;
    }
    let rate = accepted as f64 / p.measured_secs;
    out.push(Block::Line(format!(
        "accepted {} in {:.3} s = {} conn/s ({} CPM) averaged over the server's whole run, idle time included (the load records' rates are those of the load); {tail}",
        count(accepted),
        p.measured_secs,
        fixed(rate, 1),
        fixed(rate * 60.0, 0)
    )));
    let mut t = Table::new(["worker CPU", "accepted", "accepts/s", "share"]);
    for w in &s.workers {
        t.row([
            w.cpu.to_string(),
            count(w.accepted),
            fixed(w.accepted as f64 / p.measured_secs, 1),
            format!("{:.1}%", w.accepted as f64 / accepted as f64 * 100.0),
        ]);
    }
    out.push(Block::Table(t));
    syn_cpu_block(Some(s), out);
    if let Some(tls) = s.tls_accepted {
        // `server --tls`: the record keeps the TLS accepts (a report said nothing of TLS).
        let resumed = s.tls_resumed.unwrap_or(0);
        let failed: u64 = s.tls_failures.values().sum();
        let classes: Vec<String> = s
            .tls_failures
            .iter()
            .map(|(k, v)| format!("{k} {}", count(*v)))
            .collect();
        out.push(Block::Line(format!(
            "tls: {} handshakes completed ({} resumed, {} full) of {} accepted connections, {} failed{}{}",
            count(tls),
            count(resumed),
            count(tls.saturating_sub(resumed)),
            count(accepted),
            count(failed),
            if classes.is_empty() {
                String::new()
            } else {
                format!(" ({})", classes.join(", "))
            },
            match s.tls_resumption {
                Some(false) => "; resumption not offered (server --tls-resume off): every handshake full",
                Some(true) => "; resumption offered (tickets, session IDs)",
                None => "",
            }
        )));
    }
    if let Some(c) = &p.cpu.server {
        let mut cpu = Table::new(["CPU µs per conn", "user", "sys", "total", "sys%"]);
        cpu_row(&mut cpu, "server", c);
        out.push(Block::Table(cpu));
    }
    counter_blocks(p, counters, out);
    if let Some(x) = &p.cross_check {
        let line = format!(
            "cross-check: server accepted {}, kernel PassiveOpens {}: {} ({})",
            x.server_accepted.map_or("-".to_string(), count),
            x.kernel_passive_opens
                .map_or("unreadable".to_string(), crate::numfmt::signed),
            if x.agree { "agree" } else { "DISAGREE" },
            x.note
        );
        out.push(if x.agree {
            Block::Line(line)
        } else {
            Block::Warning(line)
        });
    }
    if let Some(prof) = &p.profile {
        out.extend(crate::render::scale::profile_blocks(&p.name, prof));
    }
}

/// The kernel counters line of a phase: with [`Counters::Key`] the design's counters the record
/// has (in their order) and other non-zero drop counters, then how many were left out.
/// A merged record (`connstorm merge` with server records) lists the generators' namespaces
/// and the server namespaces on two lines, each named.
fn counter_blocks(p: &PhaseReport, counters: Counters, out: &mut Vec<Block>) {
    match p.server.as_ref().map(|s| &s.counters) {
        Some(server) if !server.is_empty() => {
            counter_line(
                "kernel counters (the generators' namespaces)",
                &p.counters,
                counters,
                out,
            );
            counter_line(
                "kernel counters (the server namespaces, the servers' whole run)",
                server,
                counters,
                out,
            );
        }
        _ => counter_line("kernel counters", &p.counters, counters, out),
    }
}

/// One kernel counters line titled `title` (see [`counter_blocks`]).
fn counter_line(
    title: &str,
    map: &BTreeMap<String, i64>,
    counters: Counters,
    out: &mut Vec<Block>,
) {
    if map.is_empty() {
        return;
    }
    let shown: Vec<(&str, i64)> = match counters {
        Counters::All => map.iter().map(|(k, v)| (k.as_str(), *v)).collect(),
        Counters::Key => KEY_COUNTERS
            .iter()
            .filter_map(|k| map.get(*k).map(|v| (*k, *v)))
            .chain(
                map.iter()
                    .filter(|(k, v)| {
                        **v != 0 && is_drop_counter(k) && !KEY_COUNTERS.contains(&k.as_str())
                    })
                    .map(|(k, v)| (k.as_str(), *v)),
            )
            .collect(),
    };
    let listed = shown.len();
    let c: Vec<String> = shown
        .iter()
        .map(|(k, v)| format!("{k} {}{}", if *v >= 0 { "+" } else { "" }, signed(*v)))
        .collect();
    let hidden = map.len().saturating_sub(listed);
    let rest = if hidden > 0 {
        format!(
            " ({} more, zero or not drops: --all-counters lists them)",
            count(hidden as u64)
        )
    } else {
        String::new()
    };
    out.push(Block::Line(format!("{title}: {}{rest}", c.join(", "))));
}

/// The document for a list of record reports; `counters` picks the kernel counters listed.
pub(crate) fn blocks(reports: &[RecordReport], counters: Counters) -> Vec<Block> {
    let mut out = Vec::new();
    for r in reports {
        let title = if r.label.is_empty() {
            "run".to_string()
        } else {
            format!("run {}", r.label)
        };
        let file = if r.file.is_empty() {
            String::new()
        } else {
            format!(" — {}", r.file)
        };
        out.push(Block::Heading(
            1,
            format!(
                "{title} ({}){file}{}",
                or_dash(&r.run.command),
                common::tls::unverified_marker(r.run.tls.as_ref().is_none_or(|t| t.verified))
            ),
        ));
        host_blocks(r, &mut out);
        for w in &r.warnings {
            out.push(Block::Warning(w.clone()));
        }
        if let Some(s) = &r.scale {
            out.extend(crate::render::scale::scale_blocks(s));
        }
        if let Some(o) = &r.profile_overhead {
            out.push(Block::Line(crate::render::scale::overhead_line(o)));
        }
        for p in &r.phases {
            match (&r.role, &p.server) {
                (crate::record::Role::Server, Some(s)) => {
                    server_phase_blocks(p, s, counters, &mut out)
                }
                _ => phase_blocks(p, counters, &mut out),
            }
        }
    }
    out
}

/// The TLS line of a phase: handshakes (per second of measured time), full and resumed, TLS
/// 1.3/1.2, failures by class, and the server's TLS accepts when the record has them.
pub(crate) fn tls_line(
    t: &crate::record::TlsCounts,
    measured_secs: f64,
    server: Option<&crate::record::ServerSide>,
) -> String {
    let per_sec = |n: u64| {
        if measured_secs > 0.0 {
            format!("{}/s", crate::numfmt::fixed(n as f64 / measured_secs, 1))
        } else {
            "-/s".to_string()
        }
    };
    let fails: Vec<String> = t
        .failures
        .iter()
        .map(|(c, n)| format!("{c} {}", count(*n)))
        .collect();
    let srv = match server.and_then(|s| s.tls_accepted.zip(s.tls_resumed)) {
        Some((a, r)) => format!(
            "; server TLS accepts {} ({} resumed; whole phase, warm-up included, each counted when its TLS handshake completed: one in flight at a phase boundary is in the next phase's)",
            count(a),
            count(r)
        ),
        None => String::new(),
    };
    let suites = if t.cipher_suites.is_empty() {
        String::new()
    } else {
        let v: Vec<String> = t
            .cipher_suites
            .iter()
            .map(|(s, n)| format!("{s} {}", count(*n)))
            .collect();
        format!("; cipher suites {}", v.join(", "))
    };
    let groups = if t.groups.is_empty() {
        String::new()
    } else {
        let v: Vec<String> = t
            .groups
            .iter()
            .map(|(g, n)| format!("{g} {}", count(*n)))
            .collect();
        format!("; key exchange groups {}", v.join(", "))
    };
    format!(
        "tls: {} handshakes ({}): {} full ({}), {} resumed ({}); TLS 1.3 {}, TLS 1.2 {}{suites}{groups}; failed {}{srv}",
        count(t.handshakes),
        per_sec(t.handshakes),
        count(t.full),
        per_sec(t.full),
        count(t.resumed),
        per_sec(t.resumed),
        count(t.tls13),
        count(t.tls12),
        if fails.is_empty() { "none".to_string() } else { fails.join(", ") },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_are_compact() {
        assert_eq!(cpulist(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(cpulist(&[5]), "5");
        assert_eq!(cpulist(&[]), "-");
    }
}
