//! Raising the open-file limit before a run (each in-flight attempt holds one descriptor).
//!
//! The library never calls this itself: it changes process-wide state, so the caller (the CLI)
//! decides. See getrlimit(2): an unprivileged process may raise its soft limit up to the hard limit.

use nix::sys::resource::{getrlimit, setrlimit, Resource};

use crate::error::LoadError;

/// Raises the soft RLIMIT_NOFILE to the hard limit and returns the new soft limit.
///
/// # Errors
/// [`LoadError::Rlimit`] when getrlimit/setrlimit fail (they do not for this resource on Linux
/// unless a seccomp filter forbids them).
pub fn raise_nofile_limit() -> Result<u64, LoadError> {
    let (soft, hard) =
        getrlimit(Resource::RLIMIT_NOFILE).map_err(|errno| LoadError::Rlimit { errno })?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)
            .map_err(|errno| LoadError::Rlimit { errno })?;
    }
    Ok(hard.max(soft))
}

/// The current soft RLIMIT_NOFILE (descriptors this process may hold).
///
/// # Errors
/// [`LoadError::Rlimit`] when getrlimit fails.
pub fn nofile_limit() -> Result<u64, LoadError> {
    getrlimit(Resource::RLIMIT_NOFILE)
        .map(|(soft, _)| soft)
        .map_err(|errno| LoadError::Rlimit { errno })
}
