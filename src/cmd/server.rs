//! `connstorm server` (not built yet).

/// Options of `connstorm server`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `connstorm server`.
///
/// # Errors
/// Always, until it is built.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("connstorm server is not built yet")
}
