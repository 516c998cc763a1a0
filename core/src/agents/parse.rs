//! # Reading one definition file
//!
//! A definition is Markdown that opens with YAML frontmatter between two `---` lines; the
//! text after the closing line is the prompt appended to the worker's system prompt.
//! The frontmatter is strict: an unknown field, a value of the wrong type, a missing
//! `name` or `description`, a name outside `^[a-z][a-z0-9_-]{0,31}$` or a reserved name is
//! an error that names the field and its line in the file (the caller prefixes the file):
//! `frontmatter: thinking: unknown variant `huge`, expected one of … at line 4 column 11`. `tools`,
//! `excludeTools` and `agents` take a YAML list or a comma-separated string
//! (`tools: read, grep`), as Pi's own agent files write them.
//!
//! A definition may come from someone else's repository: the frontmatter is refused before
//! the YAML parser sees it when it is larger than [`MAX_FRONTMATTER_BYTES`] or nests deeper
//! than [`MAX_DEPTH`] ([`nesting`], a cheap scan that over-counts rather than under), and
//! it is parsed once.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use crate::protocol::Thinking;

/// Names that are roles, not definitions: a file may not take them.
pub const RESERVED: [&str; 3] = ["manager", "chief", "managed-lead"];

/// Largest definition file read (the prompt goes into every worker's system prompt).
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Largest frontmatter parsed (its fields are a few short lines).
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// Deepest frontmatter parsed: its fields nest two levels (a list of names); a value nested
/// thousands deep made the YAML parser take seconds, quadratically.
pub const MAX_DEPTH: usize = 32;

/// The frontmatter's fields, exactly; anything else is an error.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Frontmatter {
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub thinking: Option<Thinking>,
    #[serde(default, deserialize_with = "optional_names")]
    pub tools: Option<Vec<String>>,
    #[serde(default, deserialize_with = "names")]
    pub exclude_tools: Vec<String>,
    #[serde(default, deserialize_with = "names")]
    pub agents: Vec<String>,
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn yes() -> bool {
    true
}

/// A file that could not be used: the name it claims (its `name` field when that much
/// could be read) and what is wrong, without the file's path.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    pub name: Option<String>,
    pub error: String,
}

impl Broken {
    fn new(name: Option<String>, error: impl Into<String>) -> Broken {
        Broken {
            name,
            error: error.into(),
        }
    }
}

/// Whether `name` is a valid definition (and worker label) name: `^[a-z][a-z0-9_-]{0,31}$`.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 32
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// Split a definition into its frontmatter and its body (the prompt), checking every field.
pub fn parse(text: &str) -> Result<(Frontmatter, String), Broken> {
    let (yaml, body) = split(text).map_err(|e| Broken::new(None, e))?;
    // The name first, so that a file with a bad field is still listed under its name.
    let name = name_line(yaml);
    if yaml.trim().is_empty() {
        return Err(Broken::new(
            None,
            "the frontmatter is empty: `name` and `description` are required",
        ));
    }
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(Broken::new(
            name,
            format!(
                "frontmatter: {} bytes is too large (at most {} KiB; the prompt goes after \
                 the closing `---`)",
                yaml.len(),
                MAX_FRONTMATTER_BYTES / 1024
            ),
        ));
    }
    let depth = nesting(yaml);
    if depth > MAX_DEPTH {
        return Err(Broken::new(
            name,
            format!(
                "frontmatter: nested {depth} levels deep, too deep (at most {MAX_DEPTH}); the \
                 fields are flat (`tools` is a list of names)"
            ),
        ));
    }
    // A blank line in place of the opening `---`, so that the error's line is the file's.
    let fm: Frontmatter = serde_norway::from_str(&format!("\n{yaml}"))
        .map_err(|e| Broken::new(name.clone(), format!("frontmatter: {e}")))?;
    check(&fm).map_err(|e| Broken::new(name.clone(), format!("frontmatter: {e}")))?;
    Ok((fm, body.trim().to_string()))
}

/// The name a top-level `name:` line gives, when it is a valid one (plain or quoted):
/// read without parsing the YAML, so that a file the parser refuses keeps its name.
fn name_line(yaml: &str) -> Option<String> {
    yaml.lines().find_map(|line| {
        let value = line.strip_prefix("name:")?;
        let value = value.split(" #").next().unwrap_or_default().trim();
        let value = ["\"", "'"]
            .iter()
            .find_map(|q| value.strip_prefix(q).and_then(|v| v.strip_suffix(q)))
            .unwrap_or(value);
        valid_name(value).then(|| value.to_string())
    })
}

