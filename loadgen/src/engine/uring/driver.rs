//! The io_uring engine ([`Uring`]): drives one [`Ring`] for a worker's core. It starts each
//! attempt as one chain of SQEs, turns each completion into what the core must hear (a
//! handshake, an errno, bytes for the read phase or the HTTP exchange), asks a cancelled
//! connect's socket where it stands, keeps each slot's socket (a direct descriptor, kept across
//! attempts with `--close rst`, or a plain one), and at the stop cancels everything and settles
//! what answers. The chains themselves, and the memory they point to, are the ring's
//! ([`super`] docs).
//!
//! # One attempt
//! With direct descriptors (the slot index `i` is the registered file table slot `i`) one chain
//! of SQEs, pushed at the start and submitted by the worker's next io_uring_enter(2):
//!
//! ```text
//! SOCKET(file_index=i)            IO_LINK | CQE_SKIP_SUCCESS     (5.19)
//! URING_CMD SETSOCKOPT SO_LINGER  IO_LINK | CQE_SKIP_SUCCESS     (6.7; --close rst only)
//! CONNECT(fixed i, target)        IO_LINK                        (5.5)
//! LINK_TIMEOUT(connect timeout)   CQE_SKIP_SUCCESS               (5.5)
//! ```
//!
//! then, when the attempt has ended, `CLOSE(fixed i)` with IOSQE_CQE_SKIP_SUCCESS (5.17; closing a
//! direct descriptor 5.15), or with `--close rst` the disconnect that keeps the socket ("Reuse").
//! A failure of the socket or setsockopt step posts its CQE (a skipped CQE is only skipped on
//! success) and cancels the rest of the chain without CQEs (a failed skip-success request sets
//! REQ_F_SKIP_LINK_CQES, `req_set_fail`, io_uring/io_uring.h). Without direct descriptors the
//! socket is made with socket(2) and its options with setsockopt(2)/bind(2) (`Net`, as the epoll
//! engine does), then the same CONNECT + LINK_TIMEOUT on the plain descriptor and a CLOSE.
//!
//! With `--expect-bytes` or `--close server` the CONNECT's completion pushes `RECV(slot buffer)`
//! (IO_LINK) → `LINK_TIMEOUT(left of the read deadline)`, and each RECV's count goes to the core's
//! read rules (`Core::took`) until they end the attempt.
//! With `--http`, the CONNECT's completion pushes `SEND(request, MSG_WAITALL)` (IO_LINK |
//! CQE_SKIP_SUCCESS: only a failed or short SEND posts a CQE; the request counts as written at
//! its RECV's first CQE) →
//! `LINK_TIMEOUT(left of the read deadline)` (IO_LINK | CQE_SKIP_SUCCESS) → `RECV(slot buffer)`
//! (IO_LINK) → `LINK_TIMEOUT` (CQE_SKIP_SUCCESS): a link timeout covers only the request just
//! before it, and the chain goes on past it when that request completes in time. A SEND cut
//! short by its timeout reports the bytes it wrote and cancels the rest. Each RECV's bytes go to
//! the slot's HTTP exchange (`crate::http`, the same as the epoll engine's), and while it wants
//! more the next RECV + LINK_TIMEOUT follows. A request over [`LINKED_SEND_MAX`] (a body) goes as
//! two chains side by side, `SEND` → `LINK_TIMEOUT` (its success CQE says the request is
//! written) and `RECV` → `LINK_TIMEOUT`, so a server that answers before the body is in (413)
//! and stops reading is still read; a response complete first cancels the SEND
//! (IORING_OP_ASYNC_CANCEL), whose CQE ends the slot and says how many bytes went out, and the
//! slot's close cancels whichever of the two is still pending.
//!
//! With `--tls` the CONNECT's completion starts the slot's TLS client (`crate::tls`, sans-I/O,
//! the epoll engine's) and drives it with the chain of `--http`: what the client queued (the
//! ClientHello; later its second flight, or its Finished with the request or close_notify,
//! in one SEND) is copied into the slot's TLS output (`Ring::stage_tls`) and goes out as
//! `SEND(TLS output, MSG_WAITALL)` (IO_LINK | CQE_SKIP_SUCCESS) → `LINK_TIMEOUT` → `RECV(slot
//! buffer)` → `LINK_TIMEOUT`, or `RECV` → `LINK_TIMEOUT` alone when nothing is queued. Each
//! RECV's bytes go whole into the client's input and the client's events to the core
//! (`Core::tls_event`, the same accounting as on epoll) until the client waits for more, then
//! the next chain follows. Output longer than the buffer
//! ([`TLS_OUT_BUF`](super::TLS_OUT_BUF), e.g. a request with a body) goes part by part, each
//! part's SEND → `LINK_TIMEOUT` alone (its CQE always posts), the last one linked to the RECV.
//! A connection that ends on an event of its own (an alert rustls queued on a failure, the
//! server's close) sends what the client queued last as one lone `SEND(MSG_DONTWAIT)` before
//! its close, as the epoll engine's best-effort send(2) does. The read phase's deadline covers the TLS handshake and the exchange, as on epoll.
//! Unlike the epoll engine, which reads while it writes, a part is written whole before the
//! RECV is posted: a server that answers a request longer than the socket buffers hold before
//! reading it all, and stops reading, is seen only at the deadline.
//!
//! # Reuse (`--close rst`)
//! With SO_LINGER {1, 0} a close is tcp_disconnect() followed by the socket's destruction
//! (`__tcp_close`, net/ipv4/tcp.c), and `connect(2)` to an `AF_UNSPEC` address is the same
//! tcp_disconnect() without the destruction ("dissolve the association", connect(2);
//! `__inet_stream_connect`, net/ipv4/af_inet.c): the same RST where the state calls for one
//! (`tcp_need_reset`), the ephemeral port released, the socket left in CLOSE and unconnected.
//! So on direct descriptors an attempt that ends with its request chain settled (no split SEND
//! of a body pending), before the stop, ends with `CONNECT(fixed i, AF_UNSPEC)`
//! (IOSQE_CQE_SKIP_SUCCESS) in place of the CLOSE, and the slot's next attempt of the same
//! address family is only `CONNECT` → `LINK_TIMEOUT` on that socket: no socket(2), SO_LINGER,
//! file or inode per connection (about 12% of the load CPU of a `--http` run by perf, Linux
//! 6.18). What the server sees is unchanged; the kernel counts the same ActiveOpens,
//! EstabResets and OutRsts (TcpExt.TCPAbortOnData it counts only for the close). A slot whose
//! next target is of the other family closes the socket and makes a new one. The disconnect
//! runs inline when it is submitted (it never waits), before anything queued after it. The next
//! connect chooses a new ephemeral port (`inet_put_port` at the disconnect; the socket is not
//! bound) and clears the socket error the disconnect left (`tcp_connect_init`). The record's
//! engine detail says `reuse=disconnect`.
//!
//! # Completions
//! `user_data` = kind << 56 | generation << 32 | slot ([`ud`], [`Cqe`]). The generation of a slot
//! moves on every close, so a late CQE of a chain that already ended (a cancelled link timeout,
//! the connect of a chain whose socket step failed) is recognised and ignored. A CONNECT CQE of 0
//! is a completed handshake; an errno is the attempt's failure class, as connect(2) would give it
//! (ECONNREFUSED, EADDRNOTAVAIL = port exhaustion, ...; ECONNRESET/EPIPE after the handshake,
//! see `crate::core::Verdict`); `-ECANCELED` means the link timeout fired (or the stop's
//! cancel): the socket is then asked where it stands, as the epoll engine asks at its deadline,
//! by a second, lone CONNECT on the direct descriptor (0 or EISCONN = the handshake completed,
//! seen past its timeout: `ETIMEDOUT`, counted `completed_after_timeout`; EALREADY = still in
//! SYN-SENT: `ETIMEDOUT`, or abandoned at a stop; `__inet_stream_connect`, net/ipv4/af_inet.c),
//! or by getsockopt(2)/getpeername(2) on a plain socket. (SO_PEERNAME cannot tell: it names
//! the peer of a socket in SYN-SENT too, `inet_getname` with `peer == 2`.)
//!

