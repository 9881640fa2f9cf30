//! Pictures of run records, as SVG or PNG (plotters).
//!
//! Kinds ([`PlotKind`]): the latency percentile spectrum (HdrHistogram's usual plot, x on a log
//! scale of 1/(1-p)), the CPM timeline, the per-worker accept share, an A/B comparison strip
//! chart, a sweep curve, and a scale run's rate and efficiency against cores. Text is measured and drawn with a bundled font
//! (`assets/DejaVuSans-subset.ttf`), so PNG output needs no system fontconfig and SVG layout is
//! the same everywhere.

mod ab;
mod names;
mod scale;
mod spectrum;
mod sweep;
mod timeline;
mod workers;

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::record::RunRecord;

pub use names::legend_names;

/// Picture size in pixels (width, height).
pub const PLOT_SIZE: (u32, u32) = (1000, 600);

/// What to draw.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlotKind {
    /// Handshake latency by percentile, one line per record (and per latency kind with one
    /// record), x = 1/(1-p) on a log scale labelled `50%`, `90%`, `99%`, `99.9%`, ...
    #[cfg_attr(
        feature = "clap",
        value(help = "Handshake latency by percentile (log scale of 1/(1-p)), records overlaid.")
    )]
    Spectrum,
    /// Connections per minute over time, one line per record and phase.
    #[cfg_attr(feature = "clap", value(help = "Connections per minute over time."))]
    Timeline,
    /// Share of accepted connections per server worker, grouped by record.
    #[cfg_attr(
        feature = "clap",
        value(help = "Share of accepted connections per server worker.")
    )]
    Workers,
    /// A vs B trials: connections/s and handshake p99 per trial, with medians.
    #[cfg_attr(
        feature = "clap",
        value(help = "A vs B trials (A files -- B files): connections/s and handshake p99.")
    )]
    Ab,
    /// A sweep: offered vs achieved rate, and handshake p99 on a second axis.
    #[cfg_attr(
        feature = "clap",
        value(help = "Sweep: offered vs achieved rate and handshake p99.")
    )]
    Sweep,
    /// A scale run: connections/s and scaling efficiency against cores, the knee circled.
    #[cfg_attr(
        feature = "clap",
        value(help = "Scale: connections/s and scaling efficiency against cores.")
    )]
    Scale,
}

/// A record to plot and the name its series get in the legend.
#[derive(Debug, Clone)]
pub struct Named<'a> {
    /// Legend name (the label, or the file name when the label is empty or repeated).
    pub name: String,
    /// The record.
    pub record: &'a RunRecord,
}

/// Why a picture could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The output file name does not end in `.svg` or `.png`.
    #[error("cannot tell the picture format of {}: name the output FILE.svg or FILE.png", .path.display())]
    Format {
        /// The output path.
        path: PathBuf,
    },
    /// The records hold nothing this kind of plot shows.
    #[error("nothing to plot: {0}")]
    Empty(String),
    /// plotters failed (a file that cannot be written, a drawing error).
    #[error("cannot draw {}: {message}; check that the directory exists and is writable", .path.display())]
    Draw {
        /// The output path (`-` for an in-memory SVG).
        path: PathBuf,
        /// plotters' complaint.
        message: String,
    },
}

/// The bundled font (DejaVu Sans, subset; license in `assets/DejaVuSans-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans-subset.ttf");

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_err() {
            panic!("the bundled font assets/DejaVuSans-subset.ttf does not parse");
        }
    });
}

/// Why a plot module could not draw, before the output path is known.
#[derive(Debug)]
pub(crate) enum Problem {
    /// Nothing to plot, and why.
    Empty(String),
    /// plotters failed.
    Draw(String),
}

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for Problem {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        Problem::Draw(e.to_string())
    }
}

/// What a plot module's `draw` returns.
pub(crate) type DrawResult = Result<(), Problem>;

fn draw_on<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    kind: PlotKind,
    records: &[Named<'_>],
    b: &[Named<'_>],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    match kind {
        PlotKind::Spectrum => spectrum::draw(root, records),
        PlotKind::Timeline => timeline::draw(root, records),
        PlotKind::Workers => workers::draw(root, records),
        PlotKind::Ab => ab::draw(root, records, b),
        PlotKind::Sweep => sweep::draw(root, records),
        PlotKind::Scale => scale::draw(root, records),
    }?;
    root.present()?;
    Ok(())
}

fn finish(path: &Path, r: DrawResult) -> Result<(), PlotError> {
    match r {
        Ok(()) => Ok(()),
        Err(Problem::Empty(why)) => Err(PlotError::Empty(why)),
        Err(Problem::Draw(message)) => Err(PlotError::Draw {
            path: path.to_path_buf(),
            message,
        }),
    }
}

/// Draws `kind` as an SVG document in memory. `b` is side B for [`PlotKind::Ab`] (ignored
/// otherwise; `records` is side A).
///
/// # Errors
/// [`PlotError::Empty`] when the records hold nothing to show; [`PlotError::Draw`].
pub fn plot_svg(
    kind: PlotKind,
    records: &[Named<'_>],
    b: &[Named<'_>],
) -> Result<String, PlotError> {
    register_font();
    let mut out = String::new();
    let r = {
        let root = SVGBackend::with_string(&mut out, PLOT_SIZE).into_drawing_area();
        draw_on(&root, kind, records, b)
    };
    finish(Path::new("-"), r)?;
    Ok(out)
}

/// Draws `kind` into `path`, SVG or PNG by its extension.
///
/// # Errors
/// [`PlotError::Format`] for other extensions, else as [`plot_svg`].
pub fn write_plot(
    kind: PlotKind,
    records: &[Named<'_>],
    b: &[Named<'_>],
    path: &Path,
) -> Result<(), PlotError> {
    register_font();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("svg") => {
            let text = plot_svg(kind, records, b)?;
            std::fs::write(path, text).map_err(|e| PlotError::Draw {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
        }
        Some("png") => {
            let r = {
                let root = BitMapBackend::new(path, PLOT_SIZE).into_drawing_area();
                draw_on(&root, kind, records, b)
            };
            finish(path, r)
        }
        _ => Err(PlotError::Format {
            path: path.to_path_buf(),
        }),
    }
}

/// The series colour for index `i`.
pub(crate) fn color(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    COLORS[i % COLORS.len()]
}

/// A latency unit for an axis whose largest value is `max_ns`: (`"µs"` | `"ms"`, ns per unit).
pub(crate) fn latency_unit(max_ns: f64) -> (&'static str, f64) {
    if max_ns >= 10_000_000.0 {
        ("ms", 1e6)
    } else {
        ("µs", 1e3)
    }
}

/// Upper end of an axis: `max` plus 10% headroom, at least `floor`.
pub(crate) fn headroom(max: f64, floor: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.1
    } else {
        floor
    }
}

#[cfg(test)]
mod tests;
