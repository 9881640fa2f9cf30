//! The core of a load worker, without syscalls ([`Core`]): its share of the open-loop schedule
//! ([`schedule`]) and its pacing ([`pace`]: what is due, what is dropped), its attempt slots
//! ([`slot`]), its tallies ([`tally`]: the one place where an attempt's outcome is counted, so
//! `attempts = successes + failures + abandoned`), and the rules that decide each attempt's
//! outcome from what its engine saw ([`verdict`], the HTTP/TLS events). It drives its engine
//! through [`Io`] ([`io`]).
//!
//! # Data flow
//! The worker's loop (`crate::worker`) asks the core what is due ([`Core::start_due`],
//! [`Core::next_wake`]); the core does the accounting of each start and hands the attempt to the
//! engine ([`Io::start`]). The engine makes the syscalls and reports what it saw: a handshake
//! ([`Core::connected`]), an errno ([`Core::fail`]), bytes read ([`Core::took`]), an HTTP step
//! ([`Core::http_step`]), a TLS event ([`Core::tls_event`]), a verdict at a deadline or a stop
//! ([`Core::settle`]). The core counts it, decides whether the attempt reads on (then the
//! engine begins its read phase, [`Io::read_begin`]) or is over (then the engine closes the
//! socket, [`Io::close`], and the slot is free again). Once a second the worker takes the
//! second's counts ([`Core::second`]).
//!
//! Every method takes the time it acts at as an argument: the core reads the clock only to
//! note when every slot was busy.

mod io;
mod pace;
mod schedule;
mod slot;
mod tally;
mod verdict;

pub(crate) use io::Io;
pub use pace::MAX_GENERATOR_LAG_NS;
pub(crate) use pace::{row_origin_ns, Window};
pub(crate) use slot::Phase;
pub(crate) use tally::{Counters, Second, Tally, TargetCounters};
pub(crate) use verdict::{verdict, Verdict};

use crate::clock::now_ns;
use crate::config::{CloseMode, LoadConfig, Pattern};
use crate::error::LoadError;
use crate::failures::{ProtoFailure, TlsOther};
use crate::http::{Exchanges, Step};
use crate::tls::{failure_of, Sessions, TlsEvent};
use pace::Pace;
use slot::{Slab, Slot};
use tally::Outcome;

/// Not an errno the kernel returns for these sockets: the server closed before `expect_bytes`
/// arrived (counted as `ENODATA`).
const SHORT_GREETING: i32 = libc::ENODATA;

const SEC: u64 = 1_000_000_000;

/// One worker's core: its schedule, slots, tallies and per-slot protocol state.
#[derive(Debug)]
pub(crate) struct Core<'a> {
    cfg: &'a LoadConfig,
    index: usize,
    win: Window,
    slab: Slab,
    /// The open-loop schedule and what is dropped of it.
    pace: Pace,
    /// Round-robin position over the targets (and the sources).
    rr: usize,
    needs_read: bool,
    timeout_ns: u64,
    late_ns: u64,
    tally: Tally,
    /// The HTTP side (`--http`): per-slot exchanges, counters, histograms.
    http: Option<Exchanges>,
    /// The TLS side (`--tls`): this worker's client config (its resumption cache), per-slot
    /// clients, counters, the handshake histogram.
    tls: Option<Sessions>,
}

impl<'a> Core<'a> {
    /// Worker `index`'s core for `cfg`; its window is set by [`Core::begin`].
    ///
    /// # Errors
    /// [`LoadError::Config`] when the TLS client configuration cannot be made.
    pub(crate) fn new(cfg: &'a LoadConfig, index: usize) -> Result<Core<'a>, LoadError> {
        let timeout_ns = cfg.timeout_ns();
        // Handshake latency counts from the intended start: up to the drop limit (one timeout) of
        // waiting plus one timeout of handshake; first byte adds the read phase.
        let high_ns = timeout_ns.saturating_mul(3).saturating_add(SEC);
        let slots = cfg.slots_for(index);
        Ok(Core {
            cfg,
            index,
            win: Window {
                start_ns: 0,
                measure_ns: 0,
                end_ns: 0,
            },
            slab: Slab::new(slots),
            pace: Pace::new(timeout_ns),
            rr: index,
            needs_read: cfg.reads_after_handshake(),
            timeout_ns,
            late_ns: cfg.late_threshold.as_nanos().min(u128::from(u64::MAX)) as u64,
            tally: Tally::new(cfg.targets.len(), high_ns),
            http: cfg
                .http
                .as_ref()
                .map(|r| Exchanges::new(r, &cfg.targets, slots, high_ns)),
            tls: cfg
                .tls
                .as_ref()
                .map(|o| Sessions::new(o, slots, high_ns))
                .transpose()
                .map_err(LoadError::Config)?,
        })
    }

    /// Sets the run's window (common to all workers) and this worker's share of the schedule.
    pub(crate) fn begin(&mut self, win: Window) {
        self.win = win;
        self.pace.begin(self.cfg, self.index, win);
    }

    /// The run's config.
    pub(crate) fn cfg(&self) -> &'a LoadConfig {
        self.cfg
    }

