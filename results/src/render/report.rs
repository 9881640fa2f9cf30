//! Reports on run records: the figures of each phase, ready to print as text, Markdown, JSON or
//! CSV.
//!
//! [`build`] turns a [`RunRecord`] into a [`RecordReport`] (decoding histograms, computing
//! percentiles and bucket shares); [`render`] prints a list of them in a [`ReportFormat`].

mod csv;
mod document;

use std::collections::BTreeMap;

use serde::Serialize;

use super::table;
use crate::analysis::{buckets, parse_latency_ns, Bucket, LatencySummary};
use crate::record::{
    decode_histogram, Baseline, CpuUsage, CrossCheck, HistogramError, HostInfo, Latency, Pattern,
    PhaseRecord, Role, RunInfo, RunRecord, ServerSide,
};

pub(crate) use document::blocks;
pub(crate) use document::tls_line;

/// Output formats of `connstorm report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// Aligned plain text for a terminal.
    Text,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// The [`RecordReport`]s as a JSON array.
    Json,
    /// One row per record and phase, a header row first.
    Csv,
}

/// Which kernel counters the text and Markdown reports list per phase (JSON and CSV keep all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Counters {
    /// The design's counters ([`crate::record::KEY_COUNTERS`]) always, plus any other non-zero drop, overflow or
    /// retransmit counter ([`crate::record::is_drop_counter`]).
    #[default]
    Key,
    /// Every counter in the record (a few hundred: all of `/proc/net/snmp`, `netstat`,
    /// `softnet_stat`).
    All,
}

/// Why a report could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A histogram in the record does not decode.
    #[error("{file}: histogram {phase}.{which} does not decode: {source}; the record is damaged: re-run the benchmark")]
    Histogram {
        /// The record file (or label).
        file: String,
        /// Phase name.
        phase: String,
        /// `handshake`, `service` or `first_byte`.
        which: &'static str,
        /// The decoder's complaint.
        #[source]
        source: HistogramError,
    },
    /// Bucket edges could not be parsed.
    #[error("invalid bucket edges {text:?}: {why}; write increasing latencies with units, e.g. `100us,250us,1ms,10ms`")]
    Buckets {
        /// What was given.
        text: String,
        /// What is wrong.
        why: String,
    },
}

/// One latency histogram of a phase, summarized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyReport {
    /// `handshake`, `service` or `first_byte`.
    pub which: &'static str,
    /// Percentiles, max, mean, stddev (ns).
    pub summary: LatencySummary,
    /// Share of connections per bucket.
    pub buckets: Vec<Bucket>,
}

/// One phase, summarized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseReport {
    /// Phase name.
    pub name: String,
    /// How load was offered, as machine values (`{"kind": "open", "rate_per_sec": 1600.0,
    /// "arrival": "poisson"}`); text renders it in words (`open loop, 16,196/s uniform`).
    pub pattern: Pattern,
    /// Offered attempts/s (open loop).
    pub offered_per_sec: Option<f64>,
    /// Successful handshakes/s; `null` when the measured part had no success.
    pub achieved_per_sec: Option<f64>,
    /// Successful handshakes per minute; `null` as `achieved_per_sec`.
    pub cpm: Option<f64>,
    /// `achieved / offered` (open loop; `null` with nothing achieved).
    pub achieved_ratio: Option<f64>,
    /// Measured seconds.
    pub measured_secs: f64,
    /// Attempts started.
    pub attempts: u64,
    /// Handshakes completed.
    pub successes: u64,
    /// Failures by errno name.
    pub failures: BTreeMap<String, u64>,
    /// Attempts started late (open loop).
    pub late: u64,
    /// Attempts never started (open loop).
    pub dropped: u64,
    /// Attempts still waiting for their handshake at an interrupt (neither successes nor
    /// failures).
    pub abandoned: u64,
    /// Latency histograms that were measured and hold at least one sample.
    pub latency: Vec<LatencyReport>,
    /// Open loop: the generator's own lag (actual start − scheduled start of each measured
    /// start), so the latencies can be read net of it; `None` without one (closed loop, older
    /// records, no start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator_lag: Option<LatencySummary>,
    /// `load --http`: the HTTP counts (`None` otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<crate::record::HttpCounts>,
    /// `--tls`: the TLS counts (`None` otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<crate::record::TlsCounts>,
    /// CPU time per side.
    pub cpu: CpuUsage,
    /// Kernel counter deltas.
    pub counters: BTreeMap<String, i64>,
    /// Non-zero drop counters (each also a warning).
    pub drops: Vec<(String, i64)>,
    /// Server side.
    pub server: Option<ServerSide>,
    /// Load workers (their connects and, where kept, CPU time).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub load_workers: Vec<crate::record::LoadWorker>,
    /// Our counts against the kernel's.
    pub cross_check: Option<CrossCheck>,
    /// `--profile`: the kernel profile of the measured part (`None` otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::record::KernelProfile>,
    /// NET_RX/NET_TX softirqs and ksoftirqd time per benchmark CPU (empty in older records).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub net_softirqs: BTreeMap<usize, crate::record::NetSoftirqs>,
}

