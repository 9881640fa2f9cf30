//! A comparison as text, Markdown or JSON.

use super::table::{self, Block, Table};
use crate::analysis::{Comparison, Direction, SideInfo, Verdict};

/// Output formats of a comparison.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareFormat {
    /// Aligned plain text.
    #[cfg_attr(feature = "clap", value(help = "Aligned plain text."))]
    Text,
    /// GitHub-flavoured Markdown (for a PR or a mailing-list post).
    #[cfg_attr(
        feature = "clap",
        value(help = "GitHub-flavoured Markdown (pastes into a PR or a mailing-list post).")
    )]
    Markdown,
    /// The [`Comparison`] as JSON.
    #[cfg_attr(feature = "clap", value(help = "JSON."))]
    Json,
}

use crate::analysis::{MetricComparison, Spread, LATENCY_PHASE, PEAK_PHASE};
pub(crate) use crate::numfmt::value;
use crate::numfmt::{pct_change as pct, NA};

/// How wide a comparison's text table is: [`Width::Default`] fits 120 columns (each side's
/// median, the change, its interval and a short verdict); [`Width::Wide`] has every column
/// (`--wide`: each side's median, min, max and count, flagged trials' figures, the phase and
/// direction of each metric, the verdict in words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Width {
    /// At most [`TEXT_COLUMNS`] columns.
    #[default]
    Default,
    /// Every column.
    Wide,
}

/// The widest line of a default comparison table: 120 columns.
pub const TEXT_COLUMNS: usize = 120;

pub(crate) fn side_line(side: &SideInfo) -> String {
    let flagged: Vec<String> = side
        .trials
        .iter()
        .filter(|t| !t.flags.is_empty())
        .map(|t| {
            format!(
                "{} [{}{}]",
                t.label,
                t.flags.join(", "),
                if t.excluded { ", excluded" } else { ", kept" }
            )
        })
        .collect();
    let n = side.trials.len();
    // A short name stands for the whole one everywhere else: say once what it stands for.
    let name = if side.short.is_empty() || side.short == side.name {
        side.name.clone()
    } else {
        format!("{} = {}", side.short, side.name)
    };
    let mut s = format!(
        "{name} ({n} trial{}, {} in the verdict)",
        if n == 1 { "" } else { "s" },
        side.used()
    );
    if !flagged.is_empty() {
        s.push_str(&format!("; flagged: {}", flagged.join("; ")));
    }
    s
}

/// A side's name as tables and headlines show it ([`SideInfo::short`], else the name).
fn short(side: &SideInfo) -> &str {
    if side.short.is_empty() {
        &side.name
    } else {
        &side.short
    }
}

/// A metric's values scaled for reading: latencies in µs become ms or s once large.
fn scale(m: &MetricComparison) -> (f64, &str) {
    let largest =
        m.a.max
            .unwrap_or(0.0)
            .abs()
            .max(m.b.max.unwrap_or(0.0).abs());
    match m.unit.as_str() {
        "µs" if largest >= 1e6 => (1e-6, "s"),
        "µs" if largest >= 1e4 => (1e-3, "ms"),
        u => (1.0, u),
    }
}

/// One figure of a metric with its unit, short: `20,000/s`, `1.21 ms`, `17.0 µs`, `12.3%`.
fn figure(m: &MetricComparison, v: Option<f64>) -> String {
    let Some(v) = v.filter(|v| v.is_finite()) else {
        return NA.to_string();
    };
    match m.unit.as_str() {
        "µs" => crate::numfmt::ns(v * 1e3),
        "%" => format!("{}%", value(v)),
        "conn/s" => format!("{}/s", crate::numfmt::fixed(v, 0)),
        u => format!("{} {u}", value(v)),
    }
}

/// The verdict in words, with the noise floor when below it.
fn verdict_words(m: &MetricComparison) -> String {
    let mut verdict = m.verdict.as_str().to_string();
    if m.verdict == Verdict::BelowNoiseFloor {
        if let Some(f) = m.min_effect {
            verdict = format!("{verdict} ({})", crate::numfmt::pct(f));
        }
    }
    verdict
}