use std::os::fd::AsRawFd;

use socket2::Socket;

use super::{
    next_gen, Cqe, Ring, Send, Sock, K_CANCEL, K_CANCEL_SEND, K_CONNECT, K_DISCONNECT, K_PEER,
    K_RECV, K_SEND, K_SEND_SPLIT, K_SOCKET, K_SOCKOPT, K_TLS_PART, K_TLS_SEND, LINKED_SEND_MAX,
    STOP_WAIT_NS,
};
use crate::clock::now_ns;
use crate::config::{CloseMode, LoadConfig};
use crate::core::{verdict, Core, Io, Phase, Verdict};
use crate::engine::socket::{errno, probe, Net};
use crate::engine::{Engine, UringFeatures, EVENTS_PER_TURN};
use crate::error::LoadError;
use crate::http::Step;
use crate::tls::TlsEvent;

/// CQEs taken from the completion queue per batch (then handled, then the next batch).
const REAP_BATCH: usize = 256;
/// At most this many batches per wait: a turn stays bounded when completions keep coming.
const REAP_BATCHES: usize = EVENTS_PER_TURN / REAP_BATCH;

/// What a slot's registered file holds (direct descriptors only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum File {
    /// Nothing (or its close is queued).
    Empty,
    /// A socket of this address family (`AF_INET`/`AF_INET6`) in an attempt.
    Busy(i32),
    /// A socket of this family, disconnected after its attempt and kept for the next.
    Idle(i32),
}

/// Where a slot's `--http` request stands on the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodySend {
    /// SEND → RECV linked (a request up to [`LINKED_SEND_MAX`]), or no request.
    Linked,
    /// A split SEND pending beside its RECV, of an attempt `measured` or not; `answered`:
    /// the response came complete first and the SEND is being cancelled
    /// ([`Uring::cancel_send`]).
    Open { measured: bool, answered: bool },
    /// The split SEND has completed; the RECV beside it may still be pending.
    Done,
}

