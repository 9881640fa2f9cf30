//! The text of the exchange after the handshake in a load report: the TLS section and the
//! HTTP section.

use crate::http::HttpReport;
use crate::latency::HistogramSummary;
use crate::tls::TlsReport;

/// `n` over the measured seconds with one decimal, or `-` when nothing was measured.
fn per_sec(n: u64, measured_secs: f64) -> String {
    if measured_secs > 0.0 {
        common::numfmt::fixed(n as f64 / measured_secs, 1)
    } else {
        "-".into()
    }
}

/// Writes the TLS part of a load report.
pub(super) fn tls(
    out: &mut std::fmt::Formatter<'_>,
    t: &TlsReport,
    measured_secs: f64,
) -> std::fmt::Result {
    use common::numfmt;
    let per_sec = |n: u64| per_sec(n, measured_secs);
    writeln!(
        out,
        "  tls:         {} handshakes ({}/s): {} full ({}/s), {} resumed ({}/s); TLS 1.3 {}, TLS 1.2 {}; ALPN agreed {}",
        numfmt::count(t.handshakes),
        per_sec(t.handshakes),
        numfmt::count(t.full),
        per_sec(t.full),
        numfmt::count(t.resumed),
        per_sec(t.resumed),
        numfmt::count(t.tls13),
        numfmt::count(t.tls12),
        numfmt::count(t.alpn_agreed)
    )?;
    if !t.cipher_suites.is_empty() {
        let v: Vec<String> = t
            .cipher_suites
            .iter()
            .map(|(s, n)| format!("{s} {}", numfmt::count(*n)))
            .collect();
        writeln!(out, "               cipher suites agreed: {}", v.join(", "))?;
    }
    if !t.groups.is_empty() {
        let v: Vec<String> = t
            .groups
            .iter()
            .map(|(g, n)| format!("{g} {}", numfmt::count(*n)))
            .collect();
        writeln!(
            out,
            "               key exchange groups agreed: {}",
            v.join(", ")
        )?;
    }
    writeln!(out, "               offered: {}", t.options.offer_line())?;
    super::hist(
        out,
        "tls handshake (TCP connected -> done)   ",
        &t.summary(),
    )?;
    super::overflow(out, &t.handshake_overflow)?;
    // With resumption asked for, full and resumed apart: the line above mixes two
    // distributions (a resumed handshake skips the certificate and its signature).
    if t.options.resume != crate::config::Resume::Off {
        super::hist(
            out,
            "  of them, full handshakes              ",
            &HistogramSummary::of(&t.full_handshake),
        )?;
        super::hist(
            out,
            "  of them, resumed handshakes           ",
            &HistogramSummary::of(&t.resumed_handshake),
        )?;
    }
    Ok(())
}

/// Writes the HTTP part of a load report: requests and responses per second, status classes
/// and non-2xx codes, parse errors (each a failure class), bytes, and the two latency histograms.
pub(super) fn http(
    out: &mut std::fmt::Formatter<'_>,
    h: &HttpReport,
    measured_secs: f64,
) -> std::fmt::Result {
    use common::numfmt;
    use std::fmt::Write;
    let per_sec = |n: u64| per_sec(n, measured_secs);
    writeln!(
        out,
        "  http:        {} requests, {} responses ({} responses/s), {} parse errors",
        numfmt::count(h.requests),
        numfmt::count(h.responses),
        per_sec(h.responses),
        numfmt::count(h.parse_errors_total())
    )?;
    let mut classes = String::new();
    for (c, n) in &h.status_classes {
        let _ = write!(classes, " {c} {}", numfmt::count(*n));
    }
    let mut codes = String::new();
    for (c, n) in &h.non_2xx_codes {
        let _ = write!(codes, " {c}: {}", numfmt::count(*n));
    }
    writeln!(
        out,
        "               status:{}{}",
        if classes.is_empty() {
            " none"
        } else {
            &classes
        },
        if codes.is_empty() {
            String::new()
        } else {
            format!(" (non-2xx by code:{codes})")
        }
    )?;
    for (name, n) in &h.parse_errors {
        writeln!(
            out,
            "               parse error {name}: {} (a failure: the response could not be read)",
            numfmt::count(*n)
        )?;
    }
    if h.early_responses > 0 {
        writeln!(
            out,
            "               {} responses came before their request was written completely (the server answered early, e.g. 413, and stopped reading)",
            numfmt::count(h.early_responses)
        )?;
    }
    writeln!(
        out,
        "               bytes: {} written to the socket (accepted by send(2), not all sent: see docs/http.md), {} received ({} body bytes in complete responses)",
        numfmt::count(h.bytes_sent),
        numfmt::count(h.bytes_received),
        numfmt::count(h.body_bytes)
    )?;
    let (resp, fb) = h.summaries();
    super::hist(out, "response (scheduled start -> complete)  ", &resp)?;
    super::overflow(out, &h.response_overflow)?;
    super::hist(out, "first byte (scheduled start -> 1st byte)", &fb)?;
    super::overflow(out, &h.first_byte_overflow)
}