/// The verdict in at most 14 characters, for the default table (the headline has the words).
fn verdict_short(m: &MetricComparison) -> &'static str {
    match m.verdict {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::NoSignificantChange => "no change",
        Verdict::BelowNoiseFloor => "below noise",
        Verdict::TooFewTrials => "too few trials",
        Verdict::NotApplicable => NA,
        Verdict::DifferentLoads => "not compared",
    }
}

/// `+10.0% [+9.1%, +10.9%]`, or `n/a`.
fn change(m: &MetricComparison) -> String {
    match (m.relative_change, m.interval) {
        (Some(c), Some(i)) => format!("{} {}", pct(c), interval_text(i)),
        (Some(c), None) => pct(c),
        _ => NA.to_string(),
    }
}

/// `connections/s (peak phase)`, `handshake p99 (latency phase, 72,000/s offered)`.
fn metric_with_phase(c: &Comparison, m: &MetricComparison) -> String {
    match (m.phase.as_str(), c.offered_per_sec) {
        ("", _) => m.name.clone(),
        (LATENCY_PHASE, Some(r)) => format!(
            "{} ({} phase, {}/s offered)",
            m.name,
            m.phase,
            crate::numfmt::fixed(r, 0)
        ),
        (phase, _) => format!("{} ({phase} phase)", m.name),
    }
}

/// The primary metrics, in the order a verdict is read: connections/s, then the handshake
/// p99 at the one offered rate.
const PRIMARY: [&str; 2] = ["connections/s", "handshake p99"];

/// The verdict lines: the primary metrics first (`verdict (B vs A): connections/s (peak phase)
/// -45.2% [-47.0%, -43.1%]: worse; handshake p99 …`), then the secondary ones per phase, those
/// with a verdict (better/worse) before the rest.
pub(crate) fn headline(c: &Comparison) -> Vec<String> {
    let primary: Vec<String> = PRIMARY
        .iter()
        .filter_map(|name| c.metrics.iter().find(|m| m.name == *name))
        .map(|m| match m.relative_change {
            Some(_) => format!(
                "{} {}: {}",
                metric_with_phase(c, m),
                change(m),
                verdict_words(m)
            ),
            None => format!("{}: {}", metric_with_phase(c, m), verdict_words(m)),
        })
        .collect();
    let mut out = vec![format!("verdict (B vs A): {}", primary.join("; "))];
    for phase in [PEAK_PHASE, LATENCY_PHASE] {
        let mut rest: Vec<&MetricComparison> = c
            .metrics
            .iter()
            .filter(|m| m.phase == phase && !PRIMARY.contains(&m.name.as_str()))
            .collect();
        if rest.is_empty() {
            continue;
        }
        // Verdicts first: a 45% loss of conn/s is read before "sys % better".
        rest.sort_by_key(|m| !matches!(m.verdict, Verdict::Better | Verdict::Worse));
        let items: Vec<String> = rest
            .iter()
            .map(|m| match m.relative_change {
                Some(ch) => format!("{} {} {}", m.name, pct(ch), verdict_words(m)),
                None => format!("{} {}", m.name, verdict_words(m)),
            })
            .collect();
        out.push(format!("secondary ({phase} phase): {}", items.join("; ")));
    }
    out
}

/// The table of every metric: default or wide ([`Width`]).
pub(crate) fn table(c: &Comparison, width: Width) -> Table {
    if width == Width::Wide {
        return wide_table(c);
    }
    let mut t = Table::new([
        "metric".to_string(),
        format!("A: {}", short(&c.a)),
        format!("B: {}", short(&c.b)),
        "change".to_string(),
        "95% CI".to_string(),
        "verdict".to_string(),
    ]);
    for m in &c.metrics {
        let label = match m.phase.as_str() {
            "" => m.name.clone(),
            phase => format!("{} ({phase})", m.name),
        };
        t.row([
            label,
            figure(m, m.a.median),
            figure(m, m.b.median),
            m.relative_change.map_or(NA.to_string(), pct),
            m.interval.map_or(NA.to_string(), interval_text),
            verdict_short(m).to_string(),
        ]);
    }
    t
}

