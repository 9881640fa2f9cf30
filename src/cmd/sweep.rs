//! `connstorm sweep` (not built yet).

/// Options of `connstorm sweep`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `connstorm sweep`.
///
/// # Errors
/// Always, until it is built.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("connstorm sweep is not built yet")
}
