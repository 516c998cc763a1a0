//! Telegram's HTML parse mode and text rules, ported from tdlib (`parse_html`,
//! `decode_html_entity` and the trimming in `fix_formatted_text`, td/telegram/MessageEntity.cpp),
//! which is what the Bot API server runs: same tags, same error texts, same byte offsets.
//!
//! One deliberate difference: tdlib keeps a bare `&` that starts no known entity as a
//! literal; with `strict_ampersand` the fake refuses it, because it means the bot forgot
//! to escape text (and `a &lt; b` typed by a user would then render as `a < b`).

use serde_json::{Value, json};

/// Text after entity parsing: what the user sees, with entities in UTF-16 code units.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Formatted {
    pub text: String,
    pub entities: Vec<Value>,
}

/// Length as Telegram counts it: UTF-16 code units (an emoji outside the BMP counts 2).
pub fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Bold,
    Italic,
    Underline,
    Strikethrough,
    Spoiler,
    Code(String),
    Pre(Option<String>),
    TextLink(String),
    TextMention(i64),
    CustomEmoji(String),
    Blockquote,
    ExpandableBlockquote,
    DateTime(i64, String),
}

#[derive(Debug, Clone)]
struct Entity {
    kind: Kind,
    offset: usize,
    length: usize,
}

impl Entity {
    fn to_json(&self) -> Value {
        let mut v = match &self.kind {
            Kind::Bold => json!({"type": "bold"}),
            Kind::Italic => json!({"type": "italic"}),
            Kind::Underline => json!({"type": "underline"}),
            Kind::Strikethrough => json!({"type": "strikethrough"}),
            Kind::Spoiler => json!({"type": "spoiler"}),
            Kind::Code(_) => json!({"type": "code"}),
            Kind::Pre(None) => json!({"type": "pre"}),
            Kind::Pre(Some(lang)) => json!({"type": "pre", "language": lang}),
            Kind::TextLink(url) => json!({"type": "text_link", "url": url}),
            Kind::TextMention(id) => {
                json!({"type": "text_mention", "user": {"id": id, "is_bot": false, "first_name": ""}})
            }
            Kind::CustomEmoji(id) => json!({"type": "custom_emoji", "custom_emoji_id": id}),
            Kind::Blockquote => json!({"type": "blockquote"}),
            Kind::ExpandableBlockquote => json!({"type": "expandable_blockquote"}),
            Kind::DateTime(unix, format) => {
                json!({"type": "date_time", "unix_time": unix, "date_time_format": format})
            }
        };
        v["offset"] = json!(self.offset);
        v["length"] = json!(self.length);
        v
    }
}

struct Open {
    tag: String,
    argument: String,
    date: i64,
    offset: usize,
    begin: usize,
}

/// tdlib's `is_space`: the terminating NUL counts as space.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0 | 0x0b)
}

const TAGS: &[&str] = &[
    "a",
    "b",
    "strong",
    "i",
    "em",
    "s",
    "strike",
    "del",
    "u",
    "ins",
    "tg-spoiler",
    "tg-emoji",
    "tg-time",
    "span",
    "pre",
    "code",
    "blockquote",
];

/// The byte at `i`, or 0 past the end (tdlib reads a NUL-terminated string).
fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// tdlib's `decode_html_entity`: the code point of the entity at `*pos` (which is `&`) and
/// advances `*pos` past it, or 0 (and `*pos` untouched) when it is not one.
fn decode_entity(b: &[u8], pos: &mut usize) -> u32 {
    let start = *pos;
    let mut end = start + 1;
    let mut res: u64 = 0;
    if at(b, start + 1) == b'#' {
        end += 1;
        if at(b, start + 2) == b'x' {
            end += 1;
            while at(b, end).is_ascii_hexdigit() {
                let d = (at(b, end) as char).to_digit(16).unwrap_or(0) as u64;
                res = (res * 16 + d) & 0xffff_ffff;
                end += 1;
            }
        } else {
            while at(b, end).is_ascii_digit() {
                res = (res * 10 + (at(b, end) - b'0') as u64) & 0xffff_ffff;
                end += 1;
            }
        }
        if res == 0 || res >= 0x10ffff || end - start >= 10 {
            return 0;
        }
    } else {
        while at(b, end).is_ascii_alphabetic() {
            end += 1;
        }
        res = match &b[start + 1..end] {
            b"lt" => '<' as u64,
            b"gt" => '>' as u64,
            b"amp" => '&' as u64,
            b"quot" => '"' as u64,
            _ => return 0,
        };
    }
    *pos = if at(b, end) == b';' { end + 1 } else { end };
    res as u32
}

