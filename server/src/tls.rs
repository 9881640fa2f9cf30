//! `--tls`: a TLS handshake on every accepted connection (rustls, `aws-lc-rs` provider), before the
//! mode's work (`close`: close_notify and close; `http`: the request and response over TLS).
//!
//! # Certificate
//! `--cert FILE --key FILE` (PEM: the chain, leaf first, and its private key), or, when neither
//! is given, a self-signed certificate generated at start with rcgen for `localhost`,
//! `127.0.0.1` and `::1` (a fresh key every run: clients use `--insecure`, or `--ca` with the
//! PEM the server writes with `--cert-out`). rcgen and rustls both use `aws-lc-rs`, so one
//! crypto backend is built (why that one: the loadgen crate's `tls`).
//!
//! # Resumption
//! One [`rustls::ServerConfig`] is shared by all workers (an `Arc`): a ticketer
//! (`rustls::crypto::aws_lc_rs::Ticketer`, stateless tickets whose key rotates every 6 h) so TLS 1.3
//! and TLS 1.2 tickets resume on whichever worker the next connection lands on, and a session-ID
//! cache of [`SESSION_CACHE`] entries for TLS 1.2 clients without tickets. Both are behind
//! locks inside rustls, taken once per handshake; that is the one thing the workers share.
//! With resumption off (`server --tls-resume off`) there is neither: no NewSessionTicket is sent
//! (TLS 1.3 `send_tls13_tickets = 0`; TLS 1.2 no ticket extension) and no session ID is kept, so
//! every handshake is a full one whatever the client offers (RFC 8446 §2.2: a server may always
//! decline a PSK) — how to measure full handshakes with a client that resumes when it can
//! (h2load does).
//!
//! # Per connection
//! `conn::TlsConn`: the connection's TLS as a state machine over byte buffers (no socket
//! inside), which both engines drive; they only move bytes.
//!
//! # Counted
//! Per worker: TLS accepts (server handshakes completed), of them resumed, and failed
//! handshakes by class (`alert NAME received`, `alert NAME sent`, `EOF`, `ERRNO`).

mod conn;

pub(crate) use conn::{Next, SendBufs, TlsConn};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// TLS 1.2 session-ID cache size of the shared server config, sessions.
pub const SESSION_CACHE: usize = 4096;

/// The server's TLS configuration, shared by its workers.
#[derive(Clone)]
pub struct TlsServer {
    /// The rustls config.
    pub config: Arc<rustls::ServerConfig>,
    /// The certificate chain as PEM (for `--cert-out`).
    pub cert_pem: String,
    /// True when generated at start (self-signed).
    pub self_signed: bool,
    /// Whether clients can resume (tickets and the session-ID cache); `false`: every handshake
    /// is full.
    pub resumption: bool,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsServer")
            .field("self_signed", &self.self_signed)
            .field("resumption", &self.resumption)
            .finish_non_exhaustive()
    }
}

impl PartialEq for TlsServer {
    fn eq(&self, o: &TlsServer) -> bool {
        Arc::ptr_eq(&self.config, &o.config)
    }
}

impl Eq for TlsServer {}

/// Why the TLS set-up failed (bad input: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read or holds nothing usable.
    #[error("--{what} {}: {why}: give a PEM file with the {what_long}", path.display())]
    File {
        /// `cert` or `key`.
        what: &'static str,
        /// What the file should hold.
        what_long: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// Only one of `--cert` and `--key`.
    #[error("--cert and --key go together: give both, or neither for a self-signed certificate")]
    Half,
    /// The key is of a kind or size the crypto provider (aws-lc-rs) does not sign with.
    #[error(
        "--key {}: not a signing key this server can use ({why}): give an ECDSA P-256/P-384/P-521, Ed25519 or RSA key of at least 2,048 bits",
        path.display()
    )]
    KeyKind {
        /// The file.
        path: PathBuf,
        /// What the provider said.
        why: String,
    },
    /// rustls refused the pair (e.g. the key does not match the certificate).
    #[error(
        "the certificate and key cannot be used together ({0}): give the key of that certificate"
    )]
    Pair(String),
    /// rcgen could not make the self-signed certificate.
    #[error("cannot generate a self-signed certificate: {0}")]
    Generate(String),
}

/// Builds the shared server config from `--cert`/`--key`, or a self-signed certificate when both
/// are `None`; with `resumption` (the default of `server --tls`) tickets and a session-ID cache
/// (module docs, "Resumption"), without it every handshake is full.
///
/// # Errors
/// [`TlsError`]: an unreadable or empty file, a key the provider cannot sign with (e.g. RSA
/// below 2048 bits: aws-lc-rs refuses them), a key that does not fit the certificate, only one
/// of the two files.
pub fn server_config(
    cert: Option<&Path>,
    key: Option<&Path>,
    resumption: bool,
) -> Result<TlsServer, TlsError> {
    server_config_with_groups(cert, key, resumption, None)
}

