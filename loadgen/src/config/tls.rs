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
//! `--tls-groups` picks them ([`kx_groups`]: any group of the provider, X25519MLKEM768
//! included). By default X25519, then P-256, then P-384 (ring's list, kept): the provider's default list also names
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlsVersion {
    /// TLS 1.3 and 1.2 (the server picks; usually 1.3).
    #[cfg_attr(feature = "clap", value(help = "TLS 1.3 and 1.2."))]
    #[default]
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
    /// Key exchange groups offered, in order (`--tls-groups`), as [`kx_groups`] reads them
    /// (`x25519`, `p256`, `X25519MLKEM768`). Empty (the default, and older records): X25519,
    /// P-256, P-384 (the module doc says why not the provider's list).
    #[serde(default)]
    pub groups: Vec<String>,
    /// With resumption (`resume` not `Off`): the share of a worker's connections, percent, that
    /// offer a session it kept (`--tls-resume-share`, 0..=100). The rest start as a new client
    /// does (no session, no remembered key-share group), though the sessions they are given
    /// are kept for the others. Connection `n` of a worker offers one when `⌊(n+1)·p/100⌋`
    /// exceeds `⌊n·p/100⌋`, so every run of 100 connections has exactly `p` offering one
    /// (deterministic, no random draw). Default (and in older records) 100: every connection
    /// after a worker's first finds a session.
    #[serde(default = "all_connections")]
    pub resume_share_pct: u8,
}

fn all_connections() -> u8 {
    100
}

/// Whether connection `n` (0-based, of one worker) offers a kept session when `pct` percent of
/// them do: exactly `pct` of every 100 consecutive connections, spread evenly
/// ([`TlsOptions::resume_share_pct`]).
pub fn offers_session(n: u64, pct: u8) -> bool {
    let p = u64::from(pct.min(100));
    (n + 1) * p / 100 > n * p / 100
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

/// The key exchange groups the client offers by default, in order (see the module doc):
/// X25519, P-256, P-384.
const KX_GROUPS: &[&dyn rustls::crypto::SupportedKxGroup] = &[
    rustls::crypto::aws_lc_rs::kx_group::X25519,
    rustls::crypto::aws_lc_rs::kx_group::SECP256R1,
    rustls::crypto::aws_lc_rs::kx_group::SECP384R1,
];

/// A key exchange group's name as the IANA TLS Supported Groups registry spells it
/// (`X25519`, `secp256r1`, `X25519MLKEM768`; rustls' `NamedGroup` names).
pub fn group_name(g: &dyn rustls::crypto::SupportedKxGroup) -> String {
    format!("{:?}", g.name())
}

/// Other spellings of the groups: OpenSSL's and the NIST curve names.
const GROUP_ALIASES: &[(&str, &str)] = &[
    ("P256", "SECP256R1"),
    ("P-256", "SECP256R1"),
    ("PRIME256V1", "SECP256R1"),
    ("P384", "SECP384R1"),
    ("P-384", "SECP384R1"),
];

/// The key exchange groups for `names` (`--tls-groups`, `server --tls-groups`), in that order;
/// for an empty list X25519, P-256, P-384. A name is matched without regard to case, as IANA
/// names it (`x25519`, `secp256r1`, `secp384r1`, `X25519MLKEM768`, `SECP256R1MLKEM768`,
/// `MLKEM768`, `MLKEM1024`: every group of the aws-lc-rs provider, rustls 0.23.46) or as
/// `p256`/`p-256`/`prime256v1`, `p384`/`p-384`.
///
/// # Errors
/// A name that is not a group of the provider (the message lists those that are), an empty
/// name, or a group given twice.
pub fn kx_groups(
    names: &[String],
) -> Result<Vec<&'static dyn rustls::crypto::SupportedKxGroup>, String> {
    if names.is_empty() {
        return Ok(KX_GROUPS.to_vec());
    }
    let all = rustls::crypto::aws_lc_rs::ALL_KX_GROUPS;
    let mut v: Vec<&'static dyn rustls::crypto::SupportedKxGroup> = Vec::with_capacity(names.len());
    for n in names {
        let mut want = n.trim().to_ascii_uppercase();
        if want.is_empty() {
            return Err(
                "--tls-groups: an empty name (a stray comma?): give group names separated by commas, e.g. --tls-groups x25519,p256"
                    .into(),
            );
        }
        if let Some((_, to)) = GROUP_ALIASES.iter().find(|(from, _)| *from == want) {
            want = (*to).to_string();
        }
        let Some(g) = all
            .iter()
            .find(|g| group_name(**g).to_ascii_uppercase() == want)
        else {
            let known: Vec<String> = all.iter().map(|g| group_name(*g)).collect();
            return Err(format!(
                "--tls-groups: {n:?} is not a key exchange group of this build (rustls, aws-lc-rs provider): give one or more of {} (p256 and p384 name secp256r1 and secp384r1)",
                known.join(", ")
            ));
        };
        if v.iter().any(|x| x.name() == g.name()) {
            return Err(format!(
                "--tls-groups: {:?} names {} again: give each group once",
                n.trim(),
                group_name(*g)
            ));
        }
        v.push(*g);
    }
    Ok(v)
}

