//! The one table renderer of the workspace: a header row and rows of cells, as aligned text or as
//! a GitHub-flavoured Markdown table. Cells are strings: numbers are formatted before they get
//! here, through [`crate::numfmt`] (thousands separators, units), so every table prints them the
//! same way. `tuning`'s listings and `results`' reports both render through this module.

/// How a column's cells sit in its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Align {
    /// Padded on the right (text, names; the default).
    #[default]
    Left,
    /// Padded on the left (numbers, so their digits line up).
    Right,
}

/// Each column's width in characters (not bytes: `µs`, `—` count one): the widest of its header
/// and cells. Cells beyond the headers are ignored.
pub fn widths<H: AsRef<str>>(headers: &[H], rows: &[Vec<String>]) -> Vec<usize> {
    let mut w: Vec<usize> = headers.iter().map(|h| h.as_ref().chars().count()).collect();
    for r in rows {
        for (w, c) in w.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    w
}

/// Renders an aligned text table: the header line, then one line per row, each starting with
/// `indent`, cells two spaces apart and padded to their column's width ([`widths`]) on the side
/// `align` gives (a column without an entry in `align` is [`Align::Left`]). Trailing spaces are
/// trimmed, so a left-aligned last column is never padded and empty trailing cells leave nothing.
/// Every line ends with `\n`.
pub fn text<H: AsRef<str>>(
    headers: &[H],
    rows: &[Vec<String>],
    align: &[Align],
    indent: &str,
) -> String {
    let w = widths(headers, rows);
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let cells: Vec<String> = cells
            .enumerate()
            .map(|(i, c)| {
                let fill = " ".repeat(
                    w.get(i)
                        .copied()
                        .unwrap_or(0)
                        .saturating_sub(c.chars().count()),
                );
                match align.get(i).copied().unwrap_or_default() {
                    Align::Left => format!("{c}{fill}"),
                    Align::Right => format!("{fill}{c}"),
                }
            })
            .collect();
        format!("{}\n", format!("{indent}{}", cells.join("  ")).trim_end())
    };
    let mut out = line(&mut headers.iter().map(AsRef::as_ref));
    for r in rows {
        out.push_str(&line(&mut r.iter().map(String::as_str)));
    }
    out
}

/// Renders a Markdown table: `| a | b |`, the alignment row (`---` left, `---:` right, as
/// `align` gives; default left), then the rows; `|` inside a cell is escaped as `\|`. Every line
/// ends with `\n`.
pub fn markdown<H: AsRef<str>>(headers: &[H], rows: &[Vec<String>], align: &[Align]) -> String {
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let cells: Vec<String> = cells.map(|c| c.replace('|', "\\|")).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let mut out = line(&mut headers.iter().map(AsRef::as_ref));
    let marks: Vec<&str> = (0..headers.len())
        .map(|i| match align.get(i).copied().unwrap_or_default() {
            Align::Left => "---",
            Align::Right => "---:",
        })
        .collect();
    out.push_str(&format!("|{}|\n", marks.join("|")));
    for r in rows {
        out.push_str(&line(&mut r.iter().map(String::as_str)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Vec<String>> {
        vec![
            vec!["rate".into(), "2,000 /s".into(), "x".into()],
            vec!["p|99".into(), "45 µs".into(), String::new()],
        ]
    }

    #[test]
    fn widths_count_characters_not_bytes() {
        assert_eq!(widths(&["metric", "v", "why"], &rows()), [6, 8, 3]);
        assert_eq!(widths(&["µµ"], &[vec!["a".into(), "ignored".into()]]), [2]);
    }

    #[test]
    fn text_pads_each_column_on_its_side_and_trims_line_ends() {
        let t = text(
            &["metric", "value", "why"],
            &rows(),
            &[Align::Left, Align::Right],
            "  ",
        );
        assert_eq!(
            t,
            "  metric     value  why\n  rate    2,000 /s  x\n  p|99       45 µs\n"
        );
        // No alignment given: every column left, no indent.
        let t = text(
            &["k", "v"],
            &[vec!["longer—key".into(), String::new()]],
            &[],
            "",
        );
        assert_eq!(t, "k           v\nlonger—key\n");
    }

    #[test]
    fn markdown_escapes_pipes_and_marks_alignment() {
        let m = markdown(
            &["metric", "value", "why"],
            &rows(),
            &[Align::Left, Align::Right],
        );
        assert_eq!(
            m,
            "| metric | value | why |\n|---|---:|---|\n| rate | 2,000 /s | x |\n| p\\|99 | 45 µs |  |\n"
        );
    }
}
