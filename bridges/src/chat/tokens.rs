//! # HTML as Telegram reads it
//!
//! A lenient tokenizer for the small HTML dialect the bridges send (`b`, `i`, `code`,
//! `pre`, `a`, `blockquote`, …). It follows Telegram's own parser (tdlib's
//! `parse_html`) where that matters for counting: the only named entities are `&lt;`,
//! `&gt;`, `&amp;` and `&quot;`, numeric ones are decimal `&#…;` or hexadecimal `&#x…;`,
//! the `;` is optional, and an `&` that starts no valid entity is a literal `&`. A `<`
//! that starts no well-formed tag is a literal `<`. Every byte of the input belongs to
//! exactly one atom, so the atoms' `raw` slices concatenate back to the input.

/// One indivisible piece of HTML: a tag, or one character of text (a literal character
/// or a whole entity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Atom<'a> {
    /// A start tag such as `<a href="…">`; `name` as written.
    Open { raw: &'a str, name: &'a str },
    /// An end tag such as `</b>`.
    Close { raw: &'a str, name: &'a str },
    /// A tag that opens nothing: `<br>`, `<hr>`, `<img …>`, `<x/>`.
    Void { raw: &'a str },
    /// One character of text and the source it came from (`a`, `&lt;`, `&#128512;`).
    Char { raw: &'a str, ch: char },
}

impl<'a> Atom<'a> {
    /// The source text of this atom.
    pub(super) fn raw(&self) -> &'a str {
        match *self {
            Atom::Open { raw, .. }
            | Atom::Close { raw, .. }
            | Atom::Void { raw }
            | Atom::Char { raw, .. } => raw,
        }
    }
}

/// Tags that never have an end tag.
const VOID: [&str; 4] = ["br", "hr", "img", "wbr"];

/// `html` as atoms.
pub(super) fn parse(html: &str) -> Vec<Atom<'_>> {
    let mut out = Vec::with_capacity(html.len());
    let mut i = 0;
    while let Some(rest) = html.get(i..).filter(|r| !r.is_empty()) {
        let special = match rest.as_bytes()[0] {
            b'<' => tag(rest),
            b'&' => entity(rest).map(|(ch, len)| {
                (
                    Atom::Char {
                        raw: &rest[..len],
                        ch,
                    },
                    len,
                )
            }),
            _ => None,
        };
        let (atom, len) = special.unwrap_or_else(|| literal(rest));
        out.push(atom);
        i += len;
    }
    out
}

/// Plain text as atoms: every character is itself.
pub(super) fn plain(text: &str) -> Vec<Atom<'_>> {
    text.char_indices()
        .map(|(i, ch)| Atom::Char {
            raw: &text[i..i + ch.len_utf8()],
            ch,
        })
        .collect()
}

/// The first character of `rest` as a literal.
fn literal(rest: &str) -> (Atom<'_>, usize) {
    let ch = rest.chars().next().unwrap_or('\u{fffd}');
    let len = ch.len_utf8();
    (
        Atom::Char {
            raw: &rest[..len],
            ch,
        },
        len,
    )
}

/// A tag at the start of `s` (which starts with `<`), and its length.
fn tag(s: &str) -> Option<(Atom<'_>, usize)> {
    let b = s.as_bytes();
    let closing = b.get(1) == Some(&b'/');
    let name_start = if closing { 2 } else { 1 };
    if !b.get(name_start)?.is_ascii_alphabetic() {
        return None;
    }
    let name_end = name_start
        + b[name_start..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-')
            .count();
    if !matches!(
        b.get(name_end),
        Some(b'>' | b'/' | b' ' | b'\t' | b'\n' | b'\r')
    ) {
        return None;
    }
    let mut quote = None;
    let mut end = None;
    for (j, &c) in b.iter().enumerate().skip(name_end) {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                b'"' | b'\'' => quote = Some(c),
                b'>' => {
                    end = Some(j + 1);
                    break;
                }
                b'<' => return None,
                _ => {}
            },
        }
    }
    let end = end?;
    let raw = &s[..end];
    let name = &s[name_start..name_end];
    let atom = if closing {
        Atom::Close { raw, name }
    } else if raw.ends_with("/>") || VOID.iter().any(|v| v.eq_ignore_ascii_case(name)) {
        Atom::Void { raw }
    } else {
        Atom::Open { raw, name }
    };
    Some((atom, end))
}

