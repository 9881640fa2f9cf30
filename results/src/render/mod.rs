//! How records and their analysis are shown: every text, table, file and picture the commands
//! print or write. Rendering reads the record schema ([`crate::record`]) and the analysis;
//! neither of them knows it.
//!
//! Files:
//! - `report` ([`report`], [`build_report`]): a record's figures per phase as text, Markdown,
//!   JSON or CSV (`report/document.rs` the document, `report/csv.rs` the CSV rows);
//! - `table`: the one document model (headings, lines, tables) every text and Markdown output is
//!   built from;
//! - `bench_summary` ([`bench_summary`]): what `connstorm bench` prints;
//! - `compare` ([`comparison`]): an A/B comparison as text, Markdown or JSON;
//! - `sweep` ([`sweep`]): a finished sweep's steps and knee;
//! - `scale` ([`scale_text`], [`profile_text`], [`overhead_line`]): a scale run's steps,
//!   efficiency and knees; a phase's kernel profile; what the profile cost;
//! - `paired` ([`paired_line`]) and `merge` ([`merged_phase_line`]): one-line summaries;
//! - `kernel_text` ([`KernelSection`]): the kernel section of a `load` report;
//! - `html` ([`html`]): one self-contained HTML page;
//! - `plot` ([`plot_svg`], [`write_plot`]): SVG/PNG pictures (latency spectrum, timeline, worker
//!   share, A/B strip chart, sweep curve);
//! - `hlog` ([`write_hlogs`]): HdrHistogram interval logs for HdrHistogram's own tools.

mod bench_summary;
mod compare;
mod hlog;
mod html;
mod kernel_text;
mod merge;
mod paired;
mod plot;
mod report;
mod scale;
mod sweep;
mod table;

pub use bench_summary::bench_summary;
pub use compare::{comparison, comparison_with, CompareFormat, Width, TEXT_COLUMNS};
pub use hlog::{hlog_paths, write_hlog, write_hlogs, HlogError};
pub use html::{html, HTML_SECTIONS};
pub use kernel_text::{AcceptQueueEnd, KernelSection, KernelView};
pub use merge::merged_phase_line;
pub use paired::paired_line;
pub use plot::{
    legend_names, long_names, plot_svg, write_plot, Named, PlotError, PlotKind, PLOT_SIZE,
};
pub use report::{
    build_report, parse_bucket_edges, report, Counters, LatencyReport, PhaseReport, RecordReport,
    ReportError, ReportFormat,
};
pub use scale::{overhead_line, profile_text, scale_text, PROFILE_TOP};
pub use sweep::sweep;

/// Formats nanoseconds with a readable unit: `850 ns`, `12.3 µs`, `1.25 ms`, `2.000 s`
/// ([`crate::numfmt::ns`], the tool's one formatter).
pub(crate) fn format_ns(ns: f64) -> String {
    crate::numfmt::ns(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_ns_picks_the_unit() {
        assert_eq!(format_ns(850.0), "850 ns");
        assert_eq!(format_ns(12_345.0), "12.3 µs");
        assert_eq!(format_ns(1_250_000.0), "1.25 ms");
        assert_eq!(format_ns(2e9), "2.000 s");
    }
}
