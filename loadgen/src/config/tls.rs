//! The `--tls*` options ([`TlsOptions`]) and the client configuration they make
//! ([`TlsOptions::client_config`]): versions, cipher suites, key exchange groups, ALPN,
//! resumption, certificate check. A plain option type with its own checks; the TLS client that
//! runs on each connection is [`crate::tls`]'s.
//!
//! # Why `aws-lc-rs`, not `ring`
//! A full TLS 1.3 handshake's client CPU is mostly its X25519 key exchange and the ECDSA P-256
//! verify of the server's CertificateVerify (perf of `load --tls --http` against connstorm's
//! own server, ring: X25519 29%, P-256 22%). Measured here on one CPU, 5 interleaved rounds of
//! 2,000 operations each: X25519 keygen + agree 59.0–64.2 µs with ring 0.17.14, 32.4–39.9 µs
//! with aws-lc-rs 1.19 (aws-lc-sys 0.47); P-256 verify 52.7–57.5 vs 50.3–59.5 µs and sign
//! 16.8–19.8 vs 15.4–18.7 µs, the same. aws-lc-sys 0.47 builds with a C compiler alone on
//! x86-64 and aarch64 Linux (no CMake, no Go, no bindgen: its bindings come pre-generated),
//! about 40 s here. The server (rcgen for its self-signed certificate) uses it as well, so one
//! backend is built, not two.
//!
//! # Key exchange groups
//! X25519, then P-256, then P-384 (ring's list, kept): the provider's default list also names
//! X25519MLKEM768 after them, and offering a group without its key share lets a server that
//! prefers it ask for it with a HelloRetryRequest, a round trip and a second key exchange on
//! every handshake: OpenSSL 3.5's default group list puts X25519MLKEM768 alone in its first
//! tuple, and a group of an earlier tuple wins even without a key share
//! (SSL_CTX_set1_groups_list(3), OpenSSL 3.5; not tried here, this machine has OpenSSL 3.0).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use serde::{Deserialize, Serialize};

/// `--tls-version`: which protocol versions the client offers.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlsVersion {
    /// TLS 1.3 and 1.2 (the server picks; usually 1.3).
    #[cfg_attr(feature = "clap", value(help = "TLS 1.3 and 1.2."))]
    Auto,
    /// TLS 1.2 only.
    #[serde(rename = "1.2")]
    #[cfg_attr(feature = "clap", value(help = "TLS 1.2 only.", name = "1.2"))]
    V12,
    /// TLS 1.3 only.
    #[serde(rename = "1.3")]
    #[cfg_attr(feature = "clap", value(help = "TLS 1.3 only.", name = "1.3"))]
    V13,
}

/// `--tls-resume`: how connections of one worker resume sessions of earlier ones.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resume {
    /// Every handshake is full (`Resumption::disabled()`).
    #[cfg_attr(feature = "clap", value(help = "No resumption."))]
    Off,
    /// Session tickets (TLS 1.3 PSK tickets; TLS 1.2 RFC 5077 tickets, else session IDs),
    /// cached per worker (256 entries).
    #[cfg_attr(feature = "clap", value(help = "Session tickets."))]
    Tickets,
    /// TLS 1.2 session IDs only (the server's session cache). TLS 1.3 has no session IDs, so
    /// this needs `--tls-version 1.2`.
    #[cfg_attr(feature = "clap", value(help = "TLS 1.2 session IDs."))]
    Ids,
}

/// How the server's certificate is checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verify {
    /// Not checked (`--insecure`): any certificate, any name; the handshake's signatures are
    /// still verified, so the cost is that of a real client.
    Insecure,
    /// Against the CA certificates of this PEM file (`--ca FILE`), or the system's bundle
    /// (`/etc/ssl/certs/ca-certificates.crt`) when neither `--ca` nor `--insecure` is given.
    Ca(PathBuf),
    /// Against these CA certificates, PEM text (`bench --tls`: the in-process server's own
    /// certificate, so the load checks it as a real client would).
    CaPem(String),
}

