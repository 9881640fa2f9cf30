//! Pictures of run records, as SVG or PNG (plotters).
//!
//! Kinds ([`PlotKind`]): the latency percentile spectrum (HdrHistogram's usual plot, x on a log
//! scale of 1/(1-p)), the CPM timeline, the per-worker accept share, an A/B comparison strip
//! chart, a sweep curve, and a scale run's rate and efficiency against cores.
//!
//! Every kind keeps its legend readable: an A/B set's trials are one colour and one legend
//! entry per side ([`Groups`]), at most [`LEGEND_MAX`] entries, distinct colours ([`color`]),
//! flagged trials (a warning in their record) drawn faint and left out of the axis range, and
//! names over [`LABEL_CHARS`] characters cut and numbered with the whole name in a footnote
//! ([`Names`]). Text is measured and drawn with a bundled font
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

/// Height of one footnote line, px.
const FOOTNOTE_LINE_PX: u32 = 17;

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
    let mut names = Names::default();
    // The names a kind cuts are known from the records alone (`long_names`), so the
    // footnote's room is taken before drawing.
    let lines = long_names(kind, records, b).len();
    let (chart, foot) = if lines > 0 {
        let h = (FOOTNOTE_LINE_PX * (lines as u32 + 1) + 6).min(root.dim_in_pixel().1 / 3);
        root.split_vertically(root.dim_in_pixel().1 - h)
    } else {
        root.split_vertically(root.dim_in_pixel().1)
    };
    match kind {
        PlotKind::Spectrum => spectrum::draw(&chart, records, &mut names),
        PlotKind::Timeline => timeline::draw(&chart, records, &mut names),
        PlotKind::Workers => workers::draw(&chart, records, &mut names),
        PlotKind::Ab => ab::draw(&chart, records, b, &mut names),
        PlotKind::Sweep => sweep::draw(&chart, records, &mut names),
        // A scale plot's series are its shapes, named by the command: nothing to cut.
        PlotKind::Scale => scale::draw(&chart, records),
    }?;
    let foot_lines = names.footnote();
    if !foot_lines.is_empty() {
        let style = ("sans-serif", 13).into_font().color(&BLACK.mix(0.75));
        foot.draw(&Text::new(
            "names cut in the legend:".to_string(),
            (15, 2),
            style.clone(),
        ))?;
        for (i, line) in foot_lines.iter().enumerate() {
            foot.draw(&Text::new(
                line.clone(),
                (15, 2 + FOOTNOTE_LINE_PX as i32 * (i as i32 + 1)),
                style.clone(),
            ))?;
        }
    }
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

/// The series colour for index `i`: Tableau 10 (the first eight in the order earlier builds
/// used), then fifteen more from Kelly's colours of maximum contrast and a few others, each at
/// least 60 apart (RGB distance) from every colour before it; past 25 they repeat (the legend
/// holds at most [`LEGEND_MAX`] entries, and an A/B set is one colour per side).
pub(crate) fn color(i: usize) -> RGBColor {
    const COLORS: [RGBColor; 25] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
        RGBColor(243, 195, 0),
        RGBColor(161, 202, 241),
        RGBColor(194, 178, 128),
        RGBColor(0, 136, 86),
        RGBColor(249, 147, 121),
        RGBColor(96, 78, 151),
        RGBColor(136, 45, 23),
        RGBColor(43, 61, 38),
        RGBColor(0, 0, 128),
        RGBColor(128, 128, 0),
        RGBColor(255, 0, 255),
        RGBColor(0, 255, 0),
        RGBColor(75, 0, 130),
        RGBColor(255, 20, 147),
        RGBColor(85, 107, 47),
    ];
    COLORS[i % COLORS.len()]
}

/// At most this many entries in a plot's legend: more series are grouped (an A/B set's trials
/// by side) or summed up in one last entry, so the legend never covers the plot.
pub(crate) const LEGEND_MAX: usize = 10;

/// A legend entry a series gets under the [`LEGEND_MAX`] cap ([`LegendCap::next`]).
pub(crate) enum Legend<S> {
    /// Its own name.
    Named(S),
    /// The last entry, standing for this many labelled series left out.
    More(usize),
}

/// Counts legend entries so that a legend holds at most [`LEGEND_MAX`]: every labelled series
/// its own entry while they fit, else the first `LEGEND_MAX - 1` and one "… and N more".
pub(crate) struct LegendCap {
    entries: usize,
    total: usize,
}

impl LegendCap {
    /// A cap for `total` labelled series.
    pub(crate) fn new(total: usize) -> LegendCap {
        LegendCap { entries: 0, total }
    }

