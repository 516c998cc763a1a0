//! `[approvals]`: which tool calls of the agents wait for the human's decision. Rules are
//! matched in order, each `{tool, match | regex, outside, decision}`; the first that
//! matches decides, then the preset's rules (`preset = "careful"`), then `default`
//! (`allow` out of the box, so nothing changes for a user who sets nothing). A rule is
//! checked when the config is read: a bad glob or regex, `match` with `regex`, `outside`
//! on a tool without a path, or an unknown key is a config error naming the rule.
//!
//! What a rule's `match` (a glob) or `regex` is tried on, the call's *subject*: a `bash`
//! call's command; a `write`, `edit` or `read` call's path, made absolute against the
//! session's directory; any other tool's arguments as compact JSON. A glob matches the
//! whole subject and `*` crosses `/` (`git push*`, `/etc/**`); a regex matches anywhere in
//! it unless anchored (`\bgit\s+push\b`). `outside = "cwd"` matches a `write` or `edit`
//! whose path lies outside the session's directory and outside its git worktree.

use serde::{Deserialize, Serialize};

/// The origin of a policy no config file wrote.
pub const BUILT_IN: &str = "the built-in defaults";

/// The `[approvals]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// A ready set of rules tried after `rules`: `careful`.
    pub preset: Option<Preset>,
    /// What a call no rule matches gets.
    pub default: Decision,
    /// The rules, tried in order; the first that matches decides.
    pub rules: Vec<Rule>,
    /// Seconds an approval waits before `on_timeout` decides it; 0: it waits until
    /// someone decides (like a question to the human).
    pub timeout_secs: u64,
    /// What a timed-out approval becomes.
    pub on_timeout: Fallback,
    /// What a call that needs a decision gets when the core cannot be reached: `deny`
    /// (fail closed: the call is blocked, saying why) or `allow`.
    pub when_unreachable: Fallback,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            preset: None,
            default: Decision::Allow,
            rules: Vec::new(),
            timeout_secs: 0,
            on_timeout: Fallback::Deny,
            when_unreachable: Fallback::Deny,
        }
    }
}

impl ApprovalsConfig {
    /// Whether any call can need a decision: a rule, a preset, or a default other than
    /// `allow`.
    pub fn is_active(&self) -> bool {
        self.preset.is_some() || !self.rules.is_empty() || self.default != Decision::Allow
    }
}

/// What a rule (or the default) decides for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The call runs.
    Allow,
    /// The call waits for the human (or a worker's owner) to decide.
    Ask,
    /// The call is blocked, saying which rule refused it.
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// `on_timeout` and `when_unreachable`: the call runs, or is blocked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    Allow,
    #[default]
    Deny,
}

/// `preset`: a ready set of rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// Ask for `git push`, `git reset --hard`, recursive `rm`, `sudo`, package publishes
    /// and writes outside the project.
    Careful,
}

impl Preset {
    /// The preset's rules, in order: compiled once.
    pub fn rules(self) -> &'static [Rule] {
        static CAREFUL: std::sync::OnceLock<Vec<Rule>> = std::sync::OnceLock::new();
        match self {
            Preset::Careful => CAREFUL.get_or_init(careful),
        }
    }
}

/// The careful preset's rules.
fn careful() -> Vec<Rule> {
    let ask_bash = |regex: &str| RuleSpec {
        tool: ToolSel::One("bash".into()),
        regex: Some(regex.into()),
        decision: Decision::Ask,
        ..RuleSpec::default()
    };
    let specs = vec![
        ask_bash(r"\bgit\s+push\b"),
        ask_bash(r"\bgit\s+reset\s+(\S+\s+)*--hard\b"),
        ask_bash(r"\brm\s+(-\S*\s+)*-[a-zA-Z]*[rR]"),
        ask_bash(r"\brm\s+(\S+\s+)*--recursive\b"),
        ask_bash(r"(^|[;&|(`]\s*|\$\(\s*)sudo\b"),
        ask_bash(
            r"\b(npm|pnpm|yarn)\s+publish\b|\bcargo\s+publish\b|\btwine\s+upload\b|\bgem\s+push\b",
        ),
        RuleSpec {
            tool: ToolSel::Many(vec!["write".into(), "edit".into()]),
            outside: Some(Outside::Cwd),
            decision: Decision::Ask,
            ..RuleSpec::default()
        },
    ];
    specs
        .into_iter()
        .map(|s| Rule::try_from(s).expect("the preset's rules are valid"))
        .collect()
}

