//! The epoll engine (mio, edge-triggered): the fallback where io_uring cannot run.
//!
//! A wake-up of the listener accepts (accept4(SOCK_NONBLOCK|SOCK_CLOEXEC), done by mio) until
//! WouldBlock or [`super::TURN_BUDGET`] accepts, whichever comes first. An edge-triggered
//! listener is not reported again for connections already queued, so a listener cut off by the
//! budget is remembered (`accept_more`) and accepted from again on the next turn, which then does
//! not wait in epoll_wait(2); between turns the worker publishes its counters and looks at the
//! stop flag. Held connections with more data than one turn's reads are remembered the same way
//! (`again`). EMFILE/ENFILE (and unexpected errors) stop accepting for [`super::BACKOFF`], then the
//! worker tries again without waiting for a new event; transient errors are counted and the loop
//! goes on. Connections that need more than one step (a greeting that did not fit the send buffer,
//! a held connection) live in a table indexed by fd ([`FdTable`]: grown on demand by doubling,
//! so no allocation per connection in steady state).
//!
//! Stamps (`bench`'s accept-queue wait, while the controller asks for them: `crate::worker::
//! Control`): each accepted connection's client address, which accept4(2) returns with it, and
//! the time the accept returned.
//!
//! `--tls`: each connection's [`TlsConn`] (`crate::tls`) does the handshake, the mode's work and
//! the counting; this engine only moves bytes: read(2) into its scratch buffer, handed to the
//! connection, and write(2) of what the connection queued.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use socket2::SockRef;

use super::{classify, AcceptFailure, BACKOFF, TURN_BUDGET};
use crate::config::Mode;
use crate::error::ServerError;
use crate::fd_table::FdTable;
use crate::http::{HeadScan, Scan};
use crate::tls::{Next, SendBufs, TlsConn};
use crate::worker::{Ctx, Ready, WAIT_MAX};

const LISTENER: Token = Token(usize::MAX);
/// How long a stopping worker keeps writing unfinished greetings.
const FINISH_MAX: Duration = Duration::from_secs(2);
/// Reads of [`SCRATCH_BYTES`] a held connection gets per turn before it waits for the next turn.
const READS_PER_TURN: usize = 16;
const SCRATCH_BYTES: usize = 4096;

struct Conn {
    stream: TcpStream,
    /// Bytes of the greeting / HTTP response already sent (`Mode::Greet`, `Mode::Http`).
    sent: usize,
    /// `Mode::Http`: where the scan for the end of the request head is.
    scan: HeadScan,
    /// `Mode::Http`: the request head is complete; the response is being written.
    responding: bool,
    /// `--tls`: the connection's TLS, driven by [`EpollLoop::serve_tls`].
    tls: Option<Box<TlsConn>>,
}

impl Conn {
    fn new(stream: TcpStream) -> Conn {
        Conn {
            stream,
            sent: 0,
            scan: HeadScan::default(),
            responding: false,
            tls: None,
        }
    }
}

struct EpollLoop<'c> {
    ctx: &'c mut Ctx,
    poll: Poll,
    listener: Option<TcpListener>,
    /// Connections that need more than one step, by fd (grown on demand).
    conns: FdTable<Option<Conn>>,
    open: usize,
    backoff_until: Option<Instant>,
    /// The listener may still have queued connections: accept again next turn, without an event.
    accept_more: bool,
    /// Held connections whose reads were cut off by [`READS_PER_TURN`]: read again next turn.
    again: Vec<usize>,
    /// Where reads land (held connections, HTTP requests, TLS records).
    scratch: Box<[u8]>,
    /// `--tls`: where a request's plaintext is decrypted to.
    plain: Box<[u8]>,
    /// `--tls`: free send buffers.
    send_bufs: SendBufs,
}