/// An entity at the start of `s` (which starts with `&`): its character and length, as
/// tdlib's `decode_html_entity` reads it.
fn entity(s: &str) -> Option<(char, usize)> {
    let b = s.as_bytes();
    let digit = |i: usize, radix: u32| b.get(i).and_then(|c| char::from(*c).to_digit(radix));
    let mut end;
    let code = if b.get(1) == Some(&b'#') {
        let radix = if b.get(2) == Some(&b'x') { 16 } else { 10 };
        end = if radix == 16 { 3 } else { 2 };
        let mut code: u32 = 0;
        while let Some(d) = digit(end, radix) {
            code = code * radix + d;
            end += 1;
            if code >= 0x10_ffff {
                return None;
            }
        }
        if code == 0 || (0xd800..=0xdfff).contains(&code) {
            return None;
        }
        code
    } else {
        end = 1 + b[1..]
            .iter()
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        u32::from(match &s[1..end] {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            _ => return None,
        })
    };
    if b.get(end) == Some(&b';') {
        end += 1;
    }
    Some((char::from_u32(code)?, end))
}

/// Whether an end tag named `close` ends an element named `open`.
pub(super) fn same_name(open: &str, close: &str) -> bool {
    open.eq_ignore_ascii_case(close)
}

/// Apply `atom` to a stack of open start tags (an end tag closes the innermost element of
/// its name and everything opened inside it; a stray end tag changes nothing).
pub(super) fn track<'a>(stack: &mut Vec<Atom<'a>>, atom: &Atom<'a>) {
    match *atom {
        Atom::Open { .. } => stack.push(*atom),
        Atom::Close { name, .. } => {
            let at = stack
                .iter()
                .rposition(|o| matches!(o, Atom::Open { name: n, .. } if same_name(n, name)));
            if let Some(at) = at {
                stack.truncate(at);
            }
        }
        Atom::Void { .. } | Atom::Char { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(html: &str) -> String {
        parse(html)
            .iter()
            .filter_map(|a| match a {
                Atom::Char { ch, .. } => Some(*ch),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn atoms_concatenate_back_to_the_input() {
        let html = "<b>a &lt; b</b> &amp; <a href=\"x?a=1&amp;b=>\">l</a> 😀<br/>";
        let atoms = parse(html);
        assert_eq!(atoms.iter().map(Atom::raw).collect::<String>(), html);
    }

    #[test]
    fn entities_as_telegram_decodes_them() {
        assert_eq!(text("&lt;&gt;&amp;&quot;"), "<>&\"");
        assert_eq!(text("&#65;&#x42;&#x1F600;"), "AB😀");
        assert_eq!(text("&lt x &amp"), "< x &");
        // Unknown names, empty or out-of-range numbers, surrogates and `&#X` are literal.
        assert_eq!(
            text("&nbsp; &#; &#0; &#xD800; &#1114111; &#X41;"),
            "&nbsp; &#; &#0; &#xD800; &#1114111; &#X41;"
        );
        assert_eq!(text("a & b"), "a & b");
    }

    #[test]
    fn tags_and_literal_angle_brackets() {
        let atoms = parse("<b>x</B><br><pre><code class=\"language-rust\">y</code></pre>");
        assert!(matches!(atoms[0], Atom::Open { name: "b", .. }));
        assert!(matches!(atoms[2], Atom::Close { name: "B", .. }));
        assert!(matches!(atoms[3], Atom::Void { raw: "<br>" }));
        assert!(matches!(atoms[5], Atom::Open { name: "code", raw } if raw.contains("language")));
        assert_eq!(text("a < b, 1<2, <3 <b"), "a < b, 1<2, <3 <b");
        assert_eq!(text("<a href='>'>x</a>"), "x");
    }

    #[test]
    fn the_stack_closes_the_innermost_match() {
        let atoms = parse("<b><i><u>x</i>");
        let mut stack = Vec::new();
        for a in &atoms {
            track(&mut stack, a);
        }
        assert_eq!(stack.len(), 1);
        track(&mut stack, &parse("</s>")[0]);
        assert_eq!(stack.len(), 1);
    }
}
