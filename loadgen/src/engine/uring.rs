//! The io_uring connect engine: one ring per load worker, created on the worker's (pinned)
//! thread; the worker's schedule, slots and accounting are the epoll engine's
//! (`crate::attempt`), only the syscalls differ (see [`super`]).
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
//! direct descriptor 5.15), or with `--close rst` the disconnect that keeps the socket ("Reuse"). A failure of the socket or setsockopt step posts its CQE (a skipped
//! CQE is only skipped on success) and cancels the rest of the chain (`-ECANCELED`,
//! io_uring_enter(2) "IOSQE_IO_LINK"). Without direct descriptors the socket is made with
//! socket(2) and its options with setsockopt(2)/bind(2) (`Worker::prepare`, as the epoll engine
//! does), then the same CONNECT + LINK_TIMEOUT on the plain descriptor and a CLOSE.
//!
//! With `--expect-bytes` or `--close server` the CONNECT's completion pushes `RECV(slot buffer)`
//! (IO_LINK) → `LINK_TIMEOUT(left of the read deadline)`, and each RECV's count goes to the epoll
//! engine's read rules (`Worker::took`) until they end the attempt.
//! With `--http`, the CONNECT's completion pushes `SEND(request, MSG_WAITALL)` (IO_LINK |
//! CQE_SKIP_SUCCESS: only a failed or short SEND posts a CQE; the request counts as written at
//! its RECV's first CQE) →
//! `LINK_TIMEOUT(left of the read deadline)` (IO_LINK | CQE_SKIP_SUCCESS) → `RECV(slot buffer)`
//! (IO_LINK) → `LINK_TIMEOUT` (CQE_SKIP_SUCCESS): a link timeout covers only the request just
//! before it, and the chain goes on past it when that request completes in time. A SEND cut
//! short by its timeout reports the bytes it wrote and cancels the rest. Each RECV's bytes go to the slot's response parser (the epoll
//! engine's, `crate::http`), and while it wants more the next RECV + LINK_TIMEOUT follows.
//! A request over [`LINKED_SEND_MAX`] (a body) goes as two chains side by side, `SEND` →
//! `LINK_TIMEOUT` (its success CQE says the request is written) and `RECV` → `LINK_TIMEOUT`, so a
//! server that answers before the body is in (413) and stops reading is still read; a response
//! complete first cancels the SEND (IORING_OP_ASYNC_CANCEL), whose CQE ends the slot and says how
//! many bytes went out, and the slot's close cancels whichever of the two is still pending.
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
//! `user_data` = kind << 56 | generation << 32 | slot. The generation of a slot moves on every
//! close, so a late CQE of a chain that already ended (a cancelled link timeout, the connect of a
//! chain whose socket step failed) is recognised and ignored. A CONNECT CQE of 0 is a completed
//! handshake; an errno is the attempt's failure class, as connect(2) would give it
//! (ECONNREFUSED, EADDRNOTAVAIL = port exhaustion, ...; ECONNRESET/EPIPE after the handshake,
//! see `crate::attempt::Verdict`); `-ECANCELED` means the link timeout fired (or the stop's
//! cancel): the socket is then asked where it stands, as the epoll engine asks at its deadline,
//! by a second, lone CONNECT on the direct descriptor (0 or EISCONN = the handshake completed,
//! seen past its timeout: `ETIMEDOUT`, counted `completed_after_timeout`; EALREADY = still in
//! SYN-SENT: `ETIMEDOUT`, or abandoned at a stop; `__inet_stream_connect`, net/ipv4/af_inet.c),
//! or by getsockopt(2)/getpeername(2) on a plain socket. (SO_PEERNAME cannot tell: it names
//! the peer of a socket in SYN-SENT too, `inet_getname` with `peer == 2`.)
//!
//! # Waiting
//! io_uring_enter(2) with IORING_ENTER_EXT_ARG and a relative timeout up to the worker's next
//! deadline (5.11; an hrtimer, bounded by the worker's 1 ns timer slack), or with
//! IORING_ENTER_GETEVENTS and a zero timeout when the deadline is within `Pacing::spin_ns`. The
//! ring is IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN (6.1) where the kernel has it:
//! completions are then posted only inside the worker's own io_uring_enter, never by an
//! interrupt on another task.
//!
//! # Memory the kernel reads
//! The `--http` request bytes and the receive buffers live in the ring's struct and are leaked
//! rather than freed when a stop leaves requests in the kernel (`Ring::keep_bufs`).
//! The targets' addresses (copied at CONNECT prep, io_uring/net.c `io_connect_prep`), the link
//! timeout's timespec (copied at prep) and the SO_LINGER value (read when the command runs,
//! inline at submission or at the end of the previous link) all
//! live in the worker, which outlives its ring (the ring is dropped, and its requests cancelled,
//! before them).

use std::os::fd::{AsRawFd, IntoRawFd, RawFd};

use io_uring::{opcode, squeue, types, IoUring, Probe};

use super::UringFeatures;
use crate::attempt::{probe as probe_socket, verdict, Verdict};
use crate::config::{CloseMode, LoadConfig};
use crate::error::LoadError;
use crate::http::Step;
use crate::slot::Phase;
use crate::worker::Worker;

const SEC: u64 = 1_000_000_000;

const K_SOCKET: u64 = 1;
const K_SOCKOPT: u64 = 2;
const K_CONNECT: u64 = 3;
const K_TIMEOUT: u64 = 4;
const K_CLOSE: u64 = 5;
const K_CANCEL: u64 = 6;
const K_PEER: u64 = 7;
const K_SEND: u64 = 8;
const K_RECV: u64 = 9;
/// The cancel of a split SEND whose response came first (retried while it finds nothing).
const K_CANCEL_SEND: u64 = 10;
/// `CONNECT(AF_UNSPEC)`: the disconnect that ends an attempt whose socket is kept (module docs,
/// "Reuse"); skip-success, and of a closed generation when it posts.
const K_DISCONNECT: u64 = 11;

