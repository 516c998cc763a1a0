//! Tests of [`super::markdown`]: each construct as Telegram gets it (the HTML) and as
//! Matrix gets it ([`for_matrix`] of it, the HTML's text as `body`), the plain twin,
//! escaping, the link filter and the spacing between blocks.

use super::*;
use crate::chat::html::for_matrix;
use crate::chat::split::text_of;

/// `(telegram html, matrix formatted_body, plain)` of `text`.
fn md(text: &str) -> (String, String, String) {
    let (html, plain) = markdown(text).finish();
    let matrix = for_matrix(&html);
    (html, matrix, plain)
}

/// Checks `text` on both phones: Telegram's HTML, Matrix's `formatted_body`, and the
/// plain twin; Matrix's `body` (the HTML's text) is the plain twin unless there are
/// links or quotes, whose plain form says more.
fn check(text: &str, telegram: &str, matrix: &str, plain: &str) {
    let (h, m, p) = md(text);
    assert_eq!(h, telegram, "telegram html of {text:?}");
    assert_eq!(m, matrix, "matrix html of {text:?}");
    assert_eq!(p, plain, "plain of {text:?}");
    if !telegram.contains("<a ") && !telegram.contains("<blockquote>") {
        assert_eq!(text_of(&h), p, "matrix body of {text:?}");
    }
}

#[test]
fn bold_italics_and_inline_code() {
    check(
        "**bold**, __bold__, *it*, _it_ and `a<b>`",
        "<b>bold</b>, <b>bold</b>, <i>it</i>, <i>it</i> and <code>a&lt;b&gt;</code>",
        "<b>bold</b>, <b>bold</b>, <i>it</i>, <i>it</i> and <code>a&lt;b&gt;</code>",
        "bold, bold, it, it and a<b>",
    );
    check(
        "***both*** and **bold with `code`**",
        "<i><b>both</b></i> and <b>bold with <code>code</code></b>",
        "<i><b>both</b></i> and <b>bold with <code>code</code></b>",
        "both and bold with code",
    );
    // Not emphasis: snake_case, a lone star, an unclosed marker.
    check(
        "snake_case_name, 2 * 3 * 4, **open",
        "snake_case_name, 2 * 3 * 4, **open",
        "snake_case_name, 2 * 3 * 4, **open",
        "snake_case_name, 2 * 3 * 4, **open",
    );
}

#[test]
fn code_blocks_as_before() {
    check(
        "Done:\n```rust\nlet x = a < b;\n\nfn f() {}\n```\nafter",
        "Done:\n<pre><code class=\"language-rust\">let x = a &lt; b;\n\nfn f() {}</code></pre>\nafter",
        "Done:<br><pre><code class=\"language-rust\">let x = a &lt; b;\n\nfn f() {}</code></pre>after",
        "Done:\nlet x = a < b;\n\nfn f() {}\nafter",
    );
    // No language, an implausible one, an indented block, an unclosed fence.
    check(
        "```\n**not bold**\n```\n\n```evil\" x\ny\n```\n\n    indented\n\n```sh\necho <1>",
        "<pre>**not bold**</pre>\n\n<pre>y</pre>\n\n<pre>indented</pre>\n\n\
         <pre><code class=\"language-sh\">echo &lt;1&gt;</code></pre>",
        "<pre>**not bold**</pre><br><pre>y</pre><br><pre>indented</pre><br>\
         <pre><code class=\"language-sh\">echo &lt;1&gt;</code></pre>",
        "**not bold**\n\ny\n\nindented\n\necho <1>",
    );
}

