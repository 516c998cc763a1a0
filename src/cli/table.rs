//! # Aligned tables
//!
//! The human form of `shepherd sessions` and `shepherd asks`: a header line and one line
//! per row, columns separated by two spaces, no borders. Widths are measured in display
//! columns (`unicode-width`), so wide characters line up. When the table is wider than
//! the terminal, the columns marked flexible give up width (widest first, down to their
//! minimum); the other columns are never cut. A flexible column is cut at its end
//! (`Which of the t…`, for text read from the start) or in its middle (`/home/u/…/webapp`,
//! for names and paths whose head and tail tell them apart): [`cut_middle`].

use unicode_width::UnicodeWidthStr;

use unicode_width::UnicodeWidthChar;

use super::format::truncate;

/// Space between two columns.
const GAP: usize = 2;

/// Which side a column's cells stick to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Where a flexible column's cells lose what does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    End,
    Middle,
}

#[derive(Debug, Clone)]
struct Column {
    header: String,
    align: Align,
    /// `Some(min)`: the column may shrink to `min` columns to fit the terminal.
    shrink_to: Option<usize>,
    cut: Cut,
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
            cut: Cut::End,
        });
        self
    }

    /// Add a left-aligned column that may shrink to `min` display columns.
    pub fn flexible(mut self, header: &str, min: usize) -> Table {
        self.columns.push(Column {
            header: header.to_string(),
            align: Align::Left,
            shrink_to: Some(min.max(1)),
            cut: Cut::End,
        });
        self
    }

    /// Add a left-aligned column that may shrink to `min` display columns, cut in the
    /// middle (names, paths: their head and tail tell them apart).
    pub fn middle(mut self, header: &str, min: usize) -> Table {
        self.columns.push(Column {
            header: header.to_string(),
            align: Align::Left,
            shrink_to: Some(min.max(3)),
            cut: Cut::Middle,
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
                let text = match column.cut {
                    Cut::End => truncate(cell, widths[i]),
                    Cut::Middle => cut_middle(cell, widths[i]),
                };
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

/// `text` fitted into `width` display columns by cutting its middle: `…` between a head
/// and a tail, the tail getting two thirds of the room (the end of a name or path is
/// what tells it apart). In a path the cut moves to `/` boundaries where one is near, so
/// whole directories go: `/home/u/src/projects/webapp@fix-login` in 26 columns is
/// `/home/u/…/webapp@fix-login`. Line breaks become spaces, as in `truncate`.
pub fn cut_middle(text: &str, width: usize) -> String {
    let flat: Vec<char> = truncate(text, usize::MAX).chars().collect();
    let full: usize = flat.iter().map(|c| c.width().unwrap_or(0)).sum();
    if full <= width {
        return flat.into_iter().collect();
    }
    if width < 3 {
        return truncate(text, width);
    }
    let room = width - 1;
    let tail_room = room - room / 3;
    let tail_start = fit_from_end(&flat, tail_room);
    // Start the tail at a `/` inside it, giving what that saves to the head.
    let tail_start = flat[tail_start..]
        .iter()
        .position(|&c| c == '/')
        .filter(|&at| tail_start + at + 1 < flat.len())
        .map_or(tail_start, |at| tail_start + at);
    let tail: String = flat[tail_start..].iter().collect();
    let head_room = room - tail.width();
    let head_end = fit_from_start(&flat[..tail_start], head_room);
    // End the head just after a `/` in its second half, if it has one.
    let head_end = flat[..head_end]
        .iter()
        .rposition(|&c| c == '/')
        .filter(|&at| at + 1 >= head_end / 2 && at > 0)
        .map_or(head_end, |at| at + 1);
    let head: String = flat[..head_end].iter().collect();
    format!("{head}…{tail}")
}

/// How many leading chars fit in `room` columns.
fn fit_from_start(chars: &[char], room: usize) -> usize {
    let mut used = 0;
    chars
        .iter()
        .take_while(|c| {
            used += c.width().unwrap_or(0);
            used <= room
        })
        .count()
}

/// The index from which the trailing chars fit in `room` columns.
fn fit_from_end(chars: &[char], room: usize) -> usize {
    let mut used = 0;
    let kept = chars
        .iter()
        .rev()
        .take_while(|c| {
            used += c.width().unwrap_or(0);
            used <= room
        })
        .count();
    chars.len() - kept
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
    fn middle_cut_keeps_head_and_tail() {
        let path = "/home/u/src/projects/webapp@fix-login";
        assert_eq!(cut_middle(path, 26), "/home/u/…/webapp@fix-login");
        assert_eq!(cut_middle(path, 100), path);
        assert_eq!(cut_middle(path, path.len()), path);
        // No `/` to snap to: two thirds of the room for the tail.
        assert_eq!(cut_middle("webapp@fix-login-2", 10), "web…ogin-2");
        assert_eq!(cut_middle("webapp@fix-login-3", 10), "web…ogin-3");
        for width in 3..path.len() {
            let cut = cut_middle(path, width);
            assert!(cut.width() <= width, "{cut:?} is wider than {width}");
            assert!(cut.contains('…') && cut.ends_with('n'), "{cut:?}");
        }
        assert_eq!(cut_middle(path, 2), "/…");
    }

    #[test]
    fn middle_cut_counts_display_columns() {
        let cut = cut_middle("日本語のセッション名@main", 12);
        assert!(cut.width() <= 12, "{cut:?}");
        assert!(cut.ends_with("@main"), "{cut:?}");
        assert_eq!(
            cut_middle("two\nlines and more text here", 12),
            "two…ext here"
        );
    }

    #[test]
    fn middle_columns_keep_what_tells_rows_apart() {
        let mut t = Table::new().column("ID", Align::Left).middle("CWD", 10);
        t.row(vec![
            "1".into(),
            "/home/u/src/projects/webapp@fix-login".into(),
        ]);
        t.row(vec![
            "2".into(),
            "/home/u/src/projects/webapp@fix-logout".into(),
        ]);
        let out = t.render(30);
        assert!(out.contains("/home/u/…/webapp@fix-login\n"), "{out}");
        assert!(out.contains("/home/u/…webapp@fix-logout\n"), "{out}");
    }

    #[test]
    fn key_values_align() {
        let out = key_values(&[("pid", "1".into()), ("state dir", "/x".into())]);
        assert_eq!(out, "pid        1\nstate dir  /x\n");
    }
}