/// What a slot's registered file holds (direct descriptors only).
#[derive(Clone, Copy, PartialEq, Eq)]
enum File {
    /// Nothing (or its close is queued).
    Empty,
    /// A socket of this address family (`AF_INET`/`AF_INET6`) in an attempt.
    Busy(i32),
    /// A socket of this family, disconnected after its attempt and kept for the next.
    Idle(i32),
}

/// Where a slot's `--http` request stands on the ring.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BodySend {
    /// SEND → RECV linked (a request up to [`LINKED_SEND_MAX`]), or no request.
    Linked,
    /// A split SEND pending beside its RECV, of an attempt `measured` or not; `answered`:
    /// the response came complete first and the SEND is being cancelled
    /// ([`Worker::cancel_send`]).
    Open { measured: bool, answered: bool },
    /// The split SEND has completed; the RECV beside it may still be pending.
    Done,
}
const GEN_MASK: u32 = 0x00ff_ffff;

/// CQEs taken from the completion queue per batch (then handled, then the next batch).
const REAP_BATCH: usize = 256;
/// At most this many batches per wait: a turn stays bounded when completions keep coming.
const REAP_BATCHES: usize = 32;
/// How long a stopping worker waits for its cancelled connects to report.
const STOP_WAIT_NS: u64 = 1_000_000_000;
/// `--http`: bytes of a slot's receive buffer (one RECV reads at most this much).
const RECV_BUF: usize = 4096;
/// `--http`: requests up to this many bytes go out as SEND → RECV linked (the RECV issued only
/// once the whole request is written: fewest ring rounds). Longer ones (a body) may not fit the
/// socket's send buffer (tcp_wmem's default 16 KiB, ip-sysctl.rst) while the server answers
/// early (413) and stops reading, so their SEND and RECV run side by side, as the epoll engine
/// reads while it writes.
const LINKED_SEND_MAX: usize = 16 * 1024;

fn ud(kind: u64, gen: u32, slot: usize) -> u64 {
    kind << 56 | u64::from(gen & GEN_MASK) << 32 | (slot as u64 & 0xffff_ffff)
}

/// IORING_OP_ASYNC_CANCEL of slot `i`'s request `kind` of generation `gen`; its own CQE is
/// `answer`'s.
fn cancel(kind: u64, gen: u32, i: usize, answer: u64) -> squeue::Entry {
    opcode::AsyncCancel::new(ud(kind, gen, i))
        .build()
        .user_data(ud(answer, gen, i))
}

/// Builds a ring, with SINGLE_ISSUER + DEFER_TASKRUN (6.1) where the kernel has them; returns
/// whether it has them.
fn build(sq: u32, cq: u32) -> std::io::Result<(IoUring, bool)> {
    match IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(cq)
        .build(sq)
    {
        Ok(r) => Ok((r, true)),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            Ok((IoUring::builder().setup_cqsize(cq).build(sq)?, false))
        }
        Err(e) => Err(e),
    }
}

/// Can the io_uring connect engine run here, and with which features?
///
/// Needs io_uring itself (io_uring_setup(2) fails with EPERM when `kernel.io_uring_disabled` is 2,
/// or 1 without privilege, Linux 6.6, or under a seccomp policy such as Docker's default; ENOSYS
/// without CONFIG_IO_URING), IORING_OP_SOCKET (5.19, the newest op the engine needs; CONNECT,
/// LINK_TIMEOUT, CLOSE, ASYNC_CANCEL are older) and IORING_FEAT_EXT_ARG (5.11). Then probes
/// direct descriptors (a sparse registered file table, 5.19) and the socket commands
/// SOCKET_URING_OP_SETSOCKOPT (6.7) by running it on a scratch socket.
///
/// # Errors
/// A one-line reason for the "fell back to epoll" note.
pub(crate) fn probe() -> Result<UringFeatures, String> {
    let (ring, defer_taskrun) = build(8, 16).map_err(|e| common::uring::setup_failure(&e))?;
    let mut p = Probe::new();
    ring.submitter()
        .register_probe(&mut p)
        .map_err(|e| format!("IORING_REGISTER_PROBE failed ({e}): kernel older than 5.6"))?;
    for (code, name) in [
        (opcode::Socket::CODE, "IORING_OP_SOCKET (Linux 5.19)"),
        (opcode::Connect::CODE, "IORING_OP_CONNECT (Linux 5.5)"),
        (
            opcode::LinkTimeout::CODE,
            "IORING_OP_LINK_TIMEOUT (Linux 5.5)",
        ),
        (opcode::Close::CODE, "IORING_OP_CLOSE (Linux 5.6)"),
    ] {
        if !p.is_supported(code) {
            return Err(format!("the kernel lacks {name}"));
        }
    }
    if !ring.params().is_feature_ext_arg() {
        return Err("the kernel lacks IORING_FEAT_EXT_ARG (Linux 5.11)".into());
    }
    let skip_success = ring.params().is_feature_skip_cqe_on_success();
    let direct_socket = ring.submitter().register_files_sparse(1).is_ok();
    let uring_setsockopt = p.is_supported(opcode::SetSockOpt::CODE) && sockcmds_work(ring);
    Ok(UringFeatures {
        direct_socket,
        uring_setsockopt,
        skip_success,
        defer_taskrun,
    })
}

