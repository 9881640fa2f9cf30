//! The crypto floor of a full TLS handshake, measured in-process (issue 36 item 4): the
//! asymmetric primitives a client runs in one full handshake, with the same provider rustls uses
//! here (`aws-lc-rs`), repeated in a tight loop on a load CPU, so a run's client CPU per handshake
//! can be stated as a ratio of what its cryptography alone costs.
//!
//! # What one full handshake costs the client, at least
//! - **Key exchange** for the negotiated group (taken from the handshake,
//!   [`rustls::CommonState::negotiated_key_exchange_group`]): the key share's generation and
//!   the agreement with the server's share — the group's [`SupportedKxGroup::start`] then
//!   [`rustls::crypto::ActiveKeyExchange::complete`], the calls rustls makes. For the hybrid
//!   `X25519MLKEM768` that is ML-KEM-768 key generation and decapsulation plus X25519; the
//!   server's share is made once for the first client share (decapsulating it with another key
//!   costs the same: ML-KEM's implicit rejection takes the same path).
//! - **Signature verification** with the key type of the server's certificate (parsed from the
//!   certificate the handshake received): its signature over the handshake (TLS 1.3
//!   CertificateVerify, TLS 1.2 ServerKeyExchange), and — when the certificate is verified
//!   (not `--insecure`) — one more per certificate the server sent (the chain's signatures,
//!   counted with the same algorithm: exact for a self-signed certificate, as `bench --tls`
//!   makes, an estimate for a chain whose issuers use other keys). The algorithm is rustls'
//!   own [`SignatureVerificationAlgorithm`] for the scheme TLS 1.3 uses with that key (ECDSA
//!   with the curve's hash, RSA-PSS-SHA256, Ed25519), on a signature made here with a key of the
//!   same type and size (the server's private key is not ours).
//!
//! Symmetric work (HKDF, the transcript hash, AES-GCM records) and the TLS state machine are not
//! in the floor: they are what a handshake costs above it, with the TCP connection's own work.
//! The loop runs on a thread pinned to the given CPU and reads its own CPU time
//! (CLOCK_THREAD_CPUTIME_ID) around each half of the window; a few warm-up operations run first.

use std::time::{Duration, Instant};

use common::threadcpu::ThreadCpu;
use rustls::crypto::SupportedKxGroup;
use rustls::pki_types::{
    alg_id, AlgorithmIdentifier, CertificateDer, SignatureVerificationAlgorithm,
};
use rustls::SignatureScheme;
use serde::Serialize;

/// The measurement window of [`measure`] by default: half for the key exchange, half for the
/// signature verification.
pub const DEFAULT_WINDOW: Duration = Duration::from_millis(200);

/// What a full handshake negotiated that the floor repeats: kept from a worker's first full
/// handshake.
#[derive(Debug, Clone)]
pub struct Negotiated {
    /// The key exchange group the handshake used (rustls' own, `'static`).
    pub group: &'static dyn SupportedKxGroup,
    /// The server's end-entity certificate, DER (`None` when it sent none).
    pub cert: Option<CertificateDer<'static>>,
    /// How many certificates the server sent.
    pub chain: usize,
}

impl PartialEq for Negotiated {
    fn eq(&self, o: &Negotiated) -> bool {
        self.group.name() == o.group.name() && self.cert == o.cert && self.chain == o.chain
    }
}

impl Negotiated {
    /// What `c`'s finished handshake negotiated: `None` when rustls names no group (a resumed
    /// TLS 1.2 handshake has none). One certificate copy, once per worker.
    pub(crate) fn of(c: &rustls::ClientConnection) -> Option<Negotiated> {
        let group = c.negotiated_key_exchange_group()?;
        let certs = c.peer_certificates().unwrap_or_default();
        Some(Negotiated {
            group,
            cert: certs.first().map(|d| d.clone().into_owned()),
            chain: certs.len(),
        })
    }
}