/// One record, summarized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordReport {
    /// The file it was read from (empty if none).
    pub file: String,
    /// The record's label.
    pub label: String,
    /// Which side wrote the record: a `server` record's phase is the accept server's (accepts
    /// per worker, no handshake latency), printed as such.
    pub role: Role,
    /// What ran.
    pub run: RunInfo,
    /// The wire in words ([`RunRecord::wire`] without its `wire: `: protocol and close
    /// discipline), the first words of the text report; `None` for a server record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire: Option<String>,
    /// The host.
    pub host: HostInfo,
    /// Phases in run order.
    pub phases: Vec<PhaseReport>,
    /// Kernel floor, if measured.
    pub baseline: Option<Baseline>,
    /// The crypto floor of a full TLS handshake, if measured ([`crate::record::CryptoFloor`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crypto_floor: Option<crate::record::CryptoFloor>,
    /// Warnings derived from the record (interruption, one per non-zero drop counter), then the
    /// record's stored warnings that do not repeat them.
    pub warnings: Vec<String>,
    /// `connstorm scale`: the steps with their figures recomputed from the phases, and the
    /// knees (`None` for other records).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<crate::record::ScaleRecord>,
    /// `--profile-overhead`: the paired cost of the kernel profile (`None` otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_overhead: Option<crate::record::ProfileOverhead>,
}

/// Describes a load pattern for people (text only; JSON and CSV keep the fields):
/// `open loop, 16,196/s uniform` / `closed loop, 64 in flight`.
pub(crate) fn describe_pattern(p: &Pattern) -> String {
    match p {
        Pattern::Open {
            rate_per_sec,
            arrival,
        } => {
            let arrival = serde_json::to_value(arrival)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            format!(
                "open loop, {}/s {arrival}",
                crate::numfmt::fixed(*rate_per_sec, 0)
            )
        }
        Pattern::Closed { concurrency } => format!(
            "closed loop, {} in flight",
            crate::numfmt::count(u64::from(*concurrency))
        ),
    }
}

fn phase_report(file: &str, p: &PhaseRecord, edges_ns: &[u64]) -> Result<PhaseReport, ReportError> {
    let mut latency = Vec::new();
    // The generator's own lag is not a latency of the connections: it has its own line.
    for which in Latency::ALL.into_iter().filter(|w| w.of_connections()) {
        let h = p
            .histograms
            .decode(which)
            .map_err(|source| ReportError::Histogram {
                file: file.to_string(),
                phase: p.name.clone(),
                which: which.name(),
                source,
            })?;
        // An empty histogram has no percentiles: leave it out rather than report zeros (the
        // text, JSON and CSV then say "not measured" / null / empty).
        if let Some(h) = h.filter(|h| !h.is_empty()) {
            latency.push(LatencyReport {
                which: which.name(),
                summary: LatencySummary::of(&h),
                buckets: buckets(&h, edges_ns),
            });
        }
    }
    let generator_lag = p
        .histograms
        .generator_lag
        .as_deref()
        .and_then(|e| decode_histogram(e).ok())
        .filter(|h| !h.is_empty())
        .map(|h| LatencySummary::of(&h));
    Ok(PhaseReport {
        generator_lag,
        name: p.name.clone(),
        pattern: p.pattern,
        offered_per_sec: p.offered_per_sec,
        achieved_per_sec: p.achieved_per_sec,
        cpm: p.cpm,
        achieved_ratio: p
            .offered_per_sec
            .filter(|&o| o > 0.0)
            .zip(p.achieved_per_sec)
            .map(|(o, a)| a / o),
        measured_secs: p.measured_secs,
        attempts: p.attempts,
        successes: p.successes,
        failures: p.failures.clone(),
        late: p.late,
        dropped: p.dropped,
        abandoned: p.abandoned,
        latency,
        http: p.http.clone(),
        tls: p.tls.clone(),
        cpu: p.cpu,
        counters: p.counters.clone(),
        drops: p
            .drops()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        server: p.server.clone(),
        load_workers: p.load_workers.clone(),
        cross_check: p.cross_check.clone(),
        profile: p.profile.clone(),
        net_softirqs: p.net_softirqs.clone(),
    })
}

