//! # HTML that both chats accept
//!
//! Telegram's HTML parse mode and Matrix's `formatted_body` share a small dialect: `b`,
//! `i`, `u`, `code`, `pre` (with `<code class="language-…">` inside), `a href`,
//! `blockquote`. [`escape`] makes any text safe as element content or as a
//! double-quoted attribute value (`&`, `<`, `>`, `"`; Telegram knows no other named
//! entity). [`Html`] builds a message from escaped pieces and, alongside, the same
//! message as plain text (a Matrix `body`, a log line), finished as a [`Rendered`]. Line breaks are `\n`, which
//! Telegram shows as they are; Matrix wants `<br>`, so a Matrix bridge passes each chunk
//! through [`for_matrix`] after splitting. A session's Markdown becomes this dialect in
//! [`super::markdown`].

use super::tokens::{self, Atom};

/// `text` escaped for HTML content and double-quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    escape_into(&mut out, text);
    out
}

/// Append `text`, escaped, to `out`.
pub fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

/// An HTML message and its plain-text twin, built from pieces that are escaped as they
/// are added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Html {
    html: String,
    plain: String,
}

impl Html {
    pub fn new() -> Html {
        Html::default()
    }

    /// Text as it is.
    pub fn text(&mut self, text: &str) -> &mut Html {
        escape_into(&mut self.html, text);
        self.plain.push_str(text);
        self
    }

    /// `<b>text</b>`.
    pub fn bold(&mut self, text: &str) -> &mut Html {
        self.wrap("b", text)
    }

    /// `<i>text</i>`.
    pub fn italic(&mut self, text: &str) -> &mut Html {
        self.wrap("i", text)
    }

    /// `<code>text</code>`: inline code, monospace.
    pub fn code(&mut self, text: &str) -> &mut Html {
        self.wrap("code", text)
    }

    /// A code block, `<pre>` (with `<code class="language-…">` when `language` is a
    /// plausible language name). The plain twin is the text alone.
    pub fn pre(&mut self, text: &str, language: Option<&str>) -> &mut Html {
        let language = language.filter(|l| {
            !l.is_empty()
                && l.len() <= 32
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-#._".contains(c))
        });
        match language {
            Some(language) => {
                self.html.push_str("<pre><code class=\"language-");
                escape_into(&mut self.html, language);
                self.html.push_str("\">");
                escape_into(&mut self.html, text);
                self.html.push_str("</code></pre>");
            }
            None => {
                self.html.push_str("<pre>");
                escape_into(&mut self.html, text);
                self.html.push_str("</pre>");
            }
        }
        self.plain.push_str(text);
        self
    }

    /// `<a href="href">text</a>`; plain: `text (href)`, or the bare address when the
    /// text is the address.
    pub fn link(&mut self, href: &str, text: &str) -> &mut Html {
        self.html.push_str("<a href=\"");
        escape_into(&mut self.html, href);
        self.html.push_str("\">");
        escape_into(&mut self.html, text);
        self.html.push_str("</a>");
        if text == href {
            self.plain.push_str(href);
        } else {
            self.plain.push_str(&format!("{text} ({href})"));
        }
        self
    }

    /// `<blockquote>text</blockquote>`; plain: each line after `> `.
    pub fn quote(&mut self, text: &str) -> &mut Html {
        self.wrap_html("blockquote", text);
        let quoted: Vec<String> = text.lines().map(|l| format!("> {l}")).collect();
        self.plain.push_str(&quoted.join("\n"));
        self
    }

    /// A line break.
    pub fn line(&mut self) -> &mut Html {
        self.html.push('\n');
        self.plain.push('\n');
        self
    }

    /// Trusted markup and its plain twin, added as they are.
    pub fn raw(&mut self, html: &str, plain: &str) -> &mut Html {
        self.html.push_str(html);
        self.plain.push_str(plain);
        self
    }

    /// The HTML so far.
    pub fn html(&self) -> &str {
        &self.html
    }

    /// The plain text so far.
    pub fn plain(&self) -> &str {
        &self.plain
    }

    /// `(html, plain)`.
    pub fn finish(self) -> (String, String) {
        (self.html, self.plain)
    }

    fn wrap(&mut self, tag: &str, text: &str) -> &mut Html {
        self.wrap_html(tag, text);
        self.plain.push_str(text);
        self
    }

