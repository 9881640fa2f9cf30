//! `connstorm plot`: draw run records to SVG or PNG.

use std::path::PathBuf;

use results::record::RunRecord;
use results::render::{legend_names, write_plot, PlotError, PlotKind as Kind};

use super::records::read_record;
use crate::bad_input;

/// The examples after `connstorm plot --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # Handshake latency by percentile, every record overlaid
  connstorm plot -o spectrum.svg runs/*.json
  # Connections per minute over time, as PNG
  connstorm plot --kind timeline -o timeline.png runs/*.json
  # A vs B trials: connections/s and handshake p99
  connstorm plot --kind ab -o ab.svg base/*.json -- patched/*.json";

/// Options of `connstorm plot`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Run record files (side A for `--kind ab`).
    #[arg(value_name = "RECORD", required = true)]
    pub records: Vec<PathBuf>,
    /// Side B's records for `--kind ab`: after `--` (options may follow them) or `--b`.
    #[arg(long = "b", value_name = "B", num_args = 1..)]
    pub b: Vec<PathBuf>,
    /// Output picture: FILE.svg or FILE.png (1000×600).
    #[arg(long, short, value_name = "FILE")]
    pub output: PathBuf,
    /// What to draw.
    #[arg(long, value_enum, default_value = "spectrum")]
    pub kind: Kind,
    /// `--kind ab`: draw even when the sides' setups differ (as `compare --allow-mismatch`).
    #[arg(long)]
    pub allow_mismatch: bool,
}

fn load(paths: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, RunRecord)>> {
    paths
        .iter()
        .map(|p| Ok((p.clone(), read_record(p)?)))
        .collect()
}

/// Runs `connstorm plot`.
///
/// # Errors
/// Bad input (exit 2) for unreadable records, an output name that is not `.svg`/`.png` or that
/// is one of the records, records with nothing to draw, or B files without `--kind ab`; an
/// error if drawing or writing fails.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let kind = args.kind;
    if kind != Kind::Ab && !args.b.is_empty() {
        return Err(bad_input(
            "records after `--` are side B of an A/B plot: add `--kind ab`, or drop the `--`",
        ));
    }
    if kind == Kind::Ab && args.b.is_empty() {
        return Err(bad_input("`--kind ab` needs both sides: `connstorm plot --kind ab -o ab.svg A1.json A2.json -- B1.json B2.json`"));
    }
    if kind != Kind::Ab && args.allow_mismatch {
        return Err(bad_input(
            "--allow-mismatch is for `--kind ab` (two sides to compare): drop it",
        ));
    }
    let all: Vec<PathBuf> = args.records.iter().chain(&args.b).cloned().collect();
    common::files::check_output_file("-o", &args.output)?;
    super::records::refuse_input_as_output("-o", &args.output, &all)?;
    let a = load(&args.records)?;
    let b = load(&args.b)?;
    if kind == Kind::Ab {
        super::compare::refuse_duplicates(a.iter().chain(&b).map(|(p, r)| (p, r)))?;
        // The same refusal as `compare`: sides measured with different setups are different
        // experiments.
        let recs =
            |v: &[(PathBuf, RunRecord)]| v.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>();
        let c = results::analysis::compare(
            &recs(&a),
            &recs(&b),
            (None, None),
            &results::analysis::CompareOptions::default(),
        );
        super::compare::check_setups(&c, args.allow_mismatch)?;
    }
    let keep = kind == Kind::Ab;
    let (sa, sb) = (legend_names(&a, keep), legend_names(&b, keep));
    match write_plot(kind, &sa, &sb, &args.output) {
        Ok(()) => {
            eprintln!("connstorm: wrote {}", args.output.display());
            // The picture cuts long names (its footnote holds 150 characters of each): whole here.
            for n in results::render::long_names(kind, &sa, &sb) {
                eprintln!("connstorm: name cut in the picture: {n}");
            }
            Ok(0)
        }
        Err(e @ (PlotError::Format { .. } | PlotError::Empty(_))) => Err(bad_input(e.to_string())),
        Err(e) => Err(e.into()),
    }
}
