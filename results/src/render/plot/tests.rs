//! Plot content checks: the SVG is parsed for its texts and shapes, not compared by pixels.

use super::*;
use crate::record::{Arrival, Histograms, Pattern, PhaseRecord};

/// The texts of an SVG's `<text>` elements, unescaped.
pub(crate) fn texts(svg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find("<text") {
        let after = &rest[start..];
        let Some(open_end) = after.find('>') else {
            break;
        };
        let Some(close) = after.find("</text>") else {
            break;
        };
        let t = after[open_end + 1..close]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        out.push(t);
        rest = &after[close + 7..];
    }
    out
}

fn has_text(svg: &str, needle: &str) -> bool {
    texts(svg).iter().any(|t| t.contains(needle))
}

fn named<'a>(name: &str, record: &'a RunRecord) -> Named<'a> {
    Named {
        name: name.into(),
        record,
    }
}

#[test]
fn spectrum_overlays_records_with_percentile_and_unit_labels() {
    let a = RunRecord::example();
    let mut b = RunRecord::example();
    b.phases[1].histograms = a.phases[0].histograms.clone();
    let svg = plot_svg(
        PlotKind::Spectrum,
        &[named("kernel-a", &a), named("kernel-b", &b)],
        &[],
    )
    .unwrap();
    for needle in [
        "latency (µs, log scale)",
        "percentile",
        "90%",
        "99%",
        "99.9%",
        "kernel-a handshake (latency)",
        "kernel-b handshake (latency)",
    ] {
        assert!(
            has_text(&svg, needle),
            "{needle:?} missing from {:?}",
            texts(&svg)
        );
    }
    assert!(svg.matches("<polyline").count() >= 2, "one line per record");
    assert!(
        !has_text(&svg, "service"),
        "several records: handshake only"
    );
    // One record: all its latency kinds.
    let one = svg_of(PlotKind::Spectrum, &a);
    assert!(has_text(&one, "kernel service (latency)"));
}

fn svg_of(kind: PlotKind, rec: &RunRecord) -> String {
    plot_svg(kind, &[named("kernel", rec)], &[]).unwrap()
}

#[test]
fn timeline_shows_cpm_per_phase_over_seconds() {
    let rec = RunRecord::example();
    let svg = svg_of(PlotKind::Timeline, &rec);
    for needle in [
        "connections per minute (CPM)",
        "time (s)",
        "kernel peak",
        "kernel latency",
    ] {
        assert!(
            has_text(&svg, needle),
            "{needle:?} missing from {:?}",
            texts(&svg)
        );
    }
    let mut empty = rec.clone();
    empty.phases.iter_mut().for_each(|p| p.timeline.clear());
    assert!(matches!(
        svg_err(PlotKind::Timeline, &empty),
        PlotError::Empty(_)
    ));
}

#[test]
fn timeline_draws_partial_rows_of_short_phases_hollow() {
    let mut rec = RunRecord::example();
    let row = |t_secs: f64, length_secs: f64, successes: u64| crate::record::TimelineRow {
        t_secs,
        length_secs,
        attempts: successes,
        successes,
        ..Default::default()
    };
    // A 0.8 s peak (one partial row) and a 1.2 s latency phase (a whole and a partial row).
    rec.phases[0].timeline = vec![row(0.8, 0.8, 1_600)];
    rec.phases[1].timeline = vec![row(1.0, 1.0, 1_600), row(1.2, 0.2, 320)];
    let svg = svg_of(PlotKind::Timeline, &rec);
    let circles: Vec<&str> = svg.split("<circle").skip(1).collect();
    assert_eq!(circles.len(), 3, "a dot per row: {svg}");
    let hollow = circles
        .iter()
        .filter(|c| c[..c.find('>').unwrap()].contains("fill=\"none\""))
        .count();
    assert_eq!(hollow, 2, "partial rows hollow: {circles:?}");
    assert!(has_text(&svg, "kernel peak"), "{:?}", texts(&svg));
}

