//! `connstorm ab` (not built yet).

/// Options of `connstorm ab`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `connstorm ab`.
///
/// # Errors
/// Always, until it is built.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("connstorm ab is not built yet")
}
