//! One file per subcommand, each with its `Args` and `run()`.

pub mod completions;
pub mod man;