/// How deeply `yaml` nests, counted without parsing it and never less than the parser
/// would find: every `[` and `{` opens a level, and one in a quoted string is never closed
/// (should the scan take for a string what is not one); a `]` or `}` closes one only
/// outside quotes. Each indentation deeper than its parent's, and each `- ` or `? ` opening
/// a line's content, is a level too, on every line. A block scalar's text (`|`, `>`) is not
/// YAML and is skipped.
pub fn nesting(yaml: &str) -> usize {
    let mut max = 0;
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    let mut quoted = 0usize;
    let mut quote: Option<char> = None;
    // The indentation of the line that opened a block scalar, while in its text.
    let mut scalar_of: Option<usize> = None;
    for line in yaml.lines() {
        let trimmed = line.trim_start_matches([' ', '\t']);
        let indent = line.len() - trimmed.len();
        if let Some(parent) = scalar_of {
            if trimmed.is_empty() || indent > parent {
                continue;
            }
            scalar_of = None;
        }
        if trimmed.is_empty() {
            continue;
        }
        while indents.last().is_some_and(|&i| i >= indent) {
            indents.pop();
        }
        indents.push(indent);
        let levels = |flow: usize, quoted: usize| indents.len() + flow + quoted;
        max = max.max(levels(flow, quoted) + markers(trimmed));
        let mut prev: Option<char> = None;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match quote {
                Some('"') => match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => quote = None,
                    '[' | '{' => {
                        quoted += 1;
                        max = max.max(levels(flow, quoted));
                    }
                    _ => {}
                },
                Some(_) => match c {
                    '\'' if chars.peek() == Some(&'\'') => {
                        chars.next();
                    }
                    '\'' => quote = None,
                    '[' | '{' => {
                        quoted += 1;
                        max = max.max(levels(flow, quoted));
                    }
                    _ => {}
                },
                None => match c {
                    '#' if prev.is_none_or(char::is_whitespace) => break,
                    '"' | '\'' if prev.is_none_or(|p| p.is_whitespace() || "[{,:".contains(p)) => {
                        quote = Some(c)
                    }
                    '[' | '{' => {
                        flow += 1;
                        max = max.max(levels(flow, quoted));
                    }
                    ']' | '}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            prev = Some(c);
        }
        if flow == 0 && quote.is_none() && opens_block_scalar(trimmed) {
            scalar_of = Some(indent);
        }
    }
    max
}

/// How many nodes a line's content opens before its value: `- - a: b` opens three.
fn markers(mut content: &str) -> usize {
    let mut n = 0;
    loop {
        let rest = content
            .strip_prefix("- ")
            .or_else(|| content.strip_prefix("? "))
            .or_else(|| (content == "-" || content == "?").then_some(""));
        match rest {
            Some(rest) => {
                n += 1;
                content = rest.trim_start_matches([' ', '\t']);
            }
            None => break,
        }
    }
    // `key: value` inside the markers is a mapping: one more level.
    if n > 0 && (content.contains(": ") || content.ends_with(':')) {
        n += 1;
    }
    n
}

/// Whether a line ends with a block scalar's indicator (`key: |`, `- >-`, `|2`).
fn opens_block_scalar(content: &str) -> bool {
    let content = content.split(" #").next().unwrap_or_default().trim_end();
    let last = content.rsplit([' ', '\t']).next().unwrap_or(content);
    let mut chars = last.chars();
    matches!(chars.next(), Some('|' | '>'))
        && chars.all(|c| c == '-' || c == '+' || c.is_ascii_digit())
}

