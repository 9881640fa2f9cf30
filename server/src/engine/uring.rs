//! The io_uring engine: one ring per worker, created on the worker thread.
//!
//! - Setup flags: SINGLE_ISSUER + DEFER_TASKRUN (Linux 6.1), else COOP_TASKRUN + TASKRUN_FLAG
//!   (5.19), else none (io_uring_setup(2)). SQ [`SQ_ENTRIES`], CQ [`CQ_ENTRIES`] so a multishot
//!   burst does not overflow it (an overflow would end the multishot request; it is re-armed).
//! - One multishot accept (IORING_ACCEPT_MULTISHOT, 5.19) on the listener. A CQE without
//!   IORING_CQE_F_MORE ends it: re-armed at once after a success or a transient error, after an
//!   IORING_OP_TIMEOUT of [`super::BACKOFF`] after EMFILE/ENFILE (counted) or another error.
//!   ECANCELED means we cancelled it at stop. (io_uring_multishot(7), io_uring/net.c io_accept.)
//!   Where neither can be pushed (the SQ stays full), the loop arms it again after the back-off
//!   (`rearm_lost_accept`), so no failure leaves a worker that never accepts again.
//! - Per connection, through the ring: Close (`close`, and `rst`: the listener's SO_LINGER
//!   {on, 0} is inherited, see `crate::listener::bind_group`); Send with MSG_WAITALL (short
//!   sends are retried by the kernel for stream sockets) hard-linked to Close (`greet`); a
//!   one-shot PollAdd(POLLIN|POLLRDHUP) (`hold`: data is read and dropped with
//!   recv(MSG_DONTWAIT), EOF/HUP/error closes); `http`: PollAdd as for `hold`,
//!   recv(MSG_DONTWAIT) until the end of the request head ([`crate::http::HeadScan`], state per
//!   fd), then the response as for `greet` (Send with MSG_WAITALL hard-linked to Close), served
//!   when the Send CQE says all of it went out.
//! - `--tls`: each connection's [`TlsConn`] (`crate::tls`, sans-I/O) does the TLS; this engine
//!   keeps one operation in flight per connection, the one [`TlsConn::next`] asks for: a Recv
//!   into the connection's receive buffer ([`TlsSlot`]), a Send of [`TlsConn::to_send`], or that
//!   Send hard-linked to a Close.
//! - Direct descriptors (`close`, `rst` and `greet` without TLS or steering): the ring registers a sparse
//!   file table (IORING_REGISTER_FILES2 with IORING_RSRC_REGISTER_SPARSE, Linux 5.19) and the
//!   multishot accept allocates each connection a slot in it (IORING_FILE_INDEX_ALLOC, 5.19):
//!   the connection never enters the process-wide fd table, which every worker and the load
//!   side contend on (`fd_install`/`close_fd` take its lock), and its Close/Send name the fixed
//!   slot. The setup label ends in `+direct_accept` when it ran; where registering fails (older
//!   kernels, a small RLIMIT_NOFILE) the engine accepts plain descriptors as before. The final
//!   synchronous drain at stop accepts plain descriptors. (io_uring_register(2),
//!   io_uring_prep_multishot_accept_direct(3).) With steering (`--steer`) the accept takes plain
//!   descriptors: its 1-in-16 SO_INCOMING_CPU samples ([`Ctx::syn_cpu`]) need an fd for
//!   getsockopt(2).
//! - A lone Close carries IOSQE_CQE_SKIP_SUCCESS (Linux 5.17; the ring's IORING_FEAT_CQE_SKIP
//!   says so, io_uring_setup(2)) where the kernel has it: no CQE for a close that worked, one
//!   only for a failure, so a `close`/`rst` connection costs one CQE (its accept) instead of two.
//!   Older kernels post both, as before. The ring setup label in the server report ends in
//!   `+cqe_skip_success` when it ran.
//! - Stamps (`bench`'s accept-queue wait, while the controller asks for them:
//!   `crate::worker::Control`): the multishot accept returns no address (one buffer would serve
//!   every accept of a burst), so a stamped connection's client address is read through the
//!   ring: IORING_OP_URING_CMD SOCKET_URING_OP_GETSOCKOPT(SOL_SOCKET, SO_PEERNAME) (Linux 6.7;
//!   getpeername(2)'s answer, `sk_getsockopt` → `inet_getname(peer = 2)`, which names the peer of
//!   a connection its client already reset too) into a slot of a fixed pool ([`PEER_SLOTS`]),
//!   pushed ahead of the connection's next SQE: hard-linked before the Close or the Send of a
//!   direct descriptor; before the first SQE of a plain one (the kernel issues SQEs in
//!   submission order and this command completes inline, `io_uring_cmd_sock`, so it has run
//!   before anything later names the descriptor). The time stamped is when the accept's CQE was
//!   handled. Measured on the 2-vCPU VM (Linux 6.18, 2026-12-07, batches of 64, contended
//!   host): 1.0–1.2 µs per GETSOCKOPT through the ring against 1.4–1.7 µs for getpeername(2)
//!   and 0.25–0.38 µs for a NOP, so the ring's form costs about what a syscall would, less the
//!   entry. Kernels without it (probed once at start with SO_TYPE on the listener) stamp
//!   nothing: `Server::stamps_unavailable` says why.
//! - One loop turn handles at most [`TURN_BUDGET`] CQEs, then publishes the counters and looks at
//!   the stop flag. Under sustained load the CQ is refilled as fast as it is read (a multishot
//!   accept posts a CQE per connection; the closes the handlers submit post theirs, and without
//!   DEFER_TASKRUN task work can post CQEs while we read), so "reap until empty" never ends; CQEs
//!   left over are taken on the next turn, which then submits without waiting.
//! - No slab: every in-flight operation is named by its `user_data` = kind << 56 | fd (or
//!   fixed-file slot), and per-connection state lives in one table indexed by fd ([`FdTable`],
//!   empty at start and grown on demand); the registered file table of direct descriptors is
//!   the one fixed-size table ([`DIRECT_FILES`] says why).
//!
//! # What SQEs point to, and who keeps it alive
//! The kernel reads or writes memory an SQE points to at any time until that SQE's CQE (a
//! Timeout's timespec is read when it is submitted; it is kept as long anyway). The only such
//! memory:
//! - Send (`greet`, `http`): the worker's response, `Ctx::greet`, a boxed slice the [`Ctx`]
//!   owns, never written or resized while the engine runs.
//! - Timeout (the accept back-off): `Uring::backoff_ts`, boxed, never written after it is made.
//! - Recv (`--tls`): the connection's [`TlsSlot::recv`], in `Uring::conns`.
//! - Send (`--tls`): [`TlsConn::to_send`], bytes in the connection's send buffer, which stay in
//!   place and unchanged until the next `&mut` call on that [`TlsConn`] (its docs); the engine
//!   makes such a call only when the connection's operation completed (its CQE). A connection's
//!   buffers go back to the pools (`Uring::tls_forget`) only when no SQE of it is in flight (its
//!   one operation's CQE arrived, or its SQE was never pushed); a pooled buffer is pointed at by
//!   no SQE.
//!
//! - GETSOCKOPT SO_PEERNAME (stamps): a slot of `Uring::peers`, a boxed array never moved or
//!   resized while the engine runs; a slot is taken from `Uring::peer_free` when its SQE is
//!   pushed and given back at its CQE (or at once when the push fails), so no two SQEs in flight
//!   point at one slot.
//!
//! The multishot accept (no address buffer), Close, PollAdd and AsyncCancel point at no memory.
//! Every SQE that does is counted in `Uring::in_flight` until its CQE. So the loop ends only
//! when `in_flight` is 0, or, when the kernel has not completed them [`FINISH_MAX`] (twice with
//! `--tls`) after the stop, by leaking what they point at: [`Uring`]'s `Drop` does that, before
//! its fields (the ring first) drop, on every way out of the loop, a panic included.
//!
//! Descriptors: every SQE names the listener (the worker's, closed only after the multishot
//! accept's last CQE) or a connection this worker accepted and has not closed: a connection is
//! closed by the last SQE that names it (a Close, alone or hard-linked after a Send), or at once
//! (`close_now`) when that SQE could not be pushed.
//!
//! Unsafe here: pushing SQEs (the kernel reads and writes the memory they point to) and turning
//! raw fds from accept CQEs into borrowed/owned fds.