/// Summarizes a record; `file` is where it came from (for output and errors), `edges_ns` the
/// latency bucket edges (see [`Bucket`]).
///
/// # Errors
/// [`ReportError::Histogram`] if a histogram does not decode (never for a record that
/// [`RunRecord::read`] accepted).
pub fn build_report(
    rec: &RunRecord,
    file: &str,
    edges_ns: &[u64],
) -> Result<RecordReport, ReportError> {
    let mut phases = rec
        .phases
        .iter()
        .map(|p| phase_report(file, p, edges_ns))
        .collect::<Result<Vec<_>, _>>()?;
    if rec.role == Role::Server {
        // A `server --out` record measures accepts, not handshakes started by a load: its
        // rate is the accept rate over the server's wall time, as its text report says.
        for p in &mut phases {
            if let Some(s) = &p.server {
                let accepted = s.accepted();
                p.successes = accepted;
                (p.achieved_per_sec, p.cpm) = PhaseRecord::rates(accepted, p.measured_secs);
            }
        }
    }
    let warnings = warnings(rec);
    Ok(RecordReport {
        file: file.to_string(),
        label: rec.label.clone(),
        role: rec.role,
        run: rec.run.clone(),
        wire: rec.wire().map(|w| common::wire::value(&w).to_string()),
        host: rec.host.clone(),
        phases,
        baseline: rec.baseline.clone(),
        crypto_floor: rec.crypto_floor.clone(),
        warnings,
        scale: rec.scale.clone().map(|mut s| {
            crate::analysis::scale_figures(&mut s, &rec.phases);
            crate::analysis::knee_disturbances(&mut s, &rec.warnings);
            s
        }),
        profile_overhead: rec.profile_overhead.clone(),
    })
}

/// The warnings of a report: [`crate::analysis::warnings`], the same lines `bench` prints.
fn warnings(rec: &RunRecord) -> Vec<String> {
    crate::analysis::warnings(rec)
}

/// Parses bucket edges: comma-separated latencies with units (`100us,250us,1ms`), strictly
/// increasing, above zero. Returns ns.
///
/// # Errors
/// [`ReportError::Buckets`] naming the bad edge.
pub fn parse_bucket_edges(text: &str) -> Result<Vec<u64>, ReportError> {
    let err = |why: String| ReportError::Buckets {
        text: text.to_string(),
        why,
    };
    let mut edges = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let ns = parse_latency_ns(part).ok_or_else(|| {
            err(format!(
                "{part:?} is not a latency with a unit (ns, us, ms, s)"
            ))
        })?;
        if ns == 0 {
            return Err(err(format!("{part:?} is zero")));
        }
        if edges.last().is_some_and(|&last| ns <= last) {
            return Err(err(format!("{part:?} is not above the edge before it")));
        }
        edges.push(ns);
    }
    if edges.is_empty() {
        return Err(err("no edges given".into()));
    }
    Ok(edges)
}

