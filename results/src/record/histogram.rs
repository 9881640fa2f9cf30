//! Latency histograms in their stored form.
//!
//! A run record stores each histogram as HdrHistogram's V2 + DEFLATE encoding in standard base64:
//! exactly the payload of one `.hlog` interval line, so any HdrHistogram implementation (Java's
//! `HistogramLogProcessor`, Python's `hdrh`, Go's `hdrhistogram-go`) can decode it. Values are
//! nanoseconds.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// Lowest discernible value of [`new_latency_histogram`]: 1 ns.
const LOWEST_NS: u64 = 1;
/// Highest trackable value of [`new_latency_histogram`]: 1 hour in ns (larger values saturate).
const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;
/// Significant decimal digits of [`new_latency_histogram`]: 3 (0.1% value resolution).
const SIGFIG: u8 = 3;

/// Why an encoded histogram could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    /// The text is not standard base64 (`A-Z a-z 0-9 + /`, `=` padding).
    #[error("histogram is not valid base64 ({source}); it must be the V2+DEFLATE payload of an .hlog line, copied whole")]
    Base64 {
        /// The base64 decoder's complaint.
        #[source]
        source: base64::DecodeError,
    },
    /// The bytes are not an HdrHistogram V2 (compressed) histogram, or are cut short.
    #[error("histogram payload is not an HdrHistogram V2 encoding ({source}); the record may be damaged: re-run or restore it")]
    Format {
        /// HdrHistogram's complaint (bad cookie, truncated, unsupported feature...).
        #[source]
        source: hdrhistogram::serialization::DeserializeError,
    },
}

/// A histogram for latencies in nanoseconds: 1 ns to 1 h at 3 significant digits (values above
/// 1 h are clamped by [`Histogram::saturating_record`]; about 200 KiB of counters).
pub fn new_latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG)
        .expect("constant bounds are valid: 1 <= 1 ns < 1 h, 3 significant digits")
}

/// Encodes a histogram as V2 + DEFLATE, standard base64 (the `.hlog` payload).
///
/// # Panics
/// If a count exceeds `i64::MAX`, which the V2 format cannot hold (never at real rates).
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("V2 encoding into memory fails only for counts above i64::MAX");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes what [`encode_histogram`] wrote (or any V2 / V2 + DEFLATE histogram in base64, e.g. from
/// Java).
///
/// Surrounding whitespace is ignored.
///
/// # Errors
/// [`HistogramError::Base64`] for text that is not base64, [`HistogramError::Format`] for bytes
/// that are not an HdrHistogram V2 encoding (wrong cookie, cut short).
pub fn decode_histogram(s: &str) -> Result<Histogram<u64>, HistogramError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|source| HistogramError::Base64 { source })?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|source| HistogramError::Format { source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Histogram<u64> {
        let mut h = new_latency_histogram();
        for i in 1..=10_000u64 {
            h.record(i * 1_000 + i % 7).unwrap();
        }
        h
    }

    #[test]
    fn encode_then_decode_gives_the_same_histogram() {
        let h = sample();
        let back = decode_histogram(&encode_histogram(&h)).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.value_at_quantile(0.99), h.value_at_quantile(0.99));
    }

    #[test]
    fn decode_of_garbage_says_which_layer_failed() {
        assert!(matches!(
            decode_histogram("not base64 !!"),
            Err(HistogramError::Base64 { .. })
        ));
        assert!(matches!(
            decode_histogram("aGVsbG8gd29ybGQ="),
            Err(HistogramError::Format { .. })
        ));
        let cut = encode_histogram(&sample());
        let cut = &cut[..cut.len() / 2 / 4 * 4];
        assert!(matches!(
            decode_histogram(cut),
            Err(HistogramError::Format { .. })
        ));
    }
}
