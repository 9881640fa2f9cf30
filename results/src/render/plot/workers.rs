//! Share of accepted connections per server worker (are the SO_REUSEPORT listeners balanced?).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, DrawResult, Groups, Legend, LegendCap, Named, Names, Problem};
use crate::analysis::rate_phase;

/// Draws one bar per worker and record (grouped by worker), from each record's rate phase; an
/// A/B set's trials share their side's colour and legend entry ([`Groups`]).
pub(crate) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    records: &[Named<'_>],
    names: &mut Names,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let groups = Groups::of(records);
    let mut labelled = vec![false; groups.names.len()];
    let mut series = Vec::new();
    for (ri, r) in records.iter().enumerate() {
        let g = groups.of[ri];
        let Some(phase) = rate_phase(r.record) else {
            continue;
        };
        let Some(server) = &phase.server else {
            continue;
        };
        let total = server.accepted();
        if total == 0 {
            continue;
        }
        let shares: Vec<(usize, f64)> = server
            .workers
            .iter()
            .map(|w| (w.cpu, w.accepted as f64 / total as f64 * 100.0))
            .collect();
        let label = if groups.grouped() {
            (!std::mem::replace(&mut labelled[g], true))
                .then(|| format!("{} ({})", names.short(&groups.name(g)), phase.name))
        } else {
            Some(format!("{} ({})", names.short(&r.name), phase.name))
        };
        let colour = if groups.grouped() { g } else { series.len() };
        series.push((label, colour, shares));
    }
    if series.is_empty() {
        return Err(Problem::Empty(
            "no record has server worker accept counts (was --target used?)".into(),
        ));
    }
    let workers = series.iter().map(|(_, _, s)| s.len()).max().unwrap_or(1);
    let max_share = series
        .iter()
        .flat_map(|(_, _, s)| s.iter().map(|&(_, v)| v))
        .fold(0.0, f64::max);
    let cpus: Vec<usize> = series[0].2.iter().map(|&(cpu, _)| cpu).collect();
    let mut chart = ChartBuilder::on(root)
        .caption("Accepted connections per server worker", ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            -0.5..workers as f64 - 0.5,
            0.0..(max_share * 1.15).clamp(1.0, 100.0),
        )?;
    chart
        .configure_mesh()
        .x_desc("server worker (pinned CPU)")
        .y_desc("share of accepted connections (%)")
        .x_labels(workers.min(32))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() > 1e-6 || i < 0.0 {
                return String::new();
            }
            cpus.get(i as usize)
                .map_or(String::new(), |c| format!("cpu {c}"))
        })
        .disable_x_mesh()
        .draw()?;
    let n = series.len() as f64;
    let width = 0.8 / n;
    let mut cap = LegendCap::new(series.iter().filter(|s| s.0.is_some()).count());
    for (k, (label, colour, shares)) in series.into_iter().enumerate() {
        let c = color(colour);
        let left = |i: usize| i as f64 - 0.4 + width * k as f64;
        let drawn = chart.draw_series(shares.iter().enumerate().map(|(i, &(_, v))| {
            Rectangle::new([(left(i), 0.0), (left(i) + width * 0.9, v)], c.filled())
        }))?;
        match cap.next(label) {
            Some(Legend::Named(name)) => {
                drawn.label(name).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 15, y + 5)], c.filled())
                });
            }
            Some(Legend::More(n)) => {
                drawn.label(format!("… and {n} more")).legend(|(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 15, y + 5)], BLACK.mix(0.4).filled())
                });
            }
            None => {}
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