/// The system's CA bundle on Debian and its derivatives (package ca-certificates).
pub const SYSTEM_CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The `--tls*` options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsOptions {
    /// Versions offered.
    pub version: TlsVersion,
    /// The name sent as SNI and checked against the certificate (`--sni`, default the target's
    /// host name); an IP address is checked against the certificate's IP addresses and sends no
    /// SNI (RFC 6066 §3).
    pub server_name: String,
    /// ALPN protocols offered (`--alpn http/1.1`), in order; empty: no ALPN extension.
    pub alpn: Vec<String>,
    /// Session resumption.
    pub resume: Resume,
    /// Certificate check.
    pub verify: Verify,
    /// Cipher suites offered, in order (`--tls-ciphers`), as rustls names them
    /// (`TLS13_AES_128_GCM_SHA256`, `TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`). Empty (the
    /// default): [`cipher_suites`]`(&[])`, every suite of the `aws-lc-rs` provider with AES-128-GCM
    /// first.
    #[serde(default)]
    pub ciphers: Vec<String>,
}

/// The cipher suites a client offers for `names` (`--tls-ciphers`), in that order; for an empty
/// list, the `aws-lc-rs` provider's suites with the AES-128-GCM ones first in each version, as
/// browsers and h2load (nghttp2's default TLS 1.3 list) order them. rustls' own order puts
/// AES-256-GCM first, whose TLS 1.3 suite hashes its transcript and key schedule with SHA-384:
/// on a CPU with SHA extensions but no SHA-512 ones (most x86-64 today) that is ~10% of a
/// client's CPU per full handshake (measured here with perf: `sha512_block_data_order_nohw`
/// 9.7% of a `--tls --http` load), and the server pays it too. A server following the
/// client's order (rustls' and OpenSSL's default) then picks AES-128-GCM with SHA-256.
///
/// A name is matched without regard to case, in rustls' spelling or, for TLS 1.3, the IANA one
/// (`TLS_AES_128_GCM_SHA256`, which OpenSSL uses too).
///
/// # Errors
/// A name that is not a suite of the provider (the message lists those that are), or a name
/// given twice.
pub fn cipher_suites(names: &[String]) -> Result<Vec<rustls::SupportedCipherSuite>, String> {
    let all = rustls::crypto::aws_lc_rs::DEFAULT_CIPHER_SUITES;
    if names.is_empty() {
        let mut v = all.to_vec();
        v.sort_by_key(|s| !suite_name(s).contains("_AES_128_GCM_"));
        return Ok(v);
    }
    let mut v: Vec<rustls::SupportedCipherSuite> = Vec::with_capacity(names.len());
    for n in names {
        let want = n.trim().to_ascii_uppercase();
        if want.is_empty() {
            return Err(
                "--tls-ciphers: an empty name (a stray comma?): give suite names separated by commas"
                    .into(),
            );
        }
        let found = all.iter().find(|s| {
            let r = suite_name(s);
            r == want
                || r.strip_prefix("TLS13_")
                    .is_some_and(|t| format!("TLS_{t}") == want)
        });
        let Some(s) = found else {
            let known: Vec<String> = all.iter().map(suite_name).collect();
            return Err(format!(
                "--tls-ciphers: {n:?} is not a cipher suite of this build (rustls, aws-lc-rs provider); \
                 give one or more of (TLS 1.3 ones also as TLS_AES_128_GCM_SHA256 etc.): {}",
                known.join(", ")
            ));
        };
        if v.iter().any(|x| x.suite() == s.suite()) {
            return Err(format!(
                "--tls-ciphers: {:?} names {} again: give each suite once",
                n.trim(),
                suite_name(s)
            ));
        }
        v.push(*s);
    }
    Ok(v)
}

/// The key exchange groups the client offers, in order (see the module doc): X25519, P-256,
/// P-384.
const KX_GROUPS: &[&dyn rustls::crypto::SupportedKxGroup] = &[
    rustls::crypto::aws_lc_rs::kx_group::X25519,
    rustls::crypto::aws_lc_rs::kx_group::SECP256R1,
    rustls::crypto::aws_lc_rs::kx_group::SECP384R1,
];

/// A suite's name as rustls spells it (`TLS13_AES_128_GCM_SHA256`).
pub fn suite_name(s: &rustls::SupportedCipherSuite) -> String {
    format!("{:?}", s.suite())
}