/// A worker's io_uring engine.
pub(crate) struct Uring {
    ring: Ring,
    net: Net,
    /// Per slot: its plain socket (when the sockets are not direct descriptors).
    plain: Vec<Option<Socket>>,
    /// Per slot: its generation (moves at every close).
    gen: Vec<u32>,
    /// Per slot (direct only): what its registered file holds.
    file: Vec<File>,
    /// Per slot: its `--http` request's SEND, linked to its RECV or beside it (split: a request
    /// longer than [`LINKED_SEND_MAX`]; the close cancels what is pending first).
    body: Vec<BodySend>,
    /// Per slot: the generation and measured flag of a closed exchange whose split SEND was
    /// still pending: its CQE, stale by then, still says how many bytes went out.
    orphan: Vec<Option<(u32, bool)>>,
    /// Per slot (`--tls`): the bytes of its TLS SEND in flight (to tell a short one).
    tls_len: Vec<u32>,
    /// Of each target, its address family.
    domains: Vec<i32>,
    /// `--close rst` (SO_LINGER {1, 0} on each socket).
    rst: bool,
    /// `--close rst` on direct descriptors: an ended attempt's socket is disconnected and kept
    /// (module docs, "Reuse").
    reuse: bool,
    /// The stop has cancelled every request: an ECANCELED connect was cut by it.
    stopping: bool,
    spin_ns: u64,
    /// Time in spin passes that found nothing to do, ns ([`Engine::spun_ns`]).
    spun_ns: u64,
}

impl Uring {
    /// The engine of the worker on `cpu` for `cfg`, with `slots` slots.
    ///
    /// # Errors
    /// [`LoadError::EventLoop`] when io_uring_setup(2) fails.
    pub(crate) fn new(
        cfg: &LoadConfig,
        f: &UringFeatures,
        slots: usize,
        cpu: usize,
        timeout_ns: u64,
        net: Net,
    ) -> Result<Uring, LoadError> {
        let ring = Ring::new(cfg, f, slots, cpu, timeout_ns, net.port_range())?;
        let rst = cfg.close == CloseMode::Rst;
        Ok(Uring {
            reuse: ring.direct() && rst,
            ring,
            net,
            plain: (0..slots).map(|_| None).collect(),
            gen: vec![0; slots],
            file: vec![File::Empty; slots],
            body: vec![BodySend::Linked; slots],
            orphan: vec![None; slots],
            tls_len: vec![0; slots],
            domains: cfg
                .targets
                .iter()
                .map(|t| {
                    if t.is_ipv4() {
                        libc::AF_INET
                    } else {
                        libc::AF_INET6
                    }
                })
                .collect(),
            rst,
            stopping: false,
            spin_ns: cfg.pacing.spin_ns,
            spun_ns: 0,
        })
    }

    /// Slot `i`'s socket as the ring names it.
    fn sock(&self, i: usize) -> Sock {
        match self.plain[i].as_ref() {
            Some(s) => Sock::Fd(s.as_raw_fd()),
            None => Sock::Fixed(i as u32),
        }
    }

    /// Handles the completions that are there, at most [`REAP_BATCHES`] batches.
    /// Takes and handles what completed, at most [`REAP_BATCHES`] batches; how many.
    fn reap(&mut self, core: &mut Core<'_>) -> usize {
        let mut batch = [Cqe::default(); REAP_BATCH];
        let mut all = 0;
        for _ in 0..REAP_BATCHES {
            let n = self.ring.reap(&mut batch);
            if n == 0 {
                break;
            }
            all += n;
            let t = now_ns();
            for &c in &batch[..n] {
                self.on_cqe(core, c, t);
            }
            if n < REAP_BATCH {
                break;
            }
        }
        all
    }

    /// One completion, seen at `t`.
    fn on_cqe(&mut self, core: &mut Core<'_>, c: Cqe, t: u64) {
        let (kind, i, res) = (c.kind, c.slot, c.res);
        if i < core.slots() && self.gen[i] != c.gen {
            return self.stale(core, kind, c.gen, i, res);
        }
        if kind == K_CANCEL_SEND {
            return self.cancel_answer(i, res);
        }
        let phase = match kind {
            K_SOCKET | K_SOCKOPT | K_CONNECT | K_PEER => Phase::Connecting,
            K_SEND | K_SEND_SPLIT | K_RECV | K_TLS_SEND | K_TLS_PART => Phase::Reading,
            // Link timeouts, closes, cancels.
            _ => return,
        };
        // (A CQE of an older generation went to `stale` above.)
        if i >= core.slots() || core.slot(i).phase != phase {
            // CQEs of a chain that already ended.
            return;
        }
        match kind {
            K_SEND | K_SEND_SPLIT => self.sent(core, i, t, res),
            K_TLS_SEND | K_TLS_PART => self.tls_sent(core, i, t, res, kind),
            K_RECV if core.has_tls() => self.tls_received(core, i, t, res),
            K_RECV => self.received(core, i, t, res),
            K_SOCKET | K_SOCKOPT if res < 0 => {
                if kind == K_SOCKET {
                    self.file[i] = File::Empty;
                }
                core.fail(i, -res, self);
            }
            K_SOCKET | K_SOCKOPT => {}
            K_CONNECT if res >= 0 => core.connected(i, t, false, self),
            K_CONNECT if res == -libc::ECANCELED => self.ask_where(core, i, t),
            K_CONNECT => match verdict(-res, Ok(())) {
                Verdict::ResetAfterHandshake(code) => core.reset_after_handshake(i, t, code, self),
                _ => core.fail(i, -res, self),
            },
            _ => self.peer_answer(core, i, t, res),
        }
    }