fn svg_err(kind: PlotKind, rec: &RunRecord) -> PlotError {
    plot_svg(kind, &[named("kernel", rec)], &[]).unwrap_err()
}

#[test]
fn workers_plot_has_a_bar_per_worker() {
    let mut rec = RunRecord::example();
    let server = rec.phases[0].server.as_mut().unwrap();
    server.workers = (0..4)
        .map(|cpu| crate::record::WorkerAccepts {
            cpu,
            accepted: 100 + cpu as u64,
            cpu_run_ns: None,
        })
        .collect();
    let svg = svg_of(PlotKind::Workers, &rec);
    for needle in [
        "share of accepted connections (%)",
        "cpu 0",
        "cpu 3",
        "kernel (peak)",
    ] {
        assert!(
            has_text(&svg, needle),
            "{needle:?} missing from {:?}",
            texts(&svg)
        );
    }
    // Four bars plus the legend swatch (plotters draws filled rectangles as <rect>).
    assert!(
        svg.matches("<rect").count() >= 5,
        "{}",
        svg.matches("<rect").count()
    );
}

#[test]
fn ab_plot_names_both_sides_and_metrics() {
    let rec = RunRecord::example();
    let a = [named("off", &rec), named("off", &rec)];
    let b = [named("on", &rec), named("on", &rec)];
    let svg = plot_svg(PlotKind::Ab, &a, &b).unwrap();
    for needle in [
        "connections/s, peak phase (higher is better)",
        "handshake p99, latency phase (µs, lower is better)",
        "A: off",
        "B: on",
    ] {
        assert!(
            has_text(&svg, needle),
            "{needle:?} missing from {:?}",
            texts(&svg)
        );
    }
    assert!(
        svg.matches("<circle").count() >= 8,
        "a dot per trial per panel"
    );
    assert!(matches!(
        super::plot_svg(PlotKind::Ab, &a, &[]),
        Err(PlotError::Empty(_))
    ));
    assert!(!has_text(&svg, "hollow: flagged trial"), "no flagged trial");
}

/// A trial whose record carries a warning is drawn hollow and left out of the median, as
/// `compare` leaves it out of the verdict.
#[test]
fn ab_plot_marks_flagged_trials_and_leaves_them_out_of_the_median() {
    let rec = RunRecord::example();
    let mut flagged = RunRecord::example();
    flagged
        .warnings
        .push("latency: generator fell behind: 100.0% of starts late".into());
    let a = [named("off", &rec), named("off", &flagged)];
    let b = [named("on", &rec), named("on", &rec)];
    let svg = plot_svg(PlotKind::Ab, &a, &b).unwrap();
    assert!(
        has_text(
            &svg,
            "hollow: flagged trial (warning in its record), not in the median"
        ),
        "{:?}",
        texts(&svg)
    );
    assert!(
        svg.contains("fill=\"none\""),
        "a hollow dot is drawn for the flagged trial"
    );
}

/// A sweep record: open-loop steps at 1k..5k/s, latency rising with the rate.
fn sweep_record() -> RunRecord {
    let mut rec = RunRecord::example();
    rec.phases = (1..=5u64)
        .map(|i| {
            let mut h = crate::record::new_latency_histogram();
            h.record_n(20_000 * i * i, 100).unwrap();
            let rate = 1_000.0 * i as f64;
            PhaseRecord {
                name: format!("step-{i}"),
                pattern: Pattern::Open {
                    rate_per_sec: rate,
                    arrival: Arrival::Uniform,
                },
                offered_per_sec: Some(rate),
                achieved_per_sec: Some(rate.min(3_500.0)),
                attempts: 100,
                successes: 100,
                histograms: Histograms::encode(&h, &h, None),
                ..PhaseRecord::default()
            }
        })
        .collect();
    rec
}