/// [`server_config`] accepting only the key exchange groups `kx_groups`, in its order of
/// preference (`server --tls-groups`); `None`: the aws-lc-rs provider's default list (X25519,
/// P-256, P-384, X25519MLKEM768).
///
/// # Errors
/// As [`server_config`].
pub fn server_config_with_groups(
    cert: Option<&Path>,
    key: Option<&Path>,
    resumption: bool,
    kx_groups: Option<Vec<&'static dyn rustls::crypto::SupportedKxGroup>>,
) -> Result<TlsServer, TlsError> {
    let key_path = key;
    let (chain, key, cert_pem, self_signed) = match (cert, key) {
        (Some(c), Some(k)) => {
            let file_err = |what, what_long, path: &Path, why: String| TlsError::File {
                what,
                what_long,
                path: path.to_path_buf(),
                why,
            };
            // Bounded reads of regular files: `/dev/zero` filled memory, a FIFO hung.
            let read = |what, what_long, path: &Path| {
                common::files::read_regular(path, common::files::MAX_PEM_BYTES).map_err(|e| {
                    // Its own advice ("give a file") is the one below.
                    let why = e.to_string();
                    let why = why.trim_end_matches(": give a file").to_string();
                    file_err(what, what_long, path, why)
                })
            };
            let cert_bytes = read("cert", "certificate chain", c)?;
            let key_bytes = read("key", "private key", k)?;
            let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_bytes)
                .collect::<Result<_, _>>()
                .map_err(|e| file_err("cert", "certificate chain", c, e.to_string()))?;
            if chain.is_empty() {
                let why = pem_kind(&cert_bytes, Pem::Cert)
                    .unwrap_or_else(|| "no CERTIFICATE in it".into());
                return Err(file_err("cert", "certificate chain", c, why));
            }
            let key = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| {
                // rustls-pki-types says "no items found" for an encrypted key, a DER file and
                // a certificate alike.
                let why = pem_kind(&key_bytes, Pem::Key).unwrap_or_else(|| e.to_string());
                file_err("key", "private key", k, why)
            })?;
            let pem = String::from_utf8_lossy(&cert_bytes).into_owned();
            (chain, key, pem, false)
        }
        (None, None) => {
            let names = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
            let ck = rcgen::generate_simple_self_signed(names)
                .map_err(|e| TlsError::Generate(e.to_string()))?;
            let key = PrivateKeyDer::try_from(ck.signing_key.serialize_der())
                .map_err(|e| TlsError::Generate(e.to_string()))?;
            (vec![ck.cert.der().clone()], key, ck.cert.pem(), true)
        }
        _ => return Err(TlsError::Half),
    };
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    if let Some(g) = kx_groups {
        provider.kx_groups = g;
    }
    let provider = Arc::new(provider);
    // Loaded on its own first, so that a key the provider will not sign with (RSA-1024) is not
    // reported as a key that does not match its certificate.
    if let (Err(e), Some(path)) = (
        provider.key_provider.load_private_key(key.clone_key()),
        key_path,
    ) {
        // aws-lc-rs says "failed to parse private key as RSA, ECDSA, or EdDSA" of a well-formed
        // RSA key it will not sign with (below 2,048 bits).
        let why = if is_rsa(&key) {
            format!(
                "an RSA key aws-lc-rs will not sign with, most likely shorter than 2,048 bits: {e}"
            )
        } else {
            format!("aws-lc-rs: {e}")
        };
        return Err(TlsError::KeyKind {
            path: path.to_path_buf(),
            why,
        });
    }
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| TlsError::Pair(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Pair(e.to_string()))?;
    if resumption {
        cfg.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new()
            .map_err(|e| TlsError::Pair(e.to_string()))?;
        cfg.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSION_CACHE);
    } else {
        // rustls's defaults are a ticketer that never makes tickets; the session store and the
        // TLS 1.3 ticket count are set here.
        cfg.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        cfg.send_tls13_tickets = 0;
    }
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsServer {
        config: Arc::new(cfg),
        cert_pem,
        self_signed,
        resumption,
    })
}

/// Which file a PEM was given as.
#[derive(Clone, Copy, PartialEq)]
enum Pem {
    Cert,
    Key,
}

