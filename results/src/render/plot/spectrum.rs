//! Latency percentile spectrum: latency against percentile, x on a log scale of 1/(1-p).

use hdrhistogram::Histogram;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, latency_unit, DrawResult, Groups, Legend, LegendCap, Named, Names, Problem};
use crate::analysis::latency_phase;
use crate::record::Latency;

/// Highest x drawn: 10^-5 tail, i.e. p99.999.
const MAX_NINES: f64 = 5.0;

/// Right margin, px: half the width of the widest x label (`99.999%`) plus some air.
const RIGHT_MARGIN_PX: u32 = 45;

/// The y range of a log axis holding `min..=max` (in the axis unit): from the power of ten at
/// or below `min` (at least 0.001, so a zero latency still has a place) to 1.25 × `max`.
pub(crate) fn y_range(min: f64, max: f64) -> (f64, f64) {
    let min = if min.is_finite() && min > 0.0 {
        min
    } else {
        1.0
    };
    let lo = 10f64.powf(min.log10().floor()).max(1e-3);
    let hi = if max.is_finite() && max > lo {
        max * 1.25
    } else {
        lo * 10.0
    };
    (lo, hi)
}

/// Labelled y values of a log axis: 1, 2 and 5 × each power of ten within `lo..=hi`.
pub(crate) fn y_key_points(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if v >= lo * (1.0 - 1e-9) && v <= hi {
                out.push(v);
            }
        }
        decade *= 10.0;
    }
    out
}

/// An axis value without noise digits: `0.5`, `20`, `1,500` ([`crate::numfmt::axis`]).
fn axis_value(v: f64) -> String {
    crate::numfmt::axis(v)
}

/// Label of x = log10(1/(1-p)): `0%`, `90%`, `99%`, `99.9%`, `99.99%`.
pub(crate) fn percentile_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let decimals = (x.round() as i64 - 2).clamp(0, 6) as usize;
    format!("{p:.decimals$}%")
}

/// Points (x = log10(1/(1-p)), latency ns) of a histogram up to the deepest percentile its
/// sample count supports (at most p99.999).
pub(crate) fn points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let max_x = (h.len() as f64).log10().clamp(0.0, MAX_NINES);
    let steps = (max_x * 50.0).ceil() as usize;
    (0..=steps)
        .map(|i| {
            let x = max_x * i as f64 / steps.max(1) as f64;
            let q = 1.0 - 10f64.powf(-x);
            (x, h.value_at_quantile(q) as f64)
        })
        .collect()
}

/// One line of the spectrum.
struct Line {
    /// Its legend entry (`None`: it shares its group's entry).
    label: Option<String>,
    /// Its colour index.
    color: usize,
    /// Drawn faint and left out of the axis range (a flagged trial of an A/B set).
    faint: bool,
    points: Vec<(f64, f64)>,
}