    /// Slot `i`'s connect was cancelled (its link timeout fired, or the stop cancelled it): asks
    /// the socket whether the handshake completed.
    fn ask_where(&mut self, core: &mut Core<'_>, i: usize, t: u64) {
        if let Some(sock) = self.plain[i].as_ref() {
            let v = probe(sock);
            return self.settle(core, i, t, v);
        }
        let target = core.slot(i).target as usize;
        if !self.ring.push_peer(i, self.gen[i], target) {
            self.settle(core, i, t, Verdict::Pending);
        }
    }

    /// The second connect's answer for slot `i` (`__inet_stream_connect`, net/ipv4/af_inet.c,
    /// non-blocking): 0 or EISCONN = the handshake completed; EALREADY = still in SYN-SENT;
    /// another errno = the connect failed (or the peer reset it after the handshake).
    fn peer_answer(&mut self, core: &mut Core<'_>, i: usize, t: u64, res: i32) {
        let v = match -res {
            0 | libc::EISCONN => Verdict::Connected,
            libc::EALREADY => Verdict::Pending,
            e => verdict(e, Ok(())),
        };
        self.settle(core, i, t, v);
    }

    /// Ends slot `i`'s cancelled connect by where its socket stands: past its timeout (the link
    /// timeout fired) a completed handshake is `ETIMEDOUT` counted `completed_after_timeout` and
    /// a pending one `ETIMEDOUT`; at a stop a completed one in time is a success and a pending
    /// one abandoned (as the epoll engine's stop decides).
    fn settle(&mut self, core: &mut Core<'_>, i: usize, t: u64, v: Verdict) {
        // The link timeout fired: the attempt is past its timeout whenever we look.
        let late = core.slot(i).start_ns + core.timeout_ns() + 1;
        let t = if self.stopping { t } else { t.max(late) };
        core.settle(i, t, v, self.stopping, false, self);
    }

    /// Pushes slot `i`'s next read (its RECV, after or beside `send`) with its link timeout at
    /// the read phase's deadline (seen from `t`).
    fn push_read(&mut self, core: &mut Core<'_>, i: usize, t: u64, send: Send) {
        let left = core.slot(i).deadline_ns.saturating_sub(t);
        let sock = self.sock(i);
        if !self.ring.push_read(i, self.gen[i], sock, left, send) {
            if core.has_http() {
                core.http_step(i, Step::Failed(libc::EBUSY), self);
            } else {
                core.post_fail(i, libc::EBUSY, self);
            }
        }
    }

    /// The CQE of slot `i`'s SEND: the whole request went out (counted written; the RECV
    /// linked after it runs on; with IOSQE_CQE_SKIP_SUCCESS this CQE is not posted), or it
    /// failed (the RECV is cancelled with it), or `-ECANCELED`: its link timeout fired (the
    /// read phase's deadline: `HTTP ETIMEDOUT`, as the epoll engine counts a request it could
    /// not write in time) or the stop cancelled it. A failed linked SEND ends its chain (the
    /// RECV after it is cancelled without a CQE, or with one its generation makes stale: the
    /// SEND's CQE comes first and ends the slot).
    fn sent(&mut self, core: &mut Core<'_>, i: usize, t: u64, res: i32) {
        let (target, measured, deadline) = {
            let s = core.slot(i);
            (s.target as usize, s.measured, s.deadline_ns)
        };
        let len = self.ring.request_len(target);
        let body = self.body[i];
        if body != BodySend::Linked {
            self.body[i] = BodySend::Done;
        }
        // A MSG_WAITALL send cut part way reports the bytes it did write, not an errno: by its
        // link timeout (at the read deadline), by the stop, or by the connection failing under
        // it (the peer's RST: the socket's error is not in the CQE, and send(2) on the epoll
        // engine reports it as ECONNRESET). Before the deadline it is the last.
        let short = res >= 0 && (res as usize) < len;
        if short {
            // The bytes did go out (the epoll engine counts them as send(2) returns them).
            if let Some(h) = core.http() {
                h.mark_partial(i, res as usize, measured);
            }
        }
        if body != BodySend::Linked {
            let written = res >= 0 && !short;
            let answered = matches!(body, BodySend::Open { answered: true, .. });
            if written {
                if let Some(h) = core.http() {
                    if answered {
                        // Written whole after its response came (the SEND finished before the
                        // cancel reached it): an early response, as the epoll engine counts one
                        // (it stops writing at the response), so its bytes count, not a request.
                        h.mark_partial(i, res as usize, measured);
                    } else {
                        h.mark_written(i, target, measured);
                    }
                }
            }
            if answered {
                // The response came first (`received` cancelled this SEND): done now.
                core.http_step(i, Step::Finish, self);
                return;
            }
            if written {
                // Written; the RECV beside it goes on (for the response, or the FIN after it).
                return;
            }
            // Failed or cut short: the attempt's failure, or (a response complete, waiting for
            // the FIN of `--close server`) a post-connect one, as on the epoll engine.
        }
        let cancelled = res == -libc::ECANCELED || (short && t >= deadline);
        if (cancelled || short) && self.stopping {
            return core.stopped(i, self);
        }
        let errno = match res {
            _ if cancelled => libc::ETIMEDOUT,
            _ if short => libc::ECONNRESET,
            r if r < 0 => -r,
            _ => {
                // The RECV linked after it is on its way.
                if let Some(h) = core.http() {
                    h.mark_written(i, target, measured);
                }
                return;
            }
        };
        core.http_step(i, Step::Failed(errno), self);
    }

