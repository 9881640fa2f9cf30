//! One connection's TLS client over byte buffers ([`TlsClient`], sans-I/O): a
//! [`rustls::ClientConnection`] fed the bytes an engine received and drained of the bytes it
//! must send, without touching a socket, so any engine drives it (quinn-proto's shape; the
//! server's io_uring TLS, `server::engine::uring_tls`, is the same on the accept side).
//!
//! The engine's part, for each connection:
//! - send [`TlsClient::pending_output`] (the handshake flights, the request, alerts,
//!   close_notify: what `write_tls` queued) and report how much went with [`TlsClient::sent`];
//! - when [`TlsClient::process`] says [`TlsEvent::Wait`], receive into
//!   [`TlsClient::input_space`] and report the count with [`TlsClient::received`] (0 = the
//!   server's FIN), then call [`TlsClient::process`] again;
//! - act on the other events ([`TlsEvent`]): the core decides what they mean for the attempt
//!   (`crate::core::Core::tls_event`).
//!
//! The epoll engine does this with send(2)/recv(2) at readiness; the io_uring engine with
//! IORING_OP_SEND/RECV on the ring's own buffers, copying the output out and each receive (at
//! most [`INPUT_BYTES`]) in (`crate::engine::uring`: the kernel's pointers stay in the ring's
//! memory).
//!
//! Memory: the input buffer ([`INPUT_BYTES`]) and the output buffer are allocated on a slot's
//! first TLS connection and kept for the next ones, so a connection allocates only what rustls
//! allocates.

use std::io::{ErrorKind, Read, Write};

use rustls::ClientConnection;

/// Bytes of one receive into a connection's input (rustls reassembles records across them).
pub(crate) const INPUT_BYTES: usize = 4096;

/// What a connection's bytes amounted to ([`TlsClient::process`]).
#[derive(Debug)]
pub(crate) enum TlsEvent {
    /// Every byte received is processed: receive more (and send what is pending).
    Wait,
    /// The TLS handshake just completed (what rustls queued after it is not sent yet: the
    /// caller appends the request or close_notify first, so both go in one write).
    Handshaken,
    /// Plaintext arrived after the handshake; more may follow once it is taken (rustls bounds
    /// what it buffers).
    Plaintext,
    /// The server closed (close_notify or FIN) after the handshake.
    Closed,
    /// Failed: the socket (errno).
    Errno(i32),
    /// Failed: the server closed during the handshake.
    Eof,
    /// Failed: rustls refused (its alert is queued in the output).
    Tls(rustls::Error),
}

/// One slot's TLS connection and its buffers (reused across the slot's connections).
#[derive(Debug, Default)]
pub(crate) struct TlsClient {
    /// The connection (while the slot's connection lives).
    conn: Option<ClientConnection>,
    /// Bytes received, `input[in_start..in_end]` not yet fed to rustls.
    input: Box<[u8]>,
    in_start: usize,
    in_end: usize,
    /// The server's FIN was received (after `input`).
    eof: bool,
    /// Bytes to send, `output[out_sent..]` not yet sent.
    output: Vec<u8>,
    out_sent: usize,
    /// When the TCP handshake was seen complete, ns.
    pub tcp_ns: u64,
    /// The TLS handshake is done.
    pub done: bool,
    /// close_notify was queued.
    pub closing: bool,
}

impl TlsClient {
    /// Starts the slot's connection `conn` (its TCP handshake seen complete at `t`).
    pub(crate) fn begin(&mut self, conn: ClientConnection, t: u64) {
        if self.input.is_empty() {
            self.input = vec![0; INPUT_BYTES].into_boxed_slice();
        }
        self.conn = Some(conn);
        self.in_start = 0;
        self.in_end = 0;
        self.eof = false;
        self.output.clear();
        self.out_sent = 0;
        self.tcp_ns = t;
        self.done = false;
        self.closing = false;
    }

    /// The slot's connection ended (its socket is closed): the connection is dropped, the
    /// buffers kept.
    pub(crate) fn end(&mut self) {
        self.conn = None;
    }

    /// The connection, while it lives.
    pub(crate) fn conn(&self) -> Option<&ClientConnection> {
        self.conn.as_ref()
    }

