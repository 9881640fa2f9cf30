//! Documents made of headings, lines and tables, rendered as aligned text or Markdown.

/// A piece of a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A heading; level 1 is a record, level 2 a phase.
    Heading(u8, String),
    /// A line of prose.
    Line(String),
    /// A warning line (`WARNING: ...` in text, bold in Markdown).
    Warning(String),
    /// A table.
    Table(Table),
}

/// A table: a header row and rows of cells; columns after the first are right-aligned.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows (each as long as `headers`).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headers and no rows.
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Table {
        Table {
            headers: headers.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                if i < w.len() {
                    w[i] = w[i].max(c.chars().count());
                }
            }
        }
        w
    }
}

fn pad(s: &str, width: usize, left: bool) -> String {
    let fill = " ".repeat(width.saturating_sub(s.chars().count()));
    if left {
        format!("{s}{fill}")
    } else {
        format!("{fill}{s}")
    }
}

/// Renders blocks as plain text: `== ` / `-- ` headings, tables aligned with two spaces.
pub fn to_text(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Heading(1, t) => out.push_str(&format!("\n== {t}\n")),
            Block::Heading(_, t) => out.push_str(&format!("\n-- {t}\n")),
            Block::Line(l) => out.push_str(&format!("{l}\n")),
            Block::Warning(w) => out.push_str(&format!("WARNING: {w}\n")),
            Block::Table(t) => {
                let w = t.widths();
                let line = |cells: &[String]| {
                    let s: Vec<String> = cells
                        .iter()
                        .enumerate()
                        .map(|(i, c)| pad(c, w.get(i).copied().unwrap_or(0), i == 0))
                        .collect();
                    format!("  {}\n", s.join("  ").trim_end())
                };
                out.push_str(&line(&t.headers));
                for r in &t.rows {
                    out.push_str(&line(r));
                }
                out.push('\n');
            }
        }
    }
    out.trim_start_matches('\n').to_string()
}

/// Renders blocks as GitHub-flavoured Markdown (pastes into a PR or a mailing-list post).
pub fn to_markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Heading(level, t) => {
                out.push_str(&format!(
                    "\n{} {t}\n\n",
                    "#".repeat(usize::from(*level) + 1)
                ));
            }
            Block::Line(l) => out.push_str(&format!("{l}  \n")),
            Block::Warning(w) => out.push_str(&format!("**Warning:** {w}  \n")),
            Block::Table(t) => {
                let esc = |c: &String| c.replace('|', "\\|");
                out.push('\n');
                out.push_str(&format!(
                    "| {} |\n",
                    t.headers.iter().map(esc).collect::<Vec<_>>().join(" | ")
                ));
                let align: Vec<&str> = (0..t.headers.len())
                    .map(|i| if i == 0 { "---" } else { "---:" })
                    .collect();
                out.push_str(&format!("|{}|\n", align.join("|")));
                for r in &t.rows {
                    out.push_str(&format!(
                        "| {} |\n",
                        r.iter().map(esc).collect::<Vec<_>>().join(" | ")
                    ));
                }
                out.push('\n');
            }
        }
    }
    out.trim_start_matches('\n').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Vec<Block> {
        let mut t = Table::new(["metric", "value"]);
        t.row(["rate", "2000.0"]);
        t.row(["p|99", "45µs"]);
        vec![
            Block::Heading(1, "run".into()),
            Block::Warning("drops".into()),
            Block::Table(t),
        ]
    }

    #[test]
    fn text_aligns_columns() {
        let s = to_text(&doc());
        assert!(s.starts_with("== run\nWARNING: drops\n"), "{s}");
        assert!(s.contains("  rate    2000.0\n"), "{s}");
        assert!(s.contains("  p|99      45µs\n"), "{s}");
    }

    #[test]
    fn markdown_has_a_table_with_escaped_pipes() {
        let s = to_markdown(&doc());
        assert!(s.starts_with("## run\n"), "{s}");
        assert!(
            s.contains("| metric | value |\n|---|---:|\n| rate | 2000.0 |\n| p\\|99 | 45µs |"),
            "{s}"
        );
    }
}