/// The measured floor (serialized in `load --format json` under `tls.floor`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CryptoFloor {
    /// The key exchange group, rustls' name (`X25519`, `secp256r1`, `X25519MLKEM768`, ...).
    pub group: String,
    /// The server certificate's key and the scheme verified (`ECDSA-P256-SHA256`,
    /// `RSA-2048-PSS-SHA256`, `Ed25519`); `None` without a certificate.
    pub signature: Option<String>,
    /// Signature verifications counted per full handshake (1 for the handshake's signature, plus
    /// one per certificate sent when the certificate is verified).
    pub verifications: u32,
    /// CPU time of one key exchange (key share generation + agreement), ns.
    pub kx_ns: f64,
    /// CPU time of one signature verification, ns (0 without a certificate).
    pub verify_ns: f64,
    /// The floor: CPU time of one full handshake's asymmetric cryptography, ns
    /// (`kx_ns + verifications × verify_ns`).
    pub floor_ns: f64,
    /// Full handshakes per second one CPU could do at the floor (`1e9 / floor_ns`).
    pub per_sec: f64,
    /// Key exchanges done in the measured window.
    pub kx_ops: u64,
    /// Verifications done in the measured window.
    pub verify_ops: u64,
    /// The CPU the loop ran on (`None`: not pinned).
    pub cpu: Option<usize>,
}

impl CryptoFloor {
    /// What the floor is made of, in words: `X25519 keygen+agree, ECDSA-P256-SHA256 verify ×2`.
    pub fn what(&self) -> String {
        match &self.signature {
            Some(s) => format!(
                "{} keygen+agree, {s} verify ×{}",
                self.group, self.verifications
            ),
            None => format!("{} keygen+agree", self.group),
        }
    }

    /// `client CPU per full handshake 155 µs = 3.1× the crypto floor of 50 µs (X25519
    /// keygen+agree, ECDSA-P256-SHA256 verify ×1)`, for a client that spent `cpu_ns` per
    /// handshake (`full`: every handshake was full; otherwise no ratio, and the line says why).
    pub fn ratio_line(&self, cpu_ns: f64, full: bool) -> String {
        if !full {
            // The floor is a full handshake's cryptography; a resumed one skips most of it.
            return format!(
                "client CPU per handshake {} (some handshakes resumed: not comparable with the \
                 full-handshake floor of {}; --tls-resume off gives the ratio)",
                common::numfmt::ns(cpu_ns),
                common::numfmt::ns(self.floor_ns),
            );
        }
        format!(
            "client CPU per full handshake {} = {:.1}× the crypto floor of {} ({})",
            common::numfmt::ns(cpu_ns),
            cpu_ns / self.floor_ns,
            common::numfmt::ns(self.floor_ns),
            self.what()
        )
    }

    /// `crypto floor (in-process, aws-lc-rs, CPU 1): 50.1 µs per full handshake = 19,960
    /// handshakes/s (X25519 keygen+agree 30.2 µs; ECDSA-P256-SHA256 verify 19.9 µs ×1)`.
    pub fn line(&self) -> String {
        let cpu = self.cpu.map(|c| format!(", CPU {c}")).unwrap_or_default();
        let verify = match &self.signature {
            Some(s) => format!(
                "; {s} verify {} ×{}",
                common::numfmt::ns(self.verify_ns),
                self.verifications
            ),
            None => "; no certificate".into(),
        };
        format!(
            "crypto floor (in-process, aws-lc-rs{cpu}): {} per full handshake = {} handshakes/s ({} keygen+agree {}{verify})",
            common::numfmt::ns(self.floor_ns),
            common::numfmt::fixed(self.per_sec, 0),
            self.group,
            common::numfmt::ns(self.kx_ns),
        )
    }
}

