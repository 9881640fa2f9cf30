//! The life of one connection attempt on a worker: start (socket, options, connect, register),
//! handshake completion or failure, the optional read phase, close, timeout.
//!
//! Syscalls per attempt in the common case: socket(2) (SOCK_NONBLOCK|SOCK_CLOEXEC in one call),
//! setsockopt(SO_LINGER) only for `--close rst`, setsockopt(IP_BIND_ADDRESS_NO_PORT) + bind(2)
//! only with sources, connect(2), epoll_ctl(ADD) (skipped when connect completes at once, which
//! loopback often does), close(2). No getsockopt(SO_ERROR) on success: tcp_poll() reports EPOLLOUT
//! for a connecting socket only once it is established and sets EPOLLERR on failure (net/ipv4/tcp.c),
//! so SO_ERROR is read only when EPOLLERR/EPOLLHUP are set. close(2) removes the descriptor from
//! the epoll set (epoll(7), "Questions and answers" 6), so there is no EPOLL_CTL_DEL.

use std::io::Read;
use std::time::Duration;

use mio::event::Event;
use mio::unix::SourceFd;
use mio::{Interest, Token};
use nix::sys::socket::{setsockopt, sockopt};
use socket2::{Socket, Type};

use crate::config::{CloseMode, Pattern};
use crate::slot::Phase;
use crate::worker::Worker;

/// Not an errno the kernel returns for these sockets: the server closed before `expect_bytes`
/// arrived (counted as `ENODATA`).
const SHORT_GREETING: i32 = libc::ENODATA;

/// At most this many attempts start per loop turn: starts that are due together are made in one
/// batch after one wait (no wait between them). An overloaded worker (more due starts than it
/// can make) still returns to its events, timeouts and per-second flush every few milliseconds.
/// The open-loop default of [`crate::Pacing::start_batch`] (`--start-batch`), recorded in
/// `bench` records as the setting `load.start_batch`.
pub const START_BUDGET: usize = 64;

/// Open loop: a due start that finds a free slot but that the generator itself reaches more than
/// this after its intended time (it was starved of CPU, or is offered more than it can start) is
/// dropped, counted, never started. So the starts it does make stay within 100 ms of their
/// schedule and are counted in the phase and second they were due in, and a generator that cannot
/// keep up says so (dropped, with a warning) rather than shifting its work seconds later. A start
/// waiting for a free slot (the target is slow) waits up to `connect_timeout` instead: that wait is
/// the target's, and the latency from the intended start shows it (coordinated omission).
/// Also the grace after the end of the window for starts due before it.
pub const MAX_GENERATOR_LAG_NS: u64 = 100_000_000;

/// At most this many expired slots are ended per loop turn (each costs a few syscalls).
pub(crate) const EXPIRE_BUDGET: usize = 256;

/// Where a connect whose deadline has passed really is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The handshake completed (getpeername(2) succeeds, no pending error): a success.
    Connected,
    /// The connect failed with this errno (SO_ERROR, e.g. ECONNREFUSED).
    Failed(i32),
    /// Still in SYN-SENT: a real timeout.
    Pending,
    /// The handshake completed, then the peer reset the connection (SO_ERROR `ECONNRESET`, or
    /// `EPIPE` after the server's FIN) before the worker looked: a success whose connection
    /// failed after the handshake. tcp_reset() (net/ipv4/tcp_input.c) reports a reset met in
    /// SYN-SENT as `ECONNREFUSED` and only one met after the handshake (ESTABLISHED and later)
    /// as `ECONNRESET` (`EPIPE` in CLOSE-WAIT).
    ResetAfterHandshake(i32),
}

