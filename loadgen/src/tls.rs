//! TLS on the load side (`--tls`): a TLS handshake on every connection after the TCP handshake,
//! with rustls and its `aws-lc-rs` crypto provider, then (with `--http`) the request over it.
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
//!
//! # Per worker, per connection
//! Each worker builds its own [`rustls::ClientConfig`] once ([`TlsOptions::client_config`]), so
//! its resumption cache (`--tls-resume`) is its own: no lock is shared between workers (the
//! cache's own mutex is taken only by its worker). Each slot holds a
//! [`rustls::ClientConnection`] while its connection lives; beyond what rustls allocates for a
//! connection nothing is allocated per connection. Records are read and written with
//! `read_tls`/`write_tls` on the non-blocking socket, plaintext through the worker's scratch.
//!
//! # What is measured
//! The TLS handshake latency (TCP handshake seen complete → TLS handshake done, i.e. the client
//! has the server's Finished), full vs resumed handshakes (rustls `handshake_kind()`), and
//! failures by alert (`TLS alert CertificateUnknown sent` when this client refused the
//! certificate) or
//! cause ([`crate::failures::ProtoFailures`]). Without `--http` an attempt succeeds when its
//! TLS handshake is done; the client then sends close_notify and reads until the server closes
//! (so TLS 1.3 session tickets, sent after the handshake, are read for resumption).

use std::io::{ErrorKind, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme};
use serde::{Deserialize, Serialize};

use crate::failures::{ProtoFailures, TlsOther};

mod exchange;
mod store;
use crate::report::{HistogramSummary, Overflow};
use crate::stats::Latency;

/// The name of TLS alert `code` (RFC 8446 §6, as rustls spells it: `UnknownCA`,
/// `BadCertificate`, `HandshakeFailure`; an unassigned code as `Unknown(0x..)`).
pub fn alert_name(code: u8) -> String {
    format!("{:?}", rustls::AlertDescription::from(code))
}

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

/// Counts a rustls error as its failure class: an alert this client sent (certificate errors
/// map to the alert rustls sends for them, `From<CertificateError> for AlertDescription`), an alert
/// received from the server, or another kind.
pub(crate) fn count_error(p: &mut ProtoFailures, e: &rustls::Error) {
    use rustls::Error as E;
    match e {
        E::AlertReceived(a) => p.tls_alert(u8::from(*a), false),
        E::InvalidCertificate(c) => {
            p.tls_alert(u8::from(rustls::AlertDescription::from(c.clone())), true)
        }
        E::PeerIncompatible(_) => p.tls_other(TlsOther::Incompatible),
        E::InappropriateMessage { .. }
        | E::InappropriateHandshakeMessage { .. }
        | E::InvalidMessage(_)
        | E::PeerMisbehaved(_)
        | E::DecryptError => p.tls_other(TlsOther::Protocol),
        _ => p.tls_other(TlsOther::Other),
    }
}

/// One slot's TLS state.
#[derive(Debug, Default)]
pub(crate) struct TlsSlot {
    /// The connection (while the slot's socket lives).
    pub conn: Option<ClientConnection>,
    /// When the TCP handshake was seen complete, ns.
    pub tcp_ns: u64,
    /// The TLS handshake is done.
    pub done: bool,
    /// close_notify was queued.
    pub closing: bool,
}

/// TLS counters of one scope.
#[derive(Debug, Clone, Default)]
pub(crate) struct TlsCounts {
    /// TLS handshakes done.
    pub handshakes: u64,
    /// Of them, full (incl. with a HelloRetryRequest).
    pub full: u64,
    /// Of them, resumed.
    pub resumed: u64,
    /// Of them, TLS 1.3.
    pub tls13: u64,
    /// Of them, TLS 1.2.
    pub tls12: u64,
    /// Of them, with the first offered ALPN protocol agreed.
    pub alpn_agreed: u64,
    /// Of them, by the cipher suite agreed (a suite appears on its first handshake: a few
    /// entries, no allocation per connection after them).
    pub suites: Vec<(rustls::CipherSuite, u64)>,
}

impl TlsCounts {
    fn add(&mut self, o: &TlsCounts) {
        self.handshakes += o.handshakes;
        self.full += o.full;
        self.resumed += o.resumed;
        self.tls13 += o.tls13;
        self.tls12 += o.tls12;
        self.alpn_agreed += o.alpn_agreed;
        for &(s, n) in &o.suites {
            self.count_suite(s, n);
        }
    }

