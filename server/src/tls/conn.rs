//! One TLS server connection as a state machine over byte buffers (sans-I/O): a
//! [`rustls::ServerConnection`] is fed the bytes an engine received and gives the bytes to send,
//! with no socket inside. Both engines run this one machine and only move bytes:
//! `engine::epoll` with read(2)/write(2) on a non-blocking socket, `engine::uring` with
//! IORING_OP_RECV/IORING_OP_SEND; so both count alike, and it is tested here with neither.
//!
//! The engine keeps exactly one operation going per connection and asks [`TlsConn::next`]
//! which one ([`Next`]):
//! - [`Next::Recv`]: receive (into a buffer of the engine's) and hand the bytes, EOF or errno to
//!   [`TlsConn::on_recv`] (`read_tls` from those bytes, `process_new_packets`);
//! - [`Next::Send`]: send [`TlsConn::to_send`] (what `write_tls` queued: the handshake flights,
//!   the response, close_notify) and hand the result to [`TlsConn::on_sent`];
//! - [`Next::SendClose`]: send [`TlsConn::to_send`] best effort, then close: an alert after a
//!   failed handshake, or what the handshake queued (TLS 1.3 session tickets, close_notify)
//!   when the client closed in the same read;
//! - [`Next::Close`]: close now.
//!
//! # Counted (into the worker's [`Counts`])
//! A TLS accept when the handshake completes (full or resumed); a failed handshake by class
//! ([`crate::tls::TlsCounts`]: alert received or sent, EOF, errno of the socket). `close` mode:
//! close_notify once the handshake is done, then close; `http`: the request head over TLS
//! ([`HeadScan`]), the response, close_notify, counted served once all of it is sent. After its
//! own close_notify the server waits for the client's (or its FIN) before it closes, so it never
//! resets a client still reading session tickets.
//!
//! # Memory
//! A connection's send buffer comes from a per-worker [`SendBufs`] and goes back there
//! ([`TlsConn::recycle`]), so in steady state a connection allocates only what rustls
//! allocates. The bytes [`TlsConn::to_send`] returns stay at the same address, unchanged, until
//! the next `&mut self` call or the drop: only [`TlsConn::on_recv`] and [`TlsConn::on_sent`]
//! write the buffer, and moving a `TlsConn` does not move the buffer's heap allocation. The
//! io_uring engine's Send SQEs rely on that.

use std::io::{ErrorKind, Read, Write};
use std::sync::Arc;

use crate::counts::Counts;
use crate::http::{HeadScan, Scan};

/// Capacity of a new send buffer, bytes: a full handshake flight with a one-certificate chain
/// fits; a buffer that grew keeps its capacity in the pool.
const SEND_BYTES: usize = 8192;

/// What the engine does next for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Receive and hand the result to [`TlsConn::on_recv`].
    Recv,
    /// Send [`TlsConn::to_send`] and hand the result to [`TlsConn::on_sent`].
    Send,
    /// Send [`TlsConn::to_send`] best effort, then close.
    SendClose,
    /// Close.
    Close,
}

/// A worker's free send buffers.
#[derive(Debug, Default)]
pub(crate) struct SendBufs {
    free: Vec<Vec<u8>>,
}

impl SendBufs {
    fn take(&mut self) -> Vec<u8> {
        self.free
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(SEND_BYTES))
    }

    fn give(&mut self, mut b: Vec<u8>) {
        b.clear();
        self.free.push(b);
    }
}

/// One TLS server connection's state (module docs).
pub(crate) struct TlsConn {
    tls: rustls::ServerConnection,
    /// What `write_tls` queued; `send[sent..]` is not sent yet.
    send: Vec<u8>,
    sent: usize,
    /// What the engine is to do next.
    next: Next,
    /// `Mode::Http`: read a request head and answer it; else close_notify after the handshake.
    http: bool,
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
            .field("next", &self.next)
            .field("done", &self.done)
            .field("closing", &self.closing)
            .finish_non_exhaustive()
    }
}

impl TlsConn {
    /// A connection just accepted: it receives the ClientHello first ([`Next::Recv`]). `http`:
    /// the connection serves one HTTP request (`Mode::Http`), else it closes after the handshake.
    ///
    /// # Errors
    /// rustls could not make the connection (the caller counts it as a failed handshake).
    pub(crate) fn new(
        cfg: &Arc<rustls::ServerConfig>,
        http: bool,
        bufs: &mut SendBufs,
    ) -> Result<TlsConn, rustls::Error> {
        let tls = rustls::ServerConnection::new(Arc::clone(cfg))?;
        Ok(TlsConn {
            tls,
            send: bufs.take(),
            sent: 0,
            next: Next::Recv,
            http,
            done: false,
            responding: false,
            closing: false,
            served: false,
            scan: HeadScan::default(),
        })
    }