/// `outside`: where a path must not be for the rule to match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outside {
    /// Outside the session's directory and its git worktree.
    Cwd,
}

/// A rule's `tool`: one tool's name, several, or `*` for any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolSel {
    One(String),
    Many(Vec<String>),
}

impl Default for ToolSel {
    fn default() -> Self {
        ToolSel::One("*".into())
    }
}

impl ToolSel {
    /// Whether the rule is about `tool`.
    pub fn covers(&self, tool: &str) -> bool {
        match self {
            ToolSel::One(t) => t == "*" || t == tool,
            ToolSel::Many(ts) => ts.iter().any(|t| t == "*" || t == tool),
        }
    }

    fn names(&self) -> Vec<&str> {
        match self {
            ToolSel::One(t) => vec![t.as_str()],
            ToolSel::Many(ts) => ts.iter().map(String::as_str).collect(),
        }
    }
}

/// A rule as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// The tool (`bash`), tools (`["write", "edit"]`) or `*` (any; the default).
    #[serde(default)]
    pub tool: ToolSel,
    /// A glob the whole subject must match.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// A regular expression found in the subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// `cwd`: the path is outside the session's directory and worktree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside: Option<Outside>,
    pub decision: Decision,
}

impl Default for RuleSpec {
    /// Any tool, any subject, `ask` (the preset's rules start from it).
    fn default() -> Self {
        RuleSpec {
            tool: ToolSel::default(),
            glob: None,
            regex: None,
            outside: None,
            decision: Decision::Ask,
        }
    }
}

/// The tools whose subject is a path.
pub const PATH_TOOLS: [&str; 3] = ["write", "edit", "read"];

/// A checked rule: as written, with its pattern compiled.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "RuleSpec", into = "RuleSpec")]
pub struct Rule {
    pub spec: RuleSpec,
    /// The compiled `match` or `regex`.
    pattern: Option<Pattern>,
}

/// A rule's compiled `match` (a glob, on the whole subject) or `regex` (found in it).
#[derive(Debug, Clone)]
enum Pattern {
    Glob(globset::GlobMatcher),
    Regex(regex::Regex),
}

impl Pattern {
    fn is_match(&self, subject: &str) -> bool {
        match self {
            Pattern::Glob(g) => g.is_match(subject),
            Pattern::Regex(r) => r.is_match(subject),
        }
    }
}

impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        self.spec == other.spec
    }
}

impl From<Rule> for RuleSpec {
    fn from(rule: Rule) -> RuleSpec {
        rule.spec
    }
}

impl TryFrom<RuleSpec> for Rule {
    type Error = String;

    fn try_from(spec: RuleSpec) -> Result<Rule, String> {
        let tools = spec.tool.names();
        if tools.is_empty() || tools.iter().any(|t| t.trim().is_empty()) {
            return Err(
                "`tool` names no tool: give one (`bash`), several (`[\"write\", \"edit\"]`) or `*`"
                    .into(),
            );
        }
        let pattern = match (&spec.glob, &spec.regex) {
            (Some(_), Some(_)) => {
                return Err("`match` and `regex` are both given: keep one".into());
            }
            (Some(glob), None) => Some(Pattern::Glob(compile_glob(glob)?)),
            (None, Some(re)) => {
                Some(Pattern::Regex(regex::Regex::new(re).map_err(|e| {
                    format!("`regex` {re:?} is not a regular expression: {e}")
                })?))
            }
            (None, None) => None,
        };
        if spec.outside.is_some()
            && (spec.tool.covers("bash") || !tools.iter().all(|t| ["write", "edit"].contains(t)))
        {
            return Err(format!(
                "`outside` is about a written path: give it for `write` and `edit` only (this rule's tool is {:?})",
                tools.join(", ")
            ));
        }
        Ok(Rule { spec, pattern })
    }
}

impl Rule {
    /// Whether the subject matches the rule's `match` or `regex` (a rule with neither
    /// matches every subject).
    pub fn matches_subject(&self, subject: &str) -> bool {
        self.pattern.as_ref().is_none_or(|p| p.is_match(subject))
    }

