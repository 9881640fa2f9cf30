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

pub(crate) use crate::numfmt::value;
use crate::numfmt::{pct_change as pct, NA};

fn side_line(side: &SideInfo) -> String {
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
    let mut s = format!(
        "{} ({n} trial{}, {} in the verdict)",
        side.name,
        if n == 1 { "" } else { "s" },
        side.used()
    );
    if !flagged.is_empty() {
        s.push_str(&format!("; flagged: {}", flagged.join("; ")));
    }
    s
}

/// The comparison as a document.
pub(crate) fn blocks(c: &Comparison) -> Vec<Block> {
    let mut out = vec![
        Block::Heading(1, format!("A/B comparison: {} vs {}", c.a.name, c.b.name)),
        Block::Line(format!("A: {}", side_line(&c.a))),
        Block::Line(format!("B: {}", side_line(&c.b))),
        Block::Line(format!("method: {}", c.method)),
    ];
    for d in &c.setup_differences {
        let line = format!("setup differs: {}", d.describe());
        out.push(if d.refuses {
            Block::Warning(line)
        } else {
            Block::Line(line)
        });
    }
    let mut t = Table::new([
        "metric".to_string(),
        format!("A: {} median [min – max]", c.a.name),
        format!("B: {} median [min – max]", c.b.name),
        "change".to_string(),
        "95% CI".to_string(),
        "verdict".to_string(),
    ]);
    for m in &c.metrics {
        // Latencies in µs read better in ms or s once they are large.
        let largest =
            m.a.max
                .unwrap_or(0.0)
                .abs()
                .max(m.b.max.unwrap_or(0.0).abs());
        let (scale, unit) = match m.unit.as_str() {
            "µs" if largest >= 1e6 => (1e-6, "s"),
            "µs" if largest >= 1e4 => (1e-3, "ms"),
            u => (1.0, u),
        };
        let side = |s: &crate::analysis::Spread| match (s.median, s.min, s.max) {
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
        let side = |s: &crate::analysis::Spread, x: &crate::analysis::Spread| {
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
        let mut verdict = m.verdict.as_str().to_string();
        if m.verdict == Verdict::BelowNoiseFloor {
            if let Some(f) = m.min_effect {
                verdict = format!("{verdict} ({})", crate::numfmt::pct(f));
            }
        }
        t.row([
            label,
            side(&m.a, &m.a_excluded),
            side(&m.b, &m.b_excluded),
            m.relative_change.map_or(NA.to_string(), pct),
            m.interval.map_or(NA.to_string(), interval_text),
            verdict,
        ]);
    }
    out.push(Block::Table(t));
    out.extend(c.notes.iter().map(|n| Block::Line(format!("note: {n}"))));
    out
}

/// A relative change's interval as text: `[-4.0%, +1.2%]`. One that reaches −100% or below
/// ([−1171.0%, +75.2%]: B's trials spread further below A's median than A's median itself) is
/// no percentage change, and its ratio B/A would start below zero: "not estimable", with why.
fn interval_text(i: crate::analysis::Interval) -> String {
    if i.low <= -1.0 {
        "not estimable (the trials spread wider than A's median: more trials)".to_string()
    } else {
        format!("[{}, {}]", pct(i.low), pct(i.high))
    }
}

/// Renders a comparison.
pub fn comparison(c: &Comparison, format: CompareFormat) -> String {
    match format {
        CompareFormat::Text => table::to_text(&blocks(c)),
        CompareFormat::Markdown => table::to_markdown(&blocks(c)),
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
            "A: tcp_timestamps=1 median",
            "Hodges-Lehmann",
            "connections/s (peak phase, higher is better)",
            "inconclusive: N too small",
            "flagged",
        ] {
            assert!(text.contains(needle), "{needle:?} missing:\n{text}");
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
        let text = comparison(&none_left, CompareFormat::Text);
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
        assert_eq!(metric_values(&b[0])[5], None, "server CPU per conn");
        assert_eq!(metric_values(&b[0])[6], None, "load CPU per conn");
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
}