/// Measures the floor of `n`'s handshake: `window` of CPU work split between the key exchange
/// and the verification, on a thread pinned to `cpu` (when given). `verified`: the client
/// verifies the server's certificate (not `--insecure`).
///
/// # Errors
/// A certificate key type the provider cannot verify, or a primitive that failed.
pub fn measure(
    n: &Negotiated,
    verified: bool,
    cpu: Option<usize>,
    window: Duration,
) -> Result<CryptoFloor, String> {
    let group = n.group;
    let key = n.cert.as_ref().map(KeyKind::of_cert).transpose()?;
    let verifier = key.as_ref().map(Verifier::new).transpose()?;
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(c) = cpu {
                crate::affinity::pin(c).map_err(|e| e.to_string())?;
            }
            let half = window / 2;
            // The server's share for the first client share, once (outside the window).
            let first = group.start().map_err(|e| format!("key exchange: {e}"))?;
            let server = group
                .start_and_complete(first.pub_key())
                .map_err(|e| format!("key exchange: {e}"))?;
            let peer = server.pub_key.to_vec();
            let kx = || -> Result<(), String> {
                let c = group.start().map_err(|e| format!("key exchange: {e}"))?;
                c.complete(&peer)
                    .map(drop)
                    .map_err(|e| format!("key agreement: {e}"))
            };
            let (kx_ops, kx_ns) = timed(half, kx)?;
            let (verify_ops, verify_ns) = match &verifier {
                Some(v) => timed(half, || v.verify())?,
                None => (0, 0.0),
            };
            let verifications = match &key {
                Some(_) => 1 + if verified { n.chain.max(1) as u32 } else { 0 },
                None => 0,
            };
            let floor_ns = kx_ns + f64::from(verifications) * verify_ns;
            Ok(CryptoFloor {
                group: format!("{:?}", group.name()),
                signature: key.as_ref().map(KeyKind::name),
                verifications,
                kx_ns,
                verify_ns,
                floor_ns,
                per_sec: 1e9 / floor_ns,
                kx_ops,
                verify_ops,
                cpu,
            })
        })
        .join()
        .map_err(|_| "the crypto floor's thread panicked".to_string())?
    })
}

/// Runs `op` a few times (warm-up), then for `wall` of wall time: the operations done and the
/// thread's CPU time per operation, ns.
fn timed(wall: Duration, mut op: impl FnMut() -> Result<(), String>) -> Result<(u64, f64), String> {
    for _ in 0..8 {
        op()?;
    }
    let t0 = Instant::now();
    let c0 = ThreadCpu::now();
    let mut ops = 0u64;
    while ops == 0 || t0.elapsed() < wall {
        op()?;
        ops += 1;
    }
    let cpu = ThreadCpu::now().since(&c0).run_ns;
    Ok((ops, cpu as f64 / ops as f64))
}

/// The key type of a server certificate, as far as the floor needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    EcdsaP256,
    EcdsaP384,
    EcdsaP521,
    Ed25519,
    Rsa { bits: usize },
}

impl KeyKind {
    /// The key type of `cert`'s subject public key.
    fn of_cert(cert: &CertificateDer<'_>) -> Result<KeyKind, String> {
        let parsed = rustls::server::ParsedCertificate::try_from(cert)
            .map_err(|e| format!("the server's certificate does not parse: {e}"))?;
        let spki = parsed.subject_public_key_info();
        let alg = spki_algorithm(spki.as_ref())
            .ok_or("the server's certificate has no readable public key algorithm")?;
        let kinds = [
            (alg_id::ECDSA_P256, KeyKind::EcdsaP256),
            (alg_id::ECDSA_P384, KeyKind::EcdsaP384),
            (alg_id::ECDSA_P521, KeyKind::EcdsaP521),
            (alg_id::ED25519, KeyKind::Ed25519),
        ];
        if let Some((_, k)) = kinds.iter().find(|(a, _)| a.as_ref() == alg) {
            return Ok(*k);
        }
        if alg == alg_id::RSA_ENCRYPTION.as_ref() {
            let key = aws_lc_rs::rsa::PublicEncryptingKey::from_der(spki.as_ref())
                .map_err(|e| format!("the server's RSA key: {e}"))?;
            return Ok(KeyKind::Rsa {
                bits: key.key_size_bits(),
            });
        }
        Err("the server's certificate key is not ECDSA P-256/P-384/P-521, Ed25519 or RSA: no crypto floor for it".into())
    }

    fn name(&self) -> String {
        match self {
            KeyKind::EcdsaP256 => "ECDSA-P256-SHA256".into(),
            KeyKind::EcdsaP384 => "ECDSA-P384-SHA384".into(),
            KeyKind::EcdsaP521 => "ECDSA-P521-SHA512".into(),
            KeyKind::Ed25519 => "Ed25519".into(),
            KeyKind::Rsa { bits } => format!("RSA-{bits}-PSS-SHA256"),
        }
    }