/// Decides from `SO_ERROR` (0 = none) and getpeername(2)'s result (`Ok` or its errno): a pending
/// error is a failure; no error and a peer is a completed handshake; `ENOTCONN` (inet_getname()
/// returns it for SYN-SENT and CLOSE) is a connect still waiting; any other getpeername error is a
/// failure with that errno; `ECONNRESET` / `EPIPE` is a reset after a completed handshake
/// ([`Verdict::ResetAfterHandshake`]).
pub(crate) fn verdict(so_error: i32, peer: Result<(), i32>) -> Verdict {
    match (so_error, peer) {
        (0, Ok(())) => Verdict::Connected,
        (0, Err(libc::ENOTCONN)) => Verdict::Pending,
        (0, Err(e)) => Verdict::Failed(e),
        (e @ (libc::ECONNRESET | libc::EPIPE), _) => Verdict::ResetAfterHandshake(e),
        (e, _) => Verdict::Failed(e),
    }
}

/// Asks the kernel where a connecting socket is: getsockopt(SO_ERROR), then getpeername(2). Two
/// syscalls, only for attempts whose deadline has passed.
pub(crate) fn probe(sock: &Socket) -> Verdict {
    let so_error = match sock.take_error() {
        Ok(None) => 0,
        Ok(Some(e)) => errno(&e),
        Err(e) => errno(&e),
    };
    if so_error != 0 {
        return verdict(so_error, Ok(()));
    }
    verdict(0, sock.peer_addr().map(|_| ()).map_err(|e| errno(&e)))
}