    /// A CQE of slot `i`'s RECV seen at `t`: bytes (to the core's read rules or the HTTP
    /// exchange, then the next RECV while more is wanted), 0 = the server's FIN, an errno, or
    /// `-ECANCELED` = its link timeout fired (the read phase's deadline, `ETIMEDOUT` as the
    /// epoll engine counts it) or the stop cancelled it.
    fn received(&mut self, core: &mut Core<'_>, i: usize, t: u64, res: i32) {
        let (measured, deadline, target) = {
            let s = core.slot(i);
            (s.measured, s.deadline_ns, s.target as usize)
        };
        let split = self.body[i] != BodySend::Linked;
        if let (Some(h), false) = (core.http(), split) {
            // A RECV CQE of a live linked exchange: its SEND did not fail (a failed SEND's CQE
            // comes first and ends the slot, see `sent`), so the whole request was written.
            h.mark_written(i, target, measured);
        }
        if res == -libc::ECANCELED && self.stopping {
            return core.stopped(i, self);
        }
        if !core.has_http() {
            // `--expect-bytes` / `--close server`: the core's read rules (`Core::took`).
            return match res {
                r if r == -libc::ECANCELED => core.post_fail(i, libc::ETIMEDOUT, self),
                r if r < 0 => core.post_fail(i, -r, self),
                n => {
                    if core.took(i, t, n as usize, self) {
                        self.push_read(core, i, t, Send::None);
                    }
                }
            };
        }
        let step = if res == -libc::ECANCELED || (res >= 0 && t > deadline) {
            Some(Step::Failed(libc::ETIMEDOUT))
        } else if res < 0 {
            Some(Step::Failed(-res))
        } else {
            core.http_consume(i, self.ring.received(i, res as usize), t)
        };
        match step {
            Some(Step::Finish) if split && core.http().is_some_and(|h| !h.written(i)) => {
                // Answered before the request was written (413 and the like): the success
                // counted now, the SEND cancelled, the slot ended at its CQE (`sent`), which
                // says how many bytes went out.
                core.http_step(i, Step::Wait, self);
                self.cancel_send(i);
            }
            Some(step) => {
                core.http_step(i, step, self);
            }
            None => self.push_read(core, i, t, Send::None),
        }
    }

    /// Cancels slot `i`'s split SEND (its response is complete; the SEND's CQE ends the slot).
    fn cancel_send(&mut self, i: usize) {
        if let BodySend::Open { answered, .. } = &mut self.body[i] {
            *answered = true;
            let _ = self
                .ring
                .push_cancels(i, self.gen[i], &[(K_SEND_SPLIT, K_CANCEL_SEND)]);
        }
    }

    /// The answer to [`Self::cancel_send`] for slot `i` (of its current exchange). ENOENT
    /// while the SEND is still pending: the cancel came while the SEND was neither waiting for
    /// space nor in io-wq but between the two (its socket woke it, e.g. by the server's FIN,
    /// and its retry waits as deferred task work), so it is asked again; the SEND would
    /// otherwise hold the slot until its link timeout.
    fn cancel_answer(&mut self, i: usize, res: i32) {
        if res == -libc::ENOENT {
            self.cancel_send(i);
        }
    }

