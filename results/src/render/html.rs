//! One self-contained HTML page for a set of run records (`connstorm report --format html`).
//!
//! Shape of the page, top to bottom, each a `<section id=...>`; the verdict and the summary fit
//! the first screen (1400×900) and nothing scrolls sideways at 1400 px (`scripts/html-check.sh`
//! measures both in headless Chromium), details below:
//! - `verdict`: what the records say, in the words of the text outputs: an A/B set's verdict
//!   (connections/s, then the handshake p99 at the one offered rate, secondary metrics after),
//!   a sweep's knee (or that the generator reached its limit first), a bench's `PEAK` and
//!   `LATENCY` headlines with what limited the peak;
//! - `summary`: a table that fits: an A/B set's comparison (each side's median, the change, its
//!   interval, the verdict), a sweep's steps, else one row per record and phase (achieved
//!   connections/s, CPM, handshake p50/p99/max, each side's CPU);
//! - `warnings`: every record's warnings (derived and stored, as in the text report), or "none";
//! - `plots`: the latency spectrum, CPM timeline and per-worker accept share as inline SVG
//!   (plotters' SVG backend, the same pictures `connstorm plot` draws), plus the sweep curve for
//!   each sweep record and the A/B strip chart when the set is an `ab` run's two sides; names a
//!   picture cuts are listed whole under it;
//! - `comparison` (A/B sets only): the whole `compare` output, every column;
//! - `details`: every record and phase with every latency percentile, then the full text report
//!   of each record (host, per-phase percentile and bucket tables, kernel counters) as HTML
//!   tables.
//!
//! Self-contained means no fetch at all: styles inline in `<style>`, no `<script>`, no external
//! stylesheet, font or image; SVG text uses the `sans-serif` family the browser has.
//! A plot a record set cannot give (no per-worker accepts with `--target`, say) is replaced by
//! a line saying why.

use std::fmt::Write as _;

use super::plot::{plot_svg, Named, PlotKind};
use super::report::{blocks, describe_pattern, Counters, RecordReport};
use super::table::{Block, Table};
use crate::numfmt;
use crate::record::RunRecord;

/// The sections every page has, by `id`, in page order (`comparison` is added for A/B sets).
pub const HTML_SECTIONS: [&str; 5] = ["verdict", "summary", "warnings", "plots", "details"];