/// Runs SETSOCKOPT SO_LINGER through `ring` on a scratch socket: true when it succeeds (kernels
/// before 6.7 answer EOPNOTSUPP or EINVAL).
fn sockcmds_work(mut ring: IoUring) -> bool {
    let Ok(s) = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None) else {
        return false;
    };
    let fd = types::Fd(s.as_raw_fd());
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let set = opcode::SetSockOpt::new(
        fd,
        libc::SOL_SOCKET as u32,
        libc::SO_LINGER as u32,
        (&raw const linger).cast(),
        std::mem::size_of::<libc::linger>() as u32,
    )
    .build()
    .user_data(1);
    // SAFETY: `linger` lives until the CQE was reaped below (or the ring is dropped, which
    // cancels what is left, before it goes out of scope).
    if unsafe { ring.submission().push(&set) }.is_err() {
        return false;
    }
    if ring.submit_and_wait(1).is_err() {
        return false;
    }
    let ok = ring
        .completion()
        .any(|c| c.user_data() == 1 && c.result() == 0);
    drop(ring);
    ok
}

/// A worker's ring and what its attempts need from it.
pub(crate) struct Ring {
    ring: IoUring,
    /// Sockets are direct descriptors (slot `i` = registered file `i`).
    direct: bool,
    /// Closes and `--http` SENDs carry IOSQE_CQE_SKIP_SUCCESS.
    skip: bool,
    /// Per slot: its generation (moves at every close).
    gen: Vec<u32>,
    /// Per slot (direct only): what its registered file holds.
    file: Vec<File>,
    /// `--close rst` on direct descriptors: an ended attempt's socket is disconnected and kept
    /// (module docs, "Reuse").
    reuse: bool,
    /// The `AF_UNSPEC` address of the disconnects (copied by the kernel at prep).
    unspec: Box<libc::sockaddr>,
    /// Per slot: its `--http` request's SEND, linked to its RECV or beside it (split: a request
    /// longer than [`LINKED_SEND_MAX`]; the close cancels what is pending first).
    body: Vec<BodySend>,
    /// Per slot: the generation and measured flag of a closed exchange whose split SEND was
    /// still pending: its CQE, stale by then, still says how many bytes went out.
    orphan: Vec<Option<(u32, bool)>>,
    /// The stop has cancelled every request: an ECANCELED connect was cut by it.
    stopping: bool,
    linger: Box<libc::linger>,
    link_timeout: Box<types::Timespec>,
    /// Of each address family, the domain number.
    domains: Vec<i32>,
    /// `--http`, `--expect-bytes`, `--close server`: per slot, [`RECV_BUF`] bytes its RECVs read into (allocated zeroed, so only
    /// the pages of slots in use become resident).
    recv_buf: Box<[u8]>,
    /// Per slot (when it reads), the link timeout of its pending RECV (what is left of the read
    /// phase's deadline; the kernel copies it when the RECV is submitted).
    read_ts: Box<[types::Timespec]>,
    /// `--http`: per target, the request bytes its SENDs read (owned here, beside `recv_buf`,
    /// so both outlive every request that points at them).
    requests: Box<[Box<[u8]>]>,
    /// A stop left requests in the kernel that may still read `requests` or write `recv_buf`:
    /// never free them.
    keep_bufs: bool,
    /// Test hook: every push fails (the SQ refuses entries).
    #[cfg(test)]
    refuse_pushes: bool,
}

impl Drop for Ring {
    fn drop(&mut self) {
        if self.keep_bufs {
            std::mem::forget(std::mem::take(&mut self.recv_buf));
            std::mem::forget(std::mem::take(&mut self.requests));
        }
    }
}

impl Ring {
    /// Sets up worker `cpu`'s ring for `slots` attempts in flight.
    ///
    /// # Errors
    /// [`LoadError::EventLoop`] when io_uring_setup(2) fails.
    pub(crate) fn new(
        cfg: &LoadConfig,
        f: &UringFeatures,
        slots: usize,
        cpu: usize,
        timeout_ns: u64,
    ) -> Result<Ring, LoadError> {
        // Per attempt at most 4 SQEs at its start and one at its end; a turn starts at most
        // START_BUDGET attempts and ends at most a reaped batch of them.
        let sq = 1024;
        let cq = (slots.saturating_mul(4))
            .clamp(4096, 1 << 16)
            .next_power_of_two() as u32;
        let (ring, _) = build(sq, cq).map_err(|source| LoadError::EventLoop {
            cpu,
            what: "io_uring_setup",
            source,
        })?;
        let reads = cfg.reads_after_handshake();
        // A sparse table of one file per slot; if the kernel refuses (e.g. RLIMIT_NOFILE below
        // the slot count) the sockets are plain descriptors.
        let direct = f.uses_direct(cfg)
            && ring
                .submitter()
                .register_files_sparse(slots.min(u32::MAX as usize) as u32)
                .is_ok();
        Ok(Ring {
            ring,
            direct,
            skip: f.skip_success,
            gen: vec![0; slots],
            file: vec![File::Empty; slots],
            reuse: direct && cfg.close == CloseMode::Rst,
            unspec: Box::new(libc::sockaddr {
                sa_family: libc::AF_UNSPEC as libc::sa_family_t,
                sa_data: [0; 14],
            }),
            body: vec![BodySend::Linked; slots],
            orphan: vec![None; slots],
            stopping: false,
            linger: Box::new(libc::linger {
                l_onoff: 1,
                l_linger: 0,
            }),
            link_timeout: Box::new(
                types::Timespec::new()
                    .sec(timeout_ns / SEC)
                    .nsec((timeout_ns % SEC) as u32),
            ),
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
            recv_buf: if reads {
                vec![0; slots * RECV_BUF].into_boxed_slice()
            } else {
                Box::default()
            },
            read_ts: if reads {
                vec![types::Timespec::new(); slots].into_boxed_slice()
            } else {
                Box::default()
            },
            requests: cfg.http.as_ref().map_or_else(Box::default, |req| {
                cfg.targets
                    .iter()
                    .map(|&t| req.encode(t).into_boxed_slice())
                    .collect()
            }),
            keep_bufs: false,
            #[cfg(test)]
            refuse_pushes: false,
        })
    }