    fn count_suite(&mut self, s: rustls::CipherSuite, n: u64) {
        match self.suites.iter_mut().find(|e| e.0 == s) {
            Some(e) => e.1 += n,
            None => self.suites.push((s, n)),
        }
    }
}

/// A worker's TLS side.
#[derive(Debug)]
pub(crate) struct TlsWorker {
    pub cfg: Arc<ClientConfig>,
    pub name: ServerName<'static>,
    pub slots: Vec<TlsSlot>,
    pub scratch: Box<[u8]>,
    pub total: TlsCounts,
    pub measured: TlsCounts,
    /// TLS handshake latency (TCP connected → TLS handshake done), measured, ns.
    pub handshake: Latency,
}

impl TlsWorker {
    /// The TLS side of a worker with `slots` slots.
    ///
    /// # Errors
    /// As [`TlsOptions::client_config`].
    pub(crate) fn new(o: &TlsOptions, slots: usize, high_ns: u64) -> Result<TlsWorker, String> {
        let mut cfg = (*o.client_config()?).clone();
        if o.resume != Resume::Off {
            // rustls' cache keeps 8 tickets per server; a worker may have more in flight.
            let tls12 = match o.resume {
                Resume::Ids => rustls::client::Tls12Resumption::SessionIdOnly,
                _ => rustls::client::Tls12Resumption::SessionIdOrTickets,
            };
            cfg.resumption =
                rustls::client::Resumption::store(Arc::new(store::SessionStore::for_slots(slots)))
                    .tls12_resumption(tls12);
        }
        Ok(TlsWorker {
            cfg: Arc::new(cfg),
            name: o.name()?,
            slots: (0..slots).map(|_| TlsSlot::default()).collect(),
            scratch: vec![0; 16 * 1024].into_boxed_slice(),
            total: TlsCounts::default(),
            measured: TlsCounts::default(),
            handshake: Latency::new(high_ns),
        })
    }

    /// Adds another worker's counts and histogram.
    pub(crate) fn add(&mut self, o: &TlsWorker) {
        self.total.add(&o.total);
        self.measured.add(&o.measured);
        self.handshake.add(&o.handshake);
    }

    /// Counts slot `i`'s finished handshake at `t`.
    pub(crate) fn handshake_done(&mut self, i: usize, t: u64, measured: bool) {
        let s = &mut self.slots[i];
        s.done = true;
        let Some(c) = s.conn.as_ref() else { return };
        let resumed = c.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
        let v13 = c.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3);
        let alpn = c.alpn_protocol().is_some();
        let suite = c.negotiated_cipher_suite().map(|s| s.suite());
        let lat = t.saturating_sub(s.tcp_ns);
        let f = |k: &mut TlsCounts| {
            k.handshakes += 1;
            k.resumed += u64::from(resumed);
            k.full += u64::from(!resumed);
            k.tls13 += u64::from(v13);
            k.tls12 += u64::from(!v13);
            k.alpn_agreed += u64::from(alpn);
            if let Some(s) = suite {
                k.count_suite(s, 1);
            }
        };
        f(&mut self.total);
        if measured {
            f(&mut self.measured);
            self.handshake.record(lat);
        }
    }
}

/// What a TLS step ended with.
pub(crate) enum TlsStep {
    /// Waiting for the socket.
    Wait,
    /// The TLS handshake just completed.
    Handshaken,
    /// Plaintext arrived after the handshake; the socket may hold more (drive again after
    /// taking it: rustls bounds what it buffers).
    Plaintext,
    /// The server closed (close_notify or FIN) after the handshake.
    Closed,
    /// Failed: the socket (errno).
    Errno(i32),
    /// Failed: the server closed during the handshake.
    Eof,
    /// Failed: rustls refused (counted by [`count_error`]).
    Tls(rustls::Error),
}

/// Writes what rustls has queued to `sock` until it is empty or the socket is full.
pub(crate) fn flush(conn: &mut ClientConnection, mut sock: &socket2::Socket) -> Result<(), i32> {
    while conn.wants_write() {
        match conn.write_tls(&mut sock) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.raw_os_error().unwrap_or(libc::EIO)),
        }
    }
    Ok(())
}