/// `<`, `>`, `&`, `"` and `'` escaped for text and attribute values.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:.8em auto;max-width:1320px;color:#222;padding:0 1em;overflow-wrap:anywhere}
h1{font-size:1.35em;margin:.2em 0 .4em}h2{font-size:1.15em;border-bottom:1px solid #ccc;margin:1em 0 .4em}h3{font-size:1.05em}
#verdict h2,#summary h2{margin-top:.5em}
#verdict p{margin:.2em 0;font-size:1.02em}#verdict p.lead{font-weight:bold}
table{border-collapse:collapse;margin:.4em 0;font-size:.88em}
th,td{border:1px solid #ccc;padding:.15em .45em;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left;white-space:normal;max-width:26em}th{background:#f0f0f0}
#summary td:last-child{white-space:normal;max-width:32em;text-align:left}
.warning{background:#fff3cd;border-left:4px solid #e0a800;padding:.3em .6em;margin:.3em 0}
figure{margin:1em 0}figcaption{font-weight:bold;margin-bottom:.3em}
figure svg{max-width:100%;height:auto;border:1px solid #ddd}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:.85em}
.note{color:#666;font-style:italic}.scroll{overflow-x:auto}";

fn table_html(t: &Table, out: &mut String) {
    out.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    for h in &t.headers {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for c in row {
            let _ = write!(out, "<td>{}</td>", escape(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// A report document ([`Block`]s) as HTML; record headings become `<h3>`, phases `<h4>`.
fn blocks_html(doc: &[Block], out: &mut String) {
    for b in doc {
        match b {
            Block::Heading(level, text) => {
                let h = (level + 2).min(6);
                let _ = writeln!(out, "<h{h}>{}</h{h}>", escape(text));
            }
            Block::Line(text) => {
                let _ = writeln!(out, "<p>{}</p>", escape(text));
            }
            Block::Warning(text) => {
                let _ = writeln!(out, "<p class=\"warning\">WARNING: {}</p>", escape(text));
            }
            Block::Table(t) => table_html(t, out),
        }
    }
}

fn record_name(r: &RecordReport) -> String {
    match (r.label.is_empty(), r.file.is_empty()) {
        (false, _) => r.label.clone(),
        (true, false) => r.file.clone(),
        (true, true) => r.run.command.clone(),
    }
}

fn summary_table(reports: &[RecordReport]) -> Table {
    let mut headers = vec![
        "record",
        "command",
        "engine",
        "phase",
        "pattern",
        "achieved (conn/s)",
        "CPM",
        "handshake p50",
        "p90",
        "p99",
        "p99.9",
        "max",
    ];
    // `--http`/`--tls` runs: their response latency and TLS handshake rate and latency, which
    // the summary left out (only the TCP handshake was in it).
    let phases = || reports.iter().flat_map(|r| &r.phases);
    let http = phases().any(|p| p.http.is_some());
    let tls = phases().any(|p| p.tls.is_some());
    if http {
        headers.extend(["response p50", "response p99"]);
    }
    if tls {
        headers.extend(["TLS handshakes/s", tls_p99_header(phases())]);
    }
    let mut t = Table::new(headers);
    for r in reports {
        for p in &r.phases {
            let of = |which: &str, f: fn(&crate::analysis::LatencySummary) -> u64| {
                p.latency
                    .iter()
                    .find(|l| l.which == which)
                    .filter(|l| l.summary.count > 0)
                    .map(|l| numfmt::ns(f(&l.summary) as f64))
                    .unwrap_or_else(|| numfmt::NA.to_string())
            };
            let q = |f| of("handshake", f);
            let measured = p.successes > 0;
            let rate = |v: Option<f64>| {
                if measured {
                    numfmt::fixed_opt(v, 0)
                } else {
                    numfmt::NA.to_string()
                }
            };
            let mut row = vec![
                record_name(r),
                r.run.command.clone(),
                if r.run.engine.is_empty() {
                    "-".to_string()
                } else {
                    r.run.engine.clone()
                },
                p.name.clone(),
                describe_pattern(&p.pattern),
                rate(p.achieved_per_sec),
                rate(p.cpm),
                q(|s| s.p50_ns),
                q(|s| s.p90_ns),
                q(|s| s.p99_ns),
                q(|s| s.p999_ns),
                q(|s| s.max_ns),
            ];
            if http {
                row.push(of("http_response", |s| s.p50_ns));
                row.push(of("http_response", |s| s.p99_ns));
            }
            if tls {
                row.push(match &p.tls {
                    Some(c) if p.measured_secs > 0.0 => {
                        numfmt::fixed(c.handshakes as f64 / p.measured_secs, 1)
                    }
                    _ => numfmt::NA.to_string(),
                });
                row.push(tls_p99(p));
            }
            t.row(row);
        }
    }
    t
}

/// A phase's TLS handshake p99 (`n/a` when none was measured): the full and the resumed
/// handshakes apart when the record has them apart (`--tls-resume`; the mixed p99 would be
/// mostly the resumed ones'), else the one histogram of all handshakes.
fn tls_p99(p: &super::report::PhaseReport) -> String {
    let p99 = |which: &str| {
        p.latency
            .iter()
            .find(|l| l.which == which)
            .filter(|l| l.summary.count > 0)
            .map(|l| numfmt::ns(l.summary.p99_ns as f64))
    };
    match (p99("tls_full"), p99("tls_resumed")) {
        (None, None) => p99("tls_handshake").unwrap_or_else(|| numfmt::NA.to_string()),
        (full, resumed) => {
            let na = || numfmt::NA.to_string();
            format!(
                "full {} / resumed {}",
                full.unwrap_or_else(na),
                resumed.unwrap_or_else(na)
            )
        }
    }
}

/// The header of the TLS handshake p99 column: it says when some cell holds full and resumed
/// handshakes apart ([`tls_p99`]).
fn tls_p99_header<'a>(
    mut phases: impl Iterator<Item = &'a super::report::PhaseReport>,
) -> &'static str {
    let split = phases.any(|p| {
        p.latency
            .iter()
            .any(|l| (l.which == "tls_full" || l.which == "tls_resumed") && l.summary.count > 0)
    });
    if split {
        "TLS handshake p99 (full / resumed)"
    } else {
        "TLS handshake p99"
    }
}

/// The two sides of an `ab` run's records, by label with the trial suffix (`#3`) cut: `Some`
/// when every record was written by `ab` and there are exactly two side names, in the order
/// they first appear.
fn ab_sides<'a>(records: &[Named<'a>]) -> Option<(Vec<Named<'a>>, Vec<Named<'a>>)> {
    // `ab` writes its trials as bench records labelled `[LABEL-]<side>#<trial>`.
    let ab_trial = |r: &RunRecord| {
        r.run.command == "ab" || (r.run.command == "bench" && r.label.contains('#'))
    };
    if records.len() < 2 || !records.iter().all(|n| ab_trial(n.record)) {
        return None;
    }
    let side = |r: &RunRecord| -> String {
        r.label
            .rsplit_once('#')
            .map_or(r.label.as_str(), |(s, _)| s)
            .to_string()
    };
    let mut names: Vec<String> = Vec::new();
    for n in records {
        let s = side(n.record);
        if !names.contains(&s) {
            names.push(s);
        }
    }
    if names.len() != 2 {
        return None;
    }
    let pick = |want: &str| -> Vec<Named<'a>> {
        records
            .iter()
            .filter(|n| side(n.record) == want)
            .map(|n| Named {
                name: want.to_string(),
                record: n.record,
            })
            .collect()
    };
    Some((pick(&names[0]), pick(&names[1])))
}

fn figure(
    id: &str,
    caption: &str,
    svg: Result<String, super::PlotError>,
    long: &[String],
    out: &mut String,
) {
    let _ = writeln!(
        out,
        "<figure id=\"{id}\">\n<figcaption>{}</figcaption>",
        escape(caption)
    );
    match svg {
        Ok(svg) => {
            out.push_str(svg.trim());
            // The names the picture cuts, whole.
            for n in long {
                let _ = write!(out, "\n<p class=\"note\">{}</p>", escape(n));
            }
        }
        Err(e) => {
            let _ = write!(out, "<p class=\"note\">{}</p>", escape(&e.to_string()));
        }
    }
    out.push_str("\n</figure>\n");
}

/// At most this many records' headlines in the verdict (the summary lists every record).
const VERDICT_RECORDS: usize = 4;

/// `name`, cut to 60 characters with `…` (page headings and table cells; the details give the
/// whole name).
fn cut(name: &str) -> String {
    if name.chars().count() <= 60 {
        return name.to_string();
    }
    let keep: String = name.chars().take(59).collect();
    format!("{keep}…")
}

fn lines_html(class: &str, lines: &[String], out: &mut String) {
    for (i, l) in lines.iter().enumerate() {
        let c = if i == 0 && !class.is_empty() {
            format!(" class=\"{class}\"")
        } else {
            String::new()
        };
        let _ = writeln!(out, "<p{c}>{}</p>", escape(l));
    }
}

/// A sweep record's steps and knee under its own criteria (`None`: not a sweep, or no
/// criteria in its config).
fn sweep_of(
    r: &RunRecord,
) -> Option<(
    Vec<crate::analysis::Step>,
    Option<crate::analysis::Knee>,
    crate::analysis::Criteria,
)> {
    if r.run.command != "sweep" {
        return None;
    }
    let c = crate::analysis::criteria_of(r)?;
    let steps = crate::analysis::steps_from_record(r, c.slo.latency, c.slo.quantile);
    let knee = crate::analysis::knee(&steps, &c, r.run.server_cpus.len());
    Some((steps, knee, c))
}

/// The summary of records that are neither an A/B set nor sweeps: one row per record and phase
/// with what a reader compares first, and each side's CPU (what limited it).
fn overview_table(reports: &[RecordReport], records: &[Named<'_>]) -> Table {
    let phases = || reports.iter().flat_map(|r| &r.phases);
    let http = phases().any(|p| p.http.is_some());
    let tls = phases().any(|p| p.tls.is_some());
    let mut headers = vec![
        "record",
        "phase",
        "offered",
        "achieved (conn/s)",
        "CPM",
        "handshake p50",
        "p99",
        "max",
    ];
    if http {
        headers.push("response p99");
    }
    if tls {
        headers.extend(["TLS handshakes/s", tls_p99_header(phases())]);
    }
    headers.push("CPU load / server");
    let mut t = Table::new(headers);
    for (r, n) in reports.iter().zip(records) {
        for p in &r.phases {
            let of = |which: &str, f: fn(&crate::analysis::LatencySummary) -> u64| {
                p.latency
                    .iter()
                    .find(|l| l.which == which)
                    .filter(|l| l.summary.count > 0)
                    .map(|l| numfmt::ns(f(&l.summary) as f64))
                    .unwrap_or_else(|| numfmt::NA.to_string())
            };
            let measured = p.successes > 0;
            let rate = |v: Option<f64>| {
                if measured {
                    numfmt::fixed_opt(v, 0)
                } else {
                    numfmt::NA.to_string()
                }
            };
            let rec_phase = n.record.phase(&p.name);
            let cpu = rec_phase.map_or_else(
                || "-".to_string(),
                |rp| {
                    let side = |c: &crate::record::SideCpu| {
                        if c.wall_ns > 0 && c.cpus > 0 {
                            format!("{:.0}%", crate::analysis::side_busy_pct(c))
                        } else {
                            "-".into()
                        }
                    };
                    let limited = if crate::analysis::client_limits(n.record, rp).is_empty() {
                        ""
                    } else {
                        " (client-limited)"
                    };
                    format!(
                        "{} / {}{limited}",
                        side(&rp.cpu.load),
                        rp.cpu.server.as_ref().map_or_else(|| "-".into(), side)
                    )
                },
            );
            let mut row = vec![
                cut(&record_name(r)),
                p.name.clone(),
                match p.pattern {
                    crate::record::Pattern::Open { rate_per_sec, .. } => {
                        format!("{}/s", numfmt::fixed(rate_per_sec, 0))
                    }
                    crate::record::Pattern::Closed { concurrency } => {
                        format!("closed, {concurrency} in flight")
                    }
                },
                rate(p.achieved_per_sec),
                rate(p.cpm),
                of("handshake", |s| s.p50_ns),
                of("handshake", |s| s.p99_ns),
                of("handshake", |s| s.max_ns),
            ];
            if http {
                row.push(of("http_response", |s| s.p99_ns));
            }
            if tls {
                row.push(match &p.tls {
                    Some(c) if p.measured_secs > 0.0 => {
                        numfmt::fixed(c.handshakes as f64 / p.measured_secs, 1)
                    }
                    _ => numfmt::NA.to_string(),
                });
                row.push(tls_p99(p));
            }
            row.push(cpu);
            t.row(row);
        }
    }
    t
}

/// A step's client limits, each cut at its first comma or parenthesis (`load CPUs [1] 100%
/// busy`, `2.1% of starts late`), and the schedule warning left out beside late starts: the
/// text output and the details say them whole.
fn short_limits(limits: &[String]) -> String {
    let late = limits.iter().any(|l| l.contains("of starts late"));
    limits
        .iter()
        .filter(|l| !(late && l.starts_with("the generator fell behind")))
        .map(|l| {
            let end = l.find([',', '(']).unwrap_or(l.len());
            l[..end].trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A sweep's steps as a table that fits: offered, achieved, the SLO's latency, errors, late
/// starts, each side's CPU, whether the step meets the SLO and whether the generator limited it.
fn steps_table(steps: &[crate::analysis::Step], c: &crate::analysis::Criteria) -> Table {
    let mut t = Table::new([
        "step".to_string(),
        "offered/s".to_string(),
        "achieved/s".to_string(),
        c.slo.column(),
        "errors".to_string(),
        "late starts".to_string(),
        "CPU load / server".to_string(),
        format!("meets {}", c.slo.text),
    ]);
    let pct = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.0}%"));
    for s in steps {
        t.row([
            s.name.clone(),
            numfmt::fixed(s.offered_per_sec, 0),
            numfmt::fixed_opt(s.achieved_per_sec, 0),
            s.latency_ns
                .map_or_else(|| numfmt::NA.to_string(), |n| numfmt::ns(n as f64)),
            numfmt::pct(s.error_ratio),
            s.late_ratio()
                .map_or_else(|| numfmt::NA.to_string(), numfmt::pct),
            format!("{} / {}", pct(s.load_cpu_pct), pct(s.server_cpu_pct)),
            format!(
                "{}{}",
                if crate::analysis::step_ok(s, c) {
                    "yes"
                } else {
                    "no"
                },
                if s.client_limited() {
                    format!(" — client-limited: {}", short_limits(&s.client_limits))
                } else {
                    String::new()
                }
            ),
        ]);
    }
    t
}

/// The page for these records: `reports` are their [`build_report`](super::build_report) summaries
/// and `records` the same records with legend names, in the same order; `counters` picks the kernel
/// counters listed in `details`. Returns a complete UTF-8 HTML5 document.
pub fn html(reports: &[RecordReport], records: &[Named<'_>], counters: Counters) -> String {
    let mut out = String::new();
    let ab = ab_sides(records);
    let title = match (reports, &ab) {
        (_, Some((a, b))) => format!(
            "connstorm A/B report: {} vs {} ({} and {} trials)",
            cut(&crate::analysis::short_name(&a[0].name, "A")),
            cut(&crate::analysis::short_name(&b[0].name, "B")),
            a.len(),
            b.len()
        ),
        ([one], _) => format!("connstorm report: {}", cut(&record_name(one))),
        (many, _) => format!("connstorm report: {} records", many.len()),
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    let comparison_of = |a: &[Named<'_>], b: &[Named<'_>]| {
        let recs = |v: &[Named<'_>]| v.iter().map(|n| n.record.clone()).collect::<Vec<_>>();
        crate::analysis::compare(
            &recs(a),
            &recs(b),
            (None, None),
            &crate::analysis::CompareOptions::default(),
        )
    };
    let c = ab.as_ref().map(|(a, b)| comparison_of(a, b));
    let sweeps: Vec<(&Named<'_>, _)> = records
        .iter()
        .filter_map(|n| sweep_of(n.record).map(|s| (n, s)))
        .collect();
    let all_sweeps = !sweeps.is_empty() && sweeps.len() == records.len();

    out.push_str("<section id=\"verdict\">\n<h2>Verdict</h2>\n");
    if let Some(c) = &c {
        lines_html("lead", &super::compare::headline(c), &mut out);
        let _ = writeln!(
            out,
            "<p class=\"note\">B vs A: A = {}, B = {} ({} and {} trials; the sides in full under the summary)</p>",
            escape(&c.a.short),
            escape(&c.b.short),
            c.a.trials.len(),
            c.b.trials.len()
        );
    } else if !sweeps.is_empty() {
        for (n, (steps, knee, crit)) in &sweeps {
            let line = super::sweep::knee_line(
                n.record,
                steps,
                knee.as_ref(),
                crit,
                n.record.run.server_cpus.len(),
            );
            let line = if sweeps.len() > 1 {
                format!("{}: {line}", cut(&n.name))
            } else {
                line
            };
            lines_html("lead", &[line], &mut out);
        }
    } else {
        let mut any = false;
        for n in records.iter().take(VERDICT_RECORDS) {
            let lines = super::bench_summary::headlines(n.record);
            if lines.is_empty() {
                continue;
            }
            any = true;
            let lines: Vec<String> = if records.len() > 1 {
                lines
                    .into_iter()
                    .map(|l| format!("{}: {l}", cut(&n.name)))
                    .collect()
            } else {
                lines
            };
            lines_html("lead", &lines, &mut out);
        }
        if records.len() > VERDICT_RECORDS {
            let _ = writeln!(
                out,
                "<p class=\"note\">… and {} more records: see the summary</p>",
                records.len() - VERDICT_RECORDS
            );
        } else if !any {
            out.push_str("<p>no peak or latency phase to state: see the summary</p>\n");
        }
    }
    out.push_str("</section>\n");

    out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
    if let Some(c) = &c {
        table_html(
            &super::compare::table(c, super::compare::Width::Default),
            &mut out,
        );
        for (letter, side) in [("A", &c.a), ("B", &c.b)] {
            let _ = writeln!(
                out,
                "<p class=\"note\">{letter}: {}</p>",
                escape(&super::compare::side_line(side))
            );
        }
    } else if all_sweeps {
        for (n, (steps, _, crit)) in &sweeps {
            if sweeps.len() > 1 {
                let _ = writeln!(out, "<h3>{}</h3>", escape(&cut(&n.name)));
            }
            if let Some(p) = n.record.phase("peak") {
                let _ = writeln!(
                    out,
                    "<p>probed peak: {} conn/s (closed loop){}</p>",
                    numfmt::fixed_opt(p.achieved_per_sec, 0),
                    escape(&super::bench_summary::peak_limit(n.record, p))
                );
            }
            table_html(&steps_table(steps, crit), &mut out);
        }
    } else {
        table_html(&overview_table(reports, records), &mut out);
    }
    out.push_str("<p class=\"note\">achieved and CPM count successful handshakes; latencies are handshake times per phase, from each attempt's scheduled start (open loop: the schedule's time, so a stall is not hidden — no coordinated omission; closed loop: the connect) to the handshake's completion.</p>\n</section>\n");

    out.push_str("<section id=\"warnings\">\n<h2>Warnings</h2>\n");
    let mut any = false;
    for r in reports {
        for w in &r.warnings {
            any = true;
            let _ = writeln!(
                out,
                "<p class=\"warning\">{}: {}</p>",
                escape(&cut(&record_name(r))),
                escape(w)
            );
        }
    }
    if !any {
        out.push_str("<p>none</p>\n");
    }
    out.push_str("</section>\n");

    out.push_str("<section id=\"plots\">\n<h2>Plots</h2>\n");
    let none: [Named<'_>; 0] = [];
    let kinds = [
        (
            "plot-spectrum",
            "Handshake latency by percentile",
            PlotKind::Spectrum,
        ),
        (
            "plot-timeline",
            "Connections per minute over time",
            PlotKind::Timeline,
        ),
        (
            "plot-workers",
            "Share of accepted connections per server worker",
            PlotKind::Workers,
        ),
    ];
    for (id, caption, kind) in kinds {
        figure(
            id,
            caption,
            plot_svg(kind, records, &none),
            &super::plot::long_names(kind, records, &none),
            &mut out,
        );
    }
    for (i, n) in records
        .iter()
        .filter(|n| n.record.run.command == "sweep")
        .enumerate()
    {
        let one = std::slice::from_ref(n);
        figure(
            &format!("plot-sweep-{i}"),
            &format!(
                "Sweep {}: offered vs achieved rate, the SLO's latency",
                cut(&n.name)
            ),
            plot_svg(PlotKind::Sweep, one, &none),
            &super::plot::long_names(PlotKind::Sweep, one, &none),
            &mut out,
        );
    }
    if let Some((a, b)) = &ab {
        figure(
            "plot-ab",
            "A vs B trials",
            plot_svg(PlotKind::Ab, a, b),
            &super::plot::long_names(PlotKind::Ab, a, b),
            &mut out,
        );
    }
    out.push_str("</section>\n");

    if let Some(c) = &c {
        out.push_str("<section id=\"comparison\">\n<h2>A vs B, every column</h2>\n");
        blocks_html(
            &super::compare::blocks(c, super::compare::Width::Wide),
            &mut out,
        );
        out.push_str("</section>\n");
    }

    out.push_str("<section id=\"details\">\n<h2>Details</h2>\n<h3>Every record and phase</h3>\n");
    table_html(&summary_table(reports), &mut out);
    for (n, (steps, knee, crit)) in &sweeps {
        let _ = writeln!(
            out,
            "<h3>Sweep {}: every step, as `connstorm sweep` printed it</h3>\n<pre>{}</pre>",
            escape(&cut(&n.name)),
            escape(&super::sweep::sweep(
                n.record,
                steps,
                knee.as_ref(),
                crit,
                n.record.run.server_cpus.len()
            ))
        );
    }
    blocks_html(&blocks(reports, counters), &mut out);
    out.push_str("</section>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{build_report, parse_bucket_edges};

    fn page(recs: &[RunRecord]) -> String {
        let edges = parse_bucket_edges("100us,1ms,10ms").unwrap();
        let reports: Vec<_> = recs
            .iter()
            .map(|r| build_report(r, "", &edges).unwrap())
            .collect();
        let named: Vec<_> = recs
            .iter()
            .map(|r| Named {
                name: r.label.clone(),
                record: r,
            })
            .collect();
        html(&reports, &named, Counters::Key)
    }

    /// The accept-queue wait is a histogram beside handshake, service and first byte in every
    /// output a record gives: the text report's latency table, the HTML details, the `.hlog`
    /// (tagged `accept_queue_wait`) and `compare`'s accept wait p50/p99 (latency phase).
    #[test]
    fn the_accept_queue_wait_is_in_the_report_html_hlog_and_compare() {
        let mut rec = RunRecord::example();
        let mut h = crate::record::new_latency_histogram();
        h.record_n(2_000_000, 90).unwrap();
        h.record_n(8_000_000, 10).unwrap();
        for p in &mut rec.phases {
            p.histograms.accept_queue_wait = Some(crate::record::encode_histogram(&h));
        }
        let r = build_report(&rec, "", &[1_000_000]).unwrap();
        let text = crate::render::report(
            std::slice::from_ref(&r),
            crate::render::ReportFormat::Text,
            Counters::Key,
        );
        assert!(text.contains("accept_queue_wait"), "{text}");
        let page = page(std::slice::from_ref(&rec));
        assert!(page.contains("accept_queue_wait"), "the HTML details");
        let mut buf = Vec::new();
        crate::render::write_hlog(&mut buf, &rec, 1).unwrap();
        let tagged: Vec<_> = crate::render::hlog::tests::intervals(&buf)
            .into_iter()
            .filter(|i| i.0.as_deref() == Some("accept_queue_wait"))
            .collect();
        assert_eq!(tagged.len(), 1, "one interval of the phase");
        assert_eq!(tagged[0].3.len(), 100);
        let names: Vec<&str> = crate::analysis::METRICS.iter().map(|m| m.0).collect();
        let values = crate::analysis::metric_values(&rec);
        let at = |n: &str| values[names.iter().position(|m| *m == n).unwrap()];
        let p50 = at("accept wait p50").unwrap();
        let p99 = at("accept wait p99").unwrap();
        assert!((p50 - 2_000.0).abs() < 2.0, "{p50} µs");
        assert!((p99 - 8_000.0).abs() < 8.0, "{p99} µs");
    }

    /// Every `<tag` in the page, by name.
    fn tags(html: &str) -> Vec<String> {
        html.split('<')
            .skip(1)
            .map(|s| {
                s.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '!' || *c == '/')
                    .collect::<String>()
                    .to_ascii_lowercase()
            })
            .collect()
    }

    #[test]
    fn one_record_page_has_every_section_and_inline_svg_plots() {
        let rec = RunRecord::example();
        let html = page(std::slice::from_ref(&rec));
        assert!(html.starts_with("<!DOCTYPE html>"));
        for id in HTML_SECTIONS {
            assert!(html.contains(&format!("<section id=\"{id}\">")), "no {id}");
        }
        for fig in ["plot-spectrum", "plot-timeline", "plot-workers"] {
            let start = html.find(&format!("<figure id=\"{fig}\">")).unwrap();
            let end = start + html[start..].find("</figure>").unwrap();
            assert!(html[start..end].contains("<svg"), "{fig} has no inline SVG");
        }
        // The summary row of the latency phase shows its measured p99, as the text report.
        let r = build_report(&rec, "", &[1_000_000]).unwrap();
        let p = r.phases.iter().find(|p| p.name == "latency").unwrap();
        let p99 = p.latency.iter().find(|l| l.which == "handshake").unwrap();
        assert!(html.contains(&format!(
            "<td>{}</td>",
            numfmt::ns(p99.summary.p99_ns as f64)
        )));
        // The example's fallback reason is a derived warning.
        let warnings =
            &html[html.find("id=\"warnings\"").unwrap()..html.find("id=\"plots\"").unwrap()];
        assert!(warnings.contains("class=\"warning\""), "{warnings}");
    }

    /// `--http --tls` records: the summary has response and TLS handshake columns (the HTML
    /// summary showed only the TCP handshake); plain records do not get them.
    #[test]
    fn an_http_tls_summary_has_response_and_tls_columns() {
        let plain = summary_table(&[build_report(&RunRecord::example(), "", &[]).unwrap()]);
        assert!(!plain.headers.iter().any(|h| h.starts_with("response")));
        let mut rec = RunRecord::example();
        let mut resp = crate::record::new_latency_histogram();
        resp.record(2_000_000).unwrap();
        let mut tls = crate::record::new_latency_histogram();
        tls.record(500_000).unwrap();
        let lat = &mut rec.phases[1];
        lat.http = Some(crate::record::HttpCounts {
            request: "GET /".into(),
            ..Default::default()
        });
        lat.tls = Some(crate::record::TlsCounts {
            handshakes: (lat.measured_secs * 1_000.0) as u64,
            ..Default::default()
        });
        lat.histograms.http_response = Some(crate::record::encode_histogram(&resp));
        lat.histograms.tls_handshake = Some(crate::record::encode_histogram(&tls));
        let t = summary_table(&[build_report(&rec, "", &[]).unwrap()]);
        let col = |name: &str| t.headers.iter().position(|h| h == name).unwrap();
        let row = t.rows.iter().find(|r| r[3] == "latency").unwrap();
        assert_eq!(row[col("response p50")], "2.00 ms");
        assert_eq!(row[col("TLS handshakes/s")], "1,000.0");
        assert_eq!(row[col("TLS handshake p99")], "500.2 µs");
        let peak = t.rows.iter().find(|r| r[3] == "peak").unwrap();
        assert_eq!(peak[col("TLS handshakes/s")], numfmt::NA);
    }

    /// `--tls-resume` records keep full and resumed handshakes apart: the summary's and the
    /// overview's TLS p99 show each (not the mixed p99, mostly the resumed ones'), and the
    /// header says so; a record without the split keeps the one mixed p99.
    #[test]
    fn the_tls_column_shows_full_and_resumed_apart_when_the_record_has_them() {
        let mut rec = RunRecord::example();
        let hist = |ns: u64, n: u64| {
            let mut h = crate::record::new_latency_histogram();
            h.record_n(ns, n).unwrap();
            h
        };
        let (full, resumed) = (hist(2_000_000, 15), hist(300_000, 585));
        let mut mixed = full.clone();
        mixed.add(&resumed).unwrap();
        let lat = &mut rec.phases[1];
        lat.tls = Some(crate::record::TlsCounts {
            handshakes: 600,
            full: 15,
            resumed: 585,
            ..Default::default()
        });
        lat.histograms.tls_handshake = Some(crate::record::encode_histogram(&mixed));
        lat.histograms.tls_full = Some(crate::record::encode_histogram(&full));
        lat.histograms.tls_resumed = Some(crate::record::encode_histogram(&resumed));
        let reports = [build_report(&rec, "", &[]).unwrap()];
        let split = "TLS handshake p99 (full / resumed)";
        let want = format!(
            "full {} / resumed {}",
            numfmt::ns(full.value_at_quantile(0.99) as f64),
            numfmt::ns(resumed.value_at_quantile(0.99) as f64)
        );
        assert_eq!(want, "full 2.00 ms / resumed 300.0 µs");
        let t = summary_table(&reports);
        let col = t.headers.iter().position(|h| h == split).unwrap();
        let row = t.rows.iter().find(|r| r[3] == "latency").unwrap();
        assert_eq!(row[col], want);
        let named = [Named {
            name: String::new(),
            record: &rec,
        }];
        let o = overview_table(&reports, &named);
        let col = o.headers.iter().position(|h| h == split).unwrap();
        let row = o.rows.iter().find(|r| r[1] == "latency").unwrap();
        assert_eq!(row[col], want);
        // Without the split: the mixed p99 under the plain header.
        let lat = &mut rec.phases[1];
        lat.histograms.tls_full = None;
        lat.histograms.tls_resumed = None;
        let t = summary_table(&[build_report(&rec, "", &[]).unwrap()]);
        let col = t
            .headers
            .iter()
            .position(|h| h == "TLS handshake p99")
            .unwrap();
        let row = t.rows.iter().find(|r| r[3] == "latency").unwrap();
        assert_eq!(row[col], numfmt::ns(mixed.value_at_quantile(0.99) as f64));
        assert!(!t.headers.iter().any(|h| h == split));
    }

    #[test]
    fn page_fetches_nothing() {
        let html = page(&[RunRecord::example()]);
        let t = tags(&html);
        for banned in ["script", "link", "img", "iframe", "object", "embed", "base"] {
            assert!(!t.iter().any(|x| x == banned), "<{banned}> in the page");
        }
        for needle in ["src=", "href=", "url(", "@import", "@font-face"] {
            assert!(!html.contains(needle), "{needle} in the page");
        }
        // URLs appear only as SVG namespace names (xmlns), which are never fetched.
        let mut rest = html.as_str();
        while let Some(i) = rest.find("http") {
            let before = &rest[..i];
            assert!(
                before.ends_with("xmlns=\"") || before.ends_with("xmlns:xlink=\""),
                "a URL: {}",
                &rest[i.saturating_sub(40)..(i + 60).min(rest.len())]
            );
            rest = &rest[i + 4..];
        }
    }

    #[test]
    fn tags_are_balanced() {
        let html = page(&[RunRecord::example()]);
        let t = tags(&html);
        for tag in [
            "html", "body", "section", "div", "table", "figure", "svg", "tr", "p",
        ] {
            let open = t.iter().filter(|x| *x == tag).count();
            let close = t.iter().filter(|x| **x == format!("/{tag}")).count();
            assert_eq!(open, close, "<{tag}> opened {open}, closed {close}");
        }
    }

    #[test]
    fn text_is_escaped() {
        let mut rec = RunRecord::example();
        rec.label = "<b>&x".to_string();
        rec.warnings.push("<script>alert(1)</script>".to_string());
        let html = page(&[rec]);
        assert!(!html.contains("<script>") && !html.contains("<b>&x"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    }

    #[test]
    fn ab_set_gets_a_strip_chart_and_a_comparison() {
        let mut recs = Vec::new();
        for (side, i) in [("old", 1), ("new", 1), ("old", 2), ("new", 2)] {
            // What `ab` writes: bench records labelled `<side>#<trial>`.
            let mut r = RunRecord::example();
            r.run.command = "bench".to_string();
            r.label = format!("{side}#{i}");
            recs.push(r);
        }
        let html = page(&recs);
        let start = html.find("<figure id=\"plot-ab\">").expect("no A/B figure");
        assert!(html[start..].contains("<svg"));
        assert!(html.contains("<section id=\"comparison\">"));
        // One side only is not an A/B set.
        let html = page(&recs[..1]);
        assert!(!html.contains("plot-ab") && !html.contains("id=\"comparison\""));
    }

    /// Where each section starts in `html`.
    fn section_at(html: &str, id: &str) -> usize {
        html.find(&format!("<section id=\"{id}\">"))
            .unwrap_or_else(|| panic!("no #{id}"))
    }

    /// Issue 37, "HTML report": the A/B verdict sat ~5,000 px down the page. The page opens
    /// with the verdict (connections/s first), then the summary at the default width (short side
    /// names), before warnings, plots and the every-column comparison.
    #[test]
    fn an_ab_page_opens_with_the_verdict_then_the_summary() {
        let mut recs = Vec::new();
        for i in 1..=3 {
            for side in ["old", "new"] {
                let mut r = RunRecord::example();
                r.run.command = "bench".to_string();
                r.label = format!("{side}#{i}");
                recs.push(r);
            }
        }
        let html = page(&recs);
        let at = |id: &str| section_at(&html, id);
        assert!(
            at("verdict") < at("summary")
                && at("summary") < at("warnings")
                && at("warnings") < at("plots")
                && at("plots") < at("comparison")
                && at("comparison") < at("details"),
            "sections out of order"
        );
        // Only the title comes before the verdict.
        let head = &html[html.find("<body>").unwrap()..at("verdict")];
        assert_eq!(tags(head), ["body", "h1", "/h1"], "{head}");
        let verdict = &html[at("verdict")..at("summary")];
        assert!(
            verdict.contains("<p class=\"lead\">verdict (B vs A): connections/s (peak phase)"),
            "{verdict}"
        );
        let summary = &html[at("summary")..at("warnings")];
        assert!(
            summary.contains("<th>A: old</th>") && summary.contains("<th>B: new</th>"),
            "{summary}"
        );
        assert!(
            !summary.contains("median [min"),
            "the wide table is further down"
        );
    }

    /// Issue 37, "capacity": a sweep's page states in its verdict that the generator, not the
    /// server, reached its limit, and its summary row marks the client-limited step.
    #[test]
    fn a_sweep_page_states_who_limited_it_in_the_verdict() {
        let mut rec = RunRecord::example();
        rec.run.command = "sweep".to_string();
        rec.warnings.clear();
        rec.config = serde_json::json!({"slo": "p99<1ms", "max_errors": 0.001});
        rec.phases = (1..=4u64)
            .map(|i| {
                let mut h = crate::record::new_latency_histogram();
                h.record_n(20_000 * i, 100).unwrap();
                let rate = 1_000.0 * i as f64;
                let busy = if i >= 3 { 980_000_000 } else { 400_000_000 };
                let mut p = crate::record::PhaseRecord {
                    name: format!("step-{i}"),
                    pattern: crate::record::Pattern::Open {
                        rate_per_sec: rate,
                        arrival: crate::record::Arrival::Uniform,
                    },
                    offered_per_sec: Some(rate),
                    achieved_per_sec: Some(rate),
                    attempts: 100,
                    successes: 100,
                    histograms: crate::record::Histograms::encode(&h, &h, None),
                    ..crate::record::PhaseRecord::default()
                };
                p.cpu.load =
                    crate::record::SideCpu::new(0, 0, 1_000_000_000, 1, 100).with_run_ns(busy, 100);
                p
            })
            .collect();
        let html = page(std::slice::from_ref(&rec));
        let verdict = &html[section_at(&html, "verdict")..section_at(&html, "summary")];
        assert!(
            verdict.contains("knee: not reached — the generator, not the server, reached its limit at step-3 (load CPU 98%); the server&#39;s capacity is above 120,000 CPM = 2,000 conn/s"),
            "{verdict}"
        );
        let summary = &html[section_at(&html, "summary")..section_at(&html, "warnings")];
        assert!(
            summary.contains("<th>handshake p99</th>")
                && summary.contains("yes — client-limited: load CPU 98%"),
            "{summary}"
        );
    }

    #[test]
    fn a_plot_that_cannot_be_drawn_says_why() {
        let mut rec = RunRecord::example();
        for p in &mut rec.phases {
            p.server = None;
        }
        let html = page(&[rec]);
        let start = html.find("<figure id=\"plot-workers\">").unwrap();
        let fig = &html[start..start + html[start..].find("</figure>").unwrap()];
        assert!(
            !fig.contains("<svg") && fig.contains("class=\"note\""),
            "{fig}"
        );
    }
}
