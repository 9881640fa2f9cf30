//! `connstorm plot` (not built yet).

/// Options of `connstorm plot`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `connstorm plot`.
///
/// # Errors
/// Always, until it is built.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("connstorm plot is not built yet")
}