    /// Gives the send buffer back to `bufs` (the caller no longer sends from it).
    pub(crate) fn recycle(self, bufs: &mut SendBufs) {
        bufs.give(self.send);
    }

    /// What the engine is to do next.
    pub(crate) fn next(&self) -> Next {
        self.next
    }

    /// The bytes to send ([`Next::Send`], [`Next::SendClose`]); same address and content until
    /// the next `&mut self` call (module docs, "Memory").
    pub(crate) fn to_send(&self) -> &[u8] {
        &self.send[self.sent..]
    }

    /// A receive completed: `Ok(bytes)` (empty at EOF) or `Err(errno)`. `response` is what
    /// `Mode::Http` answers with; `plain` scratch space for the decrypted request.
    pub(crate) fn on_recv(
        &mut self,
        got: Result<&[u8], i32>,
        response: &[u8],
        plain: &mut [u8],
        counts: &mut Counts,
    ) -> Next {
        debug_assert_eq!(self.next, Next::Recv);
        self.next = self.received(got, response, plain, counts);
        self.next
    }

    /// A send of [`TlsConn::to_send`] completed: `Ok(bytes sent)` or `Err(errno)`.
    pub(crate) fn on_sent(&mut self, res: Result<usize, i32>, counts: &mut Counts) -> Next {
        debug_assert!(matches!(self.next, Next::Send | Next::SendClose));
        self.next = self.sent(res, counts);
        self.next
    }