/// Runs the epoll engine on the calling (pinned) worker thread until the stop drain is done.
/// Calls `ready` once: `Ok(None)` when accepting, or the setup error.
pub(crate) fn run(ctx: &mut Ctx, ready: impl FnOnce(Ready)) {
    let cpu = ctx.cpu;
    let poll = match Poll::new() {
        Ok(p) => p,
        Err(source) => return ready(Err(ServerError::Poll { cpu, source })),
    };
    let Some(sock) = ctx.listener.take() else {
        return ready(Ok(None));
    };
    if let Err(source) = sock.set_nonblocking(true) {
        return ready(Err(ServerError::Poll { cpu, source }));
    }
    let mut listener = TcpListener::from_std(sock.into());
    if let Err(source) = poll
        .registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
    {
        return ready(Err(ServerError::Poll { cpu, source }));
    }
    let mut l = EpollLoop {
        ctx,
        poll,
        listener: Some(listener),
        conns: FdTable::new(),
        open: 0,
        backoff_until: None,
        // Connections may have queued between listen(2) and the registration (no edge for them).
        accept_more: true,
        again: Vec::new(),
        scratch: vec![0; SCRATCH_BYTES].into_boxed_slice(),
        plain: vec![0; SCRATCH_BYTES].into_boxed_slice(),
        send_bufs: SendBufs::default(),
    };
    ready(Ok(None));
    l.run_loop();
}

