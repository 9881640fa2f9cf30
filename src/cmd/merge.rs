//! `connstorm merge`: join the run records of a multi-host run (`load --segment i/N --out`, and
//! `server --out`) into one exact record (see [`results::merge`]).
//!
//! Exit codes: 0 merged and written; 1 the output cannot be written; 2 bad input (a file that is
//! not a record, overlapping or missing segments, different schema versions, histograms of
//! different bounds, different load patterns), each a one-line error naming the files.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use results::merge::{merge, Input};
use results::record::RunRecord;

use crate::error::bad_input;

/// Options of `connstorm merge`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The records of one run: one per load generator (`load --segment i/N --out DIR`, every
    /// segment 0..N exactly once) and optionally one per server (`server --out DIR`).
    #[arg(value_name = "RECORD", required = true)]
    pub records: Vec<PathBuf>,
    /// Where to write the merged record (a file path; `-` = stdout).
    #[arg(long, short, value_name = "PATH")]
    pub output: PathBuf,
}

/// The schema version a record file declares, before any upgrade on reading (0 when absent:
/// [`RunRecord::read`] refuses such a file anyway).
fn declared_schema(path: &Path) -> u32 {
    #[derive(serde::Deserialize)]
    struct Head {
        schema_version: Option<u32>,
    }
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Head>(&b).ok())
        .and_then(|h| h.schema_version)
        .unwrap_or(0)
}

/// Runs `connstorm merge`.
///
/// # Errors
/// Bad input (exit 2) for unreadable or unmergeable records; exit 1 when the output cannot be
/// written.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if args.output.as_os_str() != "-" {
        refuse_non_file(&args.output)?;
    }
    let mut inputs = Vec::with_capacity(args.records.len());
    for path in &args.records {
        let record = RunRecord::read(path).map_err(|e| bad_input(e.to_string()))?;
        inputs.push(Input {
            path: path.clone(),
            schema_version: declared_schema(path),
            record,
        });
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
    let p = merged.record.phases.first();
    if let Some(p) = p {
        eprintln!(
            "connstorm merge: phase {}: {} successes in {:.3} s = {:.1} /s ({:.0} /min)",
            p.name, p.successes, p.measured_secs, p.achieved_per_sec, p.cpm
        );
    }
    Ok(0)
}

/// Refuses an output path that exists and is not a regular file: the rename that makes the write
/// atomic would replace a device (`/dev/full`), a symlink or a directory.
///
/// # Errors
/// Bad input (exit 2) naming the path.
fn refuse_non_file(path: &Path) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => Err(bad_input(format!(
            "-o {}: exists and is not a regular file (a device, symlink or directory would be replaced): give a file path, or - for stdout",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Writes `json` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees half a record.
///
/// # Errors
/// Bad input (exit 2) when `path` exists and is not a regular file (a device such as
/// `/dev/full`, a symlink, a directory): the rename would replace it. Exit 1 when writing fails.
fn write_file(path: &Path, json: &str) -> anyhow::Result<()> {
    refuse_non_file(path)?;
    common::files::write_atomic(path, format!("{json}\n").as_bytes())
        .with_context(|| format!("writing the merged record to {}", path.display()))
}
