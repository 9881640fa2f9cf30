//! `connstorm tune` (not built yet).

/// `connstorm tune` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check the host against a preset, or print a doctor summary.
    Check {},
}

/// Runs `connstorm tune ...`.
///
/// # Errors
/// Always, until it is built.
pub fn run(_cmd: Command) -> anyhow::Result<i32> {
    anyhow::bail!("connstorm tune is not built yet")
}
