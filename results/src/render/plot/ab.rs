//! A vs B trials: one panel per metric (connections/s, handshake p99), each trial a dot,
//! each side's median a bar, the legend one entry per side. A trial whose record carries a
//! warning (see [`crate::analysis::trial_flags`]) is drawn as a hollow dot and left out of the
//! median, as `compare` leaves it out of the verdict; it does not set the axis range either
//! (one 103 ms trial put every other p99 on 0): a flagged value above the clean ones' range is
//! drawn as a hollow triangle on the top edge with its value beside it. Sides are named by
//! their short names (a long one as `A`, its whole name in the footnote).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, headroom, DrawResult, Named, Names, Problem};
use crate::analysis::median;
use crate::analysis::{metric_values, METRICS};

/// The panels: index into [`METRICS`] and axis label.
const PANELS: [(usize, &str); 2] = [
    (0, "connections/s, peak phase (higher is better)"),
    (2, "handshake p99, latency phase (µs, lower is better)"),
];

/// A side's values of one metric, each with whether its trial is flagged.
fn values(side: &[Named<'_>], metric: usize) -> Vec<(f64, bool)> {
    side.iter()
        .filter_map(|r| {
            let flagged = !crate::analysis::trial_flags(r.record).is_empty();
            metric_values(r.record)[metric].map(|v| (v, flagged))
        })
        .collect()
}

/// `A: tcp_timestamps=1`: the side named by its trials' legend names, as `compare` names a
/// side by its labels (trial tags `#3` dropped), shortened as `compare` shortens it
/// ([`crate::analysis::short_name`]); a name cut to `A` is numbered in the footnote.
pub(super) fn side_name(side: &[Named<'_>], letter: &str, names: &mut Names) -> String {
    let name = crate::analysis::side_name_of(side.iter().map(|r| r.name.as_str()));
    if name == "unlabelled" {
        return letter.to_string();
    }
    let short = crate::analysis::short_name(&name, letter);
    if short == letter && name != letter {
        // `A [1]`, the whole name in the footnote.
        format!("{letter} [{}]", names.number(&format!("{letter} = {name}")))
    } else if short == letter {
        short
    } else {
        format!("{letter}: {short}")
    }
}

/// Draws the A/B panels; `a` and `b` are the two sides' trials.
pub(crate) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    a: &[Named<'_>],
    b: &[Named<'_>],
    names: &mut Names,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    if a.is_empty() || b.is_empty() {
        return Err(Problem::Empty(
            "an A/B plot needs records on both sides (A files -- B files)".into(),
        ));
    }
    let names = [side_name(a, "A", names), side_name(b, "B", names)];
    let root = root.titled("A/B trials (dots) and medians (bars)", ("sans-serif", 24))?;
    let panels = root.split_evenly((1, PANELS.len()));
    for (area, (metric, label)) in panels.iter().zip(PANELS) {
        let sides = [values(a, metric), values(b, metric)];
        if sides.iter().any(Vec::is_empty) {
            return Err(Problem::Empty(format!(
                "{} is missing from the records",
                METRICS[metric].0
            )));
        }
        // The clean trials set the range; flagged ones only when there is no clean one.
        let clean_max = sides
            .iter()
            .flatten()
            .filter(|v| !v.1)
            .map(|v| v.0)
            .fold(f64::NAN, f64::max);
        let max = if clean_max.is_nan() {
            sides.iter().flatten().map(|v| v.0).fold(0.0, f64::max)
        } else {
            clean_max
        };
        let top = headroom(max, 1.0);
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..1.5, 0.0..top)?;
        let label_names = names.clone();
        chart
            .configure_mesh()
            .y_desc(label)
            .x_desc("side")
            .x_labels(2)
            .x_label_formatter(&move |x: &f64| {
                if (x - x.round()).abs() > 1e-6 {
                    return String::new();
                }
                label_names
                    .get(x.round() as usize)
                    .cloned()
                    .unwrap_or_default()
            })
            .y_label_formatter(&|v| crate::numfmt::axis(*v))
            .disable_x_mesh()
            .draw()?;
        let mut any_flagged = false;
        let mut off_scale = false;
        for (s, vals) in sides.iter().enumerate() {
            let c = color(s);
            let n = vals.len() as f64;
            let x_of = |i: usize| s as f64 - 0.2 + 0.4 * (i as f64 + 0.5) / n;
            chart.draw_series(vals.iter().enumerate().filter(|(_, &(v, _))| v <= top).map(
                |(i, &(v, flagged))| {
                    let style = if flagged {
                        c.stroke_width(2)
                    } else {
                        c.filled()
                    };
                    Circle::new((x_of(i), v), 5, style)
                },
            ))?;
            // Above the range (flagged trials only): a hollow triangle on the top edge each,
            // and one line per side with how many and the largest value.
            let above: Vec<(usize, f64)> = vals
                .iter()
                .enumerate()
                .filter(|(_, &(v, _))| v > top)
                .map(|(i, &(v, _))| (i, v))
                .collect();
            if !above.is_empty() {
                off_scale = true;
                chart.draw_series(
                    above
                        .iter()
                        .map(|&(i, _)| TriangleMarker::new((x_of(i), top), 7, c.stroke_width(2))),
                )?;
                let largest = above.iter().map(|a| a.1).fold(f64::NAN, f64::max);
                let what = if above.len() == 1 {
                    format!("off scale: {}", crate::numfmt::value(largest))
                } else {
                    format!(
                        "{} off scale, up to {}",
                        above.len(),
                        crate::numfmt::value(largest)
                    )
                };
                chart.draw_series([Text::new(
                    what,
                    (s as f64 - 0.45, top * 0.95),
                    ("sans-serif", 12).into_font().color(&c),
                )])?;
            }
            let clean: Vec<f64> = vals.iter().filter(|v| !v.1).map(|v| v.0).collect();
            any_flagged |= clean.len() < vals.len();
            if clean.is_empty() {
                continue; // every trial flagged: no median, as compare gives no verdict
            }
            let m = median(&clean);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(s as f64 - 0.3, m), (s as f64 + 0.3, m)],
                    c.stroke_width(3),
                )))?
                .label(format!("{} median {}", names[s], crate::numfmt::value(m)))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3))
                });
        }
        if any_flagged {
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
                .label("hollow: flagged trial (warning in its record), not in the median")
                .legend(|(x, y)| Circle::new((x + 10, y), 5, BLACK.stroke_width(2)));
        }
        if off_scale {
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
                .label("triangle: flagged trial above the clean trials' range")
                .legend(|(x, y)| TriangleMarker::new((x + 10, y), 6, BLACK.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    Ok(())
}