    fn received(
        &mut self,
        got: Result<&[u8], i32>,
        response: &[u8],
        plain: &mut [u8],
        counts: &mut Counts,
    ) -> Next {
        let mut got = match got {
            Ok([]) => {
                if !self.done {
                    counts.tls.eof();
                }
                return Next::Close;
            }
            Ok(b) => b,
            Err(errno) => {
                if !self.done {
                    counts.tls.errno(errno);
                }
                return Next::Close;
            }
        };
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
                    return self.send_then_close();
                }
            };
            if !self.done && !self.tls.is_handshaking() {
                self.done = true;
                counts.tls.done(&self.tls);
                if !self.http {
                    self.tls.send_close_notify();
                    self.closing = true;
                }
            }
            if self.done && !self.responding && self.http {
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
                return self.send_then_close();
            }
        }
        if self.queue() {
            Next::Send
        } else {
            Next::Recv
        }
    }

    fn sent(&mut self, res: Result<usize, i32>, counts: &mut Counts) -> Next {
        let last = self.next == Next::SendClose;
        let n = match res {
            Ok(n) if n > 0 => n,
            failed => {
                if !self.done && !last {
                    // A send of 0 bytes from a non-empty buffer: the peer is gone.
                    counts.tls.errno(failed.err().unwrap_or(libc::EPIPE));
                }
                return Next::Close;
            }
        };
        self.sent = (self.sent + n).min(self.send.len());
        if self.sent < self.send.len() {
            return self.next;
        }
        self.send.clear();
        self.sent = 0;
        if last {
            return Next::Close;
        }
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

    /// [`Next::SendClose`] when rustls queued something, else [`Next::Close`].
    fn send_then_close(&mut self) -> Next {
        if self.queue() {
            Next::SendClose
        } else {
            Next::Close
        }
    }

    /// Moves what rustls has to send into the send buffer; true when there is something.
    fn queue(&mut self) -> bool {
        while self.tls.wants_write() {
            if self.tls.write_tls(&mut self.send).is_err() {
                break;
            }
        }
        self.sent < self.send.len()
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
    /// what the server sends in pieces of `chunk` bytes (as short sends would) and what the
    /// client sends in receives of at most `recv` bytes; returns the counts and the client's
    /// plaintext.
    fn exchange(http: bool, chunk: usize, recv: usize) -> (Counts, Vec<u8>) {
        let srv = crate::tls::server_config(None, None, true).unwrap();
        let der = rustls::pki_types::CertificateDer::from_pem_slice(srv.cert_pem.as_bytes());
        use rustls::pki_types::pem::PemObject;
        let ccfg = Arc::new(client_config(der.unwrap()));
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut client = rustls::ClientConnection::new(ccfg, name).unwrap();
        let mut bufs = SendBufs::default();
        let mut conn = TlsConn::new(&srv.config, http, &mut bufs).unwrap();
        let mut counts = Counts::default();
        let response = crate::http::response(0);
        let mut plain = vec![0u8; 4096];
        let mut got = Vec::new();
        if http {
            client
                .writer()
                .write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
                .unwrap();
        }
        // What the client wrote and the server has not received yet.
        let mut wire = Vec::new();
        for _ in 0..100_000 {
            match conn.next() {
                Next::Recv => {
                    if wire.is_empty() {
                        while client.wants_write() {
                            client.write_tls(&mut wire).unwrap();
                        }
                    }
                    if wire.is_empty() {
                        // The client has nothing more to say: it closes.
                        client.send_close_notify();
                        while client.wants_write() {
                            client.write_tls(&mut wire).unwrap();
                        }
                    }
                    let n = wire.len().min(recv);
                    let bytes: Vec<u8> = wire.drain(..n).collect();
                    conn.on_recv(Ok(&bytes), &response, &mut plain, &mut counts);
                }
                Next::Send => {
                    let n = conn.to_send().len().min(chunk);
                    client.read_tls(&mut &conn.to_send()[..n]).unwrap();
                    client.process_new_packets().unwrap();
                    let mut buf = [0u8; 1024];
                    while let Ok(m) = client.reader().read(&mut buf) {
                        if m == 0 {
                            break;
                        }
                        got.extend_from_slice(&buf[..m]);
                    }
                    conn.on_sent(Ok(n), &mut counts);
                }
                Next::SendClose | Next::Close => break,
            }
        }
        assert_eq!(conn.next(), Next::Close);
        conn.recycle(&mut bufs);
        (counts, got)
    }

    #[test]
    fn a_close_mode_handshake_is_counted_once_and_closes_after_the_clients_close_notify() {
        for chunk in [1, 7, 100_000] {
            for recv in [5, 4096] {
                let (c, got) = exchange(false, chunk, recv);
                assert_eq!(c.tls.accepted, 1, "chunk {chunk} recv {recv}");
                assert_eq!(c.tls.failed_total(), 0, "chunk {chunk} recv {recv}");
                assert_eq!(c.served, 0);
                assert!(got.is_empty());
            }
        }
    }

    #[test]
    fn an_http_request_over_tls_gets_the_whole_response_counted_served_once() {
        for chunk in [1, 13, 100_000] {
            for recv in [5, 4096] {
                let (c, got) = exchange(true, chunk, recv);
                assert_eq!(c.tls.accepted, 1, "chunk {chunk} recv {recv}");
                assert_eq!(c.served, 1, "chunk {chunk} recv {recv}");
                assert_eq!(got, crate::http::response(0), "chunk {chunk} recv {recv}");
            }
        }
    }

    #[test]
    fn garbage_instead_of_a_client_hello_fails_the_handshake_with_an_alert_sent() {
        let srv = crate::tls::server_config(None, None, true).unwrap();
        let mut bufs = SendBufs::default();
        let mut conn = TlsConn::new(&srv.config, false, &mut bufs).unwrap();
        let mut counts = Counts::default();
        let junk = b"GET / HTTP/1.1\r\n\r\n";
        let next = conn.on_recv(Ok(junk), &[], &mut [0; 64], &mut counts);
        assert_eq!(next, Next::SendClose);
        assert!(!conn.to_send().is_empty(), "the alert is queued");
        assert_eq!(counts.tls.failed_total(), 1);
        assert_eq!(counts.tls.accepted, 0);
        // The alert going out (or not) counts nothing more, and then the connection closes.
        let n = conn.to_send().len();
        assert_eq!(conn.on_sent(Ok(n), &mut counts), Next::Close);
        let mut failed_send = TlsConn::new(&srv.config, false, &mut bufs).unwrap();
        failed_send.on_recv(Ok(junk), &[], &mut [0; 64], &mut counts);
        assert_eq!(
            failed_send.on_sent(Err(libc::EPIPE), &mut counts),
            Next::Close
        );
        assert_eq!(counts.tls.failed_total(), 2);
        let mut other = TlsConn::new(&srv.config, false, &mut bufs).unwrap();
        assert_eq!(
            other.on_recv(Ok(&[]), &[], &mut [0; 64], &mut counts),
            Next::Close
        );
        assert_eq!(
            counts.tls.failed_total(),
            3,
            "EOF before the handshake is a failure too"
        );
        let mut reset = TlsConn::new(&srv.config, false, &mut bufs).unwrap();
        reset.on_recv(Err(libc::ECONNRESET), &[], &mut [0; 64], &mut counts);
        assert_eq!(counts.tls.failures().get("ECONNRESET"), Some(&1));
        assert_eq!(counts.tls.failures().get("EOF"), Some(&1));
    }

    /// Buffers go back to the pool and come out again: no allocation per connection in steady
    /// state beyond rustls' own.
    #[test]
    fn send_buffers_are_reused() {
        let srv = crate::tls::server_config(None, None, true).unwrap();
        let mut bufs = SendBufs::default();
        let conn = TlsConn::new(&srv.config, false, &mut bufs).unwrap();
        let p = conn.send.as_ptr();
        conn.recycle(&mut bufs);
        let again = TlsConn::new(&srv.config, false, &mut bufs).unwrap();
        assert_eq!(again.send.as_ptr(), p);
        assert!(again.to_send().is_empty());
    }
}
