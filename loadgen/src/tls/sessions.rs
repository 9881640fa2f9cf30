//! A worker's TLS side ([`Sessions`]): its client configuration (its own resumption cache),
//! one [`TlsClient`] per slot, the plaintext scratch, and the TLS counters and handshake
//! histogram. No socket: the engine moves the bytes, the core decides what the events mean.

use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection};

use super::client::TlsClient;
use super::store;
use crate::config::{Resume, TlsOptions};
use crate::failures::{ProtoFailure, TlsOther};
use crate::latency::Latency;

/// A rustls error as its failure class: an alert this client sent (certificate errors map to
/// the alert rustls sends for them, `From<CertificateError> for AlertDescription`), an alert
/// received from the server, or another kind.
pub(crate) fn failure_of(e: &rustls::Error) -> ProtoFailure {
    use rustls::Error as E;
    match e {
        E::AlertReceived(a) => ProtoFailure::TlsAlert {
            code: u8::from(*a),
            sent: false,
        },
        E::InvalidCertificate(c) => ProtoFailure::TlsAlert {
            code: u8::from(rustls::AlertDescription::from(c.clone())),
            sent: true,
        },
        E::PeerIncompatible(_) => ProtoFailure::TlsOther(TlsOther::Incompatible),
        E::InappropriateMessage { .. }
        | E::InappropriateHandshakeMessage { .. }
        | E::InvalidMessage(_)
        | E::PeerMisbehaved(_)
        | E::DecryptError => ProtoFailure::TlsOther(TlsOther::Protocol),
        _ => ProtoFailure::TlsOther(TlsOther::Other),
    }
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
    /// Of them, by the key exchange group agreed (as `suites`); a resumed TLS 1.2 handshake
    /// has no key exchange and is not counted here.
    pub groups: Vec<(rustls::NamedGroup, u64)>,
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
        for &(g, n) in &o.groups {
            self.count_group(g, n);
        }
    }

    fn count_group(&mut self, g: rustls::NamedGroup, n: u64) {
        match self.groups.iter_mut().find(|e| e.0 == g) {
            Some(e) => e.1 += n,
            None => self.groups.push((g, n)),
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
pub(crate) struct Sessions {
    /// The configuration of a connection that offers a kept session (with `--tls-resume`).
    cfg: Arc<ClientConfig>,
    /// The configuration of one that offers none (`--tls-resume-share` below 100%): the same,
    /// its store keeping what it is given without offering anything (`store::KeepOnly`).
    cfg_fresh: Arc<ClientConfig>,
    /// `--tls-resume-share`, percent (100 without resumption: `cfg` is then `cfg_fresh`).
    share_pct: u8,
    /// Connections begun by this worker (which of them offer a session,
    /// [`crate::config::offers_session`]).
    begun: u64,
    name: ServerName<'static>,
    clients: Vec<TlsClient>,
    /// Where plaintext is read for the HTTP exchange.
    plain: Box<[u8]>,
    /// Whole run.
    pub total: TlsCounts,
    /// Measured window.
    pub measured: TlsCounts,
    /// TLS handshake latency (TCP connected → TLS handshake done), measured, ns: full and
    /// resumed handshakes together.
    pub handshake: Latency,
    /// The same, full handshakes only.
    pub full_handshake: Latency,
    /// The same, resumed handshakes only.
    pub resumed_handshake: Latency,
    /// What the worker's first full handshake negotiated (group, certificate), for the crypto
    /// floor ([`super::floor`]); kept once, so no copy per connection.
    pub negotiated: Option<super::floor::Negotiated>,
}

impl Sessions {
    /// The TLS side of a worker with `slots` slots.
    ///
    /// # Errors
    /// As [`TlsOptions::client_config`].
    pub(crate) fn new(o: &TlsOptions, slots: usize, high_ns: u64) -> Result<Sessions, String> {
        let mut cfg = (*o.client_config()?).clone();
        let mut fresh = cfg.clone();
        if o.resume != Resume::Off {
            // rustls' cache keeps 8 tickets per server; a worker may have more in flight.
            let tls12 = match o.resume {
                Resume::Ids => rustls::client::Tls12Resumption::SessionIdOnly,
                _ => rustls::client::Tls12Resumption::SessionIdOrTickets,
            };
            let kept = Arc::new(store::SessionStore::for_slots(slots));
            fresh.resumption =
                rustls::client::Resumption::store(Arc::new(store::KeepOnly(kept.clone())))
                    .tls12_resumption(tls12);
            cfg.resumption = rustls::client::Resumption::store(kept).tls12_resumption(tls12);
        }
        let cfg = Arc::new(cfg);
        Ok(Sessions {
            cfg_fresh: if o.resume == Resume::Off {
                cfg.clone()
            } else {
                Arc::new(fresh)
            },
            cfg,
            share_pct: if o.resume == Resume::Off {
                100
            } else {
                o.resume_share_pct
            },
            begun: 0,
            name: o.name()?,
            clients: (0..slots).map(|_| TlsClient::default()).collect(),
            plain: vec![0; 16 * 1024].into_boxed_slice(),
            total: TlsCounts::default(),
            measured: TlsCounts::default(),
            handshake: Latency::new(high_ns),
            full_handshake: Latency::new(high_ns),
            resumed_handshake: Latency::new(high_ns),
            negotiated: None,
        })
    }

    /// Adds another worker's counts and histogram.
    pub(crate) fn add(&mut self, o: &Sessions) {
        self.total.add(&o.total);
        self.measured.add(&o.measured);
        self.handshake.add(&o.handshake);
        self.full_handshake.add(&o.full_handshake);
        self.resumed_handshake.add(&o.resumed_handshake);
        if self.negotiated.is_none() {
            self.negotiated.clone_from(&o.negotiated);
        }
    }

    /// Starts slot `i`'s TLS connection, its TCP handshake seen complete at `t` (the
    /// ClientHello is queued in its output).
    ///
    /// # Errors
    /// rustls could not make the connection.
    pub(crate) fn begin(&mut self, i: usize, t: u64) -> Result<(), rustls::Error> {
        let offers = crate::config::offers_session(self.begun, self.share_pct);
        self.begun += 1;
        let cfg = if offers { &self.cfg } else { &self.cfg_fresh };
        let conn = ClientConnection::new(cfg.clone(), self.name.clone())?;
        self.clients[i].begin(conn, t);
        Ok(())
    }

    /// Slot `i`'s client.
    pub(crate) fn client(&mut self, i: usize) -> &mut TlsClient {
        &mut self.clients[i]
    }

    /// True once slot `i`'s TLS handshake is done.
    pub(crate) fn done(&self, i: usize) -> bool {
        self.clients[i].done
    }

    /// Slot `i`'s connection ended.
    pub(crate) fn end(&mut self, i: usize) {
        self.clients[i].end();
    }

    /// Reads the plaintext slot `i`'s connection holds ([`TlsClient::read_plain`]); the bytes
    /// are the start of the returned buffer.
    pub(crate) fn read_plain(&mut self, i: usize) -> (Result<Option<usize>, i32>, &[u8]) {
        let got = self.clients[i].read_plain(&mut self.plain);
        (got, &self.plain)
    }

    /// Counts slot `i`'s finished handshake at `t`.
    pub(crate) fn handshake_done(&mut self, i: usize, t: u64, measured: bool) {
        let s = &mut self.clients[i];
        s.done = true;
        let tcp_ns = s.tcp_ns;
        let Some(c) = s.conn() else { return };
        let resumed = c.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
        let v13 = c.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3);
        let alpn = c.alpn_protocol().is_some();
        let suite = c.negotiated_cipher_suite().map(|s| s.suite());
        let group = c.negotiated_key_exchange_group().map(|g| g.name());
        let lat = t.saturating_sub(tcp_ns);
        if !resumed && self.negotiated.is_none() {
            self.negotiated = super::floor::Negotiated::of(c);
        }
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
            if let Some(g) = group {
                k.count_group(g, 1);
            }
        };
        f(&mut self.total);
        if measured {
            f(&mut self.measured);
            self.handshake.record(lat);
            // A resumed handshake skips the certificate and the key exchange's signature: a
            // mixed distribution (15 full + 585 resumed) is bimodal and its percentiles are
            // neither's; each kind has its own.
            if resumed {
                self.resumed_handshake.record(lat);
            } else {
                self.full_handshake.record(lat);
            }
        }
    }
}
