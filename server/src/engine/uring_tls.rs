//! `--tls` on the io_uring engine: one [`TlsConn`] per connection drives a
//! [`rustls::ServerConnection`] over buffers the engine hands to the ring, without doing I/O
//! itself (sans-I/O, so it is tested here without a ring).
//!
//! The engine keeps exactly one operation in flight per connection and asks [`TlsConn`] what
//! the next is ([`Next`]):
//! - [`Next::Recv`]: an IORING_OP_RECV into [`TlsConn::recv_buf`]; its result goes to
//!   [`TlsConn::on_recv`] (`read_tls` from the bytes received, `process_new_packets`);
//! - [`Next::Send`]: an IORING_OP_SEND of [`TlsConn::send_buf`] (what `write_tls` queued: the
//!   handshake flights, the response, close_notify); its result goes to [`TlsConn::on_sent`];
//! - [`Next::SendClose`]: the same Send hard-linked to a Close (an alert after a failed
//!   handshake, sent best effort);
//! - [`Next::Close`]: close now.
//!
//! The work per connection is the epoll engine's (`serve_tls` in `super::epoll`), so both
//! engines count alike: a TLS accept when the handshake completes (full or resumed), a failed
//! handshake by class ([`crate::tls::TlsCounts`]), `close` mode: close_notify then close;
//! `http`: the request head over TLS ([`HeadScan`]), the response, close_notify, counted served
//! once all of it is sent. After its own close_notify the server waits for the client's (or its
//! FIN) before it closes, so it never resets a client still reading session tickets.
//!
//! Memory: the receive buffer ([`RECV_BYTES`]) and the send buffer come from a per-worker
//! [`BufPool`], so in steady state a connection allocates only what rustls allocates. The
//! buffers an SQE points at live in the connection's box until that SQE's CQE arrived.

use std::io::{ErrorKind, Read, Write};
use std::sync::Arc;

use crate::config::Mode;
use crate::counts::Counts;
use crate::http::{HeadScan, Scan};

/// Bytes of one receive per connection (TLS records are reassembled by rustls across receives).
pub(crate) const RECV_BYTES: usize = 4096;

/// What the engine does next for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Receive into [`TlsConn::recv_buf`].
    Recv,
    /// Send [`TlsConn::send_buf`].
    Send,
    /// Send [`TlsConn::send_buf`], then close (hard link).
    SendClose,
    /// Close.
    Close,
}

/// The two buffers of a connection, recycled through a [`BufPool`].
#[derive(Debug)]
pub(crate) struct Bufs {
    recv: Box<[u8]>,
    send: Vec<u8>,
}

/// A worker's free buffers.
#[derive(Debug, Default)]
pub(crate) struct BufPool {
    free: Vec<Bufs>,
}

impl BufPool {
    /// A free pair of buffers (allocated when none is free).
    pub(crate) fn take(&mut self) -> Bufs {
        self.free.pop().unwrap_or_else(|| Bufs {
            recv: vec![0; RECV_BYTES].into_boxed_slice(),
            send: Vec::with_capacity(8192),
        })
    }

    /// Gives buffers back.
    pub(crate) fn give(&mut self, mut b: Bufs) {
        b.send.clear();
        self.free.push(b);
    }
}

/// One TLS connection's state.
pub(crate) struct TlsConn {
    tls: rustls::ServerConnection,
    bufs: Bufs,
    /// Bytes of `bufs.send` already sent.
    sent: usize,
    /// The handshake is done (counted).
    done: bool,
    /// `Mode::Http`: the request head is complete; the response is queued.
    responding: bool,
    /// close_notify is queued.
    closing: bool,
    /// Counted served.
    served: bool,
    scan: HeadScan,
}

impl std::fmt::Debug for TlsConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConn")
            .field("done", &self.done)
            .field("closing", &self.closing)
            .finish_non_exhaustive()
    }
}

impl TlsConn {
    /// A connection just accepted: receive the ClientHello first ([`Next::Recv`]).
    ///
    /// # Errors
    /// rustls could not make the connection (counted by the caller as a failed handshake).
    pub(crate) fn new(
        cfg: &Arc<rustls::ServerConfig>,
        bufs: Bufs,
    ) -> Result<Box<TlsConn>, (rustls::Error, Bufs)> {
        match rustls::ServerConnection::new(Arc::clone(cfg)) {
            Ok(tls) => Ok(Box::new(TlsConn {
                tls,
                bufs,
                sent: 0,
                done: false,
                responding: false,
                closing: false,
                served: false,
                scan: HeadScan::default(),
            })),
            Err(e) => Err((e, bufs)),
        }
    }

    /// Gives the buffers back to the pool (the connection is closed or closing, and no SQE
    /// points at them any more).
    pub(crate) fn into_bufs(self: Box<Self>) -> Bufs {
        self.bufs
    }

