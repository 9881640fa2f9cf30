//! `connstorm completions SHELL`: print a shell completion script (clap_complete) to stdout.
//!
//! The script is generated from the same command definition that parses the command line (the
//! caller passes `cli::command()`), so it names every subcommand and option of this build.

use std::io::Write as _;

/// Shells `connstorm completions` writes a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShellArg {
    /// Bash: `connstorm completions bash > ~/.local/share/bash-completion/completions/connstorm`.
    Bash,
    /// Zsh: `connstorm completions zsh > "${fpath[1]}/_connstorm"`.
    Zsh,
    /// Fish: `connstorm completions fish > ~/.config/fish/completions/connstorm.fish`.
    Fish,
}

/// The examples after `connstorm completions --help` and in its man page: where each shell looks (then start a new shell).
pub const EXAMPLES: &str = "\
Examples:
  # Bash
  connstorm completions bash > ~/.local/share/bash-completion/completions/connstorm
  # Zsh (with fpath+=~/.zfunc before compinit in ~/.zshrc)
  connstorm completions zsh > ~/.zfunc/_connstorm
  # Fish
  connstorm completions fish > ~/.config/fish/completions/connstorm.fish";

/// Options of `connstorm completions`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Shell to write the completion script for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: ShellArg,
}

/// The completion script of `cmd` (the command line's definition) for `shell`, as bytes (UTF-8 shell code).
pub fn script(shell: ShellArg, mut cmd: clap::Command) -> Vec<u8> {
    let shell = match shell {
        ShellArg::Bash => clap_complete::Shell::Bash,
        ShellArg::Zsh => clap_complete::Shell::Zsh,
        ShellArg::Fish => clap_complete::Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "connstorm", &mut out);
    out
}

/// Runs `connstorm completions`.
///
/// # Errors
/// An I/O error writing to stdout (a closed pipe ends quietly, see `main`).
pub fn run(args: Args, cmd: clap::Command) -> anyhow::Result<i32> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&script(args.shell, cmd))?;
    stdout.flush()?;
    Ok(0)
}