impl Worker<'_> {
    /// Starts the attempts that are due at `now`, at most `cfg.pacing.start_batch` of them in open
    /// loop ([`START_BUDGET`] by default and always in closed loop; the loop then
    /// goes back to its events, timeouts and per-second flush before starting more); returns a
    /// fresh `now`.
    ///
    /// Open loop: a due start is dropped (counted, never started) when every in-flight slot stayed
    /// busy for `connect_timeout` after its intended time, or when the generator itself reaches
    /// it more than [`MAX_GENERATOR_LAG_NS`] after both its intended time and the last moment
    /// every slot was busy (starved of CPU, or offered more than it can start; capped by
    /// `connect_timeout`). Such starts are counted by arithmetic in one step
    /// ([`crate::schedule::Schedule::skip_before`]), never one by one, so a worker offered 1e9/s
    /// does O(1) work for them per turn and keeps serving its sockets in flight.
    pub(crate) fn start_due(&mut self, mut now: u64) -> u64 {
        match self.cfg.pattern {
            Pattern::Open { .. } => {
                let mut budget = self.cfg.pacing.start_batch;
                while let Some(t) = self.schedule.as_ref().and_then(|s| s.peek()) {
                    if t > now {
                        break;
                    }
                    let full = self.slab.is_full();
                    if full {
                        self.last_full_ns = now;
                    }
                    if now - t > self.timeout_ns {
                        // Everything due before now - timeout is dropped, in one step. Those
                        // starts waited for a slot when every slot was busy at some moment after
                        // the last of them fell due (the slots may have freed just now).
                        let cutoff = now - self.timeout_ns;
                        self.drop_before(cutoff, self.slots_busy_since(cutoff));
                        continue;
                    }
                    // The generator's own lag: time past the intended start and past the last
                    // moment every slot was busy (a start waiting for a slot is not lagging).
                    let lag = self.max_lag_ns();
                    if !full && now - t > lag && now.saturating_sub(self.last_full_ns) > lag {
                        self.drop_before(now - lag, false);
                        continue;
                    }
                    if full || budget == 0 {
                        break; // wait for a free slot / the next turn (the start will be late)
                    }
                    if let Some(s) = self.schedule.as_mut() {
                        s.advance();
                    }
                    budget -= 1;
                    self.start(t, now);
                    now = crate::clock::now_ns();
                }
            }
            Pattern::Closed { .. } => {
                if now >= self.win.start_ns {
                    // Bounded: attempts that fail at once (e.g. ECONNREFUSED from connect(2))
                    // free their slot again, and the loop must get back to its clock and stop flag.
                    for _ in 0..self.slab.capacity().min(START_BUDGET) {
                        if self.slab.is_full() {
                            break;
                        }
                        self.start(now, now);
                        now = crate::clock::now_ns();
                    }
                }
            }
        }
        now
    }

    /// How late the generator may reach a due start that has a free slot:
    /// [`MAX_GENERATOR_LAG_NS`], at most the connect timeout.
    pub(crate) fn max_lag_ns(&self) -> u64 {
        MAX_GENERATOR_LAG_NS.min(self.timeout_ns)
    }

    /// Counts every intended start the schedule still holds as dropped: the window has ended and
    /// the worker never got to them — because every in-flight slot was busy (now, or within the
    /// generator's lag bound: those starts were waiting for a slot, counted as full-slot drops)
    /// or because it was behind. Keeps `offered = attempts + dropped`. O(1).
    pub(crate) fn drop_rest(&mut self) {
        let since = crate::clock::now_ns().saturating_sub(self.max_lag_ns());
        self.drop_before(u64::MAX, self.slots_busy_since(since));
    }

    /// Every in-flight slot is busy now, or was at some moment at or after `t_ns`: a start due
    /// before then that was not made waited for a slot (a full-slot drop), not for the generator.
    pub(crate) fn slots_busy_since(&self, t_ns: u64) -> bool {
        self.slab.is_full() || (self.last_full_ns > 0 && self.last_full_ns >= t_ns)
    }

    /// Drops every intended start before `cutoff_ns` (all when `u64::MAX`), counting them by
    /// arithmetic; `full`: because every in-flight slot was busy. Those before the measured
    /// window count as warm-up.
    pub(crate) fn drop_before(&mut self, cutoff_ns: u64, full: bool) {
        let Some(s) = self.schedule.as_mut() else {
            return;
        };
        let warm = s.skip_before(cutoff_ns.min(self.win.measure_ns));
        let measured = s.skip_before(cutoff_ns);
        for (n, in_measured) in [(warm, false), (measured, true)] {
            if n == 0 {
                continue;
            }
            bump(
                &mut self.total,
                &mut self.measured,
                &mut self.second,
                in_measured,
                |c| {
                    c.dropped += n;
                    c.dropped_full += if full { n } else { 0 };
                    c.offered += n;
                },
            );
        }
    }

    /// Starts one attempt intended at `intended` (a slot is free).
    fn start(&mut self, intended: u64, now: u64) {
        // Callers check for a free slot; allocating first keeps attempts = successes + failures.
        let Some(i) = self.slab.alloc() else { return };
        let measured = intended >= self.win.measure_ns;
        let open = matches!(self.cfg.pattern, Pattern::Open { .. });
        let late = open && now.saturating_sub(intended) > self.late_ns;
        if open && measured {
            self.lag.record(now.saturating_sub(intended));
        }
        bump(
            &mut self.total,
            &mut self.measured,
            &mut self.second,
            measured,
            |c| {
                c.attempts += 1;
                c.offered += 1;
                c.late += u64::from(late);
            },
        );
        let target = self.rr % self.targets.len();
        self.rr = self.rr.wrapping_add(1);
        self.per_target[target].attempts += 1;
        {
            let s = self.slab.get(i);
            s.intended_ns = intended;
            s.start_ns = now;
            s.deadline_ns = now + self.timeout_ns;
            s.read = 0;
            s.phase = Phase::Connecting;
            s.measured = measured;
            s.target = target as u32;
        }
        if self.uring.is_some() {
            // The io_uring engine: the same attempt as one chain of SQEs (engine::uring).
            return self.uring_start(i, target);
        }
        let sock = match Socket::new(self.domains[target], Type::STREAM.nonblocking(), None) {
            Ok(s) => s,
            Err(e) => return self.fail(i, errno(&e)),
        };
        if let Err(e) = self.prepare(&sock, target) {
            return self.fail(i, errno(&e));
        }
        match sock.connect(&self.targets[target]) {
            Ok(()) => {
                self.slab.get(i).sock = Some(sock);
                if self.needs_read {
                    // HTTP: a request that does not fit the send buffer waits for write room.
                    let interest = if self.http.is_some() || self.tls.is_some() {
                        Interest::READABLE | Interest::WRITABLE
                    } else {
                        Interest::READABLE
                    };
                    if let Err(e) = self.register(i, interest) {
                        return self.fail(i, errno(&e));
                    }
                }
                self.connected(i, crate::clock::now_ns(), false);
            }
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
                self.slab.get(i).sock = Some(sock);
                let interest = if self.needs_read {
                    Interest::WRITABLE | Interest::READABLE
                } else {
                    Interest::WRITABLE
                };
                if let Err(e) = self.register(i, interest) {
                    self.fail(i, errno(&e));
                }
            }
            Err(e) => self.fail(i, errno(&e)),
        }
    }

    /// Socket options before connect: SO_LINGER 0 for RST close, a source address of the
    /// target's family (round-robin; none of that family = the kernel chooses).
    pub(crate) fn prepare(&self, sock: &Socket, target: usize) -> std::io::Result<()> {
        if self.cfg.close == CloseMode::Rst {
            sock.set_linger(Some(Duration::ZERO))?;
        }
        let sources = if self.domains[target] == socket2::Domain::IPV4 {
            &self.sources_v4
        } else {
            &self.sources_v6
        };
        if !sources.is_empty() {
            setsockopt(sock, sockopt::IpBindAddressNoPort, &true)?;
            sock.bind(&sources[self.rr % sources.len()])?;
        }
        Ok(())
    }

    fn register(&mut self, i: usize, interest: Interest) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let fd = self
            .slab
            .get(i)
            .sock
            .as_ref()
            .map(|s| s.as_raw_fd())
            .unwrap_or(-1);
        self.poll
            .registry()
            .register(&mut SourceFd(&fd), Token(i), interest)
    }

    /// Handles a readiness event of slot `i` seen at `t`.
    pub(crate) fn on_event(&mut self, i: usize, ev: &Event, t: u64) {
        if i >= self.slab.capacity() {
            return;
        }
        match self.slab.get(i).phase {
            Phase::Free => {}
            Phase::Connecting => {
                if ev.is_error() || ev.is_write_closed() {
                    let err = self
                        .slab
                        .get(i)
                        .sock
                        .as_ref()
                        .and_then(|s| s.take_error().ok().flatten());
                    let code = err
                        .and_then(|e| e.raw_os_error())
                        .unwrap_or(libc::ECONNRESET);
                    match verdict(code, Ok(())) {
                        Verdict::ResetAfterHandshake(code) => {
                            self.reset_after_handshake(i, t, code)
                        }
                        _ => self.fail(i, code),
                    }
                } else if ev.is_writable() {
                    self.connected(i, t, ev.is_readable());
                }
            }
            Phase::Reading if self.tls.is_some() => self.tls_event(i, t),
            Phase::Reading if self.http.is_some() => {
                if ev.is_writable() {
                    let step = self.http_send_or_answer(i, t);
                    if !self.http_step(i, step) {
                        return;
                    }
                }
                let step = self.http_read(i, t);
                self.http_step(i, step);
            }
            Phase::Reading => self.read(i, t),
        }
    }

    /// The handshake of slot `i` was seen complete at `t`. Seen after the attempt's connect
    /// timeout (counted from its socket(2) call; e.g. the generator was stopped or starved), it
    /// is `ETIMEDOUT`, never a success: a client with that timeout would have given up.
    pub(crate) fn connected(&mut self, i: usize, t: u64, readable: bool) {
        let (intended, start, measured) = {
            let s = self.slab.get(i);
            (s.intended_ns, s.start_ns, s.measured)
        };
        if t.saturating_sub(start) > self.timeout_ns {
            bump(
                &mut self.total,
                &mut self.measured,
                &mut self.second,
                measured,
                |c| c.completed_late += 1,
            );
            return self.fail(i, libc::ETIMEDOUT);
        }
        let hs = t.saturating_sub(intended);
        self.sec_handshake.record(hs);
        if measured {
            self.handshake.record(hs);
            self.service.record(t.saturating_sub(start));
        }
        // With an exchange after the handshake (`--http`) the attempt succeeds only once the
        // exchange does (see `exchange_done`).
        let exchange = self.http.is_some() || self.tls.is_some();
        bump(
            &mut self.total,
            &mut self.measured,
            &mut self.second,
            measured,
            |c| {
                c.handshakes += 1;
                c.successes += u64::from(!exchange);
            },
        );
        if !exchange {
            let target = self.slab.get(i).target as usize;
            self.per_target[target].successes += 1;
        }
        if !self.needs_read {
            return self.finish(i);
        }
        {
            let s = self.slab.get(i);
            s.phase = Phase::Reading;
            s.deadline_ns = t + self.timeout_ns;
        }
        self.slab.requeue(i);
        if self.tls.is_some() {
            return self.tls_begin(i, t);
        }
        if self.uring.is_some() {
            return self.uring_read_begin(i, t);
        }
        if self.http.is_some() {
            let step = self.http_begin(i, t);
            if self.http_step(i, step) && readable {
                let step = self.http_read(i, t);
                self.http_step(i, step);
            }
            return;
        }
        if readable {
            self.read(i, t);
        }
    }

    /// Acts on an HTTP step of slot `i`; true while the slot stays open. A complete response
    /// makes the attempt a success (once); a failure before it makes the attempt a failure of
    /// its own class (`HTTP ERRNO`, `HTTP parse error: KIND`), never also a success; a socket
    /// failure after it (waiting for the server's FIN) is a post-handshake failure.
    pub(crate) fn http_step(&mut self, i: usize, step: crate::http::Step) -> bool {
        let complete = self.http.as_mut().is_some_and(|h| h.take_complete(i));
        if complete {
            self.exchange_done(i);
        }
        let answered = self.http.as_ref().is_some_and(|h| h.answered(i));
        match step {
            crate::http::Step::Wait => true,
            crate::http::Step::Finish => {
                self.finish(i);
                false
            }
            crate::http::Step::Failed(errno) if answered => {
                self.post_fail(i, errno);
                false
            }
            crate::http::Step::Failed(errno) => {
                self.exchange_failed(i, |p| p.http_errno(errno));
                false
            }
            crate::http::Step::Parse(kind) => {
                self.exchange_failed(i, |p| p.http_parse(kind));
                false
            }
        }
    }

    /// Slot `i`'s exchange after the handshake completed: the attempt is a success.
    pub(crate) fn exchange_done(&mut self, i: usize) {
        let (measured, target) = {
            let s = self.slab.get(i);
            (s.measured, s.target as usize)
        };
        bump(
            &mut self.total,
            &mut self.measured,
            &mut self.second,
            measured,
            |c| c.successes += 1,
        );
        self.per_target[target].successes += 1;
    }

    /// Slot `i`'s exchange after the handshake failed (`f` counts the class): the attempt is a
    /// failure; the slot is closed.
    pub(crate) fn exchange_failed(
        &mut self,
        i: usize,
        f: impl Fn(&mut crate::failures::ProtoFailures),
    ) {
        let (measured, target) = {
            let s = self.slab.get(i);
            (s.measured, s.target as usize)
        };
        bump(
            &mut self.total,
            &mut self.measured,
            &mut self.second,
            measured,
            |c| f(&mut c.proto),
        );
        f(&mut self.per_target[target].proto);
        self.finish(i);
    }

    /// True when slot `i` is in an exchange (`--http`, `--tls`) that has not succeeded yet.
    pub(crate) fn exchange_pending(&self, i: usize) -> bool {
        // The TLS handshake first: a reused slot's HTTP state is reset only once it is done.
        self.tls_pending(i) || self.http.as_ref().is_some_and(|h| !h.answered(i))
    }

    /// True when slot `i`'s TLS handshake is under way (`--tls`, not done yet).
    fn tls_pending(&self, i: usize) -> bool {
        self.tls.as_ref().is_some_and(|w| !w.slots[i].done)
    }

    /// Reads what slot `i` has (edge-triggered: until EAGAIN or done). Bytes seen after the read
    /// phase's deadline end the attempt with a post-handshake `ETIMEDOUT`.
    fn read(&mut self, i: usize, t: u64) {
        let mut buf = [0u8; 2048];
        loop {
            let r = match self.slab.get(i).sock.as_mut() {
                Some(mut sock) => Read::read(&mut sock, &mut buf),
                None => return,
            };
            match r {
                Ok(n) => {
                    if !self.took(i, t, n) {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return self.post_fail(i, errno(&e)),
            }
        }
    }

    /// `n` bytes read on slot `i` at `t` (0 = the server's FIN), in the read phase of
    /// `--expect-bytes` / `--close server` (both engines): records the first-byte latency when
    /// `expect_bytes` are in, and ends the attempt when it is done (`expect_bytes` read without
    /// `--close server`, or the FIN), when the FIN came before `expect_bytes` (a post-handshake
    /// `ENODATA`), or when bytes come after the read phase's deadline (`ETIMEDOUT`). True while
    /// the slot reads on.
    pub(crate) fn took(&mut self, i: usize, t: u64, n: usize) -> bool {
        if t > self.slab.get(i).deadline_ns {
            self.post_fail(i, libc::ETIMEDOUT);
            return false;
        }
        if n == 0 {
            let short = self
                .cfg
                .expect_bytes
                .is_some_and(|n| self.slab.get(i).read < n);
            if short {
                self.post_fail(i, SHORT_GREETING);
            } else {
                self.finish(i);
            }
            return false;
        }
        let s = self.slab.get(i);
        let before = s.read;
        s.read = s.read.saturating_add(n as u32);
        let (after, intended, measured) = (s.read, s.intended_ns, s.measured);
        if let Some(want) = self.cfg.expect_bytes {
            if before < want && after >= want {
                if measured {
                    self.first_byte.record(t.saturating_sub(intended));
                }
                if self.cfg.close != CloseMode::Server {
                    self.finish(i);
                    return false;
                }
            }
        }
        true
    }

    /// Ends the slots whose deadline has passed, oldest first, at most [`EXPIRE_BUDGET`] per call
    /// (the rest on the next turn, which then does not sleep).
    ///
    /// The socket is asked first ([`probe`]) so that each attempt gets its own cause: a failed
    /// connect fails with its own errno (e.g. ECONNREFUSED that the worker had not yet looked
    /// at); a handshake that completed but is seen only now, past its deadline, is `ETIMEDOUT`
    /// (counted in `completed_late`, see [`Self::connected`]); a connect still in SYN-SENT is
    /// `ETIMEDOUT`. In the read phase a read still unfinished at its deadline times out.
    pub(crate) fn expire(&mut self, now: u64) {
        if self.uring.is_some() {
            // The kernel's link timeout ends each connect (engine::uring).
            return;
        }
        for _ in 0..EXPIRE_BUDGET {
            let Some(i) = self.slab.oldest() else { return };
            let s = self.slab.get(i);
            if s.deadline_ns > now {
                return;
            }
            let phase = s.phase;
            match phase {
                Phase::Reading if self.tls_pending(i) => {
                    self.exchange_failed(i, |p| p.tls_errno(libc::ETIMEDOUT))
                }
                Phase::Reading if self.exchange_pending(i) => {
                    self.exchange_failed(i, |p| p.http_errno(libc::ETIMEDOUT))
                }
                Phase::Reading => self.post_fail(i, libc::ETIMEDOUT),
                _ => match self
                    .slab
                    .get(i)
                    .sock
                    .as_ref()
                    .map_or(Verdict::Pending, probe)
                {
                    Verdict::Connected => self.connected(i, now, true),
                    Verdict::ResetAfterHandshake(code) => self.reset_after_handshake(i, now, code),
                    Verdict::Failed(code) => self.fail(i, code),
                    Verdict::Pending => self.fail(i, libc::ETIMEDOUT),
                },
            }
        }
    }

    /// Ends every slot in flight at `now` (interrupted run), bounded by the slab's size. Each
    /// connecting socket is asked where it stands ([`probe`]): completed in time = a success,
    /// failed = its errno, still waiting = abandoned (counted `abandoned`, neither a success nor a
    /// failure: the run, not the target, ended it). Reading slots were already successes and are
    /// just closed. So `attempts = successes + failures + abandoned`.
    pub(crate) fn abandon_all(&mut self, now: u64) {
        if self.uring.is_some() {
            return self.uring_abandon_all();
        }
        while let Some(i) = self.slab.oldest() {
            if self.slab.get(i).phase != Phase::Connecting {
                if self.exchange_pending(i) {
                    // Handshake done, response not complete: neither a success nor a failure.
                    self.abandon(i);
                }
                self.finish(i);
                continue;
            }
            let verdict = self
                .slab
                .get(i)
                .sock
                .as_ref()
                .map_or(Verdict::Pending, probe);
            match verdict {
                Verdict::Connected => self.connected(i, now, false),
                Verdict::ResetAfterHandshake(code) => self.reset_after_handshake(i, now, code),
                Verdict::Failed(code) => self.fail(i, code),
                Verdict::Pending => {
                    self.abandon(i);
                    self.finish(i);
                }
            }
            // A success that needs a read is still in flight: close it now (an exchange not
            // finished is abandoned).
            if self.slab.get(i).phase != Phase::Free {
                if self.exchange_pending(i) {
                    self.abandon(i);
                }
                self.finish(i);
            }
        }
    }

    /// Counts slot `i` abandoned (interrupted while undecided).
    pub(crate) fn abandon(&mut self, i: usize) {
        let (measured, target) = {
            let s = self.slab.get(i);
            (s.measured, s.target as usize)
        };
        bump(
            &mut self.total,
            &mut self.measured,
            &mut self.second,
            measured,
            |c| c.abandoned += 1,
        );
        self.per_target[target].abandoned += 1;
    }

    /// The handshake of slot `i` failed with `errno`.
    pub(crate) fn fail(&mut self, i: usize, errno: i32) {
        let (measured, target) = {
            let s = self.slab.get(i);
            (s.measured, s.target as usize)
        };
        bump(
            &mut self.total,
            &mut self.measured,
            &mut self.second,
            measured,
            |c| c.failures.count(errno),
        );
        self.per_target[target].failures.count(errno);
        self.finish(i);
    }

    /// Slot `i`'s handshake completed and the peer then reset it (`code`: `ECONNRESET` or
    /// `EPIPE`), seen at `t`: a success (unless seen past the connect timeout, see
    /// [`Self::connected`]) whose connection failed after the handshake, counted by `code` among
    /// the post-handshake failures. E.g. a server with SO_LINGER 0 (`server --mode rst`) that
    /// accepted and reset it before this worker looked. A server whose full accept queue resets
    /// it (tcp_abort_on_overflow=1) never accepted it: the kernel's PassiveOpens tell those
    /// apart where they can be read ([`crate::LoadReport::reclassify_never_accepted`]).
    pub(crate) fn reset_after_handshake(&mut self, i: usize, t: u64, code: i32) {
        let (measured, before) = (self.slab.get(i).measured, self.total.successes);
        self.connected(i, t, false);
        if self.slab.get(i).phase != Phase::Free {
            // An exchange began on a connection already reset: it fails with that code (the
            // epoll engine's first write fails at once, the io_uring engine's SEND later).
            if self.tls_pending(i) {
                self.exchange_failed(i, |p| p.tls_errno(code));
            } else if self.exchange_pending(i) {
                self.exchange_failed(i, |p| p.http_errno(code));
            } else {
                self.finish(i);
            }
        }
        if measured && self.total.successes > before {
            self.post_connect.count(code);
        }
    }

    /// Slot `i` failed after its handshake.
    pub(crate) fn post_fail(&mut self, i: usize, errno: i32) {
        if self.slab.get(i).measured {
            self.post_connect.count(errno);
        }
        self.finish(i);
    }

    /// Closes slot `i`'s socket (RST or FIN per the close mode, set up at start) and frees the slot.
    pub(crate) fn finish(&mut self, i: usize) {
        let sock = self.slab.get(i).sock.take();
        match self.uring.as_mut() {
            Some(r) => r.close(i, sock),
            None => drop(sock),
        }
        if let Some(w) = self.tls.as_mut() {
            w.slots[i].conn = None;
        }
        // Open loop: a full slab frees now, so the starts still waiting waited for a slot until
        // this moment (the loop may have slept while every slot was busy).
        if self.schedule.is_some() && self.slab.is_full() {
            self.last_full_ns = crate::clock::now_ns();
        }
        self.slab.release(i);
    }
}

/// Applies `f` to the whole-run, the current-second and (when measured) the measured counters.
#[inline]
fn bump(
    total: &mut crate::stats::Counters,
    measured_c: &mut crate::stats::Counters,
    second: &mut crate::stats::Counters,
    measured: bool,
    f: impl Fn(&mut crate::stats::Counters),
) {
    f(total);
    f(second);
    if measured {
        f(measured_c);
    }
}

fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, SockAddr};
    use std::net::SocketAddr;

    #[test]
    fn only_a_connect_without_error_and_without_peer_is_a_timeout() {
        assert_eq!(verdict(0, Ok(())), Verdict::Connected);
        assert_eq!(verdict(0, Err(libc::ENOTCONN)), Verdict::Pending);
        assert_eq!(
            verdict(libc::ECONNREFUSED, Err(libc::ENOTCONN)),
            Verdict::Failed(libc::ECONNREFUSED)
        );
        assert_eq!(
            verdict(libc::ECONNRESET, Ok(())),
            Verdict::ResetAfterHandshake(libc::ECONNRESET)
        );
        assert_eq!(
            verdict(libc::EPIPE, Err(libc::ENOTCONN)),
            Verdict::ResetAfterHandshake(libc::EPIPE)
        );
        assert_eq!(verdict(0, Err(libc::EBADF)), Verdict::Failed(libc::EBADF));
    }

    fn connecting(to: &SocketAddr) -> Socket {
        let s = Socket::new(Domain::IPV4, Type::STREAM.nonblocking(), None).unwrap();
        match s.connect(&SockAddr::from(*to)) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => panic!("connect: {e}"),
        }
        s
    }

    /// Real sockets, never looked at through epoll: a completed handshake, a refused one, and
    /// connects whose SYN the kernel dropped (full accept queue) are told apart by [`probe`].
    #[test]
    fn probe_tells_completed_refused_and_syn_sent_apart() {
        let (verdicts, refused) = testkit::NetNs::run(|_| {
            let l = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
            l.bind(&SockAddr::from(SocketAddr::from(([127, 0, 0, 1], 0))))
                .unwrap();
            // Backlog 0, never accepting: the first connection fills the accept queue and the
            // kernel drops later SYNs (retransmitted only after 1 s), so those stay in SYN-SENT.
            l.listen(0).unwrap();
            let addr = l.local_addr().unwrap().as_socket().unwrap();
            let socks: Vec<Socket> = (0..4).map(|_| connecting(&addr)).collect();
            let closed = {
                let c = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                c.local_addr().unwrap()
            };
            let r = connecting(&closed);
            std::thread::sleep(std::time::Duration::from_millis(100));
            let v: Vec<Verdict> = socks.iter().map(probe).collect();
            (v, probe(&r))
        });
        let connected = verdicts
            .iter()
            .filter(|&&v| v == Verdict::Connected)
            .count();
        let pending = verdicts.iter().filter(|&&v| v == Verdict::Pending).count();
        assert!(connected >= 1, "{verdicts:?}");
        assert!(pending >= 1, "{verdicts:?}");
        assert_eq!(connected + pending, verdicts.len(), "{verdicts:?}");
        assert_eq!(refused, Verdict::Failed(libc::ECONNREFUSED));
    }
}
