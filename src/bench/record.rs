//! The run-record header ([`::bench::record`]) with this binary's version and git commit.

pub use ::bench::record::{check_writable_dir, Build};

/// This binary: its version and the git commit build.rs found.
pub const BUILD: Build = Build {
    version: env!("CARGO_PKG_VERSION"),
    git_commit: env!("CONNSTORM_GIT_COMMIT"),
};

/// A record for `command` with the harness's setup, the host and this build filled in
/// ([`::bench::record::new_record`]).
pub fn new_record(
    command: &str,
    label: &str,
    config: serde_json::Value,
    h: &super::harness::Harness,
) -> results::RunRecord {
    let mut r = ::bench::record::new_record(command, label, config, h, &BUILD);
    r.build = crate::version::build_info();
    r
}