    /// Whether this worker's sockets are direct descriptors.
    pub(crate) fn direct(&self) -> bool {
        self.direct
    }

    /// Pushes `entries` (one chain) to the submission queue, submitting what is queued first
    /// when they do not fit.
    fn push(&mut self, entries: &[squeue::Entry]) -> bool {
        #[cfg(test)]
        if self.refuse_pushes {
            return false;
        }
        for _ in 0..2 {
            // SAFETY: every pointer in the entries is to memory the worker owns for the ring's
            // whole life (module docs, "Memory the kernel reads").
            if unsafe { self.ring.submission().push_multiple(entries) }.is_ok() {
                return true;
            }
            if let Err(e) = self.ring.submit() {
                if e.raw_os_error() != Some(libc::EBUSY) {
                    panic!("io_uring_enter (submit) failed: {e}");
                }
            }
        }
        false
    }

    /// Closes slot `i`'s socket through the ring (its plain descriptor `sock`, or its direct
    /// one) and moves its generation on.
    pub(crate) fn close(&mut self, i: usize, sock: Option<socket2::Socket>) {
        let gen = self.gen[i];
        self.gen[i] = gen.wrapping_add(1) & GEN_MASK;
        // A split exchange's RECV (and SEND, while open) may still be pending: cancelled before
        // the close, so none writes the slot's buffer once the slot is reused (an ENOENT CQE,
        // ignored, when it was done). A pending SEND's CQE is then counted as an orphan's.
        let settled = self.body[i] == BodySend::Linked;
        match std::mem::replace(&mut self.body[i], BodySend::Linked) {
            BodySend::Linked => {}
            BodySend::Open { measured, .. } => {
                self.orphan[i] = Some((gen, measured));
                let _ = self.push(&[
                    cancel(K_SEND, gen, i, K_CANCEL_SEND),
                    cancel(K_RECV, gen, i, K_CANCEL),
                ]);
            }
            BodySend::Done => {
                let _ = self.push(&[cancel(K_RECV, gen, i, K_CANCEL)]);
            }
        }
        let close = |e: opcode::Close| e.build().user_data(ud(K_CLOSE, gen, i));
        let entry = if let Some(s) = sock.as_ref() {
            close(opcode::Close::new(types::Fd(s.as_raw_fd())))
        } else {
            match self.file[i] {
                // Nothing of the attempt is pending on the socket: disconnected and kept (not at
                // the stop, whose requests may still be pending and which makes no new attempt).
                File::Busy(domain) if self.reuse && settled && !self.stopping => {
                    self.file[i] = File::Idle(domain);
                    opcode::Connect::new(
                        types::Fixed(i as u32),
                        &raw const *self.unspec,
                        std::mem::size_of::<libc::sockaddr>() as u32,
                    )
                    .build()
                    .user_data(ud(K_DISCONNECT, gen, i))
                }
                File::Busy(_) | File::Idle(_) => {
                    self.file[i] = File::Empty;
                    close(opcode::Close::new(types::Fixed(i as u32)))
                }
                File::Empty => return,
            }
        };
        let entry = if self.skip {
            entry.flags(squeue::Flags::SKIP_SUCCESS)
        } else {
            entry
        };
        // The SQ is submitted whenever it is full, so the push fails only if the kernel refuses
        // to take any. A direct descriptor then stays in the ring's file table (closed with the
        // ring); a plain one is closed with close(2) now, or it would leak.
        let pushed = self.push(&[entry]);
        if let Some(s) = sock {
            if pushed {
                // The queued CLOSE owns the descriptor now.
                let _: RawFd = s.into_raw_fd();
            } else {
                drop(s);
            }
        }
    }

    /// Submits what is queued (the last closes) and waits for nothing.
    pub(crate) fn flush(&mut self) {
        let _ = self.ring.submit();
    }
}