fn push_code_point(out: &mut Vec<u8>, code: u32) -> Result<usize, String> {
    let c = char::from_u32(code).ok_or_else(|| {
        "Text contains invalid Unicode characters after decoding HTML entities, check for \
         unmatched surrogate code units"
            .to_string()
    })?;
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    Ok(c.len_utf16())
}

fn lower(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_lowercase()
}

/// Parse `html` as Telegram's HTML parse mode. `Err` is the reason Telegram gives after
/// "Bad Request: can't parse entities: ".
pub fn parse_html(html: &str, strict_ampersand: bool) -> Result<Formatted, String> {
    let b = html.as_bytes();
    let n = b.len();
    let mut out: Vec<u8> = Vec::with_capacity(n);
    let mut utf16 = 0usize;
    let mut stack: Vec<Open> = Vec::new();
    let mut entities: Vec<Entity> = Vec::new();
    let mut i = 0usize;
    while i < n {
        let c = b[i];
        if c == b'&' {
            let mut p = i;
            let code = decode_entity(b, &mut p);
            if code != 0 {
                utf16 += push_code_point(&mut out, code)?;
                i = p;
                continue;
            }
            if strict_ampersand {
                return Err(format!(
                    "Unescaped \"&\" at byte offset {i} (write &amp;; real Telegram shows it literally, \
                     this fake is stricter)"
                ));
            }
        }
        if c != b'<' {
            // Count UTF-16 units on the first byte of each UTF-8 sequence.
            if c & 0xc0 != 0x80 {
                utf16 += 1 + usize::from(c >= 0xf0);
            }
            out.push(c);
            i += 1;
            continue;
        }

        let begin = i;
        i += 1;
        if at(b, i) != b'/' {
            let StartTag {
                tag,
                argument,
                date,
            } = start_tag(b, &mut i, begin, strict_ampersand)?;
            stack.push(Open {
                tag,
                argument,
                date,
                offset: utf16,
                begin: out.len(),
            });
        } else {
            let Some(open) = stack.pop() else {
                return Err(format!("Unexpected end tag at byte offset {begin}"));
            };
            end_tag(b, &mut i, begin, &open.tag)?;
            if utf16 > open.offset {
                close_entity(&mut entities, open, utf16, &out)?;
            }
        }
        i += 1;
    }
    if let Some(open) = stack.last() {
        return Err(format!(
            "Can't find end tag corresponding to start tag \"{}\"",
            open.tag
        ));
    }
    for e in &mut entities {
        if let Kind::Code(arg) = &mut e.kind {
            arg.clear();
        }
    }
    entities.sort_by(|a, b| a.offset.cmp(&b.offset).then(b.length.cmp(&a.length)));
    let text =
        String::from_utf8(out).map_err(|_| "Strings must be encoded in UTF-8".to_string())?;
    Ok(Formatted {
        text,
        entities: entities.iter().map(Entity::to_json).collect(),
    })
}

/// What a start tag opens: its name and what its attributes set.
struct StartTag {
    tag: String,
    argument: String,
    date: i64,
}

