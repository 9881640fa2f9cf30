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

/// Issue 37, "plots": repeated colours. The first two dozen series colours are all distinct
/// (no two closer than 60 in RGB distance).
#[test]
fn series_colours_are_distinct() {
    let cs: Vec<(i32, i32, i32)> = (0..24)
        .map(|i| {
            let c = color(i);
            (i32::from(c.0), i32::from(c.1), i32::from(c.2))
        })
        .collect();
    for i in 0..cs.len() {
        for j in i + 1..cs.len() {
            let (a, b) = (cs[i], cs[j]);
            let d = (((a.0 - b.0).pow(2) + (a.1 - b.1).pow(2) + (a.2 - b.2).pow(2)) as f64).sqrt();
            assert!(
                d >= 60.0,
                "colours {i} {a:?} and {j} {b:?} are {d:.0} apart"
            );
        }
    }
}

/// An `ab` run's records: `n` trials a side, labelled `<side>#<k>` as `ab` writes them; trial
/// 3 of A flagged with a 103 ms handshake p99.
fn ab_set(n: usize) -> Vec<RunRecord> {
    let mut out = Vec::new();
    for k in 1..=n {
        for side in ["A", "B"] {
            let mut r = RunRecord::example();
            r.warnings.clear();
            for p in &mut r.phases {
                p.counters.clear();
                if let Some(c) = &mut p.cross_check {
                    c.agree = true;
                }
            }
            r.label = format!("{side}#{k}");
            if side == "A" && k == 3 {
                r.warnings
                    .push("latency: other work used 60% of the benchmark CPUs".into());
                let mut h = crate::record::new_latency_histogram();
                h.record_n(103_000_000, 1_000).unwrap();
                r.phases[1].histograms = Histograms::encode(&h, &h, None);
            }
            out.push(r);
        }
    }
    out
}

fn legend_like(svg: &str, needle: &str) -> usize {
    texts(svg).iter().filter(|t| t.contains(needle)).count()
}

/// Issue 37, "plots": a 40-entry legend that overflows; one flagged, excluded 103 ms trial set
/// the p99 axis so every other point sat on 0. The legend is by side, and the flagged trial is
/// drawn apart (off scale, marked) without setting the range.
#[test]
fn an_ab_sets_plots_have_a_legend_by_side_and_a_flagged_trial_does_not_set_the_range() {
    let recs = ab_set(20);
    let named: Vec<Named<'_>> = recs.iter().map(|r| named(&r.label, r)).collect();
    for kind in [PlotKind::Spectrum, PlotKind::Timeline, PlotKind::Workers] {
        let svg = plot_svg(kind, &named, &[]).unwrap();
        assert_eq!(
            legend_like(&svg, "A (20 trials)"),
            1,
            "{kind:?}: {:?}",
            texts(&svg)
        );
        assert_eq!(legend_like(&svg, "B (20 trials)"), 1, "{kind:?}");
        assert!(
            !texts(&svg).iter().any(|t| t.contains("A#")),
            "{kind:?}: no entry per trial"
        );
    }
    // The spectrum's axis is the clean trials' (in µs, under 5 ms), not the flagged 103 ms.
    let svg = plot_svg(PlotKind::Spectrum, &named, &[]).unwrap();
    assert!(
        has_text(&svg, "latency (µs, log scale)"),
        "{:?}",
        texts(&svg)
    );
    let ticks: Vec<f64> = texts(&svg)
        .iter()
        .filter_map(|t| t.trim().replace(',', "").parse::<f64>().ok())
        .collect();
    assert!(ticks.iter().all(|&t| t <= 5_000.0), "{ticks:?}");
    let (a, b): (Vec<Named<'_>>, Vec<Named<'_>>) =
        named.iter().cloned().partition(|n| n.name.starts_with('A'));
    let svg = plot_svg(PlotKind::Ab, &a, &b).unwrap();
    assert!(has_text(&svg, "off scale: 103,0"), "{:?}", texts(&svg));
    assert!(
        has_text(&svg, "triangle: flagged trial above the clean trials"),
        "{:?}",
        texts(&svg)
    );
    // The p99 axis ends below 10 ms (10,000 µs): the clean trials are not squashed onto 0.
    let ticks: Vec<f64> = texts(&svg)
        .iter()
        .filter_map(|t| t.trim().replace(',', "").parse::<f64>().ok())
        .collect();
    assert!(ticks.iter().all(|&t| t < 10_000.0), "{ticks:?}");
}

/// Issue 37, "plots": long setup names overlapped. A name over 40 characters is cut and
/// numbered in the legend, with the whole name in the picture's footnote; `long_names` says
/// the same for the HTML page and `plot`'s stderr.
#[test]
fn long_names_are_cut_with_the_whole_name_in_a_footnote() {
    let a = RunRecord::example();
    let long = "setup: ethtool -C eth0 rx-usecs 0 adaptive-rx off; sysctl -w net.core.busy_poll=50";
    let recs = [named(long, &a), named("short", &a)];
    let svg = plot_svg(PlotKind::Spectrum, &recs, &[]).unwrap();
    let cut = texts(&svg)
        .into_iter()
        .map(|t| t.trim().to_string())
        .find(|t| t.contains("…[1]"))
        .unwrap_or_else(|| panic!("{:?}", texts(&svg)));
    assert!(
        cut.starts_with("setup: ethtool -C eth0 rx-usecs 0"),
        "{cut}"
    );
    assert!(has_text(&svg, &format!("[1] {long}")), "{:?}", texts(&svg));
    assert!(has_text(&svg, "short handshake (latency)"));
    assert_eq!(
        long_names(PlotKind::Spectrum, &recs, &[]),
        [format!("[1] {long}")]
    );
    // A/B: the side is `A`, its whole name in the footnote.
    let (x, y) = ([named(long, &a)], [named("B#1", &a)]);
    let svg = plot_svg(PlotKind::Ab, &x, &y).unwrap();
    assert!(has_text(&svg, "A [1]"), "{:?}", texts(&svg));
    assert!(
        has_text(&svg, &format!("[1] A = {long}")),
        "{:?}",
        texts(&svg)
    );
}

/// The legend cap: ten labelled series all get their names; twelve get nine names and one
/// "… and 3 more", and the last two nothing; an unlabelled series never takes an entry.
#[test]
fn a_legend_holds_at_most_legend_max_entries() {
    let mut fits = LegendCap::new(LEGEND_MAX);
    for i in 0..LEGEND_MAX {
        assert!(matches!(fits.next(Some(i)), Some(Legend::Named(n)) if n == i));
    }
    let mut cap = LegendCap::new(LEGEND_MAX + 2);
    assert!(cap.next(None::<usize>).is_none());
    let entries: Vec<Option<Legend<usize>>> =
        (0..LEGEND_MAX + 2).map(|i| cap.next(Some(i))).collect();
    assert!(entries[..LEGEND_MAX - 1]
        .iter()
        .enumerate()
        .all(|(i, e)| matches!(e, Some(Legend::Named(n)) if *n == i)));
    assert!(matches!(entries[LEGEND_MAX - 1], Some(Legend::More(3))));
    assert!(entries[LEGEND_MAX..].iter().all(Option::is_none));
}