    /// A short description: `tool bash, match "git push*", ask`.
    pub fn describe(&self) -> String {
        let s = &self.spec;
        let mut out = format!("tool {}", s.tool.names().join("|"));
        if let Some(g) = &s.glob {
            out.push_str(&format!(", match {g:?}"));
        }
        if let Some(r) = &s.regex {
            out.push_str(&format!(", regex {r:?}"));
        }
        if s.outside.is_some() {
            out.push_str(", outside cwd");
        }
        out.push_str(&format!(", {}", s.decision.as_str()));
        out
    }
}

/// `match`: `*` any run of characters (`/` too), `?` one, `[…]` a class, `{a,b}` either,
/// `\x` a literal `x`.
fn compile_glob(glob: &str) -> Result<globset::GlobMatcher, String> {
    if glob.is_empty() {
        return Err("`match` is empty: give a glob (`git push*`) or leave it out".into());
    }
    globset::GlobBuilder::new(glob)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("`match` {glob:?} is not a glob: {}", e.kind()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(toml_text: &str) -> Result<Rule, String> {
        let spec: RuleSpec = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        Rule::try_from(spec)
    }

    #[test]
    fn a_glob_matches_the_whole_subject_and_crosses_slashes() {
        let r = rule("tool = \"bash\"\nmatch = \"git push*\"\ndecision = \"ask\"").unwrap();
        assert!(r.matches_subject("git push origin main"));
        assert!(!r.matches_subject("cd x && git push"));
        let r = rule("tool = \"write\"\nmatch = \"/etc/**\"\ndecision = \"deny\"").unwrap();
        assert!(r.matches_subject("/etc/ssh/sshd_config"));
        assert!(!r.matches_subject("/home/etc/x"));
        let r = rule("match = \"*.[ch]\"\ndecision = \"ask\"").unwrap();
        assert!(r.matches_subject("/src/a.c") && !r.matches_subject("/src/a.rs"));
        let r = rule("match = \"a\\\\*b?\"\ndecision = \"ask\"").unwrap();
        assert!(r.matches_subject("a*bc") && !r.matches_subject("axbc"));
    }

    #[test]
    fn a_bad_rule_says_what_is_wrong() {
        let both = rule("match = \"x\"\nregex = \"y\"\ndecision = \"ask\"").unwrap_err();
        assert!(both.contains("keep one"), "{both}");
        let bad = rule("regex = \"(\"\ndecision = \"ask\"").unwrap_err();
        assert!(bad.contains("not a regular expression"), "{bad}");
        let open = rule("match = \"[ab\"\ndecision = \"ask\"").unwrap_err();
        assert!(open.contains("is not a glob"), "{open}");
        let outside = rule("tool = \"bash\"\noutside = \"cwd\"\ndecision = \"ask\"").unwrap_err();
        assert!(outside.contains("`write` and `edit` only"), "{outside}");
        let none = rule("tool = []\ndecision = \"ask\"").unwrap_err();
        assert!(none.contains("names no tool"), "{none}");
        let unknown = rule("tool = \"bash\"\nglob = \"x\"\ndecision = \"ask\"").unwrap_err();
        assert!(unknown.contains("unknown field `glob`"), "{unknown}");
    }

    #[test]
    fn the_careful_preset_asks_for_what_it_says() {
        let rules = Preset::Careful.rules();
        let asks = |cmd: &str| {
            rules
                .iter()
                .any(|r| r.spec.tool.covers("bash") && r.matches_subject(cmd))
        };
        for cmd in [
            "git push origin main",
            "cd app && git push --force",
            "git reset --hard HEAD~1",
            "git reset -q --hard",
            "rm -rf build",
            "rm -fr /tmp/x",
            "rm -R x",
            "rm --recursive x",
            "sudo apt install x",
            "make && sudo make install",
            "npm publish",
            "cargo publish --dry-run",
        ] {
            assert!(asks(cmd), "{cmd} should ask");
        }
        for cmd in [
            "git status",
            "git pushd",
            "rm build.log",
            "git reset --soft HEAD~1",
            "echo sudoku",
            "cargo build",
        ] {
            assert!(!asks(cmd), "{cmd} should not ask");
        }
        assert!(
            rules
                .last()
                .is_some_and(|r| r.spec.outside == Some(Outside::Cwd))
        );
    }
}