/// The start tag that begins at byte `begin` (its `<`), `*pos` just past the `<`: its name
/// checked against [`TAGS`], its attributes read. Leaves `*pos` on its `>`.
fn start_tag(
    b: &[u8],
    pos: &mut usize,
    begin: usize,
    strict_ampersand: bool,
) -> Result<StartTag, String> {
    let mut i = *pos;
    while !is_space(at(b, i)) && at(b, i) != b'>' {
        i += 1;
    }
    if at(b, i) == 0 {
        return Err(format!("Unclosed start tag at byte offset {begin}"));
    }
    let tag = lower(&b[begin + 1..i]);
    if !TAGS.contains(&tag.as_str()) {
        return Err(format!(
            "Unsupported start tag \"{tag}\" at byte offset {begin}"
        ));
    }
    let mut argument = String::new();
    let mut date = 0i64;
    while at(b, i) != b'>' {
        while at(b, i) != 0 && is_space(at(b, i)) {
            i += 1;
        }
        if at(b, i) == b'>' {
            break;
        }
        let name_begin = i;
        while !is_space(at(b, i)) && !matches!(at(b, i), b'=' | b'>' | b'/' | b'"' | b'\'') {
            i += 1;
        }
        let name = &b[name_begin..i];
        if name.is_empty() {
            return Err(format!(
                "Empty attribute name in the tag \"{tag}\" at byte offset {begin}"
            ));
        }
        while at(b, i) != 0 && is_space(at(b, i)) {
            i += 1;
        }
        if at(b, i) != b'=' {
            if at(b, i) == 0 {
                return Err(format!(
                    "Unclosed start tag \"{tag}\" at byte offset {begin}"
                ));
            }
            if tag == "blockquote" && name == b"expandable" {
                argument = "1".into();
            }
            continue;
        }
        i += 1;
        while at(b, i) != 0 && is_space(at(b, i)) {
            i += 1;
        }
        if at(b, i) == 0 {
            return Err(format!(
                "Unclosed start tag \"{tag}\" at byte offset {begin}"
            ));
        }
        let value = attribute_value(b, &mut i, strict_ampersand)?;
        if at(b, i) == 0 {
            return Err(format!("Unclosed start tag at byte offset {begin}"));
        }
        match (tag.as_str(), name) {
            ("a", b"href") => argument = value,
            ("code", b"class") if value.starts_with("language-") => {
                argument = value["language-".len()..].to_string()
            }
            ("span", b"class") if value.starts_with("tg-") => {
                argument = value["tg-".len()..].to_string()
            }
            ("tg-emoji", b"emoji-id") => argument = value,
            ("blockquote", b"expandable") => argument = "1".into(),
            ("tg-time", b"unix") => date = value.parse().unwrap_or(0),
            ("tg-time", b"format") => argument = value,
            _ => {}
        }
    }
    if tag == "span" && argument != "spoiler" {
        return Err(format!(
            "Tag \"span\" must have class \"tg-spoiler\" at byte offset {begin}"
        ));
    }
    *pos = i;
    Ok(StartTag {
        tag,
        argument,
        date,
    })
}

/// An attribute's value at `*pos` (just past the `=` and any space): a name token
/// (letters, digits, periods, hyphens; lowercased) or a quoted string with its entities
/// decoded. Leaves `*pos` just past it.
fn attribute_value(b: &[u8], pos: &mut usize, strict_ampersand: bool) -> Result<String, String> {
    let mut i = *pos;
    let value = if at(b, i) != b'\'' && at(b, i) != b'"' {
        // A name token: letters, digits, periods, hyphens; case-insensitive.
        let token_begin = i;
        while at(b, i).is_ascii_alphanumeric() || matches!(at(b, i), b'.' | b'-') {
            i += 1;
        }
        if !is_space(at(b, i)) && at(b, i) != b'>' {
            return Err(format!(
                "Unexpected end of name token at byte offset {token_begin}"
            ));
        }
        lower(&b[token_begin..i])
    } else {
        let quote = at(b, i);
        i += 1;
        let mut value = Vec::new();
        while at(b, i) != quote && at(b, i) != 0 {
            if at(b, i) == b'&' {
                let code = decode_entity(b, &mut i);
                if code != 0 {
                    push_code_point(&mut value, code)?;
                    continue;
                }
                if strict_ampersand {
                    return Err(format!(
                        "Unescaped \"&\" at byte offset {i} (write &amp;; real Telegram \
                         keeps it, this fake is stricter)"
                    ));
                }
            }
            value.push(at(b, i));
            i += 1;
        }
        if at(b, i) == quote {
            i += 1;
        }
        String::from_utf8_lossy(&value).into_owned()
    };
    *pos = i;
    Ok(value)
}

