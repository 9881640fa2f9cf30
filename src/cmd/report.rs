//! `connstorm report`: print reports for run records, optionally write `.hlog` interval logs.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use results::record::RunRecord;
use results::report::{self, Counters, Format};

use crate::error::bad_input;

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

/// Options of `connstorm report`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run record files (JSON written by `connstorm bench`, `sweep` or `ab`).
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

/// Reads a record; a missing or bad file is bad input (exit code 2).
pub(crate) fn read_record(path: &Path) -> anyhow::Result<RunRecord> {
    RunRecord::read(path).map_err(|e| bad_input(e.to_string()))
}

/// Refuses an output path that is one of the command's input records (by device and inode, so
/// every spelling and symlink of it): writing it would replace the record
/// ([`common::files::refuse_overwriting_inputs`]). Bad input (exit 2), before anything is
/// written.
pub(crate) fn refuse_input_as_output(
    option: &str,
    output: &Path,
    records: &[PathBuf],
) -> anyhow::Result<()> {
    let inputs: Vec<(&str, &Path)> = records
        .iter()
        .map(|p| ("input record", p.as_path()))
        .collect();
    common::files::refuse_overwriting_inputs(option, output, &inputs).map_err(anyhow::Error::new)
}

/// Checks the `.hlog` files `report --hlog DIR` will write for each record (`<record
/// stem>.<phase>.hlog`, [`results::hlog::paths`]) before anything is written: no file is an
/// input record or the `-o` output, and no two records write the same file (two `run.json`
/// from different directories).
///
/// # Errors
/// Bad input (exit 2) naming the paths.
fn check_hlogs(dir: &Path, records: &[(PathBuf, RunRecord)], output: &Path) -> anyhow::Result<()> {
    let inputs: Vec<PathBuf> = records.iter().map(|(p, _)| p.clone()).collect();
    let mut by: Vec<(&Path, PathBuf)> = Vec::new();
    for (path, rec) in records {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("run");
        for f in results::hlog::paths(rec, stem, dir) {
            refuse_input_as_output("--hlog", &f, &inputs)?;
            if output != Path::new("-") && common::files::same_destination(&f, output) {
                return Err(bad_input(format!(
                    "--hlog {} would write {}, the -o output: give -o another path",
                    dir.display(),
                    f.display()
                )));
            }
            if let Some((other, _)) = by
                .iter()
                .find(|(_, g)| common::files::same_destination(&f, g))
            {
                return Err(bad_input(format!(
                    "--hlog {}: {} and {} would both write {} (the interval logs are named after the record file): copy one of them to another name first",
                    dir.display(),
                    other.display(),
                    path.display(),
                    f.display()
                )));
            }
            by.push((path, f));
        }
    }
    Ok(())
}

/// Writes command output to stdout (`-`) or a file.
pub(crate) fn write_output(output: &Path, text: &str) -> anyhow::Result<()> {
    if output == Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
        Ok(())
    } else if std::fs::symlink_metadata(output).is_ok_and(|m| !m.file_type().is_file()) {
        // A device or a link the user named (`/dev/stdout`, a FIFO): written in place.
        std::fs::write(output, text).with_context(|| format!("cannot write {}", output.display()))
    } else {
        // A regular file: so a failed write (ENOSPC) leaves no truncated file behind.
        common::files::write_atomic(output, text.as_bytes())
            .with_context(|| format!("cannot write {}", output.display()))
    }
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
    }
    refuse_input_as_output("-o", &args.output, &args.records)?;
    let mut records = Vec::new();
    let mut reports = Vec::new();
    for path in &args.records {
        let rec = read_record(path)?;
        let file = path.display().to_string();
        reports.push(report::build(&rec, &file, &edges).map_err(|e| bad_input(e.to_string()))?);
        records.push((path.clone(), rec));
    }
    if let Some(dir) = &args.hlog {
        check_hlogs(dir, &records, &args.output)?;
        for (path, rec) in &records {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("run");
            // The error names the file and the OS error once (not again as its source).
            let written = results::hlog::write_all(rec, stem, dir)
                .map_err(|e| anyhow::anyhow!(e.to_string()))?;
            for p in written {
                eprintln!("connstorm: wrote {}", p.display());
            }
        }
    }
    if args.format == FormatArg::Html {
        let named = results::plot::legend_names(&records, false);
        let counters = if args.all_counters {
            Counters::All
        } else {
            Counters::Key
        };
        write_output(
            &args.output,
            &results::html::render(&reports, &named, counters),
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
    write_output(&args.output, &report::render(&reports, format, counters))?;
    Ok(0)
}
