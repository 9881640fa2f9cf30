//! One self-contained HTML page for a set of run records (`connstorm report --format html`).
//!
//! Shape of the page, top to bottom, each a `<section id=...>`:
//! - `summary`: one row per record and phase: command, engine, pattern, achieved connections/s,
//!   CPM, handshake p50/p90/p99/p99.9/max;
//! - `warnings`: every record's warnings (derived and stored, as in the text report), or "none";
//! - `plots`: the latency spectrum, CPM timeline and per-worker accept share as inline SVG
//!   (plotters' SVG backend, the same pictures `connstorm plot` draws), plus the sweep curve for
//!   each sweep record and the A/B strip chart when the set is an `ab` run's two sides;
//! - `comparison` (A/B sets only): the `compare` verdict table;
//! - `details`: the full text report of each record (host, per-phase percentile and bucket
//!   tables, kernel counters) as HTML tables.
//!
//! Self-contained means no fetch at all: styles inline in `<style>`, no `<script>`, no external
//! stylesheet, font or image; SVG text uses the `sans-serif` family the browser has.
//! A plot a record set cannot give (no per-worker accepts with `--target`, say) is replaced by
//! a line saying why.

use std::fmt::Write as _;

use super::compare::{comparison, CompareFormat};
use super::plot::{plot_svg, Named, PlotKind};
use super::report::{blocks, describe_pattern, Counters, RecordReport};
use super::table::{Block, Table};
use crate::numfmt;
use crate::record::RunRecord;

/// The sections every page has, by `id`, in page order (`comparison` is added for A/B sets).
pub const HTML_SECTIONS: [&str; 4] = ["summary", "warnings", "plots", "details"];

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

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{font-size:1.3em;border-bottom:1px solid #ccc;margin-top:1.6em}h3{font-size:1.1em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}th{background:#f0f0f0}
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
        headers.extend(["TLS handshakes/s", "TLS handshake p99"]);
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
                row.push(of("tls_handshake", |s| s.p99_ns));
            }
            t.row(row);
        }
    }
    t
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

fn figure(id: &str, caption: &str, svg: Result<String, super::PlotError>, out: &mut String) {
    let _ = writeln!(
        out,
        "<figure id=\"{id}\">\n<figcaption>{}</figcaption>",
        escape(caption)
    );
    match svg {
        Ok(svg) => out.push_str(svg.trim()),
        Err(e) => {
            let _ = write!(out, "<p class=\"note\">{}</p>", escape(&e.to_string()));
        }
    }
    out.push_str("\n</figure>\n");
}

/// The page for these records: `reports` are their [`build_report`](super::build_report) summaries
/// and `records` the same records with legend names, in the same order; `counters` picks the kernel
/// counters listed in `details`. Returns a complete UTF-8 HTML5 document.
pub fn html(reports: &[RecordReport], records: &[Named<'_>], counters: Counters) -> String {
    let mut out = String::new();
    let title = match reports {
        [one] => format!("connstorm report: {}", record_name(one)),
        many => format!("connstorm report: {} records", many.len()),
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );

    out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
    table_html(&summary_table(reports), &mut out);
    out.push_str("<p class=\"note\">achieved and CPM count successful handshakes; latencies are handshake times per phase, from each attempt's scheduled start (open loop: the schedule's time, so a stall is not hidden — no coordinated omission; closed loop: the connect) to the handshake's completion.</p>\n</section>\n");

    out.push_str("<section id=\"warnings\">\n<h2>Warnings</h2>\n");
    let mut any = false;
    for r in reports {
        for w in &r.warnings {
            any = true;
            let _ = writeln!(
                out,
                "<p class=\"warning\">{}: {}</p>",
                escape(&record_name(r)),
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
    figure(
        "plot-spectrum",
        "Handshake latency by percentile",
        plot_svg(PlotKind::Spectrum, records, &none),
        &mut out,
    );
    figure(
        "plot-timeline",
        "Connections per minute over time",
        plot_svg(PlotKind::Timeline, records, &none),
        &mut out,
    );
    figure(
        "plot-workers",
        "Share of accepted connections per server worker",
        plot_svg(PlotKind::Workers, records, &none),
        &mut out,
    );
    for (i, n) in records
        .iter()
        .filter(|n| n.record.run.command == "sweep")
        .enumerate()
    {
        figure(
            &format!("plot-sweep-{i}"),
            &format!("Sweep {}: offered vs achieved rate, handshake p99", n.name),
            plot_svg(PlotKind::Sweep, std::slice::from_ref(n), &none),
            &mut out,
        );
    }
    let ab = ab_sides(records);
    if let Some((a, b)) = &ab {
        figure(
            "plot-ab",
            "A vs B trials",
            plot_svg(PlotKind::Ab, a, b),
            &mut out,
        );
    }
    out.push_str("</section>\n");

    if let Some((a, b)) = &ab {
        let recs = |v: &[Named<'_>]| v.iter().map(|n| n.record.clone()).collect::<Vec<_>>();
        let c = crate::analysis::compare(
            &recs(a),
            &recs(b),
            (None, None),
            &crate::analysis::CompareOptions::default(),
        );
        let _ = writeln!(
            out,
            "<section id=\"comparison\">\n<h2>A vs B</h2>\n<pre>{}</pre>\n</section>",
            escape(&comparison(&c, CompareFormat::Text))
        );
    }

    out.push_str("<section id=\"details\">\n<h2>Details</h2>\n");
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
