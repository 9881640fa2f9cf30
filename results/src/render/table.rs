//! Documents made of headings, lines and tables, rendered as aligned text or Markdown; tables
//! through the one renderer, [`common::table`].

use common::table::{self, Align};

/// A piece of a document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
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
pub(crate) struct Table {
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows (each as long as `headers`).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these headers and no rows.
    pub(crate) fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Table {
        Table {
            headers: headers.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub(crate) fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Each column's side: the first (names) left, the others (numbers) right.
    fn align(&self) -> Vec<Align> {
        (0..self.headers.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect()
    }
}

/// Renders blocks as plain text: `== ` / `-- ` headings, tables aligned with two spaces.
pub(crate) fn to_text(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Heading(1, t) => out.push_str(&format!("\n== {t}\n")),
            Block::Heading(_, t) => out.push_str(&format!("\n-- {t}\n")),
            Block::Line(l) => out.push_str(&format!("{l}\n")),
            Block::Warning(w) => out.push_str(&format!("WARNING: {w}\n")),
            Block::Table(t) => {
                out.push_str(&table::text(&t.headers, &t.rows, &t.align(), "  "));
                out.push('\n');
            }
        }
    }
    out.trim_start_matches('\n').to_string()
}

/// Renders blocks as GitHub-flavoured Markdown (pastes into a PR or a mailing-list post).
pub(crate) fn to_markdown(blocks: &[Block]) -> String {
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
                out.push('\n');
                out.push_str(&table::markdown(&t.headers, &t.rows, &t.align()));
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
