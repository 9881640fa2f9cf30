//! A scale run: connections/s against cores (one line per record and shape) and scaling
//! efficiency on a second axis (0 to 1.2, the knee's threshold dashed), with each knee circled.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, headroom, DrawResult, Named, Problem};
use crate::numfmt;
use crate::record::ScaleRecord;

/// Draws the rate and efficiency curves of every record with a scale section.
pub(crate) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    records: &[Named<'_>],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let runs: Vec<(String, ScaleRecord)> = records
        .iter()
        .filter_map(|r| {
            let mut s = r.record.scale.clone()?;
            crate::analysis::scale_figures(&mut s, &r.record.phases);
            Some((r.name.clone(), s))
        })
        .filter(|(_, s)| s.steps.iter().any(|x| x.achieved_per_sec.is_some()))
        .collect();
    if runs.is_empty() {
        return Err(Problem::Empty(
            "no record is a scale run with a measured step: write one with `connstorm scale`"
                .into(),
        ));
    }
    let steps = || runs.iter().flat_map(|(_, s)| s.steps.iter());
    let max_cores = steps().map(|s| s.cores).max().unwrap_or(1) as f64;
    let max_rate = steps()
        .filter_map(|s| s.achieved_per_sec)
        .fold(0.0, f64::max);
    let top = headroom(max_rate, 1.0);
    let right = max_cores + (max_cores / 10.0).max(0.5);
    let mut chart = ChartBuilder::on(root)
        .caption("Connection rate by cores", ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .right_y_label_area_size(60)
        .build_cartesian_2d(0.0..right, 0.0..top)?
        .set_secondary_coord(0.0..right, 0.0..1.2);
    chart
        .configure_mesh()
        .x_desc("cores (server + load pairs, or load cores with a fixed server)")
        .y_desc("connections/s (closed-loop peak)")
        .x_label_formatter(&|v| numfmt::axis(*v))
        .y_label_formatter(&|v| numfmt::axis(*v))
        .draw()?;
    chart
        .configure_secondary_axes()
        .y_desc("scaling efficiency (rate_N / (N × rate_1))")
        .y_label_formatter(&|v| format!("{v:.1}"))
        .draw()?;
    let mut series = 0;
    for (name, s) in &runs {
        let mut shapes: Vec<&str> = s.steps.iter().map(|x| x.shape.as_str()).collect();
        shapes.dedup();
        for shape in shapes {
            let of = || s.steps.iter().filter(move |x| x.shape == shape);
            let c = color(series);
            series += 1;
            let rate: Vec<(f64, f64)> = of()
                .filter_map(|x| Some((x.cores as f64, x.achieved_per_sec?)))
                .collect();
            chart
                .draw_series(LineSeries::new(rate, c.stroke_width(2)).point_size(4))?
                .label(format!("{name} {shape}: conn/s"))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            let eff: Vec<(f64, f64)> = of()
                .filter_map(|x| Some((x.cores as f64, x.efficiency?)))
                .collect();
            chart
                .draw_secondary_series(
                    LineSeries::new(eff, c.mix(0.6).stroke_width(1)).point_size(3),
                )?
                .label(format!("{name} {shape}: efficiency"))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.mix(0.6).stroke_width(1))
                });
            if let Some(k) = s.knees.iter().find(|k| k.shape == shape) {
                let at = (k.cores as f64, k.efficiency);
                chart.draw_secondary_series([Circle::new(at, 9, c.stroke_width(3))])?;
            }
        }
        let y = s.efficiency_threshold;
        let dashes = (0..40).map(|d| {
            let x0 = right * d as f64 / 40.0;
            PathElement::new(vec![(x0, y), (x0 + right / 80.0, y)], BLACK.mix(0.4))
        });
        chart
            .draw_secondary_series(dashes)?
            .label(format!(
                "{name}: knee threshold {}",
                numfmt::fixed(s.efficiency_threshold, 2)
            ))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 8, y)], BLACK.mix(0.4)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
