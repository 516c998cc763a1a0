//! A project's own approval rules: `.pi/shepherd.toml` at the root of the session's git
//! worktree, its `[approvals]` with `rules`, `preset` and `default` only. A project can
//! only tighten the user's policy: a rule or default that says `allow`, or a setting only
//! the user decides (`timeout_secs`, `on_timeout`, `when_unreachable`), refuses the whole
//! file with a message naming it and the rule, and the user's policy alone applies. The
//! file is read only when it is a regular file of at most [`MAX_PROJECT_FILE`] bytes, so
//! a cloned repository cannot stall the reader with a FIFO, a device or a huge file.

use std::io::Read;
use std::path::Path;

use serde::Deserialize;

use super::Layer;
use crate::config::approvals::{Decision, Preset, Rule};

/// Where a project's rules live, under its worktree's root.
pub const PROJECT_FILE: &str = ".pi/shepherd.toml";

/// The largest project file read.
pub const MAX_PROJECT_FILE: u64 = 64 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectFile {
    #[serde(default)]
    approvals: Option<ProjectApprovals>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectApprovals {
    #[serde(default)]
    preset: Option<Preset>,
    #[serde(default)]
    default: Option<Decision>,
    #[serde(default)]
    rules: Vec<Rule>,
    // The user's alone: named in the refusal rather than as unknown keys.
    #[serde(default)]
    timeout_secs: Option<toml::Value>,
    #[serde(default)]
    on_timeout: Option<toml::Value>,
    #[serde(default)]
    when_unreachable: Option<toml::Value>,
}

/// What a worktree's project file says.
#[derive(Debug, Clone)]
pub enum ProjectPolicy {
    /// No file, or one without `[approvals]`.
    None,
    /// Its rules, to be applied with the user's.
    Layer(Layer),
    /// The file was refused: why (naming the file and the rule). The user's policy alone
    /// applies.
    Refused(String),
}

/// The project policy of the worktree rooted at `root`.
pub fn project_policy(root: &Path) -> ProjectPolicy {
    let path = root.join(PROJECT_FILE);
    let text = match read_small(&path) {
        Ok(Some(text)) => text,
        Ok(None) => return ProjectPolicy::None,
        Err(why) => return ProjectPolicy::Refused(format!("{}: {why}", path.display())),
    };
    let table: toml::Table = match toml::from_str(&text) {
        Ok(table) => table,
        Err(e) => {
            let why = e.message().to_string();
            return ProjectPolicy::Refused(format!("{}: not valid TOML: {why}", path.display()));
        }
    };
    let file: ProjectFile = match serde_path_to_error::deserialize(toml::Value::Table(table)) {
        Ok(file) => file,
        Err(e) => {
            return ProjectPolicy::Refused(format!(
                "{}: `{}`: {}",
                path.display(),
                e.path(),
                e.inner()
            ));
        }
    };
    match layer(file, &path) {
        Ok(Some(layer)) => ProjectPolicy::Layer(layer),
        Ok(None) => ProjectPolicy::None,
        Err(why) => ProjectPolicy::Refused(format!("{}: {why}", path.display())),
    }
}

/// The file's `[approvals]` as a layer, or why it would loosen the user's policy.
fn layer(file: ProjectFile, path: &Path) -> Result<Option<Layer>, String> {
    let Some(a) = file.approvals else {
        return Ok(None);
    };
    for (key, set) in [
        ("timeout_secs", a.timeout_secs.is_some()),
        ("on_timeout", a.on_timeout.is_some()),
        ("when_unreachable", a.when_unreachable.is_some()),
    ] {
        if set {
            return Err(format!(
                "`approvals.{key}` is yours to set, in your own config: a project may only add rules that ask or deny"
            ));
        }
    }
    if a.default == Some(Decision::Allow) {
        return Err(
            "`approvals.default = \"allow\"` would loosen your policy: a project's default may only be `ask` or `deny`"
                .into(),
        );
    }
    if let Some((i, rule)) = a
        .rules
        .iter()
        .enumerate()
        .find(|(_, r)| r.spec.decision == Decision::Allow)
    {
        return Err(format!(
            "rule {} ({}) would loosen your policy: a project's rules may only `ask` or `deny`",
            i + 1,
            rule.describe()
        ));
    }
    Ok(Some(Layer {
        origin: path.display().to_string(),
        rules: a.rules,
        preset: a.preset,
        default: a.default,
    }))
}

/// The text of `path` when it is a regular file ([`crate::files::open_regular`]: a FIFO is
/// never opened blocking, a device never read) of at most [`MAX_PROJECT_FILE`] bytes, read
/// within [`READ_TIME`]; `None` when there is nothing there.
fn read_small(path: &Path) -> Result<Option<String>, String> {
    let (file, len) = match crate::files::open_regular(path) {
        Ok(opened) => opened,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("left unread: {e}")),
    };
    if len > MAX_PROJECT_FILE {
        return Err(format!(
            "left unread: {len} bytes, more than the {MAX_PROJECT_FILE} a project file may have"
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    crate::files::Limited::new(file, MAX_PROJECT_FILE, READ_TIME)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("left unread: {e}"))?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "left unread: not UTF-8 text".to_string())
}

/// Longest a project file is read for.
const READ_TIME: std::time::Duration = std::time::Duration::from_secs(2);
