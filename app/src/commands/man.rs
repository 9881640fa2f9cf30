//! `connstorm man`: man pages (clap_mangen) for connstorm and every subcommand, at any depth.
//!
//! Pages are rendered from the command definition that parses the command line (the caller
//! passes `cli::command()`), so options and help text never drift from the binary. Page names
//! follow git's convention: `connstorm.1`, `connstorm-bench.1`, `connstorm-tune-check.1`. Each
//! page has clap_mangen's sections and an EXAMPLES section, the examples block of the
//! command's `--help` ([`super::examples`]); the rest of the text after its options (the exit
//! codes) stays in clap_mangen's EXTRA section.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap_mangen::roff::{roman, Roff};

use super::examples::{self, Example};
use crate::bad_input;

/// The examples after `connstorm man --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # Read the top page
  connstorm man | man -l -
  # One page per command where man finds them, then one of them
  connstorm man --out ~/.local/share/man/man1 && man connstorm-bench";

/// Options of `connstorm man`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
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
        out.push((format!("{name}.1"), page_with_examples(page)?));
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

/// One page of `cmd`: clap_mangen's, with the examples block of its after-help text taken out
/// of the EXTRA section into an EXAMPLES section before it.
fn page_with_examples(cmd: clap::Command) -> std::io::Result<Vec<u8>> {
    // `--help` shows `after_long_help` where a command has one, and so does clap_mangen.
    let text = cmd
        .get_after_long_help()
        .or(cmd.get_after_help())
        .map(ToString::to_string)
        .unwrap_or_default();
    let (found, rest) = examples::split(&text);
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.after_help(rest.clone()).after_long_help(rest)).render(&mut page)?;
    if found.is_empty() {
        return Ok(page);
    }
    let section = examples_section(&found);
    let at = [&b"\n.SH EXTRA\n"[..], b"\n.SH VERSION\n"]
        .iter()
        .find_map(|h| page.windows(h.len()).position(|w| w == *h))
        .map_or(page.len(), |i| i + 1);
    page.splice(at..at, section);
    Ok(page)
}

/// The EXAMPLES section: each example's description as a paragraph, its command lines
/// indented and unfilled (each on its own line, as typed).
fn examples_section(found: &[Example]) -> Vec<u8> {
    let mut roff = Roff::new();
    roff.control("SH", ["EXAMPLES"]);
    for e in found {
        roff.control("PP", []);
        if !e.what.is_empty() {
            roff.text([roman(e.what.as_str())]);
        }
        roff.control("RS", ["4"]);
        roff.control("nf", []);
        for c in &e.commands {
            roff.text([roman(c.as_str())]);
        }
        roff.control("fi", []);
        roff.control("RE", []);
    }
    // Without the preamble every rendering starts with: the page already has it.
    let preamble = Roff::new().render();
    let text = roff.render();
    text.strip_prefix(&preamble)
        .unwrap_or(&text)
        .as_bytes()
        .to_vec()
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
    common::files::check_output_dir("--out", &dir, "the man pages")?;
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
