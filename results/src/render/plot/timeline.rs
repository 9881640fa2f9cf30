//! Connections per minute over time, one line per record and phase, a dot per row: filled for
//! a whole second, hollow for a partial one (its count scaled to its real length), so a phase
//! shorter than a second still shows its one row.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, headroom, DrawResult, Named, Problem};

/// Draws the timeline. Phases of a record follow each other on the time axis (phase *k* starts
/// where phase *k-1*'s measured seconds end).
pub(crate) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    records: &[Named<'_>],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let mut series = Vec::new();
    for r in records {
        let mut offset = 0.0;
        for p in &r.record.phases {
            let pts: Vec<(f64, f64, bool)> = p
                .timeline
                .iter()
                .map(|row| {
                    (
                        offset + row.t_secs,
                        row.per_sec(row.successes) * 60.0,
                        row.is_partial(),
                    )
                })
                .collect();
            if !pts.is_empty() {
                series.push((format!("{} {}", r.name, p.name), pts));
            }
            offset += p.measured_secs;
        }
    }
    if series.is_empty() {
        return Err(Problem::Empty("no record has a per-second timeline".into()));
    }
    let max_t = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|&(t, _, _)| t))
        .fold(1.0, f64::max);
    let max_cpm = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|&(_, c, _)| c))
        .fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .caption("Connections per minute over time", ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..max_t, 0.0..headroom(max_cpm, 60.0))?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("connections per minute (CPM)")
        .y_label_formatter(&|v| crate::numfmt::axis(*v))
        .draw()?;
    for (i, (name, pts)) in series.into_iter().enumerate() {
        let c = color(i);
        chart.draw_series(pts.iter().map(|&(t, v, partial)| {
            Circle::new(
                (t, v),
                4,
                if partial {
                    c.stroke_width(2)
                } else {
                    c.filled()
                },
            )
        }))?;
        chart
            .draw_series(LineSeries::new(
                pts.into_iter().map(|(t, v, _)| (t, v)),
                c.stroke_width(2),
            ))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
