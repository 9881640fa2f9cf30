//! `connstorm report` (not built yet).

/// Options of `connstorm report`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `connstorm report`.
///
/// # Errors
/// Always, until it is built.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("connstorm report is not built yet")
}
