//! `connstorm compare` (not built yet).

/// Options of `connstorm compare`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `connstorm compare`.
///
/// # Errors
/// Always, until it is built.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("connstorm compare is not built yet")
}
