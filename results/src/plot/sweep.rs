//! A capacity sweep: achieved against offered rate (with the ideal y = x), and handshake p99 on
//! a second, logarithmic axis.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, headroom, latency_unit, DrawResult, Named, Problem};
use crate::sweep::steps_from_record;

/// Draws the sweep curves of each record's open-loop phases.
pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, records: &[Named<'_>]) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let sweeps: Vec<_> = records
        .iter()
        .map(|r| (r.name.clone(), steps_from_record(r.record, 0.99)))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    if sweeps.is_empty() {
        return Err(Problem::Empty(
            "no record has open-loop phases (write one with `connstorm sweep`)".into(),
        ));
    }
    let steps = || sweeps.iter().flat_map(|(_, s)| s.iter());
    let max_rate = steps()
        .map(|s| s.offered_per_sec.max(s.achieved_per_sec))
        .fold(0.0, f64::max);
    let max_ns = steps()
        .filter_map(|s| s.latency_ns)
        .map(|v| v as f64)
        .fold(0.0, f64::max);
    let min_ns = steps()
        .filter_map(|s| s.latency_ns)
        .map(|v| v as f64)
        .fold(f64::INFINITY, f64::min);
    let (unit, div) = latency_unit(max_ns);
    let top = headroom(max_rate, 1.0);
    // Latencies across a sweep span decades (µs below the knee, ms or s past it): log scale.
    let lat_lo = if min_ns.is_finite() && min_ns > 0.0 {
        min_ns / div / 2.0
    } else {
        0.001
    };
    let lat_hi = (max_ns / div * 2.0).max(lat_lo * 10.0);
    let mut chart = ChartBuilder::on(root)
        .caption("Capacity sweep", ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .right_y_label_area_size(80)
        .build_cartesian_2d(0.0..top, 0.0..top)?
        .set_secondary_coord(0.0..top, (lat_lo..lat_hi).log_scale());
    chart
        .configure_mesh()
        .x_desc("offered rate (connections/s)")
        .y_desc("achieved rate (connections/s)")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()?;
    chart
        .configure_secondary_axes()
        .y_desc(format!("handshake p99 ({unit}, log scale)"))
        .y_label_formatter(&|v| {
            if *v >= 10.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        })
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            [(0.0, 0.0), (top, top)],
            BLACK.mix(0.3).stroke_width(1),
        ))?
        .label("achieved = offered")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.3)));
    for (i, (name, steps)) in sweeps.iter().enumerate() {
        let c = color(2 * i);
        let achieved: Vec<_> = steps
            .iter()
            .map(|s| (s.offered_per_sec, s.achieved_per_sec))
            .collect();
        chart
            .draw_series(LineSeries::new(achieved, c.stroke_width(2)).point_size(3))?
            .label(format!("{name} achieved"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        let c2 = color(2 * i + 1);
        let p99: Vec<_> = steps
            .iter()
            .filter_map(|s| s.latency_ns.map(|l| (s.offered_per_sec, l as f64 / div)))
            .collect();
        chart
            .draw_secondary_series(LineSeries::new(p99, c2.stroke_width(2)).point_size(3))?
            .label(format!("{name} handshake p99"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c2.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