    /// The entry the next series (labelled `label`) gets, if any.
    pub(crate) fn next<S>(&mut self, label: Option<S>) -> Option<Legend<S>> {
        let name = label?;
        if self.entries + 1 < LEGEND_MAX || self.total <= LEGEND_MAX {
            self.entries += 1;
            Some(Legend::Named(name))
        } else if self.entries + 1 == LEGEND_MAX {
            self.entries += 1;
            Some(Legend::More(self.total + 1 - LEGEND_MAX))
        } else {
            None
        }
    }
}

/// At most this many characters of a name in a legend or on an axis; a longer name is cut and
/// numbered (`…[1]`), its whole name in the picture's footnote ([`Names`]).
pub(crate) const LABEL_CHARS: usize = 40;

/// The records grouped for colours and the legend: an A/B set's trials (labels `side#n`, or any
/// names sharing a stem before `#`) form one group per side; every other record is its own.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Groups {
    /// The group of each record, in record order.
    pub of: Vec<usize>,
    /// Each group's name and how many records it has.
    pub names: Vec<(String, usize)>,
}

impl Groups {
    /// Groups `records` by the stem of their names before a trial tag `#n`.
    pub(crate) fn of(records: &[Named<'_>]) -> Groups {
        let stem = |n: &str| -> String {
            match n.rsplit_once('#') {
                Some((s, t)) if !s.is_empty() && t.chars().all(|c| c.is_ascii_digit()) => {
                    s.to_string()
                }
                _ => n.to_string(),
            }
        };
        let mut names: Vec<(String, usize)> = Vec::new();
        let mut of = Vec::with_capacity(records.len());
        for r in records {
            let s = stem(&r.name);
            match names.iter().position(|(n, _)| *n == s) {
                Some(i) => {
                    names[i].1 += 1;
                    of.push(i);
                }
                None => {
                    of.push(names.len());
                    names.push((s, 1));
                }
            }
        }
        Groups { of, names }
    }

    /// Whether some group holds several records (an A/B set): then series are coloured and
    /// named by group.
    pub(crate) fn grouped(&self) -> bool {
        self.names.iter().any(|(_, n)| *n > 1)
    }

    /// The legend name of group `g`: `A (10 trials)`, or the name alone for one record.
    pub(crate) fn name(&self, g: usize) -> String {
        match &self.names[g] {
            (n, 1) => n.clone(),
            (n, k) => format!("{n} ({k} trials)"),
        }
    }
}

/// Names too long for a legend or axis, cut and numbered, with their whole text kept for the
/// picture's footnote.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Names {
    /// The whole names cut so far, in the order of their numbers (`[1]` is the first).
    pub(crate) long: Vec<String>,
}

impl Names {
    /// `name` if it has at most [`LABEL_CHARS`] characters, else its start, `…` and its number
    /// in the footnote (the same number for the same name).
    pub(crate) fn short(&mut self, name: &str) -> String {
        if name.chars().count() <= LABEL_CHARS {
            return name.to_string();
        }
        let tag = format!("…[{}]", self.number(name));
        let keep: String = name
            .chars()
            .take(LABEL_CHARS - tag.chars().count())
            .collect();
        format!("{}{tag}", keep.trim_end())
    }

    /// The footnote number of `name` (the same for the same name), adding it.
    pub(crate) fn number(&mut self, name: &str) -> usize {
        match self.long.iter().position(|n| n == name) {
            Some(i) => i + 1,
            None => {
                self.long.push(name.to_string());
                self.long.len()
            }
        }
    }

    /// The footnote lines: `[1] whole name` for each cut name (at most [`FOOTNOTE_CHARS`] of
    /// it: the HTML page and `plot`'s stderr give the rest).
    pub(crate) fn footnote(&self) -> Vec<String> {
        self.long
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let line = format!("[{}] {n}", i + 1);
                if line.chars().count() > FOOTNOTE_CHARS {
                    let cut: String = line.chars().take(FOOTNOTE_CHARS - 1).collect();
                    format!("{cut}…")
                } else {
                    line
                }
            })
            .collect()
    }
}

/// At most this many characters of a footnote line in a picture.
const FOOTNOTE_CHARS: usize = 150;

/// The names `kind` would cut in a plot of `records` (and `b`, side B of an A/B plot), for a
/// note beside the picture (HTML) or on stderr (`plot`): `[n] whole name` each.
pub fn long_names(kind: PlotKind, records: &[Named<'_>], b: &[Named<'_>]) -> Vec<String> {
    let mut names = Names::default();
    match kind {
        PlotKind::Ab => {
            for (side, letter) in [(records, "A"), (b, "B")] {
                let _ = ab::side_name(side, letter, &mut names);
            }
        }
        PlotKind::Scale => {}
        _ => {
            let g = Groups::of(records);
            for i in 0..g.names.len() {
                let _ = names.short(&g.name(i));
            }
        }
    }
    names
        .long
        .iter()
        .enumerate()
        .map(|(i, n)| format!("[{}] {n}", i + 1))
        .collect()
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
