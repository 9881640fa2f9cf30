//! Raising the open-file limit before a run (each in-flight attempt holds one descriptor).
//!
//! The library never calls this itself: it changes process-wide state, so the caller (the CLI)
//! decides. The implementation is the workspace's one, [`common::rlimit`]; this module gives it
//! the load generator's error type.

use crate::error::LoadError;

/// Raises the soft RLIMIT_NOFILE to the hard limit ([`common::rlimit::raise_nofile`]) and
/// returns the new soft limit.
///
/// # Errors
/// [`LoadError::Rlimit`] when getrlimit/setrlimit fail (they do not for this resource on Linux
/// unless a seccomp filter forbids them).
pub fn raise_nofile_limit() -> Result<u64, LoadError> {
    common::rlimit::raise_nofile()
        .map(|(_, after)| after)
        .map_err(|errno| LoadError::Rlimit { errno })
}