impl Worker<'_> {
    /// The ring (the io_uring engine runs).
    fn ring(&mut self) -> &mut Ring {
        self.uring.as_mut().expect("io_uring engine")
    }

    /// Starts slot `i`'s attempt to target `target` through the ring (accounting done by the
    /// caller, `Worker::start`).
    pub(crate) fn uring_start(&mut self, i: usize, target: usize) {
        let addr = (self.targets[target].as_ptr(), self.targets[target].len());
        let close_rst = self.cfg.close == CloseMode::Rst;
        if self.ring().direct {
            let r = self.ring();
            let gen = r.gen[i];
            let domain = r.domains[target];
            let slot = types::Fixed(i as u32);
            let link = squeue::Flags::IO_LINK;
            let skip = squeue::Flags::SKIP_SUCCESS;
            let connect = opcode::Connect::new(slot, addr.0.cast(), addr.1)
                .build()
                .flags(link)
                .user_data(ud(K_CONNECT, gen, i));
            let timeout = opcode::LinkTimeout::new(&raw const *r.link_timeout)
                .build()
                .flags(skip)
                .user_data(ud(K_TIMEOUT, gen, i));
            if r.reuse && r.file[i] == File::Idle(domain) {
                // The slot's socket, disconnected after its last attempt (module docs,
                // "Reuse"); should the push fail, the slot's close disconnects it again.
                r.file[i] = File::Busy(domain);
                if !r.push(&[connect, timeout]) {
                    return self.fail(i, libc::EBUSY);
                }
                return;
            }
            if let File::Idle(_) = r.file[i] {
                // Kept for the other address family (or reuse is off): closed, a new socket made
                // in its place.
                let close = opcode::Close::new(slot)
                    .build()
                    .flags(if r.skip { skip } else { squeue::Flags::empty() })
                    .user_data(ud(K_CLOSE, gen, i));
                let _ = r.push(&[close]);
            }
            let dest = types::DestinationSlot::try_from_slot_target(i as u32).ok();
            let socket = opcode::Socket::new(domain, libc::SOCK_STREAM, 0)
                .file_index(dest)
                .build()
                .flags(link | skip)
                .user_data(ud(K_SOCKET, gen, i));
            let linger = opcode::SetSockOpt::new(
                slot,
                libc::SOL_SOCKET as u32,
                libc::SO_LINGER as u32,
                (&raw const *r.linger).cast(),
                std::mem::size_of::<libc::linger>() as u32,
            )
            .build()
            .flags(link | skip)
            .user_data(ud(K_SOCKOPT, gen, i));
            r.file[i] = File::Busy(domain);
            let pushed = if close_rst {
                r.push(&[socket, linger, connect, timeout])
            } else {
                r.push(&[socket, connect, timeout])
            };
            if !pushed {
                r.file[i] = File::Empty;
                return self.fail(i, libc::EBUSY);
            }
            return;
        }
        let sock = match socket2::Socket::new(self.domains[target], socket2::Type::STREAM, None) {
            Ok(s) => s,
            Err(e) => return self.fail(i, e.raw_os_error().unwrap_or(0)),
        };
        if let Err(e) = self.prepare(&sock, target) {
            return self.fail(i, e.raw_os_error().unwrap_or(0));
        }
        let fd = types::Fd(sock.as_raw_fd());
        self.slab.get(i).sock = Some(sock);
        let r = self.ring();
        let gen = r.gen[i];
        let chain = [
            opcode::Connect::new(fd, addr.0.cast(), addr.1)
                .build()
                .flags(squeue::Flags::IO_LINK)
                .user_data(ud(K_CONNECT, gen, i)),
            opcode::LinkTimeout::new(&raw const *r.link_timeout)
                .build()
                .flags(squeue::Flags::SKIP_SUCCESS)
                .user_data(ud(K_TIMEOUT, gen, i)),
        ];
        if !r.push(&chain) {
            self.fail(i, libc::EBUSY);
        }
    }

    /// One wait of the loop: submits what is queued, waits for a completion until `target`
    /// (CLOCK_MONOTONIC ns; no wait when it is within `cfg.pacing.spin_ns` of `now`), handles what
    /// completed.
    pub(crate) fn uring_wait(&mut self, target: u64, now: u64) {
        let in_flight = self.slab.in_flight();
        let spin = self.cfg.pacing.spin_ns;
        let r = self.ring();
        let res = if target <= now + spin {
            // Not blocking, so ask for every completion in flight: since Linux 6.13 an
            // io_uring_enter(2) on a DEFER_TASKRUN ring runs at most max(20, min_complete)
            // deferred task-work items per pass (IO_LOCAL_TW_DEFAULT_MAX, io_uring/io_uring.c),
            // and a worker behind its schedule would otherwise leave most of its finished
            // connects unreaped, holding their slots. The zero timeout returns at once.
            let want = in_flight.max(1);
            let ts = types::Timespec::new();
            let args = types::SubmitArgs::new().timespec(&ts);
            r.ring.submitter().submit_with_args(want, &args)
        } else {
            let d = target - now;
            let ts = types::Timespec::new().sec(d / SEC).nsec((d % SEC) as u32);
            let args = types::SubmitArgs::new().timespec(&ts);
            r.ring.submitter().submit_with_args(1, &args)
        };
        match res {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            // io_uring_enter only fails otherwise for bugs (EBADF, EFAULT, EINVAL).
            Err(e) => panic!("io_uring_enter failed: {e}"),
        }
        self.reap();
    }

    /// Handles the completions that are there, at most [`REAP_BATCHES`] batches.
    fn reap(&mut self) {
        let mut batch = [(0u64, 0i32); REAP_BATCH];
        for _ in 0..REAP_BATCHES {
            let mut n = 0;
            for c in self.ring().ring.completion().take(REAP_BATCH) {
                batch[n] = (c.user_data(), c.result());
                n += 1;
            }
            let t = crate::clock::now_ns();
            for &(u, res) in &batch[..n] {
                self.on_cqe(u, res, t);
            }
            if n < REAP_BATCH {
                return;
            }
        }
    }

    /// One completion, seen at `t`.
    fn on_cqe(&mut self, u: u64, res: i32, t: u64) {
        let kind = u >> 56;
        let gen = (u >> 32) as u32 & GEN_MASK;
        let i = (u & 0xffff_ffff) as usize;
        if i < self.slab.capacity() && self.ring().gen[i] != gen {
            self.stale(kind, gen, i, res);
            return;
        }
        if kind == K_CANCEL_SEND {
            return self.cancel_answer(i, res);
        }
        let phase = match kind {
            K_SOCKET | K_SOCKOPT | K_CONNECT | K_PEER => Phase::Connecting,
            K_SEND | K_RECV => Phase::Reading,
            // Link timeouts, closes, cancels.
            _ => return,
        };
        // (A CQE of an older generation went to `stale` above.)
        if i >= self.slab.capacity() || self.slab.get(i).phase != phase {
            // CQEs of a chain that already ended.
            return;
        }
        match kind {
            K_SEND => self.sent(i, t, res),
            K_RECV => self.received(i, t, res),
            K_SOCKET | K_SOCKOPT if res < 0 => {
                if kind == K_SOCKET {
                    self.ring().file[i] = File::Empty;
                }
                self.fail(i, -res);
            }
            K_SOCKET | K_SOCKOPT => {}
            K_CONNECT if res >= 0 => self.connected(i, t, false),
            K_CONNECT if res == -libc::ECANCELED => self.ask_where(i, t),
            K_CONNECT => match verdict(-res, Ok(())) {
                Verdict::ResetAfterHandshake(code) => self.reset_after_handshake(i, t, code),
                _ => self.fail(i, -res),
            },
            _ => self.peer_answer(i, t, res),
        }
    }

    /// Slot `i`'s handshake is done and it reads on (`--http`, `--expect-bytes`, `--close
    /// server`; its read phase's deadline set). With `--http`: resets its exchange and pushes
    /// one chain, SEND of the whole request (MSG_WAITALL: the kernel retries a short send) →
    /// LINK_TIMEOUT → RECV → LINK_TIMEOUT, both timeouts at the deadline (a link timeout covers
    /// only the request just before it, so the SEND has its own: a body the server never reads
    /// must not hold the slot); a request over [`LINKED_SEND_MAX`] as two chains, SEND →
    /// LINK_TIMEOUT beside RECV → LINK_TIMEOUT. Otherwise RECV → LINK_TIMEOUT alone.
    pub(crate) fn uring_read_begin(&mut self, i: usize, t: u64) {
        let target = self.slab.get(i).target as usize;
        if let Some(h) = self.http.as_mut() {
            h.reset_slot(i, target);
        }
        if self.ring().stopping {
            // Completed as the run stopped: closed now, its exchange abandoned (as with epoll).
            return self.stopped_exchange(i);
        }
        if self.http.is_none() {
            return self.push_recv(i, t, None);
        }
        let plain = self.slab.get(i).sock.as_ref().map(AsRawFd::as_raw_fd);
        let measured = self.slab.get(i).measured;
        let r = self.ring();
        let req = &r.requests[target];
        let (ptr, len) = (req.as_ptr(), req.len() as u32);
        let split = req.len() > LINKED_SEND_MAX;
        r.body[i] = if split {
            BodySend::Open {
                measured,
                answered: false,
            }
        } else {
            BodySend::Linked
        };
        let send = match plain {
            Some(fd) => opcode::Send::new(types::Fd(fd), ptr, len),
            None => opcode::Send::new(types::Fixed(i as u32), ptr, len),
        }
        .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
        .build()
        // A SEND that wrote the whole request posts no CQE (one ring round less per
        // connection); the request is then counted at its RECV's first CQE (`received`).
        // Split from its RECV, its success CQE says the request is written.
        .flags(if r.skip && !split {
            squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS
        } else {
            squeue::Flags::IO_LINK
        })
        .user_data(ud(K_SEND, r.gen[i], i));
        self.push_recv(i, t, Some(send));
    }

    /// Pushes slot `i`'s next RECV with its link timeout at the read phase's deadline (seen
    /// from `t`).
    fn push_recv(&mut self, i: usize, t: u64, send: Option<squeue::Entry>) {
        let plain = self.slab.get(i).sock.as_ref().map(AsRawFd::as_raw_fd);
        let r = self.ring();
        let gen = r.gen[i];
        let buf = r.recv_buf[i * RECV_BUF..].as_mut_ptr();
        let recv = match plain {
            Some(fd) => opcode::Recv::new(types::Fd(fd), buf, RECV_BUF as u32),
            None => opcode::Recv::new(types::Fixed(i as u32), buf, RECV_BUF as u32),
        }
        .build()
        .flags(squeue::Flags::IO_LINK)
        .user_data(ud(K_RECV, gen, i));
        self.push_timed(i, t, send, recv);
    }

    /// Pushes `op` (IO_LINK set) of slot `i` linked to a LINK_TIMEOUT at the read phase's
    /// deadline (seen from `t`); the timeout's timespec is the slot's (a slot has one such pair
    /// pending at a time, and the kernel copies it when the pair is submitted).
    fn push_timed(&mut self, i: usize, t: u64, send: Option<squeue::Entry>, op: squeue::Entry) {
        let left = self.slab.get(i).deadline_ns.saturating_sub(t).max(1);
        let r = self.ring();
        let gen = r.gen[i];
        r.read_ts[i] = types::Timespec::new()
            .sec(left / SEC)
            .nsec((left % SEC) as u32);
        let timeout = opcode::LinkTimeout::new(&raw const r.read_ts[i])
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(ud(K_TIMEOUT, gen, i));
        let pushed = match send {
            // SEND → its LINK_TIMEOUT → RECV → its LINK_TIMEOUT: a link timeout covers only
            // the request just before it and, linked itself, lets the chain go on when that
            // request completes in time (both read the same timespec, copied at submission).
            // Split (a long request): SEND → LINK_TIMEOUT and RECV → LINK_TIMEOUT, two chains.
            Some(send) => {
                let mid = timeout.clone().flags(if r.body[i] != BodySend::Linked {
                    squeue::Flags::SKIP_SUCCESS
                } else {
                    squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS
                });
                r.push(&[send, mid, op, timeout])
            }
            None => r.push(&[op, timeout]),
        };
        if !pushed {
            if self.http.is_some() {
                self.http_step(i, Step::Failed(libc::EBUSY));
            } else {
                self.post_fail(i, libc::EBUSY);
            }
        }
    }

    /// The CQE of slot `i`'s SEND: the whole request went out (counted written; the RECV
    /// linked after it runs on; with IOSQE_CQE_SKIP_SUCCESS this CQE is not posted), or it
    /// failed (the RECV is cancelled with it), or `-ECANCELED`: its link timeout fired (the
    /// read phase's deadline: `HTTP ETIMEDOUT`, as the epoll engine counts a request it could
    /// not write in time) or the stop cancelled it. A failed SEND's CQE is posted before the
    /// `-ECANCELED` of the RECV linked after it (the links fail from task work queued when the
    /// head's completion is flushed: `io_free_batch_list` → `io_fail_links`, io_uring/timeout.c),
    /// and it ends the slot, so that RECV's CQE is then ignored by its generation.
    fn sent(&mut self, i: usize, t: u64, res: i32) {
        let (target, measured, deadline) = {
            let s = self.slab.get(i);
            (s.target as usize, s.measured, s.deadline_ns)
        };
        let len = self.ring().requests.get(target).map_or(0, |r| r.len());
        let body = self.ring().body[i];
        if body != BodySend::Linked {
            self.ring().body[i] = BodySend::Done;
        }
        // A MSG_WAITALL send cut part way reports the bytes it did write, not an errno: by its
        // link timeout (at the read deadline), by the stop, or by the connection failing under
        // it (the peer's RST: the socket's error is not in the CQE, and send(2) on the epoll
        // engine reports it as ECONNRESET). Before the deadline it is the last.
        let short = res >= 0 && (res as usize) < len;
        if short {
            // The bytes did go out (the epoll engine counts them as send(2) returns them).
            if let Some(h) = self.http.as_mut() {
                h.mark_partial(i, res as usize, measured);
            }
        }
        if body != BodySend::Linked {
            let written = res >= 0 && !short;
            let answered = matches!(body, BodySend::Open { answered: true, .. });
            if written {
                if let Some(h) = self.http.as_mut() {
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
                self.http_step(i, Step::Finish);
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
        if (cancelled || short) && self.ring().stopping {
            return self.stopped_exchange(i);
        }
        let errno = match res {
            _ if cancelled => libc::ETIMEDOUT,
            _ if short => libc::ECONNRESET,
            r if r < 0 => -r,
            _ => {
                // The RECV linked after it is on its way.
                if let Some(h) = self.http.as_mut() {
                    h.mark_written(i, target, measured);
                }
                return;
            }
        };
        self.http_step(i, Step::Failed(errno));
    }

    /// A CQE of slot `i`'s RECV seen at `t`: bytes (fed to the response parser, then the next
    /// RECV while more is wanted), 0 = the server's FIN, an errno, or `-ECANCELED` = its link
    /// timeout fired (the read phase's deadline, `ETIMEDOUT` as the epoll engine counts it) or
    /// the stop cancelled it.
    fn received(&mut self, i: usize, t: u64, res: i32) {
        let (intended, measured, deadline) = {
            let s = self.slab.get(i);
            (s.intended_ns, s.measured, s.deadline_ns)
        };
        let split = self.ring().body[i] != BodySend::Linked;
        if let (Some(h), false) = (self.http.as_mut(), split) {
            // A RECV CQE of a live linked exchange: its SEND did not fail (a failed SEND's CQE
            // comes first and ends the slot, see `sent`), so the whole request was written.
            let target = self.slab.get(i).target as usize;
            h.mark_written(i, target, measured);
        }
        if res == -libc::ECANCELED && self.ring().stopping {
            return self.stopped_exchange(i);
        }
        if self.http.is_none() {
            // `--expect-bytes` / `--close server`: the epoll engine's rules (`Worker::took`).
            return match res {
                r if r == -libc::ECANCELED => self.post_fail(i, libc::ETIMEDOUT),
                r if r < 0 => self.post_fail(i, -r),
                n => {
                    if self.took(i, t, n as usize) {
                        self.push_recv(i, t, None);
                    }
                }
            };
        }
        let step = if res == -libc::ECANCELED || (res >= 0 && t > deadline) {
            Some(Step::Failed(libc::ETIMEDOUT))
        } else if res < 0 {
            Some(Step::Failed(-res))
        } else {
            let wait_fin = self.cfg.close == CloseMode::Server;
            let (Some(h), Some(r)) = (self.http.as_mut(), self.uring.as_ref()) else {
                return;
            };
            let data = &r.recv_buf[i * RECV_BUF..i * RECV_BUF + res as usize];
            h.consume(i, data, t, intended, measured, wait_fin)
        };
        match step {
            Some(Step::Finish) if split && self.http.as_ref().is_some_and(|h| !h.written(i)) => {
                // Answered before the request was written (413 and the like): the success
                // counted now, the SEND cancelled, the slot ended at its CQE (`sent`), which
                // says how many bytes went out.
                self.http_step(i, Step::Wait);
                self.cancel_send(i);
            }
            Some(step) => {
                self.http_step(i, step);
            }
            None => self.push_recv(i, t, None),
        }
    }

    /// Cancels slot `i`'s split SEND (its response is complete; the SEND's CQE ends the slot).
    fn cancel_send(&mut self, i: usize) {
        let r = self.ring();
        if let BodySend::Open { answered, .. } = &mut r.body[i] {
            *answered = true;
            let _ = r.push(&[cancel(K_SEND, r.gen[i], i, K_CANCEL_SEND)]);
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
    fn stale(&mut self, kind: u64, gen: u32, i: usize, res: i32) {
        if kind == K_CANCEL_SEND && res == -libc::ENOENT {
            if self.ring().orphan[i].is_some_and(|(g, _)| g == gen) {
                let _ = self.ring().push(&[cancel(K_SEND, gen, i, K_CANCEL_SEND)]);
            }
            return;
        }
        if kind == K_DISCONNECT && res < 0 {
            // A disconnect the kernel refused (none does on Linux 6.x: tcp_disconnect returns
            // 0): no socket is kept from now on; the next attempt of the slot, if it already
            // connects on this one, fails with what the kernel says (EISCONN), counted.
            self.ring().reuse = false;
            return;
        }
        if kind != K_SEND {
            return;
        }
        if let Some((g, measured)) = self.ring().orphan[i] {
            if g == gen {
                // Done, whatever it says: no cancel is asked again.
                self.ring().orphan[i] = None;
                if let (Some(h), true) = (self.http.as_mut(), res > 0) {
                    h.count_sent(res as usize, measured);
                }
            }
        }
    }

    /// Slot `i`'s exchange was cut by the stop: abandoned unless its response was complete.
    fn stopped_exchange(&mut self, i: usize) {
        if self.exchange_pending(i) {
            self.abandon(i);
        }
        self.finish(i);
    }

    /// Slot `i`'s connect was cancelled (its link timeout fired, or the stop cancelled it): asks
    /// the socket whether the handshake completed.
    fn ask_where(&mut self, i: usize, t: u64) {
        if let Some(sock) = self.slab.get(i).sock.as_ref() {
            let v = probe_socket(sock);
            return self.settle(i, t, v);
        }
        let target = self.slab.get(i).target as usize;
        let addr = (self.targets[target].as_ptr(), self.targets[target].len());
        let r = self.ring();
        let gen = r.gen[i];
        let e = opcode::Connect::new(types::Fixed(i as u32), addr.0.cast(), addr.1)
            .build()
            .user_data(ud(K_PEER, gen, i));
        if !r.push(&[e]) {
            self.settle(i, t, Verdict::Pending);
        }
    }

    /// The second connect's answer for slot `i` (`__inet_stream_connect`, net/ipv4/af_inet.c,
    /// non-blocking): 0 or EISCONN = the handshake completed; EALREADY = still in SYN-SENT;
    /// another errno = the connect failed (or the peer reset it after the handshake).
    fn peer_answer(&mut self, i: usize, t: u64, res: i32) {
        let v = match -res {
            0 | libc::EISCONN => Verdict::Connected,
            libc::EALREADY => Verdict::Pending,
            e => verdict(e, Ok(())),
        };
        self.settle(i, t, v);
    }

    /// Ends slot `i`'s cancelled connect by where its socket stands: past its timeout (the link
    /// timeout fired) a completed handshake is `ETIMEDOUT` counted `completed_after_timeout` and
    /// a pending one `ETIMEDOUT`; at a stop a completed one in time is a success and a pending
    /// one abandoned (as `Worker::abandon_all` decides for the epoll engine).
    fn settle(&mut self, i: usize, t: u64, v: Verdict) {
        let stopping = self.ring().stopping;
        // The link timeout fired: the attempt is past its timeout whenever we look.
        let late = self.slab.get(i).start_ns + self.timeout_ns + 1;
        let t = if stopping { t } else { t.max(late) };
        match v {
            Verdict::Connected => self.connected(i, t, false),
            Verdict::ResetAfterHandshake(code) => self.reset_after_handshake(i, t, code),
            Verdict::Failed(code) => self.fail(i, code),
            Verdict::Pending if stopping => {
                self.abandon(i);
                self.finish(i);
            }
            Verdict::Pending => self.fail(i, libc::ETIMEDOUT),
        }
    }

    /// The stop: cancels every request in the ring (IORING_ASYNC_CANCEL_ANY, 5.19), then takes
    /// the connects' answers for up to [`STOP_WAIT_NS`]: completed in time = a success, failed =
    /// its errno, cancelled while in SYN-SENT = abandoned. Whatever has not answered by then is
    /// abandoned and closed. So `attempts = successes + failures + abandoned`, as with epoll.
    pub(crate) fn uring_abandon_all(&mut self) {
        let r = self.ring();
        r.stopping = true;
        let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(ud(K_CANCEL, 0, 0));
        r.push(&[cancel]);
        let until = crate::clock::now_ns() + STOP_WAIT_NS;
        loop {
            let now = crate::clock::now_ns();
            if self.slab.in_flight() == 0 || now >= until {
                break;
            }
            self.uring_wait(now + 10_000_000, now);
        }
        if self.slab.in_flight() > 0 {
            // Requests the kernel did not end in time may still read or write our memory.
            self.ring().keep_bufs = true;
        }
        while let Some(i) = self.slab.oldest() {
            if self.slab.get(i).phase == Phase::Reading {
                self.stopped_exchange(i);
                continue;
            }
            self.abandon(i);
            self.finish(i);
        }
        self.ring().flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{SocketAddr, TcpListener};
    use std::time::Duration;

    fn cfg(target: SocketAddr) -> LoadConfig {
        LoadConfig {
            targets: vec![target],
            pattern: crate::config::Pattern::Closed { concurrency: 2 },
            duration: Duration::from_secs(1),
            warmup: Duration::ZERO,
            cpus: vec![0],
            close: CloseMode::Fin,
            sources: vec![],
            connect_timeout: Duration::from_secs(1),
            expect_bytes: None,
            max_in_flight: 2,
            late_threshold: Duration::from_millis(1),
            http: None,
            tls: None,
            engine: crate::engine::LoadEngine::IoUring,
            pacing: crate::config::Pacing::default(),
        }
    }

    /// A plain socket whose CLOSE cannot be pushed (the SQ refuses it) is closed with close(2)
    /// at once: its peer reads the FIN. (The descriptor used to stay open, "with the ring",
    /// and leak.)
    #[test]
    fn a_plain_socket_is_closed_when_its_close_cannot_be_pushed() {
        let f = match probe() {
            Ok(f) => f,
            Err(why) => return eprintln!("io_uring unavailable here, test not run: {why}"),
        };
        testkit::NetNs::run(move |_| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let mut ring = Ring::new(&cfg(addr), &f, 2, 0, 1_000_000_000).unwrap();
            let c =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            c.connect(&socket2::SockAddr::from(addr)).unwrap();
            let (mut peer, _) = l.accept().unwrap();
            peer.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            ring.refuse_pushes = true;
            ring.close(0, Some(c));
            let mut b = [0u8; 1];
            let n = peer
                .read(&mut b)
                .expect("the socket was closed: its FIN arrives");
            assert_eq!(n, 0);
        });
    }
}