    /// Where the next receive writes: (pointer, length).
    pub(crate) fn recv_buf(&mut self) -> (*mut u8, u32) {
        (self.bufs.recv.as_mut_ptr(), self.bufs.recv.len() as u32)
    }

    /// What the next send writes: (pointer, length), the part of the queued bytes not sent yet.
    pub(crate) fn send_buf(&self) -> (*const u8, u32) {
        let rest = &self.bufs.send[self.sent..];
        (rest.as_ptr(), rest.len() as u32)
    }

    /// A receive completed with `res` (bytes, 0 at EOF, or -errno). `plain` is scratch space
    /// for the decrypted request; `response` the bytes `Mode::Http` answers with.
    pub(crate) fn on_recv(
        &mut self,
        res: i32,
        mode: Mode,
        response: &[u8],
        plain: &mut [u8],
        counts: &mut Counts,
    ) -> Next {
        if res < 0 {
            if !self.done && res != -libc::ECANCELED {
                counts.tls.errno(-res);
            }
            return Next::Close;
        }
        if res == 0 {
            if !self.done {
                counts.tls.eof();
            }
            return Next::Close;
        }
        let mut got = &self.bufs.recv[..res as usize];
        while !got.is_empty() {
            if let Err(e) = self.tls.read_tls(&mut got) {
                // rustls' buffer is full: more than a record it cannot process.
                if !self.done {
                    counts.tls.errno(e.raw_os_error().unwrap_or(libc::EIO));
                }
                return Next::Close;
            }
            let state = match self.tls.process_new_packets() {
                Ok(s) => s,
                Err(e) => {
                    if !self.done {
                        counts.tls.failed(&e);
                    }
                    // Send the alert rustls queued, best effort.
                    return if self.queue() {
                        Next::SendClose
                    } else {
                        Next::Close
                    };
                }
            };
            if !self.done && !self.tls.is_handshaking() {
                self.done = true;
                counts.tls.done(&self.tls);
                if !matches!(mode, Mode::Http { .. }) {
                    self.tls.send_close_notify();
                    self.closing = true;
                }
            }
            if self.done && !self.responding && matches!(mode, Mode::Http { .. }) {
                // Scan the plaintext for the end of the request head.
                loop {
                    let m = match self.tls.reader().read(plain) {
                        // The client closed (close_notify) without a request: below, what the
                        // handshake queued is still sent before the close.
                        Ok(0) => break,
                        Ok(m) => m,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(_) => return Next::Close,
                    };
                    match self.scan.feed(&plain[..m]) {
                        Scan::More => {}
                        Scan::End => {
                            self.responding = true;
                            if self.tls.writer().write_all(response).is_err() {
                                return Next::Close;
                            }
                            self.tls.send_close_notify();
                            self.closing = true;
                            break;
                        }
                        Scan::TooLarge => {
                            counts.error(libc::EMSGSIZE);
                            return Next::Close;
                        }
                        Scan::Bad => {
                            counts.bad_requests += 1;
                            return Next::Close;
                        }
                    }
                }
            }
            if state.peer_has_closed() {
                if !self.done {
                    counts.tls.eof();
                }
                // The client's Finished and close_notify can come in one read: what this
                // handshake queued after the Finished (TLS 1.3 session tickets, its own
                // close_notify) is still sent before the close, or the client never resumes.
                return if self.queue() {
                    Next::SendClose
                } else {
                    Next::Close
                };
            }
        }
        if self.queue() {
            Next::Send
        } else {
            Next::Recv
        }
    }

    /// A send completed with `res` (bytes or -errno).
    pub(crate) fn on_sent(&mut self, res: i32, counts: &mut Counts) -> Next {
        if res <= 0 {
            if !self.done && res != -libc::ECANCELED {
                counts.tls.errno(if res == 0 { libc::EPIPE } else { -res });
            }
            return Next::Close;
        }
        self.sent += res as usize;
        if self.sent < self.bufs.send.len() {
            return Next::Send;
        }
        self.bufs.send.clear();
        self.sent = 0;
        if self.queue() {
            return Next::Send;
        }
        if self.closing && self.responding && !self.served {
            // The whole response and close_notify are written.
            self.served = true;
            counts.served += 1;
        }
        // Wait for the client's next flight, its request, or its close_notify / FIN.
        Next::Recv
    }