    /// The TLS 1.3 scheme a server signs with for this key type, and its key's algorithm id.
    fn scheme(&self) -> (SignatureScheme, AlgorithmIdentifier) {
        match self {
            KeyKind::EcdsaP256 => (SignatureScheme::ECDSA_NISTP256_SHA256, alg_id::ECDSA_P256),
            KeyKind::EcdsaP384 => (SignatureScheme::ECDSA_NISTP384_SHA384, alg_id::ECDSA_P384),
            KeyKind::EcdsaP521 => (SignatureScheme::ECDSA_NISTP521_SHA512, alg_id::ECDSA_P521),
            KeyKind::Ed25519 => (SignatureScheme::ED25519, alg_id::ED25519),
            KeyKind::Rsa { .. } => (SignatureScheme::RSA_PSS_SHA256, alg_id::RSA_ENCRYPTION),
        }
    }

    /// A fresh key pair of this type: its public key as the certificate's subjectPublicKey bits
    /// hold it, and its signature over `msg`.
    fn sign(&self, msg: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
        use aws_lc_rs::signature::{self as sig, KeyPair};
        let fail = |e: aws_lc_rs::error::Unspecified| format!("signing key: {e}");
        let ecdsa = |alg: &'static sig::EcdsaSigningAlgorithm| -> Result<_, String> {
            let k = sig::EcdsaKeyPair::generate(alg).map_err(fail)?;
            let s = k
                .sign(&aws_lc_rs::rand::SystemRandom::new(), msg)
                .map_err(fail)?;
            Ok((k.public_key().as_ref().to_vec(), s.as_ref().to_vec()))
        };
        match self {
            KeyKind::EcdsaP256 => ecdsa(&sig::ECDSA_P256_SHA256_ASN1_SIGNING),
            KeyKind::EcdsaP384 => ecdsa(&sig::ECDSA_P384_SHA384_ASN1_SIGNING),
            KeyKind::EcdsaP521 => ecdsa(&sig::ECDSA_P521_SHA512_ASN1_SIGNING),
            KeyKind::Ed25519 => {
                let k = sig::Ed25519KeyPair::generate().map_err(fail)?;
                Ok((
                    k.public_key().as_ref().to_vec(),
                    k.sign(msg).as_ref().to_vec(),
                ))
            }
            KeyKind::Rsa { bits } => {
                let size = match bits {
                    ..=2048 => aws_lc_rs::rsa::KeySize::Rsa2048,
                    ..=3072 => aws_lc_rs::rsa::KeySize::Rsa3072,
                    ..=4096 => aws_lc_rs::rsa::KeySize::Rsa4096,
                    _ => aws_lc_rs::rsa::KeySize::Rsa8192,
                };
                let k = sig::RsaKeyPair::generate(size).map_err(fail)?;
                let mut s = vec![0; k.public_modulus_len()];
                k.sign(
                    &sig::RSA_PSS_SHA256,
                    &aws_lc_rs::rand::SystemRandom::new(),
                    msg,
                    &mut s,
                )
                .map_err(fail)?;
                Ok((k.public_key().as_ref().to_vec(), s))
            }
        }
    }
}

/// rustls' verification algorithm for a key type, with a public key and a signature to check.
struct Verifier {
    alg: &'static dyn SignatureVerificationAlgorithm,
    public_key: Vec<u8>,
    signature: Vec<u8>,
}

/// A TLS 1.3 CertificateVerify input: 64 spaces, the context string, a zero byte and a
/// SHA-256 transcript hash (RFC 8446 §4.4.3), 130 bytes.
const SIGNED: [u8; 130] = {
    let mut m = [0x20u8; 130];
    let ctx = b"TLS 1.3, server CertificateVerify";
    let mut i = 0;
    while i < ctx.len() {
        m[64 + i] = ctx[i];
        i += 1;
    }
    m[64 + ctx.len()] = 0;
    m
};

impl Verifier {
    fn new(k: &KeyKind) -> Result<Verifier, String> {
        let (scheme, key_alg) = k.scheme();
        let algs = rustls::crypto::aws_lc_rs::default_provider().signature_verification_algorithms;
        let alg = algs
            .mapping
            .iter()
            .filter(|(s, _)| *s == scheme)
            .flat_map(|(_, a)| a.iter())
            .find(|a| a.public_key_alg_id() == key_alg)
            .copied()
            .ok_or_else(|| format!("the provider cannot verify {}", k.name()))?;
        let (public_key, signature) = k.sign(&SIGNED)?;
        let v = Verifier {
            alg,
            public_key,
            signature,
        };
        v.verify()?;
        Ok(v)
    }