/// Draws the spectrum: handshake latency of each record's latency phase; with one record,
/// also its service and first-byte latency. A sweep record (several open-loop phases) draws
/// the handshake latency of every step, not only the last (overloaded) one. An A/B set's trials
/// are one colour and one legend entry per side ([`Groups`]); its flagged trials are faint and
/// do not set the axis range.
pub(crate) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    records: &[Named<'_>],
    names: &mut Names,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let groups = Groups::of(records);
    let grouped = groups.grouped();
    let mut labelled = vec![false; groups.names.len()];
    let kinds: &[Latency] = if records.len() == 1 {
        &Latency::CONNECTIONS
    } else {
        &[Latency::Handshake]
    };
    let mut series: Vec<Line> = Vec::new();
    for (ri, r) in records.iter().enumerate() {
        let g = groups.of[ri];
        let faint = grouped && !crate::analysis::trial_flags(r.record).is_empty();
        let open: Vec<&crate::record::PhaseRecord> = r
            .record
            .phases
            .iter()
            .filter(|p| matches!(p.pattern, crate::record::Pattern::Open { .. }))
            .collect();
        let (phases, kinds): (Vec<&crate::record::PhaseRecord>, &[Latency]) = if open.len() > 1 {
            (open, &[Latency::Handshake])
        } else {
            // A record without an open-loop phase (`load --concurrency`) draws its first phase.
            let phase = latency_phase(r.record).or_else(|| r.record.phases.first());
            (phase.into_iter().collect(), kinds)
        };
        for (phase, &which) in phases
            .iter()
            .flat_map(|p| kinds.iter().map(move |k| (*p, k)))
        {
            let Ok(Some(h)) = phase.histograms.decode(which) else {
                continue;
            };
            if h.is_empty() {
                continue;
            }
            let label = if grouped {
                // One entry per side (its first series), named for the side.
                (!std::mem::replace(&mut labelled[g], true)).then(|| {
                    format!(
                        "{} {} ({})",
                        names.short(&groups.name(g)),
                        which.name(),
                        phase.name
                    )
                })
            } else {
                Some(format!(
                    "{} {} ({})",
                    names.short(&r.name),
                    which.name(),
                    phase.name
                ))
            };
            series.push(Line {
                label,
                color: if grouped { g } else { series.len() },
                faint,
                points: points(&h),
            });
        }
    }
    if series.is_empty() {
        return Err(Problem::Empty("no record has latency samples".into()));
    }
    // Faint (flagged) lines do not set the range unless every line is faint.
    let all_faint = series.iter().all(|l| l.faint);
    let ys = || {
        series
            .iter()
            .filter(|l| all_faint || !l.faint)
            .flat_map(|l| l.points.iter().map(|&(_, y)| y))
    };
    let max_ns = ys().fold(0.0, f64::max);
    let min_ns = ys().filter(|&y| y > 0.0).fold(f64::INFINITY, f64::min);
    let max_x = series
        .iter()
        .flat_map(|l| l.points.last().map(|&(x, _)| x))
        .fold(1.0, f64::max);
    let (unit, div) = latency_unit(max_ns);
    let (y_lo, y_hi) = y_range(min_ns / div, max_ns / div);
    let mut chart = ChartBuilder::on(root)
        .caption("Latency by percentile", ("sans-serif", 24))
        .margin(15)
        // Room for the last x label (`99.999%`), which is centred on the right edge.
        .margin_right(RIGHT_MARGIN_PX)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            0.0..max_x,
            (y_lo..y_hi)
                .log_scale()
                .with_key_points(y_key_points(y_lo, y_hi)),
        )?;
    chart
        .configure_mesh()
        .x_desc("percentile (log scale of 1/(1-p))")
        .y_desc(format!("latency ({unit}, log scale)"))
        .x_labels(max_x.ceil() as usize + 1)
        .x_label_formatter(&|x| percentile_label(*x))
        .y_label_formatter(&|y| axis_value(*y))
        .draw()?;
    let mut cap = LegendCap::new(series.iter().filter(|l| l.label.is_some()).count());
    for line in series {
        let c = color(line.color);
        let style = if line.faint {
            c.mix(0.3).stroke_width(1)
        } else {
            c.stroke_width(2)
        };
        // Flagged lines above the range run along its top edge.
        let drawn = chart.draw_series(LineSeries::new(
            line.points
                .into_iter()
                .map(|(x, y)| (x, (y / div).clamp(y_lo, y_hi))),
            style,
        ))?;
        match cap.next(line.label) {
            Some(Legend::Named(name)) => {
                drawn.label(name).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            }
            Some(Legend::More(n)) => {
                drawn
                    .label(format!("… and {n} more lines"))
                    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
            }
            None => {}
        }
    }
    if grouped && series_had_faint(records, &groups) {
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
            .label("faint: flagged trial (warning in its record), not setting the range")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.3)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// Whether an A/B set has a flagged trial (drawn faint).
fn series_had_faint(records: &[Named<'_>], groups: &Groups) -> bool {
    groups.grouped()
        && records
            .iter()
            .any(|r| !crate::analysis::trial_flags(r.record).is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_usual_percentiles() {
        let labels: Vec<_> = [0.0, 1.0, 2.0, 3.0, 4.0]
            .iter()
            .map(|&x| percentile_label(x))
            .collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%"]);
        assert_eq!(percentile_label(std::f64::consts::LOG10_2), "50%");
    }

    #[test]
    fn y_range_spans_decades_from_a_power_of_ten() {
        assert_eq!(y_range(23.0, 4_000.0), (10.0, 5_000.0));
        assert_eq!(y_range(0.0, 0.0), (1.0, 10.0));
        assert_eq!(y_key_points(10.0, 275.0), [10.0, 20.0, 50.0, 100.0, 200.0]);
        assert_eq!(axis_value(0.5), "0.5");
        assert_eq!(axis_value(2000.0), "2,000");
    }

    #[test]
    fn points_rise_and_stop_where_samples_run_out() {
        let mut h = crate::record::new_latency_histogram();
        for v in 1..=1_000u64 {
            h.record(v * 1_000).unwrap();
        }
        let p = points(&h);
        assert!(
            (p.last().unwrap().0 - 3.0).abs() < 1e-9,
            "1000 samples reach p99.9"
        );
        assert!(p.windows(2).all(|w| w[0].1 <= w[1].1));
        assert_eq!(p.last().unwrap().1, h.value_at_quantile(0.999) as f64);
    }
}
