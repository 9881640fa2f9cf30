//! A comparison as text, Markdown or JSON.

use super::{Comparison, Direction};
use crate::report::table::{self, Block, Table};

/// Output formats of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned plain text.
    Text,
    /// GitHub-flavoured Markdown (for a PR or a mailing-list post).
    Markdown,
    /// The [`Comparison`] as JSON.
    Json,
}

/// A value with as many decimals as its size deserves: `21034`, `45.2`, `3.07`.
pub fn value(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 1_000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{:+.1}%", v * 100.0)
    } else {
        "-".into()
    }
}

fn sides(labels: &[String]) -> String {
    let mut uniq: Vec<&str> = labels.iter().map(String::as_str).collect();
    uniq.dedup();
    let names = if uniq.iter().all(|l| l.is_empty()) {
        "unlabelled".to_string()
    } else {
        uniq.join(", ")
    };
    format!(
        "{names} ({} trial{})",
        labels.len(),
        if labels.len() == 1 { "" } else { "s" }
    )
}

/// The comparison as a document.
pub fn blocks(c: &Comparison) -> Vec<Block> {
    let mut out = vec![
        Block::Heading(1, "A/B comparison".into()),
        Block::Line(format!("A: {}", sides(&c.a_labels))),
        Block::Line(format!("B: {}", sides(&c.b_labels))),
        Block::Line(format!("method: {}", c.method)),
    ];
    let mut t = Table::new([
        "metric",
        "A median [min – max]",
        "B median [min – max]",
        "change",
        "95% CI",
        "verdict",
    ]);
    for m in &c.metrics {
        // Latencies in µs read better in ms or s once they are large.
        let largest = m.a.max.abs().max(m.b.max.abs());
        let (scale, unit) = match m.unit.as_str() {
            "µs" if largest >= 1e6 => (1e-6, "s"),
            "µs" if largest >= 1e4 => (1e-3, "ms"),
            u => (1.0, u),
        };
        let side = |s: &crate::stats::Spread| {
            format!(
                "{} [{} – {}] {unit}",
                value(s.median * scale),
                value(s.min * scale),
                value(s.max * scale),
            )
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
            side(&m.a),
            side(&m.b),
            pct(m.relative_change),
            m.interval.map_or("-".to_string(), |i| {
                format!("[{}, {}]", pct(i.low), pct(i.high))
            }),
            m.verdict.as_str().to_string(),
        ]);
    }
    out.push(Block::Table(t));
    out.extend(c.notes.iter().map(|n| Block::Line(format!("note: {n}"))));
    out
}

/// Renders a comparison.
pub fn render(c: &Comparison, format: Format) -> String {
    match format {
        Format::Text => table::to_text(&blocks(c)),
        Format::Markdown => table::to_markdown(&blocks(c)),
        Format::Json => serde_json::to_string_pretty(c).expect("a comparison is plain data") + "\n",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare_samples, Direction};

    #[test]
    fn text_names_the_method_metric_direction_and_verdict() {
        let mut m = compare_samples(
            "connections/s",
            "conn/s",
            Direction::HigherIsBetter,
            &[100.0, 101.0, 99.0],
            &[110.0, 111.0, 109.0],
        );
        m.phase = "peak".into();
        let c = Comparison {
            method: "95% CI ... percentile bootstrap".into(),
            a_labels: vec!["off".into(); 3],
            b_labels: vec!["on".into(); 3],
            metrics: vec![m],
            notes: vec![],
        };
        let text = render(&c, Format::Text);
        for needle in [
            "bootstrap",
            "off (3 trials)",
            "connections/s (peak phase, higher is better)",
            "+10.0%",
            "better",
            "100.0 [99.0 – 101.0] conn/s",
        ] {
            assert!(text.contains(needle), "{needle:?} missing:\n{text}");
        }
        assert!(render(&c, Format::Markdown)
            .contains("| connections/s (peak phase, higher is better) |"));
        let json: serde_json::Value = serde_json::from_str(&render(&c, Format::Json)).unwrap();
        assert_eq!(json["metrics"][0]["verdict"], "better");
    }
}