fn wide_table(c: &Comparison) -> Table {
    let mut t = Table::new([
        "metric".to_string(),
        format!("A: {} median [min – max]", short(&c.a)),
        format!("B: {} median [min – max]", short(&c.b)),
        "change".to_string(),
        "95% CI".to_string(),
        "verdict".to_string(),
    ]);
    for m in &c.metrics {
        let (scale, unit) = scale(m);
        let side = |s: &Spread| match (s.median, s.min, s.max) {
            (Some(med), Some(lo), Some(hi)) => format!(
                "{} [{} – {}] {unit} (n={})",
                value(med * scale),
                value(lo * scale),
                value(hi * scale),
                s.n
            ),
            _ => NA.to_string(),
        };
        // Flagged trials left out of the verdict are shown, marked, beside the side's value.
        let side = |s: &Spread, x: &Spread| {
            let v = side(s);
            if x.n == 0 {
                v
            } else {
                format!("{v}; flagged, excluded: {}", side(x))
            }
        };
        let better = match m.direction {
            Direction::HigherIsBetter => "higher is better",
            Direction::LowerIsBetter => "lower is better",
        };
        let label = if m.phase.is_empty() {
            format!("{} ({better})", m.name)
        } else {
            format!("{} ({} phase, {better})", m.name, m.phase)
        };
        t.row([
            label,
            side(&m.a, &m.a_excluded),
            side(&m.b, &m.b_excluded),
            m.relative_change.map_or(NA.to_string(), pct),
            m.interval.map_or(NA.to_string(), interval_text),
            verdict_words(m),
        ]);
    }
    t
}

/// The comparison as a document: title, the sides, the verdict lines, the method and setup
/// differences, the table, the notes.
pub(crate) fn blocks(c: &Comparison, width: Width) -> Vec<Block> {
    let mut out = vec![
        Block::Heading(
            1,
            format!("A/B comparison: {} vs {}", short(&c.a), short(&c.b)),
        ),
        Block::Line(format!("A: {}", side_line(&c.a))),
        Block::Line(format!("B: {}", side_line(&c.b))),
    ];
    out.extend(headline(c).into_iter().map(Block::Line));
    out.push(Block::Line(format!("method: {}", c.method)));
    for d in &c.setup_differences {
        let line = format!("setup differs: {}", d.describe());
        out.push(if d.refuses {
            Block::Warning(line)
        } else {
            Block::Line(line)
        });
    }
    out.push(Block::Table(table(c, width)));
    out.extend(c.notes.iter().map(|n| Block::Line(format!("note: {n}"))));
    out
}

/// A relative change's interval as text: `[-4.0%, +1.2%]`. One that reaches −100% or below
/// ([−1171.0%, +75.2%]: B's trials spread further below A's median than A's median itself) is
/// no percentage change, and its ratio B/A would start below zero: "not estimable", with why.
fn interval_text(i: crate::analysis::Interval) -> String {
    if !i.estimable() {
        "not estimable (the trials spread wider than A's median: more trials)".to_string()
    } else {
        format!("[{}, {}]", pct(i.low), pct(i.high))
    }
}

/// Renders a comparison: text with the default table ([`Width::Default`]), Markdown with every
/// column (it wraps where it is shown), or JSON.
pub fn comparison(c: &Comparison, format: CompareFormat) -> String {
    comparison_with(c, format, Width::Default)
}

