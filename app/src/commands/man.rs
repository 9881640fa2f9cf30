//! `connstorm man`: man pages (clap_mangen) for connstorm and every subcommand, at any depth.
//!
//! Pages are rendered from the command definition that parses the command line (the caller
//! passes `cli::command()`), so options and help text never drift from the binary. Page names
//! follow git's convention: `connstorm.1`, `connstorm-bench.1`, `connstorm-tune-check.1`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::bad_input;

/// Options of `connstorm man`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "Examples:
  connstorm man | man -l -                 read the top page
  connstorm man --out ~/.local/share/man/man1 && man connstorm-bench")]
pub struct Args {
    /// Write one page per command into DIR (created if missing) instead of printing the
    /// top-level page (`connstorm.1`) to stdout.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Every page: `(file name, roff text)`, the top-level command first, then each subcommand
/// depth-first (clap's own `help` subcommand and hidden ones left out), of `cmd`: the command
/// line's definition.
///
/// # Errors
/// Only if rendering into memory fails (it does not: the writer is a `Vec`).
pub fn pages(cmd: clap::Command) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    fn walk(
        cmd: &clap::Command,
        name: String,
        out: &mut Vec<(String, Vec<u8>)>,
    ) -> std::io::Result<()> {
        // The page's title and NAME line use the display name (`connstorm-tune-check`); the
        // SYNOPSIS uses the bin name (`connstorm tune check`).
        let page = cmd.clone().display_name(name.clone());
        let mut roff = Vec::new();
        clap_mangen::Man::new(page).render(&mut roff)?;
        out.push((format!("{name}.1"), roff));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, format!("{name}-{}", sub.get_name()), out)?;
        }
        Ok(())
    }
    let mut cmd = cmd.disable_help_subcommand(true);
    // Fills in each subcommand's bin name (`connstorm tune check`) for the SYNOPSIS.
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, "connstorm".to_string(), &mut out)?;
    Ok(out)
}

/// Runs `connstorm man`.
///
/// # Errors
/// Bad input (exit 2) when `--out` exists and is not a directory; an I/O error creating the
/// directory or writing a page.
pub fn run(args: Args, cmd: clap::Command) -> anyhow::Result<i32> {
    let pages = pages(cmd)?;
    let Some(dir) = args.out else {
        let (_, top) = &pages[0];
        super::records::write_output(Path::new("-"), &String::from_utf8_lossy(top))?;
        return Ok(0);
    };
    if dir.exists() && !dir.is_dir() {
        return Err(bad_input(format!(
            "--out {}: not a directory: give a directory for the man pages",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, roff) in &pages {
        let path = dir.join(name);
        std::fs::write(&path, roff).with_context(|| format!("cannot write {}", path.display()))?;
    }
    eprintln!(
        "connstorm: wrote {} man pages into {}",
        pages.len(),
        dir.display()
    );
    Ok(0)
}
