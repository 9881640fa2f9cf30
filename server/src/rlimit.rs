//! RLIMIT_NOFILE: every held connection and every connection between accept and close is a file
//! descriptor, so a server run wants the whole hard limit. One implementation for the workspace
//! lives in [`common::rlimit`]; this module re-exports what callers of the server use.

/// Raises the soft RLIMIT_NOFILE of the **whole process** to its hard limit and returns
/// `(soft_before, soft_after)` ([`common::rlimit::raise_nofile`]). Not called by
/// [`crate::Server::start`] (it is process-wide state); `connstorm server` and `connstorm bench`
/// call it once at start.
pub use common::rlimit::raise_nofile;

/// The current soft RLIMIT_NOFILE, at most 1<<20 (1024 when unreadable): the most slots the
/// kernel lets the io_uring engine register in a ring's file table (io_sqe_files_register,
/// io_uring/rsrc.c, refuses more with EMFILE).
pub(crate) fn nofile_soft_max() -> usize {
    common::rlimit::nofile_soft()
        .map(|soft| soft.min(1 << 20) as usize)
        .unwrap_or(1024)
}
