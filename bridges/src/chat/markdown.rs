//! # A session's Markdown as chat HTML
//!
//! Reports, results, a Lead's updates and a supervisor's steers are written by models, in
//! Markdown. [`markdown`] parses it with pulldown-cmark (CommonMark plus task lists) and
//! writes the one HTML dialect both phones accept (see [`super::html`]): bold (`<b>`),
//! italics (`<i>`), inline code (`<code>`), code blocks (`<pre>`, with the fence's language
//! when plausible), links (`<a href>`, only for `http:`, `https:` and `mailto:` addresses;
//! any other link keeps its text alone) and block quotes (`<blockquote>`, nested ones
//! flattened into one). Telegram has no heading or list tags, so a heading is a bold line,
//! a bulleted item a `• ` line (`◦ ` when nested, indented) and a numbered item a `1. `
//! line; a rule is a `———` line. Matrix gets the same HTML through
//! [`super::html::for_matrix`]. Everything written by the model is escaped: raw HTML in the
//! Markdown (`<script>`, `<b>`) is shown as the text it is. Blocks are separated as the
//! author separated them (a blank line in the source, a blank line in the chat; else a line
//! break), and a line break inside a paragraph stays a line break, as chats show them.
//!
//! The plain twin has no markup: the same text as the HTML shows, with a link's address
//! after its text (`docs (https://…)`) and `> ` before each quoted line.

use pulldown_cmark::{CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};

use super::html::{Html, escape_into};

/// `text` (Markdown) as chat HTML and its plain twin.
pub fn markdown(text: &str) -> Html {
    let mut w = Writer::new(text);
    let options = Options::ENABLE_TASKLISTS | Options::ENABLE_TABLES;
    let parser = Parser::new_ext(text, options).into_offset_iter();
    for (event, range) in parser {
        w.event(event, range.start);
    }
    let mut out = Html::new();
    out.raw(&w.html, &w.plain);
    out
}

/// `href` if a chat may link to it: an `http:`, `https:` or `mailto:` address (any case)
/// without spaces or control characters; `None` for anything else (`javascript:`, a
/// relative path, `data:`).
pub fn safe_href(href: &str) -> Option<&str> {
    let href = href.trim();
    let lower = href.get(..8).unwrap_or(href).to_ascii_lowercase();
    let scheme_ok = ["http://", "https://", "mailto:"]
        .iter()
        .any(|s| lower.starts_with(s) && href.len() > s.len());
    let clean = !href.chars().any(|c| c.is_whitespace() || c.is_control());
    (scheme_ok && clean).then_some(href)
}

/// Space wanted before the next block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Gap {
    None,
    Line,
    Blank,
}

/// A list being written: the next item's number (`None` for bullets).
struct List {
    next: Option<u64>,
}

/// A link being written: its address when kept, and where its plain text starts.
struct Link {
    href: Option<String>,
    plain_start: usize,
}

struct Writer<'s> {
    source: &'s str,
    html: String,
    plain: String,
    /// Space owed before the next content.
    gap: Gap,
    /// Just after a list marker or a quote's start: the next block needs no space.
    fresh: bool,
    lists: Vec<List>,
    links: Vec<Link>,
    /// Quotes open (only the outermost is a `<blockquote>`) and where its plain starts.
    quotes: usize,
    quote_plain_start: usize,
    /// A code block's language and text, or an HTML block's text, collected to its end.
    code: Option<(Option<String>, String)>,
    raw_block: Option<String>,
    /// A table's rows of cells (their text only), collected to its end and written as an
    /// aligned code block: chats have no tables.
    table: Option<Vec<Vec<String>>>,
}

