//! A latency objective and the latency it names: `p99<1ms` (the TCP handshake, the default),
//! `response p99<1ms`, `service p99.9<=500us`, `first-byte p99<2ms`, `tls p99<5ms`,
//! `accept-queue-wait p99<100us`.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::SweepError;
use crate::record::{Latency, PhaseRecord, RunRecord};

/// Which latency an SLO bounds ([`Slo::latency`]). Each maps to one histogram of a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SloLatency {
    /// Scheduled start → connect completion (the `handshake` histogram): the default.
    #[default]
    Handshake,
    /// `socket()` → connect completion (`service`): the handshake without the generator's lag.
    Service,
    /// `--http`: scheduled start → response read complete (`http_response`).
    Response,
    /// Scheduled start → first byte from the server: the HTTP response's (`http_first_byte`)
    /// with `--http`, else the greeting's (`first_byte`, server `--mode greet`).
    FirstByte,
    /// `--tls`: TCP connected → TLS handshake done (`tls_handshake`).
    TlsHandshake,
    /// `bench`'s own server and the epoll load engine: the client's handshake completion → the
    /// server's accept (`accept_queue_wait`); a record without it refuses the SLO
    /// ([`SloLatency::missing_from`]).
    AcceptQueueWait,
}

/// Every latency an SLO may name, in the order help texts list them.
pub const SLO_LATENCIES: [SloLatency; 6] = [
    SloLatency::Handshake,
    SloLatency::Service,
    SloLatency::Response,
    SloLatency::FirstByte,
    SloLatency::TlsHandshake,
    SloLatency::AcceptQueueWait,
];

impl SloLatency {
    /// The name an SLO writes and a table header shows: `handshake`, `service`, `response`,
    /// `first-byte`, `tls-handshake`, `accept-queue-wait`.
    pub fn name(self) -> &'static str {
        match self {
            SloLatency::Handshake => "handshake",
            SloLatency::Service => "service",
            SloLatency::Response => "response",
            SloLatency::FirstByte => "first-byte",
            SloLatency::TlsHandshake => "tls-handshake",
            SloLatency::AcceptQueueWait => "accept-queue-wait",
        }
    }

    /// Words for people: `handshake`, `response`, `TLS handshake`, `accept-queue wait`, …
    pub fn words(self) -> &'static str {
        match self {
            SloLatency::Handshake => "handshake",
            SloLatency::Service => "service",
            SloLatency::Response => "response",
            SloLatency::FirstByte => "first byte",
            SloLatency::TlsHandshake => "TLS handshake",
            SloLatency::AcceptQueueWait => "accept-queue wait",
        }
    }

    /// The latency named by `word` (case, `_`, `-` and spaces do not matter; `tls`, `ttfb`,
    /// `http-response`, `accept-queue` are accepted too), or `None`.
    pub fn from_name(word: &str) -> Option<SloLatency> {
        let w: String = word
            .trim()
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c == '_' || c == ' ' { '-' } else { c })
            .collect();
        Some(match w.as_str() {
            "handshake" | "tcp-handshake" | "connect" => SloLatency::Handshake,
            "service" => SloLatency::Service,
            "response" | "http-response" | "http" => SloLatency::Response,
            "first-byte" | "firstbyte" | "ttfb" | "http-first-byte" => SloLatency::FirstByte,
            "tls" | "tls-handshake" => SloLatency::TlsHandshake,
            "accept-queue-wait" | "accept-queue" | "accept-wait" => SloLatency::AcceptQueueWait,
            _ => return None,
        })
    }

    /// The record histogram of this latency in `phase` (`None` when there is none to read).
    pub fn histogram_of(self, phase: &PhaseRecord) -> Option<Latency> {
        Some(match self {
            SloLatency::Handshake => Latency::Handshake,
            SloLatency::Service => Latency::Service,
            SloLatency::Response => Latency::HttpResponse,
            SloLatency::FirstByte if phase.histograms.http_first_byte.is_some() => {
                Latency::HttpFirstByte
            }
            SloLatency::FirstByte => Latency::FirstByte,
            SloLatency::TlsHandshake => Latency::TlsHandshake,
            SloLatency::AcceptQueueWait => Latency::AcceptQueueWait,
        })
    }

    /// The phase's histogram of this latency (`None`: the phase has none, or it does not
    /// decode).
    pub fn decode(self, phase: &PhaseRecord) -> Option<Histogram<u64>> {
        phase
            .histograms
            .decode(self.histogram_of(phase)?)
            .ok()
            .flatten()
    }

    /// What a run must do to record this latency (`None`: every run records it).
    pub fn needs(self) -> Option<&'static str> {
        match self {
            SloLatency::Handshake | SloLatency::Service => None,
            SloLatency::Response => Some("--http (a request per connection)"),
            SloLatency::FirstByte => {
                Some("--http, or a server that greets (--mode greet), for a first byte")
            }
            SloLatency::TlsHandshake => Some("--tls (a TLS handshake per connection)"),
            SloLatency::AcceptQueueWait => Some(
                "the sweep's own server (no --target), the epoll load engine (--load-engine epoll, or auto, which the SLO turns to epoll) and --accept-wait on (the default; off stamps nothing)",
            ),
        }
    }

    /// Why `rec` cannot be judged on this latency, or `None` when every open-loop phase that
    /// measured something has its histogram.
    pub fn missing_from(self, rec: &RunRecord) -> Option<SweepError> {
        let lacks = rec
            .phases
            .iter()
            .filter(|p| matches!(p.pattern, crate::record::Pattern::Open { .. }))
            .filter(|p| p.successes > 0)
            .find(|p| {
                self.histogram_of(p)
                    .is_none_or(|h| p.histograms.encoded(h).is_none())
            })?;
        Some(SweepError::SloLatency {
            latency: self.name().to_string(),
            why: format!(
                "phase {} of the record has no {} latency histogram; it is recorded with {}",
                lacks.name,
                self.words(),
                self.needs().unwrap_or("every run")
            ),
        })
    }
}