    fn wrap_html(&mut self, tag: &str, text: &str) {
        self.html.push('<');
        self.html.push_str(tag);
        self.html.push('>');
        escape_into(&mut self.html, text);
        self.html.push_str("</");
        self.html.push_str(tag);
        self.html.push('>');
    }
}

/// `html` for a Matrix `formatted_body`: each `\n` outside `<pre>` becomes `<br>`, except
/// one right after a block (`</pre>`, `</blockquote>`), which already ends a line.
pub fn for_matrix(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + html.len() / 16);
    let mut stack = Vec::new();
    let mut after_block = false;
    for atom in tokens::parse(html) {
        let in_pre = stack
            .iter()
            .any(|o| matches!(o, Atom::Open { name, .. } if tokens::same_name(name, "pre")));
        match atom {
            Atom::Char { ch: '\n', .. } if !in_pre => {
                if !after_block {
                    out.push_str("<br>");
                }
            }
            _ => out.push_str(atom.raw()),
        }
        after_block = matches!(atom, Atom::Close { name, .. }
            if tokens::same_name(name, "pre") || tokens::same_name(name, "blockquote"));
        tokens::track(&mut stack, &atom);
    }
    out
}

/// A message as HTML and as plain text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    pub html: String,
    pub plain: String,
}

impl Rendered {
    /// This message, then `more` on the lines below it.
    pub fn then(mut self, more: Rendered) -> Rendered {
        self.html.push('\n');
        self.html.push_str(&more.html);
        self.plain.push('\n');
        self.plain.push_str(&more.plain);
        self
    }
}

impl From<Html> for Rendered {
    fn from(h: Html) -> Rendered {
        let (html, plain) = h.finish();
        Rendered { html, plain }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::split::text_of;

    #[test]
    fn escaping_covers_text_and_attributes() {
        assert_eq!(
            escape("a < b && c > \"d\" 'e'"),
            "a &lt; b &amp;&amp; c &gt; &quot;d&quot; 'e'"
        );
        assert_eq!(escape("😀 日本"), "😀 日本");
        assert_eq!(escape("&lt;"), "&amp;lt;");
        for s in ["<b>x</b>", "&amp;", "\"q\"", "a&b<c>d", "👨‍👩‍👧 <&>"] {
            assert_eq!(text_of(&escape(s)), s, "round trip of {s}");
        }
    }

    #[test]
    fn the_builder_escapes_every_piece() {
        let mut h = Html::new();
        h.bold("<name>")
            .text(" & ")
            .italic("i")
            .line()
            .code("x<y")
            .line()
            .link("https://x.test/?a=1&b=\"2\"", "a <link>");
        let (html, plain) = h.finish();
        assert_eq!(
            html,
            "<b>&lt;name&gt;</b> &amp; <i>i</i>\n<code>x&lt;y</code>\n\
             <a href=\"https://x.test/?a=1&amp;b=&quot;2&quot;\">a &lt;link&gt;</a>"
        );
        assert_eq!(
            plain,
            "<name> & i\nx<y\na <link> (https://x.test/?a=1&b=\"2\")"
        );
    }

    #[test]
    fn pre_blocks_name_only_plausible_languages() {
        let mut h = Html::new();
        h.pre("fn main() {}", Some("rust"))
            .pre("<x>", Some("evil\" onclick"))
            .pre("y", None);
        assert_eq!(
            h.html(),
            "<pre><code class=\"language-rust\">fn main() {}</code></pre><pre>&lt;x&gt;</pre><pre>y</pre>"
        );
        assert_eq!(h.plain(), "fn main() {}<x>y");
    }

    #[test]
    fn quotes_prefix_plain_lines() {
        let mut h = Html::new();
        h.quote("one\ntwo <3");
        assert_eq!(h.html(), "<blockquote>one\ntwo &lt;3</blockquote>");
        assert_eq!(h.plain(), "> one\n> two <3");
    }

    #[test]
    fn matrix_gets_br_outside_pre() {
        assert_eq!(
            for_matrix("a\nb\n<pre>c\nd</pre>\ne\n<blockquote>q\nr</blockquote>\nf&#10;g"),
            "a<br>b<br><pre>c\nd</pre>e<br><blockquote>q<br>r</blockquote>f<br>g"
        );
    }
}
