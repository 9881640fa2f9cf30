//! `connstorm load` (not built yet).

/// Options of `connstorm load`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `connstorm load`.
///
/// # Errors
/// Always, until it is built.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("connstorm load is not built yet")
}