#[test]
fn bulleted_and_numbered_lists() {
    check(
        "Steps:\n1. build\n2. **test**\n\n- a\n- b\n  - nested\n    1. deep\n    2. deeper",
        "Steps:\n1. build\n2. <b>test</b>\n\n• a\n• b\n\u{a0}\u{a0}\u{a0}◦ nested\n\
         \u{a0}\u{a0}\u{a0}\u{a0}\u{a0}\u{a0}1. deep\n\u{a0}\u{a0}\u{a0}\u{a0}\u{a0}\u{a0}2. deeper",
        "Steps:<br>1. build<br>2. <b>test</b><br><br>• a<br>• b<br>\u{a0}\u{a0}\u{a0}◦ nested<br>\
         \u{a0}\u{a0}\u{a0}\u{a0}\u{a0}\u{a0}1. deep<br>\u{a0}\u{a0}\u{a0}\u{a0}\u{a0}\u{a0}2. deeper",
        "Steps:\n1. build\n2. test\n\n• a\n• b\n\u{a0}\u{a0}\u{a0}◦ nested\n\
         \u{a0}\u{a0}\u{a0}\u{a0}\u{a0}\u{a0}1. deep\n\u{a0}\u{a0}\u{a0}\u{a0}\u{a0}\u{a0}2. deeper",
    );
    // A list may start at any number; a paragraph's `3.` line is not a list (CommonMark).
    check(
        "3. three\n4. four\n\ntext\n3. not a list",
        "3. three\n4. four\n\ntext\n3. not a list",
        "3. three<br>4. four<br><br>text<br>3. not a list",
        "3. three\n4. four\n\ntext\n3. not a list",
    );
    // A loose list keeps its blank lines; an item's second paragraph is on its own line;
    // task lists show boxes.
    check(
        "* one\n\n* two\n\n  more\n\n- [ ] todo\n- [x] done",
        "• one\n\n• two\n\nmore\n\n• ☐ todo\n• ☑ done",
        "• one<br><br>• two<br><br>more<br><br>• ☐ todo<br>• ☑ done",
        "• one\n\n• two\n\nmore\n\n• ☐ todo\n• ☑ done",
    );
}

#[test]
fn headings_become_bold_lines() {
    check(
        "# Summary\nAll *green*.\n\n## Next `steps`\n\nSetext\n------\nend",
        "<b>Summary</b>\nAll <i>green</i>.\n\n<b>Next <code>steps</code></b>\n\n<b>Setext</b>\nend",
        "<b>Summary</b><br>All <i>green</i>.<br><br><b>Next <code>steps</code></b><br><br>\
         <b>Setext</b><br>end",
        "Summary\nAll green.\n\nNext steps\n\nSetext\nend",
    );
    check(
        "a\n\n---\n\nb",
        "a\n\n———\n\nb",
        "a<br><br>———<br><br>b",
        "a\n\n———\n\nb",
    );
}

#[test]
fn links_keep_safe_addresses_only() {
    check(
        "See [the docs](https://x.test/a?b=1&c=\"2\"), <https://y.test/> and <ada@x.test>.",
        "See <a href=\"https://x.test/a?b=1&amp;c=&quot;2&quot;\">the docs</a>, \
         <a href=\"https://y.test/\">https://y.test/</a> and \
         <a href=\"mailto:ada@x.test\">ada@x.test</a>.",
        "See <a href=\"https://x.test/a?b=1&amp;c=&quot;2&quot;\">the docs</a>, \
         <a href=\"https://y.test/\">https://y.test/</a> and \
         <a href=\"mailto:ada@x.test\">ada@x.test</a>.",
        "See the docs (https://x.test/a?b=1&c=\"2\"), https://y.test/ and ada@x.test.",
    );
    // Other schemes and relative links keep their text alone.
    check(
        "[a](javascript:alert(1)) [b](JavaScript:x) [c](data:text/html,x) [d](src/main.rs) \
         [e](//evil.test) [f](vbscript:x)",
        "a b c d e f",
        "a b c d e f",
        "a b c d e f",
    );
    // An empty text shows the address; an image is a link to it; a **bold** link.
    check(
        "[](http://x.test) ![logo](https://x.test/l.png) **[bold](mailto:a@x.test)**",
        "<a href=\"http://x.test\">http://x.test</a> <a href=\"https://x.test/l.png\">logo</a> \
         <b><a href=\"mailto:a@x.test\">bold</a></b>",
        "<a href=\"http://x.test\">http://x.test</a> <a href=\"https://x.test/l.png\">logo</a> \
         <b><a href=\"mailto:a@x.test\">bold</a></b>",
        "http://x.test logo (https://x.test/l.png) bold (a@x.test)",
    );
    // An image inside a link is its alt text (no link in a link).
    check(
        "[![alt](https://x.test/i.png)](https://x.test)",
        "<a href=\"https://x.test\">alt</a>",
        "<a href=\"https://x.test\">alt</a>",
        "alt (https://x.test)",
    );
}

