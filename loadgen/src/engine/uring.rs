//! The io_uring connect engine: one ring per load worker, created on the worker's (pinned)
//! thread. This file is the ring ([`Ring`]): the memory its SQEs point to, the only code that
//! builds such SQEs and pushes them (the crate's only `unsafe`), the waits and the reaping, and
//! the probe of what the kernel has ([`probe`]). The engine that drives it, and what each chain
//! of SQEs does, is `driver` ([`Uring`]); the schedule, slots and accounting are the core's
//! (`crate::core`).
//!
//! # Waiting
//! io_uring_enter(2) with IORING_ENTER_EXT_ARG and an absolute timeout (IORING_ENTER_ABS_TIMER,
//! 6.12, CLOCK_MONOTONIC: the ring's default clock) at the worker's next deadline less
//! `Pacing::spin_ns` (an hrtimer, bounded by the worker's 1 ns timer slack). Once that is past
//! the loop spins: within `spin_ns` of the deadline each wait is IORING_ENTER_GETEVENTS with
//! `min_complete` 0 (`Ring::spin`: submits, runs the deferred task work, never sleeps); later
//! than that (behind its schedule) a zero timeout asking for every completion in flight
//! (`Ring::poll`). Absolute, because the same io_uring_enter first submits
//! what is queued, and a loopback CONNECT issued inline runs its whole handshake there (tens of
//! µs): a relative timeout would start only after it, and each start would come that much
//! late. A kernel before 6.12 (EINVAL) gets a submit first, then a relative timeout counted
//! from a fresh clock reading. The
//! ring is IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN (6.1) where the kernel has it:
//! completions are then posted only inside the worker's own io_uring_enter, never by an
//! interrupt on another task. One wait reaps at most [`super::EVENTS_PER_TURN`] completions.
//!
//! # Memory the kernel reads and writes
//! Every pointer an SQE carries points into the ring's own memory (`Mem`, one heap block owned
//! by the [`Ring`], allocated at its start and never moved or freed while the ring lives), and
//! only the functions of this file build such SQEs:
//! - CONNECT: a target's address (`Mem::targets`), or `AF_UNSPEC` (`Mem::unspec`); the kernel
//!   copies it while submitting (`io_connect_prep`, or the inline issue of a chain's head,
//!   io_uring/net.c).
//! - LINK_TIMEOUT: the connect timeout (`Mem::link_timeout`) or a slot's read deadline
//!   (`Mem::read_ts[i]`, rewritten only when the slot's next read is pushed, after the CQE that
//!   ended the last one); copied while submitting (`io_timeout_prep`).
//! - URING_CMD SETSOCKOPT: the SO_LINGER value (`Mem::linger`) or the worker's port slice
//!   (`Mem::port_range`, IP_LOCAL_PORT_RANGE), neither written after the start; read when the
//!   command runs, after the SOCKET before it, before its chain's CONNECT posts.
//! - SEND: a target's request bytes (`Mem::requests`, never written after the start); read
//!   until the SEND completes.
//! - SEND (`--tls`): slot `i`'s TLS output (`Mem::tls_out`, `i * TLS_OUT_BUF..`), the bytes its
//!   TLS client queued, copied in by [`Ring::stage_tls`] just before the push and read until
//!   the SEND completes. Staged only when no SEND of the slot is in flight: a SEND linked before
//!   the slot's RECV (or a part sent alone) is staged again only after the CQE that ends its
//!   chain, which comes after the SEND completed; the last SEND of a connection (an alert or
//!   close_notify before its close) is MSG_DONTWAIT, which the kernel never parks (it sets
//!   REQ_F_NOWAIT, `io_sendmsg_prep`, io_uring/net.c: a send that would block completes with
//!   -EAGAIN instead of waiting for space) and, linked after nothing and without IOSQE_ASYNC,
//!   runs inline in the io_uring_enter(2) that submits it: done before that call returns, so
//!   before any CQE of the slot's next connection (its CONNECT is queued after it), and only
//!   such a CQE stages the buffer again.
//! - RECV: slot `i`'s buffer (`Mem::recv`, `i * RECV_BUF..`), written until the RECV's CQE; the
//!   core reads the bytes only after it. One RECV per slot writes at a time: the slot's next
//!   RECV is pushed after the CQE of its last, or after its cancel (a split exchange closed
//!   with its RECV pending: the close queues the cancel ahead of anything of the slot's next
//!   attempt, the kernel runs it while submitting, before the new RECV, and a cancelled RECV
//!   writes nothing more).
//!
//! Each chain that may read or write `Mem` after its submission ends with exactly one CQE of a
//! kind [`Ring`] counts (its head's failure, or its CONNECT, RECV, split SEND or TLS part:
//! `Ring::live`); the last TLS SEND of a connection is done when its submission returns.
//! Dropping the ring first drains it (`Drop for Ring`): everything still in the kernel is
//! cancelled (IORING_OP_ASYNC_CANCEL, any) and completions are reaped until no counted chain is
//! left, for at most [`STOP_WAIT_NS`]; a chain still in the kernel then leaves `Mem` leaked
//! rather than freed. The ring itself (the fd and its mappings) is dropped before `Mem` (field
//! order of [`Ring`]). Plain descriptors in SQEs are numbers: the kernel holds its own reference
//! to the file from the submission on.

mod driver;
mod probe;

use std::os::fd::{AsRawFd, IntoRawFd, RawFd};

use io_uring::{opcode, squeue, types, EnterFlags, IoUring};
use socket2::{SockAddr, Socket};

pub(crate) use driver::Uring;
use probe::build;
pub(crate) use probe::probe;

use super::UringFeatures;
use crate::config::LoadConfig;
use crate::error::LoadError;

const SEC: u64 = 1_000_000_000;

