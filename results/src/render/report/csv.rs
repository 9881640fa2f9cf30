//! CSV output: one row per record and phase, for spreadsheets and scripts.
//!
//! Columns: `file,label,phase,pattern,arrival,concurrency,offered_per_sec,achieved_per_sec,cpm,
//! measured_secs,attempts,successes,failed,late,dropped` (`pattern` is `open` or `closed`;
//! `arrival` `uniform`/`poisson` for open loop, `concurrency` the connections in flight for
//! closed loop, empty otherwise: raw values, never the text form; all three empty for a `server`
//! record's phase, which has no load pattern; so are its `attempts`, `failed`, `late` and
//! `dropped`, the clients' figures, while its `successes` are its accepts and its rate is over
//! its whole run, idle time included), then for each of `handshake`, `service`,
//! `first_byte`: `_p50_ns,_p90_ns,_p99_ns,_p999_ns,_p9999_ns,_max_ns,_mean_ns,_stddev_ns`
//! (empty when not measured), then `server_us_per_conn_user,server_us_per_conn_sys,
//! load_us_per_conn_user,load_us_per_conn_sys,drops`, then (`load --http`, empty otherwise)
//! `http_requests,http_responses,http_responses_per_sec,http_early_responses,http_2xx,
//! http_non_2xx,http_parse_errors,http_bytes_sent,http_bytes_received`, (`--tls`, empty otherwise)
//! `tls_handshakes,tls_full,tls_resumed,tls_failures`, and the same eight statistics of
//! `http_response`, `http_first_byte`, `tls_handshake`, `tls_full` and `tls_resumed` (the TLS
//! handshake latency of full and of resumed handshakes apart, `tls_full_p50_ns`, …). New
//! columns only ever go at the end.

use super::RecordReport;
use crate::record::{Arrival, Pattern, SideCpu};

const LATENCIES: [&str; 3] = ["handshake", "service", "first_byte"];
/// Latencies of `--http` and `--tls` runs, after the counts (`tls_full` and `tls_resumed`:
/// the TLS handshake latency of full and of resumed handshakes apart, added last).
const LATER_LATENCIES: [&str; 5] = [
    "http_response",
    "http_first_byte",
    "tls_handshake",
    "tls_full",
    "tls_resumed",
];
const HTTP: [&str; 9] = [
    "http_requests",
    "http_responses",
    "http_responses_per_sec",
    "http_early_responses",
    "http_2xx",
    "http_non_2xx",
    "http_parse_errors",
    "http_bytes_sent",
    "http_bytes_received",
];
const TLS: [&str; 4] = ["tls_handshakes", "tls_full", "tls_resumed", "tls_failures"];
const STATS: [&str; 8] = [
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p999_ns",
    "p9999_ns",
    "max_ns",
    "mean_ns",
    "stddev_ns",
];

