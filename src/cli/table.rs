//! # Aligned tables
//!
//! The human form of `shepherd sessions` and `shepherd asks`: a header line and one line
//! per row, columns separated by two spaces, no borders. Widths are measured in display
//! columns (`unicode-width`), so wide characters line up. When the table is wider than
//! the terminal, the columns marked flexible give up width (widest first, down to their
//! minimum) and their cells end in `…`; the other columns are never cut.

use unicode_width::UnicodeWidthStr;

use super::format::truncate;

/// Space between two columns.
const GAP: usize = 2;

/// Which side a column's cells stick to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

#[derive(Debug, Clone)]
struct Column {
    header: String,
    align: Align,
    /// `Some(min)`: the column may shrink to `min` columns to fit the terminal.
    shrink_to: Option<usize>,
}

/// Rows of text cells under a header, rendered with aligned columns.
#[derive(Debug, Clone, Default)]
pub struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table without columns.
    pub fn new() -> Table {
        Table::default()
    }

    /// Add a column that is never cut.
    pub fn column(mut self, header: &str, align: Align) -> Table {
        self.columns.push(Column {
            header: header.to_string(),
            align,
            shrink_to: None,
        });
        self
    }

    /// Add a left-aligned column that may shrink to `min` display columns.
    pub fn flexible(mut self, header: &str, min: usize) -> Table {
        self.columns.push(Column {
            header: header.to_string(),
            align: Align::Left,
            shrink_to: Some(min.max(1)),
        });
        self
    }

    /// Add a row; missing cells are empty, extra cells are ignored.
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells = cells;
        cells.resize(self.columns.len(), String::new());
        self.rows.push(cells);
    }

    /// The table as lines (each ending in `\n`, no trailing spaces), fitted into
    /// `max_width` display columns where the flexible columns allow.
    pub fn render(&self, max_width: usize) -> String {
        let widths = self.fitted_widths(max_width);
        let mut out = String::new();
        let header: Vec<String> = self.columns.iter().map(|c| c.header.clone()).collect();
        for cells in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (i, (cell, column)) in cells.iter().zip(&self.columns).enumerate() {
                let text = truncate(cell, widths[i]);
                let pad = widths[i].saturating_sub(text.width());
                if i > 0 {
                    line.push_str(&" ".repeat(GAP));
                }
                match column.align {
                    Align::Left => {
                        line.push_str(&text);
                        line.push_str(&" ".repeat(pad));
                    }
                    Align::Right => {
                        line.push_str(&" ".repeat(pad));
                        line.push_str(&text);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// Natural widths, then the widest flexible column loses one column at a time until
    /// the line fits or every flexible column is at its minimum.
    fn fitted_widths(&self, max_width: usize) -> Vec<usize> {
        let mut widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                self.rows
                    .iter()
                    .map(|r| truncate(&r[i], usize::MAX).width())
                    .chain(std::iter::once(c.header.width()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let gaps = GAP * self.columns.len().saturating_sub(1);
        let mut total: usize = widths.iter().sum::<usize>() + gaps;
        while total > max_width {
            let widest = self
                .columns
                .iter()
                .enumerate()
                .filter_map(|(i, c)| c.shrink_to.filter(|&min| widths[i] > min).map(|_| i))
                .max_by_key(|&i| widths[i]);
            let Some(i) = widest else { break };
            widths[i] -= 1;
            total -= 1;
        }
        widths
    }
}

/// A block of `key  value` lines with the values aligned (the form of `shepherd status`).
pub fn key_values(pairs: &[(&str, String)]) -> String {
    let width = pairs.iter().map(|(k, _)| k.width()).max().unwrap_or(0);
    let mut out = String::new();
    for (key, value) in pairs {
        let pad = " ".repeat(width - key.width() + GAP);
        out.push_str(&format!("{key}{pad}{value}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new()
            .column("ID", Align::Right)
            .column("NAME", Align::Left)
            .flexible("QUESTION", 8);
        t.row(vec!["1".into(), "fix-login".into(), "Merge now?".into()]);
        t.row(vec![
            "12".into(),
            "日本".into(),
            "Which of the three database layouts should we keep?".into(),
        ]);
        t
    }

    #[test]
    fn aligns_columns_without_trailing_spaces() {
        let out = sample().render(200);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "ID  NAME       QUESTION");
        assert_eq!(lines[1], " 1  fix-login  Merge now?");
        assert_eq!(
            lines[2],
            "12  日本       Which of the three database layouts should we keep?"
        );
    }

    #[test]
    fn shrinks_flexible_columns_to_fit() {
        let out = sample().render(30);
        for line in out.lines() {
            assert!(line.width() <= 30, "{line:?} is {} wide", line.width());
        }
        assert!(out.contains("Which of the t…\n"), "{out}");
        assert!(
            out.contains("fix-login"),
            "fixed columns are never cut: {out}"
        );
    }

    #[test]
    fn never_shrinks_below_the_minimum() {
        let out = sample().render(5);
        assert!(out.contains("Which o…"), "{out}");
    }

    #[test]
    fn key_values_align() {
        let out = key_values(&[("pid", "1".into()), ("state dir", "/x".into())]);
        assert_eq!(out, "pid        1\nstate dir  /x\n");
    }
}
