//! # Splitting long messages
//!
//! Telegram refuses a message over 4096 characters, counted as UTF-16 code units of the
//! text after entity parsing (tags removed, `&lt;` is one character, an emoji two);
//! Matrix events have their own size limit. [`split_html`] cuts HTML into chunks that
//! each fit such a limit and are each balanced HTML on their own: it never cuts inside a
//! tag or an entity, closes the elements open at a cut at the end of the chunk and
//! reopens them at the start of the next, and keeps a `<pre>` block whole unless the
//! block alone is over the limit (then it is cut between lines, `<pre>` closed and
//! reopened). Cuts are preferred at a paragraph (after a blank line), then a line, then
//! a space, then anywhere (but not inside an emoji sequence), and a preferred cut is
//! taken when it leaves the chunk at least half full. The text of the chunks, joined,
//! is exactly the text of the input (a literal `&` is written `&amp;` in a chunk, so a cut
//! cannot turn it into an entity). [`plain_split`] does the same for plain text, and
//! [`as_document`] tells a bridge when content is better sent as a file.

use super::tokens::{self, Atom};

/// Telegram's limit for a message text (and 1024 for a caption).
pub const TELEGRAM_LIMIT: usize = 4096;

/// The longest chunk the Matrix bridge sends, in characters of text: with markup and
/// UTF-8 a chunk stays well under Matrix's 64 KiB event limit.
pub const MATRIX_LIMIT: usize = 6000;

/// The length Telegram counts for `html` in HTML parse mode: UTF-16 code units of the
/// text after entity parsing.
pub fn telegram_len(html: &str) -> usize {
    tokens::parse(html)
        .iter()
        .map(|a| match a {
            Atom::Char { ch, .. } => ch.len_utf16(),
            _ => 0,
        })
        .sum()
}

/// The text of `html` as a reader sees it: tags removed, entities decoded (a Matrix
/// `body` for a chunk of `formatted_body`, or a document's content).
pub fn text_of(html: &str) -> String {
    tokens::parse(html)
        .iter()
        .filter_map(|a| match a {
            Atom::Char { ch, .. } => Some(*ch),
            _ => None,
        })
        .collect()
}

/// `html` cut into chunks of at most `limit` characters each as [`telegram_len`] counts
/// them (a `limit` below 2 counts as 2, so any one character fits). Empty input gives no
/// chunk; input that fits is returned unchanged as the one chunk. Balanced input gives
/// balanced chunks. A chunk can be whitespace only when the input has a run of
/// whitespace longer than the limit; Telegram refuses such a message, so skip it.
pub fn split_html(html: &str, limit: usize) -> Vec<String> {
    split_atoms(&tokens::parse(html), limit, true)
}

/// Plain `text` cut like [`split_html`] (lengths in UTF-16 code units), for a message
/// sent without markup or a Matrix `body`.
pub fn plain_split(text: &str, limit: usize) -> Vec<String> {
    split_atoms(&tokens::plain(text), limit, false)
}

/// Whether `html` is balanced as the splitter reads it: every end tag closes the element
/// opened last, with its name as written, and nothing is left open (`<br>` and other void
/// tags open nothing). What [`split_html`] keeps for each chunk of balanced input.
pub fn balanced(html: &str) -> bool {
    let mut stack = Vec::new();
    for atom in tokens::parse(html) {
        match atom {
            Atom::Open { name, .. } => stack.push(name),
            Atom::Close { name, .. } if stack.pop() != Some(name) => return false,
            _ => {}
        }
    }
    stack.is_empty()
}

/// Whether `html` needs more than `max_messages` chunks of `limit`: then the bridge
/// sends it as a document (a `.md` file) instead of a burst of messages.
pub fn as_document(html: &str, limit: usize, max_messages: usize) -> bool {
    if telegram_len(html) > limit.max(2).saturating_mul(max_messages) {
        return true;
    }
    split_html(html, limit).len() > max_messages
}

/// How good a cut before a character is; higher is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cut {
    /// Inside a `<pre>` block that fits the limit: never.
    Forbidden,
    /// Inside what is probably one visible symbol (a ZWJ emoji, a flag, an accent).
    Cluster,
    Anywhere,
    Space,
    Line,
    /// After a blank line.
    Paragraph,
}