/// The rules serde cannot say.
fn check(fm: &Frontmatter) -> Result<(), String> {
    if RESERVED.contains(&fm.name.as_str()) {
        return Err(format!(
            "name: `{}` is reserved (manager, chief and managed-lead are roles, not \
             definitions); rename the definition",
            fm.name
        ));
    }
    if !valid_name(&fm.name) {
        return Err(format!(
            "name: {:?} must match ^[a-z][a-z0-9_-]{{0,31}}$ (a lower-case letter, then \
             up to 31 lower-case letters, digits, `_` or `-`)",
            fm.name
        ));
    }
    if fm.description.trim().is_empty() {
        return Err("description: must not be empty (say what the agent is for)".into());
    }
    if fm.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
        return Err("model: must not be empty (leave it out for Pi's default)".into());
    }
    for (field, list) in [
        ("tools", fm.tools.as_deref().unwrap_or_default()),
        ("excludeTools", &fm.exclude_tools),
    ] {
        if let Some(bad) = list
            .iter()
            .find(|t| t.is_empty() || t.chars().any(|c| c.is_whitespace() || c == ','))
        {
            return Err(format!("{field}: {bad:?} is not a tool name"));
        }
    }
    if let Some(bad) = fm.agents.iter().find(|a| !valid_name(a)) {
        return Err(format!(
            "agents: {bad:?} is not a definition name (^[a-z][a-z0-9_-]{{0,31}}$)"
        ));
    }
    Ok(())
}

