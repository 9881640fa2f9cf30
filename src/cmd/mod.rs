//! One file per subcommand, each with its `Args` and `run()`.

pub mod ab;
pub mod bench;
pub mod compare;
pub mod completions;
pub mod k8s;
pub mod load;
pub mod man;
pub mod merge;
pub mod metrics;
pub mod plot;
pub mod report;
pub mod server;
pub mod sweep;
pub mod tune;

use crate::cli::{Cli, Command};

/// connstorm's version and the git commit it was built from (see build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CONNSTORM_GIT_COMMIT"),
    ")"
);

/// Runs the chosen subcommand and returns the process exit code.
///
/// # Errors
/// Whatever the subcommand returns; [`crate::error::BadInput`] in the chain means exit code 2.
pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Bench(a) => bench::run(a),
        Command::Server(a) => server::run(a),
        Command::Load(a) => load::run(a),
        Command::Tune(c) => tune::run(c),
        Command::Report(a) => report::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Ab(a) => ab::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Plot(a) => plot::run(a),
        Command::Merge(a) => merge::run(a),
        Command::K8s(c) => k8s::run(c),
        Command::Completions(a) => completions::run(a),
        Command::Man(a) => man::run(a),
    }
}