    /// A CQE of slot `i`'s closed exchange `gen`: only a split SEND's that was pending at the
    /// close counts, its bytes (the epoll engine counts a cut request's bytes as they go).
    /// The cancel of such a SEND (at the close) that found nothing while the SEND is pending is
    /// asked again, as in [`Self::cancel_answer`]: the SEND would otherwise hold its socket open
    /// until its link timeout.
    fn stale(&mut self, core: &mut Core<'_>, kind: u64, gen: u32, i: usize, res: i32) {
        if kind == K_CANCEL_SEND && res == -libc::ENOENT {
            if self.orphan[i].is_some_and(|(g, _)| g == gen) {
                let _ = self
                    .ring
                    .push_cancels(i, gen, &[(K_SEND_SPLIT, K_CANCEL_SEND)]);
            }
            return;
        }
        if kind == K_DISCONNECT && res < 0 {
            // A disconnect the kernel refused (none does on Linux 6.x: tcp_disconnect returns
            // 0): no socket is kept from now on; the next attempt of the slot, if it already
            // connects on this one, fails with what the kernel says (EISCONN), counted.
            self.reuse = false;
            return;
        }
        if kind != K_SEND_SPLIT {
            return;
        }
        if let Some((g, measured)) = self.orphan[i] {
            if g == gen {
                // Done, whatever it says: no cancel is asked again.
                self.orphan[i] = None;
                if let (Some(h), true) = (core.http(), res > 0) {
                    h.count_sent(res as usize, measured);
                }
            }
        }
    }

    /// `--tls`: the CQE of slot `i`'s TLS SEND (`kind`): a part written whole (the next part
    /// or the RECV follows), a linked one written whole (posted only without skip-success: the
    /// RECV after it goes on), or a failure: `-ECANCELED` or cut short at the deadline = its
    /// link timeout fired (the read phase's deadline, `ETIMEDOUT` in the class of what was
    /// under way, as the epoll engine's deadline counts it) or the stop; cut short before it =
    /// the connection reset under it (`ECONNRESET`, as `sent` counts it); an errno = the
    /// socket's (the client's `Errno` event, as on epoll).
    fn tls_sent(&mut self, core: &mut Core<'_>, i: usize, t: u64, res: i32, kind: u64) {
        if res >= 0 && res as u32 == self.tls_len[i] {
            if kind == K_TLS_PART {
                self.tls_flush(core, i, t);
            }
            return;
        }
        let late = t >= core.slot(i).deadline_ns;
        let cancelled = res == -libc::ECANCELED || (res >= 0 && late);
        if (cancelled || res >= 0) && self.stopping {
            return core.stopped(i, self);
        }
        if cancelled {
            return core.read_timed_out(i, self);
        }
        let errno = if res < 0 { -res } else { libc::ECONNRESET };
        core.tls_event(i, t, TlsEvent::Errno(errno), self);
    }

    /// `--tls`: a CQE of slot `i`'s RECV seen at `t`: bytes (0 = the server's FIN) into its
    /// TLS client's input, then the client driven ([`Self::tls_drive`]); an errno, the
    /// client's `Errno` event; `-ECANCELED` (its link timeout, the read phase's deadline) or
    /// bytes past the deadline, `ETIMEDOUT` in the class of what was under way; at the stop,
    /// the slot closed (an unfinished exchange abandoned).
    fn tls_received(&mut self, core: &mut Core<'_>, i: usize, t: u64, res: i32) {
        if res == -libc::ECANCELED && self.stopping {
            return core.stopped(i, self);
        }
        if res == -libc::ECANCELED || (res >= 0 && t > core.slot(i).deadline_ns) {
            return core.read_timed_out(i, self);
        }
        if res < 0 {
            core.tls_event(i, t, TlsEvent::Errno(-res), self);
            return;
        }
        let Some(w) = core.tls() else { return };
        let c = w.client(i);
        let room = c.input_space();
        // A RECV is posted only once the client processed all it had (`tls_drive`), so its
        // input is empty and holds a whole RECV (`RECV_BUF <= INPUT_BYTES`, checked at build).
        debug_assert!(
            room.len() >= res as usize,
            "slot {i}: TLS input not drained"
        );
        let n = (res as usize).min(room.len());
        room[..n].copy_from_slice(self.ring.received(i, n));
        c.received(n);
        self.tls_drive(core, i, t);
    }

    /// `--tls`: drives slot `i`'s TLS client at `t` until it waits for bytes: its events go
    /// to the core (the handshake counted, the request or close_notify queued, plaintext to
    /// the HTTP exchange), then what it queued goes out linked before the next RECV
    /// ([`Self::tls_flush`]). An event that ends the connection (a failure, the server's close)
    /// first sends what the client queued last (its alert: [`Self::tls_last`]).
    fn tls_drive(&mut self, core: &mut Core<'_>, i: usize, t: u64) {
        let gen = self.gen[i];
        loop {
            let Some(w) = core.tls() else { return };
            match w.client(i).process() {
                TlsEvent::Wait => {
                    // After the handshake with `--http`: the plaintext so far to the exchange,
                    // which may end it.
                    core.tls_event(i, t, TlsEvent::Wait, self);
                    if self.gen[i] == gen {
                        self.tls_flush(core, i, t);
                    }
                    return;
                }
                ev @ (TlsEvent::Handshaken | TlsEvent::Plaintext) => {
                    if !core.tls_event(i, t, ev, self) || self.gen[i] != gen {
                        return;
                    }
                }
                ev => {
                    self.tls_last(core, i);
                    core.tls_event(i, t, ev, self);
                    debug_assert!(self.gen[i] != gen, "slot {i}: a TLS end left it open");
                    return;
                }
            }
        }
    }