/// A latency objective: the `quantile` of the [`SloLatency`] it names must stay below (or at)
/// `max_ns`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// Which latency (`handshake` unless the SLO names another).
    #[serde(default)]
    pub latency: SloLatency,
    /// Quantile, 0 < q < 1 (`p99` → 0.99).
    pub quantile: f64,
    /// Upper bound in ns.
    pub max_ns: u64,
    /// `true` for `<=`, `false` for `<`.
    pub inclusive: bool,
    /// The text it was parsed from, normalized (`p99<1ms`, `response p99<1ms`).
    pub text: String,
}

impl Slo {
    /// Parses `p99<1ms`, `p99.9<=500us`, `p50<200µs`, `p99 < 2.5ms`, each optionally after the
    /// latency it bounds: `response p99<1ms`, `tls-handshake p99<5ms` ([`SloLatency::from_name`];
    /// handshake when none is named). Units: `ns`, `us`/`µs`, `ms`, `s`.
    ///
    /// # Errors
    /// [`SweepError::Slo`] naming what is wrong.
    pub fn parse(text: &str) -> Result<Slo, SweepError> {
        let err = |why: &str| SweepError::Slo {
            text: text.to_string(),
            why: why.to_string(),
        };
        // The percentile is the first `p` followed by a digit; what comes before names the
        // latency.
        let start = text
            .char_indices()
            .find(|&(i, c)| {
                (c == 'p' || c == 'P')
                    && text[i + 1..].starts_with(|d: char| d.is_ascii_digit())
                    && text[..i]
                        .chars()
                        .next_back()
                        .is_none_or(|b| !b.is_alphanumeric())
            })
            .map(|(i, _)| i)
            .ok_or_else(|| {
                err("it needs a percentile like `p99`, optionally after the latency it bounds (`response p99<1ms`)")
            })?;
        let named = text[..start].trim();
        let latency = if named.is_empty() {
            SloLatency::Handshake
        } else {
            SloLatency::from_name(named).ok_or_else(|| {
                err(&format!(
                    "{named:?} is no latency: name one of {} (handshake when none is named)",
                    SLO_LATENCIES.map(SloLatency::name).join(", ")
                ))
            })?
        };
        let t: String = text[start + 1..]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let (pct, bound, inclusive) = if let Some((p, b)) = t.split_once("<=") {
            (p, b, true)
        } else if let Some((p, b)) = t.split_once('<') {
            (p, b, false)
        } else {
            return Err(err("it needs `<` or `<=` between percentile and latency"));
        };
        let pct: f64 = pct
            .parse()
            .map_err(|_| err("the percentile is not a number"))?;
        if pct.is_nan() || pct <= 0.0 || pct >= 100.0 {
            return Err(err("the percentile must be above 0 and below 100"));
        }
        // "p99<-1ms", "p99<1e400s" and "p99<1ms,p99<2ms" were all told "the latency needs a
        // unit", which they have: say what the bound must be and echo it.
        let max_ns = super::parse_latency_ns(bound).ok_or_else(|| {
            err(&format!(
                "the latency bound {bound:?} is not a number above 0 with a unit (ns, us, ms \
                 or s)"
            ))
        })?;
        if max_ns == 0 {
            return Err(err("the latency bound must be above zero"));
        }
        let rule = format!("p{pct}{}{bound}", if inclusive { "<=" } else { "<" });
        Ok(Slo {
            latency,
            quantile: pct / 100.0,
            max_ns,
            inclusive,
            text: if named.is_empty() {
                rule
            } else {
                format!("{} {rule}", latency.name())
            },
        })
    }