pub(crate) const K_SOCKET: u64 = 1;
pub(crate) const K_SOCKOPT: u64 = 2;
pub(crate) const K_CONNECT: u64 = 3;
pub(crate) const K_TIMEOUT: u64 = 4;
pub(crate) const K_CLOSE: u64 = 5;
pub(crate) const K_CANCEL: u64 = 6;
pub(crate) const K_PEER: u64 = 7;
/// A `--http` request's SEND linked to its RECV (skip-success: posts only when it fails).
pub(crate) const K_SEND: u64 = 8;
pub(crate) const K_RECV: u64 = 9;
/// The cancel of a split SEND whose response came first (retried while it finds nothing).
pub(crate) const K_CANCEL_SEND: u64 = 10;
/// `CONNECT(AF_UNSPEC)`: the disconnect that ends an attempt whose socket is kept (`driver`
/// docs, "Reuse"); skip-success, and of a closed generation when it posts.
pub(crate) const K_DISCONNECT: u64 = 11;
/// A `--http` request's SEND beside its RECV (a long request: always posts its CQE).
pub(crate) const K_SEND_SPLIT: u64 = 12;
/// `--tls`: the SEND of a slot's TLS output linked before its RECV (skip-success: posts only
/// when it fails or is cut short).
pub(crate) const K_TLS_SEND: u64 = 13;
/// `--tls`: a part of a slot's TLS output longer than [`TLS_OUT_BUF`], sent alone (always
/// posts; the next part or the RECV follows its CQE).
pub(crate) const K_TLS_PART: u64 = 14;
/// `--tls`: the last bytes of a connection (an alert, close_notify) before its close,
/// MSG_DONTWAIT and skip-success; of a closed generation when it posts (module docs).
pub(crate) const K_TLS_LAST: u64 = 15;

const GEN_MASK: u32 = 0x00ff_ffff;

/// How long a stopping worker waits for its cancelled requests to report (the stop, and the
/// ring's drop).
pub(crate) const STOP_WAIT_NS: u64 = 1_000_000_000;
/// `--http`, `--expect-bytes`, `--close server`: bytes of a slot's receive buffer (one RECV
/// reads at most this much).
pub(crate) const RECV_BUF: usize = 4096;
/// `--http`: requests up to this many bytes go out as SEND → RECV linked (the RECV issued only
/// once the whole request is written: fewest ring rounds). Longer ones (a body) may not fit the
/// socket's send buffer (tcp_wmem's default 16 KiB, ip-sysctl.rst) while the server answers
/// early (413) and stops reading, so their SEND and RECV run side by side, as the epoll engine
/// reads while it writes.
pub(crate) const LINKED_SEND_MAX: usize = 16 * 1024;
/// `--tls`: bytes of a slot's TLS output buffer (one SEND writes at most this much; a
/// ClientHello, even with a post-quantum key share, and a Finished with a short request fit).
pub(crate) const TLS_OUT_BUF: usize = 4096;
// A RECV's bytes go whole into the slot's TLS client's input.
const _: () = assert!(RECV_BUF <= crate::tls::INPUT_BYTES);

/// The `user_data` of slot `slot`'s request `kind` of generation `gen`.
pub(crate) fn ud(kind: u64, gen: u32, slot: usize) -> u64 {
    kind << 56 | u64::from(gen & GEN_MASK) << 32 | (slot as u64 & 0xffff_ffff)
}

/// The next generation after `gen`.
pub(crate) fn next_gen(gen: u32) -> u32 {
    gen.wrapping_add(1) & GEN_MASK
}

/// One completion, decoded.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cqe {
    pub kind: u64,
    pub gen: u32,
    pub slot: usize,
    pub res: i32,
}

impl Cqe {
    fn of(u: u64, res: i32) -> Cqe {
        Cqe {
            kind: u >> 56,
            gen: (u >> 32) as u32 & GEN_MASK,
            slot: (u & 0xffff_ffff) as usize,
            res,
        }
    }

    /// The CQE ends a chain that may read or write the ring's memory after its submission
    /// (module docs, "Memory the kernel reads and writes"): the failure of a chain's
    /// skip-success head (SOCKET, SETSOCKOPT, a linked SEND: the rest of the chain is then
    /// cancelled without CQEs), or its CONNECT, RECV, split SEND or TLS part, which always
    /// post. (The last TLS SEND of a connection is of no counted chain: module docs.)
    fn ends_chain(&self) -> bool {
        matches!(
            self.kind,
            K_SOCKET
                | K_SOCKOPT
                | K_CONNECT
                | K_SEND
                | K_RECV
                | K_SEND_SPLIT
                | K_TLS_SEND
                | K_TLS_PART
        )
    }
}

/// The socket an operation acts on: slot `i`'s direct descriptor, or a plain descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sock {
    Fixed(u32),
    Fd(RawFd),
}

/// The request part of a slot's read ([`Ring::push_read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Send {
    /// No request (`--expect-bytes`, `--close server`, or the next RECV of a response).
    None,
    /// The request to this target, linked before the RECV.
    Linked(usize),
    /// The request to this target, as its own chain beside the RECV's.
    Split(usize),
    /// `--tls`: this many bytes of the slot's TLS output ([`Ring::stage_tls`]), linked before
    /// the RECV.
    Tls(usize),
}

/// The memory the ring's SQEs point to (module docs, "Memory the kernel reads and writes").
/// Boxed by [`Ring`]: its fields keep their addresses while the ring lives.
struct Mem {
    targets: Box<[SockAddr]>,
    /// The `AF_UNSPEC` address of the disconnects.
    unspec: libc::sockaddr,
    linger: libc::linger,
    /// The worker's port slice, the IP_LOCAL_PORT_RANGE value (`crate::ports::range_value`).
    port_range: u32,
    link_timeout: types::Timespec,
    /// Per slot (when it reads), the link timeout of its pending read.
    read_ts: Box<[types::Timespec]>,
    /// Per slot, [`RECV_BUF`] bytes its RECVs read into (allocated zeroed, so only the pages of
    /// slots in use become resident).
    recv: Box<[u8]>,
    /// `--http`: per target, the request bytes its SENDs read.
    requests: Box<[Box<[u8]>]>,
    /// `--tls`: per slot, [`TLS_OUT_BUF`] bytes of its TLS client's output its SENDs read
    /// (allocated zeroed, as `recv`).
    tls_out: Box<[u8]>,
}

impl Mem {
    fn empty() -> Mem {
        Mem {
            targets: Box::default(),
            unspec: unspec(),
            linger: libc::linger {
                l_onoff: 1,
                l_linger: 0,
            },
            port_range: 0,
            link_timeout: types::Timespec::new(),
            read_ts: Box::default(),
            recv: Box::default(),
            requests: Box::default(),
            tls_out: Box::default(),
        }
    }
}

fn unspec() -> libc::sockaddr {
    libc::sockaddr {
        sa_family: libc::AF_UNSPEC as libc::sa_family_t,
        sa_data: [0; 14],
    }
}