/// The frontmatter's YAML and the body after it.
fn split(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_end = text.find('\n').unwrap_or(text.len());
    if text[..first_end].trim_end() != "---" {
        return Err(
            "no YAML frontmatter: the file must start with a line `---`, then the \
                    fields (`name`, `description`, …), then a line `---`, then the prompt"
                .into(),
        );
    }
    let rest = &text[(first_end + 1).min(text.len())..];
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if matches!(line.trim_end(), "---" | "...") {
            return Ok((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    Err("the frontmatter is not closed: no line `---` after its fields".into())
}

/// `tools`, absent or null: Pi's default set; a list or a comma-separated string.
fn optional_names<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    d.deserialize_any(NamesVisitor)
}

/// A list that may be absent, null, a YAML list or a comma-separated string.
fn names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(d.deserialize_any(NamesVisitor)?.unwrap_or_default())
}

struct NamesVisitor;

impl<'de> Visitor<'de> for NamesVisitor {
    type Value = Option<Vec<String>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of names, or names separated by commas")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        ))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element::<String>()? {
            out.push(item.trim().to_string());
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_label_rule() {
        for ok in ["a", "scout", "x1", "a_b-c", &"a".repeat(32)] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in [
            "",
            "1a",
            "A",
            "Scout",
            "a b",
            "a.b",
            "é",
            &"a".repeat(33),
            "-a",
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_full_file_parses_with_its_body() {
        let (fm, body) = parse(
            "---\nname: docs\ndescription: Writes docs.\nmodel: anthropic/claude-sonnet-4\n\
             thinking: high\ntools: read, grep\nexcludeTools: [bash]\nagents: [scout]\n\
             enabled: false\n---\n\nYou write docs.\n",
        )
        .unwrap();
        assert_eq!(fm.name, "docs");
        assert_eq!(fm.model.as_deref(), Some("anthropic/claude-sonnet-4"));
        assert_eq!(fm.thinking, Some(Thinking::High));
        assert_eq!(fm.tools, Some(vec!["read".to_string(), "grep".to_string()]));
        assert_eq!(fm.exclude_tools, vec!["bash".to_string()]);
        assert_eq!(fm.agents, vec!["scout".to_string()]);
        assert!(!fm.enabled);
        assert_eq!(body, "You write docs.");
    }

    #[test]
    fn absent_tools_differ_from_no_tools() {
        let (fm, _) = parse("---\nname: a\ndescription: d\n---\n").unwrap();
        assert_eq!(fm.tools, None);
        assert!(fm.enabled);
        let (fm, _) = parse("---\nname: a\ndescription: d\ntools: []\n---\n").unwrap();
        assert_eq!(fm.tools, Some(vec![]));
    }

    #[test]
    fn every_mistake_names_its_field() {
        let cases = [
            (
                "name: a\ndescription: d\ncolour: red",
                "unknown field `colour`",
            ),
            ("description: d", "missing field `name`"),
            ("name: a", "missing field `description`"),
            (
                "name: a\ndescription: d\nthinking: huge",
                "thinking: unknown variant `huge`",
            ),
            (
                "name: a\ndescription: d\nenabled: maybe",
                "enabled: invalid type",
            ),
            ("name: a\ndescription: d\ntools: 3", "tools: invalid type"),
            (
                "name: a\ndescription: d\ntools: [read, 'a b']",
                "tools: \"a b\" is not a tool",
            ),
            (
                "name: a\ndescription: d\nagents: [Bad]",
                "agents: \"Bad\" is not a definition",
            ),
            ("name: Bad\ndescription: d", "name: \"Bad\" must match"),
            (
                "name: a\ndescription: d\nmodel: ''",
                "model: must not be empty",
            ),
            (
                "name: a\ndescription: ' '",
                "description: must not be empty",
            ),
            ("name: chief\ndescription: d", "`chief` is reserved"),
            ("name: a\ndescription: [d", "frontmatter"),
        ];
        for (yaml, expected) in cases {
            let err = parse(&format!("---\n{yaml}\n---\nbody\n")).unwrap_err();
            assert!(err.error.starts_with("frontmatter: "), "{}", err.error);
            assert!(err.error.contains(expected), "{yaml:?}: {}", err.error);
        }
    }

    #[test]
    fn a_broken_file_keeps_its_name_when_readable() {
        let err = parse("---\nname: docs\ndescription: d\ncolour: red\n---\n").unwrap_err();
        assert_eq!(err.name.as_deref(), Some("docs"));
        // The line is the file's (the opening `---` is line 1).
        assert!(err.error.ends_with("at line 4 column 1"), "{}", err.error);
        let err = parse("---\nname: Docs\ndescription: d\n---\n").unwrap_err();
        assert_eq!(err.name, None);
    }

    #[test]
    fn nesting_counts_flow_and_block_levels_and_never_fewer_than_yaml() {
        let cases = [
            ("name: a\ndescription: d", 1),
            ("tools: [read, grep]", 2),
            ("tools:\n  - read\n  - grep", 3),
            ("a: [[[x]]]", 4),
            ("a: {b: [c]}", 3),
            ("- - - x", 4),
            ("- a: b", 3),
            ("a:\n b:\n  c:\n   d: e", 4),
            // Quotes hide closing brackets, not opening ones; an apostrophe is no quote.
            ("a: \"]]]\"\nb: [[x]]", 3),
            ("a: \"[[[\"\nb: c", 4),
            ("description: it's [fine]", 2),
            ("a: 'it''s ]'\nb: [x]", 2),
            // A comment and a block scalar's text are not YAML.
            ("a: b # [[[[\nc: d", 1),
            ("description: |\n  [[[[[\n      deep text\nname: a", 1),
        ];
        for (yaml, depth) in cases {
            assert_eq!(nesting(yaml), depth, "{yaml:?}");
        }
        let deep = format!(
            "name: a\ndescription: {}x{}",
            "[".repeat(5000),
            "]".repeat(5000)
        );
        assert!(nesting(&deep) > 5000);
        let dashes = format!("name: a\ndescription: d\ntools:\n{}x", "- ".repeat(5000));
        assert!(nesting(&dashes) > 5000);
    }

    #[test]
    fn a_deep_or_large_frontmatter_is_refused_before_parsing_under_its_name() {
        let deep = format!(
            "---\nname: docs\ndescription: {}x{}\n---\nbody\n",
            "[".repeat(20_000),
            "]".repeat(20_000)
        );
        let err = parse(&deep).unwrap_err();
        assert_eq!(err.name.as_deref(), Some("docs"));
        assert!(err.error.contains("too deep"), "{}", err.error);
        let ok = format!(
            "---\nname: docs\ndescription: {}x{}\n---\n",
            "[".repeat(MAX_DEPTH - 2),
            "]".repeat(MAX_DEPTH - 2)
        );
        assert!(!parse(&ok).unwrap_err().error.contains("too deep"));
        let large = format!(
            "---\nname: 'docs'\ndescription: {}\n---\n",
            "x".repeat(MAX_FRONTMATTER_BYTES)
        );
        let err = parse(&large).unwrap_err();
        assert_eq!(err.name.as_deref(), Some("docs"));
        assert!(err.error.contains("too large"), "{}", err.error);
    }

    #[test]
    fn the_frontmatter_must_open_and_close() {
        assert!(
            parse("name: a\n")
                .unwrap_err()
                .error
                .contains("no YAML frontmatter")
        );
        assert!(
            parse("---\nname: a\ndescription: d\n")
                .unwrap_err()
                .error
                .contains("not closed")
        );
        assert!(parse("---\n---\nbody").unwrap_err().error.contains("empty"));
        let (fm, body) =
            parse("\u{feff}---\r\nname: a\r\ndescription: d\r\n---\r\nhi\r\n").unwrap();
        assert_eq!((fm.name.as_str(), body.as_str()), ("a", "hi"));
    }
}