use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use socket2::SockRef;

use super::{classify, AcceptFailure, BACKOFF, TURN_BUDGET};
use crate::config::Mode;
use crate::error::ServerError;
use crate::fd_table::FdTable;
use crate::http::{HeadScan, Scan};
use crate::tls::{Next, SendBufs, TlsConn};
use crate::worker::{Ctx, Ready, WAIT_MAX};

/// Submission queue entries per ring.
pub(crate) const SQ_ENTRIES: u32 = 256;
/// Completion queue entries per ring (16 × SQ): room for multishot accept bursts plus the
/// close/send completions they cause.
pub(crate) const CQ_ENTRIES: u32 = 4096;
/// How long a stopping worker waits for its last CQEs.
pub(crate) const FINISH_MAX: Duration = Duration::from_secs(2);

/// Slots of the sparse file table for direct accepts (at most RLIMIT_NOFILE's soft limit, which
/// the kernel checks): a connection holds its slot from its accept until its Close, so this
/// bounds the connections in between (a greeting still being sent); a full table fails the
/// accept with ENFILE, which backs off as the plain descriptors' EMFILE does.
///
/// Fixed at registration, unlike the per-fd tables ([`FdTable`]), because the kernel cannot grow
/// a registered file table in place: IORING_REGISTER_FILES_UPDATE only replaces slots inside
/// it (an offset past its end is EINVAL) and a second IORING_REGISTER_FILES2 is EBUSY
/// (io_uring/rsrc.c; checked on 6.18 by `the_registered_file_table_cannot_grow` below). Growing
/// means unregistering first, which drops every slot, the connections still in flight included.
/// What it costs: the kernel's table of one pointer per slot plus a bitmap, ~0.5 MiB per worker
/// at 65,536 slots, in kernel memory; nothing per slot in this process.
const DIRECT_FILES: usize = 65_536;

/// Stamps: GETSOCKOPT(SO_PEERNAME) in flight at most (slots of `Uring::peers`, 36 bytes each,
/// about 160 KiB). A burst of accepts (an accept queue emptied after a stall) puts up to a full
/// CQ of accept CQEs ahead of the GETSOCKOPT CQEs that free slots, so a slot per CQ entry, plus
/// a full SQ and a few turns' accepts ([`TURN_BUDGET`]); a connection accepted with no slot free
/// is counted in `Stamps::full`, not stamped. (With a quarter of this, 126 of 1,400 connections
/// queued behind a 700 ms stall went unstamped: the longest waits.)
const PEER_SLOTS: usize = CQ_ENTRIES as usize + SQ_ENTRIES as usize + 4 * TURN_BUDGET;

/// Bytes of a `sockaddr_in6`, the largest peer address (an IPv4 peer takes 16).
const PEER_BYTES: usize = 28;

/// recv(2) calls of 4 KiB a held connection gets per readiness; more data waits for a new poll.
const READS_PER_POLL: usize = 16;

/// `--tls`: bytes of one receive per connection (TLS records are reassembled by rustls across
/// receives).
const RECV_BYTES: usize = 4096;

const ACCEPT: u64 = 1 << 56;
const CLOSE: u64 = 2 << 56;
const SEND: u64 = 3 << 56;
const POLL: u64 = 4 << 56;
const TIMEOUT: u64 = 5 << 56;
const CANCEL: u64 = 6 << 56;
/// A Close with IOSQE_CQE_SKIP_SUCCESS: its CQE arrives only on failure and is not in flight.
const CLOSE_SKIP: u64 = 7 << 56;
/// `--tls`: a Recv into the connection's buffer.
const RECV: u64 = 8 << 56;
/// `--tls`: a Send of the connection's queued records.
const TLS_SEND: u64 = 9 << 56;
/// `--tls`: the last Send (an alert), hard-linked to the connection's Close.
const TLS_SEND_LAST: u64 = 10 << 56;
/// Stamps: a GETSOCKOPT(SO_PEERNAME) into slot `fd` (the low bits) of `Uring::peers`.
const PEER: u64 = 11 << 56;
const KIND_MASK: u64 = 0xff << 56;
const POLL_EVENTS: u32 = (libc::POLLIN | libc::POLLRDHUP) as u32;
const POLL_GONE: i32 = (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) as i32;

fn ud(kind: u64, fd: RawFd) -> u64 {
    kind | u64::from(fd as u32)
}

/// Builds a ring with the best setup flags this kernel accepts and names them.
///
/// # Errors
/// The io_uring_setup(2) error of the last attempt.
pub(crate) fn build_ring() -> std::io::Result<(IoUring, &'static str)> {
    let einval = |e: &std::io::Error| e.raw_os_error() == Some(libc::EINVAL);
    match IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(CQ_ENTRIES)
        .build(SQ_ENTRIES)
    {
        Ok(r) => return Ok((r, "single_issuer+defer_taskrun")),
        Err(e) if !einval(&e) => return Err(e),
        Err(_) => {}
    }
    match IoUring::builder()
        .setup_coop_taskrun()
        .setup_taskrun_flag()
        .setup_cqsize(CQ_ENTRIES)
        .build(SQ_ENTRIES)
    {
        Ok(r) => return Ok((r, "coop_taskrun")),
        Err(e) if !einval(&e) => return Err(e),
        Err(_) => {}
    }
    Ok((
        IoUring::builder()
            .setup_cqsize(CQ_ENTRIES)
            .build(SQ_ENTRIES)?,
        "none",
    ))
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    Running,
    Grace(Instant),
    Cancelling,
    Finishing(Instant),
    /// `--tls` connections still open at the end of [`Phase::Finishing`] had their receives
    /// cancelled; the last wait.
    Last(Instant),
}

