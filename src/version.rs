//! What this build is: the `--version` text and the run record's `build` section, from the
//! facts build.rs records (git commit, cargo features, target, profile, rustc).

/// connstorm's version and the git commit it was built from (see build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CONNSTORM_GIT_COMMIT"),
    ")"
);

/// Accept engines compiled into the server, by the names `--engine` takes and `run.engine`
/// records: `server::engine::uring` (io_uring multishot accept, Linux 5.19+) and
/// `server::engine::epoll` (mio). Both are always compiled in; which one runs is chosen at run
/// time (`--engine auto` probes io_uring, see `server::probe`).
pub const ENGINES: [&str; 2] = ["io_uring", "epoll"];

/// The `--version` text: crate version, git commit (`unknown` outside a git checkout), engines,
/// cargo features, target and profile, rustc. `-V` prints the short [`VERSION`].
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit:   ",
    env!("CONNSTORM_GIT_COMMIT"),
    "\nengines:  io_uring, epoll",
    "\nfeatures: ",
    env!("CONNSTORM_BUILD_FEATURES_SHOWN"),
    "\ntarget:   ",
    env!("CONNSTORM_BUILD_TARGET"),
    " (",
    env!("CONNSTORM_BUILD_PROFILE"),
    ")",
    "\nrustc:    ",
    env!("CONNSTORM_RUSTC"),
);

/// This binary's version for record headers, and its record `build` section.
pub fn build() -> (app::record::Build, results::record::BuildInfo) {
    (
        app::record::Build {
            version: env!("CARGO_PKG_VERSION"),
            git_commit: env!("CONNSTORM_GIT_COMMIT"),
        },
        build_info(),
    )
}

/// The run record's `build` section for this binary.
pub fn build_info() -> results::record::BuildInfo {
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .filter(|f| !f.is_empty())
            .map(str::to_string)
            .collect()
    };
    results::record::BuildInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: env!("CONNSTORM_GIT_COMMIT").to_string(),
        engines: ENGINES.iter().map(|e| e.to_string()).collect(),
        features: list(env!("CONNSTORM_BUILD_FEATURES")),
        target: env!("CONNSTORM_BUILD_TARGET").to_string(),
        profile: env!("CONNSTORM_BUILD_PROFILE").to_string(),
        rustc: env!("CONNSTORM_RUSTC").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_engine_is_one_the_server_accepts() {
        for e in ENGINES {
            let parsed: Result<server::EngineChoice, _> = e.parse();
            assert!(parsed.is_ok(), "{e} is not an engine the server knows");
            assert!(LONG_VERSION.contains(e), "--version lacks {e}");
        }
    }

    #[test]
    fn build_info_agrees_with_the_version_text() {
        let b = build_info();
        assert!(LONG_VERSION.starts_with(&b.version));
        assert!(LONG_VERSION.contains(&format!("commit:   {}", b.git_commit)));
        assert!(!b.git_commit.is_empty());
        assert!(
            b.profile == "release" || b.profile == "debug",
            "{}",
            b.profile
        );
    }
}
