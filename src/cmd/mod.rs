//! One file per subcommand, each with its `Args` and `run()`.

pub mod completions;
pub mod k8s;
pub mod man;
