//! Entering a named network namespace (`ip netns add NAME` creates `/var/run/netns/NAME`), see
//! ip-netns(8) and setns(2).
//!
//! setns applies to the calling thread only: call [`enter`] before spawning threads, and read
//! sysctls and counters from that thread (`/proc/sys/net` and `/proc/thread-self/net` follow it).

use std::path::PathBuf;

/// Directory of named namespaces (ip-netns(8)).
pub const NETNS_DIR: &str = "/var/run/netns";

/// A namespace could not be entered.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// The name could escape the directory.
    #[error("invalid network namespace name {0:?}: use a plain name as in `ip netns list`")]
    BadName(String),
    /// Opening the namespace file failed.
    #[error("cannot open {path}: {source} (create it with `ip netns add NAME`)")]
    Open {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// setns(2) failed.
    #[error("setns({path}) failed: {errno} (needs CAP_SYS_ADMIN; run as root)")]
    Setns {
        /// The file.
        path: PathBuf,
        /// The errno.
        errno: nix::errno::Errno,
    },
}

/// Moves the calling thread into network namespace `name`.
///
/// # Errors
/// [`NetnsError`].
pub fn enter(name: &str) -> Result<(), NetnsError> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." || name.len() > 255 {
        return Err(NetnsError::BadName(name.to_string()));
    }
    let path = PathBuf::from(NETNS_DIR).join(name);
    let f = std::fs::File::open(&path).map_err(|source| NetnsError::Open {
        path: path.clone(),
        source,
    })?;
    nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|errno| NetnsError::Setns { path, errno })
}