/// The cut-quality of each position, over the characters of a text.
struct Text {
    /// Atom index of each character.
    at: Vec<usize>,
    /// `off[j]`: UTF-16 length of the characters before character `j` (`len + 1` items).
    off: Vec<usize>,
    /// `cut[j]`: how good a cut before character `j` is (`cut[0]` is unused).
    cut: Vec<Cut>,
}

impl Text {
    fn new(atoms: &[Atom<'_>], limit: usize) -> Text {
        let mut at = Vec::new();
        let mut chars = Vec::new();
        let mut block = Vec::new();
        let mut block_len: Vec<usize> = Vec::new();
        let mut stack = Vec::new();
        let mut in_pre = false;
        for (i, atom) in atoms.iter().enumerate() {
            tokens::track(&mut stack, atom);
            let now_pre = stack
                .iter()
                .any(|o| matches!(o, Atom::Open { name, .. } if tokens::same_name(name, "pre")));
            if now_pre && !in_pre {
                block_len.push(0);
            }
            in_pre = now_pre;
            if let Atom::Char { ch, .. } = atom {
                at.push(i);
                chars.push(*ch);
                block.push(in_pre.then(|| block_len.len() - 1));
                if in_pre {
                    *block_len.last_mut().unwrap_or(&mut 0) += ch.len_utf16();
                }
            }
        }
        let mut off = Vec::with_capacity(chars.len() + 1);
        off.push(0);
        for ch in &chars {
            off.push(off[off.len() - 1] + ch.len_utf16());
        }
        let mut cut = vec![Cut::Forbidden; chars.len() + 1];
        let mut content = false;
        let mut blank_before = false;
        let mut regional = 0;
        for j in 1..=chars.len() {
            let prev = chars[j - 1];
            if prev == '\n' {
                blank_before = !content;
                content = false;
            } else if !prev.is_whitespace() {
                content = true;
            }
            regional = if is_regional(prev) { regional + 1 } else { 0 };
            let Some(&next) = chars.get(j) else {
                break;
            };
            let by_text = if prev == '\n' && blank_before {
                Cut::Paragraph
            } else if prev == '\n' {
                Cut::Line
            } else if prev.is_whitespace() {
                Cut::Space
            } else if extends(next) || prev == '\u{200d}' || regional % 2 == 1 && is_regional(next)
            {
                Cut::Cluster
            } else {
                Cut::Anywhere
            };
            cut[j] = match (block[j - 1], block[j]) {
                (Some(a), Some(b)) if a == b && block_len[a] <= limit => Cut::Forbidden,
                (Some(a), Some(b)) if a == b => by_text.min(Cut::Line),
                (None, None) => by_text,
                _ => by_text.max(Cut::Line),
            };
        }
        Text { at, off, cut }
    }

    /// Where to cut a chunk that starts at character `s` and may end before `e` at the
    /// latest (a cut before character `j` leaves characters `s..j` in the chunk).
    fn choose(&self, s: usize, e: usize, limit: usize) -> usize {
        let half = self.off[s] + limit / 2;
        let last = |min: Cut, from: usize| {
            (s + 1..=e)
                .rev()
                .find(|&j| self.cut[j] >= min && self.off[j] >= from)
        };
        [Cut::Paragraph, Cut::Line, Cut::Space]
            .into_iter()
            .find_map(|min| last(min, half))
            .or_else(|| {
                [
                    Cut::Paragraph,
                    Cut::Line,
                    Cut::Space,
                    Cut::Anywhere,
                    Cut::Cluster,
                ]
                .into_iter()
                .find_map(|min| last(min, 0))
            })
            .unwrap_or(e)
    }
}

fn is_regional(c: char) -> bool {
    ('\u{1f1e6}'..='\u{1f1ff}').contains(&c)
}

/// Characters that continue the symbol before them.
fn extends(c: char) -> bool {
    matches!(c,
        '\u{200d}'
        | '\u{0300}'..='\u{036f}'
        | '\u{1ab0}'..='\u{1aff}'
        | '\u{20d0}'..='\u{20ff}'
        | '\u{fe00}'..='\u{fe0f}'
        | '\u{fe20}'..='\u{fe2f}'
        | '\u{1f3fb}'..='\u{1f3ff}'
        | '\u{e0020}'..='\u{e007f}')
}

/// What a chunk writes for `atom`: its source, except that a literal `&` in HTML is
/// written `&amp;`. Left bare, a cut after it (`&amp|x`, `&#11|14111`) or the end tags
/// closing the chunk would make it and what follows an entity, changing the text.
fn piece<'a>(atom: &Atom<'a>, html: bool) -> &'a str {
    match *atom {
        Atom::Char { raw: "&", .. } if html => "&amp;",
        _ => atom.raw(),
    }
}

