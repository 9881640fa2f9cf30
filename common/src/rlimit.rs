//! RLIMIT_NOFILE, the per-process descriptor limit: every socket of a run (a held or
//! not-yet-closed accepted connection, an in-flight connect attempt) is one descriptor.
//!
//! Libraries never raise it themselves (it is process-wide state); the binary calls
//! [`raise_nofile`] once at start.

use nix::sys::resource::{getrlimit, setrlimit, Resource};

/// Raises the soft RLIMIT_NOFILE of the **whole process** to its hard limit (setrlimit(2); an
/// unprivileged process may raise its soft limit up to the hard limit, getrlimit(2)) and returns
/// `(soft_before, soft_after)`. The hard limit itself is capped by `fs.nr_open` (default
/// 1048576). Nothing changes when the soft limit already equals the hard limit.
///
/// # Errors
/// The errno of getrlimit/setrlimit (they do not fail for this resource on Linux unless a
/// seccomp filter forbids them; EPERM cannot happen when only the soft limit moves up).
pub fn raise_nofile() -> nix::Result<(u64, u64)> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok((soft, hard.max(soft)))
}

/// The current soft RLIMIT_NOFILE (descriptors this process may hold now).
///
/// # Errors
/// The getrlimit errno.
pub fn nofile_soft() -> nix::Result<u64> {
    getrlimit(Resource::RLIMIT_NOFILE).map(|(soft, _)| soft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raising_ends_at_the_hard_limit_and_is_seen_by_getrlimit() {
        let (_, after) = raise_nofile().unwrap();
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        assert_eq!(after, hard);
        assert_eq!(nofile_soft().unwrap(), hard);
        // A second call finds nothing to raise and reports the same limit twice.
        assert_eq!(raise_nofile().unwrap(), (hard, hard));
    }
}
