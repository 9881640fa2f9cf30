//! `--load-engine` ([`LoadEngine`]): which connect engine a run asks for. A plain option type:
//! how it is resolved on this kernel, and the engines themselves, are [`crate::engine`]'s.

use serde::{Deserialize, Serialize};

/// `--load-engine`: which connect engine to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LoadEngine {
    /// The faster engine on this host ([`crate::engine::AUTO_PREFERS`]; with `--tls`
    /// [`crate::engine::AUTO_PREFERS_TLS`], with `--http` [`crate::engine::AUTO_PREFERS_HTTP`])
    /// when the kernel has it; otherwise epoll. The report says which ran and why.
    #[default]
    Auto,
    /// io_uring; refused (a config error) when the kernel lacks it.
    IoUring,
    /// epoll through mio.
    Epoll,
}

impl LoadEngine {
    /// The CLI name: `auto`, `io-uring`, `epoll`.
    pub fn name(self) -> &'static str {
        match self {
            LoadEngine::Auto => "auto",
            LoadEngine::IoUring => "io-uring",
            LoadEngine::Epoll => "epoll",
        }
    }
}

impl std::str::FromStr for LoadEngine {
    type Err = String;

    /// `auto`, `io-uring` (also `io_uring`, `uring`) or `epoll`.
    fn from_str(s: &str) -> Result<LoadEngine, String> {
        match s {
            "auto" => Ok(LoadEngine::Auto),
            "io-uring" | "io_uring" | "uring" => Ok(LoadEngine::IoUring),
            "epoll" => Ok(LoadEngine::Epoll),
            _ => Err(format!(
                "unknown load engine {s:?}: give auto, io-uring or epoll"
            )),
        }
    }
}