struct Uring<'c> {
    ctx: &'c mut Ctx,
    ring: IoUring,
    listener_fd: RawFd,
    /// SQEs pushed whose (last) CQE has not arrived; the multishot accept is tracked apart.
    in_flight: usize,
    accept_armed: bool,
    accepting: bool,
    backoff_pending: bool,
    /// When neither the accept nor a back-off is armed (both pushes failed), the loop arms the
    /// accept again, not before this instant (the back-off the lost Timeout was to give).
    rearm_after: Option<Instant>,
    backoff_ts: Box<types::Timespec>,
    /// State of the connections on plain descriptors that need some (`hold`, `http`, `--tls`),
    /// by fd, grown on demand (direct descriptors need none).
    conns: FdTable<PerFd>,
    scratch: Box<[MaybeUninit<u8>]>,
    /// Closes carry IOSQE_CQE_SKIP_SUCCESS (the kernel has IORING_FEAT_CQE_SKIP, 5.17).
    skip_close_cqe: bool,
    /// The multishot accept allocates direct descriptors (slots of the ring's sparse file
    /// table): its CQEs carry slot numbers, not fds.
    direct: bool,
    /// `--tls`: the shared config.
    tls: Option<Arc<rustls::ServerConfig>>,
    /// `--tls`: open connections ([`PerFd::Tls`] in `conns`).
    tls_open: usize,
    /// `--tls`: free receive buffers (no SQE points at them).
    recv_bufs: Vec<Box<[u8]>>,
    /// `--tls`: free send buffers (no SQE points at them).
    send_bufs: SendBufs,
    /// `--tls`: scratch for decrypted request bytes.
    plain: Box<[u8]>,
    /// Stamps: where each GETSOCKOPT(SO_PEERNAME) writes its peer's address, and when its
    /// connection's accept was handled (module docs, "What SQEs point to").
    peers: Box<[PeerSlot]>,
    /// Stamps: the slots of `peers` no SQE points at.
    peer_free: Vec<u32>,
    /// Stamps: the kernel runs GETSOCKOPT through the ring (probed at start).
    peer_op: bool,
    /// Stamps: the length of the listener's family's address (16 or [`PEER_BYTES`]): the
    /// kernel refuses (EINVAL) a longer `optlen` than the peer's address has.
    peer_len: u32,
}

/// Stamps: one GETSOCKOPT(SO_PEERNAME)'s answer and its connection's accept time.
#[derive(Clone, Copy)]
struct PeerSlot {
    addr: [u8; PEER_BYTES],
    t_ns: u64,
}

/// What the engine keeps for a connection on a plain descriptor (`Uring::conns`).
#[derive(Default)]
enum PerFd {
    /// Nothing: no connection, or one that needs no state (`close`, `rst`, `greet`).
    #[default]
    None,
    /// `hold`: its PollAdd is in flight.
    Held,
    /// `http`: its PollAdd is in flight; the scan of its request head so far.
    Http(HeadScan),
    /// `--tls`: its one operation is in flight.
    Tls(Box<TlsSlot>),
}

/// `--tls`: one connection's TLS state and the buffer its Recv SQEs write into.
struct TlsSlot {
    tls: TlsConn,
    recv: Box<[u8]>,
}

