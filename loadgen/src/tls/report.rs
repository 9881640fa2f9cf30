//! The TLS results of a run (`--tls`, [`TlsReport`]): the workers' handshakes merged, full vs
//! resumed, versions, ALPN, cipher suites, and the TLS handshake latency.

use serde::Serialize;

use super::Sessions;
use crate::config::{Resume, TlsOptions};
use crate::latency::{summary, HistogramSummary, Overflow};

/// The TLS results of a run (`--tls`). Counts are of the measured window unless `total_*`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlsReport {
    /// The options the run used.
    pub options: TlsOptions,
    /// TLS handshakes done.
    pub handshakes: u64,
    /// Of them, full handshakes (with or without a HelloRetryRequest).
    pub full: u64,
    /// Of them, resumed (rustls `HandshakeKind::Resumed`).
    pub resumed: u64,
    /// Of them, TLS 1.3.
    pub tls13: u64,
    /// Of them, TLS 1.2.
    pub tls12: u64,
    /// Of them, with an ALPN protocol agreed.
    pub alpn_agreed: u64,
    /// Of them, by the cipher suite agreed (rustls' name, e.g. `TLS13_AES_128_GCM_SHA256`).
    pub cipher_suites: std::collections::BTreeMap<String, u64>,
    /// Of them, by the key exchange group agreed (IANA's name, e.g. `X25519`, `secp256r1`,
    /// `X25519MLKEM768`); a resumed TLS 1.2 handshake has none.
    pub groups: std::collections::BTreeMap<String, u64>,
    /// Whole run (warm-up included): TLS handshakes done.
    pub total_handshakes: u64,
    /// Whole run: full handshakes.
    pub total_full: u64,
    /// Whole run: resumed handshakes.
    pub total_resumed: u64,
    /// TLS handshake latency, ns: TCP handshake seen complete → TLS handshake done.
    #[serde(serialize_with = "summary")]
    pub handshake: hdrhistogram::Histogram<u64>,
    /// Values above the histogram's range.
    pub handshake_overflow: Overflow,
    /// TLS handshake latency of the full handshakes only, ns (same span).
    #[serde(serialize_with = "summary")]
    pub full_handshake: hdrhistogram::Histogram<u64>,
    /// TLS handshake latency of the resumed handshakes only, ns (same span; empty when none
    /// resumed).
    #[serde(serialize_with = "summary")]
    pub resumed_handshake: hdrhistogram::Histogram<u64>,
    /// What the first full handshake negotiated (group, server certificate): the input of the
    /// crypto floor; `None` when no full handshake completed.
    #[serde(skip)]
    pub negotiated: Option<super::floor::Negotiated>,
    /// The crypto floor of a full handshake, measured in-process after the run
    /// ([`super::floor::measure`]; `load --tls` and `bench --tls --baseline`); `None` until
    /// measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<super::floor::CryptoFloor>,
}

impl TlsReport {
    /// The warning when resumption was asked for (`--tls-resume tickets|ids`) and none happened
    /// although some in-flight slot made more than one handshake (`total_handshakes` above
    /// `slots`, the most in flight at once): the server offers no resumption (no tickets, no
    /// session cache; e.g. `connstorm server --tls --tls-resume off`, nginx with
    /// `ssl_session_tickets off` and no `ssl_session_cache`), so every handshake was full and
    /// the run measured full handshakes, not resumed ones. `None` otherwise, and with
    /// `--tls-resume-share 0%`: no connection offered a session, so none resuming says nothing
    /// about the server.
    pub fn resumption_warning(&self, slots: u64) -> Option<String> {
        if self.options.resume_share_pct == 0 {
            return None;
        }
        let asked = match self.options.resume {
            Resume::Off => return None,
            Resume::Tickets => "tickets",
            Resume::Ids => "ids",
        };
        (self.total_resumed == 0 && self.total_handshakes > slots).then(|| {
            format!(
                "--tls-resume {asked} was asked for, but none of the {} TLS handshakes resumed: the server offers no resumption (no session tickets or session cache), so every handshake was full — these are full-handshake figures",
                common::numfmt::count(self.total_handshakes)
            )
        })
    }

    pub(crate) fn of(o: &TlsOptions, w: Sessions) -> TlsReport {
        let m = &w.measured;
        TlsReport {
            options: o.clone(),
            handshakes: m.handshakes,
            full: m.full,
            resumed: m.resumed,
            tls13: m.tls13,
            tls12: m.tls12,
            alpn_agreed: m.alpn_agreed,
            cipher_suites: m
                .suites
                .iter()
                .map(|(s, n)| (format!("{s:?}"), *n))
                .collect(),
            groups: m
                .groups
                .iter()
                .map(|(g, n)| (format!("{g:?}"), *n))
                .collect(),
            total_handshakes: w.total.handshakes,
            total_full: w.total.full,
            total_resumed: w.total.resumed,
            handshake_overflow: w.handshake.overflow(),
            handshake: w.handshake.hist,
            full_handshake: w.full_handshake.hist,
            resumed_handshake: w.resumed_handshake.hist,
            negotiated: w.negotiated,
            floor: None,
        }
    }

    /// Measures the crypto floor of this run's first full handshake on `cpu`
    /// ([`super::floor::measure`], [`super::floor::DEFAULT_WINDOW`]) and keeps it in
    /// [`Self::floor`]. `None` when no full handshake completed; else the floor or why not.
    pub fn measure_floor(&mut self, cpu: Option<usize>) -> Option<Result<(), String>> {
        let n = self.negotiated.as_ref()?;
        let verified = !matches!(self.options.verify, crate::config::Verify::Insecure);
        Some(
            super::floor::measure(n, verified, cpu, super::floor::DEFAULT_WINDOW)
                .map(|f| self.floor = Some(f)),
        )
    }

    /// The client's CPU per TLS handshake, ns: the load workers' on-CPU time over the whole run
    /// (`cpu_run_ns`, warm-up included) ÷ the whole run's TLS handshakes; and whether all of
    /// them were full. `None` without a handshake.
    pub fn cpu_per_handshake_ns(&self, workers_cpu_ns: u64) -> Option<(f64, bool)> {
        (self.total_handshakes > 0).then(|| {
            (
                workers_cpu_ns as f64 / self.total_handshakes as f64,
                self.total_resumed == 0,
            )
        })
    }

    /// The handshake histogram's summary.
    pub fn summary(&self) -> HistogramSummary {
        HistogramSummary::of(&self.handshake)
    }
}
