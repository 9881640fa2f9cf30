//! A capacity sweep: achieved against offered rate (with the ideal y = x), and handshake latency
//! at the SLO's quantile on a second, logarithmic axis, with the SLO as a dashed line and the
//! knee marked. Records without an SLO in their config use p99 and draw no SLO or knee.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, headroom, latency_unit, DrawResult, Named, Names, Problem};
use crate::analysis::{criteria_of, knee, steps_from_record, Criteria, SloLatency};
use crate::numfmt;

/// Draws the sweep curves of each record's open-loop phases.
pub(crate) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    records: &[Named<'_>],
    names: &mut Names,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    // A sweep's phases are its steps (`step-1`, …); the one open-loop phase of a bench or load
    // record is one rate, not a sweep (it drew a one-point "capacity sweep" with exit 0).
    let sweeps: Vec<_> = records
        .iter()
        .filter(|r| r.record.phases.iter().any(|p| p.name.starts_with("step-")))
        .map(|r| {
            let c: Option<Criteria> = criteria_of(r.record);
            let (latency, q) = c.as_ref().map_or((SloLatency::Handshake, 0.99), |c| {
                (c.slo.latency, c.slo.quantile)
            });
            let steps = steps_from_record(r.record, latency, q);
            let k = c
                .as_ref()
                .and_then(|c| knee(&steps, c, r.record.run.server_cpus.len()));
            (names.short(&r.name), steps, c, k)
        })
        .filter(|(_, s, _, _)| !s.is_empty())
        .collect();
    let slo_ns: Vec<f64> = sweeps
        .iter()
        .filter_map(|(_, _, c, _)| c.as_ref().map(|c| c.slo.max_ns as f64))
        .collect();
    if sweeps.is_empty() {
        return Err(Problem::Empty(
            "no record is a sweep (its phases are the steps step-1, step-2, …; a bench or load record's open-loop phase is one rate): write one with `connstorm sweep`".into(),
        ));
    }
    let steps = || sweeps.iter().flat_map(|(_, s, _, _)| s.iter());
    let max_rate = steps()
        .map(|s| s.offered_per_sec.max(s.achieved_per_sec.unwrap_or(0.0)))
        .fold(0.0, f64::max);
    let max_ns = steps()
        .filter_map(|s| s.latency_ns)
        .map(|v| v as f64)
        .chain(slo_ns.iter().copied())
        .fold(0.0, f64::max);
    let min_ns = steps()
        .filter_map(|s| s.latency_ns)
        .map(|v| v as f64)
        .chain(slo_ns.iter().copied())
        .fold(f64::INFINITY, f64::min);
    // The SLO's latency and percentile (`handshake p99`, `response p99.9`).
    let quantile_name = sweeps
        .iter()
        .find_map(|(_, _, c, _)| c.as_ref())
        .map_or_else(|| "handshake p99".to_string(), |c| c.slo.column());
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
        .x_label_formatter(&|v| numfmt::axis(*v))
        .y_label_formatter(&|v| numfmt::axis(*v))
        .draw()?;
    chart
        .configure_secondary_axes()
        .y_desc(format!("{quantile_name} ({unit}, log scale)"))
        .y_label_formatter(&|v| numfmt::axis(*v))
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            [(0.0, 0.0), (top, top)],
            BLACK.mix(0.3).stroke_width(1),
        ))?
        .label("achieved = offered")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.3)));
    for (i, (name, steps, criteria, k)) in sweeps.iter().enumerate() {
        let c = color(2 * i);
        // A step without a success has no achieved rate: no point (not one at 0).
        let achieved: Vec<_> = steps
            .iter()
            .filter_map(|s| Some((s.offered_per_sec, s.achieved_per_sec?)))
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
            .label(format!("{name} {quantile_name}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c2.stroke_width(2)));
        if let Some(c) = criteria {
            let y = c.slo.max_ns as f64 / div;
            // Dashed: short segments along the SLO.
            let dashes = (0..40).map(|d| {
                let x0 = top * d as f64 / 40.0;
                PathElement::new(vec![(x0, y), (x0 + top / 80.0, y)], c2.stroke_width(2))
            });
            chart
                .draw_secondary_series(dashes)?
                .label(format!("{name} SLO {}", c.slo.text))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 8, y)], c2.stroke_width(2))
                });
        }
        if let Some(k) = k {
            let at = (k.step.offered_per_sec, k.achieved_per_sec);
            chart
                .draw_series([
                    Circle::new(at, 9, c.stroke_width(3)),
                    Circle::new(at, 3, c.filled()),
                ])?
                .label(format!(
                    "{name} knee: {} conn/s ({})",
                    numfmt::fixed(k.achieved_per_sec, 0),
                    k.step.name
                ))
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, c.stroke_width(2)));
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