/// A worker's ring and the memory its requests use.
pub(crate) struct Ring {
    /// Declared first, so dropped before `mem` (after `Drop for Ring` drained it).
    ring: IoUring,
    mem: Box<Mem>,
    /// Chains pushed that may still read or write `mem` (module docs): each ends with exactly
    /// one CQE that [`Cqe::ends_chain`] names.
    live: usize,
    /// Sockets are direct descriptors (slot `i` = registered file `i`).
    direct: bool,
    /// A new direct socket gets the worker's port slice (`Mem::port_range`) before its connect.
    sliced: bool,
    /// Closes and `--http` SENDs carry IOSQE_CQE_SKIP_SUCCESS.
    skip: bool,
    /// Waits take an absolute timeout (IORING_ENTER_ABS_TIMER, 6.12); false after the kernel
    /// refused it (EINVAL).
    abs_timer: bool,
    /// Test hook: every push fails (the SQ refuses entries).
    #[cfg(test)]
    refuse_pushes: bool,
}

impl Drop for Ring {
    fn drop(&mut self) {
        self.drain(STOP_WAIT_NS);
        // Every counted chain ends with one CQE (`Cqe::ends_chain`), and Linux answers the
        // drain's cancels at once: a count left is a bug in the counting.
        debug_assert!(
            self.live == 0,
            "{} chains still counted after the drain",
            self.live
        );
        if self.live > 0 {
            // Requests that did not end in time may still read or write the memory: never free
            // it (the rest of the ring is closed by the field drops).
            Box::leak(std::mem::replace(&mut self.mem, Box::new(Mem::empty())));
        }
    }
}

impl Ring {
    /// Sets up worker `cpu`'s ring for `slots` attempts in flight, its sockets connecting from
    /// `port_range` (the IP_LOCAL_PORT_RANGE value of its slice) when given.
    ///
    /// # Errors
    /// [`LoadError::EventLoop`] when io_uring_setup(2) fails.
    pub(crate) fn new(
        cfg: &LoadConfig,
        f: &UringFeatures,
        slots: usize,
        cpu: usize,
        timeout_ns: u64,
        port_range: Option<u32>,
    ) -> Result<Ring, LoadError> {
        // Per attempt at most 5 SQEs at its start and one at its end; a turn starts at most
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
        let direct = f.uses_direct(cfg, port_range.is_some())
            && ring
                .submitter()
                .register_files_sparse(slots.min(u32::MAX as usize) as u32)
                .is_ok();
        let mem = Mem {
            targets: cfg.targets.iter().map(|&t| SockAddr::from(t)).collect(),
            link_timeout: types::Timespec::new()
                .sec(timeout_ns / SEC)
                .nsec((timeout_ns % SEC) as u32),
            read_ts: if reads {
                vec![types::Timespec::new(); slots].into_boxed_slice()
            } else {
                Box::default()
            },
            recv: if reads {
                vec![0; slots * RECV_BUF].into_boxed_slice()
            } else {
                Box::default()
            },
            requests: cfg.http.as_ref().map_or_else(Box::default, |req| {
                cfg.targets
                    .iter()
                    .map(|&t| req.encode(t).into_boxed_slice())
                    .collect()
            }),
            tls_out: if cfg.tls.is_some() {
                vec![0; slots * TLS_OUT_BUF].into_boxed_slice()
            } else {
                Box::default()
            },
            port_range: port_range.unwrap_or(0),
            ..Mem::empty()
        };
        Ok(Ring {
            ring,
            mem: Box::new(mem),
            live: 0,
            direct,
            sliced: port_range.is_some(),
            skip: f.skip_success,
            abs_timer: true,
            #[cfg(test)]
            refuse_pushes: false,
        })
    }

    /// A ring without slots or targets on `ring` (the probe's scratch ring).
    fn bare(ring: IoUring) -> Ring {
        Ring {
            ring,
            mem: Box::new(Mem::empty()),
            live: 0,
            direct: false,
            sliced: false,
            skip: true,
            abs_timer: true,
            #[cfg(test)]
            refuse_pushes: false,
        }
    }

    /// A lone SETSOCKOPT SO_LINGER {1, 0} on the plain socket `fd` (the probe's).
    #[allow(unsafe_code)]
    fn push_linger(&mut self, fd: RawFd) -> bool {
        let e = opcode::SetSockOpt::new(
            types::Fd(fd),
            libc::SOL_SOCKET as u32,
            libc::SO_LINGER as u32,
            (&raw const self.mem.linger).cast(),
            std::mem::size_of::<libc::linger>() as u32,
        )
        .build()
        .user_data(ud(K_SOCKOPT, 0, 0));
        // SAFETY: SETSOCKOPT points to `mem.linger`; alone, it is a chain its own CQE ends.
        unsafe { self.push(&[e], 1) }
    }

    /// Whether the sockets are direct descriptors.
    pub(crate) fn direct(&self) -> bool {
        self.direct
    }