/// The end tag that begins at byte `begin` (its `<`), `*pos` on its `/`: it must close
/// `open` (or be `</>`). Leaves `*pos` on its `>`.
fn end_tag(b: &[u8], pos: &mut usize, begin: usize, open: &str) -> Result<(), String> {
    let mut i = *pos;
    while !is_space(at(b, i)) && at(b, i) != b'>' {
        i += 1;
    }
    let name = lower(&b[begin + 2..i]);
    while is_space(at(b, i)) && at(b, i) != 0 {
        i += 1;
    }
    if at(b, i) != b'>' {
        return Err(format!("Unclosed end tag at byte offset {begin}"));
    }
    if !name.is_empty() && name != open {
        return Err(format!(
            "Unmatched end tag at byte offset {begin}, expected \"</{open}>\", found \"</{name}>\""
        ));
    }
    *pos = i;
    Ok(())
}

fn close_entity(
    entities: &mut Vec<Entity>,
    open: Open,
    utf16: usize,
    out: &[u8],
) -> Result<(), String> {
    let offset = open.offset;
    let length = utf16 - offset;
    let same_span = |e: &Entity| e.offset == offset && e.length == length;
    let kind = match open.tag.as_str() {
        "i" | "em" => Kind::Italic,
        "b" | "strong" => Kind::Bold,
        "s" | "strike" | "del" => Kind::Strikethrough,
        "u" | "ins" => Kind::Underline,
        "tg-spoiler" | "span" => Kind::Spoiler,
        "tg-emoji" => match open.argument.parse::<i64>() {
            Ok(id) if id != 0 => Kind::CustomEmoji(open.argument),
            _ => return Err("Invalid custom emoji identifier specified".into()),
        },
        "tg-time" => {
            if open.date <= 0 {
                return Ok(());
            }
            Kind::DateTime(open.date, open.argument)
        }
        "a" => {
            let url = if open.argument.is_empty() {
                String::from_utf8_lossy(&out[open.begin..]).into_owned()
            } else {
                open.argument
            };
            if let Some(id) = url
                .strip_prefix("tg://user?id=")
                .and_then(|id| id.parse::<i64>().ok())
            {
                Kind::TextMention(id)
            } else {
                match checked_link(&url) {
                    Some(url) => Kind::TextLink(url),
                    None => return Ok(()),
                }
            }
        }
        "pre" => {
            if let Some(last) = entities.last_mut()
                && same_span(last)
                && let Kind::Code(lang) = &last.kind
                && !lang.is_empty()
            {
                last.kind = Kind::Pre(Some(lang.clone()));
                return Ok(());
            }
            Kind::Pre(None)
        }
        "code" => {
            if let Some(last) = entities.last_mut()
                && same_span(last)
                && last.kind == Kind::Pre(None)
                && !open.argument.is_empty()
            {
                last.kind = Kind::Pre(Some(open.argument));
                return Ok(());
            }
            Kind::Code(open.argument)
        }
        "blockquote" if !open.argument.is_empty() => Kind::ExpandableBlockquote,
        "blockquote" => Kind::Blockquote,
        other => unreachable!("tag {other} was accepted"),
    };
    entities.push(Entity {
        kind,
        offset,
        length,
    });
    Ok(())
}

/// A link Telegram keeps as a `text_link` (it drops the entity otherwise), in a form
/// teloxide can parse as a URL.
fn checked_link(url: &str) -> Option<String> {
    let url = url.trim();
    if url.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
        None => ("http".to_string(), url),
    };
    if !matches!(scheme.as_str(), "http" | "https" | "tg" | "ton" | "tonsite") {
        return None;
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or("");
    let host = host.split(':').next().unwrap_or("");
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'-' || c == b'_');
    if !host_ok || (scheme.starts_with("http") && !host.contains('.') && host != "localhost") {
        return None;
    }
    Some(format!("{scheme}://{rest}"))
}

/// What the user sees of an HTML message (tags removed, entities decoded, trimmed), or
/// Telegram's reason for refusing it. Its `utf16_len` is what the 4096 limit applies to.
pub fn visible_text(html: &str) -> Result<String, String> {
    let formatted = parse_html(html, true)?;
    Ok(trim(formatted).map(|f| f.text).unwrap_or_default())
}

