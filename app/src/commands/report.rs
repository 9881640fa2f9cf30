//! `connstorm report`: print reports for run records, optionally write `.hlog` interval logs.

use std::path::{Path, PathBuf};

use results::render::{self as report, Counters, ReportFormat as Format};

use super::records::{check_hlogs, read_record, refuse_input_as_output, write_output};
use crate::bad_input;

/// Output formats of `connstorm report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Aligned plain text.
    Text,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// JSON array, one object per record.
    Json,
    /// CSV, one row per record and phase.
    Csv,
    /// One self-contained HTML page (no network fetches): summary, warnings, percentile
    /// tables, and the spectrum, timeline and worker plots inline as SVG; an `ab` run's two
    /// sides also get the A/B chart and comparison, a sweep its curve. Use with `-o FILE.html`.
    Html,
}

/// The examples after `connstorm report --help` and in its man page.
pub const EXAMPLES: &str = "\
Examples:
  # The report of every record under ./runs
  connstorm report runs/*.json
  # As Markdown, listing every kernel counter
  connstorm report --format markdown --all-counters runs/*.json
  # One self-contained HTML page, and HdrHistogram interval logs under ./hlogs
  connstorm report --format html -o report.html --hlog hlogs runs/*.json";

/// Options of `connstorm report`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// Run record files (JSON written by `connstorm bench`, `load`, `server`, `sweep`, `ab` or `merge` (`--out`)).
    #[arg(value_name = "RECORD", required = true)]
    pub records: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
    /// Latency bucket edges for the bucket table (share of connections per bucket), increasing,
    /// with units.
    #[arg(
        long,
        value_name = "EDGES",
        default_value = "50us,100us,250us,500us,1ms,2.5ms,5ms,10ms,100ms,1s"
    )]
    pub buckets: String,
    /// List every kernel counter of each phase in text and Markdown (a few hundred). By default
    /// only the design's counters (ListenOverflows, ListenDrops, TCPReqQFullDrop, ..., Tcp.*Opens,
    /// softnet.dropped) and any other non-zero drop, overflow or retransmit counter are listed;
    /// JSON and CSV always keep all.
    #[arg(long)]
    pub all_counters: bool,
    /// Also write HdrHistogram interval logs into DIR: one `<record>.<phase>.hlog` per phase,
    /// handshake untagged, service and first byte tagged (for HistogramLogProcessor).
    #[arg(long, value_name = "DIR")]
    pub hlog: Option<PathBuf>,
    /// Write the report to PATH instead of stdout (`-` = stdout).
    #[arg(long, short, value_name = "PATH", default_value = "-")]
    pub output: PathBuf,
}

/// Runs `connstorm report`.
///
/// # Errors
/// Bad input (exit 2) for unreadable or invalid records, bad `--buckets`, and outputs that
/// would replace an input record or each other (`-o`, `--hlog`), all before anything is
/// written; an I/O error writing the output or the interval logs.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let edges = report::parse_bucket_edges(&args.buckets).map_err(|e| bad_input(e.to_string()))?;
    if let Some(dir) = &args.hlog {
        common::files::refuse_non_dir("--hlog", dir)?;
        common::files::check_output_dir("--hlog", dir, "interval logs")?;
    }
    common::files::check_output_file("-o", &args.output)?;
    refuse_input_as_output("-o", &args.output, &args.records)?;
    let mut records = Vec::new();
    let mut reports = Vec::new();
    for path in &args.records {
        let rec = read_record(path)?;
        let file = path.display().to_string();
        reports
            .push(report::build_report(&rec, &file, &edges).map_err(|e| bad_input(e.to_string()))?);
        records.push((path.clone(), rec));
    }
    if let Some(dir) = &args.hlog {
        check_hlogs(dir, &records, &args.output)?;
        for (path, rec) in &records {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("run");
            // The error names the file and the OS error once (not again as its source).
            let written = results::render::write_hlogs(rec, stem, dir)
                .map_err(|e| anyhow::anyhow!(e.to_string()))?;
            for p in written {
                eprintln!("connstorm: wrote {}", p.display());
            }
        }
    }
    if args.format == FormatArg::Html {
        let named = results::render::legend_names(&records, false);
        let counters = if args.all_counters {
            Counters::All
        } else {
            Counters::Key
        };
        write_output(
            &args.output,
            &results::render::html(&reports, &named, counters),
        )?;
        if args.output != Path::new("-") {
            eprintln!("connstorm: wrote {}", args.output.display());
        }
        return Ok(0);
    }
    let format = match args.format {
        FormatArg::Text => Format::Text,
        FormatArg::Markdown => Format::Markdown,
        FormatArg::Json => Format::Json,
        FormatArg::Csv => Format::Csv,
        FormatArg::Html => unreachable!("HTML is written above"),
    };
    let counters = if args.all_counters {
        Counters::All
    } else {
        Counters::Key
    };
    write_output(&args.output, &report::report(&reports, format, counters))?;
    Ok(0)
}