fn split_atoms(atoms: &[Atom<'_>], limit: usize, html: bool) -> Vec<String> {
    let limit = limit.max(2);
    let whole = || atoms.iter().map(Atom::raw).collect::<String>();
    if atoms.is_empty() {
        return Vec::new();
    }
    let text = Text::new(atoms, limit);
    let n = text.at.len();
    if text.off[n] <= limit {
        return vec![whole()];
    }
    let mut chunks = Vec::new();
    let mut stack: Vec<Atom<'_>> = Vec::new();
    let (mut start_atom, mut s) = (0, 0);
    loop {
        let mut chunk: String = stack.iter().map(Atom::raw).collect();
        if text.off[n] - text.off[s] <= limit {
            chunk.extend(atoms[start_atom..].iter().map(|a| piece(a, html)));
            chunks.push(chunk);
            return chunks;
        }
        let fits = text.off.partition_point(|&o| o <= text.off[s] + limit) - 1;
        let e = fits.clamp(s + 1, n);
        let j = text.choose(s, e, limit);
        // Start tags just before the cut belong to the next chunk.
        let mut k = text.at[j];
        while k > text.at[j - 1] + 1 && matches!(atoms[k - 1], Atom::Open { .. }) {
            k -= 1;
        }
        for atom in &atoms[start_atom..k] {
            chunk.push_str(piece(atom, html));
            tokens::track(&mut stack, atom);
        }
        for open in stack.iter().rev() {
            if let Atom::Open { name, .. } = open {
                chunk.push_str("</");
                chunk.push_str(name);
                chunk.push('>');
            }
        }
        chunks.push(chunk);
        (start_atom, s) = (k, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so the property tests need no crate.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[self.below(items.len())]
        }
    }

    const WORDS: [&str; 22] = [
        "shepherd",
        "a",
        "the",
        "deploy",
        "staging",
        "日本語の",
        "テキスト",
        "中文",
        "😀",
        "👨‍👩‍👧‍👦",
        "🇩🇪🇫🇷",
        "👍🏽",
        "é",
        "x&lt;y",
        "&amp;&amp;",
        "&quot;q&quot;",
        "&#128512;",
        "&#x1F680;",
        "a&gt;b",
        "1 &lt; 2",
        "naïve",
        "e\u{301}",
    ];
    const SEPARATORS: [&str; 7] = [" ", " ", " ", "  ", "\n", "\n\n", "\n\n\n"];

    fn words(n: usize, rng: &mut Rng, out: &mut String) {
        for _ in 0..n {
            out.push_str(rng.pick(&WORDS));
            out.push_str(rng.pick(&SEPARATORS));
        }
    }

    /// Random balanced HTML in the bridges' dialect.
    fn html(rng: &mut Rng, depth: usize, out: &mut String) {
        for _ in 0..1 + rng.below(6) {
            match rng.below(if depth == 0 { 3 } else { 9 }) {
                0..3 => words(1 + rng.below(12), rng, out),
                3 => {
                    let lang = rng.pick(&["", "<code class=\"language-rust\">"]);
                    out.push_str("<pre>");
                    out.push_str(lang);
                    for _ in 0..1 + rng.below(8) {
                        words(rng.below(8), rng, out);
                        out.push('\n');
                    }
                    out.push_str(if lang.is_empty() {
                        "</pre>"
                    } else {
                        "</code></pre>"
                    });
                }
                4 => {
                    out.push_str("<a href=\"https://x.test/?a=1&amp;b=%3E\">");
                    words(1 + rng.below(4), rng, out);
                    out.push_str("</a>");
                }
                _ => {
                    let tag = rng.pick(&["b", "i", "code", "blockquote", "u"]);
                    out.push_str(&format!("<{tag}>"));
                    html(rng, depth - 1, out);
                    out.push_str(&format!("</{tag}>"));
                }
            }
        }
    }

    fn char_raws(html: &str) -> String {
        tokens::parse(html)
            .iter()
            .filter(|a| matches!(a, Atom::Char { .. }))
            .map(Atom::raw)
            .collect()
    }

    fn tags(html: &str) -> Vec<String> {
        tokens::parse(html)
            .iter()
            .filter(|a| !matches!(a, Atom::Char { .. }))
            .map(|a| a.raw().to_string())
            .collect()
    }

    fn pre_count(html: &str) -> usize {
        html.matches("<pre>").count()
    }

    #[test]
    fn random_html_splits_into_balanced_chunks_within_the_limit() {
        let mut rng = Rng(0x5eed_1234_abcd_9876);
        let (mut total, mut reopened_pre) = (0, 0);
        for round in 0..400 {
            let mut input = String::new();
            html(&mut rng, 3, &mut input);
            let limit = [2, 3, 5, 8, 13, 40, 100, 300][round % 8];
            let chunks = split_html(&input, limit);
            let known: Vec<String> = tags(&input);
            for chunk in &chunks {
                assert!(telegram_len(chunk) <= limit, "over {limit}: {chunk:?}");
                assert!(balanced(chunk), "unbalanced: {chunk:?}\nfrom {input:?}");
                assert!(telegram_len(chunk) > 0, "empty chunk from {input:?}");
                for tag in tags(chunk) {
                    let generated = tag.starts_with("</") && !tag.contains(' ');
                    assert!(
                        generated || known.contains(&tag),
                        "{tag} not from {input:?}"
                    );
                }
            }
            let joined: String = chunks.iter().map(|c| text_of(c)).collect();
            assert_eq!(joined, text_of(&input), "text differs (limit {limit})");
            // No entity or literal character was cut apart.
            let raws: String = chunks.iter().map(|c| char_raws(c)).collect();
            assert_eq!(raws, char_raws(&input));
            // No `<pre>` that fits was split.
            let longest_pre = input
                .split("<pre>")
                .skip(1)
                .map(|p| telegram_len(p.split("</pre>").next().unwrap_or("")))
                .max()
                .unwrap_or(0);
            let pres: usize = chunks.iter().map(|c| pre_count(c)).sum();
            if longest_pre <= limit {
                assert_eq!(
                    pres,
                    pre_count(&input),
                    "a fitting <pre> was split: {input:?}"
                );
            } else if pres > pre_count(&input) {
                reopened_pre += 1;
            }
            if telegram_len(&input) <= limit {
                assert_eq!(chunks, vec![input.clone()]);
            }
            total += chunks.len();
        }
        // The generator exercises what it should: many cuts, oversized blocks reopened.
        assert!(total > 4000, "{total} chunks");
        assert!(reopened_pre > 20, "{reopened_pre} rounds reopened a <pre>");
    }

    #[test]
    fn random_plain_text_splits_within_the_limit() {
        let mut rng = Rng(42);
        for round in 0..300 {
            let mut input = String::new();
            words(1 + rng.below(80), &mut rng, &mut input);
            let limit = [2, 3, 7, 20, 64][round % 5];
            let chunks = plain_split(&input, limit);
            for chunk in &chunks {
                let len: usize = chunk.chars().map(char::len_utf16).sum();
                assert!(len <= limit && len > 0, "{chunk:?} for {limit}");
            }
            assert_eq!(chunks.concat(), input);
        }
    }

    #[test]
    fn telegram_counts_utf16_after_entity_parsing() {
        assert_eq!(telegram_len("<b>a &lt; b</b>"), 5);
        assert_eq!(telegram_len("😀"), 2);
        assert_eq!(telegram_len("&#128512;"), 2);
        assert_eq!(telegram_len("日本"), 2);
        assert_eq!(
            telegram_len("<a href=\"https://example.com/long\">x</a>"),
            1
        );
        assert_eq!(telegram_len("&amp &quot;"), 3);
        assert_eq!(
            text_of("<i>1 &lt; 2 &amp;&amp; 3 &gt; 2</i>"),
            "1 < 2 && 3 > 2"
        );
    }

    #[test]
    fn small_input_is_returned_unchanged_and_empty_input_gives_nothing() {
        assert_eq!(split_html("<b>hi</b>", 10), vec!["<b>hi</b>"]);
        assert!(split_html("", 10).is_empty());
        assert!(plain_split("", 10).is_empty());
    }

    #[test]
    fn paragraphs_win_over_lines_and_lines_over_spaces() {
        let html = "aaaa bbbb\ncccc dddd\n\neeee ffff\ngggg";
        assert_eq!(
            split_html(html, 24),
            vec!["aaaa bbbb\ncccc dddd\n\n", "eeee ffff\ngggg"]
        );
        assert_eq!(
            split_html(html, 16),
            vec!["aaaa bbbb\n", "cccc dddd\n\n", "eeee ffff\ngggg"]
        );
        assert_eq!(plain_split("one two three", 9), vec!["one two ", "three"]);
        assert_eq!(plain_split("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
    }

    #[test]
    fn a_preferred_cut_must_leave_the_chunk_half_full() {
        // The only line break is early; a space near the limit is better.
        let text = "ab\ncdef ghij klmn opqr";
        assert_eq!(plain_split(text, 16), vec!["ab\ncdef ghij ", "klmn opqr"]);
        // Without any space late enough, the early line break still beats a hard cut.
        assert_eq!(
            plain_split("ab\ncdefghijklmnopqr", 16),
            vec!["ab\n", "cdefghijklmnopqr"]
        );
    }

    #[test]
    fn open_tags_are_closed_and_reopened() {
        let html = "<b>bold one\n<i>and italic</i> two</b>";
        let chunks = split_html(html, 12);
        assert_eq!(
            chunks,
            vec![
                "<b>bold one\n</b>",
                "<b><i>and italic</i> </b>",
                "<b>two</b>"
            ]
        );
        let link = "<a href=\"https://x.test/?q=a&amp;b\">click here now</a>";
        assert_eq!(
            split_html(link, 6),
            vec![
                "<a href=\"https://x.test/?q=a&amp;b\">click </a>",
                "<a href=\"https://x.test/?q=a&amp;b\">here </a>",
                "<a href=\"https://x.test/?q=a&amp;b\">now</a>"
            ]
        );
    }

    #[test]
    fn start_tags_at_a_cut_move_to_the_next_chunk() {
        let chunks = split_html("one two <b>three</b>", 8);
        assert_eq!(chunks, vec!["one two ", "<b>three</b>"]);
    }

    #[test]
    fn entities_and_tags_are_never_cut() {
        let html = "&lt;&lt;&lt;&lt;&lt;&lt;";
        assert_eq!(split_html(html, 4), vec!["&lt;&lt;&lt;&lt;", "&lt;&lt;"]);
        assert_eq!(split_html("😀😀😀", 3), vec!["😀", "😀", "😀"]);
        assert_eq!(
            split_html("&#128512;&#128512;", 2),
            vec!["&#128512;", "&#128512;"]
        );
    }

    #[test]
    fn a_cut_never_makes_an_entity_of_a_literal_ampersand() {
        // `&ampxyz` is a literal `&` and letters; cut after `&amp`, the chunk alone would
        // read `&`. The same for a number too large to be a character.
        for (html, limit) in [("&ampxyz", 4), ("&ltxx", 3), ("&#11141110", 5)] {
            let chunks = split_html(html, limit);
            let joined: String = chunks.iter().map(|c| text_of(c)).collect();
            assert_eq!(joined, text_of(html), "{chunks:?}");
            for chunk in &chunks {
                assert!(telegram_len(chunk) <= limit, "{chunk:?}");
            }
        }
        // A text that fits is left as it is, bare `&` included.
        assert_eq!(split_html("a & b", 10), ["a & b"]);
    }

    #[test]
    fn emoji_sequences_stay_whole_when_possible() {
        let family = "👨‍👩‍👧";
        let text = format!("{family}{family}");
        let chunks = plain_split(&text, 10);
        assert_eq!(chunks, vec![family, family]);
        assert_eq!(plain_split("🇩🇪🇫🇷", 6), vec!["🇩🇪", "🇫🇷"]);
    }

    #[test]
    fn a_fitting_pre_block_moves_whole_to_the_next_chunk() {
        let html = "intro text\n<pre>line one\nline two</pre>\nafter";
        let chunks = split_html(html, 22);
        assert_eq!(
            chunks,
            vec!["intro text\n", "<pre>line one\nline two</pre>\n", "after"]
        );
    }

    #[test]
    fn an_oversized_pre_block_is_cut_between_lines_and_reopened() {
        let html = "<pre><code class=\"language-sh\">echo 1\necho 2\necho 3\n</code></pre>done";
        let chunks = split_html(html, 15);
        assert_eq!(
            chunks,
            vec![
                "<pre><code class=\"language-sh\">echo 1\necho 2\n</code></pre>",
                "<pre><code class=\"language-sh\">echo 3\n</code></pre>done",
            ]
        );
        // A single line longer than the limit still has to be cut.
        let long = format!("<pre>{}</pre>", "x".repeat(25));
        let chunks = split_html(&long, 10);
        assert_eq!(chunks.len(), 3);
        assert!(
            chunks
                .iter()
                .all(|c| c.starts_with("<pre>") && c.ends_with("</pre>"))
        );
    }

    #[test]
    fn telegram_sized_report_splits_into_few_chunks() {
        let para = "The quick brown fox jumps over the lazy dog. ".repeat(20);
        let html = format!("<b>report</b>\n{}", [para.as_str(); 12].join("\n\n"));
        let chunks = split_html(&html, TELEGRAM_LIMIT);
        assert_eq!(chunks.len(), 3);
        for c in &chunks[..2] {
            assert!(c.ends_with("\n\n"), "cut at a paragraph");
            assert!(telegram_len(c) > TELEGRAM_LIMIT / 2);
        }
    }

    /// Random Markdown of the kinds models write, with text that needs escaping.
    fn markdown_text(rng: &mut Rng, out: &mut String) {
        const INLINE: [&str; 12] = [
            "**bold {}**",
            "*it {}*",
            "`code <{}>`",
            "[link {}](https://x.test/?a=1&b=\"2\")",
            "[bad {}](javascript:alert(1))",
            "<script>{}</script>",
            "a < b && {}",
            "<https://y.test/{}>",
            "~~{}~~",
            "***{}***",
            "{} &amp; &lt;",
            "**{}",
        ];
        const BLOCK: [&str; 9] = ["", "# ", "## ", "- ", "  - ", "1. ", "> ", "> > ", "- [ ] "];
        for _ in 0..1 + rng.below(40) {
            if rng.below(8) == 0 {
                out.push_str("```rust\n");
                for _ in 0..1 + rng.below(6) {
                    words(rng.below(6), rng, out);
                    out.push('\n');
                }
                out.push_str("```\n");
                continue;
            }
            out.push_str(rng.pick(&BLOCK));
            for _ in 0..1 + rng.below(4) {
                let mut w = String::new();
                words(1 + rng.below(3), rng, &mut w);
                let w = w.replace('\n', " ");
                out.push_str(&rng.pick(&INLINE).replace("{}", w.trim()));
                out.push(' ');
            }
            out.push_str(rng.pick(&["\n", "\n", "\n\n"]));
        }
    }

    #[test]
    fn rendered_markdown_splits_into_valid_pieces() {
        let mut rng = Rng(0x00d0_c0de_5eed);
        let allowed = ["b", "i", "code", "pre", "a", "blockquote"];
        for round in 0..300 {
            let mut text = String::new();
            markdown_text(&mut rng, &mut text);
            let (html, _) = super::super::markdown::markdown(&text).finish();
            assert!(
                balanced(&html),
                "unbalanced rendering of {text:?}: {html:?}"
            );
            for atom in tokens::parse(&html) {
                if let Atom::Open { name, .. } | Atom::Close { name, .. } = atom {
                    assert!(allowed.contains(&name), "<{name}> from {text:?}");
                }
                assert!(!matches!(atom, Atom::Void { .. }), "{atom:?} from {text:?}");
            }
            let limit = [TELEGRAM_LIMIT, 300, 64, 17, 5][round % 5];
            let chunks = split_html(&html, limit);
            for chunk in &chunks {
                assert!(telegram_len(chunk) <= limit, "over {limit}: {chunk:?}");
                assert!(balanced(chunk), "unbalanced chunk {chunk:?} of {html:?}");
                let matrix = super::super::html::for_matrix(chunk);
                assert!(balanced(&matrix), "unbalanced for Matrix: {matrix:?}");
            }
            let joined: String = chunks.iter().map(|c| text_of(c)).collect();
            assert_eq!(joined, text_of(&html), "text differs (limit {limit})");
            let raws: String = chunks.iter().map(|c| char_raws(c)).collect();
            assert_eq!(raws, char_raws(&html), "an entity was cut");
        }
    }

    #[test]
    fn a_long_markdown_report_splits_at_paragraphs_with_tags_reopened() {
        let section = "## Changes\n\
            The **login** fix touches `auth.rs` & <session.rs>; see [the pull request with the fix](https://x.test/pr?a=1&b=2).\n\
            - first *point*, with more words to fill the line\n\
            - second point\n\n\
            > a quoted note that goes on for a while, **bold** inside\n\n\
            ```rust\nfn main() {\n    println!(\"a < b\");\n}\n```\n\n";
        let text = section.repeat(60);
        let (html, _) = super::super::markdown::markdown(&text).finish();
        assert!(
            telegram_len(&html) > 3 * TELEGRAM_LIMIT,
            "{}",
            telegram_len(&html)
        );
        let chunks = split_html(&html, TELEGRAM_LIMIT);
        assert!(chunks.len() >= 4, "{} chunks", chunks.len());
        for chunk in &chunks {
            assert!(telegram_len(chunk) <= TELEGRAM_LIMIT);
            assert!(telegram_len(chunk) > TELEGRAM_LIMIT / 2 || chunk == chunks.last().unwrap());
            assert!(balanced(chunk), "{chunk:?}");
            assert_eq!(pre_count(chunk), chunk.matches("</pre>").count());
        }
        for c in &chunks[..chunks.len() - 1] {
            assert!(
                c.ends_with("\n\n"),
                "not cut at a paragraph: …{:?}",
                &c[c.len() - 40..]
            );
        }
        let pres: usize = chunks.iter().map(|c| pre_count(c)).sum();
        assert_eq!(pres, 60, "a code block was cut");
        let joined: String = chunks.iter().map(|c| text_of(c)).collect();
        assert_eq!(joined, text_of(&html));
        // Small pieces: a cut inside a link or a quote closes and reopens it.
        let small = split_html(&html, 12);
        let link = "<a href=\"https://x.test/pr?a=1&amp;b=2\">";
        assert!(small.iter().any(|c| c.starts_with(link)), "a link reopened");
        assert!(
            small
                .iter()
                .any(|c| c.starts_with("<blockquote>") && !c.contains("a quoted")),
            "a quote reopened"
        );
        assert!(small.iter().all(|c| balanced(c)));
    }

    #[test]
    fn long_content_becomes_a_document() {
        let html = "word ".repeat(5000);
        assert!(as_document(&html, TELEGRAM_LIMIT, 3));
        assert!(!as_document(&html, TELEGRAM_LIMIT, 10));
        assert!(!as_document("short", TELEGRAM_LIMIT, 1));
        assert!(as_document("short", TELEGRAM_LIMIT, 0));
    }
}
