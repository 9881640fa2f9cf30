//! The HTTP results of a run (`--http`, [`HttpReport`]): the workers' exchanges merged, by
//! status class and code, parse errors, bytes and the two latency histograms.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Exchanges;
use crate::config::HttpRequest;
use crate::failures::ParseError;
use crate::latency::{summary, HistogramSummary, Overflow};

/// The HTTP results of a run (`--http`). Counts are of the measured window unless named
/// `total_*`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HttpReport {
    /// The request's method and path.
    pub request: String,
    /// Requests written completely.
    pub requests: u64,
    /// Complete responses (any status).
    pub responses: u64,
    /// Complete responses by status class: `1xx` (101 only) .. `5xx`, and `other` for codes
    /// outside 100–599; classes without a response are left out.
    pub status_classes: BTreeMap<String, u64>,
    /// Complete responses by status code, every code but 2xx.
    pub non_2xx_codes: BTreeMap<u16, u64>,
    /// Responses that could not be read, by [`ParseError::name`] (a failure class each).
    pub parse_errors: BTreeMap<String, u64>,
    /// Complete responses (in `responses`) that came before their request was written
    /// completely: the server answered early (e.g. 413) and stopped reading. So `responses`
    /// can exceed `requests` by at most this.
    pub early_responses: u64,
    /// Request bytes written to the socket (accepted by `send(2)` into the send buffer), of
    /// requests cut short too. Not all of them left the host: what was still in the send buffer
    /// when the server reset the connection, or when `--close rst` closed it, is discarded by the
    /// kernel (`tcp_disconnect` purges the write queue).
    pub bytes_sent: u64,
    /// Response bytes read (heads, bodies, chunk framing).
    pub bytes_received: u64,
    /// Body bytes of complete responses (for chunked ones the chunk data only).
    pub body_bytes: u64,
    /// Whole run (warm-up included): requests written completely.
    pub total_requests: u64,
    /// Whole run: complete responses.
    pub total_responses: u64,
    /// Whole run: parse errors, all kinds.
    pub total_parse_errors: u64,
    /// Response latency, ns: intended start → response complete (measured responses).
    #[serde(serialize_with = "summary")]
    pub response: hdrhistogram::Histogram<u64>,
    /// Time to first byte, ns: intended start → first response byte read.
    #[serde(serialize_with = "summary")]
    pub first_byte: hdrhistogram::Histogram<u64>,
    /// Values above the response histogram's range.
    pub response_overflow: Overflow,
    /// Values above the first-byte histogram's range.
    pub first_byte_overflow: Overflow,
}

impl HttpReport {
    /// The report of the merged workers.
    pub(crate) fn of(req: &HttpRequest, h: Exchanges) -> HttpReport {
        let m = &h.measured;
        let mut status_classes = BTreeMap::new();
        let mut non_2xx_codes = BTreeMap::new();
        for (code, &n) in m.by_code.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let class = if (100..600).contains(&code) {
                format!("{}xx", code / 100)
            } else {
                "other".to_string()
            };
            *status_classes.entry(class).or_insert(0) += n;
            if !(200..300).contains(&code) {
                non_2xx_codes.insert(code as u16, n);
            }
        }
        HttpReport {
            request: format!("{} {}", req.method, req.path),
            requests: m.requests,
            responses: m.responses,
            status_classes,
            non_2xx_codes,
            parse_errors: ParseError::ALL
                .iter()
                .zip(m.parse_errors)
                .filter(|&(_, n)| n > 0)
                .map(|(e, n)| (e.name().to_string(), n))
                .collect(),
            early_responses: m.early_responses,
            bytes_sent: m.bytes_sent,
            bytes_received: m.bytes_received,
            body_bytes: m.body_bytes,
            total_requests: h.total.requests,
            total_responses: h.total.responses,
            total_parse_errors: h.total.parse_errors.iter().sum(),
            response_overflow: h.response.overflow(),
            first_byte_overflow: h.first_byte.overflow(),
            response: h.response.hist,
            first_byte: h.first_byte.hist,
        }
    }

    /// Responses with a 2xx status.
    pub fn ok(&self) -> u64 {
        self.status_classes.get("2xx").copied().unwrap_or(0)
    }

    /// Parse errors, all kinds.
    pub fn parse_errors_total(&self) -> u64 {
        self.parse_errors.values().sum()
    }

    /// Summaries of the two histograms (response, first byte).
    pub fn summaries(&self) -> (HistogramSummary, HistogramSummary) {
        (
            HistogramSummary::of(&self.response),
            HistogramSummary::of(&self.first_byte),
        )
    }
}