/// Telegram's trimming after parsing: trailing whitespace goes (entities clipped), leading
/// spaces and newlines go up to the first entity. `None` when nothing is left, which
/// Telegram answers with "text must be non-empty".
pub fn trim(formatted: Formatted) -> Option<Formatted> {
    let Formatted { text, mut entities } = formatted;
    let kept = text.trim_end();
    if kept.is_empty() {
        return None;
    }
    let end16 = utf16_len(kept);
    entities.retain_mut(|e| {
        let offset = e["offset"].as_u64().unwrap_or(0) as usize;
        let length = e["length"].as_u64().unwrap_or(0) as usize;
        if offset >= end16 {
            return false;
        }
        if offset + length > end16 {
            e["length"] = json!(end16 - offset);
        }
        true
    });
    let first_entity = entities
        .iter()
        .filter_map(|e| e["offset"].as_u64())
        .min()
        .map_or(usize::MAX, |o| o as usize);
    let lead = kept
        .bytes()
        .take(first_entity)
        .take_while(|c| matches!(c, b' ' | b'\n'))
        .count();
    for e in &mut entities {
        let offset = e["offset"].as_u64().unwrap_or(0) as usize;
        e["offset"] = json!(offset - lead);
    }
    Some(Formatted {
        text: kept[lead..].to_string(),
        entities,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(html: &str) -> Formatted {
        parse_html(html, true).unwrap_or_else(|e| panic!("{html:?} refused: {e}"))
    }

    fn err(html: &str) -> String {
        match parse_html(html, true) {
            Ok(f) => panic!("{html:?} accepted as {f:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn utf16_counts_like_telegram() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("😀"), 2);
        assert_eq!(utf16_len("👍🏽"), 4);
        assert_eq!(utf16_len("日本"), 2);
    }

    #[test]
    fn allowed_tags_give_entities() {
        let f = ok("<b>bold</b> <i>it</i> <u>u</u> <s>s</s> <tg-spoiler>x</tg-spoiler>");
        assert_eq!(f.text, "bold it u s x");
        let types: Vec<_> = f.entities.iter().map(|e| e["type"].clone()).collect();
        assert_eq!(
            types,
            vec!["bold", "italic", "underline", "strikethrough", "spoiler"]
        );
        assert_eq!(f.entities[1]["offset"], 5);
        assert_eq!(f.entities[1]["length"], 2);
        for html in [
            "<strong>a</strong><em>b</em><ins>c</ins><strike>d</strike><del>e</del>",
            "<span class=\"tg-spoiler\">a</span>",
            "<a href=\"https://example.com/x?a=1&amp;b=2\">link</a>",
            "<code>x</code>",
            "<pre>x</pre>",
            "<pre><code class=\"language-rust\">fn x() {}</code></pre>",
            "<blockquote>q</blockquote>",
            "<blockquote expandable>q</blockquote>",
            "<tg-emoji emoji-id=\"5368324170671202286\">👍</tg-emoji>",
            "<B>upper case tags</B>",
        ] {
            ok(html);
        }
    }

    #[test]
    fn pre_with_language_and_links() {
        let f = ok("<pre><code class=\"language-rust\">let x;</code></pre>");
        assert_eq!(
            f.entities,
            vec![json!({"type": "pre", "language": "rust", "offset": 0, "length": 6})]
        );
        let f = ok("<a href=\"https://example.com\">here</a>");
        assert_eq!(f.entities[0]["url"], "https://example.com");
        // Telegram drops links it cannot use instead of refusing the message.
        assert!(
            ok("<a href=\"javascript:alert(1)\">x</a>")
                .entities
                .is_empty()
        );
        let f = ok("<blockquote expandable>q</blockquote>");
        assert_eq!(f.entities[0]["type"], "expandable_blockquote");
    }

    #[test]
    fn entities_are_decoded() {
        let f = ok("a &lt; b &gt; c &amp; d &quot;e&quot; &#65;&#x42; &#128512;");
        assert_eq!(f.text, "a < b > c & d \"e\" AB 😀");
        // tdlib accepts a missing semicolon.
        assert_eq!(ok("&lt").text, "<");
    }

    #[test]
    fn refuses_what_telegram_refuses() {
        assert_eq!(
            err("<b>x"),
            "Can't find end tag corresponding to start tag \"b\""
        );
        assert_eq!(
            err("<b><i>x</b></i>"),
            "Unmatched end tag at byte offset 7, expected \"</i>\", found \"</b>\""
        );
        assert_eq!(err("x</b>"), "Unexpected end tag at byte offset 1");
        assert_eq!(
            err("<div>x</div>"),
            "Unsupported start tag \"div\" at byte offset 0"
        );
        assert_eq!(err("a < b"), "Unsupported start tag \"\" at byte offset 2");
        assert_eq!(
            err("1 <2 and 3"),
            "Unsupported start tag \"2\" at byte offset 2"
        );
        assert_eq!(err("1 <2"), "Unclosed start tag at byte offset 2");
        assert_eq!(err("<b"), "Unclosed start tag at byte offset 0");
        assert_eq!(
            err("<span>x</span>"),
            "Tag \"span\" must have class \"tg-spoiler\" at byte offset 0"
        );
        assert_eq!(
            err("<br/>"),
            "Unsupported start tag \"br/\" at byte offset 0"
        );
        assert_eq!(
            err("<p>x</p>"),
            "Unsupported start tag \"p\" at byte offset 0"
        );
        assert_eq!(
            err("<tg-emoji emoji-id=\"x\">a</tg-emoji>"),
            "Invalid custom emoji identifier specified"
        );
        assert!(err("AT&T").starts_with("Unescaped \"&\" at byte offset 2"));
        assert!(err("&nbsp;").starts_with("Unescaped \"&\""));
        assert!(err("<a href=\"https://x.com/?a=1&b=2\">x</a>").starts_with("Unescaped"));
        // Not strict: exactly tdlib.
        assert_eq!(
            parse_html("AT&T &nbsp;", false).unwrap().text,
            "AT&T &nbsp;"
        );
    }

    #[test]
    fn nesting_is_a_stack() {
        let f = ok("<b>bold <i>both</i></b>");
        assert_eq!(f.text, "bold both");
        assert_eq!(f.entities.len(), 2);
        assert_eq!(f.entities[0]["type"], "bold");
        assert_eq!(f.entities[0]["length"], 9);
        assert_eq!(f.entities[1]["offset"], 5);
        // `</>` closes whatever is open, as in tdlib.
        assert_eq!(ok("<b>x</>").entities[0]["type"], "bold");
    }

    #[test]
    fn offsets_are_utf16_after_parsing() {
        let f = ok("😀 &lt;<b>é😀</b>");
        assert_eq!(f.text, "😀 <é😀");
        assert_eq!(f.entities[0]["offset"], 4);
        assert_eq!(f.entities[0]["length"], 3);
        assert_eq!(utf16_len(&f.text), 7);
    }

    #[test]
    fn tags_do_not_count_toward_length() {
        let body = "x".repeat(4096);
        let f = ok(&format!("<b>{body}</b>"));
        assert_eq!(utf16_len(&f.text), 4096);
        let f = ok(&"&lt;".repeat(4096));
        assert_eq!(utf16_len(&f.text), 4096);
        let f = ok(&"😀".repeat(2049));
        assert_eq!(utf16_len(&f.text), 4098);
    }

    #[test]
    fn visible_text_is_what_counts() {
        assert_eq!(visible_text("<b>a</b> &amp; b \n").unwrap(), "a & b");
        assert!(visible_text("<b>a").is_err());
        assert_eq!(visible_text("<i> </i>").unwrap(), "");
    }

    #[test]
    fn trimming() {
        let f = trim(ok("  \n<b>x</b>  \n ")).unwrap();
        assert_eq!(f.text, "x");
        assert_eq!(f.entities[0]["offset"], 0);
        assert!(trim(ok("<b> </b>\n")).is_none());
        assert!(trim(ok("")).is_none());
        let f = trim(ok("<b>x  </b>")).unwrap();
        assert_eq!(f.entities[0]["length"], 1);
    }
}
