//! The worker's side of `--tls`: starting a slot's TLS connection after its TCP handshake,
//! driving it on readiness events, and handing the plaintext to `--http`.

use super::{count_error, drive, flush, read_plain, write_plain, TlsStep};
use crate::http::Step;
use crate::worker::Worker;

impl Worker<'_> {
    /// Slot `i`'s TCP handshake was seen complete at `t`: start its TLS connection (the
    /// ClientHello goes out at once).
    pub(crate) fn tls_begin(&mut self, i: usize, t: u64) {
        let Some(w) = self.tls.as_mut() else { return };
        let conn = match rustls::ClientConnection::new(w.cfg.clone(), w.name.clone()) {
            Ok(c) => c,
            Err(e) => return self.exchange_failed(i, |p| count_error(p, &e)),
        };
        let s = &mut w.slots[i];
        s.conn = Some(conn);
        s.tcp_ns = t;
        s.done = false;
        s.closing = false;
        self.tls_event(i, t);
    }

    /// Slot `i`'s socket is ready (seen at `t`): drive its TLS connection, and its HTTP exchange
    /// once the handshake is done.
    pub(crate) fn tls_event(&mut self, i: usize, t: u64) {
        // Ends when the socket has nothing more (edge-triggered epoll: it must be read until
        // EAGAIN), or the slot ends.
        loop {
            let step = {
                let (Some(w), Some(sock)) = (self.tls.as_mut(), self.slab.get(i).sock.as_ref())
                else {
                    return;
                };
                drive(&mut w.slots[i], sock)
            };
            let done = self.tls.as_ref().is_some_and(|w| w.slots[i].done);
            match step {
                TlsStep::Wait if done && self.http.is_some() => {
                    return self.tls_http_read(i, t, false)
                }
                TlsStep::Wait => return,
                TlsStep::Plaintext if self.http.is_some() => {
                    self.tls_http_read(i, t, false);
                    if self.slab.get(i).phase == crate::slot::Phase::Free {
                        return;
                    }
                }
                // Application data without --http (a server that talks first): ignored.
                TlsStep::Plaintext => {
                    if let Some(c) = self.tls.as_mut().and_then(|w| w.slots[i].conn.as_mut()) {
                        let mut sink = [0u8; 512];
                        while matches!(std::io::Read::read(&mut c.reader(), &mut sink), Ok(n) if n > 0)
                        {
                        }
                    }
                }
                TlsStep::Handshaken => {
                    let measured = self.slab.get(i).measured;
                    if let Some(w) = self.tls.as_mut() {
                        w.handshake_done(i, t, measured);
                    }
                    if !self.tls_after_handshake(i) {
                        return;
                    }
                }
                TlsStep::Closed if self.http.is_some() => return self.tls_http_read(i, t, true),
                // The handshake was the exchange (a success already); the server closed.
                TlsStep::Closed => return self.finish(i),
                TlsStep::Errno(e) if !done => {
                    return self.exchange_failed(i, |p| p.tls_errno(e));
                }
                TlsStep::Errno(e) => return self.after_tls_failed(i, |p| p.http_errno(e), e),
                TlsStep::Eof => {
                    return self.exchange_failed(i, |p| p.tls_other(crate::failures::TlsOther::Eof))
                }
                TlsStep::Tls(e) if !done => return self.exchange_failed(i, |p| count_error(p, &e)),
                TlsStep::Tls(e) => {
                    return self.after_tls_failed(i, |p| count_error(p, &e), libc::EPROTO)
                }
            }
        }
    }

    /// The TLS handshake of slot `i` is done: with `--http` send the request through it; without,
    /// the attempt has succeeded: send close_notify and wait for the server's close (TLS 1.3
    /// tickets come after the handshake). False when the slot was ended.
    fn tls_after_handshake(&mut self, i: usize) -> bool {
        let (target, measured) = {
            let s = self.slab.get(i);
            (s.target as usize, s.measured)
        };
        let (Some(w), Some(sock)) = (self.tls.as_mut(), self.slab.get(i).sock.as_ref()) else {
            return false;
        };
        let s = &mut w.slots[i];
        let sent = match self.http.as_mut() {
            Some(h) => {
                h.reset_slot(i, target);
                let req = h.take_request(i, target, measured);
                write_plain(s, req)
            }
            None => {
                s.closing = true;
                if let Some(c) = s.conn.as_mut() {
                    c.send_close_notify();
                }
                Ok(())
            }
        };
        let flushed = sent.and_then(|()| match s.conn.as_mut() {
            Some(c) => flush(c, sock),
            None => Ok(()),
        });
        if self.http.is_none() {
            self.exchange_done(i);
        }
        match flushed {
            Ok(()) => true,
            Err(e) => {
                self.after_tls_failed(i, |p| p.http_errno(e), e);
                false
            }
        }
    }

    /// A failure after the TLS handshake of slot `i`: with `--http` before the response is
    /// complete it fails the attempt (`f` counts its class); otherwise the attempt already
    /// succeeded and it is a post-handshake failure (`errno`).
    fn after_tls_failed(
        &mut self,
        i: usize,
        f: impl Fn(&mut crate::failures::ProtoFailures),
        errno: i32,
    ) {
        if self.exchange_pending(i) {
            self.exchange_failed(i, f);
        } else {
            self.post_fail(i, errno);
        }
    }

    /// Hands the plaintext rustls holds for slot `i` to the HTTP parser (`eof`: the server
    /// closed, so the stream ends after it).
    fn tls_http_read(&mut self, i: usize, t: u64, eof: bool) {
        let (intended, measured) = {
            let s = self.slab.get(i);
            (s.intended_ns, s.measured)
        };
        let wait_fin = self.cfg.close == crate::config::CloseMode::Server;
        loop {
            let (Some(w), Some(h)) = (self.tls.as_mut(), self.http.as_mut()) else {
                return;
            };
            let got = read_plain(&mut w.slots[i], &mut w.scratch);
            let step = match got {
                Ok(Some(n)) => h.consume(i, &w.scratch[..n], t, intended, measured, wait_fin),
                Ok(None) if eof => h.consume(i, &[], t, intended, measured, wait_fin),
                Ok(None) => Some(Step::Wait),
                Err(e) => Some(Step::Failed(e)),
            };
            match step {
                None => {}
                Some(step) => {
                    self.http_step(i, step);
                    return;
                }
            }
        }
    }
}
