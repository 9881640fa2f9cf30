//! CSV output: one row per record and phase, for spreadsheets and scripts.
//!
//! Columns: `file,label,phase,pattern,arrival,concurrency,offered_per_sec,achieved_per_sec,cpm,
//! measured_secs,attempts,successes,failed,late,dropped` (`pattern` is `open` or `closed`;
//! `arrival` `uniform`/`poisson` for open loop, `concurrency` the connections in flight for
//! closed loop, empty otherwise: raw values, never the text form), then for each of `handshake`, `service`,
//! `first_byte`: `_p50_ns,_p90_ns,_p99_ns,_p999_ns,_p9999_ns,_max_ns,_mean_ns,_stddev_ns`
//! (empty when not measured), then `server_us_per_conn_user,server_us_per_conn_sys,
//! load_us_per_conn_user,load_us_per_conn_sys,drops`.

use super::RecordReport;
use crate::record::{Arrival, Pattern, SideCpu};

const LATENCIES: [&str; 3] = ["handshake", "service", "first_byte"];
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
    h
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
            row.extend(pattern_fields(p.pattern));
            row.extend([
                p.offered_per_sec.map(|o| o.to_string()).unwrap_or_default(),
                p.achieved_per_sec
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                p.cpm.map(|v| v.to_string()).unwrap_or_default(),
                p.measured_secs.to_string(),
                p.attempts.to_string(),
                p.successes.to_string(),
                p.failures.values().sum::<u64>().to_string(),
                p.late.to_string(),
                p.dropped.to_string(),
            ]);
            for l in LATENCIES {
                match p.latency.iter().find(|x| x.which == l) {
                    Some(x) => {
                        let s = &x.summary;
                        row.extend(s.percentiles().iter().map(|(_, v)| v.to_string()));
                        row.extend([
                            s.max_ns.to_string(),
                            s.mean_ns.to_string(),
                            s.stddev_ns.to_string(),
                        ]);
                    }
                    None => row.extend(std::iter::repeat_n(String::new(), STATS.len())),
                }
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
        let r = crate::report::build(&rec, "x.json", &[]).unwrap();
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
    fn the_pattern_is_raw_fields_never_formatted_text() {
        let mut rec = RunRecord::example();
        if let crate::record::Pattern::Open { rate_per_sec, .. } = &mut rec.phases[1].pattern {
            *rate_per_sec = 16_196.0;
        }
        rec.phases[1].offered_per_sec = Some(16_196.0);
        let r = crate::report::build(&rec, "x.json", &[]).unwrap();
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
            crate::report::describe_pattern(&rec.phases[1].pattern),
            "open loop, 16,196/s poisson"
        );
    }
}
