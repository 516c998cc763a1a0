//! Arbitrary text rendered as a session's Markdown and split for the phones, and split as
//! raw HTML: never a panic, and what `chat::markdown` and `chat::split` promise holds. The
//! rendering is balanced, uses only the tags both phones accept and links only to safe
//! addresses; every chunk is within its limit (Telegram's, Matrix's, a caption's, and a
//! small one from the first byte), has text, and is balanced when its input was (for
//! Matrix too); the chunks' text, joined, is the input's text; input that fits comes back
//! unchanged; `as_document` says exactly whether the split needs more messages than
//! allowed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shepherd_bridges::chat::format::utf16_len;
use shepherd_bridges::chat::html::for_matrix;
use shepherd_bridges::chat::markdown::{markdown, safe_href};
use shepherd_bridges::chat::split::{
    MATRIX_LIMIT, TELEGRAM_LIMIT, as_document, balanced, plain_split, split_html, telegram_len,
    text_of,
};

/// The tags the Markdown rendering may write (see `chat::markdown`).
const RENDERED_TAGS: [&str; 6] = ["b", "i", "code", "pre", "a", "blockquote"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let small = 2 + usize::from(pick % 64);
    let limits = [TELEGRAM_LIMIT, MATRIX_LIMIT, 1000, small];

    let (html, plain) = markdown(&text).finish();
    assert!(
        balanced(&html),
        "unbalanced rendering of {text:?}: {html:?}"
    );
    for tag in html.split('<').skip(1) {
        let name = tag_name(tag);
        assert!(RENDERED_TAGS.contains(&name), "<{name}> from {text:?}");
        if let Some(href) = tag.strip_prefix("a href=\"") {
            let href = text_of(href.split('"').next().unwrap_or_default());
            assert!(
                safe_href(&href).is_some(),
                "a link to {href:?} from {text:?}"
            );
        }
    }
    // The large limits only where they cut (the small one checks what fits, too).
    let (html_len, plain_len) = (telegram_len(&html), utf16_len(&plain));
    for limit in limits {
        if limit == small || html_len > limit {
            check_html(&html, limit, true);
        }
        if limit == small || plain_len > limit {
            check_plain(&plain, limit);
        }
    }
    // Whatever HTML arrives (a bridge only splits what it rendered, but the promises
    // are for any input).
    check_html(&text, small, balanced(&text));
    check_plain(&text, small);
});

fn check_html(html: &str, limit: usize, balanced_input: bool) {
    let chunks = split_html(html, limit);
    if html.is_empty() {
        assert!(chunks.is_empty());
        return;
    }
    let max = 1 + limit % 4;
    if telegram_len(html) <= limit {
        assert_eq!(chunks, [html], "input that fits comes back unchanged");
        assert!(!as_document(html, limit, max));
        return;
    }
    let mut joined = String::new();
    for chunk in &chunks {
        let text = text_of(chunk);
        let len = utf16_len(&text);
        assert!(len <= limit, "over {limit}: {chunk:?} of {html:?}");
        assert!(len > 0, "a chunk without text: {chunk:?} of {html:?}");
        joined.push_str(&text);
        if balanced_input {
            assert!(balanced(chunk), "unbalanced chunk {chunk:?} of {html:?}");
            let matrix = for_matrix(chunk);
            assert!(
                balanced(&matrix),
                "unbalanced for Matrix: {matrix:?} of {html:?}"
            );
        }
    }
    assert_eq!(
        joined,
        text_of(html),
        "the text differs (limit {limit}): {chunks:?}"
    );
    assert_eq!(
        as_document(html, limit, max),
        chunks.len() > max,
        "as_document({limit}, {max}) of {html:?}"
    );
}

fn check_plain(text: &str, limit: usize) {
    let chunks = plain_split(text, limit);
    assert_eq!(chunks.concat(), text, "plain text differs (limit {limit})");
    for chunk in &chunks {
        let len = utf16_len(chunk);
        assert!(
            len <= limit && len > 0,
            "plain chunk of {len} (limit {limit}): {chunk:?}"
        );
    }
}

/// The element name of a tag in rendered HTML (`tag`: what follows its `<`; every `<`
/// there starts a tag, since text is escaped).
fn tag_name(tag: &str) -> &str {
    let tag = tag.strip_prefix('/').unwrap_or(tag);
    let end = tag
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(tag.len());
    &tag[..end]
}
