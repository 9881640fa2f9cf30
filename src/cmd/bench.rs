//! `connstorm bench` (not built yet).

/// Options of `connstorm bench`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `connstorm bench`.
///
/// # Errors
/// Always, until it is built.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("connstorm bench is not built yet")
}
