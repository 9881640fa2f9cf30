//! The crypto floor of a full TLS handshake as a record stores it (issue 36 item 4; `load --tls`,
//! `bench --tls --baseline`): the asymmetric primitives of one full handshake (key exchange for
//! the negotiated group, signature verification with the server certificate's key type), timed
//! in-process with the provider rustls uses, and the client's CPU per handshake as a ratio of it.
//! Absent in records without it and in older records.

use serde::{Deserialize, Serialize};

/// The crypto floor measured with the run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CryptoFloor {
    /// The key exchange group the handshakes negotiated (`X25519`, `secp256r1`,
    /// `X25519MLKEM768`, ...).
    pub group: String,
    /// The server certificate's key and the scheme verified (`ECDSA-P256-SHA256`, ...); `None`
    /// without a certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Signature verifications per full handshake counted in the floor.
    pub verifications: u32,
    /// CPU time of one key exchange (key share generation + agreement), ns.
    pub kx_ns: f64,
    /// CPU time of one signature verification, ns.
    pub verify_ns: f64,
    /// The floor: CPU time of one full handshake's asymmetric cryptography, ns.
    pub floor_ns: f64,
    /// Full handshakes per second one CPU could do at the floor.
    pub per_sec: f64,
    /// The CPU the floor ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
    /// The client's CPU per TLS handshake in the run the floor belongs to (load workers' on-CPU
    /// time ÷ TLS handshakes, warm-up included; `bench`: its peak phase), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_per_handshake_ns: Option<f64>,
    /// Every one of those handshakes was full (no resumption).
    #[serde(default)]
    pub all_full: bool,
}

/// Why no ratio is given when some handshakes resumed (the same words in `load` and the record's
/// text).
pub const RESUMED_NOT_COMPARABLE: &str = "some handshakes resumed: not comparable with the \
     full-handshake floor; --tls-resume off gives the ratio";

impl CryptoFloor {
    /// `client_cpu_per_handshake_ns ÷ floor_ns`, only when every handshake was full: the floor
    /// is a full handshake's cryptography, and a resumed handshake skips most of it, so a mix
    /// over the floor is no ratio of anything (it read 0.8× with every handshake resumed).
    pub fn ratio(&self) -> Option<f64> {
        self.client_cpu_per_handshake_ns
            .filter(|_| self.floor_ns > 0.0 && self.all_full)
            .map(|c| c / self.floor_ns)
    }

    /// The text line: `crypto floor (in-process, aws-lc-rs, CPU 1): 50.1 µs per full handshake
    /// = 19,960 handshakes/s (X25519 keygen+agree, ECDSA-P256-SHA256 verify ×2); client CPU per
    /// full handshake 155 µs = 3.1× the floor`.
    pub fn line(&self) -> String {
        let cpu = self.cpu.map(|c| format!(", CPU {c}")).unwrap_or_default();
        let what = match &self.signature {
            Some(s) => format!(
                "{} keygen+agree {}, {s} verify {} ×{}",
                self.group,
                crate::numfmt::ns(self.kx_ns),
                crate::numfmt::ns(self.verify_ns),
                self.verifications
            ),
            None => format!(
                "{} keygen+agree {}",
                self.group,
                crate::numfmt::ns(self.kx_ns)
            ),
        };
        let ratio = match (self.client_cpu_per_handshake_ns, self.ratio()) {
            (Some(c), Some(r)) => format!(
                "; client CPU per full handshake {} = {r:.1}× the floor",
                crate::numfmt::ns(c)
            ),
            (Some(c), None) => format!(
                "; client CPU per handshake {} ({RESUMED_NOT_COMPARABLE})",
                crate::numfmt::ns(c)
            ),
            _ => String::new(),
        };
        format!(
            "crypto floor (in-process, aws-lc-rs{cpu}): {} per full handshake = {} handshakes/s ({what}){ratio}",
            crate::numfmt::ns(self.floor_ns),
            crate::numfmt::fixed(self.per_sec, 0),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_states_the_floor_its_parts_and_the_ratio() {
        let f = CryptoFloor {
            group: "X25519".into(),
            signature: Some("ECDSA-P256-SHA256".into()),
            verifications: 2,
            kx_ns: 30_000.0,
            verify_ns: 10_000.0,
            floor_ns: 50_000.0,
            per_sec: 20_000.0,
            cpu: Some(1),
            client_cpu_per_handshake_ns: Some(155_000.0),
            all_full: true,
        };
        assert!((f.ratio().unwrap() - 3.1).abs() < 1e-9);
        let l = f.line();
        assert!(l.starts_with("crypto floor (in-process, aws-lc-rs, CPU 1): 50.0 µs per full handshake = 20,000 handshakes/s (X25519 keygen+agree 30.0 µs, ECDSA-P256-SHA256 verify 10.0 µs ×2); client CPU per full handshake 155.0 µs = 3.1× the floor"), "{l}");
    }

    /// Seen: every handshake resumed printed "0.8× the crypto floor"; a 50% share 2.0×. With any
    /// resumed handshake there is no ratio, and the line says why.
    #[test]
    fn resumed_handshakes_get_no_ratio_to_the_full_handshake_floor() {
        let f = CryptoFloor {
            group: "X25519".into(),
            signature: None,
            verifications: 0,
            kx_ns: 30_000.0,
            verify_ns: 0.0,
            floor_ns: 169_600.0,
            per_sec: 5_896.0,
            cpu: None,
            client_cpu_per_handshake_ns: Some(132_900.0),
            all_full: false,
        };
        assert_eq!(f.ratio(), None);
        let l = f.line();
        assert!(!l.contains("× the floor"), "{l}");
        assert!(
            l.ends_with("; client CPU per handshake 132.9 µs (some handshakes resumed: not comparable with the full-handshake floor; --tls-resume off gives the ratio)"),
            "{l}"
        );
    }
}