/// Renders reports in a format; `counters` picks the kernel counters text and Markdown list.
pub fn report(reports: &[RecordReport], format: ReportFormat, counters: Counters) -> String {
    match format {
        ReportFormat::Text => table::to_text(&blocks(reports, counters)),
        ReportFormat::Markdown => table::to_markdown(&blocks(reports, counters)),
        ReportFormat::Json => {
            serde_json::to_string_pretty(reports)
                .expect("reports are plain data and always serialize")
                + "\n"
        }
        ReportFormat::Csv => csv::to_csv(reports),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::DEFAULT_BUCKET_EDGES_NS;

    /// Issue 33: each worker's accepts or connects, its share and its CPU per connection are in
    /// the text report, not only in the JSON; a worker without CPU time kept shows `n/a`.
    #[test]
    fn the_text_report_has_a_row_per_worker_with_its_cpu() {
        let mut rec = RunRecord::example();
        let p = &mut rec.phases[1];
        p.load_workers = vec![
            crate::record::LoadWorker {
                cpu: 1,
                attempts: 4_000,
                successes: 3_000,
                cpu_run_ns: Some(20_000_000),
                ..Default::default()
            },
            crate::record::LoadWorker {
                cpu: 1,
                attempts: 1_000,
                successes: 1_000,
                cpu_run_ns: None,
                ..Default::default()
            },
        ];
        let r = build_report(&rec, "x.json", &DEFAULT_BUCKET_EDGES_NS).unwrap();
        let text = report(std::slice::from_ref(&r), ReportFormat::Text, Counters::Key);
        let row = |name: &str| {
            text.lines()
                .filter(|l| l.trim_start().starts_with(name))
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .collect::<Vec<_>>()
        };
        // Phase 0 (the example's own load worker) has a `load 0` row too; phase 1's is the last.
        let load0 = row("load 0");
        assert_eq!(load0.len(), 2, "{text}");
        // worker, CPU, connects, share, on CPU s, µs per conn (20 ms / 4,000 attempts).
        assert_eq!(
            load0[1],
            ["load", "0", "1", "3,000", "75.0%", "0.020", "5.00"],
            "{text}"
        );
        assert_eq!(
            row("load 1")[0][3..],
            ["1,000", "25.0%", "n/a", "n/a"],
            "{text}"
        );
        let server0 = row("server 0");
        assert!(!server0.is_empty(), "{text}");
    }

    /// Issue 36 item 1: the first line under a report's heading names the wire — protocol and
    /// close discipline — from the record's close mode and HTTP/TLS counts. A record written
    /// before the wire was named (the same JSON: `close_mode` was always kept) reads as the RST
    /// after the response that `--http` then ran; `server` reads as the server's close; a server
    /// record (no client close known) names none.
    #[test]
    fn the_report_names_the_wire_first_and_old_records_read_as_they_ran() {
        let mut rec = RunRecord::example();
        for p in &mut rec.phases {
            p.http = Some(crate::record::HttpCounts {
                request: "GET /".into(),
                ..Default::default()
            });
        }
        // As an older `load --http` record was written: no field it lacks is needed.
        let json = rec.to_json();
        assert!(!json.contains("\"wire\""), "the record stores no wire text");
        let old = RunRecord::from_json(&json, std::path::Path::new("old.json")).unwrap();
        let first = |rec: &RunRecord| {
            let r = build_report(rec, "x.json", &DEFAULT_BUCKET_EDGES_NS).unwrap();
            let text = report(std::slice::from_ref(&r), ReportFormat::Text, Counters::Key);
            let line = text.lines().nth(1).unwrap().trim().to_string();
            (line, r)
        };
        let (line, r) = first(&old);
        assert!(
            line.starts_with(
                "wire: HTTP/1.1, client RST after the response (not what HTTP clients do); engine "
            ),
            "{line}"
        );
        let j = report(&[r], ReportFormat::Json, Counters::Key);
        assert!(j.contains("\"wire\": \"HTTP/1.1, client RST"), "{j}");
        rec.run.close_mode = "server".into();
        let (line, _) = first(&rec);
        assert!(
            line.starts_with(
                "wire: HTTP/1.1, server closes after the response (like wrk -H 'Connection: close'); "
            ),
            "{line}"
        );
        rec.role = Role::Server;
        rec.run.close_mode = String::new();
        let (line, _) = first(&rec);
        assert!(line.starts_with("engine "), "{line}");
    }

    #[test]
    fn bucket_edges_parse_and_refuse_disorder() {
        assert_eq!(
            parse_bucket_edges("100us, 250us,1ms").unwrap(),
            vec![100_000, 250_000, 1_000_000]
        );
        for bad in ["1ms,100us", "100", "", "0us", "1ms,1ms"] {
            assert!(parse_bucket_edges(bad).is_err(), "{bad}");
        }
    }

    /// docs/output.md "Nothing measured": no rate, no percentiles, no CPU per connection, no "agree".
    /// A phase whose histograms hold no sample (an interrupted run with no success) has no
    /// percentiles: JSON lists no latency and CSV leaves the fields empty, never 0 ns.
    #[test]
    fn empty_histograms_give_no_percentiles_not_zeros() {
        let mut rec = RunRecord::example();
        let empty = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        rec.phases[1].histograms = crate::record::Histograms::encode(&empty, &empty, None);
        let r = build_report(&rec, "x.json", &DEFAULT_BUCKET_EDGES_NS).unwrap();
        assert!(r.phases[1].latency.is_empty());
        assert!(!r.phases[0].latency.is_empty());
        let csv = report(std::slice::from_ref(&r), ReportFormat::Csv, Counters::Key);
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let row: Vec<&str> = csv.lines().nth(2).unwrap().split(',').collect();
        let col = header
            .iter()
            .position(|h| *h == "handshake_p50_ns")
            .unwrap();
        assert_eq!(row[col], "", "{csv}");
        let json = report(&[r], ReportFormat::Json, Counters::Key);
        assert!(!json.contains("\"p50_ns\": 0"), "{json}");
    }

    /// A `server --out` record's rate is its accept rate (as its text report says), also in
    /// JSON and CSV.
    #[test]
    fn a_server_record_reports_its_accept_rate_in_every_format() {
        let mut rec = RunRecord::example();
        rec.role = Role::Server;
        rec.phases.truncate(1);
        let p = &mut rec.phases[0];
        p.successes = 0;
        p.achieved_per_sec = None;
        p.cpm = None;
        let accepted = p.server.as_ref().unwrap().accepted();
        assert!(accepted > 0);
        let secs = p.measured_secs;
        let r = build_report(&rec, "s.json", &DEFAULT_BUCKET_EDGES_NS).unwrap();
        assert_eq!(r.phases[0].successes, accepted);
        assert!((r.phases[0].achieved_per_sec.unwrap() - accepted as f64 / secs).abs() < 1e-9);
        let csv = report(&[r], ReportFormat::Csv, Counters::Key);
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        let col = header
            .iter()
            .position(|h| *h == "achieved_per_sec")
            .unwrap();
        let got: f64 = row[col].parse().unwrap();
        assert!((got - accepted as f64 / secs).abs() < 1e-6, "{csv}");
        // `server --tls`: the report says how many TLS handshakes it completed.
        let text = |rec: &RunRecord| {
            report(
                &[build_report(rec, "s.json", &DEFAULT_BUCKET_EDGES_NS).unwrap()],
                ReportFormat::Text,
                Counters::Key,
            )
        };
        assert!(!text(&rec).contains("handshakes completed"));
        let side = rec.phases[0].server.as_mut().unwrap();
        side.tls_accepted = Some(accepted - 1);
        side.tls_resumed = Some(accepted - 3);
        let want = format!(
            "tls: {} handshakes completed ({} resumed, 2 full) of {} accepted connections",
            crate::numfmt::count(accepted - 1),
            crate::numfmt::count(accepted - 3),
            crate::numfmt::count(accepted)
        );
        assert!(text(&rec).contains(&want), "{}", text(&rec));
        // Its failed handshakes by class and whether it offered resumption (the record kept
        // neither: "0 handshakes completed" beside 6,492 failed ones).
        let side = rec.phases[0].server.as_mut().unwrap();
        side.tls_failures = [("alert UnknownCA received".to_string(), 6_492)].into();
        side.tls_resumption = Some(false);
        assert!(
            text(&rec).contains(" accepted connections, 6,492 failed (alert UnknownCA received 6,492); resumption not offered (server --tls-resume off): every handshake full"),
            "{}",
            text(&rec)
        );
    }

    /// Issue 33 item 4: with `--steer cpu` the record keeps the share of accepts on the CPU that
    /// processed their packets; the text report prints it (as `connstorm server` does), in a
    /// server record and in a load phase with a server side, with the record's counts; a record
    /// without it (no steering) says nothing of it.
    #[test]
    fn the_text_report_prints_the_syn_cpu_share_when_the_record_has_it() {
        let share = common::syncpu::SynCpuShare {
            sampled: 37,
            same_cpu: 29,
            unread: 2,
            sample_every: 16,
        };
        let text = |rec: &RunRecord| {
            report(
                &[build_report(rec, "s.json", &DEFAULT_BUCKET_EDGES_NS).unwrap()],
                ReportFormat::Text,
                Counters::Key,
            )
        };
        let want = "accepted on the CPU that processed their packets (SO_INCOMING_CPU): 78.4% (29 of 37 sampled connections, 1 in 16, 2 unreadable)";
        let mut phase = RunRecord::example();
        assert!(
            !text(&phase).contains("SO_INCOMING_CPU"),
            "{}",
            text(&phase)
        );
        phase.phases[0].server.as_mut().unwrap().syn_cpu = Some(share);
        let t = text(&phase);
        assert_eq!(t.matches(want).count(), 1, "{t}");
        let mut srv = RunRecord::example();
        srv.role = Role::Server;
        srv.phases.truncate(1);
        assert!(!text(&srv).contains("SO_INCOMING_CPU"), "{}", text(&srv));
        srv.phases[0].server.as_mut().unwrap().syn_cpu = Some(share);
        let t = text(&srv);
        assert_eq!(t.matches(want).count(), 1, "{t}");
        let md = report(
            &[build_report(&srv, "s.json", &DEFAULT_BUCKET_EDGES_NS).unwrap()],
            ReportFormat::Markdown,
            Counters::Key,
        );
        assert!(md.contains(want), "{md}");
    }

    /// The generator's lag the record keeps is reported (as `bench` prints it; `report` left
    /// it out in text, Markdown and HTML).
    #[test]
    fn the_generator_lag_of_an_open_loop_phase_is_reported() {
        let mut rec = RunRecord::example();
        let mut h = crate::record::new_latency_histogram();
        h.record_n(5_000, 99).unwrap();
        h.record(2_000_000).unwrap();
        rec.phases[1].histograms.generator_lag = Some(crate::record::encode_histogram(&h));
        let r = build_report(&rec, "x.json", &DEFAULT_BUCKET_EDGES_NS).unwrap();
        assert_eq!(r.phases[1].generator_lag.as_ref().unwrap().count, 100);
        assert!(r.phases[0].generator_lag.is_none());
        let text = report(&[r], ReportFormat::Text, Counters::Key);
        assert!(
            text.contains("generator lag (actual − scheduled start, included in the latencies above): p50 5.0 µs"),
            "{text}"
        );
        assert!(text.contains("(100 starts)"), "{text}");
        // Beside it, its cost: the load side's CPU per connection (a spin is in it).
        let us = rec.phases[1].cpu.load.us_per_conn().unwrap();
        assert!(
            text.contains(&format!(
                "(100 starts); load CPU {} per connection",
                crate::render::format_ns(us * 1e3)
            )),
            "{text}"
        );
    }

    /// With a spin before due starts, the lag's cost line and the CPU table take it apart
    /// from the work, and the table's total is all of the side's CPU (user + sys).
    #[test]
    fn the_spin_before_due_starts_is_reported_apart_from_the_work() {
        let mut rec = RunRecord::example();
        let mut h = crate::record::new_latency_histogram();
        h.record_n(5_000, 100).unwrap();
        rec.phases[1].histograms.generator_lag = Some(crate::record::encode_histogram(&h));
        // 1,000 connections: 60 ms on CPU (sys), 45 ms of it spinning.
        rec.phases[1].cpu.load =
            crate::record::SideCpu::new(0, 60_000_000, 1_000_000_000, 1, 1_000)
                .with_run_ns(60_000_000, 1_000)
                .with_spin_ns(45_000_000, 1_000);
        let r = build_report(&rec, "x.json", &DEFAULT_BUCKET_EDGES_NS).unwrap();
        let text = report(&[r], ReportFormat::Text, Counters::Key);
        assert!(
            text.contains("(100 starts); load CPU 15.0 µs per connection of work + 45.0 µs spinning before due starts"),
            "{text}"
        );
        assert!(
            text.contains("load: 45.00 µs per connection of that total was spin before due starts (`--spin`): waiting for the schedule, not work (15.00 µs)"),
            "{text}"
        );
        let row = text
            .lines()
            .filter(|l| l.contains("load") && l.contains("60.00"))
            .count();
        assert!(
            row >= 1,
            "the load row's total is user + sys, 60.00: {text}"
        );
    }

    #[test]
    fn a_phase_without_a_success_prints_nothing_measured() {
        let mut rec = RunRecord::example();
        let p = &mut rec.phases[1];
        p.successes = 0;
        p.achieved_per_sec = None;
        p.cpm = None;
        p.measured_secs = 0.0;
        let r = build_report(&rec, "x.json", &DEFAULT_BUCKET_EDGES_NS).unwrap();
        let text = report(&[r], ReportFormat::Text, Counters::Key);
        let latency = &text[text.find("phase latency").unwrap()..];
        assert!(
            latency.contains("nothing measured — the phase ended (interrupted)"),
            "{latency}"
        );
        for absent in ["CPM", "p50", "CPU µs per conn", "agree"] {
            assert!(!latency.contains(absent), "{absent} in {latency}");
        }
        let peak = &text[..text.find("phase latency").unwrap()];
        assert!(peak.contains("CPM") && peak.contains("agree"), "{peak}");
    }

    #[test]
    fn report_has_every_phase_and_latency_and_warns_on_drops() {
        let mut rec = RunRecord::example();
        rec.phases[0]
            .counters
            .insert("TcpExt.ListenDrops".into(), 7);
        let r = build_report(&rec, "x.json", &DEFAULT_BUCKET_EDGES_NS).unwrap();
        assert_eq!(r.phases.len(), 2);
        let peak = &r.phases[0];
        assert_eq!(
            peak.latency.iter().map(|l| l.which).collect::<Vec<_>>(),
            ["handshake", "service"]
        );
        assert_eq!(
            peak.latency[0].buckets.len(),
            DEFAULT_BUCKET_EDGES_NS.len() + 1
        );
        assert_eq!(peak.drops, vec![("TcpExt.ListenDrops".to_string(), 7)]);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.starts_with("ListenDrops +7: handshake packets dropped at a listener")),
            "{:?}",
            r.warnings
        );
        let lat = &r.phases[1];
        assert!((lat.achieved_ratio.unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn stored_warnings_that_repeat_a_derived_one_are_dropped() {
        let mut rec = RunRecord::example();
        rec.run.interrupted = true;
        rec.phases[0]
            .counters
            .insert("TcpExt.TCPSynRetrans".into(), 12);
        rec.phases[1]
            .counters
            .insert("TcpExt.ListenOverflows".into(), 3);
        rec.warnings = vec![
            // As `bench` wrote them before it stopped storing derivable warnings.
            "peak: kernel counter TcpExt.TCPSynRetrans rose by 12 — drops make this a different experiment".into(),
            "latency: ListenOverflows 3".into(),
            "run interrupted by a signal (SIGINT/SIGTERM): numbers cover only what ran".into(),
            // Not derivable: kept.
            "engine auto fell back to epoll: io_uring disabled".into(),
        ];
        let r = build_report(&rec, "x.json", &[]).unwrap();
        let w = &r.warnings;
        assert!(w[0].contains("interrupted"), "{w:#?}");
        // Derived once, in the words `bench` uses (results::warnings).
        assert_eq!(
            w.iter().filter(|l| l.contains("TCPSynRetrans")).count(),
            1,
            "{w:#?}"
        );
        assert_eq!(
            w.iter().filter(|l| l.contains("ListenOverflows")).count(),
            1,
            "{w:#?}"
        );
        assert!(
            w.iter()
                .any(|l| l.starts_with("accept queue overflowed: ListenOverflows 3")),
            "{w:#?}"
        );
        // The stored copies of derivable warnings are gone; the non-derivable one stays, last.
        assert!(
            !w.iter().any(|l| l.starts_with("peak: kernel counter")),
            "{w:#?}"
        );
        assert!(
            !w.iter().any(|l| l == "latency: ListenOverflows 3"),
            "{w:#?}"
        );
        assert_eq!(
            w.last().unwrap(),
            "engine auto fell back to epoll: io_uring disabled"
        );
    }

    #[test]
    fn text_lists_key_and_nonzero_drop_counters_unless_asked_for_all() {
        let mut rec = RunRecord::example();
        let c = &mut rec.phases[0].counters;
        for (k, v) in [
            ("TcpExt.ListenOverflows", 0),
            ("Tcp.PassiveOpens", 5000),
            ("MPTcpExt.MPCapableSYNRX", 0),
            ("Icmp.InErrors", 0),
            ("TcpExt.TCPRcvQDrop", 2),
            ("TcpExt.TCPOFODrop", 0),
        ] {
            c.insert(k.into(), v);
        }
        let r = build_report(&rec, "x.json", &[]).unwrap();
        let text = report(std::slice::from_ref(&r), ReportFormat::Text, Counters::Key);
        let line = text
            .lines()
            .find(|l| l.starts_with("kernel counters:") && l.contains("PassiveOpens"))
            .unwrap();
        for shown in [
            "TcpExt.ListenOverflows +0",
            "Tcp.PassiveOpens +5,000",
            "TcpExt.TCPRcvQDrop +2",
        ] {
            assert!(line.contains(shown), "{shown} missing: {line}");
        }
        for hidden in ["MPTcp", "Icmp", "TCPOFODrop"] {
            assert!(!line.contains(hidden), "{hidden} shown: {line}");
        }
        assert!(line.contains("--all-counters"), "{line}");
        let all = report(std::slice::from_ref(&r), ReportFormat::Text, Counters::All);
        assert!(all.contains("MPTcpExt.MPCapableSYNRX +0"), "{all}");
        let json = report(std::slice::from_ref(&r), ReportFormat::Json, Counters::Key);
        assert!(json.contains("MPTcpExt.MPCapableSYNRX"), "JSON keeps all");
    }

    #[test]
    fn counts_in_text_have_thousands_separators() {
        let mut rec = RunRecord::example();
        rec.phases[0].counters.insert("TcpExt.TW".into(), 11_420);
        rec.phases[0]
            .counters
            .insert("TcpExt.TCPSynRetrans".into(), 1_234);
        let r = build_report(&rec, "x.json", &[]).unwrap();
        let text = report(std::slice::from_ref(&r), ReportFormat::Text, Counters::All);
        for needle in [
            "server accepted 6,000 (cpu0 100.0%)",
            "cross-check (incl. warm-up): server accepted 6,000, load successes 6,000, kernel PassiveOpens 6,000, ActiveOpens 6,003: agree",
            "attempts 6,003, successes 6,000, failed 3 (ECONNREFUSED 3)",
            "Tcp.ActiveOpens +6,003",
            "TcpExt.TW +11,420",
            "SYN retransmits: TCPSynRetrans 1,234 with no drop counter rising: the SYNs met orphaned FIN_WAIT2 minisocks of the same 4-tuple on the server side (TcpExt.TW 11,420 minisocks",
            "phase latency: open loop, 1,600/s poisson",
        ] {
            assert!(text.contains(needle), "text lacks {needle:?}:\n{text}");
        }
        // The samples column of the latency table: 6,000 handshakes in the peak phase.
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("handshake") && l.contains("6,000"))
            .unwrap_or_else(|| panic!("no handshake row with 6,000 samples:\n{text}"));
        assert!(row.trim_end().ends_with("6,000"), "{row}");
        // JSON keeps raw numbers.
        let json = report(std::slice::from_ref(&r), ReportFormat::Json, Counters::All);
        assert!(!json.contains("6,000"), "{json}");
    }

    #[test]
    fn every_format_shows_the_figures() {
        let rec = RunRecord::example();
        let r = build_report(&rec, "x.json", &[100_000, 1_000_000]).unwrap();
        let p99 = crate::render::format_ns(r.phases[1].latency[0].summary.p99_ns as f64);
        let text = report(std::slice::from_ref(&r), ReportFormat::Text, Counters::Key);
        for needle in [
            "CPM",
            "conn/s",
            "p99.99",
            "stddev",
            "ECONNREFUSED",
            "µs per conn",
            &p99,
            "< 100.0 µs",
            "6.12.0-example",
        ] {
            assert!(text.contains(needle), "text lacks {needle:?}:\n{text}");
        }
        let md = report(
            std::slice::from_ref(&r),
            ReportFormat::Markdown,
            Counters::Key,
        );
        assert!(md.contains("|---|") && md.contains(&p99), "{md}");
        let json: serde_json::Value = serde_json::from_str(&report(
            std::slice::from_ref(&r),
            ReportFormat::Json,
            Counters::Key,
        ))
        .unwrap();
        assert_eq!(
            json[0]["phases"][1]["latency"][0]["summary"]["p99_ns"],
            r.phases[1].latency[0].summary.p99_ns
        );
        let csv = report(std::slice::from_ref(&r), ReportFormat::Csv, Counters::Key);
        assert_eq!(csv.lines().count(), 3, "{csv}");
    }
}
