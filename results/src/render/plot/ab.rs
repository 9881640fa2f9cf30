//! A vs B trials: one panel per metric (connections/s, handshake p99), each trial a dot,
//! each side's median a bar. A trial whose record carries a warning (see
//! [`crate::analysis::trial_flags`]) is drawn as a hollow dot and left out of the median, as
//! `compare` leaves it out of the verdict.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, headroom, DrawResult, Named, Problem};
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
/// side by its labels (trial tags `#3` dropped).
fn side_name(side: &[Named<'_>], fallback: &str) -> String {
    let name = crate::analysis::side_name_of(side.iter().map(|r| r.name.as_str()));
    if name == "unlabelled" {
        fallback.to_string()
    } else {
        format!("{fallback}: {name}")
    }
}

/// Draws the A/B panels; `a` and `b` are the two sides' trials.
pub(crate) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    a: &[Named<'_>],
    b: &[Named<'_>],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    if a.is_empty() || b.is_empty() {
        return Err(Problem::Empty(
            "an A/B plot needs records on both sides (A files -- B files)".into(),
        ));
    }
    let names = [side_name(a, "A"), side_name(b, "B")];
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
        let max = sides.iter().flatten().map(|v| v.0).fold(0.0, f64::max);
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..1.5, 0.0..headroom(max, 1.0))?;
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
        for (s, vals) in sides.iter().enumerate() {
            let c = color(s);
            let n = vals.len() as f64;
            chart.draw_series(vals.iter().enumerate().map(|(i, &(v, flagged))| {
                let x = s as f64 - 0.2 + 0.4 * (i as f64 + 0.5) / n;
                let style = if flagged {
                    c.stroke_width(2)
                } else {
                    c.filled()
                };
                Circle::new((x, v), 5, style)
            }))?;
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
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    Ok(())
}