    /// Pushes `entries` (one or more whole chains) to the submission queue, submitting what is
    /// queued first when they do not fit; false when the kernel takes none (the caller ends the
    /// attempt).
    ///
    /// # Safety
    /// Every pointer in `entries` points into `self.mem` (the only memory that outlives the
    /// requests: module docs, "Memory the kernel reads and writes"), and `chains` counts the
    /// chains among them that end with a CQE [`Cqe::ends_chain`] names.
    #[allow(unsafe_code)]
    unsafe fn push(&mut self, entries: &[squeue::Entry], chains: usize) -> bool {
        #[cfg(test)]
        if self.refuse_pushes {
            return false;
        }
        for _ in 0..2 {
            // SAFETY: the caller's contract: what the entries point to is in `self.mem`, freed
            // only after the ring is drained or leaked (`Drop for Ring`).
            if unsafe { self.ring.submission().push_multiple(entries) }.is_ok() {
                self.live += chains;
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

    /// Pushes SQEs that point to no memory (CLOSE, ASYNC_CANCEL); false when the kernel takes
    /// none.
    #[allow(unsafe_code)]
    fn push_plain(&mut self, entries: &[squeue::Entry]) -> bool {
        // SAFETY: CLOSE and ASYNC_CANCEL carry no pointer (a cancel names its request by
        // user_data); they end no counted chain.
        unsafe { self.push(entries, 0) }
    }

    fn timeout(&self, gen: u32, i: usize, ts: *const types::Timespec) -> squeue::Entry {
        opcode::LinkTimeout::new(ts)
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(ud(K_TIMEOUT, gen, i))
    }

    fn connect(&self, gen: u32, i: usize, sock: Sock, target: usize, kind: u64) -> squeue::Entry {
        let addr = &self.mem.targets[target];
        let (ptr, len) = (addr.as_ptr().cast::<libc::sockaddr>(), addr.len());
        match sock {
            Sock::Fixed(f) => opcode::Connect::new(types::Fixed(f), ptr, len),
            Sock::Fd(fd) => opcode::Connect::new(types::Fd(fd), ptr, len),
        }
        .build()
        .user_data(ud(kind, gen, i))
    }

    /// Slot `i`'s new socket and connect (generation `gen`): SOCKET of `domain` into its
    /// registered file → SETSOCKOPT SO_LINGER {1, 0} when `linger` → SETSOCKOPT
    /// IP_LOCAL_PORT_RANGE (the worker's slice) when the ring is sliced → CONNECT to `target` →
    /// LINK_TIMEOUT (the connect timeout). A socket kept after a disconnect keeps both options.
    #[allow(unsafe_code)]
    pub(crate) fn push_socket_connect(
        &mut self,
        i: usize,
        gen: u32,
        domain: i32,
        target: usize,
        linger: bool,
    ) -> bool {
        let link = squeue::Flags::IO_LINK;
        let skip = squeue::Flags::SKIP_SUCCESS;
        let slot = types::Fixed(i as u32);
        let dest = types::DestinationSlot::try_from_slot_target(i as u32).ok();
        let socket = opcode::Socket::new(domain, libc::SOCK_STREAM, 0)
            .file_index(dest)
            .build()
            .flags(link | skip)
            .user_data(ud(K_SOCKET, gen, i));
        let setsockopt = opcode::SetSockOpt::new(
            slot,
            libc::SOL_SOCKET as u32,
            libc::SO_LINGER as u32,
            (&raw const self.mem.linger).cast(),
            std::mem::size_of::<libc::linger>() as u32,
        )
        .build()
        .flags(link | skip)
        .user_data(ud(K_SOCKOPT, gen, i));
        let range = opcode::SetSockOpt::new(
            slot,
            libc::IPPROTO_IP as u32,
            crate::ports::IP_LOCAL_PORT_RANGE as u32,
            (&raw const self.mem.port_range).cast(),
            std::mem::size_of::<u32>() as u32,
        )
        .build()
        .flags(link | skip)
        .user_data(ud(K_SOCKOPT, gen, i));
        let connect = self
            .connect(gen, i, Sock::Fixed(i as u32), target, K_CONNECT)
            .flags(link);
        let timeout = self.timeout(gen, i, &raw const self.mem.link_timeout);
        // SAFETY: the SETSOCKOPTs point to `mem.linger` and `mem.port_range`, CONNECT to
        // `mem.targets[target]`, LINK_TIMEOUT to `mem.link_timeout`; the chain ends with one
        // CQE: the SOCKET's or a SETSOCKOPT's failure, or the CONNECT's.
        unsafe {
            match (linger, self.sliced) {
                (true, true) => self.push(&[socket, setsockopt, range, connect, timeout], 1),
                (true, false) => self.push(&[socket, setsockopt, connect, timeout], 1),
                (false, true) => self.push(&[socket, range, connect, timeout], 1),
                (false, false) => self.push(&[socket, connect, timeout], 1),
            }
        }
    }

    /// Slot `i`'s connect on an existing socket `sock` (a plain descriptor, or a direct one
    /// kept after a disconnect): CONNECT to `target` → LINK_TIMEOUT (the connect timeout).
    #[allow(unsafe_code)]
    pub(crate) fn push_connect(&mut self, i: usize, gen: u32, sock: Sock, target: usize) -> bool {
        let connect = self
            .connect(gen, i, sock, target, K_CONNECT)
            .flags(squeue::Flags::IO_LINK);
        let timeout = self.timeout(gen, i, &raw const self.mem.link_timeout);
        // SAFETY: CONNECT points to `mem.targets[target]`, LINK_TIMEOUT to
        // `mem.link_timeout`; the chain ends with the CONNECT's CQE.
        unsafe { self.push(&[connect, timeout], 1) }
    }

    /// A second, lone CONNECT on slot `i`'s direct descriptor to `target`: its answer says
    /// where the socket stands (`driver` docs, "Completions").
    #[allow(unsafe_code)]
    pub(crate) fn push_peer(&mut self, i: usize, gen: u32, target: usize) -> bool {
        let e = self.connect(gen, i, Sock::Fixed(i as u32), target, K_PEER);
        // SAFETY: CONNECT points to `mem.targets[target]`, copied while it is submitted; it is
        // of no counted chain.
        unsafe { self.push(&[e], 0) }
    }

    /// `CONNECT(fixed i, AF_UNSPEC)`, skip-success: slot `i`'s socket disconnected and kept
    /// (`driver` docs, "Reuse").
    #[allow(unsafe_code)]
    pub(crate) fn push_disconnect(&mut self, i: usize, gen: u32) -> bool {
        let e = opcode::Connect::new(
            types::Fixed(i as u32),
            &raw const self.mem.unspec,
            std::mem::size_of::<libc::sockaddr>() as u32,
        )
        .build()
        .flags(self.skip_flag())
        .user_data(ud(K_DISCONNECT, gen, i));
        // SAFETY: CONNECT points to `mem.unspec`, copied while it is submitted; it is of no
        // counted chain.
        unsafe { self.push(&[e], 0) }
    }

    fn skip_flag(&self) -> squeue::Flags {
        if self.skip {
            squeue::Flags::SKIP_SUCCESS
        } else {
            squeue::Flags::empty()
        }
    }

    /// CLOSE of slot `i`'s direct descriptor (skip-success).
    pub(crate) fn push_close_fixed(&mut self, i: usize, gen: u32) -> bool {
        let e = opcode::Close::new(types::Fixed(i as u32))
            .build()
            .flags(self.skip_flag())
            .user_data(ud(K_CLOSE, gen, i));
        self.push_plain(&[e])
    }

    /// Closes slot `i`'s plain socket `sock` through the ring (a CLOSE, skip-success, owns the
    /// descriptor from its push on); when the CLOSE cannot be pushed, with close(2) at once, so
    /// the descriptor never leaks.
    pub(crate) fn close_plain(&mut self, i: usize, gen: u32, sock: Socket) {
        let e = opcode::Close::new(types::Fd(sock.as_raw_fd()))
            .build()
            .flags(self.skip_flag())
            .user_data(ud(K_CLOSE, gen, i));
        if self.push_plain(&[e]) {
            // The queued CLOSE closes it.
            let _: RawFd = sock.into_raw_fd();
        } else {
            drop(sock);
        }
    }

    /// IORING_OP_ASYNC_CANCEL of slot `i`'s requests of generation `gen`: for each
    /// `(kind, answer)`, the request `kind`, its own CQE of kind `answer`.
    pub(crate) fn push_cancels(&mut self, i: usize, gen: u32, which: &[(u64, u64)]) -> bool {
        let mut entries = [opcode::Nop::new().build(), opcode::Nop::new().build()];
        let n = which.len().min(entries.len());
        for (e, &(kind, answer)) in entries.iter_mut().zip(which) {
            *e = opcode::AsyncCancel::new(ud(kind, gen, i))
                .build()
                .user_data(ud(answer, gen, i));
        }
        self.push_plain(&entries[..n])
    }

    /// Cancels every request in the ring (IORING_ASYNC_CANCEL_ANY, 5.19).
    pub(crate) fn push_cancel_all(&mut self) -> bool {
        let e = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(ud(K_CANCEL, 0, 0));
        self.push_plain(&[e])
    }

    /// Slot `i`'s next read (generation `gen`) on `sock`: `RECV(slot buffer)` → LINK_TIMEOUT
    /// `left_ns` from now (the read phase's deadline), after a SEND (MSG_NOSIGNAL |
    /// MSG_WAITALL) → LINK_TIMEOUT of the request when `send` is [`Send::Linked`] or of the
    /// slot's staged TLS output when [`Send::Tls`], or beside its own SEND → LINK_TIMEOUT chain
    /// when [`Send::Split`] (module docs, "One attempt").
    #[allow(unsafe_code)]
    pub(crate) fn push_read(
        &mut self,
        i: usize,
        gen: u32,
        sock: Sock,
        left_ns: u64,
        send: Send,
    ) -> bool {
        let timeout = self.read_timeout(i, gen, left_ns);
        let buf = self.mem.recv[i * RECV_BUF..].as_mut_ptr();
        let recv = match sock {
            Sock::Fixed(f) => opcode::Recv::new(types::Fixed(f), buf, RECV_BUF as u32),
            Sock::Fd(fd) => opcode::Recv::new(types::Fd(fd), buf, RECV_BUF as u32),
        }
        .build()
        .flags(squeue::Flags::IO_LINK)
        .user_data(ud(K_RECV, gen, i));
        let (ptr, len, split, kind) = match send {
            Send::None => {
                // SAFETY: RECV points to slot `i`'s part of `mem.recv` (no other RECV of the
                // slot writes it: module docs), LINK_TIMEOUT to `mem.read_ts[i]`; the chain ends
                // with the RECV's CQE.
                return unsafe { self.push(&[recv, timeout], 1) };
            }
            Send::Linked(t) | Send::Split(t) => {
                let req = &self.mem.requests[t];
                let split = matches!(send, Send::Split(_));
                let kind = if split { K_SEND_SPLIT } else { K_SEND };
                (req.as_ptr(), req.len() as u32, split, kind)
            }
            Send::Tls(n) => {
                let out = &self.mem.tls_out[i * TLS_OUT_BUF..(i + 1) * TLS_OUT_BUF];
                (out.as_ptr(), n.min(TLS_OUT_BUF) as u32, false, K_TLS_SEND)
            }
        };
        let send = match sock {
            Sock::Fixed(f) => opcode::Send::new(types::Fixed(f), ptr, len),
            Sock::Fd(fd) => opcode::Send::new(types::Fd(fd), ptr, len),
        }
        .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
        .build();
        if split {
            // SEND → its LINK_TIMEOUT and RECV → its LINK_TIMEOUT, two chains (both read the
            // same timespec, copied at submission).
            let send = send
                .flags(squeue::Flags::IO_LINK)
                .user_data(ud(kind, gen, i));
            // SAFETY: SEND points to `mem.requests[target]`, RECV to slot `i`'s part of
            // `mem.recv`, both LINK_TIMEOUTs to `mem.read_ts[i]`; two chains, ended by the
            // SEND's CQE and the RECV's.
            return unsafe { self.push(&[send, timeout.clone(), recv, timeout], 2) };
        }
        // A SEND that wrote the whole request posts no CQE (one ring round less per
        // connection); the request is then counted at its RECV's first CQE. SEND → its
        // LINK_TIMEOUT → RECV → its LINK_TIMEOUT: a link timeout covers only the request just
        // before it and, linked itself, lets the chain go on when that request completes in time.
        let send = send
            .flags(if self.skip {
                squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS
            } else {
                squeue::Flags::IO_LINK
            })
            .user_data(ud(kind, gen, i));
        let mid = timeout
            .clone()
            .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS);
        // SAFETY: SEND points to `mem.requests[target]` (never written after the start) or,
        // with TLS, to slot `i`'s part of `mem.tls_out` (staged before this push and not again
        // until this chain's CQE: module docs), RECV to slot `i`'s part of `mem.recv`, both
        // LINK_TIMEOUTs to `mem.read_ts[i]`; one chain, ended by the SEND's failure
        // (skip-success: the rest is then cancelled without CQEs) or the RECV's CQE.
        unsafe { self.push(&[send, mid, recv, timeout], 1) }
    }

    /// Slot `i`'s read deadline, `left_ns` from now, written to `mem.read_ts[i]` (its last
    /// chain has ended: nothing of the kernel reads it), as a LINK_TIMEOUT SQE pointing there.
    fn read_timeout(&mut self, i: usize, gen: u32, left_ns: u64) -> squeue::Entry {
        let left = left_ns.max(1);
        self.mem.read_ts[i] = types::Timespec::new()
            .sec(left / SEC)
            .nsec((left % SEC) as u32);
        let ts = &raw const self.mem.read_ts[i];
        self.timeout(gen, i, ts)
    }

    /// `--tls`: copies the first bytes of `out` (at most [`TLS_OUT_BUF`]) into slot `i`'s TLS
    /// output, for its next SEND; how many. Only while no SEND of the slot is in flight (module
    /// docs, "Memory the kernel reads and writes"): after the CQE that ended its last chain.
    pub(crate) fn stage_tls(&mut self, i: usize, out: &[u8]) -> usize {
        let n = out.len().min(TLS_OUT_BUF);
        self.mem.tls_out[i * TLS_OUT_BUF..i * TLS_OUT_BUF + n].copy_from_slice(&out[..n]);
        n
    }

    /// `--tls`: SEND of the first `n` staged bytes of slot `i`'s TLS output alone (MSG_WAITALL)
    /// → LINK_TIMEOUT `left_ns` from now, when more output follows it; its CQE always posts.
    #[allow(unsafe_code)]
    pub(crate) fn push_tls_part(
        &mut self,
        i: usize,
        gen: u32,
        sock: Sock,
        n: usize,
        left_ns: u64,
    ) -> bool {
        let timeout = self.read_timeout(i, gen, left_ns);
        let send = self
            .tls_send(i, sock, n, libc::MSG_WAITALL)
            .flags(squeue::Flags::IO_LINK)
            .user_data(ud(K_TLS_PART, gen, i));
        // SAFETY: SEND points to slot `i`'s part of `mem.tls_out` (staged before this push and
        // not again until this chain's CQE), LINK_TIMEOUT to `mem.read_ts[i]`; the chain ends
        // with the SEND's CQE.
        unsafe { self.push(&[send, timeout], 1) }
    }

    /// `--tls`: SEND of the first `n` staged bytes of slot `i`'s TLS output (its alert or
    /// close_notify), MSG_DONTWAIT and skip-success, just before the slot's close is queued.
    #[allow(unsafe_code)]
    pub(crate) fn push_tls_last(&mut self, i: usize, gen: u32, sock: Sock, n: usize) -> bool {
        let send = self
            .tls_send(i, sock, n, libc::MSG_DONTWAIT)
            .flags(self.skip_flag())
            .user_data(ud(K_TLS_LAST, gen, i));
        // SAFETY: SEND points to slot `i`'s part of `mem.tls_out`, staged before this push; a
        // lone MSG_DONTWAIT SEND runs inline in the io_uring_enter(2) that submits it and never
        // waits (module docs), so it is done reading before the slot's next connection has a
        // CQE, which alone stages the buffer again. It is of no counted chain.
        unsafe { self.push(&[send], 0) }
    }

    /// A SEND of the first `n` bytes of slot `i`'s TLS output on `sock` with `flags` (and
    /// MSG_NOSIGNAL).
    fn tls_send(&self, i: usize, sock: Sock, n: usize, flags: i32) -> squeue::Entry {
        let out = &self.mem.tls_out[i * TLS_OUT_BUF..(i + 1) * TLS_OUT_BUF];
        let (ptr, len) = (out.as_ptr(), n.min(TLS_OUT_BUF) as u32);
        match sock {
            Sock::Fixed(f) => opcode::Send::new(types::Fixed(f), ptr, len),
            Sock::Fd(fd) => opcode::Send::new(types::Fd(fd), ptr, len),
        }
        .flags(libc::MSG_NOSIGNAL | flags)
        .build()
    }

    /// The first `n` bytes slot `i`'s last RECV read (after its CQE).
    pub(crate) fn received(&self, i: usize, n: usize) -> &[u8] {
        &self.mem.recv[i * RECV_BUF..i * RECV_BUF + n.min(RECV_BUF)]
    }

    /// The length of the request to `target`, bytes.
    pub(crate) fn request_len(&self, target: usize) -> usize {
        self.mem.requests.get(target).map_or(0, |r| r.len())
    }

    /// Submits what is queued and waits for a completion until `spin_ns` before `target`
    /// (CLOCK_MONOTONIC ns); no wait when that is not after `now`: a spin pass within `spin_ns`
    /// of `target`, else (behind) a poll asking for up to `in_flight` (module docs, "Waiting").
    /// For a spin pass with nothing queued to submit (one that may find nothing to do), the
    /// thread's on-CPU time when it began ([`common::threadcpu::run_ns_now`], read only then:
    /// a pass that submits a CONNECT does not pay the system call).
    pub(crate) fn wait(
        &mut self,
        target: u64,
        now: u64,
        spin_ns: u64,
        in_flight: usize,
    ) -> Option<u64> {
        let wake = target.saturating_sub(spin_ns);
        let mut idle = None;
        let res = if wake <= now && now < target.saturating_add(spin_ns) {
            // Spinning to a start (or just reached it): never sleep.
            if self.ring.submission().is_empty() {
                idle = Some(common::threadcpu::run_ns_now());
            }
            self.spin()
        } else if wake <= now {
            self.poll(in_flight)
        } else if self.abs_timer {
            let ts = types::Timespec::new()
                .sec(wake / SEC)
                .nsec((wake % SEC) as u32);
            let args = types::SubmitArgs::new().timespec(&ts);
            match self
                .ring
                .submitter()
                .submit_with_args_and_flags(1, &args, EnterFlags::ABS_TIMER)
            {
                // Before 6.12: refused before anything was submitted (an unknown enter flag).
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    self.abs_timer = false;
                    return self.wait(target, now, spin_ns, in_flight);
                }
                r => r,
            }
        } else {
            // A relative timeout starts after the submission: submit first, count from now.
            let _ = self.ring.submit();
            let now = crate::clock::now_ns();
            if wake <= now {
                self.poll(in_flight)
            } else {
                let d = wake - now;
                let ts = types::Timespec::new().sec(d / SEC).nsec((d % SEC) as u32);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
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
        idle
    }

    /// One pass of the spin before a start: submits what is queued and runs what deferred task
    /// work there is (IORING_ENTER_GETEVENTS with `min_complete` 0: at most
    /// max(20, 0) items since Linux 6.13, the rest on the next pass), never sleeping. (The
    /// zero-timeout [`Self::poll`] asks for `in_flight` completions; with fewer ready it arms an
    /// already expired hrtimer and sleeps until its interrupt — a wake-up round trip, 10 µs and
    /// more in a VM, that a spin is there to avoid.)
    #[allow(unsafe_code)]
    fn spin(&mut self) -> std::io::Result<usize> {
        let to_submit = self.ring.submission().len() as u32;
        // SAFETY: no argument is passed (`None`: a null pointer of size 0, and no
        // IORING_ENTER_EXT_ARG in the flags), so the kernel reads no memory of this call; the
        // SQEs it submits point into `mem` as the module docs state, like every submission.
        unsafe {
            self.ring.submitter().enter::<libc::sigset_t>(
                to_submit,
                0,
                EnterFlags::GETEVENTS.bits(),
                None,
            )
        }
    }

    /// Submits what is queued and reaps without blocking (a zero timeout), asking for every
    /// completion in flight: since Linux 6.13 an io_uring_enter(2) on a DEFER_TASKRUN ring runs
    /// at most max(20, min_complete) deferred task-work items per pass
    /// (IO_LOCAL_TW_DEFAULT_MAX, io_uring/io_uring.c), and a worker behind its schedule would
    /// otherwise leave most of its finished connects unreaped, holding their slots.
    fn poll(&mut self, in_flight: usize) -> std::io::Result<usize> {
        let want = in_flight.max(1);
        let ts = types::Timespec::new();
        let args = types::SubmitArgs::new().timespec(&ts);
        self.ring.submitter().submit_with_args(want, &args)
    }

    /// Takes the completions that are there into `out` (at most its length); how many.
    pub(crate) fn reap(&mut self, out: &mut [Cqe]) -> usize {
        let mut n = 0;
        for c in self.ring.completion().take(out.len()) {
            let cqe = Cqe::of(c.user_data(), c.result());
            if cqe.ends_chain() {
                self.live = self.live.saturating_sub(1);
            }
            out[n] = cqe;
            n += 1;
        }
        n
    }

    /// Submits what is queued (the last closes) and waits for nothing.
    pub(crate) fn submit(&mut self) {
        let _ = self.ring.submit();
    }

    /// Cancels what is in the kernel and reaps completions until no counted chain is left or
    /// `bound_ns` passed.
    fn drain(&mut self, bound_ns: u64) {
        self.submit();
        if self.live == 0 {
            return;
        }
        self.push_cancel_all();
        let until = crate::clock::now_ns() + bound_ns;
        let mut batch = [Cqe::default(); 64];
        loop {
            while self.reap(&mut batch) > 0 {}
            let now = crate::clock::now_ns();
            if self.live == 0 || now >= until {
                return;
            }
            self.wait(now + 10_000_000, now, 0, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CloseMode;
    use std::io::Read;
    use std::net::{SocketAddr, TcpListener};
    use std::time::Duration;

    fn cfg(target: SocketAddr) -> LoadConfig {
        LoadConfig {
            max_in_flight: 2,
            engine: crate::config::LoadEngine::IoUring,
            ..crate::config::for_test(
                target,
                crate::config::Pattern::Closed { concurrency: 2 },
                CloseMode::Fin,
            )
        }
    }

    /// Whether io_uring runs here; prints why not (the test then checks nothing).
    fn uring() -> Option<UringFeatures> {
        match probe() {
            Ok(f) => Some(f),
            Err(why) => {
                eprintln!("io_uring unavailable here, test not run: {why}");
                None
            }
        }
    }

    /// A wait with nothing to complete returns at its deadline less the spin, never before,
    /// with the absolute timeout (6.12) and with the relative one a kernel without it gets
    /// (submit first, then a timeout from a fresh reading); a deadline within the spin returns
    /// at once (a poll). Not a timing target: only "not early" is asserted.
    #[test]
    fn a_wait_ends_no_earlier_than_its_deadline_less_the_spin_with_either_timeout() {
        let Some(f) = uring() else { return };
        testkit::NetNs::run(move |_| {
            let addr = "127.0.0.1:9".parse().unwrap();
            let mut ring = Ring::new(&cfg(addr), &f, 2, 0, 1_000_000_000, None).unwrap();
            for abs in [true, false] {
                ring.abs_timer = abs;
                let now = crate::clock::now_ns();
                let (target, spin) = (now + 3_000_000, 1_000_000);
                ring.wait(target, now, spin, 0);
                let woke = crate::clock::now_ns();
                assert!(
                    woke >= target - spin,
                    "abs {abs}: woke {} ns early",
                    target - spin - woke
                );
                // 900 ms away, within a 1 s spin: a poll, back long before the deadline.
                let now = crate::clock::now_ns();
                ring.wait(now + 900_000_000, now, 1_000_000_000, 0);
                assert!(
                    crate::clock::now_ns() < now + 900_000_000,
                    "abs {abs}: a deadline within the spin is a poll"
                );
            }
        });
    }

    /// A plain socket whose CLOSE cannot be pushed (the SQ refuses it) is closed with close(2)
    /// at once: its peer reads the FIN. (The descriptor used to stay open, "with the ring",
    /// and leak.)
    #[test]
    fn a_plain_socket_is_closed_when_its_close_cannot_be_pushed() {
        let Some(f) = uring() else { return };
        testkit::NetNs::run(move |_| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let mut ring = Ring::new(&cfg(addr), &f, 2, 0, 1_000_000_000, None).unwrap();
            let c = Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            c.connect(&SockAddr::from(addr)).unwrap();
            let (mut peer, _) = l.accept().unwrap();
            peer.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            ring.refuse_pushes = true;
            ring.close_plain(0, 0, c);
            let mut b = [0u8; 1];
            let n = peer
                .read(&mut b)
                .expect("the socket was closed: its FIN arrives");
            assert_eq!(n, 0);
        });
    }

    /// The chains the ring counts end with exactly one counted CQE, whichever way they end: a
    /// connect refused (its CONNECT's CQE), a socket step that fails (its own CQE; the rest of
    /// the chain is cancelled without CQEs), a read whose link timeout fires (its RECV's CQE).
    /// So a drained ring has nothing left and frees its memory.
    #[test]
    fn every_counted_chain_ends_with_one_counted_cqe() {
        let Some(f) = uring() else { return };
        testkit::NetNs::run(move |_| {
            let closed = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap();
            let mut ring = Ring::new(&cfg(closed), &f, 2, 0, 1_000_000_000, None).unwrap();
            let reap_all = |ring: &mut Ring| {
                let mut got = Vec::new();
                let until = crate::clock::now_ns() + 2_000_000_000;
                while ring.live > 0 && crate::clock::now_ns() < until {
                    let now = crate::clock::now_ns();
                    ring.wait(now + 10_000_000, now, 0, 1);
                    let mut b = [Cqe::default(); 16];
                    let n = ring.reap(&mut b);
                    got.extend_from_slice(&b[..n]);
                }
                got
            };
            // A plain socket's connect, refused.
            let s = Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            assert!(ring.push_connect(0, 0, Sock::Fd(s.as_raw_fd()), 0));
            assert_eq!(ring.live, 1);
            let got = reap_all(&mut ring);
            assert_eq!(ring.live, 0, "{got:?}");
            assert!(got
                .iter()
                .any(|c| c.kind == K_CONNECT && c.res == -libc::ECONNREFUSED));
            if ring.direct() {
                // A SOCKET of a family that does not exist fails; its CONNECT never posts.
                assert!(ring.push_socket_connect(1, 0, 12345, 0, f.uring_setsockopt));
                let got = reap_all(&mut ring);
                assert_eq!(ring.live, 0, "{got:?}");
                assert!(got.iter().any(|c| c.kind == K_SOCKET && c.res < 0));
                assert!(!got.iter().any(|c| c.kind == K_CONNECT), "{got:?}");
            }
            // A read on a connected socket that stays silent: its link timeout ends it.
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let mut reads = cfg(l.local_addr().unwrap());
            reads.close = CloseMode::Server;
            let mut ring = Ring::new(&reads, &f, 2, 0, 1_000_000_000, None).unwrap();
            assert!(ring.push_read(1, 0, Sock::Fd(c.as_raw_fd()), 20_000_000, Send::None));
            let got = reap_all(&mut ring);
            assert_eq!(ring.live, 0, "{got:?}");
            assert!(got
                .iter()
                .any(|c| c.kind == K_RECV && c.res == -libc::ECANCELED));
        });
    }

    /// One `--http` exchange on the wire HTTP clients use (`--close server`) posts exactly
    /// three CQEs on a ring with IOSQE_CQE_SKIP_SUCCESS: the CONNECT's (the handshake), the
    /// response's RECV and the RECV that reads the server's FIN. The SOCKET, the SEND of the
    /// request, the three LINK_TIMEOUTs and the CLOSE post none when they succeed: a chain
    /// that posted more would cost a completion (and a pass of the worker) per response
    /// (docs/performance/2026-12-07-http-uring.md counts the same in a whole run with perf).
    #[test]
    fn an_http_exchange_on_the_server_close_wire_posts_three_cqes() {
        let Some(f) = uring() else { return };
        if !f.skip_success {
            eprintln!("no IORING_FEAT_CQE_SKIP here: every SQE posts, test not run");
            return;
        }
        testkit::NetNs::run(move |_| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            // The server: reads the request head, answers 204 and closes (as `server --mode
            // http`), then waits for the client's FIN.
            let server = std::thread::spawn(move || {
                use std::io::Write;
                let (mut c, _) = l.accept().unwrap();
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut head = Vec::new();
                let mut b = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = c.read(&mut b).unwrap();
                    assert!(n > 0, "the request head came whole");
                    head.extend_from_slice(&b[..n]);
                }
                c.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                    .unwrap();
                c.shutdown(std::net::Shutdown::Write).unwrap();
                // The client's FIN after ours (it read our FIN first: no reset).
                assert_eq!(c.read(&mut b).unwrap(), 0);
            });
            let mut http = cfg(addr);
            http.close = CloseMode::Server;
            http.http = Some(crate::config::HttpRequest::default());
            let mut ring = Ring::new(&http, &f, 2, 0, 1_000_000_000, None).unwrap();
            let mut got: Vec<Cqe> = Vec::new();
            // Waits until the ring has `n` CQEs in all (for at most 2 s).
            let reap_to = |ring: &mut Ring, got: &mut Vec<Cqe>, n: usize| {
                let until = crate::clock::now_ns() + 2_000_000_000;
                while got.len() < n && crate::clock::now_ns() < until {
                    let now = crate::clock::now_ns();
                    ring.wait(now + 10_000_000, now, 0, 1);
                    let mut b = [Cqe::default(); 16];
                    let k = ring.reap(&mut b);
                    got.extend_from_slice(&b[..k]);
                }
            };
            let plain = (!ring.direct())
                .then(|| Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap());
            let sock = match &plain {
                None => {
                    assert!(ring.push_socket_connect(0, 0, libc::AF_INET, 0, false));
                    Sock::Fixed(0)
                }
                Some(s) => {
                    assert!(ring.push_connect(0, 0, Sock::Fd(s.as_raw_fd()), 0));
                    Sock::Fd(s.as_raw_fd())
                }
            };
            reap_to(&mut ring, &mut got, 1);
            assert!(ring.push_read(0, 0, sock, 1_000_000_000, Send::Linked(0)));
            reap_to(&mut ring, &mut got, 2);
            assert!(ring.push_read(0, 0, sock, 1_000_000_000, Send::None));
            reap_to(&mut ring, &mut got, 3);
            match plain {
                None => assert!(ring.push_close_fixed(0, 0)),
                Some(s) => ring.close_plain(0, 0, s),
            }
            ring.submit();
            server
                .join()
                .expect("the server saw the request, and the client's FIN");
            // Anything more (a SEND, LINK_TIMEOUT or CLOSE CQE) would be there by now.
            let now = crate::clock::now_ns();
            ring.wait(now + 50_000_000, now, 0, 1);
            let mut b = [Cqe::default(); 16];
            let k = ring.reap(&mut b);
            got.extend_from_slice(&b[..k]);
            let kinds: Vec<(u64, i32)> = got.iter().map(|c| (c.kind, c.res)).collect();
            assert_eq!(got.len(), 3, "{kinds:?}");
            assert_eq!((got[0].kind, got[0].res), (K_CONNECT, 0), "{kinds:?}");
            assert_eq!(got[1].kind, K_RECV, "{kinds:?}");
            assert!(got[1].res > 0, "the response: {kinds:?}");
            let n = got[1].res as usize;
            assert!(
                ring.received(0, n).starts_with(b"HTTP/1.1 204"),
                "{:?}",
                String::from_utf8_lossy(ring.received(0, n))
            );
            assert_eq!((got[2].kind, got[2].res), (K_RECV, 0), "the FIN: {kinds:?}");
            assert_eq!(ring.live, 0, "{kinds:?}");
        });
    }
}