/// Drives slot `s`'s connection on `sock`: flushes, reads records until the socket is empty,
/// processes them. Before the handshake is done it returns when it completes; after it, the
/// plaintext that arrived is left in the connection's reader for the caller.
pub(crate) fn drive(s: &mut TlsSlot, sock: &socket2::Socket) -> TlsStep {
    let Some(conn) = s.conn.as_mut() else {
        return TlsStep::Closed;
    };
    loop {
        if let Err(e) = flush(conn, sock) {
            return TlsStep::Errno(e);
        }
        let mut r = sock;
        let n = match conn.read_tls(&mut r) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return TlsStep::Wait,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return TlsStep::Errno(e.raw_os_error().unwrap_or(libc::EIO)),
        };
        let state = match conn.process_new_packets() {
            Ok(st) => st,
            Err(e) => {
                // The alert rustls queued for the server.
                let _ = flush(conn, sock);
                return TlsStep::Tls(e);
            }
        };
        if !s.done && !conn.is_handshaking() {
            // Not flushed here: the caller appends the request (or close_notify) and flushes
            // both in one write. Two writes would be two segments, and the second (the request
            // after a resumed TLS 1.2 handshake, where the client speaks last) would wait under
            // Nagle for the server's delayed ACK of the first: ~40 ms per connection (measured:
            // 24 conn/s, response p50 43.9 ms, against 566 conn/s for full handshakes).
            return TlsStep::Handshaken;
        }
        let _ = flush(conn, sock);
        if n == 0 || state.peer_has_closed() {
            return if s.done {
                TlsStep::Closed
            } else {
                TlsStep::Eof
            };
        }
        if s.done && state.plaintext_bytes_to_read() > 0 {
            return TlsStep::Plaintext;
        }
    }
}

/// Reads the plaintext rustls holds for slot `s` into `buf`: `Ok(Some(n))` bytes, `Ok(None)`
/// nothing now, `Ok(Some(0))` the server closed cleanly (close_notify).
pub(crate) fn read_plain(s: &mut TlsSlot, buf: &mut [u8]) -> Result<Option<usize>, i32> {
    let Some(conn) = s.conn.as_mut() else {
        return Ok(Some(0));
    };
    match conn.reader().read(buf) {
        Ok(n) => Ok(Some(n)),
        Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(None),
        // A FIN without close_notify: the stream ended (a close-delimited body ends here too).
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(Some(0)),
        Err(e) => Err(e.raw_os_error().unwrap_or(libc::EIO)),
    }
}

/// Queues `data` as plaintext on slot `s` (rustls buffers it; sent by the next flush).
pub(crate) fn write_plain(s: &mut TlsSlot, data: &[u8]) -> Result<(), i32> {
    let Some(conn) = s.conn.as_mut() else {
        return Err(libc::EPIPE);
    };
    conn.writer()
        .write_all(data)
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
}

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
    /// Whole run (warm-up included): TLS handshakes done.
    pub total_handshakes: u64,
    /// Whole run: full handshakes.
    pub total_full: u64,
    /// Whole run: resumed handshakes.
    pub total_resumed: u64,
    /// TLS handshake latency, ns: TCP handshake seen complete → TLS handshake done.
    #[serde(serialize_with = "crate::report::summary")]
    pub handshake: hdrhistogram::Histogram<u64>,
    /// Values above the histogram's range.
    pub handshake_overflow: Overflow,
}

impl TlsReport {
    /// The warning when resumption was asked for (`--tls-resume tickets|ids`) and none happened
    /// although some in-flight slot made more than one handshake (`total_handshakes` above
    /// `slots`, the most in flight at once): the server offers no resumption (no tickets, no
    /// session cache; e.g. `connstorm server --tls --tls-resume off`, nginx with
    /// `ssl_session_tickets off` and no `ssl_session_cache`), so every handshake was full and
    /// the run measured full handshakes, not resumed ones. `None` otherwise.
    pub fn resumption_warning(&self, slots: u64) -> Option<String> {
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

    pub(crate) fn of(o: &TlsOptions, w: TlsWorker) -> TlsReport {
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
            total_handshakes: w.total.handshakes,
            total_full: w.total.full,
            total_resumed: w.total.resumed,
            handshake_overflow: w.handshake.overflow(),
            handshake: w.handshake.hist,
        }
    }

    /// The handshake histogram's summary.
    pub fn summary(&self) -> HistogramSummary {
        HistogramSummary::of(&self.handshake)
    }
}

/// Writes the TLS part of a load report.
pub(crate) fn render(
    out: &mut std::fmt::Formatter<'_>,
    t: &TlsReport,
    measured_secs: f64,
) -> std::fmt::Result {
    use common::numfmt;
    let per_sec = |n: u64| {
        if measured_secs > 0.0 {
            numfmt::fixed(n as f64 / measured_secs, 1)
        } else {
            "-".into()
        }
    };
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
    crate::render::hist(
        out,
        "tls handshake (TCP connected -> done)   ",
        &t.summary(),
    )?;
    crate::render::overflow(out, &t.handshake_overflow)
}