impl<'s> Writer<'s> {
    fn new(source: &'s str) -> Writer<'s> {
        Writer {
            source,
            html: String::new(),
            plain: String::new(),
            gap: Gap::None,
            fresh: false,
            lists: Vec::new(),
            links: Vec::new(),
            quotes: 0,
            quote_plain_start: 0,
            code: None,
            raw_block: None,
            table: None,
        }
    }

    fn event(&mut self, event: Event<'_>, at: usize) {
        if let Some(rows) = &mut self.table {
            match event {
                Event::Start(Tag::TableHead | Tag::TableRow) => rows.push(Vec::new()),
                Event::Start(Tag::TableCell) => {
                    if let Some(row) = rows.last_mut() {
                        row.push(String::new());
                    }
                }
                Event::End(TagEnd::Table) => self.end_table(),
                Event::Text(text) | Event::Code(text) | Event::InlineHtml(text) => {
                    if let Some(cell) = rows.last_mut().and_then(|r| r.last_mut()) {
                        cell.push_str(&text);
                    }
                }
                // Emphasis, links and the like inside a cell: their text only.
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag, at),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                if let Some((_, code)) = &mut self.code {
                    code.push_str(&text);
                } else {
                    self.text(&text);
                }
            }
            Event::Html(text) => match &mut self.raw_block {
                Some(block) => block.push_str(&text),
                None => self.text(&text),
            },
            Event::InlineHtml(text)
            | Event::InlineMath(text)
            | Event::DisplayMath(text)
            | Event::FootnoteReference(text) => self.text(&text),
            Event::Code(code) => {
                self.open("<code>");
                escape_into(&mut self.html, &code);
                self.html.push_str("</code>");
                self.plain.push_str(&code);
            }
            Event::SoftBreak | Event::HardBreak => self.text("\n"),
            Event::Rule => {
                self.block(at);
                self.text("———");
            }
            Event::TaskListMarker(done) => self.text(if done { "☑ " } else { "☐ " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>, at: usize) {
        match tag {
            Tag::Paragraph => self.block(at),
            Tag::Heading { .. } => {
                self.block(at);
                self.open("<b>");
            }
            Tag::BlockQuote(_) => {
                self.block(at);
                if self.quotes == 0 {
                    self.open("<blockquote>");
                    self.quote_plain_start = self.plain.len();
                    self.fresh = true;
                }
                self.quotes += 1;
            }
            Tag::CodeBlock(kind) => {
                self.block(at);
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info.split_whitespace().next().map(Into::into),
                    CodeBlockKind::Indented => None,
                };
                self.code = Some((language, String::new()));
            }
            Tag::HtmlBlock => {
                self.block(at);
                self.raw_block = Some(String::new());
            }
            Tag::List(first) => {
                self.block(at);
                self.lists.push(List { next: first });
            }
            Tag::Item => self.item(at),
            Tag::Emphasis => self.open("<i>"),
            Tag::Strong => self.open("<b>"),
            Tag::Link {
                link_type,
                dest_url,
                ..
            }
            | Tag::Image {
                link_type,
                dest_url,
                ..
            } => {
                // `<ada@example.com>` links to the address.
                let dest_url = match link_type {
                    LinkType::Email => format!("mailto:{dest_url}"),
                    _ => dest_url.to_string(),
                };
                // A link inside a link (an image in one) keeps its text only.
                let inside = self.links.iter().any(|l| l.href.is_some());
                let href = safe_href(&dest_url).filter(|_| !inside).map(str::to_string);
                if let Some(href) = &href {
                    self.open("<a href=\"");
                    escape_into(&mut self.html, href);
                    self.html.push_str("\">");
                }
                self.links.push(Link {
                    href,
                    plain_start: self.plain.len(),
                });
            }
            Tag::Table(_) => {
                self.block(at);
                self.table = Some(Vec::new());
            }
            // Not enabled (footnotes, …): their text is kept.
            _ => {}
        }
    }

    /// A table's end: its rows as an aligned code block, the header underlined.
    fn end_table(&mut self) {
        let Some(rows) = self.table.take() else {
            return;
        };
        let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
        let width = |c: usize| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.trim().chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..columns).map(width).collect();
        let line = |row: &[String]| {
            let cells: Vec<String> = (0..columns)
                .map(|c| {
                    let cell = row.get(c).map_or("", |s| s.trim());
                    let pad = widths[c].saturating_sub(cell.chars().count());
                    format!("{cell}{}", " ".repeat(pad))
                })
                .collect();
            cells.join("  ").trim_end().to_string()
        };
        let mut lines = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            lines.push(line(row));
            if i == 0 {
                let rule: Vec<String> = widths.iter().map(|w| "-".repeat((*w).max(1))).collect();
                lines.push(rule.join("  "));
            }
        }
        self.flush();
        let mut pre = Html::new();
        pre.pre(&lines.join("\n"), None);
        let (html, plain) = pre.finish();
        self.html.push_str(&html);
        self.plain.push_str(&plain);
        self.fresh = false;
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) | TagEnd::Strong => self.html.push_str("</b>"),
            TagEnd::Emphasis => self.html.push_str("</i>"),
            TagEnd::BlockQuote(_) => {
                self.quotes = self.quotes.saturating_sub(1);
                if self.quotes == 0 {
                    self.html.push_str("</blockquote>");
                    let inner = self.plain.split_off(self.quote_plain_start);
                    let quoted: Vec<String> = inner
                        .split('\n')
                        .map(|l| {
                            if l.is_empty() {
                                ">".into()
                            } else {
                                format!("> {l}")
                            }
                        })
                        .collect();
                    self.plain.push_str(&quoted.join("\n"));
                    self.fresh = false;
                }
            }
            TagEnd::CodeBlock => {
                if let Some((language, code)) = self.code.take() {
                    let code = code.strip_suffix('\n').unwrap_or(&code);
                    self.flush();
                    let mut pre = Html::new();
                    pre.pre(code, language.as_deref());
                    let (html, plain) = pre.finish();
                    self.html.push_str(&html);
                    self.plain.push_str(&plain);
                    self.fresh = false;
                }
            }
            TagEnd::HtmlBlock => {
                if let Some(block) = self.raw_block.take() {
                    self.text(block.trim_end_matches('\n'));
                }
            }
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                let Some(Link { href, plain_start }) = self.links.pop() else {
                    return;
                };
                let Some(href) = href else {
                    return;
                };
                let shown = href.strip_prefix("mailto:").unwrap_or(&href).to_string();
                if self.plain.len() == plain_start {
                    self.text(&shown);
                }
                self.html.push_str("</a>");
                let text = &self.plain[plain_start..];
                if text != shown && text != href {
                    self.plain.push_str(&format!(" ({shown})"));
                }
            }
            _ => {}
        }
    }

    /// A list item: its own line, indented by its depth, after its marker.
    fn item(&mut self, at: usize) {
        self.block(at);
        let depth = self.lists.len().saturating_sub(1);
        let marker = match self.lists.last_mut() {
            Some(List { next: Some(n) }) => {
                let marker = format!("{n}. ");
                *n += 1;
                marker
            }
            _ if depth == 0 => "• ".to_string(),
            _ => "◦ ".to_string(),
        };
        // No-break spaces: Matrix's HTML would collapse ordinary ones.
        self.text(&format!("{}{marker}", "\u{a0}\u{a0}\u{a0}".repeat(depth)));
        self.fresh = true;
    }

    /// A block starts at source offset `at`: space before it unless it is the first
    /// thing written (or the first in its item or quote), a blank line when the author
    /// left one.
    fn block(&mut self, at: usize) {
        if self.fresh || self.html.is_empty() {
            return;
        }
        let gap = if blank_line_before(self.source, at) {
            Gap::Blank
        } else {
            Gap::Line
        };
        self.gap = self.gap.max(gap);
    }

    /// Owed space, written before content.
    fn flush(&mut self) {
        let gap = match std::mem::replace(&mut self.gap, Gap::None) {
            Gap::None => return,
            Gap::Line => "\n",
            Gap::Blank => "\n\n",
        };
        self.html.push_str(gap);
        self.plain.push_str(gap);
    }

    /// Trusted markup that starts content (a start tag).
    fn open(&mut self, markup: &str) {
        self.flush();
        self.fresh = false;
        self.html.push_str(markup);
    }

    /// Text written by the model, escaped.
    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.flush();
        self.fresh = false;
        escape_into(&mut self.html, text);
        self.plain.push_str(text);
    }
}

/// Whether the source line before the one holding offset `at` is blank (only spaces and
/// quote markers).
fn blank_line_before(source: &str, at: usize) -> bool {
    let Some(line_start) = source.get(..at).and_then(|s| s.rfind('\n')) else {
        return false;
    };
    let previous = source[..line_start].rsplit('\n').next().unwrap_or("");
    previous.chars().all(|c| c.is_whitespace() || c == '>')
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