/// The setup label ([`label`]'s) with `+direct_accept` appended when connections are accepted
/// into the ring's file table.
fn label_direct(label: &'static str, direct: bool) -> &'static str {
    if !direct {
        return label;
    }
    match label {
        "single_issuer+defer_taskrun+cqe_skip_success" => {
            "single_issuer+defer_taskrun+cqe_skip_success+direct_accept"
        }
        "coop_taskrun+cqe_skip_success" => "coop_taskrun+cqe_skip_success+direct_accept",
        "cqe_skip_success" => "cqe_skip_success+direct_accept",
        "single_issuer+defer_taskrun" => "single_issuer+defer_taskrun+direct_accept",
        "coop_taskrun" => "coop_taskrun+direct_accept",
        _ => "direct_accept",
    }
}

/// The setup label with `+cqe_skip_success` appended when lone closes skip their CQE.
fn label(flags: &'static str, skip: bool) -> &'static str {
    match (flags, skip) {
        (_, false) => flags,
        ("single_issuer+defer_taskrun", true) => "single_issuer+defer_taskrun+cqe_skip_success",
        ("coop_taskrun", true) => "coop_taskrun+cqe_skip_success",
        (_, true) => "cqe_skip_success",
    }
}

/// Runs the io_uring engine on the calling (pinned) worker thread until the stop drain is done.
/// Calls `ready` once: `Ok(Some(setup flags))` when accepting, or the setup error.
pub(crate) fn run(ctx: &mut Ctx, ready: impl FnOnce(Ready)) {
    let (ring, flags) = match build_ring() {
        Ok(r) => r,
        Err(source) => {
            return ready(Err(ServerError::Ring {
                cpu: ctx.cpu,
                source,
            }))
        }
    };
    let skip_close_cqe = ring.params().is_feature_skip_cqe_on_success();
    let flags = label(flags, skip_close_cqe);
    let Some(listener) = ctx.listener.as_ref() else {
        return ready(Ok(Some(flags)));
    };
    // Direct descriptors where the mode only closes or sends (no per-fd state, no syscall on the
    // fd outside the ring); registered after pinning, so the table is the worker's node's memory.
    let slots = DIRECT_FILES.min(crate::rlimit::nofile_soft_max()) as u32;
    // Not with steering's SO_INCOMING_CPU samples: a direct descriptor has no fd to getsockopt.
    let direct = ctx.tls.is_none()
        && !ctx.syn_cpu_sample
        && matches!(ctx.mode, Mode::Close | Mode::Rst | Mode::Greet { .. })
        && ring.submitter().register_files_sparse(slots).is_ok();
    let flags = label_direct(flags, direct);
    // Blocking for the multishot accept (it polls by itself); made non-blocking for the final
    // synchronous drain.
    if let Err(source) = listener.set_nonblocking(false) {
        return ready(Err(ServerError::Ring {
            cpu: ctx.cpu,
            source,
        }));
    }
    let listener_fd = std::os::fd::AsRawFd::as_raw_fd(listener);
    let peer_len = match listener.local_addr().ok().and_then(|a| a.as_socket()) {
        Some(std::net::SocketAddr::V4(_)) => 16,
        _ => PEER_BYTES as u32,
    };
    let mut ring = ring;
    let peer_op = probe_getsockopt(&mut ring, listener_fd);
    if !peer_op {
        ctx.shared_slot()
            .stamps_unsupported
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let tls = ctx.tls.clone();
    let mut u = Uring {
        ctx,
        ring,
        listener_fd,
        in_flight: 0,
        accept_armed: false,
        accepting: true,
        backoff_pending: false,
        rearm_after: None,
        backoff_ts: Box::new(types::Timespec::from(BACKOFF)),
        conns: FdTable::new(),
        scratch: vec![MaybeUninit::uninit(); 4096].into_boxed_slice(),
        skip_close_cqe,
        direct,
        tls,
        tls_open: 0,
        recv_bufs: Vec::new(),
        send_bufs: SendBufs::default(),
        plain: vec![0; 4096].into_boxed_slice(),
        peers: vec![
            PeerSlot {
                addr: [0; PEER_BYTES],
                t_ns: 0
            };
            PEER_SLOTS
        ]
        .into_boxed_slice(),
        peer_free: (0..PEER_SLOTS as u32).rev().collect(),
        peer_op,
        peer_len,
    };
    u.arm_accept();
    ready(Ok(Some(flags)));
    u.run_loop();
    u.ctx.fd_table_len = u.conns.len();
}

impl Drop for Uring<'_> {
    /// Explicit drop order: while any SQE that points at memory is in flight (`in_flight` > 0,
    /// module docs "What SQEs point to"), that memory is leaked first, so the kernel never
    /// writes to or reads from freed memory, whether the loop gave up waiting at the stop or
    /// unwound from a panic. Only then do the fields drop, in declaration order: the ring
    /// (closing it cancels what is left), then the buffers and tables, which no SQE points at.
    fn drop(&mut self) {
        if self.in_flight > 0 {
            std::mem::forget(std::mem::replace(&mut self.conns, FdTable::new()));
            std::mem::forget(std::mem::take(&mut self.ctx.greet));
            std::mem::forget(std::mem::replace(
                &mut self.backoff_ts,
                Box::new(types::Timespec::new()),
            ));
            std::mem::forget(std::mem::take(&mut self.peers));
        }
    }
}

impl Uring<'_> {
    fn run_loop(&mut self) {
        let wait_ts = types::Timespec::from(WAIT_MAX);
        let args = types::SubmitArgs::new().timespec(&wait_ts);
        let mut phase = Phase::Running;
        let mut more = false;
        loop {
            // CQEs left from the last turn: submit what the handlers queued, but do not wait.
            let submitted = if more {
                self.ring.submit()
            } else {
                self.ring.submitter().submit_with_args(1, &args)
            };
            if let Err(e) = submitted {
                match e.raw_os_error() {
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN) => {}
                    other => {
                        self.ctx.counts.error(other.unwrap_or(libc::EIO));
                        std::thread::sleep(BACKOFF);
                    }
                }
            }
            more = self.reap();
            let now = Instant::now();
            self.rearm_lost_accept(now);
            self.ctx.maybe_publish(now);
            phase = match phase {
                Phase::Running if self.ctx.draining() => {
                    if let Some(l) = self.ctx.listener.as_ref() {
                        if let Err(e) = crate::drain::block_new_syns(l) {
                            self.ctx.counts.error(e.raw_os_error().unwrap_or(libc::EIO));
                        }
                    }
                    Phase::Grace(now + self.ctx.grace())
                }
                Phase::Grace(until) if now >= until => {
                    self.accepting = false;
                    if self.accept_armed {
                        let cancel = opcode::AsyncCancel::new(ud(ACCEPT, self.listener_fd))
                            .build()
                            .user_data(CANCEL);
                        if !self.push(&[cancel]) {
                            self.accept_armed = false; // cannot happen in practice; do not wait forever
                        }
                    }
                    Phase::Cancelling
                }
                Phase::Cancelling if !self.accept_armed && !self.backoff_pending => {
                    self.final_drain();
                    self.release_held();
                    Phase::Finishing(now + FINISH_MAX)
                }
                Phase::Finishing(_) | Phase::Last(_) if self.in_flight == 0 => break,
                Phase::Finishing(until) if now >= until && self.tls_open > 0 => {
                    // TLS connections whose client went quiet: end their receives.
                    self.cancel_tls();
                    Phase::Last(now + FINISH_MAX)
                }
                // The kernel still holds SQEs that may point at our buffers: `Drop` leaks them.
                Phase::Finishing(until) | Phase::Last(until) if now >= until => break,
                p => p,
            };
        }
    }

    /// Handles the CQEs available now, at most [`TURN_BUDGET`] (in batches, so handlers can push
    /// SQEs); true when it stopped at the budget with CQEs left.
    fn reap(&mut self) -> bool {
        let mut batch = [(0u64, 0i32, 0u32); 128];
        let mut handled = 0;
        while handled < TURN_BUDGET {
            let mut n = 0;
            let room = batch.len().min(TURN_BUDGET - handled);
            for cqe in self.ring.completion().take(room) {
                batch[n] = (cqe.user_data(), cqe.result(), cqe.flags());
                n += 1;
            }
            if n == 0 {
                return false;
            }
            handled += n;
            for &(data, res, flags) in &batch[..n] {
                self.complete(data, res, flags);
            }
        }
        !self.ring.completion().is_empty()
    }

    fn complete(&mut self, data: u64, res: i32, flags: u32) {
        let fd = (data & 0xffff_ffff) as u32 as RawFd;
        match data & KIND_MASK {
            ACCEPT => self.on_accept(res, flags),
            TIMEOUT => {
                self.in_flight -= 1;
                self.backoff_pending = false;
                if self.accepting && !self.accept_armed {
                    self.arm_accept();
                }
            }
            // Only a failed close posts a CQE; it was never counted in flight.
            CLOSE_SKIP => {
                if res < 0 && res != -libc::ECANCELED {
                    self.ctx.counts.error(-res);
                }
            }
            SEND if res >= 0 && res as usize == self.ctx.greet.len() => {
                self.in_flight -= 1;
                self.ctx.counts.served += 1;
            }
            CLOSE | SEND => {
                self.in_flight -= 1;
                if res < 0 && res != -libc::ECANCELED {
                    self.ctx.counts.error(-res);
                }
            }
            POLL => {
                self.in_flight -= 1;
                self.on_poll(fd, res);
            }
            RECV => {
                self.in_flight -= 1;
                let Some(PerFd::Tls(c)) = self.conns.get_mut(fd as usize) else {
                    return;
                };
                if res == -libc::ECANCELED {
                    // Cancelled at the stop (`cancel_tls`): closed, not a failed handshake.
                    self.tls_forget(fd);
                    return self.close(fd);
                }
                let got = match usize::try_from(res) {
                    Ok(n) => Ok(&c.recv[..n.min(c.recv.len())]),
                    Err(_) => Err(-res),
                };
                c.tls
                    .on_recv(got, &self.ctx.greet, &mut self.plain, &mut self.ctx.counts);
                self.tls_next(fd);
            }
            TLS_SEND => {
                self.in_flight -= 1;
                let Some(PerFd::Tls(c)) = self.conns.get_mut(fd as usize) else {
                    return;
                };
                if res == -libc::ECANCELED {
                    self.tls_forget(fd);
                    return self.close(fd);
                }
                let sent = usize::try_from(res).map_err(|_| -res);
                c.tls.on_sent(sent, &mut self.ctx.counts);
                self.tls_next(fd);
            }
            PEER => {
                self.in_flight -= 1;
                self.stamp_end(fd as u32, res);
            }
            TLS_SEND_LAST => {
                // The alert is out (or failed); the linked Close follows. The buffers are free.
                self.in_flight -= 1;
                self.tls_forget(fd);
            }
            _ => self.in_flight -= 1, // CANCEL: ENOENT/EALREADY are fine
        }
    }

    fn on_accept(&mut self, res: i32, flags: u32) {
        if !cqueue::more(flags) {
            self.accept_armed = false;
        }
        let mut backoff = false;
        if res >= 0 {
            self.ctx.counts.accepted += 1;
            if self.direct {
                self.on_direct(res as u32);
            } else {
                // SAFETY: res is the descriptor this accept CQE just handed to this worker, and
                // no SQE names it yet, so it stays open at least until `on_conn` below queues
                // its close, after the borrow's last use.
                self.ctx.syn_cpu(unsafe { BorrowedFd::borrow_raw(res) });
                self.stamp_plain(res);
                self.on_conn(res);
            }
        } else if res != -libc::ECANCELED {
            let errno = -res;
            self.ctx.counts.error(errno);
            if let AcceptFailure::Backoff(emfile) = classify(errno) {
                self.ctx.counts.emfile_backoffs += u64::from(emfile);
                backoff = true;
            }
        }
        if self.accepting && !self.accept_armed && !self.backoff_pending {
            if backoff {
                self.arm_backoff();
            } else {
                self.arm_accept();
            }
        }
    }

    fn arm_accept(&mut self) {
        let e = opcode::AcceptMulti::new(types::Fd(self.listener_fd))
            .allocate_file_index(self.direct)
            // A direct descriptor has no fd to inherit, and the kernel refuses SOCK_CLOEXEC
            // with a file slot (EINVAL, io_uring/net.c io_accept_prep).
            .flags(if self.direct { 0 } else { libc::SOCK_CLOEXEC })
            .build()
            .user_data(ud(ACCEPT, self.listener_fd));
        if self.push(&[e]) {
            self.in_flight -= 1; // tracked by accept_armed instead
            self.accept_armed = true;
            self.rearm_after = None;
        } else {
            self.arm_backoff();
        }
    }

    fn arm_backoff(&mut self) {
        let ts: *const types::Timespec = &*self.backoff_ts;
        let e = opcode::Timeout::new(ts).build().user_data(TIMEOUT);
        self.backoff_pending = self.push(&[e]);
        if !self.backoff_pending {
            // Nothing armed will ever arm the accept again: the loop does, after the back-off.
            self.rearm_after = Some(Instant::now() + BACKOFF);
        }
    }

    /// Arms the accept again if it is lost: accepting, but neither the multishot accept nor a
    /// back-off Timeout is in flight (both their pushes failed), once [`BACKOFF`] has passed.
    /// Called every loop turn, so a worker never stops accepting for good.
    fn rearm_lost_accept(&mut self, now: Instant) {
        if self.accepting
            && !self.accept_armed
            && !self.backoff_pending
            && self.rearm_after.is_none_or(|t| now >= t)
        {
            self.arm_accept();
        }
    }

    /// What the mode says to do with a freshly accepted descriptor.
    fn on_conn(&mut self, fd: RawFd) {
        if self.tls.is_some() {
            return self.tls_start(fd);
        }
        match self.ctx.mode {
            Mode::Close => self.close(fd),
            // The listener's SO_LINGER {on, 0} is inherited (crate::listener::bind_group):
            // this close sends RST.
            Mode::Rst => self.close(fd),
            Mode::Greet { .. } => self.respond(fd),
            Mode::Hold => {
                *self.conns.slot(fd as usize) = PerFd::Held;
                self.poll(fd);
            }
            Mode::Http { .. } => {
                *self.conns.slot(fd as usize) = PerFd::Http(HeadScan::default());
                self.poll(fd);
            }
        }
    }

    /// What the mode says to do with a connection accepted into `slot` of the file table
    /// (`close`, `rst`, `greet`: see [`Uring::direct`]).
    fn on_direct(&mut self, slot: u32) {
        let peer = self.stamp_begin();
        let get = peer.map(|j| self.peer_sqe(Ok(slot), j));
        let pushed = self.push_direct(slot, get);
        if let (false, Some(j)) = (pushed, peer) {
            // Nothing was pushed (the connection is closed): the slot is free again.
            self.peer_free.push(j);
            if let Some(s) = self.ctx.stamps.as_mut() {
                s.full += 1;
            }
        }
    }

    /// [`Self::on_direct`]'s SQEs for `slot`, after `get` (its GETSOCKOPT, hard-linked before
    /// them) when the connection is stamped; false when they could not be pushed (the
    /// connection is then closed at once).
    fn push_direct(&mut self, slot: u32, get: Option<squeue::Entry>) -> bool {
        let get = get.map(|e| e.flags(squeue::Flags::IO_HARDLINK));
        if matches!(self.ctx.mode, Mode::Greet { .. }) {
            let send = opcode::Send::new(
                types::Fixed(slot),
                self.ctx.greet.as_ptr(),
                self.ctx.greet.len() as u32,
            )
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .build()
            .user_data(ud(SEND, slot as RawFd))
            .flags(squeue::Flags::IO_HARDLINK);
            let close = opcode::Close::new(types::Fixed(slot))
                .build()
                .user_data(ud(CLOSE, slot as RawFd));
            let pushed = match get {
                Some(get) => self.push(&[get, send, close]),
                None => self.push(&[send, close]),
            };
            if !pushed {
                self.drop_slot(slot);
            }
            return pushed;
        }
        let e = opcode::Close::new(types::Fixed(slot)).build();
        let e = if self.skip_close_cqe {
            e.user_data(ud(CLOSE_SKIP, slot as RawFd))
                .flags(squeue::Flags::SKIP_SUCCESS)
        } else {
            e.user_data(ud(CLOSE, slot as RawFd))
        };
        let pushed = match get {
            Some(get) => self.push(&[get, e]),
            None => self.push(&[e]),
        };
        if !pushed {
            self.drop_slot(slot);
        } else if self.skip_close_cqe {
            self.in_flight -= 1; // no CQE will say it is done
        }
        pushed
    }

    /// Stamps: when the controller asks for stamps and the kernel can read peers through the
    /// ring, takes a slot of `peers` for the connection just accepted and stamps it with now;
    /// `None` otherwise (no slot free: counted in `Stamps::full`).
    fn stamp_begin(&mut self) -> Option<u32> {
        if !self.peer_op {
            return None;
        }
        let stamps = self.ctx.stamps.as_mut()?;
        let Some(j) = self.peer_free.pop() else {
            stamps.full += 1;
            return None;
        };
        self.peers[j as usize].t_ns = crate::worker::now_ns();
        Some(j)
    }

    /// The GETSOCKOPT(SOL_SOCKET, SO_PEERNAME) of a connection (direct descriptor `slot`, or
    /// plain descriptor `fd`) into slot `j` of `peers`.
    fn peer_sqe(&mut self, conn: Result<u32, RawFd>, j: u32) -> squeue::Entry {
        let addr = self.peers[j as usize].addr.as_mut_ptr().cast();
        let (level, name) = (libc::SOL_SOCKET as u32, libc::SO_PEERNAME as u32);
        match conn {
            Ok(slot) => {
                opcode::GetSockOpt::new(types::Fixed(slot), level, name, addr, self.peer_len)
            }
            Err(fd) => opcode::GetSockOpt::new(types::Fd(fd), level, name, addr, self.peer_len),
        }
        .build()
        .user_data(ud(PEER, j as RawFd))
    }

    /// Stamps: the GETSOCKOPT of plain descriptor `fd`, alone, ahead of whatever the mode
    /// pushes next for it (module docs).
    fn stamp_plain(&mut self, fd: RawFd) {
        let Some(j) = self.stamp_begin() else {
            return;
        };
        let e = self.peer_sqe(Err(fd), j);
        if !self.push(&[e]) {
            self.peer_free.push(j);
            if let Some(s) = self.ctx.stamps.as_mut() {
                s.full += 1;
            }
        }
    }

    /// Stamps: slot `j`'s GETSOCKOPT completed with `res` (the address's length, or an errno):
    /// records the peer's key with the accept's time, and frees the slot.
    fn stamp_end(&mut self, j: u32, res: i32) {
        let Some(slot) = self.peers.get(j as usize).copied() else {
            return;
        };
        self.peer_free.push(j);
        let Some(stamps) = self.ctx.stamps.as_mut() else {
            return;
        };
        match usize::try_from(res)
            .ok()
            .and_then(|n| peer_addr(&slot.addr[..n.min(PEER_BYTES)]))
        {
            Some(addr) => {
                stamps.push_addr(&addr, slot.t_ns);
            }
            None => stamps.no_key += 1,
        }
    }

    /// Closes the connection in `slot` at once (the SQ had no room): updating the slot to -1
    /// drops the table's reference (IORING_REGISTER_FILES_UPDATE).
    fn drop_slot(&mut self, slot: u32) {
        if let Err(e) = self.ring.submitter().register_files_update(slot, &[-1]) {
            self.ctx.counts.error(e.raw_os_error().unwrap_or(libc::EIO));
        }
    }

    /// Writes the greeting / HTTP response (Send, MSG_WAITALL) and then closes (hard link).
    fn respond(&mut self, fd: RawFd) {
        {
            {
                let send = opcode::Send::new(
                    types::Fd(fd),
                    self.ctx.greet.as_ptr(),
                    self.ctx.greet.len() as u32,
                )
                .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
                .build()
                .user_data(ud(SEND, fd))
                .flags(squeue::Flags::IO_HARDLINK);
                let close = opcode::Close::new(types::Fd(fd))
                    .build()
                    .user_data(ud(CLOSE, fd));
                if !self.push(&[send, close]) {
                    close_now(fd);
                }
            }
        }
    }

    /// `--tls`: a new connection gets its [`TlsConn`], a receive buffer and a receive for the
    /// ClientHello.
    fn tls_start(&mut self, fd: RawFd) {
        let Some(cfg) = self.tls.as_ref() else {
            return self.close(fd);
        };
        let http = matches!(self.ctx.mode, Mode::Http { .. });
        let tls = match TlsConn::new(cfg, http, &mut self.send_bufs) {
            Ok(c) => c,
            Err(e) => {
                self.ctx.counts.tls.failed(&e);
                return self.close(fd);
            }
        };
        let recv = self
            .recv_bufs
            .pop()
            .unwrap_or_else(|| vec![0; RECV_BYTES].into_boxed_slice());
        *self.conns.slot(fd as usize) = PerFd::Tls(Box::new(TlsSlot { tls, recv }));
        self.tls_open += 1;
        self.tls_next(fd);
    }

    /// `--tls`: submits what the connection's [`TlsConn::next`] asks for (one operation in
    /// flight per connection, so nothing else touches its buffers until that operation's CQE).
    fn tls_next(&mut self, fd: RawFd) {
        let Some(PerFd::Tls(c)) = self.conns.get_mut(fd as usize) else {
            return self.close(fd);
        };
        let next = c.tls.next();
        let (one, linked) = match next {
            Next::Recv => {
                let e = opcode::Recv::new(types::Fd(fd), c.recv.as_mut_ptr(), c.recv.len() as u32)
                    .build()
                    .user_data(ud(RECV, fd));
                (e, None)
            }
            Next::Send => {
                let b = c.tls.to_send();
                let e = opcode::Send::new(types::Fd(fd), b.as_ptr(), b.len() as u32)
                    .flags(libc::MSG_NOSIGNAL)
                    .build()
                    .user_data(ud(TLS_SEND, fd));
                (e, None)
            }
            Next::SendClose => {
                let b = c.tls.to_send();
                let send = opcode::Send::new(types::Fd(fd), b.as_ptr(), b.len() as u32)
                    .flags(libc::MSG_NOSIGNAL)
                    .build()
                    .user_data(ud(TLS_SEND_LAST, fd))
                    .flags(squeue::Flags::IO_HARDLINK);
                let close = opcode::Close::new(types::Fd(fd))
                    .build()
                    .user_data(ud(CLOSE, fd));
                (send, Some(close))
            }
            Next::Close => {
                self.tls_forget(fd);
                return self.close(fd);
            }
        };
        let pushed = match linked {
            None => self.push(&[one]),
            // The buffers are given back at the Send's CQE (TLS_SEND_LAST).
            Some(close) => self.push(&[one, close]),
        };
        if !pushed {
            self.tls_forget(fd);
            close_now(fd);
        }
    }

    /// `--tls`: drops a connection's state and gives its buffers back to the pools; called only
    /// when no SQE of the connection points at them (its last operation's CQE arrived, or its
    /// SQE was never pushed).
    fn tls_forget(&mut self, fd: RawFd) {
        let Some(slot @ PerFd::Tls(_)) = self.conns.get_mut(fd as usize) else {
            return;
        };
        if let PerFd::Tls(c) = std::mem::take(slot) {
            let TlsSlot { tls, recv } = *c;
            tls.recycle(&mut self.send_bufs);
            self.recv_bufs.push(recv);
            self.tls_open -= 1;
        }
    }

    /// `--tls`, at the end of the stop: cancels the receives of the connections still open
    /// (each then completes with ECANCELED and is closed).
    fn cancel_tls(&mut self) {
        for fd in 0..self.conns.len() {
            if matches!(self.conns.get_mut(fd), Some(PerFd::Tls(_))) {
                let e = opcode::AsyncCancel::new(ud(RECV, fd as RawFd))
                    .build()
                    .user_data(CANCEL);
                let _ = self.push(&[e]);
            }
        }
    }

    fn close(&mut self, fd: RawFd) {
        let e = opcode::Close::new(types::Fd(fd)).build();
        let e = if self.skip_close_cqe {
            e.user_data(ud(CLOSE_SKIP, fd))
                .flags(squeue::Flags::SKIP_SUCCESS)
        } else {
            e.user_data(ud(CLOSE, fd))
        };
        if !self.push(&[e]) {
            close_now(fd);
        } else if self.skip_close_cqe {
            self.in_flight -= 1; // no CQE will say it is done
        }
    }

    fn poll(&mut self, fd: RawFd) {
        let e = opcode::PollAdd::new(types::Fd(fd), POLL_EVENTS)
            .build()
            .user_data(ud(POLL, fd));
        if !self.push(&[e]) {
            self.unhold(fd);
            close_now(fd);
        }
    }

    fn unhold(&mut self, fd: RawFd) {
        if let Some(slot @ (PerFd::Held | PerFd::Http(_))) = self.conns.get_mut(fd as usize) {
            *slot = PerFd::None;
        }
    }

    /// A held connection became readable or hung up.
    fn on_poll(&mut self, fd: RawFd, res: i32) {
        if matches!(self.ctx.mode, Mode::Http { .. }) {
            return self.on_http_poll(fd, res);
        }
        if res >= 0 && res & POLL_GONE == 0 {
            // SAFETY: fd is a connection this worker accepted and holds: its PollAdd just
            // completed and no other SQE names it, so it stays open until this function closes
            // it (a Close SQE, or `close_now`), after the borrow's last use.
            let b = unsafe { BorrowedFd::borrow_raw(fd) };
            let sock = SockRef::from(&b);
            let mut reads = 0;
            loop {
                if reads == READS_PER_POLL {
                    // More data than one turn's share: poll again (it completes at once).
                    return self.poll(fd);
                }
                reads += 1;
                match sock.recv_with_flags(&mut self.scratch, libc::MSG_DONTWAIT) {
                    Ok(0) => break,
                    Ok(_) => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return self.poll(fd),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
        }
        self.unhold(fd);
        self.close(fd);
    }

    /// `Mode::Http`: a connection waiting for its request head became readable (or hung up):
    /// read what arrived; at the end of the head send the response, else poll again. EOF, an
    /// error or a hang-up before the head's end closes it; a head over the bound is counted
    /// `EMSGSIZE` and closed.
    fn on_http_poll(&mut self, fd: RawFd, res: i32) {
        let i = fd as usize;
        if res >= 0 && res & (libc::POLLERR | libc::POLLHUP) as i32 == 0 {
            // SAFETY: fd is a connection this worker accepted, waiting for its request: its
            // PollAdd just completed and no other SQE names it, so it stays open until this
            // function closes it (a Close SQE, `respond`'s linked Close, or `close_now`), after
            // the borrow's last use.
            let b = unsafe { BorrowedFd::borrow_raw(fd) };
            let sock = SockRef::from(&b);
            for reads in 1.. {
                if reads > READS_PER_POLL {
                    // More data than one turn's share (signals): poll again (it completes at once).
                    return self.poll(fd);
                }
                let n = match sock.recv_with_flags(&mut self.scratch, libc::MSG_DONTWAIT) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return self.poll(fd),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                // SAFETY: recv(2) wrote (initialised) the first n bytes of scratch, n <= its
                // length.
                let got =
                    unsafe { std::slice::from_raw_parts(self.scratch.as_ptr().cast::<u8>(), n) };
                let Some(PerFd::Http(scan)) = self.conns.get_mut(i) else {
                    break;
                };
                match scan.feed(got) {
                    Scan::More => {}
                    Scan::End => {
                        self.unhold(fd);
                        return self.respond(fd);
                    }
                    Scan::TooLarge => {
                        self.ctx.counts.error(libc::EMSGSIZE);
                        break;
                    }
                    Scan::Bad => {
                        self.ctx.counts.bad_requests += 1;
                        break;
                    }
                }
            }
        }
        self.unhold(fd);
        self.close(fd);
    }

    /// Accepts what is left in the queue (the multishot accept is gone) for at most
    /// [`crate::drain::FINAL_DRAIN_MAX`], seals the listener and accepts until EAGAIN again (see
    /// [`crate::drain`]), then closes the listener.
    fn final_drain(&mut self) {
        let Some(listener) = self.ctx.listener.take() else {
            return;
        };
        if let Err(e) = listener.set_nonblocking(true) {
            self.ctx.counts.error(e.raw_os_error().unwrap_or(libc::EIO));
            self.count_left(&listener);
            return;
        }
        if self.accept_until_eagain(&listener) {
            match crate::drain::seal(&listener) {
                Ok(()) => {
                    self.accept_until_eagain(&listener);
                }
                Err(e) => self.ctx.counts.error(e.raw_os_error().unwrap_or(libc::EIO)),
            }
        }
    }

    /// Counts what `listener`'s accept queue still holds as left in the queue (reset when it
    /// closes).
    fn count_left(&mut self, listener: &socket2::Socket) {
        self.ctx.counts.left_in_queue +=
            u64::from(crate::drain::accept_queue_len(listener).unwrap_or(0));
    }

    /// Accepts from `listener` until EAGAIN (true) or, counting what is left in the queue, until
    /// a non-transient error or [`crate::drain::FINAL_DRAIN_MAX`] (false).
    fn accept_until_eagain(&mut self, listener: &socket2::Socket) -> bool {
        let until = Instant::now() + crate::drain::FINAL_DRAIN_MAX;
        loop {
            if Instant::now() >= until {
                // The queue kept refilling (the SYN filter is missing): what is left is reset.
                self.count_left(listener);
                return false;
            }
            match listener.accept() {
                Ok((sock, _)) => {
                    self.ctx.counts.accepted += 1;
                    self.ctx.syn_cpu(std::os::fd::AsFd::as_fd(&sock));
                    self.on_conn(sock.into_raw_fd());
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(e) => {
                    let errno = e.raw_os_error().unwrap_or(libc::EIO);
                    self.ctx.counts.error(errno);
                    if classify(errno) != AcceptFailure::Transient {
                        self.count_left(listener);
                        return false;
                    }
                }
            }
        }
    }

    /// Stop: held connections get shutdown(SHUT_RDWR), so their polls complete and close them.
    fn release_held(&mut self) {
        for fd in 0..self.conns.len() {
            if matches!(self.conns.get_mut(fd), Some(PerFd::Held | PerFd::Http(_))) {
                // SAFETY: fd is held: its PollAdd is in flight and the connection is closed only
                // after that poll's CQE (`on_poll`), which is handled on this thread, not during
                // this loop.
                let b = unsafe { BorrowedFd::borrow_raw(fd as RawFd) };
                let _ = SockRef::from(&b).shutdown(std::net::Shutdown::Both);
            }
        }
    }

    /// Pushes `entries` as one group (adjacent in the SQ, as links need), submitting first when
    /// the SQ lacks room. False when there is still no room (the caller then acts synchronously).
    fn push(&mut self, entries: &[squeue::Entry]) -> bool {
        #[cfg(test)]
        if self.ctx.fail_pushes > 0 {
            self.ctx.fail_pushes -= 1;
            return false;
        }
        for _ in 0..4 {
            // SAFETY: each entry points at no memory or at memory that stays valid, in place,
            // until its CQE (module docs, "What SQEs point to"): `ctx.greet`, `backoff_ts` and
            // `peers` live as long as this `Uring`, whose `Drop` leaks them while SQEs are in
            // flight (a slot of `peers` is pointed at by one SQE at a time: taken from
            // `peer_free` until its CQE); a TLS connection's buffers stay in `conns`, untouched,
            // until its one operation's CQE. Each entry is counted in `in_flight` below until its CQE (callers
            // take the multishot accept and skip-success Closes, which point at nothing, out
            // again). Each names the listener or a connection (fd or fixed-file slot) this worker
            // accepted and has not closed.
            let pushed = unsafe { self.ring.submission().push_multiple(entries) };
            if pushed.is_ok() {
                self.in_flight += entries.len();
                return true;
            }
            if self.ring.submit().is_err() {
                std::thread::yield_now();
            }
        }
        false
    }
}

/// The socket address in the first bytes of a `sockaddr_in`/`sockaddr_in6` the kernel wrote
/// (family in host order, port and address in network order); `None` for another family or too
/// few bytes.
fn peer_addr(b: &[u8]) -> Option<std::net::SocketAddr> {
    let family = i32::from(u16::from_ne_bytes([*b.first()?, *b.get(1)?]));
    let port = u16::from_be_bytes([*b.get(2)?, *b.get(3)?]);
    match family {
        libc::AF_INET => {
            let ip: [u8; 4] = b.get(4..8)?.try_into().ok()?;
            Some((std::net::Ipv4Addr::from(ip), port).into())
        }
        libc::AF_INET6 => {
            let ip: [u8; 16] = b.get(8..24)?.try_into().ok()?;
            Some((std::net::Ipv6Addr::from(ip), port).into())
        }
        _ => None,
    }
}

/// Whether the kernel runs IORING_OP_URING_CMD getsockopt on sockets (Linux 6.7): one
/// GETSOCKOPT(SO_TYPE) of the listener through `ring`, waited for. Its CQE is reaped here, so
/// the ring starts empty.
fn probe_getsockopt(ring: &mut IoUring, listener: RawFd) -> bool {
    let mut val = Box::new([0u8; 4]);
    let e = opcode::GetSockOpt::new(
        types::Fd(listener),
        libc::SOL_SOCKET as u32,
        libc::SO_TYPE as u32,
        val.as_mut_ptr().cast(),
        4,
    )
    .build()
    .user_data(0);
    // SAFETY: the SQE points at `val`, boxed; it is freed only after the SQE's CQE has been
    // reaped below, and leaked on every other way out (the SQE may still be in the kernel).
    if unsafe { ring.submission().push(&e) }.is_err() {
        return false;
    }
    let res = match ring.submit_and_wait(1) {
        Ok(_) => ring.completion().next().map(|c| c.result()),
        Err(_) => None,
    };
    if res.is_none() {
        Box::leak(val);
        return false;
    }
    res == Some(4) && i32::from_ne_bytes(*val) == libc::SOCK_STREAM
}

fn close_now(fd: RawFd) {
    // SAFETY: fd is a connection this worker accepted and has not closed, and no SQE that
    // points at its memory names it: none was in flight for it, and the caller's could not be
    // pushed. This is its one close. (A stamp's GETSOCKOPT pushed just before, `stamp_plain`, may
    // still wait unsubmitted in the SQ when even the submits failed: it writes only into its own
    // slot of `peers`, which outlives it, and reads whatever fd holds this number when it runs:
    // EBADF, or at worst another connection's peer, a wrong stamp but no unsound access.)
    drop(unsafe { OwnedFd::from_raw_fd(fd) });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why [`DIRECT_FILES`] is fixed: a registered (sparse) file table cannot grow. If this
    /// starts to fail, the kernel learned to grow one, and the table could start small.
    #[test]
    fn the_registered_file_table_cannot_grow() {
        let Ok(ring) = IoUring::new(8) else {
            return eprintln!("SKIPPED: io_uring unavailable here");
        };
        let s = ring.submitter();
        if let Err(e) = s.register_files_sparse(64) {
            return eprintln!("SKIPPED: no sparse file tables here (needs Linux 5.19): {e}");
        }
        assert_eq!(s.register_files_update(63, &[-1]).unwrap(), 1);
        let past = s.register_files_update(64, &[-1]).unwrap_err();
        assert_eq!(past.raw_os_error(), Some(libc::EINVAL), "{past}");
        let again = s.register_files_sparse(128).unwrap_err();
        assert_eq!(again.raw_os_error(), Some(libc::EBUSY), "{again}");
    }

    /// Issue 32: when both the multishot accept's push and the back-off's push fail, nothing
    /// is armed that would ever re-arm the accept; the loop must notice and arm it again.
    #[test]
    fn a_lost_accept_is_armed_again_by_the_loop() {
        use super::super::testing;
        if let Err(why) = super::super::probe::io_uring() {
            return eprintln!("SKIPPED: io_uring unavailable here: {why}");
        }
        // The first two pushes are the accept's and then its back-off's.
        let w = testing::start(crate::Engine::IoUring, Mode::Close, |ctx| {
            ctx.fail_pushes = 2
        });
        let c = std::net::TcpStream::connect(w.addr).unwrap();
        let live = w.wait_accepted(1, Duration::from_secs(3));
        let ctx = w.stop();
        drop(c);
        assert_eq!(ctx.fail_pushes, 0, "both injected push failures happened");
        assert_eq!(
            live, 1,
            "the worker accepted nothing while it ran: the lost accept was never armed again"
        );
        assert_eq!(ctx.counts.accepted, 1);
        assert_eq!(ctx.counts.errors_total(), 0);
    }

    #[test]
    fn the_setup_label_names_direct_accepts() {
        assert_eq!(
            label_direct("single_issuer+defer_taskrun+cqe_skip_success", true),
            "single_issuer+defer_taskrun+cqe_skip_success+direct_accept"
        );
        assert_eq!(label_direct("none", false), "none");
        // Every label `label` makes keeps its flags when `+direct_accept` is added.
        for flags in ["single_issuer+defer_taskrun", "coop_taskrun", "none"] {
            for skip in [false, true] {
                let l = label(flags, skip);
                let d = label_direct(l, true);
                let want = if l == "none" {
                    "direct_accept".to_string()
                } else {
                    format!("{l}+direct_accept")
                };
                assert_eq!(d, want);
            }
        }
    }

    #[test]
    fn the_setup_label_names_skipped_close_cqes() {
        assert_eq!(
            label("single_issuer+defer_taskrun", true),
            "single_issuer+defer_taskrun+cqe_skip_success"
        );
        assert_eq!(label("coop_taskrun", true), "coop_taskrun+cqe_skip_success");
        assert_eq!(label("none", true), "cqe_skip_success");
        assert_eq!(label("coop_taskrun", false), "coop_taskrun");
    }

    /// What the engine relies on: a Close with IOSQE_CQE_SKIP_SUCCESS that works posts no CQE
    /// (the descriptor is gone afterwards), and one that fails (EBADF) still posts its CQE.
    #[test]
    fn a_skip_success_close_posts_a_cqe_only_when_it_fails() {
        let (mut ring, _) = match build_ring() {
            Ok(r) => r,
            Err(e) => return eprintln!("SKIPPED: io_uring unavailable here: {e}"),
        };
        if !ring.params().is_feature_skip_cqe_on_success() {
            return eprintln!("SKIPPED: kernel lacks IORING_FEAT_CQE_SKIP (needs Linux 5.17)");
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let fd = listener.into_raw_fd();
        let ok = opcode::Close::new(types::Fd(fd))
            .build()
            .user_data(1)
            .flags(squeue::Flags::SKIP_SUCCESS);
        let bad = opcode::Close::new(types::Fd(-1))
            .build()
            .user_data(2)
            .flags(squeue::Flags::SKIP_SUCCESS);
        // SAFETY: the entries point at no memory; fd is ours and not used after this.
        unsafe { ring.submission().push_multiple(&[ok, bad]).unwrap() };
        ring.submit_and_wait(1).unwrap();
        // Give a (wrongly) posted success CQE time to arrive.
        std::thread::sleep(Duration::from_millis(50));
        let _ = ring.submit();
        let cqes: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        assert_eq!(cqes, [(2, -libc::EBADF)]);
        // The successful close did close the listener (its fd number may be reused by a test
        // beside this one, so ask the port instead).
        let e = std::net::TcpStream::connect(addr).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
    }
}