    /// The connect timeout, ns (also the read phase's).
    pub(crate) fn timeout_ns(&self) -> u64 {
        self.timeout_ns
    }

    /// The round-robin position (the source of the attempt just started is chosen by it).
    pub(crate) fn rr(&self) -> usize {
        self.rr
    }

    /// Slot `i`.
    pub(crate) fn slot(&self, i: usize) -> &Slot {
        self.slab.at(i)
    }

    /// Number of slots.
    pub(crate) fn slots(&self) -> usize {
        self.slab.capacity()
    }

    /// Slots in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.slab.in_flight()
    }

    /// The in-flight slot with the earliest deadline.
    pub(crate) fn oldest(&self) -> Option<usize> {
        self.slab.oldest()
    }

    /// The HTTP side (`--http`).
    pub(crate) fn http(&mut self) -> Option<&mut Exchanges> {
        self.http.as_mut()
    }

    /// The TLS side (`--tls`).
    pub(crate) fn tls(&mut self) -> Option<&mut Sessions> {
        self.tls.as_mut()
    }

    /// Whether the run sends HTTP requests (`--http`).
    pub(crate) fn has_http(&self) -> bool {
        self.http.is_some()
    }

    /// Whether the run makes TLS handshakes (`--tls`).
    pub(crate) fn has_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Whether an exchange follows the handshake (`--tls`, `--http`).
    pub(crate) fn exchanges(&self) -> bool {
        self.http.is_some() || self.tls.is_some()
    }

    /// Whether attempts read after the handshake (`--expect-bytes`, `--close server`, `--http`,
    /// `--tls`).
    pub(crate) fn needs_read(&self) -> bool {
        self.needs_read
    }

    // ---- starts -------------------------------------------------------------------------

    /// Starts the attempts that are due at `now` through `io`, at most `cfg.pacing.start_batch`
    /// of them in open loop ([`crate::config::START_BUDGET`] by default and always in closed
    /// loop; the loop then goes back to its events, timeouts and per-second flush before
    /// starting more); returns a fresh `now`. Open loop: which start is due and which are
    /// dropped is the pacing's ([`Pace::next`]).
    pub(crate) fn start_due(&mut self, mut now: u64, io: &mut impl Io) -> u64 {
        match self.cfg.pattern {
            Pattern::Open { .. } => {
                let mut budget = self.cfg.pacing.start_batch;
                while let Some(t) =
                    self.pace
                        .next(now, self.slab.is_full(), budget > 0, &mut self.tally)
                {
                    budget -= 1;
                    self.start(t, now, io);
                    now = now_ns();
                }
            }
            Pattern::Closed { .. } => {
                if now >= self.win.start_ns {
                    // Bounded: attempts that fail at once (e.g. ECONNREFUSED from connect(2))
                    // free their slot again, and the loop must get back to its clock and stop flag.
                    for _ in 0..self.slab.capacity().min(crate::config::START_BUDGET) {
                        if self.slab.is_full() {
                            break;
                        }
                        self.start(now, now, io);
                        now = now_ns();
                    }
                }
            }
        }
        now
    }

    /// Starts one attempt intended at `intended` (a slot is free).
    fn start(&mut self, intended: u64, now: u64, io: &mut impl Io) {
        // Callers check for a free slot; allocating first keeps attempts = successes + failures.
        let Some(i) = self.slab.alloc() else { return };
        let measured = intended >= self.win.measure_ns;
        let open = matches!(self.cfg.pattern, Pattern::Open { .. });
        let late = open && now.saturating_sub(intended) > self.late_ns;
        if open && measured {
            self.tally.lag(now.saturating_sub(intended));
        }
        let target = self.rr % self.cfg.targets.len();
        self.rr = self.rr.wrapping_add(1);
        self.tally.started(measured, target, late);
        let s = self.slab.get(i);
        s.intended_ns = intended;
        s.start_ns = now;
        s.deadline_ns = now + self.timeout_ns;
        s.read = 0;
        s.phase = Phase::Connecting;
        s.measured = measured;
        s.target = target as u32;
        s.decided = false;
        io.start(self, i, target);
    }

    /// How late the generator may reach a due start that has a free slot ([`Pace`]).
    pub(crate) fn max_lag_ns(&self) -> u64 {
        self.pace.max_lag_ns()
    }

    /// Counts every intended start the schedule still holds as dropped ([`Pace::drop_rest`]).
    pub(crate) fn drop_rest(&mut self) {
        self.pace
            .drop_rest(now_ns(), self.slab.is_full(), &mut self.tally);
    }

    /// Every in-flight slot is busy now, or was at some moment at or after `t_ns`.
    pub(crate) fn slots_busy_since(&self, t_ns: u64) -> bool {
        self.pace.busy_since(t_ns, self.slab.is_full())
    }

    /// Drops every intended start before `cutoff_ns` ([`Pace::drop_before`]).
    pub(crate) fn drop_before(&mut self, cutoff_ns: u64, full: bool) {
        self.pace.drop_before(cutoff_ns, full, &mut self.tally);
    }

    /// Whether the open-loop schedule still holds intended starts (all before the end).
    pub(crate) fn starts_pending(&self) -> bool {
        self.pace.pending()
    }

    /// The earliest of: the next second tick, the end of the window, the next intended start
    /// (when a slot is free), the start of a closed loop. (Deadlines of attempts in flight are
    /// the engine's to watch.)
    pub(crate) fn next_wake(&self, next_tick: u64, draining: bool) -> u64 {
        let full = self.slab.is_full();
        let mut target = self.pace.next_wake(next_tick, draining, full);
        if !draining && !full && !self.pace.is_open() {
            // Closed loop: a free slot means start now (or at the start of the run).
            target = target.min(self.win.start_ns);
        }
        target
    }

    // ---- outcomes -----------------------------------------------------------------------

    /// Counts slot `i`'s attempt's outcome: the only way an attempt ends (once).
    fn end(&mut self, i: usize, outcome: Outcome) {
        let s = self.slab.get(i);
        debug_assert!(!s.decided, "slot {i}: its attempt ended twice");
        s.decided = true;
        let (measured, target) = (s.measured, s.target as usize);
        self.tally.ended(measured, target, outcome);
    }

    /// The handshake of slot `i` was seen complete at `t`. Seen after the attempt's connect
    /// timeout (counted from its socket(2) call; e.g. the generator was stopped or starved), it
    /// is `ETIMEDOUT`, never a success: a client with that timeout would have given up. With a
    /// read phase the engine begins it ([`Io::read_begin`]); otherwise the slot is closed.
    pub(crate) fn connected(&mut self, i: usize, t: u64, readable: bool, io: &mut impl Io) {
        let (intended, start, measured) = {
            let s = self.slab.at(i);
            (s.intended_ns, s.start_ns, s.measured)
        };
        if t.saturating_sub(start) > self.timeout_ns {
            self.tally.completed_late(measured);
            return self.fail(i, libc::ETIMEDOUT, io);
        }
        self.tally.handshake(
            measured,
            t.saturating_sub(intended),
            t.saturating_sub(start),
        );
        // With an exchange after the handshake (`--http`, `--tls`) the attempt succeeds only
        // once the exchange does (see `exchange_done`).
        if !self.exchanges() {
            self.end(i, Outcome::Success);
        }
        if !self.needs_read {
            return self.finish(i, io);
        }
        {
            let s = self.slab.get(i);
            s.phase = Phase::Reading;
            s.deadline_ns = t + self.timeout_ns;
        }
        self.slab.requeue(i);
        io.read_begin(self, i, t, readable);
    }

    /// The handshake of slot `i` failed with `errno`.
    pub(crate) fn fail(&mut self, i: usize, errno: i32, io: &mut impl Io) {
        self.end(i, Outcome::Failure(errno));
        self.finish(i, io);
    }

    /// Counts slot `i` abandoned (interrupted while undecided); the caller closes it.
    pub(crate) fn abandon(&mut self, i: usize) {
        self.end(i, Outcome::Abandoned);
    }

    /// Slot `i`'s handshake completed and the peer then reset it (`code`: `ECONNRESET` or
    /// `EPIPE`), seen at `t`: a success (unless seen past the connect timeout, see
    /// [`Self::connected`]) whose connection failed after the handshake, counted by `code` among
    /// the post-handshake failures. E.g. a server with SO_LINGER 0 (`server --mode rst`) that
    /// accepted and reset it before this worker looked. A server whose full accept queue resets
    /// it (tcp_abort_on_overflow=1) never accepted it: the kernel's PassiveOpens tell those
    /// apart where they can be read ([`crate::LoadReport::reclassify_never_accepted`]).
    pub(crate) fn reset_after_handshake(&mut self, i: usize, t: u64, code: i32, io: &mut impl Io) {
        let (measured, before) = (self.slab.at(i).measured, self.tally.total.successes);
        self.connected(i, t, false, io);
        if self.slab.at(i).phase != Phase::Free {
            // An exchange began on a connection already reset: it fails with that code (the
            // epoll engine's first write fails at once, the io_uring engine's SEND later).
            if self.tls_pending(i) {
                self.exchange_failed(i, ProtoFailure::TlsErrno(code), io);
            } else if self.exchange_pending(i) {
                self.exchange_failed(i, ProtoFailure::HttpErrno(code), io);
            } else {
                self.finish(i, io);
            }
        }
        if measured && self.tally.total.successes > before {
            self.tally.post_connect(true, code);
        }
    }

    /// Ends slot `i`'s connect by where its socket stands (`v`), seen at `t`: completed =
    /// [`Self::connected`] (`readable` passed on), reset after the handshake, failed with its
    /// errno, or still in SYN-SENT: `ETIMEDOUT` — or, when the run was `interrupted`, abandoned
    /// (the run, not the target, ended it).
    pub(crate) fn settle(
        &mut self,
        i: usize,
        t: u64,
        v: Verdict,
        interrupted: bool,
        readable: bool,
        io: &mut impl Io,
    ) {
        match v {
            Verdict::Connected => self.connected(i, t, readable, io),
            Verdict::ResetAfterHandshake(code) => self.reset_after_handshake(i, t, code, io),
            Verdict::Failed(code) => self.fail(i, code, io),
            Verdict::Pending if interrupted => {
                self.abandon(i);
                self.finish(i, io);
            }
            Verdict::Pending => self.fail(i, libc::ETIMEDOUT, io),
        }
    }

    /// Closes slot `i`, which a stop cut in its read phase: abandoned unless its outcome is
    /// counted already (an exchange not finished is neither a success nor a failure).
    pub(crate) fn stopped(&mut self, i: usize, io: &mut impl Io) {
        if self.exchange_pending(i) {
            self.abandon(i);
        }
        self.finish(i, io);
    }

    /// Slot `i` failed after its handshake (its attempt a success already).
    pub(crate) fn post_fail(&mut self, i: usize, errno: i32, io: &mut impl Io) {
        self.tally.post_connect(self.slab.at(i).measured, errno);
        self.finish(i, io);
    }

    /// Slot `i`'s read phase passed its deadline: `ETIMEDOUT` in the class of what was under
    /// way (the TLS handshake, the HTTP exchange, or the read after a success).
    pub(crate) fn read_timed_out(&mut self, i: usize, io: &mut impl Io) {
        if self.tls_pending(i) {
            self.exchange_failed(i, ProtoFailure::TlsErrno(libc::ETIMEDOUT), io);
        } else if self.exchange_pending(i) {
            self.exchange_failed(i, ProtoFailure::HttpErrno(libc::ETIMEDOUT), io);
        } else {
            self.post_fail(i, libc::ETIMEDOUT, io);
        }
    }

    /// Closes slot `i`'s socket through the engine and frees the slot.
    pub(crate) fn finish(&mut self, i: usize, io: &mut impl Io) {
        debug_assert!(self.slab.at(i).decided, "slot {i} closed undecided");
        io.close(i);
        if let Some(w) = self.tls.as_mut() {
            w.end(i);
        }
        // Open loop: a full slab frees now, so the starts still waiting waited for a slot until
        // this moment (the loop may have slept while every slot was busy).
        if self.slab.is_full() && self.pace.is_open() {
            self.pace.freed(now_ns());
        }
        self.slab.release(i);
    }

    /// `n` bytes read on slot `i` at `t` (0 = the server's FIN), in the read phase of
    /// `--expect-bytes` / `--close server` (both engines): records the first-byte latency when
    /// `expect_bytes` are in, and ends the attempt when it is done (`expect_bytes` read without
    /// `--close server`, or the FIN), when the FIN came before `expect_bytes` (a post-handshake
    /// `ENODATA`), or when bytes come after the read phase's deadline (`ETIMEDOUT`). True while
    /// the slot reads on.
    pub(crate) fn took(&mut self, i: usize, t: u64, n: usize, io: &mut impl Io) -> bool {
        if t > self.slab.at(i).deadline_ns {
            self.post_fail(i, libc::ETIMEDOUT, io);
            return false;
        }
        if n == 0 {
            let short = self
                .cfg
                .expect_bytes
                .is_some_and(|n| self.slab.at(i).read < n);
            if short {
                self.post_fail(i, SHORT_GREETING, io);
            } else {
                self.finish(i, io);
            }
            return false;
        }
        let s = self.slab.get(i);
        let before = s.read;
        s.read = s.read.saturating_add(n as u32);
        let (after, intended, measured) = (s.read, s.intended_ns, s.measured);
        if let Some(want) = self.cfg.expect_bytes {
            if before < want && after >= want {
                self.tally.first_byte(measured, t.saturating_sub(intended));
                if self.cfg.close != CloseMode::Server {
                    self.finish(i, io);
                    return false;
                }
            }
        }
        true
    }

    // ---- the exchange after the handshake -----------------------------------------------

    /// Slot `i`'s exchange after the handshake completed: the attempt is a success.
    fn exchange_done(&mut self, i: usize) {
        self.end(i, Outcome::Success);
    }

    /// Slot `i`'s exchange after the handshake failed (`f`: its class): the attempt is a
    /// failure; the slot is closed.
    pub(crate) fn exchange_failed(&mut self, i: usize, f: ProtoFailure, io: &mut impl Io) {
        self.end(i, Outcome::Proto(f));
        self.finish(i, io);
    }

    /// True when slot `i` is in an exchange (`--http`, `--tls`) that has not succeeded yet.
    pub(crate) fn exchange_pending(&self, i: usize) -> bool {
        // The TLS handshake first: a reused slot's HTTP state is reset only once it is done.
        self.tls_pending(i) || self.http.as_ref().is_some_and(|h| !h.answered(i))
    }

    /// True when slot `i`'s TLS handshake is under way (`--tls`, not done yet).
    fn tls_pending(&self, i: usize) -> bool {
        self.tls.as_ref().is_some_and(|w| !w.done(i))
    }

    /// Resets slot `i`'s HTTP exchange for its target (`--http`).
    pub(crate) fn http_begin(&mut self, i: usize) {
        let target = self.slab.at(i).target as usize;
        if let Some(h) = self.http.as_mut() {
            h.reset_slot(i, target);
        }
    }

    /// Acts on an HTTP step of slot `i`; true while the slot stays open. A complete response
    /// makes the attempt a success (once); a failure before it makes the attempt a failure of
    /// its own class (`HTTP ERRNO`, `HTTP parse error: KIND`), never also a success; a socket
    /// failure after it (waiting for the server's FIN) is a post-handshake failure.
    pub(crate) fn http_step(&mut self, i: usize, step: Step, io: &mut impl Io) -> bool {
        let complete = self.http.as_mut().is_some_and(|h| h.take_complete(i));
        if complete {
            self.exchange_done(i);
        }
        let answered = self.http.as_ref().is_some_and(|h| h.answered(i));
        match step {
            Step::Wait => true,
            Step::Finish => {
                self.finish(i, io);
                false
            }
            Step::Failed(errno) if answered => {
                self.post_fail(i, errno, io);
                false
            }
            Step::Failed(errno) => {
                self.exchange_failed(i, ProtoFailure::HttpErrno(errno), io);
                false
            }
            Step::Parse(kind) => {
                self.exchange_failed(i, ProtoFailure::HttpParse(kind), io);
                false
            }
        }
    }

    /// Feeds `data` read on slot `i` at `t` (empty: the server's FIN) to its HTTP exchange;
    /// `None` while more is wanted (the response is then counted complete as soon as it is),
    /// else the step that ends the exchange (for [`Self::http_step`]).
    pub(crate) fn http_consume(&mut self, i: usize, data: &[u8], t: u64) -> Option<Step> {
        let (intended, measured) = {
            let s = self.slab.at(i);
            (s.intended_ns, s.measured)
        };
        let wait_fin = self.cfg.close == CloseMode::Server;
        let h = self.http.as_mut()?;
        let step = h.consume(i, data, t, intended, measured, wait_fin);
        if step.is_none() && h.take_complete(i) {
            // Complete, waiting for the FIN (`--close server`): a success now, whatever the
            // FIN does.
            self.exchange_done(i);
        }
        step
    }

    /// Slot `i`'s TCP handshake was seen complete at `t`: starts its TLS connection (the
    /// ClientHello is queued). False when it could not (the attempt failed, the slot closed).
    pub(crate) fn tls_begin(&mut self, i: usize, t: u64, io: &mut impl Io) -> bool {
        let Some(w) = self.tls.as_mut() else {
            return false;
        };
        match w.begin(i, t) {
            Ok(()) => true,
            Err(e) => {
                self.exchange_failed(i, failure_of(&e), io);
                false
            }
        }
    }

    /// Acts on slot `i`'s TLS event `ev` seen at `t`: counts the handshake, sends the request
    /// through it (`--http`) or close_notify, hands plaintext to the HTTP exchange, ends the
    /// attempt on a failure in its class. True while the engine should drive the connection
    /// again (send what is queued, receive more).
    pub(crate) fn tls_event(&mut self, i: usize, t: u64, ev: TlsEvent, io: &mut impl Io) -> bool {
        let done = self.tls.as_ref().is_some_and(|w| w.done(i));
        let http = self.http.is_some();
        match ev {
            TlsEvent::Wait if done && http => {
                self.tls_plaintext(i, t, false, io);
                false
            }
            TlsEvent::Wait => false,
            TlsEvent::Plaintext if http => {
                self.tls_plaintext(i, t, false, io);
                self.slab.at(i).phase != Phase::Free
            }
            // Application data without --http (a server that talks first): ignored.
            TlsEvent::Plaintext => {
                if let Some(w) = self.tls.as_mut() {
                    w.client(i).discard_plaintext();
                }
                true
            }
            TlsEvent::Handshaken => {
                let measured = self.slab.at(i).measured;
                if let Some(w) = self.tls.as_mut() {
                    w.handshake_done(i, t, measured);
                }
                self.tls_after_handshake(i, io)
            }
            TlsEvent::Closed if http => {
                self.tls_plaintext(i, t, true, io);
                false
            }
            // The handshake was the exchange (a success already); the server closed.
            TlsEvent::Closed => {
                self.finish(i, io);
                false
            }
            TlsEvent::Errno(e) if !done => {
                self.exchange_failed(i, ProtoFailure::TlsErrno(e), io);
                false
            }
            TlsEvent::Errno(e) => {
                self.after_tls_failed(i, ProtoFailure::HttpErrno(e), e, io);
                false
            }
            TlsEvent::Eof => {
                self.exchange_failed(i, ProtoFailure::TlsOther(TlsOther::Eof), io);
                false
            }
            TlsEvent::Tls(e) if !done => {
                self.exchange_failed(i, failure_of(&e), io);
                false
            }
            TlsEvent::Tls(e) => {
                self.after_tls_failed(i, failure_of(&e), libc::EPROTO, io);
                false
            }
        }
    }

    /// The TLS handshake of slot `i` is done: with `--http` queue the request through it;
    /// without, the attempt has succeeded: queue close_notify and wait for the server's close
    /// (TLS 1.3 tickets come after the handshake). The engine sends both with what rustls
    /// queued after the handshake, in one write. False when the slot was ended.
    fn tls_after_handshake(&mut self, i: usize, io: &mut impl Io) -> bool {
        let (target, measured) = {
            let s = self.slab.at(i);
            (s.target as usize, s.measured)
        };
        let Some(w) = self.tls.as_mut() else {
            return false;
        };
        let c = w.client(i);
        let queued = match self.http.as_mut() {
            Some(h) => {
                h.reset_slot(i, target);
                let req = h.take_request(i, target, measured);
                c.write_plain(req)
            }
            None => {
                c.close_notify();
                Ok(())
            }
        };
        if self.http.is_none() {
            self.exchange_done(i);
        }
        match queued {
            Ok(()) => true,
            Err(e) => {
                self.after_tls_failed(i, ProtoFailure::HttpErrno(e), e, io);
                false
            }
        }
    }

    /// A failure after the TLS handshake of slot `i`: with `--http` before the response is
    /// complete it fails the attempt (`f`: its class); otherwise the attempt already
    /// succeeded and it is a post-handshake failure (`errno`).
    fn after_tls_failed(&mut self, i: usize, f: ProtoFailure, errno: i32, io: &mut impl Io) {
        if self.exchange_pending(i) {
            self.exchange_failed(i, f, io);
        } else {
            self.post_fail(i, errno, io);
        }
    }

    /// Hands the plaintext rustls holds for slot `i` to the HTTP exchange (`eof`: the server
    /// closed, so the stream ends after it).
    fn tls_plaintext(&mut self, i: usize, t: u64, eof: bool, io: &mut impl Io) {
        let (intended, measured) = {
            let s = self.slab.at(i);
            (s.intended_ns, s.measured)
        };
        let wait_fin = self.cfg.close == CloseMode::Server;
        loop {
            let (Some(w), Some(h)) = (self.tls.as_mut(), self.http.as_mut()) else {
                return;
            };
            let (got, plain) = w.read_plain(i);
            let step = match got {
                Ok(Some(n)) => h.consume(i, &plain[..n], t, intended, measured, wait_fin),
                Ok(None) if eof => h.consume(i, &[], t, intended, measured, wait_fin),
                Ok(None) => Some(Step::Wait),
                Err(e) => Some(Step::Failed(e)),
            };
            if let Some(step) = step {
                self.http_step(i, step, io);
                return;
            }
        }
    }

    // ---- per second, and the end --------------------------------------------------------

    /// The second ending at `tick_end`, whose counts reach up to `until_ns` (`tick_end`, or
    /// the stop time when a signal ended the run within the second); the next one starts empty.
    pub(crate) fn second(&mut self, tick_end: u64, until_ns: u64) -> Second {
        let t_secs = (tick_end - SEC).saturating_sub(self.win.origin_ns()) / SEC;
        let (counters, handshake) = self.tally.take_second();
        Second {
            worker: self.index,
            t_secs,
            counters,
            handshake,
            until_ns,
        }
    }

    /// Whole-run counts so far.
    pub(crate) fn total(&self) -> &Counters {
        &self.tally.total
    }

    /// What the worker hands back: its tallies and its HTTP and TLS sides.
    pub(crate) fn into_parts(self) -> (Tally, Option<Exchanges>, Option<Sessions>) {
        (self.tally, self.http, self.tls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::Latency;

    /// An engine that makes no syscall: it records what the core asks of it.
    #[derive(Default)]
    struct Fake {
        started: Vec<usize>,
        closed: Vec<usize>,
        /// Each start's (intended, actual) time, ns.
        times: Vec<(u64, u64)>,
    }

    impl Io for Fake {
        fn start(&mut self, core: &mut Core<'_>, i: usize, _: usize) {
            self.started.push(i);
            let s = core.slot(i);
            self.times.push((s.intended_ns, s.start_ns));
        }
        fn read_begin(&mut self, _: &mut Core<'_>, _: usize, _: u64, _: bool) {}
        fn close(&mut self, i: usize) {
            self.closed.push(i);
        }
    }

    /// The open-loop scheduler on the real clock, polled the way the worker's loop polls it
    /// (after each wait; here without sleeping, and also at times just before a start is due,
    /// as an early wake-up does): no start is made before its intended time, each intended
    /// start is made or dropped exactly once (offered = the schedule's count, exactly), and the
    /// lag histogram holds one value per measured start, each its actual − intended start.
    /// Not a timing target: how late the starts are depends on the host.
    #[test]
    fn open_loop_starts_are_never_early_counted_exactly_and_their_lag_recorded() {
        let cfg = LoadConfig {
            max_in_flight: 4,
            ..crate::config::for_test(
                "127.0.0.1:9".parse().unwrap(),
                Pattern::Open {
                    rate_per_sec: 50_000.0,
                    arrival: crate::config::Arrival::Uniform,
                },
                CloseMode::Rst,
            )
        };
        let mut core = Core::new(&cfg, 0).unwrap();
        // 10 ms of warm-up and 30 ms measured at 50,000/s: 500 + 1,500 intended starts.
        let start_ns = now_ns() + 2_000_000;
        let win = Window {
            start_ns,
            measure_ns: start_ns + 10_000_000,
            end_ns: start_ns + 40_000_000,
        };
        core.begin(win);
        let mut io = Fake::default();
        let mut polls = 0u64;
        loop {
            let now = now_ns();
            if now >= win.end_ns + core.max_lag_ns()
                || (now >= win.end_ns && !core.starts_pending())
            {
                break;
            }
            // Just before the next start is due: nothing may start.
            let next = core.next_wake(u64::MAX, false);
            if now < next && next < win.end_ns && next - now < 5_000 {
                let before = io.times.len();
                core.start_due(next - 1, &mut io);
                assert_eq!(io.times.len(), before, "a start 1 ns before its time");
            }
            core.start_due(now, &mut io);
            polls += 1;
            // Every attempt fails at once, so a slot is always free.
            while let Some(i) = core.oldest() {
                core.fail(i, libc::ECONNREFUSED, &mut io);
            }
        }
        core.drop_rest();
        assert!(polls > 0);
        for &(intended, actual) in &io.times {
            assert!(actual >= intended, "started {actual} before {intended}");
            assert!(intended >= win.start_ns && intended < win.end_ns);
        }
        let (total, measured) = (&core.tally.total, &core.tally.measured);
        assert_eq!(total.offered, 2_000, "{total:?}");
        assert_eq!(measured.offered, 1_500, "{measured:?}");
        assert_eq!(total.attempts + total.dropped, total.offered);
        assert_eq!(total.attempts, io.times.len() as u64);
        // Intended starts are distinct and each made at most once.
        let mut intended: Vec<u64> = io.times.iter().map(|t| t.0).collect();
        intended.dedup();
        assert_eq!(intended.len(), io.times.len());
        // One lag value per measured start, each exactly its start's actual − intended time.
        let lag = &core.tally.lag;
        assert_eq!(lag.hist.len(), measured.attempts);
        let mut want = Latency::new(lag.hist.high());
        for &(intended, actual) in io.times.iter().filter(|t| t.0 >= win.measure_ns) {
            want.record(actual - intended);
        }
        assert_eq!(lag.hist, want.hist);
        assert_eq!(lag.max_ns, want.max_ns);
    }

    /// The core without sockets: four attempts end four ways (a handshake, a refusal, a reset
    /// after the handshake, a stop while still connecting), each exactly once, each socket
    /// closed once, and `attempts = successes + failures + abandoned`.
    #[test]
    fn every_attempt_ends_once_whatever_its_engine_saw() {
        let cfg = LoadConfig {
            max_in_flight: 4,
            ..crate::config::for_test(
                "127.0.0.1:9".parse().unwrap(),
                Pattern::Closed { concurrency: 4 },
                CloseMode::Fin,
            )
        };
        let mut core = Core::new(&cfg, 0).unwrap();
        core.begin(Window {
            start_ns: 0,
            measure_ns: 0,
            end_ns: SEC,
        });
        let mut io = Fake::default();
        core.start_due(0, &mut io);
        let &[a, b, c, d] = io.started.as_slice() else {
            panic!("{:?}", io.started)
        };
        core.connected(a, 1_000, false, &mut io);
        core.fail(b, libc::ECONNREFUSED, &mut io);
        core.reset_after_handshake(c, 2_000, libc::ECONNRESET, &mut io);
        core.settle(d, 3_000, Verdict::Pending, true, false, &mut io);
        assert_eq!(core.in_flight(), 0);
        let t = core.total();
        assert_eq!(
            (t.attempts, t.successes, t.failures.total(), t.abandoned),
            (4, 2, 1, 1)
        );
        let mut closed = io.closed.clone();
        closed.sort_unstable();
        assert_eq!(closed, [0, 1, 2, 3]);
        assert_eq!(core.tally.post_connect.total(), 1);
    }
}