/// What a `--cert`/`--key` file that yielded nothing holds instead, in words with the fix:
/// an encrypted key, the other kind of PEM, or no PEM at all (DER); `None` when none applies.
fn pem_kind(bytes: &[u8], given_as: Pem) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let has = |label: &str| text.contains(&format!("-----BEGIN {label}-----"));
    if has("ENCRYPTED PRIVATE KEY") {
        return Some(
            "an encrypted private key (the server cannot ask for its passphrase): decrypt it \
             first, e.g. `openssl pkey -in KEY -out KEY.plain`"
                .into(),
        );
    }
    let key = ["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"]
        .iter()
        .any(|l| has(l));
    match given_as {
        Pem::Key if has("CERTIFICATE") && !key => {
            return Some("it holds a certificate, not a private key".into())
        }
        Pem::Cert if key && !has("CERTIFICATE") => {
            return Some("it holds a private key, not a certificate".into())
        }
        _ => {}
    }
    (!text.contains("-----BEGIN ")).then(|| {
        "not PEM (no -----BEGIN line; DER or another format): convert it, e.g. `openssl x509 \
         -inform DER -in F -out F.pem` for a certificate, `openssl pkey -inform DER -in F -out \
         F.pem` for a key"
            .into()
    })
}

/// True for an RSA key (PKCS#1, or PKCS#8 whose algorithm is rsaEncryption, OID
/// 1.2.840.113549.1.1.1, RFC 8017 appendix C).
fn is_rsa(key: &PrivateKeyDer<'_>) -> bool {
    const RSA_OID: [u8; 11] = [
        0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01,
    ];
    match key {
        PrivateKeyDer::Pkcs1(_) => true,
        PrivateKeyDer::Pkcs8(k) => k
            .secret_pkcs8_der()
            .iter()
            .take(32)
            .collect::<Vec<_>>()
            .windows(RSA_OID.len())
            .any(|w| w.iter().copied().eq(RSA_OID.iter())),
        _ => false,
    }
}

/// A worker's TLS counters.
#[derive(Debug, Clone)]
pub(crate) struct TlsCounts {
    /// Handshakes completed.
    pub(crate) accepted: u64,
    /// Of them, resumed.
    pub(crate) resumed: u64,
    /// Failed handshakes by alert received (index = alert code).
    alert_received: [u64; 256],
    /// Failed handshakes by alert this server sent.
    alert_sent: [u64; 256],
    /// The client closed during the handshake.
    eof: u64,
    /// The socket failed during the handshake, by errno.
    errno: common::errno::ErrnoCounts,
}

impl Default for TlsCounts {
    fn default() -> Self {
        TlsCounts {
            accepted: 0,
            resumed: 0,
            alert_received: [0; 256],
            alert_sent: [0; 256],
            eof: 0,
            errno: Default::default(),
        }
    }
}

impl TlsCounts {
    /// Counts a completed handshake.
    pub(crate) fn done(&mut self, conn: &rustls::ServerConnection) {
        self.accepted += 1;
        self.resumed += u64::from(conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed));
    }

    /// Counts a failed handshake: rustls' error.
    pub(crate) fn failed(&mut self, e: &rustls::Error) {
        match e {
            rustls::Error::AlertReceived(a) => self.alert_received[usize::from(u8::from(*a))] += 1,
            rustls::Error::InvalidCertificate(c) => {
                let a = rustls::AlertDescription::from(c.clone());
                self.alert_sent[usize::from(u8::from(a))] += 1;
            }
            // What rustls answers to other errors is a decode error, an unexpected message or
            // a handshake failure; counted under the generic one.
            _ => {
                self.alert_sent
                    [usize::from(u8::from(rustls::AlertDescription::HandshakeFailure))] += 1
            }
        }
    }

    /// Counts a handshake the client ended (FIN) before it was done.
    pub(crate) fn eof(&mut self) {
        self.eof += 1;
    }

    /// Counts a handshake whose socket failed with `errno`.
    pub(crate) fn errno(&mut self, errno: i32) {
        self.errno.count(errno);
    }

    /// Failed handshakes, all classes.
    pub(crate) fn failed_total(&self) -> u64 {
        self.alert_received.iter().sum::<u64>()
            + self.alert_sent.iter().sum::<u64>()
            + self.eof
            + self.errno.total()
    }

    /// Failed handshakes by class: `alert NAME received`, `alert NAME sent`, `EOF`, errno names.
    pub(crate) fn failures(&self) -> BTreeMap<String, u64> {
        let mut m = self.errno.to_map();
        for (code, (&r, &s)) in self
            .alert_received
            .iter()
            .zip(self.alert_sent.iter())
            .enumerate()
        {
            let name = format!("{:?}", rustls::AlertDescription::from(code as u8));
            if r > 0 {
                m.insert(format!("alert {name} received"), r);
            }
            if s > 0 {
                m.insert(format!("alert {name} sent"), s);
            }
        }
        if self.eof > 0 {
            m.insert("EOF".into(), self.eof);
        }
        m
    }
}