    /// Where the engine receives the next bytes (empty while received bytes are not processed
    /// yet, or without a connection).
    pub(crate) fn input_space(&mut self) -> &mut [u8] {
        if self.conn.is_none() || self.in_start < self.in_end {
            return &mut [];
        }
        self.in_start = 0;
        self.in_end = 0;
        &mut self.input[..]
    }

    /// `n` bytes were received into [`Self::input_space`]; 0: the server's FIN.
    pub(crate) fn received(&mut self, n: usize) {
        if n == 0 {
            self.eof = true;
        } else {
            self.in_end = (self.in_end + n).min(self.input.len());
        }
    }

    /// Feeds what was received to rustls and processes it, until an event or until every byte
    /// is processed ([`TlsEvent::Wait`]). Before the handshake is done it returns when it
    /// completes; after it, plaintext is left in the connection for [`Self::read_plain`].
    pub(crate) fn process(&mut self) -> TlsEvent {
        let Some(conn) = self.conn.as_mut() else {
            return TlsEvent::Closed;
        };
        loop {
            if self.in_start == self.in_end && !self.eof {
                return TlsEvent::Wait;
            }
            // An empty slice after the FIN tells rustls the stream ended (read_tls gives 0).
            let mut rd = &self.input[self.in_start..self.in_end];
            let n = match conn.read_tls(&mut rd) {
                Ok(n) => n,
                Err(e) => return TlsEvent::Errno(e.raw_os_error().unwrap_or(libc::EIO)),
            };
            self.in_start += n;
            let state = match conn.process_new_packets() {
                Ok(st) => st,
                Err(e) => return TlsEvent::Tls(e),
            };
            if !self.done && !conn.is_handshaking() {
                return TlsEvent::Handshaken;
            }
            if n == 0 || state.peer_has_closed() {
                return if self.done {
                    TlsEvent::Closed
                } else {
                    TlsEvent::Eof
                };
            }
            if self.done && state.plaintext_bytes_to_read() > 0 {
                return TlsEvent::Plaintext;
            }
        }
    }

    /// The bytes to send now (what rustls has queued, moved to the output buffer); empty when
    /// nothing is pending.
    pub(crate) fn pending_output(&mut self) -> &[u8] {
        if let Some(conn) = self.conn.as_mut() {
            while conn.wants_write() {
                // Writing into a Vec cannot fail.
                if conn.write_tls(&mut self.output).is_err() {
                    break;
                }
            }
        }
        &self.output[self.out_sent..]
    }

    /// `n` bytes of [`Self::pending_output`] were sent.
    pub(crate) fn sent(&mut self, n: usize) {
        self.out_sent = (self.out_sent + n).min(self.output.len());
        if self.out_sent == self.output.len() {
            self.output.clear();
            self.out_sent = 0;
        }
    }

    /// Reads the plaintext rustls holds into `buf`: `Ok(Some(n))` bytes, `Ok(None)` nothing now,
    /// `Ok(Some(0))` the server closed cleanly (close_notify) or the stream ended.
    pub(crate) fn read_plain(&mut self, buf: &mut [u8]) -> Result<Option<usize>, i32> {
        let Some(conn) = self.conn.as_mut() else {
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

    /// Drops the plaintext rustls holds (a server that talks first, without `--http`).
    pub(crate) fn discard_plaintext(&mut self) {
        if let Some(c) = self.conn.as_mut() {
            let mut sink = [0u8; 512];
            while matches!(c.reader().read(&mut sink), Ok(n) if n > 0) {}
        }
    }

    /// Queues `data` as plaintext (rustls buffers it; it goes out with the next output).
    pub(crate) fn write_plain(&mut self, data: &[u8]) -> Result<(), i32> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(libc::EPIPE);
        };
        conn.writer()
            .write_all(data)
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }

