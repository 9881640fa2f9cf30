//! `connstorm compare`: compare two sets of run records (A vs B) with confidence intervals.

use std::path::PathBuf;

use results::compare::{self, Format};

use super::report::{read_record, write_output};
use crate::cli::bad_input;

/// Output formats of `connstorm compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Aligned plain text.
    Text,
    /// GitHub-flavoured Markdown (pastes into a PR or a mailing-list post).
    Markdown,
    /// JSON.
    Json,
}

/// Options of `connstorm compare`.
///
/// Give the sides as `A.json B.json` (one trial each), `A1.json A2.json -- B1.json B2.json`,
/// or `--a A1.json A2.json --b B1.json B2.json`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Side A's records; or, with exactly two files and no `--`, A then B.
    #[arg(value_name = "A")]
    pub a_files: Vec<PathBuf>,
    /// Side B's records, after `--`.
    #[arg(value_name = "B", last = true)]
    pub b_files: Vec<PathBuf>,
    /// Side A's records (instead of positional files).
    #[arg(long = "a", value_name = "RECORD", num_args = 1.., conflicts_with = "a_files")]
    pub a: Vec<PathBuf>,
    /// Side B's records (instead of files after `--`).
    #[arg(long = "b", value_name = "RECORD", num_args = 1.., conflicts_with = "b_files")]
    pub b: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
    /// Write the comparison to PATH instead of stdout (`-` = stdout).
    #[arg(long, short, value_name = "PATH", default_value = "-")]
    pub output: PathBuf,
}

/// Splits the arguments into side A and side B.
fn sides(args: &Args) -> anyhow::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let usage = "give the sides as `connstorm compare A.json B.json`, `connstorm compare A1.json A2.json -- B1.json B2.json` or `connstorm compare --a A1.json A2.json --b B1.json B2.json`";
    let (a, b) = if !args.a.is_empty() || !args.b.is_empty() {
        (args.a.clone(), args.b.clone())
    } else if !args.b_files.is_empty() {
        (args.a_files.clone(), args.b_files.clone())
    } else if args.a_files.len() == 2 {
        (vec![args.a_files[0].clone()], vec![args.a_files[1].clone()])
    } else {
        return Err(bad_input(format!(
            "{} record file(s) without `--`: {usage}",
            args.a_files.len()
        )));
    };
    if a.is_empty() || b.is_empty() {
        return Err(bad_input(format!(
            "side {} has no records: {usage}",
            if a.is_empty() { "A" } else { "B" }
        )));
    }
    Ok((a, b))
}

/// Runs `connstorm compare`.
///
/// # Errors
/// Bad input (exit 2) for missing sides or unreadable/invalid records; an I/O error writing
/// the output.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let (a, b) = sides(&args)?;
    let read = |paths: &[PathBuf]| {
        paths
            .iter()
            .map(|p| read_record(p))
            .collect::<anyhow::Result<Vec<_>>>()
    };
    let (a, b) = (read(&a)?, read(&b)?);
    let comparison = compare::compare(&a, &b);
    let format = match args.format {
        FormatArg::Text => Format::Text,
        FormatArg::Markdown => Format::Markdown,
        FormatArg::Json => Format::Json,
    };
    write_output(&args.output, &compare::render(&comparison, format))?;
    Ok(0)
}