    /// Whether a latency (ns) at the SLO's quantile meets it.
    pub fn met_by(&self, latency_ns: u64) -> bool {
        if self.inclusive {
            latency_ns <= self.max_ns
        } else {
            latency_ns < self.max_ns
        }
    }

    /// The column a table shows the SLO's figure in: `handshake p99`, `response p99.9`.
    pub fn column(&self) -> String {
        format!("{} p{}", self.latency.name(), self.quantile * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_parses_forms_and_refuses_nonsense() {
        let s = Slo::parse("p99<1ms").unwrap();
        assert_eq!(
            (s.latency, s.quantile, s.max_ns, s.inclusive),
            (SloLatency::Handshake, 0.99, 1_000_000, false)
        );
        let s = Slo::parse(" p99.9 <= 500us ").unwrap();
        assert!((s.quantile - 0.999).abs() < 1e-12);
        assert_eq!((s.max_ns, s.inclusive), (500_000, true));
        assert_eq!(Slo::parse("p50<200µs").unwrap().max_ns, 200_000);
        for bad in [
            "99<1ms", "p99>1ms", "p100<1ms", "p99<1", "p99<0ms", "pxx<1ms",
        ] {
            let e = Slo::parse(bad).unwrap_err();
            assert!(e.to_string().contains("p99<1ms"), "{bad}: {e}");
        }
        assert!(s.met_by(500_000) && !Slo::parse("p99<1ms").unwrap().met_by(1_000_000));
        // Bad CLI values: a negative, overflowing or listed bound is named as it was given.
        for (bad, bound) in [
            ("p99<-1ms", "\"-1ms\""),
            ("p99<1", "\"1\""),
            ("p99<1ms,p99<2ms", "\"1ms,p99<2ms\""),
        ] {
            let e = Slo::parse(bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!(
                    "the latency bound {bound} is not a number above 0"
                )),
                "{bad}: {e}"
            );
        }
    }

    /// Issue 37: `--slo 'response p99<1ms'` was "invalid SLO … must start with a percentile".
    /// An SLO names its latency; the table column says which.
    #[test]
    fn an_slo_names_its_latency_and_handshake_is_the_default() {
        for (text, latency, normalized) in [
            ("response p99<1ms", SloLatency::Response, "response p99<1ms"),
            (
                "Response  p99 < 1ms",
                SloLatency::Response,
                "response p99<1ms",
            ),
            (
                "service p99.9<=500us",
                SloLatency::Service,
                "service p99.9<=500us",
            ),
            (
                "first byte p99<2ms",
                SloLatency::FirstByte,
                "first-byte p99<2ms",
            ),
            (
                "tls p99<5ms",
                SloLatency::TlsHandshake,
                "tls-handshake p99<5ms",
            ),
            (
                "TLS handshake p99<5ms",
                SloLatency::TlsHandshake,
                "tls-handshake p99<5ms",
            ),
            (
                "accept-queue wait p99<100us",
                SloLatency::AcceptQueueWait,
                "accept-queue-wait p99<100us",
            ),
            (
                "handshake p99<1ms",
                SloLatency::Handshake,
                "handshake p99<1ms",
            ),
            ("p99<1ms", SloLatency::Handshake, "p99<1ms"),
        ] {
            let s = Slo::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(
                (s.latency, s.text.as_str()),
                (latency, normalized),
                "{text}"
            );
        }
        assert_eq!(Slo::parse("p99<1ms").unwrap().column(), "handshake p99");
        assert_eq!(
            Slo::parse("response p99.9<1ms").unwrap().column(),
            "response p99.9"
        );
        let e = Slo::parse("queue p99<1ms").unwrap_err().to_string();
        assert!(
            e.contains("\"queue\" is no latency") && e.contains("accept-queue-wait"),
            "{e}"
        );
    }

    /// The response SLO reads the response histogram, first byte the HTTP one when there is
    /// one, the accept-queue wait its own (issue 37: refused before it was recorded); a record
    /// without the histogram is refused naming what records it.
    #[test]
    fn each_latency_selects_its_histogram() {
        let mut rec = RunRecord::example();
        let p = &rec.phases[1];
        assert_eq!(
            SloLatency::Response.histogram_of(p),
            Some(Latency::HttpResponse)
        );
        assert_eq!(
            SloLatency::FirstByte.histogram_of(p),
            Some(Latency::FirstByte)
        );
        assert_eq!(
            SloLatency::AcceptQueueWait.histogram_of(p),
            Some(Latency::AcceptQueueWait)
        );
        let e = SloLatency::Response.missing_from(&rec).unwrap().to_string();
        assert!(
            e.contains("no response latency histogram") && e.contains("--http"),
            "{e}"
        );
        let e = SloLatency::AcceptQueueWait
            .missing_from(&rec)
            .unwrap()
            .to_string();
        assert!(
            e.contains("no accept-queue wait latency histogram")
                && e.contains("--load-engine epoll"),
            "{e}"
        );
        // With the histogram in every open-loop phase, the SLO judges on it: a p99 of 8 ms
        // fails `accept-queue-wait p99<5ms` and meets `<10ms`, whatever the handshake says.
        let mut h = crate::record::new_latency_histogram();
        h.record_n(1_000_000, 90).unwrap();
        h.record_n(8_000_000, 10).unwrap();
        for p in &mut rec.phases {
            p.histograms.accept_queue_wait = Some(crate::record::encode_histogram(&h));
        }
        assert!(SloLatency::AcceptQueueWait.missing_from(&rec).is_none());
        let p99 = SloLatency::AcceptQueueWait
            .decode(&rec.phases[1])
            .unwrap()
            .value_at_quantile(0.99);
        assert!(!Slo::parse("accept-queue-wait p99<5ms").unwrap().met_by(p99));
        assert!(Slo::parse("accept-queue-wait p99<10ms")
            .unwrap()
            .met_by(p99));
        assert!(SloLatency::Handshake.missing_from(&rec).is_none());
        let h = crate::record::new_latency_histogram();
        rec.phases[1].histograms.http_first_byte = Some(crate::record::encode_histogram(&h));
        assert_eq!(
            SloLatency::FirstByte.histogram_of(&rec.phases[1]),
            Some(Latency::HttpFirstByte)
        );
    }
}
