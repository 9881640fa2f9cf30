//! Connections per minute over time, one line per record and phase, a dot per row: filled for
//! a whole second, hollow for a partial one (its count scaled to its real length), so a phase
//! shorter than a second still shows its one row.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    color, headroom, DrawResult, Groups, Legend, LegendCap, Named, Names, Problem, LEGEND_MAX,
};

/// One record phase's dots and line: its legend entry (`None`: shares its group's), colour
/// index, whether it is faint (a flagged trial of an A/B set: not setting the range), points.
type Series = (Option<String>, usize, bool, Vec<(f64, f64, bool)>);

/// Draws the timeline. Phases of a record follow each other on the time axis (phase *k* starts
/// where phase *k-1*'s measured seconds end). An A/B set's trials are one colour and one legend
/// entry per side ([`Groups`]), its flagged trials faint and not setting the range; more than
/// [`LEGEND_MAX`] lines are one colour and entry per record.
pub(crate) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    records: &[Named<'_>],
    names: &mut Names,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let groups = Groups::of(records);
    let phases: usize = records.iter().map(|r| r.record.phases.len()).sum();
    // Per record and phase while the legend holds them; else per record, or per side of an
    // A/B set.
    let per_record = groups.grouped() || phases > LEGEND_MAX;
    let mut labelled = vec![false; groups.names.len()];
    let mut series: Vec<Series> = Vec::new();
    for (ri, r) in records.iter().enumerate() {
        let g = groups.of[ri];
        let faint = groups.grouped() && !crate::analysis::trial_flags(r.record).is_empty();
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
                let (label, colour) = if per_record {
                    let label = (!std::mem::replace(&mut labelled[g], true))
                        .then(|| names.short(&groups.name(g)));
                    (label, g)
                } else {
                    (
                        Some(format!("{} {}", names.short(&r.name), p.name)),
                        series.len(),
                    )
                };
                series.push((label, colour, faint, pts));
            }
            offset += p.measured_secs;
        }
    }
    if series.is_empty() {
        return Err(Problem::Empty("no record has a per-second timeline".into()));
    }
    let all_faint = series.iter().all(|s| s.2);
    let max_t = series
        .iter()
        .flat_map(|s| s.3.iter().map(|&(t, _, _)| t))
        .fold(1.0, f64::max);
    let max_cpm = series
        .iter()
        .filter(|s| all_faint || !s.2)
        .flat_map(|s| s.3.iter().map(|&(_, c, _)| c))
        .fold(0.0, f64::max);
    let top = headroom(max_cpm, 60.0);
    let mut chart = ChartBuilder::on(root)
        .caption("Connections per minute over time", ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..max_t, 0.0..top)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("connections per minute (CPM)")
        .y_label_formatter(&|v| crate::numfmt::axis(*v))
        .draw()?;
    let mut cap = LegendCap::new(series.iter().filter(|s| s.0.is_some()).count());
    let any_faint = series.iter().any(|s| s.2);
    for (label, colour, faint, pts) in series {
        let c = color(colour);
        let c = if faint { c.mix(0.3) } else { c.to_rgba() };
        // A faint (flagged) trial above the range runs along its top edge.
        let pts: Vec<(f64, f64, bool)> = pts
            .into_iter()
            .map(|(t, v, partial)| (t, v.min(top), partial))
            .collect();
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
        let drawn = chart.draw_series(LineSeries::new(
            pts.into_iter().map(|(t, v, _)| (t, v)),
            c.stroke_width(2),
        ))?;
        match cap.next(label) {
            Some(Legend::Named(name)) => {
                drawn.label(name).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            }
            Some(Legend::More(n)) => {
                drawn
                    .label(format!("… and {n} more"))
                    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
            }
            None => {}
        }
    }
    if any_faint && !all_faint {
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
            .label("faint: flagged trial (warning in its record), not setting the range")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.3)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