/// Renders a comparison with the text table `width` ([`Width::Wide`]: `--wide`).
pub fn comparison_with(c: &Comparison, format: CompareFormat, width: Width) -> String {
    match format {
        CompareFormat::Text => table::to_text(&blocks(c, width)),
        CompareFormat::Markdown => table::to_markdown(&blocks(c, Width::Wide)),
        CompareFormat::Json => {
            serde_json::to_string_pretty(c).expect("a comparison is plain data") + "\n"
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng as _;

    /// Issue 35 item 6: a relative interval crossing −100% ([−1171.0%, +75.2%]) is not a
    /// percentage change: "not estimable"; one inside stays a percentage interval.
    #[test]
    fn an_interval_crossing_minus_100_percent_is_not_estimable() {
        let i = |low, high| crate::analysis::Interval {
            low,
            high,
            confidence: 0.95,
        };
        let t = super::interval_text(i(-11.71, 0.752));
        assert!(t.starts_with("not estimable"), "{t}");
        assert!(!t.contains('%'), "{t}");
        assert_eq!(super::interval_text(i(-0.04, 0.012)), "[-4.0%, +1.2%]");
    }

    /// `compare --format json` carries the same verdict as text and Markdown: an interval
    /// reaching −100% is `"estimable": false` with null bounds (not the raw [−1171.0%, …]);
    /// one inside keeps its bounds with `"estimable": true`; JSON written before the field
    /// still reads (its estimability from the low end).
    #[test]
    fn json_says_an_interval_crossing_minus_100_percent_is_not_estimable() {
        use crate::analysis::{compare_samples, Direction};
        // A's median is 1, half its trials at 12: B − A reaches −11, i.e. −1100% of A.
        let a = [1.0, 1.0, 12.0, 1.0, 12.0, 1.0, 12.0, 1.0];
        let b = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 1.0];
        let m = compare_samples("errors/s", "/s", Direction::LowerIsBetter, &a, &b, None);
        let raw = m.interval.unwrap();
        assert!(raw.low <= -1.0, "{raw:?}");
        let json = serde_json::to_value(&m).unwrap();
        let i = &json["interval"];
        assert_eq!(i["estimable"], false, "{json}");
        assert!(i["low"].is_null() && i["high"].is_null(), "{json}");
        assert!(i["confidence"].as_f64().unwrap() >= 0.95, "{json}");
        let text = super::interval_text(raw);
        assert!(text.starts_with("not estimable"), "{text}");
        let back: crate::analysis::MetricComparison = serde_json::from_value(json).unwrap();
        assert!(!back.interval.unwrap().estimable());
        // Inside −100%: the bounds, estimable.
        let b = [1.1, 1.2, 1.15, 1.1, 1.2, 1.25, 1.1, 1.15];
        let a = [1.0; 8];
        let m = compare_samples("conn/s", "/s", Direction::HigherIsBetter, &a, &b, None);
        let json = serde_json::to_value(&m).unwrap();
        let i = &json["interval"];
        assert_eq!(i["estimable"], true, "{json}");
        assert_eq!(i["low"].as_f64(), m.interval.map(|i| i.low), "{json}");
        // Written before the field: numbers and no `estimable`.
        let old: crate::analysis::Interval =
            serde_json::from_str(r#"{"low": -11.71, "high": 0.752, "confidence": 0.96}"#).unwrap();
        assert_eq!((old.low, old.high), (-11.71, 0.752));
        assert!(!old.estimable());
        let old: crate::analysis::Interval =
            serde_json::from_str(r#"{"low": -0.04, "high": 0.012, "confidence": 0.96}"#).unwrap();
        assert!(old.estimable());
    }

    use super::*;
    use crate::analysis::compare_tests::{rate, records, trials};
    use crate::analysis::{compare, metric_values, CompareOptions};
    use crate::record::RunRecord;

    #[test]
    fn text_markdown_and_json_name_the_sides_flags_and_verdicts() {
        let mut a: Vec<RunRecord> = (0..3).map(|_| RunRecord::example()).collect();
        let b = a.clone();
        for (i, r) in a.iter_mut().enumerate() {
            r.label = format!("tcp_timestamps=1#{}", i + 1);
        }
        let b: Vec<RunRecord> = b
            .into_iter()
            .enumerate()
            .map(|(i, mut r)| {
                r.label = format!("tcp_timestamps=0#{}", i + 1);
                r
            })
            .collect();
        let c = compare(&a, &b, (None, None), &CompareOptions::default());
        let text = comparison(&c, CompareFormat::Text);
        for needle in [
            "A/B comparison: tcp_timestamps=1 vs tcp_timestamps=0",
            "A: tcp_timestamps=1 (3 trials",
            "Hodges-Lehmann",
            "inconclusive: N too small",
            "flagged",
        ] {
            assert!(text.contains(needle), "{needle:?} missing:\n{text}");
        }
        // Every column (min, max, n, phase and direction) with --wide.
        let wide = comparison_with(&c, CompareFormat::Text, Width::Wide);
        for needle in [
            "A: tcp_timestamps=1 median",
            "connections/s (peak phase, higher is better)",
        ] {
            assert!(wide.contains(needle), "{needle:?} missing:\n{wide}");
        }
        assert!(comparison(&c, CompareFormat::Markdown)
            .contains("| connections/s (peak phase, higher is better) |"));
        let json: serde_json::Value =
            serde_json::from_str(&comparison(&c, CompareFormat::Json)).unwrap();
        assert_eq!(json["metrics"][0]["verdict"], "too_few_trials");
        assert_eq!(json["a"]["name"], "tcp_timestamps=1");
        assert!(json["a"]["trials"][0]["flags"].is_array());
    }

    #[test]
    fn one_flagged_trial_is_excluded_and_reported() {
        let mut rng = StdRng::seed_from_u64(5);
        let a_rates = trials(&mut rng, 6, 20_000.0, 0.01);
        let b_rates = trials(&mut rng, 6, 22_000.0, 0.01);
        let mut a = records("A", &a_rates);
        let b = records("B", &b_rates);
        a[1].warnings
            .push("latency: generator fell behind: 100.0% of starts late".into());
        a[1].phases[0].achieved_per_sec = Some(1.0);
        let c = compare(&a, &b, (None, None), &CompareOptions::default());
        assert_eq!(c.a.trials[1].flags, ["generator behind"]);
        assert!(c.a.trials[1].excluded);
        assert_eq!((c.a.used(), c.a.flagged()), (5, 1));
        assert_eq!(rate(&c).a.n, 5);
        assert_eq!(rate(&c).a.min.map(|v| v > 1_000.0), Some(true));
        assert!(
            c.notes
                .iter()
                .any(|n| n.contains("A: 1 flagged trial(s) excluded")
                    && n.contains("A#2 (generator behind)")),
            "{:?}",
            c.notes
        );
        let mut all_flagged = b.clone();
        for r in &mut all_flagged {
            r.warnings
                .push("peak: other work used 40% of the benchmark CPUs".into());
        }
        let none_left = compare(&a, &all_flagged, (None, None), &CompareOptions::default());
        assert_eq!(none_left.b.used(), 0);
        assert_eq!(
            rate(&none_left).verdict,
            Verdict::TooFewTrials,
            "flagged away, not n/a"
        );
        // The flagged values are shown, marked, though not used.
        assert_eq!(rate(&none_left).b.n, 0);
        assert_eq!(rate(&none_left).b_excluded.n, 6);
        assert_eq!(rate(&c).a_excluded.n, 1);
        let text = comparison_with(&none_left, CompareFormat::Text, Width::Wide);
        assert!(text.contains("n/a; flagged, excluded: 2"), "{text}");
        // Enough trials ran: the note says what left them out, not "run more trials".
        let few = none_left
            .notes
            .iter()
            .find(|n| n.contains("cannot show a change"))
            .unwrap_or_else(|| panic!("{:?}", none_left.notes));
        assert!(few.contains("flagged ones are left out"), "{few}");
        assert!(!few.contains("--trials 10"), "{few}");
        let too_few = compare(&a[..2], &b[..2], (None, None), &CompareOptions::default());
        let few = too_few
            .notes
            .iter()
            .find(|n| n.contains("cannot show a change"));
        assert!(
            few.is_some_and(|n| n.contains("--trials 10")),
            "{:?}",
            too_few.notes
        );
        let kept = compare(
            &a,
            &b,
            (None, None),
            &CompareOptions {
                include_flagged: true,
                ..CompareOptions::default()
            },
        );
        assert_eq!(rate(&kept).a.n, 6);
        assert!(!kept.a.trials[1].excluded);
    }

    /// A trial whose peak window had no success (`bench --backlog 1`): `compare` printed
    /// `connections/s 0 [0 – 0]` and CPU per connection of its warm-up for it. Its rates and
    /// CPU per connection are n/a, and the trial is flagged `nothing measured` and left out.
    #[test]
    fn nothing_measured_a_trial_without_a_success_is_na_and_flagged() {
        let mut a = records("A", &[20_000.0]);
        let mut b = records("B", &[21_000.0]);
        let p = &mut b[0].phases[0];
        p.successes = 0;
        p.set_rates();
        p.forget_unmeasured();
        assert_eq!(metric_values(&b[0])[0], None, "connections/s");
        assert_eq!(metric_values(&b[0])[7], None, "server CPU per conn");
        assert_eq!(metric_values(&b[0])[8], None, "load CPU per conn");
        a[0].label = "A#1".into();
        let c = compare(&a, &b, (None, None), &CompareOptions::default());
        assert_eq!(c.b.trials[0].flags, ["nothing measured"]);
        assert!(c.b.trials[0].excluded);
        let m = rate(&c);
        assert_eq!((m.b.n, m.b_excluded.n), (0, 0), "{m:?}");
        let text = comparison(&c, CompareFormat::Text);
        let row = text
            .lines()
            .find(|l| l.contains("connections/s (peak phase"))
            .unwrap();
        assert!(!row.contains("0 [0 – 0]"), "{row}");
        assert!(
            c.notes.iter().any(
                |n| n.contains("B: 1 flagged trial(s)") && n.contains("B#1 (nothing measured)")
            ),
            "{:?}",
            c.notes
        );
        // --include-flagged keeps the trial, but it still has no rate.
        let kept = compare(
            &a,
            &b,
            (None, None),
            &CompareOptions {
                include_flagged: true,
                ..CompareOptions::default()
            },
        );
        assert_eq!(rate(&kept).b.n, 0);
    }

    #[test]
    fn cpu_per_connection_without_connections_is_na_never_zero() {
        let mut recs = records("A", &[0.0; 3]);
        for r in &mut recs {
            for p in &mut r.phases {
                p.successes = 0;
                p.cpu.load = crate::record::SideCpu::new(0, 1_900_000_000, 3_000_000_000, 1, 0);
                p.cpu.server = Some(p.cpu.load);
                p.forget_unmeasured();
            }
        }
        let c = compare(&recs, &recs, (None, None), &CompareOptions::default());
        for name in ["server CPU per conn", "load CPU per conn"] {
            let m = c.metrics.iter().find(|m| m.name == name).unwrap();
            assert_eq!(m.verdict, Verdict::NotApplicable, "{m:?}");
            assert_eq!((m.a.median, m.relative_change), (None, None));
        }
        assert_eq!(
            rate(&c).verdict,
            Verdict::NotApplicable,
            "no success: no rate"
        );
        let json: serde_json::Value =
            serde_json::from_str(&comparison(&c, CompareFormat::Json)).unwrap();
        let cpu = json["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "server CPU per conn")
            .unwrap();
        assert!(
            cpu["a"]["median"].is_null() && cpu["relative_change"].is_null(),
            "{cpu}"
        );
        assert!(!comparison(&c, CompareFormat::Text).contains("-100"));
    }

    /// Issue 37, "A/B reading": tables 317 characters wide, sides named by their whole shell
    /// commands, "sys % … better" read before a 45% loss of conn/s. The default table fits 120
    /// columns with long names, big numbers and every kind of verdict; sides are short names;
    /// the verdict leads with connections/s, then the handshake p99, secondary metrics after.
    #[test]
    fn the_default_table_fits_120_columns_and_the_verdict_leads_with_the_primary_metric() {
        let mut rng = StdRng::seed_from_u64(9);
        let a_rates = trials(&mut rng, 10, 1_234_567.0, 0.01);
        let b_rates = trials(&mut rng, 10, 679_000.0, 0.01);
        let mut a = records("A", &a_rates);
        let mut b = records("B", &b_rates);
        for (i, r) in a.iter_mut().chain(b.iter_mut()).enumerate() {
            // Long latencies, a flagged trial on each side, CPU figures that differ.
            r.warnings.clear();
            if i % 10 == 3 {
                r.warnings
                    .push("peak: other work used 40% of the benchmark CPUs".into());
            }
        }
        let long_a = "setup: ethtool -C eth0 rx-usecs 0 adaptive-rx off; sysctl -w net.core.busy_poll=50; echo 3 > /proc/sys/vm/drop_caches";
        let long_b =
            "setup: ethtool -C eth0 rx-usecs 50 adaptive-rx on; sysctl -w net.core.busy_poll=0";
        let c = compare(
            &a,
            &b,
            (Some(long_a), Some(long_b)),
            &CompareOptions::default(),
        );
        let text = comparison(&c, CompareFormat::Text);
        let table: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("metric"))
            .take_while(|l| !l.starts_with("note:"))
            .collect();
        assert!(table.len() > 8, "{text}");
        for l in &table {
            assert!(
                l.chars().count() <= TEXT_COLUMNS,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        // Short names in the table, the whole name once in the side's line.
        assert!(
            table[0].contains("A: A") && table[0].contains("B: B"),
            "{}",
            table[0]
        );
        assert!(
            text.contains(&format!("A: A = {long_a} (10 trials")),
            "{text}"
        );
        assert_eq!(text.matches(long_a).count(), 1, "{text}");
        // The verdict leads: connections/s first, then the latency, secondary after.
        let lines: Vec<&str> = text.lines().collect();
        let v = lines
            .iter()
            .position(|l| l.starts_with("verdict (B vs A): connections/s (peak phase) -4"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            lines[v].contains(": worse; handshake p99 (latency phase"),
            "{}",
            lines[v]
        );
        assert!(
            lines[v + 1].starts_with("secondary (peak phase): "),
            "{}",
            lines[v + 1]
        );
        assert!(
            lines.iter().position(|l| l.contains("sys %")).unwrap() > v,
            "sys % is read after the primary verdict"
        );
        // --wide keeps every column.
        let wide = comparison_with(&c, CompareFormat::Text, Width::Wide);
        assert!(wide.contains("flagged, excluded:"), "{wide}");
        assert!(wide.lines().any(|l| l.chars().count() > TEXT_COLUMNS));
    }

    /// Issue 37, "A/B latency": each trial's latency phase ran at 80% of its own peak and the
    /// latency was compared anyway. Latency phases at different offered rates are not compared;
    /// at one rate they are, and the verdict names it.
    #[test]
    fn latency_at_different_offered_rates_is_not_compared() {
        let mut rng = StdRng::seed_from_u64(11);
        let mut a = records("A", &trials(&mut rng, 6, 20_000.0, 0.01));
        let b = records("B", &trials(&mut rng, 6, 20_000.0, 0.01));
        let c = compare(&a, &b, (None, None), &CompareOptions::default());
        assert_eq!(c.offered_per_sec, Some(1_600.0));
        let text = comparison(&c, CompareFormat::Text);
        assert!(
            text.contains("handshake p99 (latency phase, 1,600/s offered)"),
            "{text}"
        );
        // Flagged trials' rates count too: every trial flagged still says the one rate.
        let mut flagged = a.clone();
        for r in &mut flagged {
            r.warnings
                .push("peak: other work used 40% of the benchmark CPUs".into());
        }
        let cf = compare(&flagged, &b, (None, None), &CompareOptions::default());
        assert_eq!(cf.a.used(), 0, "every A trial flagged");
        assert_eq!(cf.offered_per_sec, Some(1_600.0));
        for (i, r) in a.iter_mut().enumerate() {
            let lat = r.phases.iter_mut().find(|p| p.name == "latency").unwrap();
            lat.offered_per_sec = Some(1_500.0 + i as f64 * 40.0);
        }
        let c = compare(&a, &b, (None, None), &CompareOptions::default());
        assert_eq!(c.offered_per_sec, None);
        for m in c.metrics.iter().filter(|m| m.phase == "latency") {
            assert_eq!(m.verdict, Verdict::DifferentLoads, "{m:?}");
            assert_eq!((m.relative_change, m.interval), (None, None), "{m:?}");
        }
        assert_ne!(rate(&c).verdict, Verdict::DifferentLoads);
        let text = comparison(&c, CompareFormat::Text);
        assert!(
            text.contains("handshake p99 (latency phase): not compared: different offered rates"),
            "{text}"
        );
        assert!(
            text.contains("latency not compared: the latency phases ran at different offered rates (A 1,500–1,700/s, B 1,600/s)"),
            "{text}"
        );
    }
}