    fn verify(&self) -> Result<(), String> {
        self.alg
            .verify_signature(&self.public_key, &SIGNED, &self.signature)
            .map_err(|_| "the floor's own signature did not verify".to_string())
    }
}

/// The contents of the AlgorithmIdentifier of a SubjectPublicKeyInfo (DER `SEQUENCE {
/// SEQUENCE { algorithm, parameters }, BIT STRING }`): what rustls' `alg_id` constants hold.
fn spki_algorithm(spki: &[u8]) -> Option<&[u8]> {
    let (tag, body, _) = der(spki)?;
    if tag != 0x30 {
        return None;
    }
    let (tag, alg, _) = der(body)?;
    (tag == 0x30).then_some(alg)
}

/// One DER element: tag, contents, the rest (definite lengths only, as DER has).
fn der(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |a, &b| (a << 8) | usize::from(b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each key type the floor knows signs with aws-lc-rs and verifies with rustls' own
    /// algorithm for its TLS 1.3 scheme (reading the key type from a certificate is tested end to
    /// end, tests/cli/tls_cli.rs and tests/cli/bench_cli.rs).
    #[test]
    fn every_key_type_signs_and_verifies_with_rustls_algorithms() {
        for k in [
            KeyKind::EcdsaP256,
            KeyKind::EcdsaP384,
            KeyKind::Ed25519,
            KeyKind::Rsa { bits: 2048 },
        ] {
            let v = Verifier::new(&k).unwrap_or_else(|e| panic!("{k:?}: {e}"));
            v.verify().unwrap();
        }
    }

    #[test]
    fn der_reads_short_and_long_lengths_and_refuses_truncation() {
        assert_eq!(
            der(&[0x30, 0x01, 0xaa, 0xbb]),
            Some((0x30, &[0xaa][..], &[0xbb][..]))
        );
        let mut long = vec![0x04, 0x81, 0x80];
        long.extend([7u8; 0x80]);
        assert_eq!(
            der(&long).map(|(_, b, r)| (b.len(), r.len())),
            Some((0x80, 0))
        );
        assert_eq!(der(&[0x30, 0x05, 1]), None);
        assert_eq!(der(&[0x30, 0x80]), None);
    }

    /// Each group of the provider measures a positive, finite floor, the hybrid one costs more
    /// than X25519 alone, and without a certificate there is no verification.
    #[test]
    fn the_key_exchange_floor_is_positive_and_ordered() {
        let of = |g: &'static dyn SupportedKxGroup| {
            let n = Negotiated {
                group: g,
                cert: None,
                chain: 0,
            };
            measure(&n, true, None, Duration::from_millis(40)).unwrap()
        };
        use rustls::crypto::aws_lc_rs::kx_group;
        let x = of(kx_group::X25519);
        let p = of(kx_group::SECP256R1);
        let h = of(kx_group::X25519MLKEM768);
        for f in [&x, &p, &h] {
            assert!(f.floor_ns.is_finite() && f.floor_ns > 0.0, "{f:?}");
            assert_eq!(f.verifications, 0);
            assert!(f.kx_ops > 0 && f.per_sec > 0.0, "{f:?}");
        }
        assert_eq!(x.group, "X25519");
        assert_eq!(h.group, "X25519MLKEM768");
        assert!(h.kx_ns > x.kx_ns, "{h:?} vs {x:?}");
    }

    /// Seen: `--tls-resume tickets` printed "0.8× the crypto floor": a resumed handshake skips
    /// most of the full handshake's cryptography, so no ratio is given for a mix.
    #[test]
    fn a_ratio_to_the_floor_is_given_only_for_full_handshakes() {
        let f = CryptoFloor {
            group: "X25519".into(),
            signature: None,
            verifications: 0,
            kx_ns: 50_000.0,
            verify_ns: 0.0,
            floor_ns: 50_000.0,
            per_sec: 20_000.0,
            kx_ops: 1,
            verify_ops: 0,
            cpu: None,
        };
        assert_eq!(
            f.ratio_line(155_000.0, true),
            "client CPU per full handshake 155.0 µs = 3.1× the crypto floor of 50.0 µs (X25519 keygen+agree)"
        );
        let mixed = f.ratio_line(40_000.0, false);
        assert!(!mixed.contains('×'), "{mixed}");
        assert!(
            mixed.contains("not comparable with the full-handshake floor of 50.0 µs"),
            "{mixed}"
        );
    }
}