    /// Moves what rustls has to send into the send buffer; true when there is something.
    fn queue(&mut self) -> bool {
        while self.tls.wants_write() {
            if self.tls.write_tls(&mut self.bufs.send).is_err() {
                break;
            }
        }
        self.sent < self.bufs.send.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client_config(cert: rustls::pki_types::CertificateDer<'static>) -> rustls::ClientConfig {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth()
    }

    /// Runs one connection between a rustls client and a [`TlsConn`] in memory, delivering
    /// what the server sends in pieces of `chunk` bytes (as short sends would); returns the
    /// counts and the client's plaintext.
    fn exchange(mode: Mode, chunk: usize) -> (Counts, Vec<u8>) {
        let srv = crate::tls::server_config(None, None, true).unwrap();
        let der = rustls::pki_types::CertificateDer::from_pem_slice(srv.cert_pem.as_bytes());
        use rustls::pki_types::pem::PemObject;
        let ccfg = Arc::new(client_config(der.unwrap()));
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut client = rustls::ClientConnection::new(ccfg, name).unwrap();
        let mut pool = BufPool::default();
        let mut conn = TlsConn::new(&srv.config, pool.take()).ok().unwrap();
        let mut counts = Counts::default();
        let response = crate::http::response(0);
        let mut plain = vec![0u8; 4096];
        let mut got = Vec::new();
        if matches!(mode, Mode::Http { .. }) {
            client
                .writer()
                .write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
                .unwrap();
        }
        let mut next = Next::Recv;
        for _ in 0..100_000 {
            match next {
                Next::Recv => {
                    let mut wire = Vec::new();
                    while client.wants_write() {
                        client.write_tls(&mut wire).unwrap();
                    }
                    if wire.is_empty() {
                        // The client has nothing more to say: it closes.
                        client.send_close_notify();
                        while client.wants_write() {
                            client.write_tls(&mut wire).unwrap();
                        }
                    }
                    let n = wire.len().min(RECV_BYTES);
                    let (p, len) = conn.recv_buf();
                    assert!(n <= len as usize);
                    // SAFETY: p points at len >= n writable bytes of conn's receive buffer.
                    unsafe { std::ptr::copy_nonoverlapping(wire.as_ptr(), p, n) };
                    assert_eq!(n, wire.len(), "test flights fit one receive");
                    next = conn.on_recv(n as i32, mode, &response, &mut plain, &mut counts);
                }
                Next::Send => {
                    let (p, len) = conn.send_buf();
                    let n = (len as usize).min(chunk);
                    // SAFETY: p points at len bytes of conn's send buffer.
                    let bytes = unsafe { std::slice::from_raw_parts(p, n) };
                    client.read_tls(&mut &bytes[..]).unwrap();
                    client.process_new_packets().unwrap();
                    let mut buf = [0u8; 1024];
                    while let Ok(m) = client.reader().read(&mut buf) {
                        if m == 0 {
                            break;
                        }
                        got.extend_from_slice(&buf[..m]);
                    }
                    next = conn.on_sent(n as i32, &mut counts);
                }
                Next::SendClose | Next::Close => break,
            }
        }
        assert_eq!(next, Next::Close);
        pool.give(conn.into_bufs());
        (counts, got)
    }

    #[test]
    fn a_close_mode_handshake_is_counted_once_and_closes_after_the_clients_close_notify() {
        for chunk in [1, 7, 100_000] {
            let (c, got) = exchange(Mode::Close, chunk);
            assert_eq!(c.tls.accepted, 1, "chunk {chunk}");
            assert_eq!(c.tls.failed_total(), 0, "chunk {chunk}");
            assert_eq!(c.served, 0);
            assert!(got.is_empty());
        }
    }

    #[test]
    fn an_http_request_over_tls_gets_the_whole_response_counted_served_once() {
        for chunk in [1, 13, 100_000] {
            let (c, got) = exchange(Mode::Http { body_bytes: 0 }, chunk);
            assert_eq!(c.tls.accepted, 1, "chunk {chunk}");
            assert_eq!(c.served, 1, "chunk {chunk}");
            assert_eq!(got, crate::http::response(0), "chunk {chunk}");
        }
    }

    #[test]
    fn garbage_instead_of_a_client_hello_fails_the_handshake_with_an_alert_sent() {
        let srv = crate::tls::server_config(None, None, true).unwrap();
        let mut pool = BufPool::default();
        let mut conn = TlsConn::new(&srv.config, pool.take()).ok().unwrap();
        let mut counts = Counts::default();
        let junk = b"GET / HTTP/1.1\r\n\r\n";
        let (p, _) = conn.recv_buf();
        // SAFETY: the receive buffer holds RECV_BYTES > junk.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(junk.as_ptr(), p, junk.len()) };
        let next = conn.on_recv(
            junk.len() as i32,
            Mode::Close,
            &[],
            &mut [0; 64],
            &mut counts,
        );
        assert_eq!(next, Next::SendClose);
        assert_eq!(counts.tls.failed_total(), 1);
        assert_eq!(counts.tls.accepted, 0);
        let mut other = TlsConn::new(&srv.config, pool.take()).ok().unwrap();
        assert_eq!(
            other.on_recv(0, Mode::Close, &[], &mut [0; 64], &mut counts),
            Next::Close
        );
        assert_eq!(
            counts.tls.failed_total(),
            2,
            "EOF before the handshake is a failure too"
        );
    }
}