/// The elliptic curve of an ECDSA certificate's public key (`DER`, the leaf): its group, when
/// it is P-256 or P-384 (the named-curve OID of the subjectPublicKeyInfo; a leaf's DER holds
/// no other curve OID: its signature names only the hash, `ecdsa-with-SHA256`).
fn ecdsa_curve(der: &[u8]) -> Option<rustls::NamedGroup> {
    // 06 08 2A8648CE3D030107: 1.2.840.10045.3.1.7 (prime256v1); 06 05 2B81040022:
    // 1.3.132.0.34 (secp384r1), RFC 5480 2.1.1.1.
    const P256: &[u8] = &[0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07];
    const P384: &[u8] = &[0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x22];
    let has = |oid: &[u8]| der.windows(oid.len()).any(|w| w == oid);
    if has(P256) {
        Some(rustls::NamedGroup::secp256r1)
    } else if has(P384) {
        Some(rustls::NamedGroup::secp384r1)
    } else {
        None
    }
}

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
            kx_groups: self.kx_groups()?,
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
        if self.resume_share_pct > 100 {
            return Err(format!(
                "--tls-resume-share {}%: a share is 0% to 100% of the connections",
                self.resume_share_pct
            ));
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
        if self.version == TlsVersion::V12 {
            let tls12 = rustls::ProtocolVersion::TLSv1_2;
            if let Some(g) = provider
                .kx_groups
                .iter()
                .find(|g| !g.usable_for_version(tls12))
            {
                return Err(format!(
                    "--tls-groups: {} is a TLS 1.3 group, and --tls-version 1.2 offers only TLS 1.2: drop it from --tls-groups (x25519, p256, p384 work with TLS 1.2) or offer TLS 1.3",
                    group_name(*g)
                ));
            }
        }
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|e| {
                format!(
                    "--tls-ciphers and --tls-version: {e}: offer a suite of the version(s) \
                     (TLS13_* for 1.3, TLS_ECDHE_* for 1.2)"
                )
            })?;
        let mut cfg = match self.roots()? {
            None => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
                .with_no_client_auth(),
            Some(roots) => builder.with_root_certificates(roots).with_no_client_auth(),
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

    /// The CA certificates the check trusts; `None` with `--insecure`.
    ///
    /// # Errors
    /// An unreadable or empty CA file, or one that is not PEM certificates.
    fn roots(&self) -> Result<Option<rustls::RootCertStore>, String> {
        let mut roots = rustls::RootCertStore::empty();
        match &self.verify {
            Verify::Insecure => return Ok(None),
            Verify::Ca(path) => {
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
            }
            Verify::CaPem(pem) => {
                for c in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                    let c = c.map_err(|e| format!("the CA certificate is not PEM ({e})"))?;
                    roots
                        .add(c)
                        .map_err(|e| format!("the CA certificate is unusable ({e})"))?;
                }
                if roots.is_empty() {
                    return Err("no CERTIFICATE in the CA text (PEM)".into());
                }
            }
        }
        Ok(Some(roots))
    }

    /// Checks a server's certificate chain (`chain_pem`, leaf first) as every connection's
    /// handshake will: against the trusted CAs, for [`Self::server_name`], now. Nothing to
    /// check with `--insecure`. For a server whose certificate is known before the run
    /// (`bench`'s own), so a chain the load would refuse on every connection is refused once.
    ///
    /// # Errors
    /// What the check says (an unknown issuer, a name the certificate does not hold, ...).
    pub fn check_server_chain(&self, chain_pem: &str) -> Result<(), String> {
        let Some(roots) = self.roots()? else {
            return Ok(());
        };
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(chain_pem.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| format!("the certificate is not PEM ({e})"))?;
        let Some((leaf, rest)) = chain.split_first() else {
            return Err("no CERTIFICATE in the chain".into());
        };
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| e.to_string())?;
        verifier
            .verify_server_cert(leaf, rest, &self.name()?, &[], UnixTime::now())
            .map(|_| ())
            .map_err(|e| format!("{e} (server name {:?})", self.server_name))
    }

    /// The key exchange groups offered ([`kx_groups`] of [`Self::groups`]).
    ///
    /// # Errors
    /// As [`kx_groups`].
    pub fn kx_groups(&self) -> Result<Vec<&'static dyn rustls::crypto::SupportedKxGroup>, String> {
        kx_groups(&self.groups)
    }

    /// The groups offered, by name, in order (the default list spelled out), for the record.
    pub fn offered_groups(&self) -> Vec<String> {
        self.kx_groups()
            .map(|v| v.iter().map(|g| group_name(*g)).collect())
            .unwrap_or_else(|_| self.groups.clone())
    }

    /// The cipher suites offered, by rustls' name, in order (the default list spelled out), for
    /// the record.
    pub fn offered_ciphers(&self) -> Vec<String> {
        cipher_suites(&self.ciphers)
            .map(|v| v.iter().map(suite_name).collect())
            .unwrap_or_else(|_| self.ciphers.clone())
    }

    /// What the client offers, one line: `groups X25519,secp256r1,secp384r1; ciphers …;
    /// resumption tickets, 30% of connections offer a session; certificate checked`.
    pub fn offer_line(&self) -> String {
        let resume = match self.resume {
            Resume::Off => "resumption off".to_string(),
            r => format!(
                "resumption {}, {}% of connections offer a kept session",
                if r == Resume::Ids { "ids" } else { "tickets" },
                self.resume_share_pct
            ),
        };
        format!(
            "groups {}; ciphers {}; {resume}; {}",
            self.offered_groups().join(","),
            self.offered_ciphers().join(","),
            if self.verified() {
                "certificate checked"
            } else {
                "certificate NOT checked (--insecure)"
            }
        )
    }

    /// True unless `--insecure`: the server's certificate is checked.
    pub fn verified(&self) -> bool {
        !matches!(self.verify, Verify::Insecure)
    }

    /// Checks that a server with this leaf certificate (`cert_pem`, PEM, leaf first) can do the
    /// handshakes these options offer: with TLS 1.2 only, an ECDSA certificate signs the key
    /// exchange only on a curve the client offers among its groups (RFC 8422 5.1: the
    /// client's supported groups name the curves it takes for ECDHE and ECDSA alike, and a
    /// server that follows it, OpenSSL's, refuses the ECDSA suites otherwise). TLS 1.3 names
    /// the signature's curve in signature_algorithms instead, so any group works.
    ///
    /// # Errors
    /// A message naming `--tls-groups`, the certificate's curve and the fix.
    pub fn check_certificate(&self, cert_pem: &str) -> Result<(), String> {
        if self.version != TlsVersion::V12 {
            return Ok(());
        }
        let Some(Ok(leaf)) = CertificateDer::pem_slice_iter(cert_pem.as_bytes()).next() else {
            return Ok(());
        };
        let Some(curve) = ecdsa_curve(&leaf) else {
            return Ok(());
        };
        let groups = self.kx_groups()?;
        if groups.iter().any(|g| g.name() == curve) {
            return Ok(());
        }
        Err(format!(
            "--tls-groups {}: the server's certificate is ECDSA on {curve:?}, which a TLS 1.2 handshake may use only when the client offers {curve:?} among its groups (RFC 8422 5.1): add {} to --tls-groups, or drop --tls-version 1.2",
            groups.iter().map(|g| group_name(*g)).collect::<Vec<_>>().join(","),
            if curve == rustls::NamedGroup::secp256r1 { "p256" } else { "p384" }
        ))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> TlsOptions {
        TlsOptions {
            version: TlsVersion::Auto,
            server_name: "localhost".into(),
            alpn: vec![],
            resume: Resume::Off,
            verify: Verify::Insecure,
            ciphers: vec![],
            groups: vec![],
            resume_share_pct: 100,
        }
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// The groups by IANA name or alias, in the order given; the default list; an unknown,
    /// empty or repeated name refused naming --tls-groups and listing the provider's groups.
    #[test]
    fn groups_are_read_by_name_and_bad_ones_refused() {
        let names = |v: &[&str]| -> Vec<String> {
            kx_groups(&strings(v))
                .unwrap()
                .iter()
                .map(|g| group_name(*g))
                .collect()
        };
        assert_eq!(names(&[]), ["X25519", "secp256r1", "secp384r1"]);
        assert_eq!(
            names(&["P-256", "x25519mlkem768", "p384", "X25519"]),
            ["secp256r1", "X25519MLKEM768", "secp384r1", "X25519"]
        );
        let e = kx_groups(&strings(&["ffdhe2048"])).unwrap_err();
        assert!(
            e.starts_with("--tls-groups: \"ffdhe2048\" is not a key exchange group")
                && e.contains("X25519MLKEM768"),
            "{e}"
        );
        assert!(kx_groups(&strings(&["x25519", "X25519"]))
            .unwrap_err()
            .contains("again"));
        assert!(kx_groups(&strings(&["x25519", ""]))
            .unwrap_err()
            .contains("an empty name"));
        // A TLS 1.3 group with TLS 1.2 only, and a share above 100%, refused by the config.
        let mut o = opts();
        o.version = TlsVersion::V12;
        o.groups = strings(&["x25519", "X25519MLKEM768"]);
        let e = o.client_config().unwrap_err();
        assert!(e.contains("X25519MLKEM768 is a TLS 1.3 group"), "{e}");
        let mut o = opts();
        o.resume_share_pct = 101;
        assert!(o.client_config().unwrap_err().contains("0% to 100%"));
    }

    /// Exactly `p` of every 100 consecutive connections offer a session, evenly spread; 100%
    /// is every one, 0% none.
    #[test]
    fn a_resume_share_is_exact_over_every_hundred_connections() {
        for p in [0u8, 1, 30, 50, 99, 100] {
            for start in [0u64, 7, 1_000] {
                let n = (start..start + 100)
                    .filter(|&n| offers_session(n, p))
                    .count();
                assert_eq!(n, usize::from(p), "{p}% from {start}");
            }
        }
        // 30%: never more than 3 connections without an offer in a row (spread, not bunched).
        let gaps: Vec<u64> = (0..100).filter(|&n| offers_session(n, 30)).collect();
        assert!(gaps.windows(2).all(|w| w[1] - w[0] <= 4), "{gaps:?}");
    }

    /// RFC 8422 5.1: with TLS 1.2 only, an ECDSA P-256 certificate needs P-256 among the
    /// groups; with TLS 1.3 any group works; the message names --tls-groups and the fix.
    #[test]
    fn an_ecdsa_certificate_needs_its_curve_among_the_groups_for_tls_1_2() {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let pem = ck.cert.pem();
        let mut o = opts();
        o.version = TlsVersion::V12;
        o.groups = strings(&["x25519"]);
        let e = o.check_certificate(&pem).unwrap_err();
        assert!(
            e.starts_with("--tls-groups X25519: the server's certificate is ECDSA on secp256r1")
                && e.contains("add p256 to --tls-groups"),
            "{e}"
        );
        o.groups = strings(&["x25519", "p256"]);
        o.check_certificate(&pem).unwrap();
        o.groups = strings(&["x25519"]);
        o.version = TlsVersion::Auto;
        o.check_certificate(&pem).unwrap();
    }

    /// The chain check a bench makes once: its own certificate passes for its name, fails for
    /// another name, and nothing is checked with --insecure.
    #[test]
    fn a_known_chain_is_checked_as_every_handshake_would() {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let pem = ck.cert.pem();
        let mut o = opts();
        o.verify = Verify::CaPem(pem.clone());
        o.check_server_chain(&pem).unwrap();
        o.server_name = "gateway.example".into();
        let e = o.check_server_chain(&pem).unwrap_err();
        assert!(e.contains("gateway.example"), "{e}");
        o.verify = Verify::Insecure;
        o.check_server_chain(&pem).unwrap();
    }
}