    /// `--tls`: sends what slot `i`'s TLS client queued and receives next: SEND → RECV linked
    /// (or the RECV alone when nothing is queued; a part alone when more than
    /// [`TLS_OUT_BUF`](super::TLS_OUT_BUF) is queued), with link timeouts at the read phase's
    /// deadline. At the stop the slot is closed instead.
    fn tls_flush(&mut self, core: &mut Core<'_>, i: usize, t: u64) {
        if self.stopping {
            return core.stopped(i, self);
        }
        let Some(w) = core.tls() else { return };
        let c = w.client(i);
        // No SEND of the slot is in flight: this runs after the CQE that ended its last chain
        // (or at its read phase's start).
        let n = self.ring.stage_tls(i, c.pending_output());
        c.sent(n);
        let more = !c.pending_output().is_empty();
        self.tls_len[i] = n as u32;
        let left = core.slot(i).deadline_ns.saturating_sub(t);
        let (gen, sock) = (self.gen[i], self.sock(i));
        let pushed = if more {
            self.ring.push_tls_part(i, gen, sock, n, left)
        } else {
            let send = if n > 0 { Send::Tls(n) } else { Send::None };
            self.ring.push_read(i, gen, sock, left, send)
        };
        if !pushed {
            core.tls_event(i, t, TlsEvent::Errno(libc::EBUSY), self);
        }
    }

    /// `--tls`: slot `i`'s connection ends on its TLS client's event: what the client queued
    /// last (the alert of its failure) goes out first, best effort, as one lone
    /// `SEND(MSG_DONTWAIT)` queued before the slot's close (at most
    /// [`TLS_OUT_BUF`](super::TLS_OUT_BUF) bytes: an alert record is a few dozen).
    fn tls_last(&mut self, core: &mut Core<'_>, i: usize) {
        let Some(w) = core.tls() else { return };
        let c = w.client(i);
        let out = c.pending_output();
        if out.is_empty() {
            return;
        }
        // No SEND of the slot is in flight (as in `tls_flush`).
        let n = self.ring.stage_tls(i, out);
        c.sent(n);
        let (gen, sock) = (self.gen[i], self.sock(i));
        let _ = self.ring.push_tls_last(i, gen, sock, n);
    }
}

impl Io for Uring {
    /// Starts slot `i`'s attempt to target `target` through the ring (accounting done by the
    /// core).
    fn start(&mut self, core: &mut Core<'_>, i: usize, target: usize) {
        if self.ring.direct() {
            let gen = self.gen[i];
            let domain = self.domains[target];
            if self.reuse && self.file[i] == File::Idle(domain) {
                // The slot's socket, disconnected after its last attempt (module docs,
                // "Reuse"); should the push fail, the slot's close disconnects it again.
                self.file[i] = File::Busy(domain);
                if !self
                    .ring
                    .push_connect(i, gen, Sock::Fixed(i as u32), target)
                {
                    core.fail(i, libc::EBUSY, self);
                }
                return;
            }
            if let File::Idle(_) = self.file[i] {
                // Kept for the other address family (or reuse is off): closed, a new socket made
                // in its place.
                let _ = self.ring.push_close_fixed(i, gen);
            }
            self.file[i] = File::Busy(domain);
            if !self
                .ring
                .push_socket_connect(i, gen, domain, target, self.rst)
            {
                self.file[i] = File::Empty;
                core.fail(i, libc::EBUSY, self);
            }
            return;
        }
        let sock = match self.net.socket(target, core.rr(), false) {
            Ok(s) => s,
            Err(e) => return core.fail(i, errno(&e), self),
        };
        let fd = sock.as_raw_fd();
        self.plain[i] = Some(sock);
        if !self.ring.push_connect(i, self.gen[i], Sock::Fd(fd), target) {
            core.fail(i, libc::EBUSY, self);
        }
    }

    /// Slot `i`'s handshake is done and it reads on (`--http`, `--expect-bytes`, `--close
    /// server`, `--tls`; its read phase's deadline set). With `--tls`: starts its TLS client and
    /// sends its ClientHello linked before the first RECV ([`Self::tls_drive`]). With `--http`:
    /// resets its exchange and pushes
    /// one chain, SEND of the whole request (MSG_WAITALL: the kernel retries a short send) →
    /// LINK_TIMEOUT → RECV → LINK_TIMEOUT, both timeouts at the deadline (a link timeout covers
    /// only the request just before it, so the SEND has its own: a body the server never reads
    /// must not hold the slot); a request over [`LINKED_SEND_MAX`] as two chains, SEND →
    /// LINK_TIMEOUT beside RECV → LINK_TIMEOUT. Otherwise RECV → LINK_TIMEOUT alone.
    fn read_begin(&mut self, core: &mut Core<'_>, i: usize, t: u64, _readable: bool) {
        if core.has_tls() {
            // The ClientHello queued (or the attempt failed, the slot closed).
            if !core.tls_begin(i, t, self) {
                return;
            }
            if self.stopping {
                return core.stopped(i, self);
            }
            return self.tls_drive(core, i, t);
        }
        core.http_begin(i);
        if self.stopping {
            // Completed as the run stopped: closed now, its exchange abandoned (as with epoll).
            return core.stopped(i, self);
        }
        if !core.has_http() {
            return self.push_read(core, i, t, Send::None);
        }
        let (target, measured) = {
            let s = core.slot(i);
            (s.target as usize, s.measured)
        };
        let split = self.ring.request_len(target) > LINKED_SEND_MAX;
        self.body[i] = if split {
            BodySend::Open {
                measured,
                answered: false,
            }
        } else {
            BodySend::Linked
        };
        let send = if split {
            Send::Split(target)
        } else {
            Send::Linked(target)
        };
        self.push_read(core, i, t, send);
    }