impl EpollLoop<'_> {
    fn run_loop(&mut self) {
        let mut events = Events::with_capacity(1024);
        let mut grace_until: Option<Instant> = None;
        let mut finish_until: Option<Instant> = None;
        loop {
            let now = Instant::now();
            let mut timeout = WAIT_MAX;
            if let Some(b) = self.backoff_until {
                timeout = timeout.min(b.saturating_duration_since(now));
            } else if self.accept_more {
                timeout = Duration::ZERO;
            }
            if !self.again.is_empty() {
                timeout = Duration::ZERO;
            }
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != ErrorKind::Interrupted {
                    self.ctx.counts.error(e.raw_os_error().unwrap_or(libc::EIO));
                    std::thread::sleep(BACKOFF);
                }
            }
            for fd in std::mem::take(&mut self.again) {
                self.on_event(fd);
            }
            for ev in events.iter() {
                if ev.token() == LISTENER {
                    self.accept_more = true;
                } else {
                    self.on_event(ev.token().0);
                }
            }
            let now = Instant::now();
            if self.backoff_until.is_some_and(|b| now >= b) {
                self.backoff_until = None;
                self.accept_more = true;
            }
            if self.accept_more && self.backoff_until.is_none() {
                self.accept_some();
            }
            self.ctx.maybe_publish(now);
            if finish_until.is_some_and(|f| now >= f || self.open == 0) {
                break;
            }
            if grace_until.is_none() && self.ctx.draining() {
                if let Some(l) = self.listener.as_ref() {
                    if let Err(e) = crate::drain::block_new_syns(&SockRef::from(l)) {
                        self.ctx.counts.error(e.raw_os_error().unwrap_or(libc::EIO));
                    }
                }
                grace_until = Some(now + self.ctx.grace());
            }
            if finish_until.is_none() && grace_until.is_some_and(|g| now >= g) {
                self.final_drain();
                finish_until = Some(now + FINISH_MAX);
                if self.open == 0 {
                    break;
                }
            }
        }
        // Whatever is still open (held connections, greetings not finished in time) is closed.
        self.ctx.fd_table_len = self.conns.len();
        self.conns.iter_mut().for_each(|c| *c = None);
    }

    /// Accepts until WouldBlock, a back-off, or [`TURN_BUDGET`] accepts; leaves `accept_more` set
    /// only in the last case (the queue may hold more, and no new edge will say so).
    fn accept_some(&mut self) {
        self.accept_more = false;
        for _ in 0..TURN_BUDGET {
            let Some(l) = self.listener.as_ref() else {
                return;
            };
            match l.accept() {
                Ok((stream, peer)) => {
                    self.ctx.counts.accepted += 1;
                    self.ctx.syn_cpu(stream.as_fd());
                    if let Some(s) = self.ctx.stamps.as_mut() {
                        // accept4(2) filled in the peer's address: the stamp costs a clock read.
                        s.push_addr(&peer, crate::worker::now_ns());
                    }
                    self.on_conn(stream);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => {
                    let errno = e.raw_os_error().unwrap_or(libc::EIO);
                    self.ctx.counts.error(errno);
                    if let AcceptFailure::Backoff(emfile) = classify(errno) {
                        self.ctx.counts.emfile_backoffs += u64::from(emfile);
                        self.backoff_until = Some(Instant::now() + BACKOFF);
                        return;
                    }
                }
            }
        }
        self.accept_more = true;
    }

    /// Stop: accept until EAGAIN (for at most [`crate::drain::FINAL_DRAIN_MAX`]), seal the
    /// listener and accept until EAGAIN again (see [`crate::drain`]), count what cannot be
    /// accepted, close the listener; held connections are closed.
    fn final_drain(&mut self) {
        self.backoff_until = None;
        self.accept_until_eagain();
        if !self.accept_more && self.backoff_until.is_none() {
            if let Some(l) = self.listener.as_ref() {
                match crate::drain::seal(&SockRef::from(l)) {
                    Ok(()) => self.accept_until_eagain(),
                    Err(e) => self.ctx.counts.error(e.raw_os_error().unwrap_or(libc::EIO)),
                }
            }
        }
        if let Some(mut l) = self.listener.take() {
            if self.backoff_until.is_some() || self.accept_more {
                let left = crate::drain::accept_queue_len(&SockRef::from(&l)).unwrap_or(0);
                self.ctx.counts.left_in_queue += u64::from(left);
            }
            let _ = self.poll.registry().deregister(&mut l);
        }
        self.backoff_until = None;
        self.accept_more = false;
        if self.ctx.mode == Mode::Hold {
            for slot in self.conns.iter_mut() {
                if slot.take().is_some() {
                    self.open -= 1;
                }
            }
            self.again.clear();
        }
    }

    /// Accepts until EAGAIN, an accept error that backs off, or
    /// [`crate::drain::FINAL_DRAIN_MAX`]; `accept_more` says whether the queue may still hold
    /// connections.
    fn accept_until_eagain(&mut self) {
        let until = Instant::now() + crate::drain::FINAL_DRAIN_MAX;
        loop {
            self.accept_some();
            if !self.accept_more || self.backoff_until.is_some() || Instant::now() >= until {
                break;
            }
        }
    }

    fn on_conn(&mut self, stream: TcpStream) {
        if let Some(cfg) = self.ctx.tls.as_ref() {
            let http = matches!(self.ctx.mode, Mode::Http { .. });
            let mut conn = Conn::new(stream);
            match TlsConn::new(cfg, http, &mut self.send_bufs) {
                Ok(c) => conn.tls = Some(Box::new(c)),
                Err(e) => {
                    self.ctx.counts.tls.failed(&e);
                    return;
                }
            }
            if self.serve_tls(&mut conn) {
                self.finish(conn);
            } else {
                self.keep(conn, Interest::READABLE | Interest::WRITABLE);
            }
            return;
        }
        match self.ctx.mode {
            Mode::Close => drop(stream),
            // The listener's SO_LINGER {on, 0} is inherited (crate::listener::bind_group):
            // this close sends RST.
            Mode::Rst => drop(stream),
            Mode::Greet { .. } => {
                let mut conn = Conn::new(stream);
                if !self.write_greeting(&mut conn) {
                    self.keep(conn, Interest::WRITABLE);
                }
            }
            Mode::Hold => self.keep(Conn::new(stream), Interest::READABLE),
            Mode::Http { .. } => {
                // The request has often arrived already (the client sends right after its
                // handshake): try it at once, and wait for the rest (or write room) otherwise.
                let mut conn = Conn::new(stream);
                if !self.serve_http(&mut conn) {
                    self.keep(conn, Interest::READABLE | Interest::WRITABLE);
                }
            }
        }
    }

    /// `Mode::Http`: reads until the end of the request head, then writes the response; true
    /// when the connection is done (response written, the client closed first, the head was too
    /// large (counted `EMSGSIZE`), or an error).
    fn serve_http(&mut self, conn: &mut Conn) -> bool {
        while !conn.responding {
            match (&conn.stream).read(&mut self.scratch) {
                Ok(0) => return true,
                Ok(n) => match conn.scan.feed(&self.scratch[..n]) {
                    Scan::More => {}
                    Scan::End => conn.responding = true,
                    Scan::TooLarge => {
                        self.ctx.counts.error(libc::EMSGSIZE);
                        return true;
                    }
                    Scan::Bad => {
                        self.ctx.counts.bad_requests += 1;
                        return true;
                    }
                },
                Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return true,
            }
        }
        self.write_greeting(conn)
    }

    /// Writes the rest of the greeting (or HTTP response); true when the connection is done (all
    /// sent, counted served, or failed).
    fn write_greeting(&mut self, conn: &mut Conn) -> bool {
        while conn.sent < self.ctx.greet.len() {
            match (&conn.stream).write(&self.ctx.greet[conn.sent..]) {
                Ok(n) => {
                    conn.sent += n;
                    if conn.sent == self.ctx.greet.len() {
                        self.ctx.counts.served += 1;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.ctx.counts.error(e.raw_os_error().unwrap_or(libc::EIO));
                    return true;
                }
            }
        }
        true
    }

    fn keep(&mut self, mut conn: Conn, interest: Interest) {
        let fd = conn.stream.as_raw_fd() as usize;
        if let Err(e) = self
            .poll
            .registry()
            .register(&mut conn.stream, Token(fd), interest)
        {
            self.ctx.counts.error(e.raw_os_error().unwrap_or(libc::EIO));
            return;
        }
        *self.conns.slot(fd) = Some(conn);
        self.open += 1;
    }

    fn on_event(&mut self, fd: usize) {
        let Some(mut conn) = self.conns.get_mut(fd).and_then(Option::take) else {
            return;
        };
        let done = match self.ctx.mode {
            _ if conn.tls.is_some() => self.serve_tls(&mut conn),
            Mode::Greet { .. } => self.write_greeting(&mut conn),
            Mode::Http { .. } => self.serve_http(&mut conn),
            _ => match self.read_discard(&mut conn) {
                Some(done) => done,
                None => {
                    self.again.push(fd);
                    false
                }
            },
        };
        if done {
            self.open -= 1;
            let _ = self.poll.registry().deregister(&mut conn.stream);
            self.finish(conn);
        } else {
            *self.conns.slot(fd) = Some(conn);
        }
    }

    /// Closes a connection that is done; its TLS send buffer goes back to the pool.
    fn finish(&mut self, conn: Conn) {
        if let Some(tls) = conn.tls {
            tls.recycle(&mut self.send_bufs);
        }
    }

    /// `--tls`: moves bytes between the socket and the connection's [`TlsConn`] (which does the
    /// handshake, the mode's work and the counting) until the socket would block (false) or the
    /// connection is done (true: closed after what was to be sent, or failed).
    ///
    /// The loop is bounded without a read budget of its own: no mode consumes the plaintext a
    /// client sends beyond the request head (at most 16 KiB, [`HeadScan`]), so a client that
    /// keeps sending fills rustls's received-plaintext buffer (16 KiB,
    /// `DEFAULT_RECEIVED_PLAINTEXT_LIMIT` in rustls' `common_state.rs`), `read_tls` refuses
    /// more and the connection closes: a few reads of [`SCRATCH_BYTES`], fewer than the
    /// [`READS_PER_TURN`] a held connection gets.
    fn serve_tls(&mut self, conn: &mut Conn) -> bool {
        let Some(tls) = conn.tls.as_mut() else {
            return true;
        };
        let counts = &mut self.ctx.counts;
        loop {
            match tls.next() {
                Next::Recv => {
                    let got = match (&conn.stream).read(&mut self.scratch) {
                        Ok(n) => Ok(&self.scratch[..n]),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        Err(e) => Err(e.raw_os_error().unwrap_or(libc::EIO)),
                    };
                    tls.on_recv(got, &self.ctx.greet, &mut self.plain, counts);
                }
                Next::Send | Next::SendClose => {
                    let res = match (&conn.stream).write(tls.to_send()) {
                        Ok(n) => Ok(n),
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        // The last flight is sent best effort: what does not fit now is dropped.
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            return tls.next() == Next::SendClose
                        }
                        Err(e) => Err(e.raw_os_error().unwrap_or(libc::EIO)),
                    };
                    tls.on_sent(res, counts);
                }
                Next::Close => return true,
            }
        }
    }

    /// Reads and drops what a held connection sent: `Some(true)` at EOF or error (close it),
    /// `Some(false)` at WouldBlock (wait for the next edge), `None` when [`READS_PER_TURN`] reads
    /// did not empty it (read again next turn).
    fn read_discard(&mut self, conn: &mut Conn) -> Option<bool> {
        for _ in 0..READS_PER_TURN {
            match (&conn.stream).read(&mut self.scratch) {
                Ok(0) => return Some(true),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Some(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Some(true),
            }
        }
        None
    }
}
