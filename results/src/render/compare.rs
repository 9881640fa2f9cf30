//! A comparison as text, Markdown or JSON.

use super::table::{self, Block, Table};
use crate::compare::{Comparison, Direction, SideInfo, Verdict};

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
        let side = |s: &crate::stats::Spread| match (s.median, s.min, s.max) {
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
        let side = |s: &crate::stats::Spread, x: &crate::stats::Spread| {
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
            m.interval.map_or(NA.to_string(), |i| {
                format!("[{}, {}]", pct(i.low), pct(i.high))
            }),
            verdict,
        ]);
    }
    out.push(Block::Table(t));
    out.extend(c.notes.iter().map(|n| Block::Line(format!("note: {n}"))));
    out
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
    use super::*;
    use crate::compare::{compare, Options};
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
        let c = compare(&a, &b, (None, None), &Options::default());
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
}