impl TlsOptions {
    /// One worker's client configuration (its own resumption cache).
    ///
    /// # Errors
    /// A message naming the problem and its fix: an unreadable or empty CA file, a server
    /// name that is neither a DNS name nor an IP address, `ids` with TLS 1.3.
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, String> {
        let provider = Arc::new(rustls::crypto::CryptoProvider {
            cipher_suites: cipher_suites(&self.ciphers)?,
            kx_groups: KX_GROUPS.to_vec(),
            ..rustls::crypto::aws_lc_rs::default_provider()
        });
        let versions: &[&'static rustls::SupportedProtocolVersion] = match self.version {
            TlsVersion::Auto => &[&rustls::version::TLS13, &rustls::version::TLS12],
            TlsVersion::V12 => &[&rustls::version::TLS12],
            TlsVersion::V13 => &[&rustls::version::TLS13],
        };
        if self.resume == Resume::Ids && self.version != TlsVersion::V12 {
            return Err(
                "--tls-resume ids resumes TLS 1.2 sessions by ID; TLS 1.3 has no session IDs \
                 (it resumes with tickets): add --tls-version 1.2 or use --tls-resume tickets"
                    .into(),
            );
        }
        // RFC 7301 §3.1: a protocol name is 1–255 bytes, empty ones MUST NOT be sent (an empty
        // `--alpn ''` failed every handshake with "TLS alert DecodeError received").
        if let Some(bad) = self.alpn.iter().find(|p| p.is_empty() || p.len() > 255) {
            return Err(format!(
                "--alpn {bad:?}: an ALPN protocol name is 1 to 255 bytes (RFC 7301 3.1), e.g. --alpn http/1.1; leave --alpn out to send no ALPN extension"
            ));
        }
        if !provider
            .cipher_suites
            .iter()
            .any(|s| versions.iter().any(|v| s.version() == *v))
        {
            return Err(format!(
                "--tls-ciphers: no suite given is of the TLS version(s) offered (--tls-version {}): \
                 offer a TLS13_* suite for 1.3, a TLS_ECDHE_* one for 1.2",
                match self.version {
                    TlsVersion::Auto => "auto",
                    TlsVersion::V12 => "1.2",
                    TlsVersion::V13 => "1.3",
                }
            ));
        }
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|e| {
                format!(
                    "--tls-ciphers and --tls-version: {e}: offer a suite of the version(s) \
                     (TLS13_* for 1.3, TLS_ECDHE_* for 1.2)"
                )
            })?;
        let mut cfg = match &self.verify {
            Verify::Insecure => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
                .with_no_client_auth(),
            Verify::Ca(path) => {
                let mut roots = rustls::RootCertStore::empty();
                // A bounded read of a regular file: `/dev/zero` filled memory, a FIFO hung.
                let bytes = common::files::read_regular(path, common::files::MAX_PEM_BYTES)
                    .map_err(|e| {
                        format!(
                            "--ca {}: {e}: give a PEM file of CA certificates, or --insecure",
                            path.display()
                        )
                    })?;
                for c in CertificateDer::pem_slice_iter(&bytes) {
                    let c = c.map_err(|e| {
                        format!("--ca {}: not PEM certificates ({e})", path.display())
                    })?;
                    roots.add(c).map_err(|e| {
                        format!("--ca {}: a certificate is unusable ({e})", path.display())
                    })?;
                }
                if roots.is_empty() {
                    return Err(format!(
                        "--ca {}: no CERTIFICATE in the file: give the CA certificate (PEM)",
                        path.display()
                    ));
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            Verify::CaPem(pem) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                    let c = c.map_err(|e| format!("the CA certificate is not PEM ({e})"))?;
                    roots
                        .add(c)
                        .map_err(|e| format!("the CA certificate is unusable ({e})"))?;
                }
                if roots.is_empty() {
                    return Err("no CERTIFICATE in the CA text (PEM)".into());
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
        };
        cfg.alpn_protocols = self.alpn.iter().map(|a| a.as_bytes().to_vec()).collect();
        cfg.resumption = match self.resume {
            Resume::Off => rustls::client::Resumption::disabled(),
            Resume::Tickets => rustls::client::Resumption::in_memory_sessions(256)
                .tls12_resumption(rustls::client::Tls12Resumption::SessionIdOrTickets),
            Resume::Ids => rustls::client::Resumption::in_memory_sessions(256)
                .tls12_resumption(rustls::client::Tls12Resumption::SessionIdOnly),
        };
        self.name()?;
        Ok(Arc::new(cfg))
    }

    /// The server name as rustls takes it.
    ///
    /// # Errors
    /// Neither a DNS name nor an IP address.
    pub fn name(&self) -> Result<ServerName<'static>, String> {
        ServerName::try_from(self.server_name.clone()).map_err(|_| {
            format!(
                "--sni {:?} is neither a DNS name nor an IP address",
                self.server_name
            )
        })
    }
}

/// `--insecure`: accepts any certificate; verifies the handshake signatures with the provider's
/// algorithms (so the CPU cost matches a verifying client minus the chain check).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
