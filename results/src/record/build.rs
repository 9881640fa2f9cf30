//! [`BuildInfo`]: which connstorm build wrote a record.

use serde::{Deserialize, Serialize};

/// The connstorm build that wrote a record: version, commit, engines and cargo features, so a
/// reader can tell two runs of different code apart (`record.build`; absent in records written
/// before it existed, then every field is empty).
///
/// The binary fills it from its build script's facts (the same text `connstorm --version`
/// prints).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BuildInfo {
    /// connstorm's version, e.g. `"0.1.0"`.
    pub version: String,
    /// Git commit connstorm was built from, 12 hex digits, `-dirty` appended when tracked files
    /// differed from it; `"unknown"` when built outside a git checkout (a release tarball).
    pub git_commit: String,
    /// Accept engines compiled into the server: `["io_uring", "epoll"]` (which one ran is
    /// `run.engine`).
    pub engines: Vec<String>,
    /// Cargo features of the `connstorm` package enabled in the build (empty when none).
    pub features: Vec<String>,
    /// Target triple, e.g. `"x86_64-unknown-linux-gnu"`.
    pub target: String,
    /// Cargo profile: `"release"` or `"debug"` (a debug build's rates are not comparable).
    pub profile: String,
    /// `rustc --version` of the compiler (empty when unknown).
    pub rustc: String,
}
