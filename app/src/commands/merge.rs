//! `connstorm merge`: join the run records of a multi-host run (`load --segment i/N --out`, and
//! `server --out`) into one exact record (see [`results::analysis::merge`]).
//!
//! Exit codes: 0 merged and written; 1 the output cannot be written; 2 bad input (a file that is
//! not a record, records that are not segments, overlapping or missing segments, different
//! schema versions, histograms of different bounds, different load patterns, an output that is
//! one of the inputs), each a one-line error naming the files.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use results::analysis::{merge, MergeInput as Input};

use crate::bad_input;

/// The examples after `connstorm merge --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # A run of two generators (load --segment i/2 --out runs) and its server (server --out runs)
  connstorm merge -o merged.json runs/*-load-*of2-*.json runs/*-server-*.json
  # Then the merged run's report
  connstorm report merged.json";

/// Options of `connstorm merge`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The records of one run: one per load generator (`load --segment i/N --out DIR`, every
    /// segment 0..N exactly once) and optionally one per server (`server --out DIR`).
    #[arg(value_name = "RECORD", required = true)]
    pub records: Vec<PathBuf>,
    /// Where to write the merged record (a file path; `-` = stdout).
    #[arg(long, short, value_name = "PATH")]
    pub output: PathBuf,
}

/// Runs `connstorm merge`.
///
/// # Errors
/// Bad input (exit 2) for unreadable or unmergeable records and an output that is one of them;
/// exit 1 when the output cannot be written.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if args.output.as_os_str() != "-" {
        common::files::check_output_file("-o", &args.output)?;
        common::files::refuse_non_file("-o", &args.output)?;
    }
    super::records::refuse_input_as_output("-o", &args.output, &args.records)?;
    let mut inputs = Vec::with_capacity(args.records.len());
    for path in &args.records {
        inputs.push(Input::read(path).map_err(|e| bad_input(e.to_string()))?);
    }
    let merged = merge(&inputs).map_err(|e| bad_input(e.to_string()))?;
    for w in &merged.warnings {
        eprintln!("connstorm merge: warning: {w}");
    }
    let json = merged.record.to_json();
    if args.output.as_os_str() == "-" {
        crate::output::out(&format!("{json}\n"));
    } else {
        write_file(&args.output, &json)?;
        eprintln!(
            "connstorm merge: merged {} records into {}",
            inputs.len(),
            args.output.display()
        );
    }
    if let Some(p) = merged.record.phases.first() {
        eprintln!("connstorm merge: {}", results::render::merged_phase_line(p));
    }
    Ok(0)
}

/// Writes `json` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees half a record.
///
/// # Errors
/// Bad input (exit 2) when `path` exists and is not a regular file (a device such as
/// `/dev/full`, a symlink, a directory): the rename would replace it. Exit 1 when writing fails.
fn write_file(path: &Path, json: &str) -> anyhow::Result<()> {
    common::files::refuse_non_file("-o", path)?;
    common::files::write_atomic(path, format!("{json}\n").as_bytes())
        .with_context(|| format!("writing the merged record to {}", path.display()))
}