    /// Closes slot `i`'s socket through the ring (its plain descriptor, or its direct one) and
    /// moves its generation on.
    fn close(&mut self, i: usize) {
        let gen = self.gen[i];
        self.gen[i] = next_gen(gen);
        // A split exchange's RECV (and SEND, while open) may still be pending: cancelled before
        // the close, so none writes the slot's buffer once the slot is reused (an ENOENT CQE,
        // ignored, when it was done). A pending SEND's CQE is then counted as an orphan's.
        let settled = self.body[i] == BodySend::Linked;
        match std::mem::replace(&mut self.body[i], BodySend::Linked) {
            BodySend::Linked => {}
            BodySend::Open { measured, .. } => {
                self.orphan[i] = Some((gen, measured));
                let _ = self.ring.push_cancels(
                    i,
                    gen,
                    &[(K_SEND_SPLIT, K_CANCEL_SEND), (K_RECV, K_CANCEL)],
                );
            }
            BodySend::Done => {
                let _ = self.ring.push_cancels(i, gen, &[(K_RECV, K_CANCEL)]);
            }
        }
        if let Some(s) = self.plain[i].take() {
            // Closed by a CLOSE through the ring, or with close(2) when it cannot be pushed.
            return self.ring.close_plain(i, gen, s);
        }
        match self.file[i] {
            // Nothing of the attempt is pending on the socket: disconnected and kept (not at
            // the stop, whose requests may still be pending and which makes no new attempt).
            File::Busy(domain) if self.reuse && settled && !self.stopping => {
                self.file[i] = File::Idle(domain);
                let _ = self.ring.push_disconnect(i, gen);
            }
            File::Busy(_) | File::Idle(_) => {
                self.file[i] = File::Empty;
                // Should the push fail, the direct descriptor stays in the ring's file table,
                // closed with the ring.
                let _ = self.ring.push_close_fixed(i, gen);
            }
            File::Empty => {}
        }
    }
}

impl Engine for Uring {
    /// One wait of the loop: submits what is queued, waits for a completion until `until_ns`
    /// (no wait when it is within `cfg.pacing.spin_ns` of `now`), handles what completed.
    fn wait(&mut self, core: &mut Core<'_>, until_ns: u64, now: u64) {
        // A spin pass with nothing to submit may find nothing to do: its CPU time (not its wall
        // time, which other work on the CPU may share) is then the worker waiting for the due
        // start.
        let idle_since = self
            .ring
            .wait(until_ns, now, self.spin_ns, core.in_flight());
        if let (0, Some(cpu0)) = (self.reap(core), idle_since) {
            self.spun_ns += common::threadcpu::run_ns_now().saturating_sub(cpu0);
        }
    }

    /// Nothing: the kernel's link timeouts end each connect and read (their `-ECANCELED`).
    fn expire(&mut self, _core: &mut Core<'_>, _now: u64) {}

    /// The stop: cancels every request in the ring (IORING_ASYNC_CANCEL_ANY, 5.19), then takes
    /// the connects' answers for up to [`STOP_WAIT_NS`]: completed in time = a success, failed =
    /// its errno, cancelled while in SYN-SENT = abandoned. Whatever has not answered by then is
    /// abandoned and closed (the ring's drop then keeps the memory its requests may still use).
    /// So `attempts = successes + failures + abandoned`, as with epoll.
    fn stop(&mut self, core: &mut Core<'_>, _now: u64) {
        self.stopping = true;
        self.ring.push_cancel_all();
        let until = now_ns() + STOP_WAIT_NS;
        loop {
            let now = now_ns();
            if core.in_flight() == 0 || now >= until {
                break;
            }
            self.wait(core, now + 10_000_000, now);
        }
        while let Some(i) = core.oldest() {
            if core.slot(i).phase == Phase::Reading {
                core.stopped(i, self);
                continue;
            }
            core.abandon(i);
            core.finish(i, self);
        }
        self.ring.submit();
    }

    fn flush(&mut self) {
        self.ring.submit();
    }

    fn direct(&self) -> Option<bool> {
        Some(self.ring.direct())
    }

    fn set_spin_ns(&mut self, ns: u64) {
        self.spin_ns = ns;
    }

    fn spun_ns(&self) -> u64 {
        self.spun_ns
    }
}
