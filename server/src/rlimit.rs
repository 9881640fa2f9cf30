//! RLIMIT_NOFILE: every held connection and every connection between accept and close is a file
//! descriptor, so a server run wants the whole hard limit.

use nix::sys::resource::{getrlimit, setrlimit, Resource};

/// Raises the soft RLIMIT_NOFILE of the **whole process** to its hard limit (setrlimit(2)) and
/// returns `(soft_before, soft_after)`. Not called by [`crate::Server::start`] (it is
/// process-wide state); `connstorm server` and `connstorm bench` call it once at start.
/// The hard limit itself is capped by `fs.nr_open` (default 1048576).
///
/// # Errors
/// The errno of getrlimit/setrlimit (EPERM cannot happen when only the soft limit moves up to the
/// hard limit).
pub fn raise_nofile() -> nix::Result<(u64, u64)> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok((soft, hard))
}

/// The current soft RLIMIT_NOFILE (used to size per-worker connection tables), at most 1<<20.
pub fn nofile_soft() -> usize {
    getrlimit(Resource::RLIMIT_NOFILE)
        .map(|(soft, _)| soft.min(1 << 20) as usize)
        .unwrap_or(1024)
}