    /// Queues close_notify.
    pub(crate) fn close_notify(&mut self) {
        self.closing = true;
        if let Some(c) = self.conn.as_mut() {
            c.send_close_notify();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A client and a server (rustls' own, in memory) talk through the client's buffers only:
    /// the handshake completes (TLS 1.3, and TLS 1.2 whose client speaks twice), the request
    /// goes out as plaintext through the output, the response comes back, and the server's
    /// close_notify closes it. No socket anywhere.
    #[test]
    fn a_handshake_and_an_exchange_run_over_buffers_alone() {
        for version in [
            crate::config::TlsVersion::Auto,
            crate::config::TlsVersion::V12,
        ] {
            exchange_over_buffers(version);
        }
    }

    fn exchange_over_buffers(version: crate::config::TlsVersion) {
        let opts = insecure(version, vec![], vec![]);
        let cfg = opts.client_config().unwrap();
        let mut c = TlsClient::default();
        c.begin(ClientConnection::new(cfg, opts.name().unwrap()).unwrap(), 7);
        let mut s = test_server();
        let handshaken = pump_handshake(&mut c, &mut s);
        assert!(handshaken && c.tcp_ns == 7, "{version:?}");
        let v13 =
            c.conn().and_then(|c| c.protocol_version()) == Some(rustls::ProtocolVersion::TLSv1_3);
        assert_eq!(v13, version == crate::config::TlsVersion::Auto);
        c.write_plain(b"ping").unwrap();
        let out = c.pending_output().to_vec();
        assert!(!out.is_empty());
        c.sent(out.len());
        assert!(c.pending_output().is_empty());
        s.read_tls(&mut &out[..]).unwrap();
        s.process_new_packets().unwrap();
        let mut got = [0u8; 16];
        let n = s.reader().read(&mut got).unwrap();
        assert_eq!(&got[..n], b"ping");
        s.writer().write_all(b"pong").unwrap();
        s.send_close_notify();
        let mut back = Vec::new();
        while s.wants_write() {
            s.write_tls(&mut back).unwrap();
        }
        let room = c.input_space();
        room[..back.len()].copy_from_slice(&back);
        c.received(back.len());
        // The data and close_notify arrive together: Closed, the plaintext still to read (as
        // the core reads it before the end of the stream).
        let mut plain = Vec::new();
        let mut read = |c: &mut TlsClient| {
            let mut b = [0u8; 16];
            while let Ok(Some(n @ 1..)) = c.read_plain(&mut b) {
                plain.extend_from_slice(&b[..n]);
            }
        };
        loop {
            match c.process() {
                TlsEvent::Plaintext => read(&mut c),
                TlsEvent::Closed => break read(&mut c),
                e => panic!("{e:?}"),
            }
        }
        assert_eq!(plain, b"pong");
        assert_eq!(c.read_plain(&mut [0u8; 4]), Ok(Some(0)));
        c.end();
        assert!(matches!(c.process(), TlsEvent::Closed));
    }

    /// rustls' own server (provider defaults: every aws-lc-rs group, X25519MLKEM768 included)
    /// presenting the test certificate ([`test_key`]).
    fn test_server() -> rustls::ServerConnection {
        let key = test_key();
        let server_cfg = Arc::new(
            rustls::ServerConfig::builder_with_provider(Arc::new(
                rustls::crypto::aws_lc_rs::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![key.0.clone()], key.1)
            .unwrap(),
        );
        rustls::ServerConnection::new(server_cfg).unwrap()
    }

    /// A client's options for `localhost` that check no certificate (`--insecure`), without
    /// resumption or ALPN: TLS `version`, offering `ciphers` and `groups` (empty: defaults).
    fn insecure(
        version: crate::config::TlsVersion,
        ciphers: Vec<String>,
        groups: Vec<String>,
    ) -> crate::config::TlsOptions {
        crate::config::TlsOptions {
            version,
            server_name: "localhost".into(),
            alpn: vec![],
            resume: crate::config::Resume::Off,
            verify: crate::config::Verify::Insecure,
            ciphers,
            groups,
            resume_share_pct: 100,
        }
    }

    /// The handshake between `c` and `s` over buffers alone: client → server, server →
    /// client, until the client says the handshake is done (`c.done` then set, and the rest of
    /// that flight fed to it). Whether it was done within 10 flights.
    fn pump_handshake(c: &mut TlsClient, s: &mut rustls::ServerConnection) -> bool {
        let mut handshaken = false;
        for _ in 0..10 {
            let out = c.pending_output().to_vec();
            c.sent(out.len());
            s.read_tls(&mut &out[..]).unwrap();
            s.process_new_packets().unwrap();
            let mut back = Vec::new();
            while s.wants_write() {
                s.write_tls(&mut back).unwrap();
            }
            let mut fed = 0;
            loop {
                match c.process() {
                    TlsEvent::Wait if fed < back.len() => {
                        let room = c.input_space();
                        let n = room.len().min(back.len() - fed);
                        room[..n].copy_from_slice(&back[fed..fed + n]);
                        c.received(n);
                        fed += n;
                    }
                    TlsEvent::Wait => break,
                    TlsEvent::Handshaken => {
                        c.done = true;
                        handshaken = true;
                    }
                    e => panic!("{e:?}"),
                }
            }
            if handshaken {
                return true;
            }
        }
        false
    }

    /// A handshake over buffers between a client with `opts` and [`test_server`]; the
    /// client's connection once it says the handshake is done.
    fn handshake_over_buffers(opts: &crate::config::TlsOptions) -> ClientConnection {
        let mut c = TlsClient::default();
        c.begin(
            ClientConnection::new(opts.client_config().unwrap(), opts.name().unwrap()).unwrap(),
            0,
        );
        assert!(
            pump_handshake(&mut c, &mut test_server()),
            "no handshake after 10 flights"
        );
        c.conn.take().unwrap()
    }

    /// Issue 36 item 5: the group and the cipher suite the handshake agrees on are the ones
    /// asked for (`--tls-groups`, `--tls-ciphers`), read from the rustls connection, for each
    /// group the provider has (the hybrid post-quantum one included) and for TLS 1.2.
    #[test]
    fn the_negotiated_group_and_suite_are_the_ones_asked_for() {
        for (version, group, suite, want_group, want_suite) in [
            (
                crate::config::TlsVersion::Auto,
                "x25519",
                "TLS_AES_256_GCM_SHA384",
                "X25519",
                "TLS13_AES_256_GCM_SHA384",
            ),
            (
                crate::config::TlsVersion::V13,
                "p256",
                "TLS13_CHACHA20_POLY1305_SHA256",
                "secp256r1",
                "TLS13_CHACHA20_POLY1305_SHA256",
            ),
            (
                crate::config::TlsVersion::Auto,
                "p384",
                "TLS13_AES_128_GCM_SHA256",
                "secp384r1",
                "TLS13_AES_128_GCM_SHA256",
            ),
            (
                crate::config::TlsVersion::V13,
                "X25519MLKEM768",
                "TLS13_AES_128_GCM_SHA256",
                "X25519MLKEM768",
                "TLS13_AES_128_GCM_SHA256",
            ),
            (
                crate::config::TlsVersion::V12,
                "secp256r1",
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                "secp256r1",
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
            ),
        ] {
            let opts = insecure(version, vec![suite.into()], vec![group.into()]);
            let c = handshake_over_buffers(&opts);
            let got_group = c
                .negotiated_key_exchange_group()
                .map(crate::config::group_name);
            let got_suite = c
                .negotiated_cipher_suite()
                .map(|s| crate::config::suite_name(&s));
            assert_eq!(got_group.as_deref(), Some(want_group), "{group} {suite}");
            assert_eq!(got_suite.as_deref(), Some(want_suite), "{group} {suite}");
            assert_eq!(opts.offered_groups(), [want_group]);
        }
    }

    /// The key shares a ClientHello (the first record of `out`) carries: the groups of its
    /// key_share extension (RFC 8446 4.2.8), in order, with each key's length.
    fn key_shares(out: &[u8]) -> Vec<(u16, usize)> {
        let u16_at = |b: &[u8], i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        assert_eq!(out[0], 0x16, "a handshake record");
        // Record header (5), handshake header (4), legacy_version (2), random (32).
        let h = &out[5..5 + usize::from(u16_at(out, 3))];
        assert_eq!(h[0], 1, "a ClientHello");
        let mut i = 4 + 2 + 32;
        i += 1 + usize::from(h[i]); // legacy_session_id
        i += 2 + usize::from(u16_at(h, i)); // cipher_suites
        i += 1 + usize::from(h[i]); // legacy_compression_methods
        let end = i + 2 + usize::from(u16_at(h, i));
        i += 2;
        while i < end {
            let (ty, len) = (u16_at(h, i), usize::from(u16_at(h, i + 2)));
            let data = &h[i + 4..i + 4 + len];
            if ty == 0x0033 {
                let mut shares = Vec::new();
                let mut j = 2;
                while j < 2 + usize::from(u16_at(data, 0)) {
                    let klen = usize::from(u16_at(data, j + 2));
                    shares.push((u16_at(data, j), klen));
                    j += 4 + klen;
                }
                return shares;
            }
            i += 4 + len;
        }
        Vec::new()
    }

    /// The ClientHello carries one key share, of the first group offered: by default X25519
    /// alone (a 32-byte key), so a handshake generates one key pair, the one the crypto floor
    /// counts ([`super::super::floor`]); `--tls-groups p256,x25519` sends a P-256 share alone
    /// (65 bytes, uncompressed). What a server reads off the wire, parsed from the bytes.
    #[test]
    fn the_client_hello_carries_one_key_share_of_the_first_group() {
        for (groups, want) in [
            (vec![], vec![(0x001d, 32)]),
            (
                vec!["p256".to_string(), "x25519".into()],
                vec![(0x0017, 65)],
            ),
            // The hybrid first, X25519 after it: rustls sends X25519's share beside the
            // hybrid's (its X25519 half reused, no second key pair), so a server without
            // the hybrid needs no HelloRetryRequest. 1,216 bytes: ML-KEM-768's encapsulation
            // key (1,184) and X25519's (32).
            (
                vec!["X25519MLKEM768".to_string(), "x25519".into()],
                vec![(0x11ec, 1216), (0x001d, 32)],
            ),
        ] {
            let opts = insecure(crate::config::TlsVersion::Auto, vec![], groups.clone());
            let mut c = TlsClient::default();
            c.begin(
                ClientConnection::new(opts.client_config().unwrap(), opts.name().unwrap()).unwrap(),
                0,
            );
            assert_eq!(key_shares(c.pending_output()), want, "{groups:?}");
        }
    }

    /// A FIN before the handshake is done is [`TlsEvent::Eof`].
    #[test]
    fn a_fin_during_the_handshake_is_eof() {
        let opts = insecure(crate::config::TlsVersion::Auto, vec![], vec![]);
        let mut c = TlsClient::default();
        c.begin(
            ClientConnection::new(opts.client_config().unwrap(), opts.name().unwrap()).unwrap(),
            0,
        );
        assert!(!c.pending_output().is_empty());
        assert!(matches!(c.process(), TlsEvent::Wait));
        c.received(0);
        assert!(matches!(c.process(), TlsEvent::Eof));
    }

    /// A self-signed ECDSA P-256 certificate for "localhost" and its key, made once with
    /// `openssl req -x509 -newkey ec` (the client here checks no certificate: `--insecure`).
    const CERT_PEM: &str = "-----BEGIN CERTIFICATE-----\n\
MIIBljCCATugAwIBAgIUI0UCLzbaeSiYcRhT//L4WUQ9SpQwCgYIKoZIzj0EAwIw\n\
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwNzExMjUzMloYDzIxMjYxMTEz\n\
MTEyNTMyWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO\n\
PQMBBwNCAATRH4bK2MuC0k/xaZiq/c2J1Z/ufCY7nLpwK14xcua6HLpyjNNIrxH6\n\
J8bexLl5ltgP5E2jQ6bvjiYzrNJRDSqao2kwZzAdBgNVHQ4EFgQU6/rAoJvR9BR5\n\
/qKY83melOpTQlQwHwYDVR0jBBgwFoAU6/rAoJvR9BR5/qKY83melOpTQlQwDwYD\n\
VR0TAQH/BAUwAwEB/zAUBgNVHREEDTALgglsb2NhbGhvc3QwCgYIKoZIzj0EAwID\n\
SQAwRgIhAPmQ7KqAmPBPUo6H1O9WN6E7Ug5584ms1VzEF6U18N+tAiEAuUfjDegB\n\
2H4/9KnlByvwpE61VUQ8dCQx6uC8k52ZT7E=\n\
-----END CERTIFICATE-----";
    const KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----\n\
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgY/jN5JDHPSuj3ORN\n\
t3ZKXaI3R27TT1HheJ2fpw4KnSKhRANCAATRH4bK2MuC0k/xaZiq/c2J1Z/ufCY7\n\
nLpwK14xcua6HLpyjNNIrxH6J8bexLl5ltgP5E2jQ6bvjiYzrNJRDSqa\n\
-----END PRIVATE KEY-----";

    fn test_key() -> (
        rustls::pki_types::CertificateDer<'static>,
        rustls::pki_types::PrivateKeyDer<'static>,
    ) {
        use rustls::pki_types::pem::PemObject;
        (
            rustls::pki_types::CertificateDer::from_pem_slice(CERT_PEM.as_bytes()).unwrap(),
            rustls::pki_types::PrivateKeyDer::from_pem_slice(KEY_PEM.as_bytes()).unwrap(),
        )
    }
}