#[test]
fn sweep_plot_draws_the_slo_and_marks_the_knee() {
    let mut rec = sweep_record();
    // Steps' p99: 20, 80, 180, 320, 500 µs; step 4 and 5 fall short of their offered rate.
    rec.config = serde_json::json!({"slo": "p99<200us", "max_errors": 0.001});
    let svg = svg_of(PlotKind::Sweep, &rec);
    for needle in [
        "kernel SLO p99<200us",
        "kernel knee: 3,000 conn/s (step-3)",
        "handshake p99 (µs, log scale)",
    ] {
        assert!(
            has_text(&svg, needle),
            "{needle:?} missing from {:?}",
            texts(&svg)
        );
    }
    assert!(
        !texts(&svg).iter().any(|t| t.ends_with(".0")),
        "axis labels without noise digits: {:?}",
        texts(&svg)
    );
}

#[test]
fn sweep_plot_has_both_axes_with_units() {
    let svg = svg_of(PlotKind::Sweep, &sweep_record());
    for needle in [
        "offered rate (connections/s)",
        "achieved rate (connections/s)",
        "handshake p99 (µs, log scale)",
        "kernel achieved",
        "kernel handshake p99",
        "achieved = offered",
    ] {
        assert!(
            has_text(&svg, needle),
            "{needle:?} missing from {:?}",
            texts(&svg)
        );
    }
    assert!(svg.matches("<polyline").count() >= 3);
}

#[test]
fn png_is_written_and_other_extensions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let rec = RunRecord::example();
    let path = dir.path().join("spectrum.png");
    write_plot(PlotKind::Spectrum, &[named("kernel", &rec)], &[], &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((width, height), PLOT_SIZE);
    let err = write_plot(
        PlotKind::Spectrum,
        &[named("kernel", &rec)],
        &[],
        &dir.path().join("x.gif"),
    )
    .unwrap_err();
    assert!(matches!(err, PlotError::Format { .. }), "{err}");
    assert!(err.to_string().contains("x.gif"));
}

/// The x attribute and text of every `<text>` element.
fn text_positions(svg: &str) -> Vec<(f64, String)> {
    let mut out = Vec::new();
    for (piece, text) in svg.split("<text").skip(1).zip(texts(svg)) {
        let x = piece
            .split_once(" x=\"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .and_then(|(x, _)| x.parse().ok());
        if let Some(x) = x {
            out.push((x, text));
        }
    }
    out
}

#[test]
fn spectrum_last_percentile_label_is_not_cut_off() {
    let mut rec = RunRecord::example();
    let mut h = crate::record::new_latency_histogram();
    for v in 1..=200_000u64 {
        h.record(20_000 + v).unwrap();
    }
    rec.phases[1].histograms = Histograms::encode(&h, &h, None);
    let svg = svg_of(PlotKind::Spectrum, &rec);
    let (x, label) = text_positions(&svg)
        .into_iter()
        .find(|(_, t)| t.trim() == "99.999%")
        .unwrap_or_else(|| panic!("no 99.999% label in {:?}", texts(&svg)));
    // Centred on x; 7 characters of a 12-14 px font are under 50 px wide.
    let half_width = 25.0;
    assert!(
        x + half_width <= f64::from(PLOT_SIZE.0),
        "{label:?} at x = {x} runs past the right edge {}",
        PLOT_SIZE.0
    );
    let y_labels: Vec<String> = texts(&svg)
        .iter()
        .map(|t| t.trim().to_string())
        .filter(|t| t.parse::<f64>().is_ok())
        .collect();
    let mut unique = y_labels.clone();
    unique.dedup();
    assert_eq!(unique, y_labels, "no repeated y labels");
}

/// A bench record's one open-loop phase is one rate, not a sweep: `--kind sweep` refuses it
/// (it drew a one-point "capacity sweep" and exited 0).
#[test]
fn a_sweep_plot_of_a_record_that_is_no_sweep_is_refused() {
    let bench = RunRecord::example();
    assert!(bench
        .phases
        .iter()
        .any(|p| matches!(p.pattern, crate::record::Pattern::Open { .. })));
    match svg_err(PlotKind::Sweep, &bench) {
        PlotError::Empty(why) => assert!(why.contains("no record is a sweep"), "{why}"),
        other => panic!("{other:?}"),
    }
}