/// Quotes a field if it holds a comma, quote or newline (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn header() -> Vec<String> {
    let mut h: Vec<String> = [
        "file",
        "label",
        "phase",
        "pattern",
        "arrival",
        "concurrency",
        "offered_per_sec",
        "achieved_per_sec",
        "cpm",
        "measured_secs",
        "attempts",
        "successes",
        "failed",
        "late",
        "dropped",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for l in LATENCIES {
        h.extend(STATS.iter().map(|s| format!("{l}_{s}")));
    }
    h.extend(
        [
            "server_us_per_conn_user",
            "server_us_per_conn_sys",
            "load_us_per_conn_user",
            "load_us_per_conn_sys",
            "drops",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    h.extend(HTTP.iter().chain(&TLS).map(|s| s.to_string()));
    for l in LATER_LATENCIES {
        h.extend(STATS.iter().map(|s| format!("{l}_{s}")));
    }
    h
}

/// The eight statistics of latency `which` of phase `p`, or empty fields.
fn latency_fields(p: &super::PhaseReport, which: &str) -> Vec<String> {
    match p.latency.iter().find(|x| x.which == which) {
        Some(x) => {
            let s = &x.summary;
            let mut v: Vec<String> = s.percentiles().iter().map(|(_, v)| v.to_string()).collect();
            v.extend([
                s.max_ns.to_string(),
                s.mean_ns.to_string(),
                s.stddev_ns.to_string(),
            ]);
            v
        }
        None => vec![String::new(); STATS.len()],
    }
}

/// The HTTP and TLS count fields of phase `p` (empty when the run had none).
fn http_tls_fields(p: &super::PhaseReport) -> Vec<String> {
    let mut row = match &p.http {
        Some(h) => {
            let class = |c: &str| h.status_classes.get(c).copied().unwrap_or(0);
            let per_sec = if p.measured_secs > 0.0 {
                (h.responses as f64 / p.measured_secs).to_string()
            } else {
                String::new()
            };
            vec![
                h.requests.to_string(),
                h.responses.to_string(),
                per_sec,
                h.early_responses.to_string(),
                class("2xx").to_string(),
                h.responses.saturating_sub(class("2xx")).to_string(),
                h.parse_errors.values().sum::<u64>().to_string(),
                h.bytes_sent.to_string(),
                h.bytes_received.to_string(),
            ]
        }
        None => vec![String::new(); HTTP.len()],
    };
    match &p.tls {
        Some(t) => row.extend([
            t.handshakes.to_string(),
            t.full.to_string(),
            t.resumed.to_string(),
            t.failures.values().sum::<u64>().to_string(),
        ]),
        None => row.extend(std::iter::repeat_n(String::new(), TLS.len())),
    }
    row
}

/// The `pattern,arrival,concurrency` fields of a phase, raw.
fn pattern_fields(p: Pattern) -> [String; 3] {
    match p {
        Pattern::Open { arrival, .. } => [
            "open".into(),
            match arrival {
                Arrival::Uniform => "uniform",
                Arrival::Poisson => "poisson",
            }
            .into(),
            String::new(),
        ],
        Pattern::Closed { concurrency } => {
            ["closed".into(), String::new(), concurrency.to_string()]
        }
    }
}

/// Renders the reports as CSV with a header row.
pub(crate) fn to_csv(reports: &[RecordReport]) -> String {
    let mut out = header().join(",") + "\n";
    for r in reports {
        for p in &r.phases {
            let mut row = vec![field(&r.file), field(&r.label), field(&p.name)];
            if r.role == crate::record::Role::Server {
                // An accept server has no load pattern (the record's default read `closed`
                // with 0 in flight).
                row.extend([String::new(), String::new(), String::new()]);
            } else {
                row.extend(pattern_fields(p.pattern));
            }
            // A server sees accepts only: the client's attempts, failures, late and dropped
            // starts are not its figures (they read 0 beside 48,926 accepts) and stay empty;
            // its `successes` are its accepts, its rate is over its whole run, idle included.
            let client = |v: u64| {
                if r.role == crate::record::Role::Server {
                    String::new()
                } else {
                    v.to_string()
                }
            };
            row.extend([
                p.offered_per_sec.map(|o| o.to_string()).unwrap_or_default(),
                p.achieved_per_sec
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                p.cpm.map(|v| v.to_string()).unwrap_or_default(),
                p.measured_secs.to_string(),
                client(p.attempts),
                p.successes.to_string(),
                client(p.failures.values().sum::<u64>()),
                client(p.late),
                client(p.dropped),
            ]);
            for l in LATENCIES {
                row.extend(latency_fields(p, l));
            }
            let cpu = |c: Option<&SideCpu>| match c {
                Some(c) => [
                    c.us_per_conn_user.map_or(String::new(), |v| v.to_string()),
                    c.us_per_conn_sys.map_or(String::new(), |v| v.to_string()),
                ],
                None => [String::new(), String::new()],
            };
            row.extend(cpu(p.cpu.server.as_ref()));
            row.extend(cpu(Some(&p.cpu.load)));
            let drops: Vec<String> = p.drops.iter().map(|(k, v)| format!("{k}={v}")).collect();
            row.push(field(&drops.join(";")));
            row.extend(http_tls_fields(p));
            for l in LATER_LATENCIES {
                row.extend(latency_fields(p, l));
            }
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RunRecord;

    #[test]
    fn rows_have_as_many_fields_as_the_header_and_quote_commas() {
        let mut rec = RunRecord::example();
        rec.label = "a,b".into();
        let r = crate::render::build_report(&rec, "x.json", &[]).unwrap();
        let csv = to_csv(&[r]);
        let n = header().len();
        let mut lines = csv.lines();
        assert_eq!(lines.next().unwrap().split(',').count(), n);
        let fields = |line: &str| {
            let mut quoted = false;
            1 + line
                .chars()
                .filter(|&c| {
                    quoted ^= c == '"';
                    c == ',' && !quoted
                })
                .count()
        };
        for line in lines {
            assert!(line.contains("\"a,b\""), "{line}");
            assert_eq!(fields(line), n, "{line}");
        }
    }

    #[test]
    fn http_and_tls_counts_are_columns_at_the_end_empty_without_them() {
        let mut rec = RunRecord::example();
        let mut h = crate::record::HttpCounts {
            requests: 90,
            responses: 100,
            early_responses: 10,
            bytes_sent: 5_000,
            bytes_received: 7_000,
            ..Default::default()
        };
        h.status_classes.insert("2xx".into(), 60);
        h.status_classes.insert("4xx".into(), 40);
        h.parse_errors.insert("truncated".into(), 3);
        let mut t = crate::record::TlsCounts {
            handshakes: 103,
            full: 3,
            resumed: 100,
            ..Default::default()
        };
        t.failures.insert("bad certificate".into(), 2);
        rec.phases[0].http = Some(h);
        rec.phases[0].tls = Some(t);
        let r = crate::render::build_report(&rec, "x.json", &[]).unwrap();
        let secs = r.phases[0].measured_secs;
        let csv = to_csv(&[r]);
        let mut lines = csv.lines();
        let head: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(&head[..15], &header()[..15]);
        let col = |row: &str, name: &str| {
            let i = head.iter().position(|h| *h == name).unwrap();
            row.split(',').nth(i).unwrap().to_string()
        };
        let (with, without) = (lines.next().unwrap(), lines.next().unwrap());
        for (name, want) in [
            ("http_requests", "90".to_string()),
            ("http_responses", "100".into()),
            ("http_responses_per_sec", (100.0 / secs).to_string()),
            ("http_early_responses", "10".into()),
            ("http_2xx", "60".into()),
            ("http_non_2xx", "40".into()),
            ("http_parse_errors", "3".into()),
            ("http_bytes_sent", "5000".into()),
            ("http_bytes_received", "7000".into()),
            ("tls_handshakes", "103".into()),
            ("tls_full", "3".into()),
            ("tls_resumed", "100".into()),
            ("tls_failures", "2".into()),
            ("tls_handshake_p50_ns", String::new()),
        ] {
            assert_eq!(col(with, name), want, "{name}: {with}");
            assert_eq!(col(without, name), "", "{name}: {without}");
        }
        assert_eq!(with.split(',').count(), head.len());
    }

    #[test]
    fn the_pattern_is_raw_fields_never_formatted_text() {
        let mut rec = RunRecord::example();
        if let crate::record::Pattern::Open { rate_per_sec, .. } = &mut rec.phases[1].pattern {
            *rate_per_sec = 16_196.0;
        }
        rec.phases[1].offered_per_sec = Some(16_196.0);
        let r = crate::render::build_report(&rec, "x.json", &[]).unwrap();
        let csv = to_csv(std::slice::from_ref(&r));
        assert!(csv.contains("x.json,example,peak,closed,,64,,"), "{csv}");
        assert!(
            csv.contains("x.json,example,latency,open,poisson,,16196,"),
            "{csv}"
        );
        assert!(!csv.contains("16,196") && !csv.contains("loop"), "{csv}");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json["phases"][1]["pattern"],
            serde_json::json!({"kind": "open", "rate_per_sec": 16196.0, "arrival": "poisson"})
        );
        assert_eq!(
            crate::render::report::describe_pattern(&rec.phases[1].pattern),
            "open loop, 16,196/s poisson"
        );
    }

    #[test]
    fn a_server_records_phase_has_no_pattern_fields() {
        let mut rec = RunRecord::example();
        rec.role = crate::record::Role::Server;
        let r = crate::render::build_report(&rec, "s.json", &[]).unwrap();
        let csv = to_csv(std::slice::from_ref(&r));
        // It read `closed,,0` (the record's default pattern) for a server, which has none, and
        // 0 attempts beside its accepts.
        assert!(csv.contains("s.json,example,peak,,,,"), "{csv}");
        let row = csv.lines().nth(1).unwrap();
        let cols: Vec<&str> = row.split(',').collect();
        let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = |n: &str| cols[head.iter().position(|h| *h == n).unwrap()];
        for n in ["attempts", "failed", "late", "dropped"] {
            assert_eq!(col(n), "", "{n}: {row}");
        }
        assert_eq!(
            col("successes"),
            rec.phases[0].successes.to_string(),
            "{row}"
        );
        assert!(
            !csv.contains(",closed,") && !csv.contains(",open,"),
            "{csv}"
        );
    }
}