#[test]
fn the_href_filter() {
    for ok in [
        "https://x.test",
        "HTTP://X.TEST/a",
        "mailto:a@x.test",
        " https://x.test ",
    ] {
        assert_eq!(safe_href(ok), Some(ok.trim()), "{ok}");
    }
    for bad in [
        "javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        "data:text/html,<script>",
        "vbscript:x",
        "file:///etc/passwd",
        "ftp://x.test",
        "tg://resolve?domain=x",
        "//x.test",
        "/relative",
        "src/main.rs",
        "https://",
        "mailto:",
        "https://x.test/a b",
        "https://x.test/\u{0}",
        "java\nscript:x",
        "",
    ] {
        assert_eq!(safe_href(bad), None, "{bad:?}");
    }
}

#[test]
fn quotes_are_blockquotes_nested_ones_flattened() {
    check(
        "Asked:\n> keep **it**\n> > nested\n>\n> more\n\nafter",
        "Asked:\n<blockquote>keep <b>it</b>\nnested\n\nmore</blockquote>\n\nafter",
        "Asked:<br><blockquote>keep <b>it</b><br>nested<br><br>more</blockquote><br>after",
        "Asked:\n> keep it\n> nested\n>\n> more\n\nafter",
    );
    check(
        "> ```\n> code\n> ```",
        "<blockquote><pre>code</pre></blockquote>",
        "<blockquote><pre>code</pre></blockquote>",
        "> code",
    );
}

#[test]
fn everything_from_the_model_is_escaped() {
    let (h, m, p) = md(
        "<script>alert(1)</script>\n\nHi <b onclick=\"x\">there</b> & <img src=x onerror=y> \
         &lt;kept&gt; `<i>`\n\n[x](https://x.test/\"><script>)",
    );
    for html in [&h, &m] {
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b onclick"), "{html}");
        assert!(!html.contains("<i>"), "{html}");
    }
    assert_eq!(
        h,
        "&lt;script&gt;alert(1)&lt;/script&gt;\n\nHi &lt;b onclick=&quot;x&quot;&gt;there&lt;/b&gt; \
         &amp; &lt;img src=x onerror=y&gt; &lt;kept&gt; <code>&lt;i&gt;</code>\n\n\
         <a href=\"https://x.test/&quot;&gt;&lt;script&gt;\">x</a>"
    );
    assert!(text_of(&h).starts_with("<script>alert(1)</script>\n\nHi <b onclick=\"x\">there</b>"));
    assert!(p.starts_with("<script>alert(1)</script>\n\nHi <b onclick=\"x\">there</b>"));
}

#[test]
fn blocks_keep_the_author_s_spacing() {
    check(
        "line one\nline two\n\nnext paragraph\n- item\n\n\n\nlast",
        "line one\nline two\n\nnext paragraph\n• item\n\nlast",
        "line one<br>line two<br><br>next paragraph<br>• item<br><br>last",
        "line one\nline two\n\nnext paragraph\n• item\n\nlast",
    );
    check("", "", "", "");
    check("  \n\n ", "", "", "");
}

#[test]
fn a_table_is_an_aligned_code_block() {
    let (html, plain) = markdown(
        "Results:\n\n| test | time |\n|---|---:|\n| `login` | 3 s |\n| *signup* flow | 12 s |\n\nDone.",
    )
    .finish();
    let table = "test         time\n-----------  ----\nlogin        3 s\nsignup flow  12 s";
    assert_eq!(plain, format!("Results:\n\n{table}\n\nDone."));
    assert_eq!(html, format!("Results:\n\n<pre>{table}</pre>\n\nDone."));
}
